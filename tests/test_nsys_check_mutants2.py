"""Mutants of ``collectors/nsys_check.py``'s ``summarize`` (c0c0681) that tests/test_gpu_check.py let live:
SYNTHETIC SQLite exports written with the standard library, exact counts."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tracekit.collectors.nsys_check import summarize

STRINGS = (
    "CREATE TABLE StringIds (id INT, value TEXT);"
    "INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'cuGraphLaunch'), (3, 'iteration'),"
    " (4, 'cudaGraphLaunch_v10000'), (5, 'other');"
)
NVTX = "CREATE TABLE NVTX_EVENTS (start INT, end INT, eventType INT, text TEXT, textId INT);"
RUNTIME = "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT, end INT, correlationId INT, nameId INT);"
KERNEL = "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, correlationId INT);"


def _export(tmp_path: Path, script: str, name: str = "x.synthetic.sqlite") -> Path:
    db = tmp_path / name
    con = sqlite3.connect(db)
    con.executescript(script)
    con.close()
    return db


def test_ranges_by_text_or_registered_string_with_calls_at_their_edges(tmp_path: Path) -> None:
    db = _export(
        tmp_path,
        STRINGS
        + NVTX
        # written out of order; one by its registered string; one not closed; one of another name
        + "INSERT INTO NVTX_EVENTS VALUES (300, 400, 59, NULL, 3), (100, 200, 59, 'iteration', NULL),"
        " (500, NULL, 59, 'iteration', NULL), (100, 400, 59, NULL, 5);"
        + RUNTIME
        # launches at each range's first and last ns, a graph launch of each spelling, one call between
        + "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (100, 101, 1, 1), (200, 201, 2, 1), (250, 251, 3, 1),"
        " (300, 301, 4, 2), (399, 400, 5, 4), (400, 401, 6, 1);"
        + KERNEL
        + "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (110, 120, 1), (210, 220, 2), (260, 270, 3),"
        " (310, 320, 4), (321, 330, 4), (410, 420, 5), (430, 440, 6), (441, 450, 6);"
        "CREATE TABLE GPU_METRICS (timestamp INT, typeId INT, metricId INT, value INT);"
        "INSERT INTO GPU_METRICS VALUES (1, 0, 0, 5), (2, 0, 0, 6), (3, 0, 0, 7);",
    )
    s = summarize(db)
    assert s.path == str(db)
    assert s.kernels_per_iteration == [2, 5] and s.graph_launches_per_iteration == [0, 2]
    assert s.kernels_total == 8 and s.kernels_outside == 1 and s.gpu_metric_samples == 3
    assert s.to_json() == {
        "path": str(db),
        "iterations": 2,
        "kernels_per_iteration": {"min": 2, "max": 5},
        "graph_launches_per_iteration": [0, 2],
        "kernels_total": 8,
        "kernels_outside": 1,
        "gpu_metric_samples": 3,
    }


def test_an_export_without_nvtx_events_has_no_iterations(tmp_path: Path) -> None:
    db = _export(tmp_path, STRINGS + KERNEL + "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2, 1);")
    s = summarize(db)
    assert (s.kernels_per_iteration, s.graph_launches_per_iteration, s.kernels_total) == ([], [], 0)
    assert s.gpu_metric_samples is None and s.to_json()["kernels_per_iteration"] is None


def test_without_registered_strings_ranges_are_read_by_text_and_no_launch_is_named(
    tmp_path: Path,
) -> None:
    db = _export(
        tmp_path,
        NVTX
        + "INSERT INTO NVTX_EVENTS VALUES (100, 200, 59, 'iteration', 3), (300, 400, 59, 'iteration', NULL);"
        + RUNTIME
        + "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (110, 111, 1, 1);"
        + KERNEL
        + "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (120, 130, 1), (140, 150, 9);",
    )
    s = summarize(db)
    # two ranges read by their text, no graph launch named (no call names), every kernel counted: the
    # kernel count needs no names (it had been gated on StringIds, reading every kernel as launched outside
    # the iterations, i.e. a warm-up left in the capture)
    assert s.graph_launches_per_iteration == [0, 0] and s.kernels_per_iteration == [1, 0]
    assert s.kernels_total == 2 and s.kernels_outside == 1


def test_graph_launches_are_counted_without_a_kernel_table(tmp_path: Path) -> None:
    db = _export(
        tmp_path,
        STRINGS
        + NVTX
        + "INSERT INTO NVTX_EVENTS VALUES (100, 200, 59, 'iteration', NULL);"
        + RUNTIME
        + "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (110, 111, 1, 4), (120, 121, 2, 1), (130, 131, 3, 2);",
    )
    s = summarize(db)
    assert s.kernels_per_iteration == [0] and s.graph_launches_per_iteration == [2] and s.kernels_total == 0
