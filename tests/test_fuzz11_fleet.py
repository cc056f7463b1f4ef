"""fleet11: the cross-trace summary on inputs real multi-rank jobs produce (round 11). Every input here is
SYNTHETIC, built by hand (compact results, or Kineto traces from tracekit.simulate.ranks), with its truth
known by construction."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.builders import EPOCH, compact_result
from tracekit.analyzers.ranks import summarize
from tracekit.fleet.run import analyze_many
from tracekit.session import AnalysisOptions

MS = 1_000_000


def _steps(idx: range, offset: int = 0) -> list[tuple[int, int]]:
    return [(EPOCH + offset + i * MS, EPOCH + offset + i * MS + 900_000) for i in idx]


def _ends(idx: range, offset: int = 0) -> list[int]:
    return [EPOCH + offset + i * MS + 800_000 for i in idx]


def test_a_capture_that_began_later_without_step_numbers_is_not_given_a_step_long_offset() -> None:
    # SYNTHETIC. One clock (true offset 0). Steps of 1 ms, one all-reduce ending 0.8 ms into each; no step
    # numbers (iterations from NVTX ranges or a user annotation). Rank 0 recorded steps 0-5, rank 1 began
    # two steps later (2-5). Matched from the first, rank 1's collectives 2-5 pair with rank 0's 0-3 and
    # its clock reads 2 ms ahead; matched from the last, 0 ms. Both fit, and under each the steps line up
    # (first: the first 4 steps; last: the last 4): which one is right is not known from the times.
    # Before: "the first 4 were matched (the only way the steps line up)", offset +2 ms, as a fact.
    a = compact_result("a", 0, _ends(range(6)), steps=_steps(range(6)))
    b = compact_result("b", 1, _ends(range(2, 6)), steps=_steps(range(2, 6)))
    doc = summarize([a, b])
    assert doc["clocks"]["aligned"] is False
    assert doc["clocks"]["offsets_ns"] is None
    assert "line up under both" in doc["clocks"]["why"]
    assert "straggler" not in doc and "skew" not in doc


def test_a_capture_that_began_later_is_aligned_from_the_last_when_only_that_fits() -> None:
    # SYNTHETIC. As above, but rank 1's clock is 0.3 ms behind and the collectives are not periodic (steps
    # 1, 2.5, 1, 1, 3 ms apart): only the last 4 match. Its steps are the last 4 of rank 0's, so the skew
    # compares those (rank 1 starts each 0.1 ms late: start skew 0.1 ms), not rank 0's first 4.
    starts = np.cumsum([0, 1, 2.5, 1, 1, 3]) * MS
    a_steps = [(EPOCH + int(s), EPOCH + int(s) + 900_000) for s in starts]
    a_ends = [s + 800_000 for s, _ in a_steps]
    off = -300_000
    b_steps = [(s + 100_000 + off, e + off) for s, e in a_steps[2:]]
    b_ends = [e + off for e in a_ends[2:]]
    doc = summarize(
        [compact_result("a", 0, a_ends, steps=a_steps), compact_result("b", 1, b_ends, steps=b_steps)]
    )
    assert doc["clocks"]["aligned"] is True
    assert doc["clocks"]["matched_from"] == "last"
    assert doc["clocks"]["offsets_ns"] == [0, off]
    assert doc["skew"]["steps"] == 4
    assert doc["skew"]["median_start_skew_ms"] == 0.1
    assert doc["skew"]["max_start_skew_ms"] == 0.1
    assert doc["slowest_by_step"] == {"steps": 4, "slowest": "rank 0", "slowest_steps": 4}
    assert "traces hold 4 to 6 iterations; step comparisons use the last 4" in doc["warnings"]


def test_a_trace_without_a_latency_at_a_step_is_not_its_slowest() -> None:
    # SYNTHETIC. Three ranks, three steps each, rank 2 slowest (0.5 ms) at every step, rank 1 0.4 ms; rank 0's
    # latencies are not known (NaN: a worker's compact result with nulls; row_figures leaves them out, the
    # spread does not count it). Before: NaN, first in rank order, came out of max() as the longest: "slowest
    # by step: rank 0 in 3 of 3" (and with one NaN step, "rank 2 in 2 of 3").
    def steps(d: int) -> list[tuple[int, int]]:
        return [(EPOCH + i * MS, EPOCH + i * MS + d) for i in range(3)]

    untimed = compact_result("c", 0, steps=steps(300_000))
    untimed["iterations"]["latency_ms"] = np.array([np.nan, np.nan, np.nan])
    traces = [
        untimed,
        compact_result("b", 1, steps=steps(400_000)),
        compact_result("a", 2, steps=steps(500_000)),
    ]
    assert summarize(traces)["slowest_by_step"] == {"steps": 3, "slowest": "rank 2", "slowest_steps": 3}
    untimed["iterations"]["latency_ms"] = np.array([np.nan, 0.3, 0.3])
    assert summarize(traces)["slowest_by_step"] == {"steps": 3, "slowest": "rank 2", "slowest_steps": 3}
    untimed["iterations"]["latency_ms"] = [None, 0.3, 0.3]  # (a list holding None: no traceback)
    assert summarize(traces)["slowest_by_step"] == {"steps": 3, "slowest": "rank 2", "slowest_steps": 3}


def test_a_step_timed_in_one_trace_only_has_no_slowest() -> None:
    # SYNTHETIC. Two ranks; rank 0's latency is known at step 1 only: steps 0 and 2 compare nothing.
    def steps(d: int) -> list[tuple[int, int]]:
        return [(EPOCH + i * MS, EPOCH + i * MS + d) for i in range(3)]

    a = compact_result("a", 0, steps=steps(300_000))
    a["iterations"]["latency_ms"] = np.array([np.nan, 0.3, np.nan])
    b = compact_result("b", 1, steps=steps(400_000))
    assert summarize([a, b])["slowest_by_step"] == {"steps": 3, "slowest": "rank 1", "slowest_steps": 1}


GEMM = "ampere_sgemm_128x64_nn"
ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"


def _node_capture(path: Path, clock_ns: int, gpu1_arrives_ns: int) -> str:
    """A SYNTHETIC Nsight Systems export of one node's capture of two ranks (pid 100 on GPU 0, pid 200 on
    GPU 1, one session clock ``clock_ns`` off the job's): 4 steps of 1 ms (``ProfilerStep#5``-``#8``), pid
    200's starting 100 µs later; in each a 300 µs GEMM, then an all-reduce that GPU 0 starts 450 µs and GPU 1
    ``gpu1_arrives_ns`` after GPU 0's step start, both ending at 900 µs."""
    from tests.nsys_builder import NsysBuilder

    b = NsysBuilder()
    b.gpu(0, "Synthetic GPU A")
    b.gpu(1, "Synthetic GPU B")
    corr = 1
    for pid, device, shift, arrive in ((100, 0, 0, 450_000), (200, 1, 100_000, gpu1_arrives_ns)):
        for step in range(4):
            base = clock_ns + 1_000_000_000 + step * 1_000_000
            s0 = base + shift
            b.nvtx_range(s0, s0 + 1_000_000, f"ProfilerStep#{step + 5}", pid=pid, tid=pid)
            b.runtime(s0 + 10_000, s0 + 11_000, "cudaLaunchKernel_v7000", correlation=corr, pid=pid, tid=pid)
            b.kernel(s0 + 50_000, s0 + 350_000, GEMM, device=device, correlation=corr, pid=pid)
            b.runtime(
                s0 + 20_000, s0 + 21_000, "cudaLaunchKernel_v7000", correlation=corr + 1, pid=pid, tid=pid
            )
            b.kernel(base + arrive, base + 900_000, ALLREDUCE, device=device, correlation=corr + 1, pid=pid)
            corr += 2
    return str(b.write(path))


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Two nodes of one 4-rank job, each captured by one nsys report of its 2 ranks; node B's clock 5 ms
    ahead. Node A's GPU 1 arrives at each all-reduce at 700 µs, node B's GPU 1 at 800 µs (the job's
    straggler: the others arrive at 450, 450 and 700 µs)."""
    out = tmp_path_factory.mktemp("two_nodes")
    return [
        _node_capture(out / "nodeA.synthetic.sqlite", 0, 700_000),
        _node_capture(out / "nodeB.synthetic.sqlite", 5_000_000, 800_000),
    ]


def _summary(paths: list[str], jobs: int = 1) -> dict:
    outcomes = analyze_many(paths, AnalysisOptions(), jobs=jobs)
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    return summarize([o.result for o in outcomes])


def test_captures_of_several_ranks_each_are_not_compared_as_ranks(two_nodes: list[str]) -> None:
    # Before: the two traces' collective lists (each rank's all-reduces of its node, interleaved) were
    # matched as two ranks': "aligned on 8 collective ends" (4 all-reduces), "straggler: nodeB arrives last
    # at 4 of 8 collectives; the others wait 0.100 ms" (rank 3 arrives 0.35 ms after the median of the
    # others), "step start skew 0.000 ms largest over 8 steps" (each trace's 8 iterations are 2 ranks' 4
    # steps; the ranks' starts are 0.1 ms apart).
    doc = _summary(two_nodes)
    why = (
        "nodeA.synthetic.sqlite, nodeB.synthetic.sqlite: each holds GPUs that ran steps of their own (one capture "
        "of several ranks): its collectives and iterations, in one list, are no one rank's; its GPUs are compared "
        "within it only"
    )
    assert doc["clocks"] == {"aligned": False, "why": why, "offsets_ns": None, "matched": 0}
    assert doc["slowest_by_step"] == {"why": why}
    assert "straggler" not in doc and "skew" not in doc
    # within each capture, on its one clock, as before
    within = {w["trace"]: w for w in doc["gpu_within"]}
    assert within["nodeA.synthetic.sqlite"]["straggler"] == "GPU 1"
    assert within["nodeA.synthetic.sqlite"]["median_wait_ms"] == pytest.approx(0.25, abs=1e-12)
    assert within["nodeB.synthetic.sqlite"]["median_wait_ms"] == pytest.approx(0.35, abs=1e-12)


def test_a_capture_of_several_ranks_beside_another_trace_is_not_aligned_either(two_nodes: list[str]) -> None:
    doc = _summary(two_nodes[:1] + [two_nodes[0]])  # (the same file twice: kept once, nothing to compare)
    assert doc["traces"] == 1 and doc["clocks"]["why"] == "one trace"


def test_the_pool_gives_the_same_answer_for_captures_of_several_ranks(two_nodes: list[str]) -> None:
    assert _summary(two_nodes, jobs=2) == _summary(two_nodes, jobs=1)


def _lane(starts_ms: list[int], latencies: list[float]) -> dict:
    starts = [s * MS for s in starts_ms]
    return {
        "iterations": {
            "index": list(range(len(starts))),
            "start_ns": starts,
            "end_ns": [s + int(lat * 1e6) for s, lat in zip(starts, latencies, strict=True)],
            "latency_ms": latencies,
            "step": [None] * len(starts),
        },
        "collective_starts_ns": [],
        "collective_ends_ns": [],
        "collective_kinds": [],
        "collective_iterations": [],
    }


def test_within_a_capture_a_gpu_that_began_a_step_later_is_compared_on_the_same_steps() -> None:
    # SYNTHETIC. One capture (one clock), no step numbers, steps 1 ms apart. GPU 0's process ran steps 0-3
    # (0.5, 0.9, 0.9, 0.9 ms); GPU 1's began a step later, steps 1-3 (0.8 ms each). On the common steps 1-3
    # GPU 0 is the slower at each. Before: compared by first position (GPU 0's step 0 against GPU 1's step
    # 1), "slowest GPU 0 in 2 of 3 steps", and the skew withheld as "steps do not line up".
    from tracekit.analyzers.ranks import within_capture

    result = {
        "name": "t.synthetic.sqlite",
        "rank": None,
        "per_gpu": [
            {"device": 0, "lane": _lane([0, 1, 2, 3], [0.5, 0.9, 0.9, 0.9])},
            {"device": 1, "lane": _lane([1, 2, 3], [0.8, 0.8, 0.8])},
        ],
    }
    within = within_capture(result)
    assert within is not None
    assert within["slowest_by_step"] == {"steps": 3, "slowest": "GPU 0", "slowest_steps": 3}
    assert within["skew"]["median_start_skew_ms"] == 0.0 and within["skew"]["steps"] == 3
    assert (within["skew"]["ends_last"], within["skew"]["ends_last_steps"]) == ("GPU 0", 3)


def test_within_a_capture_steps_that_line_up_neither_way_are_not_compared_by_duration() -> None:
    # SYNTHETIC. GPU 1's three steps (10-12 ms) come after all of GPU 0's (0-3 ms) on the one clock: they
    # line up with neither GPU 0's first three nor its last three. Before: "slowest GPU 1 in 3 of 3 steps".
    from tracekit.analyzers.ranks import within_capture

    result = {
        "name": "t.synthetic.sqlite",
        "rank": None,
        "per_gpu": [
            {"device": 0, "lane": _lane([0, 1, 2, 3], [0.4, 0.4, 0.4, 0.4])},
            {"device": 1, "lane": _lane([10, 11, 12], [0.8, 0.8, 0.8])},
        ],
    }
    within = within_capture(result)
    assert "why" in within["skew"]
    assert within["slowest_by_step"] == {"why": within["skew"]["why"]}
