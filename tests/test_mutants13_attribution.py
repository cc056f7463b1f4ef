"""mutation13: tests that kill the surviving mutants of attribution._next_op_calls' own-process rule.
Hand-built (synthetic) traces, times in integer ns."""

from __future__ import annotations

import pytest

from tests.builders import EPOCH, make_trace
from tracekit.session import analyze_trace

US = 1000
RANGE_PT = ("start", "end", "name", "depth", "domain", "pid", "thread")
API_PT = ("start", "end", "correlation", "name", "pid", "thread")
OP_PT = ("start", "end", "correlation", "stream", "kind", "device", "pid")
CAUSES = ("dispatch", "launch", "sync", "other_api", "in_flight")


def _one_process_with_an_op_from_before_the_capture(op_pid: int | None) -> dict[str, int]:
    # pid 1's iteration [0, 100) us: cudaLaunchKernel [2, 3) -> K [50, 60) us (stream 7), then
    # cudaDeviceSynchronize [3, 61). X [50, 55) us (stream 8, GPU 0), correlation 99 with no call in the
    # trace (launched before the capture), starts at the same instant as K; its process is op_pid. The
    # trailing gap [60, 100): 1 us sync, 39 us dispatch.
    t0 = EPOCH
    api = [
        (t0 + 2 * US, t0 + 3 * US, 1, "cudaLaunchKernel", 1, 1),
        (t0 + 3 * US, t0 + 61 * US, 2, "cudaDeviceSynchronize", 1, 1),
    ]
    ops = [
        (t0 + 50 * US, t0 + 55 * US, 99, 8, "kernel", 0, op_pid),
        (t0 + 50 * US, t0 + 60 * US, 1, 7, "kernel", 0, 1),
    ]
    trace = make_trace(
        [(t0, t0 + 100 * US, "iteration", 0, "user", 1, 1)],
        api,
        ops,
        {"path": "mutants13_attribution.synthetic", "synthetic": True},
        range_fields=RANGE_PT,
        api_fields=API_PT,
        op_fields=OP_PT,
    )
    [row] = analyze_trace(trace).iterations.iter_rows(named=True)
    assert (row["latency_ms"], row["gpu_busy_ms"], row["idle_gaps"]) == (
        pytest.approx(0.1, abs=1e-12),
        pytest.approx(0.01, abs=1e-12),
        2,
    )
    return {c: round(row[f"{c}_ms"] * 1e6) for c in CAUSES}


@pytest.mark.parametrize("op_pid", [None, 1])
def test_an_op_launched_before_the_capture_of_this_or_no_known_process_ends_the_gap(
    op_pid: int | None,
) -> None:
    # X is a candidate (its process unknown, or this one): launched first (before the capture), it ends the
    # leading gap [0, 50), whose 50 us are then in flight (the device held earlier work)
    assert _one_process_with_an_op_from_before_the_capture(op_pid) == {
        "dispatch": 39 * US,
        "launch": 0,
        "sync": 1 * US,
        "other_api": 0,
        "in_flight": 50 * US,
    }


def test_an_op_another_process_launched_before_the_capture_does_not_end_the_gap() -> None:
    # X is pid 2's: no candidate; the gap ends at K: [0, 2) dispatch, [2, 3) launch, [3, 50) in flight
    assert _one_process_with_an_op_from_before_the_capture(2) == {
        "dispatch": 41 * US,
        "launch": 1 * US,
        "sync": 1 * US,
        "other_api": 0,
        "in_flight": 47 * US,
    }


def test_a_window_of_every_process_keeps_every_processs_op_as_a_candidate() -> None:
    # hostile13's 2-stage pipeline without ranges: one window of both processes (its pid null), [-5, 1750)
    # us. GPU 0 (pid 1) runs a 100 us kernel at 0, 300, ..., 1500 us, GPU 1 (pid 2) at 150, 450, ..., 1650;
    # each kernel's cudaLaunchKernel runs [-5, -4) us before it. Busy 1.2 ms; idle: the leading [-5, 0) us
    # (1 us launch, 4 us in flight) and 11 gaps of 50 us, each ended by the next kernel of either process
    # (45 us dispatch, 1 us launch, 4 us in flight): dispatch 495, launch 12, in flight 48 us.
    from tests.test_hostile13_analysis import _two_pipeline_stages_without_ranges

    a = analyze_trace(_two_pipeline_stages_without_ranges())
    assert a.ranges["pid"].to_list() == [None]
    [row] = a.iterations.iter_rows(named=True)
    assert (row["latency_ms"], row["gpu_busy_ms"], row["idle_gaps"]) == (
        pytest.approx(1.755, abs=1e-12),
        pytest.approx(1.2, abs=1e-12),
        12,
    )
    assert {c: round(row[f"{c}_ms"] * 1e6) for c in CAUSES} == {
        "dispatch": 495 * US,
        "launch": 12 * US,
        "sync": 0,
        "other_api": 0,
        "in_flight": 48 * US,
    }
