"""Nsight Systems exports fuzzed on CUDA graphs, NVTX ranges and threads (round 5).

Every trace here is synthetic, hand-built with :class:`tests.nsys_builder.NsysBuilder` in pytest's temporary
folder and named ``*.synthetic.sqlite``; the expected numbers are exact, from the rows written.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

import tracekit
from tests.nsys_builder import NsysBuilder
from tracekit.readers.nsys_sqlite import read

US = 1_000


def ms(a: tracekit.Analysis, field: str) -> list[float]:
    """One per-iteration field, rounded to the ns (the analysis divides ns by 1e6)."""
    return [round(v, 6) for v in a.iterations[field].to_list()]


# ------------------------------------------------------------- iterations on several threads at once


def test_threads_running_unsynchronized_iterations_at_once_each_keep_their_own_steady_state(
    tmp_path: Path,
) -> None:
    """Two threads of one process (a thread pool serving requests side by side) each run 4 'iteration'
    ranges of 1 ms, 2 ms apart, thread 101 0.5 ms after thread 100; each range launches one kernel on its
    own stream from +0.2 to +1.5 ms, which outlives the range (unsynchronized). Each thread alone: latency
    1.5 ms (range start to GPU end), busy 1.3 ms, 86.7%. Thread 101's windows had started at thread 100's
    GPU end: latency 0.5 ms, busy 0.5 ms, 100%."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    corr = 1
    for tid, offset, stream in ((100, 0, 7), (101, 500 * US, 8)):
        for i in range(4):
            s = i * 2000 * US + offset
            b.nvtx_range(s, s + 1000 * US, "iteration", tid=tid)
            b.runtime(s + 100 * US, s + 110 * US, "cudaLaunchKernel_v7000", correlation=corr, tid=tid)
            b.kernel(s + 200 * US, s + 1500 * US, "gemm", correlation=corr, stream=stream)
            corr += 1
    a = tracekit.analyze(b.write(tmp_path / "thread_pool.synthetic.sqlite"))
    assert a.iterations.height == 8
    assert ms(a, "latency_ms") == [1.5] * 8
    assert ms(a, "gpu_busy_ms") == [1.3] * 8
    assert ms(a, "idle_ms") == [0.2] * 8


def test_iterations_one_after_another_on_changing_threads_stay_one_series(tmp_path: Path) -> None:
    """Iterations that do not overlap in time, each on another thread (a pool taking turns): iteration i+1's
    window still starts at iteration i's GPU end, whichever thread launched it. Ranges of 1 ms every 1.2 ms,
    kernels +0.2 to +1.3 ms: each window [GPU end of the previous, own GPU end] = 1.2 ms (the first 1.3)."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    for i in range(4):
        s = i * 1200 * US
        tid = 100 + i % 2
        b.nvtx_range(s, s + 1000 * US, "iteration", tid=tid)
        b.runtime(s + 100 * US, s + 110 * US, "cudaLaunchKernel_v7000", correlation=i + 1, tid=tid)
        b.kernel(s + 200 * US, s + 1300 * US, "gemm", correlation=i + 1)
    a = tracekit.analyze(b.write(tmp_path / "turns.synthetic.sqlite"))
    assert ms(a, "latency_ms") == [1.3, 1.2, 1.2, 1.2]


# ------------------------------------------------------------------------------------------ CUDA graphs


def _graph_iterations(b: NsysBuilder, *, nodes: bool, whole: bool, whole_device: int = 0) -> NsysBuilder:
    """4 'iteration' ranges of 80 µs, 100 µs apart, each with one cudaGraphLaunch (+2 to +4 µs) whose graph
    runs two 10 µs kernels (+6 to +16, +30 to +40 µs), traced node by node (``nodes``), whole (``whole``: one
    GRAPH_TRACE row +6 to +40 µs on ``whole_device``) or both, and a stream synchronize to +78 µs."""
    corr = 1
    for i in range(4):
        s = i * 100 * US
        b.nvtx_range(s, s + 80 * US, "iteration")
        b.runtime(s + 2 * US, s + 4 * US, "cudaGraphLaunch_v10000", correlation=corr)
        if nodes:
            b.kernel(s + 6 * US, s + 16 * US, "k1", correlation=corr, graph=5)
            b.kernel(s + 30 * US, s + 40 * US, "k2", correlation=corr, graph=5)
        if whole:
            b.graph_execution(s + 6 * US, s + 40 * US, graph=5, correlation=corr, device=whole_device)
        b.runtime(s + 42 * US, s + 78 * US, "cudaStreamSynchronize_v3020", correlation=corr + 1)
        corr += 2
    return b


def test_a_graph_traced_both_whole_and_node_by_node_counts_its_kernels_once(tmp_path: Path) -> None:
    """An export holding each graph launch twice, as a GRAPH_TRACE row and as its node kernels (same
    (pid, correlation)): busy was the whole row's span, 34 µs of 80 (42.5%), under a warning that the kernels
    are not counted (they were). The nodes are the measurement: busy 20 µs (25%), the same as the node-only
    export, and a warning says the whole-graph rows were left out. Partial reads (analyze's) agree."""
    b = _graph_iterations(NsysBuilder(), nodes=True, whole=True)
    b.gpu(0, "NVIDIA H100")
    both = b.write(tmp_path / "graph_both.synthetic.sqlite")
    b = _graph_iterations(NsysBuilder(), nodes=True, whole=False)
    b.gpu(0, "NVIDIA H100")
    nodes_only = b.write(tmp_path / "graph_nodes.synthetic.sqlite")
    a, ref = tracekit.analyze(both), tracekit.analyze(nodes_only)
    assert ms(a, "gpu_busy_ms") == ms(ref, "gpu_busy_ms") == [0.02] * 4
    assert a.iterations["kernels"].to_list() == [2] * 4
    assert any("traced both whole and node by node" in w for w in a.warnings)
    assert not any("traced whole (nsys --cuda-graph-trace=graph" in w for w in a.warnings)
    partial = read(both, frames={"ops": ("start", "end", "kind")})
    assert partial.ops.height == 8 and set(partial.ops["kind"].to_list()) == {"kernel"}
    assert partial.ops["pid"].null_count() == 8  # read to place the rows, then dropped as not asked for


def test_a_whole_graph_that_begins_on_the_host_runs_on_its_streams_device(tmp_path: Path) -> None:
    """CUPTI gives a whole-graph record whose first node is a host node deviceId INT_MAX ("the start is on the
    host"). Next to an eager kernel on device 0 of the same stream, that value had made a second GPU,
    2147483647, in the per-device rows: device 0 busy 10 of 80 µs and the graph's 20 µs on the phantom one.
    The row runs on its stream's device: one device, no per-device rows, busy 30 µs."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    corr = 1
    for i in range(4):
        s = i * 100 * US
        b.nvtx_range(s, s + 80 * US, "iteration")
        b.runtime(s + 2 * US, s + 4 * US, "cudaLaunchKernel_v7000", correlation=corr)
        b.kernel(s + 6 * US, s + 16 * US, "eager", correlation=corr)
        b.runtime(s + 5 * US, s + 7 * US, "cudaGraphLaunch_v10000", correlation=corr + 1)
        b.graph_execution(s + 20 * US, s + 40 * US, graph=5, correlation=corr + 1, device=2**31 - 1)
        b.runtime(s + 42 * US, s + 78 * US, "cudaStreamSynchronize_v3020", correlation=corr + 2)
        corr += 3
    path = b.write(tmp_path / "graph_host_start.synthetic.sqlite")
    assert read(path).ops.filter(pl.col("kind") == "graph")["device"].to_list() == [0] * 4
    a = tracekit.analyze(path)
    assert a.per_device is None
    assert ms(a, "gpu_busy_ms") == [0.03] * 4


def test_a_whole_graph_on_the_host_with_nothing_to_place_it_has_no_device(tmp_path: Path) -> None:
    """Only whole-graph rows, all with deviceId INT_MAX: nothing tells their GPU; they keep no device (null),
    with a warning, rather than a device 2147483647. The busy time is unchanged (34 µs of 80)."""
    b = _graph_iterations(NsysBuilder(), nodes=False, whole=True, whole_device=2**31 - 1)
    b.gpu(0, "NVIDIA H100")
    path = b.write(tmp_path / "graph_host_only.synthetic.sqlite")
    trace = read(path)
    assert trace.ops["device"].to_list() == [None] * 4
    assert any("began with a host node" in w for w in trace.meta["warnings"])
    assert ms(tracekit.analyze(path), "gpu_busy_ms") == [0.034] * 4


# ------------------------------------------------------------------------------------------ NVTX domains


def test_an_nvtx_domain_named_gpu_holds_host_ranges(tmp_path: Path) -> None:
    """A user's NVTX domain named "gpu" (``nvtx.annotate("iteration", domain="gpu")``) shares its name with
    the model's device-side annotations (Kineto's ``gpu_user_annotation``), which the range choice passes
    over: its 4 'iteration' ranges were invisible, the trace one window of 0.314 ms with no warning, and
    ``--range iteration`` said the trace holds no NVTX ranges. Every NVTX range is a host range: 4 iterations
    of 80 µs, 10 µs busy each, by default and with ``--range iteration``."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    b.nvtx_domain(0, 1, "gpu")
    for i in range(4):
        s = i * 100 * US + 10 * US
        b.nvtx_range(s, s + 80 * US, "iteration", domain=1)
        b.runtime(s + 2 * US, s + 4 * US, "cudaLaunchKernel_v7000", correlation=2 * i + 1)
        b.kernel(s + 6 * US, s + 16 * US, "k", correlation=2 * i + 1)
        b.runtime(s + 20 * US, s + 78 * US, "cudaStreamSynchronize_v3020", correlation=2 * i + 2)
    path = b.write(tmp_path / "gpu_domain.synthetic.sqlite")
    assert read(path).ranges["domain"].unique().to_list() == ["gpu (NVTX)"]
    for a in (tracekit.analyze(path), tracekit.analyze(path, range="iteration")):
        assert ms(a, "latency_ms") == [0.08] * 4
        assert ms(a, "gpu_busy_ms") == [0.01] * 4


def test_a_process_driving_one_gpu_per_thread_gives_each_gpu_its_own_threads_iterations(
    tmp_path: Path,
) -> None:
    """One process, two threads, each driving its own GPU and running its own 4 'iteration' ranges of 100 µs
    (thread 100: a 60 µs kernel on GPU 0; thread 101, 10 µs later: a 20 µs kernel on GPU 1). Each GPU's row
    had held all 8 iterations, the other thread's empty on it: GPU 0 busy 0.03 ms median, 30%, "framework"
    (it is 60%, compute-bound), GPU 1 10% (20%). Each GPU's row holds its own thread's 4 iterations; a
    thread driving both GPUs (or launching nothing) keeps its ranges in both rows."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    b.gpu(1, "NVIDIA H100")
    corr = 1
    for tid, dev, busy in ((100, 0, 60), (101, 1, 20)):
        for i in range(4):
            s = i * 200 * US + (tid - 100) * 10 * US
            b.nvtx_range(s, s + 100 * US, "iteration", tid=tid)
            b.runtime(s + 2 * US, s + 4 * US, "cudaLaunchKernel_v7000", correlation=corr, tid=tid)
            b.kernel(s + 6 * US, s + (6 + busy) * US, "k", correlation=corr, device=dev, stream=7 + dev)
            b.runtime(s + 8 * US, s + 98 * US, "cudaStreamSynchronize_v3020", correlation=corr + 1, tid=tid)
            corr += 2
    a = tracekit.analyze(b.write(tmp_path / "gpu_per_thread.synthetic.sqlite"))
    rows = {r["device"]: r for r in a.per_device}
    assert rows[0]["iterations"] == rows[1]["iterations"] == 4
    assert round(rows[0]["gpu_utilization"], 6) == 0.6 and rows[0]["bound"] == "compute"
    assert round(rows[1]["gpu_utilization"], 6) == 0.2 and rows[1]["bound"] == "framework"
