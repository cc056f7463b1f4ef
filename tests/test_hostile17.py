"""Hostile inputs through the CLI, round 17 (hostile17): cases hostile16, fuzz14 and the earlier hostile and
fuzz files did not try.

The standard: bad input is one line on standard error naming the file and the problem (exit 2), never a
traceback and never a wrong number; inputs are opened read-only and never changed; outputs are written
atomically. 28 of these tests began as strict xfails, each showing a defect in a file hostile17 did not own; all
were fixed in the same round (fixread17, fixinputs17, firsthour17, the lead), and every test now pins the right
behaviour that a change could lose.

Every trace is built here in pytest's temporary folder (names say "synthetic"); the expected numbers follow
from the events written.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import analyze_json as _json
from tests.hostile import run_cli as _run
from tests.hostile import run_sql as _sql
from tests.hostile import small_trace_events
from tests.hostile import three_iteration_nsys as _nsys
from tests.nsys_builder import NsysBuilder

# ----------------------------------------------------------------------------------------------- helpers


def _one_line(err: str, path: str | Path) -> str:
    """The one line of a refusal: it names ``path``; no traceback, no internal error."""
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("tracekit: ") and str(path) in lines[0], err
    return lines[0]


def _kineto(path: Path, events: list[dict[str, Any]] | None = None) -> Path:
    """``{"traceEvents": events}`` (default: tests.hostile.small_trace_events: 4 iterations of 0.9 ms, 3
    kernels of 10 µs each)."""
    path.write_text(json.dumps({"traceEvents": small_trace_events() if events is None else events}))
    return path


def _latencies(doc: dict[str, Any]) -> list[float]:
    return [it["latency_ms"] for it in doc["iterations"]]


def _busy(doc: dict[str, Any]) -> list[tuple[float, int]]:
    return [(it["gpu_busy_ms"], it["kernels"]) for it in doc["iterations"]]


def test_the_hand_built_bases_read_as_their_docstrings_say(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc, err = _json(capsys, str(_nsys(tmp_path / "base.synthetic.sqlite")))
    assert code == 0, err
    assert _latencies(doc) == [1.0, 1.0, 1.0]
    assert _busy(doc) == [(0.3, 2)] * 3
    assert doc["warnings"] == []
    code, doc, err = _json(capsys, str(_kineto(tmp_path / "base.synthetic.json")))
    assert code == 0, err
    assert _latencies(doc) == [0.9] * 4
    assert _busy(doc) == [(0.03, 3)] * 4
    assert doc["warnings"] == []


# ------------------------------------------------------------------------------------------ nsys SQLite


def test_nsys_kernel_stamped_near_2_63_is_not_a_latency(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One kernel of iteration 0 (start 2^63-807, end 2^63-1 ns): an export bug or a damaged row, 292 years
    after the capture (which ANALYSIS_DETAILS says lasted 20 ms) ended. Either refused in one line, or the
    kernel left out with a warning and every iteration's latency the range's 1.000 ms."""
    path = _sql(
        _nsys(tmp_path / "far.synthetic.sqlite", capture_ns=20_000_000),
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 9223372036854775000, end = 9223372036854775807 "
        "WHERE rowid = 1",
    )
    code, doc, err = _json(capsys, str(path))
    if code == 2:
        _one_line(err, path)
        return
    assert code == 0, err
    assert _latencies(doc) == [1.0, 1.0, 1.0]
    assert _busy(doc)[1:] == [(0.3, 2)] * 2
    assert any("capture" in w for w in doc["warnings"]), doc["warnings"]


def test_nsys_blob_in_string_ids_names_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _sql(
        _nsys(tmp_path / "blob.synthetic.sqlite"), "UPDATE StringIds SET value = X'FFFE00' WHERE id = 1"
    )
    code, _, err = _json(capsys, str(path))
    assert code == 2
    assert "StringIds.value holds a value" in _one_line(err, path)


@pytest.mark.parametrize(
    ("statements", "message"),
    [
        (
            ["ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME COLUMN end TO finish"],
            "CUPTI_ACTIVITY_KIND_KERNEL lacks required column(s) end",
        ),
        (["ALTER TABLE StringIds RENAME COLUMN value TO val"], "StringIds lacks required column(s) value"),
        (
            ["ALTER TABLE CUPTI_ACTIVITY_KIND_RUNTIME RENAME COLUMN nameId TO nm"],
            "CUPTI_ACTIVITY_KIND_RUNTIME lacks required column(s) nameId",
        ),
        (
            ["UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'abc' WHERE rowid = 1"],
            "CUPTI_ACTIVITY_KIND_KERNEL.start holds a value that is not an integer (text 'abc', rowid 1)",
        ),
        (
            [
                "CREATE TABLE s2 AS SELECT * FROM StringIds",
                "DROP TABLE StringIds",
                "CREATE TABLE StringIds (id INTEGER, value TEXT)",
                "INSERT INTO StringIds SELECT * FROM s2",
                "INSERT INTO StringIds VALUES (1, 'other')",
            ],
            "StringIds repeats 1 id(s) (first: 1)",
        ),
    ],
    ids=[
        "kernel end renamed",
        "StringIds value renamed",
        "runtime nameId renamed",
        "text start",
        "two ids 1",
    ],
)
def test_nsys_tables_with_columns_renamed_or_ambiguous_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], statements: list[str], message: str
) -> None:
    path = _sql(_nsys(tmp_path / "renamed.synthetic.sqlite"), *statements)
    before = path.read_bytes()
    code, _, err = _json(capsys, str(path))
    assert code == 2
    assert message in _one_line(err, path)
    assert path.read_bytes() == before


def test_nsys_kernel_table_as_a_view_and_a_real_start_read_as_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The kernel table behind a VIEW of the same name, and a start stored as REAL (x.5 ns): the same numbers."""
    view = _sql(
        _nsys(tmp_path / "view.synthetic.sqlite"),
        "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME TO k2",
        "CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS SELECT * FROM k2",
    )
    real = _sql(
        _nsys(tmp_path / "real.synthetic.sqlite"),
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + 0.5 WHERE rowid = 1",
    )
    for path in (view, real):
        code, doc, err = _json(capsys, str(path))
        assert code == 0, err
        assert _latencies(doc) == [1.0, 1.0, 1.0]
        assert _busy(doc) == [(0.3, 2)] * 3


def test_nsys_a_kernel_ending_before_it_starts_is_kept_untimed_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kernel 1 (iteration 0) ends before it starts: it counts in iteration 0 with no end time (it had been
    left out: 1 kernel for 2 launches, its busy time as known), and the line says so."""
    path = _sql(
        _nsys(tmp_path / "backwards.synthetic.sqlite"),
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 150000 WHERE rowid = 1",
    )
    code, doc, err = _json(capsys, str(path))
    assert code == 0, err
    assert _busy(doc) == [(0.1, 2), (0.3, 2), (0.3, 2)]
    assert doc["warnings"][0] == (
        "1 device ops with a negative duration (end before start: a damaged row or a profiler's lost end time): "
        "they count with no end time (in no busy time)"
    )


def test_nsys_nvtx_range_without_end_is_no_iteration_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The second 'iteration' range's end NULL (the capture ended inside it, or a damaged row): two
    iterations, and the second's 2 kernels (0.300 ms) said to be outside every iteration."""
    path = _sql(
        _nsys(tmp_path / "open.synthetic.sqlite"), "UPDATE NVTX_EVENTS SET end = NULL WHERE rowid = 2"
    )
    code, doc, err = _json(capsys, str(path))
    assert code == 0, err
    assert _latencies(doc) == [1.0, 1.0]
    assert any(w.startswith("1 NVTX range(s) never closed") for w in doc["warnings"])
    assert any(w.startswith("2 device ops (0.300 ms busy) were launched outside") for w in doc["warnings"])


def test_crossing_ranges_of_one_thread_are_not_blamed_on_other_threads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _sql(
        _nsys(tmp_path / "cross.synthetic.sqlite"),
        "UPDATE NVTX_EVENTS SET end = end + 1500000 WHERE rowid = 1",
    )
    code, doc, err = _json(capsys, str(path))
    assert code == 0, err
    assert _latencies(doc) == [2.5, 1.0, 1.0]  # what the ranges say
    assert _busy(doc) == [(0.3, 2)] * 3
    crossing = [w for w in doc["warnings"] if "start before an earlier one" in w]
    assert crossing, doc["warnings"]
    assert "different threads" not in crossing[0], crossing[0]


# ---------------------------------------------------------------------------------------------- Kineto


@pytest.mark.parametrize("order", ["full first", "empty first"])
def test_kineto_two_trace_events_keys_are_not_read_silently(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], order: str
) -> None:
    full = json.dumps(small_trace_events())
    body = (
        f'"traceEvents": {full}, "traceEvents": []'
        if order == "full first"
        else (f'"traceEvents": [], "traceEvents": {full}')
    )
    path = tmp_path / "twice.synthetic.json"
    path.write_text("{" + body + "}")
    code, doc, err = _json(capsys, str(path))
    if code == 2:
        assert "traceEvents" in _one_line(err, path)
        return
    assert code == 0, err
    assert any("traceEvents" in w for w in doc["warnings"]), doc["warnings"]


def test_kineto_gzip_with_appended_bytes_says_what_follows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = json.dumps({"traceEvents": small_trace_events()}).encode()
    path = tmp_path / "appended.synthetic.json.gz"
    member = gzip.compress(raw, mtime=0)
    path.write_bytes(member + b"garbage\n")
    code, _, err = _json(capsys, str(path))
    assert code == 2
    line = _one_line(err, path)
    assert "ended before the end-of-stream marker" not in line
    assert f"from byte {len(member)}" in line


def test_kineto_kernel_292_years_after_its_launch_is_not_a_latency(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = small_trace_events()
    next(e for e in events if e["cat"] == "kernel")["ts"] = 9.2e15
    path = _kineto(tmp_path / "far.synthetic.json", events)
    code, doc, err = _json(capsys, str(path))
    if code == 2:
        _one_line(err, path)
        return
    assert code == 0, err
    assert max(_latencies(doc)) == 0.9
    assert doc["warnings"]


def test_one_far_kernel_does_not_empty_every_split_idle_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = small_trace_events()
    next(e for e in events if e["cat"] == "kernel")["ts"] = 9.2e15
    path = _kineto(tmp_path / "far.synthetic.json", events)
    code, doc, err = _json(capsys, str(path), "--split-idle", "0.05")
    if code == 2:
        _one_line(err, path)
        return
    assert code == 0, err
    assert _busy(doc) == [(0.01, 1)] * 11


def test_kineto_text_variants_read_as_the_plain_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A UTF-8 BOM, ts and dur as strings (also '1.000010e+06'), a name that is not UTF-8, a key given twice
    in one event (the last wins, as in every JSON reader), the text split over two gzip members: all read as
    the plain trace (4 x 0.9 ms, 3 kernels of 10 µs)."""
    events = small_trace_events()
    plain = json.dumps({"traceEvents": events})
    variants: dict[str, bytes] = {
        "bom.synthetic.json": b"\xef\xbb\xbf" + plain.encode(),
        "strings.synthetic.json": json.dumps(
            {"traceEvents": [dict(e, ts=str(e["ts"]), dur=str(e["dur"])) for e in events]}
        ).encode(),
        "exponent.synthetic.json": json.dumps(
            {"traceEvents": [dict(e, ts=f"{e['ts']:.6e}") for e in events]}
        ).encode(),
        "latin1.synthetic.json": plain.encode().replace(b'"kernel_0"', b'"kern\xe9l_0"', 1),
        "key-twice.synthetic.json": plain.replace(
            '"cat": "kernel"', '"dur": 500, "cat": "kernel"', 1
        ).encode(),
        "members.synthetic.json.gz": gzip.compress(plain.encode()[:100], mtime=0)
        + gzip.compress(plain.encode()[100:], mtime=0),
    }
    for name, data in variants.items():
        path = tmp_path / name
        path.write_bytes(data)
        code, doc, err = _json(capsys, str(path))
        assert code == 0, (name, err)
        assert _latencies(doc) == [0.9] * 4, name
        assert _busy(doc) == [(0.03, 3)] * 4, name
        assert doc["warnings"] == [], (name, doc["warnings"])


# ------------------------------------------------------------------------------------------------- ncu

NCU_HEAD = ['"ID","Process ID","Kernel Name","gpu__time_duration.sum"', '"","","","usecond"']


def _ncu(path: Path, values: list[str]) -> Path:
    rows = [f'"{i}","7","k{i}","{v}"' for i, v in enumerate(values)]
    path.write_text("\n".join([*NCU_HEAD, *rows]) + "\n")
    return path


@pytest.mark.parametrize("value", ["1 000", "1\u00a0000", "1'000", "n/a"])
def test_ncu_unreadable_durations_are_not_called_a_missing_metric(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    path = _ncu(tmp_path / "unreadable.synthetic.ncu.csv", [value] * 5)
    code, _, err = _json(capsys, str(path))
    assert code == 2
    line = _one_line(err, path)
    assert "collect it too" not in line and "without it" not in line
    assert repr(value) in line or value in line


def test_ncu_a_units_row_inside_the_table_is_not_skipped_in_silence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "units-inside.synthetic.ncu.csv"
    rows = [f'"{i}","7","k{i}","{10 * (i + 1)}"' for i in range(5)]
    path.write_text("\n".join([*NCU_HEAD, rows[0], '"","","","msecond"', *rows[1:]]) + "\n")
    code, doc, err = _json(capsys, str(path))
    if code == 2:
        assert "msecond" in _one_line(err, path)
        return
    assert code == 0, err
    assert any("msecond" in w for w in doc["warnings"]), doc["warnings"]


def test_random_bytes_named_ncu_rep_are_not_called_an_empty_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("ncu_report")
    import random

    path = tmp_path / "random.synthetic.ncu-rep"
    path.write_bytes(bytes(random.Random(17).randrange(256) for _ in range(5000)).replace(b"NVR", b"nvr"))
    code, _, err = _json(capsys, str(path))
    assert code == 2
    line = _one_line(err, path)
    assert "holds no profiled kernels" not in line, line


def test_ncu_a_decimal_comma_anywhere_refuses_every_comma(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'10,500' alone reads as ten thousand five hundred (ncu writes thousands separators), but beside '20,5'
    (a decimal comma: the file was written in such a locale) it may be 10.5: the whole column is refused."""
    path = _ncu(tmp_path / "mixed.synthetic.ncu.csv", ["10,500", "20,5", "30,250"])
    code, _, err = _json(capsys, str(path))
    assert code == 2
    assert "a decimal comma?" in _one_line(err, path)


@pytest.mark.parametrize("kind", ["kineto", "nsys"])
def test_table_ncu_given_a_timeline_says_it_is_no_ncu_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """Was: joined as T's Nsight Compute report, exit 0, and called one in a warning; fixed by e867c4a (a strict
    xfail until then)."""
    trace = _nsys(tmp_path / "t.synthetic.sqlite")
    other = (
        _kineto(tmp_path / "k.synthetic.json") if kind == "kineto" else _nsys(tmp_path / "n.synthetic.sqlite")
    )
    code, _, err = _run(capsys, "table", str(trace), "--ncu", str(other), "-q", "--format", "csv")
    assert "the Nsight Compute report holds no" not in err, err
    if code == 2:
        assert "Nsight Compute" in _one_line(err, other)
    else:
        assert any(str(other) in line and "not an Nsight Compute" in line for line in err.splitlines()), err


# ----------------------------------------------------------------------------------------------- cache


def _wal_pair(tmp_path: Path, names: list[str]) -> list[Path]:
    """Byte-identical copies of an nsys export in WAL mode whose ``-wal`` log holds an uncheckpointed delete of
    iteration 0's first kernel (its copies: the file and its log, under each of ``names``)."""
    import shutil

    source = _nsys(tmp_path / "wal-source.synthetic.sqlite")
    con = sqlite3.connect(source)
    try:
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA wal_autocheckpoint=0")
        con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid = 1")
        con.commit()
        out = []
        for name in names:
            shutil.copy(source, tmp_path / name)
            shutil.copy(f"{source}-wal", tmp_path / f"{name}-wal")
            out.append(tmp_path / name)
    finally:
        con.close()
    return out


def test_the_cache_does_not_name_another_file_s_write_ahead_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = _wal_pair(tmp_path, ["a.synthetic.sqlite", "b.synthetic.sqlite"])
    cache = str(tmp_path / "cache")
    code, doc, err = _json(capsys, str(first), "--cache", cache)
    assert code == 0, err
    assert _busy(doc) == [(0.1, 1), (0.3, 2), (0.3, 2)]  # the log's delete applied
    code, plain, err = _json(capsys, str(second))
    assert code == 0, err
    assert any("b.synthetic.sqlite-wal" in w for w in plain["warnings"])
    code, cached, err = _json(capsys, str(second), "--cache", cache)
    assert code == 0, err
    assert cached["warnings"] == plain["warnings"]
    assert "a.synthetic.sqlite-wal" not in err


@pytest.mark.parametrize("damage", ["meta.json a folder", "ops.parquet a folder", "hashes.json cut"])
def test_a_cache_whose_files_became_folders_or_were_cut_answers_as_without_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    """An entry's meta.json or ops.parquet replaced by an (empty) folder, or hashes.json cut to 7 bytes: the next
    run answers as a run without the cache (the entry read again and stored anew), with no word of it."""
    import shutil

    path = _kineto(tmp_path / "t.synthetic.json")
    cache = tmp_path / "cache"
    code, plain, err = _run(capsys, "analyze", str(path), "--format", "csv", "-q")
    assert code == 0, err
    assert _run(capsys, "analyze", str(path), "--cache", str(cache), "-q")[0] == 0
    (entry,) = [p for p in cache.iterdir() if p.is_dir()]
    if damage == "hashes.json cut":
        memo = cache / "hashes.json"
        memo.write_bytes(memo.read_bytes()[:7])
    else:
        target = entry / damage.split()[0]
        target.unlink() if target.is_file() else shutil.rmtree(target)
        target.mkdir()
    code, out, err = _run(capsys, "analyze", str(path), "--cache", str(cache), "--format", "csv", "-q")
    assert (code, out, err) == (0, plain, "")
    assert [p.name for p in cache.iterdir() if p.is_dir()] == [entry.name]
    assert (entry / "meta.json").is_file() and (entry / "ops.parquet").is_file()


def test_writers_sharing_one_cache_at_once_store_one_whole_entry_each(tmp_path: Path) -> None:
    """Four readers at once (threads, released together by a barrier: the cache's races are on the file
    system, as between processes) on an empty cache, two per file: each gets the frames a read without the
    cache gives, and the cache holds one entry per file and no writer's temporary folder."""
    import threading

    from tracekit.fleet.cache import cached_read
    from tracekit.readers import read_trace

    files = [_nsys(tmp_path / "n.synthetic.sqlite"), _kineto(tmp_path / "k.synthetic.json")]
    cache = tmp_path / "cache"
    barrier = threading.Barrier(4)
    got: dict[int, Any] = {}
    errors: list[BaseException] = []

    def reader(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            got[i] = cached_read(files[i % 2], cache)
        except BaseException as exc:  # noqa: BLE001  (shown by the assertion below)
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    for i, trace in sorted(got.items()):
        plain = read_trace(files[i % 2], sidecar={})
        assert trace.ops.equals(plain.ops), i
        assert trace.ranges.equals(plain.ranges), i
        assert trace.meta["warnings"] == plain.meta["warnings"], i
    names = sorted(p.name for p in cache.iterdir())
    assert len([n for n in names if not n.startswith(".") and n != "hashes.json"]) == 2, names
    assert not [n for n in names if n.startswith(".")], names


def test_outputs_over_an_input_are_refused_for_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``-o``/``--gaps``/``--timeline`` naming the input (also as ./NAME) for analyze, compare and table: one
    line each, exit 2, the input's bytes unchanged; report's ``-o`` naming a trace file: one line."""
    import os

    kin = _kineto(tmp_path / "t.synthetic.json")
    nsys = _nsys(tmp_path / "n.synthetic.sqlite")
    before = (kin.read_bytes(), nsys.read_bytes())
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        for args in (
            ["analyze", "t.synthetic.json", "-o", "t.synthetic.json"],
            ["analyze", "t.synthetic.json", "-o", "./t.synthetic.json", "--format", "json"],
            ["analyze", "t.synthetic.json", "--gaps", "t.synthetic.json"],
            ["analyze", "t.synthetic.json", "--timeline", "t.synthetic.json"],
            ["compare", "t.synthetic.json", "n.synthetic.sqlite", "-o", "n.synthetic.sqlite"],
            ["table", "t.synthetic.json", "-o", "t.synthetic.json"],
        ):
            code, _, err = _run(capsys, *args, "-q")
            assert code == 2, args
            assert "refusing to write over an input file" in _one_line(err, args[-1].removeprefix("./")), args
        code, _, err = _run(
            capsys, "report", "n.synthetic.sqlite", "-o", "n.synthetic.sqlite", "-q", "--no-figures"
        )
        assert code == 2
        assert "-o takes a folder" in _one_line(err, "n.synthetic.sqlite")
    finally:
        os.chdir(cwd)
    assert (kin.read_bytes(), nsys.read_bytes()) == before


# -------------------------------------------------------------------------------------------- simulate


@pytest.mark.parametrize("setting", ["gpu_ns_per_token=nan", "gpu_ns_per_token=inf", "kernel_floor_ns=1e30"])
def test_simulate_refuses_parameters_that_are_not_finite_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str
) -> None:
    out = tmp_path / "sim"
    code, _, err = _run(
        capsys, "simulate", "--runtime", "pytorch", "--iters", "3", "--set", setting, "-o", str(out)
    )
    assert code == 2, err
    line = err.strip()
    assert len(line.splitlines()) == 1 and line.startswith("tracekit: "), err
    assert setting.split("=")[0] in line
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("value", ["nan", "inf", "1e30"])
def test_simulate_metrics_interval_that_is_no_number_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    out = tmp_path / "sim"
    code, _, err = _run(
        capsys,
        "simulate",
        "--runtime",
        "pytorch",
        "--iters",
        "3",
        "--metrics-interval-us",
        value,
        "-o",
        str(out),
    )
    assert code == 2, err
    assert "internal error" not in err
    assert "--metrics-interval-us" in err.strip() and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("setting", ["graph=maybe", "runtime=onnx"])
def test_simulate_set_refuses_what_it_cannot_read_in_words_that_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str
) -> None:
    out = tmp_path / "sim"
    code, _, err = _run(
        capsys, "simulate", "--runtime", "pytorch", "--iters", "3", "--set", setting, "-o", str(out)
    )
    assert code == 2, err
    line = err.strip()
    assert len(line.splitlines()) == 1, err
    key = setting.split("=")[0]
    assert key in line
    if "known:" in line:
        assert key not in line.split("known:")[1].replace(",", " ").split()


def test_simulate_refuses_bad_sizes_and_negative_parameters_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "sim")
    for args, message in (
        (["--batch-sizes", "1,,2"], "expected comma-separated integers, got '1,,2' (an empty item)"),
        (["--batch-sizes", "0"], "batch sizes must be integers >= 1"),
        (["--iters", "0"], "argument --iters: must be >= 1"),
        (["--set", "launch_call_ns=-5"], "simulation parameter launch_call_ns must be >= 0 (got -5)"),
        (["--set", "launch_call_ns=nan"], "simulation parameter launch_call_ns: 'nan' is not a number"),
        (["--noise", "nan"], "--noise (the host-cost standard deviation) must be in [0, 1)"),
        (["--metrics-interval-us", "-1"], "--metrics-interval-us must be >= 0"),
    ):
        try:  # argparse's own errors end in SystemExit(2)
            code, _, err = _run(capsys, "simulate", "--runtime", "pytorch", *args, "-o", out)
        except SystemExit as exc:
            code, err = exc.code, capsys.readouterr().err
        assert code == 2, (args, err)
        assert message in err and len(err.strip().splitlines()) == 1, (args, err)
    assert not Path(out).exists()


def test_nsys_kernel_at_minus_2_63_is_not_said_to_start_after_its_launch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _sql(
        _nsys(tmp_path / "minus.synthetic.sqlite"),
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = -9223372036854775808, end = -9223372036854775000 "
        "WHERE rowid = 1",
    )
    code, doc, err = _json(capsys, str(path))
    if code == 2:
        _one_line(err, path)
        return
    assert code == 0, err
    assert not any("after their launch call returned" in w for w in doc["warnings"]), doc["warnings"]
    assert not any("9223372036844" in w for w in doc["warnings"]), doc["warnings"]


def test_nsys_kernel_before_its_launch_makes_the_verdict_uncertain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Iteration 0's first kernel 5 ms before the capture's 0 (15.05 ms before its launch call): the clocks
    disagree; said, with the verdict in doubt, and the kernel in no iteration's busy time."""
    path = _sql(
        _nsys(tmp_path / "early.synthetic.sqlite"),
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = -5000000, end = -4800000 WHERE rowid = 1",
    )
    code, doc, err = _json(capsys, str(path))
    assert code == 0, err
    assert _busy(doc) == [(0.1, 2), (0.3, 2), (0.3, 2)]
    assert doc["summary"]["verdict_uncertain"].startswith(
        "verdict uncertain: in 1 of 6 launches the first op started before its launch call began, by up to "
        "15.050 ms"
    )


# ------------------------------------------------------------------------------------ sidecars, run.json

SIDECAR = {"warmup_iterations": 2, "warmup_in_trace": True, "iterations": 2, "batch_size": 4}


def test_a_sidecar_s_warm_up_is_dropped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The base of the next test: the sidecar says the first 2 of the 4 iterations are warm-up: 2 left."""
    path = _kineto(tmp_path / "t.synthetic.json")
    (tmp_path / "t.synthetic.meta.json").write_text(json.dumps(SIDECAR))
    code, doc, err = _json(capsys, str(path))
    assert code == 0, err
    assert doc["skipped"] == 2
    assert _latencies(doc) == [0.9, 0.9]


@pytest.mark.parametrize("damage", ["BOM", "trailing comma", "an array"])
def test_a_sidecar_that_does_not_parse_is_not_ignored_in_silence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    path = _kineto(tmp_path / "t.synthetic.json")
    text = json.dumps(SIDECAR)
    sidecar = tmp_path / "t.synthetic.meta.json"
    if damage == "BOM":
        sidecar.write_bytes(b"\xef\xbb\xbf" + text.encode())
    elif damage == "an array":  # JSON, but not an object: no field can be read from it
        sidecar.write_text("[1, 2]")
    else:
        sidecar.write_text(text[:-1] + ",}")
    code, doc, err = _json(capsys, str(path))
    if damage == "BOM":  # read as it is meant, as a trace with a BOM is
        assert code == 0, err
        assert doc["skipped"] == 2
        assert _latencies(doc) == [0.9, 0.9]
    elif code == 2:
        assert "meta.json" in _one_line(err, sidecar.name)
    else:
        assert code == 0, err
        assert any("meta.json" in w for w in doc["warnings"]), doc["warnings"]


# ---------------------------------------------------------------------------------------------- outputs


@pytest.mark.parametrize(
    "command",
    [
        ["analyze", "t.synthetic.json", "-o"],
        ["analyze", "t.synthetic.json", "--gaps"],
        ["analyze", "t.synthetic.json", "--timeline"],
        ["compare", "t.synthetic.json", "n.synthetic.sqlite", "-o"],
        ["table", "t.synthetic.json", "-o"],
    ],
    ids=["analyze -o", "analyze --gaps", "analyze --timeline", "compare -o", "table -o"],
)
def test_an_output_that_is_a_symlink_loop_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    _kineto(tmp_path / "t.synthetic.json")
    _nsys(tmp_path / "n.synthetic.sqlite")
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(capsys, *command, "loop1", "-q")
    assert code == 2, err
    assert "loop" in _one_line(err, "loop1").split("loop1", 1)[1]


@pytest.mark.parametrize(
    "command",
    [
        "simulate",
        "report",
        "cache",
    ],
)
def test_an_output_folder_that_is_a_symlink_loop_is_named_a_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """simulate -o and report -o said 'cannot create the output folder: File exists' (a strict xfail until
    firsthour17's 433cfd4 named the loop); --cache still does."""
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    trace = _kineto(tmp_path / "t.synthetic.json")
    monkeypatch.chdir(tmp_path)
    args = {
        "simulate": ["simulate", "--runtime", "pytorch", "--iters", "3", "-o", "loop1"],
        "report": ["report", str(trace), "-o", "loop1", "--no-figures"],
        "cache": ["analyze", str(trace), "--cache", "loop1"],
    }[command]
    code, _, err = _run(capsys, *args, "-q")
    assert code == 2, err
    line = _one_line(err, "loop1")
    assert "loop" in line.split("loop1", 1)[1] and "File exists" not in line, line


@pytest.mark.parametrize("where", ["trace", "-o", "--gaps", "--cache", "simulate -o", "compare", "table"])
def test_a_name_too_long_for_the_file_system_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Was 'internal error (on T): OSError: [Errno 36] File name too long' (exit 1) everywhere; fixed by
    firsthour17's ab1c50c (a strict xfail until then)."""
    long = "a" * 300 + ".json"
    _kineto(tmp_path / "t.synthetic.json")
    monkeypatch.chdir(tmp_path)
    args = {
        "trace": ["analyze", long],
        "-o": ["analyze", "t.synthetic.json", "-o", long],
        "--cache": ["analyze", "t.synthetic.json", "--cache", long],
        "simulate -o": ["simulate", "--runtime", "pytorch", "--iters", "3", "-o", long],
        "--gaps": ["analyze", "t.synthetic.json", "--gaps", long],
        "compare": ["compare", "t.synthetic.json", long],
        "table": ["table", long],
    }[where]
    code, _, err = _run(capsys, *args, "-q")
    assert code == 2, err
    assert "too long" in _one_line(err, long)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.synthetic.json"]


def test_outputs_in_a_file_or_onto_a_folder_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _kineto(tmp_path / "t.synthetic.json")
    (tmp_path / "folder").mkdir()
    (tmp_path / "dangling.json").symlink_to("nowhere/x.json")
    monkeypatch.chdir(tmp_path)
    for option, target, message in (
        ("-o", "t.synthetic.json/out.json", "cannot write: t.synthetic.json is a file, not a folder"),
        ("--gaps", "folder", "is a folder; --gaps takes a file name"),
        ("-o", "dangling.json", "does not exist"),
    ):
        code, _, err = _run(capsys, "analyze", "t.synthetic.json", option, target, "-q")
        assert code == 2, err
        assert message in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.json", "folder", "t.synthetic.json"]


def test_a_folder_of_report_outputs_is_not_said_to_hold_a_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / "report.csv").write_text(
        "runtime,device,seq_len,batch_size,latency_ms\npytorch,gpu,128,1,0.706\n"
    )
    (folder / "report.md").write_text("# report\n")
    trace = _kineto(tmp_path / "t.synthetic.json")
    code, _, err = _run(capsys, "compare", str(trace), str(folder), "-q")
    assert code == 2
    line = _one_line(err, folder)
    assert "trace file" not in line or "no trace file" in line, line


# ------------------------------------------------------------------------------------------- properties

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

#: per iteration, 1 to 4 kernels (start µs into the 1 ms range, from 60 so that the launch 50 µs before it is
#: inside the range; duration µs), overlapping or not, all on one stream
_KERNELS = st.lists(
    st.lists(st.tuples(st.integers(60, 899), st.integers(1, 100)), min_size=1, max_size=4),
    min_size=2,
    max_size=3,
)


def _union_us(spans: list[tuple[int, int]]) -> int:
    total, end = 0, -1
    for start, stop in sorted(spans):
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(iterations=_KERNELS)
def test_gpu_busy_is_the_union_of_overlapping_kernels_on_one_stream(
    tmp_path_factory: pytest.TempPathFactory, iterations: list[list[tuple[int, int]]]
) -> None:
    """Kernels of one stream that overlap or repeat one another's times (each with its own launch and
    correlation id: not an exact duplicate), all inside their 1 ms NVTX range: each iteration's latency is the
    range's 1.000 ms, its kernels are all counted, and its GPU busy time is the union of their intervals."""
    from tracekit.cli import main

    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    corr = 1
    for i, kernels in enumerate(iterations):
        t0 = 10_000_000 + i * 2_000_000
        b.nvtx_range(t0, t0 + 1_000_000, "iteration")
        for start, dur in kernels:
            s = t0 + start * 1000
            b.runtime(s - 50_000, s - 40_000, "cudaLaunchKernel_v7000", correlation=corr)
            b.kernel(s, min(s + dur * 1000, t0 + 990_000), f"k{corr}", correlation=corr)
            corr += 1
    path = b.write(tmp_path_factory.mktemp("prop") / "overlap.synthetic.sqlite")
    out = path.with_name("out.json")
    assert main(["analyze", str(path), "--format", "json", "-o", str(out), "-q", "--no-progress"]) == 0
    doc = json.loads(out.read_text())
    assert _latencies(doc) == [1.0] * len(iterations)
    expected = []
    for kernels in iterations:
        spans = [(s, min(s + d, 990)) for s, d in kernels]
        expected.append((round(_union_us(spans) / 1000, 9), len(kernels)))
    assert [(round(b_, 9), k) for b_, k in _busy(doc)] == expected


def test_report_timeline_config_with_a_part_too_many_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was: 'no such configuration pytorch:1:128 (have pytorch:1:128)'; fixed by ccac58a (a strict xfail until then)."""
    run = tmp_path / "sim"
    code, _, err = _run(capsys, "simulate", "--runtime", "pytorch", "--iters", "3", "-o", str(run), "-q")
    assert code == 0, err
    code, _, err = _run(
        capsys, "report", str(run), "-o", str(tmp_path / "out"), "--no-figures", "-q",
        "--timeline-config", "pytorch:1:128:9",
    )  # fmt: skip
    assert code == 2
    line = err.strip()
    assert len(line.splitlines()) == 1, err
    assert "expected RUNTIME:BATCH or RUNTIME:BATCH:SEQ" in line, line


def test_report_of_one_trace_named_for_two_batch_sizes_is_not_a_plateau(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "sim"
    code, _, err = _run(
        capsys,
        "simulate",
        "--runtime",
        "pytorch",
        "--iters",
        "3",
        "--batch-sizes",
        "1,2",
        "-o",
        str(run),
        "-q",
    )
    assert code == 0, err
    doc = json.loads((run / "run.json").read_text())
    doc["configs"][1]["traces"] = dict(doc["configs"][0]["traces"])
    (run / "run.json").write_text(json.dumps(doc))
    code, out, err = _run(capsys, "report", str(run), "-o", str(tmp_path / "out"), "--no-figures", "-q",
                          "--format", "csv")  # fmt: skip
    if code == 2:
        assert "run.json" in _one_line(err, run)
        return
    assert code == 0, err
    assert "pytorch_b1_s128.synthetic" in err, err  # the trace given for two configurations is named


def test_report_says_when_run_json_and_the_sidecar_disagree_on_the_batch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "sim"
    code, _, err = _run(
        capsys,
        "simulate",
        "--runtime",
        "pytorch",
        "--iters",
        "3",
        "--batch-sizes",
        "1,2",
        "-o",
        str(run),
        "-q",
    )
    assert code == 0, err
    assert json.loads((run / "pytorch_b2_s128.synthetic.meta.json").read_text())["batch_size"] == 2
    doc = json.loads((run / "run.json").read_text())
    doc["configs"][1]["batch_size"] = 8
    (run / "run.json").write_text(json.dumps(doc))
    code, out, err = _run(capsys, "report", str(run), "-o", str(tmp_path / "out"), "--no-figures", "-q",
                          "--format", "csv")  # fmt: skip
    if code == 2:
        assert "batch" in _one_line(err, run)
        return
    assert code == 0, err
    assert any("pytorch_b2_s128" in line and "batch" in line for line in err.splitlines()), err


def _tied_kineto_events() -> list[dict[str, Any]]:
    """The small Kineto trace plus ties: per launch two CPU operators of exactly its ts and dur; per iteration a
    second 'iteration' annotation and a 'forward' one of exactly its ts and dur; per kernel a twin kernel of the
    same times (another name, a correlation id no launch has)."""
    events = small_trace_events(iterations=4, kernels=3)
    extra: list[dict[str, Any]] = []
    for e in events:
        if e["name"] == "cudaLaunchKernel":
            for name in ("aten::mm", "aten::linear"):
                extra.append(
                    {
                        "ph": "X",
                        "cat": "cpu_op",
                        "name": name,
                        "pid": 1,
                        "tid": 1,
                        "ts": e["ts"],
                        "dur": e["dur"],
                    }
                )
        elif e["name"] == "iteration":
            for name in ("iteration", "forward"):
                extra.append(dict(e, name=name))
        else:
            extra.append(
                dict(
                    e,
                    name=e["name"] + "_twin",
                    args=dict(e["args"], correlation=e["args"]["correlation"] + 1000),
                )
            )
    return events + extra


_TIED = _tied_kineto_events()


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(order=st.permutations(range(len(_TIED))))
def test_kineto_events_in_any_order_give_the_same_analysis(
    tmp_path_factory: pytest.TempPathFactory, order: list[int]
) -> None:
    """Kineto does not sort traceEvents (CPU and device events come in separate blocks); with exact ties of ts
    and dur (nested operators, annotations, twin kernels), any order of the events gives the same iterations,
    summary, warnings and longest gaps as the order written."""
    from tracekit.cli import main

    folder = tmp_path_factory.mktemp("order")
    docs = []
    for name, events in (("written", _TIED), ("shuffled", [_TIED[i] for i in order])):
        path = folder / f"{name}.synthetic.json"
        path.write_text(json.dumps({"traceEvents": events}))
        out = folder / f"{name}.out.json"
        assert main(["analyze", str(path), "--format", "json", "-o", str(out), "-q", "--no-progress"]) == 0
        doc = json.loads(out.read_text())
        docs.append([doc["iterations"], doc["summary"], doc["warnings"], doc["longest_gaps"], doc["range"]])
    assert docs[0] == docs[1]
    assert _busy({"iterations": docs[0][0]}) == [(0.03, 3)] * 4  # twins have no launch: in no iteration, said
