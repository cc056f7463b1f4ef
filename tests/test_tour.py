"""The README's short tour, run as written: every command parses (fast), and, marked slow, every step runs in a
fresh folder and prints a real result (a verdict and a cause breakdown from the first analyze, a valid
timeline, a table row, a report with medians and intervals, a comparison, simulations).

The collection steps measure real BERT-base runs on this machine's CPU: the checks are structural (a verdict,
numbers present, files valid), never latency values."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tracekit.cli import build_parser

README = REPO / "README.md"


def tour_commands() -> list[str]:
    """The command lines of the README's tour block (comments and blank lines left out)."""
    text = README.read_text()
    block = re.search(r"## A short tour\n.*?```sh\n(.*?)```", text, re.S)
    assert block, "the README has a tour block"
    lines = []
    for line in block.group(1).splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def _argv(line: str) -> list[str]:
    return shlex.split(line, comments=True)


def test_tour_commands_parse_and_name_existing_samples() -> None:
    commands = tour_commands()
    assert commands[0] == "tracekit doctor" and any(c.startswith("tracekit report") for c in commands)
    for line in commands:
        argv = _argv(line)
        if argv[0] == "mkdir":
            continue
        assert argv[0] == "tracekit", line
        parser = build_parser(argv[1:])
        args = parser.parse_args(argv[1:])  # exits (fails the test) on an unknown option or value
        assert args.func is not None
        for word in argv:
            if word.startswith("sample_traces/"):
                assert (REPO / word).exists(), word
    first_analyze = next(c for c in commands if c.startswith("tracekit analyze"))
    # the first collection uses the profiler with operator data on the CPU, and the first analyze reads it
    first_collect = next(c for c in commands if c.startswith("tracekit collect"))
    assert "--profiler ort" in first_collect and ".ort.json.gz" in first_analyze


def _run(line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["TRACEKIT_NO_PROGRESS"] = "1"
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_the_tour_runs_as_written(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("torch")
    from tests.test_timeline import check_trace_event_format

    (tmp_path / "sample_traces").symlink_to(REPO / "sample_traces")
    seen_analyze = False
    for line in tour_commands():
        proc = _run(line, tmp_path)
        assert proc.returncode == 0, (line, proc.stderr[-2000:])
        argv = _argv(line)
        if argv[0] == "mkdir":
            continue
        verb, out = argv[1], proc.stdout
        if verb == "doctor":
            assert "tracekit doctor" in out and "runtimes" in out.lower()
        elif verb == "collect":
            run_dir = tmp_path / argv[argv.index("-o") + 1]
            run = json.loads((run_dir / "run.json").read_text())
            assert run["configs"] and all(c["status"] == "ok" for c in run["configs"])
            stats = run["configs"][0]["untraced_latency_ms"]
            assert stats["median"] > 0 and stats["count"] >= int(argv[argv.index("--iters") + 1])
            latency_csv = (run_dir / "latency.csv").read_text().splitlines()
            assert latency_csv[0].endswith("latency_ms,cpu_ms,dropped,set")
            # every timed set, untraced and traced, records each iteration
            assert {line.split(",")[-1] for line in latency_csv[1:]} == {
                "untraced",
                argv[argv.index("--profiler") + 1],
            }
        elif verb == "analyze":
            if "--timeline" in argv:
                doc = json.loads((tmp_path / argv[argv.index("--timeline") + 1]).read_text())
                events = check_trace_event_format(doc)
                assert any(e.get("cat") == "idle" for e in events)
                analysis = json.loads((tmp_path / argv[argv.index("-o") + 1]).read_text())
                assert analysis["summary"]["bound"] in ("framework", "compute")
            else:
                # a verdict and the idle time by cause, never an empty analysis
                assert re.search(r"verdict: (framework|compute)-bound", out), out[:2000]
                assert "idle time by cause" in out and "dispatch" in out
                if not seen_analyze:
                    assert "operator utilization" in out  # the CPU run has operator data
                seen_analyze = True
        elif verb == "table":
            assert "onnx" in out and re.search(r"\d+\.\d", out)
        elif verb == "report":
            report_dir = tmp_path / argv[argv.index("-o") + 1]
            doc = json.loads((report_dir / "report.json").read_text())
            assert doc["configs"] and all(c["latency_ms"] > 0 for c in doc["configs"])
            assert doc["recommendations"] and (report_dir / "report.md").is_file()
            if "noisy" in str(report_dir):
                assert "within noise" in out
        elif verb == "compare":
            assert "A median [95%]" in out and "batch 1, seq 32" in out
        elif verb == "simulate":
            run_dir = tmp_path / argv[argv.index("-o") + 1]
            assert json.loads((run_dir / "run.json").read_text())["synthetic"] is True
    assert seen_analyze
