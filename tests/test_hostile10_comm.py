"""Communication kernels by name (COMM_PATTERN), against real kernel names (round 10). The ops frames are
hand-built (labelled synthetic: names as real traces spell them, times invented)."""

from __future__ import annotations

import polars as pl
import pytest

from tracekit.analyzers.communication import COMM_PATTERN, NCCL_PATTERN, comm_per_iteration

US = 1_000


def _ops(*ops: tuple[str, int, int]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "iteration": [0] * len(ops),
            "device": [0] * len(ops),
            "start": [s * US for _, s, _ in ops],
            "end": [e * US for _, _, e in ops],
            "kind": ["kernel"] * len(ops),
            "name": [n for n, _, _ in ops],
        }
    )


@pytest.mark.parametrize(
    "name",
    [
        # RCCL's MSCCL algorithms (ROCm serving traces: SGLang/vLLM on MI300, 6% of the GPU time in one)
        "mscclKernel_Sum_hip_bfloat16_Simple_false",
        "mscclKernel_Sum_half_Simple_false(ncclDevComm*, mscclAlgo*, mscclWork*)",
    ],
)
def test_msccl_kernels_are_communication(name: str) -> None:
    """RCCL runs an all-reduce of an MSCCL algorithm as ``mscclKernel_<op>_<type>_<proto>``: no 'nccl' or
    'rccl' in its name. Before: computation (comm 0, a compute-bound verdict resting on it undoubted).
    Now: a 40 µs mscclKernel beside a 60 µs GEMM is 40 µs of communication, all of it exposed."""
    frame = comm_per_iteration(_ops((name, 0, 40), ("gemm", 40, 100)))
    assert frame.to_dicts() == [{"iteration": 0, "comm_ms": 0.04, "exposed_comm_ms": 0.04}]


@pytest.mark.parametrize(
    "name",
    [
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>(at::native::ReduceOp<float>)",
        "triton_red_fused_add_all_reduce_sum_0",
        "void cub::DeviceReduceSingleTileKernel<...>",
        "quickselect_kernel",
        "fused_moe_kernel",
        "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off",
        "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4>>",
        "ampere_sgemm_128x64_nn",
        "Memcpy DtoD (Device -> Device)",
        "all_gather_into_tensor_triton",
        "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16>",
        "ncu_unrelated_concat_kernel",
    ],
)
def test_ordinary_kernels_are_not_communication(name: str) -> None:
    """Kernels whose names speak of reducing, gathering or shots but move nothing between GPUs."""
    assert not pl.Series([name]).str.contains(COMM_PATTERN).item()
    assert comm_per_iteration(_ops((name, 0, 40))).is_empty()


def test_only_nccl_and_rccl_kernels_are_matched_across_ranks() -> None:
    """MSCCL kernels count as communication time, not as collectives matched across ranks (as the serving
    engines' own all-reduces)."""
    assert not pl.Series(["mscclKernel_Sum_half_Simple_false"]).str.contains(NCCL_PATTERN).item()


def test_a_host_operator_named_for_nccl_is_not_communication() -> None:
    """ONNX Runtime's contrib ``NcclAllReduce`` node (kind "operator", device -1: the host side of the
    launch, 0-30 µs) beside its kernel ``ncclDevKernel_AllReduce`` (device op, 10-40 µs) and a GEMM (40-100
    µs). Before: the node's 30 µs of host time were added to the kernel's 30 µs, 60 µs of communication in
    an iteration that holds 30. Now: 30 µs, all of it exposed."""
    ops = pl.DataFrame(
        {
            "iteration": [0, 0, 0],
            "device": [-1, None, None],
            "start": [0, 10 * US, 40 * US],
            "end": [30 * US, 40 * US, 100 * US],
            "kind": pl.Series(["operator", "kernel", "kernel"]).cast(
                pl.Enum(["kernel", "memcpy", "memset", "operator", "graph"])
            ),
            "name": [
                "NcclAllReduce:/model/layers.0/NcclAllReduce",
                "ncclDevKernel_AllReduce_Sum_f16_RING_LL",
                "gemm",
            ],
        }
    )
    assert comm_per_iteration(ops).to_dicts() == [{"iteration": 0, "comm_ms": 0.03, "exposed_comm_ms": 0.03}]
    # a trace of host operators only (CPU) has no communication to measure
    from tracekit.analyzers.communication import has_collectives

    assert not has_collectives(ops.filter(pl.col("kind") == "operator"))


def test_host_operators_named_for_nccl_are_no_collectives_to_match() -> None:
    """The compact result's collectives (matched across ranks): ONNX Runtime's two ``NcclAllReduce`` nodes
    (kind "operator", their stream the threads 11 and 12) and their two kernels on stream 7. Before: four
    collectives, and device -1 'ran collectives on 2 streams' (several communicators: not aligned). Now:
    the two kernels, one stream."""
    from tracekit.fleet.compact import collective_streams, collectives_in_launch_order

    kinds = pl.Enum(["kernel", "memcpy", "memset", "operator", "graph"])
    ops = pl.DataFrame(
        {
            "device": [-1, None, -1, None],
            "stream": [11, 7, 12, 7],
            "start": [0, 10 * US, 100 * US, 110 * US],
            "end": [5 * US, 40 * US, 105 * US, 140 * US],
            "call_start": pl.Series([None, None, None, None], dtype=pl.Int64),
            "kind": pl.Series(["operator", "kernel", "operator", "kernel"]).cast(kinds),
            "name": ["NcclAllReduce:ar0", "ncclDevKernel_AllReduce_Sum_f16_RING_LL"] * 2,
        }
    )
    starts, ends, _ = collectives_in_launch_order(ops)
    assert starts.tolist() == [10 * US, 110 * US] and ends.tolist() == [40 * US, 140 * US]
    assert collective_streams(ops) == {None: 1}
