"""Ground truth of a simulated run, computed from the model's own event arrays.

This is deliberately independent of :mod:`tracekit.analyzers`: the point of a synthetic trace is that its metrics are
known without trusting the code under test. Per iteration (one ``iteration`` range, synchronized by
construction, so the latency window is the range itself):

- ``latency_ns`` = range end − range start;
- ``gpu_busy_ns`` = length of the union of the iteration's kernel intervals clipped to the range;
- ``idle_gaps`` = number of maximal sub-intervals of the range with no kernel running, longer than 0 ns,
  leading (range start → first kernel) and trailing (last kernel end → range end) gaps included;
  ``idle_ns`` their total (so ``gpu_busy_ns + idle_ns == latency_ns``, checked by the tests);
- ``kernels`` = kernels launched by the iteration; ``launches`` = launch calls (cudaLaunchKernel or
  cudaGraphLaunch) starting inside the range;
- ``sm_active_pct`` / ``warps_in_flight_pct`` = wall-time averages over the range of the model's SM-activity
  and warps-in-flight signals (Σ kernel time × SM fill / latency), which the sampled GPU metrics approximate.
- idle attribution (``dispatch_ns``, ``launch_ns``, ``sync_ns``, ``other_api_ns``, ``in_flight_ns``; they sum
  to ``idle_ns``): each idle interval is split by what the model's one host thread is doing. The next kernel
  of an interval is the kernel that ends it (by construction, launched by launch call k of the iteration, or
  by its graph launch); from the moment that call returns the interval is ``in_flight``. Before that (and in
  the trailing interval, which has no next kernel) the host is inside a launch call (``launch``: the model's
  cudaLaunchKernel / cudaGraphLaunch), inside its cudaDeviceSynchronize (``sync``), or running framework code
  (``dispatch``: the per-iteration pre/post work, every operator's CPU cost, the range close). The model
  makes no other API call, so ``other_api_ns`` is always 0.

With simulated noise (:class:`tracekit.simulate.mechanism.Noise`) every iteration also records
``noise_free_latency_ns`` (the same iteration without the noise) and ``stall_ns`` (its stall), and the summary
``latency_ms_noise_free_mean``: the latency a measurement should find once the noise is seen through. The sweep's
plateau and transition then come from those noise-free means.

Sweep level: the plateau is the run of batch sizes, from the smallest, whose mean true latency stays within
10% of the smallest batch size's; the transition batch size is the first past it, or null (docs/design.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tracekit.simulate.mechanism import API_GRAPH_LAUNCH, API_LAUNCH, API_SYNC, Chunk

PLATEAU_TOLERANCE = 0.10
#: Per-iteration integer fields (ns and counts) kept while accumulating.
INT_FIELDS = (
    "index",
    "start_ns",
    "end_ns",
    "latency_ns",
    "gpu_busy_ns",
    "idle_ns",
    "idle_gaps",
    "kernels",
    "launches",
)
#: Per-iteration idle attribution (integer ns), written to ``.truth.json`` only (not into the traces).
CAUSE_FIELDS = ("dispatch_ns", "launch_ns", "sync_ns", "other_api_ns", "in_flight_ns")


def chunk_truth(chunk: Chunk) -> dict[str, np.ndarray]:
    """Per-iteration truth of one chunk (arrays of length ``chunk.n_iter``)."""
    n, m = chunk.n_iter, chunk.ops
    rs = chunk.range_start
    re_ = chunk.range_end
    # The kernels of iteration i are the ones its launch calls issued; the model issues them in order.
    order = np.argsort(chunk.k_start.reshape(n, m), axis=1, kind="stable")
    s = np.take_along_axis(chunk.k_start.reshape(n, m), order, axis=1)
    e = np.take_along_axis(chunk.k_end.reshape(n, m), order, axis=1)
    fill = np.take_along_axis(chunk.k_fill.reshape(n, m), order, axis=1)
    occ = np.take_along_axis(chunk.k_occ.reshape(n, m), order, axis=1)
    s = np.clip(s, rs[:, None], re_[:, None])
    e = np.clip(e, rs[:, None], re_[:, None])
    reach = np.maximum.accumulate(e, axis=1)
    before = np.concatenate([rs[:, None], np.maximum(reach[:, :-1], rs[:, None])], axis=1)
    busy = np.maximum(0, e - np.maximum(s, before)).sum(axis=1)
    gap_before = s - before
    tail = re_ - np.maximum(reach[:, -1], rs)
    idle = np.where(gap_before > 0, gap_before, 0).sum(axis=1) + np.maximum(tail, 0)
    gaps = (gap_before > 0).sum(axis=1) + (tail > 0)
    latency = re_ - rs
    overlap = np.maximum(0, e - s)
    sm_active = np.where(latency > 0, (overlap * fill).sum(axis=1) / np.maximum(latency, 1) * 100.0, 0.0)
    warps = np.where(latency > 0, (overlap * fill * occ).sum(axis=1) / np.maximum(latency, 1) * 100.0, 0.0)

    is_launch = (chunk.api_kind == API_LAUNCH) | (chunk.api_kind == API_GRAPH_LAUNCH)
    starts = chunk.api_start[is_launch]
    slot = np.searchsorted(rs, starts, side="right") - 1
    inside = (slot >= 0) & (starts < re_[np.clip(slot, 0, n - 1)])
    launches = np.bincount(slot[inside], minlength=n)[:n]
    noise = {}
    if chunk.noise_free_latency is not None and chunk.stall_ns is not None:
        noise = {
            "noise_free_latency_ns": chunk.noise_free_latency.astype(np.int64),
            "stall_ns": chunk.stall_ns.astype(np.int64),
        }
    return {
        **noise,
        "index": chunk.iter_index.astype(np.int64),
        "start_ns": rs.astype(np.int64),
        "end_ns": re_.astype(np.int64),
        "latency_ns": latency.astype(np.int64),
        "gpu_busy_ns": busy.astype(np.int64),
        "idle_ns": idle.astype(np.int64),
        "idle_gaps": gaps.astype(np.int64),
        "kernels": np.full(n, m, dtype=np.int64),
        "launches": launches.astype(np.int64),
        "sm_active_pct": sm_active,
        "warps_in_flight_pct": warps,
    }


def _covered_before(t: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Σ over the disjoint, time-ordered calls [starts, ends) of their time before each ``t``."""
    if len(starts) == 0:
        return np.zeros(t.shape, dtype=np.int64)
    before = np.concatenate([[0], np.cumsum(ends - starts)])
    k = np.searchsorted(starts, t, side="right") - 1
    kk = np.clip(k, 0, None)
    return np.where(k >= 0, before[kk] + np.minimum(t - starts[kk], ends[kk] - starts[kk]), 0)


def chunk_attribution(chunk: Chunk) -> dict[str, np.ndarray]:
    """Per-iteration idle attribution of one chunk (see the module docstring), from the model's own arrays:
    its kernels, which call launched each, and the kinds of its host thread's calls (which never overlap)."""
    n, m = chunk.n_iter, chunk.ops
    rs, re_ = chunk.range_start[:, None], chunk.range_end[:, None]
    order = np.argsort(chunk.k_start.reshape(n, m), axis=1, kind="stable")
    s = np.clip(np.take_along_axis(chunk.k_start.reshape(n, m), order, axis=1), rs, re_)
    e = np.clip(np.take_along_axis(chunk.k_end.reshape(n, m), order, axis=1), rs, re_)
    call_end = chunk.api_end.reshape(n, -1)
    if call_end.shape[1] == 2:  # graph runtime: every kernel comes from the one cudaGraphLaunch
        launched_by_end = np.repeat(call_end[:, :1], m, axis=1)
    else:  # eager: kernel k from launch call k
        launched_by_end = np.take_along_axis(call_end[:, :m], order, axis=1)
    reach = np.maximum.accumulate(e, axis=1)
    before = np.concatenate([rs, np.maximum(reach[:, :-1], rs)], axis=1)
    idle = s > before
    a = np.where(idle, before, s)  # empty intervals [s, s) where there is no gap
    cut = np.clip(launched_by_end, a, s)
    # Host intervals: [a, cut) of every gap, then the trailing [last end, range end) (no next kernel).
    tail_start = np.maximum(reach[:, -1:], rs)
    host_a = np.concatenate([a, tail_start], axis=1).reshape(-1)
    host_b = np.concatenate([cut, np.maximum(re_, tail_start)], axis=1).reshape(-1)
    spent = {}
    for name, kinds in (("launch_ns", (API_LAUNCH, API_GRAPH_LAUNCH)), ("sync_ns", (API_SYNC,))):
        mine = np.isin(chunk.api_kind, kinds)
        starts, ends = chunk.api_start[mine], chunk.api_end[mine]
        inside = _covered_before(host_b, starts, ends) - _covered_before(host_a, starts, ends)
        spent[name] = inside.reshape(n, m + 1).sum(axis=1)
    host = (host_b - host_a).reshape(n, m + 1).sum(axis=1)
    return {
        "dispatch_ns": (host - spent["launch_ns"] - spent["sync_ns"]).astype(np.int64),
        "launch_ns": spent["launch_ns"].astype(np.int64),
        "sync_ns": spent["sync_ns"].astype(np.int64),
        "other_api_ns": np.zeros(n, dtype=np.int64),
        "in_flight_ns": (s - cut).sum(axis=1).astype(np.int64),
    }


class TruthAccumulator:
    """Collects per-iteration truth over the chunks of one config (a few numbers per iteration)."""

    def __init__(self) -> None:
        self._parts: list[dict[str, np.ndarray]] = []

    def add(self, chunk: Chunk) -> dict[str, np.ndarray]:
        part = chunk_truth(chunk)
        part.update(chunk_attribution(chunk))
        self._parts.append(part)
        return part

    def arrays(self) -> dict[str, np.ndarray]:
        if not self._parts:
            return {
                k: np.zeros(0) for k in (*INT_FIELDS, *CAUSE_FIELDS, "sm_active_pct", "warps_in_flight_pct")
            }
        return {k: np.concatenate([p[k] for p in self._parts]) for k in self._parts[0]}

    def iterations(self) -> list[dict[str, Any]]:
        """Per-iteration truth records (``*_ms`` from exact ns; the ns values are kept too)."""
        a = self.arrays()
        records = []
        for i in range(len(a["index"])):
            latency = int(a["latency_ns"][i])
            busy = int(a["gpu_busy_ns"][i])
            records.append(
                {
                    "index": int(a["index"][i]),
                    "start_ns": int(a["start_ns"][i]),
                    "end_ns": int(a["end_ns"][i]),
                    "latency_ms": latency / 1e6,
                    "gpu_busy_ms": busy / 1e6,
                    "idle_ms": int(a["idle_ns"][i]) / 1e6,
                    "gpu_utilization": busy / latency if latency else None,
                    "kernels": int(a["kernels"][i]),
                    "launches": int(a["launches"][i]),
                    "idle_gaps": int(a["idle_gaps"][i]),
                    "latency_ns": latency,
                    "gpu_busy_ns": busy,
                    "idle_ns": int(a["idle_ns"][i]),
                    "sm_active_pct": float(a["sm_active_pct"][i]),
                    "warps_in_flight_pct": float(a["warps_in_flight_pct"][i]),
                    **{k: int(a[k][i]) for k in CAUSE_FIELDS},
                    **{k[:-3] + "_ms": int(a[k][i]) / 1e6 for k in CAUSE_FIELDS},
                    **(
                        {
                            "noise_free_latency_ms": int(a["noise_free_latency_ns"][i]) / 1e6,
                            "stall_ms": int(a["stall_ns"][i]) / 1e6,
                        }
                        if "noise_free_latency_ns" in a
                        else {}
                    ),
                }
            )
        return records

    def summary(self) -> dict[str, Any]:
        """Means over iterations (ms, fractions, %) and totals."""
        a = self.arrays()
        count = len(a["index"])
        if not count:
            return {"iterations": 0}
        latency = a["latency_ns"].astype(np.float64)
        busy = a["gpu_busy_ns"].astype(np.float64)
        return {
            "iterations": count,
            "kernels": int(a["kernels"].sum()),
            "launches": int(a["launches"].sum()),
            "latency_ms_mean": float(latency.mean() / 1e6),
            "latency_ms_p50": float(np.median(latency) / 1e6),
            "gpu_busy_ms_mean": float(busy.mean() / 1e6),
            "gpu_utilization_mean": float((busy / np.maximum(latency, 1)).mean()),
            "idle_gaps_mean": float(a["idle_gaps"].mean()),
            "sm_active_pct_mean": float(a["sm_active_pct"].mean()),
            "warps_in_flight_pct_mean": float(a["warps_in_flight_pct"].mean()),
            **(
                {
                    "latency_ms_noise_free_mean": float(a["noise_free_latency_ns"].mean() / 1e6),
                    "stalled_iterations": int((a["stall_ns"] > 0).sum()),
                }
                if "noise_free_latency_ns" in a
                else {}
            ),
        }

    def attribution_summary(self) -> dict[str, Any]:
        """Means over iterations of each idle cause, ms (``dispatch_ms_mean``, ...; for ``.truth.json``)."""
        a = self.arrays()
        if not len(a["index"]):
            return {}
        return {k[:-3] + "_ms_mean": float(a[k].mean() / 1e6) for k in CAUSE_FIELDS}


def plateau_and_transition(
    latency_by_batch: Mapping[int, float], tolerance: float = PLATEAU_TOLERANCE
) -> tuple[list[int], int | None]:
    """The plateau and transition (docs/design.md) batch size, applied to true latencies (any unit).

    The plateau is the run of batch sizes, from the smallest, whose latency is at most (1 + tolerance) times
    the smallest batch size's; the transition is the first batch size past it, None if there is none.
    """
    batches = sorted(latency_by_batch)
    if not batches:
        return [], None
    base = latency_by_batch[batches[0]]
    for i, batch in enumerate(batches):
        if latency_by_batch[batch] > base * (1.0 + tolerance):
            return batches[:i], batch
    return batches, None
