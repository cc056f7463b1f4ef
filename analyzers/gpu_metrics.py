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
with a warning, never zero; a GPU whose kernels all ran outside the iterations (a setup kernel before the loop)
is not one that ran them (:func:`kernel_devices`). A metric in a unit other than % is chosen only when no
pattern matches one in %, and then gives no summary value (a warp count is no percentage). When the trace
states its sampling period (``meta["gpu_metrics_period_ns"]``, the nsys reader), an iteration that the
samples do not resolve gets no value (:func:`_resolved`).
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
    """The sampled metric standing for ``column``: a metric in percent of the first pattern that has one (the
    result is a percentage), else the first pattern's match in another unit (kept in ``iterations``, but no
    summary value: :func:`analyze_gpu_metrics`); among equals, by name."""
    names = gpu_metrics.group_by("metric", "unit").agg(pl.col("device").unique().sort().alias("devices"))
    found: list[list[dict[str, Any]]] = []
    for pattern in METRIC_PATTERNS[column]:
        regex = re.compile(pattern, re.IGNORECASE)
        matches = [row for row in names.iter_rows(named=True) if regex.search(row["metric"] or "")]
        found.append(sorted(matches, key=lambda r: (r["unit"] != "%", r["metric"])))
    percent = [m[0] for m in found if m and m[0]["unit"] == "%"]
    other = [m[0] for m in found if m]
    if not other:
        return None
    best = (percent or other)[0]
    return MetricChoice(column, best["metric"], best["unit"], [d for d in best["devices"] if d is not None])


def kernel_devices(trace: Trace, windows: pl.DataFrame | None = None) -> list[int]:
    """GPUs that ran the trace's kernels (any device op when there are no kernels); with ``windows``
    (window_start_ns, window_end_ns: the iterations), those whose kernels ran inside one, when any did: a GPU
    the process touched only outside the iterations (a setup kernel before the loop) sampled idle through
    them, and its samples had been averaged in (60% SMs active read 30%)."""
    ops = trace.ops.filter(pl.col("kind") == "kernel")
    if ops.is_empty():
        ops = trace.ops
    if windows is not None:
        windows = windows.drop_nulls(["window_start_ns", "window_end_ns"]).sort("window_start_ns")
    if windows is not None and not ops.is_empty() and windows.height:
        import numpy as np

        starts = windows["window_start_ns"].to_numpy()
        ends = windows["window_end_ns"].to_numpy()
        reach = np.maximum.accumulate(ends)  # the furthest end among windows starting at or before each
        k_start, k_end = ops["start"].to_numpy(), ops["end"].to_numpy()
        last = (
            np.searchsorted(starts, k_end, side="left") - 1
        )  # the last window starting before the kernel ends
        inside = (last >= 0) & (reach[np.clip(last, 0, None)] > k_start)
        if inside.any():
            ops = ops.filter(pl.Series(inside))
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
    devices = kernel_devices(trace, frame)
    period = _stated_period(trace)
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
            # no device: a GPU that the export says no traced process used (nsys reader, CUDA_VISIBLE_DEVICES)
            # or a sample whose GPU the reader could not tie to a CUDA device (several GPUs sampled, no GPU table)
            if choice.devices:
                sampled, why = f"GPU {_fmt(choice.devices)}", "the sampled GPU was not the one used"
            else:
                sampled = "a GPU the export ties to no traced process's CUDA device"
                why = "the sampled GPU is not known to be the one used"
            warnings.append(
                f"GPU-metrics samples ({choice.metric!r}) come from {sampled} but the kernels ran "
                f"on GPU {_fmt(devices)}: {LABELS[column]} is not reported ({why})"
            )
            out = out.with_columns(pl.lit(None, pl.Float64).alias(column))
            continue
        if len(use) > 1:
            warnings.append(f"{LABELS[column]}: samples of GPUs {_fmt(use)} averaged together")
        picked = samples.filter((pl.col("metric") == choice.metric) & pl.col("device").is_in(use))
        if choice.unit == "%":
            # A share of the GPU outside 0-100 is no measurement (a corrupt or misread sample): no value, said.
            out_of_range = (pl.col("value") < 0) | (pl.col("value") > 100)
            bad = int(picked.select(out_of_range.sum()).item() or 0)
            if bad:
                warnings.append(
                    f"{bad} of {picked.height} {choice.metric!r} samples lie outside 0-100%: read as samples "
                    "without a value"
                )
                picked = picked.with_columns(
                    pl.when(out_of_range).then(None).otherwise(pl.col("value")).alias("value")
                )
        per_iter = _window_means(picked, frame, column)
        if sample_counts is None:
            sample_counts = per_iter.select("index", pl.col("n").alias("samples"))
        if period is None:
            empty = int(per_iter.filter(pl.col("n") == 0).height)
            if empty:
                warnings.append(
                    f"{empty} of {frame.height} iterations have no {choice.metric!r} sample inside their "
                    "window (sampling period longer than the iteration?): no value for them"
                )
        else:
            per_iter = _resolved(per_iter, frame, column, period, choice.metric, warnings)
        out = out.join(per_iter.select("index", column), on="index", how="left")
        stats = summarize_columns(out, [column])[column].to_dict()
        valid = int(out[column].is_not_null().sum())
        if valid and choice.unit != "%":
            # The column is a percentage: a count or an average of warps shown there would read as one.
            warnings.append(
                f"{LABELS[column]}: the matching metric {choice.metric!r} is in {choice.unit!r}, not %: "
                "not reported as a percentage"
            )
            stats = dict.fromkeys(stats)
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


#: An iteration gets a value only when its window spans at least this many sampling periods (see
#: :func:`_resolved`).
MIN_PERIODS = 2


def _stated_period(trace: Trace) -> int | None:
    """The sampling period the reader found (``meta["gpu_metrics_period_ns"]``), or None."""
    period = trace.meta.get("gpu_metrics_period_ns")
    return int(period) if isinstance(period, (int, float)) and period > 0 else None


def _resolved(
    per_iter: pl.DataFrame,
    windows: pl.DataFrame,
    column: str,
    period: int,
    metric: str,
    warnings: list[str],
) -> pl.DataFrame:
    """``per_iter`` with no value where the samples do not resolve the iteration, and a warning per reason.

    A sample's value is the mean over the sampling period that its timestamp opens (nsys 2025.3 on an H200:
    GR Active follows the GPU's busy time in [t, t + period), correlation 0.99, against 0.78 for the period
    before t), so the samples whose timestamp lies in a window measured [first, last + period). An iteration
    shorter than ``MIN_PERIODS`` periods holds one or two samples whose values may be mostly time outside it
    (idle time before or after the loop; a CUDA-graph iteration of 0.77 ms sampled at 100 Hz read 22-30% SMs
    active instead of 40%); one whose samples span less than half of it (n × period < window / 2) was not
    sampled throughout (sampling started, stopped or dropped samples inside it). Either: no value, never a
    guess."""
    length = (pl.col("window_end_ns") - pl.col("window_start_ns")).alias("length")
    f = per_iter.join(windows.select("index", length), on="index", how="left")
    short = pl.col("length") < MIN_PERIODS * period
    sparse = ~short & (pl.col("n") * period * 2 < pl.col("length"))
    f = f.with_columns(short.alias("short"), sparse.alias("sparse"))
    n_short, n_sparse = int(f["short"].sum()), int(f["sparse"].sum())
    total = windows.height
    if n_short:
        shortest = f.filter("short")["length"]
        need = MIN_PERIODS * 1e9 / max(int(shortest.min()), 1)
        warnings.append(
            f"{n_short} of {total} iterations are shorter than {MIN_PERIODS} sampling periods of {metric!r} "
            f"({period / 1e6:.3g} ms, {1e9 / period:.0f} Hz; these iterations: median "
            f"{shortest.median() / 1e6:.3g} ms): each holds one or two samples, whose values may be mostly "
            f"time outside it: no value for them (sampling at {need:.0f} Hz or more resolves them: nsys "
            "--gpu-metrics-frequency)"
        )
    if n_sparse:
        none = int(f.filter(pl.col("sparse") & (pl.col("n") == 0)).height)
        warnings.append(
            f"{n_sparse} of {total} iterations hold {metric!r} samples for less than half of their window "
            f"(one every {period / 1e6:.3g} ms; {none} of them none at all): the sampling started, stopped or "
            "dropped samples inside them: no value for them"
        )
    return f.with_columns(
        pl.when(pl.col("short") | pl.col("sparse")).then(None).otherwise(pl.col(column)).alias(column)
    ).drop("length", "short", "sparse")


def _fmt(devices: list[int]) -> str:
    return ", ".join(str(d) for d in devices) if devices else "(unknown)"
