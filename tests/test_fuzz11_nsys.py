"""Nsight Systems exports fuzzed on what real captures and applications hold (round 11).

Every trace here is synthetic, hand-built with :class:`tests.nsys_builder.NsysBuilder` in pytest's temporary
folder and named ``*.synthetic.sqlite``; the expected numbers are exact, from the rows written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tracekit
from tests.nsys_builder import NsysBuilder
from tracekit.readers.nsys_sqlite import read

US = 1_000
STEPS = 4


def ms(a: tracekit.Analysis, field: str) -> list[float]:
    """One per-iteration field, rounded to the ns (the analysis divides ns by 1e6)."""
    return [round(v, 6) for v in a.iterations[field].to_list()]


# ------------------------------------------------------------------ launches recorded, kernels lost


@pytest.mark.parametrize("launch", ["cudaLaunchKernel_v7000", "cuLaunchKernel", "cudaGraphLaunch_v10000"])
@pytest.mark.parametrize("kernel_table", [True, False])
def test_launch_calls_without_any_kernel_make_a_gpu_trace_without_ops(
    tmp_path: Path, launch: str, kernel_table: bool
) -> None:
    """nsys records the CUDA API through its own injection and the kernels through CUPTI's activity buffers; a
    process that exits without flushing them (killed, ``os._exit``, a time limit) leaves an export with the
    launch calls and no kernel (the kernel table empty or absent). Such an export was read as a CPU-only trace:
    its NVTX leaves ('aten::mm' inside each 'iteration') became the operators, the device "cpu" and the
    utilization 0.79 per iteration, from host ranges alone. It is a GPU trace without ops: no utilization,
    no verdict."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    driver = launch.startswith("cu") and not launch.startswith("cuda")
    for i in range(STEPS):
        t0 = i * 1000 * US
        b.nvtx_range(t0, t0 + 500 * US, "iteration")
        b.nvtx_range(t0 + 5 * US, t0 + 400 * US, "aten::mm")
        call = b.driver if driver else b.runtime
        call(t0 + 10 * US, t0 + 15 * US, launch, correlation=2 * i + 1)
        b.runtime(t0 + 30 * US, t0 + 400 * US, "cudaStreamSynchronize_v3020", correlation=2 * i + 2)
    if kernel_table:
        b.table("CUPTI_ACTIVITY_KIND_KERNEL")
    path = b.write(tmp_path / "lost_kernels.synthetic.sqlite")
    trace = read(path)
    assert trace.meta["device"] == "gpu"
    assert trace.ops.height == 0
    assert any(f"records {STEPS} kernel launch calls but no kernel" in w for w in trace.meta["warnings"])
    a = tracekit.analyze(path)
    assert a.verdict is None
    assert a.iterations["gpu_utilization"].to_list() == [None] * STEPS


def test_cuda_calls_that_launch_nothing_leave_a_cpu_trace_cpu_only(tmp_path: Path) -> None:
    """A CPU run of a CUDA-enabled framework under ``-t cuda,nvtx`` records a few CUDA calls (device queries)
    and no launch: it stays a CPU-only trace, its NVTX leaves the operators (guard: unchanged)."""
    b = NsysBuilder()
    for i in range(STEPS):
        t0 = i * 1000 * US
        b.nvtx_range(t0, t0 + 500 * US, "iteration")
        b.nvtx_range(t0 + 5 * US, t0 + 400 * US, "aten::mm")
    b.runtime(1 * US, 2 * US, "cudaGetDeviceCount_v3020", correlation=1)
    trace = read(b.write(tmp_path / "cpu.synthetic.sqlite"))
    assert trace.meta["device"] == "cpu"
    assert trace.ops.height == STEPS
