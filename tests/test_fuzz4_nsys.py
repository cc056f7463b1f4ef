"""Edits a real Nsight Systems GPU export can hold, fuzzed against the nsys SQLite reader (round 4).

Every trace here is synthetic, hand-built with :class:`tests.nsys_builder.NsysBuilder` in a temporary folder
and named ``*.synthetic.sqlite``; the expected numbers are exact, from the rows written. Tests that read the
real exports of ``../shared/real_traces/nsys`` (``tests.conftest.REAL_TRACES``) skip without them.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl
import pytest

import tracekit
from tests.nsys_builder import NsysBuilder
from tracekit.errors import TraceFormatError
from tracekit.readers.nsys_sqlite import read

US = 1_000


def ms(a: tracekit.Analysis, field: str) -> list[float]:
    """One per-iteration field, rounded to the ns (the analysis divides ns by 1e6)."""
    return [round(v, 6) for v in a.iterations[field].to_list()]


def _iterations(b: NsysBuilder, n: int = 4) -> NsysBuilder:
    """``n`` 80 µs 'iteration' ranges 100 µs apart on process 100, each with one cudaLaunchKernel (2 µs) of a
    10 µs kernel ("parent", at +6 µs) and a stream synchronize to its end (+20 to +78 µs)."""
    corr = 1
    for i in range(n):
        s = i * 100 * US
        b.nvtx_range(s, s + 80 * US, "iteration")
        b.runtime(s + 2 * US, s + 4 * US, "cudaLaunchKernel_v7000", correlation=corr)
        b.kernel(s + 6 * US, s + 16 * US, "parent", correlation=corr)
        b.runtime(s + 20 * US, s + 78 * US, "cudaStreamSynchronize_v3020", correlation=corr + 1)
        corr += 2
    return b


# ------------------------------------------------------------------------------ correlation id 0 on an op


def test_an_op_with_correlation_id_0_counts_in_the_iteration_it_runs_in(tmp_path: Path) -> None:
    """A kernel whose correlationId is 0 (CUPTI's "none": a device-launched kernel has no host launch) ran
    40 µs inside each iteration. It was matched to no call and left out ("launched before the capture"):
    busy 10 of 80 µs, 12.5%, framework-bound. Read as carrying no id, it is placed by its start: busy 50 µs
    (parent 6-16, child 16-56), 62.5%, compute-bound, with the analysis's no-id warning."""
    b = _iterations(NsysBuilder())
    b.gpu(0, "NVIDIA H100")
    for i in range(4):
        s = i * 100 * US
        b.kernel(s + 16 * US, s + 56 * US, "child", correlation=0, stream=99)
    path = b.write(tmp_path / "device_launched_child.synthetic.sqlite")
    trace = read(path)
    assert trace.ops.filter(pl.col("name") == "child")["correlation"].to_list() == [None] * 4
    a = tracekit.analyze(path)
    assert ms(a, "gpu_busy_ms") == [0.05] * 4
    assert a.iterations["kernels"].to_list() == [2] * 4
    assert a.iterations["launches"].to_list() == [1] * 4
    assert a.verdict == "compute"
    assert any("4 device ops in the iterations carry no correlation id" in w for w in a.warnings)
    assert not any("launching call in the trace" in w for w in a.warnings)


def test_api_calls_keep_correlation_id_0(tmp_path: Path) -> None:
    """Only ops have their 0 read as none: API rows with 0 stay as they were (the duplicate collapse leaves
    them apart)."""
    b = _iterations(NsysBuilder(), n=1)
    b.runtime(90 * US, 91 * US, "cudaGetLastError_v3020", correlation=0)
    trace = read(b.write(tmp_path / "api_zero.synthetic.sqlite"))
    assert trace.api.filter(pl.col("name") == "cudaGetLastError")["correlation"].to_list() == [0]


# ---------------------------------------------------------------------------- ops without their process


def test_ops_without_globalpid_are_the_only_cuda_process_s(tmp_path: Path) -> None:
    """A kernel table whose globalPid is null (or absent) left every kernel unlinked to its launch: no
    iteration held a kernel, no verdict, and the warning blamed a capture that began late. The trace's CUDA
    calls all come from process 100, so its kernels are that process's: busy 10 µs of 80 per iteration."""
    for how in ("null", "absent"):
        drop = {"CUPTI_ACTIVITY_KIND_KERNEL": ["globalPid"]} if how == "absent" else None
        b = _iterations(NsysBuilder(drop_columns=drop))
        path = b.write(tmp_path / f"no_globalpid_{how}.synthetic.sqlite")
        if how == "null":
            with sqlite3.connect(path) as con:
                con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = NULL")
        trace = read(path)
        assert trace.ops["pid"].to_list() == [100] * 4
        assert (
            "4 device ops have no process id (globalPid null): the trace's CUDA API calls all come from "
            "process 100, so they are read as launched by it"
        ) in trace.warnings
        a = tracekit.analyze(path)
        assert ms(a, "gpu_busy_ms") == [0.01] * 4
        assert a.iterations["kernels"].to_list() == [1] * 4
        assert ms(a, "launch_latency_us") == [4.0] * 4
        assert a.verdict == "framework"


def test_ops_without_globalpid_and_calls_of_two_processes_stay_unlinked_with_a_warning(
    tmp_path: Path,
) -> None:
    """Two processes' calls share correlation ids: an op without its process cannot be given either."""
    b = _iterations(NsysBuilder())
    b.runtime(5 * US, 6 * US, "cudaLaunchKernel_v7000", correlation=1, pid=200, tid=200)
    path = b.write(tmp_path / "no_globalpid_two_processes.synthetic.sqlite")
    with sqlite3.connect(path) as con:
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = NULL")
    trace = read(path)
    assert trace.ops["pid"].to_list() == [None] * 4
    assert (
        "4 device ops have no process id (globalPid null) and the trace's CUDA API calls come from 2 "
        "processes: they cannot be linked to the calls that launched them"
    ) in trace.warnings


# ------------------------------------------------------------------------------------ one-line errors


@pytest.mark.parametrize("engine", ["adbc", "sqlite3"])
def test_a_device_id_too_large_for_its_column_is_said_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    """A deviceId of 2**32 - 1 (CUPTI's ids are uint32; an ordinal is small) is refused in one line that
    names the column, the value and the row; it had read "holds a value that is not an integer (int
    4294967295)", contradicting itself."""
    monkeypatch.setenv("TRACEKIT_SQLITE_ENGINE", engine)
    path = _iterations(NsysBuilder(), n=2).write(tmp_path / "device_uint32_max.synthetic.sqlite")
    with sqlite3.connect(path) as con:
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 4294967295 WHERE rowid = 2")
    with pytest.raises(TraceFormatError) as error:
        read(path)
    assert str(error.value) == (
        f"{path}: CUPTI_ACTIVITY_KIND_KERNEL.deviceId holds a value outside the 32-bit integer range that "
        "column takes (int 4294967295, rowid 2)"
    )
