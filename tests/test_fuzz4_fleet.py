"""Many-trace summaries of multi-rank quirks found by fuzzing (all traces synthetic, built in tmp folders):
captures that hold other steps, process groups that end their collectives apart, world sizes, and a trace
given twice."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import numpy as np
import pytest

from tests.builders import EPOCH, compact_result
from tracekit.analyzers.ranks import summarize
from tracekit.fleet.run import analyze_many
from tracekit.session import AnalysisOptions
from tracekit.simulate.ranks import RankSimulation, truth, write_ranks

SIM = RankSimulation(ranks=4, steps=7, kernels=8, straggler=2, clock_offset_ns=[0, -700_000, 0, 3_000_000])


def _keep_steps(path: Path, first: int, last: int) -> None:
    """Cut a simulated rank trace (in place) to its ``ProfilerStep#first`` .. ``#last``: every event inside
    those steps' span, nothing else (a capture that began or ended at another step)."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    steps = {e["name"]: e for e in doc["traceEvents"] if e["name"].startswith("ProfilerStep#")}
    low = float(steps[f"ProfilerStep#{first}"]["ts"])
    high = float(steps[f"ProfilerStep#{last}"]["ts"]) + float(steps[f"ProfilerStep#{last}"]["dur"])
    doc["traceEvents"] = [
        e for e in doc["traceEvents"] if low <= float(e["ts"]) and float(e["ts"]) + float(e["dur"]) <= high
    ]
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))


@pytest.fixture(scope="module")
def shifted(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Seven simulated steps; rank 1's capture holds #1-#6, the others' #0-#5 (on-demand profiling starts at
    each rank's next step): as many steps and collectives on every rank, one step apart on rank 1."""
    paths = write_ranks(SIM, tmp_path_factory.mktemp("shifted"))
    for rank, path in enumerate(paths):
        _keep_steps(path, 1, 6) if rank == 1 else _keep_steps(path, 0, 5)
    return [str(p) for p in paths]


def _doc(paths: list[str], jobs: int = 1) -> dict:
    outcomes = analyze_many(paths, AnalysisOptions(), jobs=jobs)
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    return summarize([o.result for o in outcomes])


def test_captures_of_other_steps_are_matched_by_step_number(shifted: list[str]) -> None:
    # Matched by position, rank 1's k-th collective (of step k + 1) met the others' k-th (of step k): its
    # clock was put 0.927 ms (one step) off, +0.227 ms instead of -0.7 ms, with residual 0, and its step
    # #k + 1 was compared with the others' #k.
    doc = _doc(shifted)
    want = truth(SIM)
    clocks = doc["clocks"]
    assert clocks["aligned"] and clocks["residual_us"] == 0.0
    assert (
        [o / 1e6 for o in clocks["offsets_ns"]] == want["clock_offset_ms_vs_rank0"] == [0.0, -0.7, 0.0, 3.0]
    )
    assert clocks["matched"] == 5  # the collectives of #1-#5, the steps all four hold
    assert doc["straggler"]["straggler"] == "rank 2" and doc["straggler"]["arrives_last"] == 5
    assert doc["straggler"]["median_wait_ms"] == pytest.approx(
        want["straggler_wait_ms_per_step"][1], abs=1e-9
    )
    assert doc["skew"]["steps"] == 5
    assert doc["skew"]["median_start_skew_ms"] == pytest.approx(want["step_start_skew_ms"][1], abs=1e-9)
    assert (
        "the traces hold other steps (rank 0 #0-#5; rank 1 #1-#6; rank 2 #0-#5; rank 3 #0-#5): steps and "
        "collectives are compared on the 5 steps numbered alike in every trace (#1-#5), not by position"
    ) in doc["warnings"]
    assert [r["iterations"] for r in doc["rows"]] == [6, 6, 6, 6]  # the rows keep every step


def test_step_numbers_reach_the_compact_result(shifted: list[str]) -> None:
    (outcome,) = analyze_many(shifted[1:2], AnalysisOptions(), jobs=1)
    result = outcome.result
    assert list(result["iterations"]["step"]) == [1, 2, 3, 4, 5, 6]
    assert list(result["collective_iterations"]) == [0, 1, 2, 3, 4, 5]
    assert result["world_size"] == 4  # (the simulator's sidecar says it)


def test_the_pool_gives_the_same_step_matching(shifted: list[str]) -> None:
    assert _doc(shifted, jobs=2) == _doc(shifted, jobs=1)


def _steps(n: int, start: int = 0, offset: int = 0) -> list[tuple[int, int]]:
    return [
        (EPOCH + offset + (start + i) * 1_000_000, EPOCH + offset + (start + i) * 1_000_000 + 900_000)
        for i in range(n)
    ]


def _numbered(
    name: str, rank: int, numbers: list[int], ends: list[int], its: list[int], offset: int = 0
) -> dict:
    """A compact result whose steps are ``ProfilerStep#numbers`` (step n at EPOCH + n ms, on a clock
    ``offset`` ns ahead) and whose collectives end at ``ends`` (true ns) in iterations ``its``."""
    r = compact_result(name, rank, [e + offset for e in ends], steps=_steps(len(numbers), numbers[0], offset))
    r["iterations"]["step"] = np.array(numbers)
    r["collective_iterations"] = its
    return r


def test_captures_without_a_common_step_are_not_compared() -> None:
    # rank 1 recorded steps #10-#11, rank 0 #0-#1 (other runs of one job, or a capture far later): the
    # collectives matched by position are of other steps, whatever their residual says.
    a = _numbered("a", 0, [0, 1], [EPOCH + 800_000, EPOCH + 1_800_000], [0, 1])
    b = _numbered("b", 1, [10, 11], [EPOCH + 10_800_000, EPOCH + 11_800_000], [0, 1])
    doc = summarize([a, b])
    why = "no step number is common to every trace (rank 0 #0-#1; rank 1 #10-#11): they recorded other steps"
    assert doc["clocks"] == {"aligned": False, "why": why, "offsets_ns": None, "matched": 0}
    assert doc["slowest_by_step"] == {"why": why}
    assert "straggler" not in doc and "skew" not in doc


def test_same_step_numbers_keep_the_positional_matching() -> None:
    a = _numbered("a", 0, [3, 4], [EPOCH + 3_800_000, EPOCH + 4_800_000], [0, 1])
    b = _numbered("b", 1, [3, 4], [EPOCH + 3_800_000, EPOCH + 4_800_000], [0, 1], offset=250_000)
    doc = summarize([a, b])
    assert doc["clocks"]["offsets_ns"] == [0, 250_000] and doc["clocks"]["matched"] == 2
    assert not any("numbered alike" in w for w in doc["warnings"])


def test_a_step_skew_within_the_alignment_residual_is_not_claimed() -> None:
    # Two process groups (TP {0,1} and {2,3}, DP {0,2} and {1,3}): rank 2's k-th all-reduce is often
    # another group's than rank 0's, ending 150 µs later. Every step starts together, yet the median offset
    # (+150 µs) made a 0.150 ms start skew that was reported as measured.
    ends = [EPOCH + 360_000, EPOCH + 700_000, EPOCH + 1_040_000]
    a = compact_result("a", 0, ends, steps=[(EPOCH, EPOCH + 1_100_000)])
    b = compact_result(
        "b", 2, [ends[0] + 150_000, ends[1] + 150_000, ends[2]], steps=[(EPOCH, EPOCH + 1_100_000)]
    )
    doc = summarize([a, b])
    assert doc["clocks"]["offsets_ns"] == [0, 150_000] and doc["clocks"]["residual_us"] == 150.0
    skew = doc["skew"]
    assert skew["max_start_skew_ms"] is None and skew["median_start_skew_ms"] is None  # no figure beside it
    assert skew["why"] == (
        "the largest, 0.150 ms, is no more than the clock alignment's residual (0.150 ms): not told from no skew"
    )
    assert doc["straggler"]["straggler"] is None


def test_a_skew_beyond_the_residual_is_still_given() -> None:
    ends = [EPOCH + 360_000, EPOCH + 610_000]
    a = compact_result("a", 0, ends, steps=[(EPOCH, EPOCH + 960_000)])
    b = compact_result("b", 1, [e + 1_000 for e in ends], steps=[(EPOCH + 51_000, EPOCH + 960_000)])
    skew = summarize([a, b])["skew"]
    assert skew["max_start_skew_ms"] == pytest.approx(0.05, abs=1e-12) and "why" not in skew


def _sized(name: str, rank: int, size: int | None) -> dict:
    r = compact_result(name, rank, [EPOCH + 500_000, EPOCH + 2_500_000])
    r["world_size"] = size
    return r


def test_a_missing_rank_of_the_world_size_is_said() -> None:
    doc = summarize([_sized("r0", 0, 4), _sized("r1", 1, 4), _sized("r3", 3, 4)])
    assert doc["clocks"]["aligned"]
    assert (
        "3 of the 4 ranks the traces say their job has are here (missing: rank 2): the straggler, the skew and "
        "the spread are among these ranks only"
    ) in doc["warnings"]
    full = summarize([_sized(f"r{r}", r, 4) for r in range(4)])
    assert not any("ranks the traces say" in w for w in full["warnings"])


def test_traces_of_other_world_sizes_are_not_aligned() -> None:
    doc = summarize([_sized("r0", 0, 4), _sized("r1", 1, 8)])
    assert doc["clocks"] == {
        "aligned": False,
        "why": "the traces say different world sizes (4 in rank 0; 8 in rank 1): they are not the ranks of one job",
        "offsets_ns": None,
        "matched": 0,
    }
    doc = summarize([_sized("r0", 0, 4), _sized("r5", 5, None)])
    assert doc["clocks"]["why"] == (
        "rank 5: outside the world size of 4 that rank 0 say: they are not the ranks of one job"
    )


def test_a_trace_given_twice_is_summarized_once(tmp_path: Path) -> None:
    # The same file by a second path (or a link to it) was a second row claiming the same rank, and the
    # clocks were "not aligned: rank 0 is claimed by 2 traces: they are not the ranks of one job".
    sim = RankSimulation(ranks=2, steps=3, kernels=4)
    first, second = (str(p) for p in write_ranks(sim, tmp_path / "ranks"))
    link = tmp_path / "again.json.gz"
    os.symlink(first, link)
    again = str(tmp_path / "ranks" / ".." / "ranks" / Path(first).name)
    doc = _doc([first, again, str(link), second])
    assert [r["trace"] for r in doc["rows"]] == ["rank 0", "rank 1"]
    assert doc["clocks"]["aligned"] and doc["straggler"]["straggler"] == "rank 1"
    for repeat in (again, str(link)):
        assert (
            f"{repeat} is the same recording as {first} (the same file twice, a link or a copy): summarized once"
        ) in doc["warnings"]


def test_a_copy_of_a_trace_is_the_same_recording() -> None:
    a = compact_result("a", 0, [EPOCH + 500_000], path="/nowhere/a")
    copy = {**compact_result("b", 0, [EPOCH + 500_000], path="/nowhere/b")}
    doc = summarize([a, copy, compact_result("c", 1, [EPOCH + 500_000], path="/nowhere/c")])
    assert [r["trace"] for r in doc["rows"]] == ["rank 0", "rank 1"]
    # without collectives nothing tells two recordings apart: both kept
    doc = summarize(
        [compact_result("a", None, path="/nowhere/a"), compact_result("b", None, path="/nowhere/b")]
    )
    assert doc["traces"] == 2
