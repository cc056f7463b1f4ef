"""GPU metrics (nsys --gpu-metrics-devices), fuzz 9: whose samples count. Hand-built traces (labelled
synthetic: values invented), exact values."""

from __future__ import annotations

import polars as pl

from tests.test_gpu_metrics import WINDOWS
from tracekit.analyzers.gpu_metrics import analyze_gpu_metrics, kernel_devices
from tracekit.model import Trace


def _trace(kernels: list[tuple[int, int, int]], samples: list[tuple[int, int, float]]) -> Trace:
    ops = pl.DataFrame(
        {
            "start": [k[0] for k in kernels],
            "end": [k[1] for k in kernels],
            "device": [k[2] for k in kernels],
            "kind": ["kernel"] * len(kernels),
            "name": ["k"] * len(kernels),
        }
    )
    gm = pl.DataFrame(
        [(t, d, "SMs Active [Throughput %]", "%", v) for t, d, v in samples],
        schema=["timestamp", "device", "metric", "unit", "value"],
        orient="row",
    )
    return Trace(ops=ops, gpu_metrics=gm, meta={"synthetic": True})


def test_a_gpu_used_only_outside_the_iterations_is_not_averaged_in() -> None:
    """Every GPU sampled (--gpu-metrics-devices=all); the process ran one setup kernel on GPU 1 before the
    loop, and every iteration's kernels on GPU 0. GPU 1's idle samples (0%) had been averaged with GPU 0's
    60%: 30% SMs active, with only a warning that two GPUs were averaged."""
    kernels = [(100, 200, 1), (1100, 1200, 0), (2100, 2200, 0), (3100, 3200, 0)]
    samples = [(t, d, v) for t in (1250, 2250, 3250) for d, v in ((0, 60.0), (1, 0.0))]
    trace = _trace(kernels, samples)
    result = analyze_gpu_metrics(trace, WINDOWS)
    assert result.iterations["sms_active"].to_list() == [60.0, 60.0, 60.0]
    assert result.summary["sms_active"]["device"] == 0
    assert not any("averaged together" in w for w in result.warnings)
    assert kernel_devices(trace) == [0, 1]
    assert kernel_devices(trace, WINDOWS) == [0]


def test_gpus_both_used_inside_the_iterations_are_still_averaged_and_said() -> None:
    kernels = [(1100, 1200, 0), (1100, 1200, 1), (2100, 2200, 0), (3100, 3200, 1)]
    samples = [(t, d, v) for t in (1250, 2250, 3250) for d, v in ((0, 60.0), (1, 20.0))]
    result = analyze_gpu_metrics(_trace(kernels, samples), WINDOWS)
    assert result.iterations["sms_active"].to_list() == [40.0, 40.0, 40.0]
    assert any("averaged together" in w for w in result.warnings)


def test_kernels_outside_every_window_still_name_the_gpu() -> None:
    """No kernel inside an iteration window (windows of ranges with no GPU work): the GPUs of all kernels."""
    kernels = [(100, 200, 1)]
    samples = [(1250, 1, 10.0), (1250, 0, 90.0)]
    result = analyze_gpu_metrics(_trace(kernels, samples), WINDOWS)
    assert result.iterations["sms_active"].to_list()[0] == 10.0
