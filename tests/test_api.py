"""The public Python API: tracekit.analyze/read_trace/table/report match the command line field for field."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import tracekit
from tracekit.cli import main
from tracekit.errors import TracekitError
from tracekit.renderers.tabular import round_float, rounded

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_traces" / "synthetic" / "table3_pytorch" / "pytorch_b1_s128.synthetic.sqlite"
SWEEP = ROOT / "sample_traces" / "synthetic" / "sweep_pytorch"


def test_import_is_light() -> None:
    code = (
        "import sys, tracekit; print(sorted(m for m in ('rich', 'matplotlib', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _program_json(*argv: str) -> dict:
    """The JSON of the ``tracekit`` program run as a user runs it: a separate process (its entry point, its
    own environment handling and exit), not this process' ``main``."""
    env = {**os.environ, "TRACEKIT_NO_PROGRESS": "1"}
    code = "import sys; from tracekit.cli import entry; sys.argv = ['tracekit', *sys.argv[1:]]; entry()"
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(done.stdout)


def test_analyze_matches_cli_json_field_for_field() -> None:
    """Every field of the API's analysis equals the program's JSON (iterations, summary, longest gaps,
    verdict, device, range, warnings), and both equal the simulator's truth for this synthetic trace."""
    a = tracekit.analyze(SAMPLE)
    doc = _program_json("analyze", str(SAMPLE), "--format", "json")
    rows = a.iterations.to_dicts()
    assert len(rows) == len(doc["iterations"]) == 10
    for row, expected in zip(rows, doc["iterations"], strict=True):
        assert set(expected) <= set(row)
        # same values (as the program writes floats: 12 significant digits) and types (int stays int)
        assert rounded({k: row[k] for k in expected}) == expected
    assert rounded(a.summary.to_json()) == doc["summary"]
    assert (
        (a.verdict, a.device, a.range_name)
        == (
            doc["summary"]["bound"],
            doc["trace"]["device"],
            doc["range"],
        )
        == ("framework", "gpu", "iteration")
    )
    assert a.range_choice == doc["range_choice"] and list(a.warnings) == doc["warnings"]
    # the program's ten longest gaps are the API's ten longest, at the same offsets
    gaps = a.idle_gaps.sort("duration_ns", descending=True)
    assert [g["duration_ns"] for g in doc["longest_gaps"]] == gaps["duration_ns"].head(10).to_list()
    by_start = {(g["iteration"], g["start_ns"]): g for g in a.idle_gaps.to_dicts()}
    for g in doc["longest_gaps"]:
        api = by_start[(g["iteration"], g["start_ns"])]
        assert (api["end_ns"], api["offset_ms"]) == (g["end_ns"], g["offset_ms"])
    # and both are the truth the simulator wrote beside the trace (to 1e-12 ms: float rounding of ns / 1e6)
    truth = json.loads(SAMPLE.with_name("pytorch_b1_s128.synthetic.truth.json").read_text())["iterations"]
    for name in ("latency", "gpu_busy", "idle", "dispatch", "launch", "sync"):
        got, want = [r[f"{name}_ms"] for r in rows], [t[f"{name}_ns"] / 1e6 for t in truth]
        assert got == pytest.approx(want, rel=0, abs=1e-12), name
    for name in ("kernels", "launches", "idle_gaps"):
        assert [r[name] for r in rows] == [t[name] for t in truth], name
    assert [r["start_ns"] for r in rows] == [t["start_ns"] for t in truth]


def test_analyze_has_the_idle_time_by_cause() -> None:
    from tracekit.analyzers.attribution import CAUSE_MS

    a = tracekit.analyze(SAMPLE)
    assert set(CAUSE_MS) <= set(a.iterations.columns)
    # busy + the five causes = latency, per iteration (the causes sum to idle_ms)
    summed = a.iterations.select(pl.sum_horizontal(list(CAUSE_MS)) - pl.col("idle_ms")).to_series()
    assert summed.abs().max() < 1e-9
    assert a.summary["dispatch_ms"].p50 == pytest.approx(a.iterations["dispatch_ms"].median())
    assert a.summary["dispatch_ms"].mean > a.summary["launch_ms"].mean > 0
    assert a.source.iterations.attribution.iterations["index"].to_list() == a.iterations["index"].to_list()


def test_analyze_options_and_gaps() -> None:
    a = tracekit.analyze(SAMPLE, range="iteration", skip=2)
    assert a.iterations["index"].to_list() == list(range(2, 10))
    gaps = a.idle_gaps
    assert gaps["iteration"].min() == 2
    # offset_ms: the gap's start after its iteration's window start; a leading gap starts at 0.
    assert gaps.filter(pl.col("position") == "leading")["offset_ms"].to_list() == [0.0] * 8
    assert (gaps["offset_ms"] >= 0).all()
    frame = a.summary.frame()
    assert frame.filter(pl.col("field") == "kernels")["p50"].item() == 400.0
    with pytest.raises(TracekitError, match="skip"):
        tracekit.analyze(SAMPLE, skip=-1)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"skip": -1}, "^skip must be >= 0$"),
        ({"split_idle": -0.5}, r"^split_idle must be a number of ms >= 0 and <= 1e\+12, not -0\.5$"),
        ({"split_idle": float("nan")}, r"^split_idle must be a finite number of ms, not nan$"),
        ({"split_idle": float("inf")}, r"^split_idle must be a finite number of ms, not inf$"),
        (
            {"range": "iteration", "split_idle": 1.0},
            "^range and split_idle exclude each other: use one of them$",
        ),
        ({"bound_threshold": 0.0}, r"^bound_threshold must be in \(0, 1\]$"),
        ({"bound_threshold": 1.5}, r"^bound_threshold must be in \(0, 1\]$"),
    ],
)
def test_analyze_option_errors_name_the_api_argument(options: dict, message: str) -> None:
    """The API checks its arguments as the command line checks its options (one checker), named as the
    API spells them, before reading anything."""
    with pytest.raises(TracekitError, match=message):
        tracekit.analyze("no-such-file.sqlite", **options)


def test_read_trace_and_table_and_report(capsys: pytest.CaptureFixture[str]) -> None:
    trace = tracekit.read_trace(SAMPLE)
    assert trace.ops.height > 0 and {"start", "end"} <= set(trace.ops.columns)
    frame = tracekit.table([SAMPLE.parent])
    assert main(["table", str(SAMPLE.parent), "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert round_float(frame.row(0, named=True)["latency_ms"]) == row["latency_ms"]
    assert round_float(frame.row(0, named=True)["sms_active"]) == row["sms_active"]
    r = tracekit.report([SWEEP])
    assert r.configs["batch_size"].to_list() == [1, 2, 4, 8, 16, 32, 64, 128]
    assert r.sweeps.row(0, named=True)["transition_batch_size"] == 32
    assert all(rec["text"] for rec in r.recommendations)


def test_analyze_many_takes_one_path_a_folder_and_says_why_nothing_was_analyzed(tmp_path) -> None:
    # one string had been read character by character (30 "traces"), a folder was no trace, and the error
    # gave no reason
    import tracekit
    from tests.conftest import SAMPLE_TRACES
    from tracekit.errors import TracekitError

    folder = SAMPLE_TRACES / "synthetic" / "ranks4"
    one = tracekit.analyze_many(str(folder), jobs=1)
    assert one["traces"] == 4 and one["failed"] == []
    assert tracekit.analyze_many([folder], jobs=1)["rows"] == one["rows"]
    bad = tmp_path / "notes.txt"
    bad.write_text("not a trace")
    with pytest.raises(TracekitError) as err:
        tracekit.analyze_many(bad)
    assert str(err.value).startswith(f"none of the 1 traces could be analyzed (the first: {bad}: not a trace")
