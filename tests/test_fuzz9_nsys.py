"""Nsight Systems exports fuzzed on what real captures hold (round 9).

Every trace here is synthetic, hand-built with :class:`tests.nsys_builder.NsysBuilder` in pytest's temporary
folder and named ``*.synthetic.sqlite``; the expected numbers are exact, from the rows written.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import tracekit
from tests.conftest import real_trace
from tests.nsys_builder import NsysBuilder
from tracekit.readers.nsys_sqlite import read

US = 1_000
STEPS = 4
PAGEABLE, PINNED, DEVICE = 0, 1, 2
HTOD, DTOH, DTOD, HTOH = 1, 2, 8, 9


def ms(a: tracekit.Analysis, field: str) -> list[float]:
    """One per-iteration field, rounded to the ns (the analysis divides ns by 1e6)."""
    return [round(v, 6) for v in a.iterations[field].to_list()]


# ------------------------------------------------------------------ copies to and from pageable memory


def _copies(
    copy_kind: int,
    src: int | None,
    dst: int | None,
    *,
    call: str = "cudaMemcpyAsync_v3020",
    call_end: int = 260,
    enum: bool = True,
) -> NsysBuilder:
    """4 'iteration' ranges of 500 µs, 1000 µs apart (t0), each: a 5 µs ``cudaLaunchKernel`` at 10 µs, its
    200 µs kernel at 20 µs; a copy call (``call``) from 30 µs to ``call_end`` of a 10 µs copy at 240 µs
    (``copy_kind``, memory kinds ``src`` -> ``dst``); a 5 µs ``cudaLaunchKernel`` at 300 µs, its 50 µs
    kernel at 310 µs. The device is idle 20 µs between the first kernel and the copy, and 50 µs after it;
    inside the call (to 260 µs) 20 + 10 µs of that."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    if enum:
        b.mem_kinds()
    for i in range(STEPS):
        t0 = i * 1000 * US
        b.nvtx_range(t0, t0 + 500 * US, "iteration")
        c = 10 * i
        b.runtime(t0 + 10 * US, t0 + 15 * US, "cudaLaunchKernel_v7000", correlation=c + 1)
        b.kernel(t0 + 20 * US, t0 + 220 * US, "gemm", correlation=c + 1)
        b.runtime(t0 + 30 * US, t0 + call_end * US, call, correlation=c + 2)
        b.memcpy(
            t0 + 240 * US, t0 + 250 * US, copy_kind=copy_kind, correlation=c + 2, src_kind=src, dst_kind=dst
        )
        b.runtime(t0 + 300 * US, t0 + 305 * US, "cudaLaunchKernel_v7000", correlation=c + 3)
        b.kernel(t0 + 310 * US, t0 + 360 * US, "relu", correlation=c + 3)
    return b


def _causes(tmp_path: Path, b: NsysBuilder, name: str) -> dict[str, list[float]]:
    a = tracekit.analyze(b.write(tmp_path / f"{name}.synthetic.sqlite"))
    assert ms(a, "gpu_busy_ms") == [0.26] * STEPS
    return {c: ms(a, f"{c}_ms") for c in ("sync", "other_api", "launch", "in_flight", "dispatch")}


@pytest.mark.parametrize(
    ("copy_kind", "src", "dst", "name"),
    [
        (DTOH, DEVICE, PAGEABLE, "[CUDA memcpy DtoH (Device -> Pageable)]"),
        (HTOD, PAGEABLE, DEVICE, "[CUDA memcpy HtoD (Pageable -> Device)]"),
        (HTOH, PAGEABLE, PINNED, "[CUDA memcpy HtoH (Pageable -> Pinned)]"),
    ],
)
def test_an_asynchronous_copy_with_pageable_host_memory_waits_as_a_sync_call_does(
    tmp_path: Path, copy_kind: int, src: int, dst: int, name: str
) -> None:
    """CUDA's "API synchronization behavior": a ``cudaMemcpyAsync`` between device and pageable host memory
    may be synchronous with respect to the host (the driver syncs the stream and stages the copy through
    pinned memory; to pageable memory it returns once the copy is done). nsys gives the memory kinds
    (``srcKind`` / ``dstKind``, ids of ENUM_CUDA_MEM_KIND), not the name Kineto gives ("Memcpy DtoH (Device
    -> Pageable)"): the 20 µs the host waited inside the call for the stream to drain and the 10 µs after
    the copy before it returned read as 30 µs of ``other_api``, where the same trace from torch.profiler
    reads 30 µs of ``sync``. The copy is named with its memory kinds, and the wait is ``sync``."""
    b = _copies(copy_kind, src, dst)
    trace = read(b.write(tmp_path / "names.synthetic.sqlite"))
    assert trace.ops.filter(pl.col("kind") == "memcpy")["name"].unique().to_list() == [name]
    causes = _causes(tmp_path, b, "pageable")
    assert causes["sync"] == [0.03] * STEPS
    assert causes["other_api"] == [0.0] * STEPS
    assert causes["launch"] == [0.01] * STEPS
    assert causes["in_flight"] == [0.01] * STEPS


@pytest.mark.parametrize(
    ("copy_kind", "src", "dst", "enum", "name"),
    [
        (DTOH, DEVICE, PINNED, True, "[CUDA memcpy DtoH]"),
        (HTOD, PINNED, DEVICE, True, "[CUDA memcpy HtoD]"),
        (DTOH, DEVICE, None, True, "[CUDA memcpy DtoH]"),  # no memory kind recorded
        (DTOH, DEVICE, PAGEABLE, False, "[CUDA memcpy DtoH (Device -> Pageable)]"),  # no enum: nsys's ids
    ],
)
def test_an_asynchronous_copy_with_pinned_memory_waits_for_nothing(
    tmp_path: Path, copy_kind: int, src: int, dst: int | None, enum: bool, name: str
) -> None:
    """A ``cudaMemcpyAsync`` with pinned host memory is asynchronous: a call that outlived its copy waited
    for nothing by its kind, 30 µs of ``other_api`` (as before); a copy without a recorded memory kind keeps
    its plain name and stays so. An export without ENUM_CUDA_MEM_KIND has the ids every nsys version gives
    (0 pageable)."""
    b = _copies(copy_kind, src, dst, enum=enum)
    trace = read(b.write(tmp_path / "names.synthetic.sqlite"))
    assert trace.ops.filter(pl.col("kind") == "memcpy")["name"].unique().to_list() == [name]
    causes = _causes(tmp_path, b, "pinned")
    if "Pageable" in name:
        assert causes["sync"] == [0.03] * STEPS and causes["other_api"] == [0.0] * STEPS
    else:
        assert causes["sync"] == [0.0] * STEPS and causes["other_api"] == [0.03] * STEPS


def test_a_pageable_copy_whose_call_returned_before_it_ended_is_staging_not_a_wait(tmp_path: Path) -> None:
    """A large copy from pageable memory that the driver pipelines: the call returns (here at 245 µs) before
    its copy ends (250 µs). The host copied into the staging buffers, its own work: the 20 µs inside the
    call before the copy stay ``other_api``, none is ``sync`` (the real H200 2025.1 export's 394 MB copy:
    its call returned 27 µs before the copy ended)."""
    causes = _causes(tmp_path, _copies(HTOD, PAGEABLE, DEVICE, call_end=245), "staging")
    assert causes["sync"] == [0.0] * STEPS and causes["other_api"] == [0.02] * STEPS


def test_an_export_that_renumbers_the_memory_kinds_is_read_by_its_own_enum(tmp_path: Path) -> None:
    """The memory kinds are ids of the export's own ENUM_CUDA_MEM_KIND: an export numbering them as CUPTI
    does (1 pageable, 2 pinned, 3 device) names the copy to id 1 pageable, and id 0 (CUPTI's unknown) not."""
    cupti = {0: "Unknown", 1: "Pageable", 2: "Pinned", 3: "Device"}
    b = NsysBuilder()
    b.mem_kinds(cupti)
    b.memcpy(100, 200, copy_kind=DTOH, src_kind=3, dst_kind=1)
    b.memcpy(300, 400, copy_kind=DTOH, src_kind=3, dst_kind=0)
    trace = read(b.write(tmp_path / "renumbered.synthetic.sqlite"))
    assert trace.ops.sort("start")["name"].to_list() == [
        "[CUDA memcpy DtoH (Device -> Pageable)]",
        "[CUDA memcpy DtoH]",
    ]


@pytest.mark.parametrize("call", ["cudaMemcpyPeer_v4000", "cudaMemcpy_v3020"])
def test_a_peer_to_peer_copy_is_device_to_device_and_waits_for_nothing(tmp_path: Path, call: str) -> None:
    """A copy between two GPUs (nsys' "[CUDA memcpy PtoP]", copyKind 10: ``cudaMemcpyPeer``, or
    ``cudaMemcpy`` between devices with unified addressing) is a device-to-device copy: "no host-side
    synchronization is performed" (CUDA's "API synchronization behavior"; ``cudaMemcpyPeer`` "is asynchronous
    with respect to the host"). A call that outlived it waited for nothing by its kind: 30 µs of
    ``other_api``, as for "[CUDA memcpy DtoD]". Being synchronous by name, it read 30 µs of ``sync``."""
    causes = _causes(tmp_path, _copies(10, DEVICE, DEVICE, call=call), "peer")
    assert causes["sync"] == [0.0] * STEPS and causes["other_api"] == [0.03] * STEPS
    dtod = _causes(tmp_path, _copies(DTOD, DEVICE, DEVICE, call=call), "dtod")
    assert dtod == causes


@pytest.mark.parametrize(
    ("name", "plain", "pageable"),
    [
        ("nsysai_h100_2gpu_1s_fastvideo_2026.2.sqlite", 446, 4),
        ("nvfuser_h200_crossentropy_2025.1.sqlite", 0, 2),
        ("nvfuser_h200_2024.6.sqlite", 0, 0),
    ],
)
def test_real_exports_name_their_copies_from_pageable_memory(name: str, plain: int, pageable: int) -> None:
    """The real exports' host-to-device copies from pageable memory (``srcKind`` 0 in their own
    ENUM_CUDA_MEM_KIND) are named so; those from pinned memory keep the plain name. None of these calls
    outlived its copy inside an analyzed iteration (the H200 2025.1 export's 394 MB copy: its call returned
    27 µs before the copy ended; its 2-byte copy's call returned 0.9 µs after, between the iterations): the
    analyses' numbers are those of before."""
    trace = read(real_trace("nsys", name))
    names = trace.ops.filter(pl.col("kind") == "memcpy").get_column("name")
    assert int((names == "[CUDA memcpy HtoD]").sum()) == plain
    assert int((names == "[CUDA memcpy HtoD (Pageable -> Device)]").sum()) == pageable
    assert not names.str.contains("Pageable -> Pinned|Pinned").any()


# ------------------------------------------------------------------ a write-ahead log beside the export


def _wal_export(tmp_path: Path) -> Path:
    """An export (3 kernels of 10 µs) that a tool turned to WAL mode and then added 2 kernels of 10 µs to
    while it held the file open: the 2 kernels are in ``<name>-wal`` only, not yet checkpointed into the
    file. Copied, both files, as they were (the tool still holding it open)."""
    import shutil
    import sqlite3

    b = NsysBuilder()
    for i in range(3):
        b.kernel(i * 100 * US, i * 100 * US + 10 * US, "k", correlation=i + 1)
    live = b.write(tmp_path / "live.synthetic.sqlite")
    con = sqlite3.connect(live)
    try:
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA wal_autocheckpoint=0")
        name_id = con.execute("SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1").fetchone()[0]
        for i in range(3, 5):
            con.execute(
                'INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, "end", deviceId, contextId, streamId, '
                "correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY, gridZ, "
                "blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, "
                "localMemoryTotal, gridId) VALUES (?, ?, 0, 1, 7, ?, ?, ?, ?, 32, 1, 1, 1, 128, 1, 1, 0, 0, 0, "
                "0, 0)",
                (i * 100 * US, i * 100 * US + 10 * US, i + 1, 100 << 24, name_id, name_id),
            )
        con.commit()
        copy = tmp_path / "copied.synthetic.sqlite"
        for suffix in ("", "-wal"):
            shutil.copyfile(f"{live}{suffix}", f"{copy}{suffix}")
    finally:
        con.close()
    return copy


def test_an_export_with_a_write_ahead_log_beside_it_is_read_whole(tmp_path: Path) -> None:
    """An SQLite file in WAL mode keeps its latest writes in ``<name>-wal`` until a checkpoint. The reader
    opens files immutable (no locks, never written), which ignores that log: 3 of the 5 kernels were read,
    GPU busy 30 µs for 50 µs, without a word. The file and its log are read together, from a temporary
    copy (the input and its folder are left as they were), with a warning."""
    path = _wal_export(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    trace = read(path)
    assert trace.ops.height == 5
    assert int((trace.ops["end"] - trace.ops["start"]).sum()) == 50 * US
    assert any("write-ahead log" in w for w in trace.meta["warnings"])
    assert sorted(p.name for p in tmp_path.iterdir()) == before


# ------------------------------------------------------------------ nsys's own overhead on the host


def _overhead_run(flush_us: int, tid: int = 100) -> NsysBuilder:
    """4 'iteration' ranges of 500 µs, 1000 µs apart, on thread 100: a 5 µs launch at 10 µs of a 100 µs
    kernel at 20 µs, a 5 µs launch at 300 µs of a 50 µs kernel at 310 µs (the GPU work spans 3,340 µs);
    in each, nsys flushing its CUPTI buffers on thread ``tid`` for ``flush_us`` from 150 µs (the device
    idle, the thread outside every API call)."""
    b = NsysBuilder()
    for i in range(STEPS):
        t0 = i * 1000 * US
        b.nvtx_range(t0, t0 + 500 * US, "iteration")
        b.runtime(t0 + 10 * US, t0 + 15 * US, "cudaLaunchKernel_v7000", correlation=2 * i + 1)
        b.kernel(t0 + 20 * US, t0 + 120 * US, "gemm", correlation=2 * i + 1)
        b.runtime(t0 + 300 * US, t0 + 305 * US, "cudaLaunchKernel_v7000", correlation=2 * i + 2)
        b.kernel(t0 + 310 * US, t0 + 360 * US, "relu", correlation=2 * i + 2)
        b.profiler_overhead(t0 + 150 * US, t0 + (150 + flush_us) * US, "CUPTI Buffer flush", tid=tid)
    b.profiler_overhead(3_400 * US, 5_400 * US, "CUDA profiling data flush on process exit")  # after it
    return b


def test_nsys_overhead_on_the_calling_threads_during_the_gpu_work_is_said(tmp_path: Path) -> None:
    """nsys records its own work on the application's threads (PROFILER_OVERHEAD: buffer flushes, TLS and
    chunk allocation). Inside an iteration, on the thread that launches the work and outside every API call,
    it reads as host time of the framework (``dispatch``): here 100 µs of each iteration's 330 µs of
    dispatch were nsys flushing its buffers, said nowhere. The reader now says how much of the GPU work's
    span (the first op's start to the last op's end: 3,340 µs) nsys's own work took on the threads that made
    CUDA calls (400 µs, 12.0%), from 1% of it. The numbers stay those measured: the time was spent."""
    path = _overhead_run(100).write(tmp_path / "flush.synthetic.sqlite")
    said = [w for w in read(path).meta["warnings"] if "PROFILER_OVERHEAD" in w]
    assert said == [
        "nsys's own work on the threads that made CUDA calls (PROFILER_OVERHEAD: CUPTI Buffer flush) "
        "took 0.400 ms of the 3.340 ms from the first GPU op's start to the last one's end (12.0%): inside the "
        "iterations, where the GPU was idle, it reads as framework time (dispatch), which it inflates"
    ]
    a = tracekit.analyze(path)
    assert ms(a, "dispatch_ms") == [0.33] * STEPS
    assert any("PROFILER_OVERHEAD" in w for w in a.warnings)


@pytest.mark.parametrize(("flush_us", "tid"), [(8, 100), (100, 999)])
def test_nsys_overhead_that_is_small_or_on_other_threads_is_not_said(
    tmp_path: Path, flush_us: int, tid: int
) -> None:
    """Below 1% of the GPU work's span (32 µs of 3,340), or on a thread that made no CUDA call (nsys's own
    threads, a data loader's), nsys's overhead is not said; nor is what it did after the GPU work (its 2 ms
    flush at the process's exit here)."""
    path = _overhead_run(flush_us, tid).write(tmp_path / "quiet.synthetic.sqlite")
    assert not [w for w in read(path).meta["warnings"] if "PROFILER_OVERHEAD" in w]
