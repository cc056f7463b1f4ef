"""One trace's analysis reduced to what a cross-trace summary needs: a small, picklable dict.

Workers (processes or Dask) return this, never the frames: a few KB of trace-level fields plus the iterations
by column (:func:`columns`: lists of ints and float64 arrays, not one dict per iteration).

Communication (:mod:`tracekit.analyzers.communication`): device ops whose name says NCCL or RCCL, or an
all-reduce kernel of a serving engine (``COMM_PATTERN``), are communication; per iteration ``comm_ms`` is
the union of their intervals over the trace's devices and ``exposed_comm_ms`` the union of the parts of them
that no computation of their own device (of any iteration) overlaps
(:func:`tracekit.analyzers.communication.comm_per_iteration`). ``collective_ends_ns`` / ``collective_starts_ns`` (int64 arrays) hold each NCCL/RCCL collective's
(``NCCL_PATTERN``: the others, a serving engine's own all-reduce on the compute stream, are not matched across
ranks) end and start in launch order (the first :data:`MAX_COLLECTIVES`; ``collectives_total`` says how many
the trace holds), and ``collective_kinds`` the operation its kernel name says
(:data:`COLLECTIVE_KIND`, lower case; "" where it says none): collectives end together on every rank, which
is how :mod:`tracekit.analyzers.ranks` aligns clocks across traces, matching them in launch order and
checking their kinds. A collective whose launching call is not in the trace (launched before the capture
began) has no launch order and is left out of these lists, unless no collective has one (a trace without
host-side events: then in time order).

``collective_ops`` / ``collective_groups``: the operation and process group PyTorch wrote on each of those
kernels (``Collective name``, ``Process Group Name``), the operation also from the ``nccl:<op>`` range
ProcessGroupNCCL opens around the launch where the kernel carries none (:func:`annotated_ops`).

``collective_streams`` ({device: how many streams carry its collectives}, one small dict) says whether the
trace's collectives come from more than one communicator: PyTorch's ProcessGroupNCCL runs each process
group's (and each point-to-point pair's) NCCL kernels on a stream of its own per device, so collectives on two
or more streams of one device are several communicators, whose k-th collectives are not the same operation
across ranks (:func:`tracekit.analyzers.ranks.several_communicators`).

``per_gpu`` (:func:`per_gpu`): for a trace whose ops ran on two or more GPUs, one small dict per GPU (its
own part of the trace analyzed as the per-device table analyzes it, reduced to a fleet row's figures: about
20 scalars), with its ``lane``: its iterations' index, start, end, latency and step number, and its
collectives as the trace's own are carried, for the comparison of the GPUs of one capture, which share its
clock (:func:`tracekit.analyzers.ranks.within_capture`); None for a trace of one GPU.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from tracekit.analyzers.communication import (  # noqa: F401 (comm_per_iteration, COMPUTE_KINDS: re-exported)
    COMM_PATTERN,
    COMPUTE_KINDS,
    NCCL_PATTERN,
    comm_per_iteration,
    device_op_named,
    has_collectives,
)

if TYPE_CHECKING:
    from tracekit.analysis import Analysis
    from tracekit.session import AnalysisOptions

#: The operation a collective kernel's name says (``ncclDevKernel_AllReduce_Sum_f32_RING_LL`` -> allreduce;
#: RCCL's ``ncclDevKernel_Generic_4`` -> generic); the alternatives are tried in this order at each position.
COLLECTIVE_KIND = (
    r"(?i)(AllReduce|AllGather|ReduceScatter|Broadcast|AllToAll|SendRecv|Send|Recv|Reduce|Generic)"
)
#: Iteration fields carried into the compact result (ms unless named otherwise).
ITERATION_FIELDS = (
    "index",
    "start_ns",
    "end_ns",
    "latency_ms",
    "gpu_busy_ms",
    "framework_overhead_ms",
    "gpu_utilization",
    "dispatch_ms",
    "launch_ms",
    "sync_ms",
    "other_api_ms",
    "in_flight_ms",
)
#: Collective start/end lists are cut at this many per trace (clock alignment needs a few, not all).
MAX_COLLECTIVES = 4096


def collectives_in_launch_order(
    ops: pl.DataFrame, ordered: pl.DataFrame | None = None
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(starts, ends, kinds) of the first :data:`MAX_COLLECTIVES` collectives in launch order (see the module
    docstring): those launched by a call in the trace, by the call's start; all of them by their own start
    when none was. ``ordered``: those collectives (:func:`_in_launch_order` of ``ops``) when already taken."""
    collectives = _in_launch_order(ops) if ordered is None else ordered
    kinds = collectives.select(
        pl.col("name").str.extract(COLLECTIVE_KIND).str.to_lowercase().fill_null("")
    ).to_series()
    return (
        collectives["start"].cast(pl.Int64).to_numpy(),
        collectives["end"].cast(pl.Int64).to_numpy(),
        kinds.to_list(),
    )


def collective_labels(ordered: pl.DataFrame, comm_args: dict[str, Any] | None) -> tuple[list[str], list[str]]:
    """(operations, process groups) of the collectives ``ordered`` (:func:`_in_launch_order`), in the same
    order, as PyTorch wrote them on each kernel (``meta["collective_args"]`` of the Kineto reader:
    ``Collective name``, ``Process Group Name``); "" where the kernel carries none (older traces, vLLM's
    pynccl)."""
    blank = [""] * ordered.height
    if not comm_args or ordered.is_empty():
        return blank, blank
    from tracekit.model import collective_args_frame

    keys = ("device", "stream", "start")
    table = collective_args_frame(comm_args).unique(subset=list(keys), keep="first")
    if table.is_empty():
        return blank, blank
    joined = ordered.select(pl.col(k).cast(pl.Int64) for k in keys).join(
        table, on=list(keys), how="left", maintain_order="left"
    )
    return joined["op"].fill_null("").to_list(), joined["group"].fill_null("").to_list()


#: PyTorch's ProcessGroupNCCL opens a ``record_function`` range around each operation it launches
#: (``nccl:all_reduce``, ``nccl:_all_gather_base``, ``nccl:all_to_all``, ``nccl:send 0->1``, ``nccl:recv 1<-0``):
#: its first word after ``nccl:`` is the operation, read where the kernel says none (:func:`annotated_ops`).
NCCL_RANGE = r"^nccl:([A-Za-z_]+)"


def annotated_ops(ordered: pl.DataFrame, trace: Any) -> list[str]:
    """:func:`_annotated_ops`, "" for every collective where the frames cannot be read so (a pid or thread
    of another type): the ranges only add what the kernels do not say."""
    try:
        return _annotated_ops(ordered, trace)
    except (pl.exceptions.PolarsError, TypeError, ValueError):
        return [""] * ordered.height


def _annotated_ops(ordered: pl.DataFrame, trace: Any) -> list[str]:
    """The operation each collective of ``ordered`` (:func:`_in_launch_order`: with ``correlation``,
    ``call_start``, ``call_end``) was launched for, by the innermost ``nccl:<op>`` range (:data:`NCCL_RANGE`)
    that holds its launching call on the call's own thread (``trace.api``'s row of its correlation id, one
    process and thread only; ``trace.ranges``); "" where none does. Traces of NCCL 2.13, which names every
    kernel ``SendRecv`` (NVIDIA/nccl#739), from a PyTorch that writes no ``Collective name`` on kernels, say
    their all-reduces so (the real HTA recsys trace: 80 SendRecv kernels under ``nccl:all_to_all``,
    ``nccl:all_reduce``, ``nccl:_reduce_scatter_base`` and ``nccl:_all_gather_base`` ranges)."""
    blank = [""] * ordered.height
    ranges, api = getattr(trace, "ranges", None), getattr(trace, "api", None)
    need = {"correlation", "call_start", "call_end"}
    if ordered.is_empty() or ranges is None or api is None or not need <= set(ordered.columns):
        return blank
    if not {"start", "end", "pid", "thread", "name"} <= set(ranges.columns):
        return blank
    if not {"pid", "thread", "correlation"} <= set(api.columns):
        return blank
    named = ranges.filter(pl.col("name").str.contains(NCCL_RANGE).fill_null(False))
    if "domain" in named.columns:  # (Kineto's GPU-side copies of the range lie on a stream, not a thread)
        from tracekit.model import on_host

        named = named.filter(on_host())
    if named.is_empty():
        return blank
    calls = (
        ordered.select(
            pl.int_range(pl.len()).alias("_row"),
            pl.col("correlation").cast(pl.Int64),
            pl.col("call_start").cast(pl.Int64),
            pl.col("call_end").cast(pl.Int64),
        )
        .join(
            # (a correlation id whose calls are on one thread of one process: else the thread is not known)
            api.filter(
                pl.col("correlation").is_in(ordered["correlation"].drop_nulls().cast(pl.Int64).implode())
            )
            .group_by("correlation")
            .agg(
                pl.col("pid").first().cast(pl.Int64, strict=False),
                pl.col("thread").first().cast(pl.Int64, strict=False),
                one=(pl.struct("pid", "thread").n_unique() == 1),
            )
            .filter("one")
            .drop("one"),
            on="correlation",
            how="inner",
        )
        .filter(
            pl.col("call_start").is_not_null() & pl.col("pid").is_not_null() & pl.col("thread").is_not_null()
        )
        .sort("call_start")
    )
    if calls.is_empty():
        return blank
    spans = (
        named.select(
            pl.col("pid").cast(pl.Int64, strict=False),
            pl.col("thread").cast(pl.Int64, strict=False),
            pl.col("start").cast(pl.Int64).alias("range_start"),
            pl.col("end").cast(pl.Int64).alias("range_end"),
            op=pl.col("name").str.extract(NCCL_RANGE),
        )
        .filter(pl.col("pid").is_not_null() & pl.col("thread").is_not_null())
        .sort("range_start")
    )
    # the latest-opened range of the call's thread at its start: the innermost, when it holds the call
    found = calls.join_asof(
        spans,
        left_on="call_start",
        right_on="range_start",
        by=["pid", "thread"],
        strategy="backward",
        check_sortedness=False,  # (both sorted by their time, so each thread's rows are too)
    ).filter(pl.col("range_end").is_not_null() & (pl.col("range_end") >= pl.col("call_end").fill_null(0)))
    out = list(blank)
    for row, op in found.select("_row", "op").iter_rows():
        out[row] = op or ""
    return out


def collective_streams(ops: pl.DataFrame) -> dict[int | None, int]:
    """How many distinct streams carry collectives (every op whose name says NCCL or RCCL, launched in the
    trace or not) on each device (None: ops without a device); streams not known (null) are not counted,
    and a device without a known stream is left out."""
    if "stream" not in ops.columns:
        return {}
    collectives = ops.filter(_device_collective(ops) & pl.col("stream").is_not_null())
    if collectives.is_empty():
        return {}
    device = pl.col("device") if "device" in ops.columns else pl.lit(None, pl.Int64)
    counts = collectives.group_by(device.alias("device")).agg(pl.col("stream").n_unique().alias("streams"))
    return {
        (None if d is None else int(d)): int(n) for d, n in counts.sort("device", nulls_last=True).iter_rows()
    }


def collective_iterations(ordered: pl.DataFrame) -> list[int | None]:
    """The iteration of each collective of :func:`collectives_in_launch_order` (``ordered``: those collectives,
    :func:`_in_launch_order`), in the same order (None where the ops carry none): which step a collective
    belongs to, so that traces whose captures hold other steps are matched on the steps they share
    (:func:`tracekit.analyzers.ranks.by_step_number`)."""
    if "iteration" not in ordered.columns:
        return [None] * ordered.height
    return ordered["iteration"].cast(pl.Int64).to_list()


def step_numbers(analyzed: Analysis, index: pl.Series) -> list[int | None]:
    """The number each iteration of ``index`` has in its range's name (``ProfilerStep#12`` -> 12: the step
    the training loop counts, the same on every rank of one job), None where the name ends in no ``#N`` or the
    iteration's ranges say different numbers."""
    return step_numbers_of(analyzed.ranges, index)


def step_numbers_of(ranges: pl.DataFrame | None, index: pl.Series) -> list[int | None]:
    """:func:`step_numbers` from an iteration analysis' ``ranges`` frame (None: no numbers)."""
    if ranges is None or not {"iteration", "name"} <= set(ranges.columns):
        return [None] * len(index)
    numbered = (
        ranges.select(
            "iteration", step=pl.col("name").str.extract(r"#(\d+)\s*$").cast(pl.Int64, strict=False)
        )
        .group_by("iteration")
        .agg(
            pl.col("step").first(),
            alike=(pl.col("step").n_unique() == 1) & (pl.col("step").null_count() == 0),
        )
        .select(pl.col("iteration").cast(pl.Int64), step=pl.when("alike").then("step"))
    )
    return (
        index.cast(pl.Int64)
        .to_frame("iteration")
        .join(numbered, on="iteration", how="left", maintain_order="left")["step"]
        .to_list()
    )


def _device_collective(ops: pl.DataFrame) -> pl.Expr:
    """Whether an op is an NCCL/RCCL collective (:data:`NCCL_PATTERN`) run on a device: a host operator of
    that name (ONNX Runtime's ``NcclAllReduce`` node, kind "operator", its stream the thread) is the launch,
    its kernel the collective (counted too, each all-reduce had been two, and the node's threads had read as
    several communicators' streams)."""
    return device_op_named(ops.columns, NCCL_PATTERN)


def _in_launch_order(ops: pl.DataFrame) -> pl.DataFrame:
    """The collectives of ``ops`` in launch order (:func:`collectives_in_launch_order`)."""
    return _all_in_launch_order(ops).head(MAX_COLLECTIVES)


def _all_in_launch_order(ops: pl.DataFrame) -> pl.DataFrame:
    """Every collective of ``ops`` that :func:`_in_launch_order` takes the first :data:`MAX_COLLECTIVES` of."""
    collectives = ops.filter(
        _device_collective(ops) & pl.col("start").is_not_null() & pl.col("end").is_not_null()
    )
    if collectives["call_start"].null_count() < collectives.height:
        collectives = collectives.filter(pl.col("call_start").is_not_null())
    # (either every call_start is there or none is)
    return collectives.sort("call_start", "start")


def columns(frame: pl.DataFrame) -> dict[str, Any]:
    """``frame`` by column, as arrays: float columns as float64 (a null is NaN), integer columns as int64
    (nanosecond times stay exact), or as a list of ints when they hold a null (None). Measured on 16
    simulated rank traces of 4,545 iterations: 64 MB in the collecting process as one dict per iteration,
    16 MB with the integer columns as lists, 9 MB so."""
    out: dict[str, Any] = {}
    for name in frame.columns:
        column = frame[name]
        if column.dtype.is_float() or (column.dtype.is_integer() and column.null_count() == 0):
            out[name] = column.to_numpy()
        else:
            out[name] = column.to_list()
    return out


#: The largest world size a trace's metadata is believed (2**20 ranks; the largest jobs run some 10**5 GPUs).
MAX_WORLD_SIZE = 1 << 20


def _stated_count(meta: Mapping[str, Any], key: str, lowest: int) -> tuple[int | None, str | None]:
    """(value, warning) of ``meta[key]``, a whole number from ``lowest`` to :data:`MAX_WORLD_SIZE` (``rank``:
    below it): an int, an integral float (``8.0``) or its digits as text (``"8"``). Anything else (``2.9``,
    ``True``, ``-1``, ``0`` ranks, ``10**9``, ``"x"``) is not trusted: None, with a warning that says so
    (``int(2.9)`` had read as 2 ranks). (None, None) where nothing is said."""
    value = meta.get(key)
    if value is None:
        return None, None
    number: int | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, numbers.Integral):  # (numpy's integers too)
        number = int(value)
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():  # ('²' is no digit)
        number = int(value.strip())
    highest = MAX_WORLD_SIZE if key == "world_size" else MAX_WORLD_SIZE - 1
    if number is not None and lowest <= number <= highest:
        return number, None
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    what = "world size" if key == "world_size" else "rank"
    return None, (
        f"the trace's metadata says {what} {shown}, not a whole number from {lowest} to {highest}: "
        f"the {what} is treated as unknown"
    )


def rank_of(analyzed: Analysis) -> int | None:
    """The trace's rank: Kineto's ``distributedInfo.rank``, else none (never guessed from a file name); a
    malformed one (:func:`_stated_count`) is none too."""
    return _stated_count(analyzed.trace_data.meta, "rank", 0)[0]


def _world_size(meta: dict[str, Any]) -> int | None:
    """How many ranks the trace's job has, where its metadata says (``world_size``: a sidecar's, or the
    reader's), else None; a malformed one (:func:`_stated_count`) is None too."""
    return _stated_count(meta, "world_size", 1)[0]


def _metadata_warnings(meta: Mapping[str, Any]) -> list[str]:
    """Why the trace's rank or world size is not trusted (:func:`_stated_count`), if so."""
    said = [_stated_count(meta, "rank", 0)[1], _stated_count(meta, "world_size", 1)[1]]
    return [w for w in said if w is not None]


def per_gpu(analyzed: Analysis, options: AnalysisOptions | None = None) -> list[dict[str, Any]] | None:
    """One small dict per GPU of a trace whose ops ran on two or more devices (``analyzed.per_device`` is
    set), else None: ``device`` (the trace's device id), ``gpu`` (its name where the trace lists its GPUs),
    then the figures of a fleet row (:func:`tracekit.analyzers.ranks.row_figures`: ``iterations``,
    ``median_latency_ms``, the ``mean_*`` of latency, busy, overhead, the idle causes and communication),
    ``verdict`` and ``verdict_uncertain`` (why it may be wrong, or None) as the trace's per-device table says
    them; a device none of whose work falls in an iteration has ``error`` instead of figures.

    Each device's analysis is the one ``tracekit analyze`` made for its per-device table
    (:func:`tracekit.analyzers.devices.analyze_devices`: its ops, their launching calls, its processes' ranges,
    with ``options``), kept on the analysis' source with the idle split by cause when the trace was analyzed
    for a many-trace run (``device_causes``); made here otherwise. It is reduced to means: a few numbers per
    GPU, not its iterations (the cross-trace statistics compare whole traces)."""
    if not analyzed.per_device:
        return None
    from tracekit.analyzers.devices import analyze_devices
    from tracekit.analyzers.iterations import assign_ops
    from tracekit.analyzers.ranks import row_figures
    from tracekit.session import AnalysisOptions

    source = getattr(analyzed, "source", None)
    devices = None if source is None else source.devices
    if devices is None or not all(d.attributed for d in devices):
        options = options or AnalysisOptions()
        devices = analyze_devices(
            analyzed.trace_data,
            options.range_name,
            options.skip,
            options.bound_threshold,
            options.split_idle_ms,
            attribute=True,
        )
    by_device = {one.device: one for one in devices or ()}
    names = {
        g.get("id"): g.get("name") for g in analyzed.trace_data.meta.get("gpus") or () if isinstance(g, dict)
    }
    out = []
    for row in analyzed.per_device:
        device = row["device"]
        entry: dict[str, Any] = {"device": device, "gpu": names.get(device)}
        one = by_device.get(device)
        a = None if one is None else one.result
        if row.get("error") or one is None or a is None:
            said = row.get("error") or (one.error if one is not None else None)
            out.append({**entry, "error": said or "no ops on this device"})
            continue
        frame = a.iterations
        frame = frame.select([f for f in ITERATION_FIELDS if f in frame.columns])
        lane: dict[str, Any] = {}
        if has_collectives(one.part.ops):
            ops = assign_ops(one.part, a.ranges).filter(pl.col("iteration").is_in(frame["index"].implode()))
            comm = comm_per_iteration(ops)
            frame = frame.join(comm, left_on="index", right_on="iteration", how="left").with_columns(
                pl.col("comm_ms").fill_null(0.0), pl.col("exposed_comm_ms").fill_null(0.0)
            )
            ordered = _in_launch_order(ops)
            starts, ends, kinds = collectives_in_launch_order(ops, ordered)
            lane.update(
                collective_starts_ns=starts,
                collective_ends_ns=ends,
                collective_kinds=kinds,
                collective_iterations=collective_iterations(ordered),
            )
        entry.update(row_figures(columns(frame)))
        entry.update(
            range=a.range_name, verdict=row.get("bound"), verdict_uncertain=row.get("verdict_uncertain")
        )
        steps = pl.Series(step_numbers_of(a.ranges, frame["index"]), dtype=pl.Int64)
        lane["iterations"] = columns(
            frame.select("index", "start_ns", "end_ns", "latency_ms").with_columns(step=steps)
        )
        entry["lane"] = lane
        out.append(entry)
    return out


def compact(analyzed: Analysis, options: AnalysisOptions | None = None) -> dict[str, Any]:
    """The compact result of one analyzed trace (see the module docstring); ``options``: those it was
    analyzed with, for its GPUs' rows (:func:`per_gpu`; None: the defaults)."""
    meta = analyzed.trace_data.meta
    its = analyzed.iterations
    fields = [f for f in ITERATION_FIELDS if f in its.columns]
    iterations = its.select(fields)
    comm = None
    if has_collectives(analyzed.trace_data.ops):  # else the ops of the iterations need not be assigned
        ops = analyzed.ops
        comm = comm_per_iteration(ops) if not ops.is_empty() else None
    if comm is not None and not comm.is_empty():
        iterations = iterations.join(comm, left_on="index", right_on="iteration", how="left").with_columns(
            pl.col("comm_ms").fill_null(0.0), pl.col("exposed_comm_ms").fill_null(0.0)
        )
        every = _all_in_launch_order(ops)  # (one filter of the ops' names, for both)
        total = every.height
        ordered = every.head(MAX_COLLECTIVES)
        starts, ends, kinds = collectives_in_launch_order(ops, ordered)
        collective_its = collective_iterations(ordered)
        streams = collective_streams(analyzed.trace_data.ops)
        collective_ops, collective_groups = collective_labels(ordered, meta.get("collective_args"))
        if not all(collective_ops):  # (the kernels that say no operation: PyTorch's range around the launch)
            ranged = annotated_ops(ordered, analyzed.trace_data)
            collective_ops = [said or found for said, found in zip(collective_ops, ranged, strict=True)]
    else:
        iterations = iterations.with_columns(
            comm_ms=pl.lit(None, pl.Float64), exposed_comm_ms=pl.lit(None, pl.Float64)
        )
        starts = ends = np.zeros(0, dtype=np.int64)
        total = 0
        kinds = []
        collective_its = []
        streams = {}
        collective_ops, collective_groups = [], []
    iterations = iterations.with_columns(
        step=pl.Series(step_numbers(analyzed, iterations["index"]), dtype=pl.Int64)
    )
    summary = analyzed.summary
    return {
        "path": str(analyzed.config.path),
        "name": Path(analyzed.config.path).name,
        "rank": rank_of(analyzed),
        "device": analyzed.device,
        "gpu": meta.get("gpu"),
        "synthetic": bool(analyzed.config.synthetic),
        "range": analyzed.range_name,
        # the configuration the run states (run.json, sidecar, trace metadata: not inferred), where it does:
        # traces of other configurations (a batch sweep) are no ranks of one job
        # (:func:`tracekit.analyzers.ranks.configurations_differ`)
        "stated_config": stated_configuration(analyzed.config),
        "verdict": summary.bound,
        "verdict_uncertain": summary.verdict_uncertain is not None,
        "iterations": columns(iterations),
        "collective_starts_ns": starts,
        "collective_ends_ns": ends,
        # how many collectives the trace holds: more than those lists where they were cut at MAX_COLLECTIVES
        "collectives_total": total,
        "collective_kinds": kinds,
        "collective_iterations": collective_its,
        "collective_streams": streams,
        # what PyTorch wrote on each of those kernels (:func:`collective_labels`; "" where nothing): its
        # operation and process group, and each group's member ranks (the ranks' summary matches collectives
        # per group and names point-to-point by the operation: :mod:`tracekit.analyzers.ranks`)
        "collective_ops": collective_ops,
        "collective_groups": collective_groups,
        "group_ranks": ((meta.get("collective_args") or {}).get("groups") or None)
        if collective_ops
        else None,
        "world_size": _world_size(meta),
        # the NCCL process groups the trace says it is in (lists of ranks), and the wall-clock time of its
        # timestamps' origin (ns since the epoch), where its reader found them (:mod:`tracekit.analyzers.ranks`
        # uses them to refuse matching collectives of groups apart, or steps captured apart)
        "process_groups": meta.get("process_groups"),
        "wall_clock_base_ns": meta.get("wall_clock_base_ns"),
        "warnings": [*analyzed.measurement_warnings, *_metadata_warnings(meta)],
        "per_gpu": per_gpu(analyzed, options),
    }


def stated_configuration(config: Any) -> dict[str, Any]:
    """The runtime, batch size, sequence length and precision that ``config`` (a
    :class:`tracekit.inputs.TraceConfig`) holds from what the run states (run.json, a sidecar or the trace's
    own metadata; not inferred from content or a file name), by name; {} when it states none."""
    from tracekit.inputs import FROM_RUN, FROM_SIDECAR, FROM_TRACE_META

    stated = (FROM_RUN, FROM_SIDECAR, FROM_TRACE_META)
    sources = getattr(config, "sources", None) or {}
    return {
        key: getattr(config, key)
        for key in ("runtime", "batch_size", "seq_len", "precision")
        if sources.get(key) in stated and getattr(config, key, None) is not None
    }
