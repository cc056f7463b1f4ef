"""End to end, as a user would run it: collect under Nsight Systems on this CPU, then analyze and report.

These run real models on the CPU (seconds for the tiny model; about a minute for BERT-base) and need nsys
(installed by .ci/install-nsys.sh); they are skipped where nsys is absent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tracekit.cli import main

needs_nsys = pytest.mark.skipif(shutil.which("nsys") is None, reason="nsys is not installed")


def analyze_json(trace: Path, tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / f"{trace.name}.analysis.json"
    assert main(["analyze", str(trace), "--format", "json", "-o", str(out), *extra]) == 0
    return json.loads(out.read_text())


@needs_nsys
def test_tiny_pytorch_under_nsys_finds_iterations_and_operator_time(tmp_path):
    run = tmp_path / "run"
    argv = [
        "collect",
        "--runtime",
        "pytorch",
        "--model",
        "tiny",
        "--device",
        "cpu",
        "--seq-lens",
        "16",
        "--warmup",
        "2",
        "--iters",
        "5",
        "--profiler",
        "nsys",
        "--in-process",
        "-o",
        str(run),
    ]
    assert main(argv) == 0
    doc = analyze_json(run / "pytorch_b1_s16.nsys.sqlite", tmp_path)
    assert doc["trace"]["device"] == "cpu" and doc["trace"]["format"] == "nsys-sqlite"
    assert doc["range"] == "iteration" and len(doc["iterations"]) == 5
    for it in doc["iterations"]:
        assert it["kernels"] > 0  # aten:: operator ranges inside each iteration
        assert 0 < it["gpu_busy_ms"] <= it["latency_ms"]
    # The run directory feeds the report.
    assert main(["report", str(run), "-o", str(tmp_path / "report"), "--no-figures"]) == 0
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["configs"][0]["runtime"] == "pytorch"


@pytest.mark.slow
@needs_nsys
def test_bert_base_onnx_cpu_under_nsys_twenty_iterations(tmp_path):
    """Issue 3's acceptance run: BERT-base under ONNX Runtime on the CPU, traced by Nsight Systems."""
    run = tmp_path / "bert"
    argv = [
        "collect",
        "--runtime",
        "onnx",
        "--device",
        "cpu",
        "--model",
        "bert-base",
        "--profiler",
        "nsys",
        "--iters",
        "20",
        "--warmup",
        "3",
        "-o",
        str(run),
    ]
    assert main(argv) == 0
    run_json = json.loads((run / "run.json").read_text())
    config = run_json["configs"][0]
    # untraced timing is adaptive: at least --iters iterations (then until the interval is tight or 30 s)
    assert config["status"] == "ok" and config["untraced_latency_ms"]["count"] >= 20
    doc = analyze_json(run / config["traces"]["nsys"], tmp_path)
    assert len(doc["iterations"]) == 20
    # ONNX Runtime's CPU provider emits no operator ranges: latency only, said so.
    assert all(it["latency_ms"] > 0 for it in doc["iterations"])
    assert any("no GPU or operator activity" in w for w in doc["warnings"])
