"""Round 15, Nsight Systems reader: export quirks of real captures tracekit had not seen (ranges nsys writes
itself, processes, capture edges).

Sources are named in each test. Every trace here is synthetic, hand-built with :class:`tests.nsys_builder.NsysBuilder`
in pytest's temporary folder and named ``*.synthetic.sqlite``; the expected numbers are exact, from the rows
written.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import tracekit
from tests.nsys_builder import NsysBuilder
from tracekit.readers.nsys_sqlite import read

US = 1_000

# ---------------------------------------------------------------- ranges nsys writes itself: the GIL trace

#: The NVTX domain and range names of nsys's Python GIL trace (``nsys profile -t python-gil``, nsys 2024+), as
#: two independent public readers of real exports name them (a nsys-ai docs page derived from the Nsight Systems
#: User Guide gives the option; the readers exclude domain "GIL Trace" and the ranges "Holding GIL" / "Waiting
#: for GIL", and domain "Python Periodic Sampling", from the application's ranges).
GIL_DOMAIN = "GIL Trace"


def _steps_with_gil_trace(b: NsysBuilder, name: str) -> NsysBuilder:
    """Four ``name`` ranges of 40 µs, each launching one 20 µs kernel and synchronizing (busy 20 of 40 µs,
    0.5), on a thread whose GIL nsys traced: the GIL is held from the end of one step's sync to the start of the
    next one's (PyTorch releases it while it waits in ``cudaDeviceSynchronize``), with a 1 µs wait to take it
    back. A 'Holding GIL' range thus encloses the start of each step and ends inside it."""
    b.gpu(0, "NVIDIA H100")
    b.nvtx_domain(10 * US, 2, GIL_DOMAIN)
    held_from = 20 * US
    for i in range(4):
        t0 = 100 * US + i * 50 * US
        b.nvtx_range(t0, t0 + 40 * US, name)
        b.runtime(t0 + 1 * US, t0 + 5 * US, "cudaLaunchKernel_v7000", correlation=2 * i + 1)
        b.kernel(t0 + 6 * US, t0 + 26 * US, "gemm", correlation=2 * i + 1)
        b.runtime(t0 + 5 * US, t0 + 27 * US, "cudaDeviceSynchronize_v3020", correlation=2 * i + 2)
        b.nvtx_range(held_from, t0 + 5 * US, "Holding GIL", domain=2)
        b.nvtx_range(t0 + 27 * US, t0 + 28 * US, "Waiting for GIL", domain=2)
        held_from = t0 + 28 * US
    b.nvtx_range(held_from, 400 * US, "Holding GIL", domain=2)
    return b


def test_gil_trace_ranges_are_no_iterations(tmp_path: Path) -> None:
    """nsys's GIL trace writes a 'Holding GIL' / 'Waiting for GIL' range each time a Python thread takes or waits
    for the GIL: far more ranges than the program's, each overlapping the program's own. Read as the program's,
    'Holding GIL' was chosen as the iteration (the most frequent top-level range): one 'iteration' of 106 µs
    holding one kernel, "framework-bound" at 0.19 without a doubt, 3 of 4 kernels outside it. They are nsys's,
    not the program's: left out (with a warning), the 4 'step' ranges are the iterations, 40 µs, busy 20 µs,
    compute-bound."""
    path = _steps_with_gil_trace(NsysBuilder(), "step").write(tmp_path / "gil_trace.synthetic.sqlite")
    trace = read(path)
    assert sorted(set(trace.ranges.get_column("name").to_list())) == ["step"]
    assert trace.ranges.get_column("depth").to_list() == [0, 0, 0, 0]
    assert [w for w in trace.meta["warnings"] if "GIL" in w]
    analysis = tracekit.analyze(path)
    assert analysis.range_name == "step"
    assert analysis.iterations["latency_ms"].to_list() == [0.04] * 4
    assert analysis.iterations["gpu_busy_ms"].to_list() == [0.02] * 4
    assert analysis.verdict == "compute"


def test_gil_trace_ranges_are_no_cpu_operators(tmp_path: Path) -> None:
    """A CPU-only capture (``-t nvtx,osrt,python-gil``): 3 'iteration' ranges of 10 µs, each with one 4 µs 'op'
    and, 7 µs in, a 2 µs 'Waiting for GIL' (another thread held it). The operators of a CPU-only trace are its
    leaf ranges: the wait was one, busy 6 of 10 µs (0.6, "compute-bound"). Without it: busy 4 of 10, 0.4."""
    b = NsysBuilder()
    b.nvtx_domain(10 * US, 2, GIL_DOMAIN)
    for i in range(3):
        t0 = 100 * US + i * 20 * US
        b.nvtx_range(t0, t0 + 10 * US, "iteration")
        b.nvtx_range(t0 + 2 * US, t0 + 6 * US, "op")
        b.nvtx_range(t0 + 7 * US, t0 + 9 * US, "Waiting for GIL", domain=2)
    path = b.write(tmp_path / "gil_trace_cpu.synthetic.sqlite")
    analysis = tracekit.analyze(path)
    assert analysis.iterations["gpu_busy_ms"].to_list() == [0.004] * 3
    assert analysis.iterations["gpu_utilization"].to_list() == pytest.approx([0.4] * 3)


def test_gil_ranges_of_a_domain_created_elsewhere_are_left_out_too(tmp_path: Path) -> None:
    """A 'Holding GIL' / 'Waiting for GIL' range whose domain has no create event in its process (a forked
    child: the parent created it) is nsys's all the same; a range of that name in the default domain is the
    program's and stays."""
    b = _steps_with_gil_trace(NsysBuilder(), "step")
    b.rows["NVTX_EVENTS"] = [r for r in b.rows["NVTX_EVENTS"] if r["eventType"] != 75]
    b.nvtx_range(450 * US, 460 * US, "Holding GIL")  # the program's own, default domain
    trace = read(b.write(tmp_path / "gil_trace_no_domain.synthetic.sqlite"))
    names = trace.ranges.get_column("name").to_list()
    assert names.count("step") == 4
    assert names.count("Holding GIL") == 1
    assert "Waiting for GIL" not in names


# ---------------------------------------------------------------- library ranges (a file this round does not own)


def test_cccl_library_ranges_are_no_iterations(tmp_path: Path) -> None:
    """CCCL (CUB, Thrust; the CUDA toolkit's C++ core libraries) opens an NVTX range around each device
    algorithm call in its own domain "CCCL" (``_CCCL_NVTX_RANGE_SCOPE``, a registered string such as
    ``cub::DeviceRadixSort::SortPairs``), as NCCL does in domain "NCCL". A trace with no range of the program's
    own: 4 eager steps, each a 10 µs gemm and a 10 µs CUB sort launched inside a CCCL range. The library ranges
    were the iterations (4 of 20 µs holding the sort kernel only, 3 gemms outside every iteration); as with
    NCCL's, the trace is one window of its device work (the same trace with the domain named "NCCL")."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    b.nvtx_domain(10 * US, 3, "CCCL")
    corr = 1
    for i in range(4):
        t0 = 100 * US + i * 50 * US
        b.runtime(t0 + 1 * US, t0 + 3 * US, "cudaLaunchKernel_v7000", correlation=corr)
        b.kernel(t0 + 4 * US, t0 + 14 * US, "gemm", correlation=corr)
        b.nvtx_range(t0 + 5 * US, t0 + 9 * US, registered="cub::DeviceRadixSort::SortPairs", domain=3)
        b.runtime(t0 + 6 * US, t0 + 8 * US, "cudaLaunchKernel_v7000", correlation=corr + 1)
        b.kernel(t0 + 15 * US, t0 + 25 * US, "DeviceRadixSortOnesweepKernel", correlation=corr + 1)
        b.runtime(t0 + 10 * US, t0 + 26 * US, "cudaDeviceSynchronize_v3020", correlation=corr + 2)
        corr += 3
    path = b.write(tmp_path / "cccl.synthetic.sqlite")
    assert read(path).ranges.get_column("domain").to_list() == ["CCCL"] * 4
    analysis = tracekit.analyze(path)
    assert analysis.range_name == "window"


# ---------------------------------------------------------------- a capture started by cudaProfilerStart

#: The DIAGNOSTIC_EVENT table as nsys 2024.6 to 2026.2 write it (real exports).
DIAGNOSTIC_DDL = (
    'CREATE TABLE DIAGNOSTIC_EVENT ("timestamp" INTEGER NOT NULL, "timestampType" INTEGER NOT NULL, '
    '"source" INTEGER NOT NULL, "severity" INTEGER NOT NULL, "text" TEXT NOT NULL, "globalPid" INTEGER)'
)
#: What nsys 2025.3 writes when ``--capture-range=cudaProfilerApi`` starts the collection (the committed H200
#: samples of sample_traces/h200_bert_fp16/nsys-*: at 12.04 and 13.59 ms, after "Profiling has started." at 0).
PROFILER_START = "Profiling started due to cudaProfilerStart API invoked in the application."


def _with_diagnostics(path: Path, rows: list[tuple[int, str | int]]) -> Path:
    """Add DIAGNOSTIC_EVENT rows (timestamp, text) to ``path`` as nsys writes them (target timestamps, info); a
    text given as an integer is a StringIds id, in a ``text`` column declared INTEGER (as round 14's test)."""
    con = sqlite3.connect(path)
    try:
        ids = any(isinstance(said, int) for _, said in rows)  # (messages as StringIds ids: an INTEGER column)
        con.execute(DIAGNOSTIC_DDL.replace('"text" TEXT', '"text" INTEGER') if ids else DIAGNOSTIC_DDL)
        con.executemany(
            "INSERT INTO DIAGNOSTIC_EVENT VALUES (?, 1, 3, 1, ?, ?)", [(t, s, 100 << 24) for t, s in rows]
        )
        con.commit()
    finally:
        con.close()
    return path


def _capture_started_at_10us(b: NsysBuilder) -> NsysBuilder:
    """A capture whose collection cudaProfilerStart began at 10 µs (session clock 0 = "Profiling has started."):
    an 'iteration' range crossing that start (5..45 µs: its work before 10 µs is not traced; a 6 µs kernel after
    it, busy 6 of 40 µs, 0.15) and two inside it (100..140, 150..190 µs, a 20 µs kernel each: 0.5)."""
    b.gpu(0, "NVIDIA H100")
    b.nvtx_range(5 * US, 45 * US, "iteration")
    b.runtime(10 * US, 11 * US, "cudaProfilerStart_v4000", correlation=1)
    b.runtime(12 * US, 13 * US, "cudaLaunchKernel_v7000", correlation=2)
    b.kernel(14 * US, 20 * US, "gemm", correlation=2)
    b.runtime(13 * US, 21 * US, "cudaDeviceSynchronize_v3020", correlation=3)
    corr = 4
    for t0 in (100 * US, 150 * US):
        b.nvtx_range(t0, t0 + 40 * US, "iteration")
        b.runtime(t0 + 1 * US, t0 + 5 * US, "cudaLaunchKernel_v7000", correlation=corr)
        b.kernel(t0 + 6 * US, t0 + 26 * US, "gemm", correlation=corr)
        b.runtime(t0 + 5 * US, t0 + 27 * US, "cudaDeviceSynchronize_v3020", correlation=corr + 1)
        corr += 2
    b.capture(300 * US)
    return b


@pytest.mark.parametrize("stored", ["text", "string id"])
def test_ranges_begun_before_a_cuda_profiler_start_capture_are_left_out(tmp_path: Path, stored: str) -> None:
    """Under ``--capture-range=cudaProfilerApi`` nsys's clock is not 0 at the capture's start: the real 2025.3
    exports committed here write "Profiling has started." at 0 and "Profiling started due to cudaProfilerStart
    API invoked in the application." 12 to 14 ms later, where the collection began (the cuProfilerStart call 15
    µs after it; nothing of the application's before). A range begun before that start (as round 14's rule for
    start < 0 says) holds none of its work before it: read as an iteration it was 0.15 busy beside two of 0.5.
    It is left out, with the warning: 2 iterations of 0.5. (The message may also be a StringIds id, as
    round 14 reads nsys's loss messages.)"""
    b = _capture_started_at_10us(NsysBuilder())
    said: str | int = b.string(PROFILER_START) if stored == "string id" else PROFILER_START
    path = b.write(tmp_path / "profiler_start.synthetic.sqlite")
    _with_diagnostics(
        path, [(0, "Profiling has started."), (10 * US, said), (300 * US, "Profiling has stopped.")]
    )
    trace = read(path)
    assert trace.ranges.get_column("start").to_list() == [100 * US, 150 * US]
    assert [w for w in trace.meta["warnings"] if "before the capture" in w]
    analysis = tracekit.analyze(path)
    assert analysis.iterations["gpu_utilization"].to_list() == [0.5, 0.5]


def test_without_a_profiler_start_the_capture_starts_at_0(tmp_path: Path) -> None:
    """The same rows without nsys's word that cudaProfilerStart began the capture (an immediate capture: the
    range at 5 µs is inside it): three iterations, the first 0.15."""
    path = _capture_started_at_10us(NsysBuilder()).write(tmp_path / "immediate.synthetic.sqlite")
    _with_diagnostics(path, [(0, "Profiling has started."), (300 * US, "Profiling has stopped.")])
    analysis = tracekit.analyze(path)
    assert analysis.iterations["gpu_utilization"].to_list() == [0.15, 0.5, 0.5]


# ---------------------------------------------------------------- start/end ranges ended on another thread


@pytest.mark.parametrize("ended_on", [200, 100], ids=["another thread", "the same thread"])
def test_async_ranges_ended_on_another_thread_do_not_nest_the_starting_threads_ranges(
    tmp_path: Path, ended_on: int
) -> None:
    """NVTX start/end ranges are process ranges (NVTX's "Process Ranges", ``nvtxRangeStartEx``/``nvtxRangeEnd``,
    may end on any thread: ``endGlobalTid`` then differs from ``globalTid``), not part of a thread's push/pop
    stack. A serving loop: 6 'step' push/pop ranges of 40 µs on the main thread (one 20 µs kernel each, 0.5),
    and 3 'request' start/end ranges of 125 µs, each started on the main thread inside a step and ended by a
    worker thread 2.5 steps later. Counted in the main thread's nesting, every step started while a request was
    open was depth 1: 'step' had one top-level range, 1 iteration, 5 of 6 kernels outside every iteration. The
    requests no longer nest the steps: 6 iterations of 40 µs, busy 20 µs. Ended on the main thread itself (an
    event loop ends its requests), they cross the steps all the same, and are no frame of its stack either."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    for i in range(6):
        t0 = 100 * US + i * 50 * US
        b.nvtx_range(t0, t0 + 40 * US, "step")
        b.runtime(t0 + 1 * US, t0 + 5 * US, "cudaLaunchKernel_v7000", correlation=2 * i + 1)
        b.kernel(t0 + 6 * US, t0 + 26 * US, "gemm", correlation=2 * i + 1)
        b.runtime(t0 + 5 * US, t0 + 27 * US, "cudaDeviceSynchronize_v3020", correlation=2 * i + 2)
    for k in (0, 2, 4):
        start = 100 * US + k * 50 * US + 10 * US
        b.nvtx_range(start, start + 125 * US, "request", start_end=True, end_tid=ended_on)
    path = b.write(tmp_path / "async_requests.synthetic.sqlite")
    trace = read(path)
    steps = trace.ranges.filter(trace.ranges["name"] == "step")
    assert steps.get_column("depth").to_list() == [0] * 6
    # a request's own depth still counts the step it began in
    requests = trace.ranges.filter(trace.ranges["name"] == "request")
    assert requests.get_column("depth").to_list() == [1, 1, 1]
    analysis = tracekit.analyze(path)
    assert analysis.range_name == "step"
    assert analysis.iterations["latency_ms"].to_list() == [0.04] * 6
    assert analysis.iterations["gpu_busy_ms"].to_list() == [0.02] * 6


def test_a_start_end_range_ended_on_its_own_thread_still_nests(tmp_path: Path) -> None:
    """A start/end range started and ended on one thread ('iteration', as Python's ``nvtx.start_range`` loop
    writes it) still encloses the push/pop ranges inside it: in a CPU-only capture its 'op' leaves are depth 1,
    the operators (busy 4 of 10 µs, 0.4)."""
    b = NsysBuilder()
    for i in range(3):
        t0 = 100 * US + i * 20 * US
        b.nvtx_range(t0, t0 + 10 * US, "iteration", start_end=True, end_tid=100)
        b.nvtx_range(t0 + 2 * US, t0 + 6 * US, "op")
    path = b.write(tmp_path / "start_end_iterations.synthetic.sqlite")
    assert read(path).ranges.get_column("depth").to_list() == [0, 1] * 3
    analysis = tracekit.analyze(path)
    assert analysis.iterations["gpu_utilization"].to_list() == pytest.approx([0.4] * 3)


def test_an_end_thread_of_0_is_no_other_thread(tmp_path: Path) -> None:
    """nsys 2021.x exports a default for every missing NOT NULL field ("all fields are declared as NOT NULL ...
    default value for that field is exported", its SQLite schema reference): start/end 'iteration' ranges with
    ``endGlobalTid`` 0 that hold their 'op' whole still nest it (what sets a start/end range apart is that it
    crosses its thread's ranges, not the thread it ended on)."""
    b = NsysBuilder()
    for i in range(3):
        t0 = 100 * US + i * 20 * US
        b.nvtx_range(t0, t0 + 10 * US, "iteration", start_end=True)
        b.nvtx_range(t0 + 2 * US, t0 + 6 * US, "op")
    for row in b.rows["NVTX_EVENTS"]:
        row["endGlobalTid"] = 0
    path = b.write(tmp_path / "end_tid_0.synthetic.sqlite")
    assert read(path).ranges.get_column("depth").to_list() == [0, 1] * 3


# ---------------------------------------------------------------- device ops of processes the trace has no call of


def test_ops_of_a_process_without_calls_are_no_launch_before_the_capture(tmp_path: Path) -> None:
    """nsys 2025.6's ``--cuda-trace-scope`` traces CUDA "across process trees or the entire system" (its release
    notes): the kernels of a process the trace holds no CUDA call of (another tenant of the GPU) come with
    correlation ids that link to nothing. Process 100: 4 'iteration' ranges with a 20 µs kernel each (0.5);
    process 300: a 10 µs kernel in each iteration's idle time, no call, no range. They were "launched before
    the capture began" (launch_not_in_trace: 4); they are another process's work: outside every iteration,
    'other_process' 4, with a warning, the iterations' numbers unchanged."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    for i in range(4):
        t0 = 100 * US + i * 50 * US
        b.nvtx_range(t0, t0 + 40 * US, "iteration")
        b.runtime(t0 + 1 * US, t0 + 5 * US, "cudaLaunchKernel_v7000", correlation=2 * i + 1)
        b.kernel(t0 + 6 * US, t0 + 26 * US, "gemm", correlation=2 * i + 1)
        b.runtime(t0 + 5 * US, t0 + 27 * US, "cudaDeviceSynchronize_v3020", correlation=2 * i + 2)
        b.kernel(t0 + 27 * US, t0 + 37 * US, "other_tenant", correlation=100 + i, pid=300)
    path = b.write(tmp_path / "other_tenant.synthetic.sqlite")
    trace = read(path)
    assert [w for w in trace.meta["warnings"] if "no CUDA call" in w]
    analysis = tracekit.analyze(path)
    assert analysis.unassigned_ops["launch_not_in_trace"]["ops"] == 0
    assert analysis.unassigned_ops["outside_iterations"]["other_process"] == 4
    assert analysis.iterations["gpu_utilization"].to_list() == [0.5] * 4


def test_ops_of_a_process_with_ranges_but_no_calls_keep_their_ids(tmp_path: Path) -> None:
    """A process that holds ranges but none of its CUDA calls (its call records lost) keeps its ops' ids: they
    are that process's launches, missing their calls (launch_not_in_trace), not another tenant's."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    b.runtime(1 * US, 2 * US, "cudaLaunchKernel_v7000", correlation=1, pid=200)
    b.kernel(3 * US, 9 * US, "warm", correlation=1, pid=200)
    for i in range(4):
        t0 = 100 * US + i * 50 * US
        b.nvtx_range(t0, t0 + 40 * US, "iteration")
        b.kernel(t0 + 6 * US, t0 + 26 * US, "gemm", correlation=2 * i + 1)
    analysis = tracekit.analyze(b.write(tmp_path / "calls_lost.synthetic.sqlite"))
    assert analysis.unassigned_ops["launch_not_in_trace"]["ops"] == 4


def test_a_cross_thread_range_holding_whole_ranges_still_nests_them(tmp_path: Path) -> None:
    """A 'request' start/end range ended by a worker thread that holds its starting thread's ranges whole (one
    request at a time, each around one 'forward') crosses none of them: it nests them as before (forward depth
    1), and the requests are the top-level ranges."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    for i in range(3):
        t0 = 100 * US + i * 50 * US
        b.nvtx_range(t0, t0 + 45 * US, "request", start_end=True, end_tid=200)
        b.nvtx_range(t0 + 2 * US, t0 + 40 * US, "forward")
    trace = read(b.write(tmp_path / "sequential_requests.synthetic.sqlite"))
    assert trace.ranges.sort("start").get_column("depth").to_list() == [0, 1] * 3
