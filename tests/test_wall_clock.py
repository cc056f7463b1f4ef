"""The wall-clock time of a trace's timestamp 0 (``meta["wall_clock_base_ns"]``), which lets the many-trace
summary tell captures made at other times from one job's ranks (:func:`tracekit.analyzers.ranks.captured_apart`).
SYNTHETIC Nsight Systems exports built here; the real exports in ../shared are read where present."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.conftest import real_trace
from tests.nsys_builder import NsysBuilder
from tracekit.fleet.run import analyze_many
from tracekit.readers import read_trace
from tracekit.session import AnalysisOptions

ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
STEPS = 4


def _rank_export(path: Path, epoch_ns: int | None, late_us: int = 0, first_s: float = 1.0) -> str:
    """One rank's capture: 4 ``ProfilerStep#5..8`` of 1 ms from ``first_s`` after the session start, each a
    GEMM and an all-reduce ending 900 µs into the step (arriving ``late_us`` later); ``epoch_ns``: the session
    start in ``TARGET_INFO_SESSION_START_TIME`` (None: no such table)."""
    b = NsysBuilder()
    b.gpu(0, "Synthetic GPU")
    corr = 1
    for step in range(STEPS):
        s0 = round(first_s * 1e9) + step * 1_000_000
        b.nvtx_range(s0, s0 + 1_000_000, f"ProfilerStep#{step + 5}")
        b.runtime(s0 + 10_000, s0 + 11_000, "cudaLaunchKernel_v7000", correlation=corr)
        b.kernel(s0 + 50_000, s0 + 350_000, "sm90_gemm_synthetic", correlation=corr)
        b.runtime(s0 + 20_000, s0 + 21_000, "cudaLaunchKernel_v7000", correlation=corr + 1)
        b.kernel(s0 + 400_000 + late_us * 1000, s0 + 900_000, ALLREDUCE, correlation=corr + 1)
        corr += 2
    out = b.write(path)
    if epoch_ns is not None:
        with sqlite3.connect(out) as con:
            con.execute(
                "CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT)"
            )
            con.execute("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (?, 'x', 'x')", (epoch_ns,))
    return str(out)


START = 1_790_000_000_000_000_000  # 2026-09-21, ns since the epoch


def test_an_nsys_export_says_the_wall_clock_time_of_its_timestamp_zero(tmp_path: Path) -> None:
    assert (
        read_trace(_rank_export(tmp_path / "a.synthetic.sqlite", START)).meta["wall_clock_base_ns"] == START
    )
    assert "wall_clock_base_ns" not in read_trace(_rank_export(tmp_path / "b.synthetic.sqlite", None)).meta
    # a zeroed or implausible field says nothing
    assert "wall_clock_base_ns" not in read_trace(_rank_export(tmp_path / "c.synthetic.sqlite", 12345)).meta


def test_real_exports_say_when_their_session_began(real_traces: Path) -> None:
    meta = read_trace(real_trace("nsys", "nsysai_h100_2gpu_1s_fastvideo_2026.2.sqlite")).meta
    assert meta["wall_clock_base_ns"] == 1779630014975716426  # 2026-05-24T13:40:14 UTC, its utcTime


def _summary(paths: list[str]) -> dict:
    from tracekit.analyzers.ranks import summarize

    outcomes = analyze_many(paths, AnalysisOptions(), jobs=1)
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    return summarize([o.result for o in outcomes])


def test_two_ranks_of_one_capture_time_are_compared(tmp_path: Path) -> None:
    """Two captures started 3 ms apart (one job's ranks): aligned, rank b the straggler (150 µs late)."""
    a = _rank_export(tmp_path / "a.synthetic.sqlite", START)
    # (its session began 3 ms later, so its steps come 3 ms earlier on its own clock)
    b = _rank_export(tmp_path / "b.synthetic.sqlite", START + 3_000_000, late_us=150, first_s=0.997)
    doc = _summary([a, b])
    assert doc["clocks"]["aligned"] is True
    assert doc["straggler"]["straggler"] == "b.synthetic.sqlite"


def test_captures_an_hour_apart_with_the_same_step_numbers_are_not_compared(tmp_path: Path) -> None:
    """The same step numbers and collectives, but captured an hour apart: the collectives would align the
    clocks with a 3600 s offset and name a straggler; the wall clock says the steps did not happen together."""
    a = _rank_export(tmp_path / "a.synthetic.sqlite", START)
    b = _rank_export(tmp_path / "b.synthetic.sqlite", START + 3600 * 10**9, late_us=150, first_s=2.0)
    doc = _summary([a, b])
    assert doc["clocks"]["aligned"] is False and "straggler" not in doc and "skew" not in doc
    assert any(w.startswith("steps not compared across traces") for w in doc["warnings"])
    without = _summary(
        [
            _rank_export(tmp_path / "c.synthetic.sqlite", None),
            _rank_export(tmp_path / "d.synthetic.sqlite", None, late_us=150, first_s=2.0),
        ]
    )
    assert without["clocks"]["aligned"] is True  # (no wall clock: nothing tells them apart)


@pytest.mark.parametrize("late", [0, 150])
def test_the_wall_clock_base_leaves_one_traces_analysis_unchanged(tmp_path: Path, late: int) -> None:
    import tracekit

    with_base = tracekit.analyze(_rank_export(tmp_path / "a.synthetic.sqlite", START, late)).to_json()
    without = tracekit.analyze(_rank_export(tmp_path / "b.synthetic.sqlite", None, late)).to_json()
    for doc in (with_base, without):
        doc["trace"].pop("path", None)
    assert with_base["summary"] == without["summary"] and with_base["iterations"] == without["iterations"]


def test_kineto_traces_say_their_wall_clock_base_and_nccl_groups(real_traces: Path) -> None:
    """Kineto writes ``ts`` as µs since ``baseTimeNanoseconds`` (libkineto's ChromeTraceBaseTime: the start of
    the current three-month interval); ``distributedInfo.pg_config`` lists the process groups (gloo ones and
    groups of one rank are no NCCL collective across ranks)."""
    ddp = read_trace(real_trace("kineto", "hta_a100_ddp_nccl_rank0.json.gz")).meta
    assert ddp["wall_clock_base_ns"] == 1711964646000000000 and ddp["process_groups"] == [[0, 1]]
    vllm = read_trace(real_trace("tracelens", "b200_vllm_eager.json.gz")).meta  # 71 groups listed
    assert vllm["process_groups"] == [list(range(8))]
    sglang = read_trace(real_trace("tracelens", "sglang_decode_capture_bs_32_rank0.json.gz")).meta
    assert "process_groups" not in sglang  # (world size 1: every group of one rank)
    old = read_trace(real_trace("kineto", "hta_a100_alexnet_fwd_benchmark.json.gz")).meta
    assert "wall_clock_base_ns" not in old  # epoch-µs timestamps: wall-clock time already


def test_a_kineto_base_is_kept_only_for_timestamps_that_count_from_it() -> None:
    import polars as pl

    from tracekit.readers.kineto import nccl_process_groups, wall_clock_base

    relative = pl.DataFrame({"start": [4_458_676_522_690_655]})
    epoch = pl.DataFrame({"start": [1_695_835_542_514_261_000]})
    assert wall_clock_base(1711964646000000000, relative) == 1711964646000000000
    assert wall_clock_base(1711964646000000000, epoch) is None
    assert wall_clock_base(0, relative) is None and wall_clock_base("1711964646000000000", relative) is None
    assert wall_clock_base(True, relative) is None
    assert (
        wall_clock_base(1711964646000000000, pl.DataFrame({"start": []}, schema={"start": pl.Int64})) is None
    )
    config = [
        {"backend_config": "cuda:nccl", "ranks": [1, 0]},
        {"backend_config": "cpu:gloo,cuda:gloo", "ranks": [0, 1, 2]},
        {"backend_config": "cuda:nccl", "ranks": [0]},
        {"backend_config": "cuda:nccl", "ranks": [0, 1]},
        {"backend_config": "cuda:nccl", "ranks": "0,1"},
        "not a group",
    ]
    assert nccl_process_groups(config) == [[0, 1]] and nccl_process_groups(None) == []
