"""Hostile round 11: the reader evidence round 11's analysis reads from ``meta`` (``partial_runs``,
``graph_replays``, ``remote_provider_nodes``, ``gpu_provider_nodes``, ``gpu_program_without_device_activity``,
``compiled_cpu_code``) given malformed values, as a cache entry written by another version, or a hand-edited
one, could hold: the analysis must not raise (a traceback from ``tracekit analyze``), and a value it cannot
read is no evidence. Traces are hand-built (synthetic, made up for the test, not measurements)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.builders import kineto_event, kineto_file
from tracekit.readers import read_trace
from tracekit.session import analyze_trace

MALFORMED: list[Any] = [
    None,
    "",
    "abc",
    "12",
    7,
    2.5,
    True,
    [],
    [None],
    ["a", "b"],
    [None, None],
    [1],
    [1, 2, 3],
    {},
    {"runs": None},
    {"runs": "abc"},
    {"runs": 7},
    {"runs": {"a": 1}},
    {"runs": [None]},
    {"runs": [[1]]},
    {"runs": [[]]},
    {"runs": [["a", "b", "c"]]},
    {"runs": [[1.5, 1, 2_000_000]]},
    {"runs": [[1, 1, None]]},
    {"runs": ["abc"]},
    {"runs": [[1, 1, 2**70]]},
    {"unrecorded_ms": "x"},
    {"unrecorded_ms": None},
    {"operators": "x", "warning": 5},
]
KEYS = [
    "partial_runs",
    "graph_replays",
    "remote_provider_nodes",
    "gpu_provider_nodes",
    "gpu_program_without_device_activity",
    "compiled_cpu_code",
]


def _ort_profile(tmp_path: Path) -> Path:
    """Five ONNX Runtime CPU runs of 0.32 ms, 3 nodes of 100 µs each (the last one failed at its second node:
    0.22 ms, 2 nodes)."""
    events: list[dict[str, Any]] = []
    for k in range(5):
        start = 1000 + k * 1000
        names = ["/mm", "/reshape", "/relu"] if k < 4 else ["/mm", "/reshape"]
        for j, n in enumerate(names):
            events.append(
                {"cat": "Node", "pid": 1, "tid": 1, "dur": 100, "ts": start + 10 + j * 100, "ph": "X",
                 "name": f"{n}_kernel_time", "args": {"op_name": "MatMul", "provider": "CPUExecutionProvider"}}
            )  # fmt: skip
        events.append(
            {"cat": "Session", "pid": 1, "tid": 1, "dur": 20 + len(names) * 100, "ts": start, "ph": "X",
             "name": "model_run", "args": {}}
        )  # fmt: skip
    path = tmp_path / "synthetic_ort_meta.json"
    path.write_text(json.dumps(events))
    return path


def _kineto_cpu(tmp_path: Path) -> Path:
    """A CPU-only torch.profiler run: 3 ProfilerSteps of 1000 µs with one 400 µs ``aten::addmm`` each."""
    events = []
    for i in range(3):
        t0 = 1000 + i * 1000
        events.append(kineto_event("user_annotation", f"ProfilerStep#{i}", t0, 1000, 10, 10))
        events.append(kineto_event("cpu_op", "aten::addmm", t0 + 100, 400, 10, 10))
    return kineto_file(tmp_path, events, "kineto_cpu_meta.synthetic.json")


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("make", [_ort_profile, _kineto_cpu])
def test_malformed_round11_evidence_does_not_crash_the_analysis(tmp_path: Path, make: Any, key: str) -> None:
    path = make(tmp_path)
    for value in MALFORMED:
        trace = read_trace(path)
        trace.meta[key] = value
        analysis = analyze_trace(trace)  # must not raise
        assert analysis.iterations.height >= 1, (key, value)
