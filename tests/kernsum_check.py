"""Compare nvtxsim's per-phase kernel table with nsys's NVTX range kernel summary (nvtxkernsum / nvtx_kern_sum)."""

from __future__ import annotations

from collections import defaultdict

from nvtxsim.analysis.gpu import kernels
from nvtxsim.analysis.selection import Selection


def check_kernels_against_kernsum(d: Selection, rows: list[dict[str, str]], *, min_checked: int = 10) -> int:
    """Assert agreement; return how many (phase, kernel) rows were checked exactly.

    nsys counts distinct kernel executions (Kern Inst) and range instances (NVTX Inst) per
    (thread, range name, style, kernel), but sums Total Time once per enclosing range. nvtxsim
    counts a kernel once per phase, so totals agree unless a phase nests inside itself; phases with
    both push/pop and start/end ranges are split in two rows by nsys and only bounded here.
    """
    theirs: dict = defaultdict(lambda: [0, 0, 0])
    for r in rows:
        if r["NVTX Range"] in ("None", ""):
            continue
        v = theirs[(r["NVTX Range"], r["Kernel Name"])]
        v[0] += int(r["Kern Inst"])
        v[1] += int(r["NVTX Inst"])
        v[2] += int(r["Total Time (ns)"])
    ours = {(k.phase, k.kernel): [k.count, k.ranges, k.total_ns] for k in kernels(d, top=None) if k.kind == "kernel"}
    assert set(ours) == set(theirs), sorted(set(ours) ^ set(theirs))[:5]
    r = d.export.ranges
    idx, parent = d.tree.nesting.ranges, d.tree.nesting.parent
    self_nested = set()
    for k in range(len(idx)):
        a = parent[k]
        while a >= 0:
            if r.label[idx[a]] == r.label[idx[k]]:
                self_nested.add(d.range_label(int(idx[k])))
            a = parent[a]
    styles: dict = defaultdict(set)
    for i in range(len(r)):
        styles[d.range_label(i)].add(int(r.style[i]))
    mixed = {lab for lab, s in styles.items() if len(s) > 1}
    checked = 0
    for key, (count, nranges, total) in ours.items():
        if key[0] in mixed:
            assert count <= theirs[key][0] and total <= theirs[key][2], key
            continue
        checked += 1
        assert [count, nranges] == theirs[key][:2], key
        if key[0] not in self_nested:
            assert total == theirs[key][2], key
        else:
            assert total <= theirs[key][2], key
    assert checked >= min_checked
    return checked
