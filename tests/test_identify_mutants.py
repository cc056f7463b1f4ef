"""Runtime / batch / precision identification (tracekit.analyzers.identify): the cases the sampled mutation run
of issue 33 (2026-11-26, ``python benchmarks/mutation.py identify --sample 100``) found unchecked, one test per
behaviour.

Every trace here is hand-built (synthetic, not a measurement); each test asserts the exact value, evidence line,
candidates or uncertainty flag a user sees (``tracekit table``'s inferred-config notes and ``uncertain`` field).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tests.builders import make_trace
from tests.test_identify import ATEN_KERNEL, cpu_ops, trace
from tracekit.analyzers.identify import (
    FROM_CONTENT,
    FROM_NAME,
    UNCERTAIN,
    batch_from_content,
    batch_from_steps,
    identify,
    ort_evidence,
    precision_from_kernels,
    precision_from_operators,
    runtime_from_content,
)
from tracekit.inputs import TraceInput
from tracekit.model import Trace
from tracekit.session import TraceConfig


def operator_trace(operators: list[str], kernels: list[str] = ()) -> Trace:
    """CPU operators recorded as ops of kind ``operator`` (no ``cpu_op_summary``), then kernels; 100 ns each,
    back to back; synthetic."""
    names = [*operators, *kernels]
    n = len(names)
    ops = pl.DataFrame(
        {
            "start": [i * 100 for i in range(n)],
            "end": [i * 100 + 100 for i in range(n)],
            "kind": ["operator"] * len(operators) + ["kernel"] * len(kernels),
            "name": names,
            "graph": [None] * n,
        },
        schema_overrides={"graph": pl.Int64},
    )
    return Trace(ops=ops, meta={"synthetic": True})


def ort_operator_types(entries: list[tuple[str, int, int, list[str]]]) -> Trace:
    """A trace whose ``meta["operator_types"]`` is what the ORT reader writes: (op, total ns, count, input
    types) per ONNX operator type; synthetic."""
    types = [{"op": op, "ns": ns, "count": count, "types": t} for op, ns, count, t in entries]
    return trace(meta={"operator_types": types})


# ------------------------------------------------------------------------------------------- runtime


def test_ort_evidence_called_alone_reads_the_trace_names():
    """ort_evidence without a precomputed name cache builds its own (not None): an onnxruntime:: kernel."""
    assert ort_evidence(trace(["void onnxruntime::cuda::_UnaryElementWise<float>(float*)"]), 0) == (
        "1 onnxruntime:: kernel name(s)"
    )


def test_compile_ranges_evidence_line():
    found = runtime_from_content(trace([ATEN_KERNEL], ranges=["CompiledFunction"]))
    assert (found.value, found.evidence) == (
        "compile",
        "torch.compile ranges (CompiledFunction / Torch-Compiled Region)",
    )


def test_prim_namespace_count_alone_means_torchscript():
    """The Kineto reader may cut rare names from ``names`` but ``namespaces`` counts every operator: 10 prim::
    operators whose names were cut still mean TorchScript (evidence without an example name)."""
    summary = cpu_ops({"aten::linear": 30})
    summary["namespaces"]["prim"] = 10
    summary["count"] = 40
    found = runtime_from_content(trace([ATEN_KERNEL], meta={"cpu_op_summary": summary}))
    assert (found.value, found.evidence, found.ambiguous) == (
        "torchscript",
        "TorchScript operators (graph-executor names)",
        False,
    )


def test_aten_operators_in_the_ops_frame_mean_pytorch():
    """No ``cpu_op_summary``, but CPU operators as ops of kind ``operator``: their distinct aten:: names."""
    found = runtime_from_content(operator_trace(["aten::linear", "aten::addmm", "aten::linear"], ["gemm_k"]))
    assert (found.value, found.source, found.ambiguous) == ("pytorch", FROM_CONTENT, False)
    assert found.evidence == "2 aten:: operator names, no TorchScript or compile markers"


def test_aten_ranges_alone_are_counted_as_ranges_and_ambiguous():
    """aten:: NVTX ranges without any ATen kernel: the evidence counts the ranges (not "0 ATen kernels")."""
    found = runtime_from_content(trace(["gemm_k"], ranges=["aten::linear", "aten::add"]))
    assert (found.value, found.ambiguous) == ("pytorch", True)
    assert found.evidence == "2 aten:: ranges; no CPU-operator information to tell eager from TorchScript"


def test_aten_kernels_with_cpu_operator_information_but_no_aten_operator_are_eager_pytorch():
    """A CPU-operator summary without aten:: or TorchScript operators: ATen kernels say PyTorch, not ambiguous."""
    found = runtime_from_content(trace([ATEN_KERNEL], meta={"cpu_op_summary": cpu_ops({"custom::my_op": 3})}))
    assert (found.value, found.ambiguous) == ("pytorch", False)
    assert found.evidence == "1 ATen kernel name(s), no TorchScript or compile markers"


def test_file_names_with_cuda_graphs_name_the_graph_variants():
    """A trace whose content says nothing: onnx / compile with a cuda-graph hint in the name."""
    onnx = identify(trace(["B"]), "runs/onnx_cudagraph_b1.json").runtime
    assert (onnx.value, onnx.source, onnx.evidence) == (
        "onnx-cuda-graphs",
        FROM_NAME,
        "'onnx' in onnx_cudagraph_b1.json",
    )
    compiled = identify(trace(["B"]), Path("runs") / "compile-cuda-graph.json").runtime
    assert (compiled.value, compiled.evidence) == (
        "compile-cudagraphs",
        "'compile' in compile-cuda-graph.json",
    )


# ------------------------------------------------------------------------------------- batch size


def test_ort_embedding_inputs_give_batch_and_sequence():
    """ORT's ``embedding_inputs`` (a Gather of a float table by int64 ids) are read, not only first_op_inputs."""
    gather = {"name": "Gather", "dims": [[30522, 768], [2, 64]], "types": ["float", "int64"]}
    batch, seq = batch_from_content(trace(meta={"embedding_inputs": [gather]}))
    assert (batch.value, seq.value) == (2, 64)
    assert batch.evidence == "first dim of Gather ids [2, 64] (int64; [30522, 768] is its weight)"


def test_disagreeing_sources_are_flagged_uncertain_with_both_candidates_in_the_config():
    """Content batch 4 vs file name 8: the settled value is flagged uncertain, so the table lists both."""
    first = {"name": "aten::embedding", "dims": [[1000, 16], [4, 16]], "types": ["float", "long int"]}
    t = trace(meta={"first_op_inputs": first})
    settled = identify(t, "pytorch_bs8.json").batch_size
    assert (settled.value, settled.source, settled.uncertain) == (None, UNCERTAIN, True)
    config = TraceConfig.resolve(TraceInput(path=Path("pytorch_bs8.json")), {}, "gpu", t)
    assert config.batch_size is None
    assert config.uncertain["batch_size"] == (4, 8)


# -------------------------------------------------------------------------------------- precision


def test_ort_operator_precision_is_the_dominant_compute_types_share_and_top_operators():
    """Element-wise Add (even listed first, with the most time) does not count; fp16 compute 7000 ns vs fp32
    1000 ns = 87.5% shown as 88%; the three fp16 operator types with the most time, with their node counts."""
    t = ort_operator_types(
        [
            ("Add", 9000, 40, ["float16"]),
            ("Attention", 4000, 12, ["float16", "int32"]),
            ("MatMul", 2000, 48, ["float16"]),
            ("Gemm", 500, 2, ["float16"]),
            ("Conv", 500, 1, ["float16"]),
            ("FusedMatMul", 1000, 3, ["float"]),
        ]
    )
    found = precision_from_operators(t)
    assert (found.value, found.source, found.uncertain) == ("fp16", FROM_CONTENT, False)
    assert found.evidence == (
        "ONNX operator types: 88% of compute-operator time is fp16 (Attention x12, MatMul x48, Gemm x2)"
    )
    assert identify(t, "model.json").precision.value == "fp16"


def test_ort_operator_precision_tie_is_uncertain_with_both_candidates():
    t = ort_operator_types([("MatMul", 1000, 4, ["float16"]), ("Gemm", 1000, 2, ["float"])])
    found = precision_from_operators(t)
    assert (found.value, found.source, found.uncertain, found.candidates) == (
        None,
        UNCERTAIN,
        True,
        ("fp16", "fp32"),
    )
    assert found.evidence == "ONNX operator types: equal compute-operator time in fp16 and fp32"
    config = TraceConfig.resolve(TraceInput(path=Path("model.json")), {}, "gpu", t)
    assert config.precision is None
    assert config.uncertain["precision"] == ("fp16", "fp32")


def test_kernel_precision_tie_lists_the_types_in_name_order():
    """An fp32 and an fp16 kernel of 100 ns each: a tie, the candidates in a fixed (alphabetical) order."""
    found = precision_from_kernels(trace(["sgemm_32x32", "h1688gemm"]))
    assert (found.value, found.source, found.candidates) == (None, UNCERTAIN, ("fp16", "fp32"))
    assert found.evidence == "kernel names: equal kernel time in fp16 and fp32"


def test_ort_operator_precision_without_node_time_weighs_node_counts_and_says_so():
    """ORT writes whole microseconds: a model of sub-microsecond nodes records 0 ns everywhere. The share used to
    read "0% of compute-operator time is fp16"; node counts weigh instead (48 fp16 of 51 = 94%), said aloud."""
    t = ort_operator_types([("MatMul", 0, 48, ["float16"]), ("FusedMatMul", 0, 3, ["float"])])
    found = precision_from_operators(t)
    assert (found.value, found.source, found.uncertain) == ("fp16", FROM_CONTENT, False)
    assert found.evidence == (
        "ONNX operator types: 94% of compute-operator nodes (no node time recorded) are fp16 (MatMul x48)"
    )
    one = precision_from_operators(ort_operator_types([("MatMul", 0, 5, ["float16"])]))
    assert (
        one.evidence
        == "ONNX operator types: 100% of compute-operator nodes (no node time recorded) are fp16 (MatMul x5)"
    )
    tie = precision_from_operators(
        ort_operator_types([("MatMul", 0, 2, ["float16"]), ("Gemm", 0, 2, ["float"])])
    )
    assert (tie.value, tie.candidates) == (None, ("fp16", "fp32"))
    assert (
        tie.evidence
        == "ONNX operator types: equal compute-operator nodes (no node time recorded) in fp16 and fp32"
    )


# ------------------------------------------- the second, independent sample (seed 34) found these unchecked


def test_ort_operator_precision_winner_is_the_most_time_not_the_first_name():
    """fp32 compute dominates (3000 ns against 1000 ns of fp16): the ranking is by time, not by name."""
    t = ort_operator_types([("MatMul", 1000, 4, ["float16"]), ("Gemm", 3000, 2, ["float"])])
    found = precision_from_operators(t)
    assert found.value == "fp32"
    assert found.evidence == "ONNX operator types: 75% of compute-operator time is fp32 (Gemm x2)"


def test_an_embedding_with_a_float_table_and_no_integer_ids_is_no_lookup():
    """A Gather of two float inputs (no integer ids) gives no batch size rather than failing."""
    gather = {"name": "Gather", "dims": [[30522, 768], [2, 64]], "types": ["float", "float"]}
    assert batch_from_content(make_trace(meta={"embedding_inputs": [gather]})) == (None, None)


def test_a_step_name_of_exactly_the_example_length_is_shown_whole_one_longer_is_cut():
    """The evidence quotes one step name up to 60 characters whole; a 61-character name is cut to 59 + '…'."""
    base = "step[DECODE bs=2 g_sq=2 g_sqsq=2 g_sqsk=30 g_sk=30"
    whole = base + "0" * (59 - len(base)) + "]"
    longer = base + "0" * (60 - len(base)) + "]"
    assert (len(whole), len(longer)) == (60, 61)
    shown = batch_from_steps(make_trace(ranges=[(0, 100, whole), (100, 200, whole)]))
    assert shown.evidence == f"SGLang step names: 2 requests in each of 2 step(s) ({whole!r})"
    cut = batch_from_steps(make_trace(ranges=[(0, 100, longer), (100, 200, longer)]))
    assert cut.evidence == f"SGLang step names: 2 requests in each of 2 step(s) ({longer[:59] + '…'!r})"
