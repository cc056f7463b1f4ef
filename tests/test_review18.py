"""review18: review of round 18's diff (``git diff a09e4b8..HEAD -- tracekit analyzers collectors``).

Every input here is hand-built and SYNTHETIC. A strict xfail is a defect found in another helper's file (its
reason names the file and what goes wrong); a passing test pins a rule checked and found right."""

from __future__ import annotations

import pytest

from tests.builders import kernels_trace

# ------------------------------------------------------------------------ analyzers/identify.py: kernel types


def _typed(*names: str) -> list[str | None]:
    import polars as pl

    from tracekit.analyzers.identify import kernel_type

    frame = pl.DataFrame({"name": list(names)})
    return frame.select(kernel_type(pl.col("name"))).to_series().to_list()


#: cuBLASLt's fp8 (e4m3) GEMMs on Hopper/Blackwell spell two input letters before the three of the bf16 form:
#: ``nvjet_sm90_qqtst_...`` (e4m3 x e4m3, bf16 out, fp32 compute, bf16 scale) where the bf16 GEMM of the same
#: model is ``nvjet_sm90_tst_...`` (public profiles of W8A8 runs: "e4m3 GEMMs dispatch
#: nvjet_sm90_qqtst_128x128_128x6_..._ovscale_bias_TNT vs bf16 nvjet_sm90_tst_256x128_...").
NVJET_FP8 = "nvjet_sm90_qqtst_128x128_128x6_1x2_h_bz_ovscale_TNT"
NVJET_BF16 = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"
BF16_ELEMENTWISE = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>"
)


def test_an_fp8_model_of_nvjet_gemms_reads_fp8() -> None:
    from tracekit.analyzers.identify import precision_from_kernels

    assert _typed(NVJET_FP8, "nvjet_sm100_qqtst_128x256_128x6_2x1_2cta_v_bz_bias_TNT") == ["fp8", "fp8"]
    found = precision_from_kernels(
        kernels_trace([(NVJET_FP8, 600), (NVJET_BF16, 300), (BF16_ELEMENTWISE, 100)])
    )
    assert found is not None
    assert (found.value, found.evidence) == (
        "fp8",
        "kernel names: 60% of typed kernel time is fp8 (1 kernels)",
    )


def test_nvjet_letters_of_the_three_letter_form() -> None:
    """Pin (156e03c): tst / tss bf16 input, hsh fp16, sss fp32; the sm prefix optional."""
    assert _typed(
        NVJET_BF16,
        "nvjet_sm90_tss_64x8_64x16_4x1_v_bz_splitK_TNN",
        "nvjet_tst_128x8_64x12_2x1_v_bz_TNT",
        "nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NTT",
        "nvjet_sss_tf32_64x8_TNT",
    ) == ["bf16", "bf16", "bf16", "fp16", "fp32"]


#: vLLM's CUDA-core paged attention over an fp8 KV cache (``--kv-cache-dtype fp8``, cache_t unsigned char,
#: ``Fp8KVCacheDataType)1``) dequantizes each cache vector to scalar_t (here bf16) and computes the dot products
#: in float (csrc/attention/attention_kernels.cuh: ``fp8::scaled_convert<K_vec, Quant_k_vec, KV_DTYPE>``): a
#: bf16 model whose cache alone is fp8. TensorRT-LLM's XQA names the same ``dt_bf16 ... kvt_e4m3``.
FP8_CACHE_ATTENTION = (
    "void vllm::paged_attention_v2_kernel<__nv_bfloat16, unsigned char, 128, 16, 128, "
    "(vllm::Fp8KVCacheDataType)1, false, 512>(float*, float*, __nv_bfloat16*, __nv_bfloat16 const*)"
)
BF16_GEMM = (
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off"
)


def test_a_bf16_model_with_an_fp8_kv_cache_reads_bf16() -> None:
    from tracekit.analyzers.identify import precision_from_kernels

    found = precision_from_kernels(
        kernels_trace([(FP8_CACHE_ATTENTION, 600), (BF16_GEMM, 300), (BF16_ELEMENTWISE, 100)])
    )
    assert found is not None
    assert found.value == "bf16", found.evidence


def test_common_library_names_keep_their_type() -> None:
    """Pin: library names of no fp8/fp4 data type as they did before round 18 (flash-attn, xformers, cuBLAS,
    CUTLASS 2.x, FlashInfer, vLLM's kAuto cache (demangled and mangled), NCCL, Triton/Inductor, cuDNN)."""
    names = {
        "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4, false, false, cutlass::bfloat16_t, "
        "Flash_kernel_traits<128, 64, 64, 4, cutlass::bfloat16_t> >, false, true>(Flash_fwd_params)": "bf16",
        "void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::half_t, "
        "Flash_kernel_traits<128, 64, 128, 4, cutlass::half_t> > >(Flash_fwd_params)": "fp16",
        "fmha_cutlassF_bf16_aligned_64x128_rf_sm80": "bf16",
        BF16_GEMM: "bf16",
        "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn": "fp16",
        "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8": "bf16",
        "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>"
        "(__nv_bfloat16 const*)": "bf16",
        "_ZN4vllm30reshape_and_cache_flash_kernelI13__nv_bfloat16S1_LNS_18Fp8KVCacheDataTypeE0EEEvPKT_S5_": "bf16",
        "void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, unsigned int)": "bf16",
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)": "bf16",
        "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)": None,
        "triton_per_fused_native_layer_norm_0d1d2d3d4d5de6de": None,
        "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_1": None,
        "cudnn_infer_ampere_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1": "fp32",
        "void xformers::fmha::AttentionKernel<cutlass::half_t, cutlass::arch::Sm80, true, 64, 64>": "fp16",
        "Cijk_Ailk_Bljk_BBS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0": "bf16",
    }
    assert dict(zip(names, _typed(*names), strict=True)) == names


# ------------------------------------------------------- analyzers/compare.py: --split-idle windows vs ranges


def _kineto(path, events: list[dict]):
    import json

    path.write_text(json.dumps({"traceEvents": events, "metadata": {"note": "synthetic"}}))
    return path


def _iterations_kineto(path, iterations: list[tuple[int, list[tuple[int, int]]]], dur: int = 990):
    """A Kineto trace (SYNTHETIC): per (range start µs, [kernel (start, end) µs]) an 'iteration' annotation of
    ``dur`` µs and its kernels, each launched 8 µs before it starts (times from 1 s)."""
    t0, corr, events = 1_000_000, 1, []
    for start, kernels in iterations:
        events.append(
            {"ph": "X", "cat": "user_annotation", "name": "iteration", "pid": 1, "tid": 1, "ts": t0 + start,
             "dur": dur}
        )  # fmt: skip
        for s, e in kernels:
            events.append(
                {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                 "ts": t0 + s - 8, "dur": 5, "args": {"correlation": corr}}
            )  # fmt: skip
            events.append(
                {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": t0 + s, "dur": e - s,
                 "args": {"correlation": corr, "device": 0, "stream": 7}}
            )  # fmt: skip
            corr += 1
    return _kineto(path, events)


#: 4 'iteration' ranges of 990 µs, 1 ms apart, 2 kernels each. Under --split-idle 0.3 the 500-µs gap inside
#: iteration 0 cuts it in two while the 100-µs gap between iterations 2 and 3 joins them: 4 windows (0.108,
#: 0.108, 0.308, 1.308 ms) for 4 ranges (0.99 ms each).
CUT_AND_JOINED = [
    (0, [(10, 110), (610, 710)]),
    (1000, [(1110, 1210), (1310, 1410)]),
    (2000, [(2010, 2110), (2210, 2910)]),
    (3000, [(3010, 3110), (3210, 3310)]),
]


def test_windows_as_many_as_the_ranges_but_not_at_them_are_not_iterations(tmp_path) -> None:
    import tracekit
    from tracekit.analyzers.compare import windows_not_iterations

    path = _iterations_kineto(tmp_path / "cut_and_joined.synthetic.json", CUT_AND_JOINED)
    windows = tracekit.analyze(path, split_idle=0.3)
    assert windows.iterations.get_column("latency_ms").to_list() == pytest.approx(
        [0.108, 0.108, 0.308, 1.308]
    )
    assert tracekit.analyze(path).iterations.get_column("latency_ms").to_list() == pytest.approx([0.99] * 4)
    assert windows_not_iterations(windows) is not None


# ------------------------------------------------------------------- tracekit/readers/ort.py: far events


def test_an_ort_session_created_hours_before_its_first_run_keeps_its_setup(tmp_path) -> None:
    import json

    import tracekit
    from tests.hostile import ort_cpu_events

    events = ort_cpu_events(runs=3)
    for event in events:
        if event["name"] not in ("model_loading_uri", "session_initialization"):
            event["ts"] += 2 * 3600 * 10**6  # µs
    path = tmp_path / "ort_first_run_late.synthetic.json"
    path.write_text(json.dumps(events))
    analyzed = tracekit.analyze(path)
    assert analyzed.iterations.get_column("latency_ms").to_list() == pytest.approx([1.0] * 3, abs=1e-12)
    assert analyzed.iterations.get_column("gpu_busy_ms").to_list() == pytest.approx([0.4] * 3, abs=1e-12)
    assert not [w for w in analyzed.warnings if "stamped more than an hour" in w]
    assert analyzed.session_setup == (
        {"name": "model_loading_uri", "ms": 0.05},
        {"name": "session_initialization", "ms": 0.04},
    )


def test_an_ort_profile_with_its_setup_beside_its_runs_keeps_it(tmp_path) -> None:
    """Pin: the same profile without the silence keeps its setup and says nothing of far events."""
    import json

    import tracekit
    from tests.hostile import ort_cpu_events

    path = tmp_path / "ort_first_run_soon.synthetic.json"
    path.write_text(json.dumps(ort_cpu_events(runs=3)))
    analyzed = tracekit.analyze(path)
    assert not [w for w in analyzed.warnings if "stamped" in w]
    assert analyzed.session_setup == (
        {"name": "model_loading_uri", "ms": 0.05},
        {"name": "session_initialization", "ms": 0.04},
    )


# ------------------------------------------------------------ tracekit/commands/simulate.py: bounds


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (numpy's overflow warning: the defect itself)
def test_simulate_refuses_a_batch_times_sequence_it_cannot_model(tmp_path, capsys) -> None:
    from tests.hostile import run_cli

    out = tmp_path / "sim"
    code, _, err = run_cli(
        capsys, "simulate", "--runtime", "pytorch", "--batch-sizes", "2147483647", "--seq-len", "2147483647",
        "--iters", "2", "--traces", "kineto", "-o", str(out),
    )  # fmt: skip
    assert code == 2, err
    assert not out.exists() or not any(out.iterdir())


# ------------------------------------------- tracekit/readers/timestamps.py: a range's end judged "late"


def _steps_kineto(path, steps: list[tuple[int, int]]):
    """A Kineto trace (SYNTHETIC): per (start µs, dur µs) an 'iteration' annotation with 2 operators, launches and
    kernels of 50 µs, at +10 and +110 µs (times from 1 s)."""
    t0, corr, events = 1_000_000, 1, []
    for start, dur in steps:
        events.append(
            {"ph": "X", "cat": "user_annotation", "name": "iteration", "pid": 1, "tid": 1, "ts": t0 + start,
             "dur": dur}
        )  # fmt: skip
        for k in range(2):
            s = t0 + start + 10 + 100 * k
            events += [
                {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": s - 9, "dur": 8},
                {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": s - 8,
                 "dur": 5, "args": {"correlation": corr}},
                {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": s, "dur": 50,
                 "args": {"correlation": corr, "device": 0, "stream": 7}},
            ]  # fmt: skip
            corr += 1
    return _kineto(path, events)


#: 90 minutes in µs
NINETY_MIN_US = 90 * 60 * 10**6


def test_a_step_that_waited_90_minutes_for_the_next_is_no_damaged_range(tmp_path) -> None:
    import tracekit

    path = _steps_kineto(
        tmp_path / "idle_step.synthetic.json",
        [(0, 990), (1000, 990), (2000, NINETY_MIN_US), (2000 + NINETY_MIN_US + 10, 990)],
    )
    analyzed = tracekit.analyze(path)
    assert not [w for w in analyzed.warnings if "stamped to end" in w]
    assert analyzed.iterations.get_column("kernels").to_list() == [2, 2, 2, 2]


def test_a_step_whose_end_was_damaged_to_90_minutes_is_left_out(tmp_path) -> None:
    """Pin (2079b88): the same step of 90 min with no step after it is one whose end lies an hour and a half
    past every event: left out, said, and its 2 kernels said to be outside every iteration."""
    import tracekit

    path = _steps_kineto(
        tmp_path / "damaged_end.synthetic.json", [(0, 990), (1000, 990), (2000, NINETY_MIN_US), (3000, 990)]
    )
    analyzed = tracekit.analyze(path)
    assert [w for w in analyzed.warnings if w.startswith("1 annotations stamped to end more than an hour")]
    assert analyzed.iterations.get_column("kernels").to_list() == [2, 2, 2]
    assert analyzed.iterations.get_column("latency_ms").to_list() == pytest.approx([0.99] * 3, abs=1e-12)


# ------------------------------------------------ analyzers/stability.py: a faster start is no warm-up (084f42d)


@pytest.mark.parametrize(
    ("values", "warmup", "outliers", "median", "unstable"),
    [
        # a slow start (cold caches): dropped as warm-up, as before
        ([9.0, 8.0, 7.0] + [2.0, 2.01, 2.02] * 5 + [2.0, 2.01], (0, 1, 2), (), 2.01, False),
        # a first iteration served fast (a cache), then the slow warm-up: no warm-up prefix (the first is not
        # slower), but the slow three are outliers (3 of 20, under a quarter): the same median
        ([2.0, 9.0, 8.0, 7.0] + [2.0, 2.01, 2.02] * 5 + [2.0], (), (1, 2, 3), 2.01, False),
        # the same with a first iteration far faster: it is an outlier too (4 of 20)
        ([1.0, 9.0, 8.0, 7.0] + [2.0, 2.01, 2.02] * 5 + [2.0], (), (0, 1, 2, 3), 2.01, False),
        # latency that rose 10% halfway (a clock that throttled): kept whole, a trend, unstable
        ([2.0, 2.001, 2.002] * 3 + [2.0] + [2.2, 2.201, 2.202] * 3 + [2.2], (), (), 2.101, True),
    ],
)
def test_warm_up_patterns(values, warmup, outliers, median, unstable) -> None:
    from tracekit.analyzers.stability import measure

    m = measure(values)
    assert (m.warmup, m.outliers, m.unstable) == (warmup, outliers, unstable)
    assert m.median == pytest.approx(median, abs=1e-12)


# ---------------------------------------------- analyzers/iterations.py: iterations of untimed device ops


def _untimed_first_iteration(tmp_path):
    """4 iterations of tests.hostile.small_trace_events (3 launches of 5 µs, kernels of 10 µs); the first lasts
    9.0 ms and its 3 kernels have no dur (not recorded); the other three: 0.9 ms, busy 0.03, dispatch 0.81 ms,
    launch 0.015 ms, in flight 0.045 ms."""
    from tests.hostile import small_trace_events

    events = small_trace_events(iterations=4, kernels=3, t0=1_000_000)
    for event in events:
        if event["ts"] >= 1_001_000:
            event["ts"] += 20_000
        elif event["cat"] == "user_annotation":
            event["dur"] = 9000
        elif event["cat"] == "kernel":
            del event["dur"]
    return _kineto(tmp_path / "untimed_first.synthetic.json", events)


def test_an_iteration_of_untimed_kernels_has_its_busy_and_causes_withheld(tmp_path) -> None:
    """Pin (this round's untimed-iteration rule): iteration 0's busy and causes are withheld and said."""
    import tracekit

    analyzed = tracekit.analyze(_untimed_first_iteration(tmp_path))
    frame = analyzed.iterations
    assert frame.get_column("latency_ms").to_list() == pytest.approx([9.0, 0.9, 0.9, 0.9], abs=1e-12)
    assert frame.get_column("gpu_busy_ms").to_list() == pytest.approx([None, 0.03, 0.03, 0.03], abs=1e-12)
    assert frame.get_column("dispatch_ms").to_list() == pytest.approx([None, 0.81, 0.81, 0.81], abs=1e-12)
    assert frame.get_column("kernels").to_list() == [3, 3, 3, 3]
    assert any(
        w.startswith("1 of 4 iterations (index 0) hold device ops none of which") for w in analyzed.warnings
    )


def test_the_idle_attribution_leaves_out_an_iteration_of_untimed_kernels(tmp_path) -> None:
    import tracekit

    analyzed = tracekit.analyze(_untimed_first_iteration(tmp_path))
    attribution = analyzed.attribution
    assert attribution is not None
    dispatch = next(c for c in attribution.causes if c.cause == "dispatch")
    assert (dispatch.total_ms, dispatch.mean_ms) == pytest.approx((2.43, 0.81), abs=1e-9)
    assert attribution.idle_ms["mean"] == pytest.approx(0.87, abs=1e-9)


# --------------------------------------- tracekit/readers/nsys_sqlite.py: a kernel whose launch call was far

HOUR_NS = 3600 * 10**9


def _far_call_nsys(tmp_path):
    """tests.hostile.three_iteration_nsys (3 x 1.0 ms, busy 0.3, 2 kernels each; capture stated 0 to 20 ms) with
    the launch call of correlation 1 (iteration 0's first kernel) stamped 3 hours later (a damaged row)."""
    from tests.hostile import run_sql, three_iteration_nsys

    path = three_iteration_nsys(tmp_path / "far_call.synthetic.sqlite", capture_ns=20_000_000)
    return run_sql(
        path,
        f'UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = start + {3 * HOUR_NS}, "end" = "end" + {3 * HOUR_NS} '
        "WHERE correlationId = 1",
    )


def test_a_kernel_whose_call_was_far_keeps_its_iteration(tmp_path) -> None:
    """Pin (e323879): the kernel keeps iteration 0 (busy 0.3 ms, 2 kernels), and 1 launch is counted there."""
    import tracekit

    analyzed = tracekit.analyze(_far_call_nsys(tmp_path))
    frame = analyzed.iterations
    assert frame.get_column("gpu_busy_ms").to_list() == pytest.approx([0.3] * 3, abs=1e-12)
    assert frame.get_column("kernels").to_list() == [2, 2, 2]
    assert frame.get_column("launches").to_list() == [1, 2, 2]
    assert analyzed.warnings[0].startswith("1 API calls stamped outside the capture")
    assert analyzed.warnings[0].endswith(
        "1 device ops launched by those calls lie among the rest (only their calls' times are damaged): each is "
        "placed in its iteration by its own start, with no launch call"
    )


@pytest.mark.parametrize(
    "kind",
    [
        "nsys",  # (fixed by the lead: the readers count the ops in meta, the analysis does not say them again)
        "kineto",
    ],
)
def test_a_kernel_whose_call_was_far_is_said_once(tmp_path, kind) -> None:
    """nsys: :func:`_far_call_nsys`; Kineto: tests.hostile.small_trace_events with the call of correlation 1
    stamped 5 h later (the same two sentences)."""
    import tracekit

    if kind == "nsys":
        path = _far_call_nsys(tmp_path)
    else:
        from tests.hostile import small_trace_events

        events = small_trace_events()
        for event in events:
            if event["cat"] == "cuda_runtime" and event["args"]["correlation"] == 1:
                event["ts"] += 5 * 3600 * 10**6
        path = _kineto(tmp_path / "far_call.synthetic.json", events)
    analyzed = tracekit.analyze(path)
    assert analyzed.warnings[0].endswith(
        "each is placed in its iteration by its own start, with no launch call"
    )
    assert not [w for w in analyzed.warnings if "carry no correlation id" in w], analyzed.warnings


def test_simulate_refuses_iterations_times_operators_past_the_kernel_bound(
    tmp_path, capsys, monkeypatch
) -> None:
    import tracekit.simulate
    from tests.hostile import run_cli

    def reached(*args, **kwargs):
        raise AssertionError("the simulation started")

    monkeypatch.setattr(tracekit.simulate, "simulate_sweep", reached)
    out = tmp_path / "sim"
    code, _, err = run_cli(
        capsys, "simulate", "--runtime", "pytorch", "--batch-sizes", "1", "--iters", "10000000", "--ops", "100000",
        "--traces", "kineto", "-o", str(out),
    )  # fmt: skip
    assert code == 2, err


def _one_kernel_iterations(path, n: int, timed: bool):
    """A Kineto trace (SYNTHETIC) of ``n`` 'iteration' annotations of 90 µs, 100 µs apart, each launching one
    kernel (of 10 µs, or with no dur: not recorded)."""
    t0, events = 1_000_000, []
    for i in range(n):
        s = t0 + i * 100
        kernel = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": s + 20,
                  "args": {"correlation": i + 1, "device": 0, "stream": 7}}  # fmt: skip
        if timed:
            kernel["dur"] = 10
        events += [
            {"ph": "X", "cat": "user_annotation", "name": "iteration", "pid": 1, "tid": 1, "ts": s, "dur": 90},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": s + 5,
             "dur": 5, "args": {"correlation": i + 1}},
            kernel,
        ]  # fmt: skip
    return _kineto(path, events)


def test_untimed_iterations_are_found_in_linear_time(tmp_path, monkeypatch) -> None:
    import builtins

    import tracekit
    import tracekit.analyzers.iterations as iterations

    calls = [0]

    def counting_set(*args):
        calls[0] += 1
        return builtins.set(*args)

    monkeypatch.setattr(iterations, "set", counting_set, raising=False)
    counts = []
    for n in (40, 160):
        calls[0] = 0
        analyzed = tracekit.analyze(
            _one_kernel_iterations(tmp_path / f"untimed_{n}.synthetic.json", n, False)
        )
        assert analyzed.iterations.height == n
        counts.append(calls[0])
    assert counts[0] == counts[1], counts


#: 2 'iteration' ranges of 3.1 ms, 10 ms apart, each holding 5 requests of 2 kernels of 50 µs (10 µs apart),
#: 600 µs apart: --split-idle 0.3 cuts 10 windows of 0.118 ms, 5 to a range.
REQUESTS_IN_STEPS = [
    (step * 10_000, [k for r in range(5) for k in ((step * 10_000 + 10 + r * 600, step * 10_000 + 60 + r * 600),
                                                  (step * 10_000 + 70 + r * 600, step * 10_000 + 120 + r * 600))])
    for step in range(2)
]  # fmt: skip


def test_a_row_of_windows_that_are_not_iterations_says_the_count_once(tmp_path) -> None:
    import tracekit
    from tracekit.analyzers.report import config_row

    path = _iterations_kineto(tmp_path / "requests_in_steps.synthetic.json", REQUESTS_IN_STEPS, dur=3100)
    analyzed = tracekit.analyze(path, split_idle=0.3)
    assert analyzed.iterations.get_column("latency_ms").to_list() == pytest.approx([0.118] * 10, abs=1e-12)
    row = config_row(analyzed)
    assert row["traced_median_ms"] is None  # (withheld: see the report, a concern, not pinned as a defect)
    said = [w for w in row["warnings"] if "10 windows" in w and "2 ranges" in w]
    assert len(said) == 1, said
