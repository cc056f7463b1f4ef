"""One trace's analysis reduced to what a cross-trace summary needs: a small, picklable dict.

Workers (processes or Dask) return this, never the frames: a few KB of trace-level fields plus the iterations
by column (:func:`columns`: lists of ints and float64 arrays, not one dict per iteration).

Communication: device ops whose name says NCCL or RCCL (:data:`COMM_PATTERN`) are collectives. Per iteration
(ops counted in the iteration whose range launched them), ``comm_ms`` is the union of their intervals and
``exposed_comm_ms`` the part of that union that no computation of the same device overlaps: no other kernel
and no CUDA graph execution (:data:`COMPUTE_KINDS`; a memcpy or memset beside a collective is data movement,
which hides no communication, as HTA counts it). ``collective_ends_ns`` / ``collective_starts_ns`` (int64 arrays)
hold each collective's end and start in launch order, and ``collective_kinds`` the operation its kernel name
says (:data:`COLLECTIVE_KIND`, lower case; "" where it says none): collectives end together on every rank,
which is how :mod:`tracekit.analyzers.ranks` aligns clocks across traces, matching them in launch order and
checking their kinds. A collective whose launching call is not in the trace (launched before the capture
began) has no launch order and is left out of these lists, unless no collective has one (a trace without
host-side events: then in time order).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

if TYPE_CHECKING:
    from tracekit.analysis import Analysis

#: Device-op names of collective communication kernels (NCCL on NVIDIA, RCCL on AMD).
COMM_PATTERN = r"(?i)nccl|rccl"
#: The operation a collective kernel's name says (``ncclDevKernel_AllReduce_Sum_f32_RING_LL`` -> allreduce;
#: RCCL's ``ncclDevKernel_Generic_4`` -> generic); the alternatives are tried in this order at each position.
COLLECTIVE_KIND = (
    r"(?i)(AllReduce|AllGather|ReduceScatter|Broadcast|AllToAll|SendRecv|Send|Recv|Reduce|Generic)"
)
#: Kinds of device op that compute (:data:`tracekit.model.OP_KIND`): what hides communication it overlaps.
COMPUTE_KINDS = ("kernel", "graph")
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


def comm_per_iteration(ops: pl.DataFrame) -> pl.DataFrame:
    """``iteration``, ``comm_ms``, ``exposed_comm_ms`` of every iteration with collectives (see module doc).

    One sweep over the ops' edges per (iteration, device), vectorized: each start adds one to its kind's
    count of running ops (collective or other), each end takes one away; between two consecutive edges the
    counts hold, so the stretch is communication when collectives run (``comm > 0``) and hidden
    communication when computation runs too (``other > 0``: kernels and graphs, :data:`COMPUTE_KINDS`;
    memcpy and memset count as neither). Ops without a start, an end or an iteration are left out (they
    cannot be placed)."""
    keys = ["iteration", "device"]
    empty = pl.DataFrame(schema={"iteration": pl.Int64, "comm_ms": pl.Float64, "exposed_comm_ms": pl.Float64})
    placed = ops.filter(
        pl.col("start").is_not_null() & pl.col("end").is_not_null() & pl.col("iteration").is_not_null()
    ).select(
        *keys,
        "start",
        "end",
        is_comm=pl.col("name").str.contains(COMM_PATTERN).fill_null(False),
        computes=pl.col("kind").cast(pl.String).is_in(COMPUTE_KINDS).fill_null(False),
    )
    with_comm = placed.filter("is_comm").select(keys).unique()
    if with_comm.is_empty():
        return empty
    placed = placed.join(with_comm, on=keys, how="semi", nulls_equal=True)
    comm_step = pl.col("is_comm").cast(pl.Int64)
    other_step = (~pl.col("is_comm") & pl.col("computes")).cast(pl.Int64)
    edges = pl.concat(
        [
            placed.select(*keys, at=pl.col("start"), comm=comm_step, other=other_step),
            placed.select(*keys, at=pl.col("end"), comm=-comm_step, other=-other_step),
        ]
    ).sort(*keys, "at", nulls_last=True)
    # Every op of a group adds its start and its end, so a group's counts sum to 0: the running sums over all
    # the sorted edges are each group's own, and after a group's last edge both are 0, so the stretch from it
    # to the next group's first edge never counts (no window per group is needed).
    stretches = edges.with_columns(
        comm=pl.col("comm").cum_sum(),
        other=pl.col("other").cum_sum(),
        length=(pl.col("at").shift(-1) - pl.col("at")).fill_null(0),
    )
    communicating = pl.col("comm") > 0
    return (
        stretches.group_by("iteration", maintain_order=True)
        .agg(
            comm=pl.col("length").filter(communicating).sum(),
            hidden=pl.col("length").filter(communicating & (pl.col("other") > 0)).sum(),
        )
        .select(
            pl.col("iteration").cast(pl.Int64),
            comm_ms=pl.col("comm") / 1e6,
            exposed_comm_ms=(pl.col("comm") - pl.col("hidden")) / 1e6,
        )
        .sort("iteration")
    )


def has_collectives(ops: pl.DataFrame) -> bool:
    """Whether any of ``ops`` is a collective (:data:`COMM_PATTERN`): without one there is no communication
    to measure, and the ops need not be assigned to iterations for it."""
    return bool(ops.select(pl.col("name").str.contains(COMM_PATTERN).any()).item())


def collectives_in_launch_order(ops: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(starts, ends, kinds) of the first :data:`MAX_COLLECTIVES` collectives in launch order (see the module
    docstring): those launched by a call in the trace, by the call's start; all of them by their own start
    when none was."""
    collectives = ops.filter(
        pl.col("name").str.contains(COMM_PATTERN)
        & pl.col("start").is_not_null()
        & pl.col("end").is_not_null()
    )
    if collectives["call_start"].null_count() < collectives.height:
        collectives = collectives.filter(pl.col("call_start").is_not_null())
    # (either every call_start is there or none is)
    collectives = collectives.sort("call_start", "start").head(MAX_COLLECTIVES)
    kinds = collectives.select(
        pl.col("name").str.extract(COLLECTIVE_KIND).str.to_lowercase().fill_null("")
    ).to_series()
    return (
        collectives["start"].cast(pl.Int64).to_numpy(),
        collectives["end"].cast(pl.Int64).to_numpy(),
        kinds.to_list(),
    )


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


def rank_of(analyzed: Analysis) -> int | None:
    """The trace's rank: Kineto's ``distributedInfo.rank``, else none (never guessed from a file name)."""
    rank = analyzed.trace_data.meta.get("rank")
    try:
        return None if rank is None else int(rank)
    except (TypeError, ValueError):
        return None


def compact(analyzed: Analysis) -> dict[str, Any]:
    """The compact result of one analyzed trace (see the module docstring)."""
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
        starts, ends, kinds = collectives_in_launch_order(ops)
    else:
        iterations = iterations.with_columns(
            comm_ms=pl.lit(None, pl.Float64), exposed_comm_ms=pl.lit(None, pl.Float64)
        )
        starts = ends = np.zeros(0, dtype=np.int64)
        kinds = []
    summary = analyzed.summary
    return {
        "path": str(analyzed.config.path),
        "name": Path(analyzed.config.path).name,
        "rank": rank_of(analyzed),
        "device": analyzed.device,
        "gpu": meta.get("gpu"),
        "synthetic": bool(analyzed.config.synthetic),
        "range": analyzed.range_name,
        "verdict": summary.bound,
        "iterations": columns(iterations),
        "collective_starts_ns": starts,
        "collective_ends_ns": ends,
        "collective_kinds": kinds,
        "warnings": list(analyzed.measurement_warnings),
    }
