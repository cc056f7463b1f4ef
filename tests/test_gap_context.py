"""What held the host during the longest idle gaps (``cpu_context``, "host was in"): named after what covered
at least half of the gap, not after what was in progress at its first nanosecond. Hand-built traces
(synthetic, meta says so); times in integer ns.

The base case: one iteration [0, 10000) launching two kernels, [1000, 2000) and [5000, 6000): the inner gap
is [2000, 5000), 3000 ns long, so half of it is 1500 ns.
"""

from __future__ import annotations

import dataclasses

import polars as pl

from tests.builders import make_trace
from tracekit.analyzers.gap_context import OUTSIDE
from tracekit.analyzers.iterations import analyze_iterations
from tracekit.model import CPU_OPS_SCHEMA

SYNTHETIC = {"path": "gap_context_synthetic", "synthetic": True}
API_PT = ("start", "end", "correlation", "name", "pid", "thread")
OP_PT = ("start", "end", "correlation", "stream", "kind", "device", "pid")
RANGE_PT = ("start", "end", "name", "depth", "domain", "pid", "thread")
LAUNCHES = [(100, 200, 1, "cudaLaunchKernel", 1, 1), (300, 400, 2, "cudaLaunchKernel", 1, 1)]
OPS = [(1000, 2000, 1, 7, "kernel", 0, 1), (5000, 6000, 2, 7, "kernel", 0, 1)]
ITERATION = (0, 10_000, "iteration", 0, "user", 1, 1)


def _inner_gap_context(api=(), ranges=(), cpu_ops=()) -> str | None:
    trace = make_trace(
        ranges=[ITERATION, *ranges],
        api=[*LAUNCHES, *api],
        ops=OPS,
        meta=dict(SYNTHETIC),
        range_fields=RANGE_PT,
        api_fields=API_PT,
        op_fields=OP_PT,
    )
    if cpu_ops:
        frame = pl.DataFrame(
            [dict(zip(("start", "end", "pid", "thread", "name"), row, strict=True)) for row in cpu_ops],
            schema=CPU_OPS_SCHEMA,
        )
        trace = dataclasses.replace(trace, cpu_ops=frame)
    gaps = analyze_iterations(trace).gaps.filter(pl.col("start_ns") == 2000)
    assert gaps.height == 1 and gaps["end_ns"].item() == 5000
    return gaps["cpu_context"].item()


def test_a_range_open_at_the_gaps_start_but_short_is_not_named_the_operator_that_held_it_is() -> None:
    # The real DDP case in small: a range [1900, 2100) is open when the gap begins (the old rule named it) but
    # covers 100 of 3000 ns; an operator [2100, 4900) covers 2800 (93%)
    context = _inner_gap_context(
        ranges=[(1900, 2100, "nccl:broadcast", 1, "user", 1, 1)],
        cpu_ops=[(2100, 4900, 1, 1, "aten::unflatten_dense_tensors")],
    )
    assert context == "in op aten::unflatten_dense_tensors (93%)"


def test_a_call_covering_most_of_the_gap_is_named_with_its_share() -> None:
    # cudaStreamSynchronize [2500, 5000): 2500 of 3000 ns = 83.3% -> "83%" (rounded down)
    assert (
        _inner_gap_context([(2500, 5000, None, "cudaStreamSynchronize", 1, 1)])
        == "cudaStreamSynchronize (83%)"
    )


def test_exactly_half_names_and_one_ns_less_does_not() -> None:
    assert _inner_gap_context([(2000, 3500, None, "cudaMemcpy", 1, 1)]) == "cudaMemcpy (50%)"
    assert _inner_gap_context([(2000, 3499, None, "cudaMemcpy", 1, 1)]) == OUTSIDE


def test_a_call_before_the_gap_counts_only_for_its_part_inside_it() -> None:
    # cudaMemcpy [0, 3400): 1400 ns inside the gap (46%): not named; [0, 3600): 1600 (53%)
    assert _inner_gap_context([(500, 3400, None, "cudaMemcpy", 1, 1)]) == OUTSIDE
    assert _inner_gap_context([(500, 3600, None, "cudaMemcpy", 1, 1)]) == "cudaMemcpy (53%)"


def test_a_share_just_under_whole_never_reads_100() -> None:
    # 2999 of 3000 ns: 99.97% -> "99%"
    assert (
        _inner_gap_context([(2001, 5000, None, "cudaDeviceSynchronize", 1, 1)])
        == "cudaDeviceSynchronize (99%)"
    )
    assert (
        _inner_gap_context([(2000, 5000, None, "cudaDeviceSynchronize", 1, 1)])
        == "cudaDeviceSynchronize (100%)"
    )


def test_a_call_wins_over_the_range_or_operator_it_runs_in() -> None:
    # aten::item [2000, 5000) holds cudaStreamSynchronize [2100, 4900): the call says more
    context = _inner_gap_context(
        [(2100, 4900, None, "cudaStreamSynchronize", 1, 1)], cpu_ops=[(2000, 5000, 1, 1, "aten::item")]
    )
    assert context == "cudaStreamSynchronize (93%)"


def test_of_two_nested_calls_on_one_thread_the_outer_is_named() -> None:
    # cudaMemcpy [1500, 4900) made cuMemcpyHtoD [2000, 4800): the runtime call, not the driver call in it
    api = [(1500, 4900, None, "cudaMemcpy", 1, 1), (2000, 4800, None, "cuMemcpyHtoD", 1, 1)]
    assert _inner_gap_context(api) == "cudaMemcpy (96%)"


def test_of_two_calls_on_two_threads_the_one_covering_more_is_named() -> None:
    # thread 1 in cudaMemcpy [2000, 3600) (53%), thread 2 in cudaStreamSynchronize [2100, 5000) (96%)
    api = [(2000, 3600, None, "cudaMemcpy", 1, 1), (2100, 5000, None, "cudaStreamSynchronize", 1, 2)]
    assert _inner_gap_context(api) == "cudaStreamSynchronize (96%)"


def test_the_innermost_range_covering_half_is_named_not_an_enclosing_one() -> None:
    # forward [50, 9000) covers the whole gap, layer [1900, 4000) 2000 ns (66%), a short one [2200, 2300) 3%
    ranges = [
        (50, 9000, "forward", 1, "user", 1, 1),
        (1900, 4000, "layer", 2, "user", 1, 1),
        (2200, 2300, "norm", 3, "user", 1, 1),
    ]
    assert _inner_gap_context(ranges=ranges) == "in range layer (66%)"


def test_many_short_calls_together_covering_half_are_several_calls() -> None:
    # four calls of 400 ns each, none half of the gap, together 1600 of 3000 (53%); overlapping ones on two
    # threads count once: [2000, 2400) and [2100, 2400) are 400 ns together
    api = [(2000 + 600 * k, 2400 + 600 * k, None, "cudaEventQuery", 1, 1) for k in range(4)]
    api.append((2100, 2400, None, "cudaEventRecord", 1, 2))
    assert _inner_gap_context(api) == "several API calls (53%)"
    assert _inner_gap_context(api[:3]) == OUTSIDE  # 1200 of 3000


def test_another_processs_call_is_never_named() -> None:
    assert _inner_gap_context([(2000, 5000, None, "cudaMemcpy", 2, 2)]) == OUTSIDE
    # a call whose process is not recorded may be the iteration's: named
    assert _inner_gap_context([(2000, 5000, None, "cudaMemcpy", None, 1)]) == "cudaMemcpy (100%)"


def test_a_gpu_side_range_is_never_the_hosts() -> None:
    # Kineto's gpu_user_annotation spans the device's work, not the host's
    ranges = [(1000, 6000, "DistributedDataParallel.forward", 1, "gpu", 1, 1)]
    assert _inner_gap_context(ranges=ranges) == OUTSIDE
