"""One set of conventions for every command: --no-progress and -q/--quiet everywhere, runtime names
checked by argparse, warnings always on stderr (also with -o), report -o is a folder and refuses a
file-like name. Inputs are the committed samples (synthetic ones say so)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import SAMPLE_TRACES
from tracekit.cli import COMMANDS, build_parser, main

SYNTHETIC = SAMPLE_TRACES / "synthetic" / "table3_pytorch"
SYNTHETIC_TRACE = SYNTHETIC / "pytorch_b1_s128.synthetic.sqlite"
ORT_TRACE = SAMPLE_TRACES / "cpu_onnx_bert_ort" / "onnx_b1_s128.ort.json.gz"


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_takes_no_progress_and_quiet(command: str) -> None:
    parser = build_parser([command])
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]  # type: ignore[union-attr]
    options = {s for a in sub._actions for s in a.option_strings}
    assert {"--no-progress", "-q", "--quiet"} <= options, command


@pytest.mark.parametrize("sizes", ["1,,2", "1,", ",2", ","])
@pytest.mark.parametrize("command", ["collect", "simulate"])
def test_an_empty_item_in_a_size_list_is_refused(
    command: str, sizes: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # "1,,2" had been read as [1, 2]: a typo that ran another sweep than the one meant, without a word
    with pytest.raises(SystemExit) as info:
        main([command, "--batch-sizes", sizes, "-o", "nowhere"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--batch-sizes" in err[0], err
    assert f"expected comma-separated integers, got {sizes!r} (an empty item)" in err[0]


@pytest.mark.parametrize("command", ["collect", "simulate"])
def test_runtime_names_checked_by_argparse(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([command, "--runtime", "tensorrt", "-o", "nowhere"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "invalid choice: 'tensorrt'" in err[0] and "pytorch" in err[0]


def test_report_output_is_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "rep.json"
    assert main(["report", str(SYNTHETIC), "-o", str(target), "--no-figures"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "takes a folder" in err[0] and "rep.json" in err[0]
    assert not target.exists()
    # an existing file is refused too
    existing = tmp_path / "report"
    existing.write_text("x")
    assert main(["report", str(SYNTHETIC), "-o", str(existing), "--no-figures"]) == 2
    assert "is a file" in capsys.readouterr().err
    # --help says what -o and --format mean for report
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "report folder" in help_text and "file-like name (rep.json) is refused" in help_text
    assert "from the -o file's extension" not in help_text


def test_warnings_on_stderr_with_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "onnx.json"
    assert main(["analyze", str(ORT_TRACE), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    doc = json.loads(out.read_text())
    assert doc["warnings"] and all(f"warning: {w}" in err for w in doc["warnings"])
    assert f"wrote {out}" in err
    # -q: the 'wrote' line goes, the warnings stay
    assert main(["analyze", str(ORT_TRACE), "-o", str(out), "-q"]) == 0
    err = capsys.readouterr().err
    assert "wrote" not in err and "warning: iteration latencies vary 1.7x" in err
    # (the sidecar's warm-up drop is a note since c2c1a19, not a warning)
    assert "warning: dropped the first 10 iterations" not in err
    # table -o and report: warnings on stderr as well
    assert main(["table", str(ORT_TRACE), "-o", str(tmp_path / "t.csv")]) == 0
    table_doc_warnings = capsys.readouterr().err
    assert "warning:" in table_doc_warnings
    assert (
        main(["report", str(ORT_TRACE), "-o", str(tmp_path / "r"), "--no-figures", "--format", "json"]) == 0
    )
    captured = capsys.readouterr()
    assert json.loads(captured.out)["warnings"] and "warning:" in captured.err


def test_simulate_output_defaults_like_collect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["simulate", "--runtime", "onnx", "--iters", "2", "--traces", "nsys", "-q"]) == 0
    (made,) = (tmp_path / "runs").iterdir()
    assert made.name.startswith("simulated-onnx-") and (made / "run.json").is_file()
    assert capsys.readouterr().err == ""  # -q: nothing informational
