"""Nsight Systems reports (``.nsys-rep``, ``.qdrep``) analyzed directly: exported by the installed nsys to a
temporary SQLite file (tracekit.readers.nsys_report), never written beside the report.

The real exports need nsys (CI installs it; skipped without it); the failure paths use a fake nsys."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import SAMPLE_TRACES, inflated, real_trace

SAMPLE = SAMPLE_TRACES / "cpu_onnx_bert_nsys"
REPORT = SAMPLE / "onnx_b1_s128.nsys.nsys-rep"
#: the report's SQLite export, as nsys writes it (committed gzipped: ``.sqlite.gz``)
EXPORT = inflated(SAMPLE / "onnx_b1_s128.nsys.sqlite.gz")
needs_nsys = pytest.mark.skipif(shutil.which("nsys") is None, reason="nsys (Nsight Systems) not installed")


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from tracekit.cli import main

    rc = main([*argv, "--no-progress"])
    out, err = capsys.readouterr()
    return rc, out, err


def _json(path: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    rc, out, err = _cli(["analyze", str(path), "--format", "json"], capsys)
    assert rc == 0, err
    doc = json.loads(out)
    doc["trace"].pop("path")
    return doc


def _listing(folder: Path) -> list[tuple[str, int, int]]:
    return sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir())


@pytest.fixture
def own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary folder of its own for the export, to see that it is removed."""
    import tempfile

    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _fake_nsys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> Path:
    """A shell script standing in for nsys (TRACEKIT_NSYS); ``$out`` is the -o argument; each call appends a
    line to ``calls``."""
    script = tmp_path / "fake-nsys"
    calls = tmp_path / "calls"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {calls}\n'
        'out=""; while [ $# -gt 0 ]; do [ "$1" = "-o" ] && out="$2"; shift; done\n' + body + "\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("TRACEKIT_NSYS", str(script))
    return calls


@needs_nsys
def test_a_report_gives_the_answer_of_its_export_and_leaves_its_folder_alone(
    tmp_path: Path, own_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    report = folder / REPORT.name
    shutil.copy(REPORT, report)
    shutil.copy(SAMPLE / "onnx_b1_s128.nsys.meta.json", folder)  # its sidecar, found beside the report
    before = _listing(folder)
    # the committed export, gzipped, with the same sidecar
    assert _json(report, capsys) == _json(SAMPLE / "onnx_b1_s128.nsys.sqlite.gz", capsys)
    assert _listing(folder) == before  # nothing written beside the report, nothing changed
    assert list(own_tmp.iterdir()) == []  # the temporary export is gone


@needs_nsys
def test_the_studys_qdrep_gives_the_answer_of_the_export_beside_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qdrep = real_trace("paper", "framework_tax_bert_fp16_bs1_cudagraphs_rtx8000.qdrep")
    sqlite = qdrep.with_suffix(".sqlite")  # exported with nsys 2022.4 by whoever shared it
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    os.symlink(qdrep, tmp_path / "a" / qdrep.name)  # the same file names: the answers may use them
    os.symlink(sqlite, tmp_path / "b" / sqlite.name)
    from_report = _json(tmp_path / "a" / qdrep.name, capsys)
    from_export = _json(tmp_path / "b" / sqlite.name, capsys)
    # the file name appears where a value agrees with it
    assert json.dumps(from_report).replace(qdrep.name, sqlite.name) == json.dumps(from_export)
    assert from_report["config"]["runtime"] == "cuda-graphs" and from_report["summary"]["iterations"] == 10
    assert from_report["trace"]["format_version"] == "2022.4.2.1"  # the nsys that exported it here


def test_without_nsys_one_line_says_how_to_export_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("TRACEKIT_NSYS", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no nsys on it
    rc, out, err = _cli(["analyze", str(REPORT)], capsys)
    assert rc == 2 and out == ""
    assert err == (
        f"tracekit: {REPORT}: an Nsight Systems report, and nsys (Nsight Systems) is not installed to export "
        "it: install it (or set TRACEKIT_NSYS), or export it where nsys is: "
        "nsys export --type sqlite -o onnx_b1_s128.nsys.sqlite onnx_b1_s128.nsys.nsys-rep\n"
    )


def test_a_report_nsys_cannot_export_fails_in_one_line_with_what_nsys_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_nsys(
        tmp_path,
        monkeypatch,
        r'printf "Exporting 10 events: [1%%  ]\rExporting 10 events: [100%%]\n"; '
        'echo "Exportation error: Section Table Reference magic number mismatch." ; exit 1',
    )
    report = tmp_path / "cut.nsys-rep"
    report.write_bytes(REPORT.read_bytes()[:100_000])
    rc, out, err = _cli(["analyze", str(report)], capsys)
    assert (rc, out) == (2, "")
    assert err == (
        f"tracekit: {report}: fake-nsys export could not export this report: "
        "Exportation error: Section Table Reference magic number mismatch.\n"
    )


def test_the_export_is_given_a_link_to_the_report_in_the_temporary_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # whatever nsys writes beside its input (here: a file next to the link) lands in the temporary folder
    calls = _fake_nsys(
        tmp_path, monkeypatch, f'touch "$(dirname "$out")/beside-the-input"; cp {EXPORT} "$out"'
    )
    folder = tmp_path / "run"
    folder.mkdir()
    report = folder / "r.nsys-rep"
    shutil.copy(REPORT, report)
    before = _listing(folder)
    rc, out, err = _cli(["analyze", str(report), "--format", "json"], capsys)
    assert rc == 0, err
    assert json.loads(out)["trace"]["path"] == str(report)
    args = calls.read_text().split()
    assert args[:6] == ["export", "--type", "sqlite", "--force-overwrite", "true", "-o"]
    link = Path(args[-1])
    assert link.parent == Path(args[6]).parent and link.parent.parent == own_tmp
    assert _listing(folder) == before and list(own_tmp.iterdir()) == []


def test_an_export_that_is_no_nsys_export_names_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE notes (x TEXT)")
    _fake_nsys(tmp_path, monkeypatch, f'cp {foreign} "$out"')
    report = tmp_path / "r.nsys-rep"
    shutil.copy(REPORT, report)
    rc, out, err = _cli(["analyze", str(report)], capsys)
    assert (rc, out) == (2, "")
    assert err == (
        f"tracekit: {report}: not an Nsight Systems export: no StringIds/NVTX_EVENTS/CUPTI tables "
        "(in its SQLite export)\n"
    )


def test_with_a_cache_a_second_analysis_exports_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = _fake_nsys(tmp_path, monkeypatch, f'cp {EXPORT} "$out"')
    report = tmp_path / "r.nsys-rep"
    shutil.copy(REPORT, report)
    cache = tmp_path / "cache"
    first = _cli(["analyze", str(report), "--format", "json", "--cache", str(cache)], capsys)
    second = _cli(["analyze", str(report), "--format", "json", "--cache", str(cache), "--skip", "1"], capsys)
    assert first[0] == second[0] == 0
    assert len(calls.read_text().splitlines()) == 1
    assert json.loads(second[1])["summary"]["iterations"] == json.loads(first[1])["summary"]["iterations"] - 1


def test_a_report_from_a_pipe_needs_a_file(tmp_path: Path) -> None:
    import threading

    from tracekit.errors import TraceFormatError
    from tracekit.readers import detect_format

    fifo = tmp_path / "r.nsys-rep"
    os.mkfifo(fifo)

    def write() -> None:
        try:
            with open(fifo, "wb") as pipe:
                pipe.write(REPORT.read_bytes())
        except BrokenPipeError:  # the reader refused after the first bytes
            pass

    writer = threading.Thread(target=write)
    writer.start()
    try:
        with pytest.raises(TraceFormatError, match="an Nsight Systems report needs random access"):
            detect_format(fifo)
    finally:
        with open(fifo, "rb") as pipe:  # let the writer finish
            pipe.read()
        writer.join(10)


def test_a_report_is_told_by_its_content_whatever_its_name(tmp_path: Path) -> None:
    from tracekit.readers import detect_format

    renamed = tmp_path / "profile.bin"
    shutil.copy(REPORT, renamed)
    assert detect_format(renamed) == detect_format(REPORT) == "nsys-rep"


def test_an_export_past_the_inflate_limit_is_stopped_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import time

    # a report whose export keeps growing: nsys is stopped once the export passes --max-inflated
    _fake_nsys(tmp_path, monkeypatch, 'head -c 3000000 /dev/zero > "$out"; sleep 30')
    report = tmp_path / "r.nsys-rep"
    shutil.copy(REPORT, report)
    start = time.monotonic()
    rc, out, err = _cli(["analyze", str(report), "--max-inflated", "1M"], capsys)
    assert time.monotonic() - start < 10  # not the 30 s nsys would take
    assert (rc, out) == (2, "")
    assert err == (
        f"tracekit: {report}: inflates past 1 MiB of text (--max-inflated); pass --max-inflated SIZE to allow it\n"
    )
    assert list(own_tmp.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "link"),
    [("r.nsys-rep", "report.nsys-rep"), ("r.qdrep", "report.qdrep"), ("profile.bin", "report.nsys-rep")],
)
def test_nsys_exports_a_link_named_as_nsys_names_reports(
    name: str, link: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own_tmp: Path
) -> None:
    from tracekit.readers import read_trace

    calls = _fake_nsys(tmp_path, monkeypatch, f'cp {EXPORT} "$out"')
    report = tmp_path / name
    shutil.copy(REPORT, report)
    trace = read_trace(report)
    args = calls.read_text().split()
    folder = Path(args[-1]).parent
    assert folder.parent == own_tmp and folder.name.startswith("tracekit-nsys-export-")
    assert args == [
        "export", "--type", "sqlite", "--force-overwrite", "true", "-o", str(folder / "report.sqlite"),
        str(folder / link),
    ]  # fmt: skip
    assert trace.meta["path"] == str(report) and trace.meta["format"] == "nsys-sqlite"


def _export_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], body: str
) -> str:
    _fake_nsys(tmp_path, monkeypatch, body)
    report = tmp_path / "r.nsys-rep"
    shutil.copy(REPORT, report)
    rc, out, err = _cli(["analyze", str(report)], capsys)
    assert (rc, out) == (2, "")
    prefix = f"tracekit: {report}: fake-nsys export could not export this report: "
    assert err.startswith(prefix) and err.endswith("\n") and err.count("\n") == 1, err
    return err[len(prefix) : -1]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        # a one-line message, on standard error
        ('echo "Exportation error: boom" >&2; exit 1', "Exportation error: boom"),
        # the progress bar after the message is not the message
        (
            'echo "Error: report version 3.9 is newer"; printf "Exporting 9 events: [100%%]\\r\\n"; exit 1',
            "Error: report version 3.9 is newer",
        ),
        ('printf "  Exporting 9 events: [1%%]\\r"; exit 3', "exit status 3, no message"),
        # exit status 0, but nothing written
        ("exit 0", "exit status 0, no message"),
        # a file written, but a failure said
        ('echo half > "$out"; echo "Exportation error: disk full"; exit 1', "Exportation error: disk full"),
    ],
)
def test_what_nsys_said_when_it_failed_is_the_one_line(
    body: str,
    said: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _export_fails(tmp_path, monkeypatch, capsys, body) == said


def test_an_nsys_that_cannot_run_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-nsys"
    monkeypatch.setenv("TRACEKIT_NSYS", str(missing))
    rc, out, err = _cli(["analyze", str(REPORT)], capsys)
    assert (rc, out) == (2, "")
    assert err.startswith(f"tracekit: {REPORT}: could not run {missing} export: [Errno 2] No such file")
    assert err.count("\n") == 1


def test_the_frames_asked_for_are_the_frames_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracekit.readers import read_trace

    gpu_export = SAMPLE_TRACES / "synthetic" / "table3_pytorch" / "pytorch_b1_s128.synthetic.sqlite"
    _fake_nsys(tmp_path, monkeypatch, f'cp {gpu_export} "$out"')
    report = tmp_path / "r.nsys-rep"
    shutil.copy(REPORT, report)
    everything, ranges_only = (
        read_trace(report),
        read_trace(report, frames={"ranges": None, "api": ("start",)}),
    )
    assert everything.api.get_column("name").null_count() == 0 and everything.api.height == 4010
    assert ranges_only.api.get_column("name").null_count() == ranges_only.api.height > 0


def test_progress_bars_before_the_message_on_its_line_are_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    said = _export_fails(
        tmp_path, monkeypatch, capsys, r'printf "Exporting 9 events: [1%%]\rError: bad \377 byte\n"; exit 1'
    )
    # (a byte that is no UTF-8 is no crash; the line is cut where its printable text ends: nsys quotes a damaged
    # report's binary bytes there, which said nothing and put U+FFFD on the terminal)
    assert said == "Error: bad"


def test_an_export_that_appears_late_is_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # nothing written for a few looks at its size, then the export in two steps under --max-inflated 2M:
    # 1.6 MB in all, within it
    _fake_nsys(
        tmp_path,
        monkeypatch,
        f'sleep 0.35; head -c 800000 {EXPORT} > "$out"; sleep 0.35; cat {EXPORT} > "$out"',
    )
    report = tmp_path / "r.nsys-rep"
    shutil.copy(REPORT, report)
    rc, out, err = _cli(["analyze", str(report), "--max-inflated", "2M", "--format", "json"], capsys)
    assert rc == 0, err
    assert json.loads(out)["summary"]["iterations"] == 20


def test_the_export_is_held_to_the_ratio_of_the_reports_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tracekit import limits

    monkeypatch.setattr(limits, "INFLATE_RATIO", 2)
    monkeypatch.setattr(limits, "INFLATE_FLOOR_BYTES", 1)
    _fake_nsys(tmp_path, monkeypatch, 'head -c 3000000 /dev/zero > "$out"; sleep 30')
    report = tmp_path / "r.nsys-rep"
    report.write_bytes(REPORT.read_bytes()[:500_000])
    rc, out, err = _cli(["analyze", str(report)], capsys)
    assert (rc, out) == (2, "")
    assert err == (
        f"tracekit: {report}: inflates past 977 KiB of text (2x its 488 KiB on disk); pass --max-inflated SIZE "
        "to allow it\n"
    )


def test_nsys_is_watched_by_the_memory_ceiling_and_stopped_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import os as os_

    from tracekit import limits

    watched: list[tuple[str, int]] = []
    monkeypatch.setattr(limits, "watch_process", lambda pid: watched.append(("watch", pid)))
    monkeypatch.setattr(limits, "unwatch_process", lambda pid: watched.append(("unwatch", pid)))
    pids = tmp_path / "pids"
    _fake_nsys(tmp_path, monkeypatch, f'echo $$ > {pids}; head -c 3000000 /dev/zero > "$out"; sleep 30')
    report = tmp_path / "r.nsys-rep"
    shutil.copy(REPORT, report)
    rc, _, _ = _cli(["analyze", str(report), "--max-inflated", "1M"], capsys)
    pid = int(pids.read_text())
    assert rc == 2 and watched == [("watch", pid), ("unwatch", pid)]
    with pytest.raises(ProcessLookupError):  # stopped and reaped, not left running
        os_.kill(pid, 0)


def test_an_export_that_takes_too_long_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tracekit.readers import nsys_report

    monkeypatch.setattr(nsys_report, "EXPORT_TIMEOUT_S", 0.3)
    _fake_nsys(tmp_path, monkeypatch, "sleep 30")
    report = tmp_path / "r.nsys-rep"
    shutil.copy(REPORT, report)
    rc, out, err = _cli(["analyze", str(report)], capsys)
    assert (rc, out) == (2, "")
    assert err == f"tracekit: {report}: nsys export took over 0.3 s; stopped\n"


def test_the_export_shows_its_own_progress_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import contextlib

    from tracekit import progress
    from tracekit.readers import read_trace

    rows: list[str] = []

    @contextlib.contextmanager
    def task(label: str, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        rows.append(label)
        yield progress.NULL_TASK

    _fake_nsys(tmp_path, monkeypatch, f'cp {EXPORT} "$out"')
    monkeypatch.setattr(progress, "task", task)
    report = tmp_path / "r.nsys-rep"
    shutil.copy(REPORT, report)
    read_trace(report)
    assert rows == ["reading r.nsys-rep", "exporting r.nsys-rep with nsys"]
