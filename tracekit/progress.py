"""Progress of long work (reading a large trace, analyzing it, simulating one), shown on a terminal only.

A rich progress display on standard error, one row per piece of work under way, appears only when standard
error is a terminal and ``TRACEKIT_NO_PROGRESS`` is not set (to a non-empty value). Otherwise every call
here does nothing: no output, and rich is not even imported, so that piped and redirected output stays
byte-identical with or without this module. The display is transient: it is erased when the work ends, and
what the command prints afterwards is unchanged.

Three ways to report, all safe to call whether or not a display is shown:

* ``with task("reading x.sqlite") as t:``: a row for the duration of the block (rows nest: the innermost
  is the one :func:`report` updates). ``t.advance(n)`` / ``t.update(completed=...)`` move its bar when the
  task has a ``total`` (e.g. kernels to simulate); ``t(stage, fraction)`` sets its stage text and fraction.
* ``report(stage, fraction)``: the callback form, :data:`ProgressCallback`, for code that should not know
  about displays (a reader's decoding loop): updates the innermost task's stage text and, when
  ``fraction`` (0..1) is given, its bar.
* ``with display(console):``: show the display on a given rich console whatever the terminal (tests, or a
  caller that owns the console); without it, the first :func:`task` starts a display when it may and the
  end of the outermost task stops it.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

#: Set to any non-empty value to never show progress, even on a terminal.
DISABLE_ENV = "TRACEKIT_NO_PROGRESS"

#: ``callback(stage, fraction)``: ``stage`` says what is being done now ("CUPTI_ACTIVITY_KIND_KERNEL
#: (1,000,000 rows)"), ``fraction`` how much of the task is done, 0..1, or None when unknown.
ProgressCallback = Callable[[str, "float | None"], None]


def enabled() -> bool:
    """Whether progress may be shown on standard error: it is a terminal and ``TRACEKIT_NO_PROGRESS`` is
    unset or empty."""
    if os.environ.get(DISABLE_ENV):
        return False
    stream = sys.stderr
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class Task:
    """One row of the display; every method is a no-op on a task that is not shown (see :data:`NULL_TASK`).

    Also a :data:`ProgressCallback`: ``task(stage, fraction)``."""

    def __init__(self, display: _Display | None = None, task_id: Any = None, total: float | None = None):
        self._display = display
        self._id = task_id
        self._total = total

    @property
    def shown(self) -> bool:
        """Whether this task is on a display."""
        return self._display is not None

    def __call__(self, stage: str, fraction: float | None = None) -> None:
        """Set the stage text and, when ``fraction`` (0..1) is given, the bar (as that share of ``total``,
        or of 1 for a task without one)."""
        if self._display is None:
            return
        fields: dict[str, Any] = {"status": stage}
        if fraction is not None:
            total = self._total if self._total is not None else 1.0
            fields |= {"total": total, "completed": max(0.0, min(1.0, fraction)) * total}
        self._display.update(self._id, refresh=True, **fields)

    def advance(self, amount: float = 1) -> None:
        """Add ``amount`` to the completed part (in the units of ``total``)."""
        if self._display is not None:
            self._display.advance(self._id, amount)

    def update(
        self, *, completed: float | None = None, total: float | None = None, stage: str | None = None
    ) -> None:
        """Set the completed part, the total (units of work) and/or the stage text."""
        if self._display is None:
            return
        if total is not None:
            self._total = total
        fields = {
            k: v for k, v in (("completed", completed), ("total", total), ("status", stage)) if v is not None
        }
        self._display.update(self._id, refresh=stage is not None, **fields)


#: The task handed out when no display is shown.
NULL_TASK = Task()


class _Display:
    """A rich Progress on one console, with the stack of open tasks (innermost last)."""

    def __init__(self, console: Any) -> None:
        from rich.progress import (
            BarColumn,
            Progress,
            SpinnerColumn,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.lock = threading.RLock()
        self.stack: list[Task] = []
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}", markup=False),
            BarColumn(bar_width=20),
            TaskProgressColumn(),
            TextColumn("{task.fields[status]}", markup=False),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            # Never capture standard output: it may be piped while standard error is a terminal.
            redirect_stdout=False,
            redirect_stderr=console.file is sys.stderr,
        )
        self.progress.start()

    def add(self, description: str, total: float | None) -> Task:
        with self.lock:
            task_id = self.progress.add_task(description, total=total, status="")
            task = Task(self, task_id, total)
            self.stack.append(task)
        self.progress.refresh()
        return task

    def remove(self, task: Task) -> None:
        with self.lock:
            if task in self.stack:
                self.stack.remove(task)
            self.progress.remove_task(task._id)

    def update(self, task_id: Any, refresh: bool = False, **fields: Any) -> None:
        self.progress.update(task_id, **fields)
        if refresh:
            self.progress.refresh()

    def advance(self, task_id: Any, amount: float) -> None:
        self.progress.advance(task_id, amount)

    def innermost(self) -> Task:
        with self.lock:
            return self.stack[-1] if self.stack else NULL_TASK

    def stop(self) -> None:
        self.progress.stop()


_current: _Display | None = None
_guard = threading.Lock()


def active() -> bool:
    """Whether a display is shown now (work that costs something only to describe progress, such as
    counting rows, can skip it otherwise)."""
    return _current is not None


@contextmanager
def display(console: Any | None = None) -> Iterator[bool]:
    """Show progress for the duration of the block, on ``console`` (a rich Console) whatever the
    terminal, or, without one, on standard error when :func:`enabled`. Yields whether a display is shown.
    Inside an open display (nested calls) it only yields True."""
    global _current
    owner = False
    with _guard:
        if _current is None and (console is not None or enabled()):
            if console is None:
                from rich.console import Console

                console = Console(stderr=True)
            _current = _Display(console)
            owner = True
        shown = _current is not None
    try:
        yield shown
    finally:
        if owner:
            with _guard:
                shown, _current = _current, None
            if shown is not None:
                shown.stop()


@contextmanager
def task(description: str, total: float | None = None) -> Iterator[Task]:
    """A row "``description``" for the duration of the block, with a bar when ``total`` (units of work)
    is given or a fraction is reported; yields its :class:`Task` (:data:`NULL_TASK` when nothing is shown).
    Starts a display when none is open and :func:`enabled`, and stops it at the end of the block."""
    if _current is None and not enabled():
        yield NULL_TASK
        return
    with display():
        shown = _current
        if shown is None:
            yield NULL_TASK
            return
        handle = shown.add(description, total)
        try:
            yield handle
        finally:
            shown.remove(handle)


def report(stage: str, fraction: float | None = None) -> None:
    """:data:`ProgressCallback` for the innermost open task: its stage text, and its bar when ``fraction``
    (0..1) is given. Does nothing when no display is shown."""
    shown = _current
    if shown is not None:
        shown.innermost()(stage, fraction)
