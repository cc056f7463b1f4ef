"""One synthetic simulation written as nsys SQLite and as Kineto JSON: ``tracekit analyze`` on each gives the
simulator's ground truth per iteration (issue 33). Comparing the two outputs with each other only would pass
with the same wrong number on both sides (one analyzer reads both); the truth is computed by the simulator
from its own event list, not by tracekit's analysis."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracekit.cli import main

NS_FIELDS = ("latency", "gpu_busy", "idle", "dispatch", "launch", "sync", "other_api", "in_flight")
COUNT_FIELDS = ("kernels", "launches", "idle_gaps")


def _analyze(capsys: pytest.CaptureFixture[str], path: Path) -> dict:
    assert main(["analyze", str(path), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("runtime", ["pytorch", "onnx", "cuda-graphs", "onnx-cuda-graphs"])
def test_kineto_and_sqlite_of_one_simulation_each_give_the_truth(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runtime: str
) -> None:
    from tracekit.simulate import preset, simulate_sweep, synthetic_stem

    simulate_sweep(tmp_path, preset(runtime), [1], 128, 4, seed=11)
    stem = synthetic_stem(runtime, 1, 128)
    truth = json.loads((tmp_path / f"{stem}.truth.json").read_text())["iterations"]
    assert len(truth) == 4
    for name in (f"{stem}.json.gz", f"{stem}.sqlite"):
        doc = _analyze(capsys, tmp_path / name)
        assert doc["trace"]["synthetic"] is True
        iterations = doc["iterations"]
        assert [it["start_ns"] for it in iterations] == [t["start_ns"] for t in truth], name
        for field in NS_FIELDS:
            got = [it[f"{field}_ms"] for it in iterations]
            assert got == pytest.approx([t[f"{field}_ns"] / 1e6 for t in truth], rel=0, abs=1e-12), (
                name,
                field,
            )
        for field in COUNT_FIELDS:
            assert [it[field] for it in iterations] == [t[field] for t in truth], (name, field)
        util = [t["gpu_busy_ns"] / t["latency_ns"] for t in truth]
        assert [it["gpu_utilization"] for it in iterations] == pytest.approx(util, rel=1e-12), name
