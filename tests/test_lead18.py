"""The lead's fixes of round 18 (defects found by the round's helpers in the lead's files), each on a hand-built
SYNTHETIC trace whose answer is known exactly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import analyze_json, small_trace_events


def _kineto(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"traceEvents": events, "traceName": "synthetic"}))
    return path


def _untimed(events: list[dict[str, Any]], iterations: set[int]) -> list[dict[str, Any]]:
    """``events`` (small_trace_events: iterations 1 ms apart from ts 1,000,000 µs) with the kernels of
    ``iterations`` stripped of their dur."""
    for event in events:
        if event["cat"] == "kernel" and (event["ts"] - 1_000_000) // 1000 in iterations:
            del event["dur"]
    return events


def test_iterations_whose_every_kernel_is_untimed_have_no_busy_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Iteration 1's three kernels have no dur; iterations 0, 2 and 3 hold three 10-µs kernels each (busy 0.03
    of 0.9 ms). Iteration 1's busy time is unknown, not 0.0: its busy, overhead, utilization and idle are null,
    its 3 kernels still counted; the verdict stands on the three timed iterations (framework-bound, 3.3%),
    without doubt: every op of those three was timed (it had read busy mean 0.0225 ms, min 0.0, and "verdict
    uncertain: 3 of 12 device ops ... (25%)")."""
    path = _kineto(tmp_path / "part.synthetic.json", _untimed(small_trace_events(), {1}))
    code, doc, err = analyze_json(capsys, str(path))
    assert code == 0, err
    rows = doc["iterations"]
    assert [r["kernels"] for r in rows] == [3, 3, 3, 3]
    assert [r["gpu_busy_ms"] for r in rows] == [0.03, None, 0.03, 0.03]
    assert [r["gpu_utilization"] for r in rows][1] is None and rows[1]["idle_ms"] is None
    assert rows[1]["framework_overhead_ms"] is None and rows[1]["latency_ms"] == 0.9
    assert not any("hold no device op" in w for w in doc["warnings"])
    assert doc["summary"]["bound"] == "framework"
    busy = doc["summary"]["gpu_busy_ms"]
    assert (busy["mean"], busy["min"], busy["max"]) == (0.03, 0.03, 0.03)
    assert doc["summary"]["verdict_uncertain"] is None
    assert any(
        "1 of 4 iterations (index 1)" in w and "none of which has a start or end time" in w
        for w in doc["warnings"]
    ), doc["warnings"]


def test_no_verdict_when_no_kernel_of_any_iteration_is_timed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every kernel untimed: no busy time anywhere, so no verdict (bound null, with the reason), kernels 3 each."""
    path = _kineto(tmp_path / "none.synthetic.json", _untimed(small_trace_events(), {0, 1, 2, 3}))
    code, doc, err = analyze_json(capsys, str(path))
    assert code == 0, err
    assert [r["kernels"] for r in doc["iterations"]] == [3, 3, 3, 3]
    assert [r["gpu_busy_ms"] for r in doc["iterations"]] == [None] * 4
    assert doc["summary"]["bound"] is None
    assert doc["warnings"][0].startswith(
        "no framework-/compute-bound verdict: none of the device ops in the 4"
    ), doc
    assert not any(w.startswith("verdict uncertain") for w in doc["warnings"])


def test_a_partly_timed_iteration_still_doubts_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Iteration 1 wholly untimed (withheld), and one kernel of iteration 2 untimed: 1 of the 9 ops of the
    other three iterations (11%, over the 10% line) makes the verdict uncertain; iteration 2 reads busy 0.02."""
    events = _untimed(small_trace_events(), {1})
    kernel = next(e for e in events if e["cat"] == "kernel" and e["ts"] > 1_002_000)
    del kernel["dur"]
    code, doc, err = analyze_json(capsys, str(_kineto(tmp_path / "mixed.synthetic.json", events)))
    assert code == 0, err
    assert [r["gpu_busy_ms"] for r in doc["iterations"]] == [0.03, None, 0.02, 0.03]
    assert doc["summary"]["verdict_uncertain"].startswith(
        "verdict uncertain: 1 of 9 device ops in the iterations (11%)"
    )


# ------------------------------------------------------------------------- file names that are not UTF-8


def _odd_name(folder: Path) -> Path:
    """``folder``/caf\\xe9.synthetic.json (Latin-1 bytes: not UTF-8), a small SYNTHETIC Kineto trace."""
    import os

    return _kineto(
        Path(os.fsdecode(os.fsencode(str(folder)) + b"/caf\xe9.synthetic.json")), small_trace_events()
    )


def test_a_pool_worker_names_its_note_for_a_file_name_that_is_not_utf8(tmp_path: Path) -> None:
    """The memory ceiling's note of a many-trace worker is named by a hash of the path's bytes: a name that is
    not UTF-8 had made every --jobs worker fail ('worker failed: UnicodeEncodeError')."""
    import hashlib

    from tracekit.fleet.run import _note_name

    path = str(_odd_name(tmp_path))
    assert (
        _note_name(path)
        == hashlib.blake2b(str(tmp_path).encode() + b"/caf\xe9.synthetic.json", digest_size=8).hexdigest()
    )


def test_the_memory_ceiling_stops_the_analysis_of_a_file_whose_name_is_not_utf8(tmp_path: Path) -> None:
    """--max-memory below what the analysis needs ends it in one line naming the file (its backslash escape),
    exit 2. With a name that is not UTF-8, the ceiling's thread had died on a UnicodeEncodeError (a traceback),
    and the analysis went on past the ceiling to exit 0."""
    import subprocess
    import sys

    path = _odd_name(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "tracekit.cli", "analyze", path.name, "--max-memory", "60M", "-q"],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    err = done.stderr.decode("utf-8", errors="strict")
    assert done.returncode == 2, err
    assert err.startswith("tracekit: caf\\udce9.synthetic.json: memory use passed 60 MiB ("), err
    assert err.count("\n") == 1 and "Traceback" not in err, err


# --------------------------------------------------------------------- table: a run folder's files are inputs


def test_table_refuses_a_run_folders_own_file_as_output_before_the_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`table RUN -o RUN/run.json` is refused in one line, exit 2, before any analysis (it had been refused
    only after analyzing every trace), and run.json is left byte for byte."""
    import shutil

    from tracekit import api
    from tracekit.cli import main

    run = tmp_path / "run"
    shutil.copytree(Path(__file__).resolve().parents[1] / "sample_traces" / "cpu_onnx_bert_ort", run)
    before = (run / "run.json").read_bytes()

    def analyzed(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the traces were analyzed")

    monkeypatch.setattr(api, "table_document", analyzed)
    assert main(["table", str(run), "-o", str(run / "run.json")]) == 2
    err = capsys.readouterr().err
    assert err == f"tracekit: {run / 'run.json'}: refusing to write over an input file (choose another -o)\n"
    assert (run / "run.json").read_bytes() == before


# ------------------------------------------------- nsys: a kernel of no process whose launch call was far


def test_an_nsys_kernel_without_a_process_keeps_its_iteration_when_its_call_was_far(tmp_path: Path) -> None:
    """three_iteration_nsys (3 x 1.0 ms, busy 0.3, 2 kernels each; capture 0 to 20 ms) with the launch call of
    correlation 1 stamped 3 h later and that kernel's globalPid NULL: the kernel keeps iteration 0 by its own
    start (busy 0.3, 2 kernels), as with its process known (fixfar18's left item: the (pid, correlation) join
    missed it, and it read 'launched before the capture', iteration 0 at 0.1 ms busy)."""
    import tracekit
    from tests.hostile import run_sql, three_iteration_nsys

    hour = 3600 * 10**9
    path = run_sql(
        three_iteration_nsys(tmp_path / "far_call_no_pid.synthetic.sqlite", capture_ns=20_000_000),
        f'UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = start + {3 * hour}, "end" = "end" + {3 * hour} '
        "WHERE correlationId = 1",
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = NULL WHERE correlationId = 1",
    )
    analyzed = tracekit.analyze(path)
    frame = analyzed.iterations
    assert frame.get_column("gpu_busy_ms").to_list() == pytest.approx([0.3] * 3, abs=1e-12)
    assert frame.get_column("kernels").to_list() == [2, 2, 2]
    assert not any("before the capture" in w for w in analyzed.warnings), analyzed.warnings
