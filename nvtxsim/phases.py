"""The standard phases of a simulation/RL step, each with a fixed colour and category.

Fixed colours keep timelines comparable across runs and machines; categories let
nsys (and ``nvtxsim report``) group phases by the part of the loop they belong to.
Any other phase name is allowed: it gets a colour derived from its name.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

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
]
