"""Mutation round 15 (helper mutation15): tests that kill surviving mutants of round 14's sidecar check
(:func:`tracekit.inputs.check_sidecar`, :func:`tracekit.inputs.load_sidecar_meta` with ``check``, and
:func:`tracekit.readers.read_trace`, which asks for it). Sidecars are hand-built SYNTHETIC JSON in pytest's
temporary folder; the expected texts are exact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.builders import kineto_event
from tracekit.errors import TracekitError
from tracekit.inputs import check_sidecar, load_sidecar_meta
from tracekit.readers import read_trace

TOP = 2**31 - 1
DIM = f"a positive integer (1 to {TOP}) or null"


@pytest.mark.parametrize(
    ("meta", "problem"),
    [
        ({}, None),
        ({"batch_size": 1, "seq_len": TOP}, None),
        ({"batch_size": 0}, f"batch_size is 0, not {DIM}"),
        ({"seq_len": TOP + 1}, f"seq_len is {TOP + 1}, not {DIM}"),
        ({"iterations": 0, "warmup_iterations": 0}, None),
        ({"iterations": -1}, "iterations is -1, not a non-negative integer or null"),
        ({"iterations": 2.0}, "iterations is 2.0, not a non-negative integer or null"),
        ({"warmup_iterations": False}, "warmup_iterations is false, not a non-negative integer or null"),
        ({"runtime": "", "model": 1}, 'runtime is "", not text or null'),
        ({"model": "  "}, 'model is "  ", not text or null'),
        ({"precision": ["fp16"]}, 'precision is ["fp16"], not text or null'),
        ({"profiler": 0}, "profiler is 0, not text or null"),
        ({"device": False}, "device is false, not text or null"),
        ({"runtime": "vllm", "model": "m", "precision": "fp16", "profiler": "torch", "device": "gpu"}, None),
        ({"synthetic": False, "warmup_in_trace": True}, None),
        ({"synthetic": 0}, "synthetic is 0, not true, false or null"),
        ({"untraced_latency_ms": None, "other": object()}, None),
        ({"untraced_latency_ms": {"mean": 2.5}}, None),
        (
            {"untraced_latency_ms": {"mean": 0}},
            "untraced_latency_ms.mean is 0, not a positive number (ms) or null",
        ),
        # the first problem found, in order: text, dimensions, counts, flags, untraced statistics
        (
            {"untraced_latency_ms": 1, "synthetic": 1, "iterations": -1, "batch_size": 0, "device": 1},
            "device is 1, not text or null",
        ),
        (
            {"untraced_latency_ms": 1, "synthetic": 1, "iterations": -1, "batch_size": 0},
            f"batch_size is 0, not {DIM}",
        ),
        (
            {"untraced_latency_ms": 1, "synthetic": 1, "iterations": -1},
            "iterations is -1, not a non-negative integer or null",
        ),
        ({"untraced_latency_ms": 1, "synthetic": 1}, "synthetic is 1, not true, false or null"),
    ],
)
def test_check_sidecar(meta: dict[str, Any], problem: str | None) -> None:
    assert check_sidecar(meta) == problem


def _trace(tmp_path: Path, sidecar: Any) -> Path:
    """A Kineto trace of one step with one kernel, and ``sidecar`` as its .meta.json (text when a str)."""
    events = [
        kineto_event("user_annotation", "ProfilerStep#0", 1000, 900, 1, 1),
        kineto_event("cuda_runtime", "cudaLaunchKernel", 1010, 10, 1, 1, correlation=5),
        kineto_event("kernel", "k", 1050, 200, 0, 7, device=0, stream=7, correlation=5),
    ]
    path = tmp_path / "t.synthetic.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    text = sidecar if isinstance(sidecar, str) else json.dumps(sidecar)
    (tmp_path / "t.synthetic.meta.json").write_text(text)
    return path


def test_a_wrong_sidecar_is_read_as_written_without_the_check_and_refused_with_it(tmp_path: Path) -> None:
    path = _trace(tmp_path, {"batch_size": "abc", "model": "m"})
    assert load_sidecar_meta(path) == {"batch_size": "abc", "model": "m"}
    with pytest.raises(TracekitError) as err:
        load_sidecar_meta(path, check=True)
    assert str(err.value).endswith(
        'damaged sidecar .meta.json of t.synthetic.json: batch_size is "abc", not a positive integer (1 to '
        "2147483647) or null"
    )
    assert str(tmp_path / "t.synthetic.meta.json") in str(err.value)


def test_an_analysis_read_checks_the_sidecar(tmp_path: Path) -> None:
    with pytest.raises(TracekitError, match="damaged sidecar .meta.json of t.synthetic.json: seq_len is 0"):
        read_trace(_trace(tmp_path, {"seq_len": 0}))
    assert read_trace(_trace(tmp_path, {"seq_len": 128})).meta["seq_len"] == 128


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '"a"'])
def test_a_sidecar_that_is_no_json_object_is_nothing(tmp_path: Path, text: str) -> None:
    assert load_sidecar_meta(_trace(tmp_path, text), check=True) == {}
