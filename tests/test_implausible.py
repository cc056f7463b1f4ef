"""Traces whose data a real profiler can get wrong (found by altering copies of real and sample traces): the
analysis says what it cannot trust instead of showing a confident number.

The altered copies are made in the test's temporary folder from committed samples (synthetic ones where the
truth is known); nothing altered is committed."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from tests.conftest import SAMPLE_TRACES
from tracekit.api import analyze

SYN_SQLITE = SAMPLE_TRACES / "synthetic" / "table3_pytorch" / "pytorch_b1_s128.synthetic.sqlite"
KERNELS = "CUPTI_ACTIVITY_KIND_KERNEL"


def _altered_sqlite(tmp_path: Path, name: str, sql: str, source: Path = SYN_SQLITE) -> Path:
    """A copy of ``source`` with ``sql`` run on it (its kernel table first rebuilt without constraints, so
    that NULLs can go in)."""
    copy = tmp_path / name
    shutil.copy(source, copy)
    copy.chmod(0o644)
    with sqlite3.connect(copy) as db:
        db.executescript(
            f"CREATE TABLE t AS SELECT * FROM {KERNELS}; DROP TABLE {KERNELS}; ALTER TABLE t RENAME TO {KERNELS};"
            + sql
        )
    return copy


def test_kernels_without_a_start_time_are_not_counted_busy_from_the_window_start(tmp_path: Path) -> None:
    # One kernel in seven lost its start (NULL). They used to be counted busy from their iteration's window
    # start to their end: 6x the busy time, and the verdict turned compute-bound.
    lost = _altered_sqlite(tmp_path, "lost.sqlite", f"UPDATE {KERNELS} SET start=NULL WHERE rowid % 7 = 0;")
    gone = _altered_sqlite(tmp_path, "gone.sqlite", f"DELETE FROM {KERNELS} WHERE rowid % 7 = 0;")
    a, b = analyze(lost), analyze(gone)
    assert a.iterations["gpu_busy_ms"].to_list() == b.iterations["gpu_busy_ms"].to_list()
    assert a.iterations["kernels"].sum() == analyze(SYN_SQLITE).iterations["kernels"].sum()
    assert a.verdict == b.verdict == "framework"
    assert (
        "571 device ops in the iterations have no start time (not recorded): they count as kernels but not in "
        "GPU busy time, which is short by however long they ran"
    ) in a.warnings
