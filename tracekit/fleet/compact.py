"""One trace's analysis reduced to what a cross-trace summary needs: a small, picklable, JSON-able dict.

Workers (processes or Dask) return this, never the frames: a 10^6-kernel trace's result is a few KB per
iteration-less summary plus one row per iteration.

Communication: device ops whose name says NCCL or RCCL (:data:`COMM_PATTERN`) are collectives. Per iteration
(ops counted in the iteration whose range launched them), ``comm_ms`` is the union of their intervals and
``exposed_comm_ms`` the part of that union that no other device op of the same device overlaps (communication
the GPU did not hide behind computation). ``collective_ends_ns`` / ``collective_starts_ns`` list each
collective's end and start in launch order: collectives end together on every rank, which is how
:mod:`tracekit.analyzers.ranks` aligns clocks across traces.
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


def merge_intervals(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint, sorted intervals covering the union of ``[starts, ends)`` (vectorized)."""
    if starts.size == 0:
        return starts, ends
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    new[1:] = s[1:] > reach[:-1]
    group = np.cumsum(new) - 1
    out_s = s[new]
    out_e = np.zeros(out_s.size, dtype=reach.dtype)
    np.maximum.at(out_e, group, e)
    return out_s, out_e


def covered(union_s: np.ndarray, union_e: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Length of ``[a, b)`` covered by the disjoint sorted union (for each pair, vectorized)."""
    if union_s.size == 0 or a.size == 0:
        return np.zeros(a.size, dtype=np.int64)
    prefix = np.concatenate([[0], np.cumsum(union_e - union_s)])

    def upto(x: np.ndarray) -> np.ndarray:
        i = np.searchsorted(union_s, x, side="right")  # intervals starting at or before x
        last = np.clip(i - 1, 0, None)
        inside = np.where(i > 0, np.clip(x - union_s[last], 0, union_e[last] - union_s[last]), 0)
        return prefix[np.clip(i - 1, 0, None)] * (i > 0) + inside

    return upto(b) - upto(a)


def comm_per_iteration(ops: pl.DataFrame) -> pl.DataFrame:
    """``iteration``, ``comm_ms``, ``exposed_comm_ms`` of every iteration with collectives (see module doc)."""
    is_comm = pl.col("name").str.contains(COMM_PATTERN)
    rows: list[dict[str, Any]] = []
    comm = ops.filter(is_comm)
    if comm.is_empty():
        return pl.DataFrame(
            schema={"iteration": pl.Int64, "comm_ms": pl.Float64, "exposed_comm_ms": pl.Float64}
        )
    others = ops.filter(~is_comm).partition_by(["iteration", "device"], as_dict=True)
    empty = np.zeros(0, dtype=np.int64)
    for (iteration, device), group in comm.group_by(["iteration", "device"], maintain_order=True):
        cs, ce = merge_intervals(group["start"].to_numpy(), group["end"].to_numpy())
        mine = others.get((iteration, device))
        us, ue = (
            merge_intervals(mine["start"].to_numpy(), mine["end"].to_numpy())
            if mine is not None
            else (empty, empty)
        )
        total = int((ce - cs).sum())
        hidden = int(covered(us, ue, cs, ce).sum())
        rows.append({"iteration": iteration, "comm_ns": total, "exposed_ns": total - hidden})
    frame = pl.DataFrame(rows)
    return frame.group_by("iteration", maintain_order=True).agg(
        comm_ms=pl.col("comm_ns").sum() / 1e6, exposed_comm_ms=pl.col("exposed_ns").sum() / 1e6
    )


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
    ops = analyzed.ops
    comm = comm_per_iteration(ops) if not ops.is_empty() else None
    if comm is not None and not comm.is_empty():
        iterations = iterations.join(comm, left_on="index", right_on="iteration", how="left").with_columns(
            pl.col("comm_ms").fill_null(0.0), pl.col("exposed_comm_ms").fill_null(0.0)
        )
        collectives = ops.filter(pl.col("name").str.contains(COMM_PATTERN)).sort(
            "call_start", "start", nulls_last=True
        )
        collectives = collectives.head(MAX_COLLECTIVES)
        starts = collectives["start"].to_list()
        ends = collectives["end"].to_list()
    else:
        iterations = iterations.with_columns(comm_ms=pl.lit(None, pl.Float64), exposed_comm_ms=pl.lit(None))
        starts = ends = []
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
        "iterations": iterations.to_dicts(),
        "collective_starts_ns": starts,
        "collective_ends_ns": ends,
        "warnings": list(analyzed.warnings),
    }
