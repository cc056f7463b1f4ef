"""Exact outputs of ``compact.collective_labels`` (the kernels' ``Collective name`` / ``Process Group Name``
matched to the collectives in launch order): the tests that kill the mutants the round-10 mutation run left
(benchmarks/mutation.py compact --functions collective_labels). Labelled synthetic inputs."""

from __future__ import annotations

import polars as pl

from tracekit.fleet.compact import collective_labels


def _args(rows: list[tuple[int, int, int, int, int]], ops: list[str], groups: list[str]) -> dict:
    return {
        "kernels": len(rows),
        "device": ",".join(str(r[0]) for r in rows),
        "stream": ",".join(str(r[1]) for r in rows),
        "start": ",".join(str(r[2]) for r in rows),
        "op": ",".join(str(r[3]) for r in rows),
        "group": ",".join(str(r[4]) for r in rows),
        "ops": ops,
        "group_names": groups,
    }


def _ordered(rows: list[tuple[int, int, int]], dtype: pl.DataType = pl.Int32) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "device": [r[0] for r in rows],
            "stream": [r[1] for r in rows],
            "start": [r[2] for r in rows],
            "name": ["ncclKernel"] * len(rows),
        },
        schema={"device": dtype, "stream": dtype, "start": dtype, "name": pl.String},
    )


def test_labels_follow_the_collectives_order_by_device_stream_and_start() -> None:
    """Three collectives in launch order (not sorted by start); the labels of each, matched on all three
    keys: a kernel on another stream or device at the same start is not theirs; one without labels: ""."""
    args = _args(
        [(0, 7, 300, 1, 0), (0, 7, 100, 0, 1), (0, 8, 200, 2, 1), (1, 7, 200, 2, 1), (0, 7, 200, 1, 0)],
        ["allreduce", "broadcast", "send"],
        ["tp", "dp"],
    )
    ordered = _ordered([(0, 7, 300), (0, 7, 100), (0, 7, 200), (0, 9, 100)])
    ops, groups = collective_labels(ordered, args)
    assert ops == ["broadcast", "allreduce", "broadcast", ""]
    assert groups == ["tp", "dp", "tp", ""]


def test_a_kernel_given_twice_keeps_its_first_labels() -> None:
    args = _args([(0, 7, 100, 0, 0), (0, 7, 100, 1, 1)], ["allreduce", "allgather"], ["a", "b"])
    ops, groups = collective_labels(_ordered([(0, 7, 100)], pl.Int64), args)
    assert (ops, groups) == (["allreduce"], ["a"])


def test_nothing_to_label_gives_one_blank_per_collective() -> None:
    ordered = _ordered([(0, 7, 100), (0, 7, 200)])
    blank = ["", ""]
    assert collective_labels(ordered, None) == (blank, blank)
    assert collective_labels(ordered, {}) == (blank, blank)
    # a table that decodes to nothing (0 kernels; lists of other lengths)
    assert collective_labels(ordered, _args([], [], [])) == (blank, blank)
    bad = _args([(0, 7, 100, 0, 0)], ["allreduce"], ["a"])
    bad["kernels"] = 2
    assert collective_labels(ordered, bad) == (blank, blank)
    # no collectives
    empty = _ordered([])
    assert collective_labels(empty, _args([(0, 7, 100, 0, 0)], ["allreduce"], ["a"])) == ([], [])


def test_a_label_index_out_of_its_table_is_blank() -> None:
    args = _args([(0, 7, 100, 5, 0), (0, 7, 200, 0, 3)], ["allreduce"], ["a"])
    ops, groups = collective_labels(_ordered([(0, 7, 100), (0, 7, 200)]), args)
    assert ops == ["", "allreduce"] and groups == ["a", ""]


def test_device_collectives_by_name_and_kind() -> None:
    """An op without a name is no collective; one of unknown kind named for NCCL is (only a host operator
    is left out), whether its kind column is text or absent."""
    from tracekit.fleet.compact import collective_streams

    ops = pl.DataFrame(
        {
            "name": ["ncclDevKernel_AllReduce", None, "NcclAllReduce", "ncclDevKernel_AllGather"],
            "kind": [None, "kernel", "operator", "kernel"],
            "device": [0, 0, 0, 1],
            "stream": [7, 8, 9, 7],
        }
    )
    assert collective_streams(ops) == {0: 1, 1: 1}
    assert collective_streams(ops.drop("kind")) == {0: 2, 1: 1}
