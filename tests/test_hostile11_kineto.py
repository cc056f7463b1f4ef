"""Hostile round 11, Kineto reader: legitimate torch.profiler traces whose strings happen to hold the words by
which round 11's reader recognizes other frameworks' traces (XLA's device process names, torch_npu's
"Ascend Hardware"). Every trace here is hand-built (synthetic, made up for the test, not a measurement)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from tests.builders import kineto_event, kineto_file
from tracekit.readers.kineto import read

STEPS = 3


def _cpu_run_with_range(tmp_path: Path, range_name: str) -> Path:
    """A CPU-only torch.profiler run (Kineto's own process name ``python3`` and thread name): ``STEPS``
    ProfilerSteps of 1000 µs, each with one 400 µs ``aten::addmm``, and inside each step a
    ``record_function`` range the user named ``range_name``. Truth: operator busy 400 µs of each step."""
    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": 10, "tid": 0, "name": "process_name", "args": {"name": "python3"}},
        {"ph": "M", "pid": 10, "tid": 10, "name": "thread_name", "args": {"name": "thread 10 (python3)"}},
    ]
    for i in range(STEPS):
        t0 = 1000 + i * 1000
        events.append(kineto_event("user_annotation", f"ProfilerStep#{i}", t0, 1000, 10, 10))
        events.append(kineto_event("user_annotation", range_name, t0 + 50, 500, 10, 10))
        events.append(kineto_event("cpu_op", "aten::addmm", t0 + 100, 400, 10, 10))
    return kineto_file(tmp_path, events, "cpu_named_range.synthetic.json")


@pytest.mark.parametrize(
    "range_name",
    ["/device:GPU:0", "/host:CPU", "/job:localhost/replica:0/task:0/device:GPU:0 Compute", "Ascend Hardware"],
)
def test_a_cpu_run_with_a_range_named_like_another_frameworks_process_is_read(
    tmp_path: Path, range_name: str
) -> None:
    """A user's ``record_function`` (or NVTX) range named like an XLA device or torch_npu's device process is
    an event's name, not a process name: the trace is still read as the CPU run it is (it had been refused
    as 'a JAX/TensorFlow trace' / 'an Ascend NPU trace' in one line)."""
    trace = read(_cpu_run_with_range(tmp_path, range_name))
    assert trace.meta["device"] == "cpu"
    assert trace.ops.height == STEPS
    assert (trace.ops["end"] - trace.ops["start"]).to_list() == [400_000] * STEPS


@pytest.mark.parametrize("range_name", ["hpu_op", "mtia_runtime", "mlu_runtime", "privateuse1_runtime"])
def test_a_cpu_run_with_a_range_named_like_an_accelerator_runtime_is_read(
    tmp_path: Path, range_name: str
) -> None:
    """The accelerator-runtime refusal reads categories, not names: a range (or model) named ``hpu_op`` is a
    CPU run's range still."""
    trace = read(_cpu_run_with_range(tmp_path, range_name))
    assert trace.meta["device"] == "cpu"
    assert trace.ops.height == STEPS


def test_a_privateuse1_trace_with_device_ops_is_read(tmp_path: Path) -> None:
    """A PrivateUse1 backend's trace that does record its device work (``kernel`` events on the device's pid,
    launched by ``privateuse1_runtime`` calls linked by correlation): read as the device run it is, the
    kernels' 300 µs each."""
    events: list[dict[str, Any]] = []
    for i in range(STEPS):
        t0 = 1000 + i * 1000
        events.append(kineto_event("user_annotation", f"ProfilerStep#{i}", t0, 1000, 10, 10))
        events.append(kineto_event("cpu_op", "aten::addmm", t0 + 10, 50, 10, 10))
        events.append(
            kineto_event("privateuse1_runtime", "aclrtLaunchKernel", t0 + 20, 10, 10, 10, correlation=100 + i)
        )
        events.append(
            kineto_event("kernel", "MatMulV2", t0 + 100, 300, 0, 7, correlation=100 + i, device=0, stream=7)
        )
    trace = read(kineto_file(tmp_path, events, "privateuse1_with_ops.synthetic.json"))
    assert trace.meta["device"] == "gpu"
    kernels = trace.ops.filter(pl.col("kind") == "kernel")
    assert (kernels["end"] - kernels["start"]).to_list() == [300_000] * STEPS
