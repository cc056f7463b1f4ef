"""Mutants of ``analyzers/attribution.py``'s ``_next_op_calls``, ``_gap_chunks`` and ``_chunk_causes`` (657382e:
a trailing gap's next op is an op of 0 ns starting at its end) that the module's tests let live. Hand-built,
labelled-synthetic traces (one process, times in ns) with exact pieces."""

from __future__ import annotations

from tests.test_attribution import WORKER, attribute, call, make_trace, op, piece_list, rng


def test_a_trailing_gap_ending_at_a_zero_ns_op_is_in_flight_after_its_launch() -> None:
    # Range [0, 700): launch A [100, 200) -> kernel [300, 400); launch B [500, 600) -> a 0 ns kernel at 900.
    # The iteration is unsynchronized: its window is [0, 900). The trailing gap [400, 900) ends at B, whose
    # call returned at 600: in_flight from 600.
    trace = make_trace(
        [op(300, 400, 1), op(900, 900, 2)],
        [call(100, 200, "cudaLaunchKernel", 1), call(500, 600, "cudaLaunchKernel", 2)],
        [rng(0, 700)],
    )
    _, result = attribute(trace)
    assert piece_list(result) == [
        (0, 100, "dispatch"),
        (100, 200, "launch"),
        (200, 300, "in_flight"),
        (400, 500, "dispatch"),
        (500, 600, "launch"),
        (600, 900, "in_flight"),
    ]
    assert result.gaps["position"].to_list() == ["leading", "trailing"]
    assert result.gaps["next_call_end_ns"].to_list() == [200, 600]


def test_a_trailing_gap_is_not_ended_by_a_positive_op_of_the_next_range() -> None:
    # Ranges [0, 1000) and [1000, 2000). Launch A [100, 200) -> kernel [300, 400); kernel B [1000, 1100) was
    # launched by a worker's call [-300, -200) before any range. Range 0's trailing gap [400, 1000) ends where B
    # starts, but B lasts more than 0 ns: it cannot start inside the window, so it is no next op of the
    # trailing gap; the main thread's state decides (dispatch). Counting B would read 600 ns of in_flight.
    trace = make_trace(
        [op(300, 400, 1), op(1000, 1100, 2)],
        [
            call(-300, -200, "cudaLaunchKernel", 2, thread=WORKER),
            call(100, 200, "cudaLaunchKernel", 1),
            call(1400, 1500, "cudaDeviceSynchronize"),
        ],
        [rng(0, 1000), rng(1000, 2000)],
    )
    _, result = attribute(trace)
    assert piece_list(result) == [
        (0, 100, "dispatch"),
        (100, 200, "launch"),
        (200, 300, "in_flight"),
        (400, 1000, "dispatch"),
        (1000, 1400, "dispatch"),
        (1400, 1500, "sync"),
        (1500, 2000, "dispatch"),
    ]
    assert result.iterations["in_flight_ns"].to_list() == [100, 0]


def test_an_empty_gap_has_no_next_op() -> None:
    # Ranges [0, 1000) and [1000, 2000), no op of their own; kernel B [1000, 1100) was launched by a worker's
    # call [-300, -200) before any range. Range 0 is one empty gap ending where B starts: an empty gap has no
    # next op, the main thread decides (dispatch), not B's launch (1000 ns of in_flight).
    trace = make_trace(
        [op(1000, 1100, 2)],
        [call(-300, -200, "cudaLaunchKernel", 2, thread=WORKER), call(1400, 1500, "cudaDeviceSynchronize")],
        [rng(0, 1000), rng(1000, 2000)],
    )
    _, result = attribute(trace)
    assert result.gaps["position"].to_list() == ["empty", "empty"]
    assert piece_list(result) == [
        (0, 1000, "dispatch"),
        (1000, 1400, "dispatch"),
        (1400, 1500, "sync"),
        (1500, 2000, "dispatch"),
    ]
    assert result.iterations["in_flight_ns"].to_list() == [0, 0]


def test_an_inner_gap_is_ended_by_the_positive_op_not_a_zero_ns_one_launched_earlier() -> None:
    # Range [0, 1000): launch A [100, 200) -> kernel [300, 400); launch B [420, 450) -> a 0 ns kernel at 600;
    # launch C [500, 550) -> kernel [600, 700). The inner gap [400, 600) ends at C (B lasts 0 ns: no next op of
    # an inner gap, though launched first): in_flight from 550 only, [450, 500) is dispatch.
    trace = make_trace(
        [op(300, 400, 1), op(600, 600, 2), op(600, 700, 3)],
        [
            call(100, 200, "cudaLaunchKernel", 1),
            call(420, 450, "cudaLaunchKernel", 2),
            call(500, 550, "cudaLaunchKernel", 3),
        ],
        [rng(0, 1000)],
    )
    _, result = attribute(trace)
    assert piece_list(result) == [
        (0, 100, "dispatch"),
        (100, 200, "launch"),
        (200, 300, "in_flight"),
        (400, 420, "dispatch"),
        (420, 450, "launch"),
        (450, 500, "dispatch"),
        (500, 550, "launch"),
        (550, 600, "in_flight"),
        (700, 1000, "dispatch"),
    ]
    assert result.gaps["next_call_end_ns"].to_list()[:2] == [200, 550]
