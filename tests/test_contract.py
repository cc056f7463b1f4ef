"""Every command x every format on the sample traces, and the presentation rules of issue 11 (items 7-12, 14)
as the user meets them on the command line."""

from __future__ import annotations

import argparse
import csv
import io
import json
from pathlib import Path

import pytest

from tracekit.cli import main
from tracekit.commands.output import FORMATS

ROOT = Path(__file__).resolve().parents[1] / "sample_traces"
SYN = ROOT / "synthetic" / "table3_pytorch"
SYN_TRACE = SYN / "pytorch_b1_s128.synthetic.sqlite"
CPU_NSYS = ROOT / "cpu_onnx_bert_nsys"
CPU_ORT = ROOT / "cpu_onnx_bert_ort"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, str]:
    assert main(list(argv)) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def commands(tmp: Path) -> dict[str, list[str]]:
    return {
        "analyze": ["analyze", str(SYN_TRACE)],
        "table": ["table", str(SYN)],
        "compare": ["compare", str(SYN), str(ROOT / "synthetic" / "table3_onnx")],
        "report": ["report", str(SYN), "-o", str(tmp / "rep"), "--no-figures"],
    }


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("command", ["analyze", "table", "compare", "report"])
def test_every_command_every_format(command: str, fmt: str, tmp_path: Path, capsys) -> None:
    out, _ = run(capsys, *commands(tmp_path)[command], "--format", fmt)
    assert out.strip()
    if fmt == "json":
        doc = json.loads(out)
        assert "synthetic" in json.dumps(doc)  # the document carries it
    elif fmt == "csv":
        rows = list(csv.reader(io.StringIO(out)))
        assert len(rows) >= 2 and all(len(r) == len(rows[0]) for r in rows)
    else:  # item 8: a synthetic input is said on stdout
        assert "synthetic" in out.lower()


def _parser(command: str) -> argparse.ArgumentParser:
    import importlib

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    importlib.import_module(f"tracekit.commands.{command}").register(sub)
    return sub.choices[command]


@pytest.mark.parametrize("command", ["analyze", "table", "compare", "report"])
def test_help_describes_every_option_with_its_default(command: str) -> None:
    for action in _parser(command)._actions:
        if isinstance(action, argparse._HelpAction) or not action.option_strings:
            continue
        assert action.help and "default" in action.help, (command, action.option_strings)


def test_counts_are_integers_and_gaps_start_in_the_iteration(capsys) -> None:
    out, _ = run(capsys, "analyze", str(SYN_TRACE))
    kernels = next(line for line in out.splitlines() if line.startswith("│ kernels / ops"))
    assert "400.0" not in kernels and "│      400 │" in kernels
    assert "starts at (ms into iteration)" in out and "start (ns)" not in out
    doc = json.loads(run(capsys, "analyze", str(SYN_TRACE), "--format", "json")[0])
    gap = doc["longest_gaps"][0]
    assert 0 <= gap["offset_ms"] <= doc["iterations"][0]["latency_ms"]


def test_cpu_traces_say_operator_not_gpu(tmp_path: Path, capsys) -> None:
    text, _ = run(capsys, "table", str(CPU_ORT), "--format", "markdown")  # (rich wraps long headers)
    assert "operator busy ms" in text and "GPU busy" not in text
    header = run(capsys, "table", str(CPU_ORT), "--format", "csv")[0].splitlines()[0].split(",")
    assert "operator_busy_ms" in header and "gpu_busy_ms" not in header
    assert json.loads(run(capsys, "table", str(CPU_ORT), "--format", "json")[0])["rows"][0]["device"] == "cpu"
    run(capsys, "report", str(CPU_ORT), "-o", str(tmp_path / "r"), "--no-figures")
    md = (tmp_path / "r" / "report.md").read_text()
    assert "operator utilization" in md and "GPU utilization" not in md and "GPU busy" not in md
    assert "1 sweep " in md or "1 sweep (" in md
    assert "1 sweeps" not in md
    assert "operator_busy_ms" in (tmp_path / "r" / "report.csv").read_text().splitlines()[0]


def test_table_and_report_label_their_latency_and_device(tmp_path: Path, capsys) -> None:
    text, _ = run(capsys, "table", str(SYN), "--paper", "--format", "markdown")
    assert "latency ms (traced)" in text and "latency ms (published)" in text and "device" in text
    run(capsys, "report", str(CPU_ORT), "-o", str(tmp_path / "r"), "--no-figures")
    md = (tmp_path / "r" / "report.md").read_text()
    assert "| latency used |" in md and "| untraced |" in md and "| cpu |" in md


def test_compare_verdict_and_table_use_one_statistic(capsys) -> None:
    doc = json.loads(run(capsys, *commands(Path("."))["compare"], "--format", "json")[0])
    (comparison,) = doc["comparisons"]
    assert comparison["statistic"] == "p50"
    util = next(r for r in comparison["summary"] if r["metric"] == "gpu_utilization")
    assert util["a"] == comparison["a"]["gpu_utilization"]
    assert (comparison["a"]["bound"] == "framework") == (util["a"] < 0.5)
    assert all("time_ratio" in k for k in comparison["kernels"])  # the ratio is in JSON, not only CSV
    out = run(capsys, *commands(Path("."))["compare"])[0]
    assert f"median GPU utilization {util['a']:.1%}" in out and "A (median)" in out


def test_negative_queue_time_is_explained(capsys) -> None:
    doc = json.loads(run(capsys, "analyze", str(SYN_TRACE), "--format", "json")[0])
    assert doc["summary"]["queue_us"]["min"] < 0  # the simulated launch call returns after its kernel starts
    out = run(capsys, "analyze", str(SYN_TRACE))[0]
    assert "queue time < 0: the op started before its launch call returned" in out


def test_breakdown_panel_without_device_data_says_so() -> None:
    from tracekit.renderers.plots import NO_DATA_TEXT, breakdown_figure

    panel = {"title": "onnx", "batch_sizes": [1], "busy_ms": [None], "overhead_ms": [None], "plateau": [1]}
    fig = breakdown_figure([panel])
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert NO_DATA_TEXT in texts and NO_DATA_TEXT == "no device/operator data in this trace"
    assert list(fig.axes[0].get_yticks()) == []


def test_report_cli_draws_the_no_data_panel(tmp_path: Path, capsys) -> None:
    run(capsys, "report", str(CPU_NSYS), "-o", str(tmp_path / "r"))
    assert (tmp_path / "r" / "fig_breakdown.png").stat().st_size > 0


def test_analyze_and_report_outputs_carry_the_idle_time_by_cause(tmp_path: Path, capsys) -> None:
    causes = ["dispatch_ms", "launch_ms", "sync_ms", "other_api_ms", "in_flight_ms"]
    for fmt, title in (
        ("table", "idle time by cause (per iteration)"),
        ("markdown", "## Idle time by cause"),
    ):
        out = run(capsys, "analyze", str(SYN_TRACE), "--format", fmt)[0]
        assert title in out and "CUDA-graph projection: mean latency" in out and "Assumptions:" in out
        # the causes have their own section, not rows of the summary table
        assert "idle: dispatch" not in out
    doc = json.loads(run(capsys, "analyze", str(SYN_TRACE), "--format", "json")[0])
    assert set(causes) <= set(doc["iterations"][0]) and set(causes) <= set(doc["summary"])
    assert set(doc["idle_attribution"]) >= {"causes", "idle_ms", "definitions", "cuda_graph_projection"}
    header = run(capsys, "analyze", str(SYN_TRACE), "--format", "csv")[0].splitlines()[0].split(",")
    assert set(causes) <= set(header)
    run(capsys, "report", str(SYN), "-o", str(tmp_path / "r"), "--no-figures")
    md = (tmp_path / "r" / "report.md").read_text()
    assert "## Framework overhead by cause" in md and "| dispatch ms |" in md
    report_header = (tmp_path / "r" / "report.csv").read_text().splitlines()[0].split(",")
    assert set(causes) <= set(report_header) and "graph_projected_ms" in report_header
    config = json.loads((tmp_path / "r" / "report.json").read_text())["configs"][0]
    assert sum(config[c] for c in causes) == pytest.approx(config["framework_overhead_ms"], abs=1e-9)
