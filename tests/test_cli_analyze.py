"""`tracekit analyze` end to end: output schema, bad input, and agreement with the reference on real traces."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REAL_TRACES, real_trace
from tests.reference_metrics import reference_iterations
from tracekit.analyzers.iterations import analyze_iterations
from tracekit.cli import main
from tracekit.readers import read_trace

ITERATION_FIELDS = {
    "index",
    "start_ns",
    "end_ns",
    "latency_ms",
    "cpu_ms",
    "gpu_busy_ms",
    "framework_overhead_ms",
    "gpu_utilization",
    "kernels",
    "launches",
    "launch_api_us",
    "launch_latency_us",
    "idle_gaps",
    "idle_ms",
    "synchronized",
}


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tracekit.cli", *args], capture_output=True, text=True, timeout=300
    )


def assert_one_line_error(proc: subprocess.CompletedProcess, path: str, words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert path in lines[0] and words in lines[0], lines[0]


@pytest.mark.parametrize(
    "content, words",
    [
        (b"", "empty file"),
        (b'{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "du', "JSON"),
        (b"hello, I am not a trace\n", "not a trace"),
    ],
)
def test_bad_files_give_one_line(tmp_path, content, words):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    assert_one_line_error(run_cli("analyze", str(bad)), str(bad), words)


def test_missing_file_and_directory(tmp_path):
    assert_one_line_error(run_cli("analyze", str(tmp_path / "nope.sqlite")), "nope.sqlite", "no such file")
    assert_one_line_error(run_cli("analyze", str(tmp_path)), str(tmp_path), "directory")


def test_truncated_gzip(tmp_path):
    data = gzip.compress(
        json.dumps({"traceEvents": [{"ph": "X", "name": "x", "ts": 1, "dur": 2}] * 200}).encode()
    )
    bad = tmp_path / "cut.json.gz"
    bad.write_bytes(data[: len(data) // 2])
    proc = run_cli("analyze", str(bad))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and str(bad) in proc.stderr


def test_foreign_and_corrupt_sqlite(tmp_path):
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE people (name TEXT)")
    assert_one_line_error(run_cli("analyze", str(foreign)), str(foreign), "Nsight Systems")
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"SQLite format 3\x00" + b"\xff" * 3000)
    proc = run_cli("analyze", str(corrupt))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and str(corrupt) in proc.stderr


PAPER = ("paper", "framework_tax_bert_fp16_bs1_cudagraphs_rtx8000.sqlite")


def test_json_schema_and_readonly_input_on_the_papers_trace(tmp_path):
    src = real_trace(*PAPER)
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    out = tmp_path / "out.json"
    assert main(["analyze", str(src), "--format", "json", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert set(doc) >= {"trace", "range", "iterations", "summary", "warnings"}
    assert set(doc["trace"]) >= {"path", "format", "format_version", "device", "gpu"}
    assert doc["range"] == "forward" and len(doc["iterations"]) == 10
    assert ITERATION_FIELDS <= set(doc["iterations"][0])
    assert doc["summary"]["iterations"] == 10
    assert set(doc["summary"]["latency_ms"]) == {"mean", "p50", "p90", "p99", "min", "max"}
    assert doc["summary"]["bound"] in ("framework", "compute")
    # The study's CUDA-graph trace has no sync inside its ranges: every iteration is unsynchronized.
    assert not any(it["synchronized"] for it in doc["iterations"])
    assert any("unsynchronized" in w for w in doc["warnings"])
    # Its steady-state period agrees with the study's published 2.82 ms to within 10%.
    assert doc["summary"]["latency_ms"]["p50"] == pytest.approx(2.82, rel=0.10)
    assert hashlib.sha256(src.read_bytes()).hexdigest() == digest


def test_range_that_matches_nothing_lists_names():
    src = real_trace(*PAPER)
    proc = run_cli("analyze", str(src), "--range", "iteration")
    assert proc.returncode == 2 and "'forward'" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("fmt", ["table", "csv", "md"])
def test_other_formats_render(fmt, tmp_path):
    src = real_trace(*PAPER)
    out = tmp_path / f"out.{fmt}"
    assert main(["analyze", str(src), "--format", fmt, "-o", str(out), "--skip", "1"]) == 0
    text = out.read_text()
    if fmt == "csv":
        assert (
            text.splitlines()[0].startswith("index,start_ns,end_ns,window_start_ns,window_end_ns,latency_ms")
            and len(text.splitlines()) == 10
        )
    else:
        assert "forward" in text and "latency" in text


def _real_files() -> list[Path]:
    if not REAL_TRACES.is_dir():
        return []
    files = sorted(REAL_TRACES.glob("nsys/*.sqlite")) + sorted(REAL_TRACES.glob("paper/*.sqlite"))
    files += sorted(REAL_TRACES.glob("kineto/*.json.gz")) + sorted(REAL_TRACES.glob("paper/kineto/*.json"))
    return files


@pytest.mark.real_traces
@pytest.mark.parametrize("path", _real_files(), ids=lambda p: p.name)
def test_every_real_trace_agrees_with_the_reference(path, tmp_path):
    """Each real trace analyzes without error, and per-iteration numbers equal an independent computation."""
    copy = tmp_path / path.name
    shutil.copyfile(path, copy)
    trace = read_trace(copy)
    analysis = analyze_iterations(trace)
    assert analysis.iterations.height > 0
    ref = reference_iterations(trace, analysis.range_name)
    if any(w.startswith("left out the last step") for w in analysis.warnings):
        ref = ref[:-1]  # the step torch.profiler stopped in (the real MI250 trace's 49 µs ProfilerStep#2)
    got = analysis.iterations
    assert got.height == len(ref)
    assert got["latency_ms"].to_list() == pytest.approx([r.latency_ns / 1e6 for r in ref])
    if not trace.ops.is_empty():
        assert got["gpu_busy_ms"].to_list() == pytest.approx([r.busy_ns / 1e6 for r in ref])
        assert got["idle_gaps"].to_list() == [len(r.gaps) for r in ref]
        assert got["kernels"].to_list() == [r.kernels for r in ref]
    if not trace.api.is_empty():
        assert got["launches"].to_list() == [r.launches for r in ref]


def _program_env_at_exit(
    variable: str, argv: list[str], env: dict[str, str | None], cwd: Path | None = None
) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run the ``tracekit`` program (cli.entry) with ``argv`` in a fresh interpreter whose environment is
    this one's with ``env`` applied (None: removed); returns the run and the value ``variable`` had when
    the program exited (``-`` when unset), read by an exit handler."""
    import os

    code = (
        "import atexit, os, sys\n"
        f"atexit.register(lambda: print('AT_EXIT=' + os.environ.get({variable!r}, '-'), file=sys.stderr))\n"
        "import tracekit.cli as c\n"
        f"sys.argv = ['tracekit', *{argv!r}]\n"
        "c.entry()\n"
    )
    environment = {k: v for k, v in os.environ.items() if k not in env}
    environment.update({k: v for k, v in env.items() if v is not None})
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=environment, cwd=cwd
    )
    return run, run.stderr.strip().splitlines()[-1].removeprefix("AT_EXIT=")


def test_program_exit_runs_exit_handlers_flushes_output_and_tunes_the_allocator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ``tracekit`` program (cli.entry) leaves without the interpreter's teardown, but only after the
    exit handlers ran and stdout was flushed: its piped output is main()'s, whole, with its exit code; it
    sets polars' allocator to hand memory back (unless the user set it)."""
    sample = "sample_traces/synthetic/table3_onnx/onnx_b1_s128.synthetic.json.gz"
    assert main(["analyze", sample, "--format", "json"]) == 0
    expected = capsys.readouterr().out
    run, conf = _program_env_at_exit(
        "_RJEM_MALLOC_CONF", ["analyze", sample, "--format", "json"], {"_RJEM_MALLOC_CONF": None}
    )
    assert run.returncode == 0 and run.stdout == expected
    # polars puts its defaults first; later settings win (jemalloc's rule)
    assert conf.endswith(",dirty_decay_ms:200,muzzy_decay_ms:0")
    env = {k: v for k, v in __import__("os").environ.items() if k != "_RJEM_MALLOC_CONF"}
    bad = subprocess.run(
        [sys.executable, "-m", "tracekit.cli", "analyze", str(tmp_path / "missing.json")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "_RJEM_MALLOC_CONF": "narenas:1"},
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "missing.json" in bad.stderr


@pytest.mark.parametrize(
    ("argv", "preset", "expected"),
    [
        (["analyze", "missing.json"], None, "1"),
        (["analyze", "missing.json"], "4", "4"),
        (["compare", "missing.json", "missing.json"], None, "1"),
        (["doctor"], None, None),
    ],
)
def test_analysis_commands_keep_numpy_blas_to_one_thread(
    argv: list[str], preset: str | None, expected: str | None, tmp_path: Path
) -> None:
    """Commands that only analyze set OPENBLAS_NUM_THREADS=1 before numpy is imported (its BLAS is never
    called; its threads would double the import's CPU time), unless the user set it; other commands leave
    it alone."""
    _, blas = _program_env_at_exit(
        "OPENBLAS_NUM_THREADS", argv, {"OPENBLAS_NUM_THREADS": preset}, cwd=tmp_path
    )
    assert blas == (expected or "-")


@pytest.mark.parametrize(
    ("trace", "workers", "user_conf", "expected"),
    [
        ("sample_traces/synthetic/table3_onnx/onnx_b1_s128.synthetic.json.gz", "1", None, "huge"),
        ("sample_traces/synthetic/table3_onnx/onnx_b1_s128.synthetic.json.gz", "0", None, "plain"),
        # an SQLite export up to readers.HUGE_PAGES_MAX_SQLITE_BYTES gets them too (issue 27: fewer faults)
        ("sample_traces/synthetic/table3_onnx/onnx_b1_s128.synthetic.sqlite", "1", None, "huge"),
        ("sample_traces/synthetic/table3_onnx/onnx_b1_s128.synthetic.json.gz", "1", "narenas:1", "user"),
    ],
)
def test_huge_pages_only_for_kineto_files_decoded_by_workers(
    trace: str, workers: str, user_conf: str | None, expected: str
) -> None:
    """polars' allocator is asked for transparent huge pages when analyze decodes a Kineto file in worker
    processes (frames built batch by batch) or reads an SQLite export that is not huge, not for in-process
    decoding, and never over the user's own allocator setting; the output is the same either way."""
    from tracekit.readers.memory import ALLOCATOR_CONF, HUGE_PAGES_CONF

    run, conf = _program_env_at_exit(
        "_RJEM_MALLOC_CONF",
        ["analyze", trace, "--format", "json"],
        {"_RJEM_MALLOC_CONF": user_conf, "TRACEKIT_DECODE_WORKER": workers},
    )
    assert run.returncode == 0, run.stderr
    want = {
        "huge": ALLOCATOR_CONF + HUGE_PAGES_CONF,
        "plain": ALLOCATOR_CONF,
        "user": user_conf,
    }[expected]
    assert conf.endswith(f",{want}")  # polars puts its own defaults first (later settings win)
    assert json.loads(run.stdout)["iterations"]


def test_numpy_prefetch_loads_the_numpy_modules_polars_needs() -> None:
    # polars loads numpy.ma the first time it makes a series of a numpy array (~20 ms of module code, at
    # the end of every analysis), so the prefetch thread that imports numpy while the trace is read takes
    # numpy.ma too; if polars stops needing it, the first run says so and the prefetch can shrink
    needs = (
        "import sys, numpy, polars\n"
        "before = 'numpy.ma' in sys.modules\n"
        "polars.Series(numpy.arange(3))\n"
        "print(before, 'numpy.ma' in sys.modules)\n"
    )
    prefetch = (
        "import sys, threading\n"
        "from tracekit.readers.memory import warm_numpy\n"
        "before = 'numpy' in sys.modules\n"
        "warm_numpy()\n"
        "[t.join() for t in threading.enumerate() if t.name == 'prefetch-numpy']\n"
        "print(before, 'numpy.ma' in sys.modules)\n"
    )
    for code in (needs, prefetch):
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        assert run.stdout.split() == ["False", "True"]


#: a small hand-made (synthetic) Kineto trace: two iterations of one kernel each, with their launches
def _kineto_events(ts0: float = 10.0) -> list[dict]:
    events = []
    for i in range(2):
        t = ts0 + 100.0 * i
        events += [
            {"ph": "X", "cat": "user_annotation", "name": "iteration", "ts": t, "dur": 50.0, "pid": 1, "tid": 1},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": t + 1, "dur": 4.0, "pid": 1,
             "tid": 1, "args": {"correlation": i + 1}},
            {"ph": "X", "cat": "kernel", "name": "k", "ts": t + 10, "dur": 20.0, "pid": 0, "tid": 7,
             "args": {"correlation": i + 1, "device": 0, "stream": 7}},
        ]  # fmt: skip
    return events


def _analysis(path: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    """analyze --format json of ``path``, without its ``trace`` object (which names the file)."""
    assert main(["analyze", str(path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    doc.pop("trace")
    return doc


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_utf16_and_utf32_json_traces_analyze_as_their_utf8_text(tmp_path, capsys, encoding):
    # JSON text in UTF-16/32 (e.g. saved by Windows PowerShell) is JSON as json.loads reads it: the format
    # detection read its first bytes as UTF-8 and rejected it as "not a trace"
    kineto = json.dumps({"traceEvents": _kineto_events()})
    ort = json.dumps(
        [
            {"cat": "Session", "name": "model_run", "ph": "X", "ts": 1, "dur": 10, "pid": 1, "tid": 1},
            {"cat": "Node", "name": "n_kernel_time", "ph": "X", "ts": 2, "dur": 3, "pid": 1, "tid": 1,
             "args": {"op_name": "MatMul", "provider": "CPUExecutionProvider"}},
        ]
    )  # fmt: skip
    for text in (kineto, ort):
        utf8 = tmp_path / "utf8.json"
        utf8.write_text(text, encoding="utf-8")
        other = tmp_path / "other.json"
        other.write_bytes(text.encode(encoding))
        expected = _analysis(utf8, capsys)
        assert expected["iterations"]
        assert _analysis(other, capsys) == expected


@pytest.mark.parametrize("where", ["event", "args", "header", "tail", "bare array"])
def test_values_nested_too_deeply_give_one_line(tmp_path, where):
    # msgspec (like json.loads) raises RecursionError past its depth limit: that is bad input, not a bug
    deep = "[" * 100_000 + "]" * 100_000
    event = json.dumps(_kineto_events()[0])
    text = {
        "event": f'{{"traceEvents": [{event}, {deep}]}}',
        "args": f'{{"traceEvents": [{event[:-1]}, "args": {{"a": {deep}}}}}]}}',
        "header": f'{{"x": {deep}, "traceEvents": [{event}]}}',
        "tail": f'{{"traceEvents": [{event}], "y": {deep}}}',
        "bare array": f"[{event}, {deep}]",
    }[where]
    bad = tmp_path / "deep.json"
    bad.write_text(text)
    assert_one_line_error(run_cli("analyze", str(bad)), str(bad), "nested too deeply")


def test_negative_durations_are_ignored_with_a_warning(tmp_path, capsys):
    # Kineto before 2022 wrote dur = -ts for events whose end it missed (kineto#646): such a range, kernel or
    # call is no interval; the analysis goes on without it, and says so, instead of a negative latency (or, for
    # a range, a crash in the CUDA-graph projection line)
    events = _kineto_events()
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps({"traceEvents": events}))
    expected = _analysis(clean, capsys)
    broken = [
        {**events[0], "ts": 400.0, "dur": -400.0},  # a third iteration that ends at 0
        {**events[2], "ts": 500.0, "dur": -500.0, "args": {"correlation": 9, "device": 0, "stream": 7}},
        {**events[1], "ts": 600.0, "dur": -1.0, "args": {"correlation": 9}},
    ]
    path = tmp_path / "negative.json"
    path.write_text(json.dumps({"traceEvents": events + broken}))
    doc = _analysis(path, capsys)
    warnings = doc.pop("warnings")
    # the identification's evidence counts the launch calls as recorded (3 here, the broken one too)
    doc["config"].pop("evidence"), expected["config"].pop("evidence")
    # (since ee7ed03 the kernel and the call with a lost end are kept, read as lasting 0 from their start: the
    # call still links the kernel, which lies after both iterations and is counted in none)
    unassigned = doc.pop("unassigned_ops")
    assert unassigned["outside_iterations"]["ops"] == 1 and unassigned["outside_iterations"]["after"] == 1
    expected.pop("unassigned_ops")
    assert doc == {k: v for k, v in expected.items() if k != "warnings"}
    for prefix in (
        "1 ranges with a negative duration",
        "1 API calls have a negative dur",
        "1 of 3 GPU ops",
    ):
        assert any(w.startswith(prefix) for w in warnings), (prefix, warnings)
    # the text output (the projection line included) renders
    assert main(["analyze", str(path)]) == 0
    assert "negative duration" in capsys.readouterr().out


def test_events_recorded_twice_count_once_with_a_warning(tmp_path, capsys):
    # a kernel and a launch call written twice (every field equal, the correlation id included): one launch,
    # one kernel, not two of each in the iteration's counts; said so. Two kernels equal but for a missing
    # correlation id may be two short kernels of one name on a microsecond clock: both kept
    events = _kineto_events()
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps({"traceEvents": events}))
    expected = _analysis(clean, capsys)
    path = tmp_path / "twice.json"
    path.write_text(json.dumps({"traceEvents": [*events, events[2], events[1]]}))
    doc = _analysis(path, capsys)
    warnings = doc.pop("warnings")
    doc["config"].pop("evidence"), expected["config"].pop("evidence")
    assert doc == {k: v for k, v in expected.items() if k != "warnings"}
    for what in ("1 device ops", "1 API calls"):
        assert (
            f"{what} recorded twice (a second event equal to the first in every field, its correlation id "
            "included) counted once"
        ) in warnings
    no_id = {**events[2], "args": {"device": 0, "stream": 7}}
    path.write_text(json.dumps({"traceEvents": [*events, no_id, no_id]}))
    doc = _analysis(path, capsys)
    assert not any("recorded twice" in w for w in doc["warnings"])
    assert any(w.startswith("2 of 4 GPU ops have no runtime/driver call") for w in doc["warnings"])


@pytest.mark.real_traces
def test_an_emit_nvtx_cut_is_one_window_not_its_operators():
    """nsys-ai's 1-second cut of a FastVideo run on 2 H100s (both ~99% busy, MANIFEST): its ranges are
    PyTorch ``emit_nvtx`` operator ranges, the enclosing ones lost by the cut. Taking its 616 ``aten::mul``
    ranges as iterations said "framework-bound, 0.0%"; the trace is analyzed as one window instead."""
    path = real_trace("nsys", "nsysai_h100_2gpu_1s_fastvideo_2026.2.sqlite")
    proc = run_cli("analyze", str(path))
    assert proc.returncode == 0, proc.stderr
    out = " ".join(proc.stdout.split())  # the table wraps lines
    assert "iterations: 1 range named 'window' (no iteration ranges: passed over PyTorch operator and" in out
    assert "'aten::mul' (616 ranges)" in out
    assert "verdict: compute-bound — median GPU utilization 99.8%" in out


@pytest.mark.real_traces
def test_a_ddp_trace_without_profiler_steps_is_not_cut_at_its_all_reduces(tmp_path):
    """HTA's DDP rank trace with its ``ProfilerStep#N`` annotations taken out (a capture without
    ``profiler.step()``): its 15 top-level ``nccl:all_reduce`` ranges (on the autograd thread) outnumber
    every other name, and were taken as the iterations; each is one collective call."""
    from tracekit.analyzers.ranges import select_ranges

    source = real_trace("kineto", "hta_a100_ddp_nccl_rank0.json.gz")
    doc = json.loads(gzip.decompress(source.read_bytes()))
    doc["traceEvents"] = [
        e for e in doc["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")
    ]
    path = tmp_path / "ddp_rank0_no_steps.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    choice = select_ranges(read_trace(path))
    assert choice.name == "## backward ##"
    assert (
        "passed over PyTorch operator and collective ranges (one call each, no iteration): "
        "'nccl:all_reduce' (15 ranges)" in choice.how
    )


@pytest.mark.real_traces
def test_one_range_around_the_studys_forwards_names_them(tmp_path):
    """The study's own nsys trace (10 top-level ``forward`` ranges) with one more NVTX range pushed around all
    of them on the same thread, as a benchmark script wraps its timed loop: the one range stays the default
    choice (a range around its layers would look the same), the choice line names the forwards, and the
    ``--range`` it gives takes them, with the same numbers as the trace without the wrapper."""
    source = real_trace("paper", "framework_tax_bert_fp16_bs1_cudagraphs_rtx8000.sqlite")
    wrapped = tmp_path / "wrapped.sqlite"
    shutil.copyfile(source, wrapped)
    with sqlite3.connect(wrapped) as db:
        db.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
            "SELECT min(start) - 1000, max(end) + 1000, 59, 'benchmark', globalTid, 0 FROM NVTX_EVENTS "
            "WHERE eventType = 59 AND text = 'forward' GROUP BY globalTid"
        )
    default = analyze_iterations(read_trace(wrapped))
    assert (default.range_name, default.range_choice) == (
        "benchmark",
        "most frequent top-level range (1 of them); inside it 'forward' repeats 10 times (--range forward "
        "takes those as the iterations); choose another with --range",
    )
    before = analyze_iterations(read_trace(source))
    assert analyze_iterations(read_trace(wrapped), "forward").iterations.equals(before.iterations)


def test_ctrl_c_before_mains_handler_is_one_line() -> None:
    """Ctrl-C while the program still imports and builds its parser (before main's own handler; a terminal's
    Ctrl-C a quarter of a second after starting): 'tracekit: interrupted', exit 130, no traceback (it had been
    KeyboardInterrupt's traceback through dataclasses and pathlib, exit -2)."""
    code = (
        "import tracekit.cli as c\n"
        "def interrupted(argv):\n"
        "    raise KeyboardInterrupt\n"
        "c.build_parser = interrupted\n"
        "c.entry()\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (run.returncode, run.stdout, run.stderr) == (130, "", "tracekit: interrupted\n")
