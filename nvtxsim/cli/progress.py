"""A progress display for slow loads: appears only after a delay, only on a terminal (stderr).

Small exports finish before the delay and print nothing; pipes, files and CI logs
never get progress output. The display is transient (erased when done).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

from nvtxsim.reporting.escaping import printable

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from nvtxsim.export.columns import Export


class Stages:
    """Handle given to the caller: ``stage("analysing")`` updates the description."""

    def __init__(self) -> None:
        self._progress: Progress | None = None  # rich is imported only when the display starts
        self._task: TaskID | None = None
        self.label = ""
        self._lock = threading.Lock()

    def stage(self, label: str) -> None:
        with self._lock:
            self.label = printable(label)
            if self._progress is not None and self._task is not None:  # set together
                self._progress.update(self._task, description=label)

    def _start(self, stream: TextIO) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        with self._lock:
            console = Console(file=stream, stderr=stream is sys.stderr, force_terminal=True)  # caller checked it is one
            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}", markup=False),
                BarColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )
            self._task = self._progress.add_task(self.label, total=None)
            self._progress.start()

    def _stop(self) -> None:
        """Erase the display where it stands: the last frame redrawn empty ("\\r", erase line), no newline and no
        cursor-up after it, which rich's transient stop writes and which terminals and logs that do not move
        the cursor back showed as a spinner line with the report's first character lost after it."""
        with self._lock:
            if self._progress is not None:
                if self._task is not None:
                    self._progress.update(self._task, visible=False)
                self._progress.live.transient = False  # nothing drawn to take back: the last frame is empty
                self._progress.stop()
                self._progress = None


@contextmanager
def progress_after(
    label: str, *, delay: float = 1.0, stream: TextIO | None = None, enabled: bool | None = None
) -> Iterator[Stages]:
    """Show a spinner/bar with ``label`` if the block is still running after ``delay`` seconds."""
    stream = stream or sys.stderr
    if enabled is None:  # a dumb terminal cannot move its cursor back: the spinner would be escape codes
        enabled = bool(getattr(stream, "isatty", lambda: False)()) and os.environ.get("TERM", "") != "dumb"
    stages = Stages()
    stages.label = printable(label)
    if not enabled:
        yield stages
        return
    done = threading.Event()

    def later() -> None:
        if not done.wait(delay):
            try:
                stages._start(stream)
            except Exception:  # a progress display must never break a report
                pass

    timer = threading.Thread(target=later, daemon=True)
    timer.start()
    try:
        yield stages
    finally:
        done.set()
        timer.join()
        stages._stop()


def load_with_progress(path: str | os.PathLike[str], *, progress: bool | None = None) -> Export:
    """Load an export, with a progress indicator on a terminal when it takes more than a second."""
    from pathlib import Path

    from nvtxsim.export.reader import load

    with progress_after(f"loading {Path(path).name}", enabled=progress):
        return load(path)
