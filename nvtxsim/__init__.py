"""nvtxsim: NVTX phase ranges for simulation/RL loops, and per-phase reports of Nsight Systems exports.

Emit::

    import nvtxsim
    with nvtxsim.phase("sim_step"):
        sim.step()

    @nvtxsim.phase("policy")
    def act(obs): ...

Report::

    nvtxsim report run.sqlite

    model = nvtxsim.report("run.sqlite", views="tree,kernels")   # the same report from Python
    model.phases, model.view("tree").rows, model.to_json()
    export = nvtxsim.load("run.sqlite")                           # the loaded columns

``report`` and ``load`` import the report stages on first call: ``import nvtxsim`` stays light.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from nvtxsim import phases
from nvtxsim._version import __version__
from nvtxsim.emit import live
from nvtxsim.emit.instrument import Instrumentation, instrument
from nvtxsim.emit.ranges import (
    backend_info,
    disable,
    enable,
    end_range,
    is_enabled,
    is_recording,
    mark,
    phase,
    range_pop,
    range_push,
    start_range,
)
from nvtxsim.emit.window import step

if TYPE_CHECKING:  # the report stages are imported on first call, never by ``import nvtxsim``
    from nvtxsim.analysis.frames import Frames
    from nvtxsim.export.columns import Export
    from nvtxsim.reporting.model import ReportModel


def report(path: str | os.PathLike[str], **options: Any) -> ReportModel:
    """Load → analyse one export: the :class:`~nvtxsim.reporting.model.ReportModel` behind ``nvtxsim report``.

    Options: ``views`` ("tree,kernels", a list, or "all"), ``domain`` (a name, "default" or "all"),
    ``match``, ``by``, ``skip_first`` (None, the default: the steady state, the warm-up found left out; an
    int: that many iterations, 0 keeps everything), ``top``, ``envs``, ``findings``, ``fail_on``; ``cache`` and
    ``backend`` ("memory", "streamed") as for :func:`load`; ``fmt`` when the model will be rendered in
    a format that needs more (html). ``model.to_json()`` is the CLI's ``--format json``;
    ``nvtxsim.reporting.pipeline.render(model, fmt)`` gives any other format.
    See :func:`nvtxsim.reporting.pipeline.report` and docs/report.md."""
    from nvtxsim.reporting.pipeline import report as _report

    return _report(path, **options)


def load(path: str | os.PathLike[str], **options: Any) -> Export:
    """Read one export (.sqlite, .sqlite.gz or .sqlite.xz, .nsys-rep) into numpy columns: an :class:`~nvtxsim.export.columns.Export`.

    Options: ``cuda`` (read the CUDA tables, default True), ``cache`` (the parsed-columns cache beside
    the export; default: NVTXSIM_CACHE), ``backend`` ("memory", "streamed"; default: by size).
    See :func:`nvtxsim.export.reader.load`."""
    from nvtxsim.export.reader import load as _load

    return _load(path, **options)


def load_frames(path: str | os.PathLike[str], **kwargs: Any) -> Frames:
    """An export as pandas DataFrames (ranges, gpu_ops, api_calls, phases, iterations); needs pandas.

    See :func:`nvtxsim.analysis.frames.load_frames`. Imported lazily: ``import nvtxsim`` stays light."""
    from nvtxsim.analysis.frames import load_frames as _load_frames

    return _load_frames(path, **kwargs)


__all__ = [
    "phase",
    "mark",
    "range_push",
    "range_pop",
    "start_range",
    "end_range",
    "instrument",
    "Instrumentation",
    "enable",
    "disable",
    "is_enabled",
    "is_recording",
    "backend_info",
    "phases",
    "step",
    "load_frames",
    "report",
    "load",
    "live",
    "__version__",
]

live.start_from_env()
if os.environ.get(phases.ENV_STACKS, "").strip() and not live._own_command_line():  # opt-in stack sampling
    from nvtxsim.emit import stacks as _stacks

    _stacks.start_from_env()
