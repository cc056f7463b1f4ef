"""Round 17, real-trace fidelity: what real profilers write that tracekit read wrong with confidence.

Every trace here is synthetic, hand-built in pytest's temporary folder (nsys exports with
:class:`tests.nsys_builder.NsysBuilder`, Kineto JSON with :func:`tests.builders.kineto_file`) and named
``*.synthetic.*``; the expected numbers are exact, from the rows written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.builders import kernels_trace, kineto_event, kineto_file
from tests.hostile import analyze_json
from tests.nsys_builder import NsysBuilder

US = 1_000
MS = 1_000_000

# ----------------------------------------------------------- numbered iteration ranges: an iteration counter


def _numbered_nsys(tmp_path: Path, fmt: str, busy_us: list[int], name: str = "numbered") -> Path:
    """One NVTX range per iteration named ``fmt.format(i)`` (1 ms each, back to back from 1 ms), each holding
    one launch of a kernel of ``busy_us[i]`` µs."""
    b = NsysBuilder()
    b.gpu(0, "synthetic GPU")
    for i, busy in enumerate(busy_us):
        t = MS + i * MS
        b.nvtx_range(t, t + MS, fmt.format(i))
        b.runtime(t + 10 * US, t + 20 * US, "cudaLaunchKernel_v7000", correlation=i + 1)
        b.kernel(t + 30 * US, t + 30 * US + busy * US, "synthetic_gemm", correlation=i + 1)
    return b.write(tmp_path / f"{name}.synthetic.sqlite")


@pytest.mark.parametrize("fmt", ["step {}", "iteration_{}", "Iteration #{}", "batch{}", "iter {} forward"])
def test_numbered_ranges_are_one_series_of_iterations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    """A timed loop that puts its counter in the range name (``nvtx.range_push(f"step {i}")``,
    ``record_function(f"iteration_{i}")``) gives each range its own name, every name once. Rule 4 (the most
    frequent top-level name) saw five names tied at 1 and took the earliest: one iteration, 'step 0' alone
    (20% busy: framework-bound), the other four "launched outside every iteration". The numbered names are
    one series: five iterations, busy 0.2, 0.8, 0.8, 0.8, 0.8 ms, median 80%: compute-bound."""
    path = _numbered_nsys(tmp_path, fmt, [200, 800, 800, 800, 800])
    code, doc, err = analyze_json(capsys, str(path))
    assert code == 0, err
    assert [it["gpu_busy_ms"] for it in doc["iterations"]] == [0.2, 0.8, 0.8, 0.8, 0.8]
    assert [it["latency_ms"] for it in doc["iterations"]] == [1.0] * 5
    assert [it["kernels"] for it in doc["iterations"]] == [1] * 5
    assert doc["summary"]["bound"] == "compute"
    assert doc["unassigned_ops"] is None or doc["unassigned_ops"]["outside_iterations"]["ops"] == 0
    assert "numbered" in doc["range_choice"]
    assert doc["range"] == "re:^" + fmt.replace("{}", r"\d+") + "$"  # --range takes it: the same series
    assert repr(fmt.format(0)) in doc["range_choice"] and repr(fmt.format(4)) in doc["range_choice"]


def test_numbered_ranges_in_a_kineto_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same in a torch.profiler trace without ``profiler.step()``: ``record_function(f"step_{i}")``
    ranges (``user_annotation``), 3 of 1 ms, one 100 µs kernel each but 600 µs in the last."""
    events = []
    for i, busy in enumerate([100, 100, 600]):
        t = 1000 + i * 1000
        events += [
            kineto_event("user_annotation", f"step_{i}", t, 1000, pid=7, tid=7),
            kineto_event("cuda_runtime", "cudaLaunchKernel", t + 10, 5, pid=7, tid=7, correlation=i + 1),
            kineto_event(
                "kernel", "synthetic_k", t + 20, busy, pid=0, tid=7, device=0, stream=7, correlation=i + 1
            ),
        ]
    path = kineto_file(tmp_path, events, "numbered.synthetic.json")
    code, doc, err = analyze_json(capsys, str(path))
    assert code == 0, err
    assert [it["gpu_busy_ms"] for it in doc["iterations"]] == [0.1, 0.1, 0.6]
    assert doc["summary"]["bound"] == "framework"


def test_names_that_repeat_are_no_counter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Numbered names that each occur several times on their thread (``layer1``..``layer2``, once per pass)
    are no counter: no series, the rule of the most frequent name as before (tied: 'layer1', the earliest)."""
    b = NsysBuilder()
    b.gpu(0, "synthetic GPU")
    cid = 0
    for i in range(4):
        t = MS + i * MS
        cid += 1
        b.nvtx_range(t, t + MS, f"layer{i % 2 + 1}")
        b.runtime(t + 10 * US, t + 20 * US, "cudaLaunchKernel_v7000", correlation=cid)
        b.kernel(t + 30 * US, t + 130 * US, "synthetic_gemm", correlation=cid)
    path = b.write(tmp_path / "layers.synthetic.sqlite")
    code, doc, err = analyze_json(capsys, str(path))
    assert code == 0, err
    assert doc["range"] == "layer1"
    assert len(doc["iterations"]) == 2


def test_overlapping_numbered_ranges_are_no_series(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Numbered ranges that overlap on their thread (``request 17``, ``request 18``: a server's requests,
    start/end ranges open at once) are no iteration counter: no series."""
    b = NsysBuilder()
    b.gpu(0, "synthetic GPU")
    for i in range(3):
        t = MS + i * 300 * US
        b.nvtx_range(t, t + MS, f"request {17 + i}", start_end=True)
        b.runtime(t + 10 * US, t + 20 * US, "cudaLaunchKernel_v7000", correlation=i + 1)
        b.kernel(t + 30 * US, t + 130 * US, "synthetic_gemm", correlation=i + 1)
    path = b.write(tmp_path / "requests.synthetic.sqlite")
    code, doc, err = analyze_json(capsys, str(path))
    assert code == 0, err
    assert doc["range"] == "request 17"
    assert len(doc["iterations"]) == 1


def test_numbered_ranges_inside_one_range_are_named_in_the_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One ``benchmark`` range around the loop's ``step 0`` ... ``step 4``: the one range stays the choice
    (rule 4), and the choice line names the series inside it with the ``--range`` that takes it, as it does
    for a name that repeats there. Before, the numbered names were five names of 1 each: no hint."""
    b = NsysBuilder()
    b.gpu(0, "synthetic GPU")
    b.nvtx_range(500 * US, 7 * MS, "benchmark")
    for i in range(5):
        t = MS + i * MS
        b.nvtx_range(t, t + MS, f"step {i}")
        b.runtime(t + 10 * US, t + 20 * US, "cudaLaunchKernel_v7000", correlation=i + 1)
        b.kernel(t + 30 * US, t + 230 * US, "synthetic_gemm", correlation=i + 1)
    path = b.write(tmp_path / "benchmark.synthetic.sqlite")
    code, doc, err = analyze_json(capsys, str(path))
    assert code == 0, err
    assert doc["range"] == "benchmark"
    assert (
        "inside it 're:^step \\\\d+$' repeats 5 times (--range 're:^step \\d+$' takes" in doc["range_choice"]
    )
    code, doc, err = analyze_json(capsys, str(path), "--range", r"re:^step \d+$")
    assert code == 0, err
    assert [it["gpu_busy_ms"] for it in doc["iterations"]] == [0.2] * 5


# ---------------------------------------------------------------- precision from CUTLASS kernel names

#: CUTLASS names its element types in two ways that the kernel-name rules did not read: a templated kernel
#: spells them ``cutlass::half_t`` (with ``float`` for the accumulator: TensorRT-LLM's and FasterTransformer's
#: GEMMs, PyTorch's memory-efficient attention), and the CUTLASS library's instance names put the output
#: and input types around the core name, ``tensorop_f16_s16816gemm_f16`` (``s`` is the fp32 accumulator of
#: the 16x8x16 MMA; ``tensorop_bf16_s16816gemm_bf16`` for bf16, as the real traces hold). Both read as fp32
#: (``float``, ``s16816``) or as nothing.
CUTLASS_HALF_TEMPLATE = (
    "void cutlass::Kernel<cutlass::gemm::kernel::Gemm<cutlass::gemm::threadblock::MmaMultistage<"
    "cutlass::gemm::GemmShape<128, 128, 32>, cutlass::half_t, cutlass::layout::RowMajor, float, "
    "cutlass::layout::RowMajor>>>(T1::Params)"
)
CUTLASS_HALF_INSTANCE = (
    "void cutlass::Kernel<cutlass_80_tensorop_f16_s16816gemm_f16_128x256_32x3_nn_align8>"
    "(cutlass_80_tensorop_f16_s16816gemm_f16_128x256_32x3_nn_align8::Params)"
)
#: A real name from the paper's RTX 8000 traces (2022), read as no type.
CUTLASS_HALF_WMMA = (
    "void cutlass::Kernel<cutlass_75_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn_align8>(T1::Params)"
)
FLOAT_ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>"


@pytest.mark.parametrize("gemm", [CUTLASS_HALF_TEMPLATE, CUTLASS_HALF_INSTANCE, CUTLASS_HALF_WMMA])
def test_cutlass_half_kernels_are_fp16(gemm: str) -> None:
    """Three fp16 GEMMs of 300 ns and one fp32 element-wise kernel of 100 ns: fp16, 90% of typed kernel time
    (it read fp32: the first two as fp32 themselves, ``float``, ``s16816``; the third as no type)."""
    import polars as pl

    from tracekit.analyzers.identify import precision_from_kernels
    from tracekit.model import Trace

    names = [gemm, gemm, gemm, FLOAT_ELEMENTWISE]
    ops = pl.DataFrame(
        {
            "start": [i * 300 for i in range(4)],
            "end": [i * 300 + (300 if i < 3 else 100) for i in range(4)],
            "kind": ["kernel"] * 4,
            "name": names,
        }
    )
    found = precision_from_kernels(Trace(ops=ops, meta={"synthetic": True}))
    assert found is not None
    assert (found.value, found.evidence) == (
        "fp16",
        "kernel names: 90% of typed kernel time is fp16 (3 kernels)",
    )


# ------------------------------------------------ precision from ROCm's and cuBLAS's GEMM and mangled names

#: Real spellings (the TraceLens ROCm traces, the H100 and A100 traces) that name their type in a way the
#: kernel-name rules did not read: hipBLASLt/Tensile GEMMs put the types after the index tokens (``BBS``: bf16
#: in, bf16 out, fp32 compute; ``HHS`` fp16; ``SB`` fp32), ROCm's ck_tile and aiter kernels are reported
#: mangled (``DF16b`` is ``std::bfloat16_t``, ``DF16_`` is ``_Float16`` in the Itanium ABI), cuBLAS's and
#: cuDNN's sm80 fp32 GEMMs spell ``f32f32`` / ``tf32f32``. On the real ROCm traces such kernels hold 55-90% of
#: the kernel time, read as no type, so the precision came from the remaining kernels alone.
TENSILE_BF16 = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x32x64_MI16x16x1_SN_LDSB1_AFC1_ISA942"
TENSILE_FP16 = "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB1_ISA90a"
CK_BF16 = (
    "_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdINS_27Rmsnorm2dFwdPipelineProblemIDF16bDF16bfDF16bEEEEEvT0_"
)
CK_FP16 = (
    "_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdINS_27Rmsnorm2dFwdPipelineProblemIDF16_DF16_fDF16_EEEEEvT0_"
)
XMMA_TF32 = (
    "sm80_xmma_gemm_tf32f32_tf32f32_f32_tn_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8_kernel"
)
#: HF's RMSNorm computes in fp32 (``hidden_states.to(torch.float32)``) in a bf16 model: float kernels.
FLOAT_NORM = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float>>>"
BF16_ELEMENTWISE = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>"
)


@pytest.mark.parametrize(
    ("gemm", "other", "expected"),
    [
        (
            TENSILE_BF16,
            BF16_ELEMENTWISE,
            ("bf16", "kernel names: 85% of typed kernel time is bf16 (2 kernels)"),
        ),
        (TENSILE_FP16, CK_FP16, ("fp16", "kernel names: 85% of typed kernel time is fp16 (2 kernels)")),
        (CK_BF16, BF16_ELEMENTWISE, ("bf16", "kernel names: 85% of typed kernel time is bf16 (2 kernels)")),
        (XMMA_TF32, FLOAT_NORM, ("fp32", "kernel names: 100% of typed kernel time is fp32 (3 kernels)")),
    ],
)
def test_rocm_gemm_and_mangled_names_carry_their_type(
    gemm: str, other: str, expected: tuple[str, str]
) -> None:
    """A GEMM of 800 ns, an fp32 norm kernel of 150 ns and a kernel of 50 ns in the model's own type: the
    model's type (the first three rows read fp32 before, 75% of the 200 ns typed: the GEMM and the ck
    kernel untyped). The tf32 GEMM is fp32 work: 3 kernels typed, not 1."""
    from tracekit.analyzers.identify import precision_from_kernels

    found = precision_from_kernels(kernels_trace([(gemm, 800), (FLOAT_NORM, 150), (other, 50)]))
    assert found is not None
    assert (found.value, found.evidence) == expected


def test_a_numbered_range_of_no_duration_is_a_lost_end_not_an_iteration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kineto writes dur 0 for a range whose end it did not record (kineto#646). Beside ``step_0`` ...
    ``step_3`` of 1 ms, a ``step_4`` of 0 µs is such a range, as a ``ProfilerStep#4`` of 0 µs beside the others
    is (left out, with the warning). It was the series' fifth iteration, of latency 0 and busy 0, an outlier in
    the latency spread; now it is left out with that warning, and 4 iterations remain."""
    events = []
    for i in range(5):
        t = 1000 + i * 1100
        events += [
            kineto_event("user_annotation", f"step_{i}", t, 1000 if i < 4 else 0, pid=7, tid=7),
            kineto_event("cuda_runtime", "cudaLaunchKernel", t + 10, 5, pid=7, tid=7, correlation=i + 1),
            kineto_event(
                "kernel", "synthetic_k", t + 20, 100, pid=0, tid=7, device=0, stream=7, correlation=i + 1
            ),
        ]
    path = kineto_file(tmp_path, events, "numbered_lost_end.synthetic.json")
    code, doc, err = analyze_json(capsys, str(path))
    assert code == 0, err
    assert [it["latency_ms"] for it in doc["iterations"]] == [1.0] * 4
    assert [it["gpu_busy_ms"] for it in doc["iterations"]] == [0.1] * 4
    assert any(
        w.startswith("left out 1 range of no duration ('step_4') beside ranges") for w in doc["warnings"]
    )


def test_an_engine_step_of_no_duration_is_a_lost_end_not_an_iteration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same for serving-engine steps, whose names differ in their counts: three vLLM decode steps of 1 ms
    (``execute_context_0(0)_generation_8(8)``) and a fourth of 0 µs (``..._generation_9(9)``). It was a fourth
    iteration of latency 0; now it is left out with the warning."""
    events = []
    for i in range(4):
        t = 1000 + i * 1100
        name = f"execute_context_0(0)_generation_{8 + i // 3}({8 + i // 3})"
        events += [
            kineto_event("user_annotation", name, t, 1000 if i < 3 else 0, pid=7, tid=7),
            kineto_event("cuda_runtime", "cudaLaunchKernel", t + 10, 5, pid=7, tid=7, correlation=i + 1),
            kineto_event(
                "kernel", "synthetic_k", t + 20, 100, pid=0, tid=7, device=0, stream=7, correlation=i + 1
            ),
        ]
    path = kineto_file(tmp_path, events, "engine_lost_end.synthetic.json")
    code, doc, err = analyze_json(capsys, str(path))
    assert code == 0, err
    assert [it["latency_ms"] for it in doc["iterations"]] == [1.0] * 3
    assert any(
        w.startswith("left out 1 range of no duration ('execute_context_0(0)_generation_9(9)')")
        for w in doc["warnings"]
    )
