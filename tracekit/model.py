"""The normalized trace model every reader produces and every analyzer consumes.

All timestamps are integer nanoseconds on one clock (the reader's choice of origin, consistent across frames).
Frames are polars DataFrames with exactly the columns and dtypes below, so analyzers never need to know
which profiler wrote the trace.
"""

from __future__ import annotations

import weakref
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

#: Device operations: GPU kernels, memcpy and memset (``kind`` = "kernel" | "memcpy" | "memset"), whole CUDA
#: graph executions where the profiler did not record their kernels one by one (``kind`` = "graph": Nsight
#: Systems' ``--cuda-graph-trace=graph``), or, on a
#: CPU-only trace, operator executions (``kind`` = "operator": ORT ``Node`` events, leaf torch.profiler ops).
#: ``correlation`` links an op to the API call that launched it (null when unknown); ``pid`` scopes it.
#: ``graph`` is the CUDA graph id when the op ran as a graph node, else null.
#: The kinds of device op (an Enum: one byte a row on traces of millions of ops).
OP_KIND = pl.Enum(["kernel", "memcpy", "memset", "operator", "graph"])

OPS_SCHEMA: dict[str, pl.DataType] = {
    "start": pl.Int64,
    "end": pl.Int64,
    "device": pl.Int32,
    "stream": pl.Int64,
    "pid": pl.Int64,
    "correlation": pl.Int64,
    "graph": pl.Int64,
    "kind": OP_KIND,
    "name": pl.String,
}

#: Host API calls (CUDA runtime or driver, HIP). ``name`` has version suffixes stripped
#: (``cudaLaunchKernel_v7000`` -> ``cudaLaunchKernel``); ``kind`` = "runtime" | "driver".
API_SCHEMA: dict[str, pl.DataType] = {
    "start": pl.Int64,
    "end": pl.Int64,
    "pid": pl.Int64,
    "thread": pl.Int64,
    "correlation": pl.Int64,
    "kind": pl.String,
    "name": pl.String,
}

#: Annotated CPU ranges: NVTX push/pop and start/end ranges, torch.profiler user annotations and
#: ProfilerStep ranges, ORT ``model_run`` sessions. ``depth`` is the nesting depth on its thread (0 = top).
RANGES_SCHEMA: dict[str, pl.DataType] = {
    "start": pl.Int64,
    "end": pl.Int64,
    "pid": pl.Int64,
    "thread": pl.Int64,
    "depth": pl.Int32,
    "domain": pl.String,
    "name": pl.String,
}

#: Sampled GPU metrics (Nsight Systems ``--gpu-metrics-device``). ``value`` in the metric's own unit
#: (``unit``, e.g. "%"); ``device`` is the GPU the sample came from.
GPU_METRICS_SCHEMA: dict[str, pl.DataType] = {
    "timestamp": pl.Int64,
    "device": pl.Int32,
    "metric": pl.String,
    "unit": pl.String,
    "value": pl.Float64,
}

#: Per-kernel metrics (Nsight Compute, or Kineto's per-kernel estimates). ``kernel`` is the kernel's
#: 0-based launch order within the report, ``range`` the innermost NVTX range it ran in (or null).
KERNEL_METRICS_SCHEMA: dict[str, pl.DataType] = {
    "kernel": pl.Int64,
    "name": pl.String,
    "range": pl.String,
    "duration_ns": pl.Int64,
    "metric": pl.String,
    "unit": pl.String,
    "value": pl.Float64,
}

#: Optional: the host's top-level CPU operators of a GPU trace (torch.profiler ``cpu_op``/``Operator`` events
#: not nested in another operator on their thread, ``ProfilerStep#N`` excluded), on the ops' clock. Empty
#: unless the reader fills it; the idle-time attribution (:mod:`tracekit.analyzers.attribution`) names the
#: dispatch time it finds inside them after them. On CPU-only traces the operators are the ``ops`` already.
CPU_OPS_SCHEMA: dict[str, pl.DataType] = {
    "start": pl.Int64,
    "end": pl.Int64,
    "pid": pl.Int64,
    "thread": pl.Int64,
    "name": pl.String,
}

#: On request only (:data:`ON_REQUEST_FRAMES`): each kernel's launch dimensions as its timeline recorded them
#: (Kineto's ``grid``/``block`` args, nsys's ``CUPTI_ACTIVITY_KIND_KERNEL.gridX``..``blockZ``), found among the
#: ``ops`` by ``stream``, ``start`` and ``end`` (a key two kernels share is no kernel's). The Nsight Compute
#: join (:mod:`tracekit.analyzers.kernel_metrics`) compares them with ncu's; nothing else reads them.
LAUNCH_DIMS: tuple[str, ...] = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")
LAUNCHES_SCHEMA: dict[str, pl.DataType] = {
    "stream": pl.Int64,
    "start": pl.Int64,
    "end": pl.Int64,
    **{dim: pl.Int64 for dim in LAUNCH_DIMS},
}

SCHEMAS: dict[str, dict[str, pl.DataType]] = {
    "ops": OPS_SCHEMA,
    "api": API_SCHEMA,
    "ranges": RANGES_SCHEMA,
    "gpu_metrics": GPU_METRICS_SCHEMA,
    "kernel_metrics": KERNEL_METRICS_SCHEMA,
    "cpu_ops": CPU_OPS_SCHEMA,
    "launches": LAUNCHES_SCHEMA,
}
#: Frames read only when named in the request, never by "everything" (``frames=None``): a cost that one
#: analysis needs (``launches``: the Nsight Compute join's launch check; a second pass over a Kineto file).
ON_REQUEST_FRAMES: frozenset[str] = frozenset({"launches"})
#: every frame, those read on request included (a :data:`FrameSpec`)
ALL_FRAMES: tuple[str, ...] = tuple(SCHEMAS)

#: ``Trace.meta`` key: how many device ops lost their correlation id because their launch call was left out as
#: far (:func:`tracekit.readers.timestamps.launched_by_far_calls`); the reader's warning says them, so the
#: analysis does not say them again as ops that carry no id
OPS_OF_FAR_CALLS = "ops_of_far_calls"
#: ``Trace.meta`` key: how many device ops with no start or no end time the reader (or :class:`Trace`, for
#: those it mended) has said, so that :func:`tracekit.analyzers.iterations.measure_gaps` does not say them again
OPS_WITHOUT_END = "ops_without_end"
#: ``Trace.meta`` key: the API calls read as lasting 0 because their end is unknown -- they ended before they
#: started (:func:`mend_negative_durations`; Kineto's reader: a negative or unreadable ``dur``) --, as
#: ``[pid, start]`` pairs: the analysis withholds the launch figures and idle causes of the iterations that
#: hold them
CALLS_WITHOUT_END = "calls_without_end"

# ``meta`` keys a reader writes and the analysis reads, named once for both sides
#: ONNX Runtime: each ``model_run``'s input shape, when the runs are of two or more (``readers.ort.run_shapes``)
RUN_SHAPES = "run_shapes"
#: ONNX Runtime: the runs that replay a captured graph (``readers.ort.graph_replays``)
GRAPH_REPLAYS = "graph_replays"
#: ONNX Runtime: the runs that ran only a prefix of another run's nodes and stopped (``readers.ort.partial_runs``)
PARTIAL_RUNS = "partial_runs"
#: ONNX Runtime: [nodes on a GPU execution provider, all nodes]
GPU_PROVIDER_NODES = "gpu_provider_nodes"
#: ONNX Runtime: [nodes on a remote execution provider (Azure), all nodes]
REMOTE_PROVIDER_NODES = "remote_provider_nodes"
#: Kineto: evidence that a trace without device activity profiled a GPU program
GPU_PROGRAM_WITHOUT_DEVICE_ACTIVITY = "gpu_program_without_device_activity"
#: Kineto: a CPU-only trace's torch.compile regions whose generated C++ kernels are no operators
COMPILED_CPU_CODE = "compiled_cpu_code"
#: Kineto: the work of the file that was not read, named (kernels, and on a CPU trace operators, written as
#: begin/end pairs); the analysis doubts a framework-bound verdict on it (plausibility.unread_device_work)
UNREAD_DEVICE_EVENTS = "unread_device_events"

#: Names of API calls that launch GPU work (after the version suffix is stripped: ``cudaLaunchKernel_v7000``):
#: CUDA runtime and driver, HIP, Intel XPU (SYCL).
#: Graph launches are included: a graph launch is one call whose correlation id is carried by every kernel of
#: the graph. Each kernel and graph launch has its per-thread default-stream twin (an application built with
#: ``--default-stream per-thread`` calls ``cudaLaunchKernel_ptsz``, and CUPTI names it so; HIP:
#: ``hipLaunchKernel_spt``), which launches the same way (``_ptds`` marks calls that are synchronous, none of
#: them a launch).
_LAUNCHES: tuple[str, ...] = (
    "cudaLaunchKernel",
    "cudaLaunchKernelExC",
    "cudaLaunchCooperativeKernel",
    "cudaLaunchCooperativeKernelMultiDevice",
    "cudaGraphLaunch",
    "cuLaunchKernel",
    "cuLaunchKernelEx",
    "cuLaunchCooperativeKernel",
    "cuGraphLaunch",
    # older launch calls CUPTI still names: the driver API's deprecated ``cuLaunch``/``cuLaunchGrid``/
    # ``cuLaunchGridAsync`` (still exported by libcuda) and multi-device cooperative launch, and the runtime's
    # ``cudaLaunch`` (CUDA 9 and before, behind ``<<<>>>`` with ``cudaConfigureCall``)
    "cuLaunch",
    "cuLaunchGrid",
    "cuLaunchGridAsync",
    "cuLaunchCooperativeKernelMultiDevice",
    "cudaLaunch",
    "hipLaunchKernel",
    "hipLaunchKernelExC",  # HIP's cudaLaunchKernelExC
    "hipDrvLaunchKernelEx",  # HIP's cuLaunchKernelEx (HIP 6.5; cluster launches)
    "hipExtLaunchKernel",
    "hipModuleLaunchKernel",
    "hipExtModuleLaunchKernel",
    "hipLaunchCooperativeKernel",
    "hipLaunchCooperativeKernelMultiDevice",
    "hipModuleLaunchCooperativeKernel",
    "hipModuleLaunchCooperativeKernelMultiDevice",
    "hipExtLaunchMultiKernelMultiDevice",
    "hipHccModuleLaunchKernel",
    "hipGraphLaunch",
    # Intel XPU, as Kineto's XPU plugin records them (category ``xpu_runtime``): SYCL's Unified Runtime and,
    # before it, its Plugin Interface. The Level Zero calls these make (``zeCommandListAppendLaunchKernel``,
    # category ``xpu_driver``) run nested inside them, one per launch, and are left out: counted too, every
    # launch would count twice.
    "urEnqueueKernelLaunch",
    "urEnqueueKernelLaunchWithArgsExp",
    "urEnqueueKernelLaunchCustomExp",
    "urEnqueueCooperativeKernelLaunchExp",
    "piEnqueueKernelLaunch",
    "piextEnqueueKernelLaunchCustom",
    "piextEnqueueCooperativeKernelLaunch",
    # Cambricon MLU, as torch_mlu's Kineto fork records them (category ``mlu_runtime``; its
    # ApiListCommon.cpp): a kernel launch, and the replay of a task topology (CNDrv's CUDA graph).
    "cnInvokeKernel",
    "cnInvokeKernelEx",
    "cnTaskTopoEntityInvoke",
)
_PER_THREAD: dict[str, str] = {
    "cudaLaunchKernel": "_ptsz",
    "cudaLaunchKernelExC": "_ptsz",
    "cudaLaunchCooperativeKernel": "_ptsz",
    "cudaGraphLaunch": "_ptsz",
    "cuLaunchKernel": "_ptsz",
    "cuLaunchKernelEx": "_ptsz",
    "cuLaunchCooperativeKernel": "_ptsz",
    "cuGraphLaunch": "_ptsz",
    "hipLaunchKernel": "_spt",
    "hipLaunchCooperativeKernel": "_spt",
    "hipGraphLaunch": "_spt",
}
LAUNCH_API_NAMES: tuple[str, ...] = _LAUNCHES + tuple(name + suffix for name, suffix in _PER_THREAD.items())
#: The graph launches among :data:`LAUNCH_API_NAMES`: one call replays a whole CUDA (HIP, MLU task topology)
#: graph.
GRAPH_LAUNCH_NAMES: tuple[str, ...] = tuple(
    name for name in LAUNCH_API_NAMES if "GraphLaunch" in name or name == "cnTaskTopoEntityInvoke"
)
#: API name suffixes that do not change what a call does: a per-thread default-stream mark with a version on
#: either side (the runtime's ``cudaLaunchKernel_ptsz_v7000``, the driver's ``cuStreamBeginCapture_v2_ptsz``).
API_NAME_SUFFIX = r"(_v\d+)?(_ptsz|_ptds|_spt)?(_v\d+)?$"


def calls_named(api: pl.DataFrame, names: Collection[str]) -> pl.DataFrame:
    """The rows of ``api`` whose name, :data:`API_NAME_SUFFIX` stripped, is one of ``names``. Each distinct
    name is matched once (a trace holds a handful of names among millions of calls)."""
    return api.filter(names_mask(api, names))


#: Per frame (by identity, while it lives: :func:`names_mask`): its distinct names, and the masks asked of it.
_NAME_MASKS: dict[int, tuple[weakref.ref[pl.DataFrame], dict[Any, pl.Series]]] = {}


def _forget_masks(key: int) -> None:
    _NAME_MASKS.pop(key, None)


def _masks_of(frame: pl.DataFrame) -> dict[Any, pl.Series]:
    """The masks (and distinct names) found so far for ``frame``, kept until it is freed: an analysis asks the
    same question of the trace's million API calls several times (which are launches, graph launches,
    syncs), and each answer costs a hash of every name. Frames are never changed in place here."""
    key = id(frame)
    entry = _NAME_MASKS.get(key)
    if entry is None or entry[0]() is not frame:
        entry = (weakref.ref(frame), {})
        _NAME_MASKS[key] = entry
        weakref.finalize(frame, _forget_masks, key)
    return entry[1]


def names_mask(frame: pl.DataFrame, names: Collection[str], strip: bool = True) -> pl.Series:
    """Per row of ``frame``: whether its ``name`` is one of ``names`` (null where the name is null), as
    ``pl.col("name").is_in(names)`` says; ``strip``: the name with :data:`API_NAME_SUFFIX` stripped, as
    :func:`calls_named` matches. Each distinct name is matched once, and the answer is kept for the life of
    ``frame`` (:func:`_masks_of`), so that asking again costs nothing."""
    masks = _masks_of(frame)
    key = (tuple(names), strip)
    found = masks.get(key)
    if found is not None:
        return found
    distinct = masks.get("distinct")
    if distinct is None:
        distinct = masks["distinct"] = frame.get_column("name").unique().drop_nulls()
    base = distinct.str.replace(API_NAME_SUFFIX, "") if strip else distinct
    wanted = distinct.filter(base.is_in(list(names)))
    if wanted.is_empty() or wanted.len() == distinct.len():
        # none of the names, or every name of the frame: the answer is known without looking a name up
        every = pl.lit(not wanted.is_empty())
        found = frame.select(pl.when(pl.col("name").is_not_null()).then(every).alias("name")).to_series()
    else:
        found = frame.select(pl.col("name").is_in(wanted.implode())).to_series()
    masks[key] = found
    return found


#: What a reader should read: None (everything), a collection of frame names (those frames, all columns),
#: or a mapping frame name -> the columns needed (None: all of them). See :func:`wanted_frames`.
FrameSpec = Mapping[str, Collection[str] | None] | Collection[str] | None


def wanted_frames(frames: FrameSpec) -> dict[str, frozenset[str] | None]:
    """Normalize a :data:`FrameSpec` to {frame name: columns or None (all)}; None asks for every frame but
    those read on request only (:data:`ON_REQUEST_FRAMES`: :data:`ALL_FRAMES` names them too).

    Readers may read more than asked (frames and columns they cannot skip cheaply); what they skip stays
    empty (frames) or null (columns). Unknown frame or column names raise ValueError."""
    if frames is None:
        return {name: None for name in SCHEMAS if name not in ON_REQUEST_FRAMES}
    items = frames.items() if isinstance(frames, Mapping) else ((name, None) for name in frames)
    out: dict[str, frozenset[str] | None] = {}
    for name, cols in items:
        if name not in SCHEMAS:
            raise ValueError(f"unknown frame {name!r}; frames are {', '.join(SCHEMAS)}")
        if cols is not None:
            if isinstance(cols, str):
                raise ValueError(f"columns of {name!r} must be a collection of names, not a string")
            unknown = set(cols) - set(SCHEMAS[name])
            if unknown:
                raise ValueError(f"unknown column(s) {', '.join(sorted(unknown))} of frame {name!r}")
            cols = frozenset(cols)
        out[name] = cols
    return out


#: The ``domain`` of a range that spans device work, not the host's (Kineto's ``gpu_user_annotation``: the
#: GPU-side copy of a user range).
GPU_SIDE_DOMAIN = "gpu"

# Keys of ``Trace.meta`` that readers set and the analysis' doubts read (one spelling for both sides):
#: nsys: what its DIAGNOSTIC_EVENT table says was lost (CUPTI records dropped, NVTX discards, truncation).
META_LOST_EVENTS = "lost_events"
#: Kineto: libkineto logged that it stopped collecting GPU activity before the trace ended.
META_GPU_TRACING_STOPPED = "gpu_tracing_stopped_early"
#: Kineto: the trace holds the Python tracer's events (``with_stack``).
META_PYTHON_TRACING = "python_tracing"
#: Kineto: the Python tracer's record per thread (running Python, blocking calls), from those events.
META_PYTHON_THREADS = "python_threads"
#: Kineto: how many device ops carry a correlation id that calls of several processes use, with nothing to
#: tell which process launched them (each linked to its id's first call).
META_OPS_OF_SHARED_IDS = "ops_of_shared_ids"


def on_host() -> pl.Expr:
    """Whether a range marks the host's work: every range but the GPU-side copies (:data:`GPU_SIDE_DOMAIN`); a
    range without a domain is the host's."""
    return pl.col("domain").ne_missing(GPU_SIDE_DOMAIN)


def newly_covered(start: str, end: str, *by: str) -> pl.Expr:
    """Per row of a frame sorted by (``by``..., ``start``): the part of its interval [start, end) that no
    earlier row of its group (``by``) covered, in ns (>= 0). Summed over a group, the length of the union of
    its intervals: overlapping or nested intervals count once (:func:`union_ns` for one group)."""
    reach = pl.col(end).cum_max().shift(1)
    if by:
        reach = reach.over(*by)
    return (pl.col(end) - pl.max_horizontal(start, reach.fill_null(pl.col(start)))).clip(lower_bound=0)


def union_ns(starts: pl.Series, ends: pl.Series) -> int:
    """Length (ns) of the union of the intervals [starts, ends) (rows with a null end point left out)."""
    frame = pl.DataFrame({"s": starts, "e": ends}).drop_nulls().sort("s", "e")
    if frame.is_empty():
        return 0
    return int(frame.select(newly_covered("s", "e").sum()).item())


def merged_intervals(
    frame: pl.DataFrame,
    start: str = "start",
    end: str = "end",
    by: Collection[str] = (),
    tolerance: int = 0,
) -> pl.DataFrame:
    """The union of the intervals [``start``, ``end``) of each group of ``frame`` (rows alike in the columns of
    ``by``; the whole frame without ``by``), as disjoint intervals: columns ``by``..., ``start``, ``end``, one
    row per merged interval, sorted by (``by``..., ``start``).

    Intervals that overlap, nest, touch (one ends where the next starts) or lie at most ``tolerance`` ns
    apart are one (``tolerance`` >= 0: a gap of ``tolerance`` ns or less is timestamp rounding, not a gap);
    so each merged interval begins more than ``tolerance`` ns after the previous one of its group ends, and
    with ``tolerance`` 0 their lengths sum to the length of the union (:func:`newly_covered`). Each merged
    interval is what its rows form by that rule, chained: [0, 10), [11, 12), [13, 20) with ``tolerance`` 1 are
    [0, 20). An interval of no length is kept (a zero-length merged interval where no other is near it).
    Rows with a null ``start`` or ``end``, or an ``end`` before their ``start``, have no interval and are left
    out; a null in ``by`` is a group like
    any other value. ``frame`` may be in any order (sorted here when it is not already, :func:`sort_frame`).

    One pass over the rows: a row starts a merged interval when it starts more than ``tolerance`` after the
    running maximum of the ends before it (within its group), and a merged interval ends at that running
    maximum on its last row. The running maximum is taken over the whole frame, one vectorized scan, when
    each group's first interval ends at or after every earlier group's intervals (groups one after another in
    time, as iterations are: then it is the group's own), else per group (a windowed scan)."""
    if tolerance < 0:
        raise ValueError(f"tolerance must be >= 0, not {tolerance}")
    keys = list(by)
    rows = frame.select(*keys, start, end).drop_nulls([start, end]).filter(pl.col(end) >= pl.col(start))
    rows = sort_frame(rows, [*keys, start], [False] * (len(keys) + 1))
    if rows.is_empty():
        return rows
    first = pl.int_range(pl.len()) == 0
    for key in keys:
        first = first | pl.col(key).ne_missing(pl.col(key).shift(1))
    marked = rows.with_columns(pl.col(end).cum_max().alias("_reach"), first.alias("_first"))
    reach = pl.col("_reach").shift(1)
    dtype = rows.schema[end]
    if tolerance and dtype.is_integer():
        # an end within ``tolerance`` of the type's largest value: the running maximum clipped, so that adding
        # ``tolerance`` cannot wrap round (no start lies past the largest value: the comparison is the same)
        largest = pl.select(dtype.max()).item()
        if marked.get_column("_reach")[-1] > largest - tolerance:
            reach = reach.clip(upper_bound=largest - tolerance)
    if keys and marked.select((pl.col("_first") & (pl.col("_reach") != pl.col(end))).any()).item():
        # a group begins before an earlier group's last end: the running maximum must be the group's own
        marked = marked.with_columns(pl.col(end).cum_max().over(keys).alias("_reach"))
    new = pl.col("_first") | (pl.col(start) > reach + tolerance)
    marked = marked.with_columns(new.alias("_new"))
    last = pl.col("_new").shift(-1, fill_value=True)  # a merged interval's last row: before the next's first
    return marked.select(
        *(pl.col(key).filter("_new") for key in keys),
        pl.col(start).filter("_new"),
        pl.col("_reach").filter(last).alias(end),
    )


def sort_frame(frame: pl.DataFrame, by: list[str], descending: list[bool]) -> pl.DataFrame:
    """``frame.sort(by, descending=descending, maintain_order=True)``, skipping the sort (and its copy of
    every column) when the frame is already in that order, which is the common case for profiler tables.

    The check is vectorized: every row compared with the previous one, key by key. Frames with nulls in
    the keys are always sorted (nulls come first)."""
    if frame.height < 2:
        return frame
    if frame.select(pl.any_horizontal(pl.col(by).null_count() > 0)).item():
        return frame.sort(by, descending=descending, maintain_order=True)
    first = frame.get_column(by[0])
    if not first.is_sorted(descending=descending[0]):  # out of order on the first key: out of order
        return frame.sort(by, descending=descending, maintain_order=True)
    if len(by) == 1 or not frame.select((pl.col(by[0]) == pl.col(by[0]).shift(1)).any()).item():
        # in order on the first key, with no tie for a later key to order: in order
        return frame.with_columns(first.set_sorted(descending=descending[0]))
    in_order = pl.lit(True)
    # Lexicographic: from the last key to the first, "in order" = strictly in order on this key, or tied on
    # it and in order on the later keys.
    for key, desc in zip(reversed(by), reversed(descending), strict=True):
        cur, prev = pl.col(key), pl.col(key).shift(1)
        strictly = cur < prev if desc else cur > prev
        in_order = strictly | ((cur == prev) & in_order)
    if frame.select(in_order.slice(1).all()).item():
        # Already in order: say so, as a sort would, so that later operations can use it.
        return frame.with_columns(pl.col(by[0]).set_sorted(descending=descending[0]))
    return frame.sort(by, descending=descending, maintain_order=True)


#: Frames of timed rows (``start``, ``end``) -> what their rows are, in a warning
TIMED_FRAMES: dict[str, str] = {
    "ops": "device ops",
    "api": "API calls",
    "ranges": "ranges",
    "cpu_ops": "CPU operators",
}


#: ``meta`` key a reader sets (True) when it read the API calls' names: a call of no name is then one whose
#: name the trace lacks (:func:`name_unnamed_launches`), not one whose name was not asked for
API_NAMES_READ = "api_names_read"

#: An hour (ns): how far an event may lie from the rest of its trace (the readers' far-timestamp rule,
#: :data:`tracekit.readers.timestamps.FAR_NS`), and how far a launch call may lie from its op's start before
#: the two are no launch delay but a damaged time (:data:`tracekit.analyzers.iterations.LAUNCH_DELAY_MAX_NS`)
HOUR_NS = 3_600 * 10**9


def drop_negative_durations(frame: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """(``frame`` without the rows whose ``end`` is before their ``start``, how many were dropped). Such a row
    has no meaning as an interval (Kineto wrote ``dur`` = -``ts`` for events whose end it missed, kineto#646);
    rows with a null end (a range never closed) are kept. For ranges and CPU operators: device ops and API
    calls keep their place (:func:`mend_negative_durations`)."""
    negative = (pl.col("end") < pl.col("start")).fill_null(False)
    dropped = int(frame.select(negative.sum()).item()) if frame.height else 0
    return (frame.filter(~negative), dropped) if dropped else (frame, 0)


def mend_negative_durations(frame: pl.DataFrame, name: str) -> tuple[pl.DataFrame, int, str]:
    """(``frame`` with the rows whose ``end`` is before their ``start`` mended, how many, what was done to them)
    for the ``ops`` and ``api`` frames (``name``). The start of such a row is known and its end is not. A device
    op keeps its place with no end (it counts as a kernel, in no busy time, and the analysis doubts a verdict on
    it); an API call lasts 0 from its start, so that it still links the device work it launched. Dropped, an
    nsys kernel of end < start had left its iteration a kernel short with its busy time as known, and a launch
    call so stamped had left its kernel in no iteration, 'its call record lost'."""
    negative = (pl.col("end") < pl.col("start")).fill_null(False)
    count = int(frame.select(negative.sum()).item()) if frame.height else 0
    if not count:
        return frame, 0, ""
    if name == "ops":
        done = "they count with no end time (in no busy time)"
        mended = pl.when(negative).then(None).otherwise(pl.col("end"))
    else:
        done = "read as lasting 0 from their start, so each still links the device work it launched"
        mended = pl.when(negative).then(pl.col("start")).otherwise(pl.col("end"))
    return frame.with_columns(mended.alias("end")), count, done


def name_unnamed_launches(api: pl.DataFrame, ops: pl.DataFrame) -> tuple[pl.DataFrame, int, int]:
    """(``api`` with each call of no name that launched a kernel or a whole CUDA graph -- an op carries its
    (pid, correlation) -- named ``cudaLaunchKernel`` or ``cudaGraphLaunch``: a graph launch when an op of it is a
    whole graph, carries a graph id, or when more kernels carry its id than calls do (CUPTI gives a graph's
    kernels their launch's id; one kernel launch runs one kernel), how many were named, how many had
    no name). A damaged export (an nsys name id missing from StringIds, a Kineto call of ``"name": null``) had
    read 0 launches and 0.0 µs of launch time for every iteration, unsaid."""
    unnamed = int(api.get_column("name").null_count())
    # calls per id: an id the profiler reused (a counter that wrapped, merged captures) is carried by as many
    # kernels as calls, one each, and is no graph (review20: 12 reused ids had all read cudaGraphLaunch)
    calls = (
        api.filter(pl.col("correlation").is_not_null())
        .group_by("pid", "correlation")
        .agg(pl.len().alias("_calls"))
    )
    launched = (
        ops.filter(pl.col("kind").is_in(["kernel", "graph"]) & pl.col("correlation").is_not_null())
        .group_by("pid", "correlation")
        .agg(
            (pl.col("kind") == "graph").any().alias("_whole"),
            (pl.col("graph").fill_null(0) != 0).any().alias("_in_graph"),
            (pl.col("kind") == "kernel").sum().alias("_kernels"),
        )
        .join(calls, on=["pid", "correlation"], how="left", nulls_equal=True)
        .select(
            "pid",
            "correlation",
            (
                pl.col("_whole") | pl.col("_in_graph") | (pl.col("_kernels") > pl.col("_calls").fill_null(1))
            ).alias("_graph"),
        )
    )
    joined = api.join(
        launched, on=["pid", "correlation"], how="left", nulls_equal=True, maintain_order="left"
    )
    name = (
        pl.when(pl.col("name").is_null() & pl.col("_graph").is_not_null())
        .then(pl.when(pl.col("_graph")).then(pl.lit("cudaGraphLaunch")).otherwise(pl.lit("cudaLaunchKernel")))
        .otherwise(pl.col("name"))
    )
    named = int(joined.select((pl.col("name").is_null() & pl.col("_graph").is_not_null()).sum()).item())
    return joined.with_columns(name.alias("name")).drop("_graph"), named, unnamed


def drop_repeated_rows(frame: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """(``frame`` (sorted by start, end) with each row that repeats an earlier one in every column dropped, how
    many were dropped). Only rows with a correlation id count: a device op or API call recorded twice by the
    profiler repeats its launch's correlation, while two distinct events without one may agree in every field
    where timestamps are whole microseconds (two sub-microsecond kernels of one name in a row). Only when two
    rows share a start and an end (neighbours once sorted) is the frame hashed at all."""
    if frame.height < 2:
        return frame, 0
    tied = (
        (pl.col("start") == pl.col("start").shift(1)) & (pl.col("end") == pl.col("end").shift(1))
    ).fill_null(False)
    # the rows in a run of equal (start, end): only those can repeat one another, and only they are hashed
    in_tie = tied | tied.shift(-1).fill_null(False)
    candidates = frame.with_row_index("_row").filter(in_tie & pl.col("correlation").is_not_null())
    if candidates.is_empty():
        return frame, 0
    repeats = candidates.filter(~pl.struct(pl.exclude("_row")).is_first_distinct())["_row"]
    if repeats.is_empty():
        return frame, 0
    keep = frame.with_row_index("_row").select(~pl.col("_row").is_in(repeats.implode())).to_series()
    return frame.filter(keep), len(repeats)


def empty_frame(schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """An empty frame with the given schema."""
    return pl.DataFrame(schema=schema)


def conform(frame: pl.DataFrame | None, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """Return ``frame`` with exactly ``schema``'s columns, in order, cast to its dtypes.

    Missing columns are added as nulls; extra columns are dropped. ``None`` gives an empty frame.
    """
    if frame is None or frame.width == 0:
        return empty_frame(schema)
    exprs = []
    for name, dtype in schema.items():
        if name in frame.columns:
            exprs.append(pl.col(name).cast(dtype))
        else:
            exprs.append(pl.lit(None, dtype=dtype).alias(name))
    return frame.select(exprs)


@dataclass
class Trace:
    """A profiler trace in normalized form.

    ``meta`` keys (all optional): ``path``, ``format`` ("nsys-sqlite" | "kineto" | "ort" | "ncu-csv" |
    "ncu-rep"), ``format_version``, ``device`` ("gpu" | "cpu": what the ops frame measured), ``gpu``
    (name), ``gpus`` (list), ``driver``, ``runtime``, ``model``, ``batch_size``, ``seq_len``, ``precision``,
    ``synthetic`` (bool), ``warnings`` (list of strings the reader wants shown); nsys exports add
    ``export_schema_version`` and ``cuda_driver``.
    """

    ops: pl.DataFrame = field(default_factory=lambda: empty_frame(OPS_SCHEMA))
    api: pl.DataFrame = field(default_factory=lambda: empty_frame(API_SCHEMA))
    ranges: pl.DataFrame = field(default_factory=lambda: empty_frame(RANGES_SCHEMA))
    gpu_metrics: pl.DataFrame = field(default_factory=lambda: empty_frame(GPU_METRICS_SCHEMA))
    kernel_metrics: pl.DataFrame = field(default_factory=lambda: empty_frame(KERNEL_METRICS_SCHEMA))
    meta: dict[str, Any] = field(default_factory=dict)
    #: optional (:data:`CPU_OPS_SCHEMA`): empty unless the reader fills it
    cpu_ops: pl.DataFrame = field(default_factory=lambda: empty_frame(CPU_OPS_SCHEMA))
    #: on request only (:data:`LAUNCHES_SCHEMA`): empty unless the read asked for ``launches``
    launches: pl.DataFrame = field(default_factory=lambda: empty_frame(LAUNCHES_SCHEMA))

    def __post_init__(self) -> None:
        self.meta.setdefault("warnings", [])
        for name, schema in SCHEMAS.items():
            frame = conform(getattr(self, name), schema)
            if name in ("ops", "api"):
                if name == "api":
                    self._record_calls_without_end(frame)
                frame, mended, done = mend_negative_durations(frame, name)
                if mended and name == "ops":
                    # (said here: the analysis does not say them again)
                    self.meta[OPS_WITHOUT_END] = int(self.meta.get(OPS_WITHOUT_END) or 0) + mended
                if mended:
                    self.meta["warnings"].append(
                        f"{mended} {self._noun(name)} with a negative duration (end before start: a damaged row or "
                        f"a profiler's lost end time): {done}"
                    )
            elif name in TIMED_FRAMES:
                frame, dropped = drop_negative_durations(frame)
                if dropped:
                    self.meta["warnings"].append(
                        f"{dropped} {TIMED_FRAMES[name]} with a negative duration (end before start, a profiler "
                        "bug such as kineto#646's missing end time) ignored"
                    )
            setattr(self, name, frame)
        self.ops = sort_frame(self.ops, ["start", "end"], [False, False])
        self.api = sort_frame(self.api, ["start", "end"], [False, False])
        for name in ("ops", "api"):
            frame, dropped = drop_repeated_rows(getattr(self, name))
            if dropped:
                self.meta["warnings"].append(
                    f"{dropped} {TIMED_FRAMES[name]} recorded twice (a second event equal to the first in every "
                    "field, its correlation id included) counted once"
                )
                setattr(self, name, frame)
        # (only where the reader read the calls' names: one asked for no names leaves them all null; the flag
        # is taken out of meta, so that a Trace made again from these frames and meta -- a --cache hit -- does
        # not name and say them a second time)
        if (
            self.meta.pop(API_NAMES_READ, False)
            and self.api.height
            and self.ops.height
            and self.api.get_column("name").null_count()
        ):
            self.api, named, unnamed = name_unnamed_launches(self.api, self.ops)
            self.meta["warnings"].append(
                f"{unnamed} API calls have no name (a name id missing from the export's strings, or none "
                f"written): the {named} of them that launched kernels or CUDA graphs (by correlation id) are named "
                "cudaLaunchKernel or cudaGraphLaunch, so that they count as launches; the others stay unnamed "
                "(their time counts as other API time)"
            )
        # Parents before the children they enclose: by start, then longest first.
        self.ranges = sort_frame(self.ranges, ["start", "end"], [False, True])

    @property
    def warnings(self) -> list[str]:
        return self.meta["warnings"]

    def _record_calls_without_end(self, api: pl.DataFrame) -> None:
        """Add the (pid, start) of each call of ``api`` that ends before it starts to
        ``meta[CALLS_WITHOUT_END]`` (a Trace made again from mended frames and this meta, a ``--cache`` hit,
        keeps the list and adds nothing)."""
        negative = api.filter((pl.col("end") < pl.col("start")).fill_null(False))
        if negative.height:
            found = negative.select("pid", "start").rows()
            self.meta[CALLS_WITHOUT_END] = [*self.meta.get(CALLS_WITHOUT_END, []), *map(list, found)]

    def _noun(self, name: str) -> str:
        """What the rows of frame ``name`` are: :data:`TIMED_FRAMES`, but "operators" for the ops of a CPU run."""
        return "operators" if name == "ops" and self.meta.get("device") == "cpu" else TIMED_FRAMES[name]


def busiest_gpu_name(ops: pl.DataFrame, names: dict[int, str]) -> str | None:
    """Name of the GPU (``names``: device id -> name) that ran the most kernels (else the most GPU ops).

    Ties go to the lower device id; devices missing from ``names`` are passed over; None when none is known.
    """
    device = ops.get_column("device")
    if device.len() and not device.null_count() and device.min() == device.max():  # one GPU: no counting
        return names.get(device[0])
    kernels = ops.filter(pl.col("kind") == "kernel")
    counts = (
        (kernels if kernels.height else ops)
        .group_by("device")
        .len()
        .sort(["len", "device"], descending=[True, False])
    )
    return next((names[d] for d in counts.get_column("device").to_list() if d in names), None)


def collective_args_frame(args: dict[str, Any] | None) -> pl.DataFrame:
    """:func:`tracekit.readers.kineto.collective_args` (the Kineto reader's ``meta["collective_args"]``:
    PyTorch's per-kernel collective labels, kept as text) as a frame (``device``, ``stream``, ``start``, ``op``, ``group``: null where not
    known); empty (those columns) for None or a value it does not read."""
    schema = {"device": pl.Int64, "stream": pl.Int64, "start": pl.Int64, "op": pl.String, "group": pl.String}
    try:
        n = int(args["kernels"]) if args else 0
        if n <= 0:
            return pl.DataFrame(schema=schema)
        ints = {
            c: pl.Series([args[c]]).str.split(",").explode().cast(pl.Int64)
            for c in ("device", "stream", "start", "op", "group")
        }
        if any(v.len() != n for v in ints.values()):
            return pl.DataFrame(schema=schema)
        frame = pl.DataFrame({c: ints[c] for c in ("device", "stream", "start")})
        for column, table in (("op", "ops"), ("group", "group_names")):
            names = pl.Series([str(v) for v in args[table]], dtype=pl.String)
            codes = ints[column]
            frame = frame.with_columns(
                pl.when(codes.is_between(0, names.len() - 1))
                .then(names.gather(codes.clip(0, max(names.len() - 1, 0))) if names.len() else None)
                .alias(column)
            )
        return frame.select(pl.col(c).cast(t) for c, t in schema.items())
    except (KeyError, TypeError, ValueError, pl.exceptions.PolarsError):
        return pl.DataFrame(schema=schema)
