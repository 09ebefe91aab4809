"""Live timing with NVTXSIM_LIVE_GPU=cupti (issue 25): busy time per phase from CUPTI activity records.

A fake libcupti (``FakeLib``, the methods of :class:`nvtxsim.emit.live.cupti_lib.CuptiLib`) stands in for the
real one: it assigns correlation ids to calls in call order, writes real-shaped records (CUpti_ActivityKernel10,
Memcpy6, Memset4, API, ExternalCorrelation, at the byte offsets cupti-python 13.0.1's ``activity_*_dtype`` give,
transcribed here) into buffers and hands their bytes to the completed callback; its marker is the memset the
real marker makes. Expected busy times are unions computed here, independently.
"""

from __future__ import annotations

import atexit
import itertools
import random
import struct
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import nvtxsim
from nvtxsim.emit import live, notices, window
from nvtxsim.emit.live import cuda_events, cupti_lib, cupti_records
from nvtxsim.emit.live import cupti as cupti_mod
from nvtxsim.live_record import LiveWindow

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_live import _FakeEvent, _FakeTorch  # noqa: E402


def test_cupti_is_asked_for_by_name_only_and_needs_no_other_flag(capsys):
    """Since the H200 run of session 6 (reports/live-cupti-h200.md) the mode is no longer gated; it stays
    opt-in: the default and every flag value give CUDA events."""
    assert live._gpu_timing("cupti") is cupti_mod.CuptiTiming
    assert live._gpu_timing(True) is live._gpu_timing("events") is cuda_events.CudaEventTiming
    assert capsys.readouterr().err == ""


# field: (offset, struct code) of the cupti-python 13.0.1 dtypes (size first)
REAL = {
    10: (
        216,
        {
            "kind": (0, "i"),
            "start": (16, "Q"),
            "end": (24, "Q"),
            "device_id": (40, "I"),
            "context_id": (44, "I"),
            "stream_id": (48, "I"),
            "correlation_id": (92, "I"),
        },
    ),
    1: (
        96,
        {
            "kind": (0, "i"),
            "copy_kind": (4, "B"),
            "bytes": (8, "Q"),
            "start": (16, "Q"),
            "end": (24, "Q"),
            "device_id": (32, "I"),
            "context_id": (36, "I"),
            "stream_id": (40, "I"),
            "correlation_id": (44, "I"),
        },
    ),
    2: (
        88,
        {
            "kind": (0, "i"),
            "value": (4, "I"),
            "bytes": (8, "Q"),
            "start": (16, "Q"),
            "end": (24, "Q"),
            "device_id": (32, "I"),
            "context_id": (36, "I"),
            "stream_id": (40, "I"),
            "correlation_id": (44, "I"),
        },
    ),
    4: (
        40,
        {
            "kind": (0, "i"),
            "cbid": (4, "I"),
            "start": (8, "Q"),
            "end": (16, "Q"),
            "process_id": (24, "I"),
            "thread_id": (28, "I"),
            "correlation_id": (32, "I"),
        },
    ),
    39: (24, {"kind": (0, "i"), "external_kind": (4, "i"), "external_id": (8, "Q"), "correlation_id": (16, "I")}),
}
# a later struct version: the kernel record grown, its fields moved (read from the module's dtype)
NEWER = dict(REAL)
NEWER[10] = (
    232,
    {"kind": (0, "i"), "start": (24, "Q"), "end": (32, "Q"), "stream_id": (56, "I"), "correlation_id": (100, "I")},
)
DTYPE_ATTRS = {
    10: "activity_kernel10_dtype",
    1: "activity_memcpy6_dtype",
    2: "activity_memset4_dtype",
    4: "activity_api_dtype",
    39: "activity_external_correlation_dtype",
}
NP_CODES = {"i": "<i4", "I": "<u4", "Q": "<u8", "B": "u1"}


UNKNOWN_KIND = 99  # a record kind the parser has no layout for (32 bytes): the buffer is walked record by record


class FakeLib:
    """The CuptiLib methods live timing uses, with a fake driver behind (launch, marker)."""

    def __init__(
        self,
        layout=REAL,
        batch=7,
        refuse=False,
        marker_records=True,
        unknown=False,
        values=True,
        corr_needs_api=False,
        held_streams=(),
    ):
        """values=False: memset records keep 0, not the value set; corr_needs_api: correlation ids are 0 unless
        runtime API records are on."""
        self.layout, self.batch, self.refuse = layout, batch, refuse
        self.held_streams, self.held = set(held_streams), []  # records of these streams come only when asked for
        self.marker_records, self.unknown = marker_records, unknown
        self.values, self.corr_needs_api = values, corr_needs_api
        for kind, attr in DTYPE_ATTRS.items():
            size, cols = layout[kind]
            names = list(cols)
            setattr(
                self,
                attr,
                np.dtype(
                    {
                        "names": names,
                        "formats": [NP_CODES[cols[n][1]] for n in names],
                        "offsets": [cols[n][0] for n in names],
                        "itemsize": size,
                    }
                ),
            )
        self.corr = itertools.count(1)
        self.lock = threading.Lock()
        self.pending: list[tuple[int, dict]] = []
        self.enabled: set[int] = set()
        self.handler = None
        self.enable_calls: list[tuple[bool, int]] = []
        self.delivered = 0
        self.rewalked = 0
        self.finalized = False

    # ---- the API
    def register(self, handler):
        if self.refuse:
            raise RuntimeError("cuptiActivityRegisterCallbacks: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED")
        self.handler = handler

    def enable(self, kind):
        self.enabled.add(kind)
        self.enable_calls.append((True, kind))

    def disable(self, kind):
        self.enabled.discard(kind)
        self.enable_calls.append((False, kind))

    def flush_period(self, ms):
        self.period = ms

    def flush_all(self, forced=False):
        with self.lock:
            self.pending.extend(self.held)
            self.held = []
        self._deliver()

    def dropped(self):
        return 0

    def finalize(self):
        self.finalized = True
        self.handler = None

    def rewalk(self, raw, layout):
        """What cupti_lib.rewalk gives: the known records back to back (the unknown ones are 32 bytes)."""
        self.rewalked += 1
        out, off = [], 0
        while off < len(raw):
            kind = struct.unpack_from("<i", raw, off)[0]
            size = 32 if kind == UNKNOWN_KIND else layout[kind][0]
            if kind != UNKNOWN_KIND:
                out.append(raw[off : off + size])
            off += size
        return b"".join(out)

    # ---- the fake driver
    def marker(self, value):
        """The marker memset: MARK_BYTES bytes set to ``value``; its record when memsets are recorded."""
        corr = self._corr()
        if cupti_records.MEMSET in self.enabled and self.marker_records:
            kept = value if self.values else 0
            fields = {"value": kept, "bytes": cupti_records.MARK_BYTES, "start": 5, "end": 10**12}
            self._add(2, {**fields, "stream_id": 99, "correlation_id": corr})
        return 0

    def launch(self, start, end, kind=10, nbytes=0, stream=7):
        """One kernel (kind 10) or copy (1, 2): its record when that kind is enabled; the correlation id it got."""
        corr = self._corr()
        if kind in self.enabled:
            fields = {"start": start, "end": end, "stream_id": stream, "correlation_id": corr}
            if kind != 10:
                fields["bytes"] = nbytes
            self._add(kind, fields)
        return corr

    def _corr(self):
        corr = next(self.corr)
        return 0 if self.corr_needs_api and cupti_records.RUNTIME not in self.enabled else corr

    def _add(self, kind, fields):
        with self.lock:
            if fields.get("stream_id") in self.held_streams:
                self.held.append((kind, fields))
                return
            self.pending.append((kind, fields))
            if self.unknown:
                self.pending.append((UNKNOWN_KIND, {}))
            due = len(self.pending) >= self.batch
        if due:
            self._deliver()

    def _deliver(self):
        with self.lock:
            todo, self.pending = self.pending, []
        handler = self.handler
        if not todo or handler is None:
            return
        size = sum(32 if k == UNKNOWN_KIND else self.layout[k][0] for k, _ in todo)
        buf = bytearray(size)
        off = 0
        for kind, fields in todo:
            rec_size, cols = (32, {"kind": (0, "i")}) if kind == UNKNOWN_KIND else self.layout[kind]
            for name, value in {"kind": kind, **fields}.items():
                if name in cols:
                    struct.pack_into("<" + cols[name][1], buf, off + cols[name][0], value)
            off += rec_size
        self.delivered += len(todo)
        handler(bytes(buf))


@pytest.fixture
def fake_cupti(monkeypatch):
    """A factory: installs a FakeLib as the process's libcupti and marker (and a fake torch whose CUDA is
    initialised); ``layout_from_dtypes``: the layouts read from the fake's dtypes, as from a cupti-python."""

    def install(layout_from_dtypes=False, **kw):
        fc = FakeLib(**kw)
        layout = cupti_records.layouts(fc) if layout_from_dtypes else cupti_records.LAYOUTS
        monkeypatch.setitem(sys.modules, "torch", _FakeTorch)
        monkeypatch.setattr(cupti_mod, "_open", lambda torch: (fc, fc.marker, layout))
        return fc

    monkeypatch.setattr(cupti_mod, "FLUSH_PERIOD_MS", 5)
    monkeypatch.setattr(cupti_mod, "GPU_WAIT_S", 3.0)
    monkeypatch.setattr(cupti_mod, "_collector", None)
    monkeypatch.setattr(cupti_mod, "_refused", None)
    monkeypatch.delenv("CUDA_INJECTION64_PATH", raising=False)
    notices._reported.clear()
    window.configure(None)
    yield install
    live.stop()
    col = cupti_mod._collector
    if col is not None:
        col.shutdown()
        atexit.unregister(col.shutdown)
    notices._reported.clear()


_real_open = cupti_mod._open


def _union(intervals):
    """Independent truth: sort, sweep, add up the merged pieces."""
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (cur_e - cur_s if cur_e is not None else 0)


def _training(fc, iterations=4):
    """A loop with nested phases, overlapping kernels, copies, a launch from another thread inside a phase and
    launches outside every phase; returns, per window of two iterations, each phase's ranges' ops."""
    truth: list[dict[str, list[list]]] = [{}, {}]
    open_now: list[list] = []  # the ops list of each range open now

    def launch(s, e, kind=10, nbytes=0):
        fc.launch(s, e, kind, nbytes)
        for ops in open_now:
            ops.append((s, e, kind, nbytes))

    class Opened:
        def __init__(self, name):
            self.name, self.ph = name, nvtxsim.phase(name)

        def __enter__(self):
            self.ph.__enter__()
            ops: list = []
            truth[w].setdefault(self.name, []).append(ops)
            open_now.append(ops)

        def __exit__(self, *exc):
            open_now.pop()
            return self.ph.__exit__(*exc)

    for i in range(iterations):
        nvtxsim.step()
        w, b = i // 2, 1_000_000 + i * 10_000
        launch(b - 500, b - 400)  # outside every phase: nobody's
        with Opened("iteration"):
            with Opened("policy"):
                launch(b, b + 100)
                launch(b + 50, b + 150)  # overlaps the first (another stream)
            launch(b + 200, b + 260, kind=1, nbytes=4096)  # a memcpy in the iteration, outside policy
            for j in range(2):
                with Opened("sim_step"):
                    launch(b + 1000 + j * 300, b + 1400 + j * 300)  # the two ranges' kernels overlap in time
                    launch(b + 1400 + j * 300, b + 1410 + j * 300, kind=2, nbytes=64)
                    t = threading.Thread(target=launch, args=(b + 1800 + j * 1000, b + 1850 + j * 1000))
                    t.start()  # autograd-like: another thread launches while sim_step is open here
                    t.join()
    return truth


def _expected(ranges):
    """Summed over the ranges: each range's union (the report's per-range busy time), ops and bytes."""
    ops = [o for r in ranges for o in r]
    copies = [o for o in ops if o[2] != 10]
    return {
        "gpu_ns": sum(_union([(s, e) for s, e, _k, _b in r]) for r in ranges),
        "kernels": len(ops) - len(copies),
        "copies": len(copies),
        "copy_bytes": sum(b for *_x, b in copies),
    }


@pytest.mark.parametrize("shape", ["bytes", "newer-layout", "unknown-kind", "one-record-buffers", "no-values"])
def test_busy_time_counts_and_bytes_per_phase_match_an_independent_union(fake_cupti, shape, capsys):
    """unknown-kind: every buffer holds records of a kind without a layout (walked record by record);
    one-record-buffers: a buffer per record (markers and ops arrive in separate buffers); no-values: the memset
    records do not keep the marker's value (markers paired in call order, one line)."""
    fc = fake_cupti(
        layout=NEWER if shape == "newer-layout" else REAL,
        layout_from_dtypes=shape == "newer-layout",
        unknown=shape == "unknown-kind",
        batch=1 if shape == "one-record-buffers" else 7,
        values=shape != "no-values",
    )
    records: list[dict] = []
    live.start(None, every=2, callback=records.append, gpu="cupti", gpu_budget=None)
    truth = _training(fc)
    live.stop()
    assert [r["iterations"] for r in records] == [[0, 1], [2, 3]]
    for rec, want in zip(records, truth):
        assert rec["gpu_mode"] == "cupti"
        got = {
            k.split(":", 1)[1]: {f: p.get(f) for f in ("gpu_ns", "kernels", "copies", "copy_bytes")}
            for k, p in rec["phases"].items()
        }
        assert got == {name: _expected(ops) for name, ops in want.items()}
    # the numbers themselves, for the first window: policy 150 ns per iteration, sim_step 400+10+50 per range
    # (its two ranges overlap on the GPU: summed per range, as the report does, not one union)
    first = records[0]["phases"]
    assert first["nvtxsim:policy"]["gpu_ns"] == 2 * 150 and first["nvtxsim:sim_step"]["gpu_ns"] == 4 * 460
    assert first["nvtxsim:sim_step"]["kernels"] == 8 and first["nvtxsim:iteration"]["copy_bytes"] == 2 * (4096 + 2 * 64)
    assert fc.delivered > 0 and (fc.rewalked > 0) == (shape == "unknown-kind")
    col = cupti_mod._collector
    assert col is not None and col.pairing == ("order" if shape == "no-values" else "value")
    assert ("paired in call order" in capsys.readouterr().err) == (shape == "no-values")


def test_correlation_ids_only_beside_api_records_turn_runtime_records_on(fake_cupti, capsys):
    """A CUPTI that numbers calls only when API records are on: the first window is skipped with one line, the
    runtime kind is switched on at once, and the next windows are exact."""
    fc = fake_cupti(corr_needs_api=True)
    records: list[dict] = []
    live.start(None, every=1, callback=records.append, gpu="cupti", gpu_budget=None)
    for i in range(4):
        nvtxsim.step()
        if i == 1:  # the first window closed: the next ones are launched once it was resolved
            deadline = time.monotonic() + 5
            while not cupti_mod._collector.runtime and time.monotonic() < deadline:
                time.sleep(0.01)
        with nvtxsim.phase("sim_step"):
            fc.launch(i * 1000, i * 1000 + 100 * (i + 1))
    live.stop()
    got = [r["phases"]["nvtxsim:sim_step"]["gpu_ns"] for r in records]
    assert got[0] is None and got[1:] == [200, 300, 400]
    assert (True, cupti_records.RUNTIME) in fc.enable_calls
    assert sum("runtime API records on" in ln for ln in capsys.readouterr().err.splitlines()) == 1


def test_sampling_switches_the_activity_kinds(fake_cupti):
    """Every 4th iteration measured: CUPTI on for it and for the iterations either side (a lead and a trail: next
    to a switch an iteration is not measured as it ran), off for the rest; only the measured ones are attributed."""
    fc = fake_cupti()
    records: list[dict] = []
    live.start(None, every=4, sample=4, callback=records.append, gpu="cupti", gpu_budget=None)
    ph = nvtxsim.phase("sim_step")
    for i in range(8):
        nvtxsim.step()
        with ph:
            fc.launch(i * 1000, i * 1000 + 100 * (i + 1))
    live.stop()
    # measured iterations 0 (window 0) and 4 (window 1): their kernels only; 1, 3, 5, 7 recorded, in no range
    assert [r["phases"]["nvtxsim:sim_step"]["gpu_ns"] for r in records] == [100, 500]
    kernel_switches = [on for on, kind in fc.enable_calls if kind == 10]
    # on at start (0, 1), off at 2, on at 3 (lead of 4) to 5, off at 6, on at 7 (lead of 8), off at stop
    assert kernel_switches == [True, False, True, False, True, False], kernel_switches


def test_full_buffers_are_dropped_and_counted_never_waited_for(fake_cupti, monkeypatch):
    fc = fake_cupti(batch=3)
    monkeypatch.setattr(cupti_mod, "MAX_OPS", 4)
    records: list[dict] = []
    live.start(None, every=2, callback=records.append, gpu="cupti", gpu_budget=None)
    ph = nvtxsim.phase("sim_step")
    for i in range(4):
        nvtxsim.step()
        with ph:
            for k in range(20):
                fc.launch(i * 10_000 + k * 10, i * 10_000 + k * 10 + 5)
    live.stop()
    assert len(records) == 2  # training went on, both windows written
    assert sum(r.get("gpu_dropped", 0) for r in records) > 0


@pytest.mark.parametrize("case", ["under-nsys", "missing", "refused"])
def test_steps_aside_with_one_line_and_measures_with_events(fake_cupti, monkeypatch, capsys, case):
    if case == "under-nsys":
        fc = fake_cupti()
        monkeypatch.setenv("CUDA_INJECTION64_PATH", "/opt/nsys/libToolsInjection64.so")
    elif case == "missing":
        fake_cupti()
        monkeypatch.setattr(cupti_mod, "_open", _real_open)
        monkeypatch.setattr(cupti_lib, "find_library", lambda: None)  # no libcupti anywhere
    else:
        fc = fake_cupti(refuse=True)
    cuda_events.POOL.clear()
    _FakeEvent.created = 0
    records: list[dict] = []
    live.start(None, every=2, callback=records.append, gpu="cupti", gpu_budget=None)
    for _ in range(4):
        nvtxsim.step()
        with nvtxsim.phase("sim_step"):
            pass
    live.stop()
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "CUPTI" in ln or "cupti" in ln]
    assert len(lines) == 1 and "CUDA events" in lines[0]
    assert {r.get("gpu_mode") for r in records} == {"events"} and _FakeEvent.created > 0
    if case != "missing":
        assert fc.handler is None and not fc.enabled  # CUPTI untouched (under nsys) or given up
    assert ("libcupti" in lines[0]) == (case == "missing")


def test_union_against_brute_force():
    rng = random.Random(25)
    for _ in range(200):
        iv = [(s, s + rng.randint(0, 30)) for s in (rng.randint(0, 200) for _ in range(rng.randint(0, 12)))]
        covered = {t for s, e in iv for t in range(s, e)}
        s = np.array([a for a, _ in iv], dtype=np.int64)
        e = np.array([b for _, b in iv], dtype=np.int64)
        assert cupti_records.union_ns(s, e) == len(covered)


def test_old_and_new_lines_read_back():
    old = '{"iterations":[0,1],"measured":2,"sample":1,"pid":1,"time":1.0,"phases":{"nvtxsim:a":{"count":2,"cpu_ns":10,"cpu_mean_ns":5,"cpu_p90_ns":6,"gpu_ns":8}}}'
    w = LiveWindow.from_json(old)
    assert (
        w is not None
        and w.gpu_mode is None
        and w.phases["nvtxsim:a"].kernels is None
        and w.phases["nvtxsim:a"].gpu_ns == 8
    )
    assert w.to_json() == old  # nothing added to a window that had none of the new keys
    new = old.replace('"gpu_ns":8}', '"gpu_ns":8,"kernels":3,"copies":1,"copy_bytes":64}').replace(
        "}}}", '}},"gpu_mode":"cupti","gpu_dropped":5}'
    )
    n = LiveWindow.from_json(new)
    assert n is not None and (n.gpu_mode, n.gpu_dropped) == ("cupti", 5)
    assert (n.phases["nvtxsim:a"].kernels, n.phases["nvtxsim:a"].copies, n.phases["nvtxsim:a"].copy_bytes) == (3, 1, 64)
    assert n.to_json() == new
    bad = LiveWindow.from_json(new.replace('"cupti"', '"<script>"').replace('"kernels":3', '"kernels":-3'))
    assert bad is not None and bad.gpu_mode is None and bad.phases["nvtxsim:a"].kernels is None


def test_scalars_and_live_command_show_busy_and_launches(fake_cupti, tmp_path):
    fc = fake_cupti()
    scalars: dict[str, list[float]] = {}

    class Writer:
        def add_scalar(self, tag, value, step):
            scalars.setdefault(tag, []).append(value)

    out = tmp_path / "live.jsonl"
    live.start(out, every=2, writer=Writer(), gpu="cupti", gpu_budget=None)
    ph = nvtxsim.phase("policy")
    for i in range(4):
        nvtxsim.step()
        with ph:
            b = 1_000_000 * (i + 1)
            for k in range(3):  # 3 kernels of 100 ns back to back, then 200 bytes copied in 10 ns
                fc.launch(b + 100 * k, b + 100 * k + 100)
            fc.launch(b + 300, b + 310, kind=1, nbytes=200)
    live.stop()
    # per measured iteration: 310 ns busy, 4 launches, 200 bytes
    assert scalars["nvtxsim/policy/gpu_ms"] == [310 / 1e6] * 2 and scalars["nvtxsim/policy/launches"] == [4.0, 4.0]
    assert scalars["nvtxsim/policy/copy_mb"] == [200 / 1e6] * 2
    from nvtxsim.reporting.live import live_table, read_live

    row = live_table(read_live(out)).rows[0]
    assert (row["busy_per_iteration_ns"], row["launches_per_iteration"], row["kernels"], row["copies"]) == (
        310,
        4.0,
        12,
        4,
    )
    assert row["copy_bytes"] == 800 and any("CUPTI busy time" in n for n in live_table(read_live(out)).notes)


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ("cupti", "cupti"),
        ("CUPTI", "cupti"),
        ("events", "events"),
        ("1", True),
        ("0", False),
        ("", False),
        ("bogus", True),
    ],
)
def test_env_choice_of_gpu_timing(monkeypatch, capsys, raw, want):
    monkeypatch.setenv(live.ENV_GPU, raw)
    assert live._gpu_env() == want
    assert ("ignored" in capsys.readouterr().err) == (raw == "bogus")


def test_markers_that_never_come_back_one_line_and_no_more_waiting(fake_cupti, monkeypatch, capsys):
    fc = fake_cupti(marker_records=False)
    monkeypatch.setattr(cupti_mod, "GPU_WAIT_S", 0.3)
    records: list[dict] = []
    live.start(None, every=1, callback=records.append, gpu="cupti", gpu_budget=None)
    for i in range(6):
        nvtxsim.step()
        with nvtxsim.phase("sim_step"):
            fc.launch(i * 100, i * 100 + 10)
    t0 = time.monotonic()
    live.stop()
    assert time.monotonic() - t0 < 3  # after the first window, the writer no longer waits for markers
    assert len(records) == 6 and all(r["phases"]["nvtxsim:sim_step"]["gpu_ns"] is None for r in records)
    err = [ln for ln in capsys.readouterr().err.splitlines() if "markers" in ln]
    assert len(err) == 1 and f"{cupti_records.MARK_BYTES} bytes" in err[0]


def test_a_file_without_cupti_windows_keeps_its_table(tmp_path):
    line = '{"iterations":[0,1],"measured":2,"sample":1,"pid":1,"time":1.0,"phases":{"nvtxsim:a":{"count":2,"cpu_ns":10,"cpu_mean_ns":5,"cpu_p90_ns":6,"gpu_ns":8}}}'
    path = tmp_path / "old.jsonl"
    path.write_text(line + "\n")
    from nvtxsim.reporting.live import COLUMNS, live_table, read_live

    t = live_table(read_live(path))
    assert t.columns == COLUMNS and not {"kernels", "launches", "busy_per_iteration_ns"} & set(t.rows[0])
    assert any("CUDA events" in n for n in t.notes)  # a file from before gpu_mode: its GPU times are event spans


PROGRAM = """
import atexit, sys
sys.path.insert(0, {tests!r})
from test_live import _FakeTorch
from test_live_cupti import FakeLib
fc = FakeLib()
atexit.register(lambda: print("finalized", fc.finalized, fc.enabled == set()))  # runs after live timing's own
sys.modules["torch"] = _FakeTorch
import nvtxsim
from nvtxsim.emit.live import cupti as cupti_mod, cupti_records
cupti_mod._open = lambda torch: (fc, fc.marker, cupti_records.LAYOUTS)
cupti_mod.FLUSH_PERIOD_MS = 5
for i in range(4):
    nvtxsim.step()
    with nvtxsim.phase("policy"):
        fc.launch(1_000_000 * (i + 1), 1_000_000 * (i + 1) + 250)
        fc.launch(1_000_000 * (i + 1) + 100, 1_000_000 * (i + 1) + 300, kind=1, nbytes=128)
print("done")
"""


def test_from_the_environment_end_to_end(tmp_path):
    from test_live import _run

    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM.format(tests=str(Path(__file__).resolve().parent)))
    out = tmp_path / "live.jsonl"
    r = _run(
        [str(prog)],
        tmp_path,
        NVTXSIM_LIVE=str(out),
        NVTXSIM_LIVE_EVERY="2",
        NVTXSIM_LIVE_GPU="cupti",
        NVTXSIM_LIVE_GPU_BUDGET="off",
    )
    # at exit: the kinds disabled and CUPTI detached (finalize) before the interpreter goes
    assert r.returncode == 0 and r.stdout.split() == ["done", "finalized", "True", "True"], r.stderr
    assert "CUPTI" not in r.stderr and "cupti" not in r.stderr
    lines = [LiveWindow.from_json(ln) for ln in out.read_text().splitlines()]
    assert [w.gpu_mode for w in lines if w] == ["cupti", "cupti"]
    p = [w.phases["nvtxsim:policy"] for w in lines if w]
    # per range: a kernel [0, 250) and a copy [100, 300) overlapping it: 300 ns busy, one kernel, one copy, 128 B
    assert [(x.gpu_ns, x.kernels, x.copies, x.copy_bytes) for x in p] == [(600, 2, 2, 256)] * 2


def _pack(recs_):
    out = bytearray()
    for kind, fields in recs_:
        size, cols = REAL[kind]
        rec = bytearray(size)
        for name, value in {"kind": kind, **fields}.items():
            struct.pack_into("<" + cols[name][1], rec, cols[name][0], value)
        out += rec
    return bytes(out)


def test_a_buffer_cut_into_ops_markers_and_external_ids():
    """Against the records written: marker memsets become tickets (not ops), a memset of another size is a copy,
    external-correlation records map correlation to external id; a cut or unknown record is not read."""
    mark = cupti_records.MARK_BYTES
    raw = _pack(
        [
            (2, {"value": 0x4E560001, "bytes": mark, "start": 1, "end": 2, "correlation_id": 10}),
            (10, {"start": 100, "end": 150, "correlation_id": 11}),
            (10, {"start": 120, "end": 300, "correlation_id": 12}),
            (2, {"value": 0, "bytes": mark + 4, "start": 400, "end": 410, "correlation_id": 13}),
            (1, {"bytes": 4096, "start": 500, "end": 520, "correlation_id": 14}),
            (39, {"external_kind": 3, "external_id": 77, "correlation_id": 12}),
            (2, {"value": 0x4E560002, "bytes": mark, "start": 1, "end": 2, "correlation_id": 15}),
        ]
    )
    ops = cupti_records.parse_buffer(raw)
    assert ops is not None and ops.records == 7 and ops.kinds == {2: 3, 10: 2, 1: 1, 39: 1}
    assert ops.tickets == {0x4E560001: 10, 0x4E560002: 15} and ops.external == {12: 77}
    corr, start, end, nbytes, copy = ops.columns()
    assert sorted(zip(corr.tolist(), nbytes.tolist(), copy.tolist())) == [
        (11, 0, False),
        (12, 0, False),
        (13, mark + 4, True),
        (14, 4096, True),
    ]
    busy = cupti_records.attribute([("a", 10, 15), ("b", 11, 13), ("c", 15, 20)], ops)
    assert busy["a"] == cupti_records.Busy(200 + 10 + 20, 2, 2, mark + 4 + 4096)
    assert busy["b"] == cupti_records.Busy(180, 1, 0, 0) and busy["c"] == cupti_records.Busy(0, 0, 0, 0)
    assert cupti_records.parse_buffer(raw[:-8]) is None  # the last record cut
    assert cupti_records.parse_buffer(raw + struct.pack("<i", UNKNOWN_KIND) + bytes(28)) is None
    assert cupti_records.parse_buffer(raw, expected=6) is None


def test_buffer_callbacks_through_their_c_pointers_hand_over_the_valid_bytes_and_reuse_buffers():
    import ctypes

    got: list[bytes] = []
    pool = cupti_lib.BufferPool(size=4096)
    pool.handler = got.append
    buf, size, most = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_size_t(5)
    pool.request(ctypes.byref(buf), ctypes.byref(size), ctypes.byref(most))
    assert buf.value and (size.value, most.value) == (4096, 0)  # no record limit: CUPTI fills the buffer
    ctypes.memmove(buf.value, b"abcdefgh", 8)
    pool.complete(None, 0, buf.value, 4096, 6)
    assert got == [b"abcdef"] and not pool.held
    again = ctypes.c_void_p()
    pool.request(ctypes.byref(again), ctypes.byref(size), ctypes.byref(most))
    assert again.value == buf.value  # the buffer came back to the pool
    pool.handler = lambda raw: 1 / 0  # a failing handler never reaches CUPTI, and the buffer still comes back
    pool.complete(None, 0, again.value, 4096, 3)
    pool.complete(None, 0, 0, 0, 0)  # CUPTI's empty call
    assert len(pool.free) == 1 and not pool.held and got == [b"abcdef"]


def test_libcupti_is_the_named_one_then_the_loaded_one_then_an_nvidia_wheels(monkeypatch, tmp_path):
    libc = cupti_lib._loaded("libc.so")  # what this process has mapped (/proc/self/maps)
    assert libc is not None and Path(libc).name.startswith("libc.so") and Path(libc).exists()
    assert cupti_lib._loaded("libnothing-such.so") is None
    wheel = tmp_path / "nvidia" / "cu13" / "lib"
    wheel.mkdir(parents=True)
    (wheel / "libcupti.so.13").write_bytes(b"")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "elsewhere"), str(tmp_path)])
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "no-toolkit"))
    monkeypatch.setattr(cupti_lib, "_loaded", lambda stem: None)
    monkeypatch.delenv(cupti_lib.LIB_ENV, raising=False)
    assert cupti_lib.find_library() == str(wheel / "libcupti.so.13")
    monkeypatch.setattr(cupti_lib, "_loaded", lambda stem: "/opt/torch/lib/libcupti.so.13")
    assert cupti_lib.find_library() == "/opt/torch/lib/libcupti.so.13"  # the process's own copy, never a second
    monkeypatch.setenv(cupti_lib.LIB_ENV, "/x/libcupti.so")
    assert cupti_lib.find_library() == "/x/libcupti.so"


def test_random_buffers_parse_to_the_records_written():
    """Runs of every length (the run finder looks ahead from the last run's length): each op's correlation id,
    times and bytes, and each marker, as written."""
    rng = random.Random(2525)
    mark = cupti_records.MARK_BYTES
    for _ in range(60):
        written, ops, tickets = [], [], {}
        corr = 0
        for _run in range(rng.randint(1, 12)):
            kind = rng.choice([10, 10, 10, 1, 2, 39])
            for _ in range(rng.choice([1, 2, 3, 15, 16, 17, 40, 100, 300])):
                corr += 1
                if kind == 39:
                    written.append((39, {"external_kind": 3, "external_id": corr, "correlation_id": corr}))
                    continue
                fields = {"start": corr * 10, "end": corr * 10 + 5, "correlation_id": corr}
                if kind == 2 and rng.random() < 0.3:
                    tickets[corr + 7] = corr
                    written.append((2, {**fields, "value": corr + 7, "bytes": mark}))
                    continue
                nbytes = rng.randint(1, 10**6) if kind != 10 else 0
                if kind != 10:
                    fields["bytes"] = nbytes
                written.append((kind, fields))
                ops.append((corr, corr * 10, corr * 10 + 5, nbytes, kind != 10))
        got = cupti_records.parse_buffer(_pack(written))
        assert got is not None and got.records == len(written) and got.tickets == tickets
        cols = got.columns()
        assert sorted(zip(*(c.tolist() for c in cols))) == sorted(ops)


def test_records_held_in_another_buffer_are_asked_for_before_a_window_is_attributed(fake_cupti):
    """Autograd's kernels (another thread, a buffer of their own) may not come with CUPTI's periodic delivery: on
    the H200 policy_update lost that half from the 8th window on. Here their records come only when asked for
    (FlushAll), while the training thread's come at once and show the GPU got past the window."""
    fc = fake_cupti(batch=1, held_streams={8})
    records: list[dict] = []
    live.start(None, every=2, callback=records.append, gpu="cupti", gpu_budget=None)
    for i in range(4):
        nvtxsim.step()
        b = 10_000 * i
        with nvtxsim.phase("learn"):
            fc.launch(b, b + 100)
            t = threading.Thread(target=fc.launch, args=(b + 200, b + 500), kwargs={"stream": 8})
            t.start()
            t.join()
        fc.launch(b + 600, b + 700)  # after the range, delivered at once: the window is past on the GPU
    live.stop()
    got = [r["phases"]["nvtxsim:learn"] for r in records]
    assert [g["gpu_ns"] for g in got] == [800, 800] and [g["kernels"] for g in got] == [4, 4], got
