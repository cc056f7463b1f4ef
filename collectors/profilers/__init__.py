"""Profiler drivers: ``nsys`` and ``ncu`` wrap a worker process; ``torch`` and ``ort`` run inside it."""

from __future__ import annotations

#: Profilers accepted by ``--profiler`` (``none`` = only the untraced timing run).
PROFILERS: tuple[str, ...] = ("nsys", "torch", "ort", "ncu", "none")
