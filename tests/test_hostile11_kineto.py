"""Hostile round 11, Kineto reader: legitimate torch.profiler traces whose strings happen to hold the words by
which round 11's reader recognizes other frameworks' traces (XLA's device process names, torch_npu's
"Ascend Hardware"). Every trace here is hand-built (synthetic, made up for the test, not a measurement)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
