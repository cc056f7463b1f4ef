"""Runtime / batch size / sequence length / precision inferred from a trace (tracekit.analyzers.identify).

Each rule on a hand-built synthetic trace (only the events the rule looks at), then the study's own traces,
whose file names say which runtime and batch size each one is."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import real_trace
from tracekit.analyzers.identify import (
    FROM_CONTENT,
    FROM_NAME,
    UNCERTAIN,
    batch_from_content,
    hints_from_name,
    identify,
    precision_from_content,
    precision_from_kernels,
    runtime_from_content,
)
from tracekit.inputs import TraceInput
from tracekit.model import Trace
from tracekit.session import FROM_RUN, FROM_SIDECAR, TraceConfig, analyze_trace, inference_notes

ATEN_KERNEL = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::Half>>(int)"


def trace(
    kernels: list[str] = (),
    api: list[str] = (),
    ranges: list[str] = (),
    graph: int | None = None,
    meta: dict | None = None,
) -> Trace:
    """Kernels of 100 ns back to back, API calls and ranges by name only; synthetic."""
    n = len(kernels)
    ops = pl.DataFrame(
        {
            "start": [i * 100 for i in range(n)],
            "end": [i * 100 + 100 for i in range(n)],
            "kind": ["kernel"] * n,
            "name": list(kernels),
            "graph": [graph] * n,
        },
        schema_overrides={"graph": pl.Int64},
    )
    calls = pl.DataFrame({"start": list(range(len(api))), "end": list(range(len(api))), "name": list(api)})
    rng = pl.DataFrame({"start": [0] * len(ranges), "end": [10] * len(ranges), "name": list(ranges)})
    return Trace(ops=ops, api=calls, ranges=rng, meta={"synthetic": True, **(meta or {})})


def cpu_ops(names: dict[str, int], launches: int = 10, outside: float = 0.0) -> dict:
    """A ``meta["cpu_op_summary"]`` as the Kineto reader's contract defines it."""
    namespaces: dict[str, int] = {}
    for name, count in names.items():
        ns = name.split("::")[0] if "::" in name else ""
        namespaces[ns] = namespaces.get(ns, 0) + count
    return {
        "count": sum(names.values()),
        "names": names,
        "namespaces": namespaces,
        "launches": launches,
        "launches_outside_ops": outside,
    }


# ------------------------------------------------------------------------------------------- runtime


def test_graph_launch_calls_mean_pytorch_cuda_graphs():
    found = runtime_from_content(trace([ATEN_KERNEL], api=["cudaGraphLaunch"] * 3))
    assert (found.value, found.source) == ("cuda-graphs", FROM_CONTENT)
    assert found.evidence == "3 cudaGraphLaunch calls, no ONNX Runtime evidence"
    assert runtime_from_content(trace(["k"], api=["cuGraphLaunch"])).value == "cuda-graphs"


def test_graph_ids_on_ops_mean_cuda_graphs():
    found = runtime_from_content(trace(["k", "k"], graph=7))
    assert found.value == "cuda-graphs"
    assert found.evidence.startswith("2 ops ran as nodes of 1 CUDA graph(s)")


@pytest.mark.parametrize(
    ("kwargs", "evidence"),
    [
        ({"meta": {"format": "ort"}}, "ONNX Runtime profile format"),
        ({"meta": {"providers": ["CUDAExecutionProvider"]}}, "execution providers CUDAExecutionProvider"),
        (
            {"kernels": ["void onnxruntime::cuda::_BinaryElementWise<float>(float*)"]},
            "1 onnxruntime:: kernel",
        ),
        ({"meta": {"thread_names": ["onnxruntime intra-op"]}}, "1 ONNX Runtime thread/range/operator name"),
    ],
)
def test_ort_own_evidence_means_onnx(kwargs, evidence):
    found = runtime_from_content(trace(**kwargs))
    assert found.value == "onnx"
    assert found.evidence.startswith(evidence)


def test_kineto_launches_outside_framework_ops_without_aten_kernels_mean_onnx():
    meta = {"cpu_op_summary": cpu_ops({"aten::zeros": 2, "aten::empty": 2}, launches=130, outside=0.97)}
    found = runtime_from_content(trace(["volta_scudnn_128x64_relu_xregs_large_nn_v1"], meta=meta))
    assert found.value == "onnx"
    assert found.evidence == "97% of 130 kernel launches outside any framework operator, no ATen kernels"
    # The same launches with ATen kernels are PyTorch's (aten ops launched them), not ORT's.
    assert runtime_from_content(trace([ATEN_KERNEL], meta=meta)).value == "pytorch"
    # Launches inside operators: not ORT.
    inside = {"cpu_op_summary": cpu_ops({"aten::conv2d": 5}, outside=0.0)}
    assert runtime_from_content(trace(["volta_scudnn_128x64"], meta=inside)).value == "pytorch"


def test_launches_outside_ops_of_a_trace_with_no_cpu_operator_say_nothing():
    """torch.profiler without CPU activity records no operator at all: every launch is "outside", which says
    nothing of ONNX Runtime (the synthetic rank traces were called onnx by this rule)."""
    meta = {"cpu_op_summary": cpu_ops({}, launches=120, outside=1.0)}
    assert runtime_from_content(trace(["ncclDevKernel_AllReduce_Sum_f16_RING_LL"], meta=meta)) is None


def test_ort_with_graph_launches_is_onnx_cuda_graphs():
    found = runtime_from_content(trace(["onnxruntime::cuda::k"], api=["cudaGraphLaunch"]))
    assert found.value == "onnx-cuda-graphs"
    assert found.evidence == "1 onnxruntime:: kernel name(s); 1 cudaGraphLaunch call"


def test_inductor_triton_kernels_or_compiled_ranges_mean_compile():
    found = runtime_from_content(trace(["triton_poi_fused_add_0", ATEN_KERNEL]))
    assert (found.value, found.evidence) == ("compile", "1 Inductor/Triton kernel name(s) (triton_*)")
    assert (
        runtime_from_content(trace([ATEN_KERNEL], ranges=["Torch-Compiled Region: 0/0"])).value == "compile"
    )
    assert runtime_from_content(trace([ATEN_KERNEL], ranges=["CompiledFunction"])).value == "compile"
    with_graphs = runtime_from_content(trace(["triton_per_fused_1"], api=["cudaGraphLaunch"]))
    assert with_graphs.value == "compile-cudagraphs"


@pytest.mark.parametrize(
    "names",
    [
        {"<forward op>": 1, "aten::linear": 10},
        {"fallback_function": 2, "aten::linear": 10},
        {"prim::TupleConstruct": 1, "aten::linear": 10},
    ],
)
def test_torchscript_markers_mean_torchscript(names):
    found = runtime_from_content(trace([ATEN_KERNEL], meta={"cpu_op_summary": cpu_ops(names)}))
    assert found.value == "torchscript"
    assert not found.ambiguous


def test_torchscript_marker_in_nvtx_ranges():
    assert runtime_from_content(trace([ATEN_KERNEL], ranges=["prim::CallMethod"])).value == "torchscript"


def test_aten_operators_mean_pytorch_eager():
    found = runtime_from_content(trace([ATEN_KERNEL], meta={"cpu_op_summary": cpu_ops({"aten::linear": 12})}))
    assert (found.value, found.ambiguous) == ("pytorch", False)
    assert found.evidence == "12 aten:: operators, no TorchScript or compile markers"


def test_aten_kernels_alone_are_pytorch_but_ambiguous_and_a_name_refines_them(tmp_path):
    found = runtime_from_content(trace([ATEN_KERNEL]))
    assert (found.value, found.ambiguous) == ("pytorch", True)
    refined = identify(trace([ATEN_KERNEL]), tmp_path / "torchscript-batch16.json").runtime
    assert (refined.value, refined.source) == ("torchscript", FROM_NAME)
    assert "no CPU-operator information" in refined.evidence


def test_content_beats_a_disagreeing_file_name_with_a_warning(tmp_path):
    identity = identify(trace(["k"], api=["cudaGraphLaunch"]), tmp_path / "onnx_b1.json")
    assert (identity.runtime.value, identity.runtime.source) == ("cuda-graphs", FROM_CONTENT)
    assert "suggests runtime 'onnx'" in identity.warnings["runtime"]


def test_nothing_known():
    assert runtime_from_content(trace(["B", "C"])) is None
    assert identify(trace(["B"]), "x/trace.json").runtime is None


# ------------------------------------------------------------------------------ batch, precision


def test_first_operator_input_dims_and_type_give_batch_and_precision():
    first = {
        "name": "aten::conv2d",
        "dims": [[16, 3, 224, 224], [64, 3, 7, 7], [], []],
        "types": ["c10::Half"],
    }
    t = trace(meta={"first_op_inputs": first})
    batch, seq = batch_from_content(t)
    assert (batch.value, batch.source, seq) == (16, FROM_CONTENT, None)
    assert batch.evidence == "first dim of aten::conv2d input [16, 3, 224, 224]"
    assert precision_from_content(t).value == "fp16"


def test_factory_ops_are_passed_over_and_token_ids_give_the_sequence_length():
    ops = [
        {"name": "aten::zeros", "dims": [[4, 4]], "types": ["float"]},
        {"name": "aten::embedding", "dims": [[30522, 768], [8, 128]], "types": ["c10::BFloat16", "long int"]},
    ]
    t = trace(meta={"first_op_inputs": ops})
    batch, seq = batch_from_content(t)
    assert (batch.value, seq.value) == (8, 128)  # the indices, not the vocabulary of the table
    assert precision_from_content(t).value == "bf16"


@pytest.mark.parametrize(("dtype", "expected"), [("float", "fp32"), ("double", "fp64"), ("float16", "fp16")])
def test_precision_names(dtype, expected):
    t = trace(meta={"first_op_inputs": {"name": "aten::linear", "dims": [[2, 8], [8, 8]], "types": [dtype]}})
    assert precision_from_content(t).value == expected


def test_precision_from_kernel_names_is_weighted_by_kernel_time():
    # 3 fp16 kernels (300 ns) beat 1 fp32 kernel (100 ns); an untyped kernel does not count.
    t = trace(["volta_fp16_s884gemm_fp16", ATEN_KERNEL, "h1688gemm", "sgemm_32x32", "B"])
    found = precision_from_kernels(t)
    assert found.value == "fp16"
    assert found.evidence == "kernel names: 75% of typed kernel time is fp16 (3 kernels)"


def test_precision_without_kernel_durations_is_weighted_by_count():
    # Every kernel's end lost (null): no kernel time to weigh by. It used to say "0% of typed kernel time".
    t = trace(["volta_fp16_s884gemm_fp16", "h1688gemm", "sgemm_32x32", ATEN_KERNEL])
    t.ops = t.ops.with_columns(pl.lit(None, dtype=pl.Int64).alias("end"))
    found = precision_from_kernels(t)
    assert found.value == "fp16"
    assert found.evidence == "kernel names: 3 of 4 typed kernels are fp16 (no kernel durations recorded)"


def test_precision_share_of_an_absurd_kernel_stays_a_share():
    # One kernel ending at the int64 maximum: an integer sum of the durations wrapped around (1955100%).
    t = trace(["volta_fp16_s884gemm_fp16", "sgemm_32x32", "sgemm_64x64"])
    t.ops = t.ops.with_columns(
        pl.when(pl.col("name") == "sgemm_32x32").then(2**63 - 1).otherwise(pl.col("end")).alias("end")
    )
    found = precision_from_kernels(t)
    assert found.value == "fp32"
    assert found.evidence == "kernel names: 100% of typed kernel time is fp32 (2 kernels)"


@pytest.mark.parametrize(
    ("name", "batch", "seq", "precision"),
    [
        ("gpu_util_log_onnx-batch16_HERRON_3494129.1666196962094.pt.trace.json", 16, None, None),
        ("gpu_util_log_pytorch-batch16-torch.float16_HERRON_3494129.pt.trace.json", 16, None, "fp16"),
        ("framework_tax_bert_fp16_bs1_cudagraphs_rtx8000.sqlite", 1, None, "fp16"),
        ("pytorch_b4_s128.nsys.sqlite", 4, 128, None),
        ("run_bf16_rtx8000_s3494129x.json", None, None, "bf16"),  # no batch, no seq
        ("model_seq256_bs8_fp32.json", 8, 256, "fp32"),
    ],
)
def test_file_name_hints(name, batch, seq, precision):
    hints = hints_from_name(Path("runs") / name)
    assert {k: v.value for k, v in hints.items()} == {
        k: v for k, v in (("batch_size", batch), ("seq_len", seq), ("precision", precision)) if v is not None
    }
    assert all(v.source == FROM_NAME for v in hints.values())


@given(st.integers(1, 65536), st.sampled_from(["batch", "bs"]), st.sampled_from(["_", "-", "/"]))
def test_batch_hint_round_trips(n, word, sep):
    hint = hints_from_name(Path(f"model{sep}{word}{n}{sep}rtx8000.json"))["batch_size"]
    assert hint.value == n
    # A bare bN is a batch size only in tracekit's own trace names (elsewhere b200 is a GPU).
    assert "batch_size" not in hints_from_name(Path(f"model{sep}b{n}{sep}rtx8000.json"))
    assert hints_from_name(Path(f"compile_b{n}_s128.torch.json.gz"))["batch_size"].value == n


def test_content_and_file_name_that_disagree_give_no_batch_size_but_both():
    # Was: the content's 4 won with a warning. Two kinds of evidence that disagree are shown, not picked from.
    first = {"name": "aten::embedding", "dims": [[1000, 16], [4, 16]], "types": ["float", "long int"]}
    identity = identify(trace(meta={"first_op_inputs": first}), "pytorch_bs8.json")
    assert identity.batch_size.value is None and identity.batch_size.candidates == (4, 8)
    assert identity.batch_size.source == UNCERTAIN
    assert (
        "batch size uncertain, sources disagree: 4 inferred from trace content"
        in identity.warnings["batch_size"]
    )
    assert "vs 8 from file name ('bs8' in pytorch_bs8.json)" in identity.warnings["batch_size"]
    # A linear layer's first dim may be batch x tokens: it is no batch size evidence at all.
    linear = {"name": "aten::linear", "dims": [[4, 16]], "types": ["float"]}
    assert identify(trace(meta={"first_op_inputs": linear}), "pytorch_bs8.json").batch_size.value == 8


# ------------------------------------------------------------------------------------------- config


def test_trace_config_keeps_stated_values_and_infers_the_rest(tmp_path):
    t = trace([ATEN_KERNEL], api=["cudaGraphLaunch"])
    stated = TraceConfig.resolve(TraceInput(path=tmp_path / "x_bs4.sqlite", runtime="pytorch"), {}, "gpu", t)
    assert (stated.runtime, stated.sources["runtime"]) == ("pytorch", FROM_SIDECAR)
    assert (stated.batch_size, stated.sources["batch_size"]) == (4, FROM_NAME)
    assert stated.inferred("batch_size") and not stated.inferred("runtime")
    run = TraceInput(path=tmp_path / "x.sqlite", runtime="onnx", stated_by=FROM_RUN)
    assert TraceConfig.resolve(run, {}, "gpu", t).sources["runtime"] == FROM_RUN
    inferred = TraceConfig.resolve(TraceInput(path=tmp_path / "x.sqlite"), {}, "gpu", t)
    assert inferred.runtime_label == "cuda-graphs (inferred)"
    assert inferred.label == "cuda-graphs (inferred)"
    assert inferred.precision == "fp16"  # the ATen kernel's c10::Half
    assert inference_notes(inferred)[0].endswith(
        "runtime cuda-graphs inferred from trace content (1 cudaGraphLaunch call, no ONNX Runtime evidence); "
        "precision fp16 inferred from trace content (kernel names: 100% of typed kernel time is fp16 (1 kernels))"
    )
    # Without the trace: nothing is inferred.
    assert TraceConfig.resolve(TraceInput(path=tmp_path / "x.sqlite"), {}, "gpu").runtime is None


# ------------------------------------------------------------------------------- the study's traces

STUDY = [
    ("gpu_util_log_onnx-batch1_HERRON_3518956.1666209271797.pt.trace.json", "onnx", 1),
    ("gpu_util_log_onnx-batch16_HERRON_3494129.1666196962094.pt.trace.json", "onnx", 16),
    ("gpu_util_log_pytorch-batch16-torch.float16_HERRON_3494129.1666196964215.pt.trace.json", "pytorch", 16),
    (
        "gpu_util_log_torchscript-batch16-torch.float16_HERRON_3494129.1666196965133.pt.trace.json",
        "torchscript",
        16,
    ),
]


@pytest.mark.parametrize(("name", "runtime", "batch"), STUDY)
def test_study_kineto_traces_agree_with_their_names(name, runtime, batch):
    from tracekit.readers import read_trace

    path = real_trace("paper", "kineto", name)
    identity = identify(read_trace(path), path)
    assert (identity.runtime.value, identity.batch_size.value) == (runtime, batch)
    assert identity.warnings == {}  # the content never contradicts the name
    # Kernel names: the ONNX Runtime runs are fp32 (no fp16 in their names), the PyTorch ones fp16.
    assert identity.precision.value == ("fp32" if runtime == "onnx" else "fp16")
    assert identity.precision.source == FROM_CONTENT


def test_study_nsys_trace_is_cuda_graphs_from_its_content():
    from tracekit.readers import read_trace

    path = real_trace("paper", "framework_tax_bert_fp16_bs1_cudagraphs_rtx8000.sqlite")
    t = read_trace(path)
    assert runtime_from_content(t).value == "cuda-graphs"
    config = analyze_trace(t, TraceInput(path=path), None).config
    assert (config.runtime, config.sources["runtime"]) == ("cuda-graphs", FROM_CONTENT)
    assert config.evidence["runtime"] == "10 cudaGraphLaunch calls, no ONNX Runtime evidence"
    assert (config.batch_size, config.precision) == (1, "fp16")


def test_ort_profile_node_shapes_give_batch_sequence_and_precision():
    from tracekit.readers import read_trace

    path = (
        Path(__file__).resolve().parents[1]
        / "sample_traces"
        / "cpu_onnx_bert_ort"
        / "onnx_b1_s128.ort.json.gz"
    )
    identity = identify(read_trace(path), "profile.json")  # a name without hints
    assert identity.runtime.value == "onnx"
    assert (identity.batch_size.value, identity.seq_len.value, identity.precision.value) == (1, 128, "fp32")
    assert all(v.source == FROM_CONTENT for v in (identity.batch_size, identity.seq_len, identity.precision))
