"""Nsight Systems exports fuzzed on what real captures and applications hold (round 11).

Every trace here is synthetic, hand-built with :class:`tests.nsys_builder.NsysBuilder` in pytest's temporary
folder and named ``*.synthetic.sqlite``; the expected numbers are exact, from the rows written.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import tracekit
from tests.nsys_builder import NsysBuilder
from tracekit.analyzers.gpu_metrics import analyze_gpu_metrics
from tracekit.model import Trace
from tracekit.readers.nsys_sqlite import read
from tracekit.session import analyze_trace

US = 1_000
STEPS = 4


def ms(a: tracekit.Analysis, field: str) -> list[float]:
    """One per-iteration field, rounded to the ns (the analysis divides ns by 1e6)."""
    return [round(v, 6) for v in a.iterations[field].to_list()]


# ------------------------------------------------------------------ launches recorded, kernels lost


@pytest.mark.parametrize("launch", ["cudaLaunchKernel_v7000", "cuLaunchKernel", "cudaGraphLaunch_v10000"])
@pytest.mark.parametrize("kernel_table", [True, False])
def test_launch_calls_without_any_kernel_make_a_gpu_trace_without_ops(
    tmp_path: Path, launch: str, kernel_table: bool
) -> None:
    """nsys records the CUDA API through its own injection and the kernels through CUPTI's activity buffers; a
    process that exits without flushing them (killed, ``os._exit``, a time limit) leaves an export with the
    launch calls and no kernel (the kernel table empty or absent). Such an export was read as a CPU-only trace:
    its NVTX leaves ('aten::mm' inside each 'iteration') became the operators, the device "cpu" and the
    utilization 0.79 per iteration, from host ranges alone. It is a GPU trace without ops: no utilization,
    no verdict."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    driver = launch.startswith("cu") and not launch.startswith("cuda")
    for i in range(STEPS):
        t0 = i * 1000 * US
        b.nvtx_range(t0, t0 + 500 * US, "iteration")
        b.nvtx_range(t0 + 5 * US, t0 + 400 * US, "aten::mm")
        call = b.driver if driver else b.runtime
        call(t0 + 10 * US, t0 + 15 * US, launch, correlation=2 * i + 1)
        b.runtime(t0 + 30 * US, t0 + 400 * US, "cudaStreamSynchronize_v3020", correlation=2 * i + 2)
    if kernel_table:
        b.table("CUPTI_ACTIVITY_KIND_KERNEL")
    path = b.write(tmp_path / "lost_kernels.synthetic.sqlite")
    trace = read(path)
    assert trace.meta["device"] == "gpu"
    assert trace.ops.height == 0
    assert any(f"records {STEPS} kernel launch calls but no kernel" in w for w in trace.meta["warnings"])
    a = tracekit.analyze(path)
    assert a.verdict is None
    assert a.iterations["gpu_utilization"].to_list() == [None] * STEPS
    # the reason names the launches that ran no kernel, not only "no GPU or operator activity"
    assert a.no_verdict is not None
    assert a.no_verdict.startswith(
        f"no framework-/compute-bound verdict: the trace records {STEPS} kernel launch"
    )


def test_cuda_calls_that_launch_nothing_leave_a_cpu_trace_cpu_only(tmp_path: Path) -> None:
    """A CPU run of a CUDA-enabled framework under ``-t cuda,nvtx`` records a few CUDA calls (device queries)
    and no launch: it stays a CPU-only trace, its NVTX leaves the operators (guard: unchanged)."""
    b = NsysBuilder()
    for i in range(STEPS):
        t0 = i * 1000 * US
        b.nvtx_range(t0, t0 + 500 * US, "iteration")
        b.nvtx_range(t0 + 5 * US, t0 + 400 * US, "aten::mm")
    b.runtime(1 * US, 2 * US, "cudaGetDeviceCount_v3020", correlation=1)
    trace = read(b.write(tmp_path / "cpu.synthetic.sqlite"))
    assert trace.meta["device"] == "cpu"
    assert trace.ops.height == STEPS


# ------------------------------------------------------------------ driver API names: _v<n> before _ptsz


def _captured_then_eager(begin: str, end: str, launch: str, sync: str) -> NsysBuilder:
    """A driver-API application: 20 ``launch`` calls captured into a graph between ``begin`` and ``end``
    (no kernel: captured work does not run), then 4 'iteration' ranges of 500 µs, 1000 µs apart (t0 from
    100 µs), each a 5 µs ``launch`` at 10 µs of its 300 µs kernel at 20 µs and a ``sync`` from 30 to 330 µs."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    b.driver(1 * US, 2 * US, begin, correlation=1000)
    for k in range(20):
        b.driver(3 * US + k * US, 3 * US + k * US + 500, launch, correlation=2000 + k)
    b.driver(30 * US, 31 * US, end, correlation=1001)
    for i in range(STEPS):
        t0 = 100 * US + i * 1000 * US
        b.nvtx_range(t0, t0 + 500 * US, "iteration")
        b.driver(t0 + 10 * US, t0 + 15 * US, launch, correlation=2 * i + 1)
        b.kernel(t0 + 20 * US, t0 + 320 * US, "gemm", correlation=2 * i + 1)
        b.driver(t0 + 30 * US, t0 + 330 * US, sync, correlation=2 * i + 2)
    return b


def test_driver_calls_versioned_before_their_per_thread_suffix_are_known(tmp_path: Path) -> None:
    """CUPTI names the per-thread-default-stream twins of versioned driver calls with the version first:
    ``cuStreamBeginCapture_v2_ptsz``, ``cuMemcpyDtoHAsync_v2_ptsz``, ``cuMemcpyHtoD_v2_ptds`` (cupti_driver_cbid.h),
    where runtime calls put it last (``cudaLaunchKernel_ptsz_v7000``). The reader strips a version only at the
    end, and the analysis strips ``_ptsz`` then a version: ``cuStreamBeginCapture_v2_ptsz`` was
    "cuStreamBeginCapture_v2", no capture call. The 20 launches captured into a graph (no kernel, as captured
    work does not run) then read as lost kernels: "verdict uncertain: 20 of 24 kernel launches have no
    kernel". The version is stripped before the per-thread suffix too: "cuStreamBeginCapture_ptsz", known,
    and no doubt, as with the same calls without ``_ptsz``."""
    names = ("cuStreamBeginCapture_v2_ptsz", "cuStreamEndCapture_ptsz", "cuLaunchKernel_ptsz")
    b = _captured_then_eager(*names, "cuStreamSynchronize_ptsz")
    path = b.write(tmp_path / "ptsz.synthetic.sqlite")
    api = read(path).api
    assert sorted(api["name"].unique().to_list()) == [
        "cuLaunchKernel_ptsz",
        "cuStreamBeginCapture_ptsz",
        "cuStreamEndCapture_ptsz",
        "cuStreamSynchronize_ptsz",
    ]
    a = tracekit.analyze(path)
    assert not [w for w in a.warnings if "uncertain" in w]
    assert ms(a, "gpu_busy_ms") == [0.3] * STEPS
    assert ms(a, "sync_ms") == [0.01] * STEPS
    plain = _captured_then_eager(
        "cuStreamBeginCapture_v2", "cuStreamEndCapture", "cuLaunchKernel", "cuStreamSynchronize"
    )
    ref = tracekit.analyze(plain.write(tmp_path / "plain.synthetic.sqlite"))
    assert not [w for w in ref.warnings if "uncertain" in w]


@pytest.mark.parametrize(
    ("raw", "read_as"),
    [
        ("cuMemcpyDtoHAsync_v2_ptsz", "cuMemcpyDtoHAsync_ptsz"),
        ("cuMemcpyHtoD_v2_ptds", "cuMemcpyHtoD_ptds"),
        ("cudaLaunchKernel_ptsz_v7000", "cudaLaunchKernel_ptsz"),
        ("cudaGetDeviceProperties_v2_v12000", "cudaGetDeviceProperties_v2"),
        ("cuLaunchKernel", "cuLaunchKernel"),
        ("cuMemcpyDtoH_v2", "cuMemcpyDtoH"),
    ],
)
def test_one_version_suffix_is_stripped_wherever_cupti_puts_it(
    tmp_path: Path, raw: str, read_as: str
) -> None:
    b = NsysBuilder()
    b.driver(1 * US, 2 * US, raw, correlation=1)
    b.kernel(3 * US, 4 * US, "k", correlation=1)
    assert read(b.write(tmp_path / "names.synthetic.sqlite")).api["name"].to_list() == [read_as]


def test_the_analysis_knows_a_driver_call_versioned_before_its_per_thread_suffix() -> None:
    import polars as pl

    from tracekit.model import calls_named

    api = pl.DataFrame({"name": ["cuStreamBeginCapture_v2_ptsz"]})
    assert calls_named(api, ["cuStreamBeginCapture"]).height == 1


# ------------------------------------------------------------------ nsys 2021.1's GPU table


def test_an_early_2021_export_names_its_gpu_from_target_info_cuda_gpu(tmp_path: Path) -> None:
    """nsys up to 2021.1 lists the GPUs in ``TARGET_INFO_CUDA_GPU`` (``deviceId``, ``name``, ...; NVIDIA's
    2021.1 report scripts join it to the kernels ``USING(deviceId)``), not ``TARGET_INFO_GPU``: the export's
    GPU had no name (``meta["gpu"]`` missing, the table and fleet views without it). Two V100s, the kernels
    on device 1."""
    b = NsysBuilder(version="2021.1.1.66")
    for dev, name in ((0, "Tesla V100-SXM2-16GB"), (1, "Tesla V100-SXM2-32GB")):
        b.add(
            "TARGET_INFO_CUDA_GPU", deviceId=dev, name=name, numMultiprocessors=80, computeCapabilityMajor=7
        )
    for i in range(STEPS):
        b.runtime(i * 100 * US, i * 100 * US + 5 * US, "cudaLaunchKernel_v7000", correlation=i + 1)
        b.kernel(i * 100 * US + 10 * US, i * 100 * US + 50 * US, "k", correlation=i + 1, device=1)
    trace = read(b.write(tmp_path / "v2021.synthetic.sqlite"))
    assert trace.meta["gpu"] == "Tesla V100-SXM2-32GB"
    assert trace.meta["gpus"] == [
        {"id": 0, "name": "Tesla V100-SXM2-16GB"},
        {"id": 1, "name": "Tesla V100-SXM2-32GB"},
    ]


# ------------------------------------------------------------------ a capture that did not trace CUDA


def _nvtx_only(capture_types: list[str] | None) -> NsysBuilder:
    """4 'iteration' ranges of 500 µs, each around a 395 µs 'aten::mm' range; no CUDA table. The capture's
    META_DATA_CAPTURE lists ``capture_types`` as its CAPTURE_EVENT_TYPE rows (None: no such table)."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    if capture_types is not None:
        b.table("META_DATA_CAPTURE")
        for kind in capture_types:
            b.add("META_DATA_CAPTURE", name="CAPTURE_EVENT_TYPE", value=kind)
    for i in range(STEPS):
        t0 = i * 1000 * US
        b.nvtx_range(t0, t0 + 500 * US, "iteration")
        b.nvtx_range(t0 + 5 * US, t0 + 400 * US, "aten::mm")
    return b


def test_a_capture_that_did_not_trace_cuda_says_so(tmp_path: Path) -> None:
    """``nsys profile -t nvtx,osrt`` of a GPU application: the export holds no CUDA table, and is read as a
    CPU-only run whose NVTX leaves are the operators ('aten::mm', "utilization" 0.79). That is all it can be
    read as, but nothing said that CUDA was not traced, while the capture's own META_DATA_CAPTURE says so (its
    CAPTURE_EVENT_TYPE rows name no 'Cuda', as the real 2024.6 to 2026.2 exports, traced with CUDA, do): a
    warning says that any GPU work is missing."""
    path = _nvtx_only(["NvtxEvents", "OSRuntime"]).write(tmp_path / "nvtx_only.synthetic.sqlite")
    trace = read(path)
    assert trace.meta["device"] == "cpu"
    assert any("did not trace CUDA" in w for w in trace.meta["warnings"])


@pytest.mark.parametrize("types", [None, ["NvtxEvents", "Cuda"], []])
def test_a_cpu_trace_whose_capture_traced_cuda_or_does_not_say_is_not_warned(
    tmp_path: Path, types: list[str] | None
) -> None:
    """CUDA traced (a CPU process made no CUDA call), or no word of what was traced (2022.4 writes no
    META_DATA_CAPTURE): no such warning."""
    trace = read(_nvtx_only(types).write(tmp_path / "cpu.synthetic.sqlite"))
    assert trace.meta["device"] == "cpu"
    assert not any("did not trace CUDA" in w for w in trace.meta["warnings"])


@pytest.mark.parametrize(
    "launch",
    ["cuLaunchCooperativeKernelMultiDevice", "cuLaunchGrid", "cuLaunchGridAsync", "cudaLaunch_v3020"],
)
def test_older_launch_calls_are_launches(tmp_path: Path, launch: str) -> None:
    """4 'iteration' ranges of 500 µs: a 5 µs ``launch`` at 10 µs of a 200 µs kernel at 20 µs and a
    ``cudaStreamSynchronize`` from 30 to 230 µs: 5 µs of ``launch`` per iteration."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    for i in range(STEPS):
        t0 = i * 1000 * US
        b.nvtx_range(t0, t0 + 500 * US, "iteration")
        call = b.runtime if launch.startswith("cuda") else b.driver
        call(t0 + 10 * US, t0 + 15 * US, launch, correlation=2 * i + 1)
        b.kernel(t0 + 20 * US, t0 + 220 * US, "gemm", correlation=2 * i + 1)
        b.runtime(t0 + 30 * US, t0 + 230 * US, "cudaStreamSynchronize_v3020", correlation=2 * i + 2)
    a = tracekit.analyze(b.write(tmp_path / "old_launch.synthetic.sqlite"))
    assert ms(a, "launch_ms") == [0.005] * STEPS


# ------------------------------------------------------------------ GPU metrics without a GPU table


def _sms_active(trace: Trace) -> list[float | None]:
    """Wall-time SMs active per iteration, as ``tracekit table`` shows it."""
    return analyze_gpu_metrics(trace, analyze_trace(trace).iterations).iterations["sms_active"].to_list()


def _sampled(gpus_sampled: tuple[int, ...], kernel_device: int, *, gpu_table: bool) -> NsysBuilder:
    """4 'iteration' ranges of 100 µs, each a 60 µs kernel on CUDA device ``kernel_device``; SMs-active
    samples every 10 µs of each PerfWorks GPU in ``gpus_sampled`` (GPU 0 80%, GPU 1 10%); TARGET_INFO_GPU
    (PerfWorks id = cuDevice = id) only with ``gpu_table``."""
    b = NsysBuilder()
    if gpu_table:
        for g in gpus_sampled:
            b.gpu(g, "NVIDIA H100")
    for i in range(STEPS):
        s = i * 200 * US
        b.nvtx_range(s, s + 100 * US, "iteration")
        b.runtime(s + 2 * US, s + 4 * US, "cudaLaunchKernel_v7000", correlation=2 * i + 1)
        b.kernel(s + 6 * US, s + 66 * US, "k", correlation=2 * i + 1, device=kernel_device)
        b.runtime(s + 8 * US, s + 98 * US, "cudaStreamSynchronize_v3020", correlation=2 * i + 2)
    for t in range(0, 800 * US, 10 * US):
        for g in gpus_sampled:
            b.gpu_metric(t, "SMs Active [Throughput %]", 80 if g == 0 else 10, pw_gpu_id=g)
    return b


def test_samples_of_several_gpus_without_a_gpu_table_are_not_guessed_onto_the_cuda_device(
    tmp_path: Path,
) -> None:
    """GPU metrics name their GPU by its PerfWorks id, which TARGET_INFO_GPU maps to the CUDA device id.
    Without that table (an export cut down by a third-party tool, as the real 2026.2 fixture is), the reader
    took the PerfWorks id for the CUDA id. With 2 GPUs sampled and the kernels on CUDA device 0 that is a
    guess: under CUDA_VISIBLE_DEVICES=1 the process's device 0 is the box's GPU 1 (SMs active 10%, read 80%).
    The samples get no device, with a warning, and SMs active is withheld."""
    path = _sampled((0, 1), 0, gpu_table=False).write(tmp_path / "no_gpu_table.synthetic.sqlite")
    trace = read(path)
    assert trace.gpu_metrics.height == 2 * 80
    assert trace.gpu_metrics["device"].null_count() == trace.gpu_metrics.height
    assert any("TARGET_INFO_GPU" in w and "no device" in w for w in trace.meta["warnings"])
    assert _sms_active(trace) == [None] * STEPS


@pytest.mark.parametrize(("sampled", "table"), [((0,), False), ((0, 1), True)])
def test_samples_whose_gpu_is_certain_keep_it(tmp_path: Path, sampled: tuple[int, ...], table: bool) -> None:
    """One GPU sampled and the kernels on device 0 (no table: the one GPU there is), or a GPU table: the
    samples keep their device, and SMs active is GPU 0's 80% (guard: unchanged)."""
    path = _sampled(sampled, 0, gpu_table=table).write(tmp_path / "sampled.synthetic.sqlite")
    trace = read(path)
    assert trace.gpu_metrics["device"].null_count() == 0
    assert [round(v, 6) for v in _sms_active(trace)] == [80.0] * STEPS


# ------------------------------------------------------------------ kernels that last 0 ns


def _zero_length(zero: int) -> NsysBuilder:
    """4 'iteration' ranges of 500 µs, each 5 kernels launched 10 µs apart, the first ``zero`` of them with
    start == end, the others 5 µs long; then a 400 µs ``cudaStreamSynchronize``."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    for i in range(STEPS):
        t0 = i * 1000 * US
        b.nvtx_range(t0, t0 + 500 * US, "iteration")
        for k in range(5):
            s = t0 + (20 + k * 10) * US
            b.runtime(s - 10 * US, s - 8 * US, "cudaLaunchKernel_v7000", correlation=10 * i + k + 1)
            b.kernel(s, s if k < zero else s + 5 * US, "gemm", correlation=10 * i + k + 1)
        b.runtime(t0 + 80 * US, t0 + 480 * US, "cudaStreamSynchronize_v3020", correlation=10 * i + 9)
    return b


def test_kernels_that_last_no_time_are_said(tmp_path: Path) -> None:
    """No real kernel takes 0 ns (the shortest in the real exports here take 0.9 to 4 µs); an export whose
    kernels end where they start (damaged, or a tool that rewrote them) read as GPU busy 0 and a confident
    "framework-bound", with nothing said. The reader says how many kernels last 0 ns."""
    trace = read(_zero_length(5).write(tmp_path / "zero.synthetic.sqlite"))
    assert any("20 of 20 kernels last 0 ns" in w for w in trace.meta["warnings"])


def test_a_few_kernels_that_last_no_time_are_not_said(tmp_path: Path) -> None:
    trace = read(_zero_length(0).write(tmp_path / "timed.synthetic.sqlite"))
    assert not any("last 0 ns" in w for w in trace.meta["warnings"])


def test_kernels_that_last_no_time_make_the_verdict_uncertain(tmp_path: Path) -> None:
    a = tracekit.analyze(_zero_length(5).write(tmp_path / "zero.synthetic.sqlite"))
    assert a.verdict is None or any("uncertain" in w for w in a.warnings)


def test_launch_calls_without_kernels_under_a_versioned_table_name(tmp_path: Path) -> None:
    """The launch-call count of an export without device ops looks in the API tables under the name the
    export holds them (``CUPTI_ACTIVITY_KIND_RUNTIME_V2``), as every other read does."""
    b = NsysBuilder()
    for i in range(STEPS):
        t0 = i * 1000 * US
        b.nvtx_range(t0, t0 + 500 * US, "iteration")
        b.nvtx_range(t0 + 5 * US, t0 + 400 * US, "aten::mm")
        b.runtime(t0 + 10 * US, t0 + 15 * US, "cudaLaunchKernel_v7000", correlation=i + 1)
    path = b.write(tmp_path / "versioned.synthetic.sqlite")
    with sqlite3.connect(path) as con:
        con.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_RUNTIME RENAME TO CUPTI_ACTIVITY_KIND_RUNTIME_V2")
    trace = read(path)
    assert trace.meta["device"] == "gpu" and trace.ops.height == 0
    assert any(f"records {STEPS} kernel launch calls" in w for w in trace.meta["warnings"])
