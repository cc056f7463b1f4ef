"""mutation20: the mutants that the existing tests let live in the code that computes the numbers users see
(readers/timestamps.py's `far_events`/`_clusters`, attribution's `_iteration_sums`, model.py's mending of
device ops and calls that end before they start; notes/mutation20.md lists each mutant).

Every input here is hand-built and SYNTHETIC (series, frames and traces written in the test, nothing on disk);
each expected number is worked out beside its case. Times in ns.
"""

from __future__ import annotations

import math

import polars as pl
import pytest

from tests.builders import make_trace
from tracekit.analyzers import attribution
from tracekit.analyzers.attribution import CAUSE_NS, GRAPH_KERNEL_GAP_NS, DeviceTimeline, attribute_idle
from tracekit.analyzers.iterations import IterationAnalysis, analyze_iterations
from tracekit.analyzers.stability import (
    Difference,
    Measurement,
    level_shift,
    measure,
    ratio_state,
    spread_warning,
)
from tracekit.model import OPS_WITHOUT_END, Trace, drop_negative_durations, mend_negative_durations
from tracekit.readers.timestamps import FAR_NS, far_events

H = FAR_NS
MS = 1_000_000


def _s(values: list[int | None]) -> pl.Series:
    return pl.Series(values, dtype=pl.Int64)


# ------------------------------------------------------------------ timestamps.far_events / _clusters


def test_a_cpu_operator_outside_the_capture_contradicts_it_even_with_ranges_inside() -> None:
    """Capture [0, 20 ms]; a CPU operator (anchor) 5 h after it, ranges all inside. The anchor contradicts the
    record (1), and the ranges add 0 to that count: the record is not used, and the cluster rule keeps the
    device op at 5 h + 2 (its cluster holds the anchor beside it). Had the ranges' count replaced the
    anchors' (far_events M90, `contradicted = ...`), the capture would judge, and that op would be far."""
    far, warning = far_events(
        {"device ops": _s([10 * MS, 12 * MS, 14 * MS, 5 * H + 2])},
        anchors=[_s([11 * MS, 5 * H + 1])],
        capture=(0, 20 * MS),
        ranges={"ranges": _s([9 * MS, 13 * MS])},
    )
    assert far["device ops"].to_list() == [False] * 4
    assert far["ranges"].to_list() == [False] * 2
    assert warning is not None
    assert warning.startswith(
        "the trace says its capture ran from 0 to 20,000,000 ns, but 1 CPU operator and 1 other event lie outside"
    )
    assert warning.endswith(
        "and 1 other event lie outside it: that record is not used to judge its events' times"
    )


def test_an_end_past_2_63_names_the_latest_start_even_when_every_start_is_negative() -> None:
    """Starts -2000, -1000, 0, 10, 20 (one cluster, no capture); the first two end at 2^64 (past 2^63 ns): 2 of
    5, a minority, left out. The example is the latest such start, -1,000 (an 'end' example is always the
    max); far_events M321 (`reason in ("END", "late")`) took the max only for a start after 0, here the min,
    -2,000."""
    far, warning = far_events(
        {"device ops": _s([-2000, -1000, 0, 10, 20])},
        ends={"device ops": pl.Series([2.0**64, 2.0**64, 30.0, 40.0, 50.0])},
    )
    assert far["device ops"].to_list() == [True, True, False, False, False]
    assert warning == (
        "2 device ops stamped with an end past 2^63 ns (292 years: start + duration; e.g. one starting at -1,000 "
        "ns), which would wrap around to a negative time, left out: no profiler records an event so far from the "
        "rest of its capture (a damaged row or an exporter's bug), and read as it is one such time becomes an "
        "iteration's latency"
    )


def test_null_starts_do_not_count_in_the_minority_rule() -> None:
    """Device ops at 0 and 5 h, two more with no start; CPU operators at 1, 2, 3. The cluster at 0 (4 events of
    5) is the body; the op at 5 h is far by group. It is 1 of the 2 ops with a start: not a minority, so kept
    and said ("1 of 2"). far_events M280 (`len + null_count`: a total of 6) left it out as a minority."""
    far, warning = far_events({"device ops": _s([0, None, None, 5 * H])}, anchors=[_s([1, 2, 3])])
    assert far["device ops"].to_list() == [False] * 4
    assert warning is not None
    assert warning.startswith(
        "1 of 2 device ops are stamped more than an hour from every other event (the others lie from 0 to 3 ns), "
        "e.g. one at 18,000,000,000,000 ns, 5 hours after them: too many to leave out as damaged rows, so they "
        "are kept"
    )


def test_far_ranges_that_are_a_majority_are_said_in_full() -> None:
    """Device ops at 0 and 1, ranges at 2, 5 h and 5 h + 1: the ranges' cluster at 5 h holds ranges alone and
    is not the body, but its 2 ranges are 2 of 3, no minority: kept, and the whole sentence says so (far_events
    M385 upper-cased its last words; the existing test compares only the start)."""
    far, warning = far_events({"device ops": _s([0, 1])}, ranges={"ranges": _s([2, 5 * H, 5 * H + 1])})
    assert far["ranges"].to_list() == [False] * 3 and far["device ops"].to_list() == [False] * 2
    assert warning == (
        "2 of 3 ranges are stamped more than an hour from every other event (the others lie from 0 to 2 ns), "
        "e.g. one at 18,000,000,000,001 ns, 5 hours after them: too many to leave out as damaged rows, so they "
        "are kept, but the trace's clocks (or its record of the capture) disagree with them: the iterations they "
        "make are not real"
    )


# ------------------------------------------------------------------ model: mending and dropping


def _rows(rows: list[tuple[int, int | None]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"start": pl.Int64, "end": pl.Int64}, orient="row")


#: (start, end): a whole row, one of no length, one ending 5 ns before it starts, one with no end
FOUR = [(0, 10), (20, 20), (30, 25), (40, None)]

OPS_DONE = "they count with no end time (in no busy time)"
CALLS_DONE = "read as lasting 0 from their start, so each still links the device work it launched"


def test_mend_negative_durations_of_device_ops_nulls_only_the_end_before_the_start() -> None:
    """Of FOUR, only (30, 25) ends before it starts: 1 mended, its end null. The row of no length (20, 20)
    keeps its end (M6, `<=`, nulled it too: 2), and the row with no end is not counted (M10,
    `fill_null(True)`: 2)."""
    frame, count, done = mend_negative_durations(_rows(FOUR), "ops")
    assert frame.rows() == [(0, 10), (20, 20), (30, None), (40, None)]
    assert (count, done) == (1, OPS_DONE)


def test_mend_negative_durations_of_calls_makes_the_call_last_0_from_its_start() -> None:
    """The same rows as API calls: (30, 25) becomes (30, 30), not (30, None) (M37); the row of no length and
    the one with no end are left as they are."""
    frame, count, done = mend_negative_durations(_rows(FOUR), "api")
    assert frame.rows() == [(0, 10), (20, 20), (30, 30), (40, None)]
    assert (count, done) == (1, CALLS_DONE)


def test_mend_negative_durations_with_nothing_to_mend() -> None:
    """No row ends before it starts, or no row at all: (the frame, 0, "") (M16: an empty frame counted 1;
    M18: 1; M19: "XXXX")."""
    whole = _rows([(0, 10), (20, 20)])
    frame, count, done = mend_negative_durations(whole, "ops")
    assert (frame.rows(), count, done) == ([(0, 10), (20, 20)], 0, "")
    empty = _rows([])
    frame, count, done = mend_negative_durations(empty, "api")
    assert (frame.height, count, done) == (0, 0, "")


def test_drop_negative_durations_drops_only_the_row_ending_before_its_start() -> None:
    """Ranges: (30, 25) goes; the one of no length and the one never closed stay (M6, M10 dropped them);
    nothing to drop, or an empty frame: 0 (M16, M21 said 1; M12, `and False`, never dropped)."""
    frame, dropped = drop_negative_durations(_rows(FOUR))
    assert (frame.rows(), dropped) == ([(0, 10), (20, 20), (40, None)], 1)
    frame, dropped = drop_negative_durations(_rows([(0, 10), (20, 20)]))
    assert (frame.rows(), dropped) == ([(0, 10), (20, 20)], 0)
    frame, dropped = drop_negative_durations(_rows([]))
    assert (frame.height, dropped) == (0, 0)


def test_a_trace_adds_the_ops_it_mended_to_those_its_reader_said() -> None:
    """The reader said 2 device ops without an end (meta); the Trace mends one more (end 25 < start 30): 3, and
    one warning for it. M31 (`- mended`) gave 1, M33 (`and 0`, the reader's count lost) 1. The calls' (2 of
    them) and the ranges' warnings are their own, and a call mended adds no op (`name != "ops"` counted the 2
    calls: 4)."""
    trace = make_trace(
        ops=[(0, 10, 1), (30, 25, 2)],
        api=[(0, 5, 1, "cudaLaunchKernel"), (20, 15, 2, "cudaLaunchKernel"), (40, 35, 3, "cudaLaunchKernel")],
        ranges=[(0, 100, "a"), (50, 40, "b")],
        meta={OPS_WITHOUT_END: 2},
    )
    assert trace.meta[OPS_WITHOUT_END] == 3
    assert trace.ops.select("start", "end").rows() == [(0, 10), (30, None)]
    assert trace.api.select("start", "end").rows() == [(0, 5), (20, 20), (40, 40)]
    assert trace.ranges.select("start", "end").rows() == [(0, 100)]
    negative = "with a negative duration (end before start: a damaged row or a profiler's lost end time)"
    assert [w for w in trace.warnings if "negative duration" in w] == [
        f"1 device ops {negative}: {OPS_DONE}",
        f"2 API calls {negative}: {CALLS_DONE}",
        "1 ranges with a negative duration (end before start, a profiler bug such as kineto#646's missing end "
        "time) ignored",
    ]


def test_a_trace_of_whole_rows_says_nothing_and_counts_no_op_without_end() -> None:
    trace = make_trace(ops=[(0, 10, 1)], api=[(0, 5, 1, "cudaLaunchKernel")], ranges=[(0, 100, "a")])
    assert OPS_WITHOUT_END not in trace.meta
    assert not [w for w in trace.warnings if "negative duration" in w]


# ------------------------------------------------------------------ attribution._iteration_sums


def _three_steps() -> tuple[Trace, IterationAnalysis]:
    """Three steps [1000 i, 1000 i + 1000); in each, calls [100, 110) and [120, 130) launch kernels [300, 400)
    and [600, 700) (offsets from the step's start). Each step: a leading gap of 300, an inner one of 200, a
    trailing one of 300: idle 800 = dispatch 400 + launch 10 + in flight 390."""
    ranges, api, ops = [], [], []
    for i in range(3):
        b = 1000 * i
        ranges.append((b, b + 1000, "step"))
        api += [
            (b + 100, b + 110, 2 * i + 1, "cudaLaunchKernel"),
            (b + 120, b + 130, 2 * i + 2, "cudaLaunchKernel"),
        ]
        ops += [(b + 300, b + 400, 2 * i + 1), (b + 600, b + 700, 2 * i + 2)]
    trace = make_trace(ranges=ranges, api=api, ops=ops)
    return trace, analyze_iterations(trace, "step")


def _sums(index: list[int], kernel_gap_ns: int = GRAPH_KERNEL_GAP_NS) -> tuple[list[tuple], list[tuple]]:
    trace, analysis = _three_steps()
    result = attribute_idle(
        analysis.gaps,
        trace.ops.select("start", "end", "pid", "correlation", "device"),
        trace.api,
        analysis.ranges,
        pl.Series(index),
        kernel_gap_ns=kernel_gap_ns,
        timeline=DeviceTimeline.of(trace.ops),
    )
    return (
        result.iterations.select("index", "idle_ns", *CAUSE_NS).rows(),
        result.projection_parts.rows(),
    )


#: (idle, dispatch, launch, sync, other API, in flight) of each step; (leading, trailing, inner gaps, inner ns,
#: inner floor) with the default kernel gap (the inner gap of 200 is shorter: its own length)
STEP = (800, 400, 10, 0, 0, 390)
PARTS = (300, 300, 1, 200, 200)


def test_iteration_sums_of_steps_0_and_2_leave_out_step_1() -> None:
    """Index [0, 2] (not contiguous): each keeps its own gaps, step 1's go. M67 (`pos >= 1`) and M77 (clip
    from 1) left step 0's gaps out (a row of zeros)."""
    assert _sums([0, 2]) == ([(0, *STEP), (2, *STEP)], [(0, *PARTS), (2, *PARTS)])
    assert _sums([2, 0]) == _sums([0, 2])


def test_iteration_sums_of_the_middle_step_alone() -> None:
    """Index [1]: the gaps of steps 0 and 2 lie before and after it. M76 (no upper clip) and M84 (clip to 1)
    read past the one-element index (IndexError)."""
    assert _sums([1]) == ([(1, *STEP)], [(1, *PARTS)])


def test_iteration_sums_floor_an_inner_gap_at_the_kernel_gap() -> None:
    """A kernel gap of 50 ns: the inner gap of 200 is floored at 50 (no waits in it), not 200."""
    assert _sums([0, 1, 2], kernel_gap_ns=50) == (
        [(i, *STEP) for i in range(3)],
        [(i, 300, 300, 1, 200, 50) for i in range(3)],
    )


def test_a_far_cluster_of_one_kind_of_three_is_no_phase_of_its_own() -> None:
    """Three kinds of starts (a Kineto CPU run: no device ops, calls, CPU operators). The body: calls 0, 1 and
    operators 2-5 (6 starts); 5 h later, operators alone (3 starts, at least half as many as the body holds,
    but of one kind only). That cluster is no phase (no second kind, no range or anchor beside it): 3 of the 7
    operators, a minority, left out. _clusters M130 (`series != i`) counted a cluster of one kind of three as
    holding two, and kept it."""
    far, warning = far_events(
        {
            "device ops": _s([]),
            "API calls": _s([0, 1]),
            "CPU operators": _s([2, 3, 4, 5, 5 * H, 5 * H + 1, 5 * H + 2]),
        }
    )
    assert far["CPU operators"].to_list() == [False] * 4 + [True] * 3
    assert far["API calls"].to_list() == [False, False]
    assert warning is not None
    assert warning.startswith(
        "3 CPU operators stamped more than an hour from every other event (the others lie from 0 to 5 ns), e.g. "
        "one at 18,000,000,000,002 ns, 5 hours after them, left out"
    )


def test_iteration_sums_in_chunks_of_two_gaps_are_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gaps are summed chunk by chunk (65,536 a chunk); with chunks of 2 gaps, the 9 gaps of the three
    steps fall in 5 chunks, and every sum is the same as in one. M128 (`acc["inner_floor_ns"] = ...`) kept
    only the last chunk's floors: 0 for every step (the inner gaps are gaps 2, 5 and 8 of 9, in chunks 1, 3
    and 4 of 5; the last chunk holds step 2's trailing gap alone)."""
    monkeypatch.setattr(attribution, "_CHUNK", 2)
    assert _sums([0, 1, 2], kernel_gap_ns=50) == (
        [(i, *STEP) for i in range(3)],
        [(i, 300, 300, 1, 200, 50) for i in range(3)],
    )


# ------------------------------------------------------------------ stability


def test_a_set_of_nothing_but_infinite_latencies_says_so() -> None:
    """Every value infinite: no statistic (count 0, no median), and the one line that says why. measure M31
    dropped the line, leaving a set of no iteration and no word."""
    m = measure([math.inf, math.inf])
    assert (m.count, m.kept, m.median) == (0, 0, None)
    assert m.warnings == (
        "2 of 2 iterations (iterations 0-1) have an infinite latency (ms), no duration: left out of the "
        "statistics",
    )
    m = measure([math.inf, None, math.inf], indices=[4, 5, 6])
    assert m.warnings == (
        "2 of 2 iterations (iterations 4, 6) have an infinite latency (ms), no duration: left out of the "
        "statistics",
    )


def test_ratio_state_with_one_bound_of_its_interval_unknown_goes_by_the_point_ratio() -> None:
    """A Difference whose ratio interval lacks one bound (a sparse document) is judged by its point ratio: 2.0
    against 1.5 is "above", 2.0 against 2.5 "below". ratio_state M2 (`and`) read the missing bound (a TypeError
    comparing None)."""
    assert ratio_state(Difference(1.0, 2.0, 1.0, 2.0, None, 3.0), 1.5) == "above"
    assert ratio_state(Difference(1.0, 2.0, 1.0, 2.0, 1.8, None), 2.5) == "below"


def test_a_level_shift_needs_a_later_level_above_0() -> None:
    """12 iterations at 2.0 ms then 8 at 1.0: a level shift of 12 (the docstring's case). Then 8 at 0.0: the
    later level is 0, no level a fall can be measured against (DRIFT_MIN * 0), and the rule says none (0).
    level_shift M51 (`after >= 0`) called it a shift of 12; 6 at 2.0 then 4 at 0.0 likewise (6)."""
    assert level_shift([2.0] * 12 + [1.0] * 8) == 12
    assert level_shift([2.0] * 12 + [0.0] * 8) == 0
    assert level_shift([2.0] * 6 + [0.0] * 4) == 0


#: iteration 0 at 4.0 ms (warm-up), then 1.0 and 1.3 in turn: every 10 iterations' mean 1.42, the 9 kept 1.1333
WARM = [4.0, 1.0, 1.3, 1.0, 1.3, 1.0, 1.3, 1.0, 1.3, 1.0]


def test_spread_warning_of_an_unstable_set_names_how_far_its_warm_up_moves_the_mean() -> None:
    """WARM, its warm-up already said (said=1): the mean moved is not said again, the instability is, with the
    move, |1.42 - 1.1333| / 1.1333 = 25.3% (spread_warning M158 printed 101x it: 25.5%). The kept 9 vary by
    a CV of 14.0% (> 10%)."""
    assert spread_warning(WARM, said=1) == (
        "iteration latencies vary 4.0x (1 to 4 ms; coefficient of variation 64.7% over all 10): unstable: "
        "coefficient of variation 14.0% (> 10%) (iteration 0 is warm-up (rule 'warmup'), moving the mean by "
        "25.3%)"
    )


def test_a_measurement_keeps_its_warm_up_through_json() -> None:
    """measure(WARM) drops iteration 0 as warm-up; to_json and from_json keep it (Measurement.from_json M73
    read a key of another name: no warm-up)."""
    m = measure(WARM)
    assert (m.warmup, m.outliers) == ((0,), ())
    back = Measurement.from_json(m.to_json())
    assert back is not None and (back.warmup, back.outliers, back.kept) == ((0,), (), 9)


def test_a_call_recorded_twice_counts_once() -> None:
    """Call 1 written twice, equal in every field (its correlation id included): counted once, said once
    (Trace.__post_init__'s `setattr(self, None, frame)` mutant raised a TypeError here)."""
    trace = make_trace(
        ops=[(0, 10, 1), (20, 30, 2)],
        api=[(0, 5, 1, "cudaLaunchKernel"), (0, 5, 1, "cudaLaunchKernel"), (15, 18, 2, "cudaLaunchKernel")],
    )
    assert trace.api.select("start", "end", "correlation").rows() == [(0, 5, 1), (15, 18, 2)]
    assert [w for w in trace.warnings if "recorded twice" in w] == [
        "1 API calls recorded twice (a second event equal to the first in every field, its correlation id "
        "included) counted once"
    ]


# ------------------------------------------------------------------ iterations


def test_the_sidecar_warm_up_line_names_the_sidecars_own_ranges() -> None:
    """A sidecar that counts its warm-up in its 'step' ranges (meta range 'step', warmup_in_trace); the
    analysis of 'op' ranges drops none and names 'step' (measure_gaps M394 read the meta key 'RANGE': always
    'iteration', which the existing test's sidecar, without a range key, reads too)."""
    ranges, api, ops = [], [], []
    for i in range(3):
        b = 1000 * i
        ranges += [(b, b + 1000, "step"), (b + 50, b + 900, "op", 1)]
        api.append((b + 100, b + 110, i + 1, "cudaLaunchKernel"))
        ops.append((b + 300, b + 500, i + 1))
    trace = make_trace(ranges=ranges, api=api, ops=ops, meta={"range": "step", "warmup_in_trace": True})
    analysis = analyze_iterations(trace, "op", skip=None)
    assert analysis.iterations["index"].to_list() == [0, 1, 2]
    assert [w for w in analysis.warnings if "sidecar" in w] == [
        "the sidecar's warm-up runs are counted in its 'step' ranges, not in these 'op' ones: none dropped "
        "(--skip N drops the first N)"
    ]


def test_the_unsynchronized_line_in_full() -> None:
    """Steps [0, 1000) and [1000, 2000); their kernels [800, 1200) and [1900, 2300) outlive them. Windows:
    [0, max(1000, 1200)) and [max(1000, 1200), max(2000, 2300)), and the line that says how, word for word
    (measure_gaps M677 lower-cased its 'GPU'; the existing tests compare a part of it)."""
    trace = make_trace(
        ranges=[(0, 1000, "step"), (1000, 2000, "step")],
        api=[(100, 110, 1, "cudaLaunchKernel"), (1100, 1110, 2, "cudaLaunchKernel")],
        ops=[(800, 1200, 1), (1900, 2300, 2)],
    )
    analysis = analyze_iterations(trace, "step")
    assert analysis.iterations.select("index", "window_start_ns", "window_end_ns", "synchronized").rows() == [
        (0, 0, 1200, False),
        (1, 1200, 2300, False),
    ]
    assert [w for w in analysis.warnings if "unsynchronized" in w] == [
        "2 of 2 iterations are unsynchronized (GPU work outlives the range): latency is the steady-state period "
        "max(range end, GPU end) - max(range start, previous GPU end)"
    ]
