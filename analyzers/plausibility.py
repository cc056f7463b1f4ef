"""Timestamps and links a real device and profiler cannot produce: when a trace holds them, its numbers are
not measurements, and the verdict is uncertain (each check returns the "verdict uncertain" line, or None).

Found by altering copies of real traces the way damaged profiles are (a unit or clock error, a lost column,
ids reused): each of these gave a confident verdict before, and none occurs in the real traces of
``../shared`` or the committed samples (tests/test_implausible.py).

- :func:`collapsed_iterations`: iterations whose latency is 0 although they hold device work. The latency of an
  unsynchronized iteration runs from the previous iteration's GPU end to its own; when all of its work ran
  before an earlier iteration's work ended (one op outlasting the iterations after it), that window is empty,
  and the iteration drops out of the medians.
- :func:`implausible_durations`: device ops longer than :data:`IMPLAUSIBLE_SPAN_RATIO` times everything the
  host recorded (and at least :data:`IMPLAUSIBLE_MIN_NS`): a kernel of 11 days in a capture of 4 ms.
- :func:`implausible_ranges`: iterations whose ranges last longer than :data:`IMPLAUSIBLE_SPAN_RATIO` times
  everything the ops and API calls span (and a minute): a range ending at the int64 maximum.
- :func:`stream_overlap`: kernels that start before the previous kernel on their stream ends, by more than
  :data:`OVERLAP_TOLERANCE_NS`, for at least :data:`OVERLAP_SHARE` of a trace's kernels (a stream runs its
  work one op at a time; the real traces here show at most 1% such kernels, by a few µs: clock jitter).
- :func:`reused_correlations`: correlation ids that link one launch to another's work: two launch calls of one
  process with one id, or one kernel launch (not a graph launch, which replays many kernels under one id)
  linked to several kernels.
- :func:`lost_launches`: a tenth of the ops carrying ids that no call of the trace has although their ids lie
  inside the span of their process's call ids, or most ops carrying such ids and run after work of their
  stream whose launch it has (the launch calls lost, other calls kept; not the backlog launched before the
  capture), from :func:`tracekit.analyzers.iterations.measure_gaps`.
- :func:`unlinked_ops`: ops with correlation ids but no API call in the trace, with unsynchronized
  iterations: the work launched in an iteration that ran after its range counts in none.
- :func:`zero_length_kernels`: half the kernels lasting 0 ns on a clock finer than a microsecond.
- :func:`cut_off_launches`: the last iteration's launches whose ops the capture cut off (they come after the
  last launch of their thread whose op it holds); that iteration is left out
  (:func:`tracekit.analyzers.iterations.measure_gaps`).
- :func:`unrecorded_host`: a framework-bound verdict that rests on stretches of at least
  :data:`UNRECORDED_MIN_NS` in which nothing at all was recorded (no CPU operator or API call on any host
  thread, no device op running or launched and waiting): time the analysis counts as dispatch, though
  torch.profiler records nothing for a thread that is blocked (a serving engine waiting for requests between
  steps, which vLLM's ``ProfilerStep`` ranges hold). Kineto GPU traces only (they record CPU operators).
- :func:`lost_kernels`: the converse of :func:`lost_launches`: at least :data:`LOST_KERNEL_SHARE` of the
  kernel launch calls have no op in the trace, although a later launch call of their thread has one (device
  records dropped, or one GPU's activity missing from a multi-GPU trace). Calls made while their thread was
  capturing a stream into a graph launch nothing and are not counted; nor are the last launches, whose
  kernels a saturated device runs after the capture ends (1,714 of 3,346 launch calls of a real 1 s H100
  slice, each after the last launch whose kernel the slice holds).
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import polars as pl

from tracekit.calls import pair_key, pair_keys_fit
from tracekit.model import (
    COMPILED_CPU_CODE,
    GRAPH_LAUNCH_NAMES,
    LAUNCH_API_NAMES,
    META_GPU_TRACING_STOPPED,
    META_LOST_EVENTS,
    META_OPS_OF_SHARED_IDS,
    META_PYTHON_THREADS,
    META_PYTHON_TRACING,
    UNREAD_DEVICE_EVENTS,
    Trace,
    calls_named,
    merged_intervals,
    names_mask,
    on_host,
)

#: An op is implausibly long beyond this many times the host's recorded span ...
IMPLAUSIBLE_SPAN_RATIO = 10
#: ... and beyond this length (ns): short captures of one long kernel stay plausible.
IMPLAUSIBLE_MIN_NS = 1_000_000_000
#: A range is implausibly long beyond IMPLAUSIBLE_SPAN_RATIO times the work's span and this (ns): a step that
#: waits (data loading, a sleep) around little work may last seconds; not a minute beyond ten times the work.
IMPLAUSIBLE_RANGE_MIN_NS = 60_000_000_000
#: Same-stream overlap within this (ns) is clock jitter, not two ops at once.
OVERLAP_TOLERANCE_NS = 1_000
#: The share of a trace's kernels overlapping their stream's previous kernel that makes the durations doubtful.
OVERLAP_SHARE = 0.25
#: Fewer kernels than this say nothing about overlap.
OVERLAP_MIN_KERNELS = 20
#: The share of kernel launch calls without their kernel (before a later call of their thread that has one) that
#: makes the busy time doubtful: 3 of 247 in the study's own trace; a capture that lost one GPU's records, half.
LOST_KERNEL_SHARE = 0.1
#: Fewer launch calls than this say nothing about lost kernels.
LOST_KERNEL_MIN_CALLS = 20
#: The least time (ns) after the last recorded op's end from which a launch without its kernel counts as lost
#: even at the end of its thread (:func:`lost_kernels`): well past any launch latency, so a capture that ends
#: while the device still runs its last launches is not doubted.
IDLE_DEVICE_FLOOR_NS = 1_000_000
#: Calls that begin and end capturing a stream into a CUDA (HIP) graph: launches in between run nothing.
CAPTURE_BEGIN_NAMES = (
    "cudaStreamBeginCapture",
    "cudaStreamBeginCaptureToGraph",
    "cuStreamBeginCapture",
    "cuStreamBeginCaptureToGraph",
    "hipStreamBeginCapture",
    "hipStreamBeginCaptureToGraph",
)
CAPTURE_END_NAMES = ("cudaStreamEndCapture", "cuStreamEndCapture", "hipStreamEndCapture")
#: The kinds of op that run on a stream one at a time.
STREAM_KINDS = ("kernel", "memcpy", "memset")


def collapsed_iterations(frame: pl.DataFrame) -> str | None:
    """The doubt when analyzed iterations (``frame``: ``latency_ns``, ``kernels``, ``range_start``,
    ``range_end``) hold device ops and a range of some length but a latency of 0 ns."""
    collapsed = frame.filter(
        (pl.col("kernels") > 0) & (pl.col("latency_ns") <= 0) & (pl.col("range_end") > pl.col("range_start"))
    ).height
    if not collapsed:
        return None
    return (
        f"verdict uncertain: {collapsed} of {frame.height} iterations have a latency of 0 although they hold device "
        "work: all of it ran before an earlier iteration's device work ended (an op outlasting the iterations "
        "after it: overlapping iterations, or timestamps that are not plausible), so their steady-state window "
        "(previous GPU end to their own GPU end) is empty; they have no utilization, and the medians rest on "
        f"the other {frame.height - collapsed}"
    )


def _span_ns(frames: list[pl.DataFrame]) -> int | None:
    """From the first start to the last end over ``frames`` (ns); None when they hold no timestamps."""
    bounds = [f.select(pl.col("start").min(), pl.col("end").max()).row(0) for f in frames if not f.is_empty()]
    starts = [s for s, _ in bounds if s is not None]
    ends = [e for _, e in bounds if e is not None]
    if not starts or not ends:
        return None
    return max(ends) - min(starts)


def host_span_ns(trace: Trace) -> int | None:
    """From the first API call or range start to the last end (ns); None when the trace has neither."""
    return _span_ns([trace.api, trace.ranges])


def _too_long(frame: pl.DataFrame, length: pl.Expr, span: int, floor: int) -> tuple[int, int] | None:
    """(how many of ``frame``'s ``length`` values, ns, exceed :data:`IMPLAUSIBLE_SPAN_RATIO` times ``span``
    and ``floor``, the longest of all) when any does, else None."""
    limit = max(IMPLAUSIBLE_SPAN_RATIO * span, floor)
    n, longest = frame.select((length > limit).sum().alias("n"), length.max().alias("longest")).row(0)
    return (n, longest) if n else None


def implausible_durations(trace: Trace) -> str | None:
    """The doubt when device ops last longer than :data:`IMPLAUSIBLE_SPAN_RATIO` times the host's span
    (:func:`host_span_ns`) and :data:`IMPLAUSIBLE_MIN_NS`."""
    span = host_span_ns(trace)
    if span is None or trace.ops.is_empty():
        return None
    long = _too_long(trace.ops, pl.col("end") - pl.col("start"), span, IMPLAUSIBLE_MIN_NS)
    if long is None:
        return None
    return (
        f"verdict uncertain: {long[0]} device ops last longer than {IMPLAUSIBLE_SPAN_RATIO}x everything the host "
        f"recorded ({span / 1e6:.3f} ms from the first call or range to the last), up to {long[1] / 1e9:.4g} s: "
        "no op runs that long in a capture that short, so their timestamps are not plausible (a clock or unit "
        "error); the latency, busy and idle time of the iterations they reach are not measurements"
    )


def implausible_ranges(trace: Trace, frame: pl.DataFrame) -> str | None:
    """The doubt when analyzed iterations' ranges (``frame``: ``range_start``, ``range_end``) last longer than
    :data:`IMPLAUSIBLE_SPAN_RATIO` times everything the ops and API calls span, and a minute
    (:data:`IMPLAUSIBLE_RANGE_MIN_NS`): a range end of the int64 maximum, 292 years."""
    span = _span_ns([trace.ops, trace.api])
    if span is None or frame.is_empty():
        return None
    long = _too_long(frame, pl.col("range_end") - pl.col("range_start"), span, IMPLAUSIBLE_RANGE_MIN_NS)
    if long is None:
        return None
    return (
        f"verdict uncertain: {long[0]} of {frame.height} iterations' ranges last longer than "
        f"{IMPLAUSIBLE_SPAN_RATIO}x everything the device ops and API calls span ({span / 1e6:.3f} ms), up to "
        f"{long[1] / 1e9:.4g} s: no range lasts that long around that little work, so its timestamps are not "
        "plausible (a clock or unit error); its latency is not a measurement"
    )


def stream_overlap(trace: Trace) -> str | None:
    """The doubt when at least :data:`OVERLAP_SHARE` of the trace's stream ops (:data:`STREAM_KINDS`, with a
    stream) start more than :data:`OVERLAP_TOLERANCE_NS` before the previous one on their stream ended."""
    if trace.ops.is_empty() or trace.ops.get_column("stream").null_count() == trace.ops.height:
        return None
    ops = trace.ops.filter(
        pl.col("kind").is_in(STREAM_KINDS)
        & pl.col("stream").is_not_null()
        & pl.col("start").is_not_null()
        & pl.col("end").is_not_null()
    ).select("pid", "device", "stream", "start", "end")
    if ops.height < OVERLAP_MIN_KERNELS:
        return None
    # (the ops are in start order: Trace sorts them; each stream's previous ops come before in it)
    # The reach of all earlier ops bounds the reach of a stream's earlier ops: when too few ops start inside
    # the former, too few start inside the latter, and no per-stream pass is needed (one stream: the same).
    anywhere = ops.select(
        (pl.col("end").cum_max().shift(1) - pl.col("start") > OVERLAP_TOLERANCE_NS).sum()
    ).item()
    if anywhere < OVERLAP_SHARE * ops.height:
        return None
    reach = pl.col("end").cum_max().shift(1).over("pid", "device", "stream")
    overlap = (reach - pl.col("start")).alias("overlap")
    over = ops.select(overlap).filter(pl.col("overlap") > OVERLAP_TOLERANCE_NS)
    if over.height < OVERLAP_SHARE * ops.height:
        return None
    return (
        f"verdict uncertain: {over.height} of {ops.height} device ops ({over.height / ops.height:.0%}) start more "
        f"than {OVERLAP_TOLERANCE_NS / 1000:g} µs before the previous op on their stream ends, by up to "
        f"{int(over['overlap'].max()) / 1e6:.3f} ms: a stream runs its ops one at a time, so their durations "
        "are not plausible (a unit or clock error?); the busy time counts that overlap once"
    )


def _unique_ids(frame: pl.DataFrame) -> bool:
    """Whether no two rows of ``frame`` share a correlation id (null ids aside): a count of distinct ids,
    which is quick on the ordered ids profilers write."""
    ids = frame.get_column("correlation").drop_nulls()
    return ids.n_unique() == ids.len()


def _repeated(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The distinct ``keys`` that more than one row of ``frame`` holds."""
    return frame.filter(pl.struct(keys).is_duplicated()).select(keys).unique()


def reused_correlations(trace: Trace) -> str | None:
    """The doubt when correlation ids link launches to other launches' work: launch calls of one process
    sharing an id, or a kernel launch (not a graph launch) linked to several kernels of one device."""
    if trace.api.is_empty() or _unique_ids(trace.api) and _unique_ids(trace.ops):
        return None  # (the usual trace: every id once among the calls, and once among the ops)
    calls = calls_named(trace.api, LAUNCH_API_NAMES).filter(pl.col("correlation").is_not_null())
    if calls.is_empty():
        return None
    shared = 0
    if not _unique_ids(calls):
        keys = ["pid", "correlation"]
        shared = calls.height - calls.select(keys).unique().height  # (each call beyond its id's first)
    kernels = trace.ops.filter((pl.col("kind") == "kernel") & pl.col("correlation").is_not_null())
    several = 0
    if not _unique_ids(kernels):
        graph_calls = calls_named(calls, GRAPH_LAUNCH_NAMES).select("pid", "correlation")
        kernel_calls = calls.select("pid", "correlation").join(
            graph_calls, on=["pid", "correlation"], how="anti"
        )
        several = (
            _repeated(kernels, ["pid", "device", "correlation"])
            .join(kernel_calls.unique(), on=["pid", "correlation"], how="semi")
            .height
        )
    if not shared and not several:
        return None
    found = [
        f"{shared} launch calls share a correlation id with another launch call of their process"
        if shared
        else "",
        f"{several} kernel launches (not graph launches) are linked to several kernels each"
        if several
        else "",
    ]
    return (
        f"verdict uncertain: {'; '.join(f for f in found if f)}: the ids that link each op to its launch are "
        "reused (a wrap-around, or ids rewritten), so ops are assigned to other launches' iterations, and the "
        "launch latencies and the idle time's causes mix unrelated calls"
    )


def ops_of_shared_ids(trace: Trace) -> str | None:
    """The doubt when the reader linked device ops to a launching process it could not tell: in a file that
    merges several processes' traces, calls of two processes used the ops' correlation ids and nothing else
    (op start, device, one op per call) told them apart (``meta["ops_of_shared_ids"]``, the Kineto reader's
    count). Each such op went to its id's first call, which is one reading of two: the iterations of both
    processes may hold the wrong ops."""
    count = trace.meta.get(META_OPS_OF_SHARED_IDS)
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        return None
    return (
        f"verdict uncertain: {count} device ops carry correlation ids that calls of several processes use, and "
        "nothing in the trace tells which process launched them (each is linked to its id's first call): the "
        "iterations of either process may hold the other's work, or miss their own"
    )


def unlinked_ops(trace: Trace, frame: pl.DataFrame) -> str | None:
    """The doubt when the device ops carry correlation ids but the trace has no API call at all (its runtime
    and driver records lost: the profiler records them with the GPU work) and analyzed iterations are
    unsynchronized (``frame``: ``synchronized``): ops are then assigned by their start time, and the work an
    iteration launched that ran after its range ended counts in none."""
    if not trace.api.is_empty() or trace.ops.is_empty() or "synchronized" not in frame.columns:
        return None
    linked = trace.ops.height - trace.ops.get_column("correlation").null_count()
    unsynchronized = frame.height - int(frame.get_column("synchronized").sum())
    if not linked or not unsynchronized:
        return None
    return (
        f"verdict uncertain: {linked} device ops carry the correlation ids that link them to their launches, "
        "but the trace holds no runtime or driver call (lost from it), and "
        f"{unsynchronized} of {frame.height} iterations are unsynchronized: the ops are assigned by their start "
        "time, so the work an iteration launched that ran after its range ended counts in no iteration, and "
        "its latency and busy time are short by it"
    )


#: Ops without their launching call beyond this share of the trace's ops, and run after work of their stream
#: whose launch the trace has, make the verdict uncertain (see :func:`lost_launches`).
LOST_LAUNCH_SHARE = 0.5


def inside_call_ids(ops: pl.DataFrame, no_launch: pl.Series, api: pl.DataFrame) -> pl.Series:
    """Per op (``ops``: ``pid``, ``correlation``), whether it has no launching call in the trace (``no_launch``)
    although its correlation id lies between the first and the last id of its process's API calls. A process's
    ids only grow (CUPTI, roctracer), so work launched before the capture began carries an id below every call
    of the capture; an id inside their span was given to a call made during the capture, whose record is not
    in the trace (dropped when the profiler's buffers filled, or an API it did not record)."""
    spans = (
        api.select("pid", "correlation")
        .drop_nulls()
        .group_by("pid")
        .agg(pl.col("correlation").min().alias("_first"), pl.col("correlation").max().alias("_last"))
    )
    found = ops.select("pid", "correlation").with_columns(no_launch.alias("_no_launch"))
    found = found.join(spans, on="pid", how="left", maintain_order="left")
    inside = pl.col("_no_launch") & pl.col("correlation").is_between(pl.col("_first"), pl.col("_last"))
    return found.select(inside.fill_null(False).alias("inside_call_ids")).to_series()


def lost_launches(trace: Trace, ops: pl.DataFrame) -> str | None:
    """The doubt of :func:`lost_launch_findings` (None: no doubt)."""
    return lost_launch_findings(trace, ops)[0]


def lost_launch_findings(trace: Trace, ops: pl.DataFrame) -> tuple[str | None, int, str | None]:
    """(the doubt, how many ops it names, its evidence: "ids" or "stream"; (None, 0, None) without a doubt)
    when the launch calls of many of the trace's ops are lost (``ops``: the assignment's
    ``no_launch``, row for row the trace's ops): they count in no iteration, and the busy time is short by
    their work. Two kinds of evidence, each sure the ops were launched during the capture, not before it:

    - at least :data:`LOST_KERNEL_SHARE` of the ops (of :data:`LOST_KERNEL_MIN_CALLS` or more) carry an id
      inside the span of their process's call ids (:func:`inside_call_ids`; a sixth of a real V100 trace's launch records removed had read "compute"
      with 11% of its busy time missing, without doubt);
    - most ops (:data:`LOST_LAUNCH_SHARE`) carry an id that no call has and ran after an op of their stream
      whose launch the trace has: not the backlog a busy device still runs when the capture starts, which
      comes before everything launched inside it, on each stream (1,810 of 3,442 kernels of a real 1 s slice
      of a saturated H100); this holds where ids are not ordered across the trace's processes."""
    if trace.api.is_empty() or ops.is_empty() or "no_launch" not in ops.columns:
        return None, 0, None
    no_launch = ops.get_column("no_launch")
    if no_launch.sum() < LOST_KERNEL_SHARE * ops.height:
        return None, 0, None
    inside = inside_call_ids(trace.ops, no_launch, trace.api)
    if ops.height >= LOST_KERNEL_MIN_CALLS and inside.sum() >= LOST_KERNEL_SHARE * ops.height:
        work_ms = trace.ops.select((pl.col("end") - pl.col("start")).filter(inside).sum()).item() / 1e6
        doubt = (
            f"verdict uncertain: {inside.sum()} of {ops.height} device ops ({work_ms:.3f} ms of work) carry "
            "correlation ids between the first and the last id of their process's API calls, but their launch "
            "calls are not in the trace: they were launched during the capture and the records of their calls "
            "lost (or made through an API the profiler did not record), so they count in no iteration, and the "
            "busy time and utilization are short by their work"
        )
        return doubt, int(inside.sum()), "ids"
    if no_launch.sum() < LOST_LAUNCH_SHARE * ops.height:
        return None, 0, None
    keys = ["pid", "device", "stream"]
    frame = trace.ops.select(*keys, "start").with_columns(no_launch)
    first_linked = frame.filter(~pl.col("no_launch")).group_by(keys).agg(pl.col("start").min().alias("first"))
    lost = (
        frame.filter(pl.col("no_launch"))
        .join(first_linked, on=keys, how="inner", nulls_equal=True)
        .filter(pl.col("start") > pl.col("first"))
        .height
    )
    if lost < LOST_LAUNCH_SHARE * ops.height:
        return None, 0, None
    doubt = (
        f"verdict uncertain: {lost} of {ops.height} device ops carry a correlation id that no call of the trace "
        f"has, although it records {trace.api.height} API calls, and ran after work of their stream whose "
        "launch it has: their launch calls were lost (not made before the capture), so they count in no "
        "iteration, and the busy time and utilization are short by their work"
    )
    return doubt, lost, "stream"


def _capturing(calls: pl.DataFrame, api: pl.DataFrame) -> pl.Series:
    """For each of ``calls`` (``pid``, ``thread``, ``start``, sorted by start), whether its thread was
    capturing a stream into a graph then: its last capture-begin call before it has no capture-end call after
    it began (:data:`CAPTURE_BEGIN_NAMES`, :data:`CAPTURE_END_NAMES`)."""
    keys = ["pid", "thread"]
    begins = calls_named(api, CAPTURE_BEGIN_NAMES)
    if begins.is_empty():
        return pl.Series("capturing", [False] * calls.height)
    ends = calls_named(api, CAPTURE_END_NAMES)
    marks = pl.concat(
        [
            begins.select(*keys, pl.col("start").alias("at"), pl.lit(True).alias("capturing")),
            ends.select(*keys, pl.col("end").alias("at"), pl.lit(False).alias("capturing")),
        ]
    ).drop_nulls(["at"])
    marks = marks.sort("at")
    found = calls.select(*keys, "start").join_asof(
        marks, left_on="start", right_on="at", by=keys, strategy="backward", check_sortedness=False
    )
    return found.get_column("capturing").fill_null(False)


def captured_launches(api: pl.DataFrame) -> pl.DataFrame:
    """The launch calls (:data:`LAUNCH_API_NAMES`; ``start``, ``pid``) made while their thread captured a
    stream into a CUDA (HIP) graph (:func:`_capturing`): they record work into the graph and run nothing."""
    if api.is_empty() or "thread" not in api.columns or calls_named(api, CAPTURE_BEGIN_NAMES).is_empty():
        return pl.DataFrame(schema={"start": pl.Int64, "pid": pl.Int64})
    calls = calls_named(api, LAUNCH_API_NAMES).filter(pl.col("start").is_not_null()).sort("start")
    return calls.filter(_capturing(calls, api)).select("start", "pid")


def _call_key(exact: bool) -> pl.Expr:
    """One Int64 per (pid, correlation), column ``key`` (null where either is): :func:`tracekit.calls.pair_key`
    where ``exact`` (the values fit it), else their hash (two pairs sharing one: about one chance in 10^7 at
    10^6 pairs)."""
    if exact:
        return pair_key()
    both = pl.col("pid").is_not_null() & pl.col("correlation").is_not_null()
    hashed = pl.struct("pid", "correlation").hash(seed=0).reinterpret(signed=True)
    return pl.when(both).then(hashed).alias("key")


def lost_kernels(trace: Trace) -> str | None:
    """The doubt when at least :data:`LOST_KERNEL_SHARE` of the trace's kernel launches (calls with distinct
    (pid, correlation); graph launches, and calls made while their thread captured a stream into a graph,
    aside) have no op with their (pid, correlation) although a later launch of the same thread has its op:
    the device's records of that work were lost (CUPTI dropped them), and the busy time and kernel counts are
    short by it. The last launches of a thread are not counted (a saturated device runs them after the
    capture ends), unless made after the last recorded op's end by more than twice the longest recorded
    kernel and at least :data:`IDLE_DEVICE_FLOOR_NS`: a saturated device would be busy, and recorded, until then (round 16: kernel records that stop
    after the second of 30 iterations read "framework-bound, 0.0%" without a doubt).

    A thread none of whose launches (at least :data:`LOST_KERNEL_MIN_CALLS`) has its op, launched before the
    last launch of the trace that has one, counts too (one GPU's activity missing from a multi-GPU trace),
    but only when nearly every op has its launch call (fewer than :data:`LOST_KERNEL_SHARE` without): where
    many ops have none, a saturated device may still have been running the work launched before the capture
    while that thread's launches waited behind it."""
    if trace.api.is_empty() or trace.ops.is_empty() or "thread" not in trace.api.columns:
        return None
    names = [name for name in LAUNCH_API_NAMES if name not in GRAPH_LAUNCH_NAMES]
    # (the columns read below, then the rows: not every API column, the names too, copied for every launch)
    calls = trace.api.select("pid", "thread", "start", "correlation").filter(
        names_mask(trace.api, names), pl.col("correlation").is_not_null() & pl.col("start").is_not_null()
    )
    if calls.height < LOST_KERNEL_MIN_CALLS:
        return None
    calls, op_keys = _linked_calls(calls, trace.ops)
    if calls.get_column("linked").all():  # the common case: every launch has its op
        return None
    distinct, linked = calls.select(
        pl.col("key").n_unique().alias("distinct"),
        pl.col("key").filter(pl.col("linked")).n_unique().alias("linked"),
    ).row(0)
    if distinct - linked < LOST_KERNEL_SHARE * distinct:  # the quick bound: most launches have their op
        return None
    calls = calls.sort("start")
    calls = calls.filter(pl.col("key").is_first_distinct())  # one launch, however many records of it
    calls = calls.filter(~_capturing(calls, trace.api))
    if calls.height < LOST_KERNEL_MIN_CALLS:
        return None
    per_thread = calls.group_by("pid", "thread").agg(
        pl.col("start").filter(pl.col("linked")).max().alias("last_linked"), pl.len().alias("calls")
    )
    last_anywhere = calls.filter("linked").get_column("start").max()
    linked_keys = calls.filter("linked").get_column("key").implode()
    unmatched_ops = op_keys.len() - int(op_keys.is_in(linked_keys).sum())
    whole_threads = last_anywhere is not None and unmatched_ops < LOST_KERNEL_SHARE * trace.ops.height
    limit = pl.col("last_linked")
    if whole_threads:
        limit = limit.fill_null(
            pl.when(pl.col("calls") >= LOST_KERNEL_MIN_CALLS).then(pl.lit(last_anywhere)).otherwise(None)
        )
    # A launch made once the device had nothing recorded left to run (after the last recorded op's end, by more
    # than twice the longest recorded kernel, the most one unrecorded kernel running at the capture's end could
    # explain, and by at least IDLE_DEVICE_FLOOR_NS) should have its kernel in the trace too: a saturated device is busy, and recorded, to the
    # end. Trailing launches there are lost (CUPTI's buffers exhausted after the first iterations), not late.
    timed_ops = trace.ops.filter(pl.col("end").is_not_null() & pl.col("start").is_not_null())
    idle_from = None
    if not timed_ops.is_empty():
        longest = timed_ops.select((pl.col("end") - pl.col("start")).max()).item()
        idle_from = timed_ops.get_column("end").max() + max(2 * int(longest or 0), IDLE_DEVICE_FLOOR_NS)
    unlinked = calls.filter(~pl.col("linked")).join(
        per_thread.with_columns(limit.alias("limit")), on=["pid", "thread"], how="left", nulls_equal=True
    )
    before = pl.col("limit").is_not_null() & (pl.col("start") < pl.col("limit"))
    # (only on a thread some of whose launches have their kernel: one with none is the whole-thread rule's)
    idle = (
        pl.lit(idle_from is not None)
        & pl.col("limit").is_not_null()
        & (pl.col("start") > pl.lit(idle_from if idle_from is not None else 0))
    )
    lost, lost_idle = unlinked.select(
        (before | idle).sum().alias("lost"), (idle & ~before).sum().alias("idle")
    ).row(0)
    if lost < LOST_KERNEL_SHARE * calls.height:
        return None
    why = (
        "although later launches have theirs"
        if not lost_idle
        else f"{lost_idle} of them made more than {IDLE_DEVICE_FLOOR_NS / 1e6:g} ms after the device's last "
        "recorded op had ended, with no recorded work left to run"
        if lost_idle == lost
        else f"although later launches have theirs ({lost_idle} made more than "
        f"{IDLE_DEVICE_FLOOR_NS / 1e6:g} ms after the device's last recorded op had ended)"
    )
    return (
        f"verdict uncertain: {lost} of {calls.height} kernel launches have no kernel in the trace, {why}: the "
        "profiler lost those kernels' records (CUPTI dropped them, or one GPU's activity is missing), so the "
        "busy time and kernel counts are short by their work"
    )


def untimed_rows(trace: Trace) -> dict[str, int]:
    """How many rows of each kind ("graph", "kernel", ...) the reader left out for want of timestamps (start
    and end 0: CUPTI could not time them), as it records them (``meta["untimed_rows"]``)."""
    found = trace.meta.get("untimed_rows")
    return {str(k): int(v) for k, v in found.items()} if isinstance(found, dict) else {}


def lost_graph_replays(trace: Trace) -> str | None:
    """The doubt when at least :data:`LOST_KERNEL_SHARE` of the trace's graph launches (distinct (pid,
    correlation), :data:`GRAPH_LAUNCH_NAMES`; at least one) have no op with their (pid, correlation), neither
    a node's kernel nor a whole-graph execution, although a later launch call of their thread (of their
    process, for a thread without any launch that has its op) has its op: the device ran those replays, but
    the trace holds none of their work (a profiler that did not record graph nodes, or dropped their
    records), so the busy time is short by whole graphs. :func:`lost_kernels` leaves graph launches aside; a
    qwen H100 trace with two thirds of its launches made graph replays whose kernels were then left out read
    "framework-bound, 33.8%" for "compute, 64.6%" without a word. The last launches of a thread are not counted (the capture may end before the
    device runs them), nor calls made during a stream capture."""
    api = trace.api
    if api.is_empty() or trace.ops.is_empty() or "thread" not in api.columns:
        return None
    timed = pl.col("correlation").is_not_null() & pl.col("start").is_not_null()
    graphs = calls_named(api, GRAPH_LAUNCH_NAMES).filter(timed)
    if graphs.is_empty():
        return None
    graphs, _ = _linked_calls(graphs, trace.ops)
    if graphs.get_column("linked").all():  # the common case: every replay has its work
        return None
    launches, _ = _linked_calls(calls_named(api, LAUNCH_API_NAMES).filter(timed), trace.ops)
    linked = launches.filter("linked")
    per_thread = linked.group_by("pid", "thread").agg(pl.col("start").max().alias("limit"))
    per_process = linked.group_by("pid").agg(pl.col("start").max().alias("process_limit"))
    graphs = graphs.sort("start").filter(pl.col("key").is_first_distinct())
    graphs = graphs.filter(~_capturing(graphs, api))
    lost = (
        graphs.filter(~pl.col("linked"))
        .join(per_thread, on=["pid", "thread"], how="left", nulls_equal=True)
        .join(per_process, on="pid", how="left", nulls_equal=True)
        # a thread that launches graphs only: its process's last launch with its op
        .filter(pl.col("start") < pl.coalesce("limit", "process_limit"))
        .height
    )
    if not lost or lost < LOST_KERNEL_SHARE * graphs.height:
        return None
    # rows the reader left out for want of timestamps are those replays' work, recorded but not timed
    untimed = untimed_rows(trace)
    whole, nodes = untimed.get("graph", 0), untimed.get("kernel", 0)
    untimed_text = " and ".join(
        f"{n} {kind} row{'s' if n != 1 else ''}"
        for n, kind in ((whole, "whole-graph"), (nodes, "kernel"))
        if n
    )
    if whole >= lost:
        cause = (
            f"their whole-graph rows are in the export without timestamps ({untimed_text} with start and end 0: "
            "CUPTI could not time them), which the reader leaves out"
        )
    elif untimed_text:
        cause = (
            f"the export holds {untimed_text} without timestamps (start and end 0: CUPTI could not time them), "
            "which the reader leaves out: the work of some of those replays; for the others, graph nodes not "
            "traced, or their records dropped"
        )
    else:
        cause = "the profiler recorded none of their work (graph nodes not traced, or their records dropped)"
    short = "busy time is" if whole >= lost else "busy time and kernel counts are"
    return (
        f"verdict uncertain: {lost} of {graphs.height} CUDA-graph launches have no kernel or graph execution in "
        "the trace, although later launches of their thread (or, for a thread that launches graphs only, of "
        f"their process) have theirs: the device ran those replays, but {cause}, so the {short} short by whole "
        "graphs"
    )


#: Calls that return only when every op launched before them on their device (device-wide) has ended ...
DEVICE_SYNC_NAMES = (
    "cudaDeviceSynchronize",
    "cudaThreadSynchronize",
    "cuCtxSynchronize",
    "hipDeviceSynchronize",
)
#: ... and calls that do so for one stream: device-wide where the process's ops ran on one stream
STREAM_SYNC_NAMES = ("cudaStreamSynchronize", "cuStreamSynchronize", "hipStreamSynchronize")
#: An op ending this long (ns) after a sync call that waited for it returned is no timestamp rounding.
SYNC_CLOCK_TOLERANCE_NS = 20_000


def _devices_and_streams(ops: pl.DataFrame) -> pl.DataFrame:
    """Per process of ``ops`` (``pid``, nulls left out): ``one_device`` (its ops ran on one device) and
    ``one_stream`` (on one (device, stream)). A trace of one process (every op's pid the same) is answered by
    two counts of distinct values, without hashing every op's (pid, device, stream)."""
    pid = ops.get_column("pid")
    if ops.height and not pid.null_count() and pid.min() == pid.max():
        one_device, one_pair = ops.select(
            (pl.col("device").n_unique() == 1).alias("one_device"),
            ((pl.col("device").n_unique() == 1) & (pl.col("stream").n_unique() == 1)).alias("one_stream"),
        ).row(0)
        return pl.DataFrame(
            {"pid": [pid[0]], "one_device": [one_device], "one_stream": [one_pair]},
            schema={"pid": pid.dtype, "one_device": pl.Boolean, "one_stream": pl.Boolean},
        )
    return (
        ops.select("pid", "device", "stream")
        .unique()
        .drop_nulls("pid")
        .group_by("pid")
        .agg((pl.col("device").n_unique() == 1).alias("one_device"), (pl.len() == 1).alias("one_stream"))
    )


def ends_after_sync(trace: Trace) -> str | None:
    """The doubt when ops end after a synchronization call that waited for them had returned: a sync call
    returns only once the work launched before it has ended, so on one clock no such op ends later. Checked
    for device-wide syncs (:data:`DEVICE_SYNC_NAMES`) and, in a process whose ops all ran on one stream of one
    device, stream syncs; per process whose ops ran on one device (a device sync waits for the current device
    only). Counted when half or more of the syncs that waited for work (at least one) show ops ending over
    :data:`SYNC_CLOCK_TOLERANCE_NS` after they returned: the device's clock is ahead of the host's (a real H100
    trace's GPU events shifted 0.3 ms later had moved 3.2 ms of dispatch to in_flight without a word; the
    opposite offset is :func:`tracekit.analyzers.iterations.clock_doubts`'). "Launched before" is read from the
    ids (smaller than the sync call's own), which a process gives in call order."""
    api, ops = trace.api, trace.ops
    if api.is_empty() or ops.is_empty() or "correlation" not in ops.columns:
        return None
    syncs = api.filter(
        pl.col("name").is_in(DEVICE_SYNC_NAMES + STREAM_SYNC_NAMES) & pl.col("start").is_not_null()
    )
    if syncs.is_empty():
        return None
    per_pid = _devices_and_streams(ops)
    syncs = syncs.join(per_pid, on="pid", how="inner").filter(
        pl.col("one_device") & (pl.col("name").is_in(DEVICE_SYNC_NAMES) | pl.col("one_stream"))
    )
    if syncs.is_empty():
        return None
    # Work launched before a sync began carries a smaller id: a process's ids are given in call order
    # (CUPTI, roctracer), so no join with the calls is needed.
    syncs = syncs.filter(pl.col("correlation").is_not_null())
    launched = ops.select("pid", "correlation", "end").filter(
        pl.col("correlation").is_not_null() & pl.col("end").is_not_null() & pl.col("pid").is_not_null()
    )
    if not launched.get_column("correlation").is_sorted():
        launched = launched.sort("correlation")
    reach = pl.col("end").cum_max()
    one_pid = launched.get_column("pid").n_unique() == 1
    launched = launched.with_columns((reach if one_pid else reach.over("pid")).alias("reach"))
    if launched.is_empty() or syncs.is_empty():
        return None
    found = (
        syncs.select(
            "pid", "start", pl.col("end").alias("sync_end"), (pl.col("correlation") - 1).alias("before")
        )
        .sort("before")
        .join_asof(
            launched.select("pid", "correlation", "reach"),
            left_on="before",
            right_on="correlation",
            by="pid",
            strategy="backward",
            check_sortedness=False,  # (both sorted above)
        )
        .drop_nulls("reach")
        .filter(pl.col("reach") > pl.col("start"))  # the sync had work to wait for
    )
    if found.is_empty():
        return None
    late = found.filter(pl.col("reach") - pl.col("sync_end") > SYNC_CLOCK_TOLERANCE_NS)
    if late.height * 2 < found.height:
        return None
    excess_us = late.select((pl.col("reach") - pl.col("sync_end")).median()).item() / 1e3
    return (
        f"verdict uncertain: in {late.height} of {found.height} synchronization calls that waited for device "
        f"work, work launched before the call ended after it returned (median {excess_us:.1f} µs later): a "
        "sync returns only once that work has ended, so the device's times run ahead of the host's (a clock "
        "offset, or durations in a wrong unit), and the GPU busy time inside the host-side iterations, the idle "
        "gaps and their causes (in_flight rather than dispatch) compare times of two clocks"
    )


def compiled_cpu_code(trace: Trace) -> str | None:
    """The doubt when a CPU-only trace ran torch.compile (Inductor) code whose C++ kernels are no operators
    (:data:`COMPILED_CPU_CODE`): their work inside the compiled regions reads as framework overhead, so a
    framework-bound verdict may be the kernels' own time (the reader's warning gives the regions' time outside
    recorded operators). A verdict, not none: the operators it did record are measured."""
    found = trace.meta.get(COMPILED_CPU_CODE)
    if not isinstance(found, dict):
        return None
    if isinstance(found.get("warning"), str) and found["warning"]:
        return "verdict uncertain: " + found["warning"]  # (the reader's line: the analysis says it once)
    unrecorded = found.get("unrecorded_ms")
    shown = f"{unrecorded:.3f} ms of " if isinstance(unrecorded, int | float) else ""
    return (
        f"verdict uncertain: {shown}the torch.compile regions' time lies outside recorded operators, where "
        "Inductor's generated C++ kernels ran unrecorded: that time counts as framework overhead here, though "
        "much of it is the kernels' work (record with torch._inductor.config.cpp.enable_kernel_profile)"
    )


def zero_length_kernels(trace: Trace) -> str | None:
    """The doubt when at least half of the trace's timed kernels (:data:`OVERLAP_MIN_KERNELS` or more) last
    0 ns on a clock finer than a microsecond: no real kernel takes no time (the shortest run for a few
    hundred ns), so their durations were not recorded or were damaged, and the busy time is not measured. A
    clock of whole microseconds (Kineto's and ONNX Runtime's integer µs) rounds sub-µs kernels to 0, which
    says nothing; an Nsight Systems export's clock is nanoseconds whatever its values (kernels that all start
    and end on whole µs there are no sign of a coarser clock)."""
    if trace.ops.is_empty():
        return None
    kernels = trace.ops.filter((pl.col("kind") == "kernel") & pl.col("start").is_not_null()).select(
        "start", "end"
    )
    kernels = kernels.filter(pl.col("end").is_not_null())
    if kernels.height < OVERLAP_MIN_KERNELS:
        return None
    zero, whole_us = kernels.select(
        (pl.col("end") == pl.col("start")).sum(),
        ((pl.col("start") % 1000 == 0) & (pl.col("end") % 1000 == 0)).all(),
    ).row(0)
    if (whole_us and trace.meta.get("format") != "nsys-sqlite") or zero < 0.5 * kernels.height:
        return None
    return (
        f"verdict uncertain: {zero} of {kernels.height} kernels last 0 ns, on a clock finer than a microsecond: "
        "no real kernel takes no time, so their durations were not recorded (or were damaged), and the busy "
        "time and utilization are not measured"
    )


#: :func:`_linked_calls` with fewer calls than the ops over this ratio looks the ops up among the calls.
LINK_PROBE_RATIO = 8


def _linked_calls(calls: pl.DataFrame, ops: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series]:
    """(``calls``' ``pid``, ``thread``, ``start`` with their (pid, correlation) ``key`` (:func:`_call_key`) and
    ``linked``: some op of ``ops`` carries it; the ops' keys, nulls dropped)."""
    exact = pair_keys_fit(calls, ops)
    op_keys = ops.select(_call_key(exact)).get_column("key").drop_nulls()
    keyed = calls.select("pid", "thread", "start", _call_key(exact))
    if keyed.height * LINK_PROBE_RATIO < op_keys.len():
        # few calls among many ops (a range's launches, the graph launches): the ops' keys that are some
        # call's, found by a set of the calls' keys (not of every op's, built anew each time), are the same
        # answer for each call
        mine = keyed.get_column("key").drop_nulls().implode()
        op_side = op_keys.filter(op_keys.is_in(mine))
        return keyed.with_columns(pl.col("key").is_in(op_side.implode()).alias("linked")), op_keys
    return keyed.with_columns(pl.col("key").is_in(op_keys.implode()).alias("linked")), op_keys


def _calls_in_range(
    api: pl.DataFrame, names: Collection[str], start: int, end: int, pid: int | None
) -> pl.DataFrame:
    """The calls of ``names`` with a correlation id that start in [``start``, ``end``) (the last iteration's
    range), of process ``pid`` (any, when None)."""
    window = pl.col("start").is_between(start, end, closed="left") & pl.col("correlation").is_not_null()
    if pid is not None:
        window &= pl.col("pid") == pid
    return calls_named(api.filter(window), names)


def cut_off_launches(trace: Trace, start: int, end: int, pid: int | None) -> int:
    """How many launch calls of process ``pid`` (any, when None) starting in [``start``, ``end``) (the last
    iteration's range) have no op in the trace although an earlier launch of their thread has its op, and
    come after the last such launch: the capture ended before the device ran their work (a capture stopped by
    ``cudaProfilerStop`` or ``--duration`` while the last iteration's kernels were queued), so that
    iteration's busy time is short. Calls made while their thread captured a stream into a graph run
    nothing and are not counted. The range's calls are looked at first: when each has its op (the usual
    case), nothing else of the trace is."""
    api = trace.api
    if api.is_empty() or trace.ops.is_empty() or "thread" not in api.columns:
        return 0
    in_range = _calls_in_range(api, LAUNCH_API_NAMES, start, end, pid)
    if in_range.is_empty():
        return 0
    in_range, _ = _linked_calls(in_range, trace.ops)
    unlinked = in_range.filter(~pl.col("linked")).sort("start")
    if unlinked.is_empty():
        return 0
    unlinked = unlinked.filter(~_capturing(unlinked, api))
    # the last launch with its op, of each thread that has an unlinked one in the range
    threads = unlinked.select("pid", "thread").unique()
    calls = calls_named(api, LAUNCH_API_NAMES).filter(
        pl.col("correlation").is_not_null() & pl.col("start").is_not_null()
    )
    calls = calls.join(threads, on=["pid", "thread"], how="semi", nulls_equal=True)
    calls, _ = _linked_calls(calls, trace.ops)
    last_linked = (
        calls.filter("linked").group_by("pid", "thread").agg(pl.col("start").max().alias("last_linked"))
    )
    tail = unlinked.join(last_linked, on=["pid", "thread"], how="inner", nulls_equal=True)
    return int(tail.filter(pl.col("start") > pl.col("last_linked")).height)


def cut_off_replay(trace: Trace, start: int, end: int, pid: int | None) -> tuple[int, int] | None:
    """(kernels held, kernels of an earlier replay of the same graph) for a graph launch of process ``pid``
    (any, when None) starting in [``start``, ``end``) (the last iteration's range) whose replay the capture
    cut: its ops are the first ones of an earlier replay (the same op names in the same order; of the same
    graph id where the profiler recorded one: another graph with kernels of the same names is no evidence) but fewer, and
    its last op is the last to end on its device; no other replay holds exactly its ops (names, order, count),
    which makes it a whole replay (piecewise CUDA graphs: each step's last piece is a prefix of its others).
    None when there is none. :func:`cut_off_launches` cannot
    see it (the launch has ops); a vLLM decode trace cut halfway through its last step's replay kept that
    step, 5.34 ms busy of 10.72. The range's graph launches are looked at first, then the replays' sizes; op
    names are compared only where an earlier replay is longer (~50 ms at 10^6 graph kernels), and without
    them (not read: the run states the trace's identity) nothing is claimed."""
    api, ops = trace.api, trace.ops
    if api.is_empty() or ops.is_empty():
        return None
    launches = _calls_in_range(api, GRAPH_LAUNCH_NAMES, start, end, pid)
    if launches.is_empty():
        return None
    exact = pair_keys_fit(launches, ops)
    timed = ops.filter(pl.col("start").is_not_null() & pl.col("end").is_not_null())
    last_keys = launches.select(_call_key(exact)).get_column("key").drop_nulls().implode()
    held = timed.select("end", "device", _call_key(exact)).filter(pl.col("key").is_in(last_keys))
    device_ends = timed.group_by("device").agg(pl.col("end").max().alias("device_end"))
    ends = held.join(device_ends, on="device", how="inner", nulls_equal=True).filter(
        pl.col("end") == pl.col("device_end")
    )
    if ends.is_empty():
        return None
    graph_keys = calls_named(api, GRAPH_LAUNCH_NAMES).select(_call_key(exact)).get_column("key").drop_nulls()
    graph = pl.col("graph") if "graph" in timed.columns else pl.lit(None, pl.Int64)
    replays = timed.select("start", "name", graph.alias("graph"), _call_key(exact)).filter(
        pl.col("key").is_in(graph_keys.implode())
    )
    counts = replays.group_by("key").agg(pl.len().alias("ops"), pl.col("graph").drop_nulls().first())
    for key in ends.get_column("key").unique().to_list():
        mine = counts.filter(pl.col("key") == key)
        held_ops = int(mine.get_column("ops")[0]) if mine.height else 0
        # where the profiler recorded graph ids (nsys graphId, Kineto "graph id"), only replays of the same
        # graph are compared: another graph whose kernels have the same names (a layer captured for another
        # shape) says nothing of how long this one's replay is
        held_graph = mine.get_column("graph")[0] if mine.height else None
        same_graph = (
            pl.lit(True)
            if held_graph is None
            else pl.col("graph").is_null() | (pl.col("graph") == held_graph)
        )
        longer = counts.filter((pl.col("ops") > held_ops) & (pl.col("key") != key) & same_graph)
        if not held_ops or longer.is_empty():
            continue
        # a replay of its very size and names elsewhere is a whole one (piecewise CUDA graphs: the last piece
        # of every step is a prefix of the others), so this one is whole too
        equal = counts.filter((pl.col("ops") == held_ops) & (pl.col("key") != key))
        candidates = pl.concat(
            [
                longer.select("key"),
                equal.select("key"),
                pl.DataFrame({"key": [key]}, schema=longer.select("key").schema),
            ]
        )
        ordered = (
            replays.join(candidates, on="key", how="semi")
            .sort("key", "start")
            .with_columns(pl.int_range(pl.len()).over("key").alias("position"))
        )
        cut = ordered.filter(pl.col("key") == key).select("position", "name")
        if cut.get_column("name").null_count():  # names not read (the run states the identity): unknown
            continue
        same = (
            ordered.filter((pl.col("key") != key) & (pl.col("position") < held_ops))
            .join(cut, on="position", how="inner", suffix="_cut")
            .group_by("key")
            .agg((pl.col("name") == pl.col("name_cut")).all().alias("same"), pl.len().alias("matched"))
            .filter(pl.col("same") & (pl.col("matched") == held_ops))
        )
        if same.join(equal, on="key", how="semi").height:
            continue
        same = same.join(longer, on="key", how="semi")
        if same.height:
            whole = counts.join(same, on="key", how="semi").get_column("ops").min()
            return held_ops, int(whole)  # type: ignore[arg-type]
    return None


def operator_scopes(trace: Trace) -> str | None:
    """Operators that may be a user's ``record_function`` scopes (the reader's ``meta["scope_candidates"]``:
    a CPU-only Kineto trace of the 2021 spelling, whose top-level operators outside every operator namespace
    hold other operators): read as operators, the time between the operators they hold counts as busy."""
    found = trace.meta.get("scope_candidates")
    if not isinstance(found, dict):
        return None
    return (
        f"verdict uncertain: {found.get('count')} top-level operators outside every operator namespace hold "
        "other operators "
        f"({found.get('names')}) and may be record_function scopes (Kineto of 2021 wrote scopes as operators; "
        "scopes named '<kind>#<name>' or 'iteration' are read as ranges): their time between the operators "
        "they hold counts as operator busy time"
    )


#: At most this many NVTX "operators" per iteration (median) in a CPU-only Nsight Systems trace read as
#: phases of the iteration, not operators (:func:`phase_ranges_as_operators`): an emit_nvtx trace holds one
#: range per framework operator, hundreds an iteration.
FEW_NVTX_OPERATORS = 4


def phase_ranges_as_operators(trace: Trace, frame: pl.DataFrame) -> str | None:
    """Doubt when a CPU-only Nsight Systems trace's operators (its leaf NVTX ranges inside the iterations) are
    a few per iteration (:data:`FEW_NVTX_OPERATORS`, median): ranges such as 'forward' or 'postprocess' are
    phases that hold the framework's own code, so the time inside them is no operator time, and a verdict of
    'compute-bound' (or the overhead left outside them) says little; None otherwise."""
    if not str(trace.meta.get("format", "")).startswith("nsys") or trace.meta.get("device") != "cpu":
        return None
    if trace.ops.is_empty() or "kernels" not in frame.columns or frame.is_empty():
        return None
    per_iteration = frame.get_column("kernels").median()
    if per_iteration is None or per_iteration > FEW_NVTX_OPERATORS:
        return None
    names = ", ".join(repr(n) for n in trace.ops.get_column("name").unique(maintain_order=True).head(3))
    return (
        f"verdict uncertain: the operators of this CPU-only Nsight Systems trace are its leaf NVTX ranges, "
        f"{per_iteration:g} per iteration (median; {names}): phases of the iteration rather than framework "
        "operators, so the host's framework code inside them counts as operator busy time; annotate operators "
        "(torch.autograd.profiler.emit_nvtx) or profile with torch.profiler or ONNX Runtime's profiler"
    )


def unread_device_work(
    trace: Trace, frame: pl.DataFrame | None = None, threshold: float | None = None
) -> str | None:
    """Doubt when the trace has GPU work in tables its reader does not read (``meta["unread_device_tables"]``:
    an Nsight Systems export's ``CUPTI_ACTIVITY_KIND_MEMCPY2``, ``..._DEVICE_GRAPH_TRACE``, ``..._CDP_KERNEL``
    and the like) or in events it does not read (``meta["unread_device_events"]``: a Kineto file's kernels
    written as begin/end pairs beside complete ones; on a CPU trace its operators) besides the ops it read:
    busy time is short by that work's time, so a framework-bound verdict may be wrong; None otherwise (a trace
    whose only such work is there has no ops and no verdict at all), and None where the verdict is
    compute-bound over the analyzed iterations (``frame``: ``busy_ns``, ``latency_ns``; ``threshold``: the
    analysis' framework-bound utilization): unread work can only raise a busy time already above the
    threshold (review20)."""
    tables = trace.meta.get("unread_device_tables")
    events = trace.meta.get(UNREAD_DEVICE_EVENTS)
    if not (tables or events) or trace.ops.is_empty():
        return None
    if frame is not None and {"busy_ns", "latency_ns"} <= set(frame.columns) and frame.height:
        from tracekit.analyzers.sweep import FRAMEWORK_BOUND_UTILIZATION

        median = frame.select((pl.col("busy_ns") / pl.col("latency_ns")).median()).item()
        limit = FRAMEWORK_BOUND_UTILIZATION if threshold is None else threshold
        if median is not None and median >= limit:
            return None
    cpu = trace.meta.get("device") == "cpu"
    where = (
        f"in tables tracekit does not read ({', '.join(str(t) for t in tables)})"
        if tables
        else f"in events tracekit does not read ({', '.join(str(e) for e in events)})"
    )
    work, busy = ("operator work", "operator busy time") if cpu else ("GPU work", "GPU busy")
    return (
        f"verdict uncertain: the trace holds {work} {where}: {busy} is "
        "short by its time, so the utilization is a lower bound and a framework-bound verdict may be wrong"
    )


def gpu_tracing_stopped(trace: Trace) -> str | None:
    """Doubt when the profiler says it stopped collecting device activity before the capture ended
    (``meta["gpu_tracing_stopped_early"]``: libkineto's "Exceeded max GPU buffer count", "CUPTI stopped
    early"): the iterations after that point hold their launch calls and none of their device work, so they
    read idle where the device ran and the median utilization may be too low; None otherwise."""
    if not trace.meta.get(META_GPU_TRACING_STOPPED) or trace.ops.is_empty():
        return None
    return (
        "verdict uncertain: torch.profiler (libkineto) stopped collecting GPU activity before the capture "
        "ended: the iterations after that point read idle where the device ran, so their GPU busy time and "
        "utilization are too low and a framework-bound verdict may be theirs; profile fewer steps"
    )


def lost_device_events(trace: Trace) -> str | None:
    """Doubt when Nsight Systems says it lost device activity (or events of any kind) during the capture
    (``meta["lost_events"]``, from its ``DIAGNOSTIC_EVENT`` table: "CUPTI dropped N records", buffers
    exhausted, storage truncated): kernels it lost are GPU busy time the trace lacks, so a framework-bound
    verdict may be theirs; None otherwise (or when the trace holds no device op: then there is no verdict)."""
    lost = trace.meta.get(META_LOST_EVENTS)
    if not isinstance(lost, dict) or trace.ops.is_empty():
        return None
    if not (lost.get("device") or lost.get("all")):
        return None
    # (the reader's warning quotes nsys: said once, there)
    return (
        "verdict uncertain: Nsight Systems says it lost events during the capture (its DIAGNOSTIC_EVENT table, "
        "quoted in the warnings): device work it lost is GPU busy time the trace lacks, so the utilization is "
        "a lower bound and a framework-bound verdict may be wrong"
    )


#: Host silence shorter than this (ns) is framework code: the Python between an eager model's operators (at
#: most 0.21 ms in the committed H200 traces, 0.83 ms in the real vLLM B200 step, whose Python tracer shows it
#: busy); a thread blocked waiting (for requests, on a queue, asleep) is silent for milliseconds to seconds.
UNRECORDED_MIN_NS = 1_000_000


def _accounted(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Every interval in which something was recorded (ns, sorted by start, not merged): API calls and CPU
    operators of every host thread, device ops, and each op's wait from its launch call's end to its start
    (launched, not yet running: from the trace's first timestamp, ranges included, for an op whose id has no
    call, launched before the capture: no window starts earlier)."""
    ops = trace.ops.select("start", "end", "pid", "correlation")
    calls = (
        trace.api.filter(pl.col("correlation").is_not_null())
        .group_by("pid", "correlation")
        .agg(pl.col("end").min().alias("call_end"))
    )
    linked = ops.filter(pl.col("correlation").is_not_null()).join(
        calls, on=["pid", "correlation"], how="left"
    )
    origin = min(
        int(v)
        for f in (trace.ops, trace.api, trace.cpu_ops, trace.ranges)
        if (v := f.get_column("start").min()) is not None
    )
    waits = linked.select(pl.col("call_end").fill_null(origin).alias("start"), pl.col("start").alias("end"))
    parts = [
        f.select(pl.col("start").cast(pl.Int64), pl.col("end").cast(pl.Int64))
        for f in (trace.api, trace.cpu_ops, ops, waits)
    ]
    both = pl.concat(parts).filter(pl.col("end") >= pl.col("start")).sort("start")
    return both.get_column("start").to_numpy(), both.get_column("end").to_numpy()


def _windows(frame: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(window starts, window ends) of ``frame``'s rows as ns arrays; a row without a window holds none (its
    end at its start, 0)."""
    known = frame.get_column("window_start").is_not_null() & frame.get_column("window_end").is_not_null()
    ws = frame.get_column("window_start").fill_null(0).to_numpy().astype(np.int64)
    we = pl.select(pl.when(known).then(frame.get_column("window_end")).otherwise(pl.lit(0))).to_series()
    return ws, we.to_numpy().astype(np.int64)


def _silences(trace: Trace, ws: np.ndarray, we: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The stretches of at least :data:`UNRECORDED_MIN_NS` in which nothing was recorded (:func:`_accounted`),
    with those before the first record and after the last as far as the windows (``ws``, ``we``) reach:
    (starts, ends), sorted and disjoint."""
    starts, ends = _accounted(trace)
    if not len(ws) or not len(starts):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    covered = np.maximum.accumulate(ends)
    lo = np.concatenate([[min(int(ws.min()), int(starts[0]))], covered])
    hi = np.concatenate([starts, [max(int(we.max()), int(covered[-1]))]])
    keep = hi - lo >= UNRECORDED_MIN_NS
    return lo[keep], hi[keep]


def _time_within(lo: np.ndarray, hi: np.ndarray, ws: np.ndarray, we: np.ndarray) -> np.ndarray:
    """The time of the intervals [lo, hi) (sorted, disjoint) inside each window [ws, we) (ns)."""
    if not len(lo) or not len(ws):
        return np.zeros(len(ws), dtype=np.int64)
    done = np.concatenate([[0], np.cumsum(hi - lo)])  # time of the intervals before each

    def before(t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(lo, t, side="right") - 1
        at = np.maximum(k, 0)
        return np.where(k >= 0, done[at] + np.minimum(t, hi[at]) - lo[at], 0)

    return np.maximum(before(we) - before(ws), 0)


def unrecorded_ns(trace: Trace, frame: pl.DataFrame) -> pl.Series | None:
    """Per row of ``frame`` (``window_start``, ``window_end``, ns) the time in its window that lies in a stretch
    of at least :data:`UNRECORDED_MIN_NS` in which nothing was recorded (:func:`_accounted`): no host thread in
    an API call or a CPU operator, no device op running, none launched and waiting. Such time is idle and
    ``dispatch`` by the attribution's rules (no op pending: not device-side; no call running: outside API
    calls). None when the trace records no CPU operators (a GPU trace of API calls alone is silent through all
    of its Python: a silence says nothing there) or is CPU-only."""
    found = _silent_stretches(trace, frame)
    if found is None:
        return None
    ws, we, (lo, hi) = found
    return pl.Series("unrecorded_ns", _time_within(lo, hi, ws, we), pl.Int64)


#: (window starts, window ends, the silent stretches (starts, ends)): :func:`_silent_stretches`
Stretches = tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]


def _silent_stretches(trace: Trace, frame: pl.DataFrame) -> Stretches | None:
    """``frame``'s windows and the trace's silent stretches (:func:`_silences`), computed once for every use
    of one check; None where a silence says nothing (:func:`unrecorded_ns`: no CPU operators, no device op, a
    CPU-only trace)."""
    if trace.cpu_ops.is_empty() or trace.ops.is_empty() or trace.meta.get("device") == "cpu":
        return None
    ws, we = _windows(frame)
    return ws, we, _silences(trace, ws, we)


def _pairs(pieces: object) -> tuple[np.ndarray, np.ndarray]:
    """[[start, end, ...], ...] of ``meta["python_threads"]`` as (starts, ends) arrays (malformed rows
    dropped)."""
    rows = (
        [p for p in pieces if isinstance(p, (list, tuple)) and len(p) >= 2]
        if isinstance(pieces, list)
        else []
    )
    try:
        arr = np.array([[int(p[0]), int(p[1])] for p in rows], dtype=np.int64).reshape(-1, 2)
    except (TypeError, ValueError):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return arr[:, 0], arr[:, 1]


def _union(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The union of interval sets: sorted, disjoint, each of positive length; intervals that overlap or touch
    join (:func:`tracekit.model.merged_intervals`, the one union rule, with no tolerance).

    Intervals of no length, and inverted ones (end before start: a malformed piece of a Python tracer record in
    ``meta``), are left out first: they hold no time. ``merged_intervals`` keeps a zero-length interval that
    nothing touches (its documented rule) and gives an inverted one back as it is; here every set must be
    disjoint intervals of positive length, as :func:`_intersect`, :func:`_minus` and :func:`_time_within` take
    them (an inverted interval would count negative time)."""
    lo = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
    hi = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
    keep = hi > lo
    if np.count_nonzero(keep) < 2:  # one interval (or none) is its own union
        return lo[keep], hi[keep]
    merged = merged_intervals(pl.DataFrame({"start": lo[keep], "end": hi[keep]}, schema=_INTERVAL_SCHEMA))
    return merged.get_column("start").to_numpy(), merged.get_column("end").to_numpy()


#: Interval columns as :func:`_union` hands them to :func:`tracekit.model.merged_intervals`.
_INTERVAL_SCHEMA = {"start": pl.Int64, "end": pl.Int64}


def _intersect(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """The intersection of two sorted, disjoint interval sets."""
    (a_lo, a_hi), (b_lo, b_hi) = a, b
    if not len(a_lo) or not len(b_lo):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    lo = np.concatenate([a_lo, b_lo])
    hi = np.concatenate([a_hi, b_hi])
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    # each interval against the furthest end of the intervals before it (of either set; each set disjoint)
    reach = np.concatenate([[np.iinfo(np.int64).min], np.maximum.accumulate(hi)[:-1]])
    ends = np.minimum(hi, reach)
    keep = ends > lo
    return _union([(lo[keep], ends[keep])])


def _minus(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """The intervals of ``a`` outside every interval of ``b`` (both sorted and disjoint)."""
    (a_lo, a_hi), (b_lo, b_hi) = a, b
    if not len(a_lo) or not len(b_lo):
        return a_lo, a_hi
    cuts = np.unique(np.concatenate([a_lo, a_hi, b_lo, b_hi]))
    left, right = cuts[:-1], cuts[1:]
    ka = np.searchsorted(a_lo, left, side="right") - 1
    kb = np.searchsorted(b_lo, left, side="right") - 1
    in_a = (ka >= 0) & (left < a_hi[np.maximum(ka, 0)])
    in_b = (kb >= 0) & (left < b_hi[np.maximum(kb, 0)])
    keep = in_a & ~in_b
    return _union([(left[keep], right[keep])])


#: (running, waiting, the launching threads' blocked calls as (start, end, name)): see :func:`_python_cover`
PythonCover = tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray], list[tuple[int, int, str]]]


def _python_cover(trace: Trace) -> PythonCover | None:
    """What the Python tracer (``meta["python_threads"]``, the Kineto reader's record of the python_function
    events) says of the host threads that launch device work (those with launch calls; else those with API
    calls): *running*, where one of
    them ran Python (calls made or returned at least every 100 µs, outside blocking calls: framework code);
    *waiting*, where each of them was inside a blocking call (a lock, queue, socket, selector, sleep) and no
    thread at all ran Python. None when the trace has no such record for any launching thread. Waiting is
    never claimed when a launching thread has no record (autograd's engine thread, say): its state is
    unknown then."""
    threads = trace.meta.get(META_PYTHON_THREADS)
    if not isinstance(threads, list) or not threads or trace.api.is_empty():
        return None
    record = {(t.get("pid"), t.get("thread")): t for t in threads if isinstance(t, dict)}
    launches = calls_named(trace.api, LAUNCH_API_NAMES)  # (not a watchdog thread's event queries)
    launching = (trace.api if launches.is_empty() else launches).select("pid", "thread").unique().rows()
    mine = [record[k] for k in launching if k in record]
    if not mine:
        return None
    running = _union([_pairs(t.get("running")) for t in mine])
    anyone = _union([_pairs(t.get("running")) for t in record.values()])
    waiting: tuple[np.ndarray, np.ndarray] = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    if len(mine) == len(launching):
        waiting = _union([_pairs(mine[0].get("blocked"))])
        for t in mine[1:]:
            waiting = _intersect(waiting, _union([_pairs(t.get("blocked"))]))
        waiting = _minus(waiting, anyone)
    calls = [
        (int(b[0]), int(b[1]), str(b[2]))
        for t in mine
        for b in (t.get("blocked") or [])
        if isinstance(b, (list, tuple)) and len(b) >= 3
    ]
    return running, waiting, calls


def _top_calls(
    calls: list[tuple[int, int, str]], waited: tuple[np.ndarray, np.ndarray], most: int = 3
) -> str:
    """The blocking calls that held the most of ``waited`` (sorted, disjoint), as "'name' x.xxx ms, ... in all"
    (their time over every iteration); "" when none did."""
    if not calls:
        return ""
    starts = np.array([c[0] for c in calls], dtype=np.int64)
    ends = np.array([c[1] for c in calls], dtype=np.int64)
    took = _time_within(*waited, starts, ends)
    held = pl.DataFrame({"name": [c[2] for c in calls], "ns": took}).group_by("name").agg(pl.col("ns").sum())
    held = held.filter(pl.col("ns") > 0).sort(["ns", "name"], descending=[True, False])
    if held.is_empty():
        return ""
    listed = ", ".join(f"{name!r} {ns / 1e6:.3f} ms" for name, ns in held.head(most).rows())
    more = held.height - min(most, held.height)
    return listed + (f" and {more} more" if more else "") + " in all"


def silence_parts(trace: Trace, frame: pl.DataFrame) -> pl.DataFrame | None:
    """Per row of ``frame`` (``window_start``, ``window_end``) the time in its window's silent stretches
    (:func:`unrecorded_ns`, ``unrecorded_ns``) and, as the Python tracer tells it (:func:`_python_cover`), the
    part of it the threads that launch device work were waiting in a blocking call (``waiting_ns``) or ran
    Python (``python_ns``); the rest (``unrecorded_ns - waiting_ns - python_ns``) no record tells. None when
    :func:`unrecorded_ns` is, or the trace has no Python tracer record of a launching thread."""
    stretches = _silent_stretches(trace, frame)
    cover = None if stretches is None else _python_cover(trace)
    return None if cover is None or stretches is None else _parts(stretches, cover)


def _parts(stretches: Stretches, cover: PythonCover) -> pl.DataFrame:
    """:func:`silence_parts` of the windows and silent stretches ``stretches`` with the trace's
    :func:`_python_cover`."""
    running, waiting, _ = cover
    ws, we, silent = stretches
    return pl.DataFrame(
        {
            "unrecorded_ns": _time_within(*silent, ws, we),
            "waiting_ns": _time_within(*_intersect(silent, waiting), ws, we),
            "python_ns": _time_within(*_intersect(silent, running), ws, we),
        },
        schema=dict.fromkeys(("unrecorded_ns", "waiting_ns", "python_ns"), pl.Int64),
    )


def _silence_answer(trace: Trace, frame: pl.DataFrame, threshold: float | None) -> tuple[str, str] | None:
    """("doubt" | "note", text) of the host-silence check (:func:`unrecorded_host`, :func:`unrecorded_host_note`),
    or None when the silence does not decide the verdict."""
    from tracekit.analyzers.sweep import FRAMEWORK_BOUND_UTILIZATION

    threshold = FRAMEWORK_BOUND_UTILIZATION if threshold is None else threshold
    if frame.is_empty() or not {"latency_ns", "busy_ns", "window_start", "window_end"} <= set(frame.columns):
        return None
    stretches = _silent_stretches(trace, frame)
    if stretches is None:
        return None
    ws, we, silences = stretches
    silent = pl.Series("unrecorded_ns", _time_within(*silences, ws, we), pl.Int64)
    if not silent.sum():
        return None
    cover = _python_cover(trace)
    parts = None if cover is None else _parts(stretches, cover)
    if parts is None:
        parts = pl.DataFrame(
            {"waiting_ns": np.zeros(frame.height, np.int64), "python_ns": np.zeros(frame.height, np.int64)}
        )
    latency, busy, quiet = pl.col("latency_ns"), pl.col("busy_ns"), pl.col("unrecorded_ns")
    wait, python = pl.col("waiting_ns"), pl.col("python_ns")

    def without(gone: pl.Expr) -> pl.Expr:
        return pl.when(latency > gone).then(busy / (latency - gone)).median()

    rows = pl.concat(
        [frame.select(latency, busy), silent.to_frame(), parts.select("waiting_ns", "python_ns")],
        how="horizontal",
    ).filter(latency > 0)
    found = rows.select(
        (busy / latency).median().alias("util"),
        without(quiet).alias("rest"),
        without(wait).alias("no_wait"),
        without(quiet - python).alias("python_only"),
        quiet.median().alias("silent"),
        wait.median().alias("wait"),
        python.median().alias("python"),
        (quiet - wait - python).median().alias("unknown"),
        latency.median().alias("latency"),
    ).row(0, named=True)
    util_now, util_rest = found["util"], found["rest"]
    if util_now is None or util_rest is None or util_now >= threshold or util_rest < threshold:
        return None
    ms = {k: (found[k] or 0) / 1e6 for k in ("silent", "wait", "python", "unknown", "latency")}
    stretch = (
        f"stretches of {UNRECORDED_MIN_NS / 1e6:g} ms or more with no CPU operator or API call on any host "
        "thread and no device op running or launched"
    )
    head = (
        f"the iterations hold {stretch}: a median {ms['silent']:.3f} ms an iteration, of a median latency of "
        f"{ms['latency']:.3f} ms ({found['silent'] / found['latency']:.1%}), counted as dispatch (framework code)"
    )
    hint = _engine_steps_hint(trace, found["latency"])
    if cover is None:
        return "doubt", (
            f"verdict uncertain: {head}; {_why_silent(trace)}; without it the median GPU utilization is "
            f"{util_rest:.1%} (threshold {threshold:.0%}), not {util_now:.1%}" + hint
        )
    if not (parts.get_column("waiting_ns").sum() or parts.get_column("python_ns").sum()):
        return "doubt", (
            f"verdict uncertain: {head}; the trace's Python calls (with_stack) show no call begun or ended on the "
            "thread(s) that launch device work then (a call the tracer does not see, computing, or the trace's "
            "end), so they do not say whether the host was waiting (a serving engine waiting for requests, a "
            f"lock or queue, a sleep) or running framework code; without it the median GPU utilization is "
            f"{util_rest:.1%} (threshold {threshold:.0%}), not {util_now:.1%}" + hint
        )
    python_only = found["python_only"]
    if python_only is not None and python_only < threshold:
        return "note", (
            f"the host was silent in {stretch} for a median {ms['silent']:.3f} ms an iteration; the trace's Python calls (with_stack) show the "
            f"thread(s) that launch device work running Python for a median {ms['python']:.3f} ms of it, in no "
            "blocking call: framework code, rightly counted as dispatch; that Python alone keeps the median GPU "
            f"utilization at {python_only:.1%} (threshold {threshold:.0%}): the framework-bound verdict stands"
        )
    waited = _intersect(silences, cover[1])
    calls = _top_calls(cover[2], waited)
    split = (
        f"of it, the trace's Python calls (with_stack) show the thread(s) that launch device work blocked in a "
        f"waiting call for a median {ms['wait']:.3f} ms an iteration"
        + (f" ({calls})" if calls else "")
        + f", running Python (framework code) for {ms['python']:.3f} ms, and {ms['unknown']:.3f} ms with no Python "
        "call begun or ended (a call the tracer does not see, or computing: unknown)"
    )
    no_wait = found["no_wait"]
    if no_wait is not None and no_wait >= threshold:
        return "doubt", (
            f"verdict uncertain: {head}; {split}: the host was waiting then (for requests, a lock, a queue, a "
            f"socket), not running framework code, and without the waits the median GPU utilization is "
            f"{no_wait:.1%} (threshold {threshold:.0%}), not {util_now:.1%}: the framework-bound verdict rests on "
            "the host's waits" + hint
        )
    return "doubt", (
        f"verdict uncertain: {head}; {split}: the waits alone do not decide the verdict (without them the "
        f"median GPU utilization is {(no_wait or 0):.1%}, without the waits and the unknown time "
        f"{(python_only or 0):.1%}, without all of it {util_rest:.1%}; threshold {threshold:.0%}; now "
        f"{util_now:.1%})" + hint
    )


def unrecorded_host(trace: Trace, frame: pl.DataFrame, threshold: float | None = None) -> str | None:
    """The doubt when the verdict is framework-bound (median utilization of ``frame``'s ``busy_ns`` /
    ``latency_ns`` below ``threshold``, default the analysis' 50%) but would not be without the time in which
    nothing was recorded (:func:`unrecorded_ns`): that time may be the host waiting, not framework code. Where
    the trace's Python tracer tells (:func:`silence_parts`): the doubt says so when the launching threads'
    waits alone carry the verdict; there is none when their Python alone keeps it framework-bound
    (:func:`unrecorded_host_note` says that); else it gives the parts."""
    answer = _silence_answer(trace, frame, threshold)
    return answer[1] if answer is not None and answer[0] == "doubt" else None


def unrecorded_host_note(trace: Trace, frame: pl.DataFrame, threshold: float | None = None) -> str | None:
    """The note (a warning, no doubt) when the host's silent stretches that a framework-bound verdict rests on
    were Python code on the threads that launch device work, as the trace's Python tracer shows, and that
    Python alone keeps the verdict framework-bound; None otherwise."""
    answer = _silence_answer(trace, frame, threshold)
    return answer[1] if answer is not None and answer[0] == "note" else None


def _why_silent(trace: Trace) -> str:
    """Why a silence may be no framework code, as the trace allows: torch.profiler records nothing for a
    blocked thread; with its Python tracer on (``with_stack``), the blocking call is recorded as a Python event,
    but the trace holds none on the threads that launch device work."""
    waits = "a serving engine waiting for requests, a lock or queue, a sleep"
    if trace.meta.get(META_PYTHON_TRACING):
        return (
            "the trace's Python call events (with_stack) hold none of the threads that launch device work, "
            f"which would say whether the host was waiting then ({waits}) or running framework code"
        )
    return f"torch.profiler records nothing for a thread that is blocked ({waits}), so it may be the host waiting"


def _engine_steps_hint(trace: Trace, median_latency: float) -> str:
    """Where the trace holds serving-engine step ranges shorter than the iterations (vLLM's ``execute_*``
    inside torch.profiler's ``ProfilerStep``): the advice to analyze those, which hold the work alone."""
    from tracekit.analyzers.ranges import ANY_ENGINE_STEP

    if trace.ranges.is_empty():
        return ""
    steps = trace.ranges.filter(on_host() & pl.col("name").str.contains(ANY_ENGINE_STEP))
    if steps.is_empty():
        return ""
    length = steps.select((pl.col("end") - pl.col("start")).median()).item()
    if length is None or length >= median_latency:
        return ""
    name = steps.get_column("name").item(0)
    return f"; the trace holds the engine's own steps ({name!r}, ...), which hold the work alone: --range names them"


def idle_steps(trace: Trace, frame: pl.DataFrame, threshold: float | None = None) -> str | None:
    """The doubt when the analyzed iterations include serving-engine *idle* steps (no request: SGLang's
    ``step[IDLE bs=0]``, a data-parallel rank's padding or dummy forward; :mod:`tracekit.analyzers.steps`) and
    the verdict over all iterations (median utilization of ``frame``'s ``busy_ns`` / ``latency_ns`` against
    ``threshold``, default the analysis' 50%) differs from the verdict over the steps that served requests
    (prefill, decode, mixed): the headline then speaks for steps that ran no inference. ``frame``: the
    iterations with ``iteration``, ``range_start``, ``range_end``, ``name`` (and ``pid``), as the range choice
    gives them."""
    from tracekit.analyzers.ranges import ANY_ENGINE_STEP
    from tracekit.analyzers.steps import SERVED_CLASSES, step_classes
    from tracekit.analyzers.sweep import FRAMEWORK_BOUND_UTILIZATION, bound_of

    threshold = FRAMEWORK_BOUND_UTILIZATION if threshold is None else threshold
    needed = {"iteration", "range_start", "range_end", "name", "latency_ns", "busy_ns"}
    if frame.is_empty() or trace.ranges.is_empty() or not needed <= set(frame.columns):
        return None
    if not trace.ranges.get_column("name").unique().str.contains(ANY_ENGINE_STEP).any():
        return None
    ranges = frame.select(
        "iteration", "range_start", "range_end", "name", *(["pid"] if "pid" in frame.columns else [])
    )
    classes = step_classes(ranges, trace).select("iteration", pl.col("step_class").cast(pl.String))
    rows = (
        frame.select("iteration", (pl.col("busy_ns") / pl.col("latency_ns")).alias("util"))
        .filter(pl.col("util").is_not_null() & pl.col("util").is_finite())
        .join(classes, on="iteration", how="left")
    )
    idle = rows.filter(pl.col("step_class") == "idle")
    served = rows.filter(pl.col("step_class").is_in(SERVED_CLASSES))
    if idle.is_empty() or served.is_empty():
        return None
    median_all, median_served = rows.get_column("util").median(), served.get_column("util").median()
    verdict_all, verdict_served = bound_of(median_all, threshold), bound_of(median_served, threshold)
    if verdict_all == verdict_served:
        return None
    return (
        f"verdict uncertain: {idle.height} of the {rows.height} steps are idle steps (no request: a "
        "data-parallel rank's padding or dummy forward, such as SGLang's step[IDLE bs=0]), and the median GPU "
        f"utilization {median_all:.1%} ({verdict_all}-bound) is theirs: the {served.height} steps that served "
        f"requests have a median of {median_served:.1%} ({verdict_served}-bound; threshold {threshold:.0%}); "
        "a --range pattern matching only the steps that served requests analyzes those alone"
    )


def doubts(trace: Trace, frame: pl.DataFrame, threshold: float | None = None) -> list[str]:
    """Every check's doubt (:func:`collapsed_iterations` on the analyzed iterations ``frame``); ``threshold``:
    the analysis' framework-bound utilization (``--bound-threshold``), which the checks that weigh the verdict
    take (default 50%)."""
    return findings(trace, frame, threshold)[0]


def findings(
    trace: Trace, frame: pl.DataFrame, threshold: float | None = None
) -> tuple[list[str], list[str]]:
    """(every check's doubt, as :func:`doubts`; the notes of the checks that answer instead of doubting:
    :func:`unrecorded_host_note`), each check run once."""
    silence = _silence_answer(trace, frame, threshold)
    kind, said = silence if silence is not None else (None, None)
    found = [
        unread_device_work(trace, frame, threshold),
        gpu_tracing_stopped(trace),
        lost_device_events(trace),
        collapsed_iterations(frame),
        implausible_durations(trace),
        implausible_ranges(trace, frame),
        stream_overlap(trace),
        reused_correlations(trace),
        ops_of_shared_ids(trace),
        unlinked_ops(trace, frame),
        lost_kernels(trace),
        lost_graph_replays(trace),
        zero_length_kernels(trace),
        ends_after_sync(trace),
        operator_scopes(trace),
        compiled_cpu_code(trace),
        phase_ranges_as_operators(trace, frame),
        said if kind == "doubt" else None,  # unrecorded_host's
        idle_steps(trace, frame, threshold),
    ]
    return [d for d in found if d is not None], [said] if kind == "note" and said else []
