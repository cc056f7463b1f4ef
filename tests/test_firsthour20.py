"""firsthour20: a new user's first hour (README top to bottom from a fresh clone, ``collect`` of the tiny model on
the CPU under ORT's profiler, torch.profiler and nsys, the common mistakes). Inputs are hand-built (synthetic)
traces and run folders written in the test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import run_cli, small_trace_events

# ------------------------------------------------------------------------ hand-built inputs


def _trace(path: Path, iterations: int = 4) -> Path:
    """tests.hostile's tiny Kineto trace (SYNTHETIC): ``iterations`` of 0.9 ms, 3 kernels of 10 µs each."""
    path.write_text(
        json.dumps(
            {"traceEvents": small_trace_events(iterations=iterations), "metadata": {"synthetic": True}}
        )
    )
    return path


def _run_folder(folder: Path, batch_sizes: tuple[int, ...] = (1, 4)) -> Path:
    """A tracekit run folder (SYNTHETIC): run.json naming one torch.profiler trace per batch size, seq 32."""
    folder.mkdir()
    configs: list[dict[str, Any]] = []
    for b in batch_sizes:
        name = f"pytorch_b{b}_s32.synthetic.json"
        _trace(folder / name)
        configs.append({"batch_size": b, "seq_len": 32, "status": "ok", "traces": {"torch": name}})
    run = {
        "kind": "collect",
        "synthetic": True,
        "runtime": "pytorch",
        "model": "tiny",
        "device": "cpu",
        "precision": "fp32",
        "profilers": ["torch"],
        "configs": configs,
    }
    (folder / "run.json").write_text(json.dumps(run))
    return folder


# ------------------------------------------------------------------------ compare: a side that is no trace


def test_compare_of_a_file_that_is_no_trace_against_a_run_folder_names_that_file(tmp_path, capsys):
    """`tracekit compare README.md runs/x` said "no configuration (batch size, seq len) in both A [(None, None)]
    and B [(1, 32), (4, 32)] that pairs one trace with one": Python's tuples, and not a word of README.md."""
    run = _run_folder(tmp_path / "run-synthetic")
    notes = tmp_path / "notes.md"
    notes.write_text("# my notes\n\nnot a trace\n")
    code, out, err = run_cli(capsys, "compare", str(notes), str(run))
    assert (code, out) == (2, "")
    assert err == (
        f"tracekit: {notes}: not a trace tracekit can read (expected Nsight Systems SQLite, Kineto JSON, ORT "
        "profile JSON or ncu CSV)\n"
    )


@pytest.mark.parametrize("command", ["compare", "table", "report"])
def test_a_run_json_given_alone_says_to_pass_its_folder(tmp_path, capsys, command):
    """A run's run.json given for the run: compare said "[(None, None)]" (against a run folder), and table and
    report said "pass the folder (tracekit analyze DIR)", another command than the one typed."""
    run = _run_folder(tmp_path / "run-synthetic")
    other = _run_folder(tmp_path / "other-synthetic")
    args = {"compare": [str(run / "run.json"), str(other)], "table": [str(run / "run.json")]}
    argv = args.get(command, [str(run / "run.json"), "-o", str(tmp_path / "rep")])
    code, out, err = run_cli(capsys, command, *argv)
    assert (code, out) == (2, "")
    assert err == (
        f"tracekit: {run / 'run.json'}: a tracekit run.json (settings), not a trace: pass its folder ({run}) "
        "instead\n"
    )
    assert not (tmp_path / "rep").exists()


def test_a_run_json_among_several_inputs_is_still_left_out_with_the_others_shown(tmp_path, capsys):
    """Among several inputs a file that is no trace is left out (exit 1) and the rest are shown: unchanged."""
    run = _run_folder(tmp_path / "run-synthetic")
    code, out, err = run_cli(capsys, "table", str(run / "run.json"), str(run), "--format", "csv")
    assert code == 1
    assert len(out.strip().splitlines()) == 3  # the header and the run's two configurations
    assert f"left out: {run / 'run.json'}: a tracekit run.json (settings), not a trace" in err
