"""Many traces at once: the cross-rank truth of simulated rank traces recovered exactly, and the same answers
serially, in a local process pool and on a Dask cluster."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tracekit.analyzers.ranks import summarize
from tracekit.fleet.compact import covered, merge_intervals
from tracekit.fleet.run import analyze_many
from tracekit.session import AnalysisOptions
from tracekit.simulate.ranks import RankSimulation, truth, write_ranks

SIM = RankSimulation(ranks=4, steps=6, kernels=12, straggler=2, clock_offset_ns=[0, -700_000, 0, 3_000_000])


@pytest.fixture(scope="module")
def rank_traces(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return [str(p) for p in write_ranks(SIM, tmp_path_factory.mktemp("ranks"))]


def _doc(outcomes: list) -> dict:
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    return summarize([o.result for o in outcomes])


def test_simulated_rank_truth_recovered_exactly(rank_traces: list[str]) -> None:
    doc = _doc(analyze_many(rank_traces, AnalysisOptions(), jobs=1))
    want = truth(SIM)
    assert [r["trace"] for r in doc["rows"]] == ["rank 0", "rank 1", "rank 2", "rank 3"]
    clocks = doc["clocks"]
    assert clocks["aligned"] and clocks["residual_us"] == 0.0 and clocks["matched"] == SIM.steps
    assert (
        [o / 1e6 for o in clocks["offsets_ns"]] == want["clock_offset_ms_vs_rank0"] == [0.0, -0.7, 0.0, 3.0]
    )
    straggler = doc["straggler"]
    assert straggler["straggler"] == f"rank {want['straggler_rank']}"
    assert straggler["arrives_last"] == want["straggler_arrives_last"] == SIM.steps
    assert straggler["median_wait_ms"] == pytest.approx(want["straggler_wait_ms_per_step"][0], abs=1e-9)
    assert doc["skew"]["median_start_skew_ms"] == pytest.approx(want["step_start_skew_ms"][0], abs=1e-9)
    assert [r["mean_comm_ms"] for r in doc["rows"]] == pytest.approx(want["comm_ms_per_rank"], abs=1e-9)
    assert [r["mean_exposed_comm_ms"] for r in doc["rows"]] == pytest.approx(
        want["exposed_comm_ms_per_rank"], abs=1e-9
    )


def test_pool_gives_the_serial_answer_field_by_field(rank_traces: list[str]) -> None:
    serial = analyze_many(rank_traces, AnalysisOptions(), jobs=1)
    pooled = analyze_many(rank_traces, AnalysisOptions(), jobs=2)
    assert [o.path for o in pooled] == rank_traces  # input order, whatever finished first
    assert [o.result for o in pooled] == [o.result for o in serial]


def test_dask_local_cluster_gives_the_serial_answer(rank_traces: list[str]) -> None:
    distributed = pytest.importorskip("distributed")
    serial = analyze_many(rank_traces, AnalysisOptions(), jobs=1)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as c:
        on_dask = analyze_many(rank_traces, AnalysisOptions(), scheduler=c.scheduler_address)
    assert [o.result for o in on_dask] == [o.result for o in serial]


def test_a_bad_trace_is_one_line_and_the_others_go_on(rank_traces: list[str], tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('{"traceEvents": [')
    seen: list[str] = []
    outcomes = analyze_many(
        [rank_traces[0], str(bad), rank_traces[1]],
        AnalysisOptions(),
        jobs=2,
        on_done=lambda o: seen.append(o.path),
    )
    assert [o.ok for o in outcomes] == [True, False, True]
    assert "\n" not in outcomes[1].error and str(bad) in outcomes[1].error
    assert sorted(seen) == sorted([rank_traces[0], str(bad), rank_traces[1]])


def test_without_collectives_clocks_are_not_aligned_and_said_so(tmp_path: Path) -> None:
    sample = Path(__file__).resolve().parents[1] / "sample_traces" / "h200_bert_fp16"
    paths = [
        str(sample / "pytorch" / "pytorch_b1_s128.torch.json.gz"),
        str(sample / "cuda-graphs" / "cuda-graphs_b1_s128.torch.json.gz"),
    ]
    doc = _doc(analyze_many(paths, AnalysisOptions(), jobs=1))
    assert doc["clocks"]["aligned"] is False and "no collective kernels" in doc["clocks"]["why"]
    assert "straggler" not in doc and "skew" not in doc
    assert doc["spread"]["slowest"] == "pytorch_b1_s128.torch.json.gz"
    assert doc["warnings"][0].startswith("clocks not aligned")


def test_cache_reanalysis_equals_first_and_misses_on_change(rank_traces: list[str], tmp_path: Path) -> None:
    from tracekit.fleet import cache

    cache_dir = tmp_path / "cache"
    first = analyze_many(rank_traces[:1], AnalysisOptions(), jobs=1, cache_dir=str(cache_dir))
    entries = [p for p in cache_dir.iterdir() if p.is_dir()]
    assert len(entries) == 1 and entries[0].name.startswith(cache.READER_VERSION)
    again = analyze_many(
        rank_traces[:1], AnalysisOptions(range_name="ProfilerStep#*"), jobs=1, cache_dir=str(cache_dir)
    )
    assert again[0].result == first[0].result
    copy = tmp_path / "copy.json.gz"
    copy.write_bytes(Path(rank_traces[1]).read_bytes())
    analyze_many([str(copy)], AnalysisOptions(), jobs=1, cache_dir=str(cache_dir))
    assert len([p for p in cache_dir.iterdir() if p.is_dir()]) == 2


def test_interval_union_and_cover() -> None:
    s, e = merge_intervals(np.array([5, 0, 2, 20]), np.array([8, 3, 4, 25]))
    assert s.tolist() == [0, 5, 20] and e.tolist() == [4, 8, 25]
    assert covered(s, e, np.array([0, 3, 6, 30]), np.array([30, 6, 22, 40])).tolist() == [12, 2, 4, 0]


def test_truth_file_written_beside_the_traces(rank_traces: list[str]) -> None:
    data = json.loads((Path(rank_traces[0]).parent / "ranks.synthetic.truth.json").read_text())
    assert data["synthetic"] is True and data["straggler_rank"] == 2
