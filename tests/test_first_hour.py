"""What a new user trips on in a first hour with the README, each pinned: a misspelled option named by its
own command (with the nearest option), an output folder that cannot be written refused in one line before
the work (never an internal error after it), simulate's --format and --seed, doctor's formats and a reader
that stops early, and the README's claims about --format and the first lines of the set-up command's output.
Traces are synthetic (written by ``tracekit simulate`` into tmp folders) except where the README names a
committed sample."""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLE_TRACES
from tracekit.cli import build_parser, main

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.fixture(scope="module")
def synthetic_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small synthetic Kineto trace (with its sidecar) in a tmp folder."""
    folder = tmp_path_factory.mktemp("synthetic") / "synthetic_run"
    code = main(
        ["simulate", "--runtime", "pytorch", "--iters", "3", "--ops", "8", "--traces", "kineto", "-q"]
        + ["--metrics-interval-us", "0", "-o", str(folder)]
    )
    assert code == 0
    (trace,) = folder.glob("*.synthetic.json.gz")
    return trace


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    assert "Traceback" not in err and "internal error" not in err
    return lines[0]


# ------------------------------------------------------------------------------------------- options


def test_misspelled_option_is_named_by_its_command(
    synthetic_trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["analyze", str(synthetic_trace), "--fromat", "json"])
    assert info.value.code == 2
    line = _one_line(capsys.readouterr().err)
    # the command's own prog and --help (was: "tracekit: error: ... (see tracekit --help)")
    assert line.startswith("tracekit analyze: error: unrecognized arguments: --fromat json")
    assert "did you mean --format?" in line and line.endswith("(see tracekit analyze --help)")


def test_unknown_option_without_a_near_one(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["compare", "a", "b", "--frobnicate"])
    assert info.value.code == 2
    line = _one_line(capsys.readouterr().err)
    assert (
        line == "tracekit compare: error: unrecognized arguments: --frobnicate (see tracekit compare --help)"
    )


def test_simulate_format_says_it_prints_no_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["simulate", "--runtime", "pytorch", "--format", "json", "-o", str(tmp_path / "synthetic_f")])
    assert info.value.code == 2
    line = _one_line(capsys.readouterr().err)
    assert "takes no output format ('json')" in line and "--traces nsys|kineto|both" in line
    assert "invalid choice" not in line
    assert not (tmp_path / "synthetic_f").exists()


def test_simulate_negative_seed_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "synthetic_seed"
    with pytest.raises(SystemExit) as info:  # was: internal error (numpy's ValueError), exit 1, folder left
        main(["simulate", "--runtime", "pytorch", "--iters", "2", "--seed", "-1", "-o", str(out)])
    assert info.value.code == 2
    assert _one_line(capsys.readouterr().err) == (
        "tracekit simulate: error: argument --seed: must be >= 0 (see tracekit simulate --help)"
    )
    assert not out.exists()


# ------------------------------------------------------------------------------- unwritable outputs


@pytest.fixture
def read_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder this user cannot write into, as a read-only file system or a folder of another user makes it
    (``os.access`` says no; root passes every permission check, so the refusal is faked for it)."""
    folder = tmp_path / "synthetic_ro"
    folder.mkdir()
    real = os.access

    def access(path, mode, *a, **k):  # noqa: ANN001, ANN202
        if Path(path) == folder and mode & os.W_OK:
            return False
        return real(path, mode, *a, **k)

    monkeypatch.setattr(os, "access", access)
    return folder


def _no_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any analysis fails the test: the refusal must come before the work."""
    import tracekit.api

    def refuse(*a, **k):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("analyzed before refusing the output")

    monkeypatch.setattr(tracekit.api, "analyze_input", refuse)


@pytest.mark.parametrize(
    "option", [["-o", "out.json"], ["--gaps", "gaps.csv", "-o", os.devnull], ["--timeline", "t.json"]]
)
def test_unwritable_output_file_refused_before_the_analysis(
    option: list[str],
    synthetic_trace: Path,
    read_only: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _no_analysis(monkeypatch)
    target = read_only / option[1]
    args = ["analyze", str(synthetic_trace), option[0], str(target), *option[2:]]
    assert main(args) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"tracekit: {target}: cannot write: the folder {read_only} is not writable (")
    assert not target.exists()


def test_report_into_unwritable_folder_refused_before_the_analysis(
    synthetic_trace: Path,
    read_only: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _no_analysis(monkeypatch)
    out = read_only / "rep"
    assert main(["report", str(synthetic_trace), "-o", str(out), "--no-figures"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"tracekit: {out}: cannot create the output folder: {read_only} is not writable (")
    assert not out.exists()


def test_output_folder_that_cannot_be_made_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """mkdir failing (a read-only file system that access() did not foresee, a full disk) is one line and
    exit 2; it was an internal error (exit 1) for simulate and report."""
    out = tmp_path / "synthetic_sim"
    real = Path.mkdir

    def mkdir(self: Path, *a, **k) -> None:  # noqa: ANN002, ANN003
        if self == out:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))
        real(self, *a, **k)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    assert main(["simulate", "--runtime", "pytorch", "--iters", "2", "-q", "-o", str(out)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line == f"tracekit: {out}: cannot create the output folder: {os.strerror(errno.EROFS)}"


# ------------------------------------------------------------------------------------------- doctor


def test_doctor_lists_and_takes_only_its_formats(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser(["doctor"])
    sub = next(a for a in parser._actions if a.dest == "command").choices["doctor"]  # type: ignore[union-attr]
    assert "--format {table,json}" in sub.format_help()
    assert main(["doctor", "--format", "csv"]) == 2
    assert _one_line(capsys.readouterr().err) == "tracekit: doctor prints --format table or json, not csv"


def test_doctor_into_a_closed_pipe_exits_0() -> None:
    """``tracekit doctor | head -1``: the reader goes away; as every command, doctor ends with exit 0 and
    nothing on stderr (rich, writing to the pipe itself, had exited 1)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tracekit.cli", "doctor"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=README.parent,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before anything is written
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 0, err.decode()[-2000:]
    assert b"Traceback" not in err


# ------------------------------------------------------------------------------------------- README


def test_readme_format_sentence_matches_the_commands() -> None:
    text = " ".join(README.read_text().split())
    assert "Every command takes `--format" not in text
    claim = re.search(
        r"`analyze`, `table`, `compare` and `report` take `--format (\S+)` and `doctor` `--format (\S+)`",
        text,
    )
    assert claim is not None

    def shown(command: str) -> str | None:
        """The --format metavar of ``command``'s --help (None: it shows no --format)."""
        parser = build_parser([command])
        sub = next(a for a in parser._actions if a.dest == "command").choices[command]  # type: ignore[union-attr]
        fmt = next((a for a in sub._actions if "--format" in a.option_strings), None)
        return None if fmt is None or fmt.help == "==SUPPRESS==" else str(fmt.metavar)

    for command in ("analyze", "table", "compare", "report"):
        assert shown(command) == "{" + claim.group(1).replace("|", ",") + "}", command
    assert shown("doctor") == "{" + claim.group(2).replace("|", ",") + "}"
    assert shown("simulate") is None  # "collect and simulate print no result, so they take no --format"


def test_readme_first_lines_of_the_setup_command(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's block of what the set-up command prints first is that command's first lines."""
    text = README.read_text()
    setup = re.search(r"```sh\n(.*?)\n```", text, re.S)
    assert setup is not None
    trace = re.search(r"tracekit analyze (\S+)", setup.group(1))
    assert trace is not None
    block = re.search(
        r"prints first \(the tables that\nfollow break the time down by cause\):\n\n```\n(.*?)\n```",
        text,
        re.S,
    )
    assert block is not None, "the README's block of the first lines"
    shown = block.group(1).splitlines()
    monkeypatch.chdir(README.parent)  # run as written, in the repository folder
    assert main(["analyze", trace.group(1), "--format", "table"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[: len(shown)] == shown
    assert (SAMPLE_TRACES / trace.group(1).split("sample_traces/", 1)[1]).is_file()


@pytest.mark.parametrize("command", ["table", "report", "compare"])
def test_folder_of_traces_without_run_json_says_what_to_pass(
    command: str, synthetic_trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``simulate --ranks`` and torch.profiler write folders of traces with no run.json: ``analyze`` takes
    them, and ``table``/``report``/``compare`` say so and which files to pass (was: only 'no run.json')."""
    folder = tmp_path / "synthetic_traces"
    folder.mkdir()
    for name in ("a.synthetic.json.gz", "b.synthetic.json.gz"):
        (folder / name).write_bytes(synthetic_trace.read_bytes())
    (folder / "a.synthetic.meta.json").write_text("{}")
    argv = {
        "table": ["table", str(folder)],
        "report": ["report", str(folder), "-o", str(tmp_path / "rep"), "--no-figures"],
        "compare": ["compare", str(folder), str(synthetic_trace)],
    }[command]
    assert main(argv) == 2
    line = _one_line(capsys.readouterr().err)
    assert line == (
        f"tracekit: {folder}: not a tracekit run directory (no run.json); it holds 2 trace files "
        f"(a.synthetic.json.gz, b.synthetic.json.gz): pass the files ({folder}/*.json.gz), or analyze the "
        f"folder with tracekit analyze {folder}"
    )


def test_a_folder_of_runs_names_them_and_a_tools_json_is_not_a_trace(
    synthetic_trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``tracekit table runs --paper`` on the folder above the runs (as sample_traces/h200_bert_fp16, which
    holds gpu_check's results beside its run directories): the line names the runs and says to pass them; it
    had counted the results as "4 trace files" and told the user to pass those."""
    folder = tmp_path / "runs"
    for run in ("onnx", "pytorch", "torchscript", "cuda-graphs"):
        (folder / run).mkdir(parents=True)
        (folder / run / "run.json").write_text("{}")
    (folder / "gpu_check.run1.json").write_text('{"checks": [], "device": "NVIDIA H200"}')
    assert main(["table", str(folder), "--paper"]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"tracekit: {folder}: not a tracekit run directory (no run.json); the run directories cuda-graphs, "
        f"onnx, pytorch and 1 more stand below it: pass them ({folder}/*/), or analyze the folder with "
        f"tracekit analyze {folder}"
    )
    lone = tmp_path / "one"
    (lone / "pytorch").mkdir(parents=True)
    (lone / "pytorch" / "run.json").write_text("{}")
    assert main(["table", str(lone)]) == 2
    assert "the run directory pytorch stands below it: pass it (" in _one_line(capsys.readouterr().err)
    # Beside trace files, a tool's JSON is not counted among them.
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "a.synthetic.json.gz").write_bytes(synthetic_trace.read_bytes())
    (traces / "gpu_check.run1.json").write_text('{"checks": [], "device": "NVIDIA H200"}')
    assert main(["table", str(traces)]) == 2
    assert "it holds 1 trace file (a.synthetic.json.gz): pass the files" in _one_line(capsys.readouterr().err)


def test_api_takes_one_path_alone(synthetic_trace: Path) -> None:
    """``tracekit.table("runs/x")`` and ``tracekit.report("runs/x")`` in a notebook: one path is one input
    (it was iterated character by character: "/: no such file or directory")."""
    import tracekit

    folder = synthetic_trace.parent
    assert tracekit.table(str(folder)).height == 1
    assert tracekit.table(folder).height == 1
    assert tracekit.report(str(folder)).configs.height == 1


def test_table_ncu_before_the_inputs_says_so(
    synthetic_trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``tracekit table --ncu REPORT RUN``: --ncu takes every file after it, RUN too; the line says so (was:
    'the following arguments are required: INPUT', with INPUT given)."""
    ncu = synthetic_trace.with_name("synthetic.ncu.csv")
    assert main(["table", "--ncu", str(ncu), str(synthetic_trace.parent)]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"tracekit: no INPUT: --ncu took every file after it ({ncu}, {synthetic_trace.parent}); give the inputs "
        "first: tracekit table INPUT... --ncu FILE..."
    )
    assert main(["table"]) == 2
    assert "table needs at least one INPUT" in _one_line(capsys.readouterr().err)
    parser = build_parser(["table"])
    sub = next(a for a in parser._actions if a.dest == "command").choices["table"]  # type: ignore[union-attr]
    assert sub.format_usage().rstrip().endswith("INPUT [INPUT ...]")


def test_analyze_help_names_every_format_it_reads() -> None:
    """The README lists .nsys-rep and ncu CSV among analyze's inputs; its --help named three formats only."""
    parser = build_parser(["analyze"])
    sub = next(a for a in parser._actions if a.dest == "command").choices["analyze"]  # type: ignore[union-attr]
    text = " ".join(sub.format_help().split())
    for name in (
        "Nsight Systems SQLite",
        ".nsys-rep",
        "Kineto",
        "ONNX Runtime profile",
        "Nsight Compute CSV",
    ):
        assert name in text, name


@pytest.mark.parametrize(("typed", "meant"), [("analyse", "analyze"), ("comapre", "compare")])
def test_misspelled_command_gets_the_nearest(
    typed: str, meant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main([typed, "x"])
    assert info.value.code == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"tracekit: error: argument COMMAND: invalid choice: '{typed}'")
    assert line.endswith(f"; did you mean {meant}? (see tracekit --help)")
