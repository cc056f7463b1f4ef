"""Wall-time SM activity and warp occupancy per iteration, from Nsight Systems GPU-metrics samples.

This is the reference study's definition (docs/design.md): for each iteration, the mean of the sampled GPU
metric over the samples whose timestamp lies inside the iteration's effective latency window
``[window_start_ns, window_end_ns]`` (both ends included). Idle time inside the window is sampled too, so a
framework-bound iteration shows low values even when its kernels keep the SMs busy while they run.

- SMs active: nsys "SM Active" / "SMs Active" / "SMs Active [Throughput %]" — percent of SMs (or of SM
  cycles) with at least one warp resident, averaged over the sample period.
- Warp occupancy: nsys "Compute Warps In Flight" / "Compute Warps in Flight [Throughput %]" / "Warp
  Occupancy" — compute warps resident, as a percent of the GPU's warp slots.

Metric names differ by nsys version and GPU, so they are matched by case-insensitive pattern; among matches
a metric in percent is preferred (newer nsys also writes "[Avg]" / "[Avg Warps per Cycle]" variants), and the
unit is reported as the reader found it. Only samples of the GPU that ran the trace's kernels count; when
the samples come from another GPU (the study's own RTX-8000 trace has exactly this) the values are ``None``
with a warning, never zero.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from tracekit.analyzers.stats import summarize_columns
from tracekit.model import Trace

#: Result column -> name patterns (case-insensitive, tried in order; the first pattern with a match wins).
METRIC_PATTERNS: dict[str, tuple[str, ...]] = {
    "sms_active": (r"^\s*sms?\s+active\b",),
    "warp_occupancy": (r"^\s*compute\s+warps\s+in\s+flight\b", r"^\s*warp\s+occupancy\b"),
}
LABELS = {"sms_active": "SMs active", "warp_occupancy": "warp occupancy"}


@dataclass
class MetricChoice:
    """Which sampled metric stands for one result column."""

    column: str
    metric: str
    unit: str
    devices: list[int]


@dataclass
class GpuMetricsResult:
    """Per-iteration wall-time means (``iterations``: index, sms_active, warp_occupancy, samples) and a
    summary per column: {"metric", "unit", "device", "iterations" (with a value), mean, p50, p90, p99, min,
    max} or None when unavailable."""

    iterations: pl.DataFrame
    summary: dict[str, dict[str, Any] | None]
    choices: dict[str, MetricChoice] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def value(self, column: str) -> float | None:
        """Mean over iterations of ``column`` ("sms_active" | "warp_occupancy"), or None."""
        entry = self.summary.get(column)
        return None if entry is None else entry.get("mean")


def choose_metric(gpu_metrics: pl.DataFrame, column: str) -> MetricChoice | None:
    """The sampled metric standing for ``column``: first pattern with a match, percent units first, then by name."""
    names = gpu_metrics.group_by("metric", "unit").agg(pl.col("device").unique().sort().alias("devices"))
    for pattern in METRIC_PATTERNS[column]:
        regex = re.compile(pattern, re.IGNORECASE)
        matches = [row for row in names.iter_rows(named=True) if regex.search(row["metric"] or "")]
        if matches:
            matches.sort(key=lambda r: (r["unit"] != "%", r["metric"]))
            best = matches[0]
            return MetricChoice(
                column, best["metric"], best["unit"], [d for d in best["devices"] if d is not None]
            )
    return None


def kernel_devices(trace: Trace) -> list[int]:
    """GPUs that ran the trace's kernels (any device op when there are no kernels)."""
    ops = trace.ops.filter(pl.col("kind") == "kernel")
    if ops.is_empty():
        ops = trace.ops
    return sorted(d for d in ops["device"].unique().to_list() if d is not None)


def analyze_gpu_metrics(trace: Trace, iterations: pl.DataFrame) -> GpuMetricsResult:
    """Wall-time SMs active / warp occupancy per iteration (see module docstring).

    ``iterations`` is :attr:`tracekit.analyzers.iterations.IterationAnalysis.iterations` (columns index,
    window_start_ns, window_end_ns). Values are in the sampled metric's unit (normally %).
    """
    warnings: list[str] = []
    frame = iterations.select("index", "window_start_ns", "window_end_ns")
    samples = trace.gpu_metrics
    summary: dict[str, dict[str, Any] | None] = {c: None for c in METRIC_PATTERNS}
    choices: dict[str, MetricChoice] = {}
    out = frame.select("index")
    if samples.is_empty():
        out = out.with_columns(
            pl.lit(None, pl.Float64).alias("sms_active"),
            pl.lit(None, pl.Float64).alias("warp_occupancy"),
            pl.lit(0, pl.Int64).alias("samples"),
        )
        return GpuMetricsResult(out, summary, choices, warnings)
    devices = kernel_devices(trace)
    sample_counts: pl.DataFrame | None = None
    for column in METRIC_PATTERNS:
        choice = choose_metric(samples, column)
        if choice is None:
            warnings.append(
                f"no GPU-metrics samples for {LABELS[column]} (names tried: "
                + ", ".join(METRIC_PATTERNS[column])
                + ")"
            )
            out = out.with_columns(pl.lit(None, pl.Float64).alias(column))
            continue
        choices[column] = choice
        use = [d for d in choice.devices if d in devices] if devices else list(choice.devices)
        if devices and not use:
            warnings.append(
                f"GPU-metrics samples ({choice.metric!r}) come from GPU {_fmt(choice.devices)} but the kernels ran "
                f"on GPU {_fmt(devices)}: {LABELS[column]} is not reported (the sampled GPU was not the one used)"
            )
            out = out.with_columns(pl.lit(None, pl.Float64).alias(column))
            continue
        if len(use) > 1:
            warnings.append(f"{LABELS[column]}: samples of GPUs {_fmt(use)} averaged together")
        picked = samples.filter((pl.col("metric") == choice.metric) & pl.col("device").is_in(use))
        per_iter = _window_means(picked, frame, column)
        out = out.join(per_iter.select("index", column), on="index", how="left")
        if sample_counts is None:
            sample_counts = per_iter.select("index", pl.col("n").alias("samples"))
        empty = int(per_iter.filter(pl.col("n") == 0).height)
        if empty:
            warnings.append(
                f"{empty} of {frame.height} iterations have no {choice.metric!r} sample inside their window "
                "(sampling period longer than the iteration?): no value for them"
            )
        stats = summarize_columns(out, [column])[column].to_dict()
        valid = int(out[column].is_not_null().sum())
        summary[column] = (
            {
                "metric": choice.metric,
                "unit": choice.unit,
                "device": use[0] if len(use) == 1 else use,
                "iterations": valid,
                **stats,
            }
            if valid
            else None
        )
    if sample_counts is None:
        sample_counts = frame.select("index", pl.lit(0, pl.Int64).alias("samples"))
    out = out.join(sample_counts, on="index", how="left").with_columns(pl.col("samples").fill_null(0))
    for column in METRIC_PATTERNS:
        if column not in out.columns:
            out = out.with_columns(pl.lit(None, pl.Float64).alias(column))
    return GpuMetricsResult(
        out.select("index", "sms_active", "warp_occupancy", "samples").sort("index"),
        summary,
        choices,
        warnings,
    )


def _window_means(samples: pl.DataFrame, windows: pl.DataFrame, column: str) -> pl.DataFrame:
    """Per iteration: mean value and count of samples with window_start <= timestamp <= window_end.

    Windows may overlap (``--split-idle`` windows when the host runs ahead, ranges on two threads): a sample
    counts in every window that holds it. ``n`` counts every sample in the window, the mean only those with a
    value. Vectorized: the samples sorted by time, each window's first and past-last sample found by binary
    search, the mean from prefix sums of the non-null values."""
    import numpy as np

    points = samples.select(pl.col("timestamp"), pl.col("value")).drop_nulls("timestamp").sort("timestamp")
    ts = points["timestamp"].to_numpy()
    known = points["value"].is_not_null().to_numpy()
    values = points["value"].fill_null(0.0).cast(pl.Float64).to_numpy()
    total = np.concatenate([[0.0], np.cumsum(values)])
    count = np.concatenate([[0], np.cumsum(known.astype(np.int64))])
    lo = np.searchsorted(ts, windows["window_start_ns"].to_numpy(), side="left")
    hi = np.searchsorted(ts, windows["window_end_ns"].to_numpy(), side="right")
    valued = count[hi] - count[lo]  # samples with a value: the mean's
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (total[hi] - total[lo]) / valued
    return pl.DataFrame(
        {
            "index": windows["index"],
            column: pl.Series(column, mean, dtype=pl.Float64).set(pl.Series(valued == 0), None),
            "n": pl.Series("n", hi - lo, dtype=pl.Int64),  # every sample in the window, with a value or not
        }
    )


def _fmt(devices: list[int]) -> str:
    return ", ".join(str(d) for d in devices) if devices else "(unknown)"
