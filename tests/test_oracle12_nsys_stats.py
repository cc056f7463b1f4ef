"""Differential test: tracekit's Nsight Systems numbers against NVIDIA's own ``nsys stats`` reports.

On each export (the committed real and synthetic samples, the real exports of ../shared/real_traces/nsys,
hand-built exports), per name: kernels (count, total, min, max ns: ``gpukernsum``), memcpy/memset
(``gpumemtimesum``), CUDA API calls (count, total: ``cudaapisum``), NVTX ranges (count, total, min, max:
``nvtxsum``) and tracekit's iterations (against nsys's ``iteration`` range row) must be equal, exactly, where
the definitions coincide (:mod:`tests.nsys_stats_oracle` lists where they do not; the tests at the end pin
each such difference on a hand-built export, both sides' numbers exact).

Each report runs once per export (cached for the module). Skipped when nsys is not installed, when a report
is not in the installed version, and (the shared exports) when ../shared/real_traces is absent.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import tracekit
from tests import nsys_stats_oracle as o
from tests.conftest import SAMPLE_TRACES, inflated, real_trace
from tests.nsys_builder import NsysBuilder
from tracekit.model import LAUNCH_API_NAMES
from tracekit.readers import read_trace

pytestmark = pytest.mark.skipif(o.NSYS is None, reason="nsys (Nsight Systems) is not installed")


@dataclass(frozen=True)
class Case:
    """An export and what is known of it: the totals over all names (kernels, memory ops, API calls,
    closed NVTX ranges; each checked against both sides so that an empty comparison cannot pass), the NVTX
    tags with a never-closed range, and whether it has 'iteration' ranges."""

    where: str  # "sample" (committed), "real" (../shared), "hand" (built here)
    rel: str
    kernels: int
    memops: int
    api: int
    ranges: int
    unclosed: frozenset[str] = field(default_factory=frozenset)
    iterations: int = 0
    launches: int = 0  # launch calls, all inside the iterations
    kernexec: bool = False  # compare launch medians with kernexectrace (single-process exports with launches)
    pptrace: bool = True  # nsys's nesting levels hold (small timestamps: test_nsys_pptrace_levels_*)
    in_start_end: frozenset[str] = field(default_factory=frozenset)  # push/pop tags inside a start/end range
    gputrace: bool = False  # compare every GPU op with gputrace (a few s per 4,000 ops: chosen exports)


CASES: dict[str, Case] = {
    "sample-h200-pytorch": Case(
        "sample", "h200_bert_fp16/nsys-pytorch/pytorch_b1_s128.nsys.sqlite.gz", 4040, 240, 10043, 24060,
        iterations=20, launches=4040, kernexec=True,
    ),
    "sample-h200-cuda-graphs": Case(
        "sample", "h200_bert_fp16/nsys-cuda-graphs/cuda-graphs_b1_s128.nsys.sqlite.gz", 4040, 240, 62, 20,
        iterations=20, launches=20, kernexec=True, gputrace=True,
    ),
    "sample-cpu-onnx": Case(
        "sample", "cpu_onnx_bert_nsys/onnx_b1_s128.nsys.sqlite.gz", 0, 0, 0, 30, iterations=20
    ),
    "sample-synthetic-pytorch": Case(
        "sample", "synthetic/table3_pytorch/pytorch_b1_s128.synthetic.sqlite", 4000, 0, 4010, 10,
        iterations=10, launches=4000, kernexec=True, gputrace=True,
    ),
    "real-2022.4-nvtx-only": Case(
        "real", "local_nvtx_only_cpu_2022.4.sqlite", 0, 0, 0, 18, frozenset({"unterminated_push"}),
        iterations=4,
    ),
    "real-2024.6-nvfuser": Case("real", "nvfuser_h200_2024.6.sqlite", 19, 2, 968, 652, gputrace=True),
    "real-2025.1-nvfuser": Case(
        "real", "nvfuser_h200_crossentropy_2025.1.sqlite", 18, 6, 990, 13513, pptrace=False, gputrace=True
    ),
    # gputrace fails on this one ("no such table: TARGET_INFO_GPU": the derived export has none)
    "real-2026.2-2gpu": Case(
        "real", "nsysai_h100_2gpu_1s_fastvideo_2026.2.sqlite", 3442, 926, 5796, 16782, pptrace=False
    ),
    "hand-2proc-2gpu": Case(
        "hand", "two_processes", 12, 12, 42, 13, frozenset({"lib100:open"}), 6, 12,
        in_start_end=frozenset({"lib100:open"}), gputrace=True,
    ),
}  # fmt: skip


def build_two_processes(path: Path) -> Path:
    """Two processes, each on its own GPU, each with an NVTX domain of id 1 under its own name, 3
    iterations; versioned API names (``_v7000``, ``_v11060``, ``_v2_v12000``), a driver call, pageable and
    device copies, memsets, a start/end range ended on another thread, a push never popped."""
    b = NsysBuilder()
    b.meta("TRACEKIT_SYNTHETIC", "1")
    b.gpu(0, "NVIDIA H100")
    b.gpu(1, "NVIDIA H100")
    b.mem_kinds()
    for pid, dev in ((100, 0), (200, 1)):
        b.nvtx_domain(50, 1, f"lib{pid}", pid=pid)
        for i in range(3):
            t0 = 1_000 + i * 10_000 + pid
            c = pid * 100 + i * 10
            b.nvtx_range(t0, t0 + 8_000 + 100 * i, "iteration", pid=pid)
            b.nvtx_range(t0 + 10, t0 + 3_000 + i, registered="fwd", domain=1, pid=pid)
            b.runtime(t0 + 20, t0 + 520 + i, "cudaLaunchKernel_v7000", correlation=c + 1, pid=pid)
            b.kernel(t0 + 600, t0 + 1_600 + 7 * i, "gemm", correlation=c + 1, device=dev, pid=pid)
            b.runtime(t0 + 700, t0 + 900, "cudaLaunchKernelExC_v11060", correlation=c + 2, pid=pid)
            b.kernel(t0 + 1_700, t0 + 2_100 + pid, "softmax", correlation=c + 2, device=dev, pid=pid)
            b.runtime(t0 + 1_000, t0 + 1_050, "cudaMemcpyAsync_v3020", correlation=c + 3, pid=pid)
            src = 0 if pid == 100 else 2  # pageable -> device (tracekit names the pageable side)
            b.memcpy(
                t0 + 2_200, t0 + 2_500 + i, correlation=c + 3, device=dev, pid=pid, src_kind=src, dst_kind=2
            )
            b.runtime(t0 + 1_100, t0 + 1_130, "cudaMemsetAsync_v3020", correlation=c + 4, pid=pid)
            b.memset(t0 + 2_600, t0 + 2_700, correlation=c + 4, device=dev, pid=pid)
            b.runtime(
                t0 + 1_200, t0 + 1_700 + i, "cudaGetDeviceProperties_v2_v12000", correlation=c + 5, pid=pid
            )
            b.driver(t0 + 1_800, t0 + 1_810, "cuGetProcAddress_v2", correlation=c + 6, pid=pid)
            b.runtime(t0 + 2_000, t0 + 7_000, "cudaStreamSynchronize_v3020", correlation=c + 7, pid=pid)
    b.nvtx_range(40_000, 40_500, "cross", start_end=True, end_tid=101)
    b.nvtx_range(40_100, None, "open", domain=1)  # never popped: nsys lasts it to the last NVTX timestamp
    return b.write(path)


class Oracle:
    """One export: its reports (each run once) and tracekit's reading and analysis of it (once)."""

    def __init__(self, name: str, path: Path) -> None:
        self.name, self.path, self.case = name, path, CASES[name]

    @functools.cached_property
    def trace(self) -> Any:
        return read_trace(self.path)

    @functools.cached_property
    def analysis(self) -> Any:
        return tracekit.analyze(self.path)

    @functools.cache  # noqa: B019 (one Oracle per export, kept for the module)
    def report(self, report: str) -> list[dict[str, str]]:
        rows = o.nsys_report(self.path, report)
        if rows is None:
            pytest.skip(f"this nsys has no report {report!r}")
        return rows


@pytest.fixture(scope="module")
def _built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Oracle]:
    return {}


@pytest.fixture(scope="module", params=list(CASES))
def oracle(request: pytest.FixtureRequest, _built: dict[str, Oracle], tmp_path_factory) -> Oracle:
    name = request.param
    if name not in _built:
        case = CASES[name]
        if case.where == "sample":
            path = SAMPLE_TRACES / case.rel
            path = inflated(path) if path.suffix == ".gz" else path
        elif case.where == "real":
            path = real_trace("nsys", case.rel)
        else:
            path = build_two_processes(tmp_path_factory.mktemp("oracle12") / "two_processes.sqlite")
        _built[name] = Oracle(name, path)
    return _built[name]


def _total(summary: dict[str, tuple[int, ...]]) -> int:
    return sum(v[0] for v in summary.values())


def test_kernels_per_name_equal_gpukernsum(oracle: Oracle) -> None:
    nsys = o.kernels_nsys(oracle.report("gpukernsum"))
    ours = o.kernels_tracekit(oracle.trace.ops)
    assert ours == nsys
    if oracle.case.kernels:
        assert _total(nsys) == oracle.case.kernels


def test_memory_ops_per_name_equal_gpumemtimesum(oracle: Oracle) -> None:
    nsys = o.memops_nsys(oracle.report("gpumemtimesum"))
    assert o.memops_tracekit(oracle.trace.ops) == nsys
    if oracle.case.memops:
        assert _total(nsys) == oracle.case.memops


def test_api_calls_per_name_equal_cudaapisum(oracle: Oracle) -> None:
    nsys = o.api_nsys(oracle.report("cudaapisum"))
    assert o.api_tracekit(oracle.trace.api) == nsys
    if oracle.case.api:
        assert _total(nsys) == oracle.case.api


def test_nvtx_ranges_per_name_equal_nvtxsum(oracle: Oracle) -> None:
    """Closed ranges equal per tag; the never-closed ones are the expected ones (nsys lasts them to the
    largest NVTX timestamp, tracekit gives them no end)."""
    nsys = o.nvtx_nsys(oracle.report("nvtxsum"))
    ours = o.nvtx_tracekit(oracle.trace.ranges)
    unclosed = o.unclosed_tags(oracle.trace.ranges)
    assert unclosed == oracle.case.unclosed
    assert ours == {k: v for k, v in nsys.items() if k not in unclosed}
    if oracle.case.ranges:
        assert _total(nsys) - len(unclosed) == oracle.case.ranges


def test_iterations_equal_nvtxsum_iteration_row(oracle: Oracle) -> None:
    """tracekit's iterations (NVTX ranges named 'iteration') have nsys's count, total, min and max."""
    if not oracle.case.iterations:
        assert "iteration" not in o.nvtx_nsys(oracle.report("nvtxsum"))
        return
    nsys = o.nvtx_nsys(oracle.report("nvtxsum"))["iteration"]
    assert o.iterations_tracekit(oracle.analysis.iterations) == nsys
    assert nsys[0] == oracle.case.iterations


def test_launch_calls_in_iterations_equal_cudaapisum(oracle: Oracle) -> None:
    """Where every launch call is inside an iteration: the iterations' launch calls and their CPU time
    (``launches``, ``launch_api_us``) add up to nsys's count and total of the launch APIs."""
    if not oracle.case.iterations:
        pytest.skip("no iterations")
    api = o.api_nsys(oracle.report("cudaapisum"))
    launch = [name for name in api if name in LAUNCH_API_NAMES]
    its = oracle.analysis.iterations
    assert int(its.get_column("launches").sum()) == sum(api[n][0] for n in launch) == oracle.case.launches
    assert round(its.get_column("launch_api_us").sum() * 1000) == sum(api[n][1] for n in launch)


def test_launch_latency_and_queue_equal_kernexectrace(oracle: Oracle) -> None:
    """Per iteration: tracekit's launches, launch latency and queue time (medians over the first op of each
    launch call) equal those computed from nsys's per-kernel launch trace (``kernexectrace``): over kernel and graph
    launch calls only, a copy or memset call in neither (the memsets of the H200 eager sample included)."""
    if not oracle.case.kernexec:
        pytest.skip("no kernel launches in iterations, or several processes")
    its = oracle.analysis.iterations
    nsys = o.launch_medians(oracle.report("kernexectrace"), its)
    ours = list(zip(its["launches"], its["launch_latency_us"], its["queue_us"], strict=True))
    assert [(n, pytest.approx(lat, abs=1e-9), pytest.approx(q, abs=1e-9)) for n, lat, q in nsys] == ours


def test_kernels_in_iterations_equal_nvtxkernsum(oracle: Oracle) -> None:
    """tracekit's kernels per iteration (those whose launch call starts in it) add up to nsys's kernels
    launched inside 'iteration' ranges (``nvtxkernsum``: by launch call, like tracekit: a kernel launched
    before the range and run inside it counts in neither)."""
    if not oracle.case.launches:
        pytest.skip("no kernel launches in iterations")
    rows = [r for r in oracle.report("nvtxkernsum") if r["NVTX Range"] == "iteration"]
    kernels = oracle.analysis.iterations.get_column("kernels")
    assert int(kernels.sum()) == sum(int(r["Kern Inst"]) for r in rows) > 0
    ranges = {(r["PID"], r["TID"]): int(r["NVTX Inst"]) for r in rows}  # 'iteration' ranges per thread
    assert sum(ranges.values()) == oracle.case.iterations


def test_push_pop_ranges_and_depth_equal_nvtxpptrace(oracle: Oracle) -> None:
    """Every push/pop range of nsys's trace is one of tracekit's ranges, with its end and its nesting depth
    (ranges of the thread still open at its start, any domain); tracekit's other ranges are start/end ones."""
    if not oracle.case.pptrace:
        pytest.skip("timestamps past nsys's float32 R-tree precision: its levels are wrong here")
    nsys = o.pptrace_frame(oracle.report("nvtxpptrace"))
    ranges = oracle.trace.ranges
    ours = ranges.select(
        "start", "end", "pid", "thread", tag=o.nvtx_tag(pl.col("domain"), pl.col("name")),
        level=pl.col("depth").cast(pl.Int64),
    )  # fmt: skip
    joined = nsys.join(ours, on=["start", "tag", "pid", "thread"], how="left", suffix="_tk")
    closed = joined.filter(~pl.col("tag").is_in(list(oracle.case.unclosed)))
    assert closed.filter(pl.col("end").ne_missing(pl.col("end_tk"))).height == 0
    # tracekit's depth counts the start/end ranges open on the thread too, nsys's level push/pop ones only
    deeper = joined.filter(pl.col("level").ne_missing(pl.col("level_tk")))
    assert set(deeper["tag"]) == oracle.case.in_start_end
    assert (deeper["level_tk"] - deeper["level"]).to_list() == [1] * deeper.height
    start_end = o.nvtx_nsys([r for r in oracle.report("nvtxsum") if r["Style"] == "StartEnd"])
    assert ranges.height - nsys.height == _total(start_end)


def test_gpu_ops_row_by_row_equal_gputrace(oracle: Oracle) -> None:
    """Every kernel, memcpy and memset, one by one: start, duration, correlation id, device, stream and name
    (memory ops under nsys's names) equal nsys's GPU trace (``gputrace``), as multisets."""
    if not oracle.case.gputrace:
        pytest.skip("gputrace not run on this export (time, or the report fails on it)")
    nsys = o.gputrace_frame(oracle.report("gputrace"))
    ours = oracle.trace.ops.filter(pl.col("kind").is_in(["kernel", "memcpy", "memset"])).select(
        "start",
        dur=pl.col("end") - pl.col("start"),
        correlation=pl.col("correlation"),
        device=pl.col("device").cast(pl.Int64),
        stream=pl.col("stream"),
        name=pl.col("name").map_elements(o.memop_key, return_dtype=pl.String),
    )
    assert nsys.height == oracle.case.kernels + oracle.case.memops
    assert ours.sort(ours.columns, nulls_last=True).equals(nsys.sort(nsys.columns, nulls_last=True))


# --- where the definitions differ: each difference pinned on a hand-built export, both sides exact


def test_report_missing_from_this_nsys_is_none(tmp_path: Path) -> None:
    """A report the installed nsys lacks gives None (its tests skip), not an empty comparison."""
    b = NsysBuilder()
    b.kernel(10, 20, "k", correlation=1)
    assert o.nsys_report(b.write(tmp_path / "t.sqlite"), "no_such_report_oracle12") is None


def test_differences_api_suffixes_and_memcpy_names(tmp_path: Path) -> None:
    """nsys strips only a four-digit ``_vNNNN`` from API names, tracekit any one ``_v<digits>``; nsys names a
    copy by direction only, tracekit adds pageable memory's side and spells managed copies otherwise."""
    b = NsysBuilder()
    b.mem_kinds()
    b.runtime(0, 10, "cudaLaunchKernel_v7000", correlation=1)
    b.runtime(20, 50, "cudaLaunchKernelExC_v11060", correlation=2)
    b.runtime(60, 100, "cudaGetDeviceProperties_v2_v12000", correlation=3)
    b.driver(110, 115, "cuGetProcAddress_v2", correlation=4)
    b.memcpy(200, 260, copy_kind=1, src_kind=0, dst_kind=2, correlation=5)
    b.memcpy(300, 310, copy_kind=1, src_kind=1, dst_kind=2, correlation=6)
    b.memcpy(400, 450, copy_kind=11, correlation=7)
    path = b.write(tmp_path / "names.sqlite")
    raw = {r["Name"]: int(r["Total Time (ns)"]) for r in o.nsys_report(path, "cudaapisum") or []}
    assert raw == {
        "cudaLaunchKernel": 10,
        "cudaLaunchKernelExC_v11060": 30,
        "cudaGetDeviceProperties_v2_v12000": 40,
        "cuGetProcAddress_v2": 5,
    }
    trace = read_trace(path)
    ours = dict(
        zip(trace.api.get_column("name"), (trace.api["end"] - trace.api["start"]).to_list(), strict=True)
    )
    assert ours == {
        "cudaLaunchKernel": 10,
        "cudaLaunchKernelExC": 30,
        "cudaGetDeviceProperties_v2": 40,
        "cuGetProcAddress": 5,
    }
    assert o.api_tracekit(trace.api) == o.api_nsys(o.nsys_report(path, "cudaapisum") or [])
    mem = {r["Operation"]: int(r["Count"]) for r in o.nsys_report(path, "gpumemtimesum") or []}
    assert mem == {"[CUDA memcpy HtoD]": 2, "[CUDA Unified Memory memcpy HtoD]": 1}
    assert sorted(trace.ops.get_column("name")) == [
        "[CUDA memcpy HtoD (Pageable -> Device)]",
        "[CUDA memcpy HtoD]",
        "[CUDA memcpy Unified HtoD]",
    ]
    assert o.memops_tracekit(trace.ops) == o.memops_nsys(o.nsys_report(path, "gpumemtimesum") or [])


def test_differences_nsys_2022_4_rows(tmp_path: Path) -> None:
    """A 2022.4 export: each call written twice (the "CUDA backtrace" row, same correlation id), a kernel
    CUPTI could not time (start = end = 0), a push never popped that nsys 2022.4 ends at the capture's end.
    nsys counts both rows of a call, the untimed kernel (0 ns) and the open range (to the last NVTX
    timestamp); tracekit one row per call, the untimed kernel counted with no time (warned: in no duration), no
    end for the open range (warned)."""
    b = NsysBuilder(
        version="2022.4.2.1",
        meta_table="EXPORT_META_DATA",
        drop_columns={"CUPTI_ACTIVITY_KIND_KERNEL": ["graphId"]},
    )
    b.capture(10_000, start_time=0)
    for i in range(3):
        t0 = 100 + i * 1000
        b.nvtx_range(t0, t0 + 900, "iteration")
        b.runtime(t0 + 10, t0 + 110, "cudaLaunchKernel", correlation=i + 1, event_class=67)
        b.runtime(t0 + 20, t0 + 100, "cudaLaunchKernel_v7000", correlation=i + 1)
        b.kernel(t0 + 200, t0 + 300 + i, "k", correlation=i + 1)
    b.nvtx_range(5000, 10_000, "open_push")
    b.kernel(0, 0, "k", correlation=99)
    path = b.write(tmp_path / "old.sqlite")
    trace = read_trace(path)
    assert o.kernels_nsys(o.nsys_report(path, "gpukernsum") or []) == {"k": (4, 303, 0, 102)}
    assert o.kernels_tracekit(trace.ops) == {"k": (4, 303, 100, 102)}
    assert o.api_nsys(o.nsys_report(path, "cudaapisum") or []) == {"cudaLaunchKernel": (6, 540)}
    assert o.api_tracekit(trace.api) == {"cudaLaunchKernel": (3, 300)}  # the outermost row of each call
    nvtx = o.nvtx_nsys(o.nsys_report(path, "nvtxsum") or [])
    assert nvtx == {"iteration": (3, 2700, 900, 900), "open_push": (1, 5000, 5000, 5000)}
    assert o.nvtx_tracekit(trace.ranges) == {"iteration": (3, 2700, 900, 900)}
    assert o.unclosed_tags(trace.ranges) == {"open_push"}
    assert o.iterations_tracekit(tracekit.analyze(path).iterations) == nvtx["iteration"]
    warned = " ".join(trace.meta["warnings"])
    assert "no timestamps" in warned and "never closed" in warned


def test_differences_nvtx_domains_and_names(tmp_path: Path) -> None:
    """A domain without create event: nsys tags the bare name, tracekit's domain is its id; a domain named
    "gpu": tracekit's domain is "gpu (NVTX)"; an event with both ``text`` and a registered string: nsys
    takes the registered string, tracekit the text (no real export seen has both)."""
    b = NsysBuilder()
    b.nvtx_domain(5, 2, "gpu")
    b.nvtx_range(10, 100, "iteration")
    b.nvtx_range(20, 50, "a", domain=3)
    b.nvtx_range(20, 60, "g", domain=2)
    b.add(
        "NVTX_EVENTS", start=200, end=300, eventType=59, text="txt", textId=b.string("reg"),
        globalTid=(100 << 24) | 100, domainId=0,
    )  # fmt: skip
    path = b.write(tmp_path / "domains.sqlite")
    trace = read_trace(path)
    assert o.nvtx_nsys(o.nsys_report(path, "nvtxsum") or []) == {
        "iteration": (1, 90, 90, 90),
        "a": (1, 30, 30, 30),
        "gpu:g": (1, 40, 40, 40),
        "reg": (1, 100, 100, 100),
    }
    assert o.nvtx_tracekit(trace.ranges) == {
        "iteration": (1, 90, 90, 90),
        "3:a": (1, 30, 30, 30),
        "gpu (NVTX):g": (1, 40, 40, 40),
        "txt": (1, 100, 100, 100),
    }


def test_differences_whole_graph_rows(tmp_path: Path) -> None:
    """``--cuda-graph-trace=graph``: a replay is one CUPTI_ACTIVITY_KIND_GRAPH_TRACE row, in no nsys kernel
    or memory report; tracekit keeps it as an op of kind "graph" (GPU busy over it, with a warning)."""
    b = NsysBuilder()
    for i in range(2):
        t0 = 100 + i * 1000
        b.nvtx_range(t0, t0 + 900, "iteration")
        b.runtime(t0 + 10, t0 + 110, "cudaGraphLaunch_v10000", correlation=i + 1)
        b.graph_execution(t0 + 200, t0 + 600, graph=5, correlation=i + 1)
    path = b.write(tmp_path / "graphs.sqlite")
    trace = read_trace(path)
    assert o.nsys_report(path, "gpukernsum") == []
    assert o.nsys_report(path, "gpumemtimesum") == []
    assert o.kernels_tracekit(trace.ops) == {}
    graphs = trace.ops.filter(pl.col("kind") == "graph")
    assert graphs.height == 2 and (graphs["end"] - graphs["start"]).to_list() == [400, 400]
    assert (
        o.api_tracekit(trace.api)
        == o.api_nsys(o.nsys_report(path, "cudaapisum") or [])
        == {"cudaGraphLaunch": (2, 200)}
    )


def _launches_and_a_memset(path: Path) -> Path:
    """One iteration [0, 10000): two kernel launches (first op 1100 and 2100 ns after its call began, 1000
    and 2000 ns after it returned), and a cudaMemsetAsync whose memset starts 5100 ns after the call."""
    b = NsysBuilder()
    b.nvtx_range(0, 10_000, "iteration")
    b.runtime(100, 200, "cudaLaunchKernel_v7000", correlation=1)
    b.kernel(1_200, 1_300, "a", correlation=1)
    b.runtime(300, 400, "cudaLaunchKernel_v7000", correlation=2)
    b.kernel(2_400, 2_500, "b", correlation=2)
    b.runtime(500, 600, "cudaMemsetAsync_v3020", correlation=3)
    b.memset(5_600, 5_700, correlation=3)
    return b.write(path)


def test_kernexectrace_launch_medians_on_known_truth(tmp_path: Path) -> None:
    """The oracle's own check: nsys's kernel launch trace gives the hand-computed launch medians, and
    tracekit counts the two launch calls (the memset call is no launch)."""
    path = _launches_and_a_memset(tmp_path / "launches.sqlite")
    its = tracekit.analyze(path).iterations
    assert o.launch_medians(o.nsys_report(path, "kernexectrace") or [], its) == [(2, 1.6, 1.5)]
    assert its["launches"].to_list() == [2]


def test_launch_latency_is_over_the_launch_calls_only(tmp_path: Path) -> None:
    """Before 2026-11-28 tracekit gave (2, 2.1, 2.0): the memset call's 5100/5000 ns entered the medians of
    two launches (launch latency and queue time are over the launch calls `launches` counts)."""
    path = _launches_and_a_memset(tmp_path / "launches.sqlite")
    its = tracekit.analyze(path).iterations
    assert list(zip(its["launches"], its["launch_latency_us"], its["queue_us"], strict=True)) == [
        (2, 1.6, 1.5)
    ]


def test_kernels_by_launch_call_as_nvtxkernsum(tmp_path: Path) -> None:
    """A kernel launched inside an iteration and run after it counts in that iteration; one launched before
    an iteration (outside any) and run inside it counts in none: nsys's nvtxkernsum and tracekit agree."""
    b = NsysBuilder()
    b.nvtx_range(0, 1000, "iteration")
    b.runtime(100, 200, "cudaLaunchKernel_v7000", correlation=1)
    b.kernel(1500, 1600, "late", correlation=1)
    b.nvtx_range(2000, 3000, "iteration")
    b.runtime(1800, 1900, "cudaLaunchKernel_v7000", correlation=2)
    b.kernel(2100, 2200, "early", correlation=2)
    b.runtime(2100, 2150, "cudaLaunchKernel_v7000", correlation=3)
    b.kernel(2300, 2400, "in", correlation=3)
    path = b.write(tmp_path / "async.sqlite")
    rows = o.nsys_report(path, "nvtxkernsum") or []
    assert sorted((r["NVTX Range"], r["Kernel Name"], int(r["Kern Inst"])) for r in rows) == [
        ("None", "early", 1),
        ("iteration", "in", 1),
        ("iteration", "late", 1),
    ]
    its = tracekit.analyze(path).iterations
    assert its["kernels"].to_list() == [1, 1]
    assert its["gpu_busy_ms"].to_list() == [pytest.approx(1e-4), pytest.approx(1e-4)]


def test_nsys_pptrace_levels_fail_at_large_timestamps(tmp_path: Path) -> None:
    """nsys's own nvtxpptrace (2022.4) finds parents through an R-tree of float32 timestamps: past ~2^33 ns
    it misses a parent (seen on the 2025.1 and 2026.2 shared exports: 7,317 and 1,930 levels too low).
    A child 5 us inside its parent at t = 155.357 s: nsys gives level 0, tracekit depth 1 (exact)."""
    b = NsysBuilder()
    b.string("StringIds is a table every report needs")
    t0 = 155_357_647_753
    b.nvtx_range(t0, t0 + 2_668_835, "reshape")
    b.nvtx_range(t0 + 5_005, t0 + 2_662_833, "clone")
    path = b.write(tmp_path / "late.sqlite")
    nsys = o.pptrace_frame(o.nsys_report(path, "nvtxpptrace") or [])
    assert sorted(zip(nsys["tag"], nsys["level"], strict=True)) == [("clone", 0), ("reshape", 0)]
    ranges = read_trace(path).ranges
    assert sorted(zip(ranges["name"], ranges["depth"], strict=True)) == [("clone", 1), ("reshape", 0)]
