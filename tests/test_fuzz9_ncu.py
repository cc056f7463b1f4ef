"""Nsight Compute reading, fuzz 9: what a real ``ncu --csv`` output can hold on which tracekit showed a wrong
per-kernel figure with confidence, or none where the data allows one.

- several CSV tables in one file (``ncu --csv ... >> all.csv`` run after run, or one table per process):
  each table has its own header and its own units row; the rows of the second were read under the first's
  columns and units (values of another metric, durations in another unit);


Every CSV here is hand-made (labelled synthetic: values invented, not measured), so the truth is known.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tracekit.errors import TraceFormatError
from tracekit.readers import read_trace

IDS = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
    '"Device","CC"'
)
DURATION = "gpu__time_duration.sum"
WARPS = "sm__warps_active.avg.pct_of_peak_sustained_active"
SM_PCT = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
BLANKS = '"","","","","","","","","","",""'


def write(tmp_path: Path, lines: list[str], name: str = "synthetic.ncu.csv") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def ident(kid: int, pid: int = 4242, name: str = "k(int*)", launch: bool = True) -> str:
    block, grid = ("(128, 1, 1)", "(8, 1, 1)") if launch else ("", "")
    return f'"{kid}","{pid}","app","127.0.0.1","{name}","1","7","{block}","{grid}","0","9.0"'


def header(*metrics: str) -> str:
    return IDS + "".join(f',"{m}"' for m in metrics)


def units(*units_: str) -> str:
    return BLANKS + "".join(f',"{u}"' for u in units_)


def row(kid: int, *values: str, pid: int = 4242, name: str = "k(int*)", launch: bool = True) -> str:
    return ident(kid, pid, name, launch) + "".join(f',"{v}"' for v in values)


def values(trace, metric: str) -> list[float]:
    frame = trace.kernel_metrics.filter(trace.kernel_metrics["metric"] == metric).sort("kernel")
    return frame["value"].to_list()


def durations(trace) -> list[int | None]:
    return trace.kernel_metrics.unique("kernel").sort("kernel")["duration_ns"].to_list()


# ------------------------------------------------------------------- several tables in one file


def test_a_second_table_is_read_under_its_own_header_and_units(tmp_path):
    """Two runs appended to one file (``>>``), the second with its metrics in another order and its duration
    in msecond: its rows had been read under the first table's columns and units (kernel 2's duration 30 us
    for 6 ms, its warp occupancy 6% for 30%)."""
    lines = [
        "==PROF== Connected to process 1",
        header(DURATION, WARPS),
        units("usecond", "%"),
        row(0, "2.0", "10.0", pid=1),
        row(1, "4.0", "20.0", pid=1),
        "==PROF== Disconnected from process 1",
        "==PROF== Connected to process 2",
        header(WARPS, DURATION),
        units("%", "msecond"),
        row(0, "30.0", "6.0", pid=2),
        row(1, "40.0", "8.0", pid=2),
        "==PROF== Disconnected from process 2",
    ]
    trace = read_trace(write(tmp_path, lines))
    assert durations(trace) == [2000, 4000, 6_000_000, 8_000_000]
    assert values(trace, WARPS) == [10.0, 20.0, 30.0, 40.0]
    assert any("2 CSV tables" in w for w in trace.warnings)


def test_tables_of_one_header_each_read_as_one(tmp_path):
    """The same header twice (one process's table after another's, same columns): read as before, with the
    tables said."""
    lines = [
        header(DURATION, WARPS),
        units("usecond", "%"),
        row(0, "2.0", "10.0", pid=1),
        header(DURATION, WARPS),
        units("usecond", "%"),
        row(0, "3.0", "30.0", pid=2),
    ]
    trace = read_trace(write(tmp_path, lines))
    assert durations(trace) == [2000, 3000]
    assert values(trace, WARPS) == [10.0, 30.0]


def test_a_details_table_after_a_raw_one_is_refused(tmp_path):
    """The raw page and the details page appended into one file: one line, exit 2, not a mix."""
    lines = [
        header(DURATION, WARPS),
        units("usecond", "%"),
        row(0, "2.0", "10.0"),
        IDS + ',"Section Name","Metric Name","Metric Unit","Metric Value"',
        ident(0) + ',"Occupancy","Achieved Occupancy","%","10.0"',
    ]
    with pytest.raises(TraceFormatError, match="raw page and the details page"):
        read_trace(write(tmp_path, lines))
