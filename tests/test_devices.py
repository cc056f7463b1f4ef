"""The per-device analyses of a multi-GPU trace (``analyzers/devices.py``): their order, a device without an
iteration, and the "one process drives several devices" doubt only under a compute-bound headline. SYNTHETIC
traces from tests/test_fleet_per_gpu.py's builder (one process, GPU 0 busy 900 µs and GPU 1 300 µs of each
1 ms step)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_fleet_per_gpu import TWO_GPUS, _kineto
from tracekit.analyzers import devices
from tracekit.analyzers.iterations import without_iteration_operators
from tracekit.readers import read_trace


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory):
    path = _kineto(tmp_path_factory.mktemp("gpus") / "two.synthetic.json", 1000, TWO_GPUS, ["A", "B"])
    return without_iteration_operators(read_trace(path), None, None)


def test_the_devices_come_in_order_and_the_device_less_part_last(
    trace, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = {None: trace, 1: trace, 0: trace}  # (the order a split may give them in)
    monkeypatch.setattr("tracekit.analyzers.ranges.split_by_device", lambda t: parts)
    found = devices.analyze_devices(trace)
    assert [d.device for d in found] == [0, 1, None]


def test_a_device_with_no_iteration_has_an_error_row(trace) -> None:
    missing = devices.DeviceAnalysis(7, trace, None, "no ops of device 7 in any 'ProfilerStep#*' iteration")
    rows = devices.per_device_rows(trace, analyses=[*devices.analyze_devices(trace), missing])
    assert rows[-1] == {"device": 7, "error": "no ops of device 7 in any 'ProfilerStep#*' iteration"}
    assert [r.get("bound") for r in rows[:2]] == ["compute", "framework"]


@pytest.mark.parametrize("together", [None, ("framework", 0.9), (None, None)])
def test_the_shared_process_doubt_needs_a_compute_bound_headline(trace, together) -> None:
    """GPU 1 is framework-bound while one process drives both GPUs: its idle time is its wait for GPU 0, a
    doubt said only when the trace as a whole is compute-bound (and never from a headline not given)."""
    rows = devices.per_device_rows(trace, together=together)
    assert [r["verdict_uncertain"] for r in rows] == [None, None]
    doubted = devices.per_device_rows(trace, together=("compute", 0.9))
    assert doubted[0]["verdict_uncertain"] is None
    assert doubted[1]["verdict_uncertain"].startswith(
        "verdict uncertain: one process drives devices 0, 1 in the same iterations, which together are busy 90%"
    )


def test_one_device_has_no_per_device_analyses(tmp_path: Path) -> None:
    path = _kineto(tmp_path / "one.synthetic.json", 2000, ((0, 10, 500, 1500),), ["A"])
    assert devices.analyze_devices(read_trace(path)) is None
    assert devices.per_device_rows(read_trace(path)) is None
