"""tracekit: measure the framework tax of deep-learning inference from profiler traces.

The Python API (see :mod:`tracekit.api`) is loaded on first use, so ``import tracekit`` stays light
(no rich, matplotlib or torch)::

    a = tracekit.analyze("trace.sqlite")       # what `tracekit analyze trace.sqlite` prints, as an Analysis
    a.iterations, a.summary, a.idle_gaps, a.verdict, a.to_json()
    tracekit.load("analysis.json") == a        # a saved `analyze --format json` document, back
    tracekit.read_trace(path); tracekit.table([...]); tracekit.report([...]); tracekit.compare(a, b)
    tracekit.analyze_many(paths, jobs=2)       # many traces (ranks, sweeps) in parallel: the cross-trace doc
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = [
    "Analysis",
    "analyze",
    "analyze_many",
    "compare",
    "load",
    "read_trace",
    "report",
    "table",
    "__version__",
]

_API = frozenset(
    {"analyze", "analyze_many", "compare", "load", "read_trace", "report", "table", "Report", "Options"}
)


def __getattr__(name: str) -> Any:
    if name == "Analysis":
        from tracekit.analysis import Analysis

        return Analysis
    if name in _API:
        from tracekit import api

        return getattr(api, name)
    raise AttributeError(f"module 'tracekit' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names and the lazily loaded API's, so that a notebook's or the REPL's completion of
    ``tracekit.`` offers the API (PEP 562)."""
    return sorted({*(n for n in globals() if n not in ("Any", "annotations")), "Analysis", *_API})
