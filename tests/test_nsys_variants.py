"""NVTX structures of real Nsight Systems exports that the first reader tests did not hold, each checked by
recording with nsys 2022.4 (CPU-only, ``-t nvtx,osrt``) and rebuilt here as a small synthetic export.

- A range still open when the capture stops (a push never popped, a process that died inside an
  ``iteration``, a capture cut short by ``--duration``): nsys 2022.4 writes the capture's end
  (``ANALYSIS_DETAILS.duration``) as its end, which made it an iteration as long as the rest of the capture.
- ``iteration`` ranges inside an outer ``benchmark`` range of a CPU-only trace: leaves of depth 1, they were
  read as operators busy all of their own iteration ("compute-bound", 100% utilization).
- NVTX events whose registered string (``textId``) is missing from StringIds: nameless, now with a warning.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl
import pytest

from analyzers.ranges import select_ranges
from tests.conftest import real_trace
from tests.nsys_builder import NsysBuilder
from tracekit.readers.nsys_sqlite import read


def _with_capture_end(path: Path, duration: int) -> Path:
    """Add nsys's ``ANALYSIS_DETAILS`` table (one row, the capture's ``duration`` in ns on the session clock,
    as 2022.4 to 2026.2 write it) to the export at ``path``."""
    with sqlite3.connect(path) as con:
        con.execute(
            "CREATE TABLE ANALYSIS_DETAILS (globalVid INTEGER NOT NULL, duration INTEGER NOT NULL, "
            "startTime INTEGER NOT NULL, stopTime INTEGER NOT NULL)"
        )
        con.execute(
            "INSERT INTO ANALYSIS_DETAILS VALUES (?, ?, ?, ?)", (1 << 48, duration, 1000, 1000 + duration)
        )
    return path


def test_a_range_cut_by_the_capture_end_is_no_iteration(tmp_path: Path) -> None:
    """Recorded: 6 pushes of 'iteration' (20 ms each), the process raising inside the 6th; nsys 2022.4 wrote
    the 6th with end = ANALYSIS_DETAILS.duration (154 ms long). It is read as never closed: 5 iterations of
    20 ms, with warnings, not 6 with a 154 ms one."""
    b = NsysBuilder(version="2022.4.2.1", meta_table="EXPORT_META_DATA")
    ms = 1_000_000
    for i in range(6):
        b.nvtx_range(i * 21 * ms, i * 21 * ms + 20 * ms if i < 5 else 260 * ms, "iteration")
    path = _with_capture_end(b.write(tmp_path / "cut_by_capture_end.synthetic.sqlite"), 260 * ms)
    trace = read(path)
    assert trace.ranges["end"].to_list() == [i * 21 * ms + 20 * ms for i in range(5)] + [None]
    # one warning for the one fact (the reader's never-closed line counts it)
    assert [w for w in trace.warnings if "NVTX" in w] == [
        "1 NVTX range(s) never closed (the capture ended inside them, at 260000000 ns): they have no end time, "
        "so none of them is an iteration; ranges they enclose count them open to the trace end"
    ]
    choice = select_ranges(trace)
    assert choice.frame.height == 5
    latency = choice.frame.select(pl.col("range_end") - pl.col("range_start")).to_series().to_list()
    assert latency == [20 * ms] * 5


def test_a_range_closed_before_the_capture_end_keeps_its_end(tmp_path: Path) -> None:
    """Only the capture's exact end marks a cut range: one ending 1 ns earlier is closed, without a warning."""
    b = NsysBuilder(version="2022.4.2.1", meta_table="EXPORT_META_DATA")
    b.nvtx_range(0, 999, "iteration")
    b.nvtx_range(1000, 1999, "iteration")
    trace = read(_with_capture_end(b.write(tmp_path / "closed.synthetic.sqlite"), 2000))
    assert trace.ranges["end"].to_list() == [999, 1999]
    assert trace.warnings == []


def test_iteration_ranges_inside_a_benchmark_range_are_no_cpu_operators(tmp_path: Path) -> None:
    """CPU-only trace (no kernels): 'iteration' ranges inside one 'benchmark' range are leaves of depth 1.
    They stay ranges, not operators (which made the verdict 'compute-bound', 100% busy); the operators
    inside the ProfilerStep/iteration ranges of another thread are still read."""
    b = NsysBuilder(version="2022.4.2.1", meta_table="EXPORT_META_DATA")
    b.nvtx_range(0, 10_000, "benchmark")
    for i in range(4):
        b.nvtx_range(100 + i * 2000, 1900 + i * 2000, "iteration")
    b.nvtx_range(20_000, 30_000, "benchmark", tid=101)
    b.nvtx_range(20_100, 29_000, "ProfilerStep#7", tid=101)
    b.nvtx_range(20_200, 20_900, "aten::mm", tid=101)
    trace = read(b.write(tmp_path / "benchmark_cpu.synthetic.sqlite"))
    assert trace.meta["device"] == "cpu"
    assert trace.ops["name"].to_list() == ["aten::mm"]


def test_a_registered_string_missing_from_stringids_is_said(tmp_path: Path) -> None:
    """An NVTX range whose textId StringIds lacks has no name, and the reader says how many."""
    b = NsysBuilder(version="2022.4.2.1", meta_table="EXPORT_META_DATA")
    b.nvtx_range(0, 100, registered="iteration")
    b.nvtx_range(200, 300, "iteration")
    path = b.write(tmp_path / "missing_string.synthetic.sqlite")
    with sqlite3.connect(path) as con:
        con.execute("DELETE FROM StringIds WHERE value = 'iteration'")
    trace = read(path)
    assert trace.ranges["name"].to_list() == [None, "iteration"]
    assert trace.warnings == [
        "1 NVTX event(s) name a registered string (textId) missing from StringIds: they have no name"
    ]


@pytest.mark.real_traces
def test_real_2022_unterminated_push_is_never_closed() -> None:
    """The 2022.4 recording's push never popped (nsys wrote the capture's end, 163670952 ns, as its end) is
    read as never closed, open to the capture's end for the nesting."""
    trace = read(real_trace("nsys", "local_nvtx_only_cpu_2022.4.sqlite"))
    assert trace.ranges.filter(pl.col("name") == "unterminated_push")["end"].to_list() == [None]
    assert any("at 163670952 ns" in w and "never closed" in w for w in trace.warnings)
    assert sorted(trace.ops["name"].to_list()) == ["forward"] * 4 + ["postprocess"] * 4
