"""Per-iteration framework-tax metrics (DESIGN.md, "Metric definitions").

An iteration is one range (NVTX range, torch.profiler annotation, ORT ``model_run``) of the chosen name.
Its GPU work is the set of device ops whose launching API call starts inside the range (joined by
``(pid, correlation)``; every kernel of a CUDA graph carries its ``cudaGraphLaunch``'s correlation id), or,
for ops with no matching call, the ops that start inside the range.

Units: ``*_ns`` integer nanoseconds, ``*_ms`` milliseconds, ``*_us`` microseconds, utilization a fraction.

- latency: length of the effective window ``[max(range start_i, GPU end_(i-1)), max(range end_i, GPU end_i)]``.
  When the range closes after its GPU work (a sync inside the range) this is the range itself; when GPU work
  outlives the range (``synchronized`` false) it is the steady-state period.
- cpu_ms: the range's own length (host time between range open and close).
- gpu_busy: length of the union of the iteration's op intervals (all streams, all kinds) clipped to the window.
- idle gaps: maximal sub-intervals of the window with no op of the iteration running (> 0 ns), including the
  leading (window start -> first op) and trailing (last op end -> window end) gaps; idle = latency - busy.
- framework_overhead = latency - busy; gpu_utilization = busy / latency.
- kernels: ops of kind "kernel" (or "operator" on CPU-only traces) in the iteration.
- launches: launch API calls (``LAUNCH_API_NAMES``) starting inside the range; launch_api_us their summed
  CPU duration. launch_latency_us: median over the iteration's launches of (first op start - call start);
  queue_us: median of (first op start - call end). For a graph launch "first op" is the graph's first kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from analyzers.stats import summarize_columns
from analyzers.sweep import FRAMEWORK_BOUND_UTILIZATION
from tracekit.errors import NoActivityError
from tracekit.model import LAUNCH_API_NAMES, Trace

DEFAULT_RANGE = "iteration"
PROFILER_STEP_KEY = "ProfilerStep#*"
#: Op kinds counted as "kernels" (device work items) per iteration.
KERNEL_KINDS = ("kernel", "operator")
#: How many of the longest idle gaps get a CPU-context lookup.
LONGEST_GAPS = 10

#: Per-iteration numeric fields summarized in ``summary`` (and the JSON).
NUMERIC_FIELDS = [
    "latency_ms",
    "cpu_ms",
    "gpu_busy_ms",
    "framework_overhead_ms",
    "gpu_utilization",
    "kernels",
    "launches",
    "launch_api_us",
    "launch_latency_us",
    "queue_us",
    "idle_gaps",
    "idle_ms",
]


@dataclass
class IterationAnalysis:
    """The result of :func:`analyze_iterations`."""

    range_name: str
    range_choice: str
    device: str
    iterations: pl.DataFrame
    gaps: pl.DataFrame
    summary: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    skipped: int = 0

    def to_json(self, trace: Trace) -> dict[str, Any]:
        """The ``tracekit analyze --format json`` document."""
        meta = trace.meta
        iterations = self.iterations.select(
            ["index", "start_ns", "end_ns"] + NUMERIC_FIELDS[:-2] + ["idle_gaps", "idle_ms", "synchronized"]
        )
        # NUMERIC_FIELDS ends with idle_gaps, idle_ms: keep the field order.
        return {
            "trace": {
                "path": meta.get("path"),
                "format": meta.get("format"),
                "format_version": meta.get("format_version"),
                "device": self.device,
                "gpu": meta.get("gpu"),
                "synthetic": bool(meta.get("synthetic", False)),
            },
            "range": self.range_name,
            "range_choice": self.range_choice,
            "iterations": iterations.to_dicts(),
            "summary": self.summary,
            "longest_gaps": self.longest_gaps().to_dicts(),
            "warnings": list(self.warnings),
        }

    def longest_gaps(self, count: int = LONGEST_GAPS) -> pl.DataFrame:
        """The ``count`` longest idle gaps, longest first, with durations in µs."""
        return (
            self.gaps.sort("duration_ns", descending=True)
            .head(count)
            .with_columns((pl.col("duration_ns") / 1e3).alias("duration_us"))
        )


def _range_key(names: pl.Expr) -> pl.Expr:
    """The name ranges are grouped by: ``ProfilerStep#123`` -> ``ProfilerStep#*``, and PyTorch ``emit_nvtx``
    names lose their per-call suffixes (``aten::mul, seq = 3, op_id = 314339`` -> ``aten::mul``)."""
    return names.str.replace(r"^ProfilerStep#\d+$", PROFILER_STEP_KEY).str.replace(
        r",\s*(seq|op_id|sizes|input_op_ids)\s*=.*$", ""
    )


def choose_ranges(trace: Trace, range_name: str | None) -> tuple[pl.DataFrame, str, str]:
    """Select the iteration ranges: (frame start/end/thread/depth, chosen name, how it was chosen)."""
    path = trace.meta.get("path")
    candidates = trace.ranges.filter(pl.col("domain").is_null() | (pl.col("domain") != "gpu")).with_columns(
        _range_key(pl.col("name")).alias("key")
    )
    if candidates.is_empty():
        raise NoActivityError(
            "no NVTX ranges or profiler annotations to delimit iterations "
            "(wrap each timed iteration in nvtx.annotate('iteration'))",
            path,
        )
    if range_name is not None:
        chosen = candidates.filter((pl.col("key") == range_name) | (pl.col("name") == range_name))
        if chosen.is_empty():
            names = (
                candidates.group_by("key").len().sort(["len", "key"], descending=[True, False]).head(15)["key"]
            )
            raise NoActivityError(
                f"no range named {range_name!r}; ranges in this trace: " + ", ".join(map(repr, names)), path
            )
        how = "requested with --range"
        name = range_name
    elif (candidates["key"] == DEFAULT_RANGE).any():
        chosen = candidates.filter(pl.col("key") == DEFAULT_RANGE)
        name, how = DEFAULT_RANGE, f"default range name {DEFAULT_RANGE!r}"
    elif (candidates["key"] == PROFILER_STEP_KEY).any():
        chosen = candidates.filter(pl.col("key") == PROFILER_STEP_KEY)
        name, how = PROFILER_STEP_KEY, "torch.profiler steps (no 'iteration' range); choose another with --range"
    else:
        top = candidates.filter(pl.col("depth") == candidates["depth"].min())
        counts = (
            top.group_by("key")
            .agg(pl.len().alias("n"), pl.col("start").min().alias("first"))
            .sort(["n", "first"], descending=[True, False])
        )
        name = counts["key"][0]
        chosen = candidates.filter(pl.col("key") == name)
        how = f"most frequent top-level range ({counts['n'][0]} of them); choose another with --range"
    # Nested ranges of the same name: keep the outermost level only.
    chosen = chosen.filter(pl.col("depth") == chosen["depth"].min()).sort("start", "end")
    frame = chosen.select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("iteration"),
        pl.col("start").alias("range_start"),
        pl.col("end").alias("range_end"),
        pl.col("thread"),
    )
    return frame, name, how


def _assign_to_iterations(points: pl.DataFrame, time_col: str, ranges: pl.DataFrame) -> pl.DataFrame:
    """Attach ``iteration`` to each row whose ``time_col`` lies in [range_start, range_end); others null."""
    joined = points.sort(time_col).join_asof(
        ranges.select("iteration", "range_start", "range_end"),
        left_on=time_col,
        right_on="range_start",
        strategy="backward",
    )
    return joined.with_columns(
        pl.when(pl.col(time_col) < pl.col("range_end")).then(pl.col("iteration")).alias("iteration")
    ).drop("range_start", "range_end")


def _launch_calls(trace: Trace) -> pl.DataFrame:
    """One launching API row per (pid, correlation): the outermost call carrying that correlation id."""
    api = trace.api.filter(pl.col("correlation").is_not_null())
    return (
        api.sort("start", pl.col("end"), descending=[False, True])
        .unique(subset=["pid", "correlation"], keep="first", maintain_order=True)
        .select("pid", "correlation", pl.col("start").alias("call_start"), pl.col("end").alias("call_end"))
    )


def assign_ops(trace: Trace, ranges: pl.DataFrame) -> pl.DataFrame:
    """The trace's ops with an ``iteration`` column (null = outside every iteration) and launch times."""
    ops = trace.ops.with_row_index("op")
    calls = _launch_calls(trace)
    ops = ops.join(calls, on=["pid", "correlation"], how="left")
    by_call = _assign_to_iterations(ops.filter(pl.col("call_start").is_not_null()), "call_start", ranges)
    by_time = _assign_to_iterations(ops.filter(pl.col("call_start").is_null()), "start", ranges)
    return pl.concat([by_call, by_time]).filter(pl.col("iteration").is_not_null()).sort("op")


def _windows(ranges: pl.DataFrame, ops: pl.DataFrame) -> pl.DataFrame:
    """Per iteration: GPU start/end and the effective latency window (see module docstring)."""
    per_iter = ops.group_by("iteration").agg(
        pl.col("start").min().alias("gpu_start"), pl.col("end").max().alias("gpu_end")
    )
    frame = ranges.join(per_iter, on="iteration", how="left").sort("iteration")
    previous_gpu_end = pl.col("gpu_end").cum_max().forward_fill().shift(1)
    window_start = pl.max_horizontal("range_start", previous_gpu_end)
    return frame.with_columns(
        window_start.alias("window_start"),
        # An iteration whose range and GPU work all end inside the previous iteration's GPU work has length 0.
        pl.max_horizontal("range_end", "gpu_end", window_start).alias("window_end"),
        (pl.col("gpu_end").is_null() | (pl.col("gpu_end") <= pl.col("range_end"))).alias("synchronized"),
    )


def _busy_segments(ops: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """Merged busy intervals per iteration (union over streams), clipped to each iteration's window."""
    clipped = (
        ops.select("iteration", "start", "end")
        .join(windows.select("iteration", "window_start", "window_end"), on="iteration")
        .with_columns(
            pl.max_horizontal("start", "window_start").alias("s"),
            pl.min_horizontal("end", "window_end").alias("e"),
        )
        .filter(pl.col("e") > pl.col("s"))
        .sort("iteration", "s", "e")
    )
    previous_reach = pl.col("e").cum_max().shift(1).over("iteration")
    starts_segment = previous_reach.is_null() | (pl.col("s") > previous_reach)
    return (
        clipped.with_columns(starts_segment.cast(pl.Int64).cum_sum().over("iteration").alias("segment"))
        .group_by("iteration", "segment")
        .agg(pl.col("s").min().alias("seg_start"), pl.col("e").max().alias("seg_end"))
        .sort("iteration", "seg_start")
    )


def _gaps(segments: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """Idle gaps per iteration: before each busy segment, and after the last one, inside the window."""
    w = windows.select("iteration", "window_start", "window_end")
    seg = segments.join(w, on="iteration").sort("iteration", "seg_start")
    before = seg.select(
        "iteration",
        pl.coalesce(pl.col("seg_end").shift(1).over("iteration"), pl.col("window_start")).alias("start_ns"),
        pl.col("seg_start").alias("end_ns"),
        pl.when(pl.col("seg_end").shift(1).over("iteration").is_null())
        .then(pl.lit("leading"))
        .otherwise(pl.lit("inner"))
        .alias("position"),
    )
    last = seg.group_by("iteration").agg(pl.col("seg_end").max().alias("start_ns"))
    trailing = (
        w.join(last, on="iteration", how="left")
        .select(
            "iteration",
            pl.coalesce("start_ns", "window_start").alias("start_ns"),
            pl.col("window_end").alias("end_ns"),
            pl.when(pl.col("start_ns").is_null()).then(pl.lit("leading")).otherwise(pl.lit("trailing")).alias(
                "position"
            ),
        )
    )
    return (
        pl.concat([before, trailing])
        .with_columns((pl.col("end_ns") - pl.col("start_ns")).alias("duration_ns"))
        .filter(pl.col("duration_ns") > 0)
        .sort("iteration", "start_ns")
    )


def _launch_stats(trace: Trace, ranges: pl.DataFrame, ops: pl.DataFrame) -> pl.DataFrame:
    """Per iteration: launches, summed launch-call time, median launch latency and queue time."""
    launches = trace.api.filter(pl.col("name").is_in(LAUNCH_API_NAMES))
    launches = _assign_to_iterations(launches, "start", ranges).filter(pl.col("iteration").is_not_null())
    calls = launches.group_by("iteration").agg(
        pl.len().alias("launches"), ((pl.col("end") - pl.col("start")).sum() / 1e3).alias("launch_api_us")
    )
    first_op = (
        ops.filter(pl.col("call_start").is_not_null())
        .group_by("iteration", "pid", "correlation")
        .agg(pl.col("start").min(), pl.col("call_start").first(), pl.col("call_end").first())
    )
    latency = first_op.group_by("iteration").agg(
        ((pl.col("start") - pl.col("call_start")).median() / 1e3).alias("launch_latency_us"),
        ((pl.col("start") - pl.col("call_end")).median() / 1e3).alias("queue_us"),
    )
    return ranges.select("iteration").join(calls, on="iteration", how="left").join(
        latency, on="iteration", how="left"
    )


def warmup_to_skip(meta: dict[str, Any], ranges_found: int) -> int:
    """Warm-up iterations recorded inside the trace, to drop by default.

    ``tracekit collect`` names warm-up ranges ``warmup``, but a profiler that records from session start
    (ONNX Runtime's) also holds the warm-up runs as iterations; its sidecar says so with
    ``warmup_in_trace``, ``warmup_iterations`` and ``iterations``. Returns the warm-up count when the trace
    holds exactly warm-up + timed iterations, else 0.
    """
    warmup, iters = meta.get("warmup_iterations"), meta.get("iterations")
    if not meta.get("warmup_in_trace") or not isinstance(warmup, int) or not isinstance(iters, int):
        return 0
    return warmup if warmup > 0 and ranges_found == warmup + iters else 0


def analyze_iterations(
    trace: Trace,
    range_name: str | None = None,
    skip: int | None = 0,
    bound_threshold: float = FRAMEWORK_BOUND_UTILIZATION,
) -> IterationAnalysis:
    """Per-iteration latency, GPU busy, idle gaps, launches and framework overhead of ``trace``.

    ``range_name`` picks the iteration ranges (default: ``iteration`` if present, else the torch.profiler
    ``ProfilerStep#*`` steps, else the most frequent top-level range); ``skip`` drops that many leading (warm-up) iterations
    after the windows are computed (None: the run's warm-up iterations when the trace records them, see
    :func:`warmup_to_skip`). Raises NoActivityError when there is nothing to analyze.
    """
    warnings: list[str] = list(trace.warnings)
    path = trace.meta.get("path")
    device = trace.meta.get("device") or ("cpu" if trace.ops["kind"].eq("operator").all() else "gpu")
    ranges, name, how = choose_ranges(trace, range_name)
    has_ops = not trace.ops.is_empty()
    has_api = not trace.api.is_empty()
    if not has_ops:
        warnings.append(
            "the trace holds no GPU or operator activity: only latency and CPU time are reported"
        )

    ops = assign_ops(trace, ranges)
    if has_ops and ops.is_empty():
        warnings.append(f"no GPU or operator activity falls inside the {name!r} ranges")
    windows = _windows(ranges, ops)
    segments = _busy_segments(ops, windows)
    gaps = _gaps(segments, windows) if has_ops else _gaps(segments.clear(), windows).clear()

    busy = segments.group_by("iteration").agg((pl.col("seg_end") - pl.col("seg_start")).sum().alias("busy_ns"))
    gap_stats = gaps.group_by("iteration").agg(pl.len().alias("idle_gaps"))
    kernels = (
        ops.filter(pl.col("kind").is_in(KERNEL_KINDS)).group_by("iteration").agg(pl.len().alias("kernels"))
    )
    launch = _launch_stats(trace, ranges, ops)

    frame = (
        windows.join(busy, on="iteration", how="left")
        .join(gap_stats, on="iteration", how="left")
        .join(kernels, on="iteration", how="left")
        .join(launch, on="iteration", how="left")
        .sort("iteration")
        .with_columns(
            (pl.col("window_end") - pl.col("window_start")).alias("latency_ns"),
            pl.col("busy_ns").fill_null(0),
            pl.col("idle_gaps").fill_null(0),
            pl.col("kernels").fill_null(0),
        )
    )
    if has_api:
        frame = frame.with_columns(pl.col("launches").fill_null(0), pl.col("launch_api_us").fill_null(0.0))
    ms = 1e6
    frame = frame.select(
        pl.col("iteration").alias("index"),
        pl.col("range_start").alias("start_ns"),
        pl.col("range_end").alias("end_ns"),
        pl.col("window_start").alias("window_start_ns"),
        pl.col("window_end").alias("window_end_ns"),
        (pl.col("latency_ns") / ms).alias("latency_ms"),
        ((pl.col("range_end") - pl.col("range_start")) / ms).alias("cpu_ms"),
        (pl.col("busy_ns") / ms).alias("gpu_busy_ms"),
        ((pl.col("latency_ns") - pl.col("busy_ns")) / ms).alias("framework_overhead_ms"),
        pl.when(pl.col("latency_ns") > 0)
        .then(pl.col("busy_ns") / pl.col("latency_ns"))
        .otherwise(None)
        .alias("gpu_utilization"),
        pl.col("kernels").cast(pl.Int64),
        pl.col("launches").cast(pl.Int64),
        pl.col("launch_api_us").cast(pl.Float64),
        pl.col("launch_latency_us").cast(pl.Float64),
        pl.col("queue_us").cast(pl.Float64),
        pl.col("idle_gaps").cast(pl.Int64),
        ((pl.col("latency_ns") - pl.col("busy_ns")) / ms).alias("idle_ms"),
        pl.col("synchronized"),
    )
    if not has_ops:
        frame = frame.with_columns(
            pl.lit(None, pl.Float64).alias(c)
            for c in ("gpu_busy_ms", "framework_overhead_ms", "gpu_utilization", "idle_ms")
        ).with_columns(pl.lit(None, pl.Int64).alias("idle_gaps"))

    total = frame.height
    if skip is None:
        skip = warmup_to_skip(trace.meta, total)
        if skip:
            warnings.append(f"dropped the first {skip} iterations: the run's warm-up, recorded in this trace "
                            "(--skip 0 keeps them)")
    if skip:
        if skip >= total:
            raise NoActivityError(f"--skip {skip} drops all {total} {name!r} iterations", path)
        frame = frame.filter(pl.col("index") >= skip)
        gaps = gaps.filter(pl.col("iteration") >= skip)

    unsynced = int((~frame["synchronized"]).sum())
    if unsynced:
        warnings.append(
            f"{unsynced} of {frame.height} iterations are unsynchronized (GPU work outlives the range): "
            "latency is the steady-state period max(range end, GPU end) - max(range start, previous GPU end)"
        )
    gaps = _with_cpu_context(trace, gaps, ranges)
    summary = summarize(frame, bound_threshold)
    return IterationAnalysis(name, how, device, frame, gaps, summary, warnings, skip)


def summarize(frame: pl.DataFrame, bound_threshold: float = FRAMEWORK_BOUND_UTILIZATION) -> dict[str, Any]:
    """Summary over iterations: count, per-field stats, and "framework"/"compute" boundedness.

    The run is framework-bound when the median GPU utilization is below ``bound_threshold``.
    """
    summary: dict[str, Any] = {"iterations": frame.height}
    summary.update(summarize_columns(frame, NUMERIC_FIELDS))
    p50 = summary["gpu_utilization"]["p50"]
    summary["bound"] = None if p50 is None else ("framework" if p50 < bound_threshold else "compute")
    summary["bound_threshold"] = bound_threshold
    summary["synchronized"] = bool(frame["synchronized"].all())
    return summary


def _with_cpu_context(trace: Trace, gaps: pl.DataFrame, ranges: pl.DataFrame) -> pl.DataFrame:
    """Name what the host was doing at the start of each of the longest gaps.

    The API call in progress at the gap's start if any, else the innermost non-iteration range in progress,
    else "host code outside API calls" (Python/framework work).
    """
    if gaps.is_empty():
        return gaps.with_columns(pl.lit(None, pl.String).alias("cpu_context"))
    longest = gaps.sort("duration_ns", descending=True).head(LONGEST_GAPS).select("iteration", "start_ns")
    probe = longest.with_columns((pl.col("start_ns") + 1).alias("t")).sort("t")

    def in_progress(frame: pl.DataFrame, label: str) -> pl.DataFrame:
        if frame.is_empty():
            return probe.with_columns(pl.lit(None, pl.String).alias(label))
        src = frame.select(pl.col("start").alias("t"), pl.col("end").alias("ctx_end"), pl.col("name")).sort("t")
        joined = probe.join_asof(src, on="t", strategy="backward")
        return joined.select(
            "iteration",
            "start_ns",
            "t",
            pl.when(pl.col("ctx_end") > pl.col("t")).then(pl.col("name")).alias(label),
        )

    iteration_starts = ranges["range_start"]
    inner_ranges = trace.ranges.filter(~pl.col("start").is_in(iteration_starts.implode()))
    api_ctx = in_progress(trace.api, "api")
    range_ctx = in_progress(inner_ranges.sort("start"), "range")
    context = api_ctx.join(range_ctx.select("iteration", "start_ns", "range"), on=["iteration", "start_ns"]).select(
        "iteration",
        "start_ns",
        pl.coalesce(
            pl.col("api"), pl.concat_str(pl.lit("in range "), pl.col("range")), pl.lit("host code outside API calls")
        ).alias("cpu_context"),
    )
    return gaps.join(context, on=["iteration", "start_ns"], how="left")
