"""Exact outputs of this round's ONNX Runtime run functions in ``analyzers/iterations.py``
(``generation_classes``, ``_dims``, ``run_shape_of``, ``shared_iterations``): the tests that kill the mutants
the round-10 mutation run left. Labelled synthetic inputs (run-shape sequences, ranges and op times written by
hand)."""

from __future__ import annotations

import polars as pl

from tracekit.analyzers.iterations import (
    RUN_SHAPES,
    _dims,
    generation_classes,
    run_shape_of,
    shared_iterations,
)
from tracekit.model import Trace

GEN = "[1,7,64]"
MID = "[1,3,64]"
TOK = "[1,1,64]"


def test_dims_of_shape_texts() -> None:
    assert _dims("[1,7,64]") == (1, 7, 64)
    assert _dims(" [ 2 , 3 ] ") == (2, 3)
    assert _dims("[]") == ()
    assert _dims("[ ]") == ()
    assert _dims("5") == (5,)
    assert _dims("[1,,7]") is None
    assert _dims("[1,N,64]") is None


def test_decode_runs_must_be_more_than_half() -> None:
    """2 token runs of 4 (exactly half): no loop; 3 of 5, the last run a prompt: a loop."""
    assert generation_classes([GEN, TOK, GEN, TOK]) is None
    assert generation_classes([GEN, TOK, TOK, TOK, GEN]) == {GEN: "prefill", TOK: "decode"}


def test_a_prompt_run_followed_by_a_prompt_run_is_no_loop() -> None:
    assert generation_classes([GEN, GEN, TOK, TOK, TOK, TOK]) is None


def test_several_prompt_lengths_and_unknown_runs() -> None:
    assert generation_classes([None, GEN, TOK, TOK, MID, TOK, None, TOK]) == {
        GEN: "prefill",
        TOK: "decode",
        MID: "prefill",
    }
    # a 2-token prompt is a prompt
    assert generation_classes(["[1,2,64]", TOK, TOK]) == {"[1,2,64]": "prefill", TOK: "decode"}


def test_shapes_that_are_no_prompt_and_token_pair() -> None:
    # one shape only (and unknowns)
    assert generation_classes([TOK, None, TOK]) is None
    assert generation_classes([]) is None
    # other ranks
    assert generation_classes([GEN, "[1,1]", "[1,1]", "[1,1]"]) is None
    # two axes differ
    assert generation_classes([GEN, "[1,1,32]", "[1,1,32]", "[1,1,32]"]) is None
    # 0 tokens where the other has 1
    assert generation_classes(["[1,0,64]", TOK, TOK, TOK]) is None
    # the would-be token shape differs from one shape on one axis, from another on another
    a, b, c = "[1,1,1]", "[1,5,1]", "[1,1,5]"
    assert generation_classes([b, a, a, c, a, a]) is None
    # an unreadable shape among them
    assert generation_classes([GEN, TOK, TOK, "[1,x,64]"]) is None


def _ranges(rows: list[tuple[int, int | None, int | None, int, int]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "iteration": [r[0] for r in rows],
            "pid": [r[1] for r in rows],
            "thread": [r[2] for r in rows],
            "range_start": [r[3] for r in rows],
            "range_end": [r[4] for r in rows],
        },
        schema={
            "iteration": pl.Int64,
            "pid": pl.Int32,
            "thread": pl.Int32,
            "range_start": pl.Int64,
            "range_end": pl.Int64,
        },
    )


def test_run_shape_of_matches_each_range_by_process_thread_and_start() -> None:
    ranges = _ranges(
        [(0, 1, 10, 100, 200), (1, 1, 11, 100, 200), (2, 1, 10, 300, 400), (3, None, 10, 500, 600)]
    )
    runs = [
        [1, 11, 100, 1],
        [1, 10, 100, 0],
        [1, 10, 100, 1],  # the same run again: the first is kept
        [1, 10, 300, None],
        [None, 10, 500, 1],
        [2, 10, 100, 0],
    ]
    trace = Trace(meta={RUN_SHAPES: {"shapes": [GEN, TOK], "runs": runs}})
    out = run_shape_of(trace, ranges)
    assert out is not None
    assert out.columns == ["iteration", "shape"]
    assert out.rows() == [(0, GEN), (1, TOK), (2, None), (3, TOK)]


def test_run_shape_of_without_what_it_needs_is_none() -> None:
    ranges = _ranges([(0, 1, 10, 100, 200)])
    good = {"shapes": [GEN], "runs": [[1, 10, 100, 0]]}
    assert run_shape_of(Trace(meta={RUN_SHAPES: good}), ranges) is not None
    assert run_shape_of(Trace(meta={RUN_SHAPES: good}), ranges.drop("thread")) is None
    assert run_shape_of(Trace(meta={RUN_SHAPES: good}), ranges.drop("pid")) is None
    assert run_shape_of(Trace(meta={RUN_SHAPES: good}), ranges.drop("range_start")) is None
    assert run_shape_of(Trace(meta={}), ranges) is None
    assert run_shape_of(Trace(meta={RUN_SHAPES: [good]}), ranges) is None
    assert run_shape_of(Trace(meta={RUN_SHAPES: {"shapes": [GEN], "runs": []}}), ranges) is None
    assert run_shape_of(Trace(meta={RUN_SHAPES: {"shapes": "x", "runs": good["runs"]}}), ranges) is None
    assert run_shape_of(Trace(meta={RUN_SHAPES: {"shapes": [GEN], "runs": "x"}}), ranges) is None
    assert run_shape_of(Trace(meta={RUN_SHAPES: {"runs": good["runs"]}}), ranges) is None


def _ops(rows: list[tuple[int | None, int | None, int | None]]) -> tuple[pl.Series, pl.Series, pl.Series]:
    return (
        pl.Series("t", [r[0] for r in rows], dtype=pl.Int64),
        pl.Series("pid", [r[1] for r in rows], dtype=pl.Int64),
        pl.Series("thread", [r[2] for r in rows], dtype=pl.Int64),
    )


def test_shared_iterations_counts_pool_ops_of_two_open_ranges() -> None:
    """Process 1: runs 0 (thread 10, 0-100) and 1 (thread 11, 50-150) open at once, run 2 (300-400) alone.
    Pool-thread ops (thread 99) or ops without a thread at 50, 60, 90 and one without a pid at 80 are
    held by both open runs; at 20 (run 0 alone), 100 (run 0 just ended), 350 (run 2 alone) by one; an op
    on run 0's own thread (70) is its; process 2's op at 60 (process 2 has one range) is not process 1's."""
    ranges = _ranges([(0, 1, 10, 0, 100), (1, 1, 11, 50, 150), (2, 1, 10, 300, 400), (5, 2, 20, 0, 200)])
    when, pids, threads = _ops(
        [
            (50, 1, 99),
            (60, 1, 99),
            (90, 1, None),
            (80, None, 99),
            (20, 1, 99),
            (100, 1, 99),
            (350, 1, 99),
            (70, 1, 10),
            (60, 2, 99),
            (None, 1, 99),
        ]
    )
    assert shared_iterations(when, pids, threads, ranges) == (4, [0, 1])


def test_shared_iterations_of_a_later_pair() -> None:
    """Runs 0 alone, then 1 and 2 open at once: only 1 and 2 hold the shared op (the held list is of the
    ranges whose span holds a shared time, not all of the process's)."""
    ranges = _ranges([(0, 1, 10, 0, 100), (1, 1, 10, 200, 300), (2, 1, 11, 250, 400)])
    when, pids, threads = _ops([(260, 1, 99), (50, 1, 99), (299, 1, None)])
    assert shared_iterations(when, pids, threads, ranges) == (2, [1, 2])


def test_shared_iterations_none_to_find() -> None:
    when, pids, threads = _ops([(100, 1, 99), (150, 1, 99)])
    # ranges that only touch
    touching = _ranges([(0, 1, 10, 0, 100), (1, 1, 11, 100, 200)])
    assert shared_iterations(when, pids, threads, touching) == (0, [])
    # two processes' ranges overlap in time, each process's do not
    apart = _ranges([(0, 1, 10, 0, 200), (1, 2, 11, 50, 150)])
    assert shared_iterations(when, pids, threads, apart) == (0, [])
    overlapping = _ranges([(0, 1, 10, 0, 200), (1, 1, 11, 50, 180)])
    assert shared_iterations(when, pids, threads, overlapping) == (2, [0, 1])
    # no thread column, synthetic windows, no ranges, no ops
    assert shared_iterations(when, pids, threads, overlapping.drop("thread")) == (0, [])
    synthetic = overlapping.with_columns(pl.lit(0, pl.Int64).alias("gpu_start"))
    assert shared_iterations(when, pids, threads, synthetic) == (0, [])
    assert shared_iterations(when, pids, threads, overlapping.clear()) == (0, [])
    empty = _ops([])
    assert shared_iterations(*empty, overlapping) == (0, [])
    # every op on a thread that runs ranges
    own = _ops([(100, 1, 10), (150, 1, 11)])
    assert shared_iterations(*own, overlapping) == (0, [])
