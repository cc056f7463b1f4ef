"""Nsight Systems exports fuzzed on schema and content variations of real captures (round 8).

Every trace here is synthetic, hand-built with :class:`tests.nsys_builder.NsysBuilder` in pytest's temporary
folder and named ``*.synthetic.sqlite``; the expected numbers are exact, from the rows written.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl

import tracekit
from tests.nsys_builder import NsysBuilder
from tracekit.readers.nsys_sqlite import read

US = 1_000


def ms(a: tracekit.Analysis, field: str) -> list[float]:
    """One per-iteration field, rounded to the ns (the analysis divides ns by 1e6)."""
    return [round(v, 6) for v in a.iterations[field].to_list()]


# ------------------------------------------------------------- GPUs numbered per process


def _ranks(b: NsysBuilder, *, own_visible_devices: bool) -> NsysBuilder:
    """Two processes in lockstep, 4 'iteration' ranges of 100 µs each: process 100 on GPU 0 (a 60 µs kernel),
    process 200 on GPU 1 (20 µs). With ``own_visible_devices`` each was started with its own
    ``CUDA_VISIBLE_DEVICES``, so both call their GPU CUDA device 0 (``deviceId`` 0, and
    TARGET_INFO_CUDA_DEVICE maps (100, 0) to GPU 0 and (200, 0) to GPU 1). SMs-active samples: GPU 0 80%,
    GPU 1 10%."""
    b.gpu(0, "NVIDIA H100")
    b.gpu(1, "NVIDIA H100")
    for pid, busy, gpu in ((100, 60, 0), (200, 20, 1)):
        device = 0 if own_visible_devices else gpu
        b.cuda_device(gpu, device, pid)
        for i in range(4):
            s = i * 200 * US
            b.nvtx_range(s, s + 100 * US, "iteration", pid=pid, tid=pid)
            b.runtime(
                s + 2 * US, s + 4 * US, "cudaLaunchKernel_v7000", correlation=2 * i + 1, pid=pid, tid=pid
            )
            b.kernel(s + 6 * US, s + (6 + busy) * US, "k", correlation=2 * i + 1, device=device, pid=pid)
            b.runtime(
                s + 8 * US,
                s + 98 * US,
                "cudaStreamSynchronize_v3020",
                correlation=2 * i + 2,
                pid=pid,
                tid=pid,
            )
    for t in range(0, 800 * US, 10 * US):
        b.gpu_metric(t, "SMs Active [Throughput %]", 80, pw_gpu_id=0)
        b.gpu_metric(t, "SMs Active [Throughput %]", 10, pw_gpu_id=1)
    return b


def test_ranks_with_their_own_cuda_visible_devices_keep_their_own_gpus(tmp_path: Path) -> None:
    """Every rank of a job started with its own CUDA_VISIBLE_DEVICES calls its GPU device 0. Read as CUDA ids,
    the two GPUs were one device: no per-device rows, and only GPU 0's samples were read for both ranks'
    kernels (SMs active 80%, where the GPUs that ran them average 45%), with no warning. Devices are the nsys
    GPU ids of (pid, CUDA id): the same analysis as the export that numbers the GPUs 0 and 1, and a warning
    says the ids are nsys's."""
    path = _ranks(NsysBuilder(), own_visible_devices=True).write(tmp_path / "own.synthetic.sqlite")
    own = tracekit.analyze(path)
    ref = tracekit.analyze(
        _ranks(NsysBuilder(), own_visible_devices=False).write(tmp_path / "ref.synthetic.sqlite")
    )
    trace = read(path)
    assert sorted(trace.ops["device"].to_list()) == [0] * 4 + [1] * 4
    assert trace.ops.filter(pl.col("pid") == 200)["device"].to_list() == [1] * 4
    assert [g["id"] for g in trace.meta["gpus"]] == [0, 1]
    assert trace.gpu_metrics.group_by("device").agg(pl.col("value").mean()).sort("device")[
        "value"
    ].to_list() == [
        80.0,
        10.0,
    ]
    assert own.per_device == ref.per_device
    assert [r["gpu_utilization"] for r in own.per_device] == [0.6, 0.2]
    assert any("number their GPUs differently" in w for w in own.warnings)
    assert not any("number their GPUs differently" in w for w in ref.warnings)


# ------------------------------------------------------------- device-work tables the reader does not read


def test_a_device_work_table_the_reader_does_not_read_is_said(tmp_path: Path) -> None:
    """A CUPTI table of device work the reader does not know (graphs launched from the device, CUPTI 12's
    DEVICE_GRAPH_TRACE; a newer nsys's MEMCPY2) held 4 graph runs of 40 µs: busy read 10 µs of each 80 µs
    iteration with no word about the rest. The number stays (the table's rows may repeat the kernels'), and
    a warning names the table and its rows."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    for i in range(4):
        s = i * 100 * US
        b.nvtx_range(s, s + 80 * US, "iteration")
        b.runtime(s + 2 * US, s + 4 * US, "cudaLaunchKernel_v7000", correlation=2 * i + 1)
        b.kernel(s + 6 * US, s + 16 * US, "parent", correlation=2 * i + 1)
        b._activity(
            "CUPTI_ACTIVITY_KIND_DEVICE_GRAPH_TRACE", s + 20 * US, s + 60 * US, 0, 7, None, 100, graphId=3
        )
        b.runtime(s + 20 * US, s + 78 * US, "cudaStreamSynchronize_v3020", correlation=2 * i + 2)
    a = tracekit.analyze(b.write(tmp_path / "device_graphs.synthetic.sqlite"))
    assert ms(a, "gpu_busy_ms") == [0.01] * 4
    assert (
        "table CUPTI_ACTIVITY_KIND_DEVICE_GRAPH_TRACE (4 rows) is not read: the GPU work it may hold is not "
        "in GPU busy" in a.warnings
    )
    # the verdict weighs it: busy is a lower bound (12.5% read here, 62.5% with the graphs' 40 µs)
    assert a.verdict == "framework" and a.verdict_uncertain is not None
    assert a.verdict_uncertain.startswith(
        "verdict uncertain: the trace holds GPU work in tables tracekit does not read "
        "(CUPTI_ACTIVITY_KIND_DEVICE_GRAPH_TRACE): GPU busy is short by its time"
    )


# ------------------------------------------------------------- enums renumbered


def test_nvtx_ranges_and_driver_calls_follow_the_exports_own_enum_ids(tmp_path: Path) -> None:
    """The reader knew NVTX push/pop ranges as eventType 59 and driver calls as eventClass 1, the ids of every
    export from 2022.4 to 2026.2. An export whose ENUM_NSYS_EVENT_TYPE / ENUM_NSYS_EVENT_CLASS number them
    otherwise (here 61 and 5) lost every range (the trace one window of 0.316 ms, no iteration) and read its
    cuLaunchKernel calls as runtime calls. The export's own ids are read: 4 iterations of 80 µs, 10 µs busy,
    driver calls of kind "driver"."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    b.add("ENUM_NSYS_EVENT_TYPE", id=59, name="NvtxSomethingElse", label="")
    b.add("ENUM_NSYS_EVENT_TYPE", id=61, name="NvtxPushPopRange", label="NvtxPushPopRange")
    b.add("ENUM_NSYS_EVENT_CLASS", id=5, name="TRACE_PROCESS_EVENT_CUDA_DRIVER", label="CUDA driver")
    for i in range(4):
        s = i * 100 * US
        b.nvtx_range(s, s + 80 * US, "iteration")
        b.runtime(s + 2 * US, s + 4 * US, "cuLaunchKernel", correlation=2 * i + 1, event_class=5)
        b.kernel(s + 6 * US, s + 16 * US, "k", correlation=2 * i + 1)
        b.runtime(s + 20 * US, s + 78 * US, "cudaStreamSynchronize_v3020", correlation=2 * i + 2)
    path = b.write(tmp_path / "enums.synthetic.sqlite")
    with sqlite3.connect(path) as con:
        con.execute('UPDATE NVTX_EVENTS SET "eventType" = 61')
    trace = read(path)
    assert trace.ranges.height == 4
    assert trace.api.filter(pl.col("name") == "cuLaunchKernel")["kind"].unique().to_list() == ["driver"]
    a = tracekit.analyze(path)
    assert ms(a, "latency_ms") == [0.08] * 4
    assert ms(a, "gpu_busy_ms") == [0.01] * 4


def test_gpu_ids_that_are_not_integers_leave_the_gpu_out_instead_of_failing(tmp_path: Path) -> None:
    """TARGET_INFO_GPU ids (or a GpuInfo JSON's "Id") that are not integers stopped the read with "internal
    error: ValueError: invalid literal for int()" for the sake of the GPU's name. Such a GPU is left out (no
    name), a string of digits is read as its integer, and the numbers are the same."""

    def build() -> NsysBuilder:
        b = NsysBuilder()
        for i in range(4):
            s = i * 100 * US
            b.nvtx_range(s, s + 80 * US, "iteration")
            b.runtime(s + 2 * US, s + 4 * US, "cudaLaunchKernel_v7000", correlation=i + 1)
            b.kernel(s + 6 * US, s + 16 * US, "k", correlation=i + 1)
        return b

    b = build()
    b.gpu(0, "NVIDIA H100")
    text = b.write(tmp_path / "gpu_id_text.synthetic.sqlite")
    with sqlite3.connect(text) as con:
        con.execute("UPDATE TARGET_INFO_GPU SET id = 'GPU-abc', pwGpuId = 'x', cuDevice = 'y'")
    b = build()
    b.env("GpuInfo", '{"Gpus": [{"Id": "0", "Name": "NVIDIA H100", "PwGpuId": "p"}, {"Id": "one"}]}')
    digits = b.write(tmp_path / "gpu_info_text.synthetic.sqlite")
    assert "gpus" not in read(text).meta
    assert read(digits).meta["gpus"] == [{"id": 0, "name": "NVIDIA H100"}]
    for path in (text, digits):
        assert ms(tracekit.analyze(path), "gpu_busy_ms") == [0.01] * 4


# ------------------------------------------------------------- the capture's own NVTX range


def test_the_nvtx_range_that_started_and_stopped_the_capture_keeps_its_end(tmp_path: Path) -> None:
    """Recorded with nsys 2022.4 (CPU-only, ``-t nvtx,osrt --capture-range=nvtx --nvtx-capture=iteration``):
    the capture starts at the 'iteration' push and stops at its pop, and nsys writes that pop as the
    capture's end (ANALYSIS_DETAILS.duration, 24331875 ns; the range began at 3817219 ns). The reader took
    every range ending there for one the capture cut: "no ranges and no device activity: nothing to analyze".
    The range that began before every other keeps its end (with a warning): one iteration of 20.514656 ms.
    With ``--nvtx-capture=profile`` around 5 iterations the 'profile' range had been called cut; a range cut
    by the capture that is not the first (the 6th 'iteration' of a process that died) still has no end."""
    b = NsysBuilder(version="2022.4.2.1", meta_table="EXPORT_META_DATA")
    b.nvtx_range(3817219, 24331875, "iteration")
    b.capture(24331875)
    trace = read(b.write(tmp_path / "capture_range_nvtx.synthetic.sqlite"))
    assert trace.ranges["end"].to_list() == [24331875]
    assert any("started and stopped the capture" in w for w in trace.warnings)
    assert not any("never closed" in w for w in trace.warnings)
    a = tracekit.analyze(tmp_path / "capture_range_nvtx.synthetic.sqlite")
    assert ms(a, "latency_ms") == [20.514656]

    b = NsysBuilder(version="2022.4.2.1", meta_table="EXPORT_META_DATA")
    b.nvtx_range(839987, 115965307, "profile")
    for i in range(5):
        s = 846009 + i * 22_000_000
        b.nvtx_range(s, s + 20_000_000, "iteration")
    b.nvtx_range(114_000_000, 115965307, "iteration", tid=101)  # cut: not the first range
    b.capture(115965307)
    trace = read(b.write(tmp_path / "capture_range_profile.synthetic.sqlite"))
    ends = dict(zip(trace.ranges["start"].to_list(), trace.ranges["end"].to_list(), strict=True))
    assert ends[839987] == 115965307 and ends[114_000_000] is None


def test_kernels_only_in_a_table_the_reader_does_not_read_make_no_cpu_only_trace(tmp_path: Path) -> None:
    """An export whose kernels sit in a table the reader does not read
    (``CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL``, CUPTI's other kernel kind) had no op the reader knew: it
    was read as a CPU-only trace, its NVTX leaves ('forward' inside each 'iteration') the operators: GPU
    utilization 97.5% per iteration, from host ranges alone. It stays a GPU trace without ops: no verdict,
    no utilization, and a warning names the table."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    for i in range(4):
        s = i * 100 * US
        b.nvtx_range(s, s + 80 * US, "iteration")
        b.nvtx_range(s + 1 * US, s + 79 * US, "forward")
        b.runtime(s + 2 * US, s + 4 * US, "cudaLaunchKernel_v7000", correlation=i + 1)
        b.kernel(s + 6 * US, s + 16 * US, "k", correlation=i + 1)
    path = b.write(tmp_path / "kernel_v2.synthetic.sqlite")
    with sqlite3.connect(path) as con:
        con.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME TO CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL")
    trace = read(path)
    assert trace.meta["device"] == "gpu" and trace.ops.height == 0
    a = tracekit.analyze(path)
    assert a.verdict is None
    assert a.iterations["gpu_utilization"].to_list() == [None] * 4
    assert any("CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL (4 rows) is not read" in w for w in a.warnings)


def test_tables_under_a_versioned_name_are_read_as_the_plain_ones(tmp_path: Path) -> None:
    """Readers of newer exports expect tables named ``NVTX_EVENTS_V2``, ``CUPTI_ACTIVITY_KIND_KERNEL_V3``.
    Without the plain names the export read as no NVTX range and no kernel: the whole trace one window, GPU
    busy nothing. A table held only under a versioned name (the highest version) is read as the plain one,
    with a warning: the same numbers as the plain export."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    for i in range(4):
        s = i * 100 * US
        b.nvtx_range(s, s + 80 * US, "iteration")
        b.runtime(s + 2 * US, s + 4 * US, "cudaLaunchKernel_v7000", correlation=2 * i + 1)
        b.kernel(s + 6 * US, s + 16 * US, "k", correlation=2 * i + 1)
        b.runtime(s + 20 * US, s + 78 * US, "cudaStreamSynchronize_v3020", correlation=2 * i + 2)
    plain = b.write(tmp_path / "plain.synthetic.sqlite")
    versioned = b.write(tmp_path / "versioned.synthetic.sqlite")
    with sqlite3.connect(versioned) as con:
        con.execute("ALTER TABLE NVTX_EVENTS RENAME TO NVTX_EVENTS_V2")
        con.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME TO CUPTI_ACTIVITY_KIND_KERNEL_V3")
        con.execute('CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL_V2 (start INTEGER, "end" INTEGER)')
    a, ref = tracekit.analyze(versioned), tracekit.analyze(plain)
    assert ms(a, "latency_ms") == ms(ref, "latency_ms") == [0.08] * 4
    assert ms(a, "gpu_busy_ms") == ms(ref, "gpu_busy_ms") == [0.01] * 4
    assert (
        "table CUPTI_ACTIVITY_KIND_KERNEL_V3 read as CUPTI_ACTIVITY_KIND_KERNEL (a versioned name this "
        "reader has not seen in an export)" in a.warnings
    )
    assert any(w.startswith("table NVTX_EVENTS_V2 read as NVTX_EVENTS") for w in a.warnings)
