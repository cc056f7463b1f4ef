"""Reader for ONNX Runtime profiler JSON (``SessionOptions.enable_profiling``), CPU and CUDA providers.

An ORT profile is a JSON array of chrome-trace complete events. ``ts``/``dur`` are integer microseconds
since profiling started (converted exactly to int64 ns, see :func:`tracekit.readers.kineto.us_to_ns`), so
the profile's resolution is 1 µs. Complete events without a readable ``ts`` are skipped and counted in a
warning; an op (Node event on the CPU, Kernel event on the GPU) without a readable ``dur`` (null, missing,
NaN, Infinity, not a number) gets a null ``end`` (no end time: it counts as an op but in no busy time) and a
warning counts them; ranges read such a duration as 0.

What lands where:

``ranges``
    every ``cat: "Session"`` event: ``model_run`` (one per ``InferenceSession.run``), the executor span
    inside it (``SequentialExecutor::Execute`` / ``ParallelExecutor::Execute``), ``session_initialization``,
    ``model_loading_uri`` / ``model_loading_array`` and the like; ``domain`` "session", pid/thread of the
    event, ``depth`` = nesting depth on the thread (``model_run`` 0, the executor span 1).
``ops``
    ``cat: "Node"`` events whose name ends with ``_kernel_time`` (the ``_fence_before``/``_fence_after``
    events of old ORT versions are skipped) -> kind "operator", name ``"<op_name>:<node name>"`` (e.g.
    ``"MatMul:/encoder/layer.0/attention/MatMul"``, the node name without the ``_kernel_time`` suffix),
    ``device`` -1, ``stream`` = the thread id, ``pid`` = the event's pid, ``correlation``/``graph`` null.
    Node times are host-side: on the CPU provider they are the operator's computation; on the CUDA provider
    they time the host part of the node (argument setup and kernel launches, plus any synchronous copy),
    not the GPU execution, so ``meta["device"]`` stays "cpu" and a warning says how many nodes ran on a GPU
    provider (:data:`GPU_PROVIDERS`: CUDA, its plugin build "CudaPluginExecutionProvider", ROCm, TensorRT,
    TensorRT RTX, MIGraphX, AMDGPU, DirectML, WebGPU, JSEP, CANN). Nodes of providers that compute on their
    configured device (NPU, GPU or CPU) inside a node that waits for it (:data:`SYNCHRONOUS_DEVICE_PROVIDERS`: QNN, OpenVINO, CoreML, NNAPI, VitisAI ...) are that
    device's work and copies seen from the host: a warning says so. Nodes of a remote provider
    (:data:`REMOTE_PROVIDERS`: Azure, a network round trip; ``meta["remote_provider_nodes"]`` [n, of]) and of a
    provider in none of these lists nor :data:`CPU_PROVIDERS` (a plugin EP) get a warning each.
    Control-flow nodes (``If``, ``Loop``, ``Scan``, contrib ``BeamSearch`` ...) run their subgraph's nodes
    inside their own time on their own thread: a Node event that holds another Node event of its thread
    (:func:`_containers`; events of positive length only, so a 0 µs node touching its neighbour holds nothing)
    is a range of domain "node", not an op, and leaves ``operator_types``; a warning counts them by type. Its
    own time (choosing the branch, iterating, passing the subgraph's inputs and outputs -- 3 ms of subgraph
    set-up on an If's first run) is then framework overhead, not operator busy time, and the subgraph's nodes
    count once.
    ``cat: "Kernel"`` events (emitted only by ORT builds with CUDA/ROCm profiling enabled): GPU kernels and
    copies timed by CUPTI/roctracer -> kind "kernel" (names starting with "Memcpy" or ROCm's "hipMemcpy" ->
    "memcpy", "Memset"/"hipMemset" -> "memset"), ``stream`` = args "stream" (decimal, or a hex pointer on ROCm), ``device`` = args "device"
    when present (ORT does not write it: null), ``pid`` = the pid of the session events, ``correlation``
    null (ORT maps CUPTI correlation ids to nodes internally and does not write them). When Kernel events are
    present they are the ops (``meta["device"]`` "gpu") and the Node events become ranges of domain "node"
    instead, so that host time is not counted as device busy time. Older ORT versions write a kernel's
    duration but not when it ran (they stamp it at its node's start + 1 µs); newer ones write CUPTI's start
    shifted onto the CPU clock. Kernels that overlap an earlier op on their stream (only the older stamping
    does that) are queued behind it (:func:`queue_on_streams`) and a warning counts them. ORT 1.8-1.13's CUDA
    profiler (``CudaProfiler``, before ``GPUProfilerBase``) wrote each kernel at its *end* (``ts`` = CUPTI's end
    time): told by its args (``correlation_id``, or ``op_name`` without ``parent_name``, a decimal stream), such
    kernels are read from ``ts - dur``, with a warning (:func:`_from_their_end`). The Kernel event
    ``not_available_due_to_cupti_error`` (CUPTI did not start) is no kernel: it is dropped, with a warning, and
    the profile reads as one without Kernel events.

``cat`` is read in any case ("node", "KERNEL"), as tools that rewrite profiles may spell it. A profile holding
:data:`ORT_MAX_EVENTS` Session and Node events hit ORT's cap, past which it drops events: a warning says so.
``cat: "Api"`` events (ORT 1.2x: execution providers' own timings; the WebGPU EP writes its GPU timestamp
queries there, pid/tid -1, shifted onto the CPU clock only in later versions) are not read; a warning counts
them.

Each session writes its own profile, timed from its own start. ``model_run`` events that overlap an earlier one
on the same thread (one session runs one ``Run`` at a time per thread; concurrent runs are on different
threads) mean several sessions' profiles were merged into one file: a :class:`TraceFormatError`, one line
(:func:`_merged_sessions`). ORT writes the file only at ``end_profiling``: a process killed before leaves it
empty, one killed while writing leaves the array open; both are one line (``load_json``).

``meta``: ``ops_before_parent`` (:func:`kernels_before_parent`: Kernel events that started before the Node
event that launched them began, a clock disagreement the analysis weighs), ``ops_after_run``
(:func:`kernels_after_run`: [Kernel events that ended after the ``model_run`` of their node ended, linked
kernels inside a run, largest overrun ns] -- a run waits for its GPU work unless the run option
``disable_synchronize_execution_providers`` is set -- with a warning; the analysis does not weigh it yet), ``format`` "ort",
``format_version`` (the ORT version when some event's args carry one), ``device``, ``providers`` (execution
providers seen on Node events), ``first_op_inputs`` (the first 8 nodes with an input of rank >= 2: name, input
dims, element types, from ``args.input_type_shape``), ``embedding_inputs`` (up to 8 distinct ``Gather`` nodes
that look up a floating-point table of rank 2 with integer indices -- embedding lookups -- in the same shape
as ``first_op_inputs``, the table first), ``operator_types`` (per ONNX operator type: ``op``, total node time
``ns``, ``count``, the input element ``types`` of its first node, longest total first; what
:mod:`tracekit.analyzers.identify` reads the precision from), ``default_range`` "model_run" with
``run_shapes`` (:func:`run_shapes`: each ``model_run``'s input shape, the first input most of its nodes
take, when the runs are of two or more: ORT GenAI's prompt and token runs, a batch sweep in one session),
``graph_replays`` (:func:`graph_replays`: the runs that replay a captured graph, with a warning),
``partial_runs`` (:func:`partial_runs`: runs that ran a prefix of another run's nodes and stopped -- ORT records
a run that failed at a node, or was stopped by ``RunOptions.terminate``, with the nodes it ran -- with a warning),
``default_range_reason`` (the iteration of an ORT profile is one ``InferenceSession.run``, however many there
are; :func:`tracekit.analyzers.ranges.choose_ranges` honours it), ``session_setup`` (the top-level Session
events that are not ``model_run`` -- ``model_loading_uri``, ``session_initialization`` ... -- each as
``{"name", "ms"}`` in start order: set-up times, reported apart, never an iteration), ``synthetic``
("synthetic" in the file name, or a top-level ``"tracekit_synthetic": true`` object), ``warnings``.

Profiles of every era read the same: ORT 0.x (2019) writes ``_fence_before``/``_fence_after`` Node events and
no ``provider`` or shape args; 1.x adds ``provider``, ``input_type_shape``/``output_type_shape`` and thread
statistics.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from tracekit.errors import TraceFormatError
from tracekit.model import (
    GPU_PROVIDER_NODES,
    GRAPH_REPLAYS,
    OPS_SCHEMA,
    OPS_WITHOUT_END,
    PARTIAL_RUNS,
    RANGES_SCHEMA,
    REMOTE_PROVIDER_NODES,
    RUN_SHAPES,
    Trace,
    conform,
)
from tracekit.readers.kineto import cut_long_names, gc_paused, load_json, us_to_ns
from tracekit.readers.nesting import leaf_mask, nesting_depth
from tracekit.readers.timestamps import FAR_NS, far_events

KERNEL_SUFFIX = "_kernel_time"
#: the suffixes of Node event names that say what the event is (kept when a long name is cut)
_NAME_SUFFIXES = (KERNEL_SUFFIX, "_fence_before", "_fence_after")
#: The Session event of one ``InferenceSession.run``: the iteration of an ORT profile.
MODEL_RUN = "model_run"
GPU_PROVIDERS: tuple[str, ...] = (
    "CUDAExecutionProvider",
    "ROCMExecutionProvider",
    "TensorrtExecutionProvider",
    "MIGraphXExecutionProvider",
    "DmlExecutionProvider",
    # the native WebGPU EP and onnxruntime-web's JSEP encode GPU work and return; Huawei's CANN (Ascend NPU)
    # and NVIDIA's TensorRT RTX EP queue it on a device stream, as CUDA does
    "WebGpuExecutionProvider",
    "JsExecutionProvider",
    "CANNExecutionProvider",
    "NvTensorRTRTXExecutionProvider",
    # ORT 1.25+'s CUDA EP built as a plugin library registers under its own name (cuda_ep_factory.h), and ORT
    # GenAI registers AMD's MIGraphX-based GPU provider (HIP streams) as a plugin: both queue work as CUDA does
    "CudaPluginExecutionProvider",
    "AMDGPUExecutionProvider",
)
#: GPU providers whose kernels, when a profile holds Kernel events, come from CUPTI (the CUDA EP's profiler) or
#: roctracer (the ROCm EP's): those profilers record every kernel the process launches under the ORT event
#: open at its launch, and TensorRT, TensorRT RTX, MIGraphX and AMDGPU have no profiler of their own (only the
#: CUDA, ROCm, WebGPU and VitisAI providers return one from ``GetProfiler``)
TRACED_PROVIDERS: tuple[str, ...] = (
    "CUDAExecutionProvider",
    "CudaPluginExecutionProvider",
    "ROCMExecutionProvider",
    "TensorrtExecutionProvider",
    "NvTensorRTRTXExecutionProvider",
    "MIGraphXExecutionProvider",
    "AMDGPUExecutionProvider",
)
#: Execution providers that compute inside a node that waits for their device (an NPU, GPU or CPU as configured:
#: QNN's HTP, OpenVINO's plugins, CoreML's compute units): their node times are that device's work plus the copies
#: to and from it, seen from the host.
SYNCHRONOUS_DEVICE_PROVIDERS: tuple[str, ...] = (
    "QNNExecutionProvider",
    "OpenVINOExecutionProvider",
    "CoreMLExecutionProvider",
    "NnapiExecutionProvider",
    "VitisAIExecutionProvider",
    "SNPEExecutionProvider",
    "RknpuExecutionProvider",
    "VSINPUExecutionProvider",
)
#: Execution providers whose nodes compute on the host CPU (ORT's own kernels, oneDNN, XNNPACK, Arm's libraries).
CPU_PROVIDERS: tuple[str, ...] = (
    "CPUExecutionProvider",
    "DnnlExecutionProvider",
    "XnnpackExecutionProvider",
    "ACLExecutionProvider",
    "ArmNNExecutionProvider",
)
#: Execution providers whose nodes send their inputs to a remote endpoint and wait for its answer (the Azure EP's
#: Triton / OpenAI invokers): their node time is a network round trip and someone else's computation.
REMOTE_PROVIDERS: tuple[str, ...] = ("AzureExecutionProvider",)
_VERSION_KEYS: tuple[str, ...] = ("ort_version", "onnxruntime_version", "version")
#: ORT's event categories as it spells them; a tool that rewrites a profile may change their case ("node").
CATEGORIES: tuple[str, ...] = ("Session", "Node", "Kernel")
#: How many Session and Node events ORT keeps at most (``Profiler::global_max_num_events_``, 1,000,000 in every
#: version): past it, it drops every later event and only logs "Maximum number of events reached".
ORT_MAX_EVENTS = 1_000_000
_CANONICAL: dict[str, str] = {c.lower(): c for c in CATEGORIES}


def _category(e: dict[str, Any]) -> str | None:
    """The event's ``cat`` as ORT spells it ("node" -> "Node"); other text as it is, None when not text."""
    cat = e.get("cat")
    return _CANONICAL.get(cat.lower(), cat) if isinstance(cat, str) else None


def _events(doc: Any, path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(events, header) of a parsed ORT profile; TraceFormatError when it is not one."""
    header: dict[str, Any] = {}
    if isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        header, doc = doc, doc["traceEvents"]
    if not isinstance(doc, list):
        raise TraceFormatError("not an ONNX Runtime profile: expected a JSON array of events", path)
    events = [e for e in doc if isinstance(e, dict)]
    if not any(_category(e) in CATEGORIES for e in events):
        raise TraceFormatError("not an ONNX Runtime profile: no Session, Node or Kernel events", path)
    return events, header


def _utf8(value: Any) -> Any:
    """``value``, a text with its lone surrogates (which UTF-8 cannot encode) written as their escapes."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def _frame(events: list[dict[str, Any]]) -> pl.DataFrame:
    """The complete events (``ph`` "X" or none) as text columns plus ``order`` (file position), ``start``/
    ``end`` (ns; ``start`` null where ts is unreadable, ``end`` = ``start`` where dur is), ``op_end`` (ns,
    null where dur is unreadable), ``pid_i``/``tid_i``. Events without a readable ts are kept here (their
    ``start`` null): :func:`read` counts and drops them."""
    empty: dict[str, Any] = {}
    with gc_paused():
        rows = [
            (
                e.get("ph"),
                _category(e),
                e.get("name"),
                e.get("pid"),
                e.get("tid"),
                e.get("ts"),
                e.get("dur"),
                (a := e.get("args") if isinstance(e.get("args"), dict) else empty).get("op_name"),
                a.get("provider"),
                a.get("stream"),
                a.get("device"),
                _element_types(a.get("input_type_shape")),
                _first_shape(a.get("input_type_shape")),
                a.get("parent_name"),
                # "1" where the node wrote no output shape (``[]``: a failed node, or outputs that are no
                # tensors), "0" where it wrote some, null where it wrote none (ORT 0.x)
                None if (out := a.get("output_type_shape")) is None else "1" if out == [] else "0",
                # "1" where the args are those ORT's CUDA profiler wrote before 1.14 (:func:`_from_their_end`)
                "1" if "correlation_id" in a or ("op_name" in a and "parent_name" not in a) else None,
                # a plugin EP's kernel (ORT 1.25+, :func:`_plugin_linked`): its node's event name, and the
                # node's ts plus the profiling start on the epoch clock (µs)
                a.get("ort_event_name"),
                a.get("ort_correlation_id"),
            )
            for e in events
        ]
        columns = list(zip(*rows, strict=True))
    names = (
        "ph",
        "cat",
        "name",
        "pid",
        "tid",
        "ts",
        "dur",
        "op_name",
        "provider",
        "stream",
        "device",
        "input_types",
        "first_shape",
        "parent_name",
        "no_output",
        "old_args",
        "ort_event",
        "ort_corr",
    )
    try:
        frame = pl.DataFrame(
            {
                n: pl.Series(n, list(c), dtype=pl.String, strict=False)
                for n, c in zip(names, columns, strict=True)
            }
        )
    except UnicodeEncodeError:
        # a lone surrogate in a name ('\udce9': Python's json.dump writes a surrogateescape-decoded name so),
        # which no UTF-8 string holds: written as its escape ('\\udce9') instead
        frame = pl.DataFrame(
            {
                n: pl.Series(n, [_utf8(v) for v in c], dtype=pl.String, strict=False)
                for n, c in zip(names, columns, strict=True)
            }
        )
    frame = frame.with_row_index("order")
    frame = frame.filter(pl.col("ph").is_null() | (pl.col("ph") == "X"))
    duration = us_to_ns(pl.col("dur"))
    return frame.with_columns(
        start=us_to_ns(pl.col("ts")),
        end=us_to_ns(pl.col("ts")) + duration.fill_null(0),
        # null where dur is unreadable (null, missing, NaN, Infinity, not a number): the ops' end time
        op_end=pl.when(duration.is_not_null()).then(us_to_ns(pl.col("ts")) + duration),
        pid_i=pl.col("pid").cast(pl.Int64, strict=False),
        tid_i=pl.col("tid").cast(pl.Int64, strict=False),
    )


#: An op's end time: null where its dur is unreadable or negative (a damaged event: it ends before it begins, so
#: it has no duration either; a Kernel event's had been clipped to 0 us unsaid, a Node event's dropped as a
#: device op's lost end). Such an op counts, with no busy time, and a warning says how many.
_OP_END = pl.when(pl.col("op_end") >= pl.col("start")).then(pl.col("op_end"))


#: The Kernel event ORT 1.8-1.10 write, alone, when CUPTI could not be started (ts 0, dur 0).
CUPTI_ERROR_EVENT = "not_available_due_to_cupti_error"


def _without_cupti_error(frame: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """``frame`` without ORT's :data:`CUPTI_ERROR_EVENT` Kernel events, and how many there were: no kernel ran
    then, the profiler says it recorded none."""
    error = (pl.col("cat") == "Kernel") & (pl.col("name") == CUPTI_ERROR_EVENT)
    count = frame.select(error.fill_null(False).sum()).item()
    return (frame.filter(~error.fill_null(False)), int(count)) if count else (frame, 0)


def _from_their_end(frame: pl.DataFrame) -> tuple[pl.DataFrame, int, int]:
    """(``frame`` with the Kernel events that ORT 1.8-1.13 stamped at their end read from their start, how many
    were, how many Kernel events there are).

    ORT's CUDA profiler before 1.14 (``CudaProfiler`` in cuda_profiler.cc) wrote each kernel and copy with
    ``ts = DUR(profiling_start, stat.stop_)``: CUPTI's *end* time, its ``dur`` the kernel's length. Its args tell
    it apart: ``correlation_id`` (1.8-1.10), or ``op_name`` without ``parent_name`` (1.11-1.13, op_name "" when
    no node matched); the stream a decimal number. From 1.14 (``GPUProfilerBase``) a kernel is written at its
    start, with both op_name and parent_name when its node is found and neither when not; ROCm's profiler
    wrote op_name without parent_name too, but at the kernel's begin, its stream a pointer ("0x..."). Such a
    kernel starts at ``ts - dur``; one without a readable dur keeps its ts. When that would put one before the
    profile began (ts < dur), the args do not mean that writer (a profile made or rewritten by another tool):
    every kernel is read as written."""
    old = (
        (pl.col("cat") == "Kernel")
        & (pl.col("old_args") == "1")
        & pl.col("stream").str.strip_chars().str.contains(r"^\d+$")
        & pl.col("op_end").is_not_null()
    ).fill_null(False)
    kernels = frame.select((pl.col("cat") == "Kernel").fill_null(False).sum()).item()
    length = pl.col("op_end") - pl.col("start")
    count, before_start = frame.select(
        old.sum().alias("n"), (old & (pl.col("start") < length)).sum().alias("early")
    ).row(0)
    if not count or before_start:
        return frame, 0, int(kernels)
    moved = frame.with_columns(
        start=pl.when(old).then(pl.col("start") - length).otherwise(pl.col("start")),
        end=pl.when(old).then(pl.col("start")).otherwise(pl.col("end")),
        op_end=pl.when(old).then(pl.col("start")).otherwise(pl.col("op_end")),
    )
    return moved, int(count), int(kernels)


#: A kernel may seem to start up to this long (ns) before the node that launched it by rounding alone: ORT
#: cuts both starts to the microsecond.
PARENT_ROUNDING_NS = 2000


def _linked_kernels(frame: pl.DataFrame) -> pl.DataFrame | None:
    """The Kernel events still in place after the Node event that launched them (see
    :func:`kernels_before_parent`), each with ``start``, ``op_end`` and its node's ``node_start`` and
    ``node_pid``; None when there are none."""
    previous = frame.sort("order").with_columns(
        prev_cat=pl.col("cat").shift(1),
        prev_name=pl.col("name").shift(1),
        prev_parent=pl.col("parent_name").shift(1),
    )
    in_place = ((pl.col("prev_cat") == "Node") & (pl.col("prev_name") == pl.col("parent_name"))) | (
        (pl.col("prev_cat") == "Kernel") & (pl.col("prev_parent") == pl.col("parent_name"))
    )
    kernels = previous.filter(
        (pl.col("cat") == "Kernel") & pl.col("parent_name").is_not_null() & in_place.fill_null(False)
    ).select("order", "start", "op_end", name="parent_name")
    nodes = frame.filter(pl.col("cat") == "Node").select(
        "order", "name", node_start="start", node_pid="pid_i", node_tid="tid_i"
    )
    plugin = _plugin_linked(frame, nodes)
    if kernels.is_empty() and plugin is None:
        return None
    linked = (
        kernels.sort("order")
        .join_asof(nodes.sort("order"), on="order", by="name", strategy="backward", check_sortedness=False)
        .filter(pl.col("node_start").is_not_null())
    )
    if plugin is not None:
        linked = pl.concat([linked, plugin.select(linked.columns)]).sort("order")
    return None if linked.is_empty() else linked


def _plugin_linked(frame: pl.DataFrame, nodes: pl.DataFrame) -> pl.DataFrame | None:
    """The Kernel events of a plugin EP's profiler (ORT 1.25+, the CUDA plugin EP's cuda_profiler_plugin.cc)
    linked to the Node event that launched them, in :func:`_linked_kernels`' columns; None when there are none.

    ORT appends a plugin EP's events after all of its own (``PluginEpProfiler::EndProfiling``), so no kernel
    follows its node: each names it instead, by ``ort_event_name`` (the node's event name) and
    ``ort_correlation_id``, the id ORT gave the plugin when the node began: the node's ts plus the profiling
    start on the epoch clock in µs (``PluginEpProfiler::Start``), the same offset for every event. That offset
    is the difference (id - node ts) that most kernel/node pairs of the same name share (each kernel's own node
    gives it once; a node of another run gives it only by chance); a kernel is linked to the node of its name
    at exactly that difference. Kernels that carry a ``parent_name`` are linked in place instead."""
    plugin = frame.filter(
        (pl.col("cat") == "Kernel") & pl.col("parent_name").is_null() & pl.col("ort_event").is_not_null()
    ).select(
        "order", "start", "op_end", name="ort_event", corr=pl.col("ort_corr").cast(pl.Int64, strict=False)
    )
    plugin = plugin.filter(pl.col("corr").is_not_null())
    if plugin.is_empty() or nodes.is_empty():
        return None
    pairs = plugin.join(nodes.drop("order"), on="name").with_columns(
        offset=pl.col("corr") - pl.col("node_start") // 1000
    )
    if pairs.is_empty():
        return None
    offset = pairs.group_by("offset").len().sort(["len", "offset"], descending=[True, False])["offset"][0]
    linked = pairs.filter(pl.col("offset") == offset).unique("order", keep="first")
    return None if linked.is_empty() else linked


def kernels_after_run(frame: pl.DataFrame) -> list[int] | None:
    """[kernels that ended after the ``model_run`` of the node that launched them ended (by more than
    :data:`PARENT_ROUNDING_NS`), kernels linked to a node inside a run, the largest such overrun in ns], or
    None when no kernel did.

    ORT synchronizes the execution provider's streams at the end of each ``Run`` (unless the run option
    ``disable_synchronize_execution_providers`` is set) and records ``model_run`` after that, so every kernel
    a run launched has ended by then: one that ends later was written on another clock than the CPU events
    (the mirror image of :func:`kernels_before_parent`, for GPU times written late instead of early).
    Kernels are linked to their nodes as there; a node belongs to the ``model_run`` of its thread that began
    last before it and holds it (concurrent ``run()`` callers: another thread's run may have begun later and
    ended sooner), else, for a node on a thread that runs none (the parallel executor's pool), to the run of
    its process that began last before it."""
    linked = _linked_kernels(frame)
    if linked is None:
        return None
    runs = (
        frame.filter((pl.col("cat") == "Session") & (pl.col("name") == MODEL_RUN))
        .select(node_pid="pid_i", node_tid="tid_i", node_start="start", run_end="end")
        .sort("node_start")
    )
    if runs.is_empty():
        return None
    linked = linked.filter(pl.col("op_end").is_not_null()).sort("node_start")
    own = linked.join_asof(
        runs, on="node_start", by=["node_pid", "node_tid"], strategy="backward", check_sortedness=False
    )
    by_process = linked.join_asof(
        runs.drop("node_tid"), on="node_start", by="node_pid", strategy="backward", check_sortedness=False
    )
    caller = pl.col("node_tid").is_in(runs.get_column("node_tid").drop_nulls().unique().implode())
    run_end = (
        pl.when(caller.fill_null(False))
        .then(own.get_column("run_end"))
        .otherwise(by_process.get_column("run_end"))
    )
    within = (
        linked.with_columns(run_end=run_end)
        .filter(pl.col("run_end").is_not_null() & (pl.col("node_start") < pl.col("run_end")))
        .select(over=pl.col("op_end") - pl.col("run_end"))
    )
    over = pl.col("over")
    count, after, largest = within.select(
        pl.len(), (over > PARENT_ROUNDING_NS).sum().alias("after"), over.max().alias("largest")
    ).row(0)
    return [int(after), int(count), int(largest)] if after else None


def kernels_before_parent(frame: pl.DataFrame) -> list[int] | None:
    """[kernels that started before the node that launched them began (by more than
    :data:`PARENT_ROUNDING_NS`), kernels linked to a node, the largest such lead in ns], or None when no
    kernel did.

    ORT writes each Kernel event right after its parent Node event (``args.parent_name`` names it) or after
    a kernel of the same node, so the parent is the nearest earlier Node event of that name in file order. A
    kernel cannot start before the node that launched it: when it does, ORT wrote the GPU times on another
    clock than the CPU ones (some versions do not shift CUPTI's kernel times onto the CPU clock, as they do
    for copies). Only kernels still in that place are linked: in a profile whose events were reordered
    (grouped by category, sorted by a tool), the nearest earlier node of that name is another run's."""
    linked = _linked_kernels(frame)
    if linked is None:
        return None
    linked = linked.select(lead=pl.col("node_start") - pl.col("start"))
    lead = pl.col("lead")
    linked_count, before, largest = linked.select(
        pl.len(), (lead > PARENT_ROUNDING_NS).sum().alias("before"), lead.max().alias("largest")
    ).row(0)
    return [int(before), int(linked_count), int(largest)] if before else None


def _element_types(shapes: Any) -> str | None:
    """The element types of a node's inputs (``args.input_type_shape``: ``[{"float": [1, 8]}, {"int64": []}]``)
    as one comma-separated text (``"float,int64"``); None when the node does not record them."""
    if not isinstance(shapes, list):
        return None
    return ",".join(str(next(iter(x))) for x in shapes if isinstance(x, dict) and len(x) == 1)


def _first_shape(shapes: Any) -> str | None:
    """A node's first input dims (``args.input_type_shape``: ``[{"float": [1, 7, 64]}, ...]``) as text
    (``"[1,7,64]"``); None when the node does not record them."""
    if not isinstance(shapes, list) or not shapes or not isinstance(shapes[0], dict) or len(shapes[0]) != 1:
        return None
    dims = next(iter(shapes[0].values()))
    if not isinstance(dims, list):
        return None
    return "[" + ",".join(str(d) for d in dims) + "]"


def _model_runs(session: pl.DataFrame) -> pl.DataFrame:
    """The ``model_run`` events (``pid_i``, ``tid_i``, ``start``, ``end``) in start order, numbered ``_run``."""
    return (
        session.filter(pl.col("name") == MODEL_RUN)
        .select("pid_i", "tid_i", "start", "end")
        .sort("start", "pid_i", "tid_i")
        .with_row_index("_run")
    )


def _inside_runs(events: pl.DataFrame, runs: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """The ``events`` (start order) that start inside one of ``runs`` (:func:`_model_runs`) of the same ``by``
    keys (thread, or process), each with that run's ``_run``, ``run_start`` and ``run_end``: the run that
    began last before the event, when the event starts before its end."""
    return (
        events.sort("start")
        .join_asof(
            runs.select(*by, "_run", run_start="start", run_end="end"),
            left_on="start",
            right_on="run_start",
            by=by,
            strategy="backward",
            check_sortedness=False,
        )
        .filter((pl.col("start") < pl.col("run_end")).fill_null(False))
    )


def run_shapes(session: pl.DataFrame, nodes: pl.DataFrame) -> dict[str, Any] | None:
    """Each ``model_run``'s input shape, when the runs are of two or more: ``{"shapes": [text, ...], "runs":
    [[pid, tid, start ns, shape index or None], ...]}`` (runs in start order), else None.

    A run's shape is the most common first-input dims (:func:`_first_shape`) among its nodes (ties: the one
    met first in start order): a transformer's hidden state ``[batch, tokens, hidden]``, which most of its
    nodes take, so a decode run's attention nodes, whose past length grows by one each run, do not make every
    decode run a shape of its own (ORT GenAI's runs: ``[1,7,3072]`` for a 7-token prompt, then ``[1,1,3072]``
    per generated token). A run's nodes are those of its thread inside it; where none are (the parallel
    executor's pool threads), those of its process inside it when no other run of the process is open then."""
    runs = _model_runs(session)
    shaped = nodes.filter(pl.col("first_shape").is_not_null()).select(
        "pid_i", "tid_i", "start", "first_shape"
    )
    if runs.height < 2 or shaped.is_empty():
        return None
    own = _inside_runs(shaped, runs, ["pid_i", "tid_i"])
    runs_with_own = own.get_column("_run").unique().implode()
    open_runs = runs.with_columns(
        _alone=(pl.col("start") >= pl.col("end").cum_max().shift(1).over("pid_i")).fill_null(True)
        & (pl.col("end") <= pl.col("start").shift(-1).over("pid_i")).fill_null(True)
    )
    pooled = _inside_runs(
        shaped, open_runs.filter(~pl.col("_run").is_in(runs_with_own) & pl.col("_alone")), ["pid_i"]
    )
    linked = pl.concat(
        [own.select("_run", "start", "first_shape"), pooled.select("_run", "start", "first_shape")]
    )
    modal = (
        linked.group_by("_run", "first_shape")
        .agg(pl.len().alias("n"), pl.col("start").min().alias("first"))
        .sort(["_run", "n", "first"], descending=[False, True, False])
        .group_by("_run", maintain_order=True)
        .first()
    )
    shapes = modal.get_column("first_shape").unique(maintain_order=True).to_list()
    if len(shapes) < 2:
        return None
    index = {shape: k for k, shape in enumerate(shapes)}
    keyed = runs.join(modal.select("_run", "first_shape"), on="_run", how="left").sort("_run")
    return {
        "shapes": shapes,
        "runs": [
            [pid, tid, start, None if shape is None else index[shape]]
            for pid, tid, start, shape in keyed.select("pid_i", "tid_i", "start", "first_shape").iter_rows()
        ],
    }


def graph_replays(
    session: pl.DataFrame, nodes: pl.DataFrame, kernels: pl.DataFrame | None = None
) -> dict[str, Any] | None:
    """``{"runs": [[pid, tid, start ns], ...], "of": model_runs}``: the ``model_run`` events that hold no Node
    event of their process, after one that does, and no Kernel event (``kernels``: ``start``); None when there
    are none.

    With graph capture on (the CUDA EP's ``enable_cuda_graph``; TensorRT's, DirectML's and WebGPU's likewise)
    ORT runs the graph's nodes in the first runs (memory allocation, then the capture) and from then on
    ``InferenceSession::Run`` only replays the captured graph: it skips the executor, so the profile holds
    the run's ``model_run`` and no Node event. A run of a normal session always executes nodes. Only in a
    profile with nodes on a GPU provider (:data:`GPU_PROVIDERS`): the CPU provider captures no graph. In a
    build with CUDA profiling the replay's kernels are there (ORT opens the run's profiler event, and so the EP
    profiler's CUPTI correlation, before ``ReplayGraph`` and closes it after; CUPTI gives a graph's kernels
    its launch's correlation id): a run holding a Kernel event is whole, not listed."""
    runs = session.filter(pl.col("name") == MODEL_RUN).select("pid_i", "tid_i", "start", "end").sort("start")
    if runs.height < 2 or nodes.is_empty():
        return None
    if not nodes.select(pl.col("provider").is_in(list(GPU_PROVIDERS)).any()).item():
        return None  # graph capture is a GPU provider's (a CPU session's run without nodes failed early)
    starts = nodes.select("pid_i", "start").sort("pid_i", "start")
    held = runs.with_row_index("_run").join_asof(
        starts.rename({"start": "node_start"}),
        left_on="start",
        right_on="node_start",
        by="pid_i",
        strategy="forward",
        check_sortedness=False,
    )
    empty = held.with_columns(
        _empty=pl.col("node_start").is_null() | (pl.col("node_start") >= pl.col("end"))
    ).sort("_run")
    if kernels is not None and not kernels.is_empty():
        # (kernels carry pid -1 in every ORT version that writes them: matched by time alone)
        first = (
            empty.sort("start")
            .join_asof(
                kernels.select(kernel_start="start").drop_nulls().sort("kernel_start"),
                left_on="start",
                right_on="kernel_start",
                strategy="forward",
                check_sortedness=False,
            )
            .sort("_run")
        )
        worked = (pl.col("kernel_start") < pl.col("end")).fill_null(False)
        empty = first.with_columns(_empty=pl.col("_empty") & ~worked)
    after = empty.filter(pl.col("_empty") & (~pl.col("_empty")).cast(pl.Int64).cum_sum().over("pid_i").gt(0))
    if after.is_empty():
        return None
    return {"runs": [list(r) for r in after.select("pid_i", "tid_i", "start").iter_rows()], "of": runs.height}


#: :func:`partial_runs` compares each run's node sequence with at most this many of the most frequent ones.
_PARTIAL_CANDIDATES = 64


def _session_of_runs(session: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """``runs`` with ``_session``: in a process that holds two or more ``session_initialization`` events
    (profiles of several sessions merged into one file: each session writes one), the (process, number) of
    the last one that began before the run, whose model it ran; null elsewhere (one session: every run is
    of its model, forked processes' runs too)."""
    inits = (
        session.filter(pl.col("name") == "session_initialization")
        .select("pid_i", "start")
        .sort("pid_i", "start")
        .with_columns(_k=pl.int_range(pl.len()).over("pid_i"), _count=pl.len().over("pid_i"))
        .filter(pl.col("_count") > 1)
    )
    if inits.is_empty():
        return runs.with_columns(_session=pl.lit(None, pl.String))
    keyed = runs.sort("start").join_asof(
        inits.select("pid_i", "_k", init_start="start"),
        left_on="start",
        right_on="init_start",
        by="pid_i",
        strategy="backward",
        check_sortedness=False,
    )
    return keyed.with_columns(
        _session=pl.when(pl.col("_k").is_not_null()).then(
            pl.concat_str([pl.col("pid_i").cast(pl.String), pl.col("_k").cast(pl.String)], separator=":")
        )
    ).drop("_k", "init_start")


def partial_runs(session: pl.DataFrame, nodes: pl.DataFrame) -> dict[str, Any] | None:
    """``{"runs": [[pid, tid, start ns], ...], "of": model_runs}``: the ``model_run`` events whose nodes are a
    proper prefix of the nodes another run ran; None when there are none.

    ORT writes ``model_run`` for a run that failed at a node (``Run`` returns the node's error after its
    profiler event is written), holding the nodes it ran, the failing one included, and likewise for a run
    stopped by ``RunOptions.terminate``: such a run ran the first nodes of the graph and stopped. A run's nodes
    are the Node events of its thread inside it, in file order (ORT writes each when it ends, so a control-flow
    node comes after its subgraph's nodes and a branch or trip count that differs makes no prefix). Only in a
    process whose every Node event is on a thread that runs ``model_run`` (the parallel executor's pool
    threads run a varying share of each run's nodes), and a run with no node at all only where no node ran on
    a GPU provider (there it is a graph replay, :func:`graph_replays`). A run is compared with the runs of its
    own session only (:func:`_session_of_runs`: in a file of several sessions' profiles merged, a model whose
    nodes are a prefix of another session's model ran whole), and only with runs at least as frequent as it:
    a failure is the exception, and one first run with extra nodes at its end leaves the others whole."""
    runs = _model_runs(session)
    if runs.height < 2 or nodes.is_empty():
        return None
    callers = runs.select("pid_i", "tid_i").unique()
    pooled = nodes.join(callers, on=["pid_i", "tid_i"], how="anti").get_column("pid_i").unique().implode()
    runs = runs.filter(~pl.col("pid_i").is_in(pooled))
    if runs.height < 2:
        return None
    sep = "\n"
    own = (
        _inside_runs(nodes.select("pid_i", "tid_i", "start", "order", "name"), runs, ["pid_i", "tid_i"])
        .group_by("_run")
        .agg((pl.col("name").fill_null("").sort_by("order") + sep).str.join("").alias("seq"))
    )
    seqs = _session_of_runs(session, runs.join(own, on="_run", how="left")).with_columns(
        pl.col("seq").fill_null("")
    )
    if nodes.select(pl.col("provider").is_in(list(GPU_PROVIDERS)).any()).item():
        seqs = seqs.filter(pl.col("seq") != "")  # a GPU session's run without nodes: a graph replay
    distinct = seqs.group_by("_session", "seq").agg(pl.len().alias("n"))
    longer = (
        distinct.sort(["_session", "n", "seq"], descending=[False, True, False], nulls_last=True)
        .filter(pl.int_range(pl.len()).over("_session") < _PARTIAL_CANDIDATES)
        .select("_session", longer="seq", longer_n="n")
    )
    # (a run is partial only beside whole runs at least as frequent: a failure is the exception, and a first
    # run with extra nodes at its end must not make every later run look stopped)
    prefixes = (
        distinct.join(longer, on="_session", nulls_equal=True)
        .filter(
            (pl.col("longer").str.len_bytes() > pl.col("seq").str.len_bytes())
            & pl.col("longer").str.starts_with(pl.col("seq"))
            & (pl.col("longer_n") >= pl.col("n"))
        )
        .select("_session", "seq")
        .unique()
    )
    prefix = seqs.join(prefixes, on=["_session", "seq"], how="semi", nulls_equal=True)
    failed = _failed_at_last_node(nodes, runs).join(prefix, on="_run", how="anti")
    found = pl.concat([prefix.select(failed.columns), failed]).sort("_run")
    if found.is_empty():
        return None
    partial: dict[str, Any] = {
        "runs": [list(r) for r in found.select("pid_i", "tid_i", "start").iter_rows()],
        "of": session.filter(pl.col("name") == MODEL_RUN).height,
    }
    if (
        failed.height
    ):  # (how many of them ran every node and failed at the last: :func:`_failed_at_last_node`)
        partial["failed_at_last_node"] = failed.height
    return partial


def _failed_at_last_node(nodes: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """The runs of ``runs`` (``_run``, ``pid_i``, ``tid_i``, ``start``) that failed at their last node: every
    node ran, so no prefix rule sees them, but ORT wrote the failing node's event with no output shape
    (``output_type_shape`` [], ``output_size`` "0"; ORT 1.32, real: a Reshape given a shape its input cannot
    take, 141 µs with the error) where an event of the same node name wrote one. A node whose outputs are no
    tensors writes [] in every run, and an empty shape before a run's last node is no failure (ORT stops at
    the failing node)."""
    shaped = nodes.filter(pl.col("no_output") == "0").get_column("name").unique()
    if shaped.is_empty() or not nodes.select((pl.col("no_output") == "1").any()).item():
        return runs.clear().select("_run", "pid_i", "tid_i", "start")
    last = (
        _inside_runs(
            nodes.select("pid_i", "tid_i", "start", "order", "name", "no_output"), runs, ["pid_i", "tid_i"]
        )
        .sort("order")
        .group_by("_run")
        .agg(pl.col("name").last(), pl.col("no_output").last())
    )
    failed = last.filter((pl.col("no_output") == "1") & pl.col("name").is_in(shaped.implode()))
    return runs.join(failed.select("_run"), on="_run", how="semi").select("_run", "pid_i", "tid_i", "start")


def _version(events: list[dict[str, Any]]) -> str | None:
    for e in events:
        args = e.get("args")
        if isinstance(args, dict):
            for key in _VERSION_KEYS:
                if isinstance(args.get(key), str) and args[key]:
                    return args[key]
        if _category(e) == "Node":  # session metadata, when written, precedes the first node
            break
    return None


#: How many operators :func:`_first_op_inputs` keeps.
FIRST_OPS = 8


def _first_op_inputs(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first Node events (in file order, which is start order) with an input of rank >= 2: op name, input
    dims and element types from ``args.input_type_shape`` (``[{"int64": [1, 128]}, ...]``); the contract of
    ``meta["first_op_inputs"]`` read by :mod:`tracekit.analyzers.identify` (batch size, precision)."""
    out: list[dict[str, Any]] = []
    for e in events:  # stops after FIRST_OPS operators: the first model run's first nodes
        args = e.get("args")
        if _category(e) != "Node" or not isinstance(args, dict):
            continue
        shapes = args.get("input_type_shape")
        if not isinstance(shapes, list):
            continue
        pairs = [next(iter(x.items())) for x in shapes if isinstance(x, dict) and len(x) == 1]
        if not any(isinstance(d, list) and len(d) >= 2 for _, d in pairs):
            continue
        name = str(e.get("name") or "").removesuffix(KERNEL_SUFFIX)
        out.append(
            {
                "name": f"{args['op_name']}:{name}" if args.get("op_name") else name,
                "dims": [d if isinstance(d, list) else [] for _, d in pairs],
                "types": [str(t) for t, _ in pairs],
            }
        )
        if len(out) == FIRST_OPS:
            break
    return out


#: ONNX element types of integer tensors (indices).
_INTEGER_ELEMENTS = frozenset({"int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8"})


def _embedding_inputs(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Up to :data:`FIRST_OPS` distinct ``Gather`` nodes (file order) whose first input is a floating-point
    table of rank 2 and whose second input is an integer tensor: the model's embedding lookups (token,
    position, token-type tables), as ``{"name", "dims": [table, ids], "types": [...]}``. Shape gathers (an
    integer first input) are not lookups."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for e in events:
        args = e.get("args")
        if _category(e) != "Node" or not isinstance(args, dict) or args.get("op_name") != "Gather":
            continue
        shapes = args.get("input_type_shape")
        if not isinstance(shapes, list) or len(shapes) < 2:
            continue
        pairs = [next(iter(x.items())) for x in shapes[:2] if isinstance(x, dict) and len(x) == 1]
        if len(pairs) != 2:
            continue
        (table_type, table), (ids_type, ids) = pairs
        if not (
            isinstance(table, list)
            and len(table) == 2
            and str(table_type).startswith(("float", "bfloat", "double"))
            and str(ids_type) in _INTEGER_ELEMENTS
            and isinstance(ids, list)
        ):
            continue
        name = f"Gather:{str(e.get('name') or '').removesuffix(KERNEL_SUFFIX)}"
        if name in seen:
            continue
        seen.add(name)
        out.append({"name": name, "dims": [table, ids], "types": [str(table_type), str(ids_type)]})
        if len(out) == FIRST_OPS:
            break
    return out


def _operator_types(nodes: pl.DataFrame) -> list[dict[str, Any]]:
    """Per ONNX operator type of the Node events: ``op``, total node time ``ns``, ``count`` and the input
    element ``types`` of its first node that records them; longest total first (ties by name)."""
    if nodes.is_empty():
        return []
    per_op = (
        nodes.filter(pl.col("op_name").is_not_null() & (pl.col("op_name") != ""))
        .group_by("op_name")
        .agg(
            (pl.col("end") - pl.col("start")).sum().alias("ns"),
            pl.len().alias("count"),
            pl.col("input_types").drop_nulls().first().alias("types"),
        )
        .sort(["ns", "op_name"], descending=[True, False])
    )
    return [
        {
            "op": row["op_name"],
            "ns": int(row["ns"]),
            "count": int(row["count"]),
            "types": row["types"].split(",") if row["types"] else [],
        }
        for row in per_op.iter_rows(named=True)
    ]


def _containers(nodes: pl.DataFrame) -> pl.Series:
    """True for the Node events (``start``, ``op_end``, ``pid_i``, ``tid_i``; row order) that hold another
    Node event of their thread: control-flow nodes (If, Loop, Scan, BeamSearch ...) run their subgraph's nodes
    inside their own time, on their own thread. Only events of positive length take part, as parent or as
    child: ORT truncates ts and dur to the µs, so consecutive nodes never overlap, but a 0 µs node may start
    just when the node before it ended or when the next one starts; such a node holds nothing and is in
    nothing. Of two events with the same times, the earlier in file order is the parent."""
    if nodes.is_empty():
        return pl.Series("container", [], dtype=pl.Boolean)
    indexed = nodes.select("start", end="op_end", pid="pid_i", tid="tid_i").with_row_index("_row")
    positive = indexed.filter(pl.col("end") > pl.col("start"))
    holders = positive.filter(~leaf_mask(positive, ["pid", "tid"])).get_column("_row")
    return indexed.select(pl.col("_row").is_in(holders.implode()).alias("container")).to_series()


def _without_repeated_runs(frame: pl.DataFrame) -> tuple[pl.DataFrame, int, int]:
    """(``frame`` without the copies of each ``model_run`` recorded twice, how many runs were recorded more than
    once, how many events were left out in all). A run recorded twice is a ``model_run`` event equal to an
    earlier one in every field read, of positive length: one thread runs one ``Run`` at a time, so two such
    events are one run written twice (a profile concatenated with part of itself), not two sessions' runs
    (:func:`_merged_sessions`). The events that start inside such a run (its nodes, and its kernels, on any
    thread) were written as often as it was: of each group of ``c`` events equal in every field, the first
    ``max(1, c // m)`` are kept (``m``: how often the run was written), so that a node the run itself ran
    twice in one microsecond (a 0 µs node of a loop's body) stays twice, and an event written once stays.
    Kineto's and nsys' readers count a record written twice once in the same way (tracekit.model)."""
    fields = [c for c in frame.columns if c != "order"]
    is_run = ((pl.col("cat") == "Session") & (pl.col("name") == MODEL_RUN)).fill_null(False)
    runs = frame.filter(is_run & (pl.col("op_end") > pl.col("start")).fill_null(False))
    if runs.height < 2:
        return frame, 0, 0
    copies = runs.group_by(fields).agg(pl.len().alias("_m"), pl.col("order").min().alias("_first"))
    repeated = copies.filter(pl.col("_m") > 1)
    if repeated.is_empty():
        return frame, 0, 0
    dropped_runs = (
        runs.join(repeated.select(*fields, "_first"), on=fields, how="inner", nulls_equal=True)
        .filter(pl.col("order") != pl.col("_first"))
        .select("order")
    )
    windows = repeated.select(run_start="start", run_end="op_end", _m="_m").sort("run_start")
    inside = (
        frame.filter(~is_run)
        .select("order", *fields)
        .sort("start")
        .join_asof(windows, left_on="start", right_on="run_start", strategy="backward")
        .filter((pl.col("start") < pl.col("run_end")).fill_null(False))
    )
    keep = pl.max_horizontal(pl.lit(1), pl.len().over(fields) // pl.col("_m"))
    extra = inside.sort("order").filter(pl.int_range(pl.len()).over(fields) >= keep).select("order")
    left_out = pl.concat([dropped_runs, extra]).get_column("order")
    kept = frame.filter(~pl.col("order").is_in(left_out.implode()))
    return kept, repeated.height, left_out.len()


def _without_repeated_setup(frame: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """(``frame`` without the Session events other than ``model_run`` (set-up: ``model_loading_uri``,
    ``session_initialization``) that repeat an earlier one in every field read, of positive length, the names
    of those left out). One session writes each once, and one thread cannot begin two equal spans at one
    time: such a copy is the event written again (a profile concatenated with itself), which had been read as
    a second session merged into the file ('2 session_initialization events in one process')."""
    fields = [c for c in frame.columns if c != "order"]
    setup = (
        (pl.col("cat") == "Session") & (pl.col("name") != MODEL_RUN) & (pl.col("op_end") > pl.col("start"))
    ).fill_null(False)
    events = frame.filter(setup)
    if events.height < 2:
        return frame, []
    copies = events.sort("order").filter(pl.int_range(pl.len()).over(fields) > 0)
    if copies.is_empty():
        return frame, []
    kept = frame.filter(~pl.col("order").is_in(copies.get_column("order").implode()))
    return kept, copies.get_column("name").to_list()


def _merged_sessions(session: pl.DataFrame) -> int:
    """How many ``model_run`` events start before an earlier one on the same thread (pid, tid) ended: one
    session runs one ``Run`` at a time per thread, so this happens only where the profiles of several
    sessions, each timed from its own start, were merged into one array."""
    runs = session.filter(pl.col("name") == MODEL_RUN).sort(["pid_i", "tid_i", "start", "order"])
    if runs.height < 2:
        return 0
    keys = ["pid_i", "tid_i"]
    reach = pl.col("end").cum_max().shift(1).over(keys)
    return int(runs.select((pl.col("start") < reach).fill_null(False).sum()).item())


#: The executor's span inside a run (``SequentialExecutor::Execute``, ``ParallelExecutor::Execute``): top-level
#: in a run-level profile (newest ORT: one file per run, possibly without ``model_run``), a run, never set-up.
EXECUTOR_SUFFIX = "Executor::Execute"


def _session_setup(session: pl.DataFrame) -> list[dict[str, Any]]:
    """The top-level Session events other than ``model_run`` and the executor's span (model loading, session
    initialization), in start order, each ``{"name", "ms"}``: set-up time, not inference."""
    top = (
        session.filter(pl.col("depth") == 0)
        .filter(
            (pl.col("name") != MODEL_RUN) & ~pl.col("name").str.ends_with(EXECUTOR_SUFFIX).fill_null(False)
        )
        .sort("start")
    )
    return [
        {"name": name, "ms": (end - start) / 1e6}
        for name, start, end in top.select("name", "start", "end").iter_rows()
        if name is not None
    ]


#: :func:`_truncation_warning` speaks when ORT's cut to whole µs takes at least this share of the ops' time
TRUNCATION_SHARE = 0.01
#: ... and when the profile holds at least this many ops (0.025 ms of time cut, on average)
TRUNCATION_OPS = 50


def _truncation_warning(events: pl.DataFrame, device: str) -> list[str]:
    """A warning when the ops' durations are short by a noticeable share for ORT's cut to whole µs.

    ORT writes every ts and dur cut toward zero to whole µs: ``duration_cast<microseconds>`` for its own events
    (``TimeDiffMicroSeconds``), ``(end - start) / 1000`` in integers for CUPTI's kernels (cupti_manager.cc).
    Each op's written duration is short by 0 to 1 µs, 0.5 on average: busy time is short by half a µs per op,
    and the gaps between ops (idle time, framework overhead) long by as much. Said when that is at least
    :data:`TRUNCATION_SHARE` of the ops' written time (ops of 50 µs or less on average: GPU kernels, small
    CPU operators) and there are :data:`TRUNCATION_OPS` ops or more; never for a profile with a fractional ts
    or dur (not ORT's own writing)."""
    text = events.get_column("dur").cast(pl.String).str.strip_chars()
    timed = events.filter(pl.col("op_end").is_not_null() & (pl.col("op_end") >= pl.col("start")))
    if timed.is_empty() or not text.drop_nulls().str.contains(r"^-?\d+$").all():
        return []
    if (
        not events.get_column("ts")
        .cast(pl.String)
        .str.strip_chars()
        .drop_nulls()
        .str.contains(r"^-?\d+$")
        .all()
    ):
        return []
    count = timed.height
    mean_us = timed.select((pl.col("op_end") - pl.col("start")).mean()).item() / 1e3
    if mean_us > 0.5 / TRUNCATION_SHARE or count < TRUNCATION_OPS:
        return []
    what, busy = (
        ("GPU ops (Kernel events)", "GPU busy")
        if device == "gpu"
        else ("operators (Node events)", "operator busy")
    )
    share = f"about {0.5 / mean_us:.0%} of their written time" if mean_us > 0 else "all of their time"
    return [
        f"ONNX Runtime writes each event's ts and dur cut to whole µs (toward zero): each of the {count} {what}, "
        f"{mean_us:.2f} µs long on average as written, is short by 0 to 1 µs, 0.5 µs on average, so {busy} time "
        f"is short by {share} ({count * 0.5e-3:.3f} ms over the profile; at most {count * 1e-3:.3f} ms) and idle "
        "time and framework overhead are long by as much"
    ]


def _stream(col: pl.Expr) -> pl.Expr:
    """args "stream": decimal text (CUDA) or a hex pointer "0x..." (ROCm) -> Int64."""
    text = col.str.strip_chars()
    hexa = text.str.strip_prefix("0x").str.strip_prefix("0X")
    return (
        pl.when(text.str.starts_with("0x") | text.str.starts_with("0X"))
        .then(hexa.str.to_integer(base=16, strict=False))
        .otherwise(text.cast(pl.Int64, strict=False))
    )


def queue_on_streams(ops: pl.DataFrame) -> tuple[pl.DataFrame, int, int]:
    """(the GPU ops with each one's start moved to when its stream was free, how many moved, the largest move
    in ns).

    Older ORT versions do not write when the GPU ran a kernel: their ``GPUProfilerBase::MergeEvents`` stamps
    each Kernel event at its launching node's start + 1 µs (plus the durations of the node's earlier kernels),
    keeping CUPTI's duration; newer ones keep CUPTI's start, shifted onto the CPU clock
    (``offset_to_add_to_gpu_timestamps_``), and their kernels never overlap on a stream, so nothing moves. A node's host time is mostly shorter than its
    kernels, so as written the kernels of consecutive nodes overlap on one stream, which a stream cannot do,
    and a union of them (busy time) misses the overlap. Here each op starts at the later of its written start
    and the end of the op before it on its stream (pid, stream; written start, then file order): the earliest
    the GPU could have run it. Ops that do not overlap stay where they are; an op without an end time (null
    ``end``) takes no time in the queue and keeps a null end."""
    if ops.is_empty():
        return ops, 0, 0
    keys = ["pid", "stream"]
    duration = (pl.col("end") - pl.col("start")).fill_null(0).clip(lower_bound=0)
    queued = (
        ops.with_row_index("_row")
        .with_columns(_dur=duration)
        .sort([*keys, "start", "_row"], nulls_last=True)
        .with_columns(_done=pl.col("_dur").cum_sum().over(keys))
        # end_i = max(start_i, end_(i-1)) + dur_i = done_i + max over j <= i of (start_j - done_(j-1))
        .with_columns(
            _end=pl.col("_done") + (pl.col("start") - (pl.col("_done") - pl.col("_dur"))).cum_max().over(keys)
        )
        .with_columns(_start=pl.col("_end") - pl.col("_dur"))
        .sort("_row")
    )
    shift = pl.col("_start") - pl.col("start")
    moved = queued.select((shift > 0).sum().alias("moved"), shift.max().alias("largest")).row(0)
    out = queued.with_columns(
        start=pl.col("_start"), end=pl.when(pl.col("end").is_not_null()).then(pl.col("_end"))
    ).drop("_row", "_dur", "_done", "_end", "_start")
    return out, int(moved[0] or 0), int(moved[1] or 0)


def _whole_arrays(text: str) -> int:
    """How many JSON arrays ``text`` holds one after another, whitespace between them, 0 when anything else is
    in it."""
    decoder = json.JSONDecoder()
    count, at = 0, 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return count
        try:
            value, at = decoder.raw_decode(text, at)
        except ValueError:
            return 0
        if not isinstance(value, list):
            return 0
        count += 1


#: how ORT's Profiler::EndProfiling writes an event's name and what follows it, byte for byte
_RAW_NAME, _AFTER_NAME = '"name" :"', '","args" :'


def _unescaped_name(text: str, pos: int) -> str | None:
    """The event name, as ORT wrote it, on the line of ``text`` where JSON parsing failed at ``pos``, when that
    line is ORT's own writing (``"name" :"`` ... ``","args" :``) and the name holds what JSON needs escaped (a
    backslash, a double quote, a control character); else None. ORT writes names and text args unescaped
    (``profile_stream_ << R"("name" :")" << rec.name``, profiler.cc, every version)."""
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    line = text[start : end if end >= 0 else len(text)]
    at = line.find(_RAW_NAME)
    close = line.find(_AFTER_NAME, at + len(_RAW_NAME)) if at >= 0 else -1
    if close < 0:
        return None
    name = line[at + len(_RAW_NAME) : close]
    return name if any(c in name for c in '\\"') or any(ord(c) < 0x20 for c in name) else None


def _load(path: Path) -> Any:
    """:func:`load_json`, whose one line, for a file holding a whole JSON value followed by more text, says how
    an ORT profile comes to be so. Each session writes its array into the file it opened (truncated) at its start:
    processes forked from one session share that open file and append their copies one after another (each
    whole, each with the events recorded before the fork); sessions that opened one file name write from the
    first byte over each other."""
    try:
        return load_json(path)
    except TraceFormatError as err:
        cause = err.__cause__
        if isinstance(cause, json.JSONDecodeError) and cause.msg != "Extra data":
            name = _unescaped_name(cause.doc, cause.pos)
            if name is not None:
                raise TraceFormatError(
                    f"{err.message}; ONNX Runtime writes event names as they are, without JSON escaping, so a "
                    f"name holding a backslash or a double quote breaks its profile (here {name!r}): rename the "
                    "node, or escape the name in the file",
                    path,
                ) from cause
        if not (isinstance(cause, json.JSONDecodeError) and cause.msg == "Extra data"):
            raise
        arrays = _whole_arrays(cause.doc)
        if arrays > 1:
            why = (
                f"the file holds {arrays} whole JSON arrays one after another: ONNX Runtime writes one array per "
                "session into the file the session opened when it started, and processes forked from a process "
                "holding a profiled session share that open file, so each wrote its copy of the profile after the "
                "others' (each copy holds the events recorded before the fork, with the parent's pid, then its own "
                "process's); profile each process with its own session"
            )
        else:
            why = (
                f"a whole JSON array ends at char {cause.pos} and more text follows it: ONNX Runtime writes one "
                "array per session into the file the session opened when it started, so several sessions wrote "
                "this file name (sessions given one profile_file_prefix within the same second, in ORT versions "
                "that name files by the second), each from the first byte over the others: the text after the "
                "first array is the remains of a longer profile; give each session its own profile_file_prefix"
            )
        raise TraceFormatError(f"{err.message}; {why}", path) from cause


#: The event categories tracekit reads that are work (:func:`_without_far_events`), as it names them.
_FAR_WORK = {"Node": "Node events", "Kernel": "Kernel events"}
_FAR_RUNS = "Session events"


def _without_far_events(frame: pl.DataFrame, warnings: list[str]) -> pl.DataFrame:
    """``frame`` without the Session, Node and Kernel events stamped impossibly far from the rest of the
    profile (:func:`tracekit.readers.timestamps.far_events`, the rule of the nsys and Kineto readers), with a
    warning naming them. ORT stamps events in microseconds since the profiling began, so a damaged ``ts`` or
    ``dur`` of 9.2e15 µs is 292 years: read as it is, such a 'model_run' is an iteration of 9.2e12 ms, and
    such a node holds every later node of its thread (read as a control-flow node, the later runs' operators
    become ranges).

    Two passes, as the runs place the work: Node and Kernel events first, with the Session events (the runs)
    as anchors, so that runs after a silence of hours (a server profiled through a quiet spell) keep their
    work; then the Session events, with the work kept as anchors: a run far from all work (or ending more
    than an hour after its group's last event began) is left out. Only a minority of each category is ever
    left out."""
    start_f = pl.col("start").cast(pl.Float64)
    end_f = start_f + us_to_ns(pl.col("dur")).cast(pl.Float64).fill_null(0.0)
    read_cats = pl.col("cat").is_in([*_FAR_WORK, "Session"])
    lo, hi, last = frame.filter(read_cats).select(lo=start_f.min(), hi=start_f.max(), last=end_f.max()).row(0)
    if lo is None or (max(hi, last) - lo <= FAR_NS and last < 2.0**63):
        return frame  # (every profile of an hour or less: one pass)
    cats = frame.get_column("cat")
    start = frame.get_column("start")
    ends = frame.select(end_f).to_series()
    none_start = pl.Series(values=[None] * frame.height, dtype=start.dtype)
    none_end = pl.Series(values=[None] * frame.height, dtype=pl.Float64)

    def only(mask: pl.Series) -> tuple[pl.Series, pl.Series]:
        return start.zip_with(mask, none_start), ends.zip_with(mask, none_end)

    is_session = (cats == "Session").fill_null(False)
    # (the session's own setup, model_loading_uri and session_initialization, is where ORT's clock begins:
    # never far by itself, however long before the first run it was: a server loads its model at start and
    # serves its first request hours later; its figures are durations)
    is_setup = is_session & (frame.get_column("name") != "model_run").fill_null(False)
    is_run = is_session & ~is_setup
    work = {noun: only((cats == cat).fill_null(False)) for cat, noun in _FAR_WORK.items()}
    far, said = far_events(
        {noun: s for noun, (s, _) in work.items()},
        anchors=[only(is_session)[0]],
        ends={noun: e for noun, (_, e) in work.items()},
    )
    far_work = far[_FAR_WORK["Node"]] | far[_FAR_WORK["Kernel"]]
    kept_work = (cats.is_in(list(_FAR_WORK)).fill_null(False)) & ~far_work
    runs_start, runs_end = only(is_run)
    far_runs, said_runs = far_events(
        {_FAR_RUNS: runs_start}, anchors=[only(kept_work)[0], only(is_setup)[0]], ends={_FAR_RUNS: runs_end}
    )
    spoken = [w for w in (said_runs, said) if w is not None]
    if not spoken:
        return frame
    warnings.extend(spoken)
    return frame.filter(~(far_work | far_runs[_FAR_RUNS]))


def read(path: Path) -> Trace:
    """Read an ONNX Runtime profile into a normalized Trace (see module doc)."""
    path = Path(path)
    events, header = _events(_load(path), path)
    frame = _frame(events)
    warnings: list[str] = []
    # (the profile is read whole: the limit bounds the names the frames and outputs carry, not the reading)
    frame = cut_long_names(frame, warnings, "cat", _NAME_SUFFIXES)
    read_categories = pl.col("cat").is_in(["Session", "Node", "Kernel"])
    recorded = frame.filter(pl.col("cat").is_in(["Session", "Node"])).height
    if recorded >= ORT_MAX_EVENTS:
        warnings.append(
            f"the profile holds {recorded:,} Session and Node events, ORT's cap ({ORT_MAX_EVENTS:,}): ORT drops "
            "every event past it (it only logs 'Maximum number of events reached'), so the runs after the cap "
            "are missing and the iterations are the first runs only, not all of them"
        )
    bad_ts = frame.filter(read_categories & pl.col("start").is_null()).height
    if bad_ts:
        warnings.append(f"{bad_ts} complete events without a readable ts were skipped")
    frame = frame.filter(pl.col("start").is_not_null())
    # a run without a readable dur would be a 0 µs iteration holding none of its nodes, taken for a run that
    # stopped after none of them (:func:`partial_runs`): its length is unknown, so it is no iteration
    lost_run = (pl.col("cat") == "Session") & (pl.col("name") == MODEL_RUN) & pl.col("op_end").is_null()
    lost_runs = frame.select(lost_run.fill_null(False).sum()).item()
    if lost_runs:
        frame = frame.filter(~lost_run.fill_null(False))
        warnings.append(
            f"{lost_runs} '{MODEL_RUN}' event(s) without a readable dur (null, missing, NaN, Infinity or not a "
            "number) were skipped: how long those runs lasted is not known, so their nodes count in no iteration"
        )
    # a run of negative dur (a damaged row) holds none of its nodes either: no iteration, and no run that
    # stopped after none of its nodes
    negative_run = (
        (pl.col("cat") == "Session") & (pl.col("name") == MODEL_RUN) & (pl.col("op_end") < pl.col("start"))
    ).fill_null(False)
    negative = frame.filter(negative_run)
    if negative.height:
        frame = frame.filter(~negative_run)
        example = (negative.get_column("op_end") - negative.get_column("start")).min() / 1000
        warnings.append(
            f"{negative.height} '{MODEL_RUN}' event(s) with a negative dur ({example:g} µs) were skipped: a run "
            "cannot end before it began, so how long it lasted is not known, and its nodes count in no iteration"
        )
    frame, cupti_errors = _without_cupti_error(frame)
    if cupti_errors:
        warnings.append(
            f"the profile holds ORT's '{CUPTI_ERROR_EVENT}' Kernel event: its CUDA profiler could not start CUPTI "
            "(another profiler attached, or no permission to the GPU's performance counters), so it recorded no "
            "GPU kernel; the Node events are host times"
        )
    frame, end_stamped, kernel_events = _from_their_end(frame)
    if end_stamped:
        warnings.append(
            f"{end_stamped} of {kernel_events} GPU ops (Kernel events) carry the args of ORT's CUDA profiler before "
            "1.14 (correlation_id, or op_name without parent_name), which stamps each kernel at its end (ts = "
            "CUPTI's end time): each is read from ts - dur"
        )
    frame = _without_far_events(frame, warnings)

    frame, repeated_runs, repeats = _without_repeated_runs(frame)
    if repeated_runs:
        warnings.append(
            f"{repeated_runs} '{MODEL_RUN}' event{'s' if repeated_runs > 1 else ''} recorded twice or more (a "
            "second event equal to the first in every field, on the same thread), with the events inside "
            f"{'them' if repeated_runs > 1 else 'it'}: one thread runs one run at a time, so each is one run "
            f"written again into the profile; counted once ({repeats} repeated events left out)"
        )
    frame, setup_repeats = _without_repeated_setup(frame)
    if setup_repeats:
        names = ", ".join(f"'{n}'" for n in dict.fromkeys(setup_repeats))
        warnings.append(
            f"{len(setup_repeats)} set-up event{'s' if len(setup_repeats) > 1 else ''} ({names}) recorded twice (a "
            "second event equal to the first in every field, on the same thread): one session writes each once, "
            "so each is the same event written again into the profile, not another session's; counted once"
        )
    session = frame.filter(pl.col("cat") == "Session")
    merged = _merged_sessions(session)
    if merged:
        inits = session.filter(pl.col("name") == "session_initialization").height
        raise TraceFormatError(
            f"{merged} 'model_run' event{'s' if merged > 1 else ''} overlap{'' if merged > 1 else 's'} an earlier "
            "one on the same thread, which one ONNX Runtime "
            f"session cannot do ({inits} 'session_initialization' events): profiles of several sessions, each "
            "timed from its own session's start, were merged into this file, so their runs are not on one "
            "timeline; analyze each session's own profile",
            path,
        )
    # one session writes one 'session_initialization': more in one process are sessions merged on one clock
    inits = (
        session.filter(pl.col("name") == "session_initialization")
        .group_by("pid_i")
        .len()
        .get_column("len")
        .max()
    )
    if inits is not None and inits > 1:
        warnings.append(
            f"{inits} 'session_initialization' events in one process: each ONNX Runtime session writes one, into "
            "its own profile, so profiles of several sessions (each model of a pipeline, or a session re-created) "
            "were merged into this file and put on one clock; their 'model_run's are analyzed as one series of "
            "iterations although they may run different models: analyze each session's own profile"
        )
    nodes = frame.filter((pl.col("cat") == "Node") & pl.col("name").str.ends_with(KERNEL_SUFFIX))
    kernels = frame.filter(pl.col("cat") == "Kernel")
    api_events = frame.filter(pl.col("cat").str.to_lowercase() == "api").height
    process = session.get_column("pid_i").drop_nulls()
    modes = process.mode().sort() if process.len() else pl.Series([], dtype=pl.Int64)
    main_pid = int(modes[0]) if modes.len() else None
    if kernels.height and modes.len() > 1:
        warnings.append(
            f"Session events come from {modes.len()} processes with as many events each "
            f"({', '.join(map(str, modes.to_list()))}): GPU kernels are given the first, {main_pid}"
        )

    node_name = pl.col("name").str.strip_suffix(KERNEL_SUFFIX)
    node_ops = nodes.select(
        "start",
        end=_OP_END,
        device=pl.lit(-1, pl.Int32),
        stream="tid_i",
        pid="pid_i",
        kind=pl.lit("operator"),
        name=pl.when(pl.col("op_name").is_not_null() & (pl.col("op_name") != ""))
        .then(pl.concat_str([pl.col("op_name"), pl.lit(":"), node_name]))
        .otherwise(node_name),
    )
    container = _containers(nodes)  # control-flow nodes: ranges on the CPU, and out of operator_types
    range_parts = [
        session.select("start", "end", pid="pid_i", thread="tid_i", domain=pl.lit("session"), name="name")
    ]
    if kernels.height:
        device = "gpu"
        kernel_name = pl.col("name").fill_null("")
        ops = kernels.select(
            "start",
            end=_OP_END,
            device=pl.col("device").cast(pl.Int32, strict=False),
            stream=_stream(pl.col("stream")),
            pid=pl.lit(main_pid, dtype=pl.Int64),
            # CUDA names copies by kind ("MemcpyHostToDevice"), ROCm by HIP call ("hipMemcpyAsync")
            kind=pl.when(kernel_name.str.to_lowercase().str.contains(r"^(hip)?memcpy"))
            .then(pl.lit("memcpy"))
            .when(kernel_name.str.to_lowercase().str.contains(r"^(hip)?memset"))
            .then(pl.lit("memset"))
            .otherwise(pl.lit("kernel")),
            name="name",
        )
        ops, queued, largest_move = queue_on_streams(ops)
        if queued:
            warnings.append(
                f"{queued} of {ops.height} GPU ops (Kernel events) overlapped an earlier op on their stream as "
                "ORT wrote them: older ORT versions stamp each kernel at its launching node's start + 1 µs, not at "
                "when the GPU ran it; each is moved to when its stream was free (by up to "
                f"{largest_move / 1e6:.3f} ms), so GPU busy time is the sum of their durations, while where the "
                "idle gaps fall and which iteration a late kernel lands in are estimates"
            )
        range_parts.append(
            node_ops.select(
                "start", nodes.get_column("end"), "pid", thread="stream", domain=pl.lit("node"), name="name"
            )
        )
        # the CUDA and ROCm EPs' profilers (CUPTI, roctracer) write Kernel events, for every kernel of the process
        # (TensorRT's, MIGraphX's ... too); so does VitisAI's, for its NPU (vitisai_profiler.cc), whose
        # timestamps its own library gives
        cupti = nodes.filter(pl.col("provider").is_in(list(TRACED_PROVIDERS))).height
        others = sorted(
            set(nodes.get_column("provider").drop_nulls().to_list()) - {*TRACED_PROVIDERS, *CPU_PROVIDERS}
        )
        if not cupti and others:
            warnings.append(
                f"device times come from the Kernel events of the {', '.join(others)}'s own profiler, not CUPTI: "
                "microsecond resolution, on a clock tracekit cannot check against the CPU's, and no correlation "
                "ids, so kernels are assigned to iterations by time"
            )
        else:
            warnings.append(
                "GPU times come from ORT's own CUDA profiling: microsecond resolution and no correlation ids, so "
                "kernels are assigned to iterations by time"
            )
        before_parent = kernels_before_parent(frame)
        after_run = kernels_after_run(frame)
        if after_run is not None:
            late, linked_count, overrun = after_run
            warnings.append(
                f"{late} of {linked_count} GPU ops (Kernel events) linked to the node that launched them end after "
                f"that node's 'model_run' ended (by up to {overrun / 1e6:.3f} ms): a run returns only when its GPU "
                "work is done (ORT synchronizes the execution provider's streams at the end of each run unless the "
                "run option disable_synchronize_execution_providers is set), so the GPU times are likely on "
                "another clock than the CPU times, and the GPU busy time, idle gaps and framework overhead of each "
                "iteration compare two clocks"
            )
    else:
        device = "cpu"
        ops = node_ops.filter(~container)
        before_parent = None
        after_run = None
        if container.any():
            held = nodes.filter(container)
            range_parts.append(
                node_ops.filter(container).select(
                    "start",
                    held.get_column("end"),
                    "pid",
                    thread="stream",
                    domain=pl.lit("node"),
                    name="name",
                )
            )
            kinds = (
                held.select(op=pl.col("op_name").fill_null("node"))
                .group_by("op")
                .len()
                .sort(["len", "op"], descending=[True, False])
            )
            named = ", ".join(f"{op} x{n}" for op, n in kinds.iter_rows())
            warnings.append(
                f"{held.height} of {nodes.height} operator events hold other operator events on their thread "
                f'({named}: control-flow nodes running a subgraph): they become ranges of domain "node", not '
                "operators, so the subgraph's nodes count once and the outer node's own time (choosing the "
                "branch or iterating, passing the subgraph's inputs and outputs) is framework overhead, not "
                "operator busy time"
            )
    warnings += _truncation_warning(kernels if device == "gpu" else nodes.filter(~container), device)
    no_end = ops.get_column("end").null_count()
    read = kernels if device == "gpu" else nodes.filter(~container)
    negative = read.filter(pl.col("op_end") < pl.col("start")).height
    what, busy = (
        ("GPU ops (Kernel events)", "GPU busy") if device == "gpu" else ("operators (Node events)", "busy")
    )
    if no_end - negative > 0:
        warnings.append(
            f"{no_end - negative} of {ops.height} {what} have no readable dur (null, missing, NaN, Infinity or "
            f"not a number): they have no end time, so they count as ops but not in {busy} time, which is short "
            "by however long they ran"
        )
    if negative:
        warnings.append(
            f"{negative} of {ops.height} {what} have a negative dur (they end before they begin: damaged events, "
            f"no duration either): they have no end time, so they count as ops but not in {busy} time, which is "
            "short by however long they ran"
        )
    ranges = pl.concat(range_parts)
    ranges = ranges.with_columns(depth=nesting_depth(ranges, ["domain", "pid", "thread"]))

    providers = sorted(nodes.get_column("provider").drop_nulls().unique().to_list())
    on_gpu = nodes.filter(pl.col("provider").is_in(list(GPU_PROVIDERS))).height
    if on_gpu and device == "cpu":
        warnings.append(
            f"{on_gpu} of {nodes.height} operator events ran on a GPU execution provider "
            f"({', '.join(p for p in providers if p in GPU_PROVIDERS)}): ORT times them on the host (argument "
            "setup and kernel launch), not on the GPU; profile with nsys or torch.profiler for GPU kernel times"
        )
    on_device = nodes.filter(pl.col("provider").is_in(list(SYNCHRONOUS_DEVICE_PROVIDERS)))
    if on_device.height and device == "cpu":
        names = ", ".join(sorted(on_device.get_column("provider").unique().to_list()))
        warnings.append(
            f"{on_device.height} of {nodes.height} operator events ran on an execution provider that computes "
            f"on the device it was configured for (CPU, GPU or NPU) inside a node that waits for it ({names}): "
            "their times, taken on the host, include that device's work and any copies to and from it, so "
            "operator busy time is the host's view of that work, whatever 'device measured' says"
        )
    remote = nodes.filter(pl.col("provider").is_in(list(REMOTE_PROVIDERS))).height
    if remote:
        warnings.append(
            f"{remote} of {nodes.height} operator events ran on a remote execution provider "
            f"({', '.join(p for p in providers if p in REMOTE_PROVIDERS)}): each sends its inputs to an endpoint "
            "and waits for the answer, so its time is a network round trip and a remote server's work, not "
            "computation of this process: operator busy time and utilization count that wait as busy"
        )
    known = (*GPU_PROVIDERS, *SYNCHRONOUS_DEVICE_PROVIDERS, *CPU_PROVIDERS, *REMOTE_PROVIDERS)
    unknown = nodes.filter(pl.col("provider").is_not_null() & ~pl.col("provider").is_in(list(known)))
    if unknown.height:
        names = ", ".join(sorted(unknown.get_column("provider").unique().to_list()))
        warnings.append(
            f"{unknown.height} of {nodes.height} operator events ran on an execution provider tracekit does not "
            f"know ({names}): whether its node times are computation on the host, a device's work waited for, or "
            "only the launch of work a device does later is not known, so neither is what operator busy time means"
        )
    unread_nodes = frame.filter(
        (pl.col("cat") == "Node")
        & ~pl.col("name").str.ends_with(KERNEL_SUFFIX)
        & ~pl.col("name").str.ends_with("_fence_before")
        & ~pl.col("name").str.ends_with("_fence_after")
    )
    if unread_nodes.height:
        example = str(unread_nodes.get_column("name")[0])
        warnings.append(
            f"{unread_nodes.height} Node events are not read: their names lack ORT's '{KERNEL_SUFFIX}' suffix "
            f"(such as {example!r}), which ORT gives every node's run time (and '_fence_before'/'_fence_after' "
            "its fences), so what they time is not known (a tool's rewrite of the profile?): no operator time is "
            "taken from them"
        )
    if nodes.height == 0 and kernels.height == 0 and not unread_nodes.height:
        warnings.append("no Node or Kernel events: this profile holds session events only")
    if api_events:
        warnings.append(
            f"{api_events} 'Api' events (an execution provider's own timings, such as the WebGPU EP's GPU "
            "kernels) are not read: their clock is not the CPU events' in every ORT version, so the ops are the "
            "Node events"
        )

    meta: dict[str, Any] = {"path": str(path), "format": "ort"}
    if no_end:  # (said above: the analysis does not say it again)
        meta[OPS_WITHOUT_END] = no_end
    if on_gpu and device == "cpu":  # [events on a GPU provider, events]: the analysis withholds the verdict
        meta[GPU_PROVIDER_NODES] = [on_gpu, nodes.height]
    if remote:  # [events on a remote provider, events]
        meta[REMOTE_PROVIDER_NODES] = [remote, nodes.height]
    version = _version(events)
    if version:
        meta["format_version"] = version
    meta["device"] = device
    meta["providers"] = providers
    first_ops = _first_op_inputs(events)
    if first_ops:
        meta["first_op_inputs"] = first_ops
    embeddings = _embedding_inputs(events)
    if embeddings:
        meta["embedding_inputs"] = embeddings
    operator_types = _operator_types(nodes.filter(~container))
    if operator_types:
        meta["operator_types"] = operator_types
    setup = _session_setup(ranges.filter(pl.col("domain") == "session"))
    meta["session_setup"] = setup
    meta["default_range"] = MODEL_RUN
    meta["default_range_reason"] = "ONNX Runtime profile: one 'model_run' per InferenceSession.run call" + (
        "; session set-up, in no iteration: " + ", ".join(f"{x['name']} {x['ms']:.3f} ms" for x in setup)
        if setup
        else ""
    )
    meta["synthetic"] = (
        header.get("tracekit_synthetic") in (True, "true", "1", 1) or "synthetic" in path.name.lower()
    )
    if before_parent is not None:
        meta["ops_before_parent"] = before_parent
    if after_run is not None:
        meta["ops_after_run"] = after_run
    replays = graph_replays(session, nodes, kernels)
    if replays is not None:
        meta[GRAPH_REPLAYS] = replays
        count = len(replays["runs"])
        warnings.append(
            f"{count} of {replays['of']} 'model_run' events hold no Node event, after runs that did: runs that "
            "replay a captured graph (the CUDA EP's enable_cuda_graph, or another provider's graph capture), for "
            "which ONNX Runtime records the run and nothing of its work: their busy time is not in the profile"
        )
    partial = partial_runs(session, nodes)
    if partial is not None:
        meta[PARTIAL_RUNS] = partial
        count = len(partial["runs"])
        at_last = partial.get("failed_at_last_node", 0)
        if count > at_last:
            warnings.append(
                f"{count - at_last} of {partial['of']} 'model_run' events ran only a prefix of the nodes another "
                "run ran, then stopped: runs that failed at a node (ORT records a failed run with the nodes it ran, "
                "the failing one last), were stopped by RunOptions.terminate, or fetched fewer outputs "
                "(only_execute_path_to_fetches); they are not whole inferences (the analysis leaves them out of the "
                "iterations)"
            )
        if at_last:
            warnings.append(
                f"{at_last} of {partial['of']} 'model_run' events failed at their last node: its event has no "
                "output shape (output_type_shape []) where the same node wrote one in other runs (ORT records a "
                "failed run with the nodes it ran, the failing one last); they are not whole inferences (the "
                "analysis leaves them out of the iterations)"
            )
    shapes = run_shapes(session, nodes.filter(~container))
    if shapes is not None:
        meta[RUN_SHAPES] = shapes
    meta["warnings"] = warnings
    return Trace(ops=conform(ops, OPS_SCHEMA), ranges=conform(ranges, RANGES_SCHEMA), meta=meta)
