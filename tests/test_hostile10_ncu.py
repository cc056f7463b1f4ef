"""Nsight Compute CSV outputs, odd but real (round 10). Every CSV here is hand-made (labelled synthetic:
values invented, not measured), with the helpers of tests/test_fuzz9_ncu.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_fuzz9_ncu import DURATION, SM_PCT, durations, header, row, units, values, write
from tracekit.analyzers.utilization import kernel_time_only
from tracekit.readers import read_trace


@pytest.mark.parametrize("cell", ["inf", "-inf", "1e400", "-5"])
def test_a_duration_no_kernel_can_have_is_unreadable_not_a_traceback(tmp_path: Path, cell: str) -> None:
    """A duration cell of 'inf' or '1e400' (past the int64 ns range) had stopped the reader with polars'
    InvalidOperationError (a traceback); '-5' us had been read as a kernel of -5 µs. Now such a duration is
    unreadable, as 'n/a' is: kernel 1 has none, kernel 2 its 20 µs, and the kernel-time average is withheld
    (kernel 1 has a value but no duration: its weight is unknown)."""
    path = write(
        tmp_path, [header(DURATION, SM_PCT), units("usecond", "%"), row(1, cell, "50"), row(2, "20", "60")]
    )
    trace = read_trace(path)
    assert durations(trace) == [None, 20_000]
    assert values(trace, SM_PCT) == [50.0, 60.0]
    assert any("1 of 2 kernels have no readable" in w for w in trace.meta["warnings"])
    assert kernel_time_only(trace).kernel_time["sms_active"] is None


def test_a_table_after_a_byte_order_mark_is_read_as_a_table(tmp_path: Path) -> None:
    """Two ncu CSV files joined with ``cat`` (each written by a tool that starts its files with a UTF-8
    byte-order mark), the second of another process, with its columns in another order and its durations
    in msecond. The second header, behind its mark, had not been seen as a header: it and the second
    table's rows were read under the first table's columns and units (kernel 2: 70 µs for 6 ms, SMs active
    6% for 70%). Now each table is read under its own header."""
    lines = [
        header(DURATION, SM_PCT),
        units("usecond", "%"),
        row(1, "10", "50"),
        "\ufeff" + header(SM_PCT, DURATION),
        units("%", "msecond"),
        row(2, "70", "6", pid=5151),
    ]
    path = tmp_path / "joined.synthetic.ncu.csv"
    path.write_bytes(("\ufeff" + "\n".join(lines) + "\n").encode("utf-8"))
    trace = read_trace(path)
    assert durations(trace) == [10_000, 6_000_000]
    assert values(trace, SM_PCT) == [50.0, 70.0]
    assert any("2 CSV tables" in w for w in trace.meta["warnings"])
