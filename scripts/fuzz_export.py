#!/usr/bin/env python3
"""Fuzz ``nvtxsim report`` with mutated real exports, for a fixed time budget.

Each case copies a seed export (the real nsys 2022.4 capture in tests/data/reliability, and a
synthetic 2022.4-schema export with CUDA tables from tests/synth.py), applies SQL-level mutations
(values set to NULL / extreme ints / floats / text / blobs, rows deleted or duplicated, tables
dropped or replaced by views, columns renamed, bogus NVTX rows) and then byte/page mutations
(bit flips, overwritten or zeroed pages, copied pages, truncation, header fields), and runs the
whole CLI on it in several formats and views.

The only acceptable outcomes are a report (exit 0) or one ``nvtxsim: error:`` line (exit 2). Any
other exception, or a case running longer than ``--case-timeout``, is a failure: hypothesis shrinks
it to a minimal mutation list, the file is saved under ``--out`` and the script exits 1. A report
must also keep text from the export as data (issue 13): JSON and Perfetto are strict JSON (no NaN or
Infinity), CSV rows read back whole with no formula cell, markdown holds no raw ``<``, HTML has its
two script blocks and no other, terminal text no control, escape or bidi character. Names are
drawn from tests/hostile_names.py among others; key columns (a real ``rowid``, duplicated
``eventId``) are mutated too.

    python scripts/fuzz_export.py --seconds 600            # a long run
    python scripts/fuzz_export.py --cases 30 --seed 1 --batch 10   # what the test suite runs
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import gzip
import io
import json
import re
import shutil
import signal
import sqlite3
import sys
import tempfile
import time
import traceback
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from hostile_names import HOSTILE, formula_cell, markdown_autolink, unsafe_terminal  # noqa: E402

import nvtxsim.cli.main as cli  # noqa: E402

REAL_SEED = REPO / "tests" / "data" / "reliability" / "cpu_loop_2022_4.sqlite.gz"
IMPORTANT = [
    "NVTX_EVENTS",
    "StringIds",
    "ANALYSIS_DETAILS",
    "EXPORT_META_DATA",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "ThreadNames",
    "PROCESSES",
    "TARGET_INFO_GPU",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "OSRT_API",
]
RUNS = [  # (argv tail, how often: every case / every 4th case)
    (("-f", "json", "--domain", "all", "--view", "all"), 1),
    (("-f", "table", "--view", "all"), 1),
    (("-f", "csv", "--domain", "all"), 4),
    (
        (
            "-f",
            "markdown",
        ),
        4,
    ),
    (
        (
            "-f",
            "html",
        ),
        4,
    ),
    (("-f", "perfetto", "--domain", "all"), 4),
    (("-f", "csv", "--domain", "all", "--view", "tree"), 4),
    (("-f", "markdown", "--view", "all"), 4),
]


class CaseTimeout(Exception):
    pass


class Failure(Exception):
    pass


# --------------------------------------------------------------------------- mutations

extreme_ints = st.sampled_from([0, -1, 1, 59, 60, 75, 34, 2**31, -(2**31), 2**62, -(2**62), 2**63 - 1, -(2**63)])
values = st.one_of(
    st.none(),
    extreme_ints,
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.binary(max_size=40),
    st.sampled_from(
        ["x" * 100_000, "\x1b[31m", "", "\udcff".encode("utf-8", "surrogatepass").decode("utf-8", "replace")]
    ),
    st.sampled_from(HOSTILE),
    st.text(alphabet=st.sampled_from(list("<>&\"'=+-@|*_`[]()%$~\\\t\r\n\x00\x1b\u202e\u2066\u2028 aZ")), max_size=30),
)
table = st.one_of(st.sampled_from(IMPORTANT), st.integers(0, 200))  # a name, or an index into the file's tables
column = st.integers(0, 30)
sql_mutation = st.one_of(
    st.tuples(st.just("set"), table, column, values, st.integers(1, 7)),
    st.tuples(st.just("delete"), table, st.integers(1, 5)),
    st.tuples(st.just("duplicate"), table),
    st.tuples(st.just("drop"), table),
    st.tuples(st.just("view"), table),
    st.tuples(st.just("rename_column"), table, column),
    st.tuples(st.just("nvtx_row"), st.lists(values, min_size=6, max_size=6)),
    st.tuples(st.just("string"), st.integers(0, 200), values),
    st.tuples(st.just("key"), st.sampled_from(["rowid", "_rowid_", "oid", "eventId"]), st.integers(0, 3)),
)
byte_mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(0, 7)),
    st.tuples(st.just("byte"), st.integers(0, 10**6), st.integers(0, 255)),
    st.tuples(st.just("zero_page"), st.integers(0, 10**6)),
    st.tuples(st.just("random_page"), st.integers(0, 10**6), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just("copy_page"), st.integers(0, 10**6), st.integers(0, 10**6)),
    st.tuples(st.just("truncate"), st.integers(0, 10**6)),
    st.tuples(
        st.just("header"), st.sampled_from([16, 18, 20, 24, 28, 32, 36, 40, 44, 52, 56, 92, 96]), st.integers(0, 255)
    ),
)
case_st = st.tuples(
    st.integers(0, 1),  # which seed
    st.lists(sql_mutation, max_size=4),
    st.lists(byte_mutation, max_size=3),
)


def _tables(con: sqlite3.Connection) -> list[str]:
    return [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]


def _resolve(con: sqlite3.Connection, t) -> str | None:
    names = _tables(con)
    if isinstance(t, str):
        return t if t in names else None
    return names[t % len(names)] if names else None


def _columns(con: sqlite3.Connection, t: str) -> list[str]:
    return [r[1] for r in con.execute(f'PRAGMA table_info("{t}")')]


def apply_sql(path: Path, mutations) -> None:
    con = sqlite3.connect(path)
    try:
        for m in mutations:
            try:
                _apply_one(con, m)
                con.commit()
            except (sqlite3.Error, OverflowError, ValueError):
                con.rollback()  # a mutation that SQLite refuses is simply not applied
    finally:
        con.close()


def _apply_one(con: sqlite3.Connection, m) -> None:
    kind = m[0]
    if kind == "nvtx_row":
        cols = ["start", "end", "eventType", "globalTid", "textId", "domainId"]
        con.execute(f"INSERT INTO NVTX_EVENTS ({', '.join(cols)}) VALUES (?, ?, ?, ?, ?, ?)", m[1])
        return
    if kind == "key":  # a real column that shadows the rowid, or an eventId that repeats
        con.execute(f"ALTER TABLE NVTX_EVENTS ADD COLUMN {m[1]} INTEGER")
        con.execute(
            f"UPDATE NVTX_EVENTS SET {m[1]} = {['1', '_rowid_ % 3', '-_rowid_', 'NULL'][m[2]] if m[1] != '_rowid_' else 'NULL'}"
        )
        return
    if kind == "string":
        ids = [r[0] for r in con.execute("SELECT id FROM StringIds ORDER BY id LIMIT 500")]
        if ids:
            con.execute("UPDATE StringIds SET value = ? WHERE id = ?", (m[2], ids[m[1] % len(ids)]))
        return
    t = _resolve(con, m[1])
    if t is None:
        return
    cols = _columns(con, t)
    if kind == "set" and cols:
        c = cols[m[2] % len(cols)]
        con.execute(f'UPDATE "{t}" SET "{c}" = ? WHERE rowid % ? = 0', (m[3], m[4]))
    elif kind == "delete":
        con.execute(f'DELETE FROM "{t}" WHERE rowid % ? = 0', (m[2],))
    elif kind == "duplicate":
        con.execute(f'INSERT INTO "{t}" SELECT * FROM "{t}" LIMIT 100000')
    elif kind == "drop":
        con.execute(f'DROP TABLE "{t}"')
    elif kind == "view":
        con.execute(f'ALTER TABLE "{t}" RENAME TO "{t}_orig"')
        con.execute(f'CREATE VIEW "{t}" AS SELECT * FROM "{t}_orig"')
    elif kind == "rename_column" and cols:
        c = cols[m[2] % len(cols)]
        con.execute(f'ALTER TABLE "{t}" RENAME COLUMN "{c}" TO "{c}_renamed"')


def apply_bytes(path: Path, mutations) -> None:
    data = bytearray(path.read_bytes())
    if not data:
        return
    size = int.from_bytes(data[16:18], "big") if len(data) >= 18 else 4096
    page = 65536 if size == 1 else (size if size >= 512 else 4096)
    for m in mutations:
        kind = m[0]
        n = len(data)
        if n == 0:
            break
        if kind == "flip":
            data[m[1] % n] ^= 1 << m[2]
        elif kind == "byte":
            data[m[1] % n] = m[2]
        elif kind in ("zero_page", "random_page"):
            pages = max(n // page, 1)
            start = (m[1] % pages) * page
            fill = bytes(page) if kind == "zero_page" else (m[2] * (page // len(m[2]) + 1))[:page]
            data[start : start + page] = fill[: len(data[start : start + page])]
        elif kind == "copy_page":
            pages = max(n // page, 1)
            a, b = (m[1] % pages) * page, (m[2] % pages) * page
            data[b : b + page] = data[a : a + page]
        elif kind == "truncate":
            del data[m[1] % n :]
        elif kind == "header" and n > m[1]:
            data[m[1]] = m[2]
    path.write_bytes(bytes(data))


# --------------------------------------------------------------------------- running one case


def run_cli(path: Path, argv: tuple[str, ...]) -> None:
    """Run the CLI in-process; return normally for a report or a clean one-line error."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(["report", str(path), *argv])
    text = err.getvalue()
    if rc == 0:
        check_output(argv[argv.index("-f") + 1] if "-f" in argv else "table", out.getvalue())
        return
    lines = text.strip().splitlines()
    if rc != 2 or len(lines) != 1 or not lines[0].startswith("nvtxsim: error: ") or out.getvalue():
        raise Failure(f"exit {rc}, stderr {text[-500:]!r}, stdout {out.getvalue()[:200]!r}")


def _refuse_constant(token: str):
    raise Failure(f"non-standard JSON constant {token}")


def check_output(fmt: str, text: str) -> None:
    """Text from the export stayed data in ``fmt`` (issue 13)."""
    if fmt in ("json", "perfetto"):
        json.loads(text, parse_constant=_refuse_constant)
    elif fmt == "csv":
        rows = list(csv.reader(io.StringIO(text, newline="")))
        if rows and any(len(r) != len(rows[0]) for r in rows):
            raise Failure("a CSV row does not have the header's width")
        for r in rows[1:]:
            for v in r:
                if formula_cell(v):
                    raise Failure(f"CSV formula cell {v[:40]!r}")
    elif fmt == "markdown":
        if "<" in text:
            raise Failure("raw '<' in markdown output")
        if markdown_autolink(text):
            raise Failure(f"markdown autolink {markdown_autolink(text)!r}")
    elif fmt == "html":
        if len(re.findall(r"<script\b", text, re.I)) != 2 or len(re.findall(r"</script", text, re.I)) != 2:
            raise Failure("the HTML page does not have exactly its two script blocks")
    elif unsafe_terminal(text):
        raise Failure(f"terminal output holds {unsafe_terminal(text)!r}")


def signature(exc: BaseException) -> str:
    """Exception type and the innermost frame inside nvtxsim: one line per distinct bug."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/nvtxsim/" in f.filename]
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
    return f"{type(exc).__name__} at {where}: {str(exc)[:120]}"


def _alarm(_signum, _frame):
    raise CaseTimeout("case ran too long (hang?)")


class Fuzzer:
    def __init__(self, out: Path, case_timeout: int, work: Path) -> None:
        self.out = out
        self.case_timeout = case_timeout
        self.work = work
        self.seeds = self._seeds()
        self.cases = 0
        self.keep_going = False
        self.failures: dict[str, str] = {}  # signature (exception type + innermost nvtxsim frame) -> case

    def _seeds(self) -> list[Path]:
        real = self.work / "seed_real.sqlite"
        with gzip.open(REAL_SEED) as src, open(real, "wb") as dst:
            shutil.copyfileobj(src, dst)
        from synth import make_export

        synthetic = self.work / "seed_synth.sqlite"
        make_export(synthetic, 5, processes=2, threads=2, calls_per_thread=30)
        return [real, synthetic]

    def run_case(self, case) -> None:
        which, sql_m, byte_m = case
        path = self.work / "case.sqlite"
        shutil.copyfile(self.seeds[which], path)
        apply_sql(path, sql_m)
        apply_bytes(path, byte_m)
        self.cases += 1
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(self.case_timeout)
        try:
            for argv, every in RUNS:
                if self.cases % every == 0:
                    run_cli(path, argv)
        except Exception as exc:
            sig = signature(exc)
            self.out.mkdir(parents=True, exist_ok=True)
            name = f"failing-{len(self.failures) if sig not in self.failures else list(self.failures).index(sig)}"
            shutil.copyfile(path, self.out / f"{name}.sqlite")
            (self.out / f"{name}.txt").write_text(f"{sig}\ncase: {case!r}\n\n{traceback.format_exc()}")
            self.failures.setdefault(sig, repr(case))
            if not self.keep_going:
                raise
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)

    def batch(self, n: int, rnd: int) -> None:
        @seed(rnd)
        @settings(
            max_examples=n,
            deadline=None,
            database=None,
            phases=[Phase.generate] if self.keep_going else [Phase.generate, Phase.shrink],
            suppress_health_check=list(HealthCheck),
            print_blob=True,
        )
        @given(case_st)
        def one(case):
            self.run_case(case)

        one()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="time budget (default 60)")
    ap.add_argument(
        "--cases", type=int, default=None, help="stop after this many cases instead (the time budget then unused)"
    )
    ap.add_argument("--seed", type=int, default=0, help="first hypothesis seed (batch i uses seed + i)")
    ap.add_argument("--batch", type=int, default=25, help="cases per hypothesis batch (default 25)")
    ap.add_argument("--case-timeout", type=int, default=60, help="seconds one case may take (default 60)")
    ap.add_argument("--out", type=Path, default=Path("fuzz-failures"), help="where failing cases are saved")
    ap.add_argument(
        "--keep-going", action="store_true", help="do not stop (nor shrink) at a failure: list every distinct one"
    )
    args = ap.parse_args(argv)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="nvtxsim-fuzz-") as tmp:
        fz = Fuzzer(args.out, args.case_timeout, Path(tmp))
        fz.keep_going = args.keep_going
        i = 0
        try:
            while (fz.cases < args.cases) if args.cases is not None else (time.monotonic() - started < args.seconds):
                fz.batch(args.batch, args.seed + i)
                i += 1
        except Exception as exc:  # hypothesis re-raises the shrunk failure
            print(f"FAIL after {fz.cases} cases: {signature(exc)}", file=sys.stderr)
            print(f"failing file and traceback saved under {args.out}/", file=sys.stderr)
            return 1
    took = time.monotonic() - started
    if fz.failures:
        for sig, case in fz.failures.items():
            print(f"FAIL {sig}\n     case {case}", file=sys.stderr)
        print(
            f"fuzz_export: {fz.cases} cases in {took:.0f} s: {len(fz.failures)} distinct failure(s), files under {args.out}/",
            file=sys.stderr,
        )
        return 1
    print(
        f"fuzz_export: {fz.cases} cases in {took:.0f} s ({i} batches, seeds {args.seed}..{args.seed + i - 1}): no failure"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
