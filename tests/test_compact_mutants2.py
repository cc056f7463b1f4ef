"""Mutants of ``tracekit/fleet/compact.py``'s ``per_gpu`` (38ee531) that tests/test_fleet_per_gpu.py let
live: its SYNTHETIC 2-GPU Kineto trace (GPU 0 busy 900 us and GPU 1 300 us of each 1 ms step), with the
per-device rows and the trace's GPU list edited by hand; exact entries."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest

import tracekit
from tests.test_fleet_per_gpu import TWO_GPUS, _kineto
from tracekit.fleet.compact import per_gpu
from tracekit.session import AnalysisOptions


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory: pytest.TempPathFactory):
    path = _kineto(tmp_path_factory.mktemp("gpus") / "two.synthetic.json", 1000, TWO_GPUS, ["A", "B"])
    return tracekit.analyze(path)


def test_gpu_names_come_from_the_traces_list_by_id(analyzed) -> None:
    meta = dict(analyzed.trace_data.meta, gpus=["not a dict", {"name": "no id"}, {"id": 1, "name": "B"}])
    fake = SimpleNamespace(
        per_device=analyzed.per_device, trace_data=dataclasses.replace(analyzed.trace_data, meta=meta)
    )
    assert [(e["device"], e["gpu"]) for e in per_gpu(fake)] == [(0, None), (1, "B")]


def test_a_device_row_with_an_error_or_without_ops_has_no_figures(analyzed) -> None:
    rows = [analyzed.per_device[0], {"device": 1, "error": "boom"}, {"device": 7, "bound": "compute"}]
    entries = per_gpu(SimpleNamespace(per_device=rows, trace_data=analyzed.trace_data))
    assert entries[1:] == [
        {"device": 1, "gpu": "B", "error": "boom"},
        {"device": 7, "gpu": None, "error": "no ops on this device"},
    ]
    first = entries[0]
    assert (first["device"], first["gpu"], first["iterations"], first["range"]) == (
        0,
        "A",
        4,
        "ProfilerStep#*",
    )
    assert (first["verdict"], first["verdict_uncertain"]) == ("compute", None)
    assert first["mean_gpu_busy_ms"] == pytest.approx(0.9, abs=1e-12)
    assert first["mean_comm_ms"] is None and first["mean_exposed_comm_ms"] is None


def test_a_skip_that_drops_every_iteration_is_each_gpus_error(analyzed) -> None:
    assert per_gpu(analyzed, AnalysisOptions(skip=10)) == [
        {"device": 0, "gpu": "A", "error": "--skip 10 drops all 4 'ProfilerStep#*' iterations"},
        {"device": 1, "gpu": "B", "error": "--skip 10 drops all 4 'ProfilerStep#*' iterations"},
    ]


def test_no_per_device_rows_no_gpu_entries(analyzed) -> None:
    for rows in (None, []):
        assert per_gpu(SimpleNamespace(per_device=rows, trace_data=analyzed.trace_data)) is None


def test_the_gpu_entries_default_to_the_default_options(analyzed) -> None:
    import json

    default = per_gpu(analyzed)

    def plain(x: object) -> str:  # (the entries' lanes hold arrays)
        return json.dumps(x, default=lambda a: a.tolist(), sort_keys=True)

    assert plain(default) == plain(per_gpu(analyzed, AnalysisOptions()))
    assert [e["iterations"] for e in default] == [4, 4]
    assert [round(e["mean_gpu_busy_ms"], 6) for e in default] == [0.9, 0.3]
    assert [e["verdict"] for e in default] == ["compute", "framework"]
    assert default[1]["verdict_uncertain"].startswith("verdict uncertain: one process drives devices 0, 1")


def test_a_one_gpu_trace_has_no_gpu_entries(tmp_path: Path) -> None:
    path = _kineto(tmp_path / "one.synthetic.json", 2000, ((0, 10, 500, 1500),), ["A"])
    assert per_gpu(tracekit.analyze(path)) is None
