"""mutation13: tests that kill the surviving mutants of today's iterations.py changes (the longest gaps'
'host was in', --skip per process, device work before its window). Every trace is hand-built (synthetic,
meta says so); times in integer ns.

The base case (docs13's): one iteration [0, 10000) launching two kernels, [1000, 2000) and [5000, 6000): the
inner gap is [2000, 5000), probed at 2001 ns.
"""

from __future__ import annotations

import polars as pl

from tests.builders import make_trace
from tracekit.analyzers.iterations import (
    EARLY_WORK_MIN_NS,
    _work_before_windows,
    analyze_iterations,
    leading_iterations,
)

SYNTHETIC = {"path": "mutants13_synthetic", "synthetic": True}
API_PT = ("start", "end", "correlation", "name", "pid", "thread")
OP_PT = ("start", "end", "correlation", "stream", "kind", "device", "pid")
RANGE_PT = ("start", "end", "name", "depth", "domain", "pid", "thread")
LAUNCHES = [(100, 200, 1, "cudaLaunchKernel", 1, 1), (300, 400, 2, "cudaLaunchKernel", 1, 1)]
OPS = [(1000, 2000, 1, 7, "kernel", 0, 1), (5000, 6000, 2, 7, "kernel", 0, 1)]


def _context_at_inner_gap(extra_api=(), ranges=None) -> str | None:
    trace = make_trace(
        ranges=[(0, 10_000, "iteration", 0, "user", 1, 1)] if ranges is None else ranges,
        api=[*LAUNCHES, *extra_api],
        ops=OPS,
        meta=dict(SYNTHETIC),
        range_fields=RANGE_PT,
        api_fields=API_PT,
        op_fields=OP_PT,
    )
    gaps = analyze_iterations(trace).gaps.filter(pl.col("start_ns") == 2000)
    assert gaps.height == 1 and gaps["end_ns"].item() == 5000
    return gaps["cpu_context"].item()


# ------------------------------------------------------------------------------- _with_cpu_context


def test_of_two_nested_calls_in_progress_on_one_thread_the_outer_is_named() -> None:
    # cudaMemcpy [1500, 4000) and the driver call it made, cuMemcpyHtoD [1600, 3000), on thread 1: the
    # outermost, cudaMemcpy, 2000 of the gap's 3000 ns (not the driver call: kills 'outermost per thread' off)
    assert (
        _context_at_inner_gap(
            [(1500, 4000, None, "cudaMemcpy", 1, 1), (1600, 3000, None, "cuMemcpyHtoD", 1, 1)]
        )
        == "cudaMemcpy (66%)"
    )


def test_of_two_nested_calls_beginning_together_the_longer_is_the_outer() -> None:
    # both begin at 1500: cudaMemcpy [1500, 4000) holds cuMemcpyHtoD [1500, 3000); the outer one is the one
    # that ends last (kills the outermost order's end sorted ascending)
    assert (
        _context_at_inner_gap(
            [(1500, 3000, None, "cuMemcpyHtoD", 1, 1), (1500, 4000, None, "cudaMemcpy", 1, 1)]
        )
        == "cudaMemcpy (66%)"
    )


def test_across_threads_the_call_covering_more_of_the_gap_is_named() -> None:
    # thread 1 in cudaMemcpy [1500, 4000) (2000 ns of the gap), thread 2 of the same process in
    # cudaStreamSynchronize [1800, 4800) (2800 ns): the one covering more, though it started later; and the
    # other way round when the earlier-started call covers more
    assert (
        _context_at_inner_gap(
            [(1500, 4000, None, "cudaMemcpy", 1, 1), (1800, 4800, None, "cudaStreamSynchronize", 1, 2)]
        )
        == "cudaStreamSynchronize (93%)"
    )
    assert (
        _context_at_inner_gap(
            [(1500, 4900, None, "cudaMemcpy", 1, 1), (1800, 4000, None, "cudaStreamSynchronize", 1, 2)]
        )
        == "cudaMemcpy (96%)"
    )


def test_the_innermost_host_range_in_progress_is_named() -> None:
    # iteration [0, 10000) holds forward [50, 5500), which holds layer [60, 3600): both cover half of the
    # gap or more, the innermost (latest-started) is named; layer [60, 3000) covers a third: forward is
    # (forward ends inside the last kernel: one around all of the device work would name no gap)
    ranges = [
        (0, 10_000, "iteration", 0, "user", 1, 1),
        (50, 5500, "forward", 1, "user", 1, 1),
        (60, 3600, "layer", 2, "user", 1, 1),
    ]
    assert _context_at_inner_gap(ranges=ranges) == "in range layer (53%)"
    ranges[2] = (60, 3000, "layer", 2, "user", 1, 1)
    assert _context_at_inner_gap(ranges=ranges) == "in range forward (100%)"


def test_a_call_ending_at_one_probe_in_progress_at_another_is_named_only_at_the_other() -> None:
    # three kernels, [1000, 2000), [5000, 6000) and [8000, 9000): gaps [2000, 5000) and [6000, 8000), probed
    # at 2001 and 6001. cudaStreamSynchronize [1800, 6001) is in progress at 2001 and has ended at 6001 (kills
    # 'end >= t' in the join: the one-pass filter keeps the call for the first probe)
    trace = make_trace(
        ranges=[(0, 10_000, "iteration", 0, "user", 1, 1)],
        api=[
            *LAUNCHES,
            (500, 600, 3, "cudaLaunchKernel", 1, 1),
            (1800, 6001, None, "cudaStreamSynchronize", 1, 1),
        ],
        ops=[*OPS, (8000, 9000, 3, 7, "kernel", 0, 1)],
        meta=dict(SYNTHETIC),
        range_fields=RANGE_PT,
        api_fields=API_PT,
        op_fields=OP_PT,
    )
    gaps = analyze_iterations(trace).gaps.sort("start_ns")
    said = dict(zip(gaps["start_ns"].to_list(), gaps["cpu_context"].to_list(), strict=True))
    assert said[2000] == "cudaStreamSynchronize (100%)"
    assert said[6000] == "host code outside API calls"


def test_a_call_whose_process_is_not_known_counts_for_the_iterations_process() -> None:
    # the iteration is pid 1's; a cudaMemcpy [1500, 4000) whose process is not recorded (null) may be its:
    # named (only a call known to be another process's is left out)
    assert _context_at_inner_gap([(1500, 4000, None, "cudaMemcpy", None, 1)]) == "cudaMemcpy (66%)"
    # ... and one known to be another process's is not
    assert _context_at_inner_gap([(1500, 4000, None, "cudaMemcpy", 2, 2)]) == "host code outside API calls"


def test_a_window_of_every_process_names_any_processs_call() -> None:
    # no ranges: one window over both processes (its pid is null); pid 2 is in cudaMemcpy [1500, 4000) at
    # pid 1's inner gap's start: named (kills 'a null probe pid keeps no call of a known process')
    api = [*LAUNCHES, (150, 250, 3, "cudaLaunchKernel", 2, 2), (1500, 4000, None, "cudaMemcpy", 2, 2)]
    ops = [*OPS, (1000, 1500, 3, 7, "kernel", 1, 2)]
    trace = make_trace(api=api, ops=ops, meta=dict(SYNTHETIC), api_fields=API_PT, op_fields=OP_PT)
    gaps = analyze_iterations(trace).gaps.filter(pl.col("start_ns") == 2000)
    assert gaps["cpu_context"].to_list() == ["cudaMemcpy (66%)"]


# ------------------------------------------------------------------------------- leading_iterations


def test_skip_per_process_ignores_ranges_without_a_process() -> None:
    # one known process (pid 1) and ranges whose process is not recorded: not 'several processes', so the
    # first `skip` of the whole series (kills counting null as a second process)
    ranges = pl.DataFrame(
        {"iteration": [0, 1, 2, 3], "pid": [1, None, 1, None]}, schema_overrides={"pid": pl.Int64}
    )
    assert leading_iterations(ranges, 1) == [0]
    assert leading_iterations(ranges, 2) == [0, 1]


def test_skip_of_more_iterations_than_there_are_names_only_those_there_are() -> None:
    # one process, 3 iterations, --skip 5: the iterations dropped are 0, 1, 2 (no iteration 3 or 4)
    ranges = pl.DataFrame({"iteration": [0, 1, 2], "pid": [1, 1, 1]})
    assert leading_iterations(ranges, 5) == [0, 1, 2]
    assert leading_iterations(ranges.drop("pid"), 5) == [0, 1, 2]


def test_skip_per_process_goes_by_iteration_order_not_row_order() -> None:
    # two processes, rows not in iteration order: each process's first is its lowest iteration
    ranges = pl.DataFrame({"iteration": [1, 0, 3, 2], "pid": [1, 1, 2, 2]})
    assert sorted(leading_iterations(ranges, 1)) == [0, 2]
    assert sorted(leading_iterations(ranges, 2)) == [0, 1, 2, 3]
    assert leading_iterations(ranges, 0) == []


# ------------------------------------------------------------------------------- _work_before_windows


def _windows(*starts: int) -> pl.DataFrame:
    return pl.DataFrame({"window_start": list(starts)})


def test_work_before_windows_is_a_union_per_iteration() -> None:
    # iteration 0 (window from 100) has ops [10, 30) and [20, 40) before it: union [10, 40) = 30 ns; given
    # out of start order (kills a missing sort); iteration 1 (window from 50) has [15, 35): 20 ns, at the
    # same time as iteration 0's but its own (kills one union over all iterations: 30 ns)
    ops = pl.DataFrame({"iteration": [0, 0, 1], "start": [20, 10, 15], "end": [40, 30, 35]})
    assert _work_before_windows(ops, _windows(100, 50)) == 30 + 20


def test_work_before_windows_is_clipped_at_the_window_start() -> None:
    # an op [40, 70) of the iteration whose window starts at 50: 10 ns before it (kills an unclipped end)
    ops = pl.DataFrame({"iteration": [0], "start": [40], "end": [70]})
    assert _work_before_windows(ops, _windows(50)) == 10
    assert _work_before_windows(ops, _windows(40)) == 0


def _early_trace(early_ns: int):
    # Iteration 0 [0, 30000) launches A [5000, 15000) on stream 7 (call [1000, 2000)) and, after a stream
    # wait, A2 [50000, 60000) (call [3000, 4000)); iteration 1 [30000, 40000) launches B1 on stream 8 (call
    # [31000, 32000)), which runs [60000 - early_ns, 61000), and B2 [62000, 70000) (call [33000, 34000)).
    # Iteration 1's window starts at 60000 (the previous GPU end): B1 ran early_ns before it.
    ranges = [(0, 30_000, "iteration"), (30_000, 40_000, "iteration")]
    api = [
        (1000, 2000, 1, "cudaLaunchKernel"),
        (2500, 3000, 2, "cudaStreamWaitEvent"),
        (3000, 4000, 3, "cudaLaunchKernel"),
        (31_000, 32_000, 4, "cudaLaunchKernel"),
        (33_000, 34_000, 5, "cudaLaunchKernel"),
    ]
    ops = [
        (5000, 15_000, 1, 7),
        (50_000, 60_000, 3, 7),
        (60_000 - early_ns, 61_000, 4, 8),
        (62_000, 70_000, 5, 8),
    ]
    return make_trace(ranges, api, ops, dict(SYNTHETIC))


def _early_warnings(early_ns: int) -> list[str]:
    return [w for w in analyze_iterations(_early_trace(early_ns)).warnings if "before its own iteration" in w]


def test_work_before_its_window_is_said_from_one_microsecond() -> None:
    # exactly 1 us (1000 ns) before iteration 1's window: said, with 0.001 ms (kills '>' and 1001 ns)
    assert EARLY_WORK_MIN_NS == 1000
    [said] = _early_warnings(1000)
    assert said.startswith("0.001 ms of the iterations' device work ran before its own iteration's window")


def test_work_before_its_window_under_one_microsecond_is_not_said() -> None:
    # 999 ns: a clock's rounding, not said (kills a 1 ns threshold)
    assert _early_warnings(999) == []
    [said] = _early_warnings(2500)
    assert said.startswith("0.003 ms of")  # 2.5 us, to the us as written
