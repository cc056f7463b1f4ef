"""Fuzz round 5: the estimates of what a change would buy (report, recommendations, compare, table).

Each test builds its synthetic inputs here (rows as ``config_row`` makes them, or hand-made traces) and fails
on the code before its fix; the module docstring of each fixed function says the rule."""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_report import make_row, recommendations
from tracekit.analyzers.report import build_report


def _texts(rep: Any) -> list[str]:
    return [r["text"] for r in recommendations(rep)]


# ------------------------------------------------------------------------ sweeps of one model and device


def test_cpu_and_gpu_runs_of_one_runtime_are_two_sweeps() -> None:
    """A CPU run's batch 1 and a GPU run's batches 1 and 8 of one runtime had been one sweep (the GPU batch 1
    dropped as a 'duplicate'): 'batch 8 costs 0.00x batch 1, 1797.6-2442.6x the throughput for free' on the
    committed cpu_pytorch_bert_torch + h200_bert_fp16/pytorch samples. Each device is its own sweep."""
    rows = [
        make_row("pytorch", 1, 1461.0, busy=1400.0, device="cpu", model="bert-base", precision="fp32"),
        make_row("pytorch", 1, 4.45, busy=0.6, model="bert-base", precision="fp16"),
        make_row("pytorch", 8, 5.35, busy=1.5, model="bert-base", precision="fp16"),
    ]
    rep = build_report(rows)
    assert not any("duplicate" in w for w in rep.warnings)
    assert len(rep.sweeps) == 2
    by_device = {s["device"]: s for s in rep.sweeps}
    assert by_device["cpu"]["batch_sizes"] == [1]
    gpu = by_device["gpu"]
    assert gpu["batch_sizes"] == [1, 8]
    assert gpu["smallest_latency_ms"] == pytest.approx(4.45)
    assert gpu["headroom_latency_ratio"] is None or gpu["headroom_batch_size"] == 1
    assert gpu["transition_batch_size"] == 8  # 5.35 / 4.45 = 1.20x: off the 10% plateau
    texts = _texts(rep)
    assert not any("0.00x" in t for t in texts)
    # the two sweeps are told apart in the wording
    assert any(t.startswith("pytorch (gpu, fp16) (seq 128)") for t in texts)
    assert set(rep.transition_by_runtime) == {"pytorch (cpu, fp32)", "pytorch (gpu, fp16)"}


def test_two_models_of_one_runtime_do_not_make_one_curve() -> None:
    """bert-base at batches 1, 2 and gpt2-xl at batches 4, 8 (one runtime, one sequence length) had been one
    latency curve: a transition at batch 4 (4.00x) that is gpt2-xl's latency over bert-base's."""
    rows = [
        make_row("pytorch", 1, 10.0, busy=1.0, model="bert-base"),
        make_row("pytorch", 2, 10.2, busy=1.5, model="bert-base"),
        make_row("pytorch", 4, 40.0, busy=30.0, model="gpt2-xl"),
        make_row("pytorch", 8, 80.0, busy=70.0, model="gpt2-xl"),
    ]
    rep = build_report(rows)
    assert sorted(s["batch_sizes"] for s in rep.sweeps) == [[1, 2], [4, 8]]
    assert all(s["transition_batch_size"] != 4 for s in rep.sweeps)
    bert = next(s for s in rep.sweeps if s["model"] == "bert-base")
    assert bert["transition_batch_size"] is None and bert["label"] == "pytorch (bert-base)"


def test_alternative_runtime_is_of_the_same_model_and_device() -> None:
    """'onnx measured 5.0x faster here' had named an ONNX Runtime run of another model on another device."""
    rows = [
        make_row("pytorch", 1, 10.0, busy=1.0, model="bert-base"),
        make_row("onnx", 1, 2.0, busy=1.0, model="gpt2-xl", device="cpu"),
    ]
    rep = build_report(rows)
    (fo,) = [
        r for r in recommendations(rep) if r["kind"] == "framework_overhead" and r["runtime"] == "pytorch"
    ]
    assert "alternative_runtime" not in fo["numbers"]
    # the same model and device: still named
    rows = [
        make_row("pytorch", 1, 10.0, busy=1.0, model="bert-base"),
        make_row("onnx", 1, 2.0, busy=1.0, model="bert-base"),
    ]
    (fo,) = [
        r
        for r in recommendations(build_report(rows))
        if r["kind"] == "framework_overhead" and r["runtime"] == "pytorch"
    ]
    assert fo["numbers"]["alternative_runtime"] == "onnx"
