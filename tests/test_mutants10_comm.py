"""Exact behaviour of this round's communication rules (``_communicates``: a host operator named for NCCL
is no communication; ``communication_doubt``'s kernel wording): the tests that kill the mutants the round-10
mutation run left (benchmarks/mutation.py communication). Labelled synthetic ops written by hand."""

from __future__ import annotations

import polars as pl

from tracekit.analyzers import communication as C

OPS_SCHEMA = {
    "iteration": pl.Int64,
    "device": pl.Int32,
    "start": pl.Int64,
    "end": pl.Int64,
    "kind": pl.String,
    "name": pl.String,
}


def test_communicates_by_name_and_kind() -> None:
    ops = pl.DataFrame(
        {
            "name": [
                "ncclKernel_AllReduce",
                "NcclAllReduce",
                "ncclX",
                None,
                "gemm",
                "cross_device_reduce_1stage",
            ],
            "kind": ["kernel", "operator", None, "kernel", "kernel", "kernel"],
        }
    )
    assert ops.select(C._communicates(ops.columns)).to_series().to_list() == [
        True,
        False,
        True,
        False,
        False,
        True,
    ]
    categorical = ops.with_columns(pl.col("kind").cast(pl.Categorical))
    assert categorical.select(C._communicates(categorical.columns)).to_series().to_list() == [
        True,
        False,
        True,
        False,
        False,
        True,
    ]
    no_kind = ops.drop("kind")
    assert no_kind.select(C._communicates(no_kind.columns)).to_series().to_list() == [
        True,
        True,
        True,
        False,
        False,
        True,
    ]


def test_has_collectives_leaves_host_operators_out() -> None:
    only_nodes = pl.DataFrame({"name": ["NcclAllReduce", "gemm"], "kind": ["operator", "kernel"]})
    assert C.has_collectives(only_nodes) is False
    assert C.has_collectives(only_nodes.drop("kind")) is True
    assert C.has_collectives(only_nodes.with_columns(pl.lit(None, pl.String).alias("kind"))) is True
    assert C.has_collectives(only_nodes.clear()) is False


def _doubt(ops: list[tuple[int, int, int, str, str]]) -> str | None:
    """One iteration of 1 ms, 0.8 ms busy (80%), on device 0, with ``ops`` (start, end ns, kind, name)."""
    frame = pl.DataFrame({"index": [0], "latency_ms": [1.0], "gpu_busy_ms": [0.8], "gpu_utilization": [0.8]})
    rows = [(0, 0, s, e, k, n) for s, e, k, n in ops]
    return C.communication_doubt(frame, pl.DataFrame(rows, schema=OPS_SCHEMA, orient="row"), 0.5)


def _text(which: str, exposed: str) -> str:
    return (
        f"verdict uncertain: compute-bound at a median utilization of 80.0%, but 40.0% without the communication "
        f"no computation overlaps ({which}, median {exposed} ms per iteration): a collective counts as busy "
        "while it waits for the other ranks, so this GPU may be waiting on the network or on a straggler, not "
        "computing"
    )


def test_a_host_node_named_for_nccl_adds_no_time_and_no_name() -> None:
    nccl = (0, 400_000, "kernel", "ncclDevKernel_AllReduce_Sum_f16_RING_LL")
    assert _doubt([nccl]) == _text("NCCL/RCCL kernels", "0.400")
    # the ONNX Runtime node of the same all-reduce, on the host: the same text
    assert _doubt([nccl, (500_000, 900_000, "operator", "NcclAllReduce")]) == _text(
        "NCCL/RCCL kernels", "0.400"
    )
    # a host operator named like a custom all-reduce is not one of the kernels said
    assert _doubt([nccl, (500_000, 900_000, "operator", "cross_device_reduce_1stage")]) == _text(
        "NCCL/RCCL kernels", "0.400"
    )


def test_custom_all_reduce_kernels_are_said() -> None:
    both = [
        (0, 200_000, "kernel", "ncclDevKernel_AllGather_RING_LL"),
        (200_000, 400_000, "kernel", "cross_device_reduce_1stage"),
    ]
    assert _doubt(both) == _text("NCCL/RCCL and custom all-reduce kernels", "0.400")
    alone = [(0, 400_000, "kernel", "mscclKernel_Sum_hip_bfloat16_Simple")]
    # (no NCCL/RCCL kernel among them: the text does not name one)
    assert _doubt(alone) == _text("custom all-reduce kernels", "0.400")
