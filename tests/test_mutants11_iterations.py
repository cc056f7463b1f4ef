"""Found by the round-11 mutation check of ``iterations._with_run_shapes`` (mutant 136, its per-shape
``group_by`` made unordered, survived the direct tests): the "half their time" rule of the input-shape doubt
added the shapes' times in milliseconds as floats, so at exactly half the answer depended on the order the
shapes first appear in. The runs are SYNTHETIC (hand-built ranges and per-run figures; the truth is the
integer nanoseconds: 300,000 of 600,000 ns is exactly half). Fixed by diff11 in a6bf16b (the shapes' times
summed in integer ns); the test was xfail(strict=True) until then."""

from __future__ import annotations

from types import SimpleNamespace

import polars as pl

from tracekit.analyzers.iterations import RUN_SHAPES, _with_run_shapes

SHAPES = ["[1,7]", "[2,7]", "[4,7]"]
#: shape [1,7]: 1 run of 0.3 ms at 20% (framework-bound); [2,7]: 2 runs of 0.05 ms at 90%; [4,7]: 2 runs of
#: 0.1 ms at 90% (compute-bound, as the headline). [1,7] is 1 of 5 runs (under STEP_CLASS_SHARE, 25%) and
#: 0.3 of 0.6 ms: exactly half the runs' time, which the rule counts (">= half").
RUNS = {"[1,7]": [(0.3, 0.2)], "[2,7]": [(0.05, 0.9)] * 2, "[4,7]": [(0.1, 0.9)] * 2}


def _shapes_of(order: list[str]) -> tuple[list[str], list[str]]:
    runs = [(s, lat, util) for s in order for lat, util in RUNS[s]]
    n = len(runs)
    meta = {
        RUN_SHAPES: {
            "shapes": SHAPES,
            "runs": [[1, 1, 1000 * i, SHAPES.index(s)] for i, (s, _, _) in enumerate(runs)],
        }
    }
    ranges = pl.DataFrame(
        {
            "iteration": range(n),
            "pid": [1] * n,
            "thread": [1] * n,
            "range_start": [1000 * i for i in range(n)],
        }
    )
    frame = pl.DataFrame(
        {"index": range(n), "latency_ms": [r[1] for r in runs], "gpu_utilization": [r[2] for r in runs]}
    )
    _, classes, notes, warnings, doubts = _with_run_shapes(SimpleNamespace(meta=meta), ranges, frame, 0.5)
    assert classes is None and notes == []
    return warnings, doubts


def test_a_shape_of_exactly_half_the_time_with_another_verdict_is_a_doubt() -> None:
    # shapes first seen in the order [1,7], [4,7], [2,7]: 0.3 + 0.2 + 0.1 == 0.6 in floats
    warnings, doubts = _shapes_of(["[1,7]", "[4,7]", "[2,7]"])
    assert warnings == []
    assert len(doubts) == 1
    assert doubts[0].startswith("verdict uncertain: the 5 analyzed runs are of 3 input shapes")
    assert doubts[0].endswith(
        "the shapes get opposite verdicts from their own median utilization, so the median over all runs says "
        "one shape's, or a mix of them"
    )


def test_the_half_time_doubt_does_not_depend_on_the_order_shapes_appear_in() -> None:
    # the same runs, shapes first seen in the order [1,7], [2,7], [4,7]: 0.3 + 0.1 + 0.2 in floats
    warnings, doubts = _shapes_of(["[1,7]", "[2,7]", "[4,7]"])
    assert warnings == []
    assert len(doubts) == 1
