"""The notebook API and the many-traces path against the command line (round 20, helper api20).

Every trace here is SYNTHETIC: the multi-rank simulator's (``tracekit.simulate.ranks``: its truth is known to
the nanosecond), some edited after writing (steps cut, collectives removed, a file damaged), all written into
pytest's temporary folders with "synthetic" in their names.

With ``RankSimulation(ranks=3, steps=6, kernels=8)`` (the defaults otherwise): a step lasts 0.634 ms on rank 0
(0.631 and 0.628 on ranks 1 and 2, whose hosts start it 3 and 6 µs later), rank 1 is the straggler, arriving
last at every all-reduce 0.100 ms after the median of the others, the steps start 0.006 ms apart, and the
communication per step is 0.223 / 0.120 / 0.217 ms (exposed: 30 µs less each: 0.193 / 0.090 / 0.187).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

import tracekit
from tracekit import api
from tracekit.errors import TracekitError
from tracekit.simulate.ranks import RankSimulation, truth, write_ranks

SIM = {"ranks": 3, "steps": 6, "kernels": 8}
ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_traces/synthetic/table3_pytorch/pytorch_b1_s128.synthetic.sqlite"


# ------------------------------------------------------------------------------------------- helpers


def _events(path: Path) -> dict[str, Any]:
    return json.loads(gzip.decompress(path.read_bytes()))


def _put(path: Path, doc: dict[str, Any]) -> None:
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))


def _keep_steps(path: Path, first: int, stop: int | None = None) -> None:
    """Keep the events of steps ``first`` .. ``stop`` - 1 only (a capture begun or ended at another step)."""
    doc = _events(path)
    starts = [float(e["ts"]) for e in doc["traceEvents"] if e["name"].startswith("ProfilerStep#")]
    lo = starts[first]
    hi = starts[stop] if stop is not None and stop < len(starts) else float("inf")
    doc["traceEvents"] = [e for e in doc["traceEvents"] if lo <= float(e["ts"]) < hi]
    _put(path, doc)


def _unnumbered(paths: list[Path]) -> None:
    """The step ranges renamed "iteration": no step numbers to compare the traces by."""
    for path in paths:
        doc = _events(path)
        for e in doc["traceEvents"]:
            if e["name"].startswith("ProfilerStep#"):
                e["name"] = "iteration"
        _put(path, doc)


def _without_collectives(path: Path) -> None:
    """The NCCL kernels and their launch calls removed: a rank that recorded no communication."""
    doc = _events(path)
    nccl = {e["args"]["correlation"] for e in doc["traceEvents"] if "nccl" in e["name"]}
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("args", {}).get("correlation") not in nccl]
    _put(path, doc)


def _ranks(tmp_path: Path, **changes: Any) -> tuple[list[Path], dict[str, Any]]:
    sim = RankSimulation(**{**SIM, **changes})
    return write_ranks(sim, tmp_path / "ranks"), truth(sim)


def _rows(doc: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    return {
        r["trace"]: (r["iterations"], r["median_latency_ms"], r["mean_comm_ms"], r["mean_exposed_comm_ms"])
        for r in doc["rows"]
    }


ALL_ROWS = {
    "rank 0": (6, 0.634, 0.223, 0.193),
    "rank 1": (6, 0.631, 0.120, 0.090),
    "rank 2": (6, 0.628, 0.217, 0.187),
}


def _straggler(doc: dict[str, Any]) -> tuple[Any, ...]:
    s = doc["straggler"]
    return (s["straggler"], s["arrives_last"], s["collectives"], s["median_wait_ms"], s["total_wait_ms"])


def _skew(doc: dict[str, Any]) -> tuple[Any, ...]:
    k = doc["skew"]
    return (k["steps"], k["median_start_skew_ms"], k["max_start_skew_ms"])


# ------------------------------------------------------------------ the simulator's truth, odd settings


def test_the_truth_of_the_default_settings_through_the_api(tmp_path: Path) -> None:
    paths, want = _ranks(tmp_path)
    doc = tracekit.analyze_many(paths, jobs=1)
    assert _rows(doc) == ALL_ROWS
    assert [r["mean_comm_ms"] for r in doc["rows"]] == pytest.approx(want["comm_ms_per_rank"], abs=1e-9)
    assert doc["clocks"]["offsets_ns"] == [0, 0, 2_500_000] and doc["clocks"]["residual_us"] == 0.0
    assert _straggler(doc) == ("rank 1", 6, 6, 0.1, pytest.approx(0.6, abs=1e-12))
    assert _skew(doc) == (6, 0.006, 0.006)
    assert doc["warnings"] == [] and doc["failed"] == []


def test_clock_offsets_longer_than_a_step_are_recovered_exactly(tmp_path: Path) -> None:
    """+7.3 ms and -4.1 ms: eleven and six steps of 0.674 ms (step and gap)."""
    paths, _ = _ranks(tmp_path, clock_offset_ns=[0, 7_300_000, -4_100_000])
    doc = tracekit.analyze_many(paths, jobs=1)
    assert doc["clocks"]["aligned"] and doc["clocks"]["offsets_ns"] == [0, 7_300_000, -4_100_000]
    assert doc["clocks"]["residual_us"] == 0.0 and doc["clocks"]["matched"] == 6
    assert _straggler(doc) == ("rank 1", 6, 6, 0.1, pytest.approx(0.6, abs=1e-12))
    assert _skew(doc) == (6, 0.006, 0.006)
    assert _rows(doc) == ALL_ROWS


def test_a_rank_holding_fewer_steps_is_compared_on_the_steps_all_hold(tmp_path: Path) -> None:
    paths, _ = _ranks(tmp_path)
    _keep_steps(paths[2], 0, 4)  # rank 2's capture ended two steps early
    doc = tracekit.analyze_many(paths, jobs=1)
    assert _rows(doc) == {**ALL_ROWS, "rank 2": (4, 0.628, 0.217, 0.187)}
    assert doc["clocks"]["offsets_ns"] == [0, 0, 2_500_000] and doc["clocks"]["matched"] == 4
    assert _straggler(doc) == ("rank 1", 4, 4, 0.1, pytest.approx(0.4, abs=1e-12))
    assert _skew(doc) == (4, 0.006, 0.006)
    assert doc["spread"]["on_steps"] == "#0-#3"


def test_a_capture_begun_two_steps_later_by_step_number(tmp_path: Path) -> None:
    paths, _ = _ranks(tmp_path, clock_offset_ns=[0, 0, 3_000_000])
    _keep_steps(paths[2], 2)
    doc = tracekit.analyze_many(paths, jobs=1)
    assert doc["clocks"]["offsets_ns"] == [0, 0, 3_000_000] and doc["clocks"]["residual_us"] == 0.0
    assert _straggler(doc) == ("rank 1", 4, 4, 0.1, pytest.approx(0.4, abs=1e-12))
    assert _skew(doc) == (4, 0.006, 0.006)
    assert doc["spread"]["on_steps"] == "#2-#5"


def test_the_same_without_step_numbers_is_not_aligned_and_shows_no_straggler_or_skew(tmp_path: Path) -> None:
    """4 collectives against 6, no step numbers: matched from the first or from the last, both fit (the
    steps are alike), so which collective is which is not known: no offset, straggler or skew is shown."""
    paths, _ = _ranks(tmp_path, clock_offset_ns=[0, 0, 3_000_000])
    _keep_steps(paths[2], 2)
    _unnumbered(paths)
    doc = tracekit.analyze_many(paths, jobs=1)
    assert doc["clocks"]["aligned"] is False and doc["clocks"]["offsets_ns"] is None
    assert "both fit" in doc["clocks"]["why"]
    assert "straggler" not in doc and "skew" not in doc
    assert any(w.startswith("clocks not aligned (") for w in doc["warnings"])


def test_a_rank_without_communication_kernels(tmp_path: Path) -> None:
    paths, _ = _ranks(tmp_path)
    _without_collectives(paths[2])
    doc = tracekit.analyze_many(paths, jobs=1)
    # rank 2 has no communication (None: no such kernel), its step as long as before; the others exact
    assert _rows(doc) == {**ALL_ROWS, "rank 2": (6, 0.628, None, None)}
    assert doc["clocks"] == {
        "aligned": False,
        "why": "no collective kernels to align on in rank 2",
        "offsets_ns": None,
        "matched": 0,
    }
    assert "straggler" not in doc and "skew" not in doc
    assert doc["warnings"] == [
        "clocks not aligned (no collective kernels to align on in rank 2): straggler by arrival, start skew and "
        "ends-last are not computed; 'slowest by step' compares durations only"
    ]


def test_captures_seconds_apart_on_wall_clocks_are_not_compared(tmp_path: Path) -> None:
    """Rank 1's clock 3 s ahead: beyond the 1 s one job's hosts may differ by, so its steps are not known to
    be the others' (the simulator's clocks count from 1.7e18 ns, wall-clock time)."""
    paths, _ = _ranks(tmp_path, clock_offset_ns=[0, 3_000_000_000, 0])
    doc = tracekit.analyze_many(paths, jobs=1)
    assert doc["clocks"]["aligned"] is False and "3.000 s after rank 0's" in doc["clocks"]["why"]
    assert "straggler" not in doc and "skew" not in doc and "why" in doc["slowest_by_step"]
    assert _rows(doc) == ALL_ROWS


def test_a_rank_whose_file_fails_is_one_line_and_the_others_are_summarized(tmp_path: Path) -> None:
    paths, _ = _ranks(tmp_path)
    paths[1].write_bytes(paths[1].read_bytes()[:200])
    doc = tracekit.analyze_many(paths, jobs=1)
    assert doc["failed"] == [
        {
            "path": str(paths[1]),
            "error": f"{paths[1]}: damaged gzip file (Compressed file ended before the end-of-stream marker "
            "was reached)",
        }
    ]
    assert _rows(doc) == {k: v for k, v in ALL_ROWS.items() if k != "rank 1"}
    # without rank 1, rank 2 (whose host starts each step 6 µs after rank 0's) arrives last, 6 µs late
    assert _straggler(doc) == ("rank 2", 6, 6, 0.006, pytest.approx(0.036, abs=1e-12))
    assert doc["warnings"] == [
        "2 of the 3 ranks the traces say their job has are here (missing: rank 1): the straggler, the skew and "
        "the spread are among these ranks only"
    ]


def test_one_rank_is_one_row_and_nothing_compared(tmp_path: Path) -> None:
    paths, _ = _ranks(tmp_path)
    doc = tracekit.analyze_many(paths[1], jobs=1)
    assert _rows(doc) == {"rank 1": ALL_ROWS["rank 1"]}
    assert doc["clocks"] == {"aligned": False, "why": "one trace", "offsets_ns": None, "matched": 0}
    assert not {"straggler", "skew", "spread", "slowest_by_step"} & set(doc)


def test_identical_ranks_have_no_straggler_and_no_skew(tmp_path: Path) -> None:
    sim = RankSimulation(**SIM, host_delay_ns=[0, 0, 0], clock_offset_ns=[0, 0, 0])
    sim.straggler_factor = 1.0  # (after the check: every rank the same, none arrives last)
    paths = write_ranks(sim, tmp_path / "same")
    doc = tracekit.analyze_many(paths, jobs=1)
    assert set(_rows(doc).values()) == {(6, 0.531, 0.12, 0.09)}
    assert doc["straggler"] == {"straggler": None, "collectives": 6}
    assert _skew(doc) == (6, 0.0, 0.0)
    assert doc["slowest_by_step"] == {"steps": 6}


# ------------------------------------------------------------------------- jobs, cache, the command line


def _cli(args: list[str]) -> tuple[int, str]:
    from tracekit.cli import main
    from tracekit.io import forget_inputs

    forget_inputs()
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(args)
    forget_inputs()
    return code, out.getvalue()


def test_one_job_and_two_give_the_same_json_with_a_failed_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACEKIT_NO_PROGRESS", "1")
    paths, _ = _ranks(tmp_path, clock_offset_ns=[0, 7_300_000, -4_100_000])
    bad = tmp_path / "broken.synthetic.json.gz"
    bad.write_bytes(paths[0].read_bytes()[:300])
    args = ["analyze", *map(str, paths), str(bad), "--format", "json", "--quiet"]
    one, two = _cli([*args, "--jobs", "1"]), _cli([*args, "--jobs", "2"])
    assert one[0] == two[0] == 1
    assert one[1] == two[1]
    doc = json.loads(one[1])
    assert doc["clocks"]["offsets_ns"] == [0, 7_300_000, -4_100_000]
    assert [f["path"] for f in doc["failed"]] == [str(bad)]
    # the API's document is the program's, value for value (the program rounds to 12 digits)
    from tracekit.renderers.tabular import rounded

    assert json.loads(json.dumps(rounded(tracekit.analyze_many([*paths, bad], jobs=1)))) == doc


def test_the_cache_reads_a_file_rewritten_with_its_size_and_mtime_again(tmp_path: Path) -> None:
    """A rank trace rewritten in place, same size and modification time, its compute kernels 12.5 µs shorter
    (62.500 -> 50.000 µs on the straggler): the cache must not answer from the old entry."""
    paths, _ = _ranks(tmp_path)
    plain = []
    for p in paths:
        target = p.with_name(p.name.removesuffix(".gz"))
        target.write_bytes(gzip.decompress(p.read_bytes()))
        plain.append(target)
    cache = tmp_path / "cache"
    before = tracekit.analyze_many(plain, jobs=1, cache_dir=cache)
    assert before["rows"][1]["mean_gpu_busy_ms"] == pytest.approx(0.62, abs=1e-12)
    f = plain[1]
    st = f.stat()
    text = f.read_text()
    changed = text.replace('"dur": 62.500', '"dur": 50.000')
    assert changed != text and len(changed) == len(text)
    f.write_text(changed)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (f.stat().st_size, f.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    after = tracekit.analyze_many(plain, jobs=1, cache_dir=cache)
    fresh = tracekit.analyze_many(plain, jobs=1)
    assert after == fresh
    # 8 kernels of 50 µs back to back, then the all-reduce and its overlapping kernel: 0.52 ms busy
    assert after["rows"][1]["mean_gpu_busy_ms"] == pytest.approx(0.52, abs=1e-12)


# ---------------------------------------------------------------------------------- the API's defects


def _types(value: Any, where: str = "doc") -> list[str]:
    """Where ``value`` holds something other than plain Python JSON values."""
    if isinstance(value, dict):
        return [d for k, v in value.items() for d in _types(v, f"{where}.{k}")]
    if isinstance(value, list):
        return [d for i, v in enumerate(value) for d in _types(v, f"{where}[{i}]")]
    if value is None or type(value) in (bool, int, float, str):
        return []
    return [f"{where}: {type(value).__name__}"]


def test_the_many_trace_document_holds_plain_python_numbers(tmp_path: Path) -> None:
    """The skew's figures had been numpy scalars (a notebook showed ``np.float64(0.006)``, and
    ``type(x) is float`` failed), where the program's JSON holds numbers."""
    paths, _ = _ranks(tmp_path)
    doc = tracekit.analyze_many(paths, jobs=1)
    assert _types(doc) == []
    assert doc["skew"] == {"steps": 6, "median_start_skew_ms": 0.006, "max_start_skew_ms": 0.006}


def test_analyze_many_takes_the_keywords_of_analyze(tmp_path: Path) -> None:
    """``tracekit.analyze(path, skip=2)`` has its like for many traces (it had been a TypeError: the options
    only as an Options object); a dict in place of the options is one line, not an AttributeError."""
    paths, _ = _ranks(tmp_path)
    doc = tracekit.analyze_many(paths, jobs=1, skip=2)
    assert [r["iterations"] for r in doc["rows"]] == [4, 4, 4]
    assert doc == tracekit.analyze_many(paths, api.Options(skip=2), jobs=1)
    assert _skew(doc) == (4, 0.006, 0.006)
    with pytest.raises(TracekitError, match=r"^options: an Options \(tracekit\.api\.Options\), not dict"):
        tracekit.analyze_many(paths, {"skip": 2})  # type: ignore[arg-type]
    with pytest.raises(TracekitError, match=r"^give either options or the keywords \(skip\), not both"):
        tracekit.analyze_many(paths, api.Options(), skip=2)
    with pytest.raises(TracekitError, match="skip"):
        tracekit.analyze_many(paths, skip=-1)


def test_analyze_many_of_no_path_says_so() -> None:
    """It had said "none of the 0 traces could be analyzed"."""
    with pytest.raises(TracekitError, match=r"^no traces to analyze"):
        tracekit.analyze_many([])


#: Columns of the API's frames whose names carry no unit: the docstrings must name each (with its unit).
TABLE_UNITLESS = (
    "iterations",
    "untraced_ci_low",
    "untraced_ci_high",
    "gpu_utilization",
    "sms_active",
    "warp_occupancy",
    "sms_active_kernel_time",
    "warp_occupancy_kernel_time",
)
CONFIG_UNITLESS = (
    "iterations",
    "skipped_iterations",
    "latency_ci_low",
    "latency_ci_high",
    "latency_cv",
    "latency_iterations",
    "latency_dropped",
    "traced_kept_iterations",
    "profiler_ratio",
    "framework_overhead_fraction",
    "gpu_utilization",
    "kernels",
    "launches",
    "idle_gaps",
    "latency_vs_smallest",
    "throughput_per_s",
)
SWEEP_UNITLESS = (
    "latency_ci_low",
    "transition_latency_ratio",
    "headroom_latency_ratio",
    "headroom_throughput_gain",
)


def test_the_table_and_report_docstrings_give_each_unitless_column_its_unit() -> None:
    """``tracekit.table`` mixes a fraction (gpu_utilization 0.156) and percents (sms_active 9.708) in one row;
    its docstring had said neither, nor what any column means."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = tracekit.table([SAMPLE])
        report = tracekit.report([ROOT / "sample_traces/synthetic/sweep_pytorch"])
    for frame, names, doc in (
        (table, TABLE_UNITLESS, api.table.__doc__),
        (report.configs, CONFIG_UNITLESS, api.Report.__doc__),
        (report.sweeps, SWEEP_UNITLESS, api.Report.__doc__),
    ):
        assert set(names) <= set(frame.columns)
        assert [n for n in names if f"``{n}``" not in (doc or "")] == []
    row = table.row(0, named=True)
    # the units said are the values' units: utilization the mean of each iteration's busy / latency (a
    # fraction), SMs active a percent (nsys' "SMs Active [Throughput %]")
    assert row["gpu_utilization"] == tracekit.analyze(SAMPLE).summary.mean("gpu_utilization")
    assert row["gpu_utilization"] == pytest.approx(0.155545828576, rel=1e-11)
    assert row["sms_active"] == pytest.approx(9.70810306199, rel=1e-11)
    assert row["sms_active_metric"] == "SMs Active [Throughput %]"
    assert "percent" in api.table.__doc__ and "fraction" in api.table.__doc__
    config = report.configs.row(0, named=True)
    assert config["throughput_per_s"] == pytest.approx(1e3 * config["batch_size"] / config["latency_ms"])


def test_the_analyze_many_docstring_names_every_key_it_returns(tmp_path: Path) -> None:
    paths, _ = _ranks(tmp_path)
    doc = tracekit.analyze_many(paths, jobs=1)
    text = api.analyze_many.__doc__ or ""
    keys = (
        set(doc)
        | set(doc["rows"][0])
        | set(doc["clocks"])
        | set(doc["straggler"])
        | set(doc["skew"])
        | set(doc["spread"]) - {"note"}
        | set(doc["slowest_by_step"]) - {"note"}
    )
    assert sorted(k for k in keys if f"``{k}``" not in text) == []


# ---------------------------------------------------------------------------- others' files (strict xfail)


def test_the_ops_and_ranges_docstrings_say_their_times_are_nanoseconds() -> None:
    a = tracekit.analyze(SAMPLE)
    assert {"start", "end", "call_start", "call_end"} <= set(a.ops.columns)
    assert {"range_start", "range_end"} <= set(a.ranges.columns)
    first = a.iterations.row(0, named=True)
    # the range of the first analyzed iteration is its start_ns / end_ns, to the nanosecond
    ranges = a.ranges.filter(a.ranges["iteration"] == first["index"])
    assert ranges.select("range_start", "range_end").row(0) == (first["start_ns"], first["end_ns"])
    from tracekit.analysis import Analysis

    for prop in (Analysis.ops, Analysis.ranges):
        doc = prop.__doc__ or ""
        assert "nanosecond" in doc or " ns" in doc, prop


# ------------------------------------------------------------------ collectives past the compact result's cap


def _later_unnumbered(tmp_path: Path, steps: int, later: int) -> list[Path]:
    """Two ranks of ``steps`` steps, rank 1's capture begun ``later`` steps later, no step numbers."""
    paths = write_ranks(
        RankSimulation(ranks=2, steps=steps, kernels=2, clock_offset_ns=[0, 2_500_000]), tmp_path / "cap"
    )
    _keep_steps(paths[1], later)
    _unnumbered(paths)
    return paths


def test_the_compact_result_counts_the_collectives_past_its_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker keeps the first MAX_COLLECTIVES collectives of a trace; how many it held is carried beside
    them (``collectives_total``), so that traces of 12 and 10 collectives are not read as 8 and 8."""
    from tracekit.fleet import compact

    paths = _later_unnumbered(tmp_path, 12, 2)
    monkeypatch.setattr(compact, "MAX_COLLECTIVES", 8)
    for path, total in zip(paths, (12, 10), strict=True):
        result = compact.compact(tracekit.analyze(path))
        assert (len(result["collective_ends_ns"]), result["collectives_total"]) == (8, total)
    monkeypatch.setattr(compact, "MAX_COLLECTIVES", 4096)
    result = compact.compact(tracekit.analyze(paths[1]))
    assert (len(result["collective_ends_ns"]), result["collectives_total"]) == (10, 10)


def test_collectives_past_the_cap_are_not_aligned_by_position(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracekit.fleet import compact

    paths = _later_unnumbered(tmp_path, 12, 2)
    below = tracekit.analyze_many(paths, jobs=1)
    assert below["clocks"]["aligned"] is False and "both fit" in below["clocks"]["why"]
    monkeypatch.setattr(compact, "MAX_COLLECTIVES", 8)  # (4,096 in use: the same with 4,300 steps)
    past = tracekit.analyze_many(paths, jobs=1)
    # now: aligned on 8 collective ends, offsets [0, 3_098_000]: 2.5 ms + 2 steps of 0.299 ms, residual 0
    assert past["clocks"]["aligned"] is False, past["clocks"]
    assert "straggler" not in past and "skew" not in past
