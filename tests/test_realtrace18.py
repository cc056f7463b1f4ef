"""Round 18's real-trace fidelity: fp8 and fp4 kernel names (analyzers/identify.py), ORT events with far
timestamps (tracekit/readers/ort.py). Synthetic traces built here; the real TraceLens traces are read from
../shared/real_traces when present (skipped otherwise)."""

from __future__ import annotations

import pytest

from tests.builders import kernels_trace

# ------------------------------------------------------------------------------ fp8 and fp4 kernel names

#: Real spellings: the TraceLens B200 vLLM trace (gpt-oss: mxfp4 MoE weights, e4m3 activations, fp8 KV cache),
#: cuBLASLt's sm90 fp8 GEMM (TensorRT-LLM's cublas tactics), CUTLASS 3.x library instances, trtllm-gen's W4A4
#: batched GEMM (FlashInfer's mm_fp4), hipBLASLt's fp8 GEMMs and Triton's fp8 MoE GEMM.
FP8_NAMES = {
    "void vllm::scaled_fp8_quant_kernel_strided<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*, "
    "c10::BFloat16 const*, float const*, int, long, long)": "fp8",
    "fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext": "fp8",
    "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_transOut_"
    "schedP2x1x2x3_biasM_bN_tma_tmaOpt_clmp_swiGlu_dynBatch_sm100f": "fp8",
    "bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_transOut_"
    "schedP2x1x2x3_biasM_bN_tmaOpt_clmp_dynBatch_sm100f": "fp8",
    "sm90_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize128x128x128_cgasize1x2x1_stage4_gmmastage2_"
    "warpgroupsize1x1x1_tensor64x128x32": "fp8",
    "cutlass3x_sm90_tensorop_gemm_e4m3_e4m3_f32_bf16_bf16_128x128x128_1x1x1_0_tnt_align16_warpspecialized": "fp8",
    "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int>, "
    "cutlass::float_e4m3_t, cutlass::bfloat16_t, float>>(T1::Params)": "fp8",
    "void deep_gemm::fp8_gemm_kernel<4096u, 7168u, 128u, 1u>(__nv_bfloat16*, float*, int*)": "fp8",
    "Cijk_Alik_Bljk_F8BS_BH_Bias_HA_S_SAB_SAV_UserArgs_MT256x256x128_MI16x16x1_SN": "fp8",
    "Cijk_Alik_Bljk_F8B8BS_BH_UserArgs_MT256x256x128_MI16x16x1_SN": "fp8",
    "_matmul_ogs_NNT_bf16xfp8e4nvxmxfp4_16x128x256x1_swiglu": "fp8",
    "bmm_Bfloat16_E2m1E2m1_Fp32_Ab16_Bb16_t128x128x256u2_s6_et128x128_m256x128x64_c2x1x1_rM_TN_transOut_sm100f": (
        "fp4"
    ),
    "bmm_E2m1_E2m1E2m1_Fp32_bA16_bB16_bC16_t128x8x512_s5_sm100f": "fp4",
    "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::float_e2m1_t, "
    "cutlass::bfloat16_t>>(T1::Params)": "fp4",
}
#: Real spellings that name fp8 or fp4 but compute in bf16: the TraceLens MI300 traces' vLLM KV cache of
#: kAuto (``Fp8KVCacheDataType)0``, the cache in the model's type) and Triton's MoE GEMM of mxfp4 weights over
#: bf16 activations (``{Y}x{X}x{W}``: the weights are dequantized to bf16); trtllm-gen's W4A16 GEMM.
NOT_FP8_NAMES = {
    # an fp8 KV cache (Fp8KVCacheDataType)1) is storage: the kernel computes in its scalar_t (review18; the lead's
    # change of the rule): a bf16 model with an fp8 cache is a bf16 model
    "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, (vllm::Fp8KVCacheDataType)1>"
    "(__nv_bfloat16 const*, __nv_bfloat16 const*, unsigned char*, unsigned char*, long const*)": "bf16",
    "void vllm::reshape_and_cache_flash_kernel<__hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0>"
    "(__hip_bfloat16 const*, __hip_bfloat16 const*, __hip_bfloat16*, __hip_bfloat16*, long const*)": "bf16",
    "void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, __hip_bfloat16, "
    "(vllm::Fp8KVCacheDataType)0, 1, 128, 256, false, 4, 1>(__hip_bfloat16 const*, float)": "bf16",
    "void vllm::paged_attention_v2_kernel<__nv_bfloat16, __nv_bfloat16, 128, 16, 128, "
    "vllm::Fp8KVCacheDataType::kAuto, false, 512>(float*)": "bf16",
    "_ZN4vllm25paged_attention_v1_kernelI13__nv_bfloat16S1_Li128ELi16ELi128ELNS_18Fp8KVCacheDataTypeE0ELb0EEEvPT_": (
        "bf16"
    ),
    "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu": "bf16",
    "_matmul_NNT_bf16xbf16xmxfp4_16x256x128x1": "bf16",
    "bmm_Bfloat16_MxE2m1Bfloat16_Fp32_t128x8x512_s5_sm100f": "bf16",
    "ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)": None,
}


@pytest.mark.parametrize(("name", "expected"), [*FP8_NAMES.items(), *NOT_FP8_NAMES.items()])
def test_fp8_and_fp4_kernel_spellings(name: str, expected: str | None) -> None:
    """Each real spelling's type (the fp8 ones read bf16 or nothing before)."""
    import polars as pl

    from tracekit.analyzers.identify import kernel_type

    frame = pl.DataFrame({"name": [name]})
    assert frame.select(kernel_type(pl.col("name"))).item() == expected


#: Block-scale factors are no data type: NVFP4 scales its e2m1 data with unsigned e4m3 factors (cuBLASLt's
#: ``nvjet_sm100_ootst_..._Avec16UE4M3_Bvec16UE4M3``, CUTLASS's ``block_scaled_ue4m3xe2m1``), MX formats with
#: ue8m0 ones. These NVFP4 GEMMs read fp8 (their scales' e4m3) before this was known.
SCALED_NAMES = {
    "nvjet_sm100_ootst_128x128_256x7_4x1_2cta_v_bx_Avec16UE4M3_Bvec16UE4M3_TNT": "fp4",
    "cutlass3x_sm100_bstensorop_s256x128x64gemm_block_scaled_ue4m3xe2m1_ue4m3xe2m1_f32_bf16_bf16_tnt": "fp4",
    "cutlass3x_sm100_bstensorop_s256x128x64gemm_block_scaled_ue8m0xe4m3_ue8m0xe4m3_f32_bf16_bf16_tnt": "fp8",
    "nvjet_sm100_ootst_128x128_256x7_4x1_2cta_v_bx_Avec32UE8M0_Bvec32UE8M0_TNT": None,
}


@pytest.mark.parametrize(("name", "expected"), SCALED_NAMES.items())
def test_block_scale_factors_are_no_fp8(name: str, expected: str | None) -> None:
    import polars as pl

    from tracekit.analyzers.identify import kernel_type

    assert pl.DataFrame({"name": [name]}).select(kernel_type(pl.col("name"))).item() == expected


FP8_GEMM = (
    "sm90_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize128x128x128_cgasize1x2x1_stage4_gmmastage2_"
    "warpgroupsize1x1x1_tensor64x128x32"
)
BF16_ELEMENTWISE = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>"
)
FLOAT_NORM = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float>>>"
W4A16_GEMM = "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu"
W4A4_GEMM = "bmm_Bfloat16_E2m1E2m1_Fp32_Ab16_Bb16_t128x128x256u2_s6_et128x128_m256x128x64_sm100f"


@pytest.mark.parametrize(
    ("gemm", "expected"),
    [
        # W8A8: read bf16 before ("90% of typed kernel time is bf16 (2 kernels)": the GEMM names bf16 output)
        (FP8_GEMM, ("fp8", "kernel names: 60% of typed kernel time is fp8 (1 kernels)")),
        # W4A4: read bf16 before, the same way
        (W4A4_GEMM, ("fp4", "kernel names: 60% of typed kernel time is fp4 (1 kernels)")),
        # W4A16: bf16 compute over fp4 weights, as before
        (W4A16_GEMM, ("bf16", "kernel names: 90% of typed kernel time is bf16 (2 kernels)")),
    ],
)
def test_an_fp8_model_reads_fp8_not_its_output_type(gemm: str, expected: tuple[str, str]) -> None:
    """A GEMM of 600 ns, a bf16 element-wise kernel of 300 ns and an fp32 norm of 100 ns."""
    from tracekit.analyzers.identify import precision_from_kernels

    found = precision_from_kernels(kernels_trace([(gemm, 600), (BF16_ELEMENTWISE, 300), (FLOAT_NORM, 100)]))
    assert found is not None
    assert (found.value, found.evidence) == expected


def test_real_traces_fp8_names(real_traces) -> None:
    """On the TraceLens traces, the kernels typed fp8 or fp4 are exactly the B200 trace's five fp8 names (its
    mxfp4 x e4m3 MoE GEMMs, e4m3 attention, fp8 quantization; its fp8 KV cache's writer is bf16: the cache is
    storage); the MI300 traces' kAuto KV cache and W4A16 MoE GEMMs stay bf16. The B200 trace reads fp8 (bf16
    before; 59% of typed kernel time before its nvjet_tst bf16 GEMMs were typed, 55% after, 54% once the
    cache writer is bf16)."""
    import polars as pl

    from tracekit.analyzers.identify import kernel_type, precision_from_kernels
    from tracekit.readers import read_trace

    narrow: dict[str, list[str]] = {}
    for name in ("b200_vllm_eager", "vllm_decode_full_graphs", "sglang_qwen3-8b_decode"):
        trace = read_trace(real_traces / "tracelens" / f"{name}.json.gz")
        kernels = trace.ops.filter(pl.col("kind") == "kernel").select("name").unique()
        typed = kernels.with_columns(dtype=kernel_type(pl.col("name"))).filter(
            pl.col("dtype").is_in(["fp8", "fp4"])
        )
        narrow[name] = sorted(n[:24] for n in typed.get_column("name"))
        if name == "b200_vllm_eager":
            found = precision_from_kernels(trace)
            assert found is not None
            assert (found.value, found.evidence) == (
                "fp8",
                "kernel names: 54% of typed kernel time is fp8 (144 kernels)",
            )
    assert narrow == {
        "b200_vllm_eager": [
            "bmm_Bfloat16_MxE2m1MxE4m",
            "bmm_MxE4m3_MxE2m1MxE4m3_",
            "fmhaSm100aKernel_QkvE4m3",
            "fmhaSm100aKernel_QkvE4m3",
            "void vllm::scaled_fp8_qu",
        ],
        "vllm_decode_full_graphs": [],
        "sglang_qwen3-8b_decode": [],
    }


# ------------------------------------------------------------------------------ ORT events stamped far away

#: 292 years in microseconds: a damaged ts or dur (the value the nsys and Kineto far-event tests use).
FAR_US = 9.2e15


def _ort_gpu_events(runs: int = 4) -> list[dict]:
    """An ORT CUDA profile (SYNTHETIC): ``runs`` model_run of 1000 µs, 2000 µs apart, each with one MatMul
    node of 300 µs (CUDA EP) that launches one kernel of 200 µs, 50 µs after the node began: latency 1.0 ms,
    GPU busy 0.2 ms per run."""
    from tests.hostile import ort_event

    events = [ort_event("Session", "session_initialization", 0, 100)]
    t = 200
    for _ in range(runs):
        events += [
            ort_event("Session", "model_run", t, 1000),
            ort_event(
                "Node",
                "/m/MatMul_kernel_time",
                t + 10,
                300,
                op_name="MatMul",
                provider="CUDAExecutionProvider",
            ),
            ort_event(
                "Kernel",
                "ampere_sgemm_64x32_tn",
                t + 60,
                200,
                op_name="MatMul",
                parent_name="/m/MatMul",
                stream=7,
                device=0,
            ),
        ]
        t += 2000
    return events


def _damage(events: list[dict], name: str, index: int, **values: float) -> list[dict]:
    hit = [e for e in events if e["name"] == name][index]
    hit.update(values)
    return events


def _ort_file(tmp_path, events: list[dict]):
    import json

    path = tmp_path / "damaged_ort_profile.synthetic.json"
    path.write_text(json.dumps(events))
    return path


def _cpu(runs: int = 5) -> list[dict]:
    from tests.hostile import ort_cpu_events

    return ort_cpu_events(runs)


@pytest.mark.parametrize(
    ("events", "left_out", "iterations", "busy"),
    [
        # a model_run of 292 years: read as an iteration of latency 9.2e12 ms (mean 1.84e12 ms)
        (
            lambda: _damage(_cpu(), "model_run", 4, dur=FAR_US),
            "1 Session events stamped to end more than an hour after every other event began",
            4,
            [0.4] * 4,
        ),
        # a model_run at -292 years: an iteration 292 years before the others
        (
            lambda: _damage(_cpu(), "model_run", 4, ts=-FAR_US),
            "1 Session events stamped more than an hour from every other event",
            4,
            [0.4] * 4,
        ),
        # a node of 292 years: it held every later node of its thread, read as a control-flow node: the
        # operators of the runs after it became ranges (busy 0.1 ms in its run, none after). Now its run keeps
        # its Add (0.1 ms) and the others their 0.4 ms
        (
            lambda: _damage(_cpu(), "/a/MatMul_kernel_time", 1, dur=FAR_US),
            "1 Node events stamped to end more than an hour after every other event began",
            5,
            [0.4, 0.1, 0.4, 0.4, 0.4],
        ),
        # a node stamped 292 years late: its run lost its last node (left out as a run that stopped early)
        (
            lambda: _damage(_cpu(), "/b/Add_kernel_time", 2, ts=FAR_US),
            "1 Node events stamped more than an hour from every other event",
            4,
            [0.4] * 4,
        ),
        # a GPU kernel stamped 292 years late
        (
            lambda: _damage(_ort_gpu_events(), "ampere_sgemm_64x32_tn", 3, ts=FAR_US),
            "1 Kernel events stamped more than an hour from every other event",
            4,
            [0.2, 0.2, 0.2, 0.0],
        ),
    ],
)
def test_ort_events_stamped_far_away_are_left_out(
    tmp_path, capsys: pytest.CaptureFixture[str], events, left_out: str, iterations: int, busy: list[float]
) -> None:
    """One damaged Session, Node or Kernel event (ts or dur of 9.2e15 µs, 292 years) among five runs of an
    ORT profile is left out with a warning that names its category, as the nsys and Kineto readers do; the
    other runs' latencies are their 1.0 ms."""
    from tests.hostile import analyze_json
    from tracekit.readers.ort import read

    path = _ort_file(tmp_path, events())
    warnings = read(path).meta["warnings"]
    assert any(w.startswith(left_out) for w in warnings), warnings
    code, doc, err = analyze_json(capsys, str(path), "--skip", "0")
    assert code == 0, err
    rows = doc["iterations"]
    assert len(rows) == iterations
    assert [r["latency_ms"] for r in rows] == [1.0] * iterations
    assert [round(r["gpu_busy_ms"], 6) for r in rows] == busy


def test_an_ort_profile_without_far_events_is_read_as_before(tmp_path) -> None:
    """A profile of runs spread over two hours (no silence of an hour): nothing is left out."""
    from tests.hostile import ort_event
    from tracekit.readers.ort import read

    events = _cpu(2)
    hour_us = 3_600 * 10**6
    for e in _cpu(2)[2:]:  # the same runs 50 min and 100 min later
        for k in (1, 2):
            events.append(
                ort_event(e["cat"], e["name"], e["ts"] + k * 5 * hour_us // 6, e["dur"], **e["args"])
            )
    trace = read(_ort_file(tmp_path, events))
    assert not [w for w in trace.meta["warnings"] if "hour" in w]
    assert trace.ranges.filter(trace.ranges["name"] == "model_run").height == 6


# ------------------------------------------------------------------------------ TraceLens's other rows

#: TraceLens's categories (TraceLens/TreePerf/gpu_event_analyser.py, ``get_gpu_event_lists``): ``gpu_memcpy``
#: events are memcpy; ``kernel`` and ``gpu_memset`` events are computation, or communication when 'nccl' is in
#: their name. Its exposed memcpy is memcpy not overlapped by computation or communication.
TRACELENS_STEMS = [
    "h100_bert-small",
    "h100_qwen1.5-0.5b_chat",
    "normalization_layer_test",
    "sglang_qwen3-8b_decode",
    "sglang_qwen3-8b_prefilldecode",
    "vllm_decode_full_graphs",
]


def _union_ns(frame) -> int:
    import polars as pl

    from tracekit.model import merged_intervals

    if frame.is_empty():
        return 0
    merged = merged_intervals(frame.select(pl.lit(0).alias("g"), "start", "end"), by=["g"])
    return int((merged["end"] - merged["start"]).sum())


@pytest.mark.parametrize("stem", TRACELENS_STEMS)
def test_op_kinds_match_tracelens_computation_memcpy_and_comm_rows(real_traces, stem: str) -> None:
    """The reader's op kinds against TraceLens's computation_time, total_memcpy_time, exposed_memcpy_time and
    (total, exposed) comm time rows, over the ops TraceLens links by a flow (an 's' event at their call, or an 'f' one at a
    graph launch's: as the busy_time test in test_tracelens_reference does): tracekit's kernels and memsets are its computation, its memcpys its memcpy,
    and tracekit's communication pattern finds no collective where TraceLens finds none. Tolerance: 16 ns + 1e-6
    (TraceLens's float64 microseconds; 1-ns gaps). h100_qwen's 168 memsets (0.143 ms) are computation there."""
    import csv

    import polars as pl

    from tests.test_tracelens_reference import _flow_linked_correlations
    from tracekit.analyzers.communication import COMM_PATTERN
    from tracekit.readers import read_trace

    folder = real_traces / "tracelens"
    want = {
        r["type"]: float(r["time ms"]) * 1e6
        for r in csv.DictReader((folder / "reference" / f"{stem}.gpu_timeline.csv").open())
    }
    path = folder / f"{stem}.json.gz"
    trace = read_trace(path)
    by_s, by_f = _flow_linked_correlations(path)
    # ROCm writes an 'f' flow event at a graph launch's call: TraceLens links those ops too
    graphs = set(trace.api.filter(pl.col("name").str.contains("GraphLaunch"))["correlation"].to_list())
    linked = sorted(by_s | (by_f & graphs))
    ops = trace.ops.filter(pl.col("correlation").is_in(pl.Series(linked, dtype=pl.Int64).implode()))
    kind = pl.col("kind").cast(pl.String)
    compute = ops.filter(kind.is_in(["kernel", "memset"])).select("start", "end")
    memcpy = ops.filter(kind == "memcpy").select("start", "end")
    found = {
        "computation_time": _union_ns(compute),
        "total_memcpy_time": _union_ns(memcpy),
        "exposed_memcpy_time": _union_ns(pl.concat([compute, memcpy])) - _union_ns(compute),
    }
    for key, ns in found.items():
        assert abs(ns - want[key]) <= 1e-6 * want[key] + 16, (key, ns, want[key])
    assert want["total_comm_time"] == want["exposed_comm_time"] == 0.0
    assert trace.ops.filter(pl.col("name").str.contains(COMM_PATTERN)).height == 0


def test_ort_runs_after_a_silence_of_hours_are_kept(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """Three runs, then two more runs two hours later (a server profiled through a quiet spell): every run,
    its nodes and kernels are kept (no event is far: each group of events has its 'model_run's beside its
    work). Five iterations of 1.0 ms and 0.2 ms GPU busy."""
    from tests.hostile import analyze_json
    from tracekit.readers.ort import read

    events = _ort_gpu_events(5)
    later = 2 * 3_600 * 10**6  # µs
    for e in events:
        if e["ts"] >= 200 + 3 * 2000:  # the last two runs
            e["ts"] += later
    path = _ort_file(tmp_path, events)
    warnings = read(path).meta["warnings"]
    assert not [w for w in warnings if "hour" in w], warnings
    code, doc, err = analyze_json(capsys, str(path), "--skip", "0")
    assert code == 0, err
    assert [r["latency_ms"] for r in doc["iterations"]] == [1.0] * 5
    assert [round(r["gpu_busy_ms"], 6) for r in doc["iterations"]] == [0.2] * 5


# ------------------------------------------------------------------ cuBLASLt nvjet and nvFuser type letters

#: Real spellings: cuBLASLt's nvjet GEMMs on H100/H200/B200 (the nvFuser H200 traces, the B200 vLLM trace:
#: ``tst`` is bf16 in and out with fp32 compute, ``hsh`` fp16, ``sss`` fp32) and nvFuser's own bf16 struct
#: ``__bfloat`` (its runtime's bf16_support). All read as no type, or as the fp32 beside them, before.
LETTER_NAMES = {
    "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN": "bf16",
    "nvjet_tst_64x16_64x16_2x4_2cta_h_bz_bias_TNT": "bf16",
    "nvjet_sm100_tst_64x8_64x16_4x1_v_bz_TNT": "bf16",
    "nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTT": "fp16",
    "nvjet_sm90_hss_320x128": "fp16",
    "nvjet_sss_tf32_128x256_TNT": "fp32",
    "<unnamed>::nvfuser_pointwise_f0_c1_r0_g4(<unnamed>::Tensor<<unnamed>::__bfloat, (int)3, (int)3>, "
    "<unnamed>::Tensor<float, (int)3, (int)3>)": "bf16",
}


@pytest.mark.parametrize(("name", "expected"), LETTER_NAMES.items())
def test_nvjet_and_nvfuser_type_spellings(name: str, expected: str | None) -> None:
    import polars as pl

    from tracekit.analyzers.identify import kernel_type

    assert pl.DataFrame({"name": [name]}).select(kernel_type(pl.col("name"))).item() == expected


def test_a_bf16_model_of_nvjet_gemms_reads_bf16() -> None:
    """An nvjet bf16 GEMM of 600 ns and an fp32 norm of 400 ns: bf16, 60% (it read fp32, 100%: the GEMM
    untyped)."""
    from tracekit.analyzers.identify import precision_from_kernels

    found = precision_from_kernels(kernels_trace([(LETTER_NAMES_GEMM, 600), (FLOAT_NORM, 400)]))
    assert found is not None
    assert (found.value, found.evidence) == (
        "bf16",
        "kernel names: 60% of typed kernel time is bf16 (1 kernels)",
    )


LETTER_NAMES_GEMM = "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN"


def test_the_nvfuser_crossentropy_trace_reads_bf16(real_traces) -> None:
    """The H200 nvFuser cross-entropy trace: its three nvjet_tst GEMMs (6.44 ms) and two nvFuser casts of
    ``__bfloat`` are bf16 beside the fp32 loss kernels: bf16, 73% (it read fp32, 100%)."""
    from tracekit.analyzers.identify import precision_from_kernels
    from tracekit.readers import read_trace

    trace = read_trace(real_traces / "nsys" / "nvfuser_h200_crossentropy_2025.1.sqlite")
    found = precision_from_kernels(trace)
    assert found is not None
    assert (found.value, found.evidence) == (
        "bf16",
        "kernel names: 73% of typed kernel time is bf16 (7 kernels)",
    )


def test_an_ort_run_of_negative_dur_is_skipped_and_said(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 'model_run' of dur -1000 µs (a damaged row) among five: skipped by the reader with a warning that
    says so, not taken for a run that stopped after none of its nodes (it was: '1 of 5 'model_run' events
    ran only a prefix of the nodes another run ran'); its two nodes count in no iteration. Four iterations of
    1.0 ms, 0.4 ms busy."""
    from tests.hostile import analyze_json
    from tracekit.readers.ort import read

    path = _ort_file(tmp_path, _damage(_cpu(), "model_run", 1, dur=-1000))
    warnings = read(path).meta["warnings"]
    assert not [w for w in warnings if "prefix" in w], warnings
    assert (
        "1 'model_run' event(s) with a negative dur (-1000 µs) were skipped: a run cannot end before it "
        "began, so how long it lasted is not known, and its nodes count in no iteration"
    ) in warnings
    code, doc, err = analyze_json(capsys, str(path), "--skip", "0")
    assert code == 0, err
    assert [(r["latency_ms"], r["gpu_busy_ms"]) for r in doc["iterations"]] == [(1.0, 0.4)] * 4


# ------------------------------------------------------------------------ iteration ranges that all last 0


def _all_zero(tmp_path, fmt: str):
    import json

    from tests.hostile import run_sql, small_trace_events, three_iteration_nsys

    if fmt == "kineto":
        events = small_trace_events()
        for event in events:
            if event["name"] == "iteration":
                event["dur"] = 0
        path = tmp_path / "zero_ranges.synthetic.json"
        path.write_text(json.dumps({"traceEvents": events}))
        return path
    return run_sql(
        three_iteration_nsys(tmp_path / "zero_ranges.synthetic.sqlite"), "UPDATE NVTX_EVENTS SET end = start"
    )


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        # 4 iterations of 3 kernels of 10 us: first launch 1,000,010 us, last kernel end 1,003,240 us
        ("kineto", (4, [(3.23, 0.12, 12)])),
        # 3 iterations of kernels [100, 300) and [400, 500) us: first launch 10.05 ms, last kernel end 14.5 ms
        ("nsys", (3, [(4.45, 0.9, 6)])),
    ],
)
def test_iteration_ranges_that_all_last_zero_are_no_iterations(
    tmp_path, capsys: pytest.CaptureFixture[str], fmt: str, expected
) -> None:
    """Every 'iteration' range lasts 0 (Kineto dur 0, nsys end = start): they were the iterations, each of
    latency 0.0 ms. Now they are left out with a warning and the trace is analyzed without them (here: one
    window over the whole trace); asked for with --range, a one-line error (exit 2)."""
    from tests.hostile import analyze_json, run_cli

    path = _all_zero(tmp_path, fmt)
    n, rows = expected
    code, doc, err = analyze_json(capsys, str(path))
    assert code == 0, err
    assert [(r["latency_ms"], round(r["gpu_busy_ms"], 6), r["kernels"]) for r in doc["iterations"]] == rows
    assert (
        f"left out the {n} 'iteration' ranges: they all last 0, and no range of their name has a duration: "
        "markers, or ranges whose end the profiler did not record (Kineto writes dur 0 then), so none is an "
        "iteration (none has a latency)"
    ) in doc["warnings"]
    code, out, err = run_cli(capsys, "analyze", str(path), "--range", "iteration")
    assert code == 2
    assert err.count("\n") == 1 and str(path) in err
    assert f"no iteration in the {n} 'iteration' ranges: they all last 0" in err


# ------------------------------------------------------------------ per-kernel shares outside 0-100 %


def _metrics_trace(rows: list[tuple[int, int, str, str, float]]):
    """An ncu-like Trace (SYNTHETIC): (kernel, duration ns, metric, unit, value) rows, kernels k0, k1..."""
    import polars as pl

    from tracekit.model import Trace

    km = pl.DataFrame(
        {
            "kernel": [r[0] for r in rows],
            "name": [f"k{r[0]}" for r in rows],
            "range": [None] * len(rows),
            "duration_ns": [r[1] for r in rows],
            "metric": [r[2] for r in rows],
            "unit": [r[3] for r in rows],
            "value": [float(r[4]) for r in rows],
        },
        schema={
            "kernel": pl.Int64,
            "name": pl.String,
            "range": pl.String,
            "duration_ns": pl.Int64,
            "metric": pl.String,
            "unit": pl.String,
            "value": pl.Float64,
        },
    )
    return Trace(kernel_metrics=km, meta={"synthetic": True})


@pytest.mark.parametrize(
    ("active", "elapsed", "bad", "said"),
    [
        ("sm__cycles_active.avg", "sm__cycles_elapsed.avg", (2000, 1000), "largest 200%"),
        ("sm__cycles_active.avg", "gpc__cycles_elapsed.max", (2000, 1000), "largest 200%"),
        ("sm__active_cycles_avg", "sm__elapsed_cycles_avg", (2000, 1000), "largest 200%"),
        ("sm__cycles_active.avg", "sm__cycles_elapsed.avg", (-500, 1000), "smallest -50%"),
        ("sm__cycles_active.avg", "sm__cycles_elapsed.avg", (500, 0), "not a finite number"),
    ],
)
def test_sms_active_from_cycle_counts_outside_0_100_is_missing(active, elapsed, bad, said) -> None:
    """k0 (10 us) with an impossible ratio (200%, -50%, or 500 / 0 cycles), k1 (30 us) at 900 / 1000 cycles
    (90%): the kernel-time average is k1's 90.0, k0 read as missing with a warning (it was 117.5, 55.0 or inf,
    unsaid)."""
    from tracekit.analyzers.kernel_metrics import analyze_kernel_metrics

    trace = _metrics_trace(
        [
            (0, 10_000, active, "cycle", bad[0]),
            (0, 10_000, elapsed, "cycle", bad[1]),
            (1, 30_000, active, "cycle", 900),
            (1, 30_000, elapsed, "cycle", 1000),
        ]
    )
    result = analyze_kernel_metrics(trace)
    assert result.value("sms_active", wall_time=False) == 90.0
    assert [w for w in result.warnings if w.startswith("SMs active")] == [
        f"SMs active (100*{active}/{elapsed}): 1 of 2 kernels have a value outside 0-100% ({said}), which no "
        "share can be: read as missing (NaN) for those kernels"
    ]


@pytest.mark.parametrize(
    ("metric", "value", "said"),
    [
        ("sm__active_warps_avg_per_active_cycle_pct", 150, "largest 150%"),
        ("est. achieved occupancy %", 150, "largest 150%"),
        ("est. achieved occupancy %", -50, "smallest -50%"),
    ],
)
def test_warp_occupancy_outside_0_100_is_missing(metric: str, value: float, said: str) -> None:
    """The legacy ncu warp occupancy and Kineto's estimate of 150% or -50% for k0 (10 us) beside 50% for k1
    (30 us): 50.0 (it was 75.0 or 25.0)."""
    from tracekit.analyzers.kernel_metrics import analyze_kernel_metrics

    trace = _metrics_trace([(0, 10_000, metric, "%", value), (1, 30_000, metric, "%", 50)])
    result = analyze_kernel_metrics(trace)
    assert result.value("warp_occupancy", wall_time=False) == 50.0
    assert [w for w in result.warnings if w.startswith("warp occupancy")] == [
        f"warp occupancy ({metric}): 1 of 2 kernels have a value outside 0-100% ({said}), which no share can "
        "be: read as missing (NaN) for those kernels"
    ]


# ------------------------------------------------------------------------ nsys export hint


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("my run.synthetic.nsys-rep", ["-o", "my run.synthetic.sqlite", "my run.synthetic.nsys-rep"]),
        ("it's.synthetic.qdrep", ["-o", "it's.synthetic.sqlite", "it's.synthetic.qdrep"]),
        ("plain.synthetic.nsys-rep", ["-o", "plain.synthetic.sqlite", "plain.synthetic.nsys-rep"]),
    ],
)
def test_the_nsys_export_hint_runs_as_given(name: str, words: list[str]) -> None:
    """The command a report without nsys is told to run, split as a shell splits it: a name with a space or a
    quote was not quoted (``-o my run.synthetic.sqlite my run.synthetic.nsys-rep``: nsys got four inputs)."""
    import shlex
    from pathlib import Path

    from tracekit.readers.nsys_report import export_hint

    assert shlex.split(export_hint(Path(name))) == ["nsys", "export", "--type", "sqlite", *words]
    if name.startswith("plain"):
        assert (
            export_hint(Path(name))
            == "nsys export --type sqlite -o plain.synthetic.sqlite plain.synthetic.nsys-rep"
        )


def test_a_range_argument_that_is_not_utf8_is_one_line_exit_2(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--range`` from a Latin-1 terminal (b'ite\\xe9': argv holds 'ite\\udce9'): one line naming the trace,
    exit 2 (it was an internal error: UnicodeEncodeError in polars). The argument is matched as its escape text
    (a range so named in the trace matches it: test_fixread18), and this trace has none."""
    import json

    from tests.hostile import run_cli, small_trace_events

    path = tmp_path / "t.synthetic.json"
    path.write_text(json.dumps({"traceEvents": small_trace_events()}))
    code, _, err = run_cli(capsys, "analyze", str(path), "--range", "ite\udce9")
    assert code == 2 and err.count("\n") == 1, err
    assert "no range matches 'ite\\\\udce9'; ranges in this trace: 'iteration'" in err and str(path) in err


def test_an_ort_node_name_with_a_lone_surrogate_is_read(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Node name holding an escaped lone surrogate ('\\udce9', as Python's json.dump writes a
    surrogateescape-decoded name): the profile is read, that name with the surrogate written as its escape
    (it was an internal error: UnicodeEncodeError in polars). Three runs of 1.0 ms, 0.4 ms busy."""

    from tests.hostile import analyze_json
    from tracekit.readers.ort import read

    events = _cpu(3)
    next(e for e in events if e["cat"] == "Node")["name"] = "/a/Mat\udce9Mul_kernel_time"
    path = _ort_file(tmp_path, events)
    names = read(path).ops.get_column("name").to_list()
    assert names[0] == "MatMul:/a/Mat\\udce9Mul"
    code, doc, err = analyze_json(capsys, str(path), "--skip", "0")
    assert code == 0, err
    assert [(r["latency_ms"], r["gpu_busy_ms"]) for r in doc["iterations"]] == [(1.0, 0.4)] * 3
