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

from . import phases
from .emit import (
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
from .instrument import Instrumentation, instrument
from .window import step

__version__ = "0.1.0"

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
    "__version__",
]
