"""hostile12: the trailing-gap rule of 657382e (a trailing gap's next op is an op of 0 ns starting at its
end), attacked with hand-built, labelled-synthetic traces (nsys SQLite and Kineto JSON written from one
workload, tests/test_diff11_workload.py). Every trace here is synthetic; the numbers are worked out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.nsys_builder import NsysBuilder
from tests.test_diff11_workload import Call, Op, Range, Workload, write_kineto, write_nsys
from tracekit.analyzers.iterations import analyze_iterations
from tracekit.readers import read_trace

US = 1000
FORMATS = ("nsys", "kineto")
CAUSES = ("dispatch", "launch", "sync", "other_api", "in_flight")


def _analyze(w: Workload, tmp_path: Path, fmt: str):
    if fmt == "nsys":
        path = write_nsys(w, tmp_path / "w.synthetic.sqlite")
    else:
        path = write_kineto(w, tmp_path / "w.synthetic.json", integer=True)
    return analyze_iterations(read_trace(path))


def _causes(a, i: int = 0) -> dict[str, int]:
    att = a.attribution.iterations
    return {c: att[f"{c}_ns"][i] for c in CAUSES}


@pytest.mark.parametrize("fmt", FORMATS)
def test_several_zero_length_ops_at_the_trailing_end_the_first_launched_decides(
    tmp_path: Path, fmt: str
) -> None:
    # diff11's unsynchronized 50 us iteration (kernel A [12, 40) us from a [5, 10) us call; kernel B, 0 us at
    # 60 us, from a [20, 25) us call on the main thread), plus at 60 us: C (0 us) launched by worker thread
    # 101 by a [42, 47) us call, D (0 us) with no correlation id. B was launched first: the trailing gap
    # [40, 60) us is in_flight whole (B's call returned at 25 us). Had C decided: 2 us dispatch, 5 us launch,
    # 13 us in_flight on thread 101. Totals: dispatch 5, launch 5, in_flight 2 + 20 = 22 us.
    w = Workload(
        ranges=[Range(0, 50 * US)],
        calls=[
            Call(5 * US, 10 * US, "cudaLaunchKernel", 1),
            Call(20 * US, 25 * US, "cudaLaunchKernel", 2),
            Call(42 * US, 47 * US, "cudaLaunchKernel", 3, tid=101),
        ],
        ops=[
            Op(12 * US, 40 * US, "kernel", 7, 1),
            Op(60 * US, 60 * US, "kernel", 13, 3),
            Op(60 * US, 60 * US, "kernel", 13, 2),
            Op(60 * US, 60 * US, "kernel", 14, None),
        ],
    )
    a = _analyze(w, tmp_path, fmt)
    assert a.iterations["latency_ms"].to_list() == pytest.approx([0.06], abs=1e-12)
    assert a.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.028], abs=1e-12)
    assert _causes(a) == {
        "dispatch": 5 * US,
        "launch": 5 * US,
        "sync": 0,
        "other_api": 0,
        "in_flight": 22 * US,
    }


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_iteration_of_zero_length_ops_only_ends_at_its_latest_op_too(tmp_path: Path, fmt: str) -> None:
    # Whole-µs clock: one 50 us range; calls [5, 10) us (corr 1) and [20, 25) us (corr 2) launch two
    # sub-µs kernels written as 0 us: A at 12 us, B at 60 us. Unsynchronized: window [0, 60) us, busy 0, one
    # gap [0, 60) us (position 'leading': no op has a length). It ends at B, 0 us at the window's end, as
    # diff11's trailing gap does: [0, 5) dispatch, [5, 10) launch, [10, 20) dispatch, [20, 25) launch, then
    # B had been launched: in_flight 35 us. Now: dispatch 50 us, launch 10 us, in_flight 0 (25 us of
    # "dispatch" after the range had ended, the very case 657382e fixed for a trailing gap).
    w = Workload(
        ranges=[Range(0, 50 * US)],
        calls=[Call(5 * US, 10 * US, "cudaLaunchKernel", 1), Call(20 * US, 25 * US, "cudaLaunchKernel", 2)],
        ops=[Op(12 * US, 12 * US, "kernel", 7, 1), Op(60 * US, 60 * US, "kernel", 13, 2)],
    )
    a = _analyze(w, tmp_path, fmt)
    assert a.iterations["latency_ms"].to_list() == pytest.approx([0.06], abs=1e-12)
    assert a.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.0], abs=1e-12)
    assert _causes(a) == {
        "dispatch": 15 * US,
        "launch": 10 * US,
        "sync": 0,
        "other_api": 0,
        "in_flight": 35 * US,
    }


def _two_processes(tmp_path: Path, foreign_zero_op: bool) -> Path:
    # Process 100 (GPU 0), one 1 ms iteration on thread 100: a 5 us launch at 10 us of a kernel running
    # [100, 600) us, cudaDeviceSynchronize [30, 710) us. Process 200 (another rank, GPU 1, no ranges): a
    # launch [1, 5) us of a sub-µs kernel written 0 ns at exactly 1000 us, process 100's range end.
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    b.gpu(1, "NVIDIA H100")
    b.mem_kinds()
    b.nvtx_range(0, 1000 * US, "iteration", pid=100, tid=100)
    b.runtime(10 * US, 15 * US, "cudaLaunchKernel_v7000", correlation=1, pid=100, tid=100)
    b.kernel(100 * US, 600 * US, "gemm", correlation=1, pid=100, device=0)
    b.runtime(30 * US, 710 * US, "cudaDeviceSynchronize_v3020", correlation=2, pid=100, tid=100)
    b.runtime(1 * US, 5 * US, "cudaLaunchKernel_v7000", correlation=1, pid=200, tid=200)
    if foreign_zero_op:
        b.kernel(1000 * US, 1000 * US, "tiny", correlation=1, pid=200, device=1)
    else:
        b.kernel(1000 * US, 1001 * US, "tiny", correlation=1, pid=200, device=1)
    return b.write(tmp_path / "ranks.synthetic.sqlite")


# Process 100's truth either way: leading [0, 100) us: 10 dispatch, 5 launch, 85 in_flight; trailing
# [600, 1000) us, GPU 0 idle, the host in the synchronize to 710 us then idle: 110 sync, 290 dispatch.
TWO_PROCESS_TRUTH = {
    "dispatch": 300 * US,
    "launch": 5 * US,
    "sync": 110 * US,
    "other_api": 0,
    "in_flight": 85 * US,
}


def test_another_processes_op_of_one_ns_at_the_range_end_changes_nothing(tmp_path: Path) -> None:
    a = analyze_iterations(read_trace(_two_processes(tmp_path, foreign_zero_op=False)))
    assert a.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.5], abs=1e-12)
    assert _causes(a) == TWO_PROCESS_TRUTH


def test_another_processes_zero_length_op_at_the_range_end_is_not_this_gaps_next_op(tmp_path: Path) -> None:
    # The same trace with process 200's kernel lasting 0 ns instead of 1: process 100's figures must not move.
    # Now: dispatch 10, launch 5, sync 0, in_flight 485 us (the trailing gap's 400 us read as device-side,
    # "launched" by process 200 at 5 us).
    a = analyze_iterations(read_trace(_two_processes(tmp_path, foreign_zero_op=True)))
    assert a.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.5], abs=1e-12)
    assert _causes(a) == TWO_PROCESS_TRUTH


def _two_requests(zero: bool) -> Workload:
    # One process, two threads serving requests at once (whole-µs clock, older Kineto): thread 100's
    # iteration [0, 50) us launches A ([5, 10) us call, runs [12, 40) us) and then runs host code to its range
    # end; thread 101's iteration [20, 120) us launches C ([30, 35) us call), a sub-µs kernel written 0 us at
    # 50 us (``zero``; else 1 us), and D ([60, 65) us call, runs [70, 110) us).
    return Workload(
        ranges=[Range(0, 50 * US), Range(20 * US, 120 * US, tid=101)],
        calls=[
            Call(5 * US, 10 * US, "cudaLaunchKernel", 1),
            Call(30 * US, 35 * US, "cudaLaunchKernel", 2, tid=101),
            Call(60 * US, 65 * US, "cudaLaunchKernel", 4, tid=101),
        ],
        ops=[
            Op(12 * US, 40 * US, "kernel", 7, 1),
            Op(50 * US, (50 if zero else 51) * US, "kernel", 8, 2),
            Op(70 * US, 110 * US, "kernel", 8, 4),
        ],
    )


# Thread 100's iteration (index 0), either way: leading [0, 12) us: 5 dispatch, 5 launch, 2 in_flight;
# trailing [40, 50) us: GPU idle for it, its thread in host code: 10 dispatch. Thread 101's (index 1) with
# C of 0 us: leading [20, 70) us to D: 10 + 25 dispatch, 5 + 5 launch, 5 in_flight; trailing [110, 120) us:
# 10 dispatch.
REQUEST_0 = {"dispatch": 15 * US, "launch": 5 * US, "sync": 0, "other_api": 0, "in_flight": 2 * US}


@pytest.mark.parametrize("fmt", FORMATS)
def test_another_requests_op_of_one_us_at_the_range_end_changes_nothing(tmp_path: Path, fmt: str) -> None:
    a = _analyze(_two_requests(zero=False), tmp_path, fmt)
    assert a.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.028, 0.041], abs=1e-12)
    assert _causes(a, 0) == REQUEST_0


@pytest.mark.parametrize("fmt", FORMATS)
def test_another_requests_zero_length_op_at_the_range_end_is_not_this_gaps_next_op(
    tmp_path: Path, fmt: str
) -> None:
    # C lasting 0 us instead of 1: thread 100's iteration must not move. Now (nsys and Kineto): dispatch 5,
    # launch 5, in_flight 12 us (its trailing gap [40, 50) us "in flight" behind thread 101's C, launched at
    # 35 us); on Kineto with no warning at all (nsys warns of 0 ns kernels).
    a = _analyze(_two_requests(zero=True), tmp_path, fmt)
    assert a.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.028, 0.04], abs=1e-12)
    assert _causes(a, 0) == REQUEST_0
    assert _causes(a, 1) == {
        "dispatch": 45 * US,
        "launch": 10 * US,
        "sync": 0,
        "other_api": 0,
        "in_flight": 5 * US,
    }


def _two_gpus(k1_end_us: int) -> Workload:
    # One process, one thread, two GPUs (whole-µs clock), one 1 ms iteration: K0 ([10, 15) us call) runs on
    # GPU 0 [100, 600) us; K1 ([20, 25) us call) on GPU 1 at 1000 us, lasting ``k1_end_us - 1000`` us;
    # cudaDeviceSynchronize [30, 1000) us.
    return Workload(
        devices=2,
        ranges=[Range(0, 1000 * US)],
        calls=[
            Call(10 * US, 15 * US, "cudaLaunchKernel", 1),
            Call(20 * US, 25 * US, "cudaLaunchKernel", 2),
            Call(30 * US, 1000 * US, "cudaDeviceSynchronize", 3),
        ],
        ops=[Op(100 * US, 600 * US, "kernel", 7, 1, 0), Op(1000 * US, k1_end_us * US, "kernel", 7, 2, 1)],
    )


def _gpu1_causes(w: Workload, tmp_path: Path, fmt: str) -> dict[str, int]:
    from tracekit.analyzers.devices import analyze_devices

    if fmt == "nsys":
        path = write_nsys(w, tmp_path / "w.synthetic.sqlite")
    else:
        path = write_kineto(w, tmp_path / "w.synthetic.json", integer=True)
    parts = {d.device: d.result for d in analyze_devices(read_trace(path), attribute=True)}
    return _causes(parts[1])


# GPU 1's own analysis with K1 of 1 us: window [0, 1001) us, its one gap [0, 1000) us ends at K1, launched at
# 25 us: 20 dispatch, 5 launch (its own call), then 975 in_flight.
GPU1_TRUTH = {"dispatch": 20 * US, "launch": 5 * US, "sync": 0, "other_api": 0, "in_flight": 975 * US}


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_devices_only_op_of_one_us_ends_its_gap(tmp_path: Path, fmt: str) -> None:
    assert _gpu1_causes(_two_gpus(1001), tmp_path, fmt) == GPU1_TRUTH


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_devices_only_op_of_zero_us_ends_its_gap_too(tmp_path: Path, fmt: str) -> None:
    # K1 written 0 us (sub-µs on a whole-µs clock): window [0, 1000) us, the gap [0, 1000) us still ends at
    # K1, launched at 25 us: the same 20 / 5 / 975 us. Now: dispatch 25, launch 5, sync 970, in_flight 0.
    assert _gpu1_causes(_two_gpus(1000), tmp_path, fmt) == GPU1_TRUTH


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_devices_trailing_gap_is_not_ended_by_another_devices_zero_length_op(
    tmp_path: Path, fmt: str
) -> None:
    # GPU 0's own analysis of _two_gpus with K1 written 0 us at 1000 us on GPU 1: GPU 0's trailing gap
    # [600, 1000) us is the host in cudaDeviceSynchronize: 400 sync; leading [0, 100): 10 dispatch, 5 launch
    # (K0's call), 85 in_flight. K1, another device's op, must not end GPU 0's gap (it would read in_flight).
    from tracekit.analyzers.devices import analyze_devices

    w = _two_gpus(1000)
    if fmt == "nsys":
        path = write_nsys(w, tmp_path / "w.synthetic.sqlite")
    else:
        path = write_kineto(w, tmp_path / "w.synthetic.json", integer=True)
    parts = {d.device: d.result for d in analyze_devices(read_trace(path), attribute=True)}
    assert _causes(parts[0]) == {
        "dispatch": 10 * US,
        "launch": 5 * US,
        "sync": 400 * US,
        "other_api": 0,
        "in_flight": 85 * US,
    }
