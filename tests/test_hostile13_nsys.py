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
