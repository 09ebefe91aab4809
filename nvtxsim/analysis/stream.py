"""Bounded-memory GPU projection for streamed exports: the CUDA tables are read once, in time order.

Why: an export too large for its CUDA columns to be held in memory is loaded with the
streamed backend (:mod:`nvtxsim.export.streamed`). nsys writes each activity table sorted
by start time, so the projection can be computed in one pass over the calls and the GPU
ops, holding only the ranges, small per-range accumulators and the launches that are
still in flight.

The numbers are exactly those of :func:`nvtxsim.analysis.projection.project` (same rows, same nsys rules):

* pass 1 reads the launch keys (process, correlation id) of the GPU ops into a bitmap, so a
  CUDA call is known to have launched work the moment it is read;
* pass 2 reads calls and ops in start order, windows of calls at a time: each launching call
  is matched to the ranges that wholly contain it on its thread (``ops`` counts launches
  there), and each op - in global start order - adds to those ranges its start, end, kernel
  count, copied bytes and busy time. Busy time (the union of op intervals) is exact because
  ops arrive in start order: a running maximum of op ends per range is all the state needed.

Every assumption is checked and any surprise raises :class:`Fallback`, after which the
caller projects in memory instead (reading the lazy columns): tables not sorted by start, an
op that starts before the call that launched it (it would be read before its call), two
calls with one launch key, correlation ids outside 0..2^31.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from nvtxsim.analysis.launches import contained, expand_segments, launch_key
from nvtxsim.export.columns import Export
from nvtxsim.export.pages import Unsupported
from nvtxsim.export.streamed import Scan, Source, release_memory
from nvtxsim.export.tables import sane_bytes
from nvtxsim.schema import KERNEL, MEMCPY, PID_MASK, SUMMARY_DIRECTIONS, summary_direction

_CALL_BATCH_BYTES = 4 << 20  # pages per parsed batch (tests make both tiny to exercise the windows)
_GPU_BATCH_BYTES = 4 << 20
_WINDOW_CALLS = 400_000  # calls handled per step
_MAX_CORR = 1 << 31
_NEG = np.iinfo(np.int64).min // 4


class Fallback(Exception):
    """The streaming preconditions do not hold: project in memory instead."""


# --------------------------------------------------------------------------- keys


class _Codes:
    """Small integer codes for global process ids (few distinct values: loops beat hashing)."""

    def __init__(self) -> None:
        self.index: dict[int, int] = {}

    def map(self, pid: np.ndarray, *, add: bool) -> np.ndarray:
        out = np.full(len(pid), -1, dtype=np.int64)
        rest = np.ones(len(pid), dtype=bool)
        while True:
            left = np.flatnonzero(rest)
            if len(left) == 0:
                return out
            v = int(pid[left[0]])
            m = pid == v
            code = self.index.get(v)
            if code is None and add:
                code = self.index[v] = len(self.index)
            if code is not None:
                out[m] = code
            rest &= ~m


class _KeyBits:
    """A set of launch keys (code << 32 | correlation id) as one bitmap per process."""

    def __init__(self) -> None:
        self.maps: dict[int, np.ndarray] = {}

    def _split(self, keys: np.ndarray) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        code = keys >> 32
        if len(code) and code[0] == code[-1] and np.all(code == code[0]):
            yield int(code[0]), np.arange(len(keys)), keys & 0xFFFFFFFF
            return
        for c in np.unique(code):
            idx = np.flatnonzero(code == c)
            yield int(c), idx, keys[idx] & 0xFFFFFFFF

    def test(self, keys: np.ndarray) -> np.ndarray:
        out = np.zeros(len(keys), dtype=bool)
        for c, idx, corr in self._split(keys):
            bits = self.maps.get(c)
            if bits is None:
                continue
            byte = corr >> 3
            ok = byte < len(bits)
            hit = np.zeros(len(idx), dtype=bool)
            hit[ok] = (bits[byte[ok]] >> (corr[ok] & 7)) & 1 == 1
            out[idx] = hit
        return out

    def add(self, keys: np.ndarray) -> None:
        for c, _, corr in self._split(keys):
            need = int(corr.max()) // 8 + 1
            bits = self.maps.get(c)
            if bits is None or len(bits) < need:
                grown = np.zeros(max(need, 2 * len(bits) if bits is not None else need), dtype=np.uint8)
                if bits is not None:
                    grown[: len(bits)] = bits
                bits = self.maps[c] = grown
            np.bitwise_or.at(bits, corr >> 3, (1 << (corr & 7)).astype(np.uint8))


# --------------------------------------------------------------------------- GPU ops in start order


class _GpuStream:
    """The GPU tables read batch by batch and merged in start order."""

    NAMES = ["start", "end", "global_pid", "correlation_id", "bytes", "copy_kind"]

    def __init__(self, scan: Scan) -> None:
        # One [kind, batch iterator, buffered rows, last start, exhausted] per GPU table.
        self.iters: list[list[Any]] = []
        for kind, table, cols in scan.src.gpu_tables:
            self.iters.append(
                [
                    kind,
                    scan.gpu(self.NAMES, kind, table, cols, _GPU_BATCH_BYTES),
                    np.zeros((0, len(self.NAMES)), dtype=np.int64),
                    _NEG,
                    False,
                ]
            )

    def _fill(self, it: list, bound: int | None) -> None:
        """Read batches of one table until its buffer holds a row with start >= bound (or the end)."""
        while not it[4] and (bound is None or len(it[2]) == 0 or it[2][-1, 0] < bound):
            try:
                batch = next(it[1])
            except StopIteration:
                it[4] = True
                return
            if len(batch) == 0:
                continue
            s = batch[:, 0]
            if s[0] < it[3] or np.any(s[1:] < s[:-1]):
                raise Fallback("GPU table not sorted by start")
            it[3] = int(s[-1])
            it[2] = np.concatenate([it[2], batch]) if len(it[2]) else batch

    def take(self, bound: int | None) -> tuple[np.ndarray, np.ndarray]:
        """All ops with start < bound (None: all the rest), in start order: (rows, kind)."""
        parts, kinds = [], []
        for it in self.iters:
            self._fill(it, bound)
            buf = it[2]
            cut = len(buf) if bound is None else int(np.searchsorted(buf[:, 0], bound, side="left"))
            if cut:
                parts.append(buf[:cut])
                kinds.append(np.full(cut, it[0], dtype=np.int8))
                it[2] = buf[cut:]
        if not parts:
            return np.zeros((0, len(self.NAMES)), dtype=np.int64), np.zeros(0, dtype=np.int8)
        rows = np.concatenate(parts) if len(parts) > 1 else parts[0]
        kind = np.concatenate(kinds) if len(kinds) > 1 else kinds[0]
        if len(parts) > 1:
            order = np.argsort(rows[:, 0], kind="stable")
            rows, kind = rows[order], kind[order]
        return rows, kind


# --------------------------------------------------------------------------- the projection


class _Projector:
    """The state of one streamed projection: per-range accumulators and the launches in flight."""

    def __init__(self, export: Export, src: Source) -> None:
        self.ex, self.src = export, src
        r = export.ranges
        self.n = n = len(r)
        self.pstart = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
        self.pend = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
        self.ops = np.zeros(n, dtype=np.int64)
        self.kernels = np.zeros(n, dtype=np.int64)
        self.copy = {d: np.zeros(n, dtype=np.int64) for d in SUMMARY_DIRECTIONS}
        self.busy = np.zeros(n, dtype=np.int64)
        self.rmax = np.full(n, _NEG, dtype=np.int64)  # running max of op ends per range (busy time)
        self.codes = _Codes()
        self.has_op = _KeyBits()
        self.seen = _KeyBits()  # launching calls read so far
        self.multi = np.zeros(0, dtype=np.int64)  # keys with several GPU ops
        # Ranges that can own calls, by start; `live` = those that may still contain calls to come.
        el = np.flatnonzero(~r.cross_thread)
        self.el = el[np.argsort(r.start[el], kind="stable")]
        self.el_start = r.start[self.el]
        self.el_ptr = 0
        self.live = np.zeros(0, dtype=np.int64)
        # Launching calls waiting for their ops: sorted keys, their ranges (CSR), alive flags.
        self.p_key = np.zeros(0, dtype=np.int64)
        self.p_off = np.zeros(0, dtype=np.int64)
        self.p_len = np.zeros(0, dtype=np.int64)
        self.p_multi = np.zeros(0, dtype=bool)
        self.p_alive = np.zeros(0, dtype=bool)
        self.p_ranges = np.zeros(0, dtype=np.int64)
        self.unmatched: list[np.ndarray] = []
        self.api_count = 0
        self.gpu_counts: dict[int, int] = {}

    # ------------------------------------------------------------------ pass 1: launch keys

    def keys(self, pid: np.ndarray, corr: np.ndarray, *, add: bool) -> np.ndarray:
        if len(corr) and (int(corr.min()) < 0 or int(corr.max()) >= _MAX_CORR):
            raise Fallback("correlation ids outside 0..2^31")
        code = self.codes.map(pid, add=add)
        return np.where(code >= 0, launch_key(code, corr), -1)

    def pass1(self, scan: Scan) -> None:
        multi = []
        for kind, table, cols in self.src.gpu_tables:
            count = 0
            for batch in scan.gpu(["global_pid", "correlation_id"], kind, table, cols, _GPU_BATCH_BYTES):
                count += len(batch)
                if not len(batch):
                    continue
                k = np.sort(self.keys(batch[:, 0], batch[:, 1], add=True))
                dup = k[1:] == k[:-1]
                multi.append(k[1:][dup])
                u = k[np.r_[True, ~dup]]
                multi.append(u[self.has_op.test(u)])
                self.has_op.add(u)
            self.gpu_counts[kind] = count
        self.multi = np.unique(np.concatenate(multi)) if multi else self.multi

    # ------------------------------------------------------------------ pass 2: calls

    def add_calls(self, cs: np.ndarray, ce: np.ndarray, ct: np.ndarray, key: np.ndarray) -> None:
        """Calls (start, end, thread) with their launch keys (:meth:`keys`; -1 for a process without GPU work)."""
        launch = np.flatnonzero(key >= 0)
        launch = launch[self.has_op.test(key[launch])]
        if len(launch) == 0:
            return
        cs, ce, ct, key = cs[launch], ce[launch], ct[launch], key[launch]
        sk = np.sort(key)
        if np.any(sk[1:] == sk[:-1]) or self.seen.test(key).any():
            raise Fallback("two CUDA calls with one launch key")
        self.seen.add(key)
        r = self.ex.ranges
        # Live ranges: started before the last of these calls, not ended before the first.
        hi = int(np.searchsorted(self.el_start, cs.max(), side="right"))
        if hi > self.el_ptr:
            self.live = np.concatenate([self.live, self.el[self.el_ptr : hi]])
            self.el_ptr = hi
        self.live = self.live[r.end[self.live] >= cs.min()]
        live = self.live
        if len(live) == 0:
            return
        # Per live range, the calls of its thread wholly inside it (projection's rule, launches.contained).
        ri, call = contained(
            r.start[live], r.end[live], r.global_tid[live], cs, ce, ct
        )  # call: index into this batch's launching calls
        rng = live[ri]
        if len(rng) == 0:
            return
        self.ops += np.bincount(rng, minlength=self.n)
        # Pending launches: this batch's calls that lie in ranges, with their ranges.
        o = np.argsort(call, kind="stable")
        call, rng = call[o], rng[o]
        firsts = np.flatnonzero(np.r_[True, call[1:] != call[:-1]])
        new_key = key[call[firsts]]
        new_len = np.diff(np.r_[firsts, len(call)])
        new_off = len(self.p_ranges) + firsts
        self.p_ranges = np.concatenate([self.p_ranges, rng])
        keys = np.concatenate([self.p_key, new_key])
        o = np.argsort(keys, kind="stable")
        self.p_key = keys[o]
        self.p_off = np.concatenate([self.p_off, new_off])[o]
        self.p_len = np.concatenate([self.p_len, new_len])[o]
        self.p_multi = np.concatenate([self.p_multi, np.isin(new_key, self.multi)])[o]
        self.p_alive = np.concatenate([self.p_alive, np.ones(len(new_key), dtype=bool)])[o]

    def compact(self) -> None:
        alive = self.p_alive
        if len(alive) < 65536 or alive.sum() * 2 > len(alive):
            return
        idx = np.flatnonzero(alive)
        seg, pos = expand_segments(self.p_off[idx], self.p_len[idx])
        self.p_ranges = self.p_ranges[pos]
        self.p_off = np.cumsum(self.p_len[idx]) - self.p_len[idx]
        self.p_key, self.p_len, self.p_multi = self.p_key[idx], self.p_len[idx], self.p_multi[idx]
        self.p_alive = np.ones(len(idx), dtype=bool)

    # ------------------------------------------------------------------ pass 2: ops

    def add_ops(self, rows: np.ndarray, kind: np.ndarray) -> None:
        if len(rows) == 0:
            return
        s, e, pid, corr, nbytes, ck = (rows[:, i] for i in range(6))
        nbytes = sane_bytes(nbytes)  # as every backend reads them
        key = self.keys(pid, corr, add=False)
        if len(self.p_key):
            pos = np.minimum(np.searchsorted(self.p_key, key), len(self.p_key) - 1)
            found = (self.p_key[pos] == key) & self.p_alive[pos]
        else:
            pos, found = np.zeros(len(key), dtype=np.int64), np.zeros(len(key), dtype=bool)
        lost = ~found & (key >= 0)
        if lost.any():  # no pending call: the call lies in no range, or has not been read (yet)
            lk = key[lost]
            self.unmatched.append(lk[~self.seen.test(lk)])
        op = np.flatnonzero(found)
        if len(op) == 0:
            return
        p = pos[op]
        done = p[~self.p_multi[p]]
        self.p_alive[done] = False
        seg, pr = expand_segments(self.p_off[p], self.p_len[p])
        g = self.p_ranges[pr]
        op = op[seg]  # (op, range) pairs, ops in start order
        o = np.argsort(g, kind="stable")
        g, op = g[o], op[o]
        bounds = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
        ug = g[bounds]
        ss, es = s[op], e[op]
        self.pstart[ug] = np.minimum(self.pstart[ug], np.minimum.reduceat(ss, bounds))
        self.pend[ug] = np.maximum(self.pend[ug], np.maximum.reduceat(es, bounds))
        k = kind[op]
        self.kernels[ug] += np.add.reduceat((k == KERNEL).astype(np.int64), bounds)
        moving = k == MEMCPY
        if moving.any():
            direction = summary_direction(ck[op])
            b = nbytes[op]
            for i, d in enumerate(SUMMARY_DIRECTIONS):
                self.copy[d][ug] += np.add.reduceat(np.where(moving & (direction == i), b, 0), bounds)
        self._busy(ug, bounds, ss, es)

    def _busy(self, ug: np.ndarray, bounds: np.ndarray, ss: np.ndarray, es: np.ndarray) -> None:
        """Add each op's new coverage to its ranges: max(0, end - max(start, running max of earlier ends))."""
        t0 = int(ss.min()) - 1
        carry = np.maximum(self.rmax[ug], t0) - t0  # >= 0; earlier ends below t0 cannot overlap these ops
        le, ls = es - t0, ss - t0
        counts = np.diff(np.r_[bounds, len(ss)])
        rank = np.repeat(np.arange(len(ug), dtype=np.int64), counts)
        span = max(int(le.max()), int(carry.max())) + 1
        if span * (len(ug) + 1) < (1 << 62):
            shift = rank * span
            inc = np.maximum.accumulate(le + shift) - shift  # running max of ends within each range
        else:
            inc = np.empty_like(le)
            for a, b in zip(bounds, np.r_[bounds[1:], len(le)]):
                inc[a:b] = np.maximum.accumulate(le[a:b])
        prev = np.empty_like(inc)
        prev[1:] = inc[:-1]
        prev = np.maximum(prev, carry[rank])
        prev[bounds] = carry
        contrib = np.maximum(le - np.maximum(ls, prev), 0)
        self.busy[ug] += np.add.reduceat(contrib, bounds)
        last = np.r_[bounds[1:], len(le)] - 1
        self.rmax[ug] = np.maximum(carry, inc[last]) + t0

    # ------------------------------------------------------------------ driver

    def run(self) -> dict:
        try:
            with self.src.scan() as scan:
                self._pass2(scan)
        except Unsupported as exc:
            raise Fallback(str(exc)) from None
        if self.unmatched:
            lost = np.concatenate(self.unmatched)
            if len(lost) and self.seen.test(lost).any():
                raise Fallback("a GPU op starts before the call that launched it")
        self.src.api_count, self.src.gpu_counts = self.api_count, dict(self.gpu_counts)
        has = self.ops > 0
        return {
            "proj_start": np.where(has, self.pstart, -1),
            "proj_end": np.where(has, self.pend, -1),
            "ops": self.ops,
            "kernels": self.kernels,
            "busy": self.busy,
            "copy_bytes": self.copy,
        }

    def _pass2(self, scan: Scan) -> None:
        """Pass 1, then the calls and ops in start order."""
        self.pass1(scan)
        gpu = _GpuStream(scan)
        calls = scan.api(["start", "end", "global_tid", "correlation_id"], _CALL_BATCH_BYTES)
        last = _NEG
        for batch in _windows(calls):
            self.api_count += len(batch)
            cs = batch[:, 0]
            if cs[0] < last or np.any(cs[1:] < cs[:-1]):
                raise Fallback("runtime table not sorted by start")
            last = int(cs[-1])
            key = self.keys(batch[:, 2] & PID_MASK, batch[:, 3], add=False)
            self.add_calls(cs, batch[:, 1], batch[:, 2], key)
            # Every call that starts before `last` has been read: ops starting before it can be resolved.
            self.add_ops(*gpu.take(last))
            self.compact()
        self.add_ops(*gpu.take(None))


def _windows(batches: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
    """Group parsed batches into steps of about _WINDOW_CALLS rows (fewer, larger steps)."""
    parts: list[np.ndarray] = []
    rows = 0
    for b in batches:
        if len(b):
            parts.append(b)
            rows += len(b)
        if rows >= _WINDOW_CALLS:
            yield np.concatenate(parts) if len(parts) > 1 else parts[0]
            parts, rows = [], 0
    if parts:
        yield np.concatenate(parts) if len(parts) > 1 else parts[0]


def project_columns(export: Export, src: Source) -> dict:
    """The per-range projection columns (the fields of ``RangeGpu``) of a streamed export.

    Raises :class:`Fallback` when the export breaks a streaming precondition."""
    try:
        return _Projector(export, src).run()
    finally:
        release_memory()
