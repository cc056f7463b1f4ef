"""The (pid, correlation) key and the outermost-call rule shared by the readers and the iteration analyzer."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from tracekit.analyzers.iterations import _match_calls
from tracekit.calls import (
    CORRELATION_LIMIT,
    PID_LIMIT,
    collapse_duplicate_calls,
    outermost_calls,
    outermost_of_keys,
    outermost_of_pairs,
    pair_key,
    pair_keys_fit,
)

SCHEMA = {"start": pl.Int64, "end": pl.Int64, "pid": pl.Int64, "correlation": pl.Int64, "row": pl.Int64}


def calls(rows: list[tuple]) -> pl.DataFrame:
    """(start, end, pid, correlation) rows, numbered in ``row``."""
    return pl.DataFrame([(*r, i) for i, r in enumerate(rows)], schema=list(SCHEMA.items()), orient="row")


def test_outermost_is_earliest_start_then_longest_then_earlier_row():
    frame = calls(
        [
            (10, 20, 1, 7),  # row 0: inner (starts later)
            (5, 20, 1, 7),  # row 1: shorter than row 2, same start
            (5, 30, 1, 7),  # row 2: outermost of (1, 7)
            (5, 30, 1, 8),  # row 3: the only call of (1, 8)
            (0, 9, 2, 7),  # row 4: same correlation, other process
            (0, 9, 2, 7),  # row 5: full tie with row 4: the earlier row wins
        ]
    )
    keyed = outermost_calls(frame)
    assert keyed.get_column("row").to_list() == [2, 3, 4]  # key order: (1, 7), (1, 8), (2, 7)
    assert keyed.get_column("key").to_list() == [
        CORRELATION_LIMIT + 7,
        CORRELATION_LIMIT + 8,
        2 * CORRELATION_LIMIT + 7,
    ]
    hashed = outermost_of_pairs(frame)
    assert hashed.get_column("row").to_list() == [4, 2, 3]  # outermost-first order
    assert "key" not in hashed.columns


def test_pairs_that_do_not_fit_one_key_are_hashed():
    frame = calls([(0, 5, PID_LIMIT, 1), (0, 9, PID_LIMIT, 1), (3, 4, 1, CORRELATION_LIMIT)])
    assert not pair_keys_fit(frame)
    assert sorted(outermost_calls(frame).get_column("row").to_list()) == [1, 2]
    assert not pair_keys_fit(calls([(0, 1, -1, 1)]))
    assert pair_keys_fit(calls([(0, 1, None, None)]), calls([]))  # nulls and empty frames fit


def test_collapse_keeps_uncorrelated_rows_and_orders_by_time():
    api = calls(
        [
            (100, 110, 1, 5),  # 0: inner duplicate of row 1: dropped
            (100, 120, 1, 5),  # 1: kept
            (100, 120, 1, 0),  # 2: correlation 0: never collapsed
            (100, 120, 1, 0),  # 3: kept too
            (50, 60, 1, None),  # 4: no correlation: kept
            (100, 120, None, 6),  # 5: null pid: a pid like any other (hashed path)
            (90, 130, None, 6),  # 6: outermost of (null, 6)
        ]
    )
    got = collapse_duplicate_calls(api)
    assert got.get_column("row").to_list() == [4, 6, 1, 2, 3]


@st.composite
def call_tables(draw) -> pl.DataFrame:
    n = draw(st.integers(0, 30))
    pids = st.sampled_from([1, 2, 3]) | st.none()
    corrs = st.integers(0, 5) | st.none()
    rows = []
    for _ in range(n):
        start = draw(st.integers(0, 20))
        rows.append((start, start + draw(st.integers(0, 5)), draw(pids), draw(corrs)))
    return calls(rows)


@settings(max_examples=200, deadline=None)
@given(call_tables())
def test_key_path_and_hash_path_pick_the_same_calls(frame):
    complete = frame.filter(pl.col("pid").is_not_null() & pl.col("correlation").is_not_null())
    by_key = outermost_of_keys(complete.with_columns(pair_key())).get_column("row").sort()
    by_pair = outermost_of_pairs(complete).get_column("row").sort()
    assert by_key.to_list() == by_pair.to_list()
    # and one row per pair, the outermost: no kept call has a same-pair call that encloses it better
    kept = complete.filter(pl.col("row").is_in(by_key.implode()))
    assert kept.select("pid", "correlation").is_unique().all()
    best = (
        complete.sort(["start", "end", "row"], descending=[False, True, False])
        .group_by("pid", "correlation", maintain_order=True)
        .first()
    )
    assert sorted(best.get_column("row").to_list()) == by_key.to_list()


@settings(max_examples=100, deadline=None)
@given(call_tables(), call_tables())
def test_ops_are_matched_to_the_call_the_reader_keeps(api, ops):
    """The analyzer's launching call of an op is the call of its (pid, correlation) that the reader's
    collapse keeps: one rule, one answer."""
    api = api.filter(pl.col("correlation") != 0)
    call, frame = _match_calls(ops.select("pid", "correlation"), api)
    kept = collapse_duplicate_calls(api).filter(
        pl.col("pid").is_not_null() & pl.col("correlation").is_not_null()
    )
    expected = ops.join(kept, on=["pid", "correlation"], how="left", maintain_order="left")
    got = pl.select(frame.get_column("call_start").gather(call)).to_series()
    assert got.to_list() == expected.get_column("start_right").to_list()
