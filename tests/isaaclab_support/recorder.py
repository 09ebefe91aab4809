"""Record nvtxsim ranges in-process, without a profiler (tests only).

Every range nvtxsim.isaaclab opens goes through ``nvtxsim.phase.__enter__`` /
``__exit__``; this swaps those two for recorders and turns recording on, so the
same nesting checks run on in-process records and on real nsys exports.
"""

from __future__ import annotations

import time
from typing import Any

from nesting import Span


class RangeRecorder:
    """``with RangeRecorder() as rec: ...`` -> ``rec.spans`` (name, start, end, tid) in start order."""

    def __enter__(self) -> "RangeRecorder":
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

        E.phase.__enter__ = enter  # type: ignore[method-assign]
        E.phase.__exit__ = exit_  # type: ignore[method-assign]
        E._active = True
        self._stack = stack
        return self

    def __exit__(self, *exc: Any) -> bool:
        E = self._emit
        E._active, E.phase.__enter__, E.phase.__exit__ = self._saved  # type: ignore[method-assign]
        self.spans.sort(key=lambda s: (s.start, -s.end))
        return False
