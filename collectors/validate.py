"""Invariant checks of a collected trace, as ``benchmarks/gpu_validate.py`` applies them to GPU runs.

Per trace (after the run's warm-up is skipped, as ``tracekit analyze`` does by default):

- ``kernels``: every timed iteration holds at least one kernel (an empty iteration means the profiler lost
  the GPU work, e.g. CUDA-graph kernels under torch.profiler, or the iteration range is wrong);
- ``busy<=latency``: GPU busy time never exceeds the iteration's latency (busy is a union of intervals
  clipped to the iteration window; more would be a reader or analyzer bug). Tolerance 1 ns;
- ``one graph launch``: a CUDA-graph runtime (``cuda-graphs``, ``onnx-cuda-graphs``, ``compile-cudagraphs``)
  launches exactly one graph per iteration (``cudaGraphLaunch``/``cuGraphLaunch`` calls inside the range):
  zero means the runtime fell back to eager launches, more means graph breaks or a re-capture;
- ``untraced/traced``: the untraced median latency over the traced one (from the trace's sidecar; the means
  where a sidecar has no medians): tracing may slow a run, not speed it up, so the ratio must be in (0, 1.05];
  without the numbers the check is skipped. Medians, because a mean carries the iterations the stability rules
  drop (the first run, a stall): one 180 ms stall among 11 ms iterations had doubled a mean.

The checks only read the trace: they run the same on the committed synthetic traces
(``sample_traces/synthetic/table3_*``), which have the shape of GPU runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from tracekit.collectors.runtimes import GRAPH_RUNTIMES

#: Launch API names (prefixes: nsys may append a version suffix such as ``_v10000``) of a graph launch.
GRAPH_LAUNCH_PREFIXES: tuple[str, ...] = ("cudaGraphLaunch", "cuGraphLaunch")
#: Largest untraced/traced latency ratio accepted (tracing should not make a run faster; 5% noise).
MAX_UNTRACED_OVER_TRACED = 1.05


@dataclass
class Check:
    """One invariant on one trace: ``ok`` True/False, or None when it does not apply (``detail`` says why)."""

    trace: str
    runtime: str | None
    name: str
    ok: bool | None
    detail: str


def graph_launches_per_iteration(iterations: pl.DataFrame, api: pl.DataFrame) -> pl.Series:
    """Graph-launch calls starting inside each iteration ``[start_ns, end_ns]`` (vectorized binary search)."""
    launches = api.filter(
        pl.any_horizontal(pl.col("name").cast(pl.Utf8).str.starts_with(p) for p in GRAPH_LAUNCH_PREFIXES)
    )
    starts = launches["start"].sort()
    lo = starts.search_sorted(iterations["start_ns"], side="left")
    hi = starts.search_sorted(iterations["end_ns"], side="right")
    return (hi - lo).alias("graph_launches")


def iteration_checks(
    label: str, runtime: str | None, iterations: pl.DataFrame, api: pl.DataFrame | None
) -> list[Check]:
    """The per-iteration invariants on an analysis' ``iterations`` frame (and the trace's ``api`` frame)."""
    n = iterations.height
    empty = iterations.filter(pl.col("kernels") <= 0)["index"].to_list()
    checks = [
        Check(
            label,
            runtime,
            "kernels",
            not empty,
            f"all {n} iterations hold kernels"
            if not empty
            else f"{len(empty)} of {n} iterations hold no kernel (first: {empty[0]})",
        )
    ]
    over = iterations.filter(pl.col("gpu_busy_ms") > pl.col("latency_ms") + 1e-6)
    worst = float((iterations["gpu_busy_ms"] / iterations["latency_ms"]).max() or 0.0) if n else 0.0
    checks.append(
        Check(
            label,
            runtime,
            "busy<=latency",
            over.height == 0,
            f"max busy/latency {worst:.3f}" + (f"; {over.height} iterations over" if over.height else ""),
        )
    )
    if runtime in GRAPH_RUNTIMES:
        if api is None or api.height == 0:
            checks.append(Check(label, runtime, "one graph launch", False, "the trace holds no API calls"))
        else:
            counts = graph_launches_per_iteration(iterations, api)
            ok = bool((counts == 1).all())
            checks.append(
                Check(
                    label,
                    runtime,
                    "one graph launch",
                    ok,
                    f"graph launches per iteration: min {counts.min()}, max {counts.max()}",
                )
            )
    else:
        checks.append(Check(label, runtime, "one graph launch", None, "not a CUDA-graph runtime"))
    return checks


def ratio_check(label: str, runtime: str | None, meta: dict[str, Any]) -> Check:
    """untraced/traced median latency from a collect sidecar (``untraced_latency_ms``, ``traced_latency_ms``;
    the means where it has no medians)."""
    untraced_stats = meta.get("untraced_latency_ms") or {}
    traced_stats = meta.get("traced_latency_ms") or {}
    which = "median" if untraced_stats.get("median") and traced_stats.get("median") else "mean"
    untraced, traced = untraced_stats.get(which), traced_stats.get(which)
    if not untraced or not traced:
        return Check(label, runtime, "untraced/traced", None, "no untraced/traced latencies in the sidecar")
    ratio = untraced / traced
    return Check(
        label,
        runtime,
        "untraced/traced",
        0 < ratio <= MAX_UNTRACED_OVER_TRACED,
        f"{ratio:.3f} (untraced {untraced:.3f} ms, traced {traced:.3f} ms, {which}s)",
    )


def check_trace(path: str | Path) -> list[Check]:
    """All invariants of one trace file (nsys SQLite, Kineto or ORT JSON), its sidecar giving the runtime."""
    from tracekit.analyzers.iterations import analyze_iterations
    from tracekit.readers import read_trace

    path = Path(path)
    trace = read_trace(path)
    meta = trace.meta
    runtime = meta.get("runtime")
    analysis = analyze_iterations(trace, None, None)
    return [
        *iteration_checks(path.name, runtime, analysis.iterations, trace.api),
        ratio_check(path.name, runtime, meta),
    ]


def render_checks(checks: list[Check]) -> str:
    """A plain-text table: PASS/FAIL/n/a, trace, check, detail."""
    word = {True: "PASS", False: "FAIL", None: "n/a "}
    width = max((len(c.trace) for c in checks), default=5)
    return "\n".join(f"{word[c.ok]}  {c.trace:<{width}}  {c.name:<16}  {c.detail}" for c in checks)
