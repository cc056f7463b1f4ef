"""Mutants of ``analyzers/iterations.py`` that the module's tests let live: the launch medians over kernel and
graph launch calls only (f9c4ff6: ``_launch_stats``, ``_call_columns``, ``_launch_calls_of``, ``_match_calls``,
``_is_launch``) and the sidecar's warm-up (``warmup_to_skip``, ``warmup_problem``). Hand-built,
labelled-synthetic traces (one process, times in ns) and sidecars, exact numbers and texts."""

from __future__ import annotations

import pytest

from tests.test_attribution import call, make_trace, op, rng
from tracekit.analyzers.iterations import analyze_iterations, warmup_problem, warmup_to_skip

# --- launch latency and queue time: kernel and graph launch calls only -----------------------------------------


NOTE = (
    "queue time: in 1 of 2 launches the first op started before its launch call returned (the device took the "
    "work while the call was still submitting; a graph launch call returns after its first kernels ran): their "
    "queue time is 0, not negative"
)


@pytest.mark.parametrize("base", [0, 1 << 33], ids=["sorted-keys", "correlations-past-the-pair-key"])
def test_launch_medians_take_kernel_and_graph_launches_not_copies_or_memsets(base: int) -> None:
    # Range [0, 10000). cudaGraphLaunch [100, 200) -> kernels [150, 500) and [1400, 1500) (first op 150, inside
    # its call: latency 50, queue 0); cudaLaunchKernel [1000, 1100) -> kernel [1200, 1300) (latency 200, queue
    # 100). Not launches: cudaMemcpyAsync [2000, 2100) -> copy [5000, 5100) (latency 3000, queue 2900) and
    # cudaMemsetAsync [2200, 2300) -> memset [2350, 2360) (latency 150, queue 50); nor a kernel [6000, 6100)
    # whose correlation id names no call, nor one [7000, 7100) with none. Medians over the two launches: 125 ns
    # and 50 ns, 1 of 2 first ops inside its call (over every op with a call: 175 and 75 ns, 1 of 4). The
    # graph's two kernels around the other call's kernel put the ops out of call order; correlation ids past
    # 2^32 take _match_calls' join path.
    trace = make_trace(
        [
            op(150, 500, base + 1),
            op(1200, 1300, base + 2),
            op(1400, 1500, base + 1),
            op(2350, 2360, base + 4, kind="memset"),
            op(5000, 5100, base + 3, kind="memcpy"),
            op(6000, 6100, base + 99),
            op(7000, 7100, None),
        ],
        [
            call(100, 200, "cudaGraphLaunch", base + 1),
            call(1000, 1100, "cudaLaunchKernel", base + 2),
            call(2000, 2100, "cudaMemcpyAsync", base + 3),
            call(2200, 2300, "cudaMemsetAsync", base + 4),
        ],
        [rng(0, 10000)],
    )
    analysis = analyze_iterations(trace)
    assert analysis.iterations.select(
        "launches", "launch_api_us", "launch_latency_us", "queue_us"
    ).to_dicts() == [{"launches": 2, "launch_api_us": 0.2, "launch_latency_us": 0.125, "queue_us": 0.05}]
    assert analysis.notes == [NOTE]


# --- the sidecar's warm-up -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("meta", "found", "problem", "skip"),
    [
        ({}, 7, None, 0),
        ({"warmup_in_trace": None, "warmup_iterations": 3, "iterations": 4}, 7, None, 0),
        ({"warmup_in_trace": False, "warmup_iterations": 3, "iterations": 4}, 7, None, 0),
        ({"warmup_in_trace": True, "warmup_iterations": 3, "iterations": 4}, 7, None, 3),
        ({"warmup_in_trace": True, "warmup_iterations": 0, "iterations": 4}, 7, None, 0),
        ({"warmup_in_trace": True, "warmup_iterations": 0, "iterations": 0}, 7, None, 0),
        (
            {"warmup_in_trace": True, "warmup_iterations": 3, "iterations": 4},
            8,
            "the sidecar says the trace holds 3 warm-up and 4 timed runs, but it holds 8 iterations",
            0,
        ),
        (
            {"warmup_in_trace": True, "warmup_iterations": 3, "iterations": 4},
            6,
            "the sidecar says the trace holds 3 warm-up and 4 timed runs, but it holds 6 iterations",
            0,
        ),
        (
            {"warmup_in_trace": "false", "warmup_iterations": 3, "iterations": 4},
            7,
            "the sidecar's warmup_in_trace is 'false', not true or false",
            0,
        ),
        (
            {"warmup_in_trace": 1, "warmup_iterations": 3, "iterations": 4},
            7,
            "the sidecar's warmup_in_trace is 1, not true or false",
            0,
        ),
        (
            {"warmup_in_trace": True, "warmup_iterations": "ten", "iterations": 4},
            7,
            "the sidecar's warmup_iterations is 'ten', not a count",
            0,
        ),
        (
            {"warmup_in_trace": True, "warmup_iterations": -1, "iterations": 8},
            7,
            "the sidecar's warmup_iterations is -1, not a count",
            0,
        ),
        (
            {"warmup_in_trace": True, "warmup_iterations": True, "iterations": 6},
            7,
            "the sidecar's warmup_iterations is True, not a count",
            0,
        ),
        (
            {"warmup_in_trace": True, "warmup_iterations": 3},
            7,
            "the sidecar says warmup_in_trace but not iterations",
            0,
        ),
        (
            {"warmup_in_trace": True, "warmup_iterations": 3, "iterations": 4.0},
            7,
            "the sidecar's iterations is 4.0, not a count",
            0,
        ),
        (
            {"warmup_in_trace": True, "warmup_iterations": 3, "iterations": -1},
            2,
            "the sidecar's iterations is -1, not a count",
            0,
        ),
    ],
)
def test_the_sidecars_warmup_is_dropped_only_when_its_counts_add_up(
    meta: dict, found: int, problem: str | None, skip: int
) -> None:
    assert warmup_problem(meta, found) == problem
    assert warmup_to_skip(meta, found) == skip
