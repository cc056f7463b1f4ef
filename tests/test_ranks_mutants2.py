"""Mutants of ``analyzers/ranks.py``'s per-GPU rows (38ee531, 1632838, c74b1fe: ``gpu_label``, ``gpu_rows``,
``gpu_busy_spread``, ``extremes``, ``gpu_warnings``, ``gpu_note``) that tests/test_fleet_per_gpu.py let live:
hand-built compact results (SYNTHETIC), exact rows and texts."""

from __future__ import annotations

from typing import Any

from tracekit.analyzers.ranks import (
    MEAN_FIELDS,
    extremes,
    gpu_busy_spread,
    gpu_label,
    gpu_note,
    gpu_rows,
    gpu_warnings,
)


def _gpu(device: int | None, iterations: int | None = 2, busy: float | None = 0.5, **extra: Any) -> dict:
    figures: dict[str, Any] = {f"mean_{k}": None for k in MEAN_FIELDS}
    figures.update(mean_latency_ms=1.0, mean_gpu_busy_ms=busy)
    return {
        "device": device,
        "gpu": None,
        "iterations": iterations,
        "median_latency_ms": 1.5,
        **figures,
        "verdict": "compute",
        "verdict_uncertain": None,
        **extra,
    }


def _result(name: str, per_gpu: list[dict] | None, **extra: Any) -> dict:
    return {"name": name, "rank": None, "verdict": "compute", "warnings": [], "per_gpu": per_gpu, **extra}


def test_a_gpu_rows_name_and_fields_come_from_the_gpu_then_its_trace() -> None:
    r = _result(
        "t.json",
        [
            _gpu(0, gpu="GPU A", range="step"),
            _gpu(None, busy=0.25, verdict_uncertain="why", error="no iteration holds it"),
        ],
        gpu="Trace GPU",
        device="H100",
        range="iteration",
        synthetic=True,
    )
    rows = gpu_rows([r])
    assert gpu_label(r, r["per_gpu"][1]) == "t.json ops without a device"
    first, second = rows
    assert {
        k: first[k] for k in ("trace", "file", "rank", "gpu", "device", "range", "of_trace", "device_id")
    } == {
        "trace": "t.json GPU 0",
        "file": "t.json",
        "rank": None,
        "gpu": "GPU A",
        "device": "H100",
        "range": "step",
        "of_trace": "t.json",
        "device_id": 0,
    }
    assert (first["iterations"], first["median_latency_ms"], first["mean_gpu_busy_ms"]) == (2, 1.5, 0.5)
    assert (
        first["verdict"] == "compute" and first["verdict_uncertain"] is False and first["synthetic"] is True
    )
    assert "error" not in first
    assert (second["trace"], second["gpu"], second["range"], second["device_id"]) == (
        "t.json ops without a device",
        "Trace GPU",
        "iteration",
        None,
    )
    assert second["verdict_uncertain"] is True and second["error"] == "no iteration holds it"
    assert sorted(first) == sorted(
        ["trace", "file", "rank", "gpu", "device", "range", "iterations", "median_latency_ms", "verdict"]
        + ["verdict_uncertain", "synthetic", "of_trace", "device_id"]
        + [f"mean_{k}" for k in MEAN_FIELDS]
    )
    # a trace that does not say it is synthetic is not
    assert gpu_rows([_result("u.json", [_gpu(0), _gpu(1)])])[0]["synthetic"] is False
    assert gpu_rows([_result("v.json", None), _result("w.json", [])]) == []


def test_the_busiest_gpu_against_the_least_busy_of_the_others() -> None:
    rows = gpu_rows([_result("t.json", [_gpu(0, busy=0.2), _gpu(1, busy=0.8), _gpu(2, busy=0.4)])])
    assert gpu_busy_spread(rows) == [
        {
            "trace": "t.json",
            "busiest": "t.json GPU 1",
            "busiest_mean_gpu_busy_ms": 0.8,
            "least_busy": "t.json GPU 0",
            "least_busy_mean_gpu_busy_ms": 0.2,
            "ratio": 4.0,
        }
    ]


def test_gpus_that_tie_are_two_gpus_at_1x_and_a_gpu_of_no_busy_time_gives_no_ratio() -> None:
    tie = gpu_busy_spread(gpu_rows([_result("t.json", [_gpu(0, busy=0.5), _gpu(1, busy=0.5)])]))
    assert [(s["busiest"], s["least_busy"], s["ratio"]) for s in tie] == [
        ("t.json GPU 0", "t.json GPU 1", 1.0)
    ]
    idle = gpu_busy_spread(gpu_rows([_result("t.json", [_gpu(0, busy=0.5), _gpu(1, busy=0.0)])]))
    assert idle[0]["ratio"] is None and idle[0]["least_busy_mean_gpu_busy_ms"] == 0.0
    assert extremes([{"trace": "a", "x": 3.0}, {"trace": "b", "x": 1.5}], "x", "high", "low") == {
        "high": "a",
        "high_x": 3.0,
        "low": "b",
        "low_x": 1.5,
        "ratio": 2.0,
    }


def test_each_trace_is_compared_apart_and_unknown_iteration_counts_do_not_count() -> None:
    results = [
        _result("a.json", [_gpu(0, busy=0.9), _gpu(1, busy=0.3)]),
        _result("b.json", [_gpu(0, iterations=None, busy=0.2), _gpu(1, iterations=3, busy=0.1)]),
        _result("c.json", [_gpu(0, iterations=2), _gpu(1, iterations=5), _gpu(2, iterations=3)]),
        _result("d.json", [_gpu(0, busy=None), _gpu(1, busy=None)]),
    ]
    spread = gpu_busy_spread(gpu_rows(results))
    assert [s["trace"] for s in spread] == ["a.json", "b.json", "c.json", "d.json"]
    assert spread[0]["ratio"] == 3.0 and spread[1]["ratio"] == 2.0
    assert spread[2] == {
        "trace": "c.json",
        "why": "its GPUs hold 2 to 5 iterations: their steps are not the same",
    }
    assert spread[3] == {"trace": "d.json", "why": "d.json GPU 0, d.json GPU 1: no figures"}


def test_gpu_warnings_name_every_gpu_of_one_text_and_prefer_the_error() -> None:
    results = [
        _result("a.json", [_gpu(0, verdict_uncertain="same"), _gpu(1, verdict_uncertain="same")]),
        _result("b.json", [_gpu(0, verdict_uncertain="doubt", error="broken"), _gpu(1)]),
    ]
    assert gpu_warnings(results) == ["a.json GPU 0, a.json GPU 1: same", "b.json GPU 0: broken"]
    assert gpu_warnings([_result("c.json", None)]) == []


def test_the_note_says_the_trace_or_each_trace() -> None:
    tail = (
        " ran on several GPUs, each shown as a row of its own (<trace> GPU k: that GPU's own work and "
        "iterations, as `tracekit analyze` on the trace shows it) under the trace's row, which counts its GPUs "
        "together (GPU busy: their union); the spread, clocks, straggler, skew and slowest by step compare whole "
        "traces, not GPUs; within a trace its GPUs' busy time is compared, and where its GPUs ran steps of "
        "their own (one capture of several processes: one clock) their straggler, start skew and slowest by step"
    )
    one = gpu_rows([_result("a.json", [_gpu(0), _gpu(1)])])
    assert gpu_note(one) == "a.json: the trace" + tail
    two = gpu_rows([_result("a.json", [_gpu(0), _gpu(1)]), _result("b.json", [_gpu(0), _gpu(1)])])
    assert gpu_note(two) == "a.json, b.json: each trace" + tail
    assert gpu_note([]) is None
