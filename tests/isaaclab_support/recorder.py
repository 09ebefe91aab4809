"""Record nvtxsim ranges in-process, without a profiler (tests only).

Every range nvtxsim.isaaclab opens goes through ``nvtxsim.phase.__enter__`` /
``__exit__`` (the RL loop levels: ``start_range`` / ``end_range`` of ``nvtxsim.emit.ranges``);
this swaps those for recorders and turns recording on, so the
same nesting checks run on in-process records and on real nsys exports.
"""

from __future__ import annotations

import time
from typing import Any

from nesting import Span


class RangeRecorder:
    """``with RangeRecorder() as rec: ...`` -> ``rec.spans`` (name, start, end, tid) in start order."""

    def __enter__(self) -> RangeRecorder:
        import threading

        import nvtxsim.emit.ranges as E

        self._emit = E
        self._saved = (E._active, E.phase.__enter__, E.phase.__exit__)
        self.spans: list[Span] = []
        stack: list[tuple[str, int, int]] = []

        def enter(ph: Any) -> Any:
            stack.append((ph.name, time.perf_counter_ns(), threading.get_ident()))
            return ph

        def exit_(ph: Any, *exc: Any) -> bool:
            name, start, tid = stack.pop()
            assert name == ph.name, f"range {ph.name!r} closed while {name!r} was innermost"
            self.spans.append(Span(name, start, time.perf_counter_ns(), tid))
            return False

        def start_range(name: str, **options: Any) -> Any:
            self.payloads[name] = options.get("payload")
            return (name, time.perf_counter_ns(), threading.get_ident())

        def end_range(token: Any) -> None:
            if token is not None:
                self.spans.append(Span(token[0], token[1], time.perf_counter_ns(), token[2]))

        self._saved_ranges = (E.start_range, E.end_range)
        self.payloads: dict = {}  # last payload per start/end range name
        E.phase.__enter__ = enter  # type: ignore[method-assign]
        E.phase.__exit__ = exit_  # type: ignore[method-assign]
        E.start_range, E.end_range = start_range, end_range  # type: ignore[assignment]
        E._active = True
        self._stack = stack
        return self

    def __exit__(self, *exc: Any) -> bool:
        E = self._emit
        E._active, E.phase.__enter__, E.phase.__exit__ = self._saved  # type: ignore[method-assign]
        E.start_range, E.end_range = self._saved_ranges  # type: ignore[assignment]
        self.spans.sort(key=lambda s: (s.start, -s.end))
        return False
