"""firsthour17: a new user's first hour (README, docs, --help, error messages, the notebook API), and
render_json on numpy scalars. Inputs are hand-built (synthetic) or the committed samples."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tracekit.renderers.tabular import VECTOR_MIN, render_json

# ------------------------------------------------------------------------ render_json and numpy scalars


def test_render_json_takes_numpy_scalars():
    """numpy integer, float and bool scalars are written as the Python numbers they hold; a float32 as the
    shortest decimal of its value (as numpy prints it), not its binary expansion."""
    doc = {
        "i64": np.int64(3),
        "u8": np.uint8(255),
        "f64": np.float64(0.1234567890123456),
        "f32": np.float32(1.1),
        "f16": np.float16(0.5),
        "yes": np.bool_(True),
        "no": np.bool_(False),
    }
    text = render_json(doc)
    assert json.loads(text) == {
        "i64": 3,
        "u8": 255,
        "f64": 0.123456789012,
        "f32": 1.1,
        "f16": 0.5,
        "yes": True,
        "no": False,
    }
    assert '"yes": true' in text and '"i64": 3,' in text


def test_render_json_numpy_non_finite_is_null_and_listed():
    out = json.loads(render_json({"a": np.float32("nan"), "b": [np.float64("inf")]}))
    assert out["a"] is None and out["b"] == [None]
    assert out["non_finite"] == {"count": 2, "values": {"a": "NaN", "b[0]": "Infinity"}}


def test_render_json_long_lists_of_numpy_scalars():
    """Lists long enough to be rounded a column at a time (VECTOR_MIN) take numpy scalars too."""
    n = VECTOR_MIN + 4
    rows = [{"i": np.int64(k), "f": np.float32(k + 0.25), "ok": np.bool_(k % 2)} for k in range(n)]
    out = json.loads(render_json({"rows": rows, "ints": [np.int32(k) for k in range(n)]}))
    assert out["ints"] == list(range(n))
    assert out["rows"][3] == {"i": 3, "f": 3.25, "ok": True}
    assert out["rows"][n - 1] == {"i": n - 1, "f": n - 1 + 0.25, "ok": True}
    assert [r["ok"] for r in out["rows"][:4]] == [False, True, False, True]


def test_render_json_still_refuses_what_json_cannot_hold():
    with pytest.raises(TypeError):
        render_json({"x": object()})


# ------------------------------------------------------------------ output files named for another format

from pathlib import Path  # noqa: E402

from tests.hostile import run_cli  # noqa: E402

SAMPLES = Path(__file__).resolve().parent.parent / "sample_traces"
SYNTHETIC_SQLITE = SAMPLES / "synthetic" / "table3_pytorch" / "pytorch_b1_s128.synthetic.sqlite"


@pytest.mark.parametrize("name", ["tl.png", "tl.svg", "tl.pdf", "tl.html", "tl.csv", "tl.md"])
def test_timeline_named_as_another_format_is_refused_before_any_work(tmp_path, capsys, name):
    """--timeline writes Chrome trace-event JSON whatever the name: 'wrote tl.png: open it in ui.perfetto.dev'
    left JSON in a .png. Now one line naming the file and what to name it, exit 2, nothing written."""
    target = tmp_path / name
    code, out, err = run_cli(capsys, "analyze", str(SYNTHETIC_SQLITE), "--timeline", str(target))
    assert code == 2 and out == ""
    suffix = Path(name).suffix
    assert err == (
        f"tracekit: {target}: --timeline writes Chrome trace-event JSON (for ui.perfetto.dev), not a "
        f"{suffix} file: name it .json (or .json.gz)\n"
    )
    assert not target.exists()


@pytest.mark.parametrize("name", ["g.xlsx", "g.parquet", "g.md", "g.png", "g.tsv", "g.csv.gz", "g.json.gz"])
def test_gaps_named_as_another_format_is_refused_before_any_work(tmp_path, capsys, name):
    """--gaps writes CSV (JSON for .json): 'wrote gaps.xlsx' left CSV text in an .xlsx."""
    target = tmp_path / name
    code, out, err = run_cli(capsys, "analyze", str(SYNTHETIC_SQLITE), "--gaps", str(target))
    assert code == 2 and out == ""
    suffix = Path(name).suffix
    assert err == (
        f"tracekit: {target}: --gaps writes CSV (JSON when the name ends in .json), not a {suffix} file: "
        "name it .csv or .json\n"
    )
    assert not target.exists()


@pytest.mark.parametrize(
    ("option", "name"),
    [("--timeline", "t.json"), ("--timeline", "t.json.gz"), ("--timeline", "t.trace"), ("--gaps", "g.csv"),
     ("--gaps", "g.json"), ("--gaps", "gaps")],
)  # fmt: skip
def test_timeline_and_gaps_names_that_fit_are_written(tmp_path, capsys, option, name):
    target = tmp_path / name
    code, _, err = run_cli(capsys, "analyze", str(SYNTHETIC_SQLITE), option, str(target), "--format", "json")
    assert code == 0, err
    assert target.stat().st_size > 0


# ------------------------------------------------- defects in files that are not mine (strict xfails, reported)

FAKE_NSYS = """#!/bin/sh
# a stand-in for nsys 2022.4 exporting a damaged report: what the real one printed for random bytes named .nsys-rep
printf 'Exportation error: Version number is invalid: \\330\\302\\353J\\333v\\246\\n)\\n\\310\\335\\362\\n'
exit 1
"""


def test_damaged_nsys_report_error_is_readable_and_says_what_to_do(tmp_path, capsys, monkeypatch):
    nsys = tmp_path / "nsys"
    nsys.write_text(FAKE_NSYS)
    nsys.chmod(0o755)
    monkeypatch.setenv("TRACEKIT_NSYS", str(nsys))
    report = tmp_path / "damaged.synthetic.nsys-rep"
    report.write_bytes(bytes(range(256)) * 8)  # no 'NVIDIA Tegra Profiler Report' head
    code, out, err = run_cli(capsys, "analyze", str(report))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "\ufffd" not in err and err.isascii()
    assert "Version number is invalid" in err  # nsys's own words stay
    assert "damaged" in err or "not an Nsight Systems report" in err  # and what it means


NCU_SAMPLE = SAMPLES / "h200_bert_fp16" / "pytorch-ncu" / "pytorch_b1_s128.ncu.csv.gz"


def test_ncu_csv_alone_is_not_told_to_split_idle(capsys):
    import tracekit

    analyzed = tracekit.analyze(NCU_SAMPLE)
    assert analyzed.range_name == "window" and analyzed.iterations.height == 1
    assert "--split-idle" not in analyzed.range_choice
    code, out, err = run_cli(capsys, "analyze", str(NCU_SAMPLE), "--split-idle", "0.1")
    assert code == 2 and "--split-idle" in err and err.count("\n") == 1


ORT_SAMPLE = SAMPLES / "cpu_onnx_bert_ort" / "onnx_b1_s128.ort.json.gz"


def test_naming_the_default_range_keeps_the_default_warmup_rule():
    import tracekit

    default = tracekit.analyze(ORT_SAMPLE)
    named = tracekit.analyze(ORT_SAMPLE, range="model_run")
    assert default.range_name == "model_run" and default.iterations.height == 20
    assert named.iterations.height == 20
    assert named.iterations["latency_ms"].to_list() == default.iterations["latency_ms"].to_list()


# ------------------------------------------------------------------- a folder that holds one trace


def test_a_folder_of_one_trace_says_where_its_full_analysis_is(capsys):
    """After 'tracekit collect ... -o runs/bert-onnx', 'tracekit analyze runs/bert-onnx' printed a one-row
    cross-trace table and nothing else: no verdict line, no causes table, no word of the per-iteration
    analysis a single trace gets. Now a note on stderr names the command that gives it (-q silences it)."""
    folder = SAMPLES / "cpu_onnx_bert_ort"
    trace = folder / "onnx_b1_s128.ort.json.gz"
    code, out, err = run_cli(capsys, "analyze", str(folder), "--format", "json")
    assert code == 0 and len(json.loads(out)["rows"]) == 1
    assert (
        f"tracekit: note: one trace found ({trace}): this is the cross-trace table (one row); "
        f"tracekit analyze {trace} gives its per-iteration analysis\n"
    ) in err
    code, out, err = run_cli(capsys, "analyze", str(folder), "--format", "json", "-q")
    assert code == 0 and "note:" not in err


def test_timeline_with_several_traces_names_the_timeline(capsys):
    folder = SAMPLES / "synthetic" / "ranks4"
    code, out, err = run_cli(capsys, "analyze", str(folder), "--timeline", "t.json")
    assert (code, out, err) == (
        2,
        "",
        "tracekit: --timeline writes one trace's timeline; give one trace file with it\n",
    )
    code, out, err = run_cli(capsys, "analyze", str(folder), "--gaps", "g.csv")
    assert (code, out, err) == (
        2,
        "",
        "tracekit: --gaps writes one trace's gaps; give one trace file with it\n",
    )


# --------------------------------------------------- an option of another command


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["collect", "--format", "json"],
         "tracekit collect: error: unrecognized arguments: --format json; collect writes its results into its -o "
         "folder and prints none, so it takes no --format (see tracekit collect --help)"),
        (["simulate", "--format=csv"],  # (its own hidden --format, the old name of --traces, says it)
         "tracekit simulate: error: argument --format: simulate prints no result, so it takes no output format "
         "('csv'): it writes traces, their truth and run.json into -o DIR (--traces nsys|kineto|both chooses the "
         "traces) (see tracekit simulate --help)"),
        (["analyze", "t.json", "--ncu", "r.ncu.csv"],
         "tracekit analyze: error: unrecognized arguments: --ncu r.ncu.csv; --ncu is an option of tracekit table, "
         "not of analyze (see tracekit analyze --help)"),
        (["table", "t.json", "--top", "5"],
         "tracekit table: error: unrecognized arguments: --top 5; --top is an option of tracekit compare, not of "
         "table (see tracekit table --help)"),
        (["doctor", "--split-idle", "0.1"],
         "tracekit doctor: error: unrecognized arguments: --split-idle 0.1; --split-idle is an option of "
         "tracekit analyze, compare, report, table, not of doctor (see tracekit doctor --help)"),
        (["analyze", "t.json", "--fromat", "json"],
         "tracekit analyze: error: unrecognized arguments: --fromat json; did you mean --format? "
         "(see tracekit analyze --help)"),
        (["analyze", "t.json", "--bogus"],
         "tracekit analyze: error: unrecognized arguments: --bogus (see tracekit analyze --help)"),
    ],
)  # fmt: skip
def test_an_option_of_another_command_is_named_as_such(capsys, argv, said):
    from tracekit.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(argv)
    out, err = capsys.readouterr()
    assert exit_.value.code == 2 and out == ""
    assert err == said + "\n"


# ------------------------------------------------------------ an output that is a symbolic link loop


@pytest.mark.parametrize(
    "command",
    [
        ["analyze", str(SYNTHETIC_SQLITE), "-o"],
        ["analyze", str(SYNTHETIC_SQLITE), "--gaps"],
        ["analyze", str(SYNTHETIC_SQLITE), "--timeline"],
        ["table", str(SYNTHETIC_SQLITE), "-o"],
        ["compare", str(SYNTHETIC_SQLITE), str(SYNTHETIC_SQLITE), "-o"],
    ],
    ids=["analyze -o", "analyze --gaps", "analyze --timeline", "table -o", "compare -o"],
)
def test_an_output_that_is_a_symlink_loop_is_one_line(tmp_path, capsys, command):
    """(hostile17's finding) Path.resolve raises RuntimeError on a loop in Python 3.11: it was 'internal
    error ... RuntimeError: Symlink loop from ...', exit 1."""
    loop = tmp_path / "loop1.json"
    loop.symlink_to(tmp_path / "loop2.json")
    (tmp_path / "loop2.json").symlink_to(loop)
    code, out, err = run_cli(capsys, *command, str(loop), "-q")
    assert (code, out) == (2, "")
    assert err == (
        f"tracekit: {loop}: a symbolic link loop (its links lead back to themselves): choose another "
        f"{command[-1]}\n"
    )
    assert loop.is_symlink() and (tmp_path / "loop2.json").is_symlink()


# ------------------------------------------------------------ simulate --metrics-interval-us


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e30", "1000001"])
def test_simulate_metrics_interval_that_is_no_interval_is_one_line(tmp_path, capsys, value):
    """(hostile17's finding) nan/inf were 'internal error: ValueError: cannot convert float NaN to integer',
    1e30 an OverflowError, exit 1; -1 was already the one line '--metrics-interval-us must be >= 0'."""
    out = tmp_path / "sim"
    args = [
        "simulate",
        "--runtime",
        "pytorch",
        "--iters",
        "3",
        f"--metrics-interval-us={value}",
        "-o",
        str(out),
    ]
    code, stdout, err = run_cli(capsys, *args)
    expected = (
        "tracekit: --metrics-interval-us must be >= 0\n"
        if value == "-inf"
        else "tracekit: --metrics-interval-us must be a number of microseconds from 0 (none) to 1000000 "
        f"(got {'1e+30' if value == '1e30' else value})\n"
    )
    assert (code, stdout, err) == (2, "", expected)
    assert not out.exists()


def test_tracekits_own_timeline_is_not_analyzed_as_a_trace(tmp_path, capsys):
    timeline = tmp_path / "timeline.synthetic.json"
    code, _, err = run_cli(capsys, "analyze", str(SYNTHETIC_SQLITE), "--timeline", str(timeline), "-q")
    assert code == 0, err
    code, out, err = run_cli(capsys, "analyze", str(timeline))
    assert (code, out) == (2, "")
    assert err.startswith(f"tracekit: {timeline}: ") and err.count("\n") == 1
    assert "--timeline" in err


def test_a_damaged_ncu_report_is_not_said_to_hold_no_kernels(tmp_path, capsys):
    pytest.importorskip("ncu_report")
    report = tmp_path / "damaged.synthetic.ncu-rep"
    report.write_bytes(bytes((i * 7919) % 251 for i in range(3000)))
    code, out, err = run_cli(capsys, "analyze", str(report))
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert "holds no profiled kernels" not in err


# ---------------------------------------------------------- table's untraced latency, as report and analyze


def test_table_untraced_latency_is_reports_median_not_the_recorded_mean():
    """The committed H200 runs predate the recorded statistics (run.json: mean/p50/p90 only). table showed the
    recorded mean (4.4639798 and 3.1282205 ms) in its 'untraced ms' column, beside its own warning '4.453 ms
    untraced' (analyze's) and report's 4.453193 / 3.36674 ms (latency.csv measured by the stability rules,
    profiler_cost.untraced_of). Now table shows report's median with its 95% interval."""
    import tracekit

    frame = tracekit.table(
        [
            SAMPLES / "h200_bert_fp16" / "pytorch" / "pytorch_b1_s128.torch.json.gz",
            SAMPLES / "h200_bert_fp16" / "compile" / "compile_b1_s128.torch.json.gz",
        ]
    )
    rows = frame.select("runtime", "untraced_latency_ms", "untraced_ci_low", "untraced_ci_high").rows()
    assert rows == [
        ("pytorch", pytest.approx(4.453193), pytest.approx(4.415305), pytest.approx(4.488564)),
        ("compile", pytest.approx(3.36674), pytest.approx(3.315068), pytest.approx(3.406136)),
    ]


# ---------------------------------------------------------------- report --timeline-config


@pytest.mark.parametrize(
    "text", ["pytorch:1:128:9", "pytorch", ":1", "pytorch:x", "pytorch:1:y", "a:b:c:d:e"]
)
def test_timeline_config_that_is_not_runtime_batch_seq_is_refused(text):
    """(hostile17's finding) 'pytorch:1:128:9' was read as runtime 'pytorch:1', batch 128, seq 9, then 'no
    such configuration (have pytorch:1:128, ...)'."""
    from tracekit.commands.report import _parse_timeline_config
    from tracekit.errors import TracekitError

    with pytest.raises(TracekitError) as caught:
        _parse_timeline_config(text)
    assert str(caught.value) == f"--timeline-config {text!r}: expected RUNTIME:BATCH or RUNTIME:BATCH:SEQ"


def test_timeline_config_that_fits_is_read():
    from tracekit.commands.report import _parse_timeline_config

    assert _parse_timeline_config("pytorch:1:128") == ("pytorch", 1, 128)
    assert _parse_timeline_config("onnx-cuda-graphs:8") == ("onnx-cuda-graphs", 8, None)
    assert _parse_timeline_config(None) is None


# ------------------------------------------------------------------- table --ncu given a timeline


@pytest.mark.parametrize(
    ("other", "kind"),
    [
        (SAMPLES / "synthetic" / "table3_pytorch" / "pytorch_b1_s128.synthetic.json.gz", "a Kineto trace"),
        (SYNTHETIC_SQLITE, "an Nsight Systems SQLite export"),
    ],
)
def test_table_ncu_given_a_timeline_is_left_out_as_no_ncu_report(capsys, other, kind):
    """(hostile17's finding) it was joined as the row's Nsight Compute report: exit 0, the file in the row's
    ncu column and 'the Nsight Compute report holds no SM-activity or warp-occupancy metric'."""
    code, out, err = run_cli(capsys, "table", str(SYNTHETIC_SQLITE), "--ncu", str(other), "--format", "json")
    assert code == 1
    doc = json.loads(out)
    assert doc["rows"][0]["ncu_trace"] is None
    said = [w for w in doc["warnings"] if w.startswith("left out: ")]
    assert said == [
        f"left out: {other}: not an Nsight Compute report ({kind}): --ncu takes an Nsight Compute CSV (ncu "
        "--csv --page raw) or .ncu-rep; the row of pytorch_b1_s128.synthetic.sqlite is kept without it (SMs "
        "active from nsys metrics, warp occupancy from nsys metrics)"
    ]
    assert "holds no SM-activity" not in err


def test_timeline_gz_in_capitals_is_gzipped(tmp_path, capsys):
    """The name check takes 'T.JSON.GZ' as a gzipped JSON name; the writer had gzipped only a lower-case
    '.gz', so it wrote plain JSON under that name."""
    import gzip

    target = tmp_path / "T.JSON.GZ"
    code, _, err = run_cli(
        capsys, "analyze", str(SYNTHETIC_SQLITE), "--timeline", str(target), "-q", "-o", "/dev/null"
    )
    assert code == 0, err
    assert (
        json.loads(gzip.decompress(target.read_bytes()))["otherData"]["made_by"]
        == "tracekit analyze --timeline"
    )


def test_a_folder_without_trace_names_says_which_names_are_read(tmp_path, capsys):
    """A folder of traces under other names (a profile saved as .trace, a CSV under .txt) was 'a directory
    with no trace files in it', with no word of which names a folder is searched for."""
    (tmp_path / "run.synthetic.trace").write_bytes(SYNTHETIC_SQLITE.read_bytes())
    code, out, err = run_cli(capsys, "analyze", str(tmp_path))
    assert (code, out) == (2, "")
    assert err == (
        f"tracekit: {tmp_path}: a directory with no trace files in it (a folder is searched for *.sqlite(.gz), "
        "*.json(.gz), *.nsys-rep, *.qdrep, *.ncu-rep and *.ncu.csv(.gz); give a file of another name itself)\n"
    )
    code, out, err = run_cli(capsys, "analyze", str(tmp_path / "run.synthetic.trace"), "--format", "json")
    assert code == 0, err  # named on the command line, it is read by its content


# ------------------------------------------------------------ a name too long for the file system

LONG_NAME = "a" * 300 + ".synthetic.json"  # 300 bytes and more: ENAMETOOLONG on every common file system


@pytest.mark.parametrize(
    "where", ["trace", "-o", "--gaps", "--timeline", "--cache", "simulate -o", "compare", "table"]
)
def test_a_name_too_long_for_the_file_system_is_one_line(tmp_path, capsys, monkeypatch, where):
    """(hostile17's finding) 'internal error (on T): OSError: [Errno 36] File name too long: ...', exit 1."""
    trace = tmp_path / "t.synthetic.sqlite"
    trace.write_bytes(SYNTHETIC_SQLITE.read_bytes())
    monkeypatch.chdir(tmp_path)
    args = {
        "trace": ["analyze", LONG_NAME],
        "-o": ["analyze", trace.name, "-o", LONG_NAME],
        "--gaps": ["analyze", trace.name, "--gaps", LONG_NAME],
        "--timeline": ["analyze", trace.name, "--timeline", LONG_NAME],
        "--cache": ["analyze", trace.name, "--cache", LONG_NAME],
        "simulate -o": ["simulate", "--runtime", "pytorch", "--iters", "3", "-o", LONG_NAME],
        "compare": ["compare", trace.name, LONG_NAME],
        "table": ["table", LONG_NAME],
    }[where]
    code, out, err = run_cli(capsys, *args, "-q")
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and "internal error" not in err
    assert err.startswith("tracekit: ") and LONG_NAME in err
    assert "name too long for the file system" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == [trace.name]


@pytest.mark.parametrize("command", ["simulate", "report"])
def test_an_output_folder_that_is_a_symlink_loop_is_named_a_loop(tmp_path, capsys, monkeypatch, command):
    """(hostile17's finding) 'cannot create the output folder: File exists'."""
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    monkeypatch.chdir(tmp_path)
    args = {
        "simulate": ["simulate", "--runtime", "pytorch", "--iters", "3", "-o", "loop1"],
        "report": ["report", str(SYNTHETIC_SQLITE), "-o", "loop1", "--no-figures"],
    }[command]
    code, out, err = run_cli(capsys, *args, "-q")
    assert (code, out) == (2, "")
    assert err == (
        "tracekit: loop1: a symbolic link loop (its links lead back to themselves): choose another output folder\n"
    )
