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
- launch_api_ms: summed CPU time of the launch calls per iteration (mean).
- profiler_ratio: traced_latency_ms / untraced_latency_ms (profiler perturbation), null without untraced.
- plateau: the batch sizes from the smallest upward whose latency stays within ``plateau_tolerance`` of the
  smallest batch size's; transition_batch_size: the first batch size past it (null when none).
- headroom_batch_size: the largest plateau batch size ("free headroom"); headroom_latency_ratio its latency
  over the smallest batch's; headroom_throughput_gain its throughput (batch / latency) over the smallest
  batch's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from tracekit.analyzers.iterations import IterationAnalysis, assign_ops, choose_ranges
from tracekit.analyzers.sweep import FRAMEWORK_BOUND_UTILIZATION, PLATEAU_TOLERANCE, plateau_and_transition
from tracekit.model import LAUNCH_API_NAMES, Trace
from tracekit.runs import TraceInput

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

#: Traced launch-call time below this fraction of latency gives no CUDA-graph recommendation.
LAUNCH_SHARE_MIN = 0.10
#: Traced/untraced latency ratio above which the report warns about profiler perturbation.
PERTURBATION_RATIO = 1.25
#: A runtime must be at least this much faster (ratio) to be named as the alternative.
FASTER_RATIO_MIN = 1.10


def _mean(summary: dict[str, Any], key: str) -> float | None:
    value = summary.get(key)
    if isinstance(value, dict):
        mean = value.get("mean")
        return None if mean is None else float(mean)
    return None


def config_row(item: TraceInput, trace: Trace, analysis: IterationAnalysis) -> dict[str, Any]:
    """One configuration's report row from its input, trace and iteration analysis (see module docstring)."""
    meta = trace.meta
    summary = analysis.summary
    traced = _mean(summary, "latency_ms")
    untraced = None
    if isinstance(item.untraced_latency_ms, dict) and item.untraced_latency_ms.get("mean") is not None:
        untraced = float(item.untraced_latency_ms["mean"])
    busy = _mean(summary, "gpu_busy_ms")
    overhead = _mean(summary, "framework_overhead_ms")
    launch_api_us = _mean(summary, "launch_api_us")
    batch = item.batch_size if item.batch_size is not None else meta.get("batch_size")
    seq = item.seq_len if item.seq_len is not None else meta.get("seq_len")
    return {
        "runtime": item.runtime or meta.get("runtime") or "unknown",
        "model": item.model or meta.get("model"),
        "seq_len": None if seq is None else int(seq),
        "batch_size": None if batch is None else int(batch),
        "device": analysis.device,
        "profiler": item.profiler or meta.get("profiler") or meta.get("format"),
        "synthetic": bool(item.synthetic or meta.get("synthetic", False)),
        "iterations": int(summary.get("iterations", analysis.iterations.height)),
        "synchronized": summary.get("synchronized"),
        "latency_ms": untraced if untraced is not None else traced,
        "latency_source": "untraced" if untraced is not None else "traced",
        "untraced_latency_ms": untraced,
        "traced_latency_ms": traced,
        "profiler_ratio": traced / untraced if traced is not None and untraced else None,
        "gpu_busy_ms": busy,
        "framework_overhead_ms": overhead,
        "framework_overhead_fraction": overhead / traced if overhead is not None and traced else None,
        "gpu_utilization": _mean(summary, "gpu_utilization"),
        "bound": summary.get("bound"),
        "kernels": _mean(summary, "kernels"),
        "launches": _mean(summary, "launches"),
        "launch_api_ms": None if launch_api_us is None else launch_api_us / 1e3,
        "launch_latency_us": _mean(summary, "launch_latency_us"),
        "idle_gaps": _mean(summary, "idle_gaps"),
        "path": str(item.path),
        "warnings": list(analysis.warnings),
    }


@dataclass
class SweepReport:
    """Everything the report renders: configuration rows, sweeps, recommendations, warnings."""

    configs: list[dict[str, Any]]
    sweeps: list[dict[str, Any]]
    recommendations: list[dict[str, Any]]
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

    def to_json(self) -> dict[str, Any]:
        """The ``report.json`` document."""
        return {
            "synthetic": self.synthetic,
            "settings": self.settings,
            "transition_batch_size": self.transition_by_runtime,
            "sweeps": self.sweeps,
            "configs": [{k: row.get(k) for k in CONFIG_COLUMNS + ["warnings"]} for row in self.configs],
            "recommendations": self.recommendations,
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
        r["batch_size"]
        for r in members
        if r["gpu_utilization"] is not None and r["gpu_utilization"] < bound_threshold
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
    }


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _ms(x: float) -> str:
    return f"{x:.3g} ms" if x < 100 else f"{x:.0f} ms"


def recommend(
    rows: list[dict[str, Any]],
    sweeps: list[dict[str, Any]],
    tolerance: float = PLATEAU_TOLERANCE,
    bound_threshold: float = FRAMEWORK_BOUND_UTILIZATION,
) -> list[dict[str, Any]]:
    """Recommendations supported by the data, each ``{"kind", "runtime", "seq_len", "batch_size", "text",
    "numbers"}``. A kind appears only when its condition holds:

    - ``framework_overhead``: at a sweep's smallest batch size the framework overhead is at least
      ``1 - bound_threshold`` of the traced latency; names the fastest other runtime measured at the same
      batch size and sequence length when it is at least ``FASTER_RATIO_MIN`` times faster.
    - ``headroom``: the plateau extends past the smallest batch size: the largest batch size on it costs
      little more latency and multiplies throughput.
    - ``transition``: where latency leaves the plateau (or that it never does in the measured range).
    - ``launch_calls``: on a GPU trace, at the smallest batch size, the launch-call CPU time is at least
      ``LAUNCH_SHARE_MIN`` of latency and there are at least as many launches as half the kernels (i.e. no
      CUDA graph yet): projected latency with the launch calls removed is max(GPU busy, latency − launch
      time), a bound assuming the launch calls were on the critical path.
    - ``compute_bound``: the first batch size whose GPU utilization reaches ``bound_threshold``.
    - ``profiler_perturbation``: tracing inflated latency by more than ``PERTURBATION_RATIO``.
    """
    out: list[dict[str, Any]] = []
    index = {(r["runtime"], r["seq_len"], r["batch_size"]): r for r in rows if r["batch_size"] is not None}
    unit = {"gpu": "GPU", "cpu": "operator"}

    for sweep in sweeps:
        runtime, seq = sweep["runtime"], sweep["seq_len"]
        members = [index[(runtime, seq, b)] for b in sweep["batch_sizes"]]
        base = members[0]
        b0 = base["batch_size"]
        where = f"{runtime}, batch {b0}" + (f", seq {seq}" if seq is not None else "")
        work = unit.get(base["device"], "GPU")  # "GPU" busy / "operator" busy (CPU traces)

        # Framework overhead at the smallest batch size, and the fastest alternative runtime there.
        frac = base["framework_overhead_fraction"]
        if frac is not None and frac >= 1.0 - bound_threshold:
            others = [
                r
                for (rt, s, b), r in index.items()
                if rt != runtime
                and s == seq
                and b == b0
                and r["latency_ms"]
                and r["latency_source"] == base["latency_source"]
            ]
            best = min(others, key=lambda r: r["latency_ms"], default=None)
            numbers: dict[str, Any] = {
                "framework_overhead_fraction": frac,
                "framework_overhead_ms": base["framework_overhead_ms"],
                "gpu_busy_ms": base["gpu_busy_ms"],
                "traced_latency_ms": base["traced_latency_ms"],
            }
            text = (
                f"{where}: {_pct(frac)} of latency is framework overhead "
                f"({_ms(base['framework_overhead_ms'])} of {_ms(base['traced_latency_ms'])}; {work} busy "
                f"{_ms(base['gpu_busy_ms'])})"
            )
            if best is not None and base["latency_ms"] / best["latency_ms"] >= FASTER_RATIO_MIN:
                speedup = base["latency_ms"] / best["latency_ms"]
                text += (
                    f": {best['runtime']} measured {speedup:.1f}x faster here "
                    f"({_ms(best['latency_ms'])} vs {_ms(base['latency_ms'])}, {base['latency_source']})."
                )
                numbers.update(
                    {
                        "alternative_runtime": best["runtime"],
                        "alternative_latency_ms": best["latency_ms"],
                        "latency_ms": base["latency_ms"],
                        "speedup": speedup,
                    }
                )
            else:
                text += (
                    ": the GPU is idle most of the iteration."
                    if work == "GPU"
                    else ": operators run less than half of the iteration."
                )
            out.append(_rec("framework_overhead", runtime, seq, b0, text, numbers))

        # Free headroom.
        hb = sweep["headroom_batch_size"]
        if hb is not None and hb != b0:
            ratio, gain = sweep["headroom_latency_ratio"], sweep["headroom_throughput_gain"]
            text = (
                f"{runtime}{'' if seq is None else f' (seq {seq})'}: batch {hb} costs {ratio:.2f}x batch {b0} "
                f"({_ms(index[(runtime, seq, hb)]['latency_ms'])} vs {_ms(base['latency_ms'])}), "
                f"{gain:.1f}x the throughput for free."
            )
            out.append(
                _rec(
                    "headroom",
                    runtime,
                    seq,
                    hb,
                    text,
                    {"latency_ratio": ratio, "throughput_gain": gain, "smallest_batch_size": b0},
                )
            )

        # Transition.
        tb = sweep["transition_batch_size"]
        last_plateau = sweep["plateau"][-1] if sweep["plateau"] else b0
        if tb is not None:
            row = index[(runtime, seq, tb)]
            util = row["gpu_utilization"]
            name = f"{runtime}{'' if seq is None else f' (seq {seq})'}"
            if last_plateau == b0:
                text = (
                    f"{name}: no framework-bound plateau: batch {tb} already costs "
                    f"{sweep['transition_latency_ratio']:.2f}x batch {b0} (tolerance {_pct(tolerance)})"
                )
            else:
                text = (
                    f"{name}: latency stays within {_pct(tolerance)} of batch {b0} up to batch {last_plateau} "
                    f"and leaves the plateau at batch {tb} ({sweep['transition_latency_ratio']:.2f}x)"
                )
            text += f"; {work} utilization there is {_pct(util)}." if util is not None else "."
            numbers = {"latency_ratio": sweep["transition_latency_ratio"], "gpu_utilization": util}
        elif len(sweep["batch_sizes"]) > 1:
            text = (
                f"{runtime}{'' if seq is None else f' (seq {seq})'}: latency stays within {_pct(tolerance)} "
                f"of batch {b0} over the whole measured range (up to batch {sweep['batch_sizes'][-1]})."
            )
            numbers = {"largest_batch_size": sweep["batch_sizes"][-1]}
        else:
            text = ""  # one batch size: no sweep to speak of
        if text:
            out.append(_rec("transition", runtime, seq, tb, text, numbers))

        # Launch-call time at the smallest batch size (GPU traces only).
        launches, kernels = base["launches"], base["kernels"]
        launch_ms, traced = base["launch_api_ms"], base["traced_latency_ms"]
        if (
            base["device"] == "gpu"
            and launches
            and kernels
            and launch_ms is not None
            and traced
            and launch_ms >= LAUNCH_SHARE_MIN * traced
            and launches >= 0.5 * kernels
        ):
            projected = max(base["gpu_busy_ms"] or 0.0, traced - launch_ms)
            text = (
                f"{where}: the launch-call time alone is {_ms(launch_ms)} per iteration "
                f"({launches:.0f} launches, {_pct(launch_ms / traced)} of the traced {_ms(traced)}); a CUDA "
                f"graph would remove it (projected latency {_ms(projected)} at best)."
            )
            out.append(
                _rec(
                    "launch_calls",
                    runtime,
                    seq,
                    b0,
                    text,
                    {
                        "launch_api_ms": launch_ms,
                        "launches": launches,
                        "traced_latency_ms": traced,
                        "projected_latency_ms": projected,
                    },
                )
            )

        # First compute-bound batch size.
        bound_rows = [r for r in members if r["gpu_utilization"] is not None]
        first = next((r for r in bound_rows if r["gpu_utilization"] >= bound_threshold), None)
        if first is not None and bound_rows and bound_rows[0]["gpu_utilization"] < bound_threshold:
            text = (
                f"{runtime}{'' if seq is None else f' (seq {seq})'}: from batch {first['batch_size']} the "
                f"{'GPU is' if work == 'GPU' else 'operators are'} busy {_pct(first['gpu_utilization'])} of the iteration (compute-bound at the "
                f"{_pct(bound_threshold)} threshold): from there device work, not framework overhead, is the "
                f"larger share of latency."
            )
            out.append(
                _rec(
                    "compute_bound",
                    runtime,
                    seq,
                    first["batch_size"],
                    text,
                    {"gpu_utilization": first["gpu_utilization"]},
                )
            )

        # Profiler perturbation.
        perturbed = [
            r for r in members if r["profiler_ratio"] is not None and r["profiler_ratio"] > PERTURBATION_RATIO
        ]
        if perturbed:
            worst = max(perturbed, key=lambda r: r["profiler_ratio"])
            text = (
                f"{runtime}{'' if seq is None else f' (seq {seq})'}: tracing inflated latency up to "
                f"{worst['profiler_ratio']:.2f}x (batch {worst['batch_size']}: {_ms(worst['traced_latency_ms'])} "
                f"traced vs {_ms(worst['untraced_latency_ms'])} untraced); the busy/overhead breakdown is "
                f"from the traced runs, the sweep uses the untraced latency."
            )
            out.append(
                _rec(
                    "profiler_perturbation",
                    runtime,
                    seq,
                    worst["batch_size"],
                    text,
                    {
                        "profiler_ratio": worst["profiler_ratio"],
                        "batch_sizes": [r["batch_size"] for r in perturbed],
                    },
                )
            )
    order = {k: i for i, k in enumerate(RECOMMENDATION_ORDER)}
    return sorted(out, key=lambda r: order.get(r["kind"], len(order)))


#: Order of the recommendation kinds in the report (most actionable first; stable within a kind).
RECOMMENDATION_ORDER = (
    "framework_overhead",
    "launch_calls",
    "headroom",
    "transition",
    "compute_bound",
    "profiler_perturbation",
)


def _rec(
    kind: str, runtime: str, seq: Any, batch: int | None, text: str, numbers: dict[str, Any]
) -> dict[str, Any]:
    return {
        "kind": kind,
        "runtime": runtime,
        "seq_len": seq,
        "batch_size": batch,
        "text": text,
        "numbers": numbers,
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


def build_timeline(trace: Trace, analysis: IterationAnalysis, count: int = 3, title: str = "") -> Timeline:
    """Rows for the per-iteration timeline figure: CPU ranges (by depth), launch and other API calls, device
    ops by stream, idle gaps. Shows the first ``count`` analyzed iterations (fewer when they hold more than
    ``TIMELINE_MAX_OPS`` ops)."""
    iters = analysis.iterations.sort("index")
    ranges, _, _ = choose_ranges(trace, analysis.range_name)
    ops = assign_ops(trace, ranges)
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
