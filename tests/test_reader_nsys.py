"""Nsight Systems SQLite reader: hand-built exports with exact expected frames, plus every real export."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import real_trace
from tests.nsys_builder import NsysBuilder
from tracekit.errors import TraceFormatError
from tracekit.readers import read_trace
from tracekit.readers.nsys_sqlite import read, with_nesting


def rows(frame: pl.DataFrame, *cols: str) -> list[tuple]:
    return [tuple(r) for r in frame.select(cols).iter_rows()]


# ------------------------------------------------------------------------------------------- GPU side


def test_ops_and_api_exact(tmp_path: Path) -> None:
    b = NsysBuilder(version="2024.6.2.25")
    b.gpu(0, "NVIDIA H100 80GB HBM3")
    b.env("NvDriverVersion", "565.57.01")
    b.env("CudaDriverVersion", "12080")
    b.runtime(100, 150, "cudaMemcpyAsync_v3020", correlation=1, pid=42, tid=43)
    b.runtime(200, 230, "cudaLaunchKernel_v7000", correlation=2, pid=42, tid=43)
    b.driver(240, 260, "cuLaunchKernel", correlation=3, pid=42, tid=43)
    b.runtime(270, 280, "cudaGetDeviceProperties_v2_v12000", correlation=4, pid=42, tid=43)
    b.runtime(300, 900, "cudaStreamSynchronize_v3020", correlation=5, pid=42, tid=43)
    b.memcpy(160, 190, copy_kind=1, correlation=1, pid=42, stream=13)
    b.kernel(250, 400, "void gemm<float>(float*)", short_name="gemm", correlation=2, pid=42, stream=13)
    b.kernel(410, 500, "flash_fwd", correlation=3, pid=42, stream=14, graph=9)
    b.memset(510, 520, correlation=None, pid=42, stream=14)
    b.memcpy(600, 650, copy_kind=2, correlation=None, pid=42, stream=13)
    trace = read(b.write(tmp_path / "gpu.sqlite"))

    assert rows(
        trace.ops, "start", "end", "device", "stream", "pid", "correlation", "graph", "kind", "name"
    ) == [
        (160, 190, 0, 13, 42, 1, None, "memcpy", "[CUDA memcpy HtoD]"),
        (250, 400, 0, 13, 42, 2, None, "kernel", "void gemm<float>(float*)"),
        (410, 500, 0, 14, 42, 3, 9, "kernel", "flash_fwd"),
        (510, 520, 0, 14, 42, None, None, "memset", "[CUDA memset]"),
        (600, 650, 0, 13, 42, None, None, "memcpy", "[CUDA memcpy DtoH]"),
    ]
    assert rows(trace.api, "start", "end", "pid", "thread", "correlation", "kind", "name") == [
        (100, 150, 42, 43, 1, "runtime", "cudaMemcpyAsync"),
        (200, 230, 42, 43, 2, "runtime", "cudaLaunchKernel"),
        (240, 260, 42, 43, 3, "driver", "cuLaunchKernel"),
        (270, 280, 42, 43, 4, "runtime", "cudaGetDeviceProperties_v2"),
        (300, 900, 42, 43, 5, "runtime", "cudaStreamSynchronize"),
    ]
    assert trace.ops.schema["start"] == pl.Int64 and trace.api.schema["correlation"] == pl.Int64
    meta = trace.meta
    assert meta["format"] == "nsys-sqlite"
    assert meta["format_version"] == "2024.6.2.25"
    assert meta["device"] == "gpu"
    assert meta["gpu"] == "NVIDIA H100 80GB HBM3"
    assert meta["gpus"] == [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}]
    assert meta["driver"] == "565.57.01"
    assert meta["cuda_driver"] == "12.8"
    assert meta["synthetic"] is False
    assert meta["warnings"] == []


def _graph_replays(tmp_path: Path, level: str) -> Path:
    """Two iterations of one CUDA graph replay (graph 5) traced at ``level``: "node" (its three kernels) or
    "graph" (one whole-graph row, nsys --cuda-graph-trace=graph); "graph" adds an untimed row (start = end = 0)."""
    b = NsysBuilder(version="2024.6.2.25")
    b.gpu(0, "NVIDIA H100 80GB HBM3")
    for i, t in enumerate((1000, 3000)):
        b.nvtx_range(t, t + 1000, "iteration")
        b.runtime(t + 100, t + 150, "cudaGraphLaunch_v10000", correlation=i + 1)
        if level == "node":
            for start, end in ((200, 300), (310, 500), (510, 800)):
                b.kernel(t + start, t + end, f"k{start}", correlation=i + 1, graph=5)
        else:
            b.graph_execution(t + 200, t + 800, graph=5, correlation=i + 1)
    if level == "graph":
        b.graph_execution(0, 0, graph=5, correlation=9)
    return b.write(tmp_path / f"{level}.sqlite")


def test_whole_graph_executions_are_device_ops_with_a_warning(tmp_path: Path) -> None:
    # nsys's default --cuda-graph-trace=graph records a graph replay as one row and none of its kernels: read
    # alone, the kernel table said the GPU was idle through a CUDA-graph runtime (framework-bound, wrongly)
    from tracekit.analyzers.iterations import analyze_iterations

    trace = read(_graph_replays(tmp_path, "graph"))
    assert rows(
        trace.ops, "start", "end", "device", "stream", "pid", "correlation", "graph", "kind", "name"
    ) == [
        (None, None, 0, 7, 100, 9, 5, "graph", "CUDA graph 5"),  # CUPTI could not time it: kept, untimed
        (1200, 1800, 0, 7, 100, 1, 5, "graph", "CUDA graph 5"),
        (3200, 3800, 0, 7, 100, 2, 5, "graph", "CUDA graph 5"),
    ]
    assert trace.meta["device"] == "gpu"
    assert any(w.startswith("3 CUDA graph executions were traced whole") for w in trace.warnings)
    assert (
        "1 graph rows have no timestamps (start and end 0: CUPTI could not time them): they count in the "
        "iterations their launch calls lie in, with no start or end time (not in any busy time)"
        in trace.warnings
    )
    whole = analyze_iterations(trace, "iteration").iterations
    nodes = analyze_iterations(read(_graph_replays(tmp_path, "node")), "iteration").iterations
    assert whole["latency_ms"].to_list() == nodes["latency_ms"].to_list() == [0.001, 0.001]
    assert whole["gpu_busy_ms"].to_list() == [0.0006, 0.0006]  # the graph's span: its inner gaps are not seen
    assert nodes["gpu_busy_ms"].to_list() == [0.00058, 0.00058]
    assert whole["launches"].to_list() == nodes["launches"].to_list() == [1, 1]
    assert whole["launch_latency_us"].to_list() == nodes["launch_latency_us"].to_list() == [0.1, 0.1]
    assert whole["kernels"].to_list() == [0, 0] and nodes["kernels"].to_list() == [3, 3]


def test_rows_cupti_could_not_time_are_kept_untimed(tmp_path: Path) -> None:
    # CUPTI writes start = end = 0 for an activity it could not time: kept as they are, such a row put an op at
    # the session's start, so a trace without ranges (one window, first launch to last op end) began at 0; left
    # out, an iteration that launched one read one kernel fewer and its busy time as known. Kept untimed (null
    # start and end), they count where their launch calls lie, in no busy time.
    b = NsysBuilder()
    b.runtime(1000, 1050, "cudaLaunchKernel_v7000", correlation=1)
    b.kernel(1100, 1300, "gemm", correlation=1)
    b.kernel(0, 0, "lost", correlation=2)
    b.memcpy(0, 0, copy_kind=1)
    trace = read(b.write(tmp_path / "untimed.sqlite"))
    assert sorted(rows(trace.ops, "start", "end", "name"), key=str) == [
        (1100, 1300, "gemm"),
        (None, None, "[CUDA memcpy HtoD]"),
        (None, None, "lost"),
    ]
    kept = "they count in the iterations their launch calls lie in, with no start or end time (not in any busy time)"
    assert [w for w in trace.warnings if "no timestamps" in w] == [
        f"1 kernel rows have no timestamps (start and end 0: CUPTI could not time them): {kept}",
        f"1 memcpy rows have no timestamps (start and end 0: CUPTI could not time them): {kept}",
    ]
    # counted for the analysis too (plausibility.untimed_rows), which had parsed the warnings' words
    assert trace.meta["untimed_rows"] == {"kernel": 1, "memcpy": 1}


def test_duplicate_correlation_collapse(tmp_path: Path) -> None:
    """nsys 2022.4 writes each runtime call twice (plain "CUDA backtrace" row and the _v row, one correlation
    id): one row per (pid, correlation) survives, the outermost. Other processes and correlation 0/null
    rows are untouched."""
    b = NsysBuilder(version="2022.4.2.1", meta_table="EXPORT_META_DATA")
    b.runtime(1000, 1600, "cudaLaunchKernel", correlation=7, event_class=67)
    b.runtime(1010, 1590, "cudaLaunchKernel_v7000", correlation=7)
    b.runtime(2000, 2100, "cudaGraphLaunch_v10000", correlation=8)
    b.runtime(2000, 2300, "cudaGraphLaunch", correlation=8, event_class=67)  # same start, longer: outermost
    b.runtime(1005, 1300, "cudaLaunchKernel_v7000", correlation=7, pid=101, tid=101)  # other process
    b.runtime(3000, 3010, "cudaGetLastError_v3020", correlation=0)
    b.runtime(3020, 3030, "cudaGetLastError_v3020", correlation=0)
    b.runtime(3040, 3050, "cudaPeekAtLastError_v3020", correlation=None)
    b.kernel(1700, 1800, "k", correlation=7)
    trace = read(b.write(tmp_path / "dup.sqlite"))
    assert rows(trace.api, "start", "end", "pid", "correlation", "name") == [
        (1000, 1600, 100, 7, "cudaLaunchKernel"),
        (1005, 1300, 101, 7, "cudaLaunchKernel"),
        (2000, 2300, 100, 8, "cudaGraphLaunch"),
        (3000, 3010, 100, 0, "cudaGetLastError"),
        (3020, 3030, 100, 0, "cudaGetLastError"),
        (3040, 3050, 100, None, "cudaPeekAtLastError"),
    ]
    assert trace.meta["format_version"] == "2022.4.2.1"


def test_gpu_name_is_the_one_that_ran_most_kernels(tmp_path: Path) -> None:
    b = NsysBuilder()
    b.gpu(0, "NVIDIA A100-SXM4-40GB")
    b.gpu(1, "NVIDIA H100 80GB HBM3")
    b.kernel(0, 10, "a", device=0, correlation=1)
    b.kernel(20, 30, "b", device=1, correlation=2)
    b.kernel(40, 50, "c", device=1, correlation=3)
    trace = read(b.write(tmp_path / "two.sqlite"))
    assert trace.meta["gpu"] == "NVIDIA H100 80GB HBM3"
    assert trace.meta["gpus"] == [
        {"id": 0, "name": "NVIDIA A100-SXM4-40GB"},
        {"id": 1, "name": "NVIDIA H100 80GB HBM3"},
    ]


def test_synthetic_flag(tmp_path: Path) -> None:
    b = NsysBuilder()
    b.meta("TRACEKIT_SYNTHETIC", "1")
    b.kernel(0, 10, "k", correlation=1)
    assert read(b.write(tmp_path / "plain.sqlite")).meta["synthetic"] is True
    c = NsysBuilder()
    c.kernel(0, 10, "k", correlation=1)
    assert read(c.write(tmp_path / "plain2.sqlite")).meta["synthetic"] is False
    assert read(c.write(tmp_path / "bert_synthetic_bs1.sqlite")).meta["synthetic"] is True


# ----------------------------------------------------------------------------------------------- NVTX


def test_nvtx_names_domains_depth_and_unclosed(tmp_path: Path) -> None:
    b = NsysBuilder()
    b.nvtx_thread_name(1, "main")
    b.nvtx_domain(2, 1, "tracekit")
    b.nvtx_range(10, 100, registered="registered_iteration", domain=1)
    b.nvtx_range(11, 99, "iteration")
    b.nvtx_range(12, 50, "forward")
    b.nvtx_range(12, 30, "linear")  # same start as forward, shorter: nested inside it
    b.nvtx_range(30, 40, "relu")  # starts when linear ends: sibling of linear, not its child
    b.nvtx_mark(55, "between")
    b.nvtx_range(60, 98, "postprocess")
    b.nvtx_range(20, 70, "worker", tid=101)  # other thread: its own depth 0
    b.nvtx_range(65, 95, "cross", start_end=True, end_tid=101)
    b.nvtx_range(200, None, "never_popped")
    b.nvtx_range(250, 260, "inside_open")  # nested in the range never closed
    b.kernel(300, 400, "k", correlation=1)
    trace = read(b.write(tmp_path / "nvtx.sqlite"))
    assert rows(trace.ranges, "start", "end", "thread", "depth", "domain", "name") == [
        (10, 100, 100, 0, "tracekit", "registered_iteration"),
        (11, 99, 100, 1, "default", "iteration"),
        (12, 50, 100, 2, "default", "forward"),  # Trace orders by start, longest first: parent first
        (12, 30, 100, 3, "default", "linear"),
        (20, 70, 101, 0, "default", "worker"),
        (30, 40, 100, 3, "default", "relu"),
        (60, 98, 100, 2, "default", "postprocess"),
        (65, 95, 100, 3, "default", "cross"),
        (200, None, 100, 0, "default", "never_popped"),  # open to the end of the capture
        (250, 260, 100, 1, "default", "inside_open"),
    ]
    assert trace.ranges["pid"].unique().to_list() == [100]
    assert trace.warnings == [
        "1 NVTX range(s) never closed (the capture ended inside them, at 400 ns): they have no end time, so "
        "none of them is an iteration; ranges they enclose count them open to the trace end"
    ]


def test_cpu_only_trace_leaf_ranges_become_operators(tmp_path: Path) -> None:
    b = NsysBuilder(version="2022.4.2.1", meta_table="EXPORT_META_DATA")
    for t0 in (0, 1000):
        b.nvtx_range(t0, t0 + 900, "iteration")
        b.nvtx_range(t0 + 10, t0 + 500, "aten::linear")
        b.nvtx_range(t0 + 20, t0 + 400, "aten::addmm")
        b.nvtx_range(t0 + 600, t0 + 800, "aten::relu", tid=100)
    b.nvtx_range(5000, 5100, "lonely_top_level")
    trace = read(b.write(tmp_path / "cpu.sqlite"))
    assert trace.meta["device"] == "cpu"
    assert "gpu" not in trace.meta
    assert rows(
        trace.ops, "start", "end", "device", "stream", "pid", "correlation", "graph", "kind", "name"
    ) == [
        (20, 400, -1, 100, 100, None, None, "operator", "aten::addmm"),
        (600, 800, -1, 100, 100, None, None, "operator", "aten::relu"),
        (1020, 1400, -1, 100, 100, None, None, "operator", "aten::addmm"),
        (1600, 1800, -1, 100, 100, None, None, "operator", "aten::relu"),
    ]
    assert trace.api.height == 0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(1, 5), st.integers(1, 3), st.booleans()),
        min_size=1,
        max_size=25,
    )
)
def test_depth_of_properly_nested_ranges_is_the_stack_height(steps: list[tuple[int, int, int, bool]]) -> None:
    """Push/pop sequences on two threads: depth equals the stack height at the push (reference loop).
    ``touch`` makes the next push start at the instant of the last pop (a sibling, not a child)."""
    out = []
    clock = 0
    stacks: dict[int, list[tuple[int, int]]] = {0: [], 1: []}
    for pops, pushes, gap, touch in steps:
        for thread in (0, 1):
            n_pops = min(pops, len(stacks[thread]))
            for i in range(n_pops):
                start, depth = stacks[thread].pop()
                out.append((thread, start, clock, depth))
                if not (touch and i == n_pops - 1):
                    clock += 1
            for _ in range(pushes):
                stacks[thread].append((clock, len(stacks[thread])))
                clock += gap
            clock += 1
    for thread in (0, 1):
        while stacks[thread]:
            start, depth = stacks[thread].pop()
            out.append((thread, start, clock, depth))
            clock += 1
    frame = pl.DataFrame(out, schema=["thread", "start", "end", "expected"], orient="row").with_columns(
        pid=pl.lit(1, pl.Int64)
    )
    got = with_nesting(frame, ["pid", "thread"])
    assert got["depth"].to_list() == got["expected"].to_list()


# ---------------------------------------------------------------------------------------- GPU metrics


def test_gpu_metrics_2024_schema(tmp_path: Path) -> None:
    b = NsysBuilder(version="2025.1.1.110")
    # PerfWorks ids differ from CUDA ids here: pw 0 is CUDA device 1, pw 1 is CUDA device 0.
    b.gpu(0, "NVIDIA H100", pw_gpu_id=0, cu_device=1)
    b.gpu(1, "NVIDIA H100", pw_gpu_id=1, cu_device=0)
    b.gpu_metric(1000, "SMs Active [Throughput %]", 57, pw_gpu_id=0, metric_id=3)
    b.gpu_metric(1000, "GPC Clock Frequency [MHz]", 1755, pw_gpu_id=0, metric_id=1)
    b.gpu_metric(1000, "SMs Active [Throughput %]", 2, pw_gpu_id=1, metric_id=3)
    b.gpu_metric(2000, "SMs Active [Throughput %]", 61, pw_gpu_id=0, metric_id=3)
    b.gpu_metric(2000, "Compute Warps in Flight [Throughput %]", 9.25, pw_gpu_id=0, metric_id=12)
    b.kernel(0, 10, "k", correlation=1)
    trace = read(b.write(tmp_path / "metrics.sqlite"))
    got = trace.gpu_metrics.sort("timestamp", "device", "metric")
    assert rows(got, "timestamp", "device", "metric", "unit", "value") == [
        (1000, 0, "SMs Active [Throughput %]", "%", 2.0),
        (1000, 1, "GPC Clock Frequency [MHz]", "MHz", 1755.0),
        (1000, 1, "SMs Active [Throughput %]", "%", 57.0),
        (2000, 1, "Compute Warps in Flight [Throughput %]", "%", 9.25),
        (2000, 1, "SMs Active [Throughput %]", "%", 61.0),
    ]
    assert trace.gpu_metrics.schema["value"] == pl.Float64


def test_gpu_metrics_2022_generic_events(tmp_path: Path) -> None:
    b = NsysBuilder(version="2022.4.2.1", meta_table="EXPORT_META_DATA")
    for gpu in range(2):
        b.gpu(gpu, "Quadro RTX 8000", cu_device=0)  # 2022.4 writes cuDevice 0 for every GPU
    values = {
        "SM Active": 40,
        "Compute Warps In Flight": 7,
        "GPC Clock Frequency": 1409991492,
        "Vertex/Tess/Geometry Warps In Flight": 0,
        "Dispatch Started": 3,
    }
    b.generic_gpu_metrics(-500, values, pw_gpu_id=1)
    b.generic_gpu_metrics(9500, {**values, "SM Active": 60}, pw_gpu_id=1)
    b.kernel(0, 10, "k", device=1, correlation=1)
    trace = read(b.write(tmp_path / "generic.sqlite"))
    got = trace.gpu_metrics.sort("timestamp", "metric")
    assert rows(got, "timestamp", "device", "metric", "unit", "value") == [
        (-500, 1, "Compute Warps In Flight", "%", 7.0),
        (-500, 1, "Dispatch Started", "count", 3.0),
        (-500, 1, "GPC Clock Frequency", "Hz", 1409991492.0),
        (-500, 1, "SM Active", "%", 40.0),
        (-500, 1, "Vertex/Tess/Geometry Warps In Flight", "%", 0.0),
        (9500, 1, "Compute Warps In Flight", "%", 7.0),
        (9500, 1, "Dispatch Started", "count", 3.0),
        (9500, 1, "GPC Clock Frequency", "Hz", 1409991492.0),
        (9500, 1, "SM Active", "%", 60.0),
        (9500, 1, "Vertex/Tess/Geometry Warps In Flight", "%", 0.0),
    ]
    assert trace.meta["gpu"] == "Quadro RTX 8000"


# -------------------------------------------------------------------------------------------- errors


def _small_export(tmp_path: Path) -> Path:
    b = NsysBuilder()
    for i in range(400):
        b.runtime(i * 100, i * 100 + 20, "cudaLaunchKernel_v7000", correlation=i + 1)
        b.kernel(i * 100 + 30, i * 100 + 80, f"kernel_number_{i}_with_a_long_name", correlation=i + 1)
        b.nvtx_range(i * 100, i * 100 + 90, f"range {i}")
    return b.write(tmp_path / "small.sqlite")


def test_corrupt_file(tmp_path: Path) -> None:
    good = _small_export(tmp_path)
    data = good.read_bytes()
    bad = tmp_path / "truncated.sqlite"
    bad.write_bytes(data[: len(data) // 3])
    with pytest.raises(TraceFormatError, match="corrupt SQLite"):
        read(bad)
    scrambled = tmp_path / "scrambled.sqlite"
    scrambled.write_bytes(data[:100] + bytes(b ^ 0x5A for b in data[100:]))
    with pytest.raises(TraceFormatError, match="corrupt SQLite|not an Nsight Systems export"):
        read(scrambled)


def test_foreign_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "foreign.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
    con.execute("INSERT INTO customers VALUES (1, 'x')")
    con.commit()
    con.close()
    with pytest.raises(
        TraceFormatError, match="not an Nsight Systems export: no StringIds/NVTX_EVENTS/CUPTI"
    ):
        read(path)
    with pytest.raises(TraceFormatError, match="not an Nsight Systems export"):
        read_trace(path)


def test_empty_and_non_sqlite_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    with pytest.raises(TraceFormatError, match="empty file"):
        read(empty)
    text = tmp_path / "text.sqlite"
    text.write_text("hello")
    with pytest.raises(TraceFormatError, match="not an SQLite database"):
        read(text)


def test_missing_required_table_is_named(tmp_path: Path) -> None:
    b = NsysBuilder()
    b.kernel(0, 10, "k", correlation=1)
    path = b.write(tmp_path / "nostrings.sqlite")
    con = sqlite3.connect(path)
    con.execute("DROP TABLE StringIds")
    con.commit()
    con.close()
    with pytest.raises(TraceFormatError, match="missing required table StringIds"):
        read(path)


def test_reader_never_modifies_its_input(tmp_path: Path) -> None:
    path = _small_export(tmp_path)
    path.chmod(0o444)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    trace = read_trace(path)
    assert trace.ops.height == 400 and trace.ranges.height == 400
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.sqlite"]  # no journal or wal left behind


def test_optional_tables_absent(tmp_path: Path) -> None:
    """Only NVTX: no GPU tables, no metadata table at all."""
    b = NsysBuilder(meta_table=None)
    b.nvtx_range(0, 10, "iteration")
    trace = read(b.write(tmp_path / "bare.sqlite"))
    assert trace.ranges.height == 1 and trace.ops.height == 0
    assert "format_version" not in trace.meta and trace.meta["device"] == "cpu"


# ------------------------------------------------------------------------------------- real exports


@pytest.mark.real_traces
@pytest.mark.parametrize(
    ("name", "version", "kernels", "runtime_calls", "gpu"),
    [
        ("nsysai_h100_2gpu_1s_fastvideo_2026.2.sqlite", "2026.2.1.210", 3442, 5796, None),
        ("nvfuser_h200_crossentropy_2025.1.sqlite", "2025.1.1.110", 18, 990, "NVIDIA H200"),
        ("nvfuser_h200_2024.6.sqlite", "2024.6.2.25", 19, 968, "NVIDIA H200"),
    ],
)
def test_real_gpu_exports(name: str, version: str, kernels: int, runtime_calls: int, gpu: str | None) -> None:
    trace = read(real_trace("nsys", name))
    assert trace.meta["format_version"] == version
    assert trace.meta["device"] == "gpu"
    assert trace.meta.get("gpu") == gpu
    assert trace.ops.filter(pl.col("kind") == "kernel").height == kernels
    assert trace.api.height == runtime_calls  # no duplicate (pid, correlation) pairs in these
    assert not trace.api["name"].str.contains(r"_v\d{4,}$").any()  # _v2 is part of real API names
    assert trace.ops["name"].null_count() == 0 and trace.api["name"].null_count() == 0
    assert (trace.ops["end"] >= trace.ops["start"]).all()
    assert trace.ranges.height > 0 and trace.ranges["depth"].min() == 0
    assert trace.gpu_metrics.height == 0
    assert trace.meta["warnings"] == []
    # every kernel with a launch call in the file joins to it by (pid, correlation)
    launches = trace.api.select("pid", "correlation", "name")
    joined = trace.ops.filter(pl.col("kind") == "kernel").join(
        launches, on=["pid", "correlation"], how="inner"
    )
    assert joined.height > 0
    assert set(joined["name_right"].unique()) <= {
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cuLaunchKernel",
        "cuLaunchKernelEx",
        "cudaGraphLaunch",
    }


@pytest.mark.real_traces
def test_real_fastvideo_2026_quirks() -> None:
    trace = read(real_trace("nsys", "nsysai_h100_2gpu_1s_fastvideo_2026.2.sqlite"))
    kernels = trace.ops.filter(pl.col("kind") == "kernel")
    assert kernels.group_by("device").len().sort("device").rows() == [(0, 1721), (1, 1721)]
    assert "gpus" not in trace.meta  # TARGET_INFO_GPU absent, GpuInfo "{}"
    assert trace.ops.filter(pl.col("kind") == "memcpy").height == 904
    assert trace.ops.filter(pl.col("kind") == "memset").height == 22
    assert trace.ranges.height == 16782
    # 1,810 kernels were launched before the 1 s window: no runtime row to join to
    unmatched = kernels.join(trace.api, on=["pid", "correlation"], how="anti")
    assert unmatched.height == 1810


@pytest.mark.real_traces
def test_real_nvfuser_2025_driver_calls() -> None:
    trace = read(real_trace("nsys", "nvfuser_h200_crossentropy_2025.1.sqlite"))
    kinds = dict(trace.api.group_by("kind").len().rows())
    assert kinds == {"driver": 899, "runtime": 91}
    assert trace.api.filter(pl.col("name") == "cuLaunchKernel").height == 6
    assert trace.api.filter(pl.col("name") == "cudaLaunchKernel").height == 9


@pytest.mark.real_traces
def test_real_cpu_only_nvtx_2022() -> None:
    trace = read(real_trace("nsys", "local_nvtx_only_cpu_2022.4.sqlite"))
    assert trace.meta["format_version"] == "2022.4.2.1"
    assert trace.meta["device"] == "cpu"
    ranges = trace.ranges
    assert ranges.height == 19  # 18 push/pop + 1 start/end; marks, thread name, domain rows are not ranges
    assert ranges.filter(pl.col("name") == "registered_iteration")["domain"].unique().to_list() == [
        "tracekit"
    ]
    assert ranges.filter(pl.col("name") == "registered_iteration").height == 4  # textId -> StringIds
    assert ranges.filter(pl.col("name") == "iteration")["depth"].to_list() == [1, 1, 1, 1]
    assert ranges.filter(pl.col("name") == "forward")["depth"].to_list() == [2, 2, 2, 2]
    cross = ranges.filter(pl.col("name") == "cross_thread_startend").row(0, named=True)
    assert cross["thread"] == 18771 and cross["depth"] == 0
    # nsys 2022.4 closed it at the capture's end (ANALYSIS_DETAILS.duration): read as never closed
    assert ranges.filter(pl.col("name") == "unterminated_push")["end"].to_list() == [None]
    assert sorted(trace.ops["name"].to_list()) == ["forward"] * 4 + ["postprocess"] * 4
    assert set(trace.ops["kind"]) == {"operator"} and set(trace.ops["device"]) == {-1}


@pytest.mark.real_traces
def test_real_paper_cuda_graphs_2022() -> None:
    trace = read_trace(real_trace("paper", "framework_tax_bert_fp16_bs1_cudagraphs_rtx8000.sqlite"))
    assert trace.meta["format_version"] == "2022.4.2.1"
    assert trace.meta["gpu"] == "Quadro RTX 8000"
    assert trace.meta["driver"] == "470.161.03"
    forward = trace.ranges.filter(pl.col("name") == "forward")
    assert forward.height == 10 and forward["depth"].to_list() == [0] * 10
    # each runtime call is in the file twice (plain + _v, one correlation id): collapsed to one
    assert trace.api.filter(pl.col("name") == "cudaGraphLaunch").height == 10
    assert trace.api.filter(pl.col("name") == "cudaLaunchKernel").height == 247
    assert trace.api.height == 357
    kernels = trace.ops.filter(pl.col("kind") == "kernel")
    assert kernels.height == 2380 and kernels["device"].unique().to_list() == [3]
    graph_kernels = kernels.join(
        trace.api.filter(pl.col("name") == "cudaGraphLaunch"), on=["pid", "correlation"], how="semi"
    )
    assert graph_kernels.height == 9 * 216 + 192
    # GPU metrics (GENERIC_EVENTS) were sampled on GPU 0, not on GPU 3 that ran the kernels
    metrics = trace.gpu_metrics
    assert metrics["device"].unique().to_list() == [0]
    assert metrics.filter(pl.col("metric") == "SM Active").height == 5776
    assert metrics["metric"].n_unique() == 22
