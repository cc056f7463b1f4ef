"""Synthetic multi-rank Kineto traces with exactly known cross-rank truth (``tracekit simulate --ranks N``).

Every rank runs the same steps. True time (ns), for step ``i`` on rank ``r``:

- the host opens ``ProfilerStep#i`` at ``T_i + host_delay[r]`` and launches ``kernels`` compute kernels
  ``launch_gap_ns`` apart (``cudaLaunchKernel``), each queued behind the previous one on stream 7;
- compute kernels last ``kernel_ns`` (``kernel_ns * straggler_factor`` on the straggler rank): the rank
  *arrives* at the step's collective when its last compute kernel ends, ``a[i, r]``;
- the collective (an NCCL all-reduce kernel, stream 13) starts at ``a[i, r]`` and ends on every rank at the
  same instant ``C_i = max_r a[i, r] + comm_ns`` (an all-reduce finishes together): ranks that arrived early
  wait inside it. A compute kernel on stream 7 overlaps the collective's first ``overlap_ns``, so the exposed
  (not overlapped) communication of rank ``r`` is ``C_i - a[i, r] - overlap_ns``;
- the host waits in ``cudaDeviceSynchronize`` until ``C_i + sync_tail_ns``, closes the step, and the next
  step starts ``step_gap_ns`` later on every rank.

Rank ``r``'s clock reads true time + ``clock_offset_ns[r]``: every timestamp it records is shifted by it.
Truth (``ranks.synthetic.truth.json``): the straggler (arrives last at every collective), the wait it
causes, the clock offsets relative to rank 0, the step-start skew after aligning clocks, exposed
communication per rank. Files are named ``rank{r}.synthetic.json.gz`` and say ``synthetic`` in their header:
nothing here is a measurement.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tracekit.io import atomic_path, write_text_atomic

NCCL_KERNEL = "ncclDevKernel_AllReduce_Sum_f16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
COMPUTE_KERNEL = "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_synthetic"
OVERLAP_KERNEL = "elementwise_kernel_overlapping_comm_synthetic"
COMPUTE_STREAM = 7
COMM_STREAM = 13


@dataclass
class RankSimulation:
    """Parameters of a multi-rank simulation (times in ns; see the module docstring)."""

    ranks: int = 4
    steps: int = 10
    kernels: int = 20
    kernel_ns: int = 50_000
    launch_gap_ns: int = 8_000
    launch_latency_ns: int = 4_000
    straggler: int = 1
    straggler_factor: float = 1.25
    comm_ns: int = 120_000
    overlap_ns: int = 30_000
    sync_tail_ns: int = 6_000
    step_gap_ns: int = 40_000
    host_delay_ns: list[int] = field(default_factory=list)
    clock_offset_ns: list[int] = field(default_factory=list)
    start_ns: int = 1_700_000_000_000_000_000

    def __post_init__(self) -> None:
        if self.ranks < 2:
            raise ValueError("a multi-rank simulation needs at least 2 ranks")
        if not 0 <= self.straggler < self.ranks:
            raise ValueError(f"straggler rank {self.straggler} is not one of the {self.ranks} ranks")
        if not self.host_delay_ns:
            self.host_delay_ns = [(r * 3_000) % 10_000 for r in range(self.ranks)]
        if not self.clock_offset_ns:
            # one rank's clock runs 2.5 ms ahead (another host), the rest agree
            self.clock_offset_ns = [2_500_000 if r == self.ranks - 1 else 0 for r in range(self.ranks)]
        if len(self.host_delay_ns) != self.ranks or len(self.clock_offset_ns) != self.ranks:
            raise ValueError("host_delay_ns and clock_offset_ns need one value per rank")
        if self.overlap_ns >= self.comm_ns:
            raise ValueError("overlap_ns must be shorter than comm_ns")
        # (the truth names ``straggler`` as the one that arrives last at every collective: parameters under
        # which another rank does, a straggler_factor under 1 or a host delay longer than its lead, would
        # write a false truth)
        arrival = _timeline(self).arrival
        for i, step in enumerate(arrival):
            last = np.flatnonzero(step == step.max()).tolist()
            if last != [self.straggler]:
                who = f"rank {last[0]} is" if len(last) == 1 else f"ranks {', '.join(map(str, last))} are"
                raise ValueError(
                    f"rank {self.straggler} is not the last to arrive at step {i} ({who}): the straggler "
                    "must arrive last at every step (straggler_factor over 1, by more than the other ranks' "
                    "host delays)"
                )


@dataclass
class _Timeline:
    """True-time arrays of every rank: ``[step, rank]`` (and ``[step, rank, kernel]`` for compute)."""

    step_start: np.ndarray
    launch: np.ndarray
    k_start: np.ndarray
    k_end: np.ndarray
    arrival: np.ndarray
    comm_launch: np.ndarray
    comm_end: np.ndarray
    step_end: np.ndarray


def _timeline(sim: RankSimulation) -> _Timeline:
    n, s, k = sim.ranks, sim.steps, sim.kernels
    duration = np.full(n, float(sim.kernel_ns))
    duration[sim.straggler] = round(sim.kernel_ns * sim.straggler_factor)
    duration = duration.astype(np.int64)
    delay = np.asarray(sim.host_delay_ns, dtype=np.int64)
    step_start = np.zeros((s, n), dtype=np.int64)
    launch = np.zeros((s, n, k), dtype=np.int64)
    k_start = np.zeros((s, n, k), dtype=np.int64)
    k_end = np.zeros((s, n, k), dtype=np.int64)
    arrival = np.zeros((s, n), dtype=np.int64)
    comm_launch = np.zeros((s, n), dtype=np.int64)
    comm_end = np.zeros(s, dtype=np.int64)
    step_end = np.zeros(s, dtype=np.int64)
    t = sim.start_ns
    offsets = np.arange(k, dtype=np.int64)
    for i in range(s):  # a few steps: the per-kernel work below is vectorized
        step_start[i] = t + delay
        launch[i] = step_start[i][:, None] + 1_000 + offsets[None, :] * sim.launch_gap_ns
        # queued back to back: kernel j starts at max(its arrival on the device, previous end)
        ready = launch[i] + sim.launch_latency_ns
        # with launch gap < duration the queue never drains: start_j = max(ready_j, ready_0 + j * d)
        chained = ready[:, :1] + offsets[None, :] * duration[:, None]
        k_start[i] = np.maximum(ready, chained)
        k_end[i] = k_start[i] + duration[:, None]
        arrival[i] = k_end[i][:, -1]
        comm_launch[i] = launch[i][:, -1] + sim.launch_gap_ns
        comm_end[i] = arrival[i].max() + sim.comm_ns
        step_end[i] = comm_end[i] + sim.sync_tail_ns
        t = step_end[i] + sim.step_gap_ns
    return _Timeline(step_start, launch, k_start, k_end, arrival, comm_launch, comm_end, step_end)


def truth(sim: RankSimulation) -> dict[str, Any]:
    """The cross-rank truth of ``sim`` (ms unless named otherwise)."""
    tl = _timeline(sim)
    arrival = tl.arrival - sim.start_ns  # exact in float64 (epoch ns are not)
    others = np.delete(arrival, sim.straggler, axis=1)
    wait = arrival[:, sim.straggler] - np.median(others, axis=1)
    exposed = tl.comm_end[:, None] - tl.arrival - sim.overlap_ns
    comm = tl.comm_end[:, None] - tl.arrival
    skew = tl.step_start.max(axis=1) - tl.step_start.min(axis=1)
    offsets = np.asarray(sim.clock_offset_ns) - sim.clock_offset_ns[0]
    return {
        "synthetic": True,
        "parameters": asdict(sim),
        "straggler_rank": sim.straggler,
        "straggler_arrives_last": int(sim.steps),
        "straggler_wait_ms_per_step": [float(w) / 1e6 for w in wait],
        "clock_offset_ms_vs_rank0": [float(o) / 1e6 for o in offsets],
        "step_start_skew_ms": [float(x) / 1e6 for x in skew],
        "comm_ms_per_rank": [float(c) / 1e6 for c in comm.mean(axis=0)],
        "exposed_comm_ms_per_rank": [float(e) / 1e6 for e in exposed.mean(axis=0)],
        "step_latency_ms": [float(x) / 1e6 for x in (tl.step_end - tl.step_start.min(axis=1))],
    }


def _us(ns: int) -> str:
    """Kineto's microseconds with three decimals (exact for integer ns)."""
    return f"{ns // 1000}.{ns % 1000:03d}"


def collective_args(sim: RankSimulation) -> str:
    """The args PyTorch's ProcessGroupNCCL gives each collective kernel (``record_param_comms``), as JSON
    text to follow a kernel's other args: one all-reduce in the default group "0" of every rank, as in the
    real DDP and vLLM traces (``"Process Group Ranks"`` is text holding a JSON list)."""
    members = ", ".join(str(r) for r in range(sim.ranks))
    return (
        f', "Collective name": "allreduce", "Group size": {sim.ranks}, "dtype": "Half", '
        f'"Process Group Name": "0", "Process Group Description": "default_pg", '
        f'"Process Group Ranks": "[{members}]"'
    )


def rank_events(sim: RankSimulation, rank: int) -> list[str]:
    """The trace events of one rank as JSON lines (its clock offset applied)."""
    tl = _timeline(sim)
    off = sim.clock_offset_ns[rank]
    pid, tid, dev = 4000 + rank, 4000 + rank, rank
    lines: list[str] = []
    corr = 1
    group_args = collective_args(sim)
    for i in range(sim.steps):
        s0, s1 = int(tl.step_start[i, rank]) + off, int(tl.step_end[i]) + off
        lines.append(
            f'{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{i}", "pid": {pid}, "tid": {tid}, '
            f'"ts": {_us(s0)}, "dur": {_us(s1 - s0)}}}'
        )
        for j in range(sim.kernels + 2):  # compute kernels, the collective, the overlapping kernel
            if j < sim.kernels:
                call = int(tl.launch[i, rank, j]) + off
                start, end = int(tl.k_start[i, rank, j]) + off, int(tl.k_end[i, rank, j]) + off
                name, stream = COMPUTE_KERNEL, COMPUTE_STREAM
            elif j == sim.kernels:
                call = int(tl.comm_launch[i, rank]) + off
                start, end = int(tl.arrival[i, rank]) + off, int(tl.comm_end[i]) + off
                name, stream = NCCL_KERNEL, COMM_STREAM
            else:
                call = int(tl.comm_launch[i, rank]) + 2_000 + off
                start = int(tl.arrival[i, rank]) + off
                end = start + sim.overlap_ns
                name, stream = OVERLAP_KERNEL, COMPUTE_STREAM
            lines.append(
                f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {pid}, "tid": {tid}, '
                f'"ts": {_us(call)}, "dur": 1.000, "args": {{"correlation": {corr}}}}}'
            )
            extra = group_args if name == NCCL_KERNEL else ""
            lines.append(
                f'{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": {dev}, "tid": {stream}, '
                f'"ts": {_us(start)}, "dur": {_us(end - start)}, "args": {{"device": {dev}, '
                f'"stream": {stream}, "correlation": {corr}{extra}}}}}'
            )
            corr += 1
        sync_start = int(tl.comm_launch[i, rank]) + 4_000 + off
        lines.append(
            f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": {pid}, "tid": {tid}, '
            f'"ts": {_us(sync_start)}, "dur": {_us(s1 - 1_000 - sync_start)}, "args": {{"correlation": {corr}}}}}'
        )
        corr += 1
    return lines


def sidecar(sim: RankSimulation, rank: int) -> dict[str, Any]:
    """The ``rank{r}.synthetic.meta.json`` beside each rank trace: what made it, that it is synthetic."""
    return {
        "synthetic": True,
        "made_by": "tracekit simulate --ranks",
        "note": "SYNTHETIC trace from tracekit's multi-rank model; not a measurement",
        "device": "gpu",
        "gpu": "Simulated GPU",
        "rank": rank,
        "world_size": sim.ranks,
        "iterations": sim.steps,
        "truth": "ranks.synthetic.truth.json",
    }


def write_ranks(sim: RankSimulation, out: Path) -> list[Path]:
    """Write ``rank{r}.synthetic.json.gz`` and its sidecar ``rank{r}.synthetic.meta.json`` (:func:`sidecar`) for
    every rank and ``ranks.synthetic.truth.json`` into ``out`` (created; atomically, file by file). Returns the
    trace paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for rank in range(sim.ranks):
        header = {
            "schemaVersion": 1,
            "tracekit_synthetic": True,
            "synthetic": True,
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": sim.ranks},
            "deviceProperties": [{"id": rank, "name": "Simulated GPU", "numSms": 132}],
            "traceName": f"synthetic rank {rank}",
        }
        head = json.dumps(header)
        body = ",\n".join(rank_events(sim, rank))
        path = out / f"rank{rank}.synthetic.json.gz"
        with atomic_path(path) as tmp, gzip.open(tmp, "wt", encoding="utf-8", compresslevel=3) as fh:
            fh.write(head[:-1] + ', "traceEvents": [\n' + body + "\n]}\n")
        write_text_atomic(
            out / f"rank{rank}.synthetic.meta.json", json.dumps(sidecar(sim, rank), indent=2) + "\n"
        )
        paths.append(path)
    write_text_atomic(out / "ranks.synthetic.truth.json", json.dumps(truth(sim), indent=2) + "\n")
    return paths
