"""firsthour19: a new user's first hour (README top to bottom from a fresh clone and a fresh virtualenv, the
Python API, --help, formats, error messages). Inputs are hand-built (synthetic) traces written in the test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import run_cli, small_trace_events

# ------------------------------------------------------------------------ hand-built inputs


def _kineto(path: Path, durations_us: list[int], kernel: str = "k") -> Path:
    """A Kineto trace (SYNTHETIC): one ``iteration`` annotation per duration (µs), 100 µs apart, each with one
    launch at +10 µs (5 µs long) and one 10-µs kernel named ``kernel`` at +30 µs."""
    events: list[dict[str, Any]] = []
    t = 1_000_000
    for corr, dur in enumerate(durations_us, start=1):
        events += [
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": "iteration",
                "pid": 1,
                "tid": 1,
                "ts": t,
                "dur": dur,
            },
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 1,
                "tid": 1,
                "ts": t + 10,
                "dur": 5,
                "args": {"correlation": corr},
            },
            {
                "ph": "X",
                "cat": "kernel",
                "name": kernel,
                "pid": 0,
                "tid": 7,
                "ts": t + 30,
                "dur": 10,
                "args": {"correlation": corr, "device": 0, "stream": 7},
            },
        ]
        t += dur + 100
    path.write_text(json.dumps({"traceEvents": events, "metadata": {"synthetic": True}}))
    return path


def _with_untraced(tmp_path: Path) -> Path:
    """tests.hostile's tiny trace (4 iterations of 0.9 ms, 3 kernels of 10 µs: traced mean 0.900 ms, busy 0.030)
    and a sidecar stating an untraced median of 0.45 ms (interval 0.40-0.50, 20 kept)."""
    trace = tmp_path / "tiny.synthetic.json"
    trace.write_text(
        json.dumps({"traceEvents": small_trace_events(iterations=4), "metadata": {"synthetic": True}})
    )
    sidecar = {
        "synthetic": True,
        "runtime": "pytorch",
        "batch_size": 1,
        "seq_len": 128,
        "precision": "fp16",
        "device": "gpu",
        "untraced_latency_ms": {"median": 0.45, "ci_low": 0.4, "ci_high": 0.5, "kept": 20, "count": 20},
    }
    (tmp_path / "tiny.synthetic.meta.json").write_text(json.dumps(sidecar))
    return trace


# ------------------------------------------------------------------------ table: what "untraced ms" is


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_the_tables_untraced_column_says_it_is_a_median_beside_a_traced_mean(tmp_path, capsys, fmt):
    """`tracekit table` (without --paper) showed "latency ms 0.900" beside "untraced ms 0.450" and said what
    the first is (a note on latency_ms: the mean over every traced iteration) but nothing of the second: that it
    is the median of the same configuration timed without a profiler. A new user read two latencies of one
    configuration, 2x apart, without knowing that one is a traced mean and the other an untraced median."""
    trace = _with_untraced(tmp_path)
    code, out, err = run_cli(capsys, "table", str(trace), "--format", fmt)
    assert code == 0, err
    assert "0.900" in out and "0.450" in out
    flat = " ".join(out.split())
    assert (
        "traced latency: the mean of every analyzed iteration (profiler on); untraced latency: the median of the "
        "same configuration timed without a profiler" in flat
    )


def test_the_table_says_nothing_of_an_untraced_column_it_does_not_show(tmp_path, capsys):
    """No untraced latency (no sidecar): no column, and no line about one."""
    trace = _kineto(tmp_path / "plain.synthetic.json", [1000] * 4)
    code, out, err = run_cli(capsys, "table", str(trace))
    assert code == 0, err
    assert "untraced" not in out


def test_tables_help_names_the_untraced_column(capsys):
    """`tracekit table --help` listed latency, busy and overhead "(means over iterations)" and nothing of the
    untraced column the table shows beside them."""
    from tracekit.cli import main

    with pytest.raises(SystemExit):
        main(["table", "--help"])
    flat = " ".join(capsys.readouterr().out.split())
    assert "the untraced latency (the median timed without a profiler, where the run records it)" in flat


# ------------------------------------------------------------------------ compare: the per-name table's order


def test_compares_per_name_title_says_how_names_on_one_side_are_ordered(tmp_path, capsys):
    """Two traces with no op name in common (A: kernel ``ka``, B: kernel ``kb``, one 10-µs kernel per
    iteration): every Δ of the per-name table is "—", yet its title said "top 2 of 2 by |Δ time|". The rows are
    ordered by |Δ| counting an absent side as 0 (analyzers/compare.py), i.e. by the one side's time: the title
    says so."""
    a = _kineto(tmp_path / "a.synthetic.json", [1000] * 4, kernel="ka")
    b = _kineto(tmp_path / "b.synthetic.json", [1000] * 4, kernel="kb")
    code, out, err = run_cli(capsys, "compare", str(a), str(b))
    assert code == 0, err
    flat = " ".join(out.split())
    assert "(top 2 of 2 by |Δ time|; a name run on one side only: by its time there)" in flat
    code, out, err = run_cli(capsys, "compare", str(a), str(b), "--format", "markdown")
    assert code == 0, err
    assert "(top 2 of 2 by |Δ time|; a name run on one side only: by its time there)" in out


def test_compares_per_name_title_is_unchanged_where_every_name_ran_on_both_sides(tmp_path, capsys):
    a = _kineto(tmp_path / "a.synthetic.json", [1000] * 4, kernel="k")
    b = _kineto(tmp_path / "b.synthetic.json", [1000] * 4, kernel="k")
    code, out, err = run_cli(capsys, "compare", str(a), str(b))
    assert code == 0, err
    flat = " ".join(out.split())
    assert "(top 1 of 1 by |Δ time|)" in flat
    assert "one side only" not in flat


def test_compares_markdown_document_holds_its_warnings(tmp_path, capsys):
    """README: warnings go to standard error "and into a JSON or Markdown document". compare's JSON held them,
    its Markdown none: `compare A B -o cmp.md` kept a table whose A had an outlier 3x the rest without a word
    of it. Hand-built: A's 10 iterations are 1 ms but the last, 3 ms (an outlier by rule); B's all 1 ms."""
    a = _kineto(tmp_path / "a.synthetic.json", [1000] * 9 + [3000])
    b = _kineto(tmp_path / "b.synthetic.json", [1000] * 10)
    code, out, err = run_cli(capsys, "compare", str(a), str(b), "--format", "markdown")
    assert code == 0, err
    said = "A: iteration latencies vary 3.0x (1 to 3 ms; coefficient of variation 52.7% over all 10)"
    assert said in err
    assert "## Warnings" in out
    (line,) = [line for line in out.splitlines() if said in line]
    assert line.startswith("- ")


def test_compare_of_one_file_with_itself_says_so_in_its_json_too(tmp_path, capsys):
    """`compare A A` warned on stderr that every difference is 0 by construction, but its JSON document (and
    so -o cmp.json) did not carry that warning, while it carries every other."""
    a = _kineto(tmp_path / "a.synthetic.json", [1000] * 4)
    code, out, err = run_cli(capsys, "compare", str(a), str(a), "--format", "json")
    assert code == 0, err
    said = f"A and B are the same file ({a}): every difference below is 0 by construction"
    assert json.loads(out)["warnings"] == [said]
    assert err.count(said) == 1


def test_compares_heading_says_an_unknown_runtime_in_words(tmp_path, capsys):
    """Two bare traces (no run.json, no sidecar, nothing that names a runtime): the heading read "A = ?
    (a.synthetic.json, ...)". It says "runtime unknown"."""
    a = _kineto(tmp_path / "a.synthetic.json", [1000] * 4)
    b = _kineto(tmp_path / "b.synthetic.json", [1000] * 4)
    code, out, err = run_cli(capsys, "compare", str(a), str(b))
    assert code == 0, err
    heading = out.splitlines()[0]
    assert f"A = runtime unknown ({a}, " in heading and f"B = runtime unknown ({b}, " in heading
    assert "= ?" not in heading


# ------------------------------------------------------------------------ analyze: the longest gaps' length


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_the_longest_gaps_table_names_the_quantity_of_its_microsecond_column(tmp_path, capsys, fmt):
    """The "longest idle gaps" table headed a column "µs" alone, beside "starts at (ms into iteration)": a unit
    with no quantity (the gap's length, duration_us in the JSON). A longer header wraps the others at 80
    columns, so the legend under the table says it, as it says "cause" and "launcher was". Hand-built: 4
    iterations of 1 ms, one kernel at +30 µs of 10 µs, so each iteration's trailing gap lasts 1000 - 40 = 960.0
    µs."""
    trace = _kineto(tmp_path / "gaps.synthetic.json", [1000] * 4)
    code, out, err = run_cli(capsys, "analyze", str(trace), "--format", fmt)
    assert code == 0, err
    flat = " ".join(out.split())
    assert "µs: the gap's length; cause: the one holding most of the gap" in flat
    assert "960.0" in out


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_the_longest_gaps_legend_says_how_iterations_are_numbered_after_a_skip(tmp_path, capsys, fmt):
    """The tour's ORT run: "iterations: 20 ranges named 'model_run'" above a longest-gaps table that lists
    iterations 20 and 22: they are numbered in the trace, the 3 recorded warm-up runs (skipped) counted. Said
    where some were skipped. Hand-built: 5 iterations of 1 ms, --skip 2: the gaps table lists 2, 3 and 4."""
    trace = _kineto(tmp_path / "gaps.synthetic.json", [1000] * 5)
    code, out, err = run_cli(capsys, "analyze", str(trace), "--skip", "2", "--format", fmt)
    assert code == 0, err
    flat = " ".join(out.split())
    assert "iteration: numbered from 0 in the trace, the 2 skipped at its start included" in flat
    code, out, err = run_cli(capsys, "analyze", str(trace), "--format", fmt)
    assert code == 0, err
    assert "skipped at its start" not in " ".join(out.split())


# ------------------------------------------------------------------------ -o -: standard output


@pytest.mark.parametrize("command", ["analyze", "table"])
def test_dash_as_the_output_file_is_standard_output(tmp_path, capsys, monkeypatch, command):
    """`-` reads standard input, but `-o -` wrote a file named "-" into the working folder ("wrote -"), where a
    Unix user expects standard output. It is standard output now. Hand-built trace: 4 iterations of 0.9 ms."""
    trace = _with_untraced(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, command, str(trace), "-o", "-", "--format", "json")
    assert code == 0, err
    assert not (tmp_path / "-").exists()
    doc = json.loads(out)
    latency = doc["summary"]["latency_ms"]["mean"] if command == "analyze" else doc["rows"][0]["latency_ms"]
    assert latency == pytest.approx(0.9, abs=1e-12)
    assert "wrote" not in err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["report", "{trace}", "-o", "-", "--no-figures"], "-o -: report writes a folder"),
        (
            ["simulate", "--runtime", "pytorch", "--batch-sizes", "1", "-o", "-"],
            "-o -: simulate writes a folder",
        ),
        (["analyze", "{trace}", "--gaps", "-"], "--gaps -: standard output holds the main result"),
        (["analyze", "{trace}", "--timeline", "-"], "--timeline -: standard output holds the main result"),
    ],
)
def test_dash_where_standard_output_cannot_take_it_is_one_line(tmp_path, capsys, monkeypatch, argv, said):
    """`report -o -` made a folder named "-"; `analyze --gaps -` a file named "-". One line, exit 2, and
    nothing written."""
    trace = _kineto(tmp_path / "t.synthetic.json", [1000] * 4)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, *(a.replace("{trace}", str(trace)) for a in argv))
    assert code == 2, err
    assert err.startswith(f"tracekit: {said}") and err.count("\n") == 1, err
    assert not (tmp_path / "-").exists()


# ------------------------------------------------------------------------ others' files: strict xfails


def test_report_names_dropped_iterations_by_the_index_analyze_gives_them(tmp_path, capsys):
    """A run that records 2 warm-up runs in its trace (sidecar: warmup_in_trace, iterations 18): 20 ranges,
    the first 2 skipped; the next 2 take 3 ms against ~1.005 ms for the rest. analyze's iterations carry index
    2..19, so the slow ones are iterations 2 and 3; report said "iterations 0-1" (the tour's ORT run: report's
    "iterations 0-1 ... iterations 7, 18" beside "iterations 3-4 ... iterations 10, 21", of the same run, two
    lines apart)."""
    trace = _kineto(
        tmp_path / "slow.synthetic.json", [5000, 5000, 3000, 3000] + [1000 + (i % 3) * 5 for i in range(16)]
    )
    sidecar = {
        "synthetic": True,
        "warmup_iterations": 2,
        "warmup_in_trace": True,
        "range": "iteration",
        "iterations": 18,
    }
    (tmp_path / "slow.synthetic.meta.json").write_text(json.dumps(sidecar))
    code, out, err = run_cli(capsys, "analyze", str(trace), "--format", "json")
    assert code == 0, err
    assert [r["index"] for r in json.loads(out)["iterations"]][:2] == [2, 3]
    code, out, err = run_cli(capsys, "report", str(trace), "-o", str(tmp_path / "rep"), "--no-figures")
    assert code == 0, err
    said = [line for line in err.splitlines() if "dropped 2 warm-up" in line]
    assert said, err
    assert "iterations 2-3" in said[0]


def test_every_time_column_of_the_idle_gaps_names_its_unit(tmp_path):
    import tracekit

    trace = _kineto(tmp_path / "gaps.synthetic.json", [1000] * 4)
    gaps = tracekit.analyze(str(trace)).idle_gaps
    assert "next_call_end" in gaps.columns or "next_call_end_ns" in gaps.columns
    assert "next_call_end" not in gaps.columns


def test_the_python_apis_docstring_examples_hold(monkeypatch):
    """A notebook user reads help(tracekit.analyze) and runs its example; every example of tracekit/api.py
    should print what it says. Only analyze's shape does not (the table, report and read_trace ones hold)."""
    import doctest
    import sys
    import warnings

    import tracekit
    import tracekit.api
    from tests.conftest import REPO

    monkeypatch.chdir(REPO)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failed = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for test in doctest.DocTestFinder().find(tracekit.api, globs={"tracekit": tracekit}):
            if test.examples:
                result = runner.run(test, out=sys.stderr.write)
                if result.failed:
                    failed.append(test.name)
    assert failed == []
