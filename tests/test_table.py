"""Per-kernel SM activity / occupancy (Nsight Compute, Kineto estimate) and ``tracekit table``.

All traces here are hand-built and synthetic; expected numbers are worked out by hand in the comments.
"""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import real_trace
from tests.nsys_builder import NsysBuilder
from tracekit.analyzers.iterations import analyze_iterations
from tracekit.analyzers.kernel_metrics import (
    GPC_CYCLES_ELAPSED,
    KINETO_OCCUPANCY,
    SM_ACTIVE_PCT,
    SM_CYCLES_ACTIVE,
    SM_CYCLES_ELAPSED,
    WARPS_ACTIVE_PCT,
    analyze_kernel_metrics,
    base_name,
    per_kernel,
)
from tracekit.analyzers.paper import PAPER_TABLE3, runtime_traits
from tracekit.cli import main
from tracekit.model import Trace

# Two synchronized iterations of 1000 ns, each: kernel A 200 ns, kernel B 100 ns.
KERNELS = [
    (100, 300, "void ns::A<float>(float*)"),
    (400, 500, "B"),
    (1100, 1300, "void ns::A<float>(float*)"),
    (1400, 1500, "B"),
]


def timeline(kernels=KERNELS, ranges=((0, 1000), (1000, 2000)), kernel_metrics=None) -> Trace:
    ops = pl.DataFrame(
        {
            "start": [k[0] for k in kernels],
            "end": [k[1] for k in kernels],
            "device": [0] * len(kernels),
            "kind": ["kernel"] * len(kernels),
            "name": [k[2] for k in kernels],
        }
    )
    rng = pl.DataFrame(
        {
            "start": [r[0] for r in ranges],
            "end": [r[1] for r in ranges],
            "thread": [1] * len(ranges),
            "depth": [0] * len(ranges),
            "name": ["iteration"] * len(ranges),
        }
    )
    return Trace(
        ops=ops, ranges=rng, kernel_metrics=kernel_metrics, meta={"synthetic": True, "device": "gpu"}
    )


def ncu_trace(kernels: list[tuple[str, str | None, int | None, dict[str, float]]]) -> Trace:
    rows = [
        {"kernel": i, "name": name, "range": rng, "duration_ns": dur, "metric": m, "unit": "%", "value": v}
        for i, (name, rng, dur, metrics) in enumerate(kernels)
        for m, v in metrics.items()
    ]
    return Trace(kernel_metrics=pl.DataFrame(rows), meta={"format": "ncu-csv", "synthetic": True})


NCU_TWO = [
    ("void ns::A<int>(int*)", "iteration", 150, {SM_ACTIVE_PCT: 50.0, WARPS_ACTIVE_PCT: 10.0}),
    ("B(float*)", "iteration", 90, {SM_ACTIVE_PCT: 80.0, WARPS_ACTIVE_PCT: 20.0}),
]


def test_base_name():
    assert base_name("void at::native::(anonymous namespace)::k<float, 4>(int, float*)") == "k"
    assert base_name("void cutlass::Kernel<cutlass::gemm::kernel::Gemm<X<1>, Y>>(T1::Params)") == "Kernel"
    assert base_name("ampere_sgemm_128x64_nn") == "ampere_sgemm_128x64_nn"


def test_per_kernel_fallbacks():
    km = ncu_trace(
        [
            ("a", None, 10, {SM_ACTIVE_PCT: 40.0, SM_CYCLES_ACTIVE: 1.0, SM_CYCLES_ELAPSED: 2.0}),
            ("b", None, 10, {SM_CYCLES_ACTIVE: 30.0, SM_CYCLES_ELAPSED: 120.0, GPC_CYCLES_ELAPSED: 100.0}),
            ("c", None, 10, {SM_CYCLES_ACTIVE: 30.0, GPC_CYCLES_ELAPSED: 60.0}),
            ("d", None, 10, {SM_ACTIVE_PCT: float("nan"), WARPS_ACTIVE_PCT: float("nan")}),
            ("e", None, 10, {"other": 1.0}),
        ]
    ).kernel_metrics
    frame = per_kernel(km)
    values = frame["sms_active"].to_list()
    assert values[:3] == [40.0, 25.0, 50.0]
    assert math.isnan(values[3])
    assert values[4] is None
    assert frame["sms_active_how"].to_list()[:3] == [
        SM_ACTIVE_PCT,
        f"100*{SM_CYCLES_ACTIVE}/{SM_CYCLES_ELAPSED}",
        f"100*{SM_CYCLES_ACTIVE}/{GPC_CYCLES_ELAPSED}",
    ]


def test_ncu_joined_to_timeline_exact():
    tl = timeline()
    analysis = analyze_iterations(tl)
    result = analyze_kernel_metrics(ncu_trace(NCU_TWO), tl, analysis)
    # per iteration: (200*50 + 100*80) / 1000 = 18 %; kernel time: 18000 / 300 = 60 %
    assert result.iterations["sms_active"].to_list() == pytest.approx([18.0, 18.0])
    assert result.value("sms_active") == pytest.approx(18.0)
    assert result.value("sms_active", wall_time=False) == pytest.approx(60.0)
    # (200*10 + 100*20) / 1000 = 4 %; 4000 / 300
    assert result.value("warp_occupancy") == pytest.approx(4.0)
    assert result.value("warp_occupancy", wall_time=False) == pytest.approx(4000 / 300)
    assert result.summary["sms_active"]["source"] == "ncu"
    assert result.warnings == []


def test_ncu_nan_is_skipped_and_counted():
    kernels = [
        NCU_TWO[0],
        ("B(float*)", "iteration", 90, {SM_ACTIVE_PCT: 80.0, WARPS_ACTIVE_PCT: float("nan")}),
    ]
    tl = timeline()
    result = analyze_kernel_metrics(ncu_trace(kernels), tl, analyze_iterations(tl))
    # no wall-time figure: B, unmeasured, holds 1/3 of each iteration's kernel time, so the truth lies
    # anywhere in 2..12 (it had read 2.0, B counted as 0); the kernel-time average is over A alone
    assert result.value("warp_occupancy") is None
    assert result.value("warp_occupancy", wall_time=False) == pytest.approx(10.0)
    assert result.summary["warp_occupancy"]["nan_skipped"] == 1
    assert result.summary["warp_occupancy"]["coverage"] == pytest.approx(400 / 600)
    assert any("1 kernel with NaN" in w for w in result.warnings)


def test_ncu_alone_gives_kernel_time_average_with_ncu_durations():
    result = analyze_kernel_metrics(ncu_trace(NCU_TWO))
    assert result.iterations is None
    assert result.value("sms_active") is None
    assert result.value("sms_active", wall_time=False) == pytest.approx((150 * 50 + 90 * 80) / 240)


def test_ncu_count_and_name_mismatches_warn():
    tl = timeline()
    analysis = analyze_iterations(tl)
    three = [*NCU_TWO, NCU_TWO[0]]
    result = analyze_kernel_metrics(ncu_trace(three), tl, analysis)
    assert any("not a multiple of the 2 kernels per iteration" in w for w in result.warnings)
    assert result.value("sms_active") == pytest.approx(18.0)
    swapped = [NCU_TWO[1], NCU_TWO[0]]
    result = analyze_kernel_metrics(ncu_trace(swapped), tl, analysis)
    assert any("4 of 4 matched kernels differ in name" in w for w in result.warnings)


def test_ncu_varying_kernel_counts_join_one_to_one():
    kernels = [*KERNELS, (1600, 1700, "C")]  # iteration 1 has a third kernel
    tl = timeline(kernels)
    analysis = analyze_iterations(tl)
    ncu = [*NCU_TWO, *NCU_TWO]  # only 4 of the 5 kernels profiled
    result = analyze_kernel_metrics(ncu_trace(ncu), tl, analysis)
    assert result.iterations["sms_active"].to_list()[0] == pytest.approx(18.0)
    assert result.iterations["sms_active"].to_list()[1] is None  # not fully matched
    assert any("matched one to one" in w for w in result.warnings)


def test_ncu_range_filter():
    kernels = [("warmup(int*)", "warmup", 10, {SM_ACTIVE_PCT: 99.0}), *NCU_TWO]
    tl = timeline()
    result = analyze_kernel_metrics(ncu_trace(kernels), tl, analyze_iterations(tl))
    assert result.value("sms_active") == pytest.approx(18.0)


def test_kineto_estimate_same_trace():
    km = pl.DataFrame(
        {
            "kernel": [0, 1, 2, 3],
            "name": [k[2] for k in KERNELS],
            "range": [None] * 4,
            "duration_ns": [200, 100, 200, 100],
            "metric": [KINETO_OCCUPANCY] * 4,
            "unit": ["%"] * 4,
            "value": [50.0, 25.0, 50.0, 25.0],
        }
    )
    tl = timeline(kernel_metrics=km)
    result = analyze_kernel_metrics(tl, tl, analyze_iterations(tl))
    # (200*50 + 100*25) / 1000 = 12.5 %; 12500 / 300
    assert result.value("warp_occupancy") == pytest.approx(12.5)
    assert result.value("warp_occupancy", wall_time=False) == pytest.approx(12500 / 300)
    assert result.summary["warp_occupancy"]["source"] == "kineto estimate"
    assert result.summary["sms_active"] is None


def test_real_cutlass_kernel_values():
    pytest.importorskip("ncu_report")
    from tracekit.readers import read_trace

    trace = read_trace(real_trace("ncu", "cutlass_a100_3kernels.ncu-rep"))
    frame = per_kernel(trace.kernel_metrics)
    assert [round(v, 1) for v in frame["sms_active"]] == [66.3, 68.2, 73.1]
    assert [round(v, 2) for v in frame["warp_occupancy"]] == [6.00, 5.84, 6.04]
    result = analyze_kernel_metrics(trace)
    d = [11168, 10880, 25984]
    expected = sum(x * v for x, v in zip(d, frame["sms_active"], strict=True)) / sum(d)
    assert result.value("sms_active", wall_time=False) == pytest.approx(expected)


def test_real_sglang_nan_skipped_and_counted():
    pytest.importorskip("ncu_report")
    from tracekit.readers import read_trace

    trace = read_trace(real_trace("ncu", "sglang_h800_5kernels.ncu-rep"))
    frame = per_kernel(trace.kernel_metrics)
    assert [round(v, 2) for v in frame["warp_occupancy"][:4]] == [57.72, 12.45, 57.25, 57.22]
    assert math.isnan(frame["warp_occupancy"][4])
    assert frame["sms_active_how"][0] == f"100*{SM_CYCLES_ACTIVE}/{GPC_CYCLES_ELAPSED}"
    result = analyze_kernel_metrics(trace)
    assert result.summary["warp_occupancy"]["nan_skipped"] == 1
    assert result.summary["warp_occupancy"]["kernels"] == 4


# --------------------------------------------------------------------------------------- tracekit table


def runtime_traits_match_the_paper():
    for row in PAPER_TABLE3:
        assert runtime_traits(row["runtime"]) != (None, None)


def test_runtime_traits():
    assert runtime_traits("cuda-graphs") == ("none", "yes")
    assert runtime_traits("onnx") == ("ahead-of-time", "none")
    assert runtime_traits("compile-cudagraphs") == ("just-in-time", "yes")
    assert runtime_traits("mystery") == (None, None)
    runtime_traits_match_the_paper()


NCU_CSV = """"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Device","CC","gpu__time_duration.sum","sm__cycles_active.avg.pct_of_peak_sustained_elapsed","sm__warps_active.avg.pct_of_peak_sustained_active"
"","","","","","","","","","nsecond","%","%"
"0","1","python","h","void ns::A<int>(int*)","1","7","0","8.0","150","50","10"
"1","1","python","h","B(float*)","1","7","0","8.0","90","80","20"
"""


def write_nsys(path: Path, metrics: bool) -> Path:
    """Synthetic nsys export: 2 iterations of 1000 ns, kernels as in KERNELS launched inside them."""
    b = NsysBuilder()
    b.gpu(0, "Synthetic GPU")
    for i, (start, end, name) in enumerate(KERNELS):
        it = start // 1000
        b.runtime(it * 1000 + 10 + i, it * 1000 + 20 + i, "cudaLaunchKernel_v7000", correlation=i + 1)
        b.kernel(start, end, name, correlation=i + 1)
    b.nvtx_range(0, 1000, "iteration")
    b.nvtx_range(1000, 2000, "iteration")
    if metrics:
        for t, sm, warps in [(250, 40.0, 6.0), (750, 20.0, 2.0), (1250, 10.0, 1.0), (1750, 30.0, 3.0)]:
            b.gpu_metric(t, "SMs Active [Throughput %]", sm)
            b.gpu_metric(t, "Compute Warps in Flight [Throughput %]", warps)
    return b.write(path)


def make_run(root: Path, runtime: str, metrics: bool) -> Path:
    run = root / runtime
    run.mkdir()
    write_nsys(run / f"{runtime}_b1_s128.nsys.sqlite", metrics)
    (run / f"{runtime}_b1_s128.ncu.csv").write_text(NCU_CSV)
    doc = {
        "kind": "simulate",
        "synthetic": True,
        "runtime": runtime,
        "model": "bert-base",
        "configs": [
            {
                "batch_size": 1,
                "seq_len": 128,
                "status": "ok",
                "traces": {"nsys": f"{runtime}_b1_s128.nsys.sqlite", "ncu": f"{runtime}_b1_s128.ncu.csv"},
            }
        ],
    }
    (run / "run.json").write_text(json.dumps(doc))
    return run


def test_table_json_sources(tmp_path):
    with_metrics = make_run(tmp_path, "cuda-graphs", metrics=True)
    without = make_run(tmp_path, "pytorch", metrics=False)
    out = tmp_path / "table.json"
    assert main(["table", str(with_metrics), str(without), "--format", "json", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    rows = {r["runtime"]: r for r in doc["rows"]}
    assert [r["runtime"] for r in doc["rows"]] == ["pytorch", "cuda-graphs"]  # the study's order
    g = rows["cuda-graphs"]
    assert (g["graph_compilation"], g["kernel_serialization"]) == ("none", "yes")
    assert g["latency_ms"] == pytest.approx(0.001)
    assert g["gpu_busy_ms"] == pytest.approx(0.0003)
    assert g["framework_overhead_ms"] == pytest.approx(0.0007)
    # nsys samples: iteration 0 mean(40, 20) = 30, iteration 1 mean(10, 30) = 20 -> 25
    assert g["sms_active"] == pytest.approx(25.0)
    assert g["sms_active_source"] == "nsys metrics"
    assert g["warp_occupancy"] == pytest.approx(3.0)  # mean(4, 2)
    assert g["sms_active_kernel_time"] == pytest.approx(60.0)
    assert g["kernel_time_source"] == "ncu"
    p = rows["pytorch"]
    assert p["sms_active"] == pytest.approx(18.0)  # ncu joined to the timeline
    assert p["sms_active_source"] == "ncu"
    assert p["warp_occupancy"] == pytest.approx(4.0)
    assert p["synthetic"] is True
    assert any("mean over iterations" in n for n in doc["notes"])


def test_table_markdown_paper_and_ncu_flag(tmp_path):
    trace = write_nsys(tmp_path / "t.sqlite", metrics=False)
    ncu = tmp_path / "t.ncu.csv"
    ncu.write_text(NCU_CSV)
    out = tmp_path / "t.md"
    assert (
        main(["table", str(trace), "--ncu", str(ncu), "--paper", "--format", "markdown", "-o", str(out)]) == 0
    )
    text = out.read_text()
    assert "Published (Fernandez et al., The Framework Tax (2023), Table 3)" in text
    assert "| PyTorch + CUDA Graphs | gpu (Quadro RTX 8000) | none | yes | 2.820 | 57.000 | 9.200 |" in text
    assert "| ncu |" in text
    assert "18.000" in text


def test_table_csv_and_json_paper(tmp_path, capsys):
    trace = write_nsys(tmp_path / "t.sqlite", metrics=True)
    assert main(["table", str(trace), "--format", "csv", "--paper"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("table,row,runtime,runtime_source,runtime_evidence,model,batch_size")
    assert len(lines) == 1 + 1 + len(PAPER_TABLE3)
    assert main(["table", str(trace), "--format", "json", "--paper"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["paper"]["rows"][0]["latency_ms"] == 10.54
    assert doc["rows"][0]["runtime"] is None
    assert doc["rows"][0]["warp_occupancy_kernel_time"] is None


def test_table_bad_ncu_pairing(tmp_path, capsys):
    trace = write_nsys(tmp_path / "t.sqlite", metrics=False)
    ncu = tmp_path / "t.ncu.csv"
    ncu.write_text(NCU_CSV)
    assert main(["table", str(trace), "--ncu", str(ncu), str(ncu)]) == 2
    assert "cannot tell which input" in capsys.readouterr().err


def test_table_paper_trace_warns_about_metrics_gpu(capsys):
    path = real_trace("paper", "framework_tax_bert_fp16_bs1_cudagraphs_rtx8000.sqlite")
    assert main(["table", str(path), "--range", "forward", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    row = doc["rows"][0]
    assert row["sms_active"] is None and row["sms_active_source"] is None
    assert row["latency_ms"] == pytest.approx(3.015, abs=0.01)
    from tracekit.readers import read_trace

    assert not read_trace(path).gpu_metrics.is_empty(), "the nsys reader must read GENERIC_EVENTS GPU metrics"
    assert any("but the kernels ran on GPU 3" in w for w in doc["warnings"])


def test_table_real_kineto_estimate(capsys):
    """The study's torch.profiler trace: warp occupancy from Kineto's estimate, labelled so; no SMs active."""
    from tracekit.readers import read_trace

    path = real_trace(
        "paper",
        "kineto",
        "gpu_util_log_pytorch-batch16-torch.float16_HERRON_3494129.1666196964215.pt.trace.json",
    )
    assert main(["table", str(path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    row = doc["rows"][0]
    assert row["sms_active"] is None
    assert row["warp_occupancy_source"] == "kineto estimate"
    assert row["kernel_time_source"] == "kineto estimate"
    km = read_trace(path).kernel_metrics
    expected = (km["duration_ns"] * km["value"]).sum() / km["duration_ns"].sum()
    assert row["warp_occupancy_kernel_time"] == pytest.approx(expected)
    assert 0 < row["warp_occupancy"] < row["warp_occupancy_kernel_time"]
    assert not any("differ in name" in w for w in doc["warnings"])


def test_table_leaves_out_an_input_it_cannot_analyze(tmp_path, capsys):
    good = write_nsys(tmp_path / "good.sqlite", metrics=True)
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [')  # truncated
    # exit 1, as analyze on several traces when some failed (the row of the good one is printed)
    assert main(["table", str(good), str(bad), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["rows"]) == 1
    assert any(w.startswith("left out:") and "bad.json" in w for w in doc["warnings"])
    # Alone, the bad input is the error it always was.
    assert main(["table", str(bad)]) == 2
    assert "bad.json" in capsys.readouterr().err


# ------------------------------------------------------------------- identified rows, 120 columns, --paper

STUDY_KINETO = [
    "gpu_util_log_onnx-batch16_HERRON_3494129.1666196962094.pt.trace.json",
    "gpu_util_log_onnx-batch1_HERRON_3518956.1666209271797.pt.trace.json",
    "gpu_util_log_pytorch-batch16-torch.float16_HERRON_3494129.1666196964215.pt.trace.json",
    "gpu_util_log_torchscript-batch16-torch.float16_HERRON_3494129.1666196965133.pt.trace.json",
]


def study_traces() -> list[str]:
    paths = [real_trace("paper", "kineto", name) for name in STUDY_KINETO]
    return [
        *map(str, paths),
        str(real_trace("paper", "framework_tax_bert_fp16_bs1_cudagraphs_rtx8000.sqlite")),
    ]


def table_lines(text: str) -> list[str]:
    """The table's own lines (box drawing), without the legend under it."""
    return [line for line in text.splitlines() if line[:1] in "┌│├└┏┃┡"]


def assert_fits(text: str, width: int = 120) -> None:
    lines = table_lines(text)
    assert lines and max(len(line) for line in lines) <= width
    assert "…" not in text


def synthetic_doc(paper: bool) -> dict:
    """A table document of two hand-built rows: an inferred runtime and an unknown one (long file name)."""
    from tracekit.analyzers.table import ROW_KEYS, build_table

    base = dict.fromkeys(ROW_KEYS)
    one = {
        **base,
        "runtime": "onnx-cuda-graphs",
        "runtime_source": "inferred from trace content",
        "batch_size": 1,
        "batch_size_source": "from file name",
        "precision": "fp16",
        "precision_source": "inferred from trace content",
        "seq_len": 128,
        "device": "gpu",
        "gpu": "NVIDIA H100 80GB HBM3",
        "graph_compilation": "ahead-of-time",
        "kernel_serialization": "yes",
        "latency_ms": 2.0,
        "gpu_busy_ms": 1.5,
        "framework_overhead_ms": 0.5,
        "sms_active": 50.0,
        "sms_active_source": "nsys metrics",
        "warp_occupancy": 10.0,
        "warp_occupancy_source": "nsys metrics",
        "synthetic": True,
        "trace": "runs/a/onnx-cuda-graphs_b1.synthetic.sqlite",
        "evidence": {"runtime": "1 onnxruntime:: kernel name(s); 10 cudaGraphLaunch calls"},
    }
    two = {
        **base,
        "device": "gpu",
        "latency_ms": 3.0,
        "synthetic": True,
        "trace": "some_long_run_directory_name/a_trace_file_with_a_very_long_name_indeed_1234567890.pt.trace.json",
    }
    return build_table([(one, []), (two, ["runtime unknown"])], [], paper)


@pytest.mark.parametrize("paper", [False, True])
def test_terminal_table_fits_120_columns_without_cutting_a_header(paper):
    from rich.console import Console

    from tracekit.renderers.table import render_text, rich_table

    doc = synthetic_doc(paper)
    text = render_text(doc, 120)
    assert_fits(text)
    # The same table printed by a rich Console of 120 columns: no line longer, no header cut.
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(rich_table(doc, paper=paper, width=120))
    assert_fits(console.export_text())
    body = [line.split("│") for line in table_lines(text) if line.startswith("│")]
    at = next(i for i, cells in enumerate(body) if cells[1].strip() == "1")
    first = [cells[2:4] for cells in body[at : at + 2]]  # row 1 and its continuation line
    runtime, config = (" ".join(cell[i].strip() for cell in first) for i in (0, 1))
    assert runtime == "onnx-cuda-graphs (inferred)"
    assert config == "H100 80GB fp16* bs1† s128"  # device, precision (content), batch (file name), seq
    # The unknown row names its run directory and file (folded over lines rather than cut).
    folded = "".join(line.split("│")[2].strip() for line in table_lines(text) if line.count("│") > 3)
    assert (
        "some_long_run_directory_name/a_trace_file_with_a_very_long_name_indeed_1234567890.pt.trace.json"
        in folded
    )
    assert "nsys metrics (rows 1)" in text or paper


def test_wide_shows_every_column():
    from tracekit.renderers.table import render_text

    text = render_text(synthetic_doc(False), 120, wide=True)
    for header in ("trace", "GPU", "precision", "iterations", "SMs active % (kernel time)", "synthetic"):
        assert header in text
    assert "nsys metrics" in table_lines(text)[3]  # the source column, in the first row
    assert max(len(line) for line in table_lines(text)) > 120  # its natural width, not the terminal's


def test_align_with_paper_exact():
    from tracekit.analyzers.paper import align_with_paper

    rows = [
        {"runtime": "cuda-graphs", "batch_size": 1, "precision": "fp16", "latency_ms": 2.82 * 1.5},
        {"runtime": "onnx", "batch_size": 16, "precision": "fp32", "latency_ms": 5.0},
        {"runtime": "onnx", "batch_size": 1, "precision": None, "latency_ms": 5.0},
        {"runtime": "compile", "batch_size": 1, "precision": "fp16", "latency_ms": 1.0},
    ]
    entries = align_with_paper(rows)
    by = [(e["runtime"], e["measured"]) for e in entries]
    assert by == [
        ("pytorch", None),
        ("torchscript", None),
        ("cuda-graphs", 0),
        ("onnx", 1),
        ("onnx", 2),
        ("onnx-cuda-graphs", None),
        ("compile", 3),
    ]
    assert entries[2]["latency_ratio"] == pytest.approx(1.5) and entries[2]["mismatch"] == []
    assert entries[3]["mismatch"] == ["bs16 (published bs1)", "fp32 (published fp16)"]
    assert entries[3]["latency_ratio"] is None
    assert entries[4]["mismatch"] == ["precision unknown"]
    assert entries[6]["published"] is None


def test_study_traces_identified_with_the_paper_beside_them(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["table", *study_traces(), "--paper"]) == 0
    out = capsys.readouterr().out
    assert_fits(out)
    rows = {line.split("│")[1].strip(): line for line in table_lines(out) if line.startswith("│")}
    # From the trace content where the reader records it (CPU operators, Input Dims/type), else the file name.
    tag, mark = r"\((inferred|file name)\)", "[*†]"
    assert re.search(rf"pytorch {tag} .* fp16{mark} bs16{mark} ", rows["1"])
    assert re.search(rf"torchscript {tag} .* fp16{mark} bs16{mark} ", rows["2"])
    assert re.search(r"cuda-graphs \(inferred\) .* fp16\* bs1† ", rows["3"])  # graph launches, kernel names
    assert re.search(rf"onnx {tag} .* fp32\* bs1{mark} ", rows["4"]) and "≠ fp32" in rows["4"]
    assert re.search(rf"onnx {tag} .* fp32\* bs16{mark} ", rows["5"]) and "≠ bs16 fp32" in rows["5"]
    # 3.016 ms traced against the published 2.82 ms: the one row whose batch and precision match.
    assert "1.07×" in rows["3"]
    published = [line for line in table_lines(out) if line.startswith("│ pub")]
    assert len(published) == 5 and "PyTorch + CUDA Graphs" in published[2] and "2.820" in published[2]
    assert "runtime unknown" not in out
    doc = json.loads(main(["table", *study_traces(), "--format", "json"]) == 0 and capsys.readouterr().out)
    assert [(r["runtime"], r["batch_size"], r["precision"]) for r in doc["rows"]] == [
        ("pytorch", 16, "fp16"),
        ("torchscript", 16, "fp16"),
        ("cuda-graphs", 1, "fp16"),
        ("onnx", 1, "fp32"),
        ("onnx", 16, "fp32"),
    ]


def test_one_configuration_under_two_profilers_names_each_rows_profiler(capsys, monkeypatch):
    # two rows "onnx cpu fp32 bs1 s128" (nsys and ORT's profiler) differed only in the legend's file names,
    # and their warnings both began "onnx b1 s128:", so which row a warning meant could not be told
    from tests.conftest import SAMPLE_TRACES

    monkeypatch.setenv("COLUMNS", "120")
    runs = [str(SAMPLE_TRACES / "cpu_onnx_bert_nsys"), str(SAMPLE_TRACES / "cpu_onnx_bert_ort")]
    assert main(["table", *runs, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["profiler"] for r in doc["rows"]] == ["nsys", "ORT profiler"]
    said = [w.split(":")[0] for w in doc["warnings"]]
    assert "onnx b1 s128 (nsys)" in said and "onnx b1 s128 (ORT profiler)" in said
    assert main(["table", *runs]) == 0
    out = capsys.readouterr().out
    legend = [line.strip() for line in out.splitlines() if re.match(r"\s+[12]  ", line)]
    assert legend[0].startswith("1  nsys, cpu_onnx_bert_nsys/") and legend[1].startswith("2  ORT profiler, ")
    # one profiler: no row is labelled with it
    assert main(["table", runs[1], "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"][0]["profiler"] == "ORT profiler" and not any(
        "(ORT profiler)" in w for w in doc["warnings"]
    )
    assert main(["table", runs[1]]) == 0
    assert "ORT profiler" not in capsys.readouterr().out
