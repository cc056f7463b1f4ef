"""Two analyzed traces side by side: summary deltas and per-kernel-name time and count deltas.

Per-kernel-name figures are per iteration, over the analyzed iterations (after ``--skip``):

- count_a / count_b: mean number of ops of that name per iteration (every op kind: kernels, memcpy, memset,
  CPU operators).
- time_a_us / time_b_us: mean summed duration of those ops per iteration, in µs (summed op durations, not a
  union: concurrent ops on several streams both count).
- time_delta_us = time_b_us − time_a_us; count_delta = count_b − count_a. A name absent from one side has 0
  there. Rows are sorted by |time_delta_us|, largest first (ties: larger total time first).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from tracekit.analyzers.iterations import IterationAnalysis, assign_ops, choose_ranges
from tracekit.model import Trace

#: Summary metrics compared (means over iterations): key, label.
SUMMARY_METRICS: list[tuple[str, str]] = [
    ("latency_ms", "latency (ms)"),
    ("cpu_ms", "CPU range time (ms)"),
    ("gpu_busy_ms", "GPU busy (ms)"),
    ("framework_overhead_ms", "framework overhead (ms)"),
    ("gpu_utilization", "GPU utilization"),
    ("kernels", "kernels / iteration"),
    ("launches", "launches / iteration"),
    ("launch_api_us", "launch-call time (µs)"),
    ("idle_gaps", "idle gaps / iteration"),
    ("idle_ms", "idle (ms)"),
]

KERNEL_DELTA_SCHEMA: dict[str, pl.DataType] = {
    "name": pl.String,
    "count_a": pl.Float64,
    "count_b": pl.Float64,
    "count_delta": pl.Float64,
    "time_a_us": pl.Float64,
    "time_b_us": pl.Float64,
    "time_delta_us": pl.Float64,
}


def per_name(trace: Trace, analysis: IterationAnalysis) -> pl.DataFrame:
    """Per op name: mean count and mean summed duration (µs) per analyzed iteration."""
    n_iter = analysis.iterations.height
    if n_iter == 0 or trace.ops.is_empty():
        return pl.DataFrame(schema={"name": pl.String, "count": pl.Float64, "time_us": pl.Float64})
    ranges, _, _ = choose_ranges(trace, analysis.range_name)
    ops = assign_ops(trace, ranges).filter(pl.col("iteration").is_in(analysis.iterations["index"].implode()))
    return ops.group_by("name").agg(
        (pl.len() / n_iter).cast(pl.Float64).alias("count"),
        ((pl.col("end") - pl.col("start")).sum() / 1e3 / n_iter).cast(pl.Float64).alias("time_us"),
    )


def kernel_deltas(a: pl.DataFrame, b: pl.DataFrame) -> pl.DataFrame:
    """Outer join of two :func:`per_name` frames; deltas B − A, sorted by |time delta| (then total time, name)."""
    joined = a.rename({"count": "count_a", "time_us": "time_a_us"}).join(
        b.rename({"count": "count_b", "time_us": "time_b_us"}), on="name", how="full", coalesce=True
    )
    joined = joined.with_columns(
        pl.col(c).fill_null(0.0) for c in ("count_a", "count_b", "time_a_us", "time_b_us")
    )
    return (
        joined.with_columns(
            (pl.col("count_b") - pl.col("count_a")).alias("count_delta"),
            (pl.col("time_b_us") - pl.col("time_a_us")).alias("time_delta_us"),
        )
        .with_columns(
            pl.col("time_delta_us").abs().alias("_abs"),
            (pl.col("time_a_us") + pl.col("time_b_us")).alias("_tot"),
        )
        .sort(["_abs", "_tot", "name"], descending=[True, True, False])
        .select(list(KERNEL_DELTA_SCHEMA))
        .cast(KERNEL_DELTA_SCHEMA)
    )


def summary_deltas(a: dict[str, Any], b: dict[str, Any], device: str = "gpu") -> list[dict[str, Any]]:
    """Rows metric, label, a, b, delta (b − a), ratio (b / a) from two analysis summaries (means).

    ``device`` "cpu" (both traces measured CPU operators) labels busy/utilization as operator time.
    """
    rows = []
    for key, label in SUMMARY_METRICS:
        if device == "cpu":
            label = label.replace("GPU", "operator")
        va = (a.get(key) or {}).get("mean")
        vb = (b.get(key) or {}).get("mean")
        rows.append(
            {
                "metric": key,
                "name": label,
                "a": va,
                "b": vb,
                "delta": vb - va if va is not None and vb is not None else None,
                "ratio": vb / va if va not in (None, 0) and vb is not None else None,
            }
        )
    return rows


def compare(
    trace_a: Trace, analysis_a: IterationAnalysis, trace_b: Trace, analysis_b: IterationAnalysis
) -> dict[str, Any]:
    """The comparison document: ``summary`` rows, ``kernels`` (all names, top changes first), bounds."""
    kernels = kernel_deltas(per_name(trace_a, analysis_a), per_name(trace_b, analysis_b))
    return {
        "a": {
            "path": trace_a.meta.get("path"),
            "bound": analysis_a.summary.get("bound"),
            "iterations": analysis_a.iterations.height,
            "device": analysis_a.device,
            "synthetic": bool(trace_a.meta.get("synthetic", False)),
        },
        "b": {
            "path": trace_b.meta.get("path"),
            "bound": analysis_b.summary.get("bound"),
            "iterations": analysis_b.iterations.height,
            "device": analysis_b.device,
            "synthetic": bool(trace_b.meta.get("synthetic", False)),
        },
        "summary": summary_deltas(
            analysis_a.summary,
            analysis_b.summary,
            "cpu" if analysis_a.device == analysis_b.device == "cpu" else "gpu",
        ),
        "kernels": kernels.to_dicts(),
        "warnings": [f"A: {w}" for w in analysis_a.warnings] + [f"B: {w}" for w in analysis_b.warnings],
    }
