"""Serving traces (vLLM, SGLang) and Kineto inputs of fuzz round 9: communication kernels outside NCCL.
Every trace here is SYNTHETIC (hand-built, exact answers); the real traces (../shared/real_traces) are read
where present, never copied into the repo."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.builders import make_trace
from tracekit.analyzers import communication as C
from tracekit.analyzers.iterations import analyze_iterations
from tracekit.model import Trace

US = 1000
OP_FIELDS = ("start", "end", "correlation", "stream", "kind", "device", "name")
#: kernels that wait for the other ranks as NCCL's do, under names of their own
CUSTOM_ALL_REDUCE = [
    "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, "
    "vllm::Signal*, __nv_bfloat16*, int, int)",
    "void vllm::cross_device_reduce_2stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, "
    "vllm::Signal*, __nv_bfloat16*, int, int)",
    "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long, "
    "unsigned long, unsigned long, unsigned int**, unsigned long, unsigned long)",
    "void c10d::symmetric_memory::one_shot_all_reduce_kernel<float, 16, 8>(float**, unsigned long, float*)",
    "void two_shot_all_reduce_kernel<c10::BFloat16, 8>(c10::BFloat16**, unsigned long, c10::BFloat16*)",
    "void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<half, 8>(...)",
    "void mscclpp::allreduce_kernel<__half>(...)",
    "void tensorrt_llm::kernels::oneShotAllReduceKernel<__nv_bfloat16, 8>(...)",
    "void quickreduce::allreduce_prototype_twoshot<quickreduce::CodecFP>(...)",
    "void deep_ep::intranode::dispatch<8, 768, 8192>(...)",
]


def _trace(comm_name: str) -> Trace:
    """Two 100 µs iterations: a GEMM over [10, 50) µs (stream 7) and an all-reduce over [50, 90) µs (stream
    7: a custom all-reduce runs on the compute stream), each launched at the iteration's start; a synchronize
    closes each. Busy 80 µs of 100, 40 of it the all-reduce alone."""
    ranges, api, ops = [], [], []
    for it in range(2):
        t = it * 100 * US
        ranges.append((t, t + 100 * US, "iteration"))
        api.append((t + 1 * US, t + 2 * US, 10 * it + 1, "cudaLaunchKernel"))
        api.append((t + 3 * US, t + 4 * US, 10 * it + 2, "cudaLaunchKernel"))
        api.append((t + 95 * US, t + 99 * US, None, "cudaDeviceSynchronize"))
        ops.append((t + 10 * US, t + 50 * US, 10 * it + 1, 7, "kernel", 0, "sm90_xmma_gemm_bf16"))
        ops.append((t + 50 * US, t + 90 * US, 10 * it + 2, 7, "kernel", 0, comm_name))
    return make_trace(ranges=ranges, api=api, ops=ops, op_fields=OP_FIELDS)


@pytest.mark.parametrize("name", CUSTOM_ALL_REDUCE)
def test_a_custom_all_reduce_is_communication(name: str) -> None:
    # Before: counted as computation, "compute-bound at 80%" with no doubt (and comm_ms 0 in a many-trace
    # summary); it waits for the other ranks as an NCCL all-reduce does.
    a = analyze_iterations(_trace(name))
    assert a.summary.bound == "compute"
    assert a.summary.verdict_uncertain is not None
    assert "compute-bound at a median utilization of 80.0%, but 40.0% without the communication" in (
        a.summary.verdict_uncertain
    )
    # (the trace has no NCCL/RCCL kernel: the text names only the custom all-reduce)
    assert "(custom all-reduce kernels, median 0.040 ms per iteration)" in (a.summary.verdict_uncertain)


def test_ordinary_kernels_are_not_communication() -> None:
    for name in [
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float>>>",
        "void paged_attention_ll4mi_reduce_kernel<__hip_bfloat16>(...)",
        "reduce_segments",
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(...)",
        "triton_red_fused_all_reduce_like_0",  # (a fused reduction's own name, not a collective)
    ]:
        a = analyze_iterations(_trace(name))
        assert a.summary.verdict_uncertain is None, name


def test_real_b200_vllm_trace_counts_its_symmetric_memory_all_reduces() -> None:
    path = Path(__file__).parents[2] / "shared/real_traces/tracelens/b200_vllm_eager.json.gz"
    if not path.exists():
        pytest.skip("real traces not present")
    from tracekit.fleet.run import analyze_many
    from tracekit.session import AnalysisOptions

    (outcome,) = analyze_many([str(path)], AnalysisOptions(), jobs=1)
    r = outcome.result
    # 73 multimem all-reduces (2.120 ms of kernel time by the trace's own dur) and one NCCL all-gather
    # (0.022 ms): before, comm_ms was the all-gather's alone
    assert float(r["iterations"]["comm_ms"][0]) > 2.0
    # only the NCCL kernel is a collective matched across ranks
    assert r["collective_kinds"] == ["allgather"]
    assert C.has_collectives(__import__("polars").DataFrame({"name": ["multimem_all_reduce_kernel"]}))
