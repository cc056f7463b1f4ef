"""Collective communication on the device (NCCL on NVIDIA, RCCL on AMD): how long it runs per iteration,
how much of it no computation hides, and what that does to the verdict.

Device ops whose name says NCCL or RCCL, or one of the all-reduce kernels serving engines run beside them
(:data:`COMM_PATTERN`: vLLM's custom all-reduce, PyTorch's symmetric memory...) are communication. Per
iteration (collectives counted in the iteration whose range launched them), ``comm_ms`` is the union of their
intervals over every device (the time some GPU communicates: a trace's GPU busy is their union too) and
``exposed_comm_ms`` the union of the parts of them that no computation of their own device overlaps,
launched in whichever iteration (a collective of step k running on beside step k+1's kernels is hidden):
no other kernel and no CUDA graph execution (:data:`COMPUTE_KINDS`; a memcpy or memset beside a collective
is data movement, which hides no communication, as HTA counts it) (:func:`comm_per_iteration`).

A collective kernel counts as GPU busy for as long as it runs, and it runs while it waits for the other
ranks. So a rank whose GPU is "busy" mostly in exposed communication is not compute-bound: it waits on the
network or on a straggler. :func:`communication_doubt` makes a compute-bound verdict uncertain when it rests
on exposed communication: the median utilization is at or over the threshold with it, and under it without.
Op names are needed: a trace read without them (a run whose metadata states everything) has none. One
device only: on several, the busy time is the union over them.

Every NCCL/RCCL kernel is communication time, point-to-point ones (``SendRecv``: pipeline stages) too; only
the matching of collectives across ranks (:mod:`tracekit.analyzers.ranks`) keeps them apart. Collectives of
several communicators (process groups) serialized on one stream count once each: the union of their intervals
is their sum there, and their overlap with computation is the device's, whichever group they belong to.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tracekit.analyzers.stats import whole_ns
from tracekit.model import merged_intervals, newly_covered

#: Device-op names of NCCL/RCCL kernels: the collectives matched across ranks
#: (:mod:`tracekit.fleet.compact`, :mod:`tracekit.analyzers.ranks`).
NCCL_PATTERN = r"(?i)nccl|rccl"
#: Device-op names of communication kernels: NCCL/RCCL, and the all-reduces serving engines and PyTorch run
#: beside NCCL, which wait for the other ranks as a collective does: vLLM's and SGLang's custom all-reduce
#: (``cross_device_reduce_1stage``/``2stage``), PyTorch's symmetric-memory ones (``multimem_all_reduce_kernel``,
#: ``one_shot_all_reduce_kernel``, ``two_shot_all_reduce_kernel``), TensorRT-LLM / FlashInfer's (fused)
#: all-reduce (``allreduce_fusion_kernel_*``, ``oneShotAllReduceKernel``), ROCm's quick reduce, MSCCL++ and
#: RCCL's MSCCL algorithms (``mscclKernel_Sum_hip_bfloat16_Simple``: no "nccl" in the name), and
#: DeepEP's MoE dispatch/combine (``deep_ep::``), and Transformer Engine's Userbuffers (Megatron's
#: ``tp_comm_overlap``: ``userbuffers_fp16_sum_inplace_gpu_rr_rs``, ``kuserbuffers_pushsendrecv``). Counted
#: as computation they had hidden the communication of a tensor-parallel serving trace (the B200 vLLM trace's
#: 73 symmetric-memory all-reduces, 2.1 ms, beside one 22 µs NCCL all-gather) and the doubt of a
#: compute-bound verdict resting on them.
COMM_PATTERN = (
    r"(?i)nccl|rccl|cross_device_reduce|multimem_(?:all|one_shot|two_shot)|(?:one|two)_?shot_?all_?reduce"
    r"|allreduce_fusion|quick_?reduce|msccl|custom_?all_?reduce|deep_ep::|userbuffers"
)
#: Kinds of device op that compute (:data:`tracekit.model.OP_KIND`): what hides communication it overlaps.
COMPUTE_KINDS = ("kernel", "graph")


def comm_per_iteration(ops: pl.DataFrame) -> pl.DataFrame:
    """``iteration``, ``comm_ms``, ``exposed_comm_ms`` of every iteration with collectives (see module doc).

    Per iteration, over its devices as its GPU busy time is (their union): ``comm_ms`` is the union of its
    collectives' intervals on every device, ``exposed_comm_ms`` the union of the parts of them that no
    computation of their own device overlaps (kernels and graphs, :data:`COMPUTE_KINDS`; memcpy and memset
    count as neither). One device: its own. Summed over 8 GPUs running their all-reduces together, the
    communication of a 1-ms step had read 4 ms.

    Computation hides a collective whatever iteration launched it: an all-reduce launched in step k that runs
    on into step k+1, beside step k+1's kernels, is hidden there (swept per iteration, it had counted as
    exposed). A collective counts in the iteration whose range launched it; ops without a start or an end
    are left out, and collectives without an iteration (they cannot be placed)."""
    empty = pl.DataFrame(schema={"iteration": pl.Int64, "comm_ms": pl.Float64, "exposed_comm_ms": pl.Float64})
    timed = ops.filter(pl.col("start").is_not_null() & pl.col("end").is_not_null())
    communicates = _communicates(ops.columns)
    comm = timed.filter(communicates & pl.col("iteration").is_not_null()).select(
        pl.col("iteration").cast(pl.Int64),
        pl.col("device").cast(pl.Int64),
        pl.col("start").cast(pl.Int64),
        pl.col("end").cast(pl.Int64),
    )
    if comm.is_empty():
        return empty
    computing = timed.filter(
        ~communicates & pl.col("kind").cast(pl.String).is_in(COMPUTE_KINDS).fill_null(False)
    ).select(pl.col("device").cast(pl.Int64), pl.col("start").cast(pl.Int64), pl.col("end").cast(pl.Int64))
    merged_comm = merged_intervals(comm, by=["iteration", "device"])
    merged_compute = merged_intervals(computing, by=["device"])
    computes = {key[0]: part for key, part in merged_compute.partition_by("device", as_dict=True).items()}
    exposed = [
        _uncovered(part, computes.get(key[0]))
        for key, part in merged_comm.partition_by("device", as_dict=True).items()
    ]
    comm_ns = _union_per_iteration(comm)
    exposed_ns = _union_per_iteration(pl.concat(exposed))
    return (
        comm_ns.join(exposed_ns, on="iteration", how="left", suffix="_exposed")
        .select(
            "iteration",
            comm_ms=pl.col("ns") / 1e6,
            exposed_comm_ms=pl.col("ns_exposed").fill_null(0) / 1e6,
        )
        .sort("iteration")
    )


def _uncovered(intervals: pl.DataFrame, cover: pl.DataFrame | None) -> pl.DataFrame:
    """``iteration``, ``start``, ``end`` of the parts of ``intervals`` (``iteration``, ``start``, ``end``) that
    ``cover`` (disjoint intervals sorted by start: :func:`tracekit.model.merged_intervals`; None: nothing) does
    not cover."""
    columns = {"iteration": pl.Int64, "start": pl.Int64, "end": pl.Int64}
    if cover is None or cover.is_empty():
        return intervals.select(list(columns))
    cs, ce = cover["start"].to_numpy(), cover["end"].to_numpy()
    its, s, e = (intervals[c].to_numpy() for c in columns)
    lo = np.searchsorted(ce, s, side="right")  # the first covering interval ending after s
    hi = np.searchsorted(cs, e, side="left")  # past the last one starting before e
    n = hi - lo  # the covering intervals that overlap [s, e): >= 0 (each ending by s starts before e)
    pieces = n + 1  # the gaps before, between and after them
    of = np.repeat(np.arange(len(s)), pieces)
    j = np.arange(int(pieces.sum())) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    last = len(cs) - 1
    begin = np.where(j == 0, s[of], ce[np.clip(lo[of] + j - 1, 0, last)])
    finish = np.where(j < n[of], cs[np.clip(lo[of] + j, 0, last)], e[of])
    begin, finish = np.maximum(begin, s[of]), np.minimum(finish, e[of])
    keep = finish > begin
    return pl.DataFrame(
        {"iteration": its[of][keep], "start": begin[keep], "end": finish[keep]}, schema=columns
    )


def _union_per_iteration(intervals: pl.DataFrame) -> pl.DataFrame:
    """``iteration``, ``ns``: the length of the union of each iteration's ``intervals`` (all devices)."""
    return (
        intervals.sort("iteration", "start")
        .group_by("iteration", maintain_order=True)
        .agg(ns=newly_covered("start", "end").sum())
    )


def has_collectives(ops: pl.DataFrame) -> bool:
    """Whether any of ``ops`` is a collective (:data:`COMM_PATTERN`): without one there is no communication
    to measure, and the ops need not be assigned to iterations for it."""
    return bool(ops.select(_communicates(ops.columns).any()).item())


def device_op_named(columns: list[str], pattern: str) -> pl.Expr:
    """Whether an op (of a frame with ``columns``) is a device op whose name matches ``pattern``. A host
    operator of that name (ONNX Runtime's ``NcclAllReduce`` node, kind "operator": the host side of its
    launch, its kernel a device op of its own) is not."""
    named = pl.col("name").str.contains(pattern).fill_null(False)
    if "kind" not in columns:
        return named
    return named & (pl.col("kind").cast(pl.String) != "operator").fill_null(True)


def _communicates(columns: list[str]) -> pl.Expr:
    """Whether an op is communication: a device op named so (:data:`COMM_PATTERN`, :func:`device_op_named`).
    A host operator of that name counted too, its host time had been added to its kernel's as communication
    of another "device"."""
    return device_op_named(columns, COMM_PATTERN)


def communication_doubt(frame: pl.DataFrame, ops: pl.DataFrame, bound_threshold: float) -> str | None:
    """The "verdict uncertain" text when a compute-bound verdict rests on exposed communication (module
    docstring), else None. ``frame``: the analyzed iterations (``index``, ``latency_ms``, ``gpu_busy_ms``,
    ``gpu_utilization``);
    ``ops``: the device ops with ``iteration``, ``device``, ``start``, ``end``, ``kind``, ``name``."""
    if frame.is_empty() or "name" not in ops.columns:
        return None
    as_recorded = frame.get_column("gpu_utilization").median()  # (what the verdict reads)
    if as_recorded is None or as_recorded < bound_threshold:
        return None  # (first: the checks below read every op)
    if ops.get_column("device").drop_nulls().n_unique() > 1 or not has_collectives(ops):
        # (on several devices the busy time is their union, which per-device communication does not subtract
        # from: each device's own analysis is its per-device row)
        return None
    timed = frame.filter(pl.col("latency_ms") > 0)
    comm = comm_per_iteration(ops.join(frame.select(iteration="index"), on="iteration", how="semi"))

    busy, exposed_ns, latency = (
        whole_ns(pl.col(c).fill_null(0.0)) for c in ("gpu_busy_ms", "exposed_comm_ms", "latency_ms")
    )
    without, exposed = (
        timed.join(comm, left_on="index", right_on="iteration", how="left")
        .select(
            # (never below 0: a collective's kernel may outlast the iteration's window, which clips the busy
            # time and not the communication)
            (pl.max_horizontal(busy - exposed_ns, pl.lit(0)) / latency).median(),
            pl.col("exposed_comm_ms").fill_null(0.0).median().alias("exposed"),
        )
        .row(0)
    )
    if without >= bound_threshold:
        return None
    names = ops.filter(_communicates(ops.columns)).get_column("name")
    nccl = names.str.contains(NCCL_PATTERN).fill_null(False)
    has_nccl, has_custom = bool(nccl.any()), bool((~nccl).any())
    which = (
        "NCCL/RCCL and custom all-reduce kernels"
        if has_nccl and has_custom
        else "custom all-reduce kernels"
        if has_custom
        else "NCCL/RCCL kernels"
    )
    return (
        f"verdict uncertain: compute-bound at a median utilization of {as_recorded:.1%}, but {without:.1%} "
        f"without the communication no computation overlaps ({which}, median {exposed:.3f} ms per "
        "iteration): a collective counts as busy while it waits for the other ranks, so this GPU may be "
        "waiting on the network or on a straggler, not computing"
    )
