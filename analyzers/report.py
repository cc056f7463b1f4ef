"""Sweep-level report data: one row per configuration, per-sweep plateau/transition/headroom, the timeline
of one configuration, and recommendations computed from the data (never invented).

A *configuration* is one (runtime, sequence length, batch size) trace; a *sweep* is the set of
configurations of one runtime and one sequence length, ordered by batch size.

Units: ``*_ms`` milliseconds, ``*_us`` microseconds, fractions in 0..1, throughput in samples per second.

- latency_ms: the latency the sweep analysis uses: the untraced mean latency when the run recorded one
  (``latency_source`` "untraced"), else the traced mean (``latency_source`` "traced").
- traced_latency_ms / gpu_busy_ms / framework_overhead_ms / gpu_utilization / kernels / launches: means over
  the traced iterations (``tracekit.analyzers.iterations``). The busy/overhead breakdown is always the traced one.
- framework_overhead_fraction: framework_overhead_ms / traced_latency_ms.
- dispatch_ms / launch_ms / sync_ms / other_api_ms / in_flight_ms: the framework overhead (idle time) by cause,
  means over the traced iterations (:mod:`tracekit.analyzers.attribution`); they sum to framework_overhead_ms.
- graph_projected_ms: mean projected latency if launch and dispatch between kernels disappeared (the
  iterations replayed as CUDA graphs, :func:`tracekit.analyzers.attribution.project_cuda_graphs`); null on
  CPU-only traces, traces that already replay graphs and traces without device work.
- launch_api_ms: summed CPU time of the launch calls per iteration (mean).
- profiler_ratio: traced_latency_ms / untraced_latency_ms (profiler perturbation), null without untraced.
- plateau: the batch sizes from the smallest upward whose latency stays within ``plateau_tolerance`` of the
  smallest batch size's; transition_batch_size: the first batch size past it (null when none).
- headroom_batch_size: the largest plateau batch size ("free headroom"); headroom_latency_ratio its latency
  over the smallest batch's; headroom_throughput_gain its throughput (batch / latency) over the smallest
  batch's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from tracekit.analyzers.recommendations import Recommendation, recommend
from tracekit.analyzers.sweep import (
    FRAMEWORK_BOUND_UTILIZATION,
    PLATEAU_TOLERANCE,
    is_framework_bound,
    plateau_and_transition,
)
from tracekit.model import LAUNCH_API_NAMES

#: The idle-time causes, as report columns (:data:`tracekit.analyzers.attribution.CAUSE_MS`).
CAUSE_COLUMNS: tuple[str, ...] = ("dispatch_ms", "launch_ms", "sync_ms", "other_api_ms", "in_flight_ms")

if TYPE_CHECKING:
    from tracekit.session import AnalyzedTrace

#: Column order of the per-configuration table (report.csv, JSON "configs").
CONFIG_COLUMNS: list[str] = [
    "runtime",
    "model",
    "seq_len",
    "batch_size",
    "device",
    "profiler",
    "synthetic",
    "iterations",
    "skipped_iterations",
    "synchronized",
    "latency_ms",
    "latency_source",
    "untraced_latency_ms",
    "traced_latency_ms",
    "profiler_ratio",
    "gpu_busy_ms",
    "framework_overhead_ms",
    "framework_overhead_fraction",
    "dispatch_ms",
    "launch_ms",
    "sync_ms",
    "other_api_ms",
    "in_flight_ms",
    "graph_projected_ms",
    "gpu_utilization",
    "bound",
    "kernels",
    "launches",
    "launch_api_ms",
    "launch_latency_us",
    "idle_gaps",
    "latency_vs_smallest",
    "throughput_per_s",
    "on_plateau",
    "transition_batch_size",
    "path",
]


def config_row(analyzed: AnalyzedTrace) -> dict[str, Any]:
    """One configuration's report row from its analyzed trace (see module docstring)."""
    config, summary = analyzed.config, analyzed.summary
    traced = summary.mean("latency_ms")
    untraced = config.untraced_latency_ms
    overhead = summary.mean("framework_overhead_ms")
    launch_api_us = summary.mean("launch_api_us")
    projection = None
    if analyzed.analysis.attribution is not None:
        projection = analyzed.analysis.attribution_json()["cuda_graph_projection"]
    return {
        "runtime": config.runtime or "unknown",
        "model": config.model,
        "seq_len": config.seq_len,
        "batch_size": config.batch_size,
        "device": analyzed.device,
        "profiler": config.profiler,
        "synthetic": config.synthetic,
        "iterations": summary.iterations,
        "skipped_iterations": analyzed.analysis.skipped,
        "synchronized": summary.synchronized,
        "latency_ms": untraced if untraced is not None else traced,
        "latency_source": "untraced" if untraced is not None else "traced",
        "untraced_latency_ms": untraced,
        "traced_latency_ms": traced,
        "profiler_ratio": traced / untraced if traced is not None and untraced else None,
        "gpu_busy_ms": summary.mean("gpu_busy_ms"),
        "framework_overhead_ms": overhead,
        "framework_overhead_fraction": overhead / traced if overhead is not None and traced else None,
        **{name: summary.mean(name) for name in CAUSE_COLUMNS},
        "graph_projected_ms": projection["projected_ms"] if projection and projection["applies"] else None,
        "gpu_utilization": summary.mean("gpu_utilization"),
        "bound": summary.bound,
        "kernels": summary.mean("kernels"),
        "launches": summary.mean("launches"),
        "launch_api_ms": None if launch_api_us is None else launch_api_us / 1e3,
        "launch_latency_us": summary.mean("launch_latency_us"),
        "idle_gaps": summary.mean("idle_gaps"),
        "path": str(config.path),
        "warnings": list(analyzed.warnings),
    }


@dataclass
class SweepReport:
    """Everything the report renders: configuration rows, sweeps, recommendations, warnings."""

    configs: list[dict[str, Any]]
    sweeps: list[dict[str, Any]]
    recommendations: list[Recommendation]
    settings: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    @property
    def transition_by_runtime(self) -> dict[str, dict[str, int | None]]:
        """``{runtime: {str(seq_len): transition batch size or None}}`` (JSON-ready keys)."""
        out: dict[str, dict[str, int | None]] = {}
        for sweep in self.sweeps:
            out.setdefault(sweep["runtime"], {})[str(sweep["seq_len"])] = sweep["transition_batch_size"]
        return out

    @property
    def synthetic(self) -> bool:
        return any(row["synthetic"] for row in self.configs)

    def to_json(self, describe: Callable[[Recommendation], str]) -> dict[str, Any]:
        """The ``report.json`` document; ``describe`` words each recommendation."""
        return {
            "synthetic": self.synthetic,
            "settings": self.settings,
            "transition_batch_size": self.transition_by_runtime,
            "sweeps": self.sweeps,
            "configs": [{k: row.get(k) for k in CONFIG_COLUMNS + ["warnings"]} for row in self.configs],
            "recommendations": [rec.to_json(describe(rec)) for rec in self.recommendations],
            "warnings": self.warnings,
        }


def build_report(
    rows: list[dict[str, Any]],
    plateau_tolerance: float = PLATEAU_TOLERANCE,
    bound_threshold: float = FRAMEWORK_BOUND_UTILIZATION,
    settings: dict[str, Any] | None = None,
) -> SweepReport:
    """Group configuration rows into sweeps (runtime, seq_len), find plateaus, transitions and headroom,
    and derive the recommendations. Rows without a batch size stay in the table but not in any sweep.

    Mutates each row: adds ``latency_vs_smallest``, ``throughput_per_s``, ``on_plateau`` and
    ``transition_batch_size`` (the sweep's).
    """
    warnings: list[str] = []
    seen: set[tuple[Any, Any, Any]] = set()
    kept: list[dict[str, Any]] = []
    for row in rows:
        key = (row["runtime"], row["seq_len"], row["batch_size"])
        if row["batch_size"] is not None and key in seen:
            warnings.append(
                f"{row['path']}: duplicate configuration (runtime {row['runtime']}, seq {row['seq_len']}, "
                f"batch {row['batch_size']}); kept the first one"
            )
            continue
        seen.add(key)
        kept.append(row)
    for row in kept:
        row.setdefault("latency_vs_smallest", None)
        row.setdefault("on_plateau", None)
        row.setdefault("transition_batch_size", None)
        lat, batch = row["latency_ms"], row["batch_size"]
        row["throughput_per_s"] = batch / lat * 1e3 if lat and batch is not None else None
        if batch is None:
            warnings.append(
                f"{row['path']}: batch size unknown (no run.json or .meta.json); left out of sweeps"
            )

    runtime_order: list[str] = []
    for row in kept:
        if row["runtime"] not in runtime_order:
            runtime_order.append(row["runtime"])
    groups: dict[tuple[str, Any], list[dict[str, Any]]] = {}
    for row in kept:
        if row["batch_size"] is not None and row["latency_ms"] is not None:
            groups.setdefault((row["runtime"], row["seq_len"]), []).append(row)

    sweeps: list[dict[str, Any]] = []
    for (runtime, seq), members in sorted(
        groups.items(),
        key=lambda kv: (runtime_order.index(kv[0][0]), kv[0][1] if kv[0][1] is not None else -1),
    ):
        members.sort(key=lambda r: r["batch_size"])
        sweeps.append(_sweep(runtime, seq, members, plateau_tolerance, bound_threshold))

    recommendations = recommend(kept, sweeps, plateau_tolerance, bound_threshold)
    for row in kept:
        warnings.extend(f"{row['path']}: {w}" for w in row.get("warnings", []))
    base_settings = {"plateau_tolerance": plateau_tolerance, "bound_threshold": bound_threshold}
    base_settings.update(settings or {})
    return SweepReport(kept, sweeps, recommendations, base_settings, warnings)


def _sweep(
    runtime: str, seq: Any, members: list[dict[str, Any]], tolerance: float, bound_threshold: float
) -> dict[str, Any]:
    latency = {r["batch_size"]: r["latency_ms"] for r in members}
    plateau, transition = plateau_and_transition(latency, tolerance)
    base = members[0]
    by_batch = {r["batch_size"]: r for r in members}
    for row in members:
        row["latency_vs_smallest"] = row["latency_ms"] / base["latency_ms"] if base["latency_ms"] else None
        row["on_plateau"] = row["batch_size"] in plateau
        row["transition_batch_size"] = transition
    headroom = by_batch[plateau[-1]] if plateau else base
    gain = None
    if headroom["throughput_per_s"] and base["throughput_per_s"]:
        gain = headroom["throughput_per_s"] / base["throughput_per_s"]
    framework_bound = [
        r["batch_size"] for r in members if is_framework_bound(r["gpu_utilization"], bound_threshold)
    ]
    sources = sorted({r["latency_source"] for r in members})
    return {
        "runtime": runtime,
        "seq_len": seq,
        "model": base["model"],
        "device": base["device"],
        "latency_source": sources[0] if len(sources) == 1 else "mixed",
        "batch_sizes": [r["batch_size"] for r in members],
        "latency_ms": [r["latency_ms"] for r in members],
        "smallest_batch_size": base["batch_size"],
        "smallest_latency_ms": base["latency_ms"],
        "plateau": plateau,
        "transition_batch_size": transition,
        "transition_latency_ratio": (
            by_batch[transition]["latency_vs_smallest"] if transition is not None else None
        ),
        "headroom_batch_size": headroom["batch_size"],
        "headroom_latency_ratio": headroom["latency_vs_smallest"],
        "headroom_throughput_gain": gain,
        "framework_bound_batch_sizes": framework_bound,
        # the traced latency of each batch size = busy + each idle cause (means, ms; the breakdown figure)
        "gpu_busy_ms": [r["gpu_busy_ms"] for r in members],
        "idle_by_cause_ms": {name[: -len("_ms")]: [r.get(name) for r in members] for name in CAUSE_COLUMNS},
    }


# --------------------------------------------------------------------------------------------- timeline


@dataclass
class Timeline:
    """The events of a few iterations of one configuration, times in ms from the first shown window start.

    ``bars``: lane, category, start_ms, duration_ms (one row per range, API call or op); ``gaps``: start_ms,
    duration_ms of the idle gaps; ``iterations``: index, start_ms, end_ms (effective windows), latency_ms,
    gpu_busy_ms. ``lanes`` lists the lanes top to bottom.
    """

    title: str
    device: str
    lanes: list[str]
    bars: pl.DataFrame
    gaps: pl.DataFrame
    iterations: pl.DataFrame
    truncated: bool = False


#: Most ops drawn in a timeline; fewer iterations are shown when one iteration exceeds it.
TIMELINE_MAX_OPS = 30_000
#: Most GPU-stream lanes; the rest are drawn in an "other streams" lane.
TIMELINE_MAX_STREAMS = 4


def build_timeline(analyzed: AnalyzedTrace, count: int = 3, title: str = "") -> Timeline:
    """Rows for the per-iteration timeline figure: CPU ranges (by depth), launch and other API calls, device
    ops by stream, idle gaps. Shows the first ``count`` analyzed iterations (fewer when they hold more than
    ``TIMELINE_MAX_OPS`` ops)."""
    trace, analysis = analyzed.trace, analyzed.analysis
    iters = analysis.iterations.sort("index")
    ranges = analysis.ranges
    ops = analyzed.ops
    per_iter = ops.group_by("iteration").len()
    shown = iters.head(count)
    truncated = False
    while shown.height > 1:
        n_ops = per_iter.filter(pl.col("iteration").is_in(shown["index"].implode()))["len"].sum()
        if n_ops <= TIMELINE_MAX_OPS:
            break
        shown = shown.head(shown.height - 1)
        truncated = True
    idx = shown["index"].implode()
    t0 = int(shown["window_start_ns"].min())
    t1 = int(shown["window_end_ns"].max())
    ms = 1e6

    def rel(frame: pl.DataFrame, lane: pl.Expr, category: pl.Expr) -> pl.DataFrame:
        return frame.select(
            lane.alias("lane"),
            category.alias("category"),
            ((pl.col("start") - t0) / ms).alias("start_ms"),
            ((pl.col("end") - pl.col("start")) / ms).alias("duration_ms"),
        )

    window = (pl.col("end") > t0) & (pl.col("start") < t1)
    threads = ranges.filter(pl.col("iteration").is_in(idx))["thread"].unique()
    cpu_ranges = trace.ranges.filter(window & (pl.col("domain").is_null() | (pl.col("domain") != "gpu")))
    if threads.null_count() == 0 and threads.len():
        cpu_ranges = cpu_ranges.filter(pl.col("thread").is_in(threads.implode()))
    min_depth = cpu_ranges["depth"].min() if cpu_ranges.height else 0
    cpu_ranges = cpu_ranges.with_columns((pl.col("depth") - (min_depth or 0)).alias("d")).filter(
        pl.col("d") < 3
    )
    range_bars = rel(
        cpu_ranges,
        pl.format("CPU range depth {}", pl.col("d")),
        pl.when(pl.col("d") == 0).then(pl.lit("range")).otherwise(pl.lit("nested range")),
    )

    api = trace.api.filter(window)
    api_bars = rel(
        api,
        pl.lit("CPU API calls"),
        pl.when(pl.col("name").is_in(LAUNCH_API_NAMES))
        .then(pl.lit("launch call"))
        .when(pl.col("name").str.contains("(?i)synchron"))
        .then(pl.lit("sync call"))
        .otherwise(pl.lit("other API call")),
    )

    shown_ops = ops.filter(pl.col("iteration").is_in(idx))
    work = "GPU" if analysis.device == "gpu" else "CPU operators"
    lane_unit = "stream" if analysis.device == "gpu" else "thread"  # CPU traces: stream holds the thread id
    streams = (
        shown_ops.group_by("stream")
        .len()
        .sort(["len", "stream"], descending=[True, False])["stream"]
        .to_list()
    )
    top = [s for s in streams if s is not None][:TIMELINE_MAX_STREAMS]
    stream_lane = (
        pl.when(pl.col("stream").is_null())
        .then(pl.lit(work))
        .when(pl.col("stream").is_in(top))
        .then(pl.format(f"{work} {lane_unit} {{}}", pl.col("stream")))
        .otherwise(pl.lit(f"{work} other {lane_unit}s"))
    )
    op_bars = rel(shown_ops, stream_lane, pl.col("kind"))

    gaps = analysis.gaps.filter(pl.col("iteration").is_in(idx)).select(
        ((pl.col("start_ns") - t0) / ms).alias("start_ms"), (pl.col("duration_ns") / ms).alias("duration_ms")
    )
    iterations = shown.select(
        "index",
        ((pl.col("window_start_ns") - t0) / ms).alias("start_ms"),
        ((pl.col("window_end_ns") - t0) / ms).alias("end_ms"),
        "latency_ms",
        "gpu_busy_ms",
    )
    bars = pl.concat([range_bars, api_bars, op_bars], how="vertical_relaxed")
    range_lanes = sorted(range_bars["lane"].unique().to_list())
    op_lanes = ([work] if None in streams else []) + [f"{work} {lane_unit} {s}" for s in top]
    if len([s for s in streams if s is not None]) > len(top):
        op_lanes.append(f"{work} other {lane_unit}s")
    lanes = range_lanes + (["CPU API calls"] if api_bars.height else []) + op_lanes
    return Timeline(title, analysis.device, lanes, bars, gaps, iterations, truncated)
