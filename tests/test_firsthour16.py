"""firsthour16: what a new user met in a first hour with the README (tour, API, the documents it links), each
pinned on a hand-built input whose numbers are known, or on a committed sample where the README quotes it.
Defects in files firsthour16 does not own are strict xfails here (named in its report)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import polars as pl
import pytest

from tests.builders import make_trace
from tests.conftest import REPO, SAMPLE_TRACES

README = REPO / "README.md"
DESIGN = REPO / "docs" / "design.md"
H200 = SAMPLE_TRACES / "h200_bert_fp16"


def _flat(path: Path) -> str:
    return " ".join(path.read_text().split())


# ------------------------------------------------------------------------------------------------ README


def test_readme_python_block_fits_the_line_length_ruff_formats_to() -> None:
    """`ruff format --check .` reformatted the README's Python block (ruff formats Markdown code): two lines
    of code with their comment ran past the project's 110 columns (pyproject), so ruff split the calls over
    three lines each. The block stays as written only while every line fits."""
    text = README.read_text()
    block = re.search(r"## Python API\n.*?```python\n(.*?)```", text, re.S)
    assert block is not None
    long = [line for line in block.group(1).splitlines() if len(line) > 110]
    assert long == []


def test_code_fences_name_their_language() -> None:
    """ruff (0.16+) formats Markdown's fenced code, and takes a fence with no language for Python: the README's
    gpu_check commands and design.md's pipeline diagram were such fences (skipped only because they do not
    parse as Python). Every fence names its language, but the README's block of analyze's first lines, which
    tests/test_first_hour.py finds as a bare fence."""
    bare = []
    for path in [README, *sorted((REPO / "docs").glob("*.md"))]:
        inside = False
        for line in path.read_text().splitlines():
            if line.startswith("```"):
                if not inside and line == "```":
                    bare.append(path.name)
                inside = not inside
    assert bare == ["README.md"]


def test_readme_api_comment_says_load_takes_a_path() -> None:
    """The API block said 'json.dump it: tracekit.load(f) == a'; ``tracekit.load`` takes a path, and only the
    API's own document round-trips exactly (the program's JSON is rounded to 12 significant digits)."""
    import inspect

    import tracekit

    assert list(inspect.signature(tracekit.load).parameters) == ["path"]
    text = README.read_text()
    assert "tracekit.load(f)" not in text
    assert "tracekit.load(that_path) == a" in text


def test_readme_slow_start_counts_of_the_graph_rows_are_the_samples() -> None:
    """README: 'the traced means of the two CUDA-graph rows include their first two iterations, a slow start
    analyze names: 0.827 and 0.936 ms without them'. analyze names the first 2 of the CUDA-graph trace and
    the first 3 of the torch.compile (reduce-overhead) trace."""
    import tracekit

    found = []
    for runtime in ("cuda-graphs", "compile-cudagraphs"):
        a = tracekit.analyze(H200 / runtime / f"{runtime}_b1_s128.torch.json.gz")
        (warning,) = [w for w in a.warnings if "slow start" in w]
        count = int(re.search(r"the first (\d+) of 20", warning).group(1))  # type: ignore[union-attr]
        lat = a.iterations["latency_ms"].to_list()
        found.append((count, round(sum(lat[count:]) / len(lat[count:]), 3)))
    assert found == [(2, 0.827), (3, 0.936)]
    assert "include their first iterations (2 and 3), a slow start" in _flat(README)
    assert "0.827 and 0.936 ms without them" in _flat(README)


# ------------------------------------------------------------------------------------------------ design.md


def test_design_says_the_nsys_profiler_warm_up_step_ran_on_a_gpu() -> None:
    """design.md still said of nsys's profiler warm-up step 'Not yet run on a GPU with this step' after the
    2026-11-28 loan ran it (gpu_check.run7.json, run8.json: every nsys configuration 1 profiler warm-up + 20
    timed ranges, every check held)."""
    checks = []
    for run in ("run7", "run8"):
        doc = json.loads((H200 / f"gpu_check.{run}.json").read_text())
        checks += [c for c in doc["checks"] if c["check"] == "iterations"]
    assert len(checks) == 8 and all(c["ok"] for c in checks)
    assert all(c["detail"].endswith("21 ranges, 1 profiler warm-up + 20 timed") for c in checks)
    text = _flat(DESIGN)
    assert "Not yet run on a GPU with this step" not in text
    assert "`gpu_check.run7.json`" in text and "1 profiler warm-up + 20 timed" in text


def test_design_states_the_tie_rule_of_identical_ranges() -> None:
    """91715d3: of two identical chosen ranges, the one of the thread with the most of them holds the other
    (then the lowest thread id, then the name), never the first in input order; the rule is in
    ranges._held's docstring and now in design.md's range section."""
    from tracekit.analyzers.ranges import _held

    rows = pl.DataFrame(
        {
            "pid": [1, 1, 1],
            "thread": [9, 2, 2],  # thread 9's copy first in input order; thread 2 runs two instances
            "start": [0, 0, 100],
            "end": [50, 50, 150],
            "name": ["iteration"] * 3,
        }
    )
    assert _held(rows, ("pid",)).to_list() == [True, False, False]
    assert "the thread that runs the most of them holds the others" in _flat(DESIGN)


def test_design_says_the_recorded_warm_up_drop_is_a_note() -> None:
    """c2c1a19: the warm-up a run's sidecar names is dropped with a note, not a warning (the committed ORT CPU
    sample: 10 warm-up runs of 30); design.md's warm-up rule says so."""
    import tracekit

    a = tracekit.analyze(SAMPLE_TRACES / "cpu_onnx_bert_ort" / "onnx_b1_s128.ort.json.gz")
    said = "dropped the first 10 iterations: the run's warm-up, recorded in this trace (--skip 0 keeps them)"
    assert said in a.notes and not any("dropped the first" in w for w in a.warnings)
    assert a.iterations.height == 20
    assert "said in a note (JSON `notes`, a `note:` line under analyze's table" in _flat(DESIGN)


# ------------------------------------------------------------------------------------------------ metrics.md


def test_metrics_says_host_was_in_names_what_held_half_of_the_gap() -> None:
    """metrics.md's field table still said the longest gaps give 'what the host was doing (the API call or
    range in progress)', the rule before round 15. Hand-built: iteration [0, 10000) with kernels [1000, 2000)
    and [5000, 6000); the inner gap [2000, 5000) opens in a range [1900, 2100) (in progress at its start, 100
    of 3000 ns) and is 93% an operator [2100, 4900): the operator names it."""
    import dataclasses

    from tracekit.analyzers.iterations import analyze_iterations
    from tracekit.model import CPU_OPS_SCHEMA

    trace = make_trace(
        ranges=[(0, 10_000, "iteration", 0, "user", 1, 1), (1900, 2100, "nccl:broadcast", 1, "user", 1, 1)],
        api=[(100, 200, 1, "cudaLaunchKernel", 1, 1), (300, 400, 2, "cudaLaunchKernel", 1, 1)],
        ops=[(1000, 2000, 1, 7, "kernel", 0, 1), (5000, 6000, 2, 7, "kernel", 0, 1)],
        meta={"path": "firsthour16_synthetic", "synthetic": True},
        range_fields=("start", "end", "name", "depth", "domain", "pid", "thread"),
        api_fields=("start", "end", "correlation", "name", "pid", "thread"),
        op_fields=("start", "end", "correlation", "stream", "kind", "device", "pid"),
    )
    ops = pl.DataFrame(
        [{"start": 2100, "end": 4900, "pid": 1, "thread": 1, "name": "aten::unflatten_dense_tensors"}],
        schema=CPU_OPS_SCHEMA,
    )
    gaps = analyze_iterations(dataclasses.replace(trace, cpu_ops=ops)).gaps.filter(pl.col("start_ns") == 2000)
    assert gaps["cpu_context"].to_list() == ["in op aten::unflatten_dense_tensors (93%)"]
    metrics = _flat(REPO / "docs" / "metrics.md")
    assert "(the API call or range in progress)" not in metrics
    assert (
        'what held the host for at least half of the gap ("host was in": an API call, else the innermost'
        in metrics
    )


# ------------------------------------------------------------------------------------------------ limits.md


def test_limits_says_what_the_probe_exports_show_around_cuda_profiler_stop() -> None:
    """limits.md's round-15 entry still said what nsys writes around cudaProfilerStop 'no export here shows'
    after 869a0e1 committed real probe exports that show it (sample_traces/h200_nsys_probe): the range open at
    the stop is read as never closed, and the kernels' graphNodeId is not read (ops.graph null)."""
    import tracekit

    trace = tracekit.read_trace(SAMPLE_TRACES / "h200_nsys_probe" / "probe-stop-node.nsys.sqlite.gz")
    assert trace.ranges.filter(pl.col("name") == "open-at-stop")["end"].to_list() == [None]
    assert trace.ops.filter(pl.col("kind") == "kernel")["graph"].null_count() == trace.ops.height == 16
    text = _flat(REPO / "docs" / "limits.md")
    assert "no export here shows" not in text
    assert "which tracekit reads as never closed" in text and "tracekit does not read it" in text


# ---------------------------------------------------------------------------------------- report.md, CPU


def _report_doc(device: str) -> dict:
    """A report document of one configuration on ``device`` with a timeline figure (the keys
    render_report_markdown reads)."""
    config = {
        "runtime": "pytorch",
        "device": device,
        "seq_len": 32,
        "batch_size": 1,
        "latency_source": "untraced",
        "latency_ms": 126.241,
        "latency_ci_low": 111.883,
        "latency_ci_high": 560.926,
        "dispatch_ms": None,
    }
    return {
        "settings": {"plateau_tolerance": 0.1, "bound_threshold": 0.5, "range": None, "skip": "auto"},
        "configs": [config],
        "sweeps": [],
        "recommendations": [],
        "warnings": [],
        "timeline": {"title": "Timeline of pytorch, batch 1, seq 32", "iterations": [0], "truncated": False},
    }


def test_report_md_breakdown_and_timeline_texts_of_a_cpu_sweep_speak_of_operators() -> None:
    """report.md on the tour's CPU runs: 'split into operator busy (union of device work)' and, under a
    timeline of CPU operators on one thread, 'CPU ranges, API calls (launches in orange) and device ops per
    stream; idle gaps of the device shaded red': a CPU-only trace has no device, no API call, no stream."""
    from tracekit.renderers.report_markdown import render_report_markdown

    figures = {"breakdown": "fig_breakdown.png", "timeline": "fig_timeline.png"}
    cpu = render_report_markdown(_report_doc("cpu"), figures)
    assert (
        "Traced latency per batch size, split into operator busy (union of the top-level CPU operators' "
        "time) and framework overhead" in cpu
    )
    assert (
        "Timeline of pytorch, batch 1, seq 32: CPU ranges by depth and the CPU operators of each thread; the "
        "gaps between operators shaded red." in cpu
    )
    assert "device" not in cpu.split("## Timeline")[1].split("![timeline]")[0]
    gpu = render_report_markdown(_report_doc("gpu"), figures)
    assert "split into GPU busy (union of device work) and framework overhead" in gpu
    assert (
        "Timeline of pytorch, batch 1, seq 32: CPU ranges, API calls (launches in orange) and device ops per "
        "stream; idle gaps of the device shaded red." in gpu
    )


# --------------------------------------------------------------------------------------- analyze, CPU


def _cause_doc(device: str, totals: dict[str, float]) -> dict:
    causes = [
        {"cause": c, "mean_ms": t / 2, "p50_ms": t / 2, "p90_ms": None, "total_ms": t, "share_of_idle": None}
        for c, t in totals.items()
    ]
    idle = sum(totals.values())
    for row in causes:
        row["share_of_idle"] = row["total_ms"] / idle if idle else None
    return {
        "trace": {"device": device},
        "idle_attribution": {
            "available": True,
            "causes": causes,
            "device_side": [],
            "idle_ms": {"mean": idle / 2, "p50": idle / 2, "p90": None},
        },
    }


def test_analyze_says_why_a_cpu_trace_has_only_dispatch() -> None:
    """analyze on the tour's ORT CPU trace: 'idle time by cause' lists launch, sync, other_api and in_flight at
    0.000 beside 'the launching host thread is ... in a launch call', with no word that a CPU-only trace has
    no launch or sync call and no device. A line under the table says so; a GPU trace has none."""
    from tracekit.renderers.analysis import cause_note

    zeros = {"launch": 0.0, "sync": 0.0, "other_api": 0.0, "in_flight": 0.0}
    cpu = _cause_doc("cpu", {"dispatch": 23.644, **zeros})
    assert cause_note(cpu) == (
        "a CPU-only trace has no device and no launch or sync call: the time between operators is all "
        "dispatch (framework code between operators), and the other causes are 0"
    )
    assert cause_note(_cause_doc("gpu", {"dispatch": 23.644, **zeros})) is None
    # a CPU trace that did record API calls (another cause not 0) keeps its table without the sentence
    assert cause_note(_cause_doc("cpu", {"dispatch": 23.644, **zeros, "other_api": 0.5})) is None


# ------------------------------------------------------------------------------------------------ --help


def test_compare_help_speaks_of_op_names_not_kernels_only(capsys: pytest.CaptureFixture[str]) -> None:
    """The README tour compares a CPU PyTorch run with an ORT one, whose per-name table is of CPU operators
    (aten::linear, MatMul nodes); `tracekit --help` said 'with per-kernel deltas' and `compare --help` 'kernel
    names shown'. Each command's one-line help is the same in the command list and in its own parser."""
    from tracekit.cli import COMMANDS, build_parser, main

    with pytest.raises(SystemExit):
        main(["--help"])
    listing = " ".join(capsys.readouterr().out.split())
    assert "with per-kernel deltas" not in listing
    assert "per-op-name (kernel or CPU operator) deltas" in listing
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    own = " ".join(capsys.readouterr().out.split())
    assert "--top N op names shown (default 15; 0 = all)" in own
    assert "time and count per iteration" in own and "kernel names shown" not in own
    for name in COMMANDS:  # the list's line (cli.COMMANDS) is the command's own (commands/NAME.py)
        (sub,) = [a for a in build_parser([name])._actions if isinstance(a, argparse._SubParsersAction)]
        assert {a.dest: a.help for a in sub._choices_actions}[name] == COMMANDS[name], name
    assert COMMANDS["analyze"].startswith(
        "Per-iteration latency, GPU (or CPU operator) busy, idle gaps by cause"
    )


# --------------------------------------------------------------------------- strict xfails, others' files


# (was a strict xfail for analyzers/gap_context.py: a range around all of an iteration's work named every gap)
def test_a_range_around_all_of_the_iterations_work_does_not_name_its_gaps() -> None:
    # iteration [0, 10000) launches kernels [1000, 2000) and [5000, 6000); the inner gap is [2000, 5000).
    # 'SequentialExecutor::Execute' [50, 9950) holds both kernels' launches and runs: every gap is inside it
    from tracekit.analyzers.gap_context import OUTSIDE
    from tracekit.analyzers.iterations import analyze_iterations

    trace = make_trace(
        ranges=[
            (0, 10_000, "iteration", 0, "user", 1, 1),
            (50, 9_950, "SequentialExecutor::Execute", 1, "user", 1, 1),
        ],
        api=[(100, 200, 1, "cudaLaunchKernel", 1, 1), (300, 400, 2, "cudaLaunchKernel", 1, 1)],
        ops=[(1000, 2000, 1, 7, "kernel", 0, 1), (5000, 6000, 2, 7, "kernel", 0, 1)],
        meta={"path": "firsthour16_synthetic", "synthetic": True},
        range_fields=("start", "end", "name", "depth", "domain", "pid", "thread"),
        api_fields=("start", "end", "correlation", "name", "pid", "thread"),
        op_fields=("start", "end", "correlation", "stream", "kind", "device", "pid"),
    )
    gaps = analyze_iterations(trace).gaps.filter(pl.col("start_ns") == 2000)
    assert gaps.height == 1
    assert gaps["cpu_context"].item() == OUTSIDE


def _tour_timeline():  # type: ignore[no-untyped-def]
    """The report's timeline figure of the README tour's CPU PyTorch run at batch 1 (on a loaded 2-core box):
    three iterations of 2133.646, 1145.024 and 565.3 ms, CPU operators busy 99% of each."""
    from tracekit.renderers.plots import timeline_figure

    ends = [2133.646, 3278.670, 3843.970]
    iterations = pl.DataFrame(
        {
            "index": [0, 1, 2],
            "start_ms": [0.0, *ends[:2]],
            "end_ms": ends,
            "latency_ms": [2133.646, 1145.024, 565.3],
            "gpu_busy_ms": [2120.0, 1130.0, 560.0],
        }
    )
    bars = pl.DataFrame(
        {
            "lane": ["CPU operators thread 1"],
            "category": ["operator"],
            "start_ms": [0.0],
            "duration_ms": [1.0],
        }
    )
    gaps = pl.DataFrame(schema={"start_ms": pl.Float64, "duration_ms": pl.Float64})
    lanes = ["CPU range depth 0", "CPU operators thread 1"]
    return timeline_figure(
        lanes, bars, gaps, iterations, "Timeline of pytorch, batch 1, seq 32", "CPU operators"
    )


def test_timeline_titles_write_milliseconds_without_an_exponent() -> None:
    import matplotlib.pyplot as plt

    fig = _tour_timeline()
    try:
        titles = [t.get_text() for t in fig.axes[0].texts if t.get_text().startswith("iteration")]
    finally:
        plt.close(fig)
    assert len(titles) == 3
    assert not [t for t in titles if "e+" in t]


def test_timeline_titles_do_not_overlap() -> None:
    import matplotlib.pyplot as plt

    fig = _tour_timeline()
    try:
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        boxes = [
            t.get_window_extent(renderer) for t in fig.axes[0].texts if t.get_text().startswith("iteration")
        ]
    finally:
        plt.close(fig)
    assert len(boxes) == 3
    assert not [(i, j) for i in range(3) for j in range(i + 1, 3) if boxes[i].overlaps(boxes[j])]
