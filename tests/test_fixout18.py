"""fixout18 (round 18): tracekit/io.py, tracekit/commands/*, analyzers/report.py. Inputs are hand-built (SYNTHETIC)
in pytest's tmp folder: tests.hostile.small_trace_events (a Kineto trace of 4 iterations of 0.9 ms, 3 kernels of
10 µs each: busy 0.03 ms per iteration) unless a test says otherwise."""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import run_cli as _run
from tests.hostile import small_trace_events


def _kineto(path: Path, events: list[dict[str, Any]] | None = None) -> Path:
    events = small_trace_events() if events is None else events
    path.write_text(json.dumps({"traceEvents": events, "traceName": "synthetic"}))
    return path


# ------------------------------------------------------------------------ io.Recordings: gzip members


def test_a_copy_gzipped_in_several_members_is_the_same_recording(tmp_path: Path) -> None:
    """A gzip file may hold several members, read one after the other (``cat a.gz b.gz``, bgzip, an appending
    writer): its trailer gives the last member's inflated size only (here 11 bytes of a 54-byte text), which
    23fa0d9 took as the candidate key, so such a copy was never compared. It is the same recording; a
    two-member file of other text is not."""
    from tracekit.io import CONTENT_COPY, Recordings

    text = b'{"traceEvents": [], "otherData": {"synthetic": true}}\n'
    assert len(text) == 54
    plain = tmp_path / "t.synthetic.json"
    plain.write_bytes(text)
    members = tmp_path / "t2.synthetic.json.gz"
    members.write_bytes(gzip.compress(text[:43], mtime=0) + gzip.compress(text[43:], mtime=0))
    assert int.from_bytes(members.read_bytes()[-4:], "little") == 11  # the last member's size only
    three = tmp_path / "t3.synthetic.json.gz"
    three.write_bytes(b"".join(gzip.compress(text[i : i + 20], mtime=0) for i in range(0, 54, 20)))
    other = tmp_path / "v.synthetic.json.gz"
    other.write_bytes(gzip.compress(text[:43], mtime=0) + gzip.compress(text[43:].replace(b"true", b"tru3")))
    seen = Recordings()
    seen.add(plain, "first")
    assert seen.find(members) == ("first", CONTENT_COPY)
    assert seen.find(three) == ("first", CONTENT_COPY)
    assert seen.find(other) == (None, "")
    # the other way round: the multi-member file seen first
    seen = Recordings()
    seen.add(members, "members")
    assert seen.find(plain) == ("members", CONTENT_COPY)
    assert seen.find(three) == ("members", CONTENT_COPY)


def test_table_lists_a_trace_and_its_two_member_gzipped_copy_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI side: ``table t.json t2.json.gz`` (t2 two gzip members of t's text) is one row (4 iterations of
    0.9 ms), and says the second is the same recording."""
    t = _kineto(tmp_path / "t.synthetic.json")
    data = t.read_bytes()
    gz = tmp_path / "t2.synthetic.json.gz"
    gz.write_bytes(gzip.compress(data[:1000], mtime=0) + gzip.compress(data[1000:], mtime=0))
    code, out, err = _run(capsys, "table", str(t), str(gz), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0, err
    assert [(r["trace"], r["iterations"], r["latency_ms"]) for r in rows] == [(str(t), "4", "0.9")]
    assert f"{gz} is the same recording as {t}" in err


# ------------------------------------------------------------------------ outputs named for a compression

COMPRESSED = [
    "out.json.xz",
    "out.json.bz2",
    "out.json.zst",
    "out.csv.zip",
    "out.JSON.XZ",
    "out.tgz",
    "out.json.lz4",
]


@pytest.mark.parametrize("command", ["analyze", "table", "compare"])
@pytest.mark.parametrize("name", COMPRESSED)
def test_an_output_named_for_a_compression_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, name: str
) -> None:
    """686f369 refused ``-o out.json.gz`` only: an -o named .xz, .bz2, .zst, .zip (any case) received the
    terminal table, uncompressed, exit 0, without a word. One line, exit 2, naming the file and the name to give;
    nothing written (refused before the trace is read: a trace that does not exist is not reached)."""
    trace = _kineto(tmp_path / "t.synthetic.json")
    missing = str(tmp_path / "nothing.synthetic.json")  # read after -o is checked: never reached
    args = [str(trace), missing] if command == "compare" else [missing]
    out = tmp_path / name
    code, stdout, err = _run(capsys, command, *args, "-o", str(out), "-q")
    suffix = Path(name).suffix.lower()
    stem = name[: -len(suffix)]
    assert (code, stdout, err) == (
        2,
        "",
        f"tracekit: {out}: -o writes uncompressed text, not a {suffix} file: name it {stem} (and compress that "
        "file yourself)\n",
    )
    assert not out.exists()


@pytest.mark.parametrize("name", ["gaps.csv.xz", "gaps.json.bz2", "gaps.csv.zst", "gaps.zip", "gaps.csv.tgz"])
def test_gaps_named_for_a_compression_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """--gaps gaps.csv.xz had written the CSV, uncompressed, under that name (only .gz was refused)."""
    trace = _kineto(tmp_path / "t.synthetic.json")
    gaps = tmp_path / name
    code, stdout, err = _run(capsys, "analyze", str(trace), "--gaps", str(gaps), "-q")
    suffix = Path(name).suffix
    assert (code, stdout, err) == (
        2,
        "",
        f"tracekit: {gaps}: --gaps writes CSV (JSON when the name ends in .json), not a {suffix} file: name it "
        ".csv or .json\n",
    )
    assert not gaps.exists()


@pytest.mark.parametrize("name", ["t.json.xz", "t.json.bz2", "t.json.zst", "t.json.zip", "t.zip"])
def test_a_timeline_named_for_a_compression_other_than_gzip_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """--timeline t.json.xz had written the JSON, uncompressed, under that name (.gz is gzipped: pinned in
    test_hostile18)."""
    trace = _kineto(tmp_path / "t.synthetic.json")
    timeline = tmp_path / name
    code, stdout, err = _run(capsys, "analyze", str(trace), "--timeline", str(timeline), "-q")
    suffix = Path(name).suffix
    assert (code, stdout, err) == (
        2,
        "",
        f"tracekit: {timeline}: --timeline writes Chrome trace-event JSON (for ui.perfetto.dev), not a {suffix} "
        "file: name it .json (or .json.gz)\n",
    )
    assert not timeline.exists()


@pytest.mark.parametrize("name", ["rep.xz", "rep.tar.bz2", "rep.zst", "rep.tgz"])
def test_a_report_folder_named_like_an_archive_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """report -o rep.zip and rep.gz were refused as file names; rep.xz, rep.tar.bz2, rep.zst, rep.tgz were
    created as folders (a folder named as an archive)."""
    trace = _kineto(tmp_path / "t.synthetic.json")
    out = tmp_path / name
    code, stdout, err = _run(capsys, "report", str(trace), "-o", str(out), "--no-figures", "-q")
    assert code == 2 and stdout == "" and err.count("\n") == 1, err
    assert err.startswith(f"tracekit: {out}: -o takes a folder"), err
    assert not out.exists()


# ------------------------------------------------------------------------ report's profiler ratio, as analyze's


def _ort_run(tmp_path: Path, sidecar_range: str) -> Path:
    """An ORT CPU profile (tests.hostile.ort_cpu_events: 8 model_run of 1.000 ms, operators 0.4 ms busy) with a
    sidecar naming ``sidecar_range`` as the timed ranges, timed untraced at a median of 0.5 ms (8 of 8 kept, an
    interval [0.49, 0.51]): the profiler ratio is 1.0 / 0.5 = 2.0."""
    from tests.hostile import ort_cpu_events

    path = tmp_path / "onnx_b1_s128.synthetic.ort.json"
    path.write_text(json.dumps(ort_cpu_events(runs=8)))
    meta = {
        "synthetic": True,
        "profiler": "ort",
        "runtime": "onnx",
        "batch_size": 1,
        "seq_len": 128,
        "device": "cpu",
        "range": sidecar_range,
        "untraced_latency_ms": {"median": 0.5, "kept": 8, "count": 8, "ci_low": 0.49, "ci_high": 0.51},
    }
    (tmp_path / "onnx_b1_s128.synthetic.ort.meta.json").write_text(json.dumps(meta))
    return path


def _ratio_and_refusals(path: Path, range_name: str | None = None) -> tuple[float | None, list[str]]:
    import warnings

    import tracekit

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        built = tracekit.report([str(path)], range=range_name)
    row = built.configs.row(0, named=True)
    assert row["traced_median_ms"] == 1.0 and row["untraced_latency_ms"] == 0.5
    prefix = f"{path}: no profiler ratio"
    return row["profiler_ratio"], [w[len(f"{path}: ") :] for w in built.warnings if w.startswith(prefix)]


def _analyze_says_slowed(path: Path, range_name: str | None = None) -> bool:
    import tracekit

    return any("slowed this run 2.00x" in w for w in tracekit.analyze(str(path), range=range_name).warnings)


@pytest.mark.parametrize("sidecar_range", ["iteration", "model_run"])
def test_report_gives_the_profiler_ratio_of_the_default_ranges_as_analyze_does(
    tmp_path: Path, sidecar_range: str
) -> None:
    """The sidecar of every ORT run collected before 2034a90 says range 'iteration' (the collector's NVTX name),
    while ORT's profile holds one 'model_run' per InferenceSession.run, the call the untraced loop timed, and
    the default rules choose them. analyze (session.analyze_trace: no --range is the run's own iterations) said
    "slowed this run 2.00x"; report (the chosen name against the sidecar's) said "no profiler ratio ... not the
    same quantity" and gave None. Both give 2.0 now, whatever the sidecar names."""
    path = _ort_run(tmp_path, sidecar_range)
    assert _ratio_and_refusals(path) == (2.0, [])
    assert _analyze_says_slowed(path)


def test_a_range_other_than_the_sidecars_gives_no_profiler_ratio_in_report_or_analyze(tmp_path: Path) -> None:
    """analyze's rule the other way: a --range other than the one the sidecar names is not what was timed (even
    where it selects the default's ranges): no ratio, and report says why; the sidecar's own name gives it."""
    path = _ort_run(tmp_path, "iteration")
    assert _ratio_and_refusals(path, "model_run") == (
        None,
        [
            "no profiler ratio: the untraced latency is of the run's 'iteration' iterations, and the traced "
            "latency here is of 'model_run' ranges, not the same quantity"
        ],
    )
    assert not _analyze_says_slowed(path, "model_run")
    path = _ort_run(tmp_path, "model_run")
    assert _ratio_and_refusals(path, "model_run") == (2.0, [])
    assert _analyze_says_slowed(path, "model_run")


# ------------------------------------------------------------------------ special outputs: a named pipe


def test_an_output_to_a_named_pipe_without_a_reader_is_one_line_not_a_hang(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """-o FIFO with no reader had blocked forever in open() (hostile18: 20 s and on). The pipe is opened without
    blocking; no reader within io.STREAM_WAIT_S (the input side's wait; 0.3 s here): one line, exit 2."""
    import os
    import time

    from tracekit import io as tio

    monkeypatch.setattr(tio, "STREAM_WAIT_S", 0.3)
    trace = _kineto(tmp_path / "t.synthetic.json")
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    begun = time.monotonic()
    code, stdout, err = _run(capsys, "analyze", str(trace), "-o", str(fifo), "-q")
    assert time.monotonic() - begun < 5
    assert (code, stdout, err) == (
        2,
        "",
        f"tracekit: {fifo}: cannot write: no reader opened this named pipe in 0.3 s (start its reader first)\n",
    )


def test_an_output_to_a_named_pipe_with_a_reader_is_written_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pin: a reader on the pipe gets the whole output (the JSON document: 4 iterations), the pipe stays a
    pipe."""
    import os
    import stat
    import threading

    trace = _kineto(tmp_path / "t.synthetic.json")
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    code, _, err = _run(capsys, "analyze", str(trace), "-o", str(fifo), "--format", "json", "-q")
    reader.join(10)
    assert code == 0, err
    assert len(json.loads(got[0])["iterations"]) == 4
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


# ------------------------------------------------------------------------ report's files: inputs, all or none


def test_report_into_a_folder_whose_report_csv_is_its_input_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """report x/report.csv -o x (a trace named report.csv, given as the input): report.json and the timeline
    figures were written, then the refusal came on report.csv. One line, before any work, nothing written."""
    folder = tmp_path / "x"
    folder.mkdir()
    trace = _kineto(folder / "report.csv")
    before = trace.read_bytes()
    code, stdout, err = _run(capsys, "report", str(trace), "-o", str(folder), "-q")
    assert (code, stdout) == (2, "")
    assert err == f"tracekit: {trace}: refusing to write over an input file (choose another -o)\n"
    assert sorted(p.name for p in folder.iterdir()) == ["report.csv"]
    assert trace.read_bytes() == before


def test_report_into_a_run_folder_holding_a_trace_named_like_its_file_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """report RUN -o RUN, the run folder's run.json naming a trace report.md (found by reading the folder): the
    refusal came on report.md after report.json, report.csv and 6 figure files were written beside it. One
    line, before the first file is written (after the analysis, which finds the input), nothing written."""
    folder = tmp_path / "run"
    folder.mkdir()
    trace = _kineto(folder / "report.md")
    run = {"kind": "simulate", "synthetic": True, "runtime": "pytorch", "device": "gpu"}
    run["configs"] = [{"batch_size": 1, "seq_len": 128, "status": "ok", "traces": {"kineto": "report.md"}}]
    (folder / "run.json").write_text(json.dumps(run))
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    code, stdout, err = _run(capsys, "report", str(folder), "-o", str(folder), "-q")
    assert (code, stdout) == (2, ""), err
    assert err.endswith(f"tracekit: {trace}: refusing to write over an input file (choose another -o)\n"), err
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_a_failed_report_file_leaves_the_earlier_report_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """report.json, report.csv and report.md were renamed into place one by one (and an earlier report's
    figures removed first): a failure on report.md left a new report.json beside the old report.md. Now all are
    put in place together, and the stale figures removed only then."""
    from tracekit.renderers import report_markdown

    trace = _kineto(tmp_path / "t.synthetic.json")
    out = tmp_path / "rep"
    out.mkdir()
    old = {name: f"old {name}\n" for name in ("report.json", "report.csv", "report.md", "fig_latency.png")}
    for name, text in old.items():
        (out / name).write_text(text)

    def fails(*args: Any, **kwargs: Any) -> str:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(report_markdown, "render_report_markdown", fails)
    code, _, err = _run(capsys, "report", str(trace), "-o", str(out), "--no-figures", "-q")
    assert code == 1 and "internal error" in err and "No space left on device" in err, err
    assert {p.name: p.read_text() for p in out.iterdir()} == old


# ------------------------------------------------------------------------ analyze of a pattern that matches -o


def test_analyze_of_a_pattern_matching_its_own_output_file_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """analyze 'd/*.json' -o d/all.json, run twice: the second run's pattern matched the first run's all.json,
    which was tried as a trace (left out: "this looks like the output of tracekit analyze"), exit 1, and then
    replaced: an input changed. One line, exit 2, before any work, all.json as it was. (A folder, ``analyze d``,
    passes over the JSON files that hold no trace: all.json is no input there and is written, pinned.)"""
    folder = tmp_path / "d"
    folder.mkdir()
    _kineto(folder / "a.synthetic.json")
    _kineto(folder / "b.synthetic.json", small_trace_events(iterations=2))
    out = folder / "all.json"
    code, _, err = _run(capsys, "analyze", str(folder / "*.json"), "-o", str(out), "-q")
    assert code == 0, err
    first = out.read_bytes()
    assert [r["iterations"] for r in json.loads(first)["rows"]] == [4, 2]
    code, stdout, err = _run(capsys, "analyze", str(folder / "*.json"), "-o", str(out), "-q")
    assert (code, stdout, err) == (
        2,
        "",
        f"tracekit: {out}: refusing to write over an input file (choose another -o)\n",
    )
    assert out.read_bytes() == first
    from tracekit.io import forget_inputs

    forget_inputs()  # (a new process: this one registered all.json as an input above)
    code, _, err = _run(capsys, "analyze", str(folder), "-o", str(out), "-q")
    assert code == 0, err
    assert [r["iterations"] for r in json.loads(out.read_bytes())["rows"]] == [4, 2]


# ------------------------------------------------------------------------ simulate --ranks --overwrite


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ("straggler=9", "tracekit: simulate --ranks: straggler rank 9 is not one of the 2 ranks\n"),
        ("steps=x", "tracekit: --set steps=x: expected int (invalid literal for int() with base 10: 'x')\n"),
    ],
)
def test_simulate_ranks_overwrite_with_a_bad_setting_removes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str, said: str
) -> None:
    """simulate --ranks 2 -o rk --overwrite --set straggler=9 removed the earlier rank traces and their sidecars,
    then refused the setting: rk held ranks.synthetic.truth.json alone, the truth of traces no longer there. The
    settings are checked first: one line, exit 2, the 5 files as they were."""
    out = tmp_path / "rk"
    code, _, err = _run(capsys, "simulate", "--ranks", "2", "--iters", "2", "-o", str(out), "-q")
    assert code == 0, err
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert sorted(before) == [
        "rank0.synthetic.json.gz",
        "rank0.synthetic.meta.json",
        "rank1.synthetic.json.gz",
        "rank1.synthetic.meta.json",
        "ranks.synthetic.truth.json",
    ]
    code, stdout, err = _run(
        capsys,
        "simulate",
        "--ranks",
        "2",
        "--iters",
        "2",
        "-o",
        str(out),
        "-q",
        "--overwrite",
        "--set",
        setting,
    )
    assert (code, stdout, err) == (2, "", said)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.mark.parametrize("name", ["", " "])
def test_report_into_an_empty_folder_name_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """report -o "" (an unset shell variable, -o "$OUT") wrote report.md, report.json and report.csv into the
    current folder (Path("") is "."); -o " " made a folder named by a space. One line, exit 2, nothing written."""
    trace = _kineto(tmp_path / "t.synthetic.json")
    monkeypatch.chdir(tmp_path)
    code, stdout, err = _run(capsys, "report", str(trace), "-o", name, "--no-figures", "-q")
    assert (code, stdout, err) == (
        2,
        "",
        f"tracekit: -o {name!r} names no folder: give the report folder's name (default ./report)\n",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.synthetic.json"]


# ------------------------------------------------------------------------ run folders named like files


@pytest.mark.parametrize("name", ["sim.json", "sim.zip", "sim.tar.xz", "sim.csv"])
@pytest.mark.parametrize("ranks", [False, True])
def test_simulate_into_a_folder_named_like_a_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, ranks: bool
) -> None:
    """simulate -o sim.json (or sim.zip) made a folder named sim.json holding the run, where report -o rep.json
    is refused: the same rule, one line, exit 2, nothing made."""
    out = tmp_path / name
    args = ["--ranks", "2"] if ranks else ["--runtime", "pytorch", "--batch-sizes", "1"]
    code, stdout, err = _run(capsys, "simulate", *args, "--iters", "2", "-o", str(out), "-q")
    what = "the rank traces" if ranks else "the run: run.json and the traces"
    assert (code, stdout, err) == (
        2,
        "",
        f"tracekit: {out}: -o takes a folder (it receives {what}), and this looks like a file name; give a "
        f"folder name such as {out.with_suffix('')}\n",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_collect_into_a_folder_named_like_a_file_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """collect -o run.json: the same line as simulate's, before torch is imported (no CUDA needed)."""
    out = tmp_path / "bert.json"
    code, stdout, err = _run(capsys, "collect", "--runtime", "pytorch", "--iters", "1", "-o", str(out), "-q")
    assert (code, stdout) == (2, ""), err
    assert err == (
        f"tracekit: {out}: -o takes a folder (it receives the run: run.json and the traces), and this looks like "
        f"a file name; give a folder name such as {tmp_path / 'bert'}\n"
    )
    assert not out.exists()


def test_report_into_dev_stdout_says_it_is_no_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """report -o /dev/stdout (or /dev/null) said "is a file"; it is a device: "is no folder"."""
    trace = _kineto(tmp_path / "t.synthetic.json")
    code, stdout, err = _run(capsys, "report", str(trace), "-o", "/dev/null", "--no-figures", "-q")
    assert (code, stdout, err) == (
        2,
        "",
        "tracekit: /dev/null: is no folder (a device or a pipe); -o takes a folder (it receives report.md, "
        "report.json, report.csv and the figures)\n",
    )
