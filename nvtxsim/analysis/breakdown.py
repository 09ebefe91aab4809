"""Per-thread and per-process breakdown of the phase statistics.

The same numbers as the summary (``analyse.summarize``), computed separately for
the ranges of each thread or each process, so a phase that runs on a side
thread or in several ranks shows up once per place it ran.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nvtxsim.analysis.projection import PhaseStats, summarize
from nvtxsim.analysis.selection import Selection, pid_of, tid_of
from nvtxsim.schema import PID_MASK


@dataclass
class GroupedPhase:
    group: str  # "thread" or "process"
    key: int  # globalTid or globalPid
    pid: int
    tid: int  # 0 for process groups
    where: str  # display name of the thread / process
    stats: PhaseStats

    def as_dict(self) -> dict:
        return {"group": self.group, "pid": self.pid, "tid": self.tid, "where": self.where, **self.stats.as_dict()}


def breakdown(detail: Selection, by: str = "thread") -> list[GroupedPhase]:
    """Phase statistics per thread (``by="thread"``) or per process (``by="process"``)."""
    if by not in ("thread", "process"):
        raise ValueError(by)
    ex = detail.export
    sel = detail.selected
    owner = ex.ranges.global_tid[sel]
    if by == "process":
        owner = owner & PID_MASK
    out: list[GroupedPhase] = []
    for key in np.unique(owner):
        rep = summarize(ex, detail.gpu, domain=detail.domain, select=sel[owner == key])
        where = detail.thread_name(int(key)) if by == "thread" else detail.process_name(int(key))
        if by == "thread":
            where = f"{detail.process_name(int(key))} / {where}"
        for p in rep.phases:
            out.append(
                GroupedPhase(by, int(key), pid_of(int(key)), tid_of(int(key)) if by == "thread" else 0, where, p)
            )
    out.sort(key=lambda g: (g.pid, g.tid, -g.stats.cpu_total_ns, g.stats.label))
    return out
