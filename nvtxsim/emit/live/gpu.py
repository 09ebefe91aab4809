"""Emit stage, live timing: the seam for measuring a phase's GPU time.

Live timing asks a :class:`GpuTiming` for a mark when a measured range opens and when it closes, on the
training thread, where it must never wait for the GPU; the window keeps ``(phase name, opening,
closing)`` for each range, and the writer thread later asks :meth:`GpuTiming.resolve` for the GPU
nanoseconds per phase, once the GPU got there. :class:`~nvtxsim.emit.live.cuda_events.CudaEventTiming`
(a pair of pooled CUDA events per range: a stream span) is the default;
:class:`~nvtxsim.emit.live.cupti.CuptiTiming` (CUPTI activity records between markers placed at enter and
exit: busy time, kernels, copies, bytes) is chosen with ``NVTXSIM_LIVE_GPU=cupti`` in
:func:`nvtxsim.emit.live.start`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: One measured range's marks, as the window keeps them: (phase name, opening, closing).
Span = tuple[str, Any, Any]


@dataclass(frozen=True, slots=True)
class PhaseGpu:
    """One phase's GPU time in a window; the counts only where the timing sees the ops (CUPTI)."""

    ns: int
    kernels: int | None = None
    copies: int | None = None  # memcpy and memset ops
    copy_bytes: int | None = None


class GpuTiming(ABC):
    """GPU time per phase for one live-timing session, from marks placed at each range's enter and exit."""

    #: What the marks are, for the one stderr line when placing them fails ("CUDA events").
    what = "GPU marks"
    #: How it measures, as the record says (``gpu_mode``): "events" (stream spans) or "cupti" (busy time).
    mode = "events"

    @classmethod
    @abstractmethod
    def attach(cls) -> GpuTiming | None:
        """This timing for the process once the program uses the GPU; None before (asked again at the next
        step). May raise: live timing then measures CPU times only until the next step asks again."""

    @abstractmethod
    def begin(self) -> Any:
        """At a measured range's enter (training thread, never waits): its opening mark, or None when this
        range cannot be timed (a CUDA graph being captured, say). May raise: GPU timing turns off."""

    @abstractmethod
    def end(self, opening: Any) -> Any:
        """At the exit of a range that has an opening mark: its closing mark, or None when it cannot be
        placed (``opening`` is then released here). Never raises."""

    @abstractmethod
    def resolve(self, spans: list[Span]) -> dict[str, int]:
        """Writer thread: total GPU ns per phase name over the window's spans, waiting (bounded) for the GPU to
        reach them; the marks are released. A span that never completes is left out. Never raises."""

    @abstractmethod
    def release(self, spans: Iterable[Span]) -> None:
        """The marks of spans that will not be resolved (a dropped window, a full window)."""

    def resolve_phases(self, spans: list[Span]) -> dict[str, PhaseGpu]:
        """:meth:`resolve` with the counts a timing sees besides the ns (none for CUDA events). Never raises."""
        return {name: PhaseGpu(ns) for name, ns in self.resolve(spans).items()}

    def sampling(self, on: bool) -> None:
        """Training thread, when sampling switches measuring on (a measured iteration begins) or off. Never raises."""
        return None

    def dropped(self) -> int:
        """Writer thread: GPU records lost since the last ask (buffers full), 0 when none or not known."""
        return 0

    def cost_ns(self) -> int | None:
        """Training thread, at a step: what GPU timing is estimated to have cost the program so far (CPU ns), for a
        cost budget (:mod:`nvtxsim.emit.live.budget`); None when the timing is cheap enough to need none."""
        return None
