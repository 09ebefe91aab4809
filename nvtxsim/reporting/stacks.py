"""The hot Python functions per phase as a table: the report's ``--view stacks`` (the sidecar beside the
export) and ``nvtxsim stacks FILE`` (a sidecar alone, e.g. from a run without nsys).

Phase, function and file names come from the sidecar and are data: escaped in every format.
"""

from __future__ import annotations

import os
from pathlib import Path

from nvtxsim.analysis.projection import row_dict
from nvtxsim.analysis.stacks import Stacks, hot_functions, read_stacks
from nvtxsim.errors import NvtxsimError
from nvtxsim.reporting.document import Document, PageHead, Prose, SourcePart
from nvtxsim.reporting.viewtable import Column, ViewTable

TITLE = "Hot Python functions per phase"
COLUMNS = [
    Column("phase", "Phase"),
    Column("function", "function"),
    Column("self_share", "self", "pct"),
    Column("total_share", "total", "pct"),
    Column("self_samples", "self n", "int"),
    Column("location", "file:line", prose=True),
]
HOW = "profile with nvtxsim profile --stacks (NVTXSIM_STACKS=1)"


def stacks_table(st: Stacks | None, path: Path, top: int = 10) -> ViewTable:
    """The ``top`` functions of each phase in the sidecar ``st`` (read from ``path``; None: there is none)."""
    if st is None:
        return ViewTable("stacks", TITLE, COLUMNS, [], [f"no stack samples beside the export ({path.name}): {HOW}"])
    notes = [
        f"{sum(st.samples.values())} samples at {st.hz} Hz ({st.mechanism or '?'}) from {st.processes} process(es), "
        "each counted for the innermost phase open on the sampled thread; self: share of the phase's samples in "
        "the function itself, total: in it or what it called",
        *st.problems,
    ]
    return ViewTable("stacks", TITLE, COLUMNS, [row_dict(r) for r in hot_functions(st, top)], notes)


def stacks_document(path: str | os.PathLike[str], top: int = 10) -> Document:
    """``nvtxsim stacks FILE``: the table of one sidecar; a missing file or one with no stack record is an error."""
    p = Path(path)
    st = read_stacks(p)
    if st is None:
        raise NvtxsimError(f"{p}: no such file ({HOW} writes NAME.stacks.jsonl)")
    if not st.processes:
        raise NvtxsimError(f"{p}: no stack record in it ({'; '.join(st.problems) or 'empty'})")
    t = stacks_table(st, p, top)
    head = PageHead("nvtxsim stacks", TITLE, [SourcePart(str(p), isolated=True)], [Prose("note", t.notes)])
    data = {"source": str(p), "processes": st.processes, "hz": st.hz, "rows": t.rows, "notes": t.notes}
    return Document("stacks", [[t]], head, data=lambda: data, flat=t)
