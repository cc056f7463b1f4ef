"""Right by default on ONNX Runtime profiles and Nsight Compute reports (issue 32).

- A single-run ORT profile (``model_loading_uri``, ``session_initialization``, ``model_run`` once each: the
  common shape, profiling switched on for one ``InferenceSession.run``) analyzes to its ``model_run``, with
  operator busy equal to the sum of its node kernel times, and analyze / table / report / the Python API agree;
  the set-up events are reported apart. Hand-built (synthetic) profiles in each era's spelling, and real ones
  made here by onnxruntime.
- No framework-/compute-bound verdict for an Nsight Compute report alone (no timeline) or a trace without
  device or operator activity, in any output.
- Precision from the dominant compute operators' types: an int8 model is int8, not the float input of its
  first QuantizeLinear.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import tracekit
from tests.conftest import real_trace
from tracekit.analyzers.report import config_row
from tracekit.analyzers.table import NCU_ALONE, table_row
from tracekit.cli import main
from tracekit.inputs import TraceInput
from tracekit.session import AnalysisOptions, analyze_input

ROOT = Path(__file__).resolve().parents[1]
NCU_SAMPLE = ROOT / "sample_traces" / "h200_bert_fp16" / "pytorch-ncu" / "pytorch_b1_s128.ncu.csv.gz"


def _ev(cat: str, name: str, ts: int, dur: int, **args: Any) -> dict[str, Any]:
    return {"cat": cat, "pid": 7, "tid": 7, "dur": dur, "ts": ts, "ph": "X", "name": name, "args": args}


def _node_2019(name: str, op: str, ts: int, dur: int) -> list[dict[str, Any]]:
    """One node as ORT 0.x (2019) wrote it: fence events around the kernel time, only ``op_name`` in args."""
    return [
        _ev("Node", f"{name}_fence_before", ts - 1, 0, op_name=op),
        _ev("Node", f"{name}_kernel_time", ts, dur, op_name=op),
        _ev("Node", f"{name}_fence_after", ts + dur, 0, op_name=op),
    ]


#: A synthetic single-run ORT 0.x (2019-style) profile: set-up 10 ms + 20 ms, one model_run of 1000 µs holding
#: three nodes of 300 + 200 + 150 µs (operator busy 0.650 ms of 1.000 ms).
PROFILE_2019 = [
    _ev("Session", "model_loading_uri", 0, 10_000),
    _ev("Session", "session_initialization", 10_100, 20_000),
    *_node_2019("Conv_0", "Conv", 40_100, 300),
    *_node_2019("Relu_1", "Relu", 40_450, 200),
    *_node_2019("Gemm_2", "Gemm", 40_700, 150),
    _ev("Session", "SequentialExecutor::Execute", 40_050, 900),
    _ev("Session", "model_run", 40_000, 1_000),
]

_STATS = {"main_thread": {"thread_pool_name": "session-1-intra-op", "thread_id": "1", "block_size": []}}


def _node_11x(name: str, op: str, ts: int, dur: int, shapes: list[dict[str, list[int]]]) -> dict[str, Any]:
    """One node as ORT 1.1x writes it: provider, input/output shapes, thread statistics; no fence events."""
    return _ev(
        "Node",
        f"{name}_kernel_time",
        ts,
        dur,
        op_name=op,
        provider="CPUExecutionProvider",
        input_type_shape=shapes,
        output_type_shape=[{"float": [2, 16, 768]}],
        thread_scheduling_stats=_STATS,
        node_index="3",
    )


#: A synthetic single-run ORT 1.1x profile: the token embedding (ids [2, 16]), a MatMul, an Add; the run is
#: 2000 µs long with 100 + 900 + 250 µs of nodes (1.250 ms busy).
PROFILE_11X = [
    _ev("Session", "model_loading_uri", 3, 120_000),
    _ev("Session", "session_initialization", 120_050, 340_000),
    _node_11x(
        "/emb/word_embeddings/Gather", "Gather", 500_100, 100, [{"float": [30522, 768]}, {"int64": [2, 16]}]
    ),
    _node_11x("/enc/MatMul", "MatMul", 500_300, 900, [{"float": [2, 16, 768]}, {"float": [768, 768]}]),
    _node_11x("/enc/Add", "Add", 501_300, 250, [{"float": [2, 16, 768]}, {"float": [768]}]),
    _ev("Session", "SequentialExecutor::Execute", 500_050, 1_900),
    _ev("Session", "model_run", 500_000, 2_000),
]


def _write(tmp_path: Path, name: str, events: list[dict[str, Any]]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(events))
    return path


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main([*args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("events", "latency_ms", "busy_ms", "setup"),
    [
        (PROFILE_2019, 1.0, 0.65, [("model_loading_uri", 10.0), ("session_initialization", 20.0)]),
        (PROFILE_11X, 2.0, 1.25, [("model_loading_uri", 120.0), ("session_initialization", 340.0)]),
    ],
    ids=["ort-2019", "ort-1.1x"],
)
def test_single_run_profile_is_its_model_run_everywhere(tmp_path, capsys, events, latency_ms, busy_ms, setup):
    path = _write(tmp_path, "profile.synthetic.json", events)
    doc = _json(capsys, "analyze", str(path))
    assert doc["range"] == "model_run"
    assert doc["range_choice"].startswith(
        "ONNX Runtime profile: one 'model_run' per InferenceSession.run call"
    )
    ((it,),) = [doc["iterations"]]
    assert it["latency_ms"] == pytest.approx(latency_ms, abs=1e-12)
    # operator busy = the sum of the node kernel times inside model_run (the nodes do not overlap)
    kernel_times = sum(e["dur"] for e in events if e["name"].endswith("_kernel_time")) / 1e3
    assert it["gpu_busy_ms"] == pytest.approx(kernel_times, abs=1e-12) == pytest.approx(busy_ms, abs=1e-12)
    assert it["kernels"] == 3
    assert doc["summary"]["bound"] == "compute"  # 65% / 62.5% busy
    # the set-up events are their own numbers, in no iteration
    assert [(s["name"], s["ms"]) for s in doc["session_setup"]] == setup
    assert (
        "model_loading_uri 10.000 ms" in doc["range_choice"]
        or "model_loading_uri 120.000 ms" in doc["range_choice"]
    )

    api = tracekit.analyze(path)
    assert api.verdict == "compute" and api.range_name == "model_run"
    assert api.iterations["gpu_busy_ms"].to_list() == [it["gpu_busy_ms"]]
    assert [(s["name"], s["ms"]) for s in api.session_setup] == setup

    row, _ = table_row(TraceInput(path=path), AnalysisOptions())
    assert (row["latency_ms"], row["gpu_busy_ms"]) == (it["latency_ms"], it["gpu_busy_ms"])
    report = config_row(analyze_input(path))
    assert (report["traced_latency_ms"], report["gpu_busy_ms"], report["bound"]) == (
        it["latency_ms"],
        it["gpu_busy_ms"],
        "compute",
    )
    assert report["framework_overhead_fraction"] == pytest.approx(1 - busy_ms / latency_ms)


def test_other_session_ranges_stay_reachable_and_multi_run_profiles_are_unchanged(tmp_path, capsys):
    path = _write(tmp_path, "profile.synthetic.json", PROFILE_2019)
    doc = _json(capsys, "analyze", str(path), "--range", "model_loading_uri")
    assert doc["range"] == "model_loading_uri" and doc["iterations"][0]["latency_ms"] == 10.0
    second = [{**e, "ts": e["ts"] + 100_000} for e in PROFILE_2019 if e["name"] not in ("model_loading_uri",)]
    second = [e for e in second if e["name"] != "session_initialization"]
    twice = _write(tmp_path, "twice.synthetic.json", PROFILE_2019 + second)
    doc = _json(capsys, "analyze", str(twice))
    assert doc["range"] == "model_run" and len(doc["iterations"]) == 2
    assert [i["gpu_busy_ms"] for i in doc["iterations"]] == [0.65, 0.65]


def test_session_events_only_give_latency_and_no_verdict(tmp_path, capsys):
    events = [e for e in PROFILE_2019 if e["cat"] == "Session"]
    path = _write(tmp_path, "session_only.synthetic.json", events)
    doc = _json(capsys, "analyze", str(path))
    assert doc["range"] == "model_run" and doc["iterations"][0]["latency_ms"] == 1.0
    assert doc["summary"]["bound"] is None
    assert doc["no_verdict"].startswith(
        "no framework-/compute-bound verdict: the trace holds ranges but no GPU"
    )
    assert "ONNX Runtime's profiler with its Node events kept" in doc["no_verdict"]
    assert doc["warnings"][0] == doc["no_verdict"]  # said once: the analyzer's shorter line is not repeated
    assert not any(w.startswith("the trace holds no GPU or operator activity") for w in doc["warnings"])
    assert main(["analyze", str(path)]) == 0
    text = capsys.readouterr().out
    assert "verdict:" not in text.replace("no framework-/compute-bound verdict:", "")
    assert tracekit.analyze(path).verdict is None


# ---------------------------------------------------------------------------------------------- ncu alone


def test_ncu_report_alone_gets_no_verdict_anywhere(capsys):
    """The real ncu CSV tracekit collected on an H200 (eager BERT-base fp16, 3 iterations, 606 kernels)."""
    doc = _json(capsys, "analyze", str(NCU_SAMPLE))
    assert doc["summary"]["bound"] is None
    assert doc["no_verdict"].startswith(
        "no framework-/compute-bound verdict: Nsight Compute replays each kernel"
    )
    it = doc["iterations"][0]
    # what a back-to-back timeline cannot give is not shown: latency, overhead, utilization, idle
    for key in ("latency_ms", "cpu_ms", "framework_overhead_ms", "gpu_utilization", "idle_ms", "idle_gaps"):
        assert it[key] is None, key
    assert "idle_attribution" not in doc and doc["longest_gaps"] == []
    # what it measured stays: 606 kernels and their summed durations
    durations = tracekit.read_trace(NCU_SAMPLE).kernel_metrics.unique("kernel")["duration_ns"].sum()
    assert it["kernels"] == 606
    assert it["gpu_busy_ms"] == pytest.approx(durations / 1e6, rel=1e-12)
    assert main(["analyze", str(NCU_SAMPLE)]) == 0
    text = capsys.readouterr().out
    assert "compute-bound —" not in text and "framework-bound —" not in text
    assert "warning: no framework-/compute-bound verdict: Nsight Compute" in text
    assert tracekit.analyze(NCU_SAMPLE).verdict is None
    assert config_row(analyze_input(NCU_SAMPLE))["bound"] is None


def test_table_says_why_a_bare_ncu_row_is_empty(capsys):
    doc = _json(capsys, "table", str(NCU_SAMPLE))
    (row,) = doc["rows"]
    assert row["latency_ms"] is None and row["sms_active"] is None and row["warp_occupancy"] is None
    assert row["empty_because"] == NCU_ALONE
    assert row["sms_active_kernel_time"] is not None
    assert any(
        w.endswith(
            f"{NCU_ALONE}; add a timeline trace of the same configuration (nsys or torch.profiler: "
            "tracekit collect --profiler nsys --profiler ncu, or tracekit table TIMELINE --ncu REPORT)"
        )
        for w in doc["warnings"]
    )
    assert main(["table", str(NCU_SAMPLE)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert (
        "Nsight Compute alone: no timeline (ncu replays each kernel by itself and records no start times)"
        in text
    )


@pytest.mark.parametrize("name", ["cutlass_a100_3kernels.ncu-rep", "sglang_h800_5kernels.ncu-rep"])
def test_real_ncu_reports_get_no_verdict(name):
    pytest.importorskip("ncu_report")
    analyzed = tracekit.analyze(real_trace("ncu", name))
    assert analyzed.verdict is None and analyzed.summary.bound is None
    assert analyzed.to_json()["summary"]["bound"] is None
    assert analyzed.iterations["latency_ms"].to_list() == [None]


# --------------------------------------------------------------------------------------------- precision

#: A synthetic int8 (QOperator-format) single-run profile: QuantizeLinear takes the float input first, the
#: QLinearMatMul/QLinearConv nodes do the work.
PROFILE_INT8 = [
    _ev("Session", "model_run", 0, 1_000),
    _node_11x("/x_quant", "QuantizeLinear", 10, 20, [{"float": [1, 64]}, {"float": []}, {"uint8": []}]),
    _node_11x("/fc1", "QLinearMatMul", 40, 400, [{"uint8": [1, 64]}, {"float": []}, {"uint8": []}]),
    _node_11x("/conv", "QLinearConv", 450, 300, [{"uint8": [1, 3, 8, 8]}, {"float": []}, {"uint8": []}]),
    _node_11x("/head", "MatMul", 760, 50, [{"float": [1, 64]}, {"float": [64, 10]}]),
    _node_11x("/y_dequant", "DequantizeLinear", 820, 20, [{"uint8": [1, 10]}, {"float": []}, {"uint8": []}]),
]


def test_int8_model_is_int8_from_its_compute_operators(tmp_path):
    path = _write(tmp_path, "quantized.synthetic.json", PROFILE_INT8)
    config = tracekit.analyze(path).config
    assert config.precision == "int8"
    # (pytest's folder for this test names int8 too: the evidence may add that it agrees)
    assert config.evidence["precision"].startswith(
        "ONNX operator types: 93% of compute-operator time is int8 (QLinearMatMul x1, QLinearConv x1)"
    )
    # the first QuantizeLinear's float input is not the model's precision
    assert config.evidence["precision"].count("float") == 0


def _real_profile(tmp_path: Path, model_path: Path, x: Any) -> Path:
    ort = pytest.importorskip("onnxruntime")
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path / "ort_profile")
    session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    session.run(None, {"x": x})  # profiling on for one run: the most common shape in the wild
    return Path(session.end_profiling())


def _tiny_onnx(tmp_path: Path) -> tuple[Path, Any]:
    torch = pytest.importorskip("torch")
    import warnings

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 64))
    x = torch.randn(4, 64)
    path = tmp_path / "tiny.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), str(path), input_names=["x"], output_names=["y"], dynamo=False)
    return path, x.numpy()


def test_real_single_run_profile_from_onnxruntime(tmp_path):
    model, x = _tiny_onnx(tmp_path)
    profile = _real_profile(tmp_path, model, x)
    trace = tracekit.read_trace(profile)
    runs = trace.ranges.filter(pl.col("name") == "model_run")
    assert runs.height == 1 and [s["name"] for s in trace.meta["session_setup"]] == [
        "model_loading_uri",
        "session_initialization",
    ]
    analyzed = tracekit.analyze(profile)
    assert analyzed.range_name == "model_run" and analyzed.iterations.height == 1
    start, end = runs.row(0)[:2]
    inside = trace.ops.filter((pl.col("start") >= start) & (pl.col("end") <= end))
    assert inside.height == trace.ops.height > 0
    union = inside.sort("start").select("start", "end").rows()  # ORT runs these nodes one after another
    assert all(a[1] <= b[0] for a, b in zip(union, union[1:], strict=False))
    busy_ns = sum(e - s for s, e in union)
    assert analyzed.iterations["gpu_busy_ms"][0] == pytest.approx(busy_ns / 1e6, abs=1e-9)
    assert analyzed.iterations["latency_ms"][0] == pytest.approx((end - start) / 1e6, abs=1e-9)
    assert analyzed.config.precision == "fp32"


@pytest.mark.parametrize("mode", ["dynamic", "static"])
def test_real_quantized_model_is_int8(tmp_path, mode):
    pytest.importorskip("onnxruntime")
    from onnxruntime import quantization as q

    model, x = _tiny_onnx(tmp_path)
    quantized = tmp_path / f"tiny_{mode}.onnx"
    if mode == "dynamic":  # MatMulInteger (fused into DynamicQuantizeMatMul by ORT)
        q.quantize_dynamic(str(model), str(quantized), weight_type=q.QuantType.QInt8)
    else:  # QOperator format: QuantizeLinear on the float input, then QLinearMatMul

        class Reader(q.CalibrationDataReader):
            def __init__(self) -> None:
                self.batches = iter([{"x": x}])

            def get_next(self) -> dict[str, Any] | None:
                return next(self.batches, None)

        q.quantize_static(str(model), str(quantized), Reader(), quant_format=q.QuantFormat.QOperator)
    analyzed = tracekit.analyze(_real_profile(tmp_path, quantized, x))
    assert analyzed.config.precision == "int8", analyzed.config.evidence
    assert analyzed.config.evidence["precision"].startswith("ONNX operator types: ")


def test_report_on_an_ncu_run_has_no_verdict(tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["report", str(NCU_SAMPLE.parent), "-o", str(out)]) == 0  # was an internal error once
    capsys.readouterr()
    (config,) = json.loads((out / "report.json").read_text())["configs"]
    assert (config["bound"], config["gpu_utilization"], config["traced_latency_ms"]) == (None, None, None)
    assert config["latency_ms"] is not None  # the untraced latency run.json records
    assert (out / "fig_breakdown.png").is_file()  # its timeline figure: none (the next test)


def test_report_draws_no_timeline_of_an_ncu_run(tmp_path, capsys):
    """An ncu run has no measured timeline (kernels laid back to back by the reader): report draws none."""
    out = tmp_path / "rep"
    assert main(["report", str(NCU_SAMPLE.parent), "-o", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    assert (out / "fig_breakdown.png").is_file()
    assert not list(out.glob("fig_timeline*"))
    assert "timeline" not in json.loads((out / "report.json").read_text())
