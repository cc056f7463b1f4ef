"""Communication and cross-rank gaps (fuzz round 8): several communicators on one stream, point-to-point
kernels kept apart from collectives, captures at different times that reuse step numbers, and clocks that
cannot be compared. Every trace here is SYNTHETIC (hand-built compact results, or Kineto files written to tmp
folders); the real traces (../shared/real_traces) are read where present, never copied into the repo."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from tests.builders import EPOCH, comm_ops, compact_result
from tests.test_fleet_communicators import OFFSETS, TP_STREAM, _results, _tp_dp_traces
from tracekit.analyzers.communication import comm_per_iteration
from tracekit.analyzers.ranks import (
    POINT_TO_POINT_KINDS,
    captured_apart,
    collectives_only,
    groups_apart,
    summarize,
    wall_clock_base,
)
from tracekit.fleet.compact import COLLECTIVE_KIND
from tracekit.renderers.ranks import summary_lines

MS = 1_000_000


def _clocks_line(doc: dict[str, Any]) -> str:
    return next(line for line in summary_lines(doc) if line.startswith("clocks:"))


# ---------------------------------------------------------------------------------------------------------
# 1. Several communicators on one stream


def test_two_groups_serialized_on_one_stream_count_their_union_once() -> None:
    # A tensor-parallel all-reduce [0, 50 µs) and a data-parallel one [50, 130 µs) back to back on one stream,
    # a GEMM over [100, 200 µs): communication 130 µs, of which the GEMM hides 30 (already right).
    ops = comm_ops(
        [
            (0, 0, 0, 50_000, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"),
            (0, 0, 50_000, 130_000, "ncclDevKernel_AllReduce_Sum_f32_RING_SIMPLE"),
            (0, 0, 100_000, 200_000, "sm90_gemm"),
        ]
    )
    assert comm_per_iteration(ops).to_dicts() == [{"iteration": 0, "comm_ms": 0.13, "exposed_comm_ms": 0.1}]


@pytest.fixture(scope="module")
def one_stream(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The tensor + data parallel job of tests/test_fleet_communicators.py with both groups' all-reduces on
    one stream (stream 13), as vLLM's pynccl or a framework that passes its own stream runs them."""
    return _results(_tp_dp_traces(tmp_path_factory.mktemp("one_stream"), dp_stream=TP_STREAM))


def test_one_stream_hides_the_communicators_from_the_stream_count(one_stream: list[dict[str, Any]]) -> None:
    # Per-iteration communication is each rank's own union (already right): rank 2's three all-reduces take
    # 50 + 50 + 80 µs (it arrives last at each), the others' 50 + 50 + 230 µs (they wait for it at the DP one).
    assert [r["collective_streams"] for r in one_stream] == [{0: 1}, {1: 1}, {2: 1}, {3: 1}]
    assert [round(float(r["iterations"]["comm_ms"][0]), 9) for r in one_stream] == [0.33, 0.33, 0.18, 0.33]
    # Without the process groups in the compact result nothing tells the communicators apart (kernel names
    # and times agree with a clock 150 µs off): the offsets are wrong by a wait, but the residual says how
    # far they may be, and the straggler and the skew are withheld within it (no wrong figure beside them).
    doc = summarize(one_stream)
    assert doc["clocks"]["offsets_ns"] == [0, 0, 150_000, 2_650_000]  # (truth: [0, 0, 0, 2_500_000])
    assert doc["clocks"]["residual_us"] == 150.0
    assert doc["straggler"] == {"straggler": None, "collectives": 18}
    assert doc["skew"]["max_start_skew_ms"] is None and "not told from no skew" in doc["skew"]["why"]
    assert _clocks_line(doc) == (
        "clocks: aligned on 18 collective ends (largest residual 150.000 µs); offsets vs rank 0: rank 0 +0.000 "
        "ms, rank 1 +0.000 ms, rank 2 +0.150 ms, rank 3 +2.650 ms (each known to within the residual)"
    )


GROUPS_APART = (
    "rank 0 is in a process group of ranks 0, 1, without rank 2, rank 3: its collectives are not all of the "
    "other traces' (other process groups, on one stream or several): which collective matches which across "
    "ranks is not known"
)


def test_process_groups_that_leave_out_a_trace_leave_the_clocks_not_aligned(
    one_stream: list[dict[str, Any]],
) -> None:
    # What a trace says of its process groups (Kineto's distributedInfo.pg_config, carried as
    # ``process_groups``): rank 0's tensor-parallel group {0, 1} leaves out ranks 2 and 3, so its k-th
    # collective is not theirs, whatever stream runs it.
    tp = [[0, 1], [0, 1], [2, 3], [2, 3]]
    dp = [[0, 2], [1, 3], [0, 2], [1, 3]]
    results = [
        {**r, "process_groups": [list(range(4)), t, d]} for r, t, d in zip(one_stream, tp, dp, strict=True)
    ]
    assert groups_apart(results) == GROUPS_APART
    doc = summarize(results)
    assert doc["clocks"] == {"aligned": False, "why": GROUPS_APART, "offsets_ns": None, "matched": 0}
    assert "straggler" not in doc and "skew" not in doc
    # Ranks 0 and 1 alone: every group of theirs holds both (the DP groups {0, 2} and {1, 3} do not).
    pair = [{**r, "process_groups": [[0, 1]]} for r in results[:2]]
    assert groups_apart(pair) is None
    assert summarize(pair)["clocks"]["offsets_ns"] == [0, 0]
    # A group of one rank has no collective across ranks; groups not said: nothing known.
    alone = [{**r, "process_groups": [[0, 1], [r["rank"]]]} for r in results[:2]]
    assert groups_apart(alone) is None
    assert groups_apart(one_stream) is None


def test_groups_naming_every_trace_are_one_job(one_stream: list[dict[str, Any]]) -> None:
    results = [{**r, "process_groups": [[0, 1, 2, 3], [0, 1, 2, 3]]} for r in one_stream]
    assert groups_apart(results) is None


# ---------------------------------------------------------------------------------------------------------
# 2. Point-to-point kernels


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "allreduce"),
        ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "allreduce"),
        ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "sendrecv"),
        ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "sendrecv"),
        ("ncclSendRecvKernel_copy_i8(ncclWorkElem)", "sendrecv"),  # NCCL 2.7-2.8, RCCL of that time
        ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "allgather"),
        ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "reducescatter"),
        ("ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "broadcast"),
        ("ncclKernel_Reduce_RING_LL_Sum_half(ncclDevComm*, unsigned long, ncclWork*)", "reduce"),
        ("ncclAllReduceRingLLKernel_sum_f32(CollectiveArgs)", "allreduce"),  # NCCL 2.4
        ("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", "generic"),  # RCCL: says no operation
    ],
)
def test_kernel_names_say_their_operation(name: str, kind: str) -> None:
    said = pl.Series([name]).str.extract(COLLECTIVE_KIND).str.to_lowercase()[0]
    assert said == kind
    assert (said in POINT_TO_POINT_KINDS) == (kind == "sendrecv")


def test_point_to_point_is_still_communication_time() -> None:
    ops = comm_ops(
        [
            (0, 0, 0, 40_000, "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"),
            (0, 0, 60_000, 100_000, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
        ]
    )
    assert comm_per_iteration(ops).to_dicts() == [{"iteration": 0, "comm_ms": 0.08, "exposed_comm_ms": 0.08}]


def _ends(first: int, every: int, n: int) -> list[int]:
    return [first + k * every for k in range(n)]


def test_point_to_point_kernels_are_left_out_of_the_matching() -> None:
    # Pipeline stages 0 and 1 of a job whose every rank also all-reduces once a step: rank 0 sends its
    # activations (one SendRecv a step) before its all-reduce, rank 1 receives them and sends nothing back:
    # rank 1 holds one SendRecv more. Its clock runs 300 µs ahead. Matched with the send/receives, the
    # counts differed and the kinds disagreed; the all-reduces alone end together.
    ar = _ends(EPOCH + 800_000, 2 * MS, 2)
    r0 = compact_result(
        "a",
        0,
        ends=[EPOCH + 300_000, ar[0], EPOCH + 2_300_000, ar[1]],
        kinds=["sendrecv", "allreduce", "sendrecv", "allreduce"],
    )
    r1_ends = [EPOCH + 300_000, ar[0], EPOCH + 2_300_000, ar[1], EPOCH + 3_500_000]
    r1 = compact_result(
        "b",
        1,
        ends=[e + 300_000 for e in r1_ends],
        kinds=["sendrecv", "allreduce", "sendrecv", "allreduce", "sendrecv"],
        steps=[(EPOCH + 300_000, EPOCH + 1_300_000), (EPOCH + 2_300_000, EPOCH + 3_300_000)],
    )
    assert collectives_only(r1)["collective_ends_ns"].tolist() == [ar[0] + 300_000, ar[1] + 300_000]
    assert collectives_only(r1)["point_to_point"] == 3
    doc = summarize([r0, r1])
    assert doc["clocks"] == {
        "aligned": True,
        "method": "collective ends",
        "matched": 2,
        "offsets_ns": [0, 300_000],
        "residual_us": 0.0,
        "reference": "rank 0",
    }
    assert doc["straggler"]["collectives"] == 2
    assert doc["warnings"] == [
        "rank 0, rank 1: point-to-point kernels (send/receive: pipeline stages, or all-to-all, which NCCL runs "
        "as send/receives) are not matched across traces, as they pair two ranks, not every rank; their time "
        "is in the communication"
    ]
    assert summarize([r0])["warnings"] == []  # (one trace: nothing matched)


def test_traces_of_point_to_point_only_are_not_aligned() -> None:
    # Pure pipeline parallelism: rank 0 sends to rank 1, rank 3 receives from rank 2: their k-th SendRecv
    # kernels are not one operation. Matched in launch order they had been "aligned" (residual 0).
    ends = _ends(EPOCH + 500_000, MS, 3)
    r0 = compact_result("a", 0, ends=ends, kinds=["sendrecv"] * 3)
    r3 = compact_result("b", 3, ends=[e + 40_000 for e in ends], kinds=["sendrecv"] * 3)
    doc = summarize([r0, r3])
    why = (
        "no collective kernels to align on in rank 0, rank 3 (only point-to-point send/receive kernels, which "
        "pair two ranks, not every rank: not matched across ranks)"
    )
    assert doc["clocks"] == {"aligned": False, "why": why, "offsets_ns": None, "matched": 0}
    assert "straggler" not in doc and "skew" not in doc


def test_collectives_only_keeps_a_result_without_point_to_point_as_it_is() -> None:
    r = compact_result("a", 0, ends=[EPOCH + 500_000])
    assert collectives_only(r) is r
    old = {**r, "collective_kinds": None}  # an older compact result: no kinds
    assert collectives_only(old) is old


def test_point_to_point_steps_are_left_out_with_their_iterations() -> None:
    r = compact_result(
        "a", 0, ends=[EPOCH + 100, EPOCH + 200, EPOCH + 300], kinds=["sendrecv", "allreduce", "recv"]
    )
    r["collective_iterations"] = [0, 0, 1]
    kept = collectives_only(r)
    assert kept["collective_iterations"] == [0]
    assert kept["collective_kinds"] == ["allreduce"]
    assert kept["collective_starts_ns"].tolist() == [EPOCH + 100]


# ---------------------------------------------------------------------------------------------------------
# 3. Captures at different times that reuse step numbers


def _numbered(name: str, rank: int, first: int, numbers: list[int], ahead: int = 0) -> dict[str, Any]:
    """Steps of 1 ms every 2 ms from ``first`` (true time), one all-reduce ending 0.8 ms into each, numbered
    ``numbers`` (ProfilerStep#N), recorded by a clock ``ahead`` ns ahead."""
    steps = [(first + ahead + 2 * MS * k, first + ahead + 2 * MS * k + MS) for k in range(len(numbers))]
    r = compact_result(name, rank, ends=[s + 800_000 for s, _ in steps], steps=steps)
    r["iterations"]["step"] = np.asarray(numbers, dtype=np.int64)
    return r


HOUR = 3_600_000_000_000


def test_steps_numbered_alike_an_hour_apart_did_not_happen_together() -> None:
    # Both captures hold ProfilerStep#5-#7, rank 1's an hour later: the collectives "aligned" them with an
    # offset of an hour, residual 0, and compared their steps as one job's (skew 0, a straggler counted).
    a = _numbered("a", 0, EPOCH, [5, 6, 7])
    b = _numbered("b", 1, EPOCH + HOUR, [5, 6, 7])
    why = (
        "rank 1's step #5 starts 3600.000 s after rank 0's on the traces' wall clocks, more than one step "
        "plus the 1 s the clocks of one job's hosts may differ by: captured at different times (or on hosts "
        "whose clocks disagree that much, which nothing here tells apart), so their steps, numbered alike, are "
        "not known to have happened together"
    )
    assert captured_apart([a, b]) == why
    doc = summarize([a, b])
    assert doc["clocks"] == {"aligned": False, "why": why, "offsets_ns": None, "matched": 0}
    assert doc["slowest_by_step"] == {"why": why}
    assert "straggler" not in doc and "skew" not in doc
    assert doc["warnings"][0] == (
        f"steps not compared across traces ({why}): straggler, start skew, ends-last and slowest by step are "
        "not computed"
    )
    assert "spread" in doc  # (each trace's own median latency: no step paired)
    lines = summary_lines(doc, warnings=False)
    assert f"clocks: not aligned ({why}); no timestamp is compared across traces" in lines
    assert f"slowest by step: not computed ({why})" in lines


def test_simulated_captures_an_hour_apart(tmp_path: Path) -> None:
    # Rank 0 of one simulated run, rank 1 of another an hour later: both number their steps #0-#4. The
    # collectives had aligned them (offset 3600.003 s, residual 0) and a straggler and a skew were given.
    from tracekit.simulate.ranks import RankSimulation, write_ranks

    first = write_ranks(RankSimulation(ranks=2, steps=5, kernels=4), tmp_path / "a")
    later = write_ranks(RankSimulation(ranks=2, steps=5, kernels=4, start_ns=EPOCH + HOUR), tmp_path / "b")
    doc = summarize(_results([str(first[0]), str(later[1])]))
    assert doc["clocks"]["why"].startswith("rank 1's step #0 starts 3600.003 s after rank 0's")
    assert "straggler" not in doc and "skew" not in doc and "why" in doc["slowest_by_step"]


def test_a_clock_ahead_by_milliseconds_is_still_one_capture() -> None:
    # Rank 1's clock 2.5 ms ahead (another host): within what hosts' clocks differ by, aligned as before.
    a = _numbered("a", 0, EPOCH, [5, 6, 7])
    b = _numbered("b", 1, EPOCH, [5, 6, 7], ahead=2_500_000)
    assert captured_apart([a, b]) is None
    doc = summarize([a, b])
    assert doc["clocks"]["offsets_ns"] == [0, 2_500_000]
    assert _clocks_line(doc).endswith("rank 1 +2.500 ms")  # (residual 0: nothing to add)


def test_the_bound_is_one_second_plus_the_longest_step() -> None:
    a = _numbered("a", 0, EPOCH, [5, 6, 7])
    at = _numbered("b", 1, EPOCH + 1_000_000_000 + MS, [5, 6, 7])  # 1 s + one step (1 ms): not beyond
    assert captured_apart([a, at]) is None
    beyond = _numbered("b", 1, EPOCH + 1_000_000_000 + MS + 1, [5, 6, 7])
    assert captured_apart([a, beyond]) is not None
    before = _numbered("b", 1, EPOCH - HOUR, [5, 6, 7])
    assert "starts 3600.000 s before rank 0's" in captured_apart([a, before])


def test_clocks_not_known_to_be_wall_clocks_are_not_compared() -> None:
    # Timestamps from a trace's own origin (nsys: the session's start; Kineto: baseTimeNanoseconds not
    # added): an hour apart says nothing, and nothing is withheld for it (not known: the report says so).
    a = _numbered("a", 0, 5 * MS, [5, 6, 7])
    b = _numbered("b", 1, 5 * MS + HOUR, [5, 6, 7])
    assert wall_clock_base(a) is None and captured_apart([a, b]) is None
    # Where the compact result says where its clock's 0 lies on the wall clock (wall_clock_base_ns):
    a["wall_clock_base_ns"] = EPOCH
    b["wall_clock_base_ns"] = EPOCH
    assert wall_clock_base(a) == EPOCH
    assert captured_apart([a, b]).startswith("rank 1's step #5 starts 3600.000 s after rank 0's")
    # One trace of each: only wall clocks are compared.
    del b["wall_clock_base_ns"]
    assert captured_apart([a, b]) is None


def test_steps_compared_by_position_are_checked_too() -> None:
    a = compact_result("a", 0, ends=[EPOCH + 800_000])
    b = compact_result("b", 1, ends=[EPOCH + HOUR + 800_000], steps=[(EPOCH + HOUR, EPOCH + HOUR + MS)] * 1)
    assert captured_apart([a, b]).endswith(
        "rank 1's step 1 starts 3600.000 s after rank 0's on the traces' wall clocks, more than one step plus "
        "the 1 s the clocks of one job's hosts may differ by: captured at different times (or on hosts whose "
        "clocks disagree that much, which nothing here tells apart), so their steps, by position, are not "
        "known to have happened together"
    )


def test_a_step_whose_start_is_not_known_says_nothing() -> None:
    a = _numbered("a", 0, EPOCH, [5, 6, 7])
    b = _numbered("b", 1, EPOCH + HOUR, [5, 6, 7])
    b["iterations"]["start_ns"] = [None, *b["iterations"]["start_ns"][1:].tolist()]
    assert captured_apart([a, b]).startswith("rank 1's step #6 starts 3600.000 s after rank 0's")
    b["iterations"]["start_ns"] = [None, None, None]
    assert captured_apart([a, b]) is None


# ---------------------------------------------------------------------------------------------------------
# 4. Clocks that cannot be compared


def _no_collectives(name: str, rank: int, ahead: int) -> dict[str, Any]:
    steps = [(EPOCH + ahead + 2 * MS * k, EPOCH + ahead + 2 * MS * k + MS + 100_000 * rank) for k in range(3)]
    return compact_result(name, rank, steps=steps)


def test_without_collectives_the_skew_is_withheld_and_said_so() -> None:
    # Rank 1's clock runs 2.5 ms ahead and no trace holds a collective: the clocks cannot be compared, so no
    # step-start skew (2.5 ms, the clock's lead, had it been read as skew), no straggler, no ends-last (already
    # right); the durations-only comparison stays.
    doc = summarize([_no_collectives("a", 0, 0), _no_collectives("b", 1, 2_500_000)])
    why = "no collective kernels to align on in rank 0, rank 1"
    assert doc["clocks"] == {"aligned": False, "why": why, "offsets_ns": None, "matched": 0}
    assert "skew" not in doc and "straggler" not in doc
    assert doc["slowest_by_step"] == {"steps": 3, "slowest": "rank 1", "slowest_steps": 3}
    assert doc["warnings"] == [
        f"clocks not aligned ({why}): straggler by arrival, start skew and ends-last are not computed; "
        "'slowest by step' compares durations only"
    ]
    lines = summary_lines(doc, warnings=False)
    assert f"clocks: not aligned ({why}); no timestamp is compared across traces" in lines
    assert not any(line.startswith(("step start skew", "straggler")) for line in lines)


def test_collectives_on_one_trace_only_do_not_align_either() -> None:
    a = compact_result("a", 0, ends=[EPOCH + 800_000, EPOCH + 2_800_000])
    doc = summarize([a, _no_collectives("b", 1, 2_500_000)])
    assert doc["clocks"]["why"] == "no collective kernels to align on in rank 1"
    assert "skew" not in doc


def test_simulated_ranks_without_their_collectives(tmp_path: Path) -> None:
    # The simulated job (rank 3's clock 2.5 ms ahead) with every NCCL kernel renamed: the wall clocks (epoch
    # ns) agree within a second, so the captures are one; the clocks are still not aligned (no collective).
    import gzip

    from tracekit.simulate.ranks import NCCL_KERNEL, RankSimulation, write_ranks

    sim = RankSimulation(ranks=4, steps=3, kernels=4)
    paths = []
    for p in write_ranks(sim, tmp_path):
        text = gzip.decompress(p.read_bytes()).decode().replace(NCCL_KERNEL, "copy_kernel_synthetic")
        p.write_bytes(gzip.compress(text.encode()))
        paths.append(str(p))
    results = _results(paths)
    assert [len(r["collective_ends_ns"]) for r in results] == [0, 0, 0, 0]
    doc = summarize(results)
    assert doc["clocks"]["why"] == "no collective kernels to align on in rank 0, rank 1, rank 2, rank 3"
    assert "skew" not in doc and "straggler" not in doc
    assert OFFSETS[3] == 2_500_000  # (the lead a skew read from raw clocks would have shown)
