"""Profiler drivers: ``nsys`` and ``ncu`` wrap a worker process; ``torch`` and ``ort`` run inside it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

#: Profilers accepted by ``--profiler`` (``none`` = only the untraced timing run).
PROFILERS: tuple[str, ...] = ("nsys", "torch", "ort", "ncu", "none")


def tool_problem(variable: str, tool: str) -> str | None:
    """Why the executable that the environment variable ``variable`` (``TRACEKIT_NSYS``, ``TRACEKIT_NCU``)
    names cannot be run, in one line; None when the variable is unset or names a runnable file (an absolute
    or relative path, or a name found on PATH, as ``subprocess`` would run it)."""
    value = os.environ.get(variable)
    if not value or shutil.which(value):
        return None
    path = Path(value)
    if os.sep not in value:
        why = "not found on PATH"
    elif not path.exists():
        why = "no such file"
    elif path.is_dir():
        why = f"a folder, not the {tool} executable"
    else:
        why = "not executable"
    return (
        f"{variable}={value}: {why}; point it at the {tool} executable, or unset it to use {tool} from PATH"
    )
