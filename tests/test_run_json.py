"""run.json as ``table``, ``report`` and ``compare`` read it (fuzz findings X-A, W-B, E-A, E-B, W-F).

- run.json is checked whole when it is read (:func:`tracekit.runs.load_run`): a wrongly typed or out of range
  value, in any configuration whatever its status, ends the command in one line naming the field, exit 2;
- a trace of the run that cannot be read is left out with a warning, and the command exits 1 (as ``analyze``
  on several traces); a configuration run.json records as failed or skipped is no failure (exit 0);
- a damaged ``--ncu`` file leaves its timeline row in the table (exit 1), never drops it;
- a configuration repeated in run.json is left out, the first kept, with one warning, in all three commands.

The runs are simulated (3 iterations, nsys only), then copied and edited per test.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.test_table import make_run
from tracekit.cli import main

REPO = Path(__file__).resolve().parents[1]
H200 = REPO / "sample_traces" / "h200_bert_fp16"
LIMIT = "a positive integer (1 to 2147483647)"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two simulated runs (pytorch and cuda-graphs, batch 1, 2, 4, seq 128) to copy."""
    root = tmp_path_factory.mktemp("runs")
    out = {}
    for runtime in ("pytorch", "cuda-graphs"):
        d = root / runtime
        argv = [
            "simulate",
            "--runtime",
            runtime,
            "--batch-sizes",
            "1,2,4",
            "--iters",
            "3",
            "--traces",
            "nsys",
        ]
        assert main([*argv, "--metrics-interval-us", "0", "-o", str(d), "-q"]) == 0
        out[runtime] = d
    return out


def edited(src: Path, dest: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of the run ``src`` at ``dest`` with its run.json changed by ``edit``."""
    shutil.copytree(src, dest)
    run = json.loads((dest / "run.json").read_text())
    edit(run)
    (dest / "run.json").write_text(json.dumps(run))
    return dest


def setter(index: int, key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """An edit that sets ``configs[index][key]`` (``index`` -1: the run-level ``key``)."""

    def edit(run: dict[str, Any]) -> None:
        (run if index < 0 else run["configs"][index])[key] = value

    return edit


def replacer(index: int, value: Any) -> Callable[[dict[str, Any]], None]:
    """An edit that replaces ``configs[index]`` by ``value``."""

    def edit(run: dict[str, Any]) -> None:
        run["configs"][index] = value

    return edit


def command(name: str, run: Path, other: Path, out: Path) -> list[str]:
    """The command line of ``name`` over the run (compare: against ``other``; report: into ``out``)."""
    if name == "table":
        return ["table", str(run), "--format", "json"]
    if name == "report":
        return ["report", str(run), "-o", str(out), "--no-figures", "--format", "json", "-q"]
    return ["compare", str(run), str(other), "--format", "json"]


COMMANDS = ("table", "report", "compare")

# (edit, what the one line says after "DIR/run.json: ")
BAD_RUNS = {
    # X-A: wrongly typed fields (were internal errors, exit 1, or configs dropped without a word)
    "batch_str": (setter(1, "batch_size", "two"), f'configs[1].batch_size is "two", not {LIMIT}'),
    "seq_str": (setter(1, "seq_len", "x"), f'configs[1].seq_len is "x", not {LIMIT}'),
    "config_str": (replacer(1, "x"), 'configs[1] is "x", not an object'),
    "config_null": (replacer(1, None), "configs[1] is null, not an object"),
    "traces_str": (
        setter(1, "traces", "nsys"),
        'configs[1].traces is "nsys", not an object naming each profiler\'s trace file',
    ),
    "traces_int": (
        setter(1, "traces", 5),
        "configs[1].traces is 5, not an object naming each profiler's trace file",
    ),
    "trace_int": (setter(1, "traces", {"nsys": 5}), "configs[1].traces.nsys is 5, not a file name"),
    "trace_null": (setter(1, "traces", {"nsys": None}), "configs[1].traces.nsys is null, not a file name"),
    "traces_missing": (
        lambda run: run["configs"][1].pop("traces"),
        "configs[1] has no traces (an object naming each profiler's trace file; {} for none)",
    ),
    "runtime_int": (setter(-1, "runtime", 7), "runtime is 7, not text or null"),
    "synthetic_str": (setter(-1, "synthetic", "false"), 'synthetic is "false", not true, false or null'),
    "status_int": (setter(1, "status", 5), 'configs[1].status is 5, not "ok", "failed" or "skipped"'),
    "untraced_str": (
        setter(1, "untraced_latency_ms", "fast"),
        'configs[1].untraced_latency_ms is "fast", not an object of latency statistics (ms) or null',
    ),
    # W-B: values of the right type that no configuration can have (were taken: "-4.0x the throughput")
    "batch_0": (setter(1, "batch_size", 0), f"configs[1].batch_size is 0, not {LIMIT}"),
    "batch_neg": (setter(1, "batch_size", -1), f"configs[1].batch_size is -1, not {LIMIT}"),
    "batch_true": (setter(1, "batch_size", True), f"configs[1].batch_size is true, not {LIMIT}"),
    "batch_float": (setter(1, "batch_size", 2.5), f"configs[1].batch_size is 2.5, not {LIMIT}"),
    "batch_huge": (
        setter(1, "batch_size", 10**20),
        f"configs[1].batch_size is 100000000000000000000, not {LIMIT}",
    ),
    "seq_0": (setter(1, "seq_len", 0), f"configs[1].seq_len is 0, not {LIMIT}"),
    "untraced_neg": (
        setter(1, "untraced_latency_ms", {"mean": -5, "median": -5}),
        "configs[1].untraced_latency_ms.mean is -5, not a positive number (ms) or null",
    ),
    "untraced_zero_median": (
        setter(1, "untraced_latency_ms", {"mean": 2.0, "median": 0, "kept": 3}),
        "configs[1].untraced_latency_ms.median is 0, not a positive number (ms) or null",
    ),
    "untraced_kept_str": (
        setter(1, "untraced_latency_ms", {"median": 2.0, "kept": "x"}),
        'configs[1].untraced_latency_ms.kept is "x", not a non-negative integer or null',
    ),
    # checked whatever the status: a failed configuration's fields too
    "failed_batch_str": (
        lambda run: run["configs"][1].update(status="failed", batch_size="two"),
        f'configs[1].batch_size is "two", not {LIMIT}',
    ),
}


@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("case", sorted(BAD_RUNS))
def test_a_wrong_run_json_value_is_one_line_naming_the_field(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, name: str
) -> None:
    edit, problem = BAD_RUNS[case]
    run = edited(runs["pytorch"], tmp_path / "run", edit)
    assert main(command(name, run, runs["cuda-graphs"], tmp_path / "rep")) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"tracekit: {run}/run.json: {problem}\n"


def test_collect_style_statistics_and_failed_configs_are_taken(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No false alarm on what collect writes (a failed configuration with no trace, the full untraced
    statistics), and no failure either: a configuration recorded as failed is left out, with one warning that
    says so, exit 0. A truncated
    trace among them is left out with its warning, exit 1."""
    stats = {
        "mean": 10.5,
        "p50": 10.4,
        "p90": 10.9,
        "p99": 11.2,
        "min": 10.1,
        "max": 11.3,
        "count": 20,
        "median": 10.4,
        "ci_low": 10.3,
        "ci_high": 10.6,
        "confidence": 0.95,
        "cv": 0.02,
        "mean_kept": 10.45,
        "stdev": 0.2,
        "kept": 18,
        "dropped_warmup": [0],
        "dropped_outliers": [7],
        "trend": None,
        "unstable": False,
        "cause": None,
        "cpu_per_wall": 0.98,
        "warnings": [],
        "notes": [],
    }

    def edit(run: dict[str, Any]) -> None:
        run["configs"][0]["untraced_latency_ms"] = stats
        run["configs"][2].update(status="failed", error="RuntimeError: boom", traces={})

    run = edited(runs["pytorch"], tmp_path / "run", edit)
    assert main(command("table", run, run, tmp_path / "rep")) == 0
    captured = capsys.readouterr()
    rows = json.loads(captured.out)["rows"]
    assert [(r["batch_size"], r["untraced_latency_ms"], r["untraced_ci_low"]) for r in rows] == [
        (1, 10.4, 10.3),
        (2, None, None),
    ]
    # the failed configuration is said (the sweep lacks it), and is no failure of the command
    assert captured.err == (
        f"warning: pytorch b1 s128: {run / 'run.json'}: not all configurations ran: 1 of 3 configurations not "
        "analyzed (1 failed): the sweep is incomplete\n"
    )
    # a truncated trace of an "ok" configuration is a failure of the command
    trace = run / "pytorch_b2_s128.synthetic.sqlite"
    trace.write_bytes(trace.read_bytes()[:3000])
    assert main(command("table", run, run, tmp_path / "rep")) == 1
    captured = capsys.readouterr()
    assert [r["batch_size"] for r in json.loads(captured.out)["rows"]] == [1]
    assert captured.err.splitlines()[-1] == "tracekit: 1 input left out (each said above)"
    assert captured.err.startswith(f"warning: left out: {trace}: ")


@pytest.mark.parametrize("name", COMMANDS)
def test_a_trace_left_out_is_exit_1(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """E-B: as analyze on several traces: 1 when some input was left out, the others shown; 2 when none
    could be analyzed."""
    run = edited(runs["pytorch"], tmp_path / "run", lambda run: None)
    bad = run / "pytorch_b2_s128.synthetic.sqlite"
    bad.write_bytes(b"")
    assert main(command(name, run, runs["cuda-graphs"], tmp_path / "rep")) == 1
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    batches = {
        "table": lambda: [r["batch_size"] for r in doc["rows"]],
        "report": lambda: [c["batch_size"] for c in doc["configs"]],
        "compare": lambda: [c["config"] for c in doc["comparisons"]],
    }[name]()
    assert batches == ([1, 4] if name != "compare" else ["batch 1, seq 128", "batch 4, seq 128"])
    assert f"warning: left out: {bad}: empty file\n" in captured.err
    # every trace of the run damaged: nothing to analyze, exit 2
    for trace in run.glob("*.sqlite"):
        trace.write_bytes(b"")
    assert main(command(name, run, runs["cuda-graphs"], tmp_path / "rep2")) == 2
    assert capsys.readouterr().err.startswith("tracekit: none of the 3 inputs could be analyzed: ")


def test_a_damaged_ncu_file_keeps_the_timeline_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-A: ``table RUN --ncu EMPTY`` kept only the other row ("left out: EMPTY: empty file"): the good
    timeline row of batch 1 was gone. It stays, with the other sources' figures; the ncu file is the input
    left out (exit 1)."""
    run = tmp_path / "pytorch"
    shutil.copytree(H200 / "pytorch", run)
    empty = tmp_path / "empty.ncu.csv"
    empty.write_bytes(b"")
    shutil.copy(H200 / "pytorch-ncu" / "pytorch_b1_s128.ncu.meta.json", tmp_path / "empty.ncu.meta.json")
    assert main(["table", str(run), "--ncu", str(empty), "--format", "json"]) == 1
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    rows = [
        (r["batch_size"], r["ncu_trace"], r["sms_active_source"], r["warp_occupancy_source"])
        for r in doc["rows"]
    ]
    # (no warp occupancy from torch.profiler's estimate either: 0 for most of these kernels' time, 2b6a6d9)
    assert rows == [(1, None, None, None), (8, None, None, None)]
    said = (
        f"left out: {empty}: empty file; the row of pytorch_b1_s128.torch.json.gz is kept without it (no SMs "
        "active, no warp occupancy)"
    )
    estimates = [
        f"pytorch b{b} s128: torch.profiler's occupancy estimate is 0 for {n} of {k} kernels, {pct}% of the kernel "
        "time (it writes whole percents: 0 below 0.5%, and 0 where it made no estimate): no warp occupancy from "
        "it (more than 50% of the kernel time unestimated; the real H200 BERT-base traces read 0.26% where nsys "
        "and ncu measured 0.98%): use nsys GPU metrics or --ncu"
        for b, n, k, pct in ((1, 2480, 4040, 72), (8, 2500, 3820, 74))
    ]
    # (each row also says what torch.profiler cost it against run.json's untraced latency: tests/test_profiler_cost)
    slowed = [w for w in doc["warnings"] if "torch.profiler slowed this run" in w]
    assert [w[:16] for w in slowed] == ["pytorch b1 s128:", "pytorch b8 s128:"]
    kept = [w for w in doc["warnings"] if w not in slowed]
    assert kept == [said, *estimates]
    err = [line for line in captured.err.splitlines(keepends=True) if "slowed this run" not in line]
    assert "".join(err) == "".join(f"warning: {w}\n" for w in (said, *estimates)) + (
        "tracekit: 1 input left out (each said above)\n"
    )


def test_a_damaged_ncu_trace_of_the_run_keeps_its_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same with the run's own ncu trace (run.json's ``traces.ncu``), the run's only configuration: the
    command used to end with exit 2 and no row."""
    run = make_run(tmp_path, "cuda-graphs", metrics=True)
    ncu = run / "cuda-graphs_b1_s128.ncu.csv"
    ncu.write_text('"ID","Kernel Name"\n')  # a header and no kernel
    status = main(["table", str(run), "--format", "json"])
    captured = capsys.readouterr()
    assert status == 1, captured.err
    (row,) = json.loads(captured.out)["rows"]
    assert (row["latency_ms"], row["ncu_trace"]) == (pytest.approx(0.001), None)
    assert (row["sms_active_source"], row["warp_occupancy_source"]) == ("nsys metrics", "nsys metrics")
    assert captured.err.startswith(f"warning: left out: {ncu}: ")
    assert captured.err.endswith(
        "; the row of cuda-graphs_b1_s128.nsys.sqlite is kept without it (SMs active from nsys metrics, warp "
        "occupancy from nsys metrics)\ntracekit: 1 input left out (each said above)\n"
    )


def test_a_repeated_configuration_is_left_out_in_all_three_commands(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """W-F: configs[2] claims batch 2 but names the batch-4 trace. ``table`` showed two b2 rows, ``compare``
    paired the b4 trace with cuda-graphs b2 without a word, ``report`` alone kept the first one (warned)."""

    def edit(run: dict[str, Any]) -> None:
        run["configs"][2]["batch_size"] = 2

    run = edited(runs["pytorch"], tmp_path / "run", edit)
    said = (
        f"{run}/run.json: configs[2] (pytorch_b4_s128.synthetic.sqlite) is a duplicate configuration (runtime "
        "pytorch, seq 128, batch 2) of configs[1]; kept the first one"
    )
    assert main(command("table", run, runs["cuda-graphs"], tmp_path / "rep")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(r["batch_size"], Path(r["trace"]).name) for r in doc["rows"]] == [
        (1, "pytorch_b1_s128.synthetic.sqlite"),
        (2, "pytorch_b2_s128.synthetic.sqlite"),
    ]
    assert f"pytorch b2 s128: {said}" in doc["warnings"]

    assert main(command("compare", run, runs["cuda-graphs"], tmp_path / "rep")) == 0
    doc = json.loads(capsys.readouterr().out)
    pairs = [(c["config"], Path(c["a"]["path"]).name) for c in doc["comparisons"]]
    assert pairs == [
        ("batch 1, seq 128", "pytorch_b1_s128.synthetic.sqlite"),
        ("batch 2, seq 128", "pytorch_b2_s128.synthetic.sqlite"),
    ]
    assert doc["comparisons"][1]["warnings"].count(f"A: {said}") == 1

    assert main(command("report", run, runs["cuda-graphs"], tmp_path / "rep")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(c["batch_size"], Path(c["path"]).name) for c in doc["configs"]] == [
        (1, "pytorch_b1_s128.synthetic.sqlite"),
        (2, "pytorch_b2_s128.synthetic.sqlite"),
    ]
    assert [w for w in doc["warnings"] if "duplicate" in w] == [
        f"{run}/pytorch_b2_s128.synthetic.sqlite: {said}"
    ]


def test_an_incomplete_run_is_said_and_a_run_with_nothing_to_analyze_is_named(tmp_path: Path) -> None:
    # An interrupted collection (run.json status "interrupted", the configurations not run "skipped") had
    # read as a complete, smaller sweep; one with nothing finished dropped out of the inputs in silence.
    import json
    import shutil

    from tests.conftest import SAMPLE_TRACES
    from tracekit.errors import TracekitError
    from tracekit.inputs import resolve_inputs

    run_dir = tmp_path / "run"
    shutil.copytree(SAMPLE_TRACES / "synthetic" / "sweep_pytorch", run_dir)
    doc = json.loads((run_dir / "run.json").read_text())
    doc["status"] = "interrupted"
    doc["configs"][-1]["status"] = "skipped"
    (run_dir / "run.json").write_text(json.dumps(doc))
    inputs = resolve_inputs([run_dir])
    assert len(inputs) == len(doc["configs"]) - 1
    assert inputs[0].notes == (
        f"{run_dir / 'run.json'}: the collection was interrupted: 1 of {len(doc['configs'])} configurations not "
        "analyzed (1 skipped): the sweep is incomplete",
    )
    assert all(not i.notes for i in inputs[1:])
    for config in doc["configs"]:
        config["status"] = "skipped"
    (run_dir / "run.json").write_text(json.dumps(doc))
    with pytest.raises(TracekitError) as err:
        resolve_inputs([run_dir])
    assert str(err.value) == (
        f"{run_dir / 'run.json'}: no configuration to analyze: the collection was interrupted "
        f"({len(doc['configs'])} skipped)"
    )
    doc["status"] = "complete"
    for config in doc["configs"]:
        config["status"] = "ok"
    (run_dir / "run.json").write_text(json.dumps(doc))
    assert not any(i.notes for i in resolve_inputs([run_dir]))  # a complete run: nothing to say
