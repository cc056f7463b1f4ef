"""Hostile round 11, Nsight Systems reader: legitimate exports against round 11's 'launch calls but no kernel'
rule. Every export here is hand-built with tests/nsys_builder.py (synthetic, made up for the test, not a
measurement); truths computed by hand."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import tracekit
from tests.nsys_builder import NsysBuilder

ITERS = 5


def _kernel_run(tmp_path: Path) -> Path:
    """``ITERS`` NVTX iterations of 9 µs, each with 5 launches of a 0.9 µs kernel: GPU busy 4.5 of 9 µs
    (utilization 0.5); the kernels in ``CUPTI_ACTIVITY_KIND_KERNEL``."""
    b = NsysBuilder()
    corr = 1
    for i in range(ITERS):
        t0 = 10_000 + i * 10_000
        b.nvtx_range(t0, t0 + 9_000, "iteration")
        for k in range(5):
            b.runtime(t0 + 100 + k * 200, t0 + 150 + k * 200, "cudaLaunchKernel_v7000", correlation=corr)
            b.kernel(t0 + 200 + k * 1000, t0 + 1100 + k * 1000, "gemm", correlation=corr)
            corr += 1
    return b.write(tmp_path / "kernels.synthetic.sqlite")


def test_kernels_in_a_versioned_table_beside_an_empty_plain_one_are_read(tmp_path: Path) -> None:
    """The kernels held in ``CUPTI_ACTIVITY_KIND_KERNEL_V2`` while the export also holds an empty
    ``CUPTI_ACTIVITY_KIND_KERNEL`` (the schema's table created, the records written under the versioned name).
    Before: the empty plain table was read, the export's 25 kernels were 'not read', and the analysis said
    'no verdict: 25 kernel launch calls but no kernel ran on the device: the profiler lost the device's
    activity' about an export that holds every kernel. After: the versioned table is read, as it is when the
    plain one is absent: utilization 0.5 in each iteration."""
    path = _kernel_run(tmp_path)
    con = sqlite3.connect(path)
    con.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME TO CUPTI_ACTIVITY_KIND_KERNEL_V2")
    con.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL_V2 WHERE 0"
    )
    con.commit()
    con.close()
    analysis = tracekit.analyze(path, skip=0)
    assert analysis.verdict == "compute"
    assert analysis.iterations["gpu_utilization"].to_list() == pytest.approx([0.5] * ITERS)
    assert not [w for w in analysis.warnings if "lost the device's activity" in w]
    assert "table CUPTI_ACTIVITY_KIND_KERNEL_V2 read as CUPTI_ACTIVITY_KIND_KERNEL" in " ".join(
        analysis.warnings
    )


def test_a_graph_only_capture_and_a_copies_only_run_get_their_verdicts(tmp_path: Path) -> None:
    """``--cuda-graph-trace=graph``: the launches made during a stream capture have no kernel (graph rows
    instead), and a run whose only GPU work is copies and memsets: neither is 'launch calls but no kernel'.
    Graph run: each 9 µs iteration holds one 7.7 µs graph execution (utilization 7.7/9); copies: 3.8 µs copy +
    0.5 µs memset of 9 µs."""
    b = NsysBuilder()
    corr = 1
    b.runtime(500, 600, "cudaStreamBeginCapture_v10000", correlation=corr)
    corr += 1
    for k in range(30):
        b.runtime(700 + k * 10, 705 + k * 10, "cudaLaunchKernel_v7000", correlation=corr)
        corr += 1
    b.runtime(1000, 1100, "cudaStreamEndCapture_v10000", correlation=corr)
    corr += 1
    for i in range(ITERS):
        t0 = 10_000 + i * 10_000
        b.nvtx_range(t0, t0 + 9_000, "iteration")
        b.runtime(t0 + 100, t0 + 200, "cudaGraphLaunch_v10000", correlation=corr)
        b.graph_execution(t0 + 300, t0 + 8_000, graph=1, correlation=corr)
        corr += 1
    graphs = tracekit.analyze(b.write(tmp_path / "graph_only.synthetic.sqlite"), skip=0)
    assert graphs.verdict == "compute"
    assert graphs.iterations["gpu_utilization"].to_list() == pytest.approx([7.7 / 9] * ITERS)

    b = NsysBuilder()
    corr = 1
    for i in range(ITERS):
        t0 = 10_000 + i * 10_000
        b.nvtx_range(t0, t0 + 9_000, "iteration")
        b.runtime(t0 + 100, t0 + 4_200, "cudaMemcpy_v3020", correlation=corr)
        b.memcpy(t0 + 200, t0 + 4_000, correlation=corr)
        corr += 1
        b.runtime(t0 + 4_300, t0 + 4_400, "cudaMemsetAsync_v3020", correlation=corr)
        b.memset(t0 + 4_500, t0 + 5_000, correlation=corr)
        corr += 1
    copies = tracekit.analyze(b.write(tmp_path / "copies_only.synthetic.sqlite"), skip=0)
    assert copies.verdict == "framework"
    assert copies.iterations["gpu_utilization"].to_list() == pytest.approx([4.3 / 9] * ITERS)
