"""Invariant checks of benchmarks/gpu_validate.py, on the committed synthetic Table 3 traces (the shape of GPU
runs) and on hand-built frames that break each invariant; the script refuses cleanly without CUDA."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from tracekit.collectors.validate import Check, check_trace, iteration_checks, ratio_check


def _needs(*modules: str) -> None:
    """Skip the calling test where one of ``modules`` cannot be imported (an install without the collection
    extra: torch, transformers, onnx, onnxruntime)."""
    for module in modules:
        pytest.importorskip(module)


ROOT = Path(__file__).resolve().parents[1]
SYNTH = ROOT / "sample_traces" / "synthetic"


@pytest.mark.parametrize("runtime", ["pytorch", "torchscript", "cuda-graphs", "onnx", "onnx-cuda-graphs"])
def test_synthetic_table3_traces_pass(runtime: str) -> None:
    checks = check_trace(SYNTH / f"table3_{runtime}" / f"{runtime}_b1_s128.synthetic.sqlite")
    by_name = {c.name: c for c in checks}
    assert by_name["kernels"].ok is True and by_name["kernels"].detail == "all 10 iterations hold kernels"
    assert by_name["busy<=latency"].ok is True
    if "graphs" in runtime:
        assert by_name["one graph launch"].ok is True
        assert by_name["one graph launch"].detail == "graph launches per iteration: min 1, max 1"
    else:
        assert by_name["one graph launch"].ok is None
    assert by_name["untraced/traced"].ok is None  # simulated traces have no untraced run


def _frames(kernels: list[int], busy: list[float], latency: list[float]) -> pl.DataFrame:
    n = len(kernels)
    return pl.DataFrame(
        {
            "index": list(range(n)),
            "start_ns": [i * 1000 for i in range(n)],
            "end_ns": [i * 1000 + 900 for i in range(n)],
            "kernels": kernels,
            "gpu_busy_ms": busy,
            "latency_ms": latency,
        }
    )


def test_broken_invariants_fail() -> None:
    iters = _frames([5, 0, 5], [0.5, 0.0, 1.2], [1.0, 1.0, 1.0])
    # graph launches: two in iteration 0, none in 1, one in 2 (one starts outside every iteration)
    api = pl.DataFrame(
        {
            "start": [10, 20, 2100, 950],
            "name": ["cudaGraphLaunch_v10000", "cudaGraphLaunch", "cuGraphLaunch", "cudaGraphLaunch"],
        }
    )
    checks = {c.name: c for c in iteration_checks("t", "cuda-graphs", iters, api)}
    assert checks["kernels"] == Check(
        "t", "cuda-graphs", "kernels", False, "1 of 3 iterations hold no kernel (first: 1)"
    )
    assert (
        checks["busy<=latency"].ok is False
        and checks["busy<=latency"].detail == "max busy/latency 1.200; 1 iterations over"
    )
    assert checks["one graph launch"].ok is False
    assert checks["one graph launch"].detail == "graph launches per iteration: min 0, max 2"


def test_ratio_check() -> None:
    meta = {"untraced_latency_ms": {"mean": 4.0}, "traced_latency_ms": {"mean": 5.0}}
    assert ratio_check("t", "onnx", meta).ok is True and ratio_check("t", "onnx", meta).detail.startswith(
        "0.800"
    )
    faster = {"untraced_latency_ms": {"mean": 6.0}, "traced_latency_ms": {"mean": 5.0}}
    assert ratio_check("t", "onnx", faster).ok is False


def test_validation_script_refuses_without_cuda() -> None:
    _needs("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_validate.py")], capture_output=True, text=True
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "gpu_validate: needs a CUDA device, and this torch build has no CUDA"
    ]
