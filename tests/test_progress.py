"""Progress display: shown on a terminal only, nothing (not even a rich import) when output is piped."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from tests.conftest import SAMPLE_TRACES
from tracekit import progress
from tracekit.readers import read_trace

GPU_TRACE = SAMPLE_TRACES / "synthetic" / "table3_pytorch" / "pytorch_b1_s128.synthetic.sqlite"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def fake_terminal() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, force_terminal=True, width=200, color_system=None), buffer


def shown_text(buffer: io.StringIO) -> str:
    return ANSI.sub("", buffer.getvalue())


def run_cli(args: list[str], env_extra: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k != progress.DISABLE_ENV} | env_extra
    return subprocess.run(
        [sys.executable, "-c", "import sys; from tracekit.cli import main; sys.exit(main())", *args],
        capture_output=True,
        env=env,
        cwd=cwd,
        check=False,
    )


def test_piped_output_is_byte_identical_with_and_without_progress(tmp_path):
    """stdout and stderr are pipes here: the display never appears, so output does not depend on it."""
    args = ["analyze", str(GPU_TRACE), "--format", "json"]
    plain = run_cli(args, {}, tmp_path)
    disabled = run_cli(args, {progress.DISABLE_ENV: "1"}, tmp_path)
    assert plain.returncode == disabled.returncode == 0
    assert plain.stdout == disabled.stdout
    assert plain.stderr == disabled.stderr
    assert b"reading" not in plain.stderr
    assert plain.stdout.lstrip().startswith(b"{")


def test_nothing_shown_and_rich_not_imported_when_not_a_terminal(tmp_path):
    code = (
        "import sys\n"
        "from tracekit import progress\n"
        "from tracekit.readers import read_trace\n"
        f"read_trace({str(GPU_TRACE)!r})\n"
        "with progress.task('simulating', total=10) as t:\n"
        "    t.advance(5); t('half', 0.5)\n"
        "progress.report('anything', 0.1)\n"
        "print(progress.enabled(), progress.active(), any(m.split('.')[0] == 'rich' for m in sys.modules))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != progress.DISABLE_ENV}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=env, cwd=tmp_path, check=True
    )
    assert done.stdout == b"False False False\n"
    assert done.stderr == b""


def test_enabled_only_on_a_terminal_and_without_the_opt_out(monkeypatch):
    monkeypatch.delenv(progress.DISABLE_ENV, raising=False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # isatty() is False
    assert not progress.enabled()

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", Tty())
    assert progress.enabled()
    monkeypatch.setenv(progress.DISABLE_ENV, "1")
    assert not progress.enabled()
    with progress.task("reading") as task:
        assert task is progress.NULL_TASK and not progress.active()
    assert sys.stderr.getvalue() == ""
    monkeypatch.setenv(progress.DISABLE_ENV, "")  # empty: not set
    assert progress.enabled()


def test_reading_an_nsys_export_shows_each_table_with_its_rows():
    console, buffer = fake_terminal()
    with progress.display(console) as shown:
        assert shown and progress.active()
        trace = read_trace(GPU_TRACE)
    assert not progress.active()
    text = shown_text(buffer)
    assert f"reading {GPU_TRACE.name}" in text
    kernels = trace.ops.filter(trace.ops["kind"] == "kernel").height
    assert f"KERNEL ({kernels:,} rows)" in text
    for table in ("StringIds", "RUNTIME", "NVTX_EVENTS", "GPU_METRICS"):
        assert table in text
    assert "100% normalizing" in text


def test_same_frames_with_and_without_a_display():
    console, _ = fake_terminal()
    with progress.display(console):
        shown = read_trace(GPU_TRACE)
    hidden = read_trace(GPU_TRACE)
    for name in ("ops", "api", "ranges", "gpu_metrics"):
        assert getattr(shown, name).equals(getattr(hidden, name)), name
    assert shown.meta == hidden.meta


def test_callback_and_chunk_reports_reach_the_innermost_task():
    console, buffer = fake_terminal()
    with progress.display(console):
        with progress.task("simulating pytorch", total=1000) as sim:
            sim.advance(250)
            sim.update(stage="chunk 1 of 4")
            with progress.task("decoding events") as inner:
                progress.report("traceEvents", 0.5)  # the callback form goes to the innermost task
                inner("traceEvents", 0.75)
            progress.report("chunk 2 of 4", 0.5)  # the inner task is gone: back to the outer one
    text = shown_text(buffer)
    assert re.search(r"simulating pytorch .* 25% chunk 1 of 4", text)
    assert re.search(r"decoding events .* 50% traceEvents", text)
    assert re.search(r"decoding events .* 75% traceEvents", text)
    assert re.search(r"simulating pytorch .* 50% chunk 2 of 4", text)


def test_tasks_without_a_display_are_free_no_ops(monkeypatch):
    monkeypatch.setenv(progress.DISABLE_ENV, "1")
    with progress.task("simulating", total=10) as task:
        assert task is progress.NULL_TASK and not task.shown
        task.advance(3)
        task.update(completed=5, stage="x")
        task("stage", 0.5)
        progress.report("stage", None)


@pytest.mark.parametrize("fraction", [-1.0, 0.0, 0.3, 1.0, 7.0])
def test_fractions_are_clamped_to_the_bar(fraction):
    console, buffer = fake_terminal()
    with progress.display(console), progress.task("work"):
        progress.report("step", fraction)
    expected = round(100 * min(1.0, max(0.0, fraction)))
    assert re.search(rf"work .*\b{expected}% step", shown_text(buffer))


def test_a_reader_that_takes_a_progress_callback_gets_it_only_when_shown(monkeypatch):
    """How the Kineto/ORT readers plug in: ``read(path, progress=None)`` receives ``report`` on a display."""
    from tracekit.readers import ort

    trace_path = SAMPLE_TRACES / "cpu_onnx_bert_ort" / "onnx_b1_s128.ort.json.gz"
    received = []
    original = ort.read

    def read_with_progress(path, progress=None):
        received.append(progress)
        if progress is not None:
            progress("model_run events", 0.4)
        return original(path)

    monkeypatch.setattr(ort, "read", read_with_progress)
    monkeypatch.setenv(progress.DISABLE_ENV, "1")
    read_trace(trace_path)
    monkeypatch.delenv(progress.DISABLE_ENV)
    console, buffer = fake_terminal()
    with progress.display(console):
        read_trace(trace_path)
    assert received == [None, progress.report]
    assert re.search(rf"reading {re.escape(trace_path.name)} .* 40% model_run events", shown_text(buffer))


def test_simulate_and_analyze_show_their_rows(tmp_path):
    """simulate advances a bar per chunk of iterations; the session shows an 'analyzing' row."""
    from tracekit.session import analyze_input
    from tracekit.simulate import preset, simulate_sweep

    console, buffer = fake_terminal()
    with progress.display(console):
        simulate_sweep(tmp_path / "s", preset("pytorch", {"ops": 5}), [1], 128, 3, seed=0)
        analyze_input(tmp_path / "s" / "pytorch_b1_s128.synthetic.sqlite")
    text = shown_text(buffer)
    assert "simulating pytorch_b1_s128.synthetic" in text and "writing" in text
    assert "analyzing pytorch_b1_s128.synthetic.sqlite" in text
