"""mutation19: the mutants of round 18's last iterations.py changes (a1bf69a, 9c3d6e6: a call and its op more
than an hour apart, ops of no known time, iterations half or more untimed) that the existing tests let live,
and of attribution.py and readers/timestamps.py after them (notes/mutation19.md lists each mutant).

Every trace here is hand-built and SYNTHETIC (ranges, calls and ops written as tuples in the test, nothing on
disk); each expected number is worked out beside its case. Times in ns: H is LAUNCH_DELAY_MAX_NS, an hour.
"""

from __future__ import annotations

import polars as pl
import pytest

from tests.builders import make_trace
from tracekit.analyzers.attribution import _classify
from tracekit.analyzers.iterations import (
    LAUNCH_DELAY_MAX_NS,
    _op_keys,
    _placed,
    _untimed_withheld,
    analyze_iterations,
    assign,
    measure_gaps,
)
from tracekit.model import Trace
from tracekit.readers.timestamps import (
    _distance,
    _where,
    launched_by_far_calls,
    main_group,
    placed_by_own_start_said,
)

H = LAUNCH_DELAY_MAX_NS

STAMPED = (
    "1 device ops are stamped more than an hour from their launch calls (one of the two times is damaged): they "
    "count in the iterations their calls lie in, with no known start or end time"
)


def _mostly(n: int, of: int, indices: str) -> str:
    return (
        f"{n} of {of} iterations (index {indices}) hold device ops half or more of which have no start or end "
        "time (not recorded, or damaged): their GPU busy time and utilization count only the timed ones, a lower "
        "bound"
    )


LOWER_BOUND = "a lower bound"


def _cut(warnings: list[str]) -> list[str]:
    """The warnings with each 'half or more' line cut after its 'a lower bound' (what follows it is being
    reworded this round: what else of those iterations is not shown)."""
    return [
        w[: w.index(LOWER_BOUND) + len(LOWER_BOUND)]
        if "half or more of which" in w and LOWER_BOUND in w
        else w
        for w in warnings
    ]


def _whole(n: int, of: int, indices: str) -> str:
    return (
        f"{n} of {of} iterations (index {indices}) hold device ops none of which has a start or end time (not "
        "recorded, or damaged): their GPU busy time, utilization and idle time are not known and not shown; "
        "their kernels count"
    )


def _doubt(n: int, of: int, pct: int) -> str:
    return (
        f"verdict uncertain: {n} of {of} device ops in the iterations ({pct}%) have no start or end time: the GPU "
        "busy time and the utilization are short by however long they ran"
    )


def _rows(trace: Trace, **kw: object) -> list[tuple[int, int, float | None]]:
    it = analyze_iterations(trace, **kw).iterations  # type: ignore[arg-type]
    return [
        (i, k, None if b is None else round(b * 1e6))
        for i, k, b in it.select("index", "kernels", "gpu_busy_ms").rows()
    ]


# ------------------------------------------------------------- a call and its op more than an hour apart


def _third_op(op: tuple[int, int], call: int = 1200) -> Trace:
    """Iterations [0, 1000) and [1000, 2000); calls 1, 2, 3 at 100, 1100 and ``call``; ops 1 and 2 100 ns
    each at 200 and 1300 (busy 100 ns per iteration), op 3 at ``op``."""
    return make_trace(
        ranges=[(0, 1000, "iteration"), (1000, 2000, "iteration")],
        api=[
            (100, 110, 1, "cudaLaunchKernel"),
            (1100, 1110, 2, "cudaLaunchKernel"),
            (call, call + 10, 3, "cudaLaunchKernel"),
        ],
        ops=[(200, 300, 1, 7), (1300, 1400, 2, 7), (*op, 3, 7)],
    )


def test_an_op_stamped_more_than_an_hour_after_its_call_counts_untimed_in_its_calls_iteration() -> None:
    """Kills _op_keys M26-M36 (the damaged mask and own start), _placed's own_damaged block and assign's
    nulling of the damaged op's times (M77-M89): op 3 starts H + 1 ns after its call (at 1200, in iteration 1).
    Its own time is the damaged one: it counts in iteration 1 as a kernel with no time, so iteration 1 reads
    2 kernels, busy 100 ns (op 2 alone), and 1 of its 2 ops is untimed: half, a lower bound, said. Read as it
    stands it would stretch iteration 1 to an hour."""
    trace = _third_op((1200 + H + 1, 1300 + H + 1))
    a = analyze_iterations(trace)
    assert _rows(trace) == [(0, 1, 100), (1, 2, 100)]
    assert a.iterations["latency_ms"].to_list() == [0.001, 0.001]
    assert _cut(a.warnings) == [STAMPED, _doubt(1, 3, 33), _mostly(1, 2, "1")]


def test_an_op_exactly_an_hour_after_its_call_is_a_launch_delay_not_a_damaged_time() -> None:
    """Kills _op_keys M30 (``>=`` LAUNCH_DELAY_MAX_NS): at exactly H the op is read as it stands (the rule is
    'more than an hour'): iteration 1 holds both its ops timed (busy 200 ns) and nothing is said stamped."""
    trace = _third_op((1200 + H, 1300 + H))
    assert _rows(trace) == [(0, 1, 100), (1, 2, 200)]
    assert not any("stamped" in w for w in analyze_iterations(trace).warnings)


def test_an_op_whose_call_is_stamped_an_hour_away_is_placed_and_timed_by_its_own_start() -> None:
    """Kills _placed's use_own mutants (the op placed by its own start where its call lies in no iteration):
    call 3 at 1500 + H + 1, its op at [1500, 1600) in iteration 1: iteration 1 counts it, timed (busy 200 ns),
    and nothing is said stamped (the call's time is the damaged one; the op's is whole)."""
    trace = _third_op((1500, 1600), call=1500 + H + 1)
    assert _rows(trace) == [(0, 1, 100), (1, 2, 200)]
    assert not any("stamped" in w for w in analyze_iterations(trace).warnings)


def test_a_call_and_op_an_hour_apart_neither_in_an_iteration_count_in_none() -> None:
    """Kills _placed's ``& iteration.is_not_null()`` in own_damaged: call 3 at 5000 and op 3 at 5000 + 2H,
    both after the last iteration: op 3 is outside every iteration (said so), not 'stamped ... which lie in
    iterations'."""
    trace = _third_op((5000 + 2 * H, 5100 + 2 * H), call=5000)
    a = analyze_iterations(trace)
    assert _rows(trace) == [(0, 1, 100), (1, 1, 100)]
    assert a.warnings == [
        "1 device ops (0.000 ms busy) were launched outside every iteration (1 after the last): they count in no "
        "iteration"
    ]


def test_where_call_and_op_each_lie_in_an_iteration_the_call_places_the_op() -> None:
    """Kills the mutants that let the op's own start win (``use_own`` without ``iteration.is_null()``):
    iterations [0, 1000) and [2H, 2H + 1000); call 3 at 500 (iteration 0), op 3 at 2H + 500 (iteration 1).
    The call comes first: iteration 0 holds 2 kernels (op 3 untimed: busy 100 ns, half untimed), iteration 1
    one."""
    trace = make_trace(
        ranges=[(0, 1000, "iteration"), (2 * H, 2 * H + 1000, "iteration")],
        api=[
            (100, 110, 1, "cudaLaunchKernel"),
            (2 * H + 100, 2 * H + 110, 2, "cudaLaunchKernel"),
            (500, 510, 3, "cudaLaunchKernel"),
        ],
        ops=[(200, 300, 1, 7), (2 * H + 200, 2 * H + 300, 2, 7), (2 * H + 500, 2 * H + 600, 3, 7)],
    )
    a = analyze_iterations(trace)
    assert _rows(trace) == [(0, 2, 100), (1, 1, 100)]
    assert a.warnings[0] == STAMPED
    assert _cut(a.warnings)[-1] == _mostly(1, 2, "0")


def _ops_frame(rows: list[tuple[int | None, int | None, int, int | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={"start": pl.Int64, "end": pl.Int64, "pid": pl.Int64, "correlation": pl.Int64},
        orient="row",
    ).with_columns(thread=pl.lit(None, dtype=pl.Int64))


def test_op_keys_gives_each_op_its_time_process_thread_and_damaged_own_start() -> None:
    """Kills _op_keys M31 (``fill_null(True)``: an op with no call, or no time, read as damaged), M32
    (``& missing``), M41 (``pl.when(missing)``), M42 and the pid/thread fills (M6-M21). Four ops: 0 launched by
    call 0 (at 100, pid 5, thread 9) 50 ns later; 1 launched by call 1 (at 300) H + 1 ns later (damaged: own
    start kept); 2 with no correlation id (no call: its own start, its own pid 2, no thread); 3 whose call is
    missing (launched before the capture: no time)."""
    ops = _ops_frame([(150, 160, 1, 10), (301 + H, 400 + H, 1, 11), (500, 600, 2, None), (700, 800, 1, 12)])
    calls = pl.DataFrame(
        {"call_start": [100, 300], "call_end": [110, 310], "call_pid": [5, 6], "call_thread": [9, 8]}
    )
    call = pl.Series("call", [0, 1, None, None], dtype=pl.Int64)
    missing = pl.Series("missing", [False, False, False, True])
    when, pids, threads, own_start = _op_keys(ops, call, calls, missing)
    assert when.to_list() == [100, 300, 500, None]
    assert pids.to_list() == [5, 6, 2, 1]
    assert threads.to_list() == [9, 8, None, None]
    assert own_start.to_list() == [None, 301 + H, None, None]


def test_placed_marks_only_the_op_placed_by_its_call_while_its_own_time_is_far() -> None:
    """_placed's sixth value, per op (kills the own_damaged mutants directly): ops as in
    test_op_keys_gives_each_op_its_time_process_thread_and_damaged_own_start's 0-1 over range [0, 1000): op 1
    (call at 300, own start H + 301) is placed by its call, damaged; op 0 is not; the keys' time of op 1 stays
    its call's."""
    ops = _ops_frame([(150, 160, 1, 10), (301 + H, 400 + H, 1, 11)])
    api = pl.DataFrame(
        {
            "start": [100, 300],
            "end": [110, 310],
            "pid": [1, 1],
            "correlation": [10, 11],
            "name": ["cudaLaunchKernel"] * 2,
            "kind": ["runtime"] * 2,
        }
    )
    ranges = pl.DataFrame({"iteration": [0], "range_start": [0], "range_end": [1000]})
    iteration, call, _calls, missing, keys, damaged = _placed(ops, api, ranges)
    assert iteration.to_list() == [0, 0]
    assert call.to_list() == [0, 1]
    assert missing.to_list() == [False, False]
    assert keys is not None and keys[0].to_list() == [100, 300]
    assert damaged.to_list() == [False, True]


# ------------------------------------------------------------------------------ untimed iterations


def _untimed_trace(per_iteration: list[list[bool]]) -> Trace:
    """Iteration i is [1000 i, 1000 i + 1000); its op j (True: timed, 50 ns; False: no end) starts at
    1000 i + 100 + 100 j, launched by a call at 1000 i + 10 j."""
    ranges, api, ops, c = [], [], [], 0
    for i, timed_ops in enumerate(per_iteration):
        base = 1000 * i
        ranges.append((base, base + 1000, "iteration"))
        for j, timed in enumerate(timed_ops):
            c += 1
            api.append((base + 10 * j, base + 10 * j + 5, c, "cudaLaunchKernel"))
            start = base + 100 + 100 * j
            ops.append((start, start + 50 if timed else None, c, 7))
    return make_trace(ranges=ranges, api=api, ops=ops)


def _measured(trace: Trace, skip: int = 0) -> tuple[tuple[int, ...], tuple[int, ...], list[str]]:
    m = measure_gaps(trace, assign(trace), skip)
    return m.untimed_iterations, m.mostly_untimed_iterations, m.doubts


def _no_end(n: int) -> str:
    return (
        f"{n} device ops in the iterations have no end time (not recorded): they count as kernels but not in GPU "
        "busy time, which is short by however long they ran"
    )


def test_an_iteration_exactly_half_untimed_is_named_a_lower_bound() -> None:
    """Kills measure_gaps' ``2 * untimed > ops`` (M106) and the mostly filter's other mutants: iteration 0
    holds 1 untimed op of 2 (exactly half: named), iteration 1 1 of 3 (a third: not named). 2 of the 5 ops
    are untimed: 40%, doubted."""
    trace = _untimed_trace([[True, False], [True, True, False]])
    assert _measured(trace) == ((), (0,), [_doubt(2, 5, 40)])
    a = analyze_iterations(trace)
    assert _rows(trace) == [(0, 2, 50), (1, 3, 100)]
    assert _cut(a.warnings) == [_no_end(2), _doubt(2, 5, 40), _mostly(1, 2, "0")]


def test_an_iteration_two_thirds_untimed_is_named_and_one_third_is_not() -> None:
    """Kills ``3 * untimed >= ops`` (1 of 3 would be named) and ``untimed <= ops`` (a wholly untimed iteration
    also named 'half or more'): iteration 0 holds 2 untimed ops of 3, iteration 1 1 of 3, iteration 2 2 of 2
    (wholly untimed: withheld, not 'half or more'). The doubt counts the other two iterations' 3 of 6 ops."""
    trace = _untimed_trace([[True, False, False], [True, True, False], [False, False]])
    assert _measured(trace) == ((2,), (0,), [_doubt(3, 6, 50)])
    a = analyze_iterations(trace)
    assert _rows(trace) == [(0, 3, 50), (1, 3, 100), (2, 2, None)]
    assert _cut(a.warnings) == [_no_end(5), _doubt(3, 6, 50), _whole(1, 3, "2"), _mostly(1, 3, "0")]


def test_a_wholly_untimed_iteration_leaves_the_doubt_to_the_others_ops() -> None:
    """Kills the doubt-base mutants (``untimed = ...``, ``+=``, ``doubt_base = ...``, ``+=``: M125-M136):
    iteration 0's 2 ops are both untimed (withheld), iteration 1 holds 1 untimed op of 5: the doubt is 1 of 5
    (20%), not 3 of 7 (43%)."""
    trace = _untimed_trace([[False, False], [True, True, True, True, False]])
    assert _measured(trace) == ((0,), (), [_doubt(1, 5, 20)])
    assert _rows(trace) == [(0, 2, None), (1, 5, 200)]


def test_when_every_iteration_is_untimed_there_is_no_doubt_but_no_verdict() -> None:
    """Kills ``untimed <= ops.height`` (M124: the whole iterations subtracted from themselves, 0 of 0) and
    ``untimed <= doubt_base`` (M147: 'verdict uncertain: 3 of 3'): every op untimed gives no doubt line (the
    no-verdict reason says it)."""
    trace = _untimed_trace([[False], [False, False]])
    assert _measured(trace) == ((0, 1), (), [])
    a = analyze_iterations(trace)
    assert a.no_verdict == (
        "no framework-/compute-bound verdict: none of the device ops in the 2 analyzed iterations has a start "
        "and end time (not recorded), so no iteration's GPU busy time is known (latency, launches and kernel "
        "counts are shown)"
    )
    assert not any(w.startswith("verdict uncertain") for w in a.warnings)


def test_an_untimed_iteration_dropped_by_skip_is_not_named() -> None:
    """Kills the ``&`` to ``|`` mutants of Measured's untimed/mostly tuples (M740, M748): iteration 0 (half
    untimed) is dropped by skip=1, so neither tuple names it (nor any iteration not analyzed)."""
    trace = _untimed_trace([[True, False], [True], [True]])
    assert _measured(trace, skip=1)[:2] == ((), ())
    trace = _untimed_trace([[False], [True], [True]])
    assert _measured(trace, skip=1)[:2] == ((), ())


# ----------------------------------------------------------------------------------- _untimed_withheld


def _frame(n: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    frame = pl.DataFrame(
        {
            "index": list(range(n)),
            "latency_ms": [1.0] * n,
            "gpu_busy_ms": [0.5] * n,
            "gpu_utilization": [0.5] * n,
            "dispatch_ms": [0.25] * n,
            "kernels": [3] * n,
        }
    )
    gaps = pl.DataFrame({"iteration": list(range(n)), "duration_ns": [500_000] * n})
    return frame, gaps


def test_untimed_withheld_names_mostly_untimed_iterations_and_keeps_their_figures() -> None:
    """Kills _untimed_withheld's said-list mutants: 2 of 3 iterations (index 0, 2) half or more untimed keep
    their busy figures and gaps, and are named; no reason."""
    frame, gaps = _frame(3)
    out, kept, said, reason = _untimed_withheld(frame, gaps, (), (0, 2))
    assert out.equals(frame) and kept.equals(gaps)
    assert _cut(said) == [_mostly(2, 3, "0, 2")]
    assert reason is None


def test_untimed_withheld_says_nothing_when_every_iteration_is_mostly_untimed() -> None:
    """Kills ``len(mostly) <= frame.height``: where every analyzed iteration is half or more untimed, the
    trace-wide doubt says it (no per-iteration line)."""
    frame, gaps = _frame(2)
    assert _untimed_withheld(frame, gaps, (), (0, 1))[2:] == ([], None)


def test_untimed_withheld_blanks_the_untimed_iterations_and_names_both_kinds() -> None:
    """Iteration 1 of 3 wholly untimed: its busy, utilization and cause figures null, its gap gone, latency
    and kernels kept; iteration 2 half untimed: named after it."""
    frame, gaps = _frame(3)
    out, kept, said, reason = _untimed_withheld(frame, gaps, (1,), (2,))
    assert out.rows() == [
        (0, 1.0, 0.5, 0.5, 0.25, 3),
        (1, 1.0, None, None, None, 3),
        (2, 1.0, 0.5, 0.5, 0.25, 3),
    ]
    assert kept.get_column("iteration").to_list() == [0, 2]
    assert _cut(said) == [_whole(1, 3, "1"), _mostly(1, 3, "2")]
    assert reason is None


def test_untimed_withheld_gives_the_reason_when_every_iteration_is_untimed() -> None:
    frame, gaps = _frame(2)
    out, kept, said, reason = _untimed_withheld(frame, gaps, (0, 1))
    assert out.get_column("gpu_busy_ms").to_list() == [None, None]
    assert kept.is_empty() and said == []
    assert reason is not None and reason.startswith(
        "no framework-/compute-bound verdict: none of the device ops in the 2 analyzed iterations"
    )


@pytest.mark.parametrize("mostly", [(), (1,)])
def test_untimed_withheld_without_untimed_iterations_changes_nothing(mostly: tuple[int, ...]) -> None:
    frame, gaps = _frame(2)
    out, kept, said, reason = _untimed_withheld(frame, gaps, (), mostly)
    assert out.equals(frame) and kept.equals(gaps) and reason is None
    assert _cut(said) == ([_mostly(1, 2, "1")] if mostly else [])


# ------------------------------------------------------------------------------ readers/timestamps.py


def test_launched_by_far_calls_places_an_op_of_no_process_by_its_id_where_only_far_calls_carry_it() -> None:
    """Kills launched_by_far_calls' pid-null branch mutants (68f3379): calls (pid 1, id 5) and (pid 2, id 5)
    both far, (pid 1, id 6) kept. An op of no process with id 5 (only far calls carry it) was launched by a far
    call: True; one with id 6 (a kept call carries it) or id 7 (no call) is not; (pid 1, id 5) by its pair."""
    calls = pl.DataFrame({"pid": [1, 2, 1], "correlation": [5, 5, 6]})
    far = pl.Series([True, True, False])
    ops = pl.DataFrame(
        {"pid": [None, None, None, 1], "correlation": [5, 6, 7, 5]},
        schema={"pid": pl.Int64, "correlation": pl.Int64},
    )
    assert launched_by_far_calls(ops, calls, far).to_list() == [True, False, False, True]


def test_launched_by_far_calls_keeps_an_op_of_no_process_whose_id_a_kept_call_carries() -> None:
    """Id 5 is far in pid 1 but kept in pid 2: the op of pid 1 is launched by a far call (its pair), the op of
    no process is not (its id alone cannot say which process's call it was, and a kept one carries it)."""
    calls = pl.DataFrame({"pid": [1, 2], "correlation": [5, 5]})
    ops = pl.DataFrame(
        {"pid": [None, 1], "correlation": [5, 5]}, schema={"pid": pl.Int64, "correlation": pl.Int64}
    )
    assert launched_by_far_calls(ops, calls, pl.Series([True, False])).to_list() == [False, True]
    # by id alone (keys without pid), the pid-null branch does not apply: id 5 has a kept call
    assert launched_by_far_calls(ops, calls, pl.Series([True, False]), ["correlation"]).to_list() == [
        False,
        False,
    ]


def test_placed_by_own_start_said_in_full() -> None:
    assert placed_by_own_start_said(1234) == (
        "; 1,234 device ops launched by those calls lie among the rest (only their calls' times are damaged): "
        "each is placed in its iteration by its own start, with no launch call"
    )


@pytest.mark.parametrize(
    ("ns", "said"),
    [
        (365.25 * 86_400e9, "1 years"),
        (365 * 86_400e9, "365 days"),
        (86_400e9, "1 days"),
        (23 * 3_600e9, "23 hours"),
        (3_600e9, "1 hours"),
        (3_599e9, "3,599 s"),
        (0, "0 s"),
    ],
)
def test_distance_takes_the_largest_whole_unit(ns: float, said: str) -> None:
    """Kills _distance's ``>`` (exactly a year, a day, an hour is 1 of it) and its unit sizes."""
    assert _distance(ns) == said


def test_where_says_where_far_events_lie_for_each_reason() -> None:
    """_where's five texts, exact (kills the text, edge and direction mutants): a capture of [0, 20 s] and an
    event 3 h after its end; a capture of [2 h, 4 h] and one at 0, 2 h before it; a group [0, 1 s] and one
    5 h after it, or one 2 h before a group of [2 h, 4 h] (the edge is the near end: kills ``edge`` taken
    as the far end); an end after a capture, or after every event; an end past 2^63."""
    s = 10**9
    assert _where({"capture": 3 * H + 20 * s}, (0, 20 * s), None) == (
        "outside the capture (which the trace says ran from 0 to 20,000,000,000 ns), e.g. one at "
        "10,820,000,000,000 ns, 3 hours after its end"
    )
    # (the edge is the capture's start: 2 h before it, not 4 h before its end)
    assert _where({"capture": 0}, (2 * H, 4 * H), None) == (
        "outside the capture (which the trace says ran from 7,200,000,000,000 to 14,400,000,000,000 ns), e.g. "
        "one at 0 ns, 2 hours before its start"
    )
    assert _where({"group": s + 5 * H}, None, (0.0, 1e9)) == (
        "more than an hour from every other event (the others lie from 0 to 1,000,000,000 ns), e.g. one at "
        "18,001,000,000,000 ns, 5 hours after them"
    )
    assert _where({"group": 0}, None, (2.0 * H, 4.0 * H)) == (
        "more than an hour from every other event (the others lie from 7,200,000,000,000 to 14,400,000,000,000 "
        "ns), e.g. one at 0 ns, 2 hours before them"
    )
    # the capture's text first; without a capture the group's; a 'capture' example without a capture is none
    assert _where({"late": 2 * H + 10, "group": 5}, (0, 10), None) == (
        "to end after the capture (which the trace says ran from 0 to 10 ns), e.g. one ending at "
        "7,200,000,000,010 ns, 2 hours after its end"
    )
    assert _where({"capture": 5, "late": 2 * H}, None, None) == (
        "to end more than an hour after every other event began, e.g. one ending at 7,200,000,000,000 ns"
    )
    assert _where({"end": 5}, None, None) == (
        "with an end past 2^63 ns (292 years: start + duration; e.g. one starting at 5 ns), which would wrap "
        "around to a negative time"
    )


def test_main_group_is_the_largest_group_only_where_one_holds_most_starts() -> None:
    """Three starts within ns and one 10 h later: the main group is [0, 2]; one group: None; two groups of one
    start each (none holds more than half): None."""
    assert main_group([pl.Series([0, 1, 2, 10 * H])]) == (0.0, 2.0)
    assert main_group([pl.Series([0, 1, 2])]) is None
    assert main_group([pl.Series([0, 10 * H])]) is None


# ------------------------------------------------------------------------------ analyzers/attribution.py


def test_classify_without_graph_launches_counts_none() -> None:
    """Kills _classify's ``sum() or 1`` and the code mutants: a launch (with its version suffix), a sync, a
    null name and another call read 1, 2, 3, 3 and no graph launch (0, not 1); a graph launch alone reads 1 and
    one graph launch."""
    api = pl.DataFrame({"name": ["cudaLaunchKernel_v7000", "cudaStreamSynchronize", None, "cudaMalloc"]})
    codes, graphs = _classify(api)
    assert (codes.tolist(), str(codes.dtype), graphs) == ([1, 2, 3, 3], "int8", 0)
    codes, graphs = _classify(pl.DataFrame({"name": ["cudaGraphLaunch_v10000"]}))
    assert (codes.tolist(), graphs) == ([1], 1)


def test_untimed_withheld_names_two_untimed_iterations_with_a_comma() -> None:
    """Kills the index list's separator mutant (``'XX, XX'.join``): iterations 0 and 2 of 3 wholly untimed
    read 'index 0, 2'; only iteration 1's gap is left."""
    frame, gaps = _frame(3)
    _, kept, said, reason = _untimed_withheld(frame, gaps, (0, 2))
    assert said == [_whole(2, 3, "0, 2")] and reason is None
    assert kept.get_column("iteration").to_list() == [1]


@pytest.mark.parametrize(("start", "kernels"), [(200, 2), (201, 1)])
def test_a_window_cut_from_the_work_holds_an_untimed_op_up_to_its_last_ns_only(
    start: int, kernels: int
) -> None:
    """Kills _placed's synthetic span mutants (``gpu_end + 2``, ``gpu_end - 1``): no ranges, so one window over
    the timed op [100, 200]; an op with no end starting at 200 lies in it (2 kernels), one starting at 201
    does not (1 kernel; it counts in no iteration)."""
    trace = make_trace(
        api=[(10, 20, 1, "cudaLaunchKernel"), (30, 40, 2, "cudaLaunchKernel")],
        ops=[(100, 200, 1, 7), (start, None, 2, 7)],
    )
    assert _rows(trace) == [(0, kernels, 100)]


def test_an_op_placed_by_its_own_start_takes_only_its_own_process_iteration() -> None:
    """Kills _placed's ``by_own`` mutants that drop the op's process (``pids`` None, or the threads passed as
    pids): iteration 0 is process 1's [0, 1000), iteration 1 process 2's [2000, 3000). Process 2's call 3 is
    stamped H + 1 ns after its op, which starts at 500, inside process 1's iteration only: by its own start it
    lies in no iteration of its process, so it counts in none (said); each iteration keeps its 1 kernel."""
    trace = make_trace(
        ranges=[(0, 1000, "iteration", 1), (2000, 3000, "iteration", 2)],
        api=[
            (100, 110, 1, "cudaLaunchKernel", 1),
            (2100, 2110, 2, "cudaLaunchKernel", 2),
            (501 + H, 511 + H, 3, "cudaLaunchKernel", 2),
        ],
        ops=[(200, 300, 1, 7, 1), (2200, 2300, 2, 7, 2), (500, 600, 3, 7, 2)],
        range_fields=("start", "end", "name", "pid"),
        api_fields=("start", "end", "correlation", "name", "pid"),
        op_fields=("start", "end", "correlation", "stream", "pid"),
    )
    assert _rows(trace) == [(0, 1, 100), (1, 1, 100)]
    assert analyze_iterations(trace).warnings[-1] == (
        "1 device ops (0.000 ms busy) were launched outside every iteration (1 after the last): they count in no "
        "iteration"
    )


def test_launched_by_far_calls_without_far_calls_is_a_boolean_mask_of_false() -> None:
    """Kills the early return's ``dtype=None`` (float zeros compare equal to False in a list, but the readers
    negate and AND the mask: ``~`` of a Float64 Series raises): no far call gives a Boolean Series of False."""
    calls = pl.DataFrame({"pid": [1], "correlation": [5]})
    ops = pl.DataFrame({"pid": [1, 1], "correlation": [5, 6]})
    out = launched_by_far_calls(ops, calls, pl.Series([False]))
    assert (out.dtype, out.to_list()) == (pl.Boolean, [False, False])
    assert (~out).to_list() == [True, True]


def _causes_ns(trace: Trace) -> dict[str, int]:
    it = analyze_iterations(trace).iterations
    return {
        c: round(it[f"{c}_ms"][0] * 1e6) for c in ("dispatch", "launch", "sync", "other_api", "in_flight")
    }


def test_a_window_of_no_process_takes_any_process_op_as_its_gaps_next_op() -> None:
    """Kills _next_op_calls' ``own_process`` mutant (``op_pid == NULL & main_pid == NULL``): a trace without
    ranges is one window of no process, and each gap's next op is launched in process 1. The leading gap
    [10, 100) ends at op 1, launched by call [10, 20): 10 ns launch, 80 in flight; the inner gap [200, 300)
    at op 2, call [250, 260): 50 ns dispatch, 10 launch, 40 in flight."""
    trace = make_trace(
        api=[(10, 20, 1, "cudaLaunchKernel"), (250, 260, 2, "cudaLaunchKernel")],
        ops=[(100, 200, 1, 7), (300, 400, 2, 7)],
    )
    assert _causes_ns(trace) == {"dispatch": 50, "launch": 20, "sync": 0, "other_api": 0, "in_flight": 120}


def test_of_two_ops_starting_at_a_gaps_end_the_one_launched_first_decides() -> None:
    """Kills _next_op_calls' dedup guard made ``np.any(None)`` (every candidate kept, the last written wins):
    ops 2 and 3 both start at 400, the end of the inner gap [100, 400); op 2 was launched first (call
    [200, 210)), op 3 later (call [300, 310)). From op 2's launch on the gap is in flight: dispatch 100, launch
    10, in flight 190 (by op 3 it would read 190, 20, 90). With the leading gap [0, 50) (dispatch 10, launch
    10, in flight 30) and the trailing [500, 1000) (dispatch 500): 610, 20, 220."""
    trace = make_trace(
        ranges=[(0, 1000, "iteration")],
        api=[
            (10, 20, 1, "cudaLaunchKernel"),
            (200, 210, 2, "cudaLaunchKernel"),
            (300, 310, 3, "cudaLaunchKernel"),
        ],
        ops=[(50, 100, 1, 7), (400, 450, 2, 7), (400, 500, 3, 8)],
    )
    assert _causes_ns(trace) == {"dispatch": 610, "launch": 20, "sync": 0, "other_api": 0, "in_flight": 220}
