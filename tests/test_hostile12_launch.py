"""hostile12: launch latency and queue time over kernel and graph launch calls only (f9c4ff6), on
hand-built, labelled-synthetic traces (tests/test_diff11_workload.py writes one workload as nsys SQLite and
Kineto JSON). The numbers are worked out by hand; each test also says what a wrong rule would give."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_diff11_workload import Call, Op, Range, Workload, write_kineto, write_nsys
from tracekit.analyzers.iterations import analyze_iterations
from tracekit.readers import read_trace

US = 1000
FORMATS = ("nsys", "kineto")


def _analyze(w: Workload, tmp_path: Path, fmt: str):
    if fmt == "nsys":
        path = write_nsys(w, tmp_path / "w.synthetic.sqlite")
    else:
        path = write_kineto(w, tmp_path / "w.synthetic.json")
    return analyze_iterations(read_trace(path))


def _launch(a) -> tuple[list[int], list[float], list[float]]:
    it = a.iterations
    return it["launches"].to_list(), it["launch_latency_us"].to_list(), it["queue_us"].to_list()


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_graph_launch_whose_first_node_is_a_memset_is_measured_from_that_memset(
    tmp_path: Path, fmt: str
) -> None:
    # One 100 us iteration: cudaGraphLaunch [2, 7) us replays a memset node [10, 12) us then a kernel
    # [12, 30) us (graph 1); cudaMemcpyAsync [40, 45) us copies [50, 60) us; cudaLaunchKernel [62, 64) us runs a
    # kernel [66, 80) us. Launches: 2 (the graph and the kernel launch). Latency: graph 10 - 2 = 8 us (its
    # first op is the memset node), kernel 66 - 62 = 4 us: median 6 us; queue 3 and 2 us: median 2.5 us.
    # (With the copy counted: 8 us and 3 us; with the graph measured from its kernel: 7 us and 3.5 us.)
    w = Workload(
        ranges=[Range(0, 100 * US)],
        calls=[
            Call(2 * US, 7 * US, "cudaGraphLaunch", 1),
            Call(40 * US, 45 * US, "cudaMemcpyAsync", 2),
            Call(62 * US, 64 * US, "cudaLaunchKernel", 3),
            Call(81 * US, 99 * US, "cudaDeviceSynchronize", 4),
        ],
        ops=[
            Op(10 * US, 12 * US, "memset", 7, 1),
            Op(12 * US, 30 * US, "kernel", 7, 1, graph=1),
            Op(50 * US, 60 * US, "memcpy", 7, 2),
            Op(66 * US, 80 * US, "kernel", 7, 3),
        ],
    )
    a = _analyze(w, tmp_path, fmt)
    assert _launch(a) == ([2], [pytest.approx(6.0)], [pytest.approx(2.5)])


def test_rocm_launch_names_count_and_a_blocking_hip_copy_does_not(tmp_path: Path) -> None:
    # Kineto on ROCm (call names as roctracer gives them): hipExtModuleLaunchKernel [2, 7) us -> kernel
    # [10, 20) us; hipMemcpyWithStream [25, 40) us, a blocking copy [30, 35) us; hipModuleLaunchKernel [41, 43)
    # us -> kernel [50, 60) us; hipLaunchKernel [61, 62) us -> kernel [70, 72) us. Launches 3; latency 8, 9,
    # 9 us: median 9; queue 3, 7, 8: median 7. (With the copy counted: 8.5 us and 5 us.)
    w = Workload(
        ranges=[Range(0, 100 * US)],
        calls=[
            Call(2 * US, 7 * US, "hipExtModuleLaunchKernel", 1),
            Call(25 * US, 40 * US, "hipMemcpyWithStream", 2),
            Call(41 * US, 43 * US, "hipModuleLaunchKernel", 3),
            Call(61 * US, 62 * US, "hipLaunchKernel", 4),
        ],
        ops=[
            Op(10 * US, 20 * US, "kernel", 7, 1),
            Op(30 * US, 35 * US, "memcpy", 7, 2),
            Op(50 * US, 60 * US, "kernel", 7, 3),
            Op(70 * US, 72 * US, "kernel", 7, 4),
        ],
    )
    a = analyze_iterations(read_trace(write_kineto(w, tmp_path / "rocm.synthetic.json")))
    assert _launch(a) == ([3], [pytest.approx(9.0)], [pytest.approx(7.0)])


def test_driver_and_extended_launches_count_and_a_memset_does_not(tmp_path: Path) -> None:
    # Kineto on CUDA 12 with Triton and cuBLASLt-style launches: cuLaunchKernel [2, 4) us -> [10, 12) us;
    # cudaMemsetAsync [13, 14) us -> memset [20, 21) us; cudaLaunchKernelExC [22, 25) us -> [30, 40) us;
    # cuLaunchKernelEx [41, 42) us -> [44, 50) us. Launches 3; latency 8, 8, 3: median 8 us; queue 6, 5, 2:
    # median 5 us. (With the memset counted: 7.5 us and 5.5 us.)
    w = Workload(
        ranges=[Range(0, 100 * US)],
        calls=[
            Call(2 * US, 4 * US, "cuLaunchKernel", 1),
            Call(13 * US, 14 * US, "cudaMemsetAsync", 2),
            Call(22 * US, 25 * US, "cudaLaunchKernelExC", 3),
            Call(41 * US, 42 * US, "cuLaunchKernelEx", 4),
        ],
        ops=[
            Op(10 * US, 12 * US, "kernel", 7, 1),
            Op(20 * US, 21 * US, "memset", 7, 2),
            Op(30 * US, 40 * US, "kernel", 7, 3),
            Op(44 * US, 50 * US, "kernel", 7, 4),
        ],
    )
    a = analyze_iterations(read_trace(write_kineto(w, tmp_path / "cuda12.synthetic.json")))
    assert _launch(a) == ([3], [pytest.approx(8.0)], [pytest.approx(5.0)])


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_hashing_path_of_call_matching_gives_the_same_launch_figures(
    tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # _match_calls joins on (pid, correlation) by hashing when the pairs do not fit one Int64 key (a pid or
    # correlation id out of range); that path must carry call_launch too: the memset-node graph case above,
    # 6 us and 2.5 us, with the key check forced to fail.
    import tracekit.analyzers.iterations as iterations

    monkeypatch.setattr(iterations, "pair_keys_fit", lambda *frames: False)
    test_a_graph_launch_whose_first_node_is_a_memset_is_measured_from_that_memset(tmp_path, fmt)
