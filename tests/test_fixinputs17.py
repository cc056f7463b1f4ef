"""Round 17 fixes of hostile17's defects in the inputs, runs, simulate, cache and report (fixinputs17): run.json
against the trace's sidecar, one trace named for two configurations, sidecars that do not parse, simulate's
parameters, the cache's stored warnings and folder, and a folder of report outputs.

Every trace is hand-built in pytest's temporary folder (names say "synthetic"): the Kineto trace of
tests/hostile.py (4 iterations of a 0.9 ms 'iteration' annotation, ``kernels`` launches of kernels of 10 µs
each: latency 0.9 ms, GPU busy kernels x 0.01 ms), so a batch size of B gives a throughput of B / 0.9 ms.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import analyze_json as _json
from tests.hostile import run_cli as _run
from tests.hostile import small_trace_events
from tests.hostile import three_iteration_nsys as _nsys
from tracekit.inputs import TraceConfig, resolve_inputs

# ----------------------------------------------------------------------------------------------- helpers


def _one_line(err: str, path: str | Path) -> str:
    """The one line of a refusal: it names ``path``; no traceback, no internal error."""
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("tracekit: ") and str(path) in lines[0], err
    return lines[0]


def _kineto(path: Path, kernels: int = 3) -> Path:
    path.write_text(json.dumps({"traceEvents": small_trace_events(kernels=kernels)}))
    return path


def _run_dir(tmp_path: Path, configs: list[tuple[int, str]], sidecars: dict[str, int]) -> Path:
    """A run folder (SYNTHETIC) with the Kineto traces ``pytorch_b1_s128.synthetic.json`` (3 kernels) and
    ``pytorch_b2_s128.synthetic.json`` (2 kernels: another file), sidecars stating the batch sizes of
    ``sidecars`` (trace name -> batch), and a run.json of ``configs`` (batch size, trace name), seq 128."""
    run = tmp_path / "run"
    run.mkdir()
    for batch, kernels in ((1, 3), (2, 2)):
        _kineto(run / f"pytorch_b{batch}_s128.synthetic.json", kernels)
    for name, batch in sidecars.items():
        meta = {"runtime": "pytorch", "batch_size": batch, "seq_len": 128, "synthetic": True}
        (run / name.replace(".json", ".meta.json")).write_text(json.dumps(meta))
    doc = {
        "kind": "simulate",
        "runtime": "pytorch",
        "model": "synthetic-model",
        "synthetic": True,
        "configs": [
            {"batch_size": batch, "seq_len": 128, "status": "ok", "traces": {"torch": name}}
            for batch, name in configs
        ],
    }
    (run / "run.json").write_text(json.dumps(doc))
    return run


def _report_rows(
    capsys: pytest.CaptureFixture[str], run: Path, out: Path
) -> tuple[list[dict[str, str]], str]:
    code, _, err = _run(capsys, "report", str(run), "-o", str(out), "--no-figures", "-q", "--format", "csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO((out / "report.csv").read_text())))
    return rows, err


B1, B2 = "pytorch_b1_s128.synthetic.json", "pytorch_b2_s128.synthetic.json"

# ------------------------------------------------------------------- 1. run.json against the trace's sidecar


def test_run_json_and_the_sidecar_disagreeing_on_the_batch_leave_it_uncertain(tmp_path: Path) -> None:
    """run.json says batch 8 for the trace whose sidecar says 2: the batch size is in doubt (None, both values
    its candidates, 'uncertain: sources disagree'), said in one warning; batch 1 (both agree) is as stated."""
    run = _run_dir(tmp_path, [(1, B1), (8, B2)], {B1: 1, B2: 2})
    one, two = resolve_inputs([run])
    first, second = (TraceConfig.resolve(item, {}, None) for item in (one, two))
    assert (first.batch_size, first.sources["batch_size"], first.inference_warnings) == (
        1,
        "from run.json",
        (),
    )
    assert second.batch_size is None
    assert second.sources["batch_size"] == "uncertain: sources disagree"
    assert second.uncertain == {"batch_size": (8, 2)}
    assert second.inference_warnings == (
        "batch size uncertain, sources disagree: 8 from run.json vs 2 from sidecar .meta.json "
        "(pytorch_b2_s128.synthetic.meta.json); neither is used",
    )
    assert (second.runtime, second.seq_len) == ("pytorch", 128)


def test_report_draws_no_throughput_from_a_batch_its_sources_disagree_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was: batch 8 with throughput 8888.9 /s (8 / 0.9 ms) 'on' the plateau, no word. Now: batch 1's row
    1111.1 /s; the other row without batch size, throughput or plateau state, and two warnings naming it."""
    run = _run_dir(tmp_path, [(1, B1), (8, B2)], {B1: 1, B2: 2})
    rows, err = _report_rows(capsys, run, tmp_path / "out")
    assert [(r["batch_size"], r["throughput_per_s"], r["plateau_state"]) for r in rows] == [
        ("1", "1111.11111111", "on"),
        ("", "", ""),
    ]
    assert rows[1]["latency_ms"] == "0.9" and rows[1]["path"].endswith(B2)
    said = [line for line in err.splitlines() if B2 in line]
    assert said == [
        f"warning: {run / B2}: batch size uncertain (its sources give 8 and 2); left out of sweeps: no "
        "throughput or plateau is drawn from it",
        f"warning: {run / B2}: batch size uncertain, sources disagree: 8 from run.json vs 2 from sidecar "
        ".meta.json (pytorch_b2_s128.synthetic.meta.json); neither is used",
    ]


def test_one_trace_named_for_two_batch_sizes_is_one_row_whose_batch_is_in_doubt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """run.json's batch-2 configuration names batch 1's trace (no sidecars): was two rows of 0.9 ms, 1111.1
    and 2222.2 /s, both 'on' the plateau. Now one row (the trace analyzed once), no batch size, no throughput."""
    run = _run_dir(tmp_path, [(1, B1), (2, B1)], {})
    (item,) = resolve_inputs([run])
    config = TraceConfig.resolve(item, {}, None)
    assert (config.batch_size, config.uncertain, config.seq_len) == (None, {"batch_size": (1, 2)}, 128)
    assert config.inference_warnings == (
        "batch size uncertain, sources disagree: run.json gives this one trace 1 and 2; none is used",
        f"{run / 'run.json'}: configs[1] (batch 2, seq 128) names the same trace as configs[0] (batch 1, seq "
        f"128), {B1}: one recording cannot be of both; analyzed once, its batch size uncertain",
    )
    rows, err = _report_rows(capsys, run, tmp_path / "out")
    assert [(r["batch_size"], r["throughput_per_s"], r["path"].endswith(B1)) for r in rows] == [
        ("", "", True)
    ]
    assert "left out of sweeps: no throughput or plateau is drawn from it" in err


def test_report_counts_one_file_given_twice_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same trace given as two inputs, through a link named for batch 2 (no sidecars: the batch sizes are
    the file names', 1 and 2): was two rows, 1111.1 and 2222.2 /s on one plateau. Now one row, its batch in
    doubt, and the repeat named."""
    trace = _kineto(tmp_path / B1)
    link = tmp_path / B2
    link.symlink_to(trace.name)
    code, _, err = _run(
        capsys, "report", str(trace), str(link), "-o", str(tmp_path / "out"), "--no-figures", "-q"
    )
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO((tmp_path / "out" / "report.csv").read_text())))
    assert [(r["batch_size"], r["throughput_per_s"]) for r in rows] == [("", "")]
    assert (
        f"warning: {link} is the same recording as {trace} (the same file twice or a link to it): counted "
        "once, its batch size uncertain (1 or 2)"
    ) in err.splitlines()


# ------------------------------------------------------------------ 2. a sidecar that does not parse

SIDECAR = {"warmup_iterations": 2, "warmup_in_trace": True, "iterations": 2, "batch_size": 4}


def _sidecar_case(tmp_path: Path, data: bytes) -> tuple[Path, Path]:
    trace = _kineto(tmp_path / "t.synthetic.json")
    sidecar = tmp_path / "t.synthetic.meta.json"
    sidecar.write_bytes(data)
    return trace, sidecar


def test_a_sidecar_with_a_byte_order_mark_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Was: ignored (4 iterations, none skipped, no batch size). Now read: its 2 warm-up iterations skipped,
    batch 4 stated, no warning."""
    trace, _ = _sidecar_case(tmp_path, b"\xef\xbb\xbf" + json.dumps(SIDECAR).encode())
    code, doc, err = _json(capsys, str(trace))
    assert code == 0, err
    assert (doc["skipped"], [it["latency_ms"] for it in doc["iterations"]]) == (2, [0.9, 0.9])
    assert (doc["config"]["batch_size"], doc["warnings"]) == (4, [])


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (
            json.dumps(SIDECAR)[:-1].encode() + b",}",
            "not JSON (Expecting property name enclosed in double quotes: line 1 column 84 (char 83))",
        ),
        (b"[1, 2]", "its JSON is an array, not an object of fields"),
        (b'"warmup"', "its JSON is a string, not an object of fields"),
        (b"\xff\xfe{}", "not JSON ('utf-8' codec can't decode byte 0xff in position 0: invalid start byte)"),
    ],
    ids=["trailing comma", "an array", "a string", "not UTF-8"],
)
def test_a_sidecar_that_cannot_be_used_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes, why: str
) -> None:
    """Was: ignored without a word (its 2 warm-up iterations analyzed as measured). Still not used (4
    iterations, none skipped: what it states cannot be read), but said, naming it and why."""
    trace, _ = _sidecar_case(tmp_path, data)
    code, doc, err = _json(capsys, str(trace))
    assert code == 0, err
    assert (doc["skipped"], len(doc["iterations"]), doc["config"]["batch_size"]) == (0, 4, None)
    assert doc["warnings"] == [
        f"sidecar t.synthetic.meta.json not used: {why}; what it states of the trace (warm-up iterations, batch "
        "size, ...) is not known"
    ]


def test_a_sidecar_in_a_run_folder_that_cannot_be_used_is_said(tmp_path: Path) -> None:
    """The same for a trace of a run folder: the configuration's warnings say it (run.json's batch 1 kept)."""
    run = _run_dir(tmp_path, [(1, B1)], {})
    (run / "pytorch_b1_s128.synthetic.meta.json").write_text("[1, 2]")
    (item,) = resolve_inputs([run])
    config = TraceConfig.resolve(item, {}, None)
    assert config.batch_size == 1
    assert config.inference_warnings == (
        "sidecar pytorch_b1_s128.synthetic.meta.json not used: its JSON is an array, not an object of fields; "
        "what it states of the trace (warm-up iterations, batch size, ...) is not known",
    )


# ------------------------------------------------------------------------------- 3. simulate's parameters


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("gpu_ns_per_token=nan", "simulation parameter gpu_ns_per_token must be a finite number (got nan)"),
        ("gpu_ns_per_token=inf", "simulation parameter gpu_ns_per_token must be a finite number (got inf)"),
        ("sm_fill=nan", "simulation parameter sm_fill must be a finite number (got nan)"),
        (
            "kernel_floor_ns=1e30",
            "simulation parameter kernel_floor_ns must be at most 1e+09 ns (1 s; got 1e+30)",
        ),
        ("op_cpu_ns=1e19", "simulation parameter op_cpu_ns must be at most 1e+09 ns (1 s; got 1e+19)"),
        (
            "gpu_ns_per_token=2e9",
            "simulation parameter gpu_ns_per_token must be at most 1e+09 ns (1 s; got 2e+09)",
        ),
        ("launch_call_ns=inf", "simulation parameter launch_call_ns: 'inf' is not a number"),
        ("ops=0", "simulation parameter ops must be from 1 to 100000 (got 0)"),
        ("ops=100001", "simulation parameter ops must be from 1 to 100000 (got 100001)"),
        ("op_cpu_spread=50", "simulation parameter op_cpu_spread must be at most 5.0 (got 50.0)"),
        (
            "graph=maybe",
            "simulation parameter graph: 'maybe' is not true or false (1/true/yes/on or 0/false/no/off)",
        ),
        (
            "runtime=onnx",
            "simulation parameter runtime is chosen by --runtime (one of pytorch, torchscript, cuda-graphs, onnx, "
            "onnx-cuda-graphs), not by --set",
        ),
    ],
)
def test_simulate_refuses_a_parameter_it_cannot_run_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str, message: str
) -> None:
    """Was: NaN, inf and 1e30 accepted (exit 0, traces of 1-ns kernels; op_cpu_ns=1e19 a MemoryError, inf an
    OverflowError), graph=maybe read as false, runtime=onnx 'unknown' and listed as known. Now one line each,
    exit 2, nothing written."""
    out = tmp_path / "sim"
    code, _, err = _run(
        capsys, "simulate", "--runtime", "pytorch", "--iters", "3", "--set", setting, "-o", str(out)
    )
    assert (code, err) == (2, f"tracekit: {message}\n")
    assert not out.exists()


def test_simulate_unknown_parameter_lists_only_what_set_takes(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "simulate", "--runtime", "pytorch", "--set", "foo=1", "-o", "unused-folder")
    assert code == 2
    known = err.strip().split("known: ")[1].split(", ")
    assert "runtime" not in known and "graph" in known and len(known) == 20


@pytest.mark.parametrize(("word", "graph"), [("off", False), ("No", False), ("1", True), ("TRUE", True)])
def test_simulate_set_reads_clear_flags(word: str, graph: bool) -> None:
    from tracekit.simulate.presets import preset

    assert preset("pytorch", {"graph": word}).graph is graph


# -------------------------------------------------------------------------------------------- 4. the cache


def _wal_pair(tmp_path: Path, names: list[str]) -> list[Path]:
    """Byte-identical copies of an nsys export in WAL mode whose -wal log holds an uncheckpointed delete of
    iteration 0's first kernel (iteration 0: GPU busy 0.1 ms, 1 kernel), each with its own copy of the log."""
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


def _busy(doc: dict[str, Any]) -> list[tuple[float, int]]:
    return [(it["gpu_busy_ms"], it["kernels"]) for it in doc["iterations"]]


def test_a_cache_entry_names_the_write_ahead_log_of_the_file_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was: b's analysis from the entry a made said 'its write-ahead log a.synthetic.sqlite-wal beside it'.
    Now the same warnings as b's read without the cache, naming b's log; a's own re-read names a's; the entry
    is one (the files are byte-identical)."""
    first, second = _wal_pair(tmp_path, ["a.synthetic.sqlite", "b.synthetic.sqlite"])
    cache = tmp_path / "cache"
    code, plain_a, err = _json(capsys, str(first))
    assert code == 0, err
    code, plain_b, err = _json(capsys, str(second))
    assert code == 0, err
    assert _busy(plain_b) == [(0.1, 1), (0.3, 2), (0.3, 2)]
    said = [w for w in plain_b["warnings"] if "write-ahead log" in w]
    assert len(said) == 1 and "b.synthetic.sqlite-wal" in said[0] and "a.synthetic" not in said[0]
    for path, plain in ((first, plain_a), (second, plain_b), (first, plain_a)):
        code, cached, err = _json(capsys, str(path), "--cache", str(cache))
        assert code == 0, err
        assert (cached["warnings"], _busy(cached)) == (plain["warnings"], _busy(plain))
    assert len([p for p in cache.iterdir() if p.is_dir() and not p.name.startswith(".")]) == 1


def test_the_cache_marks_a_name_only_where_it_stands_alone(tmp_path: Path) -> None:
    """The file a.sqlite's name is marked in 'a.sqlite-wal' and '(a.sqlite)', not inside 'data.sqlite' or
    'a.sqlite2'; its full path is marked whole; read back for b.sqlite."""
    from tracekit.fleet.cache import _named

    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    meta = {
        "warnings": [f"log a.sqlite-wal of {a}", "data.sqlite and a.sqlite2 (a.sqlite)"],
        "n": 3,
        "nested": {"x": ["a.sqlite"]},
    }
    stored = _named(meta, a)
    assert "a.sqlite" not in json.dumps(stored).replace("data.sqlite", "").replace("a.sqlite2", "")
    assert _named(stored, b, back=True) == {
        "warnings": [f"log b.sqlite-wal of {b}", "data.sqlite and a.sqlite2 (b.sqlite)"],
        "n": 3,
        "nested": {"x": ["b.sqlite"]},
    }


@pytest.mark.parametrize(
    ("make", "message"),
    [
        ("loop", "the cache folder (--cache) is a symbolic link loop (its links lead back to themselves): choose "
         "another folder"),
        ("dangling", "the cache folder (--cache) is a symbolic link to nowhere/cache, which does not exist"),
    ],
    ids=["loop", "dangling"],
)  # fmt: skip
def test_a_cache_folder_that_is_a_broken_link_is_named_so(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    make: str,
    message: str,
) -> None:
    """Was: 'cannot create the cache folder (--cache): File exists' (mkdir's error about the link)."""
    if make == "loop":
        (tmp_path / "c1").symlink_to("c2")
        (tmp_path / "c2").symlink_to("c1")
    else:
        (tmp_path / "c1").symlink_to("nowhere/cache")
    trace = _kineto(tmp_path / "t.synthetic.json")
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(capsys, "analyze", str(trace), "--cache", "c1", "-q")
    assert (code, err) == (2, f"tracekit: c1: {message}\n")


# ---------------------------------------------------------------------- 5. a folder of report outputs


@pytest.mark.parametrize("command", ["compare", "table", "report"])
def test_a_folder_of_report_outputs_is_said_to_hold_no_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """A folder holding tracekit report's report.csv and report.md: was 'it holds 1 trace file (report.csv):
    pass the files (DIR/*.csv)' (a CSV that no reader reads counted as a trace); analyze says 'a directory
    with no trace files in it'. Now the same: no trace files, its files named."""
    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / "report.csv").write_text(
        "runtime,device,seq_len,batch_size,latency_ms\npytorch,gpu,128,1,0.706\n"
    )
    (folder / "report.md").write_text("# report\n")
    trace = _kineto(tmp_path / "t.synthetic.json")
    args = {
        "compare": ["compare", str(trace), str(folder)],
        "table": ["table", str(folder)],
        "report": ["report", str(folder), "-o", str(tmp_path / "out"), "--no-figures"],
    }[command]
    code, _, err = _run(capsys, *args, "-q")
    assert (code, err) == (
        2,
        f"tracekit: {folder}: not a tracekit run directory (no run.json), and it holds no trace files "
        "(report.csv, report.md: not traces)\n",
    )


def test_a_folder_of_an_ncu_csv_of_another_name_still_says_pass_the_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An Nsight Compute CSV named kernels.csv (not *.ncu.csv) is a trace: the line still says to pass it."""
    folder = tmp_path / "k"
    folder.mkdir()
    (folder / "kernels.csv").write_text(
        '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
        '"0","k0","gpu__time_duration.sum","usecond","10"\n'
    )
    code, _, err = _run(capsys, "table", str(folder), "-q")
    assert code == 2
    assert "it holds 1 trace file (kernels.csv): pass the files" in _one_line(err, folder)


# --------------------------------------------------------------------- collect's sizes (hostile17's note)


@pytest.mark.parametrize(
    ("over", "message"),
    [
        (
            {"batch_sizes": [1, 99999999999999999999]},
            "--batch-sizes must be at most 2147483647 (got 99999999999999999999)",
        ),
        (
            {"batch_sizes": [2**31]},
            "--batch-sizes must be at most 2147483647 (got 2147483648)",
        ),
        ({"batch_sizes": [0, 2]}, "--batch-sizes must be positive integers (got 0)"),
        (
            {"model": "funnel", "seq_lens": [2**40]},
            "--seq-lens must be at most 2147483647 (got 1099511627776)",
        ),
    ],
    ids=["1e20", "2^31", "0", "seq 2^40"],
)
def test_collect_refuses_a_size_run_json_could_not_hold_before_torch(
    over: dict[str, Any], message: str
) -> None:
    """Was: --batch-sizes 99999999999999999999 passed the checks and failed in the worker after torch was
    imported ('1 of 1 configurations failed; first: TypeError: randint(): ... Overflow when unpacking long
    long', exit 1). Now one line before anything heavy: the bound run.json's check takes (2^31 - 1)."""
    from tracekit.collectors import sweep
    from tracekit.errors import TracekitError

    with pytest.raises(TracekitError) as caught:
        sweep.validate(sweep.SweepOptions(device="cpu", **{"model": "tiny", **over}))
    assert str(caught.value) == message
    sweep.validate(sweep.SweepOptions(model="tiny", device="cpu", batch_sizes=[1, 2**31 - 1]))


def test_report_counts_a_byte_identical_copy_labelled_another_batch_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A copy of batch 1's trace saved as batch 2's (sidecars 1 and 2): was two rows, 1111.1 and 2222.2 /s on
    one plateau. Now one row, its batch in doubt, the copy named; a copy of the same label is counted once too."""
    for name, batch in ((B1, 1), (B2, 2)):
        _kineto(tmp_path / name)  # the same events: byte-identical files
        meta = {"runtime": "pytorch", "batch_size": batch, "seq_len": 128, "synthetic": True}
        (tmp_path / name.replace(".json", ".meta.json")).write_text(json.dumps(meta))
    one, two = tmp_path / B1, tmp_path / B2
    assert one.read_bytes() == two.read_bytes()
    code, _, err = _run(
        capsys, "report", str(one), str(two), "-o", str(tmp_path / "out"), "--no-figures", "-q"
    )
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO((tmp_path / "out" / "report.csv").read_text())))
    assert [(r["batch_size"], r["throughput_per_s"], r["path"]) for r in rows] == [("", "", str(one))]
    assert (
        f"warning: {two} is the same recording as {one} (a byte-identical copy): counted once, its batch size "
        "uncertain (1 or 2)"
    ) in err.splitlines()


# ------------------------------------------------------- run.json naming a trace outside its folder (hostile17)


@pytest.mark.parametrize("where", ["../elsewhere/pytorch_b1_s128.synthetic.json", "absolute"])
def test_a_trace_outside_the_run_folder_is_said(tmp_path: Path, where: str) -> None:
    """hostile17's 'left' note: run.json naming '../other' was followed without a word (report read a foreign
    file as batch 1). It is still read (a moved run may mean it), but said, naming it."""
    other = tmp_path / "elsewhere"
    other.mkdir()
    trace = _kineto(other / B1)
    name = str(trace) if where == "absolute" else where
    run = _run_dir(tmp_path, [(1, name)], {})
    (item,) = resolve_inputs([run])
    assert item.path.resolve() == trace.resolve()
    assert TraceConfig.resolve(item, {}, None).inference_warnings == (
        f"{run / 'run.json'}: configs[0] names a trace outside the run folder ({name}): read as run.json says, "
        "though it is not among the run's own files",
    )


def test_a_cache_entry_replaced_by_a_file_is_stored_anew(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """hostile17's 'left' note: an entry's folder replaced by a regular file, and the cache never stored that
    trace again, without a word. Now the file is taken for a damaged entry (removed) and the entry stored anew;
    the output is the one without the cache."""
    path = _kineto(tmp_path / "t.synthetic.json")
    cache = tmp_path / "cache"
    code, plain, err = _run(capsys, "analyze", str(path), "--format", "csv", "-q")
    assert code == 0, err
    assert _run(capsys, "analyze", str(path), "--cache", str(cache), "-q")[0] == 0
    (entry,) = [p for p in cache.iterdir() if p.is_dir()]
    import shutil

    shutil.rmtree(entry)
    entry.write_text("not an entry")
    for _ in range(2):
        assert _run(capsys, "analyze", str(path), "--cache", str(cache), "--format", "csv", "-q") == (
            0,
            plain,
            "",
        )
    assert entry.is_dir() and (entry / "meta.json").is_file()
