"""Per-iteration framework-tax metrics (docs/design.md, "Per-iteration metrics").

An iteration is one range (NVTX range, torch.profiler annotation, ORT ``model_run``) of the chosen name
(:mod:`tracekit.analyzers.ranges`), or a synthetic window cut from the device timeline.

Which device ops are an iteration's (:func:`assign_ops`; the *launch* decides, not the GPU time):

- an op with a launching API call in the trace (joined by ``(pid, correlation)``; every kernel of a CUDA
  graph carries its ``cudaGraphLaunch``'s correlation id) belongs to the iteration whose range, *in the same
  process*, holds that call's start;
- an op that carries a correlation id but whose launching call is not in the trace (launched before the
  capture began) belongs to no iteration, nor does an op launched outside every range: both are reported
  apart (:attr:`IterationAnalysis.unassigned`: count and busy time), never counted in an iteration;
- an op without a correlation id (formats that do not link ops to calls: ORT kernels, CPU operators), or
  any op of a trace that holds no launching calls at all, belongs to the iteration whose range holds its
  own start;
- synthetic windows (no ranges, ``--split-idle``): an op belongs to the window whose device span holds its
  start.

Units: ``*_ns`` integer nanoseconds, ``*_ms`` milliseconds, ``*_us`` microseconds, utilization a fraction.

- latency: length of the iteration's window. A *synchronized* iteration (no op of it ends after its range:
  a sync inside the range, or no ops) has its range as window, always. An unsynchronized one (GPU work
  outlives the range, e.g. the study's CUDA-graph trace) has ``[max(range start_i, GPU end_(i-1)),
  max(range end_i, GPU end_i)]``: the steady-state period. A synthetic window runs from its first op's
  launch to its last op's end (windows may overlap when the host runs ahead).
- cpu_ms: the range's own length (host time between range open and close).
- gpu_busy: length of the union of the iteration's op intervals (all streams, all kinds) clipped to the
  window, where a gap of at most :data:`ROUNDING_NS` (1 ns: one rounding unit of a nanosecond timestamp,
  as between back-to-back kernels in ROCm Kineto traces) between two ops is not a gap: it is merged into
  busy time. An op without an end time (not recorded) has no interval and counts in no busy time (a warning
  counts such ops).
- idle gaps: maximal sub-intervals of the window with no op of the iteration running (> 0 ns), including the
  leading (window start -> first op) and trailing (last op end -> window end) gaps; an iteration without
  ops has one gap of position ``empty`` (its whole window); idle = latency - busy.
- framework_overhead = latency - busy; gpu_utilization = busy / latency.
- kernels: ops of kind "kernel" (or "operator" on CPU-only traces) in the iteration.
- launches: launch API calls (``LAUNCH_API_NAMES``) starting inside the range; launch_api_us their summed
  CPU duration. Per launch call, only its *first* op counts (a graph launch's first kernel):
  launch_latency_us is the median over the iteration's launches of (first op start - call start) (copy
  and memset calls, which launch ops too, are not launches: they count in neither);
  queue_us the median of max(0, first op start - call end), the time the op waited after its call
  returned. A first op that starts before its call returns was not queued at all (0): the device took the
  work while the call was still running -- always so for a graph launch, whose call submits its kernels
  one after the other and returns after the first have run. A first op that starts before its call
  *began* is impossible on one clock: host and device clocks disagree; a warning says so.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import polars as pl

from tracekit.analyzers import communication, plausibility, resolution
from tracekit.analyzers.gap_context import cpu_context
from tracekit.analyzers.ranges import (  # noqa: F401 (RangeChoice, choose_ranges, select_ranges: re-exported)
    PROFILER_STEP_KEY,
    RangeChoice,
    choose_ranges,
    select_ranges,
)
from tracekit.analyzers.stats import Summary, summarize_columns
from tracekit.analyzers.steps import SERVED_CLASSES
from tracekit.analyzers.sweep import FRAMEWORK_BOUND_UTILIZATION, bound_doubt, bound_of
from tracekit.calls import outermost_of_keys, outermost_of_pairs, pair_key, pair_keys_fit
from tracekit.errors import NoActivityError, TracekitError
from tracekit.fields import NUMERIC_FIELDS
from tracekit.model import (
    CALLS_WITHOUT_END,
    GPU_PROGRAM_WITHOUT_DEVICE_ACTIVITY,
    GPU_PROVIDER_NODES,
    GRAPH_LAUNCH_NAMES,
    GRAPH_REPLAYS,
    HOUR_NS,
    LAUNCH_API_NAMES,
    OPS_OF_FAR_CALLS,
    OPS_WITHOUT_END,
    PARTIAL_RUNS,
    REMOTE_PROVIDER_NODES,
    RUN_SHAPES,
    UNREAD_DEVICE_EVENTS,
    Trace,
    calls_named,
    merged_intervals,
    names_mask,
    newly_covered,
    sort_frame,
    union_ns,
)

if TYPE_CHECKING:
    from tracekit.analyzers.attribution import Attribution, Setup

#: Where an idle gap lies in its iteration (an Enum: one byte a gap); "empty": the whole window of an
#: iteration without ops.
GAP_POSITION = pl.Enum(["leading", "inner", "trailing", "empty"])
#: The positions as a series, to gather from by code (0 leading, 1 inner, 2 trailing, 3 empty).
GAP_POSITIONS = pl.Series("position", GAP_POSITION.categories, dtype=GAP_POSITION)
#: Gaps of at most this many ns between ops are timestamp rounding, not idle time: merged into busy time
#: (one unit of a nanosecond timestamp; ROCm Kineto traces put 1 ns between back-to-back kernels, whose
#: ``ts + dur`` and next ``ts`` are rounded apart).
ROUNDING_NS = 1
#: Op kinds counted as "kernels" (device work items) per iteration.
KERNEL_KINDS = ("kernel", "operator")
#: How many of the longest idle gaps get a CPU-context lookup.
LONGEST_GAPS = 10

#: Start of the warning for a trace without ops, which :func:`no_verdict_reason`'s line replaces.
NO_ACTIVITY_WARNING = "the trace holds no GPU or operator activity"
#: Start of the warning for ranges that hold none of the trace's ops, which :func:`_no_work_in_iterations`'s
#: line replaces.
NO_WORK_INSIDE_WARNING = "no GPU or operator activity falls inside"

#: The fields that need each iteration's own ops (withheld when they cannot be known: :func:`_shared_findings`).
BUSY_FIELDS = ("gpu_busy_ms", "framework_overhead_ms", "gpu_utilization", "idle_gaps", "idle_ms")
#: Per-iteration fields that need a measured timeline (when each op ran): without one (an Nsight Compute report
#: alone: kernels laid back to back by the reader) they are not shown. GPU busy (the summed kernel durations)
#: and the kernel count stay.
TIMELINE_FIELDS = ("latency_ms", "cpu_ms", "framework_overhead_ms", "gpu_utilization", "idle_gaps", "idle_ms")

#: What to collect for a verdict, by the format of a trace that cannot give one.
_COLLECT_HINTS: dict[str, str] = {
    "nsys-sqlite": (
        "nsys profile -t cuda,nvtx for a GPU run; for a CPU run a profiler that records operators "
        "(tracekit collect --profiler torch or ort)"
    ),
    "kineto": "torch.profiler with ProfilerActivity.CUDA for a GPU run (its CPU operators for a CPU run)",
    "ort": "ONNX Runtime's profiler with its Node events kept (the default), or nsys/torch.profiler on a GPU",
}

#: the hint for an ONNX Runtime run (its stated runtime) traced by another profiler, which records none of
#: ORT's operators
_ORT_RUN_HINT = (
    "the run is ONNX Runtime's, whose operators only its own profiler records: tracekit collect --runtime onnx "
    "--profiler ort for a CPU run; nsys profile -t cuda,nvtx for a GPU run"
)


def no_verdict_reason(trace: Trace) -> str | None:
    """Why a trace gets no framework-/compute-bound verdict, in one line that says what the input can and
    cannot tell and what to collect for the verdict; None when it can have one.

    The verdict compares device (or operator) busy time with latency on one measured timeline. An Nsight
    Compute report has no timeline (``meta["timeline"]`` False: ncu replays each kernel alone and records no
    start times, so the reader lays the kernels back to back and any utilization would be 100% by
    construction); a trace of ranges without device or operator activity has latency but no busy time."""
    fmt = str(trace.meta.get("format") or "")
    if trace.meta.get("timeline") is False:
        return (
            "no framework-/compute-bound verdict: Nsight Compute replays each kernel alone and records no start "
            "times, so this input gives kernel durations (GPU busy = their sum) and per-kernel counters "
            "(kernel-time SMs active / warp occupancy: tracekit table --wide), not latency, idle time or "
            "utilization; for the verdict, collect a timeline of the same run too (tracekit collect --profiler "
            "nsys --profiler ncu; nsys profile -t cuda,nvtx; torch.profiler with CUDA activity; tracekit table "
            "TIMELINE --ncu REPORT joins them)"
        )
    on_gpu = _node_count(trace.meta.get(GPU_PROVIDER_NODES))
    # any node on a GPU provider: its GPU work is nowhere in the profile, and the run's wait for it reads as
    # framework time (a CUDA session's shape nodes on the CPU provider may outnumber its GPU nodes)
    if fmt == "ort" and trace.meta.get("device") != "gpu" and on_gpu and on_gpu[0] > 0:
        return (
            f"no framework-/compute-bound verdict: {on_gpu[0]} of {on_gpu[1]} operator events ran on a GPU "
            "execution provider, which ONNX Runtime times on the host (argument setup and kernel launch), not on "
            "the GPU, and the profile holds no Kernel events: its operator busy time is launch time, not the "
            "GPU's work; for the verdict, profile the GPU (tracekit collect --profiler nsys or torch; nsys "
            "profile -t cuda,nvtx)"
        )
    remote = _node_count(trace.meta.get(REMOTE_PROVIDER_NODES))
    if fmt == "ort" and remote and remote[0] > 0:
        return (
            f"no framework-/compute-bound verdict: {remote[0]} of {remote[1]} operator events ran on a remote "
            "execution provider (Azure: a request to an endpoint), whose time is a network round trip and a "
            "server's work, not this machine's: operator busy time says nothing of either"
        )
    lost = _launches_without_kernels(trace)
    if lost is not None:  # (launch calls recorded: the device's activity was lost, the most specific reason)
        return lost
    if trace.ops.is_empty() and trace.meta.get(UNREAD_DEVICE_EVENTS):
        # (the work is there, written as begin/end pairs: review20)
        return (
            "no framework-/compute-bound verdict: the trace's device or operator work is in events tracekit does "
            f"not read ({', '.join(map(str, trace.meta[UNREAD_DEVICE_EVENTS]))}), so it gives latency per "
            "iteration, not how much of it the device or operators were busy; for the verdict, export the trace "
            "with complete events ('ph' 'X'), as torch.profiler writes them"
        )
    if trace.ops.is_empty():
        hint = _COLLECT_HINTS.get(fmt, "a profiler that records device work or operators")
        if str(trace.meta.get("runtime") or "").startswith("onnx") and fmt != "ort":
            # (an ONNX Runtime run under another profiler: none of ORT's operators is recorded there)
            hint = _ORT_RUN_HINT
        return (
            "no framework-/compute-bound verdict: the trace holds ranges but no GPU or operator activity, so it "
            "gives latency and the range's length on the host per iteration, not how much of it the device or "
            "operators were busy; "
            f"for the verdict, profile with device or operator activity ({hint})"
        )
    if isinstance(
        trace.meta.get(GPU_PROGRAM_WITHOUT_DEVICE_ACTIVITY), dict
    ):  # (set on traces without device ops)
        return (
            "no framework-/compute-bound verdict: the trace holds operators that run for GPU tensors only but "
            "no GPU activity (a GPU program profiled without ProfilerActivity.CUDA): its operators' time is the "
            "host's enqueueing, not the device's work; for the verdict, profile with ProfilerActivity.CUDA "
            "(tracekit collect --profiler torch)"
        )
    return None


def _node_count(found: Any) -> tuple[int | float, int | float] | None:
    """An ORT reader's ``[nodes on the providers, all nodes]`` (``gpu_provider_nodes``,
    ``remote_provider_nodes``) when it is two numbers; None for anything else (a cache entry of another version,
    or a hand-edited one, may hold anything: what cannot be read is no evidence)."""
    if not isinstance(found, list | tuple) or len(found) != 2:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in found):
        return None
    return found[0], found[1]


def _launches_without_kernels(trace: Trace) -> str | None:
    """Why there is no verdict when the trace records kernel launch calls but no kernel (nor graph execution)
    on the device: the device's activity was lost (a failed or forbidden CUPTI capture keeps the host-side
    calls), and what busy time there is (copies, or CPU operators) says nothing of the kernels."""
    if trace.api.is_empty() or trace.ops.select(pl.col("kind").is_in(["kernel", "graph"]).any()).item():
        return None
    launches = calls_named(trace.api, LAUNCH_API_NAMES)
    if launches.is_empty():
        return None
    names = ", ".join(sorted(launches.get_column("name").unique().to_list())[:3])
    operators = trace.ops.select((pl.col("kind") == "operator").any()).item()
    shown = "CPU operators' time" if operators else "copies and memsets"
    return (
        f"no framework-/compute-bound verdict: the trace records {launches.height} kernel launch calls ({names}) "
        "but no kernel ran on the device in it: the profiler lost the device's activity (CUPTI not enabled, "
        "not permitted or its records dropped; or every launch was captured into a CUDA graph), so the busy "
        f"time shown is {shown} only; for the verdict, profile the device activity too (nsys profile -t "
        "cuda,nvtx; torch.profiler with ProfilerActivity.CUDA)"
    )


def _no_work_in_iterations(trace: Trace, assignment: Assignment, frame: pl.DataFrame) -> str | None:
    """Why there is no verdict when the trace holds device (or operator) work but none of it is in the
    analyzed iterations (``frame``'s ``index``): their utilization is 0 by construction and says nothing about
    the work, which ran outside the chosen ranges; None otherwise."""
    if trace.ops.is_empty() or frame.is_empty():
        return None
    analyzed = frame.get_column("index").implode()
    if assignment.ops.select(pl.col("iteration").is_in(analyzed).any()).item():
        return None
    return (
        f"no framework-/compute-bound verdict: none of the {frame.height} analyzed {assignment.choice.name!r} "
        f"iterations holds a device or operator op (all {trace.ops.height} of the trace's ran outside them), so "
        "their 0% utilization describes those ranges, not the work; choose ranges that hold the work with "
        "--range, or cut the device timeline at idle gaps with --split-idle MS"
    )


#: What :func:`analyze_iterations` reads of a trace (a :data:`tracekit.model.FrameSpec` for
#: ``read_trace(path, frames=...)``): no GPU metrics, no op names or graph ids, no API kinds. The API calls'
#: threads and the optional CPU operators are for the idle-time attribution
#: (:mod:`tracekit.analyzers.attribution`); the ops' streams for the plausibility checks
#: (:mod:`tracekit.analyzers.plausibility`).
FRAMES_NEEDED: dict[str, tuple[str, ...] | None] = {
    "ops": ("start", "end", "device", "pid", "correlation", "kind", "stream"),
    "api": ("start", "end", "pid", "correlation", "name", "thread"),
    "ranges": None,
    "cpu_ops": None,
}


@dataclass(frozen=True)
class IterationAnalysis:
    """The per-iteration analysis of one trace (:func:`analyze_iterations`, or the stages one by one:
    :func:`assign`, :func:`measure_gaps`, :func:`attribute`, :func:`summarize_stages`). Built once, never
    changed.

    ``iterations``: one row per analyzed iteration (``index``, ``start_ns``/``end_ns`` of its range, the
    effective window ``window_start_ns``/``window_end_ns``, every :data:`tracekit.fields.ITERATION_FIELDS`
    column, ``synchronized``, the serving-step columns when the trace holds engine steps); ``gaps``: every idle
    gap (``iteration``, ``start_ns``, ``end_ns``, ``position``, ``duration_ns``, ``cpu_context``);
    ``longest``: the :data:`LONGEST_GAPS` longest gaps with their causes (``cause``, ``host_state``),
    ``offset_ms`` and ``duration_us``; ``ranges``: every chosen range (``iteration``, ``range_start``,
    ``range_end``, ``thread``), warm-up included, as :func:`assign_ops` takes them; ``no_verdict``: why there is
    no framework-/compute-bound verdict for want of evidence (:func:`no_verdict_reason`; None otherwise)."""

    range_name: str
    range_choice: str
    device: str
    iterations: pl.DataFrame
    gaps: pl.DataFrame
    summary: Summary
    warnings: list[str] = field(default_factory=list)
    skipped: int = 0
    ranges: pl.DataFrame | None = None
    #: Serving-engine step classes (prefill/decode/mixed/idle) with the framework tax of each, when the
    #: iterations are (or hold) vLLM/SGLang/TensorRT-LLM steps (:func:`tracekit.analyzers.steps.class_summary`).
    step_classes: list[dict[str, Any]] | None = None
    #: Every idle nanosecond of every iteration by cause (:mod:`tracekit.analyzers.attribution`); None when
    #: not computed (``attribute=False``) or without a measured timeline.
    attribution: Attribution | None = None
    #: The ops that count in no iteration (:func:`unassigned_ops`); None when every op is in one.
    unassigned: dict[str, Any] | None = None
    #: What some figures need said to be read right (not warnings: nothing is wrong), e.g. launches whose
    #: first op started before the call returned (:func:`launch_notes`).
    notes: list[str] = field(default_factory=list)
    longest: pl.DataFrame | None = None
    no_verdict: str | None = None
    #: :attr:`Measured.setup_caveat`
    setup_caveat: str | None = None
    #: :attr:`Measured.capture_refusal`
    capture_refusal: str | None = None
    #: :attr:`Measured.setup_iterations`
    setup_iterations: tuple[int, ...] = ()

    def gap_causes(self, trace: Trace) -> pl.DataFrame:
        """Every idle gap with its cause columns (``cause``, ``host_state``, ``pid``, ``thread``,
        ``next_call_end_ns``, ``no_launch``, the ns of every cause and device-side cause:
        :data:`tracekit.analyzers.attribution.GAP_COLUMNS`), computed on demand (a row per gap: large on
        large traces) by the same rules as the per-iteration sums. ``trace``: the analyzed trace."""
        from tracekit.analyzers.attribution import GAP_COLUMNS, DeviceTimeline, attribute_gaps

        gaps = self.gaps.drop("cause", "host_state", strict=False)
        ops = trace.ops.select("start", "end", "pid", "correlation", "device")
        frame = attribute_gaps(gaps, ops, trace.api, self.ranges, timeline=DeviceTimeline.of(trace.ops))
        return frame.select(*gaps.columns, *GAP_COLUMNS)

    def longest_gaps(self, count: int = LONGEST_GAPS) -> pl.DataFrame:
        """The ``count`` longest idle gaps, longest first, with durations in µs, ``offset_ms`` (start in ms after
        the iteration's window start) and, where the idle time was attributed, their ``cause`` and
        ``host_state``."""
        if count == LONGEST_GAPS and self.longest is not None:
            return self.longest
        detail = self.attribution.detail if self.attribution is not None else None
        return longest_gaps(self.gaps, self.iterations, detail, count)


def longest_gaps(
    gaps: pl.DataFrame,
    iterations: pl.DataFrame,
    detail: pl.DataFrame | None,
    count: int = LONGEST_GAPS,
    rows: pl.Series | None = None,
) -> pl.DataFrame:
    """The ``count`` longest of ``gaps``, longest first (earlier gaps first among equal ones), with their causes
    from ``detail`` (``iteration``, ``start_ns``, ``cause``, ``host_state``; None: both null), ``offset_ms``
    (start in ms after the iteration's window start) and ``duration_us``. ``rows``: those gaps' row numbers in
    ``gaps`` when already found (``_longest(gaps, count)``'s ``_row``: :attr:`Measured.longest_rows`)."""
    from tracekit.analyzers.attribution import GAP_CAUSE, HOST_STATE

    longest = (_longest(gaps, count) if rows is None else _rows_of(gaps, rows)).drop("_row")
    if detail is not None:  # each gap's cause and its launching thread's state
        longest = longest.join(detail, on=["iteration", "start_ns"], how="left", maintain_order="left")
    else:  # the same columns always: no cause known
        longest = longest.with_columns(
            pl.lit(None, GAP_CAUSE).alias("cause"), pl.lit(None, HOST_STATE).alias("host_state")
        )
    return with_gap_offsets(longest, iterations).with_columns(
        (pl.col("duration_ns") / 1e3).alias("duration_us")
    )


def with_gap_offsets(gaps: pl.DataFrame, iterations: pl.DataFrame) -> pl.DataFrame:
    """``gaps`` with ``offset_ms``: start_ns minus the gap's iteration's ``window_start_ns``, in ms."""
    starts = iterations.select(pl.col("index").alias("iteration"), "window_start_ns")
    return gaps.join(starts, on="iteration", how="left", maintain_order="left").select(
        pl.exclude("window_start_ns"),
        ((pl.col("start_ns") - pl.col("window_start_ns")) / 1e6).alias("offset_ms"),
    )


def _longest(gaps: pl.DataFrame, count: int) -> pl.DataFrame:
    """The ``count`` longest gaps, longest first (earlier rows first among equal durations), with their row
    number in ``gaps`` as ``_row``. Only gaps at least as long as the ``count``-th longest are gathered and
    sorted, not every gap."""
    duration = gaps.get_column("duration_ns")
    if gaps.height > count:
        rows = (duration >= duration.top_k(count).min()).arg_true()
    else:
        rows = pl.int_range(gaps.height, dtype=pl.UInt32, eager=True)
    return (
        gaps[rows]
        .with_columns(rows.alias("_row"))
        .sort("duration_ns", descending=True, maintain_order=True)
        .head(count)
    )


def _rows_of(gaps: pl.DataFrame, rows: pl.Series) -> pl.DataFrame:
    """:func:`_longest`'s frame again from its ``_row`` column ``rows`` (the same rows of ``gaps``, in order)."""
    return gaps[rows].with_columns(rows.alias("_row"))


def _search_sorted(values: pl.Series, keys: pl.Series, side: str = "left") -> pl.Series:
    """``values.search_sorted(keys, side)`` (``values`` sorted, no nulls) as Int64 positions, through numpy
    (:func:`tracekit.analyzers.attribution.search_sorted`: a merge when the keys come in order, as ops'
    times and keys do), several times faster than polars' binary search on a million keys. A null key gets
    position 0: callers mask it."""
    from tracekit.analyzers.attribution import search_sorted

    if keys.null_count():
        keys = keys.fill_null(0)
    found = search_sorted(values.to_numpy(), keys.to_numpy(), side)
    return pl.Series(keys.name, found, dtype=pl.Int64)


def _iteration_in(times: pl.Series, ranges: pl.DataFrame) -> pl.Series:
    """For each time, the ``iteration`` whose [range_start, range_end) holds it (null: none), whatever its
    process.

    The candidate is the last range (in ``ranges`` order, sorted by start) that starts at or before the time,
    as a backward as-of join on ``range_start`` picks it, found by binary search so that the (large)
    ``times`` need not be sorted."""
    if ranges.is_empty() or times.is_empty():
        return pl.Series("iteration", [None] * len(times), dtype=pl.Int64)
    pos = _search_sorted(ranges.get_column("range_start"), times, side="right") - 1
    at = pos.clip(lower_bound=0)
    inside = (pos >= 0) & times.is_not_null() & (times < ranges.get_column("range_end").gather(at))
    iteration = ranges.get_column("iteration").gather(at)
    return pl.select(pl.when(inside).then(iteration).alias("iteration")).to_series()


def _overlapping(ranges: pl.DataFrame) -> bool:
    """Whether some of ``ranges`` (sorted by ``range_start``) starts before an earlier one ends."""
    reach = pl.col("range_end").cum_max().shift(1)
    return bool(ranges.select((pl.col("range_start") < reach).fill_null(False).any()).item())


def _iteration_on_threads(
    times: pl.Series, ranges: pl.DataFrame, threads: pl.Series, found: pl.Series
) -> pl.Series:
    """``found`` (each time's iteration by time alone, among ``ranges`` of one process) corrected for ranges
    that overlap across threads (a thread pool running iterations at once): a time whose thread holds ranges
    takes the one of its own thread that holds it (null: none), never another thread's."""
    out = found
    for thread in ranges.get_column("thread").drop_nulls().unique().to_list():
        own = ranges.filter(pl.col("thread") == thread)
        mine = (threads == thread).fill_null(False)
        on_thread = _iteration_in(times, own)
        out = pl.select(pl.when(mine).then(on_thread).otherwise(out).alias("iteration")).to_series()
    return out


def _iteration_at(
    times: pl.Series, ranges: pl.DataFrame, pids: pl.Series | None = None, threads: pl.Series | None = None
) -> pl.Series:
    """For each time, the ``iteration`` whose [range_start, range_end) holds it (null: none); with ``pids``
    (the process of each time), only a range of the same process counts (a null pid on either side matches
    any); with ``threads`` (the thread of each time: its launching call's, or a CPU operator's own), where a
    process's ranges overlap in time, a time of a thread that holds ranges takes its own thread's
    (:func:`_iteration_on_threads`)."""
    range_pid = ranges.get_column("pid") if "pid" in ranges.columns else None
    if pids is None or range_pid is None or range_pid.null_count() == range_pid.len():
        return _iteration_in(times, ranges)
    distinct = range_pid.drop_nulls().unique()
    if distinct.len() == 1 and not range_pid.null_count():
        found = _iteration_in(times, ranges)
        if threads is not None and "thread" in ranges.columns and _overlapping(ranges):
            found = _iteration_on_threads(times, ranges, threads, found)
        same = pids.is_null() | (pids == distinct[0])
        return pl.select(pl.when(same).then(found).alias("iteration")).to_series()
    # Ranges of several processes (they may overlap in time): each time against its own process's ranges.
    out = pl.Series("iteration", [None] * len(times), dtype=pl.Int64)
    for pid in distinct.to_list():
        own = ranges.filter(pl.col("pid").eq_missing(pid) | pl.col("pid").is_null())
        found = _iteration_in(times, own)
        if threads is not None and "thread" in own.columns and _overlapping(own):
            found = _iteration_on_threads(times, own, threads, found)
        out = pl.select(
            pl.when(pids.is_null() | (pids == pid))
            .then(pl.coalesce(out, found))
            .otherwise(out)
            .alias("iteration")
        ).to_series()
    return out


#: The launching-call columns :func:`_match_calls` returns (the call's start, end, pid and thread).
CALL_COLUMNS = ("call_start", "call_end", "call_pid", "call_thread")


def _call_columns(calls: pl.DataFrame) -> list[pl.Expr]:
    """``start``, ``end``, ``pid``, ``thread`` of calls as :data:`CALL_COLUMNS` (thread null when absent), and
    ``call_launch``: whether the call is a kernel or graph launch (:data:`LAUNCH_API_NAMES`), not a copy or
    memset call."""
    thread = pl.col("thread") if "thread" in calls.columns else pl.lit(None, pl.Int64)
    return [
        pl.col("start").alias("call_start"),
        pl.col("end").alias("call_end"),
        pl.col("pid").alias("call_pid"),
        thread.alias("call_thread"),
        pl.col("launch").alias("call_launch"),
    ]


def _is_launch(api: pl.DataFrame) -> pl.Expr:
    """Whether each API row is a kernel or graph launch (a frame without names: every call counts)."""
    if "name" not in api.columns:
        return pl.lit(True).alias("launch")
    return pl.col("name").is_in(LAUNCH_API_NAMES).alias("launch")


def _launch_mask(api: pl.DataFrame) -> pl.Series | pl.Expr:
    """:func:`_is_launch` of ``api`` itself, row for row, as a column asked once per frame
    (:func:`tracekit.model.names_mask`: kept while the frame lives)."""
    if "name" not in api.columns:
        return _is_launch(api)
    return names_mask(api, LAUNCH_API_NAMES, strip=False).alias("launch")


def _launch_calls_of(api: pl.DataFrame) -> pl.DataFrame:
    """One launching API row per (pid, correlation): the outermost call carrying that correlation id."""
    calls = outermost_of_pairs(api.filter(pl.col("correlation").is_not_null()).with_columns(_is_launch(api)))
    return calls.select("pid", "correlation", *_call_columns(calls))


def _match_calls(ops: pl.DataFrame, api: pl.DataFrame) -> tuple[pl.Series, pl.DataFrame]:
    """The launching call of each row of ``ops``: (``call``, per op in order: a row number in the returned
    calls frame or null when none; calls frame with :data:`CALL_COLUMNS`: the call's start, end, pid,
    thread).

    The launching call is the outermost API call with the op's (pid, correlation) (earliest start, then
    longest). Same answer as joining :func:`_launch_calls_of` on (pid, correlation), found by sorting the calls
    on one (pid, correlation) key (a check when the API rows are in correlation order, the usual case) and
    a binary search per op, rather than by hashing every row."""
    keys = ops.select("pid", "correlation")
    extra = ["thread"] if "thread" in api.columns else []
    calls = api.select("pid", "correlation", "start", "end", *extra, _launch_mask(api)).filter(
        pl.col("correlation").is_not_null() & pl.col("pid").is_not_null()
    )
    if calls.is_empty() or ops.is_empty() or not pair_keys_fit(keys, calls):
        launch = _launch_calls_of(api).with_row_index("call").with_columns(pl.col("call").cast(pl.Int64))
        call = keys.join(
            launch.select("pid", "correlation", "call"),
            on=["pid", "correlation"],
            how="left",
            maintain_order="left",
        ).get_column("call")
        return call, launch.select(*CALL_COLUMNS, "call_launch")
    calls = outermost_of_keys(calls.select(pair_key(), "start", "end", "pid", *extra, "launch"))
    call_keys = calls.get_column("key")
    op_keys = keys.select(pair_key()).to_series()
    pos = _search_sorted(call_keys, op_keys, side="left").clip(upper_bound=calls.height - 1)
    hit = op_keys.is_not_null() & (call_keys.gather(pos) == op_keys)
    call = pl.select(pl.when(hit).then(pos).alias("call")).to_series()
    return call, calls.select(_call_columns(calls))


def assign_ops(trace: Trace, ranges: pl.DataFrame) -> pl.DataFrame:
    """The trace's ops with an ``iteration`` column and launch times (module docstring: by launch).

    Columns: ``op`` (row number in ``trace.ops``), the ops columns, ``call_start``, ``call_end``, ``iteration``;
    ops in no iteration (launched outside every range, or launched before the capture) are dropped; in
    ``op`` order. ``ranges``: :func:`tracekit.analyzers.ranges.choose_ranges`'s frame."""
    ops, calls = _assign(trace.ops.with_row_index("op"), trace, ranges)
    call = ops.get_column("call")
    return ops.with_columns(
        calls.get_column("call_start").gather(call), calls.get_column("call_end").gather(call)
    ).select(pl.exclude("call", "iteration"), "iteration")


def _synthetic(ranges: pl.DataFrame) -> bool:
    """Whether ``ranges`` are synthetic windows (their device span given: ops assigned by start)."""
    return (
        "gpu_start" in ranges.columns
        and ranges.height > 0
        and not ranges.get_column("gpu_start").null_count()
    )


def _has_launch_calls(api: pl.DataFrame) -> bool:
    """Whether the trace links ops to calls at all (some API call carries a correlation id)."""
    return not api.is_empty() and api.get_column("correlation").null_count() < api.height


def _iterations_of(
    ops: pl.DataFrame, api: pl.DataFrame, ranges: pl.DataFrame
) -> tuple[pl.Series, pl.Series, pl.DataFrame, pl.Series]:
    """Per op (rows of ``ops``, with pid, correlation, start): (``iteration`` or null, ``call`` (row of the
    calls frame or null), the calls frame, ``missing``: the op has a correlation id and the trace holds
    launching calls, but not this op's: launched before the capture)."""
    return _placed(ops, api, ranges)[:4]


def _placed(
    ops: pl.DataFrame, api: pl.DataFrame, ranges: pl.DataFrame
) -> tuple[
    pl.Series, pl.Series, pl.DataFrame, pl.Series, tuple[pl.Series, pl.Series, pl.Series] | None, pl.Series
]:
    """:func:`_iterations_of`; the ops' :func:`_op_keys` where it computed them (None: synthetic windows,
    which assign by the op's own start), so that :func:`assign` need not compute them again; and per op
    whether it went to an iteration by its call while its own time lies more than :data:`LAUNCH_DELAY_MAX_NS`
    from that call: its own time is the damaged one, so where it ran within the iteration is not known
    (:func:`assign` then takes it as untimed)."""
    call, calls = _match_calls(ops, api)
    ranges = sort_frame(ranges, ["range_start"], [False])
    if _has_launch_calls(api):
        missing = call.is_null() & ops.get_column("correlation").is_not_null()
    else:
        missing = pl.repeat(False, ops.height, dtype=pl.Boolean, eager=True)
    if _synthetic(ranges):
        # Windows are disjoint in device time: each op's start lies in exactly one span [gpu_start, gpu_end].
        starts = ops.get_column("start")
        spans = ranges.select(
            "iteration", pl.col("gpu_start").alias("range_start"), (pl.col("gpu_end") + 1).alias("range_end")
        )
        iteration = _iteration_in(starts, spans)
        if starts.null_count():
            # An op of no known time goes to the window whose span holds its launch call's start (the
            # windows' host side: first launch to last end), else to none: it had been 'launched outside
            # every iteration' beside the reader's word that its call places it
            untimed_call = pl.select(
                pl.when(starts.is_null()).then(calls.get_column("call_start").gather(call))
            ).to_series()
            by_call = _iteration_in(untimed_call, ranges.select("iteration", "range_start", "range_end"))
            iteration = pl.select(pl.coalesce(iteration, by_call)).to_series()
        return (
            iteration,
            call,
            calls,
            missing,
            None,
            pl.repeat(False, ops.height, eager=True),
        )
    when, pids, threads, own_start = _op_keys(ops, call, calls, missing)
    iteration = _iteration_at(when, ranges, pids, threads)
    own_damaged = pl.repeat(False, ops.height, eager=True)
    if own_start.null_count() < own_start.len():
        # A call and its op more than LAUNCH_DELAY_MAX_NS apart: one of the two times is damaged. The op goes
        # where its call puts it when that is inside an iteration, else where its own start does (the call
        # stamped far: hostile18b; the op stamped far: hostile18c).
        by_own = _iteration_at(own_start, ranges, pids, threads)
        use_own = iteration.is_null() & by_own.is_not_null()
        iteration = pl.select(pl.when(use_own).then(by_own).otherwise(iteration)).to_series()
        when = pl.select(pl.when(use_own).then(own_start).otherwise(when)).to_series()
        own_damaged = (own_start.is_not_null() & ~use_own & iteration.is_not_null()).alias("own_damaged")
    return iteration, call, calls, missing, (when, pids, threads), own_damaged


def _op_keys(
    ops: pl.DataFrame, call: pl.Series, calls: pl.DataFrame, missing: pl.Series
) -> tuple[pl.Series, pl.Series, pl.Series, pl.Series]:
    """Per op: (the time that decides its iteration -- its launching call's start, else its own start; null
    when launched before the capture --, its process, its thread: its launching call's, or a CPU operator's
    own; its own start where its call lies more than LAUNCH_DELAY_MAX_NS from it, else null).

    A call and its op that far apart are no launch delay: one of the two times is damaged, kept by the reader
    where it was no minority. :func:`_placed` places such an op by whichever of the two times
    lies in an iteration, its call's first."""
    when = calls.get_column("call_start").gather(call)
    pids = calls.get_column("call_pid").gather(call).fill_null(ops.get_column("pid"))
    threads = calls.get_column("call_thread").gather(call).fill_null(_op_threads(ops))
    own = ops.get_column("start")
    damaged = ((when - own).abs() > LAUNCH_DELAY_MAX_NS).fill_null(False) & ~missing
    own_start = pl.select(pl.when(damaged).then(own)).to_series()
    when = pl.select(pl.when(~missing).then(when.fill_null(own))).to_series()
    return when, pids, threads, own_start


#: A launch call stamped further than this (ns) from its op's start is a damaged time, not a launch delay (an
#: hour: the readers' far-timestamp distance, tracekit.model.HOUR_NS)
LAUNCH_DELAY_MAX_NS = HOUR_NS


def shared_iterations(
    when: pl.Series, pids: pl.Series, threads: pl.Series, ranges: pl.DataFrame
) -> tuple[int, list[int]]:
    """(how many ops cannot be given an iteration, the iterations of ``ranges`` that hold their times).

    An op goes to the range of its own thread when its thread runs ranges (:func:`_iteration_on_threads`);
    one of a thread that runs none (ONNX Runtime's inter-op pool under ``ORT_PARALLEL``, whose threads run the
    nodes of every caller's ``run()``), or without a thread (ORT's Kernel events), goes by its time alone.
    When two or more ranges of its process hold that time (concurrent ``run()`` calls), nothing in the trace
    says whose it is: a real profile of two threads calling ``run()`` on an ``ORT_PARALLEL`` session had one
    pool thread run two runs' nodes back to back while both runs were open, and each run had been given the
    other's nodes. ``when``, ``pids``, ``threads``: per op (:func:`_op_keys`). Synthetic windows: none."""
    import numpy as np

    if ranges.is_empty() or when.is_empty() or _synthetic(ranges) or "thread" not in ranges.columns:
        return 0, []
    reach = pl.col("range_end").cum_max().shift(1).over("pid")
    if not ranges.sort("range_start").select((pl.col("range_start") < reach).fill_null(False).any()).item():
        return 0, []  # (the usual case: no two ranges of a process open at once)
    ops = pl.DataFrame({"t": when, "pid": pids, "thread": threads}).filter(pl.col("t").is_not_null())
    count, held = 0, set()
    for pid in ranges.get_column("pid").unique().to_list():
        own = ranges.filter(pl.col("pid").eq_missing(pid)).sort("range_start")
        if own.height < 2 or not _overlapping(own):
            continue
        on_threads = own.get_column("thread").drop_nulls().unique().implode()
        mine = ops.filter(
            (pl.col("pid").is_null() | pl.col("pid").eq_missing(pid))
            & ~pl.col("thread").is_in(on_threads).fill_null(False)
        )
        if mine.is_empty():
            continue
        t = mine.get_column("t").to_numpy()
        starts = np.sort(own.get_column("range_start").to_numpy())
        ends = np.sort(own.get_column("range_end").to_numpy())
        open_ranges = np.searchsorted(starts, t, "right") - np.searchsorted(ends, t, "right")
        times = np.sort(t[open_ranges >= 2])
        if not times.size:
            continue
        count += int(times.size)
        first = np.searchsorted(times, own.get_column("range_start").to_numpy(), "left")
        past = np.searchsorted(times, own.get_column("range_end").to_numpy(), "left")
        held.update(own.get_column("iteration").filter(pl.Series(past > first)).to_list())
    return count, sorted(held)


def _op_threads(ops: pl.DataFrame) -> pl.Series:
    """The host thread of each op of its own (not its launching call's): a CPU operator's (kind "operator":
    its ``stream`` is its thread) or a ``thread`` column's; null for device ops."""
    if "thread" in ops.columns:
        return ops.get_column("thread")
    kind = ops.schema.get("kind")
    if "stream" in ops.columns and kind is not None and kind != pl.Boolean:
        if isinstance(kind, pl.Enum) and "operator" not in kind.categories:
            # (no row can be an operator; the cast below would make a string of every op's kind to say so)
            return pl.Series("thread", [None] * ops.height, dtype=ops.schema["stream"])
        # an Enum holding "operator" compares its codes; other kinds as strings
        operator = (
            pl.col("kind") if isinstance(kind, pl.Enum) else pl.col("kind").cast(pl.String)
        ) == "operator"
        return ops.select(pl.when(operator).then(pl.col("stream")).alias("thread")).to_series()
    return pl.Series("thread", [None] * ops.height, dtype=pl.Int64)


def _assign(ops: pl.DataFrame, trace: Trace, ranges: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``ops`` (rows of ``trace.ops`` in order: any of its columns, with pid, correlation and start) with
    ``call`` (launching call, a row of the returned calls frame: ``call_start``, ``call_end``) and
    ``iteration``; rows in no iteration dropped, order kept."""
    iteration, call, calls, _ = _iterations_of(ops, trace.api, ranges)
    return ops.with_columns(call, iteration).filter(pl.col("iteration").is_not_null()), calls


def unassigned_ops(
    ops: pl.DataFrame,
    iteration: pl.Series,
    missing: pl.Series,
    ranges: pl.DataFrame,
    when: pl.Series | None = None,
    api: pl.DataFrame | None = None,
) -> dict[str, Any]:
    """The ops that count in no iteration, as the analysis reports them: ``launch_not_in_trace`` (a
    correlation id but no launching call in the trace: launched before the capture began, or, counted apart as
    ``inside_capture`` where ``api`` is given, launched during it with their call records lost:
    :func:`tracekit.analyzers.plausibility.inside_call_ids`) and
    ``outside_iterations`` (launched -- or, without a call, started -- outside every range: by a process
    that holds no range, ``other_process`` (a DataLoader worker, another server process: their ops may run
    during the iterations), else ``before`` the first, ``after`` the last, ``between`` them), each with
    ``ops`` (count) and ``busy_ms`` (union of their intervals). ``ops``: start, end; ``iteration``, ``missing``: per op (:func:`_iterations_of`);
    ``when``: each op's launch time (for before/after)."""
    none = iteration.is_null()
    out: dict[str, Any] = {}
    for key, mask in (("launch_not_in_trace", missing), ("outside_iterations", none & ~missing)):
        count = int(mask.sum())
        timed = mask & ~ops.select(_untimed()).to_series()
        entry: dict[str, Any] = {
            "ops": count,
            # (None: none of them has a start and end time, so their busy time is not known, not 0)
            "busy_ms": union_ns(ops["start"].filter(mask), ops["end"].filter(mask)) / 1e6
            if count and timed.any()
            else (None if count else 0.0),
        }
        if count and int(timed.sum()) < count:
            entry["untimed"] = count - int(timed.sum())
        if key == "launch_not_in_trace" and count and api is not None and not api.is_empty():
            inside = int(plausibility.inside_call_ids(ops, mask, api).sum())
            if inside:
                entry["inside_capture"] = inside
        if key == "outside_iterations" and count and when is not None and ranges.height:
            first, last = ranges["range_start"].min(), ranges["range_end"].max()
            elsewhere = _in_other_processes(ops, ranges)
            t = when.filter(mask & ~elsewhere)
            if elsewhere.any():
                entry["other_process"] = int((mask & elsewhere).sum())
            entry["before"] = int((t < first).sum())
            entry["after"] = int((t >= last).sum())
            entry["between"] = t.len() - entry["before"] - entry["after"]
        out[key] = entry
    return out


def _in_other_processes(ops: pl.DataFrame, ranges: pl.DataFrame) -> pl.Series:
    """Per op, whether its process (``pid``) holds none of ``ranges`` while the ranges name their processes:
    the op was launched (or ran) elsewhere, so where its time falls against the ranges says nothing."""
    if "pid" not in ranges.columns or "pid" not in ops.columns:
        return pl.Series("elsewhere", [False] * ops.height)
    pids = ranges.get_column("pid").drop_nulls().unique()
    if pids.is_empty():
        return pl.Series("elsewhere", [False] * ops.height)
    pid = ops.get_column("pid")
    return (pid.is_not_null() & ~pid.is_in(pids.implode())).alias("elsewhere")


def _by_iteration(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with its ``iteration`` column flagged sorted when it is (ops come in time order, so their
    iterations usually do): polars then groups by it without hashing, several times faster."""
    column = frame.get_column("iteration")
    if column.null_count() or not column.is_sorted():
        return frame
    return frame.with_columns(column.set_sorted())


def _windows(ranges: pl.DataFrame, ops: pl.DataFrame) -> pl.DataFrame:
    """Per iteration: GPU start/end and the effective latency window (see module docstring)."""
    per_iter = (
        _by_iteration(ops.select("iteration", "start", "end"))
        .group_by("iteration")
        .agg(pl.col("start").min().alias("gpu_start"), pl.col("end").max().alias("gpu_end"))
    )
    frame = (
        ranges.drop("gpu_start", "gpu_end", strict=False)
        .join(per_iter, on="iteration", how="left")
        .sort("iteration")
    )
    synchronized = pl.col("gpu_end").is_null() | (pl.col("gpu_end") <= pl.col("range_end"))
    previous_gpu_end = pl.col("gpu_end").cum_max().forward_fill().shift(1)
    if "pid" in frame.columns:
        # The previous GPU work is the same process's: ranks of one report (``nsys profile torchrun``) run
        # their iterations side by side, and another rank's GPU end says nothing of this one's queue.
        previous_gpu_end = previous_gpu_end.over("pid", _series_thread(frame))
    # A synchronized iteration's window is its range; an unsynchronized one starts where the previous GPU
    # work (of its process) ended (not before its range) and ends when its own GPU work does.
    window_start = (
        pl.when(synchronized)
        .then(pl.col("range_start"))
        .otherwise(pl.max_horizontal("range_start", previous_gpu_end))
    )
    return frame.with_columns(
        window_start.alias("window_start"),
        synchronized.alias("synchronized"),
        previous_gpu_end.alias("earlier_gpu_end"),
    ).with_columns(pl.max_horizontal("range_end", "gpu_end", "window_start").alias("window_end"))


def _synchronized_over_earlier_work(windows: pl.DataFrame) -> pl.DataFrame:
    """(iteration, overlap ns): the synchronized iterations whose range begins while an earlier iteration's
    GPU work (of its process) still runs, and for how long. Their window is their range (the time the user's
    timer sees), so that time is in two iterations' latencies, and in theirs it reads as idle, framework
    overhead, though the device was busy with the earlier work (hostile20: kernels of 1.4 ms spilling
    0.43 ms into the next 1-ms range had read 0.99 ms idle there, 0.97 dispatch, where the GPU was idle
    0.56 ms). Said by :func:`_overlap_said` over the analyzed iterations."""
    return (
        windows.filter(pl.col("synchronized") & pl.col("earlier_gpu_end").is_not_null())
        .select(
            "iteration",
            (pl.min_horizontal("earlier_gpu_end", "window_end") - pl.col("window_start")).alias("overlap"),
        )
        .filter(pl.col("overlap") > 0)
    )


def _overlap_said(over: pl.DataFrame, frame: pl.DataFrame) -> str | None:
    """The warning for the analyzed iterations (``frame``: ``index``) among ``over``
    (:func:`_synchronized_over_earlier_work`), or None when none of them is analyzed."""
    over = over.filter(pl.col("iteration").is_in(frame.get_column("index").implode()))
    if over.is_empty():
        return None
    from tracekit.analyzers.stability import index_span

    return (
        f"{over.height} of {frame.height} iterations (index {index_span(over['iteration'].to_list())}) begin "
        "while an earlier iteration's GPU work still runs: their windows, their ranges, overlap it "
        f"({over['overlap'].sum() / 1e6:.3f} ms in all, up to {over['overlap'].max() / 1e6:.3f} ms), so that "
        "time is in two iterations' latencies, and in theirs it reads as idle time (framework overhead) though "
        "the device was busy with the earlier work"
    )


def _series_thread(frame: pl.DataFrame) -> pl.Expr:
    """The thread of an iteration whose process runs iterations on several threads at once (a range starting
    before an earlier range of its process ended, on another thread: a thread pool serving requests side by
    side), else null: each such thread is a series of its own, whose previous GPU work is its own. Thread
    101's unsynchronized iteration [0.5, 1.5] ms had started at thread 100's GPU end (1.5 ms) and read 0.5 ms,
    100% busy, instead of 1.5 ms and 86.7%. Iterations one after another on changing threads stay one series
    (the previous GPU work, whichever thread launched it, is what this one queues behind). ``frame``: one row
    per iteration in iteration order, with ``pid``, ``range_start``, ``range_end`` (and ``thread``)."""
    if "thread" not in frame.columns or frame.height < 2:
        return pl.lit(None, pl.Int64)
    earlier_end = pl.col("range_end").cum_max().shift(1).over("pid", order_by="range_start")
    overlapping = (pl.col("range_start") < earlier_end).fill_null(False).any().over("pid")
    at_once = overlapping & (pl.col("thread").n_unique().over("pid") > 1)
    return pl.when(at_once).then(pl.col("thread").cast(pl.Int64))


#: Device work before its iteration's window that is said (:func:`_work_before_windows`): 1 µs, so that a
#: clock's rounding is not.
EARLY_WORK_MIN_NS = 1_000


def _work_before_windows(ops: pl.DataFrame, windows: pl.DataFrame) -> int:
    """The device time (ns, the union over each iteration's ops) that the iterations' ops ran before their
    own iteration's window began, which :func:`_clipped` cuts from every iteration's busy time: an
    unsynchronized iteration's window starts at its process's previous GPU end, and work of it that ran
    before, on another stream, while the host ran ahead, is no iteration's. ``ops`` with ``iteration`` (not
    null), ``start``, ``end``; ``windows`` as :func:`_clipped` takes them."""
    window_start = windows.get_column("window_start").gather(ops.get_column("iteration"))
    early = (
        ops.select("iteration", "start", pl.min_horizontal("end", window_start).alias("e"))
        .filter(pl.col("e") > pl.col("start"))
        .sort("iteration", "start")
    )
    if early.is_empty():
        return 0
    return int(early.select(newly_covered("start", "e", "iteration").sum()).item())


def _windows_in_order(windows: pl.DataFrame) -> bool:
    """Whether every window starts at or after the end of every earlier window (iterations one after the
    other, the usual case): then no idle gap lies in another iteration's window."""
    if windows.height < 2:
        return True
    return bool(
        windows.select(
            (pl.col("window_end").cum_max().shift(1) <= pl.col("window_start")).slice(1).all()
        ).item()
    )


def _clipped(ops: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """The iteration's op intervals clipped to its window (``s``, ``e``; empty ones dropped), in ``ops`` order.
    ``windows`` (:func:`_windows` of these ``ops``) has one row per iteration 0..n-1, in order. Only the starts
    need clipping: no op ends after its window (the window ends at or after the iteration's latest op end). An
    op without an end (not recorded) has no interval: it is dropped, not counted busy to the window's end; nor
    has an op without a start (not counted busy from the window's start)."""
    at = ops.get_column("iteration")
    return ops.select(
        "iteration",
        pl.when(pl.col("start").is_not_null())
        .then(pl.max_horizontal("start", windows.get_column("window_start").gather(at)))
        .alias("s"),
        pl.col("end").alias("e"),
    ).filter(pl.col("e") > pl.col("s"))


def _busy_segments(ops: pl.DataFrame, windows: pl.DataFrame) -> tuple[pl.Series, pl.Series, pl.Series]:
    """Merged busy intervals per iteration (union over streams), clipped to each iteration's window, as
    (iteration, start, end) sorted by (iteration, start); ops at most :data:`ROUNDING_NS` apart are one
    interval (timestamp rounding is not idle time): :func:`tracekit.model.merged_intervals`."""
    segments = merged_intervals(_clipped(ops, windows), "s", "e", by=["iteration"], tolerance=ROUNDING_NS)
    return segments.get_column("iteration").set_sorted(), segments.get_column("s"), segments.get_column("e")


def _idle_gaps(ops: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """Idle gaps per iteration (``ops``: the assigned ops; ``windows``: one row per iteration, in order): before
    each busy segment (:func:`_busy_segments`), and after the last one, inside the window; gaps of 0 ns left
    out. Sorted by (iteration, start_ns).

    The gap before a segment starts where the previous segment of the iteration ends (or at the window start:
    "leading"); each iteration then has one gap from its last segment's end to its window end ("trailing", or
    "empty" when the iteration has no op, "leading" when its ops have no length). The gaps are the window less
    the busy segments, so an iteration's busy time is its window's length less its gaps'."""
    import numpy as np  # (not at module level: numpy is imported on a thread while the trace is read)

    it, seg_start, seg_end = _busy_segments(ops, windows)
    iterations = windows.get_column("iteration")
    n_seg, n_win = it.len(), iterations.len()
    window_start = windows.get_column("window_start").cast(pl.Int64)
    if n_seg and iterations.len() and iterations[-1] - iterations[0] == n_win - 1:  # 0..n-1: the row
        rank = it.cast(pl.Int64) - iterations[0]
    else:
        rank = _search_sorted(iterations, it, side="left") if n_seg else pl.Series(dtype=pl.Int64)
    same = it.eq_missing(it.shift(1))
    # Where each gap goes in (iteration, start) order: each iteration's gaps before its segments, then its
    # one gap after them; every earlier iteration has exactly one of those.
    before_at = (pl.int_range(n_seg, dtype=pl.Int64, eager=True) + rank).to_numpy()
    # each gap before a segment starts at the previous segment's end, or at its window's start
    before_start = (
        pl.select(pl.when(same).then(seg_end.shift(1)).otherwise(window_start.gather(rank))).to_series()
        if n_seg
        else seg_end
    )
    del rank
    segments_upto = _search_sorted(it, iterations, side="right")
    after_at = (segments_upto + pl.int_range(n_win, dtype=pl.Int64, eager=True)).to_numpy()
    has_segment = segments_upto > segments_upto.shift(1, fill_value=0)
    last_end = seg_end.gather((segments_upto - 1).clip(lower_bound=0)) if n_seg else segments_upto
    no_ops = windows.get_column("gpu_end").is_null()
    position = pl.select(
        pl.when(same).then(1).otherwise(0).cast(pl.UInt8).alias("before"),
    ).to_series()
    after_position = pl.select(
        pl.when(has_segment).then(2).when(no_ops).then(3).otherwise(0).cast(pl.UInt8)
    ).to_series()

    def spread(before: pl.Series, after: pl.Series, dtype: Any) -> pl.Series:
        out = np.empty(n_seg + n_win, dtype=dtype)
        out[before_at] = before.to_numpy()
        out[after_at] = after.to_numpy()
        return pl.Series(out)

    # each column built, then what it was built from let go (the largest traces: 80 MB a column)
    after_start = pl.select(pl.when(has_segment).then(last_end).otherwise(window_start)).to_series()
    starts = spread(before_start, after_start, np.int64)
    del before_start, after_start, seg_end, last_end
    ends = spread(seg_start, windows.get_column("window_end").cast(pl.Int64), np.int64)
    del seg_start
    positions = GAP_POSITIONS.gather(spread(position, after_position, np.uint8))
    del same, position
    iteration = spread(it, iterations.cast(pl.Int64), np.int64).set_sorted()
    del it
    gaps = pl.DataFrame(
        {
            "iteration": iteration,
            "start_ns": starts,
            "end_ns": ends,
            "position": positions,
            "duration_ns": ends - starts,
        }
    )
    del iteration, starts, ends, positions
    return _positive(gaps)


def _positive(gaps: pl.DataFrame) -> pl.DataFrame:
    """The gaps longer than 0 ns (the frame itself, not a copy, when all are)."""
    positive = gaps.get_column("duration_ns") > 0
    return gaps if positive.all() else gaps.filter(positive)


def _per_iteration_sums(
    frame: pl.DataFrame, windows: pl.DataFrame, value: pl.Expr | None, alias: str
) -> pl.DataFrame:
    """Per iteration present in ``frame`` (sorted by ``iteration``): the sum of ``value`` over its rows
    (None: the row count), as (iteration, ``alias``). Found from the iteration boundaries by binary search
    and one cumulative sum, rather than by hashing every row."""
    iterations = windows.get_column("iteration")
    keys = frame.get_column("iteration")
    lo = _search_sorted(keys, iterations, side="left")
    hi = _search_sorted(keys, iterations, side="right")
    if value is None:
        total = hi - lo
    else:
        cum = pl.concat([pl.Series([0], dtype=pl.Int64), frame.select(value.cum_sum()).to_series()])
        total = cum.gather(hi) - cum.gather(lo)
    return pl.DataFrame({"iteration": iterations, alias: total}).filter(hi > lo)


def _launch_stats(trace: Trace, ranges: pl.DataFrame, ops: pl.DataFrame, calls: pl.DataFrame) -> pl.DataFrame:
    """Per iteration: launches, summed launch-call time, median launch latency and queue time (module
    docstring: first op of each launching call; queue time clamped at 0), and :data:`LAUNCH_NOTE_COLUMNS`.

    ``ops``, ``calls``: :func:`_assign`'s output (``ops`` in ``trace.ops`` order, with iteration, start, call)."""
    # (the three columns first, then the rows: not a copy of every column, the names too, of every launch)
    launches = trace.api.select("start", "pid", (pl.col("end") - pl.col("start")).alias("duration")).filter(
        _launch_mask(trace.api)
    )
    # a launch call counts in a range of its own process
    launches = launches.with_columns(
        _iteration_at(launches.get_column("start"), ranges, launches.get_column("pid"))
    )
    per_iteration = (
        _by_iteration(launches.select("iteration", "duration").filter(pl.col("iteration").is_not_null()))
        .group_by("iteration")
        .agg(pl.len().alias("launches"), (pl.col("duration").sum() / 1e3).alias("launch_api_us"))
    )
    del launches
    # The first op of each kernel or graph launch call (one call per (pid, correlation); its ops share its
    # iteration): not of copy or memset calls, which `launches` does not count either (nsys's kernexectrace
    # is over kernels too; HTA's launch delays take copies and memsets in by default).
    call = pl.col("call")
    launched = ops.select("iteration", "call", "start").filter(
        calls.get_column("call_launch").gather(ops.get_column("call")).fill_null(False)
    )
    in_call_order = launched.select((call >= call.shift(1)).slice(1).all()).item()
    if launched.height < 2 or in_call_order:
        # Each call's ops are consecutive and in start order: its first row is its first op.
        first_op = launched.filter(call.ne_missing(call.shift(1)))
    else:
        first_op = launched.group_by("call").agg(pl.col("iteration").first(), pl.col("start").min())
    del launched
    first_op = first_op.select(
        "iteration",
        "start",
        calls.get_column("call_start").gather(first_op.get_column("call")),
        calls.get_column("call_end").gather(first_op.get_column("call")),
    )
    queue = pl.col("start") - pl.col("call_end")
    latency = (
        _by_iteration(first_op)
        .group_by("iteration")
        .agg(
            ((pl.col("start") - pl.col("call_start")).median() / 1e3).alias("launch_latency_us"),
            (queue.clip(lower_bound=0).median() / 1e3).alias("queue_us"),
            # for the notes: launches measured, first ops that started before their call returned / began
            pl.len().alias("_first_ops"),
            (queue < 0).sum().alias("_in_call"),
            (pl.col("start") < pl.col("call_start")).sum().alias("_before_call"),
            (pl.col("start") - pl.col("call_start")).min().alias("_min_latency_ns"),
        )
    )
    return (
        ranges.select("iteration")
        .join(per_iteration, on="iteration", how="left")
        .join(latency, on="iteration", how="left")
    )


def _calls_without_end(trace: Trace, ranges: pl.DataFrame) -> pl.DataFrame:
    """(iteration, ``_launches_without_end``): the iterations holding API calls read as lasting 0 because they
    ended before they started (``meta[CALLS_WITHOUT_END]``: :class:`tracekit.model.Trace` mended them), with
    how many of those are launch calls (a call counts in a range of its own process, as launches do). Their
    launch-call time and queue time are not known (a launch call stamped to end 1 µs before it began had read
    as a free launch: 10 µs of launch time for 20, the queue 45 µs for 40, sure)."""
    listed = trace.meta.get(CALLS_WITHOUT_END)
    empty = pl.DataFrame(schema={"iteration": pl.Int64, "_launches_without_end": pl.UInt32})
    if not listed or trace.api.is_empty():
        return empty
    mended = pl.DataFrame(listed, schema={"pid": pl.Int64, "start": pl.Int64}, orient="row").unique()
    calls = (
        trace.api.filter(pl.col("end") == pl.col("start"))
        .join(mended, on=["pid", "start"], how="semi", nulls_equal=True)
        .select("start", "pid", "name")
    )
    if calls.is_empty():
        return empty
    calls = calls.with_columns(
        _iteration_at(calls.get_column("start"), ranges, calls.get_column("pid")),
        launch=_launch_mask(calls),
    ).filter(pl.col("iteration").is_not_null())
    return calls.group_by("iteration").agg(
        pl.col("launch").sum().cast(pl.UInt32).alias("_launches_without_end")
    )


#: Per-iteration helper columns of :func:`_launch_stats` read by :func:`launch_notes`, then dropped.
LAUNCH_NOTE_COLUMNS = ("_first_ops", "_in_call", "_before_call", "_min_latency_ns")


def before_call_counts(frame: pl.DataFrame) -> tuple[int, int, int] | None:
    """(first ops that started before their launch call began, first ops, the largest such lead in ns) of
    the analyzed iterations (``frame``: with :data:`LAUNCH_NOTE_COLUMNS`); None when no first op did. Read
    by :func:`launch_notes` and :func:`clock_doubts`."""
    if "_before_call" not in frame.columns:
        return None
    before = int(frame.get_column("_before_call").fill_null(0).sum())
    if not before:
        return None
    first_ops = int(frame.get_column("_first_ops").fill_null(0).sum())
    return before, first_ops, -int(frame.get_column("_min_latency_ns").min())


def launch_notes(
    frame: pl.DataFrame, before_call: tuple[int, int, int] | None, graph_launches: bool = True
) -> list[str]:
    """What the launch figures of the analyzed iterations need said (``frame``: with
    :data:`LAUNCH_NOTE_COLUMNS`; ``before_call``: :func:`before_call_counts` of it): first ops that started
    before their launch call returned (queue time counted as 0; ``graph_launches``: the trace holds graph
    launch calls, one of the reasons, said only then), and first ops that started before their call began
    (host and device clocks disagree)."""
    if "_first_ops" not in frame.columns:
        return []
    first_ops = int(frame.get_column("_first_ops").fill_null(0).sum())
    in_call = int(frame.get_column("_in_call").fill_null(0).sum())
    notes = []
    if in_call:
        notes.append(
            f"queue time: in {in_call} of {first_ops} launches the first op started before its launch call "
            "returned (the device took the work while the call was still submitting"
            + ("; a graph launch call returns after its first kernels ran" if graph_launches else "")
            + "): their queue time is 0, not negative"
        )
    if before_call is not None:
        before, _, lead_ns = before_call
        notes.append(
            f"in {before} of {first_ops} launches the first op started before its launch call began (by up to "
            f"{lead_ns / 1e3:.3f} us): impossible on one clock, so the host and device clocks disagree; launch "
            "latency and queue time include that offset"
        )
    return notes


#: Host and device clocks that disagree by more than this share of the median iteration latency (first ops
#: starting before their launch call began, by up to that much) make the verdict uncertain: busy time inside
#: the host-side windows, the idle gaps and the overhead all compare times of the two clocks.
CLOCK_DOUBT = 0.01


def _clock_lead_median(lead_ms: float, frame: pl.DataFrame) -> float | None:
    """The median iteration latency (ms) when a clock lead of ``lead_ms`` is more than :data:`CLOCK_DOUBT`
    of it (the verdict is then uncertain), else None (no median, or a lead within it)."""
    median = frame.get_column("latency_ms").median()
    if median is None or lead_ms <= CLOCK_DOUBT * float(median):  # type: ignore[arg-type]
        return None
    return float(median)  # type: ignore[arg-type]


def clock_doubts(before_call: tuple[int, int, int] | None, frame: pl.DataFrame) -> list[str]:
    """The "verdict uncertain" warning when first ops started before their launch call began (one clock
    cannot give that: the host's and the device's disagree) by more than :data:`CLOCK_DOUBT` of the median
    iteration latency (``frame``: the public columns, ``latency_ms``); below that the launch note says it."""
    if before_call is None or "latency_ms" not in frame.columns:
        return []
    before, first_ops, lead_ns = before_call
    lead_ms = lead_ns / 1e6
    latency_ms = _clock_lead_median(lead_ms, frame)
    if latency_ms is None:
        return []
    return [
        f"verdict uncertain: in {before} of {first_ops} launches the first op started before its launch call "
        f"began, by up to {lead_ms:.3f} ms ({lead_ms / latency_ms:.0%} of the median iteration): the host and "
        "device clocks disagree, so the GPU busy time inside the host-side iterations, the idle gaps and the "
        "framework overhead compare times of two clocks"
    ]


def late_clock_findings(counts: Any, frame: pl.DataFrame) -> tuple[list[str], list[str]]:
    """(notes, doubts) when device ops ended after the run that launched them had ended, though the run waits
    for its device work (``meta["ops_after_run"]``: [such ops, linked ops, the largest overrun in ns]; ONNX
    Runtime's Kernel events against their ``model_run``, :func:`tracekit.readers.ort.kernels_after_run`):
    their times were written on another clock, late. Weighed as :func:`parent_clock_findings` weighs ops
    written early (:func:`_two_clock_findings`)."""
    if not counts:
        return [], []
    after, linked, over_ns = (int(x) for x in counts)
    what = (
        f"{after} of {linked} kernels ended after the run that launched them had ended (by up to "
        f"{over_ns / 1e6:.3f} ms), though a run waits for its GPU work"
    )
    return _two_clock_findings(what, over_ns / 1e6, frame)


def parent_clock_findings(counts: Any, frame: pl.DataFrame) -> tuple[list[str], list[str]]:
    """(notes, doubts) when device ops started before the host event that launched them began, in a format
    that links ops to their launching host event without launch calls (``meta["ops_before_parent"]``:
    [such ops, linked ops, the largest lead in ns]; ONNX Runtime's Kernel events and their Node events,
    :func:`tracekit.readers.ort.kernels_before_parent`): one clock cannot give that
    (:func:`_two_clock_findings`)."""
    if not counts:
        return [], []
    before, linked, lead_ns = (int(x) for x in counts)
    what = (
        f"{before} of {linked} kernels started before the node that launched them began, by up to "
        f"{lead_ns / 1e6:.3f} ms"
    )
    return _two_clock_findings(what, lead_ns / 1e6, frame)


def _two_clock_findings(what: str, off_ms: float, frame: pl.DataFrame) -> tuple[list[str], list[str]]:
    """(notes, doubts) for device times ``off_ms`` off the host times that bound them (``what`` says how):
    beyond :data:`CLOCK_DOUBT` of the median iteration the verdict is uncertain, as in :func:`clock_doubts`;
    below, a note."""
    if "latency_ms" not in frame.columns:
        return [], []
    median_ms = _clock_lead_median(off_ms, frame)
    if median_ms is None:
        return [f"{what}: the GPU and CPU times disagree (by at most 1% of the median iteration)"], []
    return [], [
        f"verdict uncertain: {what} ({off_ms / median_ms:.0%} of the median iteration): the profile's GPU "
        "and CPU times are on different clocks, so the GPU busy time inside the iterations, the idle gaps and "
        "the framework overhead compare times of two clocks"
    ]


def warmup_to_skip(meta: dict[str, Any], ranges_found: int) -> int:
    """Warm-up iterations recorded inside the trace, to drop by default.

    ``tracekit collect`` names warm-up ranges ``warmup``, but a profiler that records from session start
    (ONNX Runtime's) also holds the warm-up runs as iterations; its sidecar says so with
    ``warmup_in_trace``, ``warmup_iterations`` and ``iterations``. Returns the warm-up count when the trace
    holds exactly warm-up + timed iterations, else 0 (:func:`warmup_problem` says why, when the sidecar says
    the warm-up is in the trace).
    """
    if warmup_problem(meta, ranges_found) is not None or meta.get("warmup_in_trace") is not True:
        return 0
    return int(meta["warmup_iterations"])


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def warmup_problem(meta: dict[str, Any], ranges_found: int) -> str | None:
    """Why the warm-up a sidecar says the trace holds (``warmup_in_trace``) is not dropped: a value that is no
    count (``"ten"``, -1, a ``"false"`` that is a string, not false), or counts that do not add up to the
    iterations found; None when nothing is said or it adds up."""
    flag = meta.get("warmup_in_trace")
    if flag is None or flag is False:
        return None
    warmup, iters = meta.get("warmup_iterations"), meta.get("iterations")
    if flag is not True:
        return f"the sidecar's warmup_in_trace is {flag!r}, not true or false"
    for key, value in (("warmup_iterations", warmup), ("iterations", iters)):
        if value is None:
            return f"the sidecar says warmup_in_trace but not {key}"
        if not _count(value):
            return f"the sidecar's {key} is {value!r}, not a count"
    if warmup and ranges_found != warmup + iters:
        return (
            f"the sidecar says the trace holds {warmup} warm-up and {iters} timed runs, but it holds "
            f"{ranges_found} iterations"
        )
    return None


@dataclass(frozen=True)
class Assignment:
    """Stage *assign* (:func:`assign`): the iteration ranges and every op's iteration, by launch (module
    docstring).

    ``choice``: the chosen ranges (:class:`tracekit.analyzers.ranges.RangeChoice`); ``device``: "gpu" or "cpu"
    (what the ops measured); ``ops``: every op of the trace in its order (``start``, ``end``, ``kind``: whether it
    counts as a kernel, ``call``: its launching call, a row of ``calls`` or null, ``iteration`` or null,
    ``no_launch``: launched before the capture); ``calls``: the launching calls
    (:data:`CALL_COLUMNS`); ``unassigned``: the ops that count in no iteration (None: every op is in one);
    ``warnings``: the trace's own and the assignment's."""

    choice: RangeChoice
    device: str
    ops: pl.DataFrame
    calls: pl.DataFrame
    unassigned: dict[str, Any] | None
    warnings: list[str]
    #: :func:`tracekit.analyzers.plausibility.lost_launch_findings` on ``ops``: (the doubt that the launch
    #: calls of ops without one were lost during the capture, how many ops it names, its evidence)
    lost_launches: tuple[str | None, int, str | None] = (None, 0, None)
    #: :func:`shared_iterations`: (ops that two or more iterations in flight hold by time, on a thread that
    #: runs none: whose they are is unknown; the iterations that hold them)
    shared: tuple[int, tuple[int, ...]] = (0, ())
    #: the range name asked for (``--range``; None: chosen by the default rules)
    range_asked: str | None = None
    #: ops placed by their calls whose own times lie more than :data:`LAUNCH_DELAY_MAX_NS` away: their start
    #: and end are taken as unknown (null) in ``ops``, and said (:func:`assign`)
    damaged_times: int = 0

    @property
    def ranges(self) -> pl.DataFrame:
        return self.choice.frame

    @property
    def everything_assigned(self) -> bool:
        return self.unassigned is None


def assign(trace: Trace, range_name: str | None = None, split_idle_ms: float | None = None) -> Assignment:
    """Stage *assign*: choose the iteration ranges (``range_name``, ``split_idle_ms``:
    :func:`tracekit.analyzers.ranges.select_ranges`) and assign every op to the iteration that launched it."""
    warnings: list[str] = list(trace.warnings)
    device = trace.meta.get("device") or ("cpu" if trace.ops["kind"].eq("operator").all() else "gpu")
    choice = select_ranges(trace, range_name, split_idle_ms)
    ranges = choice.frame
    warnings += choice.warnings
    if trace.ops.is_empty():
        warnings.append(f"{NO_ACTIVITY_WARNING}: only latency and CPU time are reported")
    # Only the columns the metrics use (at 10^7 ops each column is 80 MB).
    ops = trace.ops.select(
        "start",
        "end",
        "pid",
        "correlation",
        pl.col("kind").is_in(KERNEL_KINDS),
        thread=_op_threads(trace.ops),
    )
    iteration, call, calls, missing, keys, own_damaged = _placed(ops, trace.api, ranges)
    shared_ops, shared = shared_iterations(*(keys or _op_keys(ops, call, calls, missing)[:3]), ranges)
    del keys
    damaged = int(own_damaged.sum())
    if damaged:
        # (placed by their calls, their own times hours away: where and how they ran in the iteration is not
        # known, so they count as kernels of no known time -- untimed -- not as busy time hours after it ends)
        ops = ops.with_columns(pl.when(~own_damaged).then(pl.col(c)).alias(c) for c in ("start", "end"))
        warnings.append(
            f"{damaged} device ops are stamped more than an hour from their launch calls (one of the two times "
            "is damaged): they count in the iterations their calls lie in, with no known start or end time"
        )
    assigned = iteration.is_not_null()
    # (before the warnings on ops without a launching call: where their calls were lost during the capture,
    # those warnings say so, not "launched before the capture began", which the doubt contradicts)
    lost = plausibility.lost_launch_findings(trace, pl.DataFrame([missing.alias("no_launch")]))
    if choice.synthetic and lost[0] is not None:
        # windows cut from the device timeline hold those ops too: they count, and busy is not short by them
        lost = (None, *lost[1:])
    unassigned = None
    if not assigned.all():
        when = calls.get_column("call_start").gather(call).fill_null(ops.get_column("start"))
        unassigned = unassigned_ops(ops, iteration, missing, ranges, when, trace.api)
        warnings += _unassigned_warnings(unassigned, choice.synthetic, lost)
        del when
    warnings += _correlation_warnings(
        ops, assigned, missing, trace.api, choice.synthetic, lost, int(trace.meta.get(OPS_OF_FAR_CALLS) or 0)
    )
    warnings += gpu_annotation_check(
        trace, ranges, ops, iteration, choice.name, calls.get_column("call_thread").gather(call)
    )
    # Every op, those of no iteration too: a gap's next op is any op starting at its end (the one launched
    # first), so that its cause does not depend on which ops the windows hold.
    ops = ops.drop("pid", "correlation").with_columns(call, iteration, missing.alias("no_launch"))
    return Assignment(
        choice,
        device,
        ops,
        calls,
        unassigned,
        warnings,
        lost,
        (shared_ops, tuple(shared)),
        range_name,
        damaged,
    )


@dataclass(frozen=True)
class Measured:
    """Stage *gaps* (:func:`measure_gaps`): per analyzed iteration its window, busy time, idle gaps, kernels
    and launches (``iterations``: the public columns, :func:`_iteration_columns`), every idle gap
    (``gaps``, with the CPU context of the longest), the iterations dropped as warm-up (``skipped``), the
    launch notes, the warnings, and ``quiet``: no gap can overlap another op (every op in an iteration, inside
    its window, windows in order), so the attribution need not look for queued time."""

    iterations: pl.DataFrame
    gaps: pl.DataFrame
    skipped: int
    notes: list[str]
    warnings: list[str]
    quiet: bool
    #: warnings that make the verdict uncertain, found while measuring (:func:`clock_doubts`)
    doubts: list[str] = field(default_factory=list)
    #: the analyzed iterations' setup calls, as the CUDA-graph projection's caveat (None: none to speak of;
    #: :mod:`tracekit.analyzers.setup_calls`)
    setup_caveat: str | None = None
    #: why the CUDA-graph projection does not apply: the analyzed iterations capture graphs (None: they do not;
    #: :func:`_capture_findings`)
    capture_refusal: str | None = None
    #: the ops' clock unit when coarser than a nanosecond (1000: whole microseconds), and then per iteration
    #: the inner gaps within its rounding (:mod:`tracekit.analyzers.resolution`)
    time_unit_ns: int | None = None
    small_gaps: pl.DataFrame | None = None
    #: the launch calls of ops without one were lost during the capture (:func:`plausibility.lost_launches`):
    #: those ops are the iterations' own work, not work they did not launch (:func:`_foreign_work_findings`)
    launches_lost: bool = False
    #: the iterations whose setup calls :attr:`setup_caveat` speaks of (a report row whose means leave them
    #: out leaves the caveat out too)
    setup_iterations: tuple[int, ...] = ()
    #: why no iteration's busy time can be known (every one holds ops whose iteration is unknown:
    #: :func:`_shared_findings`): the no-verdict reason; their busy figures are withheld
    busy_unknown: str | None = None
    #: the :data:`LONGEST_GAPS` longest of :attr:`gaps`, longest first, as row numbers of it (``_longest``'s
    #: ``_row``), found once for the CPU context, the attribution's detail and the longest gaps shown; None:
    #: not found (then each finds them)
    longest_rows: pl.Series | None = None
    #: the analyzed iterations that hold device ops none of which has a start and an end time (not recorded):
    #: their busy time is unknown, not 0 (:func:`summarize_stages` withholds it; their kernels still count)
    untimed_iterations: tuple[int, ...] = ()
    #: the analyzed iterations half or more of whose device ops, but not all, have no start or end time (apart
    #: from :attr:`untimed_iterations`): their busy time counts the timed ones only, a lower bound, named;
    #: their idle causes and CUDA-graph projection are left out (:func:`_attribution_without`)
    mostly_untimed_iterations: tuple[int, ...] = ()
    #: the analyzed iterations that hold API calls read as lasting 0 because they ended before they started
    #: (``meta[CALLS_WITHOUT_END]``): their true length is unknown, so the launch figures of those holding such
    #: launch calls are withheld, and their idle causes and CUDA-graph projection are left out
    calls_without_end_iterations: tuple[int, ...] = ()
    #: those of :attr:`calls_without_end_iterations` whose calls of unknown end include launch calls (their
    #: launch-call and queue times are withheld; the others keep theirs)
    launches_without_end_iterations: tuple[int, ...] = ()


#: Device ops without a start or end time (not recorded) beyond this share of the iterations' ops make the
#: verdict uncertain: the busy time is short by however long they ran.
UNTIMED_DOUBT = 0.1


def _untimed() -> pl.Expr:
    """Per op: it has no start or no end time (not recorded), so it ran for an unknown time."""
    return pl.col("start").is_null() | pl.col("end").is_null()


#: A slow first half whose first iteration is within this factor of the half's median is flat (no cold first
#: step decaying): the slow-start warning then says a change of level is as likely as warm-up.
LEVEL_FLAT = 1.1

#: What the slow-start warning (:func:`_slow_start_warning`) says, for callers whose means already leave those
#: iterations out (the report's, after the stability rules)
SLOW_START_MARK = "iterations are a slow start ("


def _spread_warning(frame: pl.DataFrame, said: int) -> list[str]:
    """The iteration latencies' spread where the mean misleads (:func:`tracekit.analyzers.stability.
    spread_warning`: the iterations the stability rules drop move it by more than 5%, or the set is unstable);
    ``said``: the leading iterations the slow-start warning already names; ``frame``: the public columns
    (``latency_ms``, ``index``)."""
    from tracekit.analyzers.stability import spread_warning

    if frame.is_empty():
        return []
    text = spread_warning(frame["latency_ms"].to_list(), said=said, indices=frame["index"].to_list())
    return [] if text is None else [text]


def _slow_start_warning(
    frame: pl.DataFrame, name: str, trace: Trace | None = None, ranges: pl.DataFrame | None = None
) -> tuple[list[str], list[int]]:
    """(a warning, the iterations it names) when the first iterations of ``frame`` (analyzed, in order) are a
    slow start (:func:`tracekit.analyzers.stability.slow_start`: warm-up left in the trace, such as lazy module
    loading, compilation or cold caches) that moves the mean latency by more than 5%: the means, the medians and
    the verdict include it, and the warning gives the mean and median with and without it. When that whole first
    half is flat (:data:`LEVEL_FLAT`) a change of level during the run is said to be as likely as warm-up. Not
    when they are serving steps of another class than the rest (:func:`_other_step_class`: a prefill step
    before decode steps is longer by its work, not warm-up)."""
    from tracekit.analyzers.stability import slow_start

    latency = (frame["latency_ns"] / 1e6).to_list()
    k = slow_start(latency)
    if not k or (trace is not None and ranges is not None and _other_step_class(frame, k, trace, ranges)):
        return [], []
    first = ", ".join(f"{v:.3f}" for v in latency[: min(k, 3)]) + (", ..." if k > 3 else "")
    median = statistics.median(latency[k:])
    means = f"mean latency {sum(latency) / len(latency):.3f} ms, {sum(latency[k:]) / (len(latency) - k):.3f}"
    head = (
        f"the first {k} of {len(latency)} {name!r} {SLOW_START_MARK}{first} ms, against a median of "
        f"{median:.3f} ms for the rest)"
    )
    half = k >= len(latency) // 2  # the whole first half: the most the warm-up rule can name
    # (the medians and the verdict are over every analyzed iteration too: each figure is said with and
    # without them; "the medians and the verdict do not" had been said of medians that held them)
    medians = (
        f"the means, the medians and the verdict include them ({means} without them; median "
        f"{statistics.median(latency):.3f} ms, {median:.3f} without them)"
    )
    if half and latency[0] <= LEVEL_FLAT * statistics.median(latency[:k]):
        # a flat slow half, not a cold first step decaying (a real H200 compile-cudagraphs b8 trace: 10 of 20
        # at 1.36-1.49 ms, then 1.18-1.28): as likely a change of level during the run as warm-up
        cause = (
            "the whole first half of the run, at one level: warm-up left in the trace and a change of level "
            "during the run (GPU clocks, host load, another process) cannot be told apart"
        )
        advice = f"--skip {k} drops them, a longer run would tell which"
    else:
        cause, advice = (
            "warm-up in the trace (lazy loading, compilation, cold caches)",
            f"--skip {k} drops them",
        )
    said = f"{head}: {cause}; {medians}: {advice}"
    return [said], frame.get_column("iteration").head(k).to_list()


def _other_step_class(frame: pl.DataFrame, k: int, trace: Trace, ranges: pl.DataFrame) -> bool:
    """Whether some of the first ``k`` iterations of ``frame`` are serving steps of a class
    (:func:`tracekit.analyzers.steps.step_classes`) other than the rest's most common one: a prefill step (or a
    ProfilerStep holding one) before decode steps, whether or not a later prefill step follows. Three prefill
    steps' 10 ms before decode steps' 2 ms had been called a slow start, "warm-up in the trace", with
    ``--skip`` offered to drop the prefill work; so had one 10 ms prefill step first and another among ten 2 ms
    decode steps."""
    from tracekit.analyzers.steps import step_classes

    if "name" not in ranges.columns:
        return False
    analyzed = ranges.join(frame.select("iteration"), on="iteration", how="semi")
    classes = frame.select("iteration").join(step_classes(analyzed, trace), on="iteration", how="left")
    lead = set(classes["step_class"].head(k).drop_nulls().to_list())
    rest = classes["step_class"].slice(k).drop_nulls()
    # against the rest's most common class: a later prefill step among decode steps does not make a
    # leading one warm-up
    if lead - set(rest.mode().to_list() if rest.len() else []):
        return True
    # ONNX Runtime runs of another input shape than the rest's (GenAI's prompt run before its token runs)
    shapes = run_shape_of(trace, ranges)
    if shapes is None:
        return False
    shapes = frame.select("iteration").join(shapes, on="iteration", how="left")["shape"]
    lead_shapes = set(shapes.head(k).drop_nulls().to_list())
    rest_shapes = shapes.slice(k).drop_nulls()
    return bool(lead_shapes - set(rest_shapes.mode().to_list() if rest_shapes.len() else []))


def run_shape_of(trace: Trace, ranges: pl.DataFrame) -> pl.DataFrame | None:
    """``iteration``, ``shape`` (text, null: unknown) per range of ``ranges`` when the reader recorded the
    runs' input shapes (:data:`RUN_SHAPES`), matched by process, thread and start; else None."""
    found = trace.meta.get(RUN_SHAPES)
    if not isinstance(found, dict) or not {"pid", "thread", "range_start"} <= set(ranges.columns):
        return None
    shapes, runs = found.get("shapes"), found.get("runs")
    if not isinstance(shapes, list) or not isinstance(runs, list) or not runs:
        return None
    table = pl.DataFrame(
        {
            "pid": [r[0] for r in runs],
            "thread": [r[1] for r in runs],
            "range_start": [r[2] for r in runs],
            "shape": [None if r[3] is None else str(shapes[r[3]]) for r in runs],
        },
        schema={"pid": pl.Int64, "thread": pl.Int64, "range_start": pl.Int64, "shape": pl.String},
    ).unique(["pid", "thread", "range_start"], keep="first")
    keys = ranges.select(
        "iteration",
        pl.col("pid").cast(pl.Int64),
        pl.col("thread").cast(pl.Int64),
        pl.col("range_start").cast(pl.Int64),
    )
    joined = keys.join(
        table, on=["pid", "thread", "range_start"], how="left", nulls_equal=True, maintain_order="left"
    )
    return joined.select("iteration", "shape")


def _dims(shape: str) -> tuple[int, ...] | None:
    """``"[1,7,64]"`` -> (1, 7, 64), ``"[]"`` -> (); None when a dim is not a whole number (``"[1,,7]"``,
    ``"[1,N,64]"``)."""
    inner = shape.strip().removeprefix("[").removesuffix("]").strip()
    if not inner:
        return ()
    try:
        return tuple(int(d) for d in inner.split(","))
    except ValueError:
        return None


def generation_classes(shapes: list[str | None]) -> dict[str, str] | None:
    """``{shape: "prefill" | "decode"}`` when the runs' input shapes (in run order) are a generation loop's,
    else None: one shape (decode) has 1 in a dimension where every other shape (prefill) has more, all else
    equal, that dimension not the first (the batch axis of ``[batch, tokens, ...]``), the decode runs
    outnumber the others, the first run is not a decode run (a prompt comes before its tokens) and every
    other run but the last is followed by a decode run. ORT GenAI runs the model once on the prompt
    (``[batch, prompt tokens, hidden]``), then once per new token (``[batch, 1, hidden]``). Runs of batch 1
    then batch 8 (a sweep in one session) are not: a batch-8 run follows a batch-8 run; nor are a server's
    requests of batch 8 and batch 1 interleaved (they differ in the batch axis), nor 1-token requests before
    a longer one (no prompt run first). A profile started inside a generation is left unlabelled."""
    present = [s for s in shapes if s is not None]
    distinct = list(dict.fromkeys(present))
    if len(distinct) < 2:
        return None
    dims = {s: _dims(s) for s in distinct}
    if any(d is None for d in dims.values()):
        return None
    decode = None
    for d in distinct:
        others = [o for o in distinct if o != d]
        base = dims[d]
        axes = set()
        for o in others:
            other = dims[o]
            if len(other) != len(base):
                break
            differ = [j for j, (a, b) in enumerate(zip(base, other, strict=True)) if a != b]
            if len(differ) != 1 or base[differ[0]] != 1 or other[differ[0]] <= 1:
                break
            axes.add(differ[0])
        else:
            if len(axes) == 1 and axes != {0}:
                if decode is not None:
                    return None
                decode = d
    if decode is None or 2 * present.count(decode) <= len(present) or present[0] == decode:
        return None
    for now, after in zip(present, present[1:], strict=False):
        if now != decode and after != decode:  # a prompt run is followed by a token run
            return None
    return {s: ("decode" if s == decode else "prefill") for s in distinct}


#: How many input shapes :func:`_with_run_shapes` names (the most frequent), then "and N more".
LISTED_SHAPES = 5


def _with_run_shapes(
    trace: Trace, ranges: pl.DataFrame, frame: pl.DataFrame, bound_threshold: float
) -> tuple[pl.DataFrame, list[dict[str, Any]] | None, list[str], list[str], list[str]]:
    """(frame, step classes, notes, warnings, doubts) for ONNX Runtime runs of two or more input shapes
    (:func:`run_shape_of`) among the analyzed iterations (``frame``, ``index``). A generation loop's
    (:func:`generation_classes`: ORT GenAI's prompt run, then one run per token) gets the serving-step
    columns (``step_class`` prefill / decode, ``step_engine`` "ONNX Runtime"), so the step-class table and
    its verdict rule (:func:`_step_class_findings`) speak per class; other shapes (a batch sweep in one
    session) get a warning with each shape's count, median latency and utilization, and a doubt when their
    own verdicts differ and the shapes the headline does not speak for are :data:`STEP_CLASS_SHARE` of the
    runs or half their time. Unchanged when all runs are of one shape (the usual fixed-shape profile)."""
    from tracekit.analyzers.steps import STEP_CLASS, class_summary_json

    shapes = run_shape_of(trace, ranges)
    if shapes is None or frame.is_empty():
        return frame, None, [], [], []
    keyed = frame.join(shapes.rename({"iteration": "index"}), on="index", how="left", maintain_order="left")
    present = keyed.get_column("shape").to_list()
    distinct = list(dict.fromkeys(s for s in present if s is not None))
    if len(distinct) < 2:
        return frame, None, [], [], []
    # the most frequent shapes first (then in run order), at most LISTED_SHAPES of them named
    ranked = sorted(distinct, key=lambda x: -present.count(x))
    more = f", and {len(ranked) - LISTED_SHAPES} more shapes" if len(ranked) > LISTED_SHAPES else ""
    counted = ", ".join(f"{present.count(s)} of {s}" for s in ranked[:LISTED_SHAPES]) + more
    what = (
        f"the {frame.height} analyzed runs are of {len(distinct)} input shapes (the first input most of a run's "
        f"nodes take): {counted}"
    )
    labels = generation_classes(present)
    if labels is not None:
        frame = keyed.with_columns(
            pl.when(pl.col("shape").is_not_null()).then(pl.lit("ONNX Runtime")).alias("step_engine"),
            pl.col("shape").replace_strict(labels, default=None, return_dtype=STEP_CLASS).alias("step_class"),
            pl.lit(None, pl.Int64).alias("context_requests"),
            pl.lit(None, pl.Int64).alias("generation_requests"),
        ).drop("shape")
        decode = next(s for s, c in labels.items() if c == "decode")
        note = (
            f"{what}: a generation loop (ONNX Runtime GenAI's prompt runs, then one run per new token: {decode}), "
            "so each run's step_class says prefill or decode, and the step-class table gives each its own figures"
        )
        return frame, class_summary_json(frame), [note], [], []
    per_shape = (
        keyed.filter(pl.col("shape").is_not_null())
        .group_by("shape", maintain_order=True)
        .agg(
            pl.len().alias("runs"),
            pl.col("latency_ms").median().alias("latency"),
            pl.col("gpu_utilization").median().alias("median"),
            # integer ns (the latencies are whole ns): a float ms sum depends on the order the shapes
            # appear in (0.3 + 0.1 + 0.2 > 0.6), and at exactly half the rule below flipped with it
            _ns_sum("latency_ms").alias("time"),
        )
    )
    parts, bounds = [], []
    for shape, runs, latency, median, _ in per_shape.iter_rows():
        bound = bound_of(median, bound_threshold) if median is not None else None
        bounds.append(bound)
        tail = f", {median:.1%} utilization, {bound}-bound" if bound is not None else ""
        if shape in ranked[:LISTED_SHAPES]:
            parts.append((ranked.index(shape), f"{shape} x{runs}: median latency {latency:.3f} ms{tail}"))
    listed = "; ".join(text for _, text in sorted(parts)) + ("; ..." if more else "")
    said = (
        f"{what}; per shape: {listed}: the medians, percentiles and verdict are over all of them, "
        "runs of different work; a profile per input shape measures each"
    )
    known = [b for b in bounds if b is not None]
    if len(set(known)) < 2 or "gpu_utilization" not in frame.columns:
        return frame, None, [], [said], []
    headline = bound_of(frame.get_column("gpu_utilization").median(), bound_threshold)  # type: ignore[arg-type]
    other = per_shape.filter(pl.Series([b is not None and b != headline for b in bounds]))
    total = per_shape.get_column("time").sum()
    if other["runs"].sum() >= STEP_CLASS_SHARE * per_shape["runs"].sum() or (
        total and 2 * other["time"].sum() >= total
    ):
        doubt = (
            f"verdict uncertain: {said}; the shapes get opposite verdicts from their own median utilization, so "
            "the median over all runs says one shape's, or a mix of them"
        )
        return frame, None, [], [], [doubt]
    return frame, None, [], [said], []


def leading_iterations(ranges: pl.DataFrame, skip: int) -> list[int]:
    """The iterations ``--skip skip`` drops: the first ``skip``, or, when the iterations come from several
    processes (two ranks, or a pipeline's stages, in one capture: each runs its own warm-up), the first
    ``skip`` of each process's, in start order. ``ranges``: the chosen ranges (``iteration`` in start order,
    ``pid`` where known)."""
    if "pid" not in ranges.columns or ranges.get_column("pid").drop_nulls().n_unique() < 2:
        return list(range(min(skip, ranges.height)))
    ordered = ranges.select("iteration", "pid").sort("iteration")
    first = ordered.filter(pl.int_range(pl.len()).over("pid") < skip)
    return first.get_column("iteration").to_list()


def measure_gaps(
    trace: Trace,
    assignment: Assignment,
    skip: int | None = 0,
    bound_threshold: float = FRAMEWORK_BOUND_UTILIZATION,
) -> Measured:
    """Stage *gaps*: each iteration's window, busy time (the union of its ops), idle gaps, kernels and launch
    statistics (module docstring), then ``skip`` leading iterations dropped (None: the run's warm-up when the
    trace records it, :func:`warmup_to_skip`). Raises NoActivityError when ``skip`` drops every iteration."""
    path = trace.meta.get("path")
    ranges, name = assignment.ranges, assignment.choice.name
    has_ops, has_api = not trace.ops.is_empty(), not trace.api.is_empty()
    warnings: list[str] = []
    ops = assignment.ops.select("start", "end", "kind", "call", "iteration")
    if not assignment.everything_assigned:
        ops = ops.filter(pl.col("iteration").is_not_null())
    if has_ops and ops.is_empty():
        warnings.append(f"{NO_WORK_INSIDE_WARNING} the {name!r} ranges")
    # (an op without a start has no end either: the end line counts those with a start only; the ops whose
    # damaged times assign() took as unknown were said there)
    counts = ops.select(
        start=pl.col("start").null_count() - assignment.damaged_times,
        end=(pl.col("start").is_not_null() & pl.col("end").is_null()).sum(),
    ).row(0, named=True)
    # (a reader that said so already, for every such op of the trace: one line for one fact)
    said = int(trace.meta.get(OPS_WITHOUT_END) or 0)
    said_all = said and said >= trace.ops.select(_untimed().sum()).item()
    for missing, count in counts.items():
        if count > 0 and not said_all:
            warnings.append(
                f"{count} device ops in the iterations have no {missing} time (not recorded): they count as "
                "kernels but not in GPU busy time, which is short by however long they ran"
            )
    untimed = ops.select(_untimed().sum()).item() if ops.height else 0
    untimed_iterations: tuple[int, ...] = ()
    mostly_untimed: tuple[int, ...] = ()
    doubt_base = ops.height
    if untimed:
        per = (
            ops.filter(pl.col("iteration").is_not_null())
            .group_by("iteration")
            .agg(pl.len().alias("ops"), _untimed().sum().alias("untimed"))
        )
        # (iterations none of whose ops was timed are withheld, not doubted: the doubt is for the others.
        # Those half or more of whose ops were not timed are named: three untimed kernels beside one timed copy
        # of 10 µs had read busy 0.01 ms, 1% utilized, said nowhere)
        whole = per.filter(pl.col("untimed") == pl.col("ops"))
        untimed_iterations = tuple(sorted(whole.get_column("iteration").to_list()))
        mostly = per.filter((2 * pl.col("untimed") >= pl.col("ops")) & (pl.col("untimed") < pl.col("ops")))
        mostly_untimed = tuple(sorted(mostly.get_column("iteration").to_list()))
        if untimed_iterations and untimed < ops.height:
            untimed -= int(whole.get_column("untimed").sum())
            doubt_base -= int(whole.get_column("ops").sum())
    untimed_doubt = (
        [
            f"verdict uncertain: {untimed} of {doubt_base} device ops in the iterations "
            f"({untimed / doubt_base:.0%}) have no start or end time: the GPU busy time and the utilization are "
            "short by however long they ran"
        ]
        if untimed and untimed >= UNTIMED_DOUBT * doubt_base and untimed < doubt_base
        else []
    )
    if assignment.choice.synthetic and has_ops and not untimed_doubt:
        untimed_doubt = _untimed_outside_windows(trace.ops)
    windows = _windows(ranges, ops)
    spilled = _synchronized_over_earlier_work(windows) if has_ops else None
    # (per op only where some iteration's first op started before its window: the windows say so at once)
    early = has_ops and windows.select((pl.col("gpu_start") < pl.col("window_start")).any()).item()
    early_ns = _work_before_windows(ops, windows) if early else 0
    if early_ns >= EARLY_WORK_MIN_NS:
        warnings.append(
            f"{early_ns / 1e6:.3f} ms of the iterations' device work ran before its own iteration's window "
            "began (an unsynchronized iteration's window starts at its process's previous GPU end; the host ran "
            "ahead and this work ran meanwhile, on another stream): it counts in no iteration's busy time, and "
            "the earlier iteration's idle time holds it"
        )
    # No gap can overlap another op when every op is in an iteration, inside its window, and the windows
    # follow each other: then no gap's device-side time is queued behind other work, and nothing is searched.
    quiet = (
        assignment.everything_assigned
        and _windows_in_order(windows)
        and bool(windows.select((pl.col("gpu_start") >= pl.col("window_start")).all()).item())
    )
    # (group_by works on whole frames: give it only the columns it needs)
    kernels = (
        _by_iteration(ops.select("iteration").filter(ops.get_column("kind")))
        .group_by("iteration")
        .agg(pl.len().alias("kernels"))
    )
    launch = _launch_stats(trace, ranges, ops, assignment.calls)
    without_end = _calls_without_end(trace, ranges)
    if without_end.height:  # (their launch-call and queue times are not known: withheld)
        launch = (
            launch.join(without_end, on="iteration", how="left")
            .with_columns(
                pl.when(pl.col("_launches_without_end").fill_null(0) == 0).then(pl.col(c)).alias(c)
                for c in ("launch_api_us", "queue_us")
            )
            .drop("_launches_without_end")
        )
    gaps = _idle_gaps(ops, windows)
    holding_ops = ops.get_column("iteration").drop_nulls().unique()  # (timed or not)
    del ops
    # The gaps are the window less the busy time: busy = latency - the gaps' length.
    idle = _per_iteration_sums(gaps, windows, pl.col("duration_ns"), "idle_ns")
    if not has_ops:
        gaps = gaps.clear()
    gap_stats = _per_iteration_sums(gaps, windows, None, "idle_gaps")
    latency = pl.col("window_end") - pl.col("window_start")
    frame = (
        windows.join(idle, on="iteration", how="left")
        .join(gap_stats, on="iteration", how="left")
        .join(kernels, on="iteration", how="left")
        .join(launch, on="iteration", how="left")
        .sort("iteration")
        .with_columns(
            latency.alias("latency_ns"),
            (latency - pl.col("idle_ns").fill_null(0)).alias("busy_ns"),
            pl.col("idle_gaps").fill_null(0),
            pl.col("kernels").fill_null(0),
        )
        .drop("idle_ns")
    )
    total = frame.height
    skip_given = skip is not None
    skip_notes: list[str] = []
    asked = assignment.range_asked
    # the ranges the sidecar counts: its own ('iteration'), or those the default takes whenever the format
    # declares them (ONNX Runtime's model_run: --range model_run names the default's own ranges)
    counted = (None, trace.meta.get("range"), trace.meta.get("default_range"))
    if skip is None and (assignment.choice.synthetic or asked not in counted):
        # the sidecar counts its own ranges: not these (--range NAME, --split-idle windows)
        skip = 0
        if trace.meta.get("warmup_in_trace") is True:
            warnings.append(
                f"the sidecar's warm-up runs are counted in its {trace.meta.get('range') or 'iteration'!r} "
                f"ranges, not in these {name!r} ones: none dropped (--skip N drops the first N)"
            )
    if skip is None:
        skip = warmup_to_skip(trace.meta, total)
        problem = warmup_problem(trace.meta, total)
        if problem:
            warnings.append(f"{problem}: no warm-up dropped (--skip N drops the first N iterations)")
        if skip:
            # (a note, not a warning: the run's own metadata says these are warm-up, as collect records them)
            first = "the first iteration" if skip == 1 else f"the first {skip} iterations"
            skip_notes.append(
                f"dropped {first}: the run's warm-up, recorded in this trace "
                f"(--skip 0 keeps {'it' if skip == 1 else 'them'})"
            )
        elif trace.meta.get("format") == "ort" and "warmup_in_trace" not in trace.meta and total > 1:
            warnings.append(
                "an ONNX Runtime profile records every run since its session began, warm-up runs included, "
                f"and nothing beside this one says how many of its {total} runs were warm-up: none are "
                "dropped (--skip N drops the first N)"
            )
    if skip:
        dropped_its = leading_iterations(ranges, skip)
        if len(dropped_its) >= total and not skip_given:  # (the sidecar's count, not the user's --skip)
            raise NoActivityError(
                f"the sidecar says the first {skip} of the {total} {name!r} iterations are warm-up "
                f"(warmup_iterations {skip}, iterations {trace.meta.get('iterations')!r}): no timed iteration "
                "is left (--skip 0 analyzes them all)",
                path,
            )
        if len(dropped_its) >= total:
            raise NoActivityError(f"--skip {skip} drops all {total} {name!r} iterations", path)
        if len(dropped_its) > skip:  # (several processes' series: each one's first iterations)
            warnings.append(
                f"--skip {skip}: the iterations come from {ranges.get_column('pid').n_unique()} processes, so "
                f"the first {skip} of each process were dropped ({len(dropped_its)} in all)"
            )
        frame = frame.filter(~pl.col("iteration").is_in(dropped_its))
        gaps = gaps.filter(~pl.col("iteration").is_in(dropped_its))
    left_out = _left_out_last(trace, assignment, frame)
    if left_out is not None:
        dropped, why = left_out
        warnings.append(why)
        frame = frame.filter(pl.col("iteration") != dropped)
        gaps = gaps.filter(pl.col("iteration") != dropped)
    shared_said, shared_doubt, unknown, busy_unknown = _shared_findings(assignment, frame, name)
    busy_unknown = busy_unknown or _graph_replay_reason(trace, ranges, frame)
    warnings += shared_said
    partial_said, partial = _partial_run_findings(trace, ranges, frame, name)
    warnings += partial_said
    unknown = [*unknown, *partial]
    if unknown:
        frame = frame.filter(~pl.col("iteration").is_in(unknown))
        gaps = gaps.filter(~pl.col("iteration").is_in(unknown))
    slow_start, slow_iterations = (
        _slow_start_warning(frame, name, trace, ranges) if not skip_given else ([], [])
    )
    before_call = before_call_counts(frame)
    notes = skip_notes + launch_notes(
        frame, before_call, not calls_named(trace.api, GRAPH_LAUNCH_NAMES).is_empty()
    )
    # (the notes: where the Python tracer shows the host's silences were framework code, the verdict stands)
    implausible, answered = plausibility.findings(trace, frame, bound_threshold)
    warnings += answered
    lost = assignment.lost_launches[0]
    implausible += [lost] if lost else []
    capture_notes, capture_doubts, capture_refusal, capturing = _capture_findings(trace, ranges, frame)
    warnings += capture_notes
    frame = _iteration_columns(frame, has_api, has_ops)
    overlap = None if spilled is None or spilled.is_empty() else _overlap_said(spilled, frame)
    if overlap is not None:  # (over the analyzed iterations: after --skip and a cut-off last one)
        warnings.append(overlap)
    doubts = untimed_doubt + clock_doubts(before_call, frame) + implausible + capture_doubts + shared_doubt
    doubts += _pauses_in_windows(gaps, frame.height, assignment.choice.synthetic)
    parent_notes, parent_doubts = parent_clock_findings(trace.meta.get("ops_before_parent"), frame)
    notes += parent_notes
    doubts += parent_doubts
    late_notes, late_doubts = late_clock_findings(trace.meta.get("ops_after_run"), frame)
    notes += late_notes
    doubts += late_doubts
    setup_notes, setup_doubts, setup_caveat, setting_up = _setup_findings(
        trace, ranges, windows, frame, assignment.choice.synthetic
    )
    warnings += setup_notes
    if not set(slow_iterations) <= set(setting_up) | set(capturing):
        # (a slow start that the setup calls or a graph capture explain is said once, by their rule)
        warnings += slow_start
    warnings += _spread_warning(frame, len(slow_iterations) if slow_start else 0)
    doubts += setup_doubts
    unsynced = int((~frame["synchronized"]).sum())
    if unsynced:
        warnings.append(
            f"{unsynced} of {frame.height} iterations are unsynchronized (GPU work outlives the range): "
            "latency is the steady-state period max(range end, GPU end) - max(range start, previous GPU end)"
        )
    # An 'empty' gap (the whole window) and no op at all: an iteration whose ops have no start or end has an
    # 'empty' gap too, and so has one of untimed whole-graph executions (no kernel); both hold ops, and neither
    # is counted (two such iterations had been said to hold no device op, 'utilization 0', beside their
    # withheld busy time).
    empty_gaps = gaps.filter(pl.col("position") == "empty").get_column("iteration") if has_ops else None
    empty = (
        int(
            frame.filter(
                pl.col("index").is_in(empty_gaps.implode()) & ~pl.col("index").is_in(holding_ops.implode())
            ).height
        )
        if empty_gaps is not None and empty_gaps.len()
        else 0
    )
    if empty:
        warnings.append(
            f"{empty} of {frame.height} iterations hold no device op: each is one idle gap of position "
            "'empty' (its whole window), utilization 0"
        )
    unit = _time_unit_ns(trace.ops) if has_ops else None
    small_gaps = resolution.small_gaps_per_iteration(gaps, unit) if unit is not None else None
    if untimed_iterations:
        # (their gaps are withheld with their busy time: left in, they had taken places among the longest gaps
        # found here, and the list shown after withholding them had gaps without their causes)
        gaps = gaps.filter(~pl.col("iteration").is_in(list(untimed_iterations)))
    gaps, longest_rows = _with_cpu_context(trace, gaps, ranges)
    return Measured(
        frame,
        gaps,
        skip or 0,
        notes,
        warnings,
        quiet,
        doubts,
        setup_caveat,
        capture_refusal,
        unit,
        small_gaps,
        assignment.lost_launches[1] > 0,
        tuple(setting_up),
        busy_unknown,
        longest_rows,
        tuple(sorted(set(untimed_iterations) & set(frame.get_column("index").to_list()))),
        tuple(sorted(set(mostly_untimed) & set(frame.get_column("index").to_list()))),
        tuple(
            sorted(
                set(without_end.get_column("iteration").to_list()) & set(frame.get_column("index").to_list())
            )
        ),
        tuple(
            sorted(
                set(without_end.filter(pl.col("_launches_without_end") > 0).get_column("iteration").to_list())
                & set(frame.get_column("index").to_list())
            )
        ),
    )


def _pauses_in_windows(gaps: pl.DataFrame, windows: int, synthetic: bool) -> list[str]:
    """The doubt where windows cut from the work itself (one over a trace without ranges, or ``--split-idle``'s)
    hold an idle gap longer than :data:`LAUNCH_DELAY_MAX_NS`: a pause of the program (or a clock that jumped),
    not an iteration's idle time. Two halves of a trace 5 h apart had made one window of 18,000,003 ms,
    'framework', sure of it. A range the program drew may last through a silence (an idle server's step): its
    windows are not judged so. ``windows``: how many are analyzed."""
    if not synthetic or gaps.is_empty():
        return []
    long = gaps.filter((pl.col("end_ns") - pl.col("start_ns")) > LAUNCH_DELAY_MAX_NS)
    if long.is_empty():
        return []
    longest = long.select((pl.col("end_ns") - pl.col("start_ns")).max()).item()
    holding = long.get_column("iteration").n_unique()
    return [
        f"verdict uncertain: {holding} of the {windows} windows cut from the trace's work (it has no ranges, or "
        f"--split-idle cut them) hold idle time of more than an hour in one gap (the longest {longest / HOUR_NS:,.1f} "
        "hours): a pause of the program or a clock that jumped, not an iteration's idle time, so their latency and "
        "utilization are not an iteration's (--split-idle MS cuts windows at idle gaps of MS ms)"
    ]


def _untimed_outside_windows(ops: pl.DataFrame) -> list[str]:
    """The doubt where synthetic windows (one over the trace, or ``--split-idle``'s) are cut around the timed
    device ops of a trace (``ops``, all of them) of which at least :data:`UNTIMED_DOUBT` have no start or end
    time: those ran for an unknown time, somewhere the windows cannot say (they had been 'outside every
    iteration', and the windows around the timed copies alone 'compute', sure of it)."""
    untimed = int(ops.select(_untimed().sum()).item())
    if not untimed or untimed < UNTIMED_DOUBT * ops.height:
        return []
    return [
        f"verdict uncertain: {untimed} of the trace's {ops.height} device ops ({untimed / ops.height:.0%}) have no "
        "start or end time, and the windows are cut around the timed ones: their busy time and utilization "
        "leave those out"
    ]


#: Ops whose times :func:`_time_unit_ns` looks at first: one of them off a whole microsecond answers at once.
UNIT_PROBE_OPS = 4096


def _time_unit_ns(ops: pl.DataFrame) -> int | None:
    """:func:`tracekit.analyzers.resolution.time_unit_ns` of ``ops``: None at once when one of the first
    :data:`UNIT_PROBE_OPS` timed ops is off a whole microsecond (a nanosecond clock, the usual case: then not
    every op is on one, whatever the rest), else the whole check."""
    head = ops.head(UNIT_PROBE_OPS).select("start", "end").drop_nulls()
    if not head.select(
        (
            (pl.col("start") % resolution.MICROSECOND_NS == 0)
            & (pl.col("end") % resolution.MICROSECOND_NS == 0)
        ).all()
    ).item():
        return None
    return resolution.time_unit_ns(ops)


def _shared_findings(
    assignment: Assignment, frame: pl.DataFrame, name: str
) -> tuple[list[str], list[str], list[int], str | None]:
    """(warnings, doubts, the iterations to leave out, the no-verdict reason) for the analyzed iterations
    (``frame``) that hold ops whose iteration cannot be known (:func:`shared_iterations`): their busy time,
    idle gaps and utilization would count those ops by a guess (the later-starting iteration), so they are
    left out while others remain; when every analyzed iteration is among them, they stay with their latency
    and CPU time, and their busy figures and the verdict are withheld (:attr:`Measured.busy_unknown`)."""
    count, shared = assignment.shared
    if not count:
        return [], [], [], None
    shared_set = set(shared)
    held = [i for i in frame.get_column("iteration").to_list() if i in shared_set]
    if not held:
        return [], [], [], None
    what = (
        f"{count} op{'s' if count != 1 else ''} ran on a thread that runs no {name!r} range (a thread pool: ONNX Runtime's inter-op "
        "threads under ORT_PARALLEL run every caller's nodes), or without a launching call, while two or more "
        f"{name!r} ranges of their process were open (concurrent calls): which one each belongs to is not in "
        "the trace"
    )
    if len(held) < frame.height:
        return (
            [
                f"left out {len(held)} of {frame.height} {name!r} iterations whose busy time cannot be known: "
                f"{what}; the other {frame.height - len(held)} are analyzed"
            ],
            [],
            held,
            None,
        )
    reason = (
        f"no framework-/compute-bound verdict: {what}, and every analyzed iteration holds some of them, so no "
        "iteration's busy time, idle gaps or utilization can be known (latency and CPU time are shown); for the "
        "verdict, profile one caller at a time, or a session with execution_mode ORT_SEQUENTIAL (its nodes run "
        "on the caller's thread)"
    )
    return [], [], [], reason


def _runs_of(found: Any, ranges: pl.DataFrame, frame: pl.DataFrame) -> list[int]:
    """The analyzed iterations (``frame``) whose range is one of a reader's runs (``found["runs"]``: [pid,
    thread, start ns] each, as :data:`GRAPH_REPLAYS` and :data:`PARTIAL_RUNS` list them)."""
    if not isinstance(found, dict) or not isinstance(found.get("runs"), list | tuple) or frame.is_empty():
        return []
    if not {"pid", "thread", "range_start"} <= set(ranges.columns):
        return []
    # only well-formed [pid, thread, start] rows of int64 ints count (a cache entry of another version, or a
    # hand-edited one, may hold anything): what cannot be read is no evidence
    rows = [
        list(r[:3])
        for r in found["runs"]
        if isinstance(r, list | tuple)
        and len(r) >= 3
        and all(isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63 for v in r[:3])
    ]
    if not rows:
        return []
    runs = pl.DataFrame(
        rows,
        schema={"pid": pl.Int64, "thread": pl.Int64, "range_start": pl.Int64},
        orient="row",
    )
    analyzed = ranges.join(frame.select("iteration"), on="iteration", how="semi").select(
        "iteration",
        pl.col("pid").cast(pl.Int64),
        pl.col("thread").cast(pl.Int64),
        pl.col("range_start").cast(pl.Int64),
    )
    held = analyzed.join(runs, on=["pid", "thread", "range_start"], how="semi", nulls_equal=True)
    return sorted(held.get_column("iteration").to_list())


def _partial_run_findings(
    trace: Trace, ranges: pl.DataFrame, frame: pl.DataFrame, name: str
) -> tuple[list[str], list[int]]:
    """(the warning, the iterations to leave out) for the analyzed ONNX Runtime runs that stopped part-way
    (:data:`PARTIAL_RUNS`): a run that failed at a node is no inference, and its latency and busy time would
    be counted as one's (a real 1.32 profile's failed run was the slowest of five). They are left out while
    whole runs remain; when every analyzed run is one, they stay, and the warning says so."""
    held = _runs_of(trace.meta.get(PARTIAL_RUNS), ranges, frame)
    if not held:
        return [], []
    what = (
        "did not complete (failed at a node, the last one included, were stopped by RunOptions.terminate, or "
        "fetched fewer outputs; the reader's warning says which)"
    )
    if len(held) < frame.height:
        return [
            f"left out {len(held)} of {frame.height} {name!r} iterations that {what}: not whole inferences; the "
            f"other {frame.height - len(held)} are analyzed"
        ], held
    return [f"every analyzed {name!r} iteration {what}: none is a whole inference"], []


def _graph_replay_reason(trace: Trace, ranges: pl.DataFrame, frame: pl.DataFrame) -> str | None:
    """The no-verdict reason when some analyzed iterations (``frame``) are ONNX Runtime runs that replay a
    captured graph (:data:`GRAPH_REPLAYS`): ORT records nothing of their work, so their busy time reads 0 (a
    hand-built CUDA-graph profile had read "framework-bound, median utilization 0%"); None otherwise."""
    count = len(_runs_of(trace.meta.get(GRAPH_REPLAYS), ranges, frame))
    if not count:
        return None
    return (
        f"no framework-/compute-bound verdict: {count} of the {frame.height} analyzed runs replay a captured graph "
        "(the CUDA EP's enable_cuda_graph, or another provider's graph capture): ONNX Runtime records the run and "
        "nothing of its work, no node and no kernel, so no run's busy time is known (latency and CPU time are "
        "shown; the runs before the capture are memory allocation and the capture itself); for the verdict, "
        "profile the GPU (tracekit collect --profiler nsys; nsys profile -t cuda,nvtx)"
    )


def _left_out_last(trace: Trace, assignment: Assignment, frame: pl.DataFrame) -> tuple[int, str] | None:
    """(the iteration, the warning) when the last analyzed iteration of ``frame`` is not one of the run's: the
    step torch.profiler stopped in (:func:`_closing_profiler_step`), or, of two or more, one whose launches'
    work (:func:`tracekit.analyzers.plausibility.cut_off_launches`) or CUDA-graph replay
    (:func:`tracekit.analyzers.plausibility.cut_off_replay`) the capture cut off; None otherwise."""
    stub = _closing_profiler_step(trace, assignment, frame)
    if stub is not None:
        stub_range = frame.filter(pl.col("iteration") == stub)
        return stub, (
            f"left out the last step, {stub_range['name'][0]} "
            f"({stub_range['latency_ns'][0] / 1e6:.3f} ms): it holds no device op, launch call or CPU "
            "operator, while the other steps do: the step the profiler stopped in, not a step of the run"
        )
    if frame.height < 2:
        return None
    last = frame.row(frame.height - 1, named=True)
    cut = plausibility.cut_off_launches(trace, last["range_start"], last["range_end"], last.get("pid"))
    if cut:
        unread = trace.meta.get(UNREAD_DEVICE_EVENTS) or trace.meta.get("unread_device_tables")
        cause = (
            "either their ops are among the device work the trace holds and tracekit does not read "
            f"({', '.join(map(str, unread))}) or the capture ended before the device ran them"
            if unread
            else "the capture ended before the device ran them"
        )
        return last["iteration"], (
            f"left out the last iteration, {last['name']}: {cut} of its launch calls have no op in the "
            f"trace, launched after the last launch of their thread whose op it holds: {cause}, so its busy "
            "time is not measured"
        )
    replay = plausibility.cut_off_replay(trace, last["range_start"], last["range_end"], last.get("pid"))
    if replay:
        return last["iteration"], (
            f"left out the last iteration, {last['name']}: its CUDA-graph replay holds {replay[0]} ops, the "
            f"first of the {replay[1]} an earlier replay of the same graph ran, and its last op is the last "
            "of its device: the capture ended during the replay, so its busy time is not measured"
        )
    return None


def _closing_profiler_step(trace: Trace, assignment: Assignment, frame: pl.DataFrame) -> int | None:
    """The iteration of the step torch.profiler was in when it stopped, to leave out, or None.

    The last ``p.step()`` of a profiled loop opens ``ProfilerStep#N``, which the profiler closes when it stops:
    a stub of microseconds holding nothing of the run (real: a 49 µs ``ProfilerStep#2`` after a 9.3 ms
    ``ProfilerStep#1``, which made the median latency 4.7 ms). It is the last of the ``ProfilerStep#*``
    iterations (``frame``, after the warm-up is dropped) when it holds no op, no launch call and no CPU
    operator (``trace.cpu_ops`` starting inside its range) while some earlier iteration holds an op, and its
    range is shorter than half the median of the others' (a step of the run that did nothing lasts as long as
    the others)."""
    if assignment.choice.name != PROFILER_STEP_KEY or frame.height < 2:
        return None
    last = frame.row(frame.height - 1, named=True)
    lengths = (frame["range_end"] - frame["range_start"]).head(frame.height - 1)
    others = lengths.median()
    if others is None or last["range_end"] - last["range_start"] >= 0.5 * others:
        return None
    held = assignment.ops.get_column("iteration")
    if (held == last["iteration"]).any() or not held.is_in(frame["iteration"].implode()).any():
        return None
    if last.get("launches") or last["kernels"]:
        return None
    cpu = trace.cpu_ops
    if (
        cpu.height
        and cpu.filter(
            pl.col("start").is_between(last["range_start"], last["range_end"], closed="left")
        ).height
    ):
        return None
    return int(last["iteration"])


def _setup_findings(
    trace: Trace, ranges: pl.DataFrame, windows: pl.DataFrame, frame: pl.DataFrame, synthetic: bool
) -> tuple[list[str], list[str], str | None, list[int]]:
    """:func:`tracekit.analyzers.setup_calls.setup_warnings` for the analyzed iterations (``frame``), with the
    iterations they name: each
    setup call belongs to the range of its own process holding its start (a synthetic window: the window
    holding it, whatever its process)."""
    from tracekit.analyzers import setup_calls

    calls = setup_calls.setup_calls(trace.api)
    if calls.is_empty():
        return [], [], None, []
    if synthetic:
        spans = windows.select(
            "iteration", pl.col("window_start").alias("range_start"), pl.col("window_end").alias("range_end")
        )
        iteration = _iteration_in(calls.get_column("start"), sort_frame(spans, ["range_start"], [False]))
    else:
        iteration = _iteration_at(
            calls.get_column("start"), sort_frame(ranges, ["range_start"], [False]), calls.get_column("pid")
        )
    per_iteration = setup_calls.setup_ns_per_iteration(calls, windows, iteration)
    return setup_calls.setup_warnings(per_iteration, frame)


#: An iteration at least this share of whose launch calls were made during a stream capture builds a graph.
CAPTURE_SHARE = 0.5


def _capture_findings(
    trace: Trace, ranges: pl.DataFrame, frame: pl.DataFrame
) -> tuple[list[str], list[str], str | None, list[int]]:
    """Warnings, doubts, the CUDA-graph projection's refusal and the capturing iterations' indices for analyzed
    iterations (``frame``) that capture a stream into a CUDA (HIP) graph: an iteration is a capture when at
    least :data:`CAPTURE_SHARE`
    of its launch calls (``launches``, each in the range of its own process holding its start) were made
    during a capture (:func:`tracekit.analyzers.plausibility.captured_launches`). Those calls record work and
    run nothing, so the iteration's idle device and its host time are the graph's one-time construction, not
    an inference step's framework tax (SGLang's capture at batch 32: 544 of 546 calls, read "framework-bound,
    0.03%" with a 670x projection). Named in a warning; the verdict is uncertain when they are at least half
    the analyzed iterations; the projection does not apply when any analyzed iteration holds a captured call
    (the program already uses graphs, and the host time it would save includes the capture's)."""
    captured = plausibility.captured_launches(trace.api)
    if captured.is_empty() or frame.is_empty() or "launches" not in frame.columns:
        return [], [], None, []
    iteration = _iteration_at(captured.get_column("start"), ranges, captured.get_column("pid"))
    per_iteration = (
        pl.DataFrame({"iteration": iteration})
        .drop_nulls()
        .group_by("iteration")
        .agg(pl.len().alias("captured"))
    )
    held = frame.select("iteration", "name", pl.col("launches").fill_null(0)).join(
        per_iteration, on="iteration", how="inner"
    )
    if held.is_empty():
        return [], [], None, []
    # any captured call: the host time the projection would save includes the capture's
    refusal = (
        f"the iterations capture CUDA graphs ({int(held['captured'].sum())} launch calls made during a "
        "stream capture)"
    )
    capturing = held.filter(pl.col("captured") >= CAPTURE_SHARE * pl.col("launches")).sort("iteration")
    if capturing.is_empty():
        return [], [], refusal, []
    calls, launches = int(capturing["captured"].sum()), int(capturing["launches"].sum())
    ids = capturing.get_column("iteration").to_list()
    names = ", ".join(capturing["name"].head(3).to_list()) + (" ..." if capturing.height > 3 else "")
    what = (
        f"{capturing.height} of {frame.height} iterations ({names}) capture a stream into a CUDA graph: "
        f"{calls} of their {launches} launch calls were made between a stream-capture begin and end call, "
        "which record work into the graph and run none of it"
    )
    if 2 * capturing.height >= frame.height:
        return (
            [],
            [
                f"verdict uncertain: {what}: the device idles while the graph is built, once, so their "
                "utilization and framework overhead are the graph's construction, not an inference step's"
            ],
            refusal,
            ids,
        )
    return [f"{what}: their idle device is the graph's one-time construction"], [], refusal, ids


def attribution_setup(trace: Trace, assignment: Assignment) -> Setup:
    """What the *attribute* stage needs besides the gaps (:func:`tracekit.analyzers.attribution.setup`: the
    host threads' API intervals, the launching calls, the device timeline): it reads only the trace and the
    assignment, so :func:`gaps_and_setup` builds it while the gaps are measured."""
    from tracekit.analyzers.attribution import DeviceTimeline, copy_kinds, setup

    return setup(
        # (the copies' kinds, row for row: which copy calls wait, attribution.blocking_waits)
        # (the ops' devices and processes too, row for row: the device timeline answers for each op's own
        # device; an op another process launched before the capture ends none of this process's gaps)
        assignment.ops.select("start", "end", "iteration", "call", "no_launch").with_columns(
            copy_kinds(trace.ops), trace.ops.get_column("device"), trace.ops.get_column("pid")
        ),
        trace.api,
        assignment.ranges,
        calls=assignment.calls,
        timeline=DeviceTimeline.of(trace.ops),
    )


#: Most ops for which :func:`gaps_and_setup` builds the attribution's setup while it measures the gaps.
OVERLAP_MAX_OPS = 1 << 22


def gaps_and_setup(
    trace: Trace,
    assignment: Assignment,
    skip: int | None = 0,
    attribute: bool = True,
    bound_threshold: float = FRAMEWORK_BOUND_UTILIZATION,
) -> tuple[Measured, Setup | None]:
    """Stage *gaps* (:func:`measure_gaps`) and, with ``attribute``, the attribution's setup
    (:func:`attribution_setup`) built at the same time on a second thread: the gaps are mostly polars work
    (which runs without the GIL), the setup mostly numpy, so the two share the cores. Not above
    :data:`OVERLAP_MAX_OPS` ops: then one after the other, so that the two stages' temporaries never add up
    (the peak memory of the largest traces before their speed)."""
    if not attribute:
        return measure_gaps(trace, assignment, skip, bound_threshold), None
    if trace.ops.height > OVERLAP_MAX_OPS:
        measured = measure_gaps(trace, assignment, skip, bound_threshold)
        return measured, attribution_setup(trace, assignment)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tracekit-setup") as pool:
        pending = pool.submit(attribution_setup, trace, assignment)
        measured = measure_gaps(trace, assignment, skip, bound_threshold)
        return measured, pending.result()


def attribute(
    trace: Trace, assignment: Assignment, measured: Measured, prepared: Setup | None = None
) -> Attribution:
    """Stage *attribute*: every idle nanosecond of every analyzed iteration by cause
    (:func:`tracekit.analyzers.attribution.attribute_idle`, from the assignment's op-to-launching-call
    matching; its ``detail``: the causes of the :data:`LONGEST_GAPS` longest gaps). ``prepared``:
    :func:`attribution_setup`, when already built."""
    from tracekit.analyzers.attribution import attribute_idle

    prepared = prepared or attribution_setup(trace, assignment)
    timeline = prepared.ctx.timeline
    if timeline is not None:  # no gap overlaps another op: no search for queued time
        timeline.quiet = measured.quiet
    gaps = measured.gaps
    longest = (
        None
        if not gaps.height
        else measured.longest_rows
        if measured.longest_rows is not None
        else _longest(gaps, LONGEST_GAPS).get_column("_row")
    )
    result = attribute_idle(
        gaps,
        assignment.ops.select("start", "end", "iteration", "call", "no_launch").with_columns(
            trace.ops.get_column("device"), trace.ops.get_column("pid")
        ),
        trace.api,
        assignment.ranges,
        measured.iterations.get_column("index"),
        cpu_ops=trace.cpu_ops if trace.cpu_ops.height else None,
        calls=assignment.calls,
        detail_rows=longest,
        prepared=prepared,
    )
    if result.detail is not None:  # the longest gaps' causes, joined in by longest_gaps()
        result = replace(result, detail=result.detail.select("iteration", "start_ns", "cause", "host_state"))
    return result


#: The warning of a device trace that records no host API call: its idle time is not attributed to causes.
HOST_UNRECORDED = (
    "idle time not attributed to causes (dispatch, launch, sync, other API calls, device-side): the trace "
    "records device work but no host API call (runtime or driver), so what the host was doing in each gap is "
    "not known; profile the host side too (nsys profile -t cuda; torch.profiler with ProfilerActivity.CPU)"
)


def host_unrecorded(trace: Trace) -> bool:
    """Whether the trace holds device work (ops other than CPU operators) but no host API call at all (a
    Kineto trace of CUDA activity only, an ONNX Runtime profile's CUPTI kernels): the causes of its idle time,
    which are the host's states, cannot be told."""
    if not trace.api.is_empty() or trace.ops.is_empty():
        return False
    return bool(trace.ops.select((pl.col("kind") != "operator").any()).item())


def summarize_stages(
    trace: Trace,
    assignment: Assignment,
    measured: Measured,
    attribution: Attribution | None,
    bound_threshold: float = FRAMEWORK_BOUND_UTILIZATION,
) -> IterationAnalysis:
    """Stage *summarize*: the per-iteration frame with the idle time by cause (``dispatch_ms`` ...
    ``in_flight_ms``; null where ``idle_ms`` is) and the serving-step columns, the typed summary and verdict,
    the longest gaps, and the no-verdict rules (:func:`no_verdict_reason`: without a measured timeline the
    fields of :data:`TIMELINE_FIELDS`, the idle time by cause and the gaps are dropped)."""
    from tracekit.analyzers.attribution import CAUSE_MS

    frame, gaps = measured.iterations, measured.gaps
    warnings = [*assignment.warnings, *measured.warnings, *measured.doubts]
    uncertain: list[str] = list(measured.doubts)
    notes = list(measured.notes)
    timeline = trace.meta.get("timeline") is not False  # (an Nsight Compute report alone has none)
    if timeline and measured.small_gaps is not None and measured.time_unit_ns is not None:
        rounding, doubts = resolution.rounding_findings(
            frame, measured.small_gaps, measured.time_unit_ns, bound_threshold
        )
        notes += rounding
        uncertain += doubts
        warnings += doubts
    if timeline and not measured.quiet and trace.ops.height:
        # ops whose launch calls were lost are their iterations' own (the lost-launch doubt says so), not work
        # launched before the capture: left out of this check, or two doubts would give one fact two causes
        lost = assignment.ops.get_column("no_launch") if measured.launches_lost else None
        foreign_notes, foreign_doubts = _foreign_work_findings(
            trace, assignment.ops.get_column("iteration"), gaps, frame, bound_threshold, lost
        )
        notes += foreign_notes
        uncertain += foreign_doubts
        warnings += foreign_doubts
    if attribution is not None and timeline and host_unrecorded(trace):
        warnings.append(HOST_UNRECORDED)
        attribution = None
    unknown_idle = (
        *measured.untimed_iterations,
        *measured.mostly_untimed_iterations,
        *measured.calls_without_end_iterations,
    )
    if measured.calls_without_end_iterations:
        warnings.append(
            _calls_without_end_said(
                measured.calls_without_end_iterations, measured.launches_without_end_iterations, frame.height
            )
        )
    if attribution is not None and unknown_idle:
        attribution = _attribution_without(attribution, unknown_idle)
    if attribution is not None:
        causes = attribution.iterations.select("index", *CAUSE_MS)
        frame = frame.join(causes, on="index", how="left", maintain_order="left").with_columns(
            pl.when(pl.col("idle_ms").is_not_null()).then(pl.col(c)).alias(c) for c in CAUSE_MS
        )
        warnings += attribution.warnings
        doubts = _verdict_doubts(attribution, frame)
        uncertain += doubts
        warnings += doubts
    frame, gaps, untimed_said, untimed_reason = _untimed_withheld(
        frame, gaps, measured.untimed_iterations, measured.mostly_untimed_iterations
    )
    warnings += untimed_said
    if untimed_reason is not None:
        attribution = None
    reason = (
        no_verdict_reason(trace)
        or _no_work_in_iterations(trace, assignment, frame)
        or measured.busy_unknown
        or untimed_reason
    )
    if not timeline or measured.busy_unknown:
        # No measured timeline (an Nsight Compute report alone): what needs one is not shown. No iteration
        # whose ops are known (concurrent runs sharing pool threads): what needs them is not shown.
        withheld = TIMELINE_FIELDS if not timeline else (*BUSY_FIELDS, "kernels")
        if not timeline and trace.meta.get("range_results"):
            # results without launch dimensions (ncu range replay, whole graphs: ops of kind "graph") span the
            # gaps between their kernels too: no sum of kernel durations can be read (the reader says so)
            withheld = (*withheld, "gpu_busy_ms")
        blank = [c for c in (*withheld, *CAUSE_MS) if c in frame.columns]
        frame = frame.with_columns(pl.lit(None, dtype=frame.schema[c]).alias(c) for c in blank)
        gaps, attribution = gaps.clear(), None
    # (the trace's ops, row for row those of the assignment, with their names and devices)
    named = trace.ops.select("start", "end", "kind", "device", "name").with_columns(
        assignment.ops.get_column("iteration")
    )
    comm_doubt = communication.communication_doubt(frame, named, bound_threshold)
    if comm_doubt is not None:
        uncertain.append(comm_doubt)
        warnings.append(comm_doubt)
    frame, classes = _with_step_classes(trace, assignment.ranges, frame)
    if classes is None:
        frame, classes, shape_notes, shape_warnings, shape_doubts = _with_run_shapes(
            trace, assignment.ranges, frame, bound_threshold
        )
        notes += shape_notes
        warnings += shape_warnings + shape_doubts
        uncertain += shape_doubts
    class_notes, class_doubts, other_classes = _step_class_findings(frame, bound_threshold)
    uncertain += class_doubts
    warnings += class_notes + class_doubts
    conditional_doubt = _conditional_graph_doubt(trace, frame, bound_threshold) if reason is None else []
    if conditional_doubt:  # in the reader's warning's place: one line for one fact
        said = trace.meta[CONDITIONAL_GRAPHS].get("warning")
        warnings = [w for w in warnings if w != said] + conditional_doubt
        uncertain += conditional_doubt
    # (steps of a class the headline does not speak for, which its warning named: not a split of the verdict)
    split_from = (
        frame.filter(~pl.col("step_class").is_in(other_classes).fill_null(False)) if other_classes else None
    )
    summary = summarize(frame, bound_threshold, " ".join(uncertain) if uncertain else None, split_from)
    # a reader's warning that a doubt repeats with "verdict uncertain: " before it is said once, as the doubt
    warnings = [w for w in warnings if UNCERTAIN_PREFIX + w not in uncertain]
    if reason is not None:
        summary = replace(summary, bound=None)
        # the reason says it all: the shorter "holds no ..." / "no ... falls inside" lines would repeat it
        repeated = (NO_ACTIVITY_WARNING, NO_WORK_INSIDE_WARNING)
        # (and with no verdict, a doubt is a plain warning: "verdict uncertain" beside "no verdict" reads as both)
        doubted = set(uncertain)
        warnings = [
            reason,
            *(
                w.removeprefix(UNCERTAIN_PREFIX) if w in doubted else w
                for w in warnings
                if not w.startswith(repeated)
            ),
        ]
    detail = attribution.detail if attribution is not None else None
    return IterationAnalysis(
        range_name=assignment.choice.name,
        range_choice=assignment.choice.how,
        device=assignment.device,
        iterations=frame,
        gaps=gaps,
        summary=summary,
        warnings=warnings,
        skipped=measured.skipped,
        ranges=assignment.ranges,
        step_classes=classes,
        attribution=attribution,
        unassigned=assignment.unassigned,
        notes=notes,
        # (the longest rows found while measuring, unless the gaps were withheld since)
        longest=longest_gaps(
            gaps, frame, detail, rows=measured.longest_rows if gaps is measured.gaps else None
        ),
        no_verdict=reason,
        setup_caveat=measured.setup_caveat,
        capture_refusal=measured.capture_refusal,
        setup_iterations=measured.setup_iterations,
    )


def _calls_without_end_said(iterations: tuple[int, ...], launching: tuple[int, ...], analyzed: int) -> str:
    """The warning naming the analyzed ``iterations`` that hold API calls of unknown end (ended before they
    started, or no readable end: :attr:`Measured.calls_without_end_iterations`), of ``analyzed``, and what is
    withheld of them: their idle causes, and the launch figures of those among them (``launching``) whose
    calls of unknown end include launch calls (review20: a damaged sync call's iteration keeps its launch
    figures, and the sentence had said them withheld)."""
    launches = (
        "the launch-call time and queue time of those iterations' launches, and "
        if set(launching) == set(iterations)
        else f"the launch-call time and queue time of the launches of index {', '.join(map(str, launching))}, and "
        if launching
        else ""
    )
    return (
        f"{len(iterations)} of {analyzed} iterations (index {', '.join(map(str, iterations))}) hold API calls "
        "whose end time is unknown (stamped to end before they start, or no readable end: a damaged row or a "
        f"profiler's lost end time; read as lasting 0): their length is unknown, so {launches}their idle "
        f"time by cause and CUDA-graph projection{',' if launches else ''} are not shown"
    )


def _attribution_without(attribution: Any, untimed: tuple[int, ...]) -> Any:
    """``attribution`` without the ``untimed`` iterations (:func:`_untimed_withheld`, and those half or more
    untimed): their idle time is not known (their kernels' times are not, or most of them), so it is in no
    cause's total or mean, nor in the CUDA-graph projection (it had counted 9 ms of an untimed iteration as
    dispatch; an untimed kernel's 0.1 ms of a half-untimed one as dispatch, and as saved by graphs)."""
    from dataclasses import replace as replaced

    from tracekit.analyzers.attribution import summarize_attribution

    def kept(frame: pl.DataFrame | None, column: str) -> pl.DataFrame | None:
        return None if frame is None else frame.filter(~pl.col(column).is_in(list(untimed)))

    iterations = kept(attribution.iterations, "index")
    assert iterations is not None
    return replaced(
        attribution,
        iterations=iterations,
        summary=summarize_attribution(iterations),
        gaps=kept(attribution.gaps, "iteration"),
        detail=kept(attribution.detail, "iteration"),
        lags=kept(attribution.lags, "iteration"),
        projection_parts=kept(attribution.projection_parts, "index"),
        unknown=tuple(sorted({*attribution.unknown, *untimed})),
    )


def _untimed_withheld(
    frame: pl.DataFrame, gaps: pl.DataFrame, untimed: tuple[int, ...], mostly: tuple[int, ...] = ()
) -> tuple[pl.DataFrame, pl.DataFrame, list[str], str | None]:
    """(frame, gaps, warnings, no-verdict reason) with the busy figures (:data:`BUSY_FIELDS`, the idle time by
    cause) and the idle gaps of the ``untimed`` iterations withheld: none of their device ops has a start and
    an end time, so their busy time is unknown (it had read 0.0, utilization 0: "framework-bound"); their
    kernels still count. When that is every analyzed iteration, no verdict can be given (the reason). The
    ``mostly`` untimed iterations (half or more of their device ops, not all) keep the busy time of their
    timed ops, and are named: it is a lower bound (when they are all the analyzed iterations, the trace-wide
    doubt says it: half the ops or more are then untimed)."""
    from tracekit.analyzers.attribution import CAUSE_MS

    said = (
        [
            f"{len(mostly)} of {frame.height} iterations (index {', '.join(map(str, mostly))}) hold device ops "
            "half or more of which have no start or end time (not recorded, or damaged): their GPU busy time and "
            "utilization count only the timed ones, a lower bound, and their idle time by cause and CUDA-graph "
            "projection are not shown"
        ]
        if mostly and len(mostly) < frame.height
        else []
    )
    if not untimed:
        return frame, gaps, said, None
    where = pl.col("index").is_in(list(untimed))
    blank = [c for c in (*BUSY_FIELDS, *CAUSE_MS) if c in frame.columns]
    frame = frame.with_columns(pl.when(~where).then(pl.col(c)).alias(c) for c in blank)
    gaps = gaps.filter(~pl.col("iteration").is_in(list(untimed)))
    if len(untimed) < frame.height:
        indices = list(untimed)
        return (
            frame,
            gaps,
            [
                f"{len(untimed)} of {frame.height} iterations (index {', '.join(map(str, indices))}) hold device ops "
                "none of which has a start or end time (not recorded, or damaged): their GPU busy time, utilization and "
                "idle time are not known and not shown; their kernels count",
                *said,
            ],
            None,
        )
    return (
        frame,
        gaps,
        said,
        (
            f"no framework-/compute-bound verdict: none of the device ops in the {frame.height} analyzed iterations "
            "has a start and end time (not recorded), so no iteration's GPU busy time is known (latency, launches "
            "and kernel counts are shown)"
        ),
    )


def without_iteration_operators(
    trace: Trace, range_name: str | None = None, split_idle_ms: float | None = None
) -> Trace:
    """``trace`` without the CPU operators that are its chosen iteration ranges themselves.

    On a CPU-only nsys trace the operators are the leaf NVTX ranges below the top level
    (:mod:`tracekit.readers.nsys_sqlite`), so a user's ``step`` ranges inside a ``benchmark`` range are both
    the iterations and, each, an "operator" as long as itself: 100% busy, "compute-bound", whatever the
    step did. Ops identical to a chosen range (same process, thread, name, start and end) are that range, not
    work inside it: they are dropped, with a warning. Other traces (devices, synthetic windows, no match)
    are returned as they are."""
    if split_idle_ms is not None or trace.ops.is_empty() or trace.ranges.is_empty():
        return trace
    if not trace.ops.select((pl.col("kind") == "operator").all()).item():
        return trace
    try:
        choice = select_ranges(trace, range_name, None)
    except TracekitError:
        return trace  # (assign raises it again, with its line)
    if choice.synthetic or choice.frame.is_empty():
        return trace
    keys = ["pid", "stream", "name", "start", "end"]
    chosen = choice.frame.select(
        "pid", pl.col("thread").alias("stream"), "name", start="range_start", end="range_end"
    )
    ops = trace.ops.join(chosen, on=keys, how="anti", nulls_equal=True)
    dropped = trace.ops.height - ops.height
    if not dropped:
        return trace
    meta = dict(trace.meta)
    meta["warnings"] = [
        *trace.warnings,
        f"{dropped} CPU operators are the {choice.name!r} iteration ranges themselves (leaf NVTX ranges read as "
        "operators): not counted as operators, which would make each iteration 100% busy",
    ]
    return replace(trace, ops=ops, meta=meta)


def analyze_iterations(
    trace: Trace,
    range_name: str | None = None,
    skip: int | None = 0,
    bound_threshold: float = FRAMEWORK_BOUND_UTILIZATION,
    split_idle_ms: float | None = None,
    attribute: bool = True,
) -> IterationAnalysis:
    """Per-iteration latency, GPU busy, idle gaps, launches and framework overhead of ``trace``, and (with
    ``attribute``) its idle time by cause (:mod:`tracekit.analyzers.attribution`: the ``*_ms`` columns of
    :data:`tracekit.analyzers.attribution.CAUSES`, from the same op-to-launching-call matching): the stages
    :func:`assign`, :func:`measure_gaps`, :func:`attribute` and :func:`summarize_stages` in turn.

    ``range_name`` picks the iteration ranges (default: ``iteration`` if present, else the torch.profiler
    ``ProfilerStep#*`` steps, else the most frequent top-level range); ``skip`` drops that many leading (warm-up) iterations
    after the windows are computed (None: the run's warm-up iterations when the trace records them, see
    :func:`warmup_to_skip`). Raises NoActivityError when there is nothing to analyze.
    """
    trace = without_iteration_operators(trace, range_name, split_idle_ms)
    assigned = assign(trace, range_name, split_idle_ms)
    measured, prepared = gaps_and_setup(trace, assigned, skip, attribute, bound_threshold)
    causes = _attribute(trace, assigned, measured, prepared) if attribute else None
    return summarize_stages(trace, assigned, measured, causes, bound_threshold)


_attribute = attribute


def _unassigned_warnings(
    unassigned: dict[str, Any], synthetic: bool, lost: tuple[str | None, int, str | None] = (None, 0, None)
) -> list[str]:
    """The warnings that say which ops count in no iteration (:func:`unassigned_ops`); ``lost``:
    :func:`tracekit.analyzers.plausibility.lost_launch_findings`, whose doubt names the cause of the ops
    without a launching call when it has one (the warning does not give them another)."""
    out = []
    missing, outside = unassigned["launch_not_in_trace"], unassigned["outside_iterations"]
    if missing["ops"]:
        inside = missing.get("inside_capture", 0)
        if lost[1] and lost[2] == "stream":
            during = min(lost[1], missing["ops"])
            why = (
                "launched during the capture, their call records lost: they ran after work of their stream whose "
                "launch the trace has"
                if during == missing["ops"]
                else f"{during} of them launched during the capture, their call records lost: they ran after work "
                "of their stream whose launch the trace has; the others before the capture began"
            )
        else:
            why = (
                "launched before the capture began"
                if not inside
                else f"{inside} of them launched during the capture, their ids lying between their process's "
                "first and last call ids, with their call records lost"
                + (", the others before the capture began" if inside < missing["ops"] else "")
            )
        out.append(
            f"{missing['ops']} device ops ({_busy_said(missing)}) have a correlation id but no "
            f"launching call in the trace ({why}): they count in no iteration"
        )
    if outside["ops"]:
        where = ", ".join(
            f"{outside[k]} {label}"
            for k, label in (
                ("other_process", "by processes that hold no iteration range"),
                ("before", "before the first"),
                ("between", "between"),
                ("after", "after the last"),
            )
            if outside.get(k)
        )
        out.append(
            f"{outside['ops']} device ops ({_busy_said(outside)}) were launched outside every "
            f"iteration ({where or 'outside the ranges'}): they count in no iteration"
        )
    return out


def _busy_said(entry: dict[str, Any]) -> str:
    """The busy time of unassigned ops (:func:`_unassigned_counts`' entry) in words: '0.123 ms busy', with
    those that have no start or end time said apart ('busy unknown' when none has one)."""
    untimed = entry.get("untimed", 0)
    if entry["busy_ms"] is None:
        return "busy time unknown: no start or end time"
    said = f"{entry['busy_ms']:.3f} ms busy"
    return f"{said} and {untimed} with no start or end time" if untimed else said


def _correlation_warnings(
    ops: pl.DataFrame,
    assigned: pl.Series,
    missing: pl.Series,
    api: pl.DataFrame,
    synthetic: bool,
    lost: tuple[str | None, int, str | None] = (None, 0, None),
    of_far_calls: int = 0,
) -> list[str]:
    """Facts about ops without a launching call in the iterations: counted from the ops, never from gaps
    (``lost``: as :func:`_unassigned_warnings` takes it; ``of_far_calls``: ops whose id the reader took away
    with their far launch call, and said: not counted again)."""
    if not _has_launch_calls(api):
        return []
    out = []
    no_id = max(0, int((assigned & ops.get_column("correlation").is_null()).sum()) - of_far_calls)
    if no_id:
        out.append(
            f"{no_id} device ops in the iterations carry no correlation id (nothing links them to a launching "
            "call): they are assigned by their start, and the gaps they end are split by the iteration's main "
            "thread's state, with no device-side part"
        )
    before = int((assigned & missing).sum())
    if before and synthetic:
        evidence = {
            "stream": "ran after work of their stream whose launch the trace has",
            "ids": "carry ids between their process's first and last call ids",
        }
        when = (
            "have no launching call in the trace (launched during the capture, their call records lost: "
            f"{min(lost[1], before)} of them {evidence[lost[2]]})"
            if lost[1] and lost[2] in evidence
            else "were launched before the capture began (no launching call in the trace)"
        )
        out.append(
            f"{before} device ops in the windows {when}: the gaps they end are device-side (in_flight)"
        )
    return out


#: Device-side waiting (stream waits, launch lags) above this share of the idle time makes the verdict
#: uncertain: that idle time is not the host's doing, so "framework-bound" would blame the framework for it.
DEVICE_WAIT_DOUBT = 0.5


def _verdict_doubts(attribution: Any, frame: pl.DataFrame) -> list[str]:
    """Why the verdict may be wrong, as warnings starting "verdict uncertain": ops that started long after
    launch on an idle device (:func:`tracekit.analyzers.attribution.launch_lags`), and idle time that is
    mostly device-side waiting on other streams."""
    from tracekit.analyzers.attribution import LAUNCH_LAG_NS

    out = []
    lags = attribution.lags
    if lags is not None and lags.height:
        lags = lags.filter(pl.col("iteration").is_in(frame.get_column("index").implode()))
    if lags is not None and lags.height:
        total, worst = int(lags["lag_ns"].sum()) / 1e6, int(lags["lag_ns"].max()) / 1e6
        out.append(
            f"verdict uncertain: {lags.height} ops in {lags['iteration'].n_unique()} iterations started more than "
            f"{LAUNCH_LAG_NS / 1e6:g} ms after their launch call returned, on an idle device with nothing queued "
            f"and no stream wait before them ({total:.3f} ms in all, up to {worst:.3f} ms): no launch latency is "
            "that long, so the device was blocked by something the trace does not show, or the host and device "
            "clocks are offset; that time counts as idle (in_flight: launch_lag) in the framework overhead"
        )
    sums = attribution.iterations
    idle = int(sums.get_column("idle_ns").sum()) if sums.height else 0
    waits = int(sums.get_column("stream_wait_ns").sum()) if sums.height else 0
    if idle and waits > DEVICE_WAIT_DOUBT * idle:
        out.append(
            f"verdict uncertain: {waits / idle:.0%} of the idle time ({waits / 1e6:.3f} ms) is ops waiting on "
            "events of other streams (stream_wait), a device-side dependency, not host overhead; it counts as "
            "idle in the framework overhead"
        )
    return out


def gpu_annotation_check(
    trace: Trace,
    ranges: pl.DataFrame,
    ops: pl.DataFrame,
    iteration: pl.Series,
    name: str,
    threads: pl.Series | None = None,
) -> list[str]:
    """Compare the launch assignment with Kineto's GPU-side copies of the iteration ranges
    (``gpu_user_annotation``, domain "gpu": the span of the device work of the ops launched in the host
    range) where the trace has them: the k-th host range of a name with the k-th GPU range of that name.
    A warning when ops assigned to an iteration run outside its GPU annotation, or ops of no (or another)
    iteration run inside it. ``ops``: ``start``, ``end`` of every op; ``iteration``: per op; ``threads``: per
    op, the thread of its launch call (null: not known).

    The GPU-side copy spans only the work launched by a thread whose own annotation stack holds the range
    (CUPTI's external correlation is per thread): an op launched by another thread of the process (the
    autograd engine's backward thread, pt_autograd_0) counts in the iteration by its launch time but lies
    outside the copy by design, and is no disagreement (the real MI250 trace's 6 backward kernels had been)."""
    gpu = trace.ranges.filter(pl.col("domain") == "gpu")
    if gpu.is_empty() or ranges.is_empty() or ops.is_empty():
        return []
    host = ranges.select("iteration", "name", "range_start").with_columns(
        pl.int_range(pl.len()).over("name").alias("k")
    )
    gpu = (
        gpu.filter(pl.col("name").is_in(host.get_column("name").unique().implode()))
        .sort("start")
        .select("name", pl.col("start").alias("g0"), pl.col("end").alias("g1"))
        .with_columns(pl.int_range(pl.len()).over("name").alias("k"))
    )
    pairs = host.join(gpu, on=["name", "k"], how="inner").sort("iteration")
    if pairs.is_empty():
        return []
    # per op: the annotation span of its own iteration, and the annotation (if any) its start lies in
    spans = pairs.select("iteration", "g0", "g1")
    with_it = ops.select("start", "end").with_columns(iteration.alias("iteration"))
    # (only ops launched on the range's own thread are in its GPU-side copy; unknown threads are kept)
    by_thread = threads is not None and "thread" in ranges.columns
    with_it = with_it.with_columns(op_thread=threads if by_thread else pl.lit(None, pl.Int64))
    same_thread = pl.col("op_thread").is_null() | pl.col("t").is_null() | (pl.col("op_thread") == pl.col("t"))
    range_threads = ranges.select("iteration", pl.col("thread").alias("t")) if by_thread else None
    own = with_it.join(spans, on="iteration", how="inner")
    if range_threads is not None:
        own = own.join(range_threads, on="iteration", how="left").filter(same_thread)
    outside = own.filter((pl.col("start") < pl.col("g0")) | (pl.col("end") > pl.col("g1")))
    nested = trace.ranges.filter(
        (pl.col("domain") == "gpu") & ~pl.col("name").is_in(host.get_column("name").unique().implode())
    )
    if outside.height and nested.height:
        # Kineto's GPU-side copy of a range spans the device work whose innermost user annotation it is: work
        # launched under a nested annotation (ProcessGroupNCCL's nccl:_all_gather_base) lies in that one's
        # copy, not the iteration's, and is no disagreement (the real B200 vLLM trace's all-gather had been)
        inner = nested.select(pl.col("start").alias("n0"), pl.col("end").alias("n1")).drop_nulls().sort("n0")
        outside = (
            outside.sort("start")
            .join_asof(inner, left_on="start", right_on="n0", strategy="backward")
            .filter(pl.col("n1").is_null() | (pl.col("end") > pl.col("n1")))
        )
    annotated = _iteration_in(
        with_it.get_column("start"),
        spans.sort("g0").select(
            "iteration", pl.col("g0").alias("range_start"), pl.col("g1").alias("range_end")
        ),
    )
    foreign = (
        with_it.with_columns(annotated.alias("annotated"))
        .filter(pl.col("annotated").is_not_null() & ~pl.col("iteration").eq_missing(pl.col("annotated")))
        .join(spans.select(pl.col("iteration").alias("annotated"), pl.col("g1").alias("a1")), on="annotated")
        .filter(pl.col("end") <= pl.col("a1"))
    )
    if range_threads is not None and foreign.height:
        # (an op of another thread than the annotated range's is in no copy of it by design: its lying inside
        # the copy's span is no disagreement either; review20)
        foreign = foreign.join(
            range_threads.rename({"iteration": "annotated"}), on="annotated", how="left"
        ).filter(same_thread)
    if outside.is_empty() and foreign.is_empty():
        return []
    parts = []
    if outside.height:
        parts.append(f"{outside.height} ops launched in an iteration ran outside its GPU-side annotation")
    if foreign.height:
        busy = union_ns(foreign["start"], foreign["end"]) / 1e6
        parts.append(
            f"{foreign.height} ops ({busy:.3f} ms busy) inside an iteration's GPU-side annotation were launched "
            "outside that iteration (counted where their launch is)"
        )
    return [
        f"Kineto's GPU-side annotations ({name!r}, {pairs.height} of them) disagree with the assignment by "
        "launch: " + "; ".join(parts)
    ]


#: Per-iteration serving-step columns added when the trace holds engine steps (:mod:`tracekit.analyzers.steps`).
STEP_COLUMNS = ("step_engine", "step_class", "context_requests", "generation_requests")


def _with_step_classes(
    trace: Trace, ranges: pl.DataFrame, frame: pl.DataFrame
) -> tuple[pl.DataFrame, list[dict[str, Any]] | None]:
    """``frame`` with the serving-step columns and the per-class summary, when the trace's host ranges include
    vLLM/SGLang/TensorRT-LLM step names (checked on the distinct names only); else unchanged and None."""
    from tracekit.analyzers.ranges import ANY_ENGINE_STEP
    from tracekit.analyzers.steps import add_step_class, class_summary_json

    if "name" not in ranges.columns or trace.ranges.is_empty():
        return frame, None
    if not trace.ranges.get_column("name").unique().str.contains(ANY_ENGINE_STEP).any():
        return frame, None
    frame = add_step_class(frame, ranges, trace)
    return frame, class_summary_json(frame)


#: Steps of the classes whose own verdict differs from the headline's make it uncertain from this share of the
#: classified steps, or from half their time; below both, a warning names them.
STEP_CLASS_SHARE = 0.25


#: Device work the iterations did not launch, running in their idle gaps, is noted from this share of the
#: idle time.
FOREIGN_NOTE_SHARE = 0.25


def _foreign_work_findings(
    trace: Trace,
    held: pl.Series,
    gaps: pl.DataFrame,
    frame: pl.DataFrame,
    bound_threshold: float,
    lost: pl.Series | None = None,
) -> tuple[list[str], list[str]]:
    """(notes, doubts) about device work that no analyzed iteration launched (``held``: each op's iteration,
    row for row with ``trace.ops``; the ops of none, or of an iteration not analyzed: launched before the
    capture, outside the iterations, in the skipped warm-up) running during the analyzed iterations' idle
    gaps, on a one-device trace: the device was busy then, and the host was waiting on it (in a sync call,
    mostly), not paying a framework tax. The busy time stays the iteration's own work (the definition); a
    note says how much of the idle time this is from :data:`FOREIGN_NOTE_SHARE`, and the verdict is uncertain
    when the median utilization is under ``bound_threshold`` and at or over it with that time counted busy.
    The real qwen H100 trace's one step opens with a 14 ms cudaDeviceSynchronize while the GPU runs 13.7 ms
    of work launched before the capture: 77% of its 17.5 ms idle time. Another analyzed iteration's ops are
    left to the window rules (and to the clock check, when a device clock runs ahead). ``lost``: row for row
    with ``trace.ops``, the ops whose launch calls the lost-launch doubt says were lost during the capture
    (:func:`tracekit.analyzers.plausibility.lost_launches`): the iterations' own work, left out."""
    from tracekit.analyzers.attribution import DeviceTimeline

    if gaps.is_empty() or frame.is_empty() or trace.meta.get("device") == "cpu":
        return [], []  # (CPU operators of other threads are no device work)
    if trace.ops.get_column("device").n_unique() > 1:
        return [], []
    outside = ~held.is_in(frame.get_column("index").implode()).fill_null(False)
    if lost is not None:  # (ops whose launch calls were lost: the iterations' own, not foreign)
        outside &= ~lost.fill_null(False)
    foreign_ops = trace.ops.select("start", "end").filter(outside)
    if foreign_ops.is_empty():  # the usual case: every op in an analyzed iteration
        return [], []
    analyzed = gaps.join(frame.select(iteration="index"), on="iteration", how="semi")
    foreign = DeviceTimeline.of(foreign_ops).busy_between(
        analyzed.get_column("start_ns").to_numpy(), analyzed.get_column("end_ns").to_numpy()
    )
    per_iteration = (
        analyzed.select("iteration")
        .with_columns(pl.Series("foreign_ns", foreign))
        .group_by("iteration")
        .agg(pl.col("foreign_ns").sum())
    )
    total = int(per_iteration.get_column("foreign_ns").sum())
    idle_ms = frame.get_column("idle_ms").sum()
    if not total or not idle_ms:
        return [], []
    share = total / 1e6 / idle_ms
    joined = frame.join(per_iteration, left_on="index", right_on="iteration", how="left").filter(
        pl.col("latency_ms") > 0
    )
    as_recorded, if_busy = joined.select(
        pl.col("gpu_utilization").median(),
        (
            (pl.col("gpu_busy_ms") + pl.col("foreign_ns").fill_null(0) / 1e6).clip(
                upper_bound=pl.col("latency_ms")
            )
            / pl.col("latency_ms")
        )
        .median()
        .alias("if_busy"),
    ).row(0)
    what = (
        f"during {total / 1e6:,.3f} ms of the iterations' idle time ({share:.0%}) the device ran work they did "
        "not launch (launched before the capture, outside the iterations, or in iterations left out): the host "
        "was waiting on it, not paying a framework tax"
    )
    if as_recorded is not None and if_busy is not None and as_recorded < bound_threshold <= if_busy:
        return [], [
            f"verdict uncertain: {what}; counted busy, the median utilization is {if_busy:.1%}, not "
            f"{as_recorded:.1%}"
        ]
    return ([what] if share >= FOREIGN_NOTE_SHARE else []), []


#: ``meta`` key the Kineto reader sets (``evidence``, ``warning``) on a trace that runs CUDA graphs with
#: conditional nodes (:data:`tracekit.readers.kineto.CONDITIONAL_GRAPHS`)
CONDITIONAL_GRAPHS = "graph_conditionals"


def _conditional_graph_doubt(trace: Trace, frame: pl.DataFrame, bound_threshold: float) -> list[str]:
    """The verdict's doubt when the trace runs CUDA graphs with conditional nodes (the reader's
    ``meta["graph_conditionals"]``: ``evidence``, ``warning``) and the verdict is framework-bound: a while
    node's later iterations are device work the trace does not hold (kineto#1062), so the utilization may
    be higher than measured. It takes the reader's warning's place (:func:`summarize_stages`). A
    compute-bound verdict stands (more busy time only raises the utilization): the reader's warning
    alone then."""
    found = trace.meta.get(CONDITIONAL_GRAPHS)
    if not isinstance(found, dict) or "gpu_utilization" not in frame.columns or frame.is_empty():
        return []
    median = frame.get_column("gpu_utilization").median()
    if median is None or bound_of(median, bound_threshold) != "framework":  # type: ignore[arg-type]
        return []
    return [
        f"verdict uncertain: framework-bound at a median GPU utilization of {median:.1%}, but "
        f"{found.get('warning')}"
    ]


def _ns_sum(column: str) -> pl.Expr:
    """The sum of a ms column of whole-ns durations, in integer ns: exact, whatever the order of the rows (a
    float ms sum is not: 0.3 + 0.1 + 0.2 > 0.6, which flipped the "half their time" rules at exactly half)."""
    return (pl.col(column) * 1e6).round(0).cast(pl.Int64).sum()


def _step_class_findings(
    frame: pl.DataFrame, bound_threshold: float
) -> tuple[list[str], list[str], list[str]]:
    """(warnings, doubts, classes) when the analyzed serving steps of two classes (prefill, decode, mixed:
    ``step_class`` of :func:`_with_step_classes`) get opposite verdicts from their own median utilization: the
    verdict, from the median over all steps, then says one class's, or (an even count) a utilization between
    them that no step has. Three 10 ms prefill steps at 90% and three 2 ms decode steps at 15% read
    "compute-bound, median 52.7%, median overhead 1.330 ms of 5.980 ms" without a word. A doubt when the
    steps of the classes the headline does not speak for are :data:`STEP_CLASS_SHARE` of the classified steps
    or half their time (a few prefill steps among many decode steps: a warning; ``classes`` then names the
    classes of the other verdict, whose steps the verdict does not speak for: 6 token steps at 20% beside 1
    prompt step at 90% are framework-bound, and the prompt step is no split of that verdict)."""
    if "step_class" not in frame.columns or "gpu_utilization" not in frame.columns:
        return [], [], []
    classified = frame.filter(pl.col("step_class").is_in(SERVED_CLASSES))
    per_class = (
        classified.group_by("step_class")
        .agg(
            pl.len().alias("steps"),
            pl.col("gpu_utilization").median().alias("median"),
            _ns_sum("latency_ms").alias("time"),
        )
        .drop_nulls("median")
        .sort("step_class")
    )
    if per_class.height < 2:
        return [], [], []
    bounds = [bound_of(m, bound_threshold) for m in per_class["median"]]
    if len(set(bounds)) < 2:
        return [], [], []
    headline = bound_of(frame.get_column("gpu_utilization").median(), bound_threshold)  # type: ignore[arg-type]
    other = per_class.filter(pl.Series([b != headline for b in bounds]))
    steps, time = classified.height, classified.select(_ns_sum("latency_ms")).item()
    parts = "; ".join(
        f"{c} steps ({n}) {m:.1%}, {b}-bound"
        for (c, n, m), b in zip(
            per_class.select("step_class", "steps", "median").iter_rows(), bounds, strict=True
        )
    )
    what = f"the serving steps' classes get opposite verdicts from their own median GPU utilization ({parts})"
    if other["steps"].sum() >= STEP_CLASS_SHARE * steps or (time and 2 * other["time"].sum() >= time):
        doubt = (
            f"verdict uncertain: {what}: the median over all steps is one class's, or a mix of them, and says "
            "nothing of the other; read the verdict per step class"
        )
        return [], [doubt], []
    return (
        [f"{what}: the verdict is the median step's"],
        [],
        other.get_column("step_class").cast(pl.String).to_list(),
    )


def _iteration_columns(frame: pl.DataFrame, has_api: bool, has_ops: bool) -> pl.DataFrame:
    """The per-iteration frame's public columns (:data:`tracekit.fields.ITERATION_FIELDS`, units in their
    names) from the joined windows, busy time, gaps, kernels and launch statistics (in ns)."""
    if has_api:
        # (no launch: 0 launches of 0 µs; a launch-call time withheld, its launches known, stays null)
        frame = frame.with_columns(
            pl.col("launches").fill_null(0),
            pl.when(pl.col("launches").is_null())
            .then(0.0)
            .otherwise(pl.col("launch_api_us"))
            .alias("launch_api_us"),
        )
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
    return frame


#: how a doubt (a warning that makes the verdict uncertain) begins
UNCERTAIN_PREFIX = "verdict uncertain: "


def summarize(
    frame: pl.DataFrame,
    bound_threshold: float = FRAMEWORK_BOUND_UTILIZATION,
    uncertain: str | None = None,
    split_from: pl.DataFrame | None = None,
) -> Summary:
    """Summary over iterations: count, per-field stats, and "framework"/"compute" boundedness.

    The run is framework-bound when the median GPU utilization is below ``bound_threshold``
    (:func:`tracekit.analyzers.sweep.bound_of`). ``uncertain``: why the verdict may be wrong (launch lags),
    kept in the summary when there is a verdict; without one, the iterations' split on the verdict
    (:func:`tracekit.analyzers.sweep.bound_doubt`) over ``split_from`` (default: every iteration; the
    serving steps of the classes the verdict speaks for, where a warning names the others).
    """
    fields = summarize_columns(frame, [c for c in NUMERIC_FIELDS if c in frame.columns])
    bound = bound_of(fields["gpu_utilization"].p50, bound_threshold)
    if uncertain is None and bound is not None:
        # a median whose interval lies across the threshold: the iterations split on the verdict
        weighed = frame if split_from is None else split_from
        uncertain = bound_doubt(weighed.get_column("gpu_utilization").to_list(), bound_threshold)
    return Summary(
        iterations=frame.height,
        fields=fields,
        bound=bound,
        bound_threshold=bound_threshold,
        synchronized=bool(frame["synchronized"].all()),
        verdict_uncertain=uncertain if bound is not None else None,
    )


def _work_spans(gaps: pl.DataFrame, ranges: pl.DataFrame) -> pl.DataFrame:
    """Per iteration, from its first device op's start to its last one's end (``iteration``, ``work_start``,
    ``work_end``, ns): the end of its leading gap (else its window's start) to the start of its trailing gap
    (else its window's end); none for an iteration whose whole window is one gap."""
    edge = gaps.group_by("iteration").agg(
        pl.col("end_ns").filter(pl.col("position") == "leading").first().alias("lead_end"),
        pl.col("start_ns").filter(pl.col("position") == "trailing").first().alias("trail_start"),
        (pl.col("position") == "empty").any().alias("empty"),
    )
    windows = ranges.select("iteration", "range_start", "range_end").unique("iteration")
    return (
        edge.join(windows, on="iteration")
        .filter(~pl.col("empty"))
        .select(
            "iteration",
            pl.coalesce("lead_end", "range_start").alias("work_start"),
            pl.coalesce("trail_start", "range_end").alias("work_end"),
        )
    )


def _with_cpu_context(
    trace: Trace, gaps: pl.DataFrame, ranges: pl.DataFrame
) -> tuple[pl.DataFrame, pl.Series | None]:
    """Name what held the host during each of the longest gaps (:func:`tracekit.analyzers.gap_context.cpu_context`:
    the API call, host range or CPU operator covering at least half of the gap, with its share): (the gaps with
    ``cpu_context``, the longest gaps' row numbers, :attr:`Measured.longest_rows`; None: no gap)."""
    if gaps.is_empty():
        return gaps.with_columns(pl.lit(None, pl.String).alias("cpu_context")), None
    longest = _longest(gaps, LONGEST_GAPS)
    # (the work spans of the longest gaps' iterations only: the others' are never asked for)
    theirs = gaps.filter(pl.col("iteration").is_in(longest.get_column("iteration").unique().implode()))
    rows = cpu_context(trace, longest, ranges, _work_spans(theirs, ranges))
    # Gaps are unique per row: set the column on the few rows named, rather than joining (and copying) every gap.
    column = pl.repeat(None, gaps.height, dtype=pl.String, eager=True).alias("cpu_context")
    if rows.height:
        column = column.scatter(rows.get_column("_row"), rows.get_column("cpu_context"))
    return gaps.with_columns(column), longest.get_column("_row")
