"""Errors that the CLI turns into one line on stderr and an exit code, never a traceback."""

from __future__ import annotations

from pathlib import Path


class TracekitError(Exception):
    """A problem the user can fix (bad input, missing tool). ``exit_code`` 2 = usage/input, 1 = run failure."""

    exit_code = 2

    def __init__(self, message: str, path: str | Path | None = None) -> None:
        self.path = str(path) if path is not None else None
        self.message = message
        # the path as it is in .path; in the text, escaped where it is not printable (a newline, ESC)
        super().__init__(f"{one_line(self.path)}: {message}" if self.path else message)


def one_line(text: str) -> str:
    """``text`` with each character that is not printable (a newline or an escape sequence in a file name)
    written as Python escapes it (``\\n``, ``\\x1b``), so a message stays one line and reaches the terminal as
    text."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


#: How a warning says an input was left out because it could not be read or analyzed (the words of
#: :func:`tracekit.session.for_each_input` and of a table row's failed ``--ncu`` join); a command that leaves
#: one out exits 1.
LEFT_OUT = "left out: "


class TraceFormatError(TracekitError):
    """The file is not a trace tracekit can read, or it is damaged (truncated, corrupt, foreign)."""


class NoActivityError(TracekitError):
    """The trace holds nothing to analyze: no device ops and no ranges, or no range of the requested name."""


class RunFailure(TracekitError):
    """A collection run failed (model export, runtime error, profiler crash)."""

    exit_code = 1
