"""mutation13: tests that kill the surviving mutants of model.newly_covered / model.union_ns and of
setup_calls.setup_ns_per_iteration (the union of the calls' clipped intervals). Hand-built frames, ns."""

from __future__ import annotations

import polars as pl

from tracekit.analyzers import setup_calls as S
from tracekit.model import newly_covered, union_ns


def _union(starts, ends) -> int:
    return union_ns(pl.Series(starts, dtype=pl.Int64), pl.Series(ends, dtype=pl.Int64))


def test_union_of_overlapping_nested_and_disjoint_intervals() -> None:
    # [0, 10) + [5, 20) overlap: [0, 20) = 20; [30, 40) holds [32, 35): 10; total 30
    assert _union([0, 5, 30, 32], [10, 20, 40, 35]) == 30


def test_union_does_not_need_its_input_in_order() -> None:
    # [20, 40) given before [10, 30): the union [10, 40) is 30 ns
    assert _union([20, 10], [40, 30]) == 30


def test_union_of_nothing_is_zero() -> None:
    assert _union([], []) == 0


def test_union_leaves_out_an_interval_with_a_null_end_point() -> None:
    # [null, 100) has no interval: [10, 20) alone, 10 ns (its end must not cover the rest)
    assert _union([None, 10], [100, 20]) == 10
    assert _union([10, 30], [None, 35]) == 5


def test_union_of_intervals_before_zero() -> None:
    # negative times (a relative clock): [-10, -5) + [-7, -2) = [-10, -2): 8 ns
    assert _union([-10, -7], [-5, -2]) == 8


def test_newly_covered_per_row_and_per_group() -> None:
    frame = pl.DataFrame({"g": [0, 0, 0, 1], "s": [0, 5, 6, 2], "e": [10, 8, 20, 12]})
    # ungrouped (in start order): [0, 10) 10, [2, 12) 2, [5, 8) 0, [6, 20) 8
    ordered = frame.sort("s")
    assert ordered.select(newly_covered("s", "e"))["e"].to_list() == [10, 2, 0, 8]
    # by g: group 1's [2, 12) is covered by none of its group: 10
    by_g = frame.sort("g", "s").select(newly_covered("s", "e", "g"))["e"].to_list()
    assert by_g == [10, 0, 10, 10]


# ------------------------------------------------------------------------------- setup_ns_per_iteration


def _per(calls: dict, iteration: list, windows: dict) -> pl.DataFrame:
    return S.setup_ns_per_iteration(
        pl.DataFrame(calls, schema_overrides={"start": pl.Int64, "end": pl.Int64, "pid": pl.Int64}),
        pl.DataFrame(windows),
        pl.Series(iteration, dtype=pl.Int64),
    )


def test_setup_time_is_a_union_per_iteration_not_across_iterations() -> None:
    # two processes' iterations at the same time: iteration 0 (pid 1) window [0, 100) holds cudaMalloc [10,
    # 50); iteration 1 (pid 2) window [0, 100) holds cudaFree [20, 60): each covers its own 40 ns
    per = _per(
        {"start": [10, 20], "end": [50, 60], "pid": [1, 2], "call": ["cudaMalloc", "cudaFree"]},
        [0, 1],
        {"iteration": [0, 1], "window_start": [0, 0], "window_end": [100, 100]},
    )
    assert per["setup_ns"].to_list() == [40, 40]


def test_setup_calls_out_of_start_order_cover_their_union() -> None:
    # calls given as [30, 50), [10, 40), [60, 70) in one window [0, 100): union [10, 50) + [60, 70) = 50 ns
    per = _per(
        {
            "start": [30, 10, 60],
            "end": [50, 40, 70],
            "pid": [1, 1, 1],
            "call": ["cudaFree", "cudaMalloc", "cudaFree"],
        },
        [0, 0, 0],
        {"iteration": [0], "window_start": [0], "window_end": [100]},
    )
    assert per["setup_ns"].to_list() == [50]
    assert per["by_call"].to_list() == [[{"call": "cudaFree", "ns": 30}, {"call": "cudaMalloc", "ns": 30}]]


def test_a_setup_call_ending_at_its_window_start_is_not_listed() -> None:
    # cudaMalloc [0, 100) ends where the iteration's window [100, 200) begins: 0 ns in it, not listed beside
    # cudaFree [120, 130)
    per = _per(
        {"start": [0, 120], "end": [100, 130], "pid": [1, 1], "call": ["cudaMalloc", "cudaFree"]},
        [0, 0],
        {"iteration": [0], "window_start": [100], "window_end": [200]},
    )
    assert per["setup_ns"].to_list() == [10]
    assert per["by_call"].to_list() == [[{"call": "cudaFree", "ns": 10}]]


def test_setup_calls_reaching_outside_the_window_are_clipped_before_the_union() -> None:
    # window [100, 200): cudaMalloc [50, 120) counts [100, 120), cudaFree [190, 260) counts [190, 200); and a
    # cudaMalloc [80, 95) of the same iteration (begun in its range, before its window) counts nothing: 30 ns
    per = _per(
        {
            "start": [50, 190, 80],
            "end": [120, 260, 95],
            "pid": [1, 1, 1],
            "call": ["cudaMalloc", "cudaFree", "cudaMalloc"],
        },
        [0, 0, 0],
        {"iteration": [0], "window_start": [100], "window_end": [200]},
    )
    assert per["setup_ns"].to_list() == [30]
