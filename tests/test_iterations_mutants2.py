"""Mutants of ``analyzers/iterations.py``'s ``_slow_start_warning`` (the half/flat rule of 36f610d) that
tests/test_stability.py let live: hand-built latencies, exact texts and the iterations named."""

from __future__ import annotations

import polars as pl

from tracekit.analyzers.iterations import _slow_start_warning

FLAT_CAUSE = (
    "the whole first half of the run, at one level: warm-up left in the trace and a change of level during the "
    "run (GPU clocks, host load, another process) cannot be told apart"
)
WARM_CAUSE = "warm-up in the trace (lazy loading, compilation, cold caches)"


def _said(latency_ms: list[float], first: int = 4, **kw) -> tuple[list[str], list[int]]:
    frame = pl.DataFrame(
        {
            "latency_ns": [round(v * 1e6) for v in latency_ms],
            "iteration": list(range(first, first + len(latency_ms))),
        }
    )
    return _slow_start_warning(frame, "step", **kw)


def test_three_slow_iterations_are_listed_without_an_ellipsis() -> None:
    assert _said([3.0, 2.5, 2.2] + [1.0] * 7) == (
        [
            "the first 3 of 10 'step' iterations are a slow start (3.000, 2.500, 2.200 ms, against a median of "
            f"1.000 ms for the rest): {WARM_CAUSE}; the means, the medians and the verdict include "
            "them (mean latency 1.470 ms, 1.000 without them; median 1.000 ms, 1.000 without them): --skip 3 "
            "drops them"
        ],
        [4, 5, 6],
    )


def test_four_slow_iterations_show_three_and_an_ellipsis() -> None:
    assert _said([3.0, 2.5, 2.2, 2.0] + [1.0] * 6) == (
        [
            "the first 4 of 10 'step' iterations are a slow start (3.000, 2.500, 2.200, ... ms, against a median "
            f"of 1.000 ms for the rest): {WARM_CAUSE}; the means, the medians and the verdict include "
            "them (mean latency 1.570 ms, 1.000 without them; median 1.000 ms, 1.000 without them): --skip 4 "
            "drops them"
        ],
        [4, 5, 6, 7],
    )


def test_two_slow_iterations_name_exactly_their_iterations() -> None:
    assert _said([4.0, 3.0] + [1.0] * 8, first=10) == (
        [
            "the first 2 of 10 'step' iterations are a slow start (4.000, 3.000 ms, against a median of 1.000 ms "
            f"for the rest): {WARM_CAUSE}; the means, the medians and the verdict include them (mean latency "
            "1.500 ms, 1.000 without them; median 1.000 ms, 1.000 without them): --skip 2 drops them"
        ],
        [10, 11],
    )


def test_an_odd_run_whose_slow_start_is_its_first_half_moves_the_medians() -> None:
    # 5 of 11: len // 2 iterations, the most the warm-up rule can name (len / 2 would be 5.5)
    said, named = _said([2.0] * 5 + [1.0] * 6)
    assert named == [4, 5, 6, 7, 8]
    assert said == [
        "the first 5 of 11 'step' iterations are a slow start (2.000, 2.000, 2.000, ... ms, against a median of "
        f"1.000 ms for the rest): {FLAT_CAUSE}; the means, the medians and the verdict include them (mean latency 1.455 ms, "
        "1.000 without them; median 1.000 ms, 1.000 without them): --skip 5 drops them, a longer run would tell "
        "which"
    ]


def test_four_of_eleven_is_not_the_first_half() -> None:
    said, named = _said([2.0] * 4 + [1.0] * 7)
    assert named == [4, 5, 6, 7]
    assert said == [
        "the first 4 of 11 'step' iterations are a slow start (2.000, 2.000, 2.000, ... ms, against a median of "
        f"1.000 ms for the rest): {WARM_CAUSE}; the means, the medians and the verdict include "
        "them (mean latency 1.364 ms, 1.000 without them; median 1.000 ms, 1.000 without them): --skip 4 "
        "drops them"
    ]


def test_a_first_iteration_at_exactly_level_flat_times_the_half_median_is_flat() -> None:
    # 0.88 ms against the slow half's median 0.8 ms: exactly LEVEL_FLAT (1.1) times it, still one level (ns
    # chosen so that polars' ns / 1e6 and 1.1 * 0.8 are the same float; 1.1 / 1.0 are not)
    said, _ = _said([0.88, 0.8, 0.8, 0.8, 0.8] + [0.4] * 5)
    assert said == [
        "the first 5 of 10 'step' iterations are a slow start (0.880, 0.800, 0.800, ... ms, against a median of "
        f"0.400 ms for the rest): {FLAT_CAUSE}; the means, the medians and the verdict include them (mean latency 0.608 ms, "
        "0.400 without them; median 0.600 ms, 0.400 without them): --skip 5 drops them, a longer run would tell "
        "which"
    ]
    # 0.89 ms is over it: a cold first step, warm-up
    said, _ = _said([0.89, 0.8, 0.8, 0.8, 0.8] + [0.4] * 5)
    assert said == [
        "the first 5 of 10 'step' iterations are a slow start (0.890, 0.800, 0.800, ... ms, against a median of "
        f"0.400 ms for the rest): {WARM_CAUSE}; the means, the medians and the verdict include them (mean latency 0.609 ms, "
        "0.400 without them; median 0.600 ms, 0.400 without them): --skip 5 drops them"
    ]


def test_the_flat_rule_reads_the_median_of_the_slow_half_only() -> None:
    # slow half 1.6, 1.5, 1.5, 1.4, 1.4 (median 1.5: 1.6 is within 1.1x of it) before five of 0.5 ms; with
    # the next value (0.5) or without the first, its median would be 1.45 and 1.6 over 1.1x of it
    said, named = _said([1.6, 1.5, 1.5, 1.4, 1.4] + [0.5] * 5)
    assert named == [4, 5, 6, 7, 8]
    assert FLAT_CAUSE in said[0]
    assert "mean latency 0.990 ms, 0.500 without them; median 0.950 ms, 0.500 without them" in said[0]


def test_no_slow_start_says_nothing() -> None:
    assert _said([1.0] * 10) == ([], [])


def test_a_trace_without_ranges_skips_the_step_class_rule() -> None:
    from tests.builders import make_trace

    trace = make_trace(ranges=[(0, 10, "iteration")], api=[], ops=[])
    said, named = _said([4.0, 3.0] + [1.0] * 8, trace=trace)
    assert named == [4, 5] and said[0].startswith("the first 2 of 10 'step' iterations are a slow start")


def test_latencies_of_seconds_are_read_in_ms_exactly() -> None:
    # ns / 1e6: a 4 s first iteration reads 4000.000 ms (a divisor off by one part in a million: 3999.996)
    assert _said([4000.0, 3000.0] + [1000.0] * 8)[0] == [
        "the first 2 of 10 'step' iterations are a slow start (4000.000, 3000.000 ms, against a median of "
        f"1000.000 ms for the rest): {WARM_CAUSE}; the means, the medians and the verdict include them (mean "
        "latency 1500.000 ms, 1000.000 without them; median 1000.000 ms, 1000.000 without them): --skip 2 drops "
        "them"
    ]


def test_a_leading_prefill_step_is_no_slow_start(tmp_path) -> None:
    # the step-class rule runs when both the trace and its ranges are given (tests/test_fuzz5_serving.py's
    # SYNTHETIC serving steps: one 10 ms prefill step before nine decode steps)
    import tracekit
    from tests.test_fuzz5_serving import _serving_steps

    a = tracekit.analyze(_serving_steps(tmp_path, "P" + "D" * 9))
    assert not any("slow start" in w for w in a.warnings), a.warnings
