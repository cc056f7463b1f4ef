"""Hostile round 13, Nsight Systems reader: what real exports of captures tracekit had not seen hold, checked
against exports recorded here with nsys 2022.4 (CPU processes with NVTX, through a small C library built on
the NVTX3 headers nsys ships) and against NVIDIA's own report scripts (``nvtx_pushpop_trace``,
``nvtx_gpu_proj_trace``).

Every trace here is synthetic, hand-built with :class:`tests.nsys_builder.NsysBuilder` in pytest's temporary
folder and named ``*.synthetic.sqlite``; the expected numbers are exact, from the rows written.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import tracekit
from tests.nsys_builder import NsysBuilder
from tracekit.readers.nsys_sqlite import read

US = 1_000


def _rounded(a: tracekit.Analysis, field: str) -> list[float]:
    """One per-iteration field, rounded to the ns (the analysis divides ns by 1e6)."""
    return [round(v, 6) for v in a.iterations[field].to_list()]


# ---------------------------------------------------------------- NVTX_EVENTS without any range


def test_an_nvtx_table_without_ranges_reads_without_a_library_warning(tmp_path: Path) -> None:
    """Recorded: a Python process using the ``nvtx`` package 0.2.17 under nsys 2022.4 (``-t nvtx,osrt``)
    leaves an NVTX_EVENTS table holding only its domains' create (75) and destroy (76) rows, beside
    ANALYSIS_DETAILS: the ranges were not recorded. The reader compared the capture's end with the start of
    the first of no ranges (None), and polars printed 'UserWarning: Comparisons with None always result in
    null' on stderr at every analysis of such a file. It reads without a warning of any library, and the file
    is a CPU-only trace without ranges."""
    b = NsysBuilder(version="2022.4.2.1", meta_table="EXPORT_META_DATA")
    b.nvtx_domain(134_000_000, 1, "NVTX")
    b.add("NVTX_EVENTS", start=134_279_830, end=None, eventType=76, globalTid=(100 << 24) | 100, domainId=0)
    b.capture(200_000_000)
    path = b.write(tmp_path / "domains_only.synthetic.sqlite")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace = read(path)
    assert trace.ranges.height == 0
    assert trace.meta["device"] == "cpu"


# ---------------------------------------------------------------- CPU operators never closed


def test_a_cpu_operator_never_closed_is_busy_to_the_trace_end(tmp_path: Path) -> None:
    """A CPU-only capture (``nsys -t nvtx,osrt``): three 'iteration' ranges of 10 µs, each with a 4 µs leaf
    'op_a'; in the last one a start/end range 'op_b' begins 2 µs before the iteration's end and is never ended
    (the capture stopped inside it). It was an operator with no end: counted in its iteration as an op that
    was busy 0 µs (busy 4 of 10 µs, utilization 0.4), though it was open for the last 2 µs. An operator that is
    never closed is open, hence busy, up to the trace's end (what the nesting counts it open to): busy 6 µs,
    utilization 0.6, and the reader says so."""
    b = NsysBuilder()
    for i in range(3):
        t0 = 10 * US + i * 20 * US
        b.nvtx_range(t0, t0 + 10 * US, "iteration")
        b.nvtx_range(t0 + 1 * US, t0 + 5 * US, "op_a")
    b.nvtx_range(58 * US, None, "op_b", start_end=True)
    path = b.write(tmp_path / "cpu_open_operator.synthetic.sqlite")
    trace = read(path)
    op_b = trace.ops.filter(trace.ops["name"] == "op_b")
    assert op_b.select("start", "end").rows() == [(58 * US, 60 * US)]
    assert any("open up to the trace end" in w for w in trace.meta["warnings"])
    a = tracekit.analyze(path, skip=0)
    assert _rounded(a, "gpu_busy_ms") == [0.004, 0.004, 0.006]
    assert a.iterations["gpu_utilization"].to_list() == pytest.approx([0.4, 0.4, 0.6])
    # the never-closed range itself stays without an end: no latency, no iteration
    assert trace.ranges.filter(trace.ranges["name"] == "op_b")["end"].to_list() == [None]
