"""The cross-trace summary's edge cases, each pinned by exact values on hand-built compact results (the mutation
run of analyzers/ranks.py found them unpinned; benchmarks/mutation.py). The whole documents of the committed
synthetic ranks are pinned by the goldens (tests/golden/many/)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import polars as pl
import pytest

from tests.builders import EPOCH, comm_ops, compact_result
from tracekit.analyzers.ranks import (
    clock_offsets,
    collective_ns,
    last_by_more_than,
    most_often,
    skew,
    slowest_by_step,
    stragglers,
    summarize,
    with_labels,
)
from tracekit.fleet.compact import columns, comm_per_iteration

result = compact_result
_ops = comm_ops


def test_two_traces_claiming_one_rank_are_never_aligned() -> None:
    """Two traces (the fewest that can disagree) both saying rank 0: separate runs, whatever their collectives."""
    ends = [EPOCH + 5_000, EPOCH + 9_000]
    clocks = clock_offsets([result("a.json", 0, ends), result("b.json", 0, ends)])
    assert clocks == {
        "aligned": False,
        "why": "rank 0 is claimed by 2 traces: they are not the ranks of one job",
        "offsets_ns": None,
        "matched": 0,
    }


def test_traces_without_collectives_are_named_up_to_five() -> None:
    """The 'not aligned' reason names the traces without collectives, five at most, then ' ...'; a trace with
    collectives is not named."""
    with_comm = result("comm.json", 0, [EPOCH + 5_000])
    quiet = [result(f"q{i}.json") for i in range(7)]
    clocks = clock_offsets([with_comm, *quiet])
    assert (
        clocks["why"]
        == "no collective kernels to align on in q0.json, q1.json, q2.json, q3.json, q4.json ..."
    )
    clocks = clock_offsets([with_comm, *quiet[:5]])
    assert clocks["why"] == "no collective kernels to align on in q0.json, q1.json, q2.json, q3.json, q4.json"
    assert clock_offsets([with_comm])["why"] == "one trace"


def test_unequal_collective_counts_match_the_first_or_the_last_ones_where_only_one_fits() -> None:
    """The reference holding more collectives than another trace (or fewer): the first min(counts) of each are
    matched in launch order, or the last (a capture that began at a later collective); where only one of the
    two fits, it is taken and the reason says which; the residual is the largest disagreement left, in µs."""
    ref = result("r0.json", 0, [EPOCH + 10_000, EPOCH + 20_000, EPOCH + 30_000, EPOCH + 100_000])
    other = result("r1.json", 1, [EPOCH + 510_000, EPOCH + 520_000, EPOCH + 530_000])  # the first 3, +500 µs
    clocks = clock_offsets([ref, other])
    assert clocks == {
        "aligned": True,
        "method": "collective ends",
        "matched": 3,
        "offsets_ns": [0, 500_000],
        "residual_us": 0.0,
        "reference": "rank 0",
        "why": "traces hold 3 to 4 collectives; the first 3 were matched",
        "matched_from": "first",
    }
    assert clock_offsets([other, ref])["offsets_ns"] == [0, -500_000]
    later = result("r1.json", 1, [EPOCH + 520_000, EPOCH + 530_000, EPOCH + 600_000])  # the last 3, +500 µs
    clocks = clock_offsets([ref, later])
    assert (clocks["offsets_ns"], clocks["matched_from"]) == ([0, 500_000], "last")
    assert clocks["why"] == "traces hold 3 to 4 collectives; the last 3 were matched"


def test_unequal_collective_counts_that_fit_both_ways_are_not_aligned() -> None:
    """Evenly spaced collectives (periodic steps) fit from the first and from the last, with offsets one
    collective apart: without steps that line up under only one of them, which matches which is not known
    (a capture that began two collectives later was given an offset of two steps, with residual 0)."""
    ref = result("r0.json", 0, [EPOCH + 10_000, EPOCH + 20_000, EPOCH + 30_000])
    other = result("r1.json", 1, [EPOCH + 510_000, EPOCH + 526_000])
    assert clock_offsets([ref, other]) == {
        "aligned": False,
        "why": "traces hold 2 to 3 collectives: matched from the first or from the last, both fit, with clock "
        "offsets up to 0.010 ms apart (captures that began or ended at other collectives), and the steps line up "
        "under both: which collective matches which is not known",
        "offsets_ns": None,
        "matched": 0,
    }


def test_collectives_of_other_operations_are_not_matched() -> None:
    """Matched in launch order, the n-th collectives of two traces must be the same operation (by their kernel
    names): rank 1's second is an all-gather where rank 0's is an all-reduce (another process group, or a
    capture that began one collective later), so the clocks are not aligned, and the reason names where. A kind
    no name says ("") agrees with any; kinds past the matched ones are not compared."""
    ends = [EPOCH + 10_000, EPOCH + 20_000, EPOCH + 30_000]
    ref = result("r0.json", 0, ends, kinds=["allreduce", "allreduce", "allreduce"])
    other = result("r1.json", 1, [e + 500 for e in ends], kinds=["allreduce", "allgather", "allreduce"])
    clocks = clock_offsets([ref, other])
    assert clocks == {
        "aligned": False,
        "why": "the collectives differ: rank 1's collective 2 in launch order is allgather, rank 0's is allreduce "
        "(other process groups, or captures that began at other collectives)",
        "offsets_ns": None,
        "matched": 0,
    }
    unknown = result("r1.json", 1, [e + 500 for e in ends], kinds=["allreduce", "", "allreduce"])
    assert clock_offsets([ref, unknown])["offsets_ns"] == [0, 500]
    longer = result(
        "r1.json", 1, [*[e + 500 for e in ends], EPOCH + 40_500], kinds=[*["allreduce"] * 3, "send"]
    )
    assert clock_offsets([ref, longer])["offsets_ns"] == [0, 500]


def test_a_kind_unknown_on_either_side_or_not_given_agrees_with_any() -> None:
    """A collective whose name says no operation ("") on the reference's side agrees as on the other's; a
    result without kinds at all (none recorded) agrees with any, on either side."""
    ends = [EPOCH + 10_000, EPOCH + 20_000]
    ref = result("r0.json", 0, ends, kinds=["", "allreduce"])
    other = result("r1.json", 1, [e + 700 for e in ends], kinds=["allgather", "allreduce"])
    assert clock_offsets([ref, other])["offsets_ns"] == [0, 700]
    bare = result("r1.json", 1, [e + 700 for e in ends])
    del bare["collective_kinds"]
    assert clock_offsets([result("r0.json", 0, ends), bare])["offsets_ns"] == [0, 700]
    assert clock_offsets([bare, result("r0.json", 0, ends)])["offsets_ns"] == [0, -700]


@pytest.mark.parametrize(
    ("ends", "spacing"),
    [
        ([10, 10, 10, 20, 30], 10.0),  # ends together are no spacing: not medians of zeros
        ([0, 1, 2, 3], 1.0),  # a nanosecond apart is apart
        ([30, 10, 20], 10.0),  # in time order, whatever the launch order
        ([5, 5], None),  # none apart
        ([7], None),
    ],
)
def test_median_spacing_counts_only_collectives_that_end_apart(
    ends: list[int], spacing: float | None
) -> None:
    from tracekit.analyzers.ranks import median_spacing

    assert median_spacing(ends) == spacing


@pytest.mark.parametrize(("late_ns", "aligned"), [(5_000, True), (5_001, False)])
def test_collective_ends_that_disagree_by_half_their_spacing_are_not_matched(
    late_ns: int, aligned: bool
) -> None:
    """Collectives every 10 µs: after the offsets are taken out, an end that still disagrees by more than half
    that spacing could as well be matched to its neighbour, so no offset is trusted (exactly half still is);
    the reason gives both numbers."""
    ends = [EPOCH + 10_000 * k for k in range(1, 4)]
    ref = result("r0.json", 0, ends)
    other = result("r1.json", 1, [ends[0] + 1_000_000, ends[1] + 1_000_000 + late_ns, ends[2] + 1_000_000])
    clocks = clock_offsets([ref, other])
    assert clocks["aligned"] is aligned
    if not aligned:
        assert clocks["why"] == (
            "collective ends disagree by up to 5.001 µs once the offsets are taken out, more than half the "
            "10.000 µs between rank 0's collectives (median): which collective matches which is not known"
        )


def test_the_straggler_wait_is_exact_at_epoch_time() -> None:
    """Three ranks at epoch-ns clocks: rank 2 arrives 1,001 ns after rank 0 and 2,000 ns after rank 1 at each
    collective; it waits for the median of the others' arrivals (1,500.5 ns before it), computed on small
    numbers (epoch-ns values as floats lose ~256 ns)."""
    ends = [EPOCH + 1_000_000, EPOCH + 2_000_000]
    arrive = {0: 999, 1: 0, 2: 2_000}
    results = [
        result(f"r{r}.json", r, ends, starts=[e - 100_000 + arrive[r] for e in ends]) for r in range(3)
    ]
    out = stragglers(results, [0, 0, 0], 0)
    assert out == {
        "straggler": "rank 2",
        "arrives_last": 2,
        "collectives": 2,
        "median_wait_ms": 0.0015005,
        "total_wait_ms": 0.003001,
        "arrives_last_by_trace": {"rank 2": 2},
    }


def test_no_collectives_no_straggler() -> None:
    """Stragglers of traces without matched collectives: none, and zero collectives."""
    assert stragglers([result("a.json", 0), result("b.json", 1)], [0, 0], 0) == {
        "straggler": None,
        "collectives": 0,
    }


def test_the_trace_whose_steps_end_last_and_how_often() -> None:
    """Ends-last counts the steps each trace ends last (a tie counts for nobody); clock offsets are taken out
    before comparing: rank 1's clock runs 1 ms ahead, so its raw ends look later than they are."""
    ms = 1_000_000
    r0 = result(
        "r0.json",
        0,
        steps=[
            (EPOCH, EPOCH + 5 * ms),
            (EPOCH + 10 * ms, EPOCH + 15 * ms),
            (EPOCH + 20 * ms, EPOCH + 25 * ms),
        ],
    )
    # true ends: 5.5, 15.5, 25 ms (later than rank 0's 5 and 15; a tie at the third step); raw ends 1 ms later,
    # which would make rank 1 last at all three
    r1 = result(
        "r1.json",
        1,
        steps=[
            (EPOCH + 1 * ms, EPOCH + 6_500_000),
            (EPOCH + 11 * ms, EPOCH + 16_500_000),
            (EPOCH + 21 * ms, EPOCH + 26 * ms),
        ],
    )
    out = skew([r0, r1], [0, ms], 0)
    assert out == {
        "steps": 3,
        "median_start_skew_ms": 0.0,
        "max_start_skew_ms": 0.0,
        "ends_last": "rank 1",
        "ends_last_steps": 2,
    }


def test_ranks_come_first_in_rank_order_not_name_order() -> None:
    """Rows: traces with a rank by rank (rank 2 before rank 10, whatever their file names), then the others by
    file name."""
    doc = summarize([result("z.json"), result("b.json", 10), result("a.json"), result("c.json", 2)])
    assert [row["trace"] for row in doc["rows"]] == ["rank 2", "rank 10", "a.json", "z.json"]


def test_a_repeated_name_without_a_path_is_labelled_by_its_name() -> None:
    """Labels: a file name two traces share is replaced by each one's path; where a result has no path, its
    name stays."""
    labels = [
        r["label"] for r in with_labels([result("t.json", path=None), result("t.json", path="/b/t.json")])
    ]
    assert labels == ["t.json", "/b/t.json"]


@pytest.mark.parametrize("offsets", [[0], [0, 0, 0]])
@pytest.mark.parametrize("measure", [stragglers, skew])
def test_offsets_that_do_not_match_the_traces_are_refused(measure: Any, offsets: list[int]) -> None:
    """One clock offset per trace: a list of another length is an error, never a silent truncation that would
    leave a trace out of the straggler or skew."""
    ends = [EPOCH + 1_000_000]
    with pytest.raises(ValueError):
        measure([result("r0.json", 0, ends), result("r1.json", 1, ends)], offsets, 0)


def test_no_common_step_no_slowest() -> None:
    """A trace without iterations leaves no step to compare: zero steps, and nobody the slowest."""
    empty = result("e.json", 1, steps=[(EPOCH, EPOCH + 1)])
    empty["iterations"] = {k: v[:0] for k, v in empty["iterations"].items()}
    assert slowest_by_step([result("a.json", 0), empty]) == {"steps": 0}
    assert slowest_by_step([]) == {"steps": 0}


def test_a_result_that_does_not_say_synthetic_is_not() -> None:
    """A row is synthetic only when its result says so (a measured trace's result may not say anything)."""
    plain, marked = result("a.json", 0), {**result("b.json", 1), "synthetic": True}
    assert [row["synthetic"] for row in summarize([plain, marked])["rows"]] == [False, True]


def test_each_traces_warnings_are_said_once_with_the_traces_they_apply_to() -> None:
    """A trace's own warnings qualify its row: each text once, after the traces it applies to (five named,
    then how many more); traces cut by different ranges are warned about, with which range each uses."""
    traces = [result(f"t{i}.json", i) for i in range(7)]
    for r in traces:
        r["warnings"] = ["3 of 3 iterations are unsynchronized"]
        r["range"] = "ProfilerStep#*"
    traces[2]["warnings"] = [*traces[2]["warnings"], "12 GPU ops have no runtime call"]
    traces[6]["range"] = "iteration"
    doc = summarize(traces)
    assert doc["warnings"][-3:] == [
        "iterations are cut by different ranges ('ProfilerStep#*' in rank 0, rank 1, rank 2, rank 3, rank 4 and 1 more; "
        "'iteration' in rank 6): a step of one trace may be other work than a step of another",
        "rank 0, rank 1, rank 2, rank 3, rank 4 and 2 more: 3 of 3 iterations are unsynchronized",
        "rank 2: 12 GPU ops have no runtime call",
    ]
    assert [row["range"] for row in doc["rows"]][-2:] == ["ProfilerStep#*", "iteration"]
    same = summarize(traces[:5])
    assert not any("different ranges" in w for w in same["warnings"])


def test_the_text_and_markdown_name_the_synthetic_traces_only() -> None:
    """A synthetic trace's row is said to be synthetic under the table (its label alone would not say so); a
    measured trace is not named there, and without synthetic traces there is no such line."""
    from tracekit.renderers.ranks import render_ranks

    doc = summarize([{**result("sim.json", 0), "synthetic": True}, result("real.json", 1)])
    for fmt in ("table", "markdown"):
        lines = [line for line in render_ranks(doc, fmt).splitlines() if "SYNTHETIC" in line]
        assert lines == [
            ("- " if fmt == "markdown" else "") + "SYNTHETIC traces (simulated, not measurements): rank 0"
        ]
    assert "SYNTHETIC" not in render_ranks(summarize([result("real.json", 1)]), "table")


# -- fleet/compact.py -----------------------------------------------------------------------------------------


def test_an_op_without_a_name_is_not_communication() -> None:
    """A device op whose name is missing is computation, never a collective: it hides the collective it
    overlaps, and alone it makes no communication row."""
    ops = _ops([(0, 0, 0, 10, "ncclKernel_AllReduce"), (0, 0, 5, 30, None)])
    assert comm_per_iteration(ops).rows() == [(0, 10e-6, 5e-6)]
    assert comm_per_iteration(_ops([(0, 0, 0, 10, None)])).is_empty()


def test_a_collective_on_an_unknown_device_is_still_counted() -> None:
    """Ops whose device is unknown (null) form their own group: their collective counts, hidden only by ops
    of that same unknown device."""
    ops = _ops([(0, None, 0, 10, "ncclKernel_AllReduce"), (0, None, 0, 4, "gemm"), (0, 1, 0, 10, "gemm")])
    assert comm_per_iteration(ops).rows() == [(0, 10e-6, 6e-6)]


def test_compact_columns_are_arrays_unless_an_integer_column_has_nulls() -> None:
    """The compact result's iteration columns: float columns as float64 arrays (null -> NaN), integer columns
    as int64 arrays, and an integer column with a null as a list of ints with None (an int64 array cannot
    hold it; a float one would round nanosecond times)."""
    frame = pl.DataFrame(
        {"ms": [1.5, None], "ns": [EPOCH + 1, EPOCH + 3], "gaps": [2, None], "name": ["a", "b"]},
        schema={"ms": pl.Float64, "ns": pl.Int64, "gaps": pl.Int64, "name": pl.String},
    )
    out = columns(frame)
    assert out["ms"].dtype == np.float64 and out["ms"][0] == 1.5 and np.isnan(out["ms"][1])
    assert out["ns"].dtype == np.int64 and out["ns"].tolist() == [EPOCH + 1, EPOCH + 3]
    assert out["gaps"] == [2, None] and out["name"] == ["a", "b"]


def _analyzed(ops: list[tuple[Any, ...]]) -> Any:
    """A hand-built (synthetic) trace of two 1 µs iterations analyzed: ``ops`` as (start, end, correlation,
    stream, name); correlations 1-4 are launched at 10, 30, 50 and 1010 ns."""
    from tests.builders import make_trace
    from tracekit.session import analyze_trace

    trace = make_trace(
        ranges=[(0, 1000, "step"), (1000, 2000, "step")],
        api=[
            (10, 20, 1, "cudaLaunchKernel"),
            (30, 40, 2, "cudaLaunchKernel"),
            (50, 60, 3, "cudaLaunchKernel"),
            (1010, 1020, 4, "cudaLaunchKernel"),
        ],
        ops=ops,
        op_fields=("start", "end", "correlation", "stream", "name"),
        meta={"path": "hand-built.synthetic", "synthetic": True},
    )
    return analyze_trace(trace)


def test_compact_collectives_in_launch_order_and_iterations_without_them() -> None:
    """Collectives go in launch order (their call's start, then their own start), not in start order: it is
    how they are matched across ranks; one without a launching call (launched before the capture: where it
    falls in the launch order is not known) is left out of the lists, though its time counts as
    communication. Each has the kind its name says. An iteration without a collective, in a trace with some,
    has 0 communication, not none."""
    from tracekit.fleet.compact import compact

    analyzed = _analyzed(
        [
            (100, 220, 3, 7, "sm90_gemm"),  # hides C and the first 20 ns of B
            (150, 180, 1, 15, "ncclDevKernel_AllGather"),  # C: launched with A (one call), starts first
            (200, 250, 2, 14, "ncclDevKernel_Broadcast"),  # B: launched after A, starts before it
            (300, 400, 1, 13, "ncclDevKernel_AllReduce"),  # A
            (600, 650, None, 13, "ncclDevKernel_Reduce"),  # E: no launching call: not in the lists
            (1100, 1500, 4, 7, "sm90_gemm"),  # iteration 1: computation only
        ]
    )
    out = compact(analyzed)
    assert out["collective_starts_ns"].tolist() == [150, 300, 200]
    assert out["collective_ends_ns"].tolist() == [180, 400, 250]
    assert out["collective_kinds"] == ["allgather", "allreduce", "broadcast"]
    assert out["collective_starts_ns"].dtype == np.int64
    its = out["iterations"]
    assert its["index"].tolist() == [0, 1]
    assert its["comm_ms"].tolist() == pytest.approx([230e-6, 0.0], rel=1e-12)
    assert its["exposed_comm_ms"].tolist() == pytest.approx([180e-6, 0.0], rel=1e-12)


def test_collectives_without_any_launching_call_go_in_time_order() -> None:
    """A trace with no host-side events (no collective has a launching call): every collective is listed, by
    its start; kinds from the names, "" where a name says no operation."""
    from tracekit.fleet.compact import collectives_in_launch_order

    ops = pl.DataFrame(
        {
            "name": [
                "nccl_custom",
                "ncclKernel_ReduceScatter_RING",
                "gemm",
                "ncclDevKernel_SendRecv",
                "rcclX",
            ],
            "start": [30, 10, 0, 20, None],
            "end": [40, 15, 50, 25, 5],
            "call_start": [None, None, None, None, None],
        },
        schema_overrides={"call_start": pl.Int64},
    )
    starts, ends, kinds = collectives_in_launch_order(ops)
    assert starts.tolist() == [10, 20, 30] and ends.tolist() == [15, 25, 40]
    assert kinds == ["reducescatter", "sendrecv", ""]


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "allreduce"),
        ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "allreduce"),
        ("ncclKernel_ReduceScatter_RING_SIMPLE_Sum_bf16", "reducescatter"),
        ("ncclDevKernel_Reduce_Sum_f16_RING_LL", "reduce"),
        ("ncclDevKernel_AllGather_RING_LL", "allgather"),
        ("ncclDevKernel_Broadcast_RING_LL", "broadcast"),
        ("ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)", "sendrecv"),
        ("ncclDevKernel_Generic_4(ncclDevComm*, unsigned long, ncclWork*)", "generic"),
        ("ncclKernel_AllToAll", "alltoall"),
    ],
)
def test_a_collective_kind_is_the_operation_its_kernel_name_says(name: str, kind: str) -> None:
    from tracekit.fleet.compact import collectives_in_launch_order

    ops = pl.DataFrame({"name": [name], "start": [1], "end": [2], "call_start": [0]})
    assert collectives_in_launch_order(ops)[2] == [kind]


def test_compact_without_collectives() -> None:
    """A trace without any collective: communication is unknown (NaN) in every iteration, not 0, and the
    collective lists are empty int64 arrays; the trace's path, device, range and measurement warnings (an op
    launched after the last iteration) are carried."""
    from tracekit.fleet.compact import compact

    out = compact(
        _analyzed(
            [(100, 220, 3, 7, "sm90_gemm"), (1100, 1500, 4, 7, "sm90_gemm"), (5000, 5100, None, 7, "late")]
        )
    )
    for key in ("comm_ms", "exposed_comm_ms"):
        column = out["iterations"][key]
        assert column.dtype == np.float64 and np.isnan(column).all() and len(column) == 2
    for key in ("collective_starts_ns", "collective_ends_ns"):
        assert out[key].dtype == np.int64 and len(out[key]) == 0
    assert out["collective_kinds"] == [] and out["verdict_uncertain"] is False
    assert (out["device"], out["range"], out["synthetic"]) == ("gpu", "step", True)
    assert (out["path"], out["name"]) == ("hand-built.synthetic", "hand-built.synthetic")
    assert out["warnings"] == [
        "1 device ops (0.000 ms busy) were launched outside every iteration (1 after the last): they count in "
        "no iteration"
    ]


def test_tied_latencies_name_two_traces_and_no_slowest_step() -> None:
    """Traces of equal latency (two exports of one run, or ranks in lockstep): the spread names two different
    traces at 1.000x, never one trace as both the slowest and the fastest; and a step where the longest
    iteration is shared has no slowest trace, as a collective that ends together has no last rank."""
    a, b = result("a.json", 0), result("b.json", 1)
    doc = summarize([a, b])
    assert (doc["spread"]["slowest"], doc["spread"]["fastest"], doc["spread"]["ratio"]) == (
        "rank 0",
        "rank 1",
        1.0,
    )
    assert slowest_by_step([a, b]) == {"steps": 2}
    slower = result("c.json", 2, steps=[(EPOCH, EPOCH + 1_000_000), (EPOCH + 2_000_000, EPOCH + 3_000_001)])
    assert slowest_by_step([a, b, slower]) == {"steps": 2, "slowest": "rank 2", "slowest_steps": 1}
    assert summarize([a, slower])["spread"]["fastest"] == "rank 0"


def test_ranks_in_lockstep_have_no_straggler() -> None:
    """Collectives that two traces reach last together name no straggler (not the first trace listed, with a
    wait of 0); the collectives are still counted, and a later collective with one last arrival counts."""
    ends = [EPOCH + 1_000_000, EPOCH + 2_000_000]
    same = [result(f"r{r}.json", r, ends) for r in range(2)]
    assert stragglers(same, [0, 0], 0) == {"straggler": None, "collectives": 2}
    late = result("r2.json", 2, ends, starts=[ends[0] - 100, ends[1] - 50])
    out = stragglers([*same, late], [0, 0, 0], 0)
    assert (out["straggler"], out["arrives_last"], out["collectives"]) == ("rank 2", 1, 2)
    assert out["median_wait_ms"] == 0.00005


def test_the_table_says_when_no_trace_is_the_straggler() -> None:
    """Aligned clocks, collectives matched, and every one reached last by two traces together: the table says
    there is no straggler, and why; with a straggler it names it instead."""
    from tracekit.renderers.ranks import render_ranks

    ends = [EPOCH + 1_000_000, EPOCH + 2_000_000]
    text = render_ranks(summarize([result(f"r{r}.json", r, ends) for r in range(2)]), "table")
    said = [line for line in text.splitlines() if line.startswith("straggler:")]
    assert said == [
        "straggler: none (at each of 2 collectives two or more traces arrive last within the clocks' "
        "alignment, 0.000 µs)"
    ]
    late = result("r2.json", 2, ends, starts=[e - 50 for e in ends])
    text = render_ranks(summarize([result("r0.json", 0, ends), late]), "table")
    assert [line for line in text.splitlines() if line.startswith("straggler:")] == [
        "straggler: rank 2 arrives last at 2 of 2 collectives; the others wait 0.000 ms (median) for it, "
        "0.000 ms in all"
    ]


@pytest.mark.parametrize("margin, straggler", [(300, None), (1_000, None), (1_001, "rank 1")])
def test_an_arrival_closer_than_the_clock_alignment_names_no_straggler(margin: int, straggler: Any) -> None:
    """Rank 1's collectives end 0 and 2,000 ns after rank 0's: its clock offset is their median, 1,000 ns, and
    the residual 1,000 ns. Arriving later than rank 0 by no more than that, which came first is not known: no
    straggler, and no trace ending its steps last; by 1,001 ns, rank 1 is the straggler at both collectives
    and ends both steps last."""
    ms = 1_000_000
    ends0, ends1 = [EPOCH + ms, EPOCH + 2 * ms], [EPOCH + ms, EPOCH + 2 * ms + 2_000]
    r0 = result("r0.json", 0, ends0, steps=[(EPOCH, EPOCH + ms), (EPOCH + ms, EPOCH + 2 * ms)])
    r1 = result(
        "r1.json",
        1,
        ends1,
        starts=[e - 100 + 1_000 + margin for e in ends0],
        steps=[
            (EPOCH + 1_000, EPOCH + ms + 1_000 + margin),
            (EPOCH + ms + 1_000, EPOCH + 2 * ms + 1_000 + margin),
        ],
    )
    doc = summarize([r0, r1])
    assert doc["clocks"]["offsets_ns"] == [0, 1_000] and doc["clocks"]["residual_us"] == 1.0
    assert doc["straggler"]["straggler"] == straggler and doc["straggler"]["collectives"] == 2
    assert doc["straggler"].get("arrives_last") == (2 if straggler else None)
    assert (doc["skew"].get("ends_last"), doc["skew"].get("ends_last_steps")) == (
        (straggler, 2) if straggler else (None, None)
    )
    assert stragglers([r0, r1], [0, 1_000], 0)["straggler"] == "rank 1"  # without the tolerance: named


def test_the_one_last_by_more_than_the_tolerance() -> None:
    """Later than every other by more than the tolerance: by 1 ns at tolerance 0, not at tolerance 1; two
    equal latest values never."""
    assert last_by_more_than([5, 6, 4], 0) == 1
    assert last_by_more_than([5, 6, 4], 1) is None
    assert last_by_more_than([6, 6, 4], 0) is None
    assert last_by_more_than([7], 0) == 0


def test_the_wait_is_against_the_median_of_the_others_only() -> None:
    """Four ranks arriving 0, 100, 300 and 1,000 ns after the first: the last waits 900 ns over the median of
    the three others (100 ns), not over a median that counts itself or one of them twice."""
    ends = [EPOCH + 1_000_000]
    arrive = [0, 100, 300, 1_000]
    results = [result(f"r{r}.json", r, ends, starts=[ends[0] - 10_000 + arrive[r]]) for r in range(4)]
    out = stragglers(results, [0, 0, 0, 0], 0)
    assert (out["straggler"], out["median_wait_ms"]) == ("rank 3", 0.0009)


def test_no_common_step_no_start_skew_and_no_zero_latency_ratio() -> None:
    """Aligned traces with no step in common: no start skew (not a median of nothing); and a fastest trace of
    zero median latency gives no ratio (not a division by zero)."""
    ends = [EPOCH + 1_000_000]
    empty = result("e.json", 1, ends)
    empty["iterations"] = {k: v[:0] for k, v in empty["iterations"].items()}
    assert skew([result("a.json", 0, ends), empty], [0, 0], 0) == {
        "steps": 0,
        "median_start_skew_ms": None,
        "max_start_skew_ms": None,
    }
    instant = result("z.json", 2, steps=[(EPOCH, EPOCH)])
    spread = summarize([result("a.json", 0), instant])["spread"]
    assert (spread["fastest"], spread["fastest_median_latency_ms"], spread["ratio"]) == ("rank 2", 0.0, None)


@pytest.mark.parametrize("shift_ms", [0.5, 1, 2])
def test_steps_that_do_not_overlap_once_aligned_are_not_compared(shift_ms: float) -> None:
    """Rank 1's capture began one step later (its steps of 1 ms every 2 ms start 2 ms after rank 0's, with
    the same clock): matched by position, its first step is rank 0's second, so no start skew and no
    ends-last is computed, and the table says why. Shifted by half a step, the steps still overlap and the
    skew is computed (0.5 ms); shifted by exactly a step's length they only touch, and do not overlap."""
    from tracekit.renderers.ranks import render_ranks

    ms = 1_000_000
    shift = int(shift_ms * ms)
    ends = [EPOCH + 10 * ms]
    steps = [(EPOCH + 2 * k * ms, EPOCH + (2 * k + 1) * ms) for k in range(3)]
    ref = result("r0.json", 0, ends, steps=steps)
    later = result("r1.json", 1, ends, steps=[(s + shift, e + shift) for s, e in steps])
    out = skew([ref, later], [0, 0], 0)
    if shift_ms < 1:
        assert out["median_start_skew_ms"] == pytest.approx(0.5)
        return
    why = (
        "step 1 of rank 1 does not overlap step 1 of rank 0 once the clocks are aligned: the traces' steps do "
        "not line up (captures that began at different steps?)"
    )
    assert out == {"steps": 3, "why": why}
    doc = summarize([ref, later])
    assert doc["skew"] == out
    assert f"step start skew: not computed ({why})" in render_ranks(doc, "table").splitlines()


@pytest.mark.parametrize(("shift_ms", "apart"), [(-1, True), (-0.999, False)])
def test_one_common_step_is_checked_too_and_touching_steps_do_not_overlap(
    shift_ms: float, apart: bool
) -> None:
    """One step in common, rank 1's ending exactly where rank 0's begins (its capture one step earlier): no
    overlap, so no skew; ending a microsecond later, they overlap."""
    ms = 1_000_000
    ends = [EPOCH + 10 * ms]
    ref = result("r0.json", 0, ends, steps=[(EPOCH, EPOCH + ms)])
    shift = int(shift_ms * ms)
    other = result("r1.json", 1, ends, steps=[(EPOCH + shift, EPOCH + ms + shift)])
    out = skew([ref, other], [0, 0], 0)
    assert ("why" in out) is apart
    assert out["steps"] == 1


def test_two_traces_last_equally_often_are_both_named_and_neither_is_the_straggler() -> None:
    """Rank 1 arrives last at the first collective, rank 2 at the second: neither is *the* straggler; both are
    named, with how often, in the document and the table. The steps' ends and durations alike: a tie in how
    often names nobody."""
    from tracekit.renderers.ranks import render_ranks

    ms = 1_000_000
    ends = [EPOCH + ms, EPOCH + 2 * ms]
    r0 = result("r0.json", 0, ends, steps=[(EPOCH, EPOCH + ms), (EPOCH + ms, EPOCH + 2 * ms)])
    r1 = result(
        "r1.json",
        1,
        ends,
        starts=[ends[0] - 50, ends[1] - 100],
        steps=[(EPOCH, EPOCH + ms + 7), (EPOCH + ms, EPOCH + 2 * ms)],
    )
    r2 = result(
        "r2.json",
        2,
        ends,
        starts=[ends[0] - 100, ends[1] - 50],
        steps=[(EPOCH, EPOCH + ms), (EPOCH + ms, EPOCH + 2 * ms + 7)],
    )
    doc = summarize([r0, r1, r2])
    assert doc["straggler"] == {
        "straggler": None,
        "collectives": 2,
        "tied": ["rank 1", "rank 2"],
        "arrives_last": 1,
    }
    assert "ends_last" not in doc["skew"] and doc["slowest_by_step"] == {"steps": 2}
    said = [
        line for line in render_ranks(doc, "table").splitlines() if line.startswith(("straggler", "slowest"))
    ]
    assert said == ["straggler: none (rank 1 and rank 2 each arrive last at 1 of 2 collectives)"]
    assert most_often(Counter({1: 2, 2: 1})) == (1, 2) and most_often(Counter()) is None


def test_an_uncertain_verdict_is_marked_in_the_many_trace_table() -> None:
    """A trace whose analysis says "verdict uncertain" has its verdict marked in the table and Markdown, and
    a ``verdict_uncertain`` field in JSON and CSV; the why is among its warnings."""
    from tests.builders import compact_result
    from tracekit.renderers.ranks import render_ranks

    doubt = "verdict uncertain: iteration 0 of 1 spends 39.2 s in setup calls"
    sure, unsure = compact_result("a.json", 0), compact_result("b.json", 1)
    unsure.update(verdict_uncertain=True, warnings=[doubt])
    doc = summarize([sure, unsure])
    assert [r["verdict_uncertain"] for r in doc["rows"]] == [False, True]
    table = render_ranks(doc, "table")
    assert "compute (uncertain)" in table and table.count("(uncertain)") == 1
    assert "| compute (uncertain) |" in render_ranks(doc, "markdown")
    csv_lines = render_ranks(doc, "csv").splitlines()
    assert csv_lines[0].endswith(",verdict,verdict_uncertain")
    assert csv_lines[1].endswith(",compute,False") and csv_lines[2].endswith(",compute,True")
    assert any(w.endswith(doubt) for w in doc["warnings"])


def test_compact_carries_an_uncertain_verdict_to_the_row() -> None:
    """A kernel that starts 20 ns before its launch call began, in 1 µs iterations (over 1% of them): the
    clocks disagree, the verdict is uncertain, and the compact result and the many-trace row say so."""
    from tracekit.fleet.compact import compact

    analyzed = _analyzed([(100, 220, 1, 7, "sm90_gemm"), (990, 1500, 4, 7, "sm90_gemm")])
    assert analyzed.verdict_uncertain is not None
    out = compact(analyzed)
    assert out["verdict_uncertain"] is True
    assert summarize([out])["rows"][0]["verdict_uncertain"] is True


def test_traces_cut_by_different_ranges_are_not_compared_by_latency_or_step() -> None:
    """One rank's iterations are one window over its trace (its steps lost), the others' are steps: the spread
    (6.3x in the fuzz case), the skew and the slowest by step compared a whole trace with steps. They are
    withheld, with why; the straggler, from collectives, is not."""
    from tracekit.renderers.ranks import summary_lines

    ends = [EPOCH + 500_000, EPOCH + 2_500_000]
    steps = [(EPOCH, EPOCH + 1_000_000), (EPOCH + 2_000_000, EPOCH + 3_000_000)]
    ranks = [result(f"r{i}.json", i, [e + 10_000 * i for e in ends], steps=steps) for i in range(2)]
    window = result("r2.json", 2, ends, steps=[(EPOCH, EPOCH + 3_000_000)])
    for r in ranks:
        r["range"] = "ProfilerStep#*"
    window["range"] = "window"
    doc = summarize([*ranks, window])
    why = "iterations are cut by different ranges"
    assert doc["spread"] == {"why": why} and doc["slowest_by_step"] == {"why": why}
    assert doc["skew"] == {"steps": 0, "why": why}
    assert doc["straggler"]["collectives"] == 2
    lines = summary_lines(doc, warnings=False)
    assert f"spread: not computed ({why})" in lines and f"slowest by step: not computed ({why})" in lines
    assert f"step start skew: not computed ({why})" in lines
    alike = summarize(ranks)
    assert alike["spread"]["ratio"] == 1.0 and "why" not in alike["slowest_by_step"]


def test_unequal_counts_match_where_the_operations_agree() -> None:
    """Rank 1 holds rank 0's last two collectives (an all-reduce, then an all-gather), 500 µs later: matched
    from the first, the operations differ; from the last, they agree and fit."""
    ref = result("r0.json", 0, [EPOCH + 10_000, EPOCH + 20_000, EPOCH + 30_000], kinds=["ar", "ar", "ag"])
    other = result("r1.json", 1, [EPOCH + 520_000, EPOCH + 530_000], kinds=["ar", "ag"])
    clocks = clock_offsets([ref, other])
    assert (clocks["aligned"], clocks["offsets_ns"], clocks["matched_from"]) == (True, [0, 500_000], "last")
    assert clocks["why"] == "traces hold 2 to 3 collectives; the last 2 were matched"
    neither = result("r1.json", 1, [EPOCH + 520_000, EPOCH + 530_000], kinds=["rs", "rs"])
    assert clock_offsets([ref, neither]) == {
        "aligned": False,
        "why": "the collectives differ: rank 1's collective 1 in launch order is rs, rank 0's is ar (other "
        "process groups, or captures that began at other collectives)",
        "offsets_ns": None,
        "matched": 0,
    }


def test_unequal_counts_that_fit_neither_way_say_why_from_the_first() -> None:
    ref = result("r0.json", 0, [EPOCH + 10_000, EPOCH + 20_000, EPOCH + 30_000])
    other = result("r1.json", 1, [EPOCH + 500_000, EPOCH + 600_000])  # 100 µs apart against 10
    assert clock_offsets([ref, other]) == {
        "aligned": False,
        "why": "collective ends disagree by up to 45.000 µs once the offsets are taken out, more than half the "
        "10.000 µs between rank 0's collectives (median): which collective matches which is not known",
        "offsets_ns": None,
        "matched": 0,
    }


def test_unequal_counts_under_which_no_steps_line_up_are_not_aligned() -> None:
    """Collectives 2000 s apart (fitting both ways, far apart) and steps that overlap under neither offset."""
    big = 2_000 * 10**9
    ref = result("r0.json", 0, [EPOCH + big, EPOCH + 2 * big, EPOCH + 3 * big])
    far = [(EPOCH + 10 * big, EPOCH + 10 * big + 1_000_000), (EPOCH + 11 * big, EPOCH + 11 * big + 1_000_000)]
    other = result("r1.json", 1, [EPOCH + big + 5_000, EPOCH + 2 * big + 5_000], steps=far)
    assert clock_offsets([ref, other])["why"] == (
        "traces hold 2 to 3 collectives: matched from the first or from the last, both fit, with clock offsets up "
        "to 2000000.000 ms apart (captures that began or ended at other collectives), and the steps line up "
        "under neither: which collective matches which is not known"
    )


def test_stragglers_and_collective_ns_take_the_first_ones_unless_told() -> None:
    ref = result("r0.json", 0, [EPOCH + 10_000, EPOCH + 20_000, EPOCH + 30_000])
    assert collective_ns(ref, "collective_ends_ns", 2) == [EPOCH + 10_000, EPOCH + 20_000]
    assert collective_ns(ref, "collective_ends_ns", 2, last=True) == [EPOCH + 20_000, EPOCH + 30_000]
    assert collective_ns(ref, "collective_ends_ns") == [EPOCH + 10_000, EPOCH + 20_000, EPOCH + 30_000]
    # rank 1 arrives 5 µs late at the first collective only: last at 1 of the 2 first ones
    other = result("r1.json", 1, [EPOCH + 10_000, EPOCH + 20_000], starts=[EPOCH + 9_905, EPOCH + 19_900])
    found = stragglers([ref, other], [0, 0], 0)
    assert (found["straggler"], found["arrives_last"], found["collectives"]) == ("rank 1", 1, 2)


def test_two_traces_cut_by_different_ranges_have_no_spread() -> None:
    one = result("r0.json", 0)
    two = result("r1.json", 1, steps=[(EPOCH, EPOCH + 3_000_000)])
    one["range"], two["range"] = "ProfilerStep#*", "window"
    assert summarize([one, two])["spread"] == {"why": "iterations are cut by different ranges"}
    two["iterations"]["latency_ms"] = np.array([np.nan])  # one trace timed: no spread to withhold
    assert "spread" not in summarize([one, two])


def test_the_steps_compared_for_the_tie_are_the_common_ones() -> None:
    """Rank 1 holds 2 steps and 2 collectives, rank 0 three of each, on one clock: both matchings fit, and
    under each the steps compared line up (the first 2 of each when matched from the first, the last 2 when
    matched from the last: fleet11 found the last matching had been judged on the first steps, which gave
    the 10 µs offset of a capture that began a step later): which is right is not known."""
    us = 1_000
    ref = result(
        "r0.json",
        0,
        [EPOCH + 10 * us, EPOCH + 20 * us, EPOCH + 30 * us],
        steps=[
            (EPOCH + 5 * us, EPOCH + 15 * us),
            (EPOCH + 15 * us, EPOCH + 25 * us),
            (EPOCH + 25 * us, EPOCH + 35 * us),
        ],
    )
    other = result(
        "r1.json",
        1,
        [EPOCH + 20 * us, EPOCH + 30 * us],
        steps=[(EPOCH + 15 * us, EPOCH + 25 * us), (EPOCH + 25 * us, EPOCH + 35 * us)],
    )
    clocks = clock_offsets([ref, other])
    assert clocks["offsets_ns"] is None and "the steps line up under both" in clocks["why"]


def test_the_steps_break_the_tie_when_only_one_matching_lines_them_up() -> None:
    """As many steps on both ranks, one collective fewer on rank 1 (its capture ended before its last one
    did): matched from the last, rank 1's steps would be one step off rank 0's; from the first they line up."""
    us = 1_000
    steps = [
        (EPOCH + 5 * us, EPOCH + 15 * us),
        (EPOCH + 15 * us, EPOCH + 25 * us),
        (EPOCH + 25 * us, EPOCH + 35 * us),
    ]
    ref = result("r0.json", 0, [EPOCH + 10 * us, EPOCH + 20 * us, EPOCH + 30 * us], steps=steps)
    other = result("r1.json", 1, [EPOCH + 10 * us, EPOCH + 20 * us], steps=steps)
    clocks = clock_offsets([ref, other])
    assert (clocks["offsets_ns"], clocks["matched_from"]) == ([0, 0], "first")


def test_traces_without_collectives_are_named_five_then_more() -> None:
    ends = [EPOCH + 10_000]
    traces = [result("r0.json", 0, ends)] + [result(f"r{i}.json", i) for i in range(1, 7)]
    assert (
        clock_offsets(traces)["why"]
        == "no collective kernels to align on in rank 1, rank 2, rank 3, rank 4, rank 5 ..."
    )
    assert (
        clock_offsets(traces[:6])["why"]
        == "no collective kernels to align on in rank 1, rank 2, rank 3, rank 4, rank 5"
    )
