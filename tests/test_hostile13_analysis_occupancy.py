"""hostile13 (analysis13): wall-time SMs active / warp occupancy (Σ kernel time × value / latency) on
iterations whose kernels ran at once, on two GPUs or two streams. Hand-built, labelled-synthetic Kineto
traces; the numbers are worked out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

import tracekit
from tests.builders import kineto_event, kineto_file
from tracekit.analyzers.utilization import utilization

T = 1_700_000_000_000_000  # us


def _trace(tmp_path: Path, placements: list[tuple[int, int]], name: str) -> Path:
    # One ProfilerStep#1 of 1000 us on pid 1 / thread 1; per (device, stream) of ``placements`` a
    # cudaLaunchKernel (1 us) at 1, 3, ... us launches a kernel of [10, 990) us, 980 us, with torch.profiler's
    # 'est. achieved occupancy %' 60; the host waits in cudaDeviceSynchronize [5, 995) us.
    events = [kineto_event("user_annotation", "ProfilerStep#1", T, 1000, pid=1, tid=1)]
    for i, (device, stream) in enumerate(placements):
        events.append(kineto_event("cuda_runtime", "cudaLaunchKernel", T + 1 + 2 * i, 1, correlation=10 + i))
        kernel = kineto_event(
            "kernel",
            f"gemm_{i}",
            T + 10,
            980,
            pid=device,
            tid=stream,
            correlation=10 + i,
            device=device,
            stream=stream,
        )
        kernel["args"]["est. achieved occupancy %"] = 60
        events.append(kernel)
    events.append(kineto_event("cuda_runtime", "cudaDeviceSynchronize", T + 5, 990, correlation=20))
    return kineto_file(tmp_path, events, name)


def test_one_kernel_at_a_time_gives_the_wall_time_figure(tmp_path: Path) -> None:
    # One kernel, 980 of 1000 us at 60%: 58.8% wall time, 60% kernel time.
    result = utilization(tracekit.analyze(_trace(tmp_path, [(0, 7)], "one.synthetic.json")))
    assert result.wall["warp_occupancy"].value == pytest.approx(58.8, abs=1e-9)
    assert result.kernel_time["warp_occupancy"] == pytest.approx(60.0, abs=1e-9)


@pytest.mark.parametrize(
    ("placements", "what"),
    [([(0, 7), (1, 7)], "2 devices"), ([(0, 7), (0, 8)], "at once")],
    ids=["two-gpus", "two-streams"],
)
def test_kernels_running_at_once_give_no_wall_time_figure(
    tmp_path: Path, placements: list[tuple[int, int]], what: str
) -> None:
    # Two kernels of 980 us at 60% run at once (on two GPUs, or on two streams of one GPU): Σ(kernel time x
    # value) / latency adds them, 2 x 980 x 60 / 1000 = 117.6%, a warp occupancy no device can have (it had
    # been shown so, 'warp occupancy % 117.6 (kineto estimate)'). The figure is withheld with a warning; the
    # kernel-time average (60%) stays.
    result = utilization(tracekit.analyze(_trace(tmp_path, placements, "both.synthetic.json")))
    assert result.wall["warp_occupancy"].value is None
    assert result.kernel_time["warp_occupancy"] == pytest.approx(60.0, abs=1e-9)
    said = [w for w in result.warnings if "wall-time warp occupancy not given" in w]
    assert len(said) == 1 and what in said[0] and "117.6%" in said[0]
