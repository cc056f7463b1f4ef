"""Round 19's real-trace fidelity: labels a user sees (analyzers/identify.py, analyzers/steps.py). Synthetic traces
built here, with exact expected values; the real traces are read from ../shared/real_traces when present
(skipped otherwise)."""

from __future__ import annotations

import polars as pl
import pytest

from tests.builders import kernels_trace
from tracekit.analyzers.identify import kernel_type, precision_from_kernels, runtime_from_content
from tracekit.model import Trace

# ------------------------------------------------------------------------------ int8 kernel names

#: An int8 CUTLASS GEMM as Nsight Compute demangles it (the shape of the real CUTLASS example report's kernels,
#: cut short: int8 operands ``signed char``, int32 accumulator ``int``, an epilogue that scales in ``float``).
#: Read fp32 before (its ``float``), the precision of the whole report with it.
CUTLASS_INT8 = (
    "void cutlass::Kernel<cutlass::gemm::kernel::Gemm<cutlass::gemm::threadblock::MmaMultistage<"
    "cutlass::gemm::GemmShape<(int)128, (int)96, (int)64>, signed char, cutlass::layout::ColumnMajorInterleaved<"
    "(int)32>, cutlass::arch::Mma<cutlass::gemm::GemmShape<(int)16, (int)8, (int)32>, (int)32, signed char, "
    "cutlass::layout::RowMajor, signed char, cutlass::layout::ColumnMajor, int, cutlass::layout::RowMajor, "
    "cutlass::arch::OpMultiplyAddSaturate>, cutlass::epilogue::thread::LinearCombinationRelu<signed char, (int)8, "
    "int, float>>>(T1::Params)"
)
#: Spellings of int8 GEMMs: cuBLAS's xmma tactics (TensorRT W8A8 engines, torch._int_mm), CUTLASS 2.x library
#: instances (cuBLASLt's int8 fallback on H100), CUTLASS's integer MMA atoms (cute), hipBLASLt/Tensile.
INT8_NAMES = {
    CUTLASS_INT8: "int8",
    "sm80_xmma_gemm_i8i8_i8i32_f32_tn_n_tilesize256x128x64_stage4_warpsize4x2x1_tensor16x8x32": "int8",
    "sm80_xmma_gemm_i8f32_i8i32_f32_tn_n_tilesize128x128x64_stage3_warpsize2x2x1_tensor16x8x32_fused": "int8",
    "sm90_xmma_gemm_i8i32_i8i32_i32_tn_n_tilesize256x128x128_warpgroupsize2x1x1_execute_segment_k_off_kernel": (
        "int8"
    ),
    "void cutlass::Kernel2<cutlass_80_tensorop_i16832gemm_s8_128x64_128x3_tn_align4>(T1::Params)": "int8",
    "cutlass_80_wmma_tensorop_i161616gemm_s8_forwardCompat_128x128_32x2_tn_align4": "int8",
    "cutlass_tensorop_s8_i16832gemm_s8_256x128_64x3_n32t32_align16": "int8",
    "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, "
    "cute::SM80_16x8x32_S32S8S8S32_TN, cutlass::bfloat16_t>>(T1::Params)": "int8",
    "Cijk_Ailk_Bljk_I8II_BH_MT128x128x64_MI32x32x8x1_SN_1LDSB0": "int8",
}
#: Names with int8 in them that compute in no integer type: NCCL's byte collectives, a fill of an int8 tensor.
NOT_INT8_NAMES = {
    "ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)": None,
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<signed char>, "
    "at::detail::Array<char*, 1>>(int, at::native::FillFunctor<signed char>, at::detail::Array<char*, 1>)": None,
    # an fp8 GEMM stays fp8 whatever else it names
    "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::float_e4m3_t, signed char>>": "fp8",
}


@pytest.mark.parametrize(("name", "expected"), [*INT8_NAMES.items(), *NOT_INT8_NAMES.items()])
def test_int8_kernel_spellings(name: str, expected: str | None) -> None:
    """Each spelling's type (the int8 GEMMs read fp32 from their float epilogue, or nothing, before)."""
    assert pl.DataFrame({"name": [name]}).select(kernel_type(pl.col("name"))).item() == expected


FLOAT_NORM = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float>>>"


def test_an_int8_gemm_model_reads_int8_not_fp32() -> None:
    """An int8 CUTLASS GEMM of 900 ns and an fp32 reduction of 100 ns: before, '100% of typed kernel time is
    fp32 (2 kernels)' (the GEMM's float epilogue); the real CUTLASS report (3 such GEMMs, 48.032 us) read fp32."""
    found = precision_from_kernels(kernels_trace([(CUTLASS_INT8, 900), (FLOAT_NORM, 100)]))
    assert found is not None
    assert (found.value, found.evidence) == (
        "int8",
        "kernel names: 90% of typed kernel time is int8 (1 kernels)",
    )


def test_real_cutlass_int8_report_reads_int8(real_traces) -> None:
    """The CUTLASS example's ncu report (13_fused_two_gemms_s8_sm80_shmem: int8 GEMMs) is int8, 3 kernels."""
    from tracekit.readers import read_trace

    trace = read_trace(real_traces / "ncu" / "cutlass_a100_3kernels.ncu-rep")
    found = precision_from_kernels(trace)
    assert found is not None
    assert (found.value, found.evidence) == (
        "int8",
        "kernel names: 100% of typed kernel time is int8 (3 kernels)",
    )


# ------------------------------------------------------------------------------ a compiled helper


def _runtime_trace(kernels: list[str], ranges: list[str], aten_ops: int) -> Trace:
    """SYNTHETIC: kernels of 100 ns back to back, ranges by name, a Kineto CPU-operator summary of
    ``aten_ops`` ``aten::linear`` operators (the Kineto reader's contract)."""
    n = len(kernels)
    ops = pl.DataFrame(
        {
            "start": [i * 100 for i in range(n)],
            "end": [i * 100 + 100 for i in range(n)],
            "kind": ["kernel"] * n,
            "name": kernels,
            "graph": [None] * n,
        },
        schema_overrides={"graph": pl.Int64},
    )
    rng = pl.DataFrame({"start": [0] * len(ranges), "end": [10] * len(ranges), "name": ranges})
    summary = {
        "count": aten_ops,
        "names": {"aten::linear": aten_ops},
        "namespaces": {"aten": aten_ops},
        "launches": n,
        "launches_outside_ops": 0.0,
    }
    return Trace(ops=ops, ranges=rng, meta={"synthetic": True, "cpu_op_summary": summary})


ATEN = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>(int)"
#: vLLM compiles VocabParallelEmbedding's get_masked_input_and_mask with torch.compile even in eager mode:
#: the B200 eager trace holds this one Inductor kernel (and one 'Torch-Compiled Region') among 768 kernels.
MASK_KERNEL = "triton_poi_fused_add_bitwise_and_bitwise_not_bitwise_or_ge_lt_mul_sub_0"


def test_one_compiled_helper_does_not_make_an_eager_model_compiled() -> None:
    """1 Inductor kernel among 400 (0.25%) beside 300 aten operators: the model runs eager. It read 'compile'
    ('1 Inductor/Triton kernel name(s) (triton_*)'), over a file name that said 'eager'."""
    found = runtime_from_content(
        _runtime_trace([MASK_KERNEL, *[ATEN] * 399], ["Torch-Compiled Region: 0/1"], aten_ops=300)
    )
    assert found is not None
    assert (found.value, found.evidence) == (
        "pytorch",
        "300 aten:: operators, no TorchScript markers; torch.compile only around a helper "
        "(1 of 400 kernels from Inductor: 0.25%)",
    )


def test_a_compiled_model_is_still_compile() -> None:
    """2 Inductor kernels of 400 (0.5%, the bound) and 40 of 400: compiled, as before."""
    for n in (2, 40):
        found = runtime_from_content(
            _runtime_trace([*[MASK_KERNEL] * n, *[ATEN] * (400 - n)], ["Torch-Compiled Region: 0/1"], 300)
        )
        assert found is not None
        assert (found.value, found.evidence) == ("compile", "1 Inductor/Triton kernel name(s) (triton_*)")


def test_real_b200_vllm_eager_reads_pytorch(real_traces) -> None:
    """The TraceLens B200 trace is vLLM eager (its MANIFEST; the file name says 'eager'): 1 Inductor kernel of
    768 (VocabParallelEmbedding's compiled mask). The MI300 full-graph trace (48 of 425, 11%) stays compiled."""
    from tracekit.readers import read_trace

    b200 = runtime_from_content(read_trace(real_traces / "tracelens" / "b200_vllm_eager.json.gz"))
    assert b200 is not None
    assert b200.value == "pytorch"
    assert b200.evidence.endswith(
        "torch.compile only around a helper (1 of 768 kernels from Inductor: 0.13%)"
    )
    graphs = runtime_from_content(read_trace(real_traces / "tracelens" / "vllm_decode_full_graphs.json.gz"))
    assert graphs is not None
    assert graphs.value == "compile-cudagraphs"


# ------------------------------------------------------------------------------ SGLang steps in vLLM's format


def _serving_trace(inner: str | None) -> Trace:
    """SYNTHETIC: one process's two steps in vLLM's detailed format (0-10 us and 20-30 us), each holding
    ``inner`` (1-9 us and 21-29 us) when given; one kernel of 2 us in each step."""
    outer = [
        "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk100sqsq32sqsk100)",
        "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk132sqsq32sqsk132)",
    ]
    names, starts, ends = list(outer), [0, 20_000], [10_000, 30_000]
    if inner is not None:
        names += [inner, inner]
        starts += [1_000, 21_000]
        ends += [9_000, 29_000]
    n = len(names)
    ranges = pl.DataFrame(
        {
            "start": starts,
            "end": ends,
            "name": names,
            "pid": [7] * n,
            "thread": [1] * n,
            "device": [None] * n,
        },
        schema_overrides={"device": pl.Int32},
    )
    return Trace(
        ops=pl.DataFrame({"start": [2_000, 22_000], "end": [4_000, 24_000], "kind": ["kernel"] * 2}),
        ranges=ranges,
        meta={"synthetic": True},
    )


@pytest.mark.parametrize(("inner", "engine"), [("step[DECODE bs=32]", "SGLang"), (None, "vLLM")])
def test_steps_in_vllm_format_holding_sglang_steps_are_sglang(inner: str | None, engine: str) -> None:
    """SGLang's scheduler opens its step in vLLM's detailed format around its own ``step[DECODE bs=32]`` (the
    real TraceLens SGLang traces: the range starts inside sglang/srt/managers/scheduler.py's _run_batch_inner).
    Each iteration's engine read 'vLLM'; the classes and counts (decode, 0 + 32) were right and stay."""
    from tracekit.analyzers.ranges import choose_ranges
    from tracekit.analyzers.steps import step_classes

    trace = _serving_trace(inner)
    classes = step_classes(choose_ranges(trace)[0], trace)
    assert classes.select("step_engine", "step_class", "context_requests", "generation_requests").rows() == [
        (engine, "decode", 0, 32),
        (engine, "decode", 0, 32),
    ]


def test_real_sglang_traces_name_sglang(real_traces) -> None:
    """TraceLens's SGLang decode and prefill traces: engine SGLang, classes decode (0 + 32) and prefill (15 + 0)."""
    import tracekit

    for name, row in (
        ("sglang_qwen3-8b_decode", ("SGLang", "decode", 0, 32)),
        ("sglang_qwen3-8b_prefilldecode", ("SGLang", "prefill", 15, 0)),
        ("vllm_decode_full_graphs", ("vLLM", "decode", 0, 32)),
    ):
        result = tracekit.analyze(real_traces / "tracelens" / f"{name}.json.gz")
        got = result.iterations.select("step_engine", "step_class", "context_requests", "generation_requests")
        assert got.rows() == [row], name


# ------------------------------------------------------------------------------ nsys: a GPU name that is no text


@pytest.mark.parametrize(("how", "gpu"), [("blob", "NVIDIA H100"), ("gpuinfo_number", None)])
def test_a_gpu_name_that_is_no_text_is_text_or_unknown(tmp_path, how: str, gpu: str | None) -> None:
    """A damaged SYNTHETIC export (hostile19's case): TARGET_INFO_GPU.name a BLOB (X'4e56...' = b"NVIDIA H100"),
    or no TARGET_INFO_GPU and GpuInfo naming the GPU 5. The name was kept as bytes / int, and analyze's headline
    and JSON output failed on it (internal error). Now the bytes are decoded and a number is no name."""
    import json

    from tests.hostile import run_sql, three_iteration_builder
    from tracekit.readers import read_trace

    b = three_iteration_builder(3)
    if how == "gpuinfo_number":
        b.rows.pop("TARGET_INFO_GPU")
        b.env("GpuInfo", json.dumps({"Gpus": [{"Id": 0, "Name": 5, "PwGpuId": 0, "CuDevice": 0}]}))
    path = b.write(tmp_path / f"gpu_{how}.synthetic.sqlite")
    if how == "blob":
        run_sql(path, "UPDATE TARGET_INFO_GPU SET name = X'4e56494449412048313030'")
    meta = read_trace(path).meta
    assert meta.get("gpu") == gpu
    assert [g["name"] for g in meta["gpus"]] == [gpu]


# ------------------------------------------------------------------------------ --range on GPU-side annotations only


def test_a_range_naming_gpu_side_annotations_only_says_so() -> None:
    """SYNTHETIC: torch.profiler(activities=[CUDA]) writes each step only as its GPU-side annotation
    (hostile19's case): 2 'ProfilerStep#N' of domain gpu, 2 kernels, no host range. `--range 'ProfilerStep#*'`
    said 'the trace holds no NVTX ranges or profiler annotations' - it holds 2 by that name."""
    from tests.builders import make_trace
    from tracekit.analyzers.ranges import select_ranges
    from tracekit.errors import NoActivityError

    trace = make_trace(
        ranges=[(100, 300, "ProfilerStep#0", 0, "gpu"), (500, 700, "ProfilerStep#1", 0, "gpu")],
        ops=[(100, 300, None, 7), (500, 700, None, 7)],
    )
    with pytest.raises(NoActivityError) as raised:
        select_ranges(trace, "ProfilerStep#*")
    assert str(raised.value).endswith(
        "no range named 'ProfilerStep#*': the trace holds no host ranges, only 2 GPU-side annotations (the "
        "projections of host ranges onto the GPU timeline: they span only their device work, so none is an "
        "iteration); leave out --range to analyze the whole trace, or split it with --split-idle MS"
    )


# ------------------------------------------------------------------------------ table --ncu: timeline kernels of no name


def _other_ncu(path, kernels: int, grid: str):
    """A SYNTHETIC Nsight Compute raw-page CSV of ``kernels`` kernels of another program (named
    other_program_kernel_i), 200 us each, 80% SMs active, launched ``grid`` x (128, 1, 1)."""
    head = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
            "Grid Size", "Device", "CC", "gpu__time_duration.sum",
            "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"]  # fmt: skip
    units = [""] * 11 + ["usecond", "%"]
    rows = [
        [
            i,
            7,
            "python",
            "h",
            f"other_program_kernel_{i}",
            1,
            7,
            "(128, 1, 1)",
            grid,
            "0",
            "9.0",
            "200.00",
            "80.00",
        ]
        for i in range(kernels)
    ]
    path.write_text("\n".join(",".join(f'"{v}"' for v in line) for line in [head, units, *rows]) + "\n")
    return path


def _unnamed(tmp_path, source: str):
    """(a SYNTHETIC timeline whose kernels have no name, kernels per iteration): the small Kineto trace with
    "name": null on its kernels (4 iterations of 3, no launch dimensions), or the 3-iteration nsys trace with
    its kernel names deleted from StringIds (2 a iteration, launched (1,1,1) x (128,1,1))."""
    import json

    from tests.hostile import run_sql, small_trace_events, three_iteration_nsys

    if source == "nsys":
        path = three_iteration_nsys(tmp_path / "unnamed.synthetic.sqlite")
        run_sql(path, "DELETE FROM StringIds WHERE value IN ('k100', 'k400')")
        return path, 2
    events = small_trace_events()
    for e in events:
        if e["cat"] == "kernel":
            e["name"] = None
    path = tmp_path / "unnamed.synthetic.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path, 3


def _table_csv(capsys, *args: str):
    import csv
    import io

    from tests.hostile import run_cli

    code, out, err = run_cli(capsys, "table", *args, "--wide", "--format", "csv")
    assert code == 0, err
    (row,) = list(csv.DictReader(io.StringIO(out)))
    return row, err


def test_ncu_values_are_not_joined_unchecked_to_kernels_of_no_name(tmp_path, capsys) -> None:
    """The Kineto timeline's kernels have no name and no launch dimensions, the report is another program's:
    nothing can check the join by order. Before: sms_active 2.66666666667 (80% x 0.03 / 0.9 ms) and kernel-time
    80.0 from 'ncu', unsaid (hostile19's case). Now no value, and a warning says why."""
    timeline, per_iteration = _unnamed(tmp_path, "kineto")
    ncu = _other_ncu(tmp_path / "other.synthetic.csv", per_iteration, "(1, 1, 1)")
    row, err = _table_csv(capsys, str(timeline), "--ncu", str(ncu))
    assert (row["sms_active"], row["sms_active_kernel_time"]) == ("", "")
    assert (
        "12 of 12 matched kernels have no name in the timeline and no launch dimensions to check them by: the "
        "join by order cannot be checked, so their Nsight Compute values are not used"
    ) in err


def test_ncu_values_joined_to_kernels_of_no_name_by_launch_dimensions_are_said(tmp_path, capsys) -> None:
    """The nsys timeline's kernels have no name but launch dimensions, the same as the report's: the join is
    checked by them alone. The value stays (sms_active 24.0 = 80% x 0.3 / 1.0 ms), and now a warning says so."""
    timeline, per_iteration = _unnamed(tmp_path, "nsys")
    ncu = _other_ncu(tmp_path / "other.synthetic.csv", per_iteration, "(1, 1, 1)")
    row, err = _table_csv(capsys, str(timeline), "--ncu", str(ncu))
    assert float(row["sms_active"]) == 24.0
    assert (
        "6 of 6 matched kernels have no name in the timeline: their Nsight Compute values are matched by "
        "position and launch dimensions only"
    ) in err


def test_the_launch_dimension_mismatch_counts_the_kernels_compared(tmp_path, capsys) -> None:
    """Launch dimensions that differ ((64,1,1) in the report, (1,1,1) in the timeline) on kernels of no name:
    it read 'the launch dimensions of 6 of 0 matched kernels differ' (0: the kernels checked by name)."""
    timeline, per_iteration = _unnamed(tmp_path, "nsys")
    ncu = _other_ncu(tmp_path / "other.synthetic.csv", per_iteration, "(64, 1, 1)")
    row, err = _table_csv(capsys, str(timeline), "--ncu", str(ncu))
    assert row["sms_active"] == ""
    assert "the launch dimensions of 6 of 6 matched kernels differ" in err, err


# ------------------------------------------------------------------------------ ORT: events of negative dur


def _ort_gpu_events(first_kernel_dur: int) -> list[dict]:
    """A SYNTHETIC ORT CUDA profile (tests.hostile.ort_gpu_events): 3 model_run of 1000 us, each a MatMul and a
    Relu Node (20 us) whose Kernel event (100 us, stream "7") starts 5 us after its node; run 0's MatMul kernel
    lasts ``first_kernel_dur``."""
    from tests.hostile import ort_gpu_events

    return ort_gpu_events(first_kernel_dur)


@pytest.mark.parametrize("source", ["gpu", "cpu"])
def test_an_ort_event_of_negative_dur_counts_as_one_of_no_readable_dur(tmp_path, source: str) -> None:
    """Run 0's MatMul (a Kernel event of dur -100 on a CUDA profile; a Node of dur -300 on a CPU profile) reads
    as its null-dur twin: counted, with no end time, said. Before: the kernel was clipped to 0 us, unsaid
    (run 0: busy 0.1 as measured); the node dropped as 'a device op ... kineto#646' (run 0: 1 operator)."""
    import json

    from tests.hostile import ort_cpu_events
    from tracekit.readers import read_trace

    if source == "gpu":
        events = _ort_gpu_events(-100)
    else:
        events = ort_cpu_events()
        events[3]["dur"] = -300  # run 0's MatMul node
    path = tmp_path / f"ort_negative_{source}.synthetic.json"
    path.write_text(json.dumps(events))
    trace = read_trace(path)
    untimed = trace.ops.filter(pl.col("end").is_null())
    assert (trace.ops.height, untimed.height) == (6, 1)
    assert untimed["name"][0] == ("matmul_kernel" if source == "gpu" else "MatMul:/a/MatMul")
    what = "GPU ops (Kernel events)" if source == "gpu" else "operators (Node events)"
    assert any(
        w.startswith(
            f"1 of 6 {what} have a negative dur (they end before they begin: damaged events, no duration either)"
        )
        for w in trace.meta["warnings"]
    ), trace.meta["warnings"]


# ------------------------------------------------------------------------------ others' files: strict xfails


def test_work_under_a_nested_annotation_is_no_gpu_annotation_disagreement() -> None:
    """SYNTHETIC: a step [0, 1000) launches a GEMM (corr 1, at 10) and, inside its nested 'nccl:all_gather'
    range [500, 900), a collective (corr 2, at 510). Kineto's GPU-side copies: the step's spans its own GEMM
    [150, 300), the nested range's spans the collective [600, 700). Both ops are the step's, as tracekit
    assigns them, and each lies in its innermost annotation: nothing disagrees."""
    from tests.builders import make_trace
    from tracekit.analyzers.iterations import analyze_iterations

    trace = make_trace(
        ranges=[
            (0, 1000, "ProfilerStep#3"),
            (500, 900, "nccl:all_gather", 1),
            (150, 300, "ProfilerStep#3", 0, "gpu"),
            (600, 700, "nccl:all_gather", 0, "gpu"),
        ],
        api=[(10, 20, 1, "cudaLaunchKernel"), (510, 520, 2, "cudaLaunchKernel")],
        ops=[(150, 300, 1, 7), (600, 700, 2, 7)],
    )
    result = analyze_iterations(trace)
    assert result.iterations["kernels"].to_list() == [2]
    assert not [w for w in result.warnings if "GPU-side annotations" in w]
