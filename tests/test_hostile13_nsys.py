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


# ---------------------------------------------------------------- NVTXT ranges (imported annotations)


def test_ranges_imported_from_an_nvtxt_file_are_ranges(tmp_path: Path) -> None:
    """Annotations merged into a report from a text file (NVTXT, Nsight's ``ImportNvtxt``; an application that
    logs its own timings) are NVTX_EVENTS rows of eventType 70 (NvtxtPushPopRange) and 71
    (NvtxtStartEndRange), which ENUM_NSYS_EVENT_TYPE lists in every export seen (2022.4 to 2026.2) and which
    NVIDIA's own range reports (nvtx_pushpop_trace, nvtx_gpu_proj_trace) read beside 59/60. They were not
    read: the four 'iteration' ranges of this export were none, and the trace was analyzed as one window of
    82 µs, first launch to last kernel end (utilization 20/82, 'framework-bound'). They are ranges: four
    iterations of 10 µs, each with one 5 µs kernel."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    for t, name in ((59, "NvtxPushPopRange"), (60, "NvtxStartEndRange"), (70, "NvtxtPushPopRange"),
                    (71, "NvtxtStartEndRange"), (75, "NvtxDomainCreate")):  # fmt: skip
        b.add("ENUM_NSYS_EVENT_TYPE", id=t, name=name, label=name)
    for i in range(4):
        t0 = 10 * US + i * 25 * US
        event_type = 70 if i % 2 == 0 else 71
        b.add("NVTX_EVENTS", start=t0, end=t0 + 10 * US, eventType=event_type, text="iteration",
              globalTid=(100 << 24) | 100, domainId=0)  # fmt: skip
        b.runtime(t0 + 1 * US, t0 + 2 * US, "cudaLaunchKernel_v7000", correlation=i + 1)
        b.kernel(t0 + 3 * US, t0 + 8 * US, "gemm", correlation=i + 1)
    path = b.write(tmp_path / "nvtxt.synthetic.sqlite")
    trace = read(path)
    assert trace.ranges.select("start", "end", "name").rows() == [
        (10 * US + i * 25 * US, 20 * US + i * 25 * US, "iteration") for i in range(4)
    ]
    a = tracekit.analyze(path, skip=0)
    assert _rounded(a, "latency_ms") == [0.01] * 4
    assert _rounded(a, "gpu_busy_ms") == [0.005] * 4


# ---------------------------------------------------------------- the first range cut by the capture's end


def _cut_first_range(tmp_path: Path, start_trigger: str | None) -> Path:
    """A 200 µs capture (ANALYSIS_DETAILS) whose first range, 'serve', began at 5 µs and ends at the capture's
    end, around six 20 µs 'request' ranges of one 10 µs kernel each. ``start_trigger``: META_DATA_CAPTURE's
    START_TRIGGER, None for an export without it (2022.4)."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    if start_trigger is not None:
        b.add("META_DATA_CAPTURE", name="START_TRIGGER", value=start_trigger)
        b.add("META_DATA_CAPTURE", name="CAPTURE_EVENT_TYPE", value="Cuda")
    b.capture(200 * US)
    b.nvtx_range(5 * US, 200 * US, "serve")
    for i in range(6):
        t0 = 10 * US + i * 30 * US
        b.nvtx_range(t0, t0 + 20 * US, "request")
        b.runtime(t0 + 1 * US, t0 + 2 * US, "cudaLaunchKernel_v7000", correlation=i + 1)
        b.kernel(t0 + 3 * US, t0 + 13 * US, "gemm", correlation=i + 1)
    return b.write(tmp_path / f"cut_first_{start_trigger}.synthetic.sqlite")


@pytest.mark.parametrize("start_trigger", [None, "NvtxRange", "Immediate"])
def test_the_first_range_ending_at_the_capture_end_keeps_its_end_whatever_the_start_trigger(
    tmp_path: Path, start_trigger: str | None
) -> None:
    """The first range ending exactly at the capture's end is read as the capture's trigger
    (--capture-range=nvtx, recorded on 2022.4), its end kept (195 µs), with the warning, whatever
    META_DATA_CAPTURE's START_TRIGGER says: "Immediate" does not mean the capture had no capture range (the
    committed H200 nsys samples, taken with --capture-range=cudaProfilerApi by nsys 2025.3, say "Immediate"),
    so it cannot tell a trigger range from one cut by the capture's end (7c540d0 had read it so; reverted)."""
    trace = read(_cut_first_range(tmp_path, start_trigger))
    serve = trace.ranges.filter(trace.ranges["name"] == "serve")
    assert serve["end"].to_list() == [200 * US]
    assert any("started and stopped the capture" in w for w in trace.meta["warnings"])


# ---------------------------------------------------------------- defects in files this round does not own


def test_a_gap_is_not_said_to_be_inside_another_process_s_range(tmp_path: Path) -> None:
    """Recorded with nsys 2022.4: two forked worker processes, each with its own 'iteration' ranges of CPU
    operators; the longest-gaps table said rank 0's gap after its op_a was 'in range op_a', the op_a of rank 1
    running at the same time in the other process. What the host was doing at a gap is what the iteration's
    own process was doing: here process 100 ran 'op_a' (1-5 µs), nothing (5-9 µs), 'op_b' (9-10 µs) in its
    'iteration' (0-10 µs); process 200 was inside 'other_proc_op' (5-8 µs) at the time. The gap's host
    context is process 100's: host code outside any range, not 'in range other_proc_op'."""
    b = NsysBuilder()
    b.nvtx_range(0, 10 * US, "iteration", pid=100, tid=100)
    b.nvtx_range(1 * US, 5 * US, "op_a", pid=100, tid=100)
    b.nvtx_range(9 * US, 10 * US, "op_b", pid=100, tid=100)
    b.nvtx_range(4 * US, 20 * US, "setup", pid=200, tid=200)
    b.nvtx_range(5 * US, 8 * US, "other_proc_op", pid=200, tid=200)
    b.nvtx_range(30 * US, 40 * US, "iteration", pid=200, tid=200)
    b.nvtx_range(31 * US, 39 * US, "op_c", pid=200, tid=200)
    a = tracekit.analyze(b.write(tmp_path / "two_processes.synthetic.sqlite"), skip=0)
    gap = a.idle_gaps.filter((a.idle_gaps["pid"] == 100) & (a.idle_gaps["start_ns"] == 5 * US))
    assert gap["duration_ns"].to_list() == [4 * US]
    assert gap["cpu_context"].to_list() == ["host code outside API calls"]


def test_an_unimported_capture_stream_is_named_as_such(tmp_path: Path) -> None:
    """nsys 2022.4 as packaged here ('Importer error status: The importer binary and its dependencies were not
    found ... skipping importation of the QDSTRM file') leaves only the raw capture stream, ``report.qdstrm``,
    whose head reads 'NVIDIA Nsight Systems Stream <version>'. tracekit said 'not a trace tracekit can read
    (expected Nsight Systems SQLite, ...)': the one line should say it is an Nsight Systems capture stream
    that nsys must import first (QdstrmImporter -i report.qdstrm, then nsys export)."""
    from tracekit.errors import TraceFormatError
    from tracekit.readers import detect_format

    path = tmp_path / "report.synthetic.qdstrm"
    path.write_bytes(b"U3w[END]NVIDIA Nsight Systems Stream 2022.4.2.1-df9881f!\n" + bytes(range(256)) * 4)
    with pytest.raises(TraceFormatError) as raised:
        detect_format(path)
    assert "QdstrmImporter" in str(raised.value)
