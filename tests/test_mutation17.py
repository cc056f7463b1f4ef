"""Round 17's mutation tests (mutation17): each case kills a mutant that survived the existing tests of
analyzers/profiler_cost.py, analyzers/recommendations.py or analyzers/stability.py (notes/mutation17.md).
Every input is hand-built; the expected numbers are worked out beside each case."""

from __future__ import annotations

from tracekit.analyzers.profiler_cost import findings


def test_a_run_faster_than_1_ms_is_still_checked_against_its_untraced_latency() -> None:
    # 0.5 ms traced against 0.2 ms untraced: 0.5 / 0.2 = 2.50x, 0.300 ms per iteration (kills `latency_ms > 1`)
    warnings, notes, doubt = findings(0.5, None, "framework", 0.5, {"median": 0.2}, "nsys")
    assert warnings == [
        "nsys slowed this run 2.50x: median latency 0.500 ms traced against 0.200 ms untraced (the same "
        "configuration timed without a profiler, run.json): the framework overhead shown includes nsys's own "
        "cost, about 0.300 ms per iteration"
    ]
    assert notes == [] and doubt is None


def test_busy_exactly_at_the_threshold_of_the_untraced_latency_makes_the_verdict_uncertain() -> None:
    # 4 ms traced, 2 ms untraced (2.00x); busy 1 ms / 2 ms = 0.5 exactly, the 50% threshold: "at or above"
    # (kills `>`, which gave the note "framework-bound without ... too")
    warnings, notes, doubt = findings(4.0, 1.0, "framework", 0.5, {"p50": 2.0})
    assert notes == []
    assert doubt == (
        "verdict uncertain: without the profiler, the GPU busy time traced here (1.000 ms, median) is 50.0% of the "
        "untraced median latency (2.000 ms), at or above the 50% threshold: the run may be compute-bound, and "
        "framework-bound only under the profiler"
    )
    assert warnings == [warnings[0], doubt]
    # 1 ns of busy less (0.999999 ms): 49.99995%, below: the note
    _, notes, doubt = findings(4.0, 0.999999, "framework", 0.5, {"p50": 2.0})
    assert doubt is None and notes[0].endswith(
        "is 50.0% of the untraced median latency (2.000 ms), below the 50% threshold"
    )
