"""The standard phases of a simulation/RL step, each with a fixed colour and category.

Fixed colours keep timelines comparable across runs and machines; categories let
nsys (and ``nvtxsim report``) group phases by the part of the loop they belong to.
Any other phase name is allowed: it gets a colour derived from its name.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from nvtxsim.errors import NvtxsimError

#: The NVTX domain every nvtxsim range is emitted in.
DOMAIN = "nvtxsim"


@dataclass(frozen=True)
class PhaseStyle:
    name: str
    color: int  # 0xRRGGBB; nvtx stores ARGB with alpha 0
    category: str


ITERATION = "iteration"
SIM_STEP = "sim_step"
RENDER = "render"
CAMERA_READOUT = "camera_readout"
POLICY = "policy"
ACTION = "action"
OBSERVATION = "observation"
REWARD = "reward"
TERMINATION = "termination"
RESET = "reset"
POLICY_UPDATE = "policy_update"
#: RL loop levels: one env step as the runner performs it (action, env.step, processing of the
#: transition), and one learning iteration (rollout of steps, returns, update) with its rollout.
STEP = "step"
LEARNING_ITERATION = "learning_iteration"
ROLLOUT = "rollout"

STANDARD: dict[str, PhaseStyle] = {
    s.name: s
    for s in (
        PhaseStyle(ITERATION, 0x7F7F7F, "loop"),
        PhaseStyle(SIM_STEP, 0x1F77B4, "physics"),
        PhaseStyle(RENDER, 0xFF7F0E, "rendering"),
        PhaseStyle(CAMERA_READOUT, 0xD62728, "rendering"),
        PhaseStyle(POLICY, 0x2CA02C, "learning"),
        PhaseStyle(ACTION, 0x9467BD, "env"),
        PhaseStyle(OBSERVATION, 0x8C564B, "env"),
        PhaseStyle(REWARD, 0xE377C2, "env"),
        PhaseStyle(TERMINATION, 0xBCBD22, "env"),
        PhaseStyle(RESET, 0x17BECF, "env"),
        PhaseStyle(POLICY_UPDATE, 0x98DF8A, "learning"),
        PhaseStyle(STEP, 0x5A5A5A, "loop"),
        PhaseStyle(LEARNING_ITERATION, 0x3C3C3C, "loop"),
        PhaseStyle(ROLLOUT, 0xAEC7E8, "loop"),
    )
}

#: Category for phases that are not standard.
CUSTOM_CATEGORY = "custom"


def style_for(name: str) -> PhaseStyle:
    """Style of a phase: the standard one, or a stable colour hashed from the name."""
    style = STANDARD.get(name)
    if style is not None:
        return style
    # A stable, not-too-dark colour per custom name (crc32 is stable across runs, unlike hash()).
    h = zlib.crc32(name.encode("utf-8", "surrogatepass"))
    color = 0x404040 | (h & 0xBFBFBF)
    return PhaseStyle(name, color, CUSTOM_CATEGORY)


__all__ = [
    "DOMAIN",
    "PhaseStyle",
    "STANDARD",
    "CUSTOM_CATEGORY",
    "style_for",
    "ITERATION",
    "SIM_STEP",
    "RENDER",
    "CAMERA_READOUT",
    "POLICY",
    "ACTION",
    "OBSERVATION",
    "REWARD",
    "TERMINATION",
    "RESET",
    "POLICY_UPDATE",
    "STEP",
    "LEARNING_ITERATION",
    "ROLLOUT",
]


# --------------------------------------------------------------------------- refused range_pop
# The contract between ``range_pop()`` (emit) and the report's warning (export): emit records this
# mark (in the nvtxsim domain) for every range_pop() it refused, the report counts them.

UNMATCHED_POP_MARK = "unmatched_range_pop"
#: Start of the NVTX mark a live trigger places inside the capture window it opens ("nvtxsim trigger
#: sim_step>3x fired at iteration 30: ..."): the report says the capture came from it.
TRIGGER_MARK = "nvtxsim trigger "


# --------------------------------------------------------------------------- capture window
# The contract between ``nvtxsim.step()`` (emit) and ``nsys --capture-range`` (capture): both sides
# name the window range and read its variables from here.

#: Name and domain of the NVTX range that spans the window (a registered string). Its own domain
#: keeps it out of the phase tables, which report the ``nvtxsim`` domain.
WINDOW_RANGE = "capture_window"
WINDOW_DOMAIN = "nvtxsim_window"
#: Environment variables read at import: the window and how it is signalled.
ENV_ITERATIONS = "NVTXSIM_ITERATIONS"
ENV_API = "NVTXSIM_WINDOW_API"
APIS = ("nvtx", "cuda")
#: Live timing's trigger (emit.live): a rule like ``sim_step>1.5x`` that opens a window of N iterations.
ENV_LIVE_TRIGGER = "NVTXSIM_LIVE_TRIGGER"
ENV_LIVE_TRIGGER_ITERATIONS = "NVTXSIM_LIVE_TRIGGER_ITERATIONS"
#: Opt-in stack sampling (nvtxsim.emit.stacks): ``1`` or the file the samples go to (``nvtxsim profile --stacks``
#: sets it to the stacks sidecar beside the export).
ENV_STACKS = "NVTXSIM_STACKS"


@dataclass(frozen=True)
class Window:
    """Iterations ``start`` .. ``stop - 1`` (``stop`` None: to the end of the program)."""

    start: int
    stop: int | None = None

    def __str__(self) -> str:
        return f"{self.start}:{'' if self.stop is None else self.stop}"

    def describe(self) -> str:
        if self.stop is None:
            return f"iterations {self.start} to the end"
        return f"iterations {self.start}..{self.stop - 1} ({self.stop - self.start} iterations)"


def parse_trigger(rule: str) -> tuple[str, float, int]:
    """Parse a live-timing trigger ``PHASE>FACTORx`` or ``PHASE>FACTORx for N`` (``sim_step>1.5x for 3``) into
    (phase name, factor, N): N measured iterations in a row over FACTOR x the baseline fire it (default 1)."""
    head, sep, tail = str(rule).partition(">")
    name = head.strip()
    factor, _, run_text = tail.strip().lower().partition(" for ")
    factor = factor.strip().removesuffix("x").strip()
    try:
        value = float(factor)
        run = int(run_text) if run_text.strip() else 1
    except ValueError:
        value, run = -1.0, 1
    if (
        not sep
        or not name
        or "<" in name
        or not value > 0
        or value != value
        or value == float("inf")
        or not 1 <= run <= 1000
    ):
        raise NvtxsimError(
            "trigger: expected PHASE>FACTORx or PHASE>FACTORx for N (e.g. 'sim_step>1.5x': an iteration's sim_step time "
            f"over 1.5x its rolling median; 'sim_step>1.5x for 3': three iterations in a row), got {rule!r}"
        )
    return name, value, run


def parse_iterations(text: str) -> Window:
    """Parse ``A:B`` (iterations A..B-1), ``A:`` (from A on) or ``:B`` (0..B-1)."""
    raw = str(text).strip()
    head, sep, tail = raw.partition(":")
    try:
        if not sep:
            raise ValueError
        start = int(head) if head.strip() else 0
        stop = int(tail) if tail.strip() else None
    except ValueError:
        raise NvtxsimError(f"--iterations: expected A:B (e.g. 10:20 records iterations 10..19), got {raw!r}") from None
    if start < 0 or (stop is not None and stop <= start):
        raise NvtxsimError(f"--iterations {raw}: need 0 <= A < B (A:B records iterations A..B-1)")
    return Window(start, stop)
