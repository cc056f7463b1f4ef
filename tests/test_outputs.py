"""No command writes over its inputs, -o means what it says, and usage errors are one line (issue 11, 1-3, 5, 6)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from tests.conftest import SAMPLE_TRACES
from tracekit.cli import main

SQLITE = SAMPLE_TRACES / "synthetic" / "table3_pytorch" / "pytorch_b1_s128.synthetic.sqlite"
KINETO = SAMPLE_TRACES / "synthetic" / "table3_pytorch" / "pytorch_b1_s128.synthetic.json.gz"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    """A private copy of a sample trace (never the committed one)."""
    target = tmp_path / "good.sqlite"
    shutil.copyfile(SQLITE, target)
    return target


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize(
    "argv",
    [
        ["analyze", "{t}", "-o", "{t}", "--format", "json"],
        ["analyze", "{t}", "-o", "{t}"],
        ["table", "{t}", "-o", "{t}"],
        ["compare", "{t}", "{t}", "-o", "{t}", "--format", "csv"],
    ],
)
def test_output_over_the_input_is_refused(
    argv: list[str], trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _digest(trace)
    err = _refused([a.format(t=trace) for a in argv], capsys)
    assert "refusing to write over an input file" in err and str(trace) in err
    assert _digest(trace) == before


def test_output_through_a_symlink_or_hard_link_is_refused(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _digest(trace)
    link = tmp_path / "link.sqlite"
    link.symlink_to(trace)
    hard = tmp_path / "hard.sqlite"
    os.link(trace, hard)
    assert "refusing" in _refused(["analyze", str(link), "-o", str(trace), "--format", "json"], capsys)
    assert "refusing" in _refused(["analyze", str(trace), "-o", str(link), "--format", "json"], capsys)
    assert "refusing" in _refused(["analyze", str(trace), "-o", str(hard), "--format", "json"], capsys)
    assert _digest(trace) == before and link.is_symlink()


def test_report_never_writes_over_an_input_inside_its_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Kineto trace that happens to be called report.json, reported into its own folder."""
    folder = tmp_path / "rep"
    folder.mkdir()
    victim = folder / "report.json"
    shutil.copyfile(KINETO, victim)
    before = _digest(victim)
    err = _refused(["report", str(victim), "-o", str(folder), "--no-figures"], capsys)
    assert "refusing to write over an input file" in err
    assert _digest(victim) == before


def test_format_follows_the_extension_and_contradictions_are_refused(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "x.json"
    assert main(["analyze", str(trace), "-o", str(out)]) == 0
    assert json.loads(out.read_text())["iterations"]
    csv_out = tmp_path / "x.csv"
    assert main(["analyze", str(trace), "-o", str(csv_out)]) == 0
    assert csv_out.read_text().startswith("index,")
    md = tmp_path / "x.md"
    assert main(["table", str(trace), "-o", str(md)]) == 0
    assert md.read_text().startswith("## Measured")
    capsys.readouterr()
    err = _refused(["analyze", str(trace), "-o", str(tmp_path / "y.json"), "--format", "csv"], capsys)
    assert "contradicts" in err and not (tmp_path / "y.json").exists()


def test_old_format_names_still_work_with_a_note(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "x.md"
    assert main(["analyze", str(trace), "--format", "md", "-o", str(out)]) == 0
    assert out.read_text().startswith("# tracekit analyze")
    assert "--format md is now called --format markdown" in capsys.readouterr().err


def test_no_folder_is_created_silently(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no" / "such"
    err = _refused(["analyze", str(trace), "-o", str(missing / "x.json")], capsys)
    assert "does not exist" in err
    err = _refused(["report", str(trace), "-o", str(missing / "rep"), "--no-figures"], capsys)
    assert "does not exist" in err
    assert not (tmp_path / "no").exists()
    # the last level is created
    assert main(["report", str(trace), "-o", str(tmp_path / "rep"), "--no-figures", "--format", "json"]) == 0
    assert (tmp_path / "rep" / "report.md").is_file()


def _simulate(out: Path, runtime: str, *extra: str) -> int:
    return main(
        ["simulate", "--runtime", runtime, "--iters", "2", "--ops", "5", "-q", "-o", str(out), *extra]
    )


def test_simulate_refuses_an_existing_run_and_overwrite_replaces_it_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sim"
    assert _simulate(out, "pytorch", "--batch-sizes", "1,2") == 0
    mine = out / "my-notes.txt"
    mine.write_text("not tracekit's")
    before = {p.name: _digest(p) for p in out.iterdir()}
    err = _refused(["simulate", "--runtime", "onnx", "--iters", "2", "-q", "-o", str(out)], capsys)
    assert "already holds a run" in err and "--overwrite" in err
    assert {p.name: _digest(p) for p in out.iterdir()} == before
    assert _simulate(out, "onnx", "--overwrite") == 0
    names = sorted(p.name for p in out.iterdir())
    assert not [n for n in names if n.startswith("pytorch_")], names  # no orphans of the old run
    assert "my-notes.txt" in names and mine.read_text() == "not tracekit's"
    assert json.loads((out / "run.json").read_text())["runtime"] == "onnx"


def test_simulate_says_when_there_is_no_transition(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["simulate", "--runtime", "pytorch", "--iters", "2", "--ops", "5", "-o", str(tmp_path / "s")])
        == 0
    )
    err = capsys.readouterr().err
    assert "None" not in err and "wrote 1 synthetic config to" in err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["analyze", "x.sqlite", "--format", "xml"], "argument --format: unknown format 'xml'"),
        (["simulate", "--runtime", "pytorch", "--batch-sizes", "1,x", "-o", "s"], "argument --batch-sizes"),
        (["simulate", "--runtime", "nope", "-o", "s"], "argument --runtime: invalid choice: 'nope'"),
    ],
)
def test_bad_option_values_are_one_line(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and expected in err and "--help" in err
    assert "usage:" not in err


def test_the_test_session_keeps_caches_out_of_home() -> None:
    """The ONNX export cache and matplotlib's cache point into pytest's temporary folder (issue 11, 6)."""
    for name in ("TRACEKIT_CACHE", "MPLCONFIGDIR"):
        assert "pytest-" in os.environ[name], (name, os.environ[name])


def test_collect_overwrite_removes_the_old_runs_files(tmp_path: Path) -> None:
    """collect follows the same rule as simulate: --overwrite replaces the old run whole, nothing orphaned."""
    pytest.importorskip("torch")
    out = tmp_path / "run"
    tiny = ["collect", "--runtime", "pytorch", "--model", "tiny", "--seq-lens", "16", "--warmup", "1",
            "--iters", "2", "--profiler", "torch", "-o", str(out)]  # fmt: skip
    assert main([*tiny, "--batch-sizes", "2"]) == 0
    assert (out / "pytorch_b2_s16.torch.json.gz").is_file()
    mine = out / "notes.txt"
    mine.write_text("mine")
    assert main([*tiny, "--batch-sizes", "1"]) == 2
    assert main([*tiny, "--batch-sizes", "1", "--overwrite"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert not [n for n in names if n.startswith("pytorch_b2_")], names
    assert "pytorch_b1_s16.torch.json.gz" in names and mine.read_text() == "mine"


def test_simulate_format_is_the_old_name_of_traces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--format means the output format everywhere; simulate's old --format (which traces) still works."""
    assert _simulate(tmp_path / "s", "onnx", "--format", "nsys") == 0
    assert "simulate --format nsys is now --traces nsys" in capsys.readouterr().err
    assert sorted(p.suffix for p in (tmp_path / "s").iterdir()) == [".json", ".json", ".json", ".sqlite"]


def test_doctor_takes_the_common_format_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "doctor.json"
    assert main(["doctor", "-o", str(out)]) == 0
    assert "cuda" in json.loads(out.read_text())
    capsys.readouterr()
    assert "doctor prints --format table or json" in _refused(["doctor", "--format", "csv"], capsys)


def test_an_output_that_is_no_regular_file_is_written_through_never_replaced(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # -o /dev/null (a common idiom) used to rename a regular file over the device, run as root: a named pipe
    # and a device stand in for it here. Both stay what they are; what is written reaches the reader.
    import threading

    fifo = tmp_path / "out.pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert main(["analyze", str(trace), "-o", str(fifo), "--format", "json", "-q"]) == 0
    reader.join(30)
    assert fifo.is_fifo() and json.loads(got[0])["summary"]["iterations"] == 10
    # (a device of its own, like /dev/null: a regression must not replace the machine's /dev/null)
    device = tmp_path / "null"
    try:
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:  # not root: the pipe above stands for every such target
        return
    assert main(["analyze", str(trace), "-o", str(device), "--format", "json", "-q"]) == 0
    assert device.is_char_device()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_an_output_through_a_symbolic_link_replaces_the_file_it_points_to(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "target.json"
    target.write_text("orig")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert main(["analyze", str(trace), "-o", str(link), "--format", "json", "-q"]) == 0
    assert link.is_symlink() and json.loads(target.read_text())["summary"]["iterations"] == 10


def test_an_output_that_cannot_be_written_is_one_line_naming_it(
    trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _refused(["analyze", str(trace), "-o", "/proc/tracekit-out.json", "--format", "json"], capsys) == (
        "tracekit: /proc/tracekit-out.json: cannot write: No such file or directory"
    )
