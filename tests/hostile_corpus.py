"""Hostile inputs for ``nvtxsim report``: one builder per kind of bad file or path.

Each :class:`Case` says what must happen: ``error`` (exit 2, one ``nvtxsim: error:`` line,
nothing on stdout), ``report`` (exit 0, and ``check`` verifies the numbers of the JSON report)
or ``either`` (random corruption: which of the two is decided per file by :func:`tables_readable`, sqlite3's
own full read of the tables a report needs, so each file has one right answer).

Seeds: the real nsys 2022.4 export in ``tests/data/reliability`` (made by the program beside
it) and synthetic 2022.4-schema exports with CUDA tables (``tests/synth.py``).
"""

from __future__ import annotations

import gzip
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from synth import DDL, global_tid, make_export  # noqa: E402

REAL_SEED = HERE / "data" / "reliability" / "cpu_loop_2022_4.sqlite.gz"
TID = global_tid(4242, 4242)


@dataclass
class Case:
    kind: str
    path: Path
    expect: str  # "error" | "report" | "either"
    needle: str = ""  # part of the one-line error
    check: Callable[[dict], None] | None = None  # on the parsed JSON report
    args: tuple[str, ...] = ()
    output: Path | None = None  # for -o cases: must be unchanged (or absent) afterwards
    notes: list[str] = field(default_factory=list)


def real_export(dst: Path) -> Path:
    """The real nsys 2022.4 seed export, inflated to ``dst``."""
    with gzip.open(REAL_SEED) as src, open(dst, "wb") as out:
        shutil.copyfileobj(src, out)
    return dst


def page_size(path: Path) -> int:
    head = path.read_bytes()[:100]
    size = int.from_bytes(head[16:18], "big")
    return 65536 if size == 1 else size


# --------------------------------------------------------------------------- small exports


def new_export(path: Path, *, ddl: str = DDL) -> sqlite3.Connection:
    con = sqlite3.connect(path)
    con.executescript(ddl)
    return con


def add_domain(con: sqlite3.Connection, tid: int = TID, domain_id: int = 1, name: str = "nvtxsim") -> None:
    con.execute(
        "INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, text, domainId) VALUES (0, NULL, 75, ?, ?, ?)",
        (tid, name, domain_id),
    )


def add_range(con: sqlite3.Connection, start, end, name_id, *, tid=TID, domain_id=1, etype=59, text=None) -> None:
    con.execute(
        "INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, textId, domainId, text) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (start, end, etype, tid, name_id, domain_id, text),
    )


def phases(report: dict) -> dict[str, dict]:
    return {(f"{p['domain']}:{p['name']}" if p["domain"] else p["name"]): p for p in report["phases"]}


# --------------------------------------------------------------------------- checks


def _check_nulls(rep: dict) -> None:
    ph = phases(rep)
    # start NULL: ignored (warned); end NULL: unclosed, ends at the table's largest timestamp (900).
    assert ph["nvtxsim:step"]["instances"] == 2 and ph["nvtxsim:step"]["cpu_total_ns"] == 10 + (900 - 300)
    assert ph["nvtxsim:step"]["unclosed"] == 1
    assert ph["nvtxsim:"]["instances"] == 1  # textId NULL → empty name, still counted
    assert any("without a start time" in w for w in rep["warnings"])
    assert any("never ended" in w for w in rep["warnings"])


def _check_times(rep: dict) -> None:
    ph = phases(rep)
    p = ph["nvtxsim:neg"]
    assert (p["instances"], p["cpu_total_ns"], p["cpu_min_ns"], p["cpu_max_ns"]) == (2, 990 + 10, 10, 990)
    assert ph["nvtxsim:zero"]["cpu_total_ns"] == 0 and ph["nvtxsim:zero"]["instances"] == 1
    assert "nvtxsim:reversed" not in ph and "nvtxsim:wild" not in ph
    assert any("ending before they start" in w for w in rep["warnings"])
    assert any("impossible timestamps" in w for w in rep["warnings"])


def _check_unicode_names(rep: dict) -> None:
    names = {p["name"] for p in rep["phases"]}
    assert {"\x1b[31mred\x1b[0m", "new\nline", "[bold]markup[/bold]", "päyload ✓ 🚀", 'a,b;"c"'} <= names


def _check_some_phases(rep: dict) -> None:
    assert rep["phases"] and all(isinstance(p["name"], str) for p in rep["phases"])


def _check_keys(rep: dict) -> None:
    ph = phases(rep)
    assert {k: (v["instances"], v["cpu_total_ns"]) for k, v in ph.items()} == {
        "nvtxsim:a": (3, 15),
        "nvtxsim:b": (3, 21),
        "nvtxsim:c": (3, 27),
    }


def _check_only_domain_rows(rep: dict) -> None:
    assert rep["phases"] == []
    assert any("nvtx>=0.2.12" in w for w in rep["warnings"])


def _check_seed(rep: dict) -> None:
    ph = phases(rep)
    assert ph["nvtxsim:iteration"]["instances"] == 10 and ph["nvtxsim:sim_step"]["instances"] == 20
    assert ph["nvtxsim:reset"]["unclosed"] == 1


def _check_dangling(rep: dict) -> None:
    ph = phases(rep)
    assert ph["nvtxsim:"]["instances"] == 1 and ph["nvtxsim:known"]["instances"] == 1


def _check_no_ranges(rep: dict) -> None:
    assert rep["phases"] == [] and rep["source"]["ranges"] == 0 and rep["source"]["gpu_ops"] > 0


def _check_bad_cuda(rep: dict) -> None:
    for p in rep["phases"]:
        for k, v in p.items():
            if isinstance(v, int):
                assert 0 <= v < 1 << 62, (p["name"], k, v)


# --------------------------------------------------------------------------- builders


def build_corpus(root: Path) -> list[Case]:
    """Every hostile kind that needs no special privileges; files are made under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(20240601)
    cases: list[Case] = []
    seed = real_export(root / "seed.sqlite")
    raw = seed.read_bytes()
    psize = page_size(seed)
    npages = len(raw) // psize

    def write(name: str, data: bytes) -> Path:
        p = root / name
        p.write_bytes(data)
        return p

    # 0. the seed itself is a correct report (the corpus starts from a good file)
    cases.append(Case("real_seed", seed, "report", check=_check_seed))

    # 1-3. not an SQLite file at all
    cases.append(Case("random_bytes", write("random.sqlite", rng.randbytes(64 * 1024)), "error", "not an SQLite file"))
    cases.append(Case("empty_file", write("empty.sqlite", b""), "error", "empty file"))
    cases.append(Case("text_file", write("notes.sqlite", "päyload\n".encode() * 100), "error", "not an SQLite file"))

    # 4-6. truncated copies of the real export
    cases.append(Case("truncated_half", write("half.sqlite", raw[: len(raw) // 2]), "error", "truncated"))
    cases.append(Case("truncated_header", write("head.sqlite", raw[:100]), "error", "truncated"))
    cases.append(Case("truncated_to_30_bytes", write("tiny.sqlite", raw[:30]), "error", "truncated"))

    # 7. a valid header followed by random pages
    cases.append(
        Case("header_then_garbage", write("garbage.sqlite", raw[:100] + rng.randbytes(len(raw) - 100)), "either")
    )

    # 8-10. byte flips in pages, zeroed pages, a corrupt schema page (several seeds each)
    for k in range(4):
        b = bytearray(raw)
        for _ in range(64):
            pos = rng.randrange(psize, len(b))
            b[pos] ^= 1 << rng.randrange(8)
        cases.append(Case(f"flipped_bits_{k}", write(f"flip{k}.sqlite", bytes(b)), "either"))
    for k in range(3):
        b = bytearray(raw)
        for page in rng.sample(range(1, npages), 3):
            b[page * psize : (page + 1) * psize] = bytes(psize)
        cases.append(Case(f"zeroed_pages_{k}", write(f"zero{k}.sqlite", bytes(b)), "either"))
    b = bytearray(raw)
    for pos in rng.sample(range(100, psize), 200):
        b[pos] = rng.randrange(256)
    cases.append(Case("corrupt_schema_page", write("schema.sqlite", bytes(b)), "either"))
    b = bytearray(raw)
    b[16:18] = (3).to_bytes(2, "big")  # invalid page size
    cases.append(Case("bad_page_size_field", write("pagesize.sqlite", bytes(b)), "either"))
    b = bytearray(raw)
    b[28:32] = (10**6).to_bytes(4, "big")  # header claims far more pages than the file has
    cases.append(Case("header_claims_more_pages", write("pages.sqlite", bytes(b)), "error", "truncated"))

    # 11. SQLite, but not an nsys export
    p = root / "other.sqlite"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    con.commit()
    con.close()
    cases.append(Case("sqlite_not_nsys", p, "error", "no NVTX_EVENTS table"))

    # 12. the right table names, wrong columns
    p = root / "wrongcols.sqlite"
    con = sqlite3.connect(p)
    con.executescript(
        "CREATE TABLE StringIds (a, b); CREATE TABLE NVTX_EVENTS (x INTEGER, y INTEGER, z TEXT);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (q); CREATE TABLE ANALYSIS_DETAILS (w);"
        "INSERT INTO NVTX_EVENTS VALUES (1, 2, 'a');"
    )
    con.commit()
    con.close()
    cases.append(Case("wrong_columns", p, "error", "lacks column"))

    # 13. the right columns, values of the wrong type (text and blobs in time columns)
    p = root / "types.sqlite"
    con = new_export(p, ddl=DDL.replace("NOT NULL", ""))
    add_domain(con)
    con.execute("INSERT INTO StringIds VALUES (1, 'step')")
    add_range(con, "early", "late", 1)
    add_range(con, b"\x00\x01", 5, 1)
    con.commit()
    con.close()
    cases.append(Case("wrong_value_types", p, "error", "corrupt"))

    # 14. NULLs where values are expected
    p = root / "nulls.sqlite"
    con = new_export(p, ddl=DDL.replace("NOT NULL", ""))
    add_domain(con)
    con.execute("INSERT INTO StringIds VALUES (1, 'step'), (2, NULL)")
    add_range(con, 100, 110, 1)
    add_range(con, 300, None, 1)  # unclosed
    add_range(con, None, 500, 1)  # no start
    add_range(con, 700, 900, None)  # no name
    con.execute("INSERT INTO NVTX_EVENTS (start, end, eventType) VALUES (NULL, NULL, NULL)")
    con.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid) VALUES (800, 850, 59, NULL)")
    con.execute("INSERT INTO ANALYSIS_DETAILS VALUES (NULL, NULL, NULL, NULL)")
    con.execute("INSERT INTO EXPORT_META_DATA VALUES (NULL, NULL)")
    con.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, globalTid, correlationId) VALUES (NULL, NULL, NULL, NULL)"
    )
    con.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, globalPid, correlationId) VALUES (1, NULL, NULL, 3)"
    )
    con.commit()
    con.close()
    cases.append(Case("nulls", p, "report", check=_check_nulls, args=("--domain", "all")))

    # 15. negative, zero-length, reversed and impossible times
    p = root / "times.sqlite"
    con = new_export(p)
    add_domain(con)
    con.execute("INSERT INTO StringIds VALUES (1, 'neg'), (2, 'zero'), (3, 'reversed'), (4, 'wild')")
    add_range(con, -1000, -10, 1)
    add_range(con, -5, 5, 1)
    add_range(con, 7, 7, 2)
    add_range(con, 50, 10, 3)
    add_range(con, -(1 << 63), (1 << 63) - 1, 4)
    add_range(con, 0, (1 << 63) - 1, 4)
    con.commit()
    con.close()
    cases.append(Case("negative_reversed_impossible_times", p, "report", check=_check_times))

    # 16. names: huge, empty, not UTF-8
    p = root / "names.sqlite"
    con = new_export(p)
    add_domain(con)
    con.execute(
        "INSERT INTO StringIds VALUES (1, ?), (2, ''), (3, CAST(X'FF41' AS TEXT)), (4, 'ok')", ("x" * 3_000_000,)
    )
    add_range(con, 0, 5, 1)
    add_range(con, 0, 5, 2)
    add_range(con, 0, 5, None, text="")
    add_range(con, 0, 5, 3)
    add_range(con, 0, 5, None, text="\ufffdA")  # same name as the repaired one: one row
    add_range(con, 10, 15, 4)
    add_range(con, 0, 5, None, text=None)  # neither text nor textId: empty name
    add_range(con, 0, 5, None, text="x" * 3_000_000)
    con.execute(
        "INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, domainId, text) VALUES (0, 5, 59, ?, 1, CAST(X'C3' AS TEXT))",
        (TID,),
    )
    con.commit()
    con.close()

    def _names_fix(rep: dict) -> None:
        names = {p["name"]: p for p in rep["phases"]}
        assert names["x" * 3_000_000]["instances"] == 2  # registered and plain text, same name
        assert names[""]["instances"] == 3
        assert names["\ufffdA"]["instances"] == 2
        assert names["\ufffd"]["instances"] == 1
        assert names["ok"]["cpu_total_ns"] == 5
        assert sum(p["instances"] for p in rep["phases"]) == 9

    cases.append(Case("huge_empty_non_utf8_names", p, "report", check=_names_fix))

    # 17. control characters, markup, separators in names
    p = root / "unicode.sqlite"
    con = new_export(p)
    add_domain(con)
    for i, n in enumerate(
        ["\x1b[31mred\x1b[0m", "new\nline", "[bold]markup[/bold]", "päyload ✓ 🚀", 'a,b;"c"', "nul\x00byte"], 1
    ):
        con.execute("INSERT INTO StringIds VALUES (?, ?)", (i, n))
        add_range(con, i * 10, i * 10 + 5, i)
    con.commit()
    con.close()
    cases.append(Case("control_and_markup_names", p, "report", check=_check_unicode_names))

    # 17b. every name hostile to some output kind (markup, script, formulas, escapes, bidi, placeholders)
    from hostile_names import hostile_names_export

    cases.append(
        Case(
            "hostile_names_everywhere",
            hostile_names_export(root / "hostile_names.sqlite"),
            "report",
            check=_check_some_phases,
        )
    )

    # 17c. key columns that do not tell rows apart: a real column named rowid, a repeated eventId
    p = root / "keys.sqlite"
    con = new_export(p)
    add_domain(con)
    for i, (name, dur) in enumerate([("a", 5), ("b", 7), ("c", 9)] * 3):
        add_range(con, 100 * i, 100 * i + dur, None, text=name)
    con.execute("ALTER TABLE NVTX_EVENTS ADD COLUMN rowid INTEGER")
    con.execute("ALTER TABLE NVTX_EVENTS ADD COLUMN eventId INTEGER")
    con.execute("UPDATE NVTX_EVENTS SET rowid = 1, eventId = 7")
    con.commit()
    con.close()
    cases.append(Case("rowid_column_and_repeated_event_id", p, "report", check=_check_keys))

    # 18. only domain create/destroy rows (nvtx>=0.2.12 under old nsys)
    p = root / "domains_only.sqlite"
    con = new_export(p)
    add_domain(con)
    con.execute("INSERT INTO NVTX_EVENTS (start, eventType, globalTid, domainId) VALUES (5, 76, ?, 1)", (TID,))
    con.commit()
    con.close()
    cases.append(Case("only_domain_rows", p, "report", check=_check_only_domain_rows))

    # 19. textIds pointing nowhere, duplicate string ids
    p = root / "dangling.sqlite"
    con = new_export(p, ddl=DDL.replace("id INTEGER NOT NULL PRIMARY KEY", "id INTEGER"))
    add_domain(con)
    con.execute("INSERT INTO StringIds VALUES (1, 'known'), (1, 'known'), (7, 'other')")
    add_range(con, 0, 5, 1)
    add_range(con, 0, 5, 999)
    con.commit()
    con.close()
    cases.append(Case("dangling_and_duplicate_string_ids", p, "report", check=_check_dangling))

    # 20. a view instead of a table (an endless recursive CTE must not hang the report)
    p = root / "view.sqlite"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE StringIds (id INTEGER, value TEXT)")
    con.execute(
        "CREATE VIEW NVTX_EVENTS AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
        "SELECT x AS start, x + 1 AS end, 59 AS eventType, 1 AS globalTid, 1 AS textId, NULL AS text FROM c"
    )
    con.commit()
    con.close()
    cases.append(Case("endless_view", p, "error", "no NVTX_EVENTS table"))

    # 21. NVTX_EVENTS WITHOUT ROWID (no implicit rowid to key on)
    p = root / "norowid.sqlite"
    con = sqlite3.connect(p)
    con.executescript(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);"
        "CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, globalTid INTEGER, textId INTEGER, "
        "k INTEGER PRIMARY KEY) WITHOUT ROWID; INSERT INTO NVTX_EVENTS VALUES (0, 5, 59, 1, 1, 1);"
    )
    con.commit()
    con.close()
    cases.append(Case("without_rowid", p, "error", "corrupt"))

    # 22. CUDA tables with impossible times, NULLs and missing columns
    p = root / "cuda.sqlite"
    make_export(p, 3)
    con = sqlite3.connect(p)
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = -9223372036854775808 WHERE rowid % 3 = 0")
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 9223372036854775807 WHERE rowid % 5 = 0")
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = 9223372036854775807 WHERE rowid % 7 = 0")
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET end = start - 100 WHERE rowid % 2 = 0")
    con.execute("DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET")
    con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER, nothing_else INTEGER)")
    con.commit()
    con.close()
    cases.append(Case("cuda_tables_impossible_values", p, "report", check=_check_bad_cuda, args=("--domain", "all")))

    # 22b. CUDA work but not one NVTX range (every range row lost)
    p = root / "noranges.sqlite"
    make_export(p, 4)
    con = sqlite3.connect(p)
    con.execute("DELETE FROM NVTX_EVENTS")
    con.commit()
    con.close()
    cases.append(Case("gpu_work_without_ranges", p, "report", check=_check_no_ranges, args=("--domain", "all")))

    # 23-25. gzip: corrupt stream, random bytes, truncated
    gz = gzip.compress(raw)
    b = bytearray(gz)
    for pos in range(40, 80):
        b[pos] ^= 0xFF
    cases.append(Case("gzip_corrupt_stream", write("corrupt.sqlite.gz", bytes(b)), "error", "gzip"))
    cases.append(Case("gzip_random_bytes", write("random.sqlite.gz", rng.randbytes(5000)), "error", "gzip"))
    cases.append(Case("gzip_truncated", write("cut.sqlite.gz", gz[: len(gz) // 2]), "error", "gzip"))

    # 26. awkward characters in the path (URI quoting)
    weird = root / "we ird?#%41&x=1;.sqlite"
    shutil.copyfile(seed, weird)
    cases.append(Case("uri_characters_in_path", weird, "report", check=_check_seed))

    # 27-30. paths that are not files
    d = root / "adir.sqlite"
    d.mkdir()
    cases.append(Case("directory", d, "error", "directory"))
    cases.append(Case("missing_file", root / "nope.sqlite", "error", "no such file"))
    link = root / "dangling_link.sqlite"
    link.symlink_to(root / "does-not-exist")
    cases.append(Case("dangling_symlink", link, "error", "no such file"))
    loop = root / "loop.sqlite"
    loop.symlink_to(loop)
    cases.append(Case("symlink_loop", loop, "error", "cannot read"))
    if hasattr(os, "mkfifo"):
        fifo = root / "fifo.sqlite"
        os.mkfifo(fifo)
        cases.append(Case("fifo", fifo, "error", "not a regular file"))
        fifo_gz = root / "fifo.sqlite.gz"
        os.mkfifo(fifo_gz)
        cases.append(Case("fifo_gz", fifo_gz, "error", "not a regular file"))
    cases.append(Case("dev_null", Path(os.devnull), "error", "not a regular file"))

    # 31-34. output paths
    out = root / "existing.csv"
    out.write_text("precious\n")
    cases.append(
        Case("existing_output", seed, "error", "already exists", args=("-f", "csv", "-o", str(out)), output=out)
    )
    cases.append(
        Case(
            "output_in_missing_dir",
            seed,
            "error",
            "no such directory",
            args=("-o", str(root / "no" / "dir" / "r.csv")),
            output=root / "no" / "dir" / "r.csv",
        )
    )
    cases.append(Case("output_is_directory", seed, "error", "is a directory", args=("-o", str(d))))
    hard = root / "hardlink.sqlite"
    os.link(seed, hard)
    cases.append(Case("output_is_input_hardlink", seed, "error", "input file", args=("-o", str(hard), "--force")))
    # Output paths that are not plain new files (issue 13): one line, exit 2, nothing replaced.
    if Path("/dev/full").exists():
        cases.append(Case("output_dev_full", seed, "error", "No space left", args=("-o", "/dev/full")))
    link_out = root / "link_to_existing.csv"
    link_out.symlink_to(out)
    cases.append(
        Case("output_symlink_to_existing", seed, "error", "already exists", args=("-o", str(link_out)), output=out)
    )
    cases.append(Case("output_name_too_long", seed, "error", "too long", args=("-o", str(root / ("n" * 300)))))
    # Bad input with an output path: the error comes first and no (partial) output appears.
    cases.append(
        Case(
            "bad_input_with_output",
            root / "random.sqlite",
            "error",
            "not an SQLite file",
            args=("-o", str(root / "never.csv")),
            output=root / "never.csv",
        )
    )
    return cases


def drop_dac_command() -> list[str] | None:
    """A prefix that runs a command as root *without* the capabilities that bypass file permissions.

    Root ignores file modes (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), so ``chmod 000`` alone does not
    make a file unreadable to root. ``setpriv`` from util-linux drops them from the bounding set,
    so the exec'd Python really gets EACCES. None when that is not possible here.
    """
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search", "--"]


#: The tables a CPU-only report reads (the real seed has no CUDA tables).
REPORT_TABLES = ("NVTX_EVENTS", "StringIds", "ThreadNames", "PROCESSES", "ANALYSIS_DETAILS", "TARGET_INFO_GPU")


def tables_readable(path: Path, tables: tuple[str, ...] = REPORT_TABLES) -> bool:
    """Whether sqlite3 itself opens ``path`` and reads every row of each of ``tables`` that exists (the truth
    for a randomly corrupted export: readable means a correct report, unreadable one clear error)."""
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            for t in tables:
                if t in names:
                    con.execute(f'SELECT * FROM "{t}"').fetchall()
        finally:
            con.close()
    except sqlite3.DatabaseError:
        return False
    return True


def denied(prefix: list[str], path: Path, mode: str) -> bool:
    """Probe: a Python run under ``prefix`` gets PermissionError opening ``path`` with ``mode`` ("rb", or "xb"
    for creating a file). Decides whether this machine can set the scene a permission test needs."""
    code = f"open({str(path)!r}, {mode!r})"
    probe = subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    if probe.returncode == 0 and mode == "xb":
        Path(path).unlink()
    return probe.returncode != 0 and "PermissionError" in probe.stderr


def millions_of_unclosed(path: Path, n: int = 2_000_000, threads: int = 4) -> Path:
    """An export with ``n`` push/pop ranges that never ended (end NULL), generated in SQL."""
    con = new_export(path)
    add_domain(con)
    con.execute("INSERT INTO StringIds VALUES (1, 'iteration')")
    con.execute(
        f"""WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x < {n - 1})
        INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, textId, domainId)
        SELECT 1 + x * 3, NULL, 59, ? + x % {threads}, 1, 1 FROM c""",
        (TID,),
    )
    con.commit()
    con.close()
    return path


__all__ = ["Case", "build_corpus", "real_export", "millions_of_unclosed", "drop_dac_command", "phases", "page_size"]
