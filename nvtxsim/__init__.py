"""nvtxsim: NVTX phase ranges for simulation/RL loops, and per-phase reports of Nsight Systems exports.

Emit::

    import nvtxsim
    with nvtxsim.phase("sim_step"):
        sim.step()

    @nvtxsim.phase("policy")
    def act(obs): ...

Report::

    nvtxsim report run.sqlite
"""

from nvtxsim import phases
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
from nvtxsim.emit.instrument import Instrumentation, instrument
from nvtxsim.emit.window import step
from nvtxsim.emit import live

from nvtxsim._version import __version__


def load_frames(path, **kwargs):  # type: ignore[no-untyped-def]
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
    "live",
    "__version__",
]

live.start_from_env()
