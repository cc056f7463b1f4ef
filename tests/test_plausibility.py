"""tracekit.analyzers.plausibility on hand-built (synthetic) traces: each check's threshold, what it counts and
what it leaves alone, with its exact line (the altered real traces are in tests/test_implausible.py)."""

from __future__ import annotations

import polars as pl
import pytest

from tests.builders import make_trace
from tracekit.analyzers import plausibility
from tracekit.analyzers.iterations import no_verdict_reason

MS = 1_000_000
S = 1_000_000_000


# ---------------------------------------------------------------------------------------- collapsed


def _frame(rows: list[tuple[int, int, int, int]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["latency_ns", "kernels", "range_start", "range_end"], orient="row")


def test_an_iteration_with_work_and_no_latency_is_collapsed() -> None:
    frame = _frame(
        [
            (0, 3, 0, 10),  # work, a range, no latency: collapsed
            (-1, 1, 10, 20),  # (never negative; counted as well)
            (0, 0, 20, 30),  # no work: an empty iteration, not collapsed
            (0, 2, 30, 30),  # a range of no length: not measured at all
            (1, 1, 40, 50),  # 1 ns of latency: measured
        ]
    )
    assert plausibility.collapsed_iterations(frame) == (
        "verdict uncertain: 2 of 5 iterations have a latency of 0 although they hold device work: all of it ran "
        "before an earlier iteration's device work ended (an op outlasting the iterations after it: "
        "overlapping iterations, or timestamps that are not plausible), so their steady-state window (previous "
        "GPU end to their own GPU end) is empty; they have no utilization, and the medians rest on the other 3"
    )
    assert plausibility.collapsed_iterations(_frame([(1, 1, 0, 10), (0, 0, 10, 20)])) is None


# ------------------------------------------------------------------------------------------ durations


def _host(span_ns: int, op_ns: int, *, ranges: bool = True) -> object:
    """A host side spanning ``span_ns`` (a range, or two calls) and one op of ``op_ns``."""
    return make_trace(
        ranges=[(0, span_ns, "iteration")] if ranges else [],
        api=[] if ranges else [(0, 10, 1, "cudaLaunchKernel"), (span_ns - 10, span_ns, None, "cudaFree")],
        ops=[(100, 100 + op_ns, 1, 7)],
    )


def test_an_op_longer_than_ten_times_the_host_span_and_a_second_is_implausible() -> None:
    # 100 ms of host: the limit is max(10 x 100 ms, 1 s) = 1 s, and an op must exceed it
    assert plausibility.implausible_durations(_host(100 * MS, S)) is None  # type: ignore[arg-type]
    assert plausibility.implausible_durations(_host(100 * MS, S + 1)) == (  # type: ignore[arg-type]
        "verdict uncertain: 1 device ops last longer than 10x everything the host recorded (100.000 ms from "
        "the first call or range to the last), up to 1 s: no op runs that long in a capture that short, so "
        "their timestamps are not plausible (a clock or unit error); the latency, busy and idle time of the "
        "iterations they reach are not measurements"
    )
    # 200 ms of host (two API calls, no range): the limit is 2 s
    assert plausibility.implausible_durations(_host(200 * MS, 2 * S, ranges=False)) is None  # type: ignore[arg-type]
    found = plausibility.implausible_durations(_host(200 * MS, 3 * S, ranges=False))  # type: ignore[arg-type]
    assert found is not None and "(200.000 ms from the first call or range to the last), up to 3 s:" in found


def test_the_host_span_runs_from_the_first_start_to_the_last_end_of_calls_and_ranges() -> None:
    trace = make_trace(
        ranges=[(50, 400, "iteration")], api=[(20, 30, 1, "cudaLaunchKernel"), (300, 700, 2, "cudaFree")]
    )
    assert plausibility.host_span_ns(trace) == 680
    assert plausibility.host_span_ns(make_trace(ops=[(0, 10, 1, 7)])) is None
    assert (
        plausibility.implausible_durations(make_trace(ops=[(0, 100 * S, 1, 7)])) is None
    )  # nothing to compare


# ----------------------------------------------------------------------------------------- same stream


def _stream_ops(overlapping: int, total: int, by: int = 2_000) -> object:
    """``total`` ops of 10 µs on stream 7; the first ``overlapping`` after the first start ``by`` ns before
    the previous one ends, the others 10 µs after it."""
    ops, end = [], 0
    for i in range(total):
        start = end - by if 1 <= i <= overlapping else end + 10_000
        end = start + 10_000
        ops.append((start, end, i, 7))
    return make_trace(ops=ops)


def test_a_quarter_of_the_stream_ops_overlapping_makes_the_durations_doubtful() -> None:
    assert plausibility.stream_overlap(_stream_ops(4, 20)) is None  # type: ignore[arg-type]  # 20%
    assert plausibility.stream_overlap(_stream_ops(5, 20)) == (  # type: ignore[arg-type]
        "verdict uncertain: 5 of 20 device ops (25%) start more than 1 µs before the previous op on their "
        "stream ends, by up to 0.002 ms: a stream runs its ops one at a time, so their durations are not "
        "plausible (a unit or clock error?); the busy time counts that overlap once"
    )
    assert plausibility.stream_overlap(_stream_ops(10, 20, by=1_000)) is None  # type: ignore[arg-type]  # jitter
    assert plausibility.stream_overlap(_stream_ops(19, 19)) is None  # type: ignore[arg-type]  # too few ops


def test_ops_on_other_streams_or_devices_or_of_other_kinds_do_not_overlap() -> None:
    rows = [(i * 1_000, i * 1_000 + 50_000, i) for i in range(20)]  # each overlapping the one before
    fields = ("start", "end", "correlation", "stream", "kind", "device")
    streams = make_trace(ops=[(*r, i, "kernel", 0) for i, r in enumerate(rows)], op_fields=fields)
    devices = make_trace(ops=[(*r, 7, "kernel", i) for i, r in enumerate(rows)], op_fields=fields)
    operators = make_trace(ops=[(*r, 7, "operator", 0) for r in rows], op_fields=fields)
    no_stream = make_trace(ops=[(*r, None, "kernel", 0) for r in rows], op_fields=fields)
    same = make_trace(ops=[(*r, 7, "memcpy", 0) for r in rows], op_fields=fields)
    for trace in (streams, devices, operators, no_stream):
        assert plausibility.stream_overlap(trace) is None
    assert plausibility.stream_overlap(same) is not None
    assert "19 of 20 device ops (95%)" in plausibility.stream_overlap(same)  # type: ignore[operator]


def test_ops_without_a_start_or_an_end_are_left_out_of_the_overlap() -> None:
    rows = [(i * 20_000, i * 20_000 + 10_000, i, 7) for i in range(20)]
    rows[0] = (None, 10 * S, 0, 7)  # (sorted first; its end would reach over every later op)
    rows[1] = (20_000, None, 1, 7)
    assert plausibility.stream_overlap(make_trace(ops=rows)) is None


# ---------------------------------------------------------------------------------------- correlations


def test_launch_calls_sharing_an_id_in_one_process_are_counted() -> None:
    api_fields = ("start", "end", "correlation", "name", "pid")
    shared = make_trace(
        api=[
            (0, 1, 5, "cudaLaunchKernel", 1),
            (2, 3, 5, "cudaLaunchKernel", 1),
            (4, 5, 5, "cudaLaunchKernel_v7000", 1),
            (6, 7, 5, "cudaLaunchKernel", 2),  # another process: its own ids
            (8, 9, 6, "cudaMemcpyAsync", 1),
            (10, 11, 6, "cudaLaunchKernel", 1),  # a copy call's id: not a launch's
        ],
        api_fields=api_fields,
    )
    assert plausibility.reused_correlations(shared) == (
        "verdict uncertain: 2 launch calls share a correlation id with another launch call of their process: "
        "the ids that link each op to its launch are reused (a wrap-around, or ids rewritten), so ops are "
        "assigned to other launches' iterations, and the launch latencies and the idle time's causes mix "
        "unrelated calls"
    )


def test_a_kernel_launch_linked_to_several_kernels_is_counted_a_graph_launch_is_not() -> None:
    fields = ("start", "end", "correlation", "stream", "kind", "device")
    trace = make_trace(
        api=[(0, 1, 1, "cudaLaunchKernel"), (2, 3, 2, "cudaGraphLaunch"), (4, 5, 3, "cuLaunchKernel")],
        ops=[
            (10, 20, 1, 7, "kernel", 0),
            (30, 40, 1, 7, "kernel", 0),  # launch 1 again: reused
            (50, 60, 2, 7, "kernel", 0),
            (70, 80, 2, 7, "kernel", 0),  # a graph's kernels share its id
            (90, 99, 3, 7, "kernel", 0),
            (90, 99, 3, 7, "kernel", 1),  # one kernel on each of two devices: not reused
            (100, 110, 4, 7, "kernel", 0),
            (120, 130, 4, 7, "kernel", 0),  # no call in the trace (launched before the capture): not counted
            (140, 150, 1, 7, "memcpy", 0),  # not a kernel
        ],
        op_fields=fields,
    )
    found = plausibility.reused_correlations(trace)
    assert found is not None
    assert found.startswith(
        "verdict uncertain: 1 kernel launches (not graph launches) are linked to several kernels each: the ids"
    )
    unique = make_trace(api=[(0, 1, 1, "cudaLaunchKernel")], ops=[(10, 20, 1, 7), (30, 40, None, 7)])
    assert plausibility.reused_correlations(unique) is None
    assert (
        plausibility.reused_correlations(make_trace(ops=[(10, 20, 1, 7), (30, 40, 1, 7)])) is None
    )  # no calls


def test_both_kinds_of_reuse_are_said_together() -> None:
    trace = make_trace(
        api=[(0, 1, 1, "cudaLaunchKernel"), (2, 3, 1, "cudaLaunchKernel")],
        ops=[(10, 20, 1, 7), (30, 40, 1, 7)],
    )
    assert plausibility.reused_correlations(trace).startswith(  # type: ignore[union-attr]
        "verdict uncertain: 1 launch calls share a correlation id with another launch call of their process; "
        "1 kernel launches (not graph launches) are linked to several kernels each: the ids"
    )


def test_the_doubts_come_in_order() -> None:
    frame = _frame([(0, 1, 0, 10), (5, 1, 10, 20)])
    trace = make_trace(
        ranges=[(0, 100, "iteration")],
        api=[(0, 1, 1, "cudaLaunchKernel"), (2, 3, 1, "cudaLaunchKernel")],
        ops=[(10, 10 + 2 * S, 1, 7)] + [(20 + i, 30 + i, None, 7) for i in range(30)],
    )
    found = plausibility.doubts(trace, frame)
    assert [d.split(":")[1].split()[1:4] for d in found] == [
        ["of", "2", "iterations"],
        ["device", "ops", "last"],
        ["of", "31", "device"],
        ["launch", "calls", "share"],
    ]
    assert plausibility.doubts(make_trace(ops=[(0, 10, 1, 7)]), _frame([(10, 1, 0, 10)])) == []


# ------------------------------------------------------------------------------- launches, no kernels


@pytest.mark.parametrize(
    ("kinds", "shown"),
    [
        (["memcpy", "memset"], "copies and memsets"),
        (["operator"], "CPU operators' time"),
        (["kernel"], None),
        (["graph"], None),
    ],
)
def test_launch_calls_without_kernels_get_no_verdict(kinds: list[str], shown: str | None) -> None:
    trace = make_trace(
        ranges=[(0, 1000, "iteration")],
        api=[(0, 1, 1, "cudaLaunchKernel_ptsz"), (2, 3, 2, "cudaLaunchKernel"), (4, 5, 3, "cudaMemcpyAsync")],
        ops=[(10 + 10 * i, 15 + 10 * i, None, 7, kind) for i, kind in enumerate(kinds)],
    )
    reason = no_verdict_reason(trace)
    if shown is None:
        assert reason is None
        return
    assert reason == (
        "no framework-/compute-bound verdict: the trace records 2 kernel launch calls (cudaLaunchKernel, "
        "cudaLaunchKernel_ptsz) but no kernel ran on the device in it: the profiler lost the device's activity "
        "(CUPTI not enabled, not permitted or its records dropped; or every launch was captured into a CUDA "
        f"graph), so the busy time shown is {shown} only; for the verdict, profile the device activity too "
        "(nsys profile -t cuda,nvtx; torch.profiler with ProfilerActivity.CUDA)"
    )


def test_copies_without_kernel_launch_calls_are_a_trace_of_copies() -> None:
    trace = make_trace(
        ranges=[(0, 1000, "iteration")],
        api=[(0, 1, 1, "cudaMemcpyAsync")],
        ops=[(10, 20, 1, 7, "memcpy")],
    )
    assert no_verdict_reason(trace) is None


# ------------------------------------------------------------------------------------------- unlinked


def test_ops_with_ids_and_no_calls_in_unsynchronized_iterations_are_doubtful() -> None:
    linked = make_trace(ops=[(10, 20, 1, 7), (30, 40, None, 7), (50, 60, 3, 7)])
    frame = pl.DataFrame({"synchronized": [True, False, False]})
    assert plausibility.unlinked_ops(linked, frame) == (
        "verdict uncertain: 2 device ops carry the correlation ids that link them to their launches, but the "
        "trace holds no runtime or driver call (lost from it), and 2 of 3 iterations are unsynchronized: the "
        "ops are assigned by their start time, so the work an iteration launched that ran after its range "
        "ended counts in no iteration, and its latency and busy time are short by it"
    )
    assert plausibility.unlinked_ops(linked, pl.DataFrame({"synchronized": [True, True]})) is None
    no_ids = make_trace(ops=[(10, 20, None, 7)])
    assert plausibility.unlinked_ops(no_ids, frame) is None
    with_calls = make_trace(api=[(0, 5, 1, "cudaLaunchKernel")], ops=[(10, 20, 1, 7)])
    assert plausibility.unlinked_ops(with_calls, frame) is None


def test_a_host_side_without_any_end_has_no_span() -> None:
    no_end = make_trace(api=[(0, None, 1, "cudaLaunchKernel")], ops=[(0, 100 * S, 1, 7)])
    assert plausibility.host_span_ns(no_end) is None
    assert plausibility.implausible_durations(no_end) is None


def test_the_span_and_the_overlap_are_given_to_the_microsecond() -> None:
    span = 1_234_567_890  # ns: 1234.568 ms
    found = plausibility.implausible_durations(_host(span, 20 * S))  # type: ignore[arg-type]
    assert (
        found is not None and "(1234.568 ms from the first call or range to the last), up to 20 s:" in found
    )
    ops = [(0, 2 * S, 0, 7)] + [(S + i * 10, S + i * 10 + 1_234_567_890, i + 1, 7) for i in range(19)]
    overlap = plausibility.stream_overlap(make_trace(ops=ops))
    assert overlap is not None and "by up to 1234.568 ms:" in overlap


def test_two_processes_may_number_their_streams_alike() -> None:
    fields = ("start", "end", "correlation", "stream", "kind", "device", "pid")
    rows = [(i * 1_000, i * 1_000 + 50_000, i, 7, "kernel", 0, 100 + i) for i in range(20)]  # stream 7 each
    assert plausibility.stream_overlap(make_trace(ops=rows, op_fields=fields)) is None


def test_only_kernels_count_as_several_for_one_launch() -> None:
    fields = ("start", "end", "correlation", "stream", "kind", "device")
    trace = make_trace(
        api=[(0, 1, 5, "cudaLaunchKernel"), (2, 3, 6, "cudaLaunchKernel")],
        ops=[(10, 20, 5, 7, "kernel", 0), (30, 40, 5, 7, "memset", 0), (50, 60, 6, 7, "kernel", 0)],
        op_fields=fields,
    )
    assert plausibility.reused_correlations(trace) is None


# ----------------------------------------------------------------------------------------------- ranges


def _ranges_frame(lengths: list[int]) -> pl.DataFrame:
    return pl.DataFrame({"range_start": [0] * len(lengths), "range_end": lengths})


def test_a_range_longer_than_ten_times_the_work_and_a_minute_is_implausible() -> None:
    work = make_trace(api=[(0, 10, 1, "cudaLaunchKernel")], ops=[(100, 2 * S, 1, 7)])  # 2 s of work
    assert plausibility.implausible_ranges(work, _ranges_frame([20 * S, 60 * S])) is None  # 10x; a minute
    assert plausibility.implausible_ranges(work, _ranges_frame([60 * S + 1, 5])) == (
        "verdict uncertain: 1 of 2 iterations' ranges last longer than 10x everything the device ops and API "
        "calls span (2000.000 ms), up to 60 s: no range lasts that long around that little work, so its "
        "timestamps are not plausible (a clock or unit error); its latency is not a measurement"
    )
    long_work = make_trace(ops=[(0, 7 * S, 1, 7)])  # 7 s of work: the limit is 70 s
    assert plausibility.implausible_ranges(long_work, _ranges_frame([70 * S])) is None
    assert plausibility.implausible_ranges(long_work, _ranges_frame([70 * S + 1])) is not None
    assert (
        plausibility.implausible_ranges(make_trace(), _ranges_frame([10**18])) is None
    )  # no work to compare


# ------------------------------------------------------------------------------------------ lost launches


def _assigned(trace: object, no_launch: list[bool]) -> pl.DataFrame:
    return pl.DataFrame({"no_launch": no_launch})


def test_most_ops_without_their_launch_call_run_after_linked_work_are_lost_launches() -> None:
    # stream 7: a linked op at 100, then two unlinked ones (lost launches); stream 9: an unlinked op before
    # its stream's linked one (the backlog launched before the capture)
    fields = ("start", "end", "correlation", "stream")
    trace = make_trace(
        api=[(10, 20, 1, "cudaLaunchKernel"), (30, 40, 2, "cudaLaunchKernel")],
        ops=[(50, 60, 9, 9), (100, 110, 1, 7), (120, 130, 5, 7), (140, 150, 6, 7), (160, 170, 2, 9)],
        op_fields=fields,
    )
    no_launch = _assigned(trace, [True, False, True, True, False])
    assert plausibility.lost_launches(trace, no_launch) is None  # 2 of 5: under half
    trace = make_trace(
        api=trace.api.rows(),
        ops=[*trace.ops.select(*fields).rows(), (180, 190, 7, 7)],
        api_fields=trace.api.columns,
        op_fields=fields,
    )
    assert plausibility.lost_launches(trace, _assigned(trace, [True, False, True, True, False, True])) == (
        "verdict uncertain: 3 of 6 device ops carry a correlation id that no call of the trace has, although "
        "it records 2 API calls, and ran after work of their stream whose launch it has: their launch calls "
        "were lost (not made before the capture), so they count in no iteration, and the busy time and "
        "utilization are short by their work"
    )
    backlog = _assigned(trace, [True, True, True, True, False, True])  # stream 7 has no linked op now
    assert plausibility.lost_launches(trace, backlog) is None  # the unlinked ops run before any linked one
    assert plausibility.lost_launches(make_trace(ops=[(0, 1, 1, 7)]), _assigned(None, [True])) is None


def _beside_a_long_op(stream_ops: list[tuple[int, int]]) -> object:
    """``stream_ops`` on stream 7, and one op on stream 9 spanning them all: every stream-7 op starts inside
    the reach of all earlier ops (the quick bound passes), so only their own stream's reach decides."""
    ops = [(0, 10**9, 0, 9)] + [(s, e, i + 1, 7) for i, (s, e) in enumerate(stream_ops)]
    return make_trace(ops=ops)


def test_the_own_streams_reach_decides_once_the_quick_bound_passes() -> None:
    chained, end = [], 1_000
    for _ in range(19):  # each starts exactly 1 µs before the previous ends: jitter, not overlap
        chained.append((end - 1_000, end - 1_000 + 10_000))
        end = chained[-1][1]
    assert plausibility.stream_overlap(_beside_a_long_op(chained)) is None
    apart = [(i * 20_000, i * 20_000 + 10_000) for i in range(19)]
    apart[5] = (apart[4][1] - 2_000, apart[4][1] + 8_000)  # one op of 20 overlapping its stream
    assert plausibility.stream_overlap(_beside_a_long_op(apart)) is None


def test_shared_ids_count_each_extra_call_of_every_id() -> None:
    api_fields = ("start", "end", "correlation", "name", "pid")
    trace = make_trace(
        api=[
            (0, 1, 5, "cudaLaunchKernel", 1),
            (2, 3, 5, "cudaLaunchKernel", 1),
            (4, 5, 7, "cudaLaunchKernel", 1),
            (6, 7, 7, "cudaLaunchKernel", 1),
            (8, 9, 8, "cudaLaunchKernel", 1),
        ],
        api_fields=api_fields,
    )
    assert plausibility.reused_correlations(trace).startswith(  # type: ignore[union-attr]
        "verdict uncertain: 2 launch calls share a correlation id with another launch call of their process:"
    )


def test_lost_launches_at_their_boundaries() -> None:
    fields = ("start", "end", "correlation", "stream")
    api = [(0, 5, 1, "cudaLaunchKernel")]
    # half the ops unlinked, both after the linked one: lost (half is enough)
    half = make_trace(
        api=api, ops=[(10, 20, 1, 7), (30, 40, 8, 7), (50, 60, 9, 7), (70, 80, 2, 7)], op_fields=fields
    )
    found = plausibility.lost_launches(half, _assigned(half, [False, True, True, False]))
    assert found is not None and found.startswith("verdict uncertain: 2 of 4 device ops")
    # an unlinked op starting with the first linked one is not after it
    tie = make_trace(
        api=api, ops=[(10, 20, 1, 7), (10, 15, 8, 7), (30, 40, 9, 7), (50, 60, 7, 7)], op_fields=fields
    )
    assert plausibility.lost_launches(tie, _assigned(tie, [False, True, False, True])) is None
    # streams not recorded (null) are one stream of their process and device
    nulls = make_trace(
        api=api, ops=[(10, 20, 1, None), (30, 40, 8, None), (50, 60, 9, None)], op_fields=fields
    )
    found = plausibility.lost_launches(nulls, _assigned(nulls, [False, True, True]))
    assert found is not None and found.startswith("verdict uncertain: 2 of 3 device ops")
    # no API call at all (unlinked_ops says it), or no assignment to read
    no_api = make_trace(ops=[(10, 20, 1, 7), (30, 40, 8, 7), (50, 60, 9, 7)], op_fields=fields)
    assert plausibility.lost_launches(no_api, _assigned(no_api, [False, True, True])) is None
    assert plausibility.lost_launches(half, pl.DataFrame({"start": [1, 2, 3, 4]})) is None


def _calls_and_ops(pids_ids: list[tuple[int, int]], op_ids: list[tuple[int, int]]) -> object:
    """Launch calls (pid, id) 10 ns apart, and ops (pid, id) of 5 ns each, one stream per pid."""
    api = [(10 * i, 10 * i + 5, c, "cudaLaunchKernel", p) for i, (p, c) in enumerate(pids_ids)]
    ops = [(10_000 + 10 * i, 10_000 + 10 * i + 5, c, p, p) for i, (p, c) in enumerate(op_ids)]
    return make_trace(
        api=api,
        ops=ops,
        api_fields=("start", "end", "correlation", "name", "pid"),
        op_fields=("start", "end", "correlation", "stream", "pid"),
    )


def test_ops_whose_ids_lie_among_their_processs_call_ids_are_lost_launches_from_a_tenth() -> None:
    # 20 ops, ids 1..20; calls of ids 1..20 except the lost ones: ids inside [first, last] of the calls were
    # given to calls made during the capture (a process's ids only grow), whose records are gone.
    def case(lost: set[int], below: int = 0) -> str | None:
        calls = [(1, c) for c in range(1, 21) if c not in lost]
        ops = [(1, -c) for c in range(below, 0, -1)] + [(1, c) for c in range(1, 21)]  # the backlog first
        trace = _calls_and_ops(calls, ops)
        no_launch = [c in lost or c < 0 for _, c in ops]
        return plausibility.lost_launches(trace, _assigned(trace, no_launch))

    assert case({5, 9}) == (
        "verdict uncertain: 2 of 20 device ops (0.000 ms of work) carry correlation ids between the first and "
        "the last id of their process's API calls, but their launch calls are not in the trace: they were "
        "launched during the capture and the records of their calls lost (or made through an API the profiler "
        "did not record), so they count in no iteration, and the busy time and utilization are short by their "
        "work"
    )
    assert case({5, 9, 13}, below=3) is not None  # 3 of 23 inside: still a tenth
    assert case({5}) is None  # 1 of 20: under a tenth
    assert case({5, 9}, below=20) is None  # 2 of 40; the 20 ids below every call: launched before it
    assert case({1, 20}) is None  # ids beyond the kept calls' span: not known to be inside the capture


def test_call_id_spans_are_per_process_and_need_twenty_ops() -> None:
    # pid 2's ops carry ids inside pid 1's span, but pid 2's own calls begin later: before its capture
    calls = [(1, c) for c in range(1, 41)] + [(2, c) for c in range(50, 60)]
    ops = [(1, c) for c in range(1, 41)] + [(2, c) for c in range(5, 10)]
    trace = _calls_and_ops(calls, ops)
    no_launch = [p == 2 for p, _ in ops]
    assert plausibility.lost_launches(trace, _assigned(trace, no_launch)) is None
    small = _calls_and_ops([(1, 1), (1, 5)], [(1, c) for c in range(1, 6)])  # 2 of 5 inside, under twenty
    assert plausibility.lost_launches(small, _assigned(small, [False, True, True, False, False])) is None


def test_kernels_of_no_length_on_a_nanosecond_clock_make_the_verdict_uncertain() -> None:
    def kernels(zero: int, total: int = 20, unit: int = 1) -> object:
        ops = [
            (i * 10_000 * unit + 7, i * 10_000 * unit + 7 + (0 if i < zero else 500), i, 7)
            for i in range(total)
        ]
        if unit == 1000:
            ops = [(i * 10_000_000, i * 10_000_000 + (0 if i < zero else 1000), i, 7) for i in range(total)]
        return make_trace(ops=ops)

    assert plausibility.zero_length_kernels(kernels(10)) == (
        "verdict uncertain: 10 of 20 kernels last 0 ns, on a clock finer than a microsecond: no real kernel "
        "takes no time, so their durations were not recorded (or were damaged), and the busy time and "
        "utilization are not measured"
    )
    assert plausibility.zero_length_kernels(kernels(9)) is None  # under half
    assert plausibility.zero_length_kernels(kernels(19, total=19)) is None  # too few kernels to say
    assert plausibility.zero_length_kernels(kernels(20, unit=1000)) is None  # whole µs: sub-µs kernels read 0


def _synced(syncs: list[tuple[int, int, str]], ops: list[tuple[int, int, int, int, int]]) -> object:
    """One process: a launch call at [c, c + 5) ns for each op of correlation c, the ``syncs`` (start, end,
    name; correlation = start: ids in call order), and the ``ops`` (start, end, correlation, stream, device)."""
    api = [(op[2], op[2] + 5, op[2], "cudaLaunchKernel") for op in ops if op[2] is not None]
    api += [(start, end, start, name) for start, end, name in syncs]
    return make_trace(api=api, ops=ops, op_fields=("start", "end", "correlation", "stream", "device"))


DEVICE_SYNC = [(100_000, 101_000, "cudaDeviceSynchronize")]


def _last_op_ending(end: int, stream: int = 7, device: int = 0) -> list[tuple[int, int, int, int, int]]:
    return [(100, 50_000, 1, 7, 0), (60_000, end, 2, stream, device)]


def test_ops_ending_after_the_sync_that_waited_for_them_make_the_verdict_uncertain() -> None:
    assert plausibility.ends_after_sync(_synced(DEVICE_SYNC, _last_op_ending(131_000))) == (
        "verdict uncertain: in 1 of 1 synchronization calls that waited for device work, work launched before "
        "the call ended after it returned (median 30.0 µs later): a sync returns only once that work has ended, "
        "so the device's times run ahead of the host's (a clock offset, or durations in a wrong unit), and the "
        "GPU busy time inside the host-side iterations, the idle gaps and their causes (in_flight rather than "
        "dispatch) compare times of two clocks"
    )
    # up to 20 µs past the sync's return is within the tolerance
    assert plausibility.ends_after_sync(_synced(DEVICE_SYNC, _last_op_ending(121_000))) is None
    assert plausibility.ends_after_sync(_synced(DEVICE_SYNC, _last_op_ending(121_001))) is not None
    # a stream sync is device-wide only where the process's ops ran on one stream
    stream_sync = [(100_000, 101_000, "cudaStreamSynchronize")]
    assert plausibility.ends_after_sync(_synced(stream_sync, _last_op_ending(200_000))) is not None
    assert plausibility.ends_after_sync(_synced(stream_sync, _last_op_ending(200_000, stream=9))) is None
    # a device sync waits for the current device only: a process driving two devices is not checked
    assert plausibility.ends_after_sync(_synced(DEVICE_SYNC, _last_op_ending(200_000, device=1))) is None


def test_only_syncs_that_waited_for_work_count_and_half_of_them_must_be_late() -> None:
    # the first sync is late; the next two came after all work had ended: they waited for nothing, not counted
    later = [(300_000, 301_000, "cudaDeviceSynchronize"), (500_000, 501_000, "cudaDeviceSynchronize")]
    assert plausibility.ends_after_sync(_synced(DEVICE_SYNC + later, _last_op_ending(131_000))) is not None
    # two syncs waited for work (a third op launched at 200 µs ends inside the second): one late of two is half
    ops = [*_last_op_ending(131_000), (250_000, 300_500, 200_000, 7, 0)]
    assert plausibility.ends_after_sync(_synced(DEVICE_SYNC + later, ops)) is not None
    # one late of three: under half
    ops += [(450_000, 500_500, 400_000, 7, 0)]
    assert plausibility.ends_after_sync(_synced(DEVICE_SYNC + later, ops)) is None
    # no sync waited for anything
    assert plausibility.ends_after_sync(_synced(later, _last_op_ending(131_000))) is None
    # an op without a correlation id has no known launch: it raises no sync's reach, however late it ends
    unlinked = [*_last_op_ending(101_000), (60_000, 300_000, None, 7, 0)]
    assert plausibility.ends_after_sync(_synced(DEVICE_SYNC, unlinked)) is None
    # another process's late work is not what this process's sync waited for
    two = _synced(DEVICE_SYNC, _last_op_ending(101_000))
    other = make_trace(
        ops=[(60_000, 300_000, 2, 7, 0, 9)],
        op_fields=("start", "end", "correlation", "stream", "device", "pid"),
    )
    both = type(two)(ops=pl.concat([two.ops, other.ops]), api=two.api, ranges=two.ranges, meta=two.meta)
    assert plausibility.ends_after_sync(both) is None
    # work launched after the sync began (a larger id) is not waited for, however late it ends
    after = [(100, 50_000, 1, 7, 0), (150_000, 300_000, 100_001, 7, 0)]
    assert plausibility.ends_after_sync(_synced(DEVICE_SYNC, after)) is None


# ------------------------------------------------------------------------------------------ lost kernels


def _launches(count: int, linked: set[int], extra_api: list[tuple[int, int, int | None, str]] = ()) -> object:
    """``count`` launch calls 100 ns apart (correlation = position), the ops of those in ``linked`` only."""
    api = [(i * 100, i * 100 + 10, i, "cudaLaunchKernel") for i in range(count)] + list(extra_api)
    ops = [(i * 100 + 50, i * 100 + 90, i, 7) for i in sorted(linked)]
    return make_trace(api=api, ops=ops)


def test_launch_calls_whose_kernels_are_missing_before_later_linked_ones_are_lost_kernels() -> None:
    every_other = _launches(40, set(range(1, 40, 2)))  # 20 of 40 missing, each before the last linked (39)
    assert plausibility.lost_kernels(every_other) == (  # type: ignore[arg-type]
        "verdict uncertain: 20 of 40 kernel launches have no kernel in the trace, although later launches have "
        "theirs: the profiler lost those kernels' records (CUPTI dropped them, or one "
        "GPU's activity is missing), so the busy time and kernel counts are short by their work"
    )
    # the threshold: a tenth of the calls (4 of 40) is lost kernels, 3 of 40 is not
    four = _launches(40, set(range(40)) - {0, 5, 10, 15})
    assert "4 of 40 kernel launches" in (plausibility.lost_kernels(four) or "")  # type: ignore[arg-type]
    assert plausibility.lost_kernels(_launches(40, set(range(40)) - {0, 5, 10})) is None  # type: ignore[arg-type]
    # the last launches, whose kernels a busy device ran after the capture ended, are not lost
    assert plausibility.lost_kernels(_launches(40, set(range(20)))) is None  # type: ignore[arg-type]
    # too few calls to say
    assert plausibility.lost_kernels(_launches(19, {18})) is None  # type: ignore[arg-type]


def test_launches_inside_a_stream_capture_launch_nothing_and_are_not_lost() -> None:
    """Launches between cudaStreamBeginCapture and cudaStreamEndCapture on their thread are recorded into a
    graph and run nothing then (vLLM and SGLang capture their graphs at start-up)."""
    capture = [(995, 996, None, "cudaStreamBeginCapture"), (3000, 3005, None, "cudaStreamEndCapture")]
    captured = set(range(10, 30))  # the calls at 1000 .. 2900 are inside the capture
    trace = _launches(40, set(range(40)) - captured, capture)
    assert plausibility.lost_kernels(trace) is None  # type: ignore[arg-type]
    # the same calls without the capture around them are lost kernels
    assert "20 of 40" in (plausibility.lost_kernels(_launches(40, set(range(40)) - captured)) or "")  # type: ignore[arg-type]
    # a capture whose end the trace lacks goes on to the end of the trace; versioned names match too
    open_capture = _launches(40, set(range(10)) | {39}, [(995, 996, None, "cudaStreamBeginCapture_v10000")])
    assert plausibility.lost_kernels(open_capture) is None  # type: ignore[arg-type]
    # a capture on another thread leaves this thread's launches counted
    other = make_trace(
        api=[(i * 100, i * 100 + 10, i, "cudaLaunchKernel") for i in range(40)],
        ops=[(i * 100 + 50, i * 100 + 90, i, 7) for i in sorted(set(range(40)) - captured)],
    )
    begin = pl.DataFrame(
        {"start": [995], "end": [996], "pid": [1], "thread": [2], "correlation": [None], "kind": ["runtime"]},
        schema_overrides={"correlation": pl.Int64},
    ).with_columns(pl.lit("cudaStreamBeginCapture").alias("name"))
    other = type(other)(
        ops=other.ops,
        api=pl.concat([other.api, begin.select(other.api.columns).cast(other.api.schema)]),
        ranges=other.ranges,
        meta=other.meta,
    )
    assert "20 of 40" in (plausibility.lost_kernels(other) or "")


def test_a_thread_whose_launches_all_lost_their_kernels_counts_where_every_other_op_is_linked() -> None:
    """Two threads launching alternately (two GPUs); the second thread's kernels are all missing. Where every
    op of the trace has its launch call, that is lost records; where many ops have none (a saturated device
    still running work launched before the capture), the thread's launches may just be waiting."""
    fields = ("start", "end", "correlation", "name", "thread")
    api = [(i * 100, i * 100 + 10, i, "cudaLaunchKernel", 1 + i % 2) for i in range(40)]
    ops = [(i * 100 + 50, i * 100 + 90, i, 7) for i in range(0, 40, 2)]
    trace = make_trace(api=api, ops=ops, api_fields=fields)
    # 19: the second thread's last launch (39) comes after the trace's last linked one (38), as at a tail
    assert "19 of 40 kernel launches have no kernel" in (plausibility.lost_kernels(trace) or "")
    backlog = [(-5000 + i * 10, -4995 + i * 10, 1000 + i, 8) for i in range(5)]  # 5 of 25 ops without a call
    assert plausibility.lost_kernels(make_trace(api=api, ops=ops + backlog, api_fields=fields)) is None
    # fewer than 20 launches on the thread say nothing
    few = [
        (i * 100, i * 100 + 10, i, "cudaLaunchKernel", 2 if i in range(1, 38, 2) else 1) for i in range(40)
    ]
    assert plausibility.lost_kernels(make_trace(api=few, ops=ops, api_fields=fields)) is None
    # a launch recorded twice (plain and versioned name, one id) counts once
    twice = api + [(i * 100 + 1, i * 100 + 9, i, "cudaLaunchKernel_v7000", 1 + i % 2) for i in range(40)]
    assert "19 of 40 kernel launches" in (
        plausibility.lost_kernels(make_trace(api=twice, ops=ops, api_fields=fields)) or ""
    )


def test_lost_kernels_thresholds_and_their_edges() -> None:
    """The edges of each count: 20 launches is enough to say; unlinked launches in the tail do not count
    toward the tenth even when all unlinked ones together reach it; a launch at the same instant as the
    thread's last linked one is not before it; a capture's end ends it."""
    assert "10 of 20" in (plausibility.lost_kernels(_launches(20, set(range(1, 20, 2)))) or "")  # type: ignore[arg-type]
    # 4 of 40 unlinked, but 2 of them after the last linked launch (the tail): 2 lost, under the tenth
    tail = _launches(40, set(range(40)) - {5, 10, 38, 39})  # the last linked launch is 37
    assert plausibility.lost_kernels(tail) is None  # type: ignore[arg-type]
    # unlinked launches at the very start time of the thread's last linked one are not before it
    same = make_trace(
        api=[(i * 100, i * 100 + 10, i, "cudaLaunchKernel") for i in range(36)]
        + [(3500, 3510, 100 + i, "cudaLaunchKernel") for i in range(4)],
        ops=[(i * 100 + 50, i * 100 + 90, i, 7) for i in range(36)],
    )
    assert plausibility.lost_kernels(same) is None
    # a capture that ended: the launches after its end are counted again
    capture = [(995, 996, None, "cudaStreamBeginCapture"), (1995, 1996, None, "cudaStreamEndCapture")]
    after = _launches(40, set(range(10)) | set(range(30, 40)), capture)  # 10..19 captured, 20..29 lost
    assert "10 of 30 kernel launches" in (plausibility.lost_kernels(after) or "")  # type: ignore[arg-type]


def test_lost_kernels_of_pids_beyond_the_pair_key_are_matched_by_hash() -> None:
    """Processes whose pid does not fit the exact (pid, correlation) key (nsys global ids, pids >= 2^31) are
    matched through a hash of the pair: the same answer."""
    fields = ("start", "end", "correlation", "name", "pid")
    op_fields = ("start", "end", "correlation", "stream", "kind", "device", "pid")
    big = 1 << 40
    api = [(i * 100, i * 100 + 10, i, "cudaLaunchKernel", big) for i in range(40)]
    ops = [(i * 100 + 50, i * 100 + 90, i, 7, "kernel", 0, big) for i in range(1, 40, 2)]
    ops += [(5000, 5010, None, 7, "kernel", 0, big)]  # an op without an id links to nothing
    trace = make_trace(api=api, ops=ops, api_fields=fields, op_fields=op_fields)
    assert "20 of 40 kernel launches" in (plausibility.lost_kernels(trace) or "")
    every = [(i * 100 + 50, i * 100 + 90, i, 7, "kernel", 0, big) for i in range(40)]
    assert (
        plausibility.lost_kernels(make_trace(api=api, ops=every, api_fields=fields, op_fields=op_fields))
        is None
    )


def test_a_whole_thread_counts_where_few_ops_lack_their_call() -> None:
    """The whole-thread rule holds while fewer than a tenth of the ops have no launch call: 1 of 21 (a copy
    launched before the capture) leaves it in force; 3 of 23 (13%) turn it off."""
    fields = ("start", "end", "correlation", "name", "thread")
    api = [(i * 100, i * 100 + 10, i, "cudaLaunchKernel", 1 + i % 2) for i in range(40)]
    ops = [(i * 100 + 50, i * 100 + 90, i, 7) for i in range(0, 40, 2)]
    one = [(-500, -490, 1000, 8)]
    assert "19 of 40" in (
        plausibility.lost_kernels(make_trace(api=api, ops=ops + one, api_fields=fields)) or ""
    )
    three = [(-500 - 20 * k, -490 - 20 * k, 1000 + k, 8) for k in range(3)]
    assert plausibility.lost_kernels(make_trace(api=api, ops=ops + three, api_fields=fields)) is None


def test_lost_kernels_more_edges_threads_unknown_pids_sharing_ids_and_the_whole_thread_bound() -> None:
    """Calls whose thread is not recorded are one thread; two processes of the hash path that share
    correlation ids are told apart by their pid; the whole-thread rule needs fewer than a tenth of the ops
    without a call: exactly a tenth turns it off."""
    fields = ("start", "end", "correlation", "name", "thread")
    api = [(i * 100, i * 100 + 10, i, "cudaLaunchKernel", None) for i in range(40)]
    ops = [(i * 100 + 50, i * 100 + 90, i, 7) for i in range(1, 40, 2)]
    assert "20 of 40" in (plausibility.lost_kernels(make_trace(api=api, ops=ops, api_fields=fields)) or "")
    # two big pids (the hash path) with the same correlation ids: the second's launches have no kernel
    pid_fields = ("start", "end", "correlation", "name", "pid", "thread")
    op_fields = ("start", "end", "correlation", "stream", "kind", "device", "pid")
    a, b = 1 << 40, (1 << 40) + 1
    calls = [
        (i * 100, i * 100 + 10, i, "cudaLaunchKernel", pid, pid % 2 + 1) for i in range(20) for pid in (a, b)
    ]
    kernels = [(i * 100 + 50, i * 100 + 90, i, 7, "kernel", 0, a) for i in range(20)]
    found = plausibility.lost_kernels(
        make_trace(api=calls, ops=kernels, api_fields=pid_fields, op_fields=op_fields)
    )
    assert "19 of 40 kernel launches" in (found or "")
    # 18 linked ops and 2 without a call: exactly a tenth, so a thread without kernels is not counted whole
    launches = [(i * 100, i * 100 + 10, i, "cudaLaunchKernel", 1 + i % 2) for i in range(40)]
    linked = [(i * 100 + 50, i * 100 + 90, i, 7) for i in range(0, 36, 2)]
    unmatched = [(-500, -490, 1000, 8), (-400, -390, 1001, 8)]
    trace = make_trace(api=launches, ops=linked + unmatched, api_fields=fields)
    assert plausibility.lost_kernels(trace) is None
    # one op without a call fewer: the thread counts (its 17 launches before the last linked one, 34)
    trace = make_trace(api=launches, ops=linked + unmatched[:1], api_fields=fields)
    assert "17 of 40" in (plausibility.lost_kernels(trace) or "")
