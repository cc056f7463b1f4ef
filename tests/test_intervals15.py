"""intervals15: ``model.merged_intervals``, the one union of [start, end) intervals per group (with a rounding
tolerance), against a brute-force reference, and its callers (``iterations._busy_segments``,
``communication.comm_per_iteration``) on hand-built inputs whose numbers are known. Synthetic frames, ns."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracekit.analyzers import communication
from tracekit.analyzers import iterations as I
from tracekit.analyzers import ranges as R
from tracekit.model import merged_intervals, newly_covered, union_ns

INT64_MAX = 2**63 - 1


def _frame(rows: list[tuple], columns: tuple[str, ...] = ("g", "start", "end")) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={c: pl.Int64 for c in columns}, orient="row")


# ------------------------------------------------------------------------------------ brute-force reference


def _reference(rows: list[tuple[int | None, int, int]], tolerance: int) -> list[tuple[int | None, int, int]]:
    """Per group: the intervals joined into components, two intervals being joined when the gap between them
    (later start less earlier end; overlapping, nested or touching: <= 0) is at most ``tolerance``, then each
    component's (group, smallest start, largest end), sorted (None first, as polars sorts nulls)."""
    out = []
    for group in {g for g, _, _ in rows}:
        items = [(s, e) for g, s, e in rows if g == group]
        parent = list(range(len(items)))

        def find(i: int, parent: list[int] = parent) -> int:
            while parent[i] != i:
                i = parent[i]
            return i

        for i, (si, ei) in enumerate(items):
            for j, (sj, ej) in enumerate(items[:i]):
                if max(si, sj) - min(ei, ej) <= tolerance:
                    parent[find(i)] = find(j)
        components: dict[int, list[tuple[int, int]]] = {}
        for i, item in enumerate(items):
            components.setdefault(find(i), []).append(item)
        out += [(group, min(s for s, _ in c), max(e for _, e in c)) for c in components.values()]
    return sorted(out, key=lambda r: (r[0] is not None, r[0] or 0, r[1]))


def _merged_rows(rows: list[tuple], tolerance: int, by: tuple[str, ...] = ("g",)) -> list[tuple]:
    return merged_intervals(_frame(rows), by=by, tolerance=tolerance).rows()


_GROUP = st.sampled_from([None, 0, 1, 2])
_ROW = st.tuples(_GROUP, st.integers(-40, 40), st.integers(0, 25)).map(lambda r: (r[0], r[1], r[1] + r[2]))


@st.composite
def _rows(draw: st.DrawFn) -> list[tuple[int | None, int, int]]:
    """Rows of up to 4 groups; with ``apart``, each group far after the previous one in time (the one-scan
    path), else groups overlapping in time (the per-group path)."""
    rows = draw(st.lists(_ROW, max_size=25))
    if draw(st.booleans()):  # groups one after another: group g moved to g * 1000 (None first)
        rows = [
            (g, s + 1000 * (-1 if g is None else g), e + 1000 * (-1 if g is None else g)) for g, s, e in rows
        ]
    return rows


@settings(max_examples=300, deadline=None)
@given(rows=_rows(), tolerance=st.integers(0, 4))
def test_merged_intervals_are_the_components_of_the_brute_force_reference(rows: list, tolerance: int) -> None:
    assert _merged_rows(rows, tolerance) == _reference(rows, tolerance)


@settings(max_examples=200, deadline=None)
@given(rows=_rows(), tolerance=st.integers(0, 4), seed=st.randoms(use_true_random=False))
def test_merged_intervals_do_not_depend_on_the_input_order(rows: list, tolerance: int, seed) -> None:
    shuffled = list(rows)
    seed.shuffle(shuffled)
    assert _merged_rows(shuffled, tolerance) == _merged_rows(sorted(rows, key=repr), tolerance)


@settings(max_examples=200, deadline=None)
@given(rows=_rows())
def test_with_no_tolerance_the_lengths_sum_to_the_union(rows: list) -> None:
    merged = _merged_rows(rows, 0)
    for group in {g for g, _, _ in rows}:
        points = {t for g, s, e in rows if g == group for t in range(s, e)}  # the union, ns by ns
        lengths = sum(e - s for g, s, e in merged if g == group)
        assert lengths == len(points)
        own = [(s, e) for g, s, e in rows if g == group]
        assert union_ns(pl.Series([s for s, _ in own]), pl.Series([e for _, e in own])) == len(points)
    # newly_covered, summed per group, says the same
    frame = _frame(rows).sort("g", "start")
    per_group = frame.group_by("g").agg(newly_covered("start", "end").sum().alias("ns")).rows()
    assert dict(per_group) == {
        g: len({t for h, s, e in rows if h == g for t in range(s, e)}) for g in {g for g, _, _ in rows}
    }


@settings(max_examples=200, deadline=None)
@given(rows=_rows(), tolerance=st.integers(0, 4))
def test_merged_intervals_are_disjoint_apart_and_hold_every_interval_once(rows: list, tolerance: int) -> None:
    merged = _merged_rows(rows, tolerance)
    for (g0, _, e0), (g1, s1, _) in zip(merged, merged[1:], strict=False):
        if g0 == g1:
            assert s1 > e0 + tolerance  # more than the tolerance apart, in start order
    for g, s, e in rows:
        holders = [m for m in merged if m[0] == g and m[1] <= s and e <= m[2]]
        assert len(holders) == 1


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 30), st.integers(0, 9))))
def test_merged_intervals_by_two_columns(rows: list) -> None:
    frame = pl.DataFrame(
        [(a, b, s, s + n) for a, b, s, n in rows],
        schema={"a": pl.Int64, "b": pl.Int64, "start": pl.Int64, "end": pl.Int64},
        orient="row",
    )
    got = merged_intervals(frame, by=["a", "b"]).rows()
    expected = _reference([((a, b), s, s + n) for a, b, s, n in rows], 0)
    assert [((a, b), s, e) for a, b, s, e in got] == sorted(expected)


# ------------------------------------------------------------------------------------------ exact cases


def test_overlapping_nested_touching_and_apart() -> None:
    rows = [(0, 0, 10), (0, 2, 5), (0, 10, 12), (0, 20, 25), (0, 21, 30)]
    # [0, 10) holds [2, 5), touches [10, 12): [0, 12); [20, 25) and [21, 30) overlap: [20, 30)
    assert _merged_rows(rows, 0) == [(0, 0, 12), (0, 20, 30)]


def test_the_tolerance_joins_gaps_up_to_it_and_chains() -> None:
    rows = [(0, 0, 10), (0, 11, 12), (0, 13, 20), (0, 22, 23)]
    assert _merged_rows(rows, 0) == [(0, 0, 10), (0, 11, 12), (0, 13, 20), (0, 22, 23)]
    # gaps of 1, 1, 2 ns: with 1 ns the first three are one (chained), the 2-ns gap stays
    assert _merged_rows(rows, 1) == [(0, 0, 20), (0, 22, 23)]
    assert _merged_rows(rows, 2) == [(0, 0, 23)]


def test_ties_on_the_start_keep_the_longest_end() -> None:
    rows = [(0, 5, 6), (0, 5, 9), (0, 5, 7)]
    assert _merged_rows(rows, 0) == [(0, 5, 9)]


def test_an_interval_of_no_length_is_kept_and_joins_what_is_near_it() -> None:
    rows = [(0, 0, 2), (0, 3, 3), (0, 4, 6), (0, 10, 10)]
    assert _merged_rows(rows, 0) == [(0, 0, 2), (0, 3, 3), (0, 4, 6), (0, 10, 10)]
    # 1 ns: [0, 2), the instant 3 and [4, 6) are one; 10 is 4 ns from them
    assert _merged_rows(rows, 1) == [(0, 0, 6), (0, 10, 10)]


def test_a_group_that_begins_before_an_earlier_group_ends_has_its_own_running_maximum() -> None:
    # group 0's [0, 100) must not reach into group 1: its [10, 20) and [30, 40) stay apart
    rows = [(0, 0, 100), (1, 10, 20), (1, 30, 40)]
    assert _merged_rows(rows, 0) == [(0, 0, 100), (1, 10, 20), (1, 30, 40)]
    assert _merged_rows(rows, 9) == [(0, 0, 100), (1, 10, 20), (1, 30, 40)]
    assert _merged_rows(rows, 10) == [(0, 0, 100), (1, 10, 40)]


def test_a_null_group_is_a_group_and_null_end_points_are_left_out() -> None:
    rows = [(None, 0, 5), (None, 5, 8), (0, 1, 2), (0, None, 50), (0, 40, None), (1, 3, 4)]
    assert _merged_rows(rows, 0) == [(None, 0, 8), (0, 1, 2), (1, 3, 4)]


def test_without_groups_the_whole_frame_is_one() -> None:
    frame = _frame([(0, 0, 10), (1, 5, 20), (2, 30, 31)])
    out = merged_intervals(frame, tolerance=0)
    assert out.columns == ["start", "end"]
    assert out.rows() == [(0, 20), (30, 31)]


def test_other_column_names_and_their_types_are_kept() -> None:
    frame = pl.DataFrame(
        {"it": [1, 1, 0], "s": [5, 0, 0], "e": [7, 6, 3]},
        schema={"it": pl.Int32, "s": pl.Int64, "e": pl.Int64},
    )
    out = merged_intervals(frame, "s", "e", by=["it"])
    assert out.schema == pl.Schema({"it": pl.Int32, "s": pl.Int64, "e": pl.Int64})
    assert out.rows() == [(0, 0, 3), (1, 0, 7)]


def test_an_empty_frame_gives_an_empty_one_of_its_columns() -> None:
    out = merged_intervals(_frame([]), by=["g"], tolerance=1)
    assert out.is_empty() and out.schema == pl.Schema({"g": pl.Int64, "start": pl.Int64, "end": pl.Int64})
    only_null = merged_intervals(_frame([(0, None, 5), (0, 3, None)]), by=["g"])
    assert only_null.is_empty() and only_null.columns == ["g", "start", "end"]


def test_the_tolerance_does_not_wrap_round_at_the_largest_time() -> None:
    # an end at int64's largest value: end + 1 ns must not wrap to the smallest and split [MAX, MAX) off
    rows = [(0, 0, INT64_MAX), (0, INT64_MAX, INT64_MAX), (1, 0, 5), (1, 7, 9)]
    assert _merged_rows(rows, 1) == [(0, 0, INT64_MAX), (1, 0, 5), (1, 7, 9)]
    assert _merged_rows(rows, 2) == [(0, 0, INT64_MAX), (1, 0, 9)]


def test_a_negative_tolerance_is_refused() -> None:
    with pytest.raises(ValueError, match="tolerance must be >= 0"):
        merged_intervals(_frame([(0, 0, 1)]), by=["g"], tolerance=-1)


# ------------------------------------------------------------------------------------------------ callers


def _windows(spans: list[tuple[int, int]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "iteration": list(range(len(spans))),
            "window_start": [a for a, _ in spans],
            "window_end": [b for _, b in spans],
        },
        schema={"iteration": pl.Int64, "window_start": pl.Int64, "window_end": pl.Int64},
    )


def _ops(rows: list[tuple[int, int | None, int | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows, schema={"iteration": pl.Int64, "start": pl.Int64, "end": pl.Int64}, orient="row"
    )


def _segments(ops: pl.DataFrame, windows: pl.DataFrame) -> list[tuple[int, int, int]]:
    it, start, end = I._busy_segments(ops, windows)
    assert it.flags["SORTED_ASC"]
    return list(zip(it.to_list(), start.to_list(), end.to_list(), strict=True))


def test_busy_segments_of_iterations_one_after_another() -> None:
    windows = _windows([(0, 100), (100, 200)])
    # iteration 0: [5, 20) and [21, 30) are 1 ns apart (rounding: one), [40, 50) apart; a 0-length op is no
    # busy time; an op without an end is none; iteration 1: [90, 120) clipped to [100, 120), [110, 130)
    ops = _ops(
        [(0, 21, 30), (0, 5, 20), (0, 40, 50), (0, 60, 60), (0, 70, None), (1, 110, 130), (1, 90, 120)]
    )
    assert _segments(ops, windows) == [(0, 5, 30), (0, 40, 50), (1, 100, 130)]


def test_busy_segments_of_iterations_whose_windows_overlap() -> None:
    # iteration 0's window [0, 100) holds iteration 1's [10, 60): each iteration's segments are its own
    windows = _windows([(0, 100), (10, 60)])
    ops = _ops([(0, 0, 100), (1, 10, 20), (1, 22, 30), (1, 31, 40)])
    assert _segments(ops, windows) == [(0, 0, 100), (1, 10, 20), (1, 22, 40)]


def _comm_ops(rows: list[tuple[int, int, int, int, str]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={
            "iteration": pl.Int64,
            "device": pl.Int32,
            "start": pl.Int64,
            "end": pl.Int64,
            "name": pl.String,
        },
        orient="row",
    ).with_columns(pl.lit("kernel").alias("kind"))


def test_communication_exposed_through_merged_compute_and_collectives() -> None:
    ops = _comm_ops(
        [
            # device 0: all-reduces [0, 1000) and [1000, 1500) (touching: one), compute [200, 400) and
            # [300, 700) (one: [200, 700)): exposed [0, 200) + [700, 1500) = 1000 ns
            (0, 0, 0, 1000, "ncclKernel_AllReduce_RING_LL_Sum_float"),
            (0, 0, 1000, 1500, "ncclKernel_AllReduce_RING_LL_Sum_float"),
            (0, 0, 200, 400, "gemm"),
            (0, 0, 300, 700, "gemm"),
            # device 1, same iteration: all-reduce [100, 1100) under compute [0, 2000): hidden
            (0, 1, 100, 1100, "ncclKernel_AllReduce_RING_LL_Sum_float"),
            (0, 1, 0, 2000, "gemm"),
        ]
    )
    out = communication.comm_per_iteration(ops)
    # comm: the union over both devices [0, 1500) = 1500 ns; exposed: device 0's 1000 ns
    assert out.rows() == [(0, 0.0015, 0.001)]


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.integers(0, 3000), st.integers(0, 400), st.integers(0, 50)), min_size=1, max_size=20
    ),
    threshold_us=st.sampled_from([0, 0.001, 0.1, 0.25]),
)
def test_idle_split_cuts_where_the_merged_intervals_do(rows: list, threshold_us: float) -> None:
    # ranges.idle_split (--split-idle; at 0 ms: _windows_against_ranges' busy stretches before) groups the ops by
    # the rule of merged_intervals with the threshold as tolerance: the same device spans
    ops = pl.DataFrame(
        [(s - back, s, s + n) for s, n, back in rows],
        schema={"launch": pl.Int64, "start": pl.Int64, "end": pl.Int64},
        orient="row",
    )
    windows = R.idle_split(ops, threshold_us / 1000)
    merged = merged_intervals(ops, tolerance=round(threshold_us * 1000))
    assert windows.select("gpu_start", "gpu_end").rows() == merged.rows()
    assert windows.get_column("ops").sum() == ops.height
