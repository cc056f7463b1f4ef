"""Defects found by fuzzing mutated traces (notes: fuzz_findings.md, C1, C2, E1, E4), each pinned here.

C1: a Kineto trace whose events lost their ``name`` is analyzed as one window (exit 0), not an internal error.
C2: an Nsight Systems export with a timestamp that is text, a blob or a REAL beyond int64 ends in one line
naming the table, the column, the value and its row (exit 2), through either SQLite engine.
E1: an ONNX Runtime profile re-saved by ``json.dumps`` (``"cat": "Node"``) is detected as ORT.
E4: ``--gaps`` naming the file of ``-o`` or ``--timeline`` is refused; refusals name the option that wrote.

Every input is SYNTHETIC (made in the test) or a copy of a sample trace changed in the test.
"""

from __future__ import annotations

import gzip
import json
import random
import shutil
import sqlite3
import threading
from pathlib import Path

import pytest

from tests import hostile
from tests.builders import kineto_file
from tests.conftest import SAMPLE_TRACES
from tracekit.cli import main
from tracekit.readers import detect_format

SQLITE_SAMPLE = SAMPLE_TRACES / "synthetic/table3_pytorch/pytorch_b1_s128.synthetic.sqlite"
ORT_SAMPLE = SAMPLE_TRACES / "cpu_onnx_bert_ort/onnx_b1_s128.ort.json.gz"
KINETO_SAMPLE = SAMPLE_TRACES / "h200_bert_fp16/pytorch/pytorch_b1_s128.torch.json.gz"
KERNELS = "CUPTI_ACTIVITY_KIND_KERNEL"


def _analyze(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict | None, list[str]]:
    """``tracekit analyze ARGS --format json`` in this process: (exit code, the JSON document or None, the
    lines on standard error)."""
    code = main(["analyze", *args, "--format", "json", "--no-progress"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == 0 else None, err.strip().splitlines()


def _one_line(code: int, err: list[str]) -> str:
    """The one error line of a refused run (exit 2), without ``tracekit: ``."""
    assert code == 2, err
    assert len(err) == 1, err
    assert err[0].startswith("tracekit: "), err
    return err[0].removeprefix("tracekit: ")


# ------------------------------------------------------------------------------------- C1: no names


def _without_names(events: list[dict], keep=lambda e: False) -> list[dict]:
    return [e if keep(e) else {k: v for k, v in e.items() if k != "name"} for e in events]


def test_kineto_events_without_names_are_one_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every event without ``name`` (the ranges, the launch calls, the kernels): the trace is analyzed as
    one window, as the same trace without its ranges is, and a warning counts the unnamed ranges."""
    events = hostile.small_trace_events()
    nameless = kineto_file(tmp_path, _without_names(events), "nameless.json")
    no_ranges = kineto_file(
        tmp_path, _without_names([e for e in events if e["cat"] != "user_annotation"]), "no_ranges.json"
    )
    code, doc, err = _analyze(capsys, str(nameless))
    assert code == 0, err
    code, reference, _ = _analyze(capsys, str(no_ranges))
    assert code == 0
    assert doc["range"] == "window"
    assert doc["range_choice"].startswith("no named ranges (the trace's 4 ranges have no name): one window ")
    assert doc["summary"]["iterations"] == 1
    assert doc["iterations"] == reference["iterations"]
    assert doc["iterations"][0]["kernels"] == 12
    assert (
        "left out 4 ranges without a name: a range needs a name to be chosen as the iterations"
        in doc["warnings"]
    )


def test_unnamed_ranges_are_no_candidates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Named launch calls and kernels, ranges without names: one window; named ranges beside one unnamed
    range: the named ones are the iterations, and the unnamed one is counted in a warning."""
    events = hostile.small_trace_events()
    path = kineto_file(tmp_path, _without_names(events, lambda e: e["cat"] != "user_annotation"), "r.json")
    code, doc, err = _analyze(capsys, str(path))
    assert code == 0, err
    assert (doc["range"], doc["summary"]["iterations"]) == ("window", 1)
    assert doc["range_choice"].startswith("no named ranges (the trace's 4 ranges have no name)")
    first = next(e for e in events if e["cat"] == "user_annotation")
    mixed = kineto_file(tmp_path, _without_names(events, lambda e: e is not first), "mixed.json")
    code, doc, err = _analyze(capsys, str(mixed))
    assert code == 0, err
    assert (doc["range"], doc["summary"]["iterations"]) == ("iteration", 3)
    assert (
        "left out 1 range without a name: a range needs a name to be chosen as the iterations"
        in doc["warnings"]
    )


def test_range_option_on_unnamed_ranges_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = kineto_file(tmp_path, _without_names(hostile.small_trace_events()), "nameless.json")
    code, _, err = _analyze(capsys, str(path), "--range", "iteration")
    assert _one_line(code, err) == (
        f"{path}: no range named 'iteration': the trace's 4 ranges have no name (leave out --range to analyze "
        "the whole trace, or split it with --split-idle MS)"
    )


# ----------------------------------------------------------------- C2: nsys values that are no integers


def _nsys_copy(tmp_path: Path, name: str, sql: str) -> Path:
    """A copy of the SQLite sample with ``sql`` run on it (the table recreated without its constraints)."""
    path = tmp_path / name
    shutil.copy(SQLITE_SAMPLE, path)
    path.chmod(0o644)
    con = sqlite3.connect(path)
    con.executescript(
        f"CREATE TABLE t AS SELECT * FROM {KERNELS}; DROP TABLE {KERNELS}; ALTER TABLE t RENAME TO {KERNELS};"
        + sql
    )
    con.commit()
    con.close()
    return path


def _rowid(path: Path, which: str) -> int:
    con = sqlite3.connect(path)
    try:
        return con.execute(f"SELECT {which}(rowid) FROM {KERNELS}").fetchone()[0]
    finally:
        con.close()


BAD_VALUES = [
    ("start", "'abc'", "text 'abc'"),
    ("end", "1e30", "real 1e+30, outside the 64-bit integer range"),
    ("start", "X'00010203'", "blob X'00010203'"),
    ("start", "9e999", "real inf"),
]


@pytest.mark.parametrize("engine", ["adbc", "sqlite3"])
@pytest.mark.parametrize("which", ["min", "max"])
@pytest.mark.parametrize("column, value, said", BAD_VALUES)
def test_nsys_timestamp_that_is_no_integer(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    engine: str,
    which: str,
    column: str,
    value: str,
    said: str,
) -> None:
    """One kernel's timestamp replaced (first row or last row); the other rows' REAL starts within range
    (``start + 0.5``) are taken as they were, so the line names the one bad value."""
    monkeypatch.setenv("TRACEKIT_SQLITE_ENGINE", engine)
    path = _nsys_copy(
        tmp_path,
        "bad.sqlite",
        f"UPDATE {KERNELS} SET start = start + 0.5 WHERE rowid % 3 = 0; "
        f"UPDATE {KERNELS} SET {column} = {value} WHERE rowid = (SELECT {which}(rowid) FROM {KERNELS});",
    )
    code, _, err = _analyze(capsys, str(path))
    assert _one_line(code, err) == (
        f"{path}: {KERNELS}.{column} holds a value that is not an integer ({said}, rowid {_rowid(path, which)})"
    )


@pytest.mark.parametrize("mode", ["side by side", "slices"])
def test_nsys_bad_timestamp_through_threaded_adbc(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """The threaded ADBC reads give the same one line: the kernel and API tables read side by side, one
    thread each; or a table read in rowid slices, one per thread (made small enough here to slice)."""
    from tracekit.readers import nsys_sqlite, sqlite_engine

    monkeypatch.setenv("TRACEKIT_SQLITE_ENGINE", "adbc")
    monkeypatch.setattr(sqlite_engine, "SLICE_MIN_ROWS", 16)
    monkeypatch.setattr(sqlite_engine, "read_threads", lambda: 4)
    if mode == "slices":
        monkeypatch.setattr(nsys_sqlite, "SIDE_BY_SIDE_MAX_ROWS", 0)
    reads: list[tuple[int, str]] = []
    real = sqlite_engine.adbc_sliced_frame

    def spy(database: object, sql: str, slices: list[str], schema: dict) -> object:
        if KERNELS in sql:
            reads.append((len(slices), threading.current_thread().name))
        return real(database, sql, slices, schema)

    monkeypatch.setattr(sqlite_engine, "adbc_sliced_frame", spy)
    path = _nsys_copy(
        tmp_path,
        "bad.sqlite",
        f"UPDATE {KERNELS} SET start = 'abc' WHERE rowid = (SELECT max(rowid) - 7 FROM {KERNELS});",
    )
    code, _, err = _analyze(capsys, str(path))
    rowid = _rowid(path, "max") - 7
    assert _one_line(code, err) == (
        f"{path}: {KERNELS}.start holds a value that is not an integer (text 'abc', rowid {rowid})"
    )
    if mode == "slices":
        assert reads == [(4, "MainThread")]
    else:
        assert len(reads) == 1 and reads[0][0] == 1 and reads[0][1].startswith("tracekit-table")


# ------------------------------------------------------------------------ E1: re-saved ORT profiles


def _ort_events() -> list[dict]:
    return json.loads(gzip.decompress(ORT_SAMPLE.read_bytes()))


@pytest.mark.parametrize("change", ["no session events", "shuffled, session events last"])
def test_ort_profile_resaved_by_json_dumps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: str
) -> None:
    """Written by ``json.dumps`` (``"cat": "Node"``), its first events Nodes: read as ORT, with the same
    iterations as the original (copied without its sidecar)."""
    events = _ort_events()
    if change == "shuffled, session events last":
        nodes = [e for e in events if e["cat"] == "Node"]
        random.Random(7).shuffle(nodes)
        events = nodes + [e for e in events if e["cat"] != "Node"]
    else:
        events = [e for e in events if e["name"] not in ("model_loading_uri", "session_initialization")]
    resaved = tmp_path / "resaved.json"
    resaved.write_text(json.dumps(events))
    original = tmp_path / "original.ort.json.gz"
    shutil.copy(ORT_SAMPLE, original)
    assert detect_format(resaved) == "ort"
    code, doc, err = _analyze(capsys, str(resaved))
    assert code == 0, err
    code, reference, _ = _analyze(capsys, str(original))
    assert code == 0
    assert (doc["range"], doc["summary"]["iterations"]) == ("model_run", 30)
    assert doc["iterations"] == reference["iterations"]


@pytest.mark.parametrize("colon", [": ", ":  ", "\t:\n", " :"])
def test_ort_detected_whatever_the_spacing_of_the_colon(tmp_path: Path, colon: str) -> None:
    node = '{"cat"%s"Node", "pid": 1, "tid": 1, "dur": 5, "ts": 8, "ph": "X", "name": "MatMul_kernel_time"}'
    path = tmp_path / "p.json"
    path.write_text("[\n" + node % colon + "\n]\n")
    assert detect_format(path) == "ort"


# ------------------------------------------------------------------------------ E4: output clashes


def test_gaps_and_output_name_the_same_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    same = tmp_path / "same.json"
    code, _, err = _analyze(capsys, str(KINETO_SAMPLE), "--gaps", str(same), "-o", str(same))
    assert _one_line(code, err) == f"{same}: --gaps and -o name the same file"
    assert not same.exists()
    link = tmp_path / "link.json"
    link.symlink_to(same)
    same.write_text("kept\n")
    code, _, err = _analyze(capsys, str(KINETO_SAMPLE), "--gaps", str(link), "-o", str(same))
    assert _one_line(code, err) == f"{link}: --gaps and -o name the same file"
    assert same.read_text() == "kept\n"


def test_gaps_and_timeline_name_the_same_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    same = tmp_path / "same.json"
    code, _, err = _analyze(capsys, str(KINETO_SAMPLE), "--gaps", str(same), "--timeline", str(same))
    assert _one_line(code, err) == f"{same}: --gaps and --timeline name the same file"
    assert not same.exists()


def test_output_over_the_input_names_its_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.json.gz"
    shutil.copy(KINETO_SAMPLE, trace)
    before = trace.read_bytes()
    for option in ("--gaps", "--timeline", "-o"):
        code, _, err = _analyze(capsys, str(trace), option, str(trace))
        said = f"{trace}: refusing to write over an input file (choose another {option})"
        assert _one_line(code, err) == said
    assert trace.read_bytes() == before


# E2 -------------------------------------------------------------------------------- where the JSON breaks


@pytest.fixture(scope="module")
def kineto_text() -> bytes:
    return gzip.decompress(KINETO_SAMPLE.read_bytes())


def _e2(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: bytes) -> str:
    path = tmp_path / "broken.json"
    path.write_bytes(text)
    code, _, err = _analyze(capsys, str(path))
    line = _one_line(code, err)
    prefix = f"{path}: truncated or invalid JSON: "
    assert line.startswith(prefix), line
    return line[len(prefix) :]


def test_json_errors_name_the_byte_of_the_whole_text_where_it_breaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kineto_text: bytes
) -> None:
    # The last chunk's errors used to name a byte of that chunk (byte 1013711 of a 10 MB text, an ordinary
    # event), and a document cut just before its closing brace was said to have trailing characters.
    text = kineto_text
    end = text.rindex(b"}")
    array_end = text.rindex(b"]")
    assert _e2(tmp_path, capsys, text[:end]) == (
        f"the document ends before its closing brace (truncated?), after the events, at byte {end}"
    )
    assert _e2(tmp_path, capsys, text + b"xx") == f"text after the end of the document, at byte {end + 1}"
    assert _e2(tmp_path, capsys, text[:5_000_000]) == "the text ends inside the events, at byte 5000000"
    assert _e2(tmp_path, capsys, text[: array_end + 1] + b" xx}") == (
        f"the events array is followed by neither , nor }} at byte {array_end + 2} of the JSON text"
    )
    assert _e2(tmp_path, capsys, text[: array_end + 1] + b"}  yy") == (
        f"text after the end of the document, at byte {array_end + 4}"
    )


# E3 ------------------------------------------------------------------------- nothing left, and why


def test_a_trace_left_empty_by_the_reader_says_what_was_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Every start and end negated: every row has a negative duration: the ranges are left out, the device ops
    # kept with no end time (the calls lasting 0). The one line used to say "nothing to analyze" only, with
    # the reader's reasons lost; then "no device activity" beside 4000 device ops.
    path = _nsys_copy(
        tmp_path,
        "negated.sqlite",
        f"UPDATE {KERNELS} SET start=-start, end=-end; "
        "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start=-start, end=-end; "
        "UPDATE NVTX_EVENTS SET start=-start, end=-end;",
    )
    code, _, err = _analyze(capsys, str(path))
    negative = (
        "with a negative duration (end before start, a profiler bug such as kineto#646's missing end time)"
    )
    assert _one_line(code, err) == (
        f"{path}: no ranges, and none of its 4,000 device ops has both a start and an end time: nothing to "
        "analyze (the reader said: 4000 device ops with a negative duration (end before start: a damaged row or "
        f"a profiler's lost end time): they count with no end time (in no busy time); 10 ranges {negative} "
        "ignored)"
    )
