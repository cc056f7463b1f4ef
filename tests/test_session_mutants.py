"""The analysis session (tracekit.session): the cases the sampled mutation run of issue 33 (2026-11-26,
``python benchmarks/mutation.py session --sample 200``) found unchecked, one test per behaviour.

Fast on purpose (no Dask, no large traces): hand-built traces (synthetic, not measurements) and the small
committed synthetic sample ``pytorch_b1_s128.synthetic.sqlite`` (a simulated Nsight Systems export). Each test
asserts what a caller of the session sees: the options, what is read, the configuration, the progress row, the
one-line errors and warnings of the bad-input policy.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import os
import re
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from tests.builders import make_trace, two_gpu_launches
from tests.conftest import SAMPLE_TRACES
from tracekit import progress
from tracekit.errors import TracekitError
from tracekit.inputs import TraceInput, resolve_input
from tracekit.session import (
    EVERYTHING,
    AnalysisOptions,
    analyze_input,
    analyze_trace,
    for_each_input,
    frames_for,
)

#: a small simulated (synthetic) Nsight Systems export: 10 iterations of 400 kernels, with a GPU-metrics table
SAMPLE = SAMPLE_TRACES / "synthetic" / "table3_pytorch" / "pytorch_b1_s128.synthetic.sqlite"
#: the keys of one GPU's row of a multi-GPU trace (tracekit.analyzers.devices.per_device_rows)
ROW_KEYS = (
    "device",
    "iterations",
    "latency_ms",
    "gpu_busy_ms",
    "framework_overhead_ms",
    "gpu_utilization",
    "bound",
    "verdict_uncertain",
)
PIPE_WITH_CACHE = "--cache needs a trace file, not a pipe or standard input"


def _copy_alone(tmp_path: Path) -> Path:
    """The sample copied without its sidecar ``.meta.json``: a trace whose run states nothing."""
    path = tmp_path / "alone.sqlite"
    shutil.copy(SAMPLE, path)
    return path


# ------------------------------------------------------------------------------------------- options


def test_options_of_a_command_line_without_split_idle_or_threshold_take_their_defaults():
    """from_args: an option the parsed command line does not have (``table`` has no --bound-threshold; a
    caller's own parser may have no --split-idle) takes its default instead of failing."""
    args = argparse.Namespace(range_name="iteration", skip=2)
    assert AnalysisOptions.from_args(args) == AnalysisOptions(range_name="iteration", skip=2)


def test_the_edges_of_skip_and_bound_threshold_are_accepted():
    """--skip 0 (analyze every iteration) and --bound-threshold 1 (framework-bound below 100% utilization) are
    in range; one step beyond each is refused with one line naming the option."""
    assert AnalysisOptions.from_kwargs(skip=0).skip == 0
    assert AnalysisOptions.from_kwargs(bound_threshold=1.0).bound_threshold == 1.0
    with pytest.raises(TracekitError, match=r"^skip must be >= 0$"):
        AnalysisOptions.from_kwargs(skip=-1)
    with pytest.raises(TracekitError, match=r"^--bound-threshold must be in \(0, 1\]$"):
        AnalysisOptions.from_args(argparse.Namespace(range_name=None, skip=None, bound_threshold=1.000001))


# ------------------------------------------------------------------------------------------- frames_for


def test_frames_for_a_run_that_states_its_identity_is_what_the_metrics_need():
    from tracekit.analyzers.iterations import FRAMES_NEEDED

    item = TraceInput(path=Path("x.sqlite"), runtime="pytorch", batch_size=1, seq_len=128, precision="fp16")
    assert frames_for(item) == FRAMES_NEEDED


def test_frames_for_adds_what_identification_reads_column_by_column(monkeypatch):
    """The merge rule of frames_for, on tables that hold every case (the real ones hold only two of them): a
    frame either side reads whole is read whole; otherwise the columns of both, the metrics' first, once."""
    from tracekit.analyzers import identify, iterations

    needed = {"a": ("x", "y"), "b": None, "c": ("x",)}
    read = {"a": ("y", "z"), "b": ("q",), "c": None, "d": ("w",), "e": None}
    monkeypatch.setattr(iterations, "FRAMES_NEEDED", needed)
    monkeypatch.setattr(identify, "FRAMES_READ", read)
    assert frames_for(TraceInput(path=Path("x.sqlite"))) == {
        "a": ("x", "y", "z"),
        "b": None,
        "c": None,
        "d": ("w",),
        "e": None,
    }
    assert frames_for(
        TraceInput(path=Path("x.sqlite"), runtime="r", batch_size=1, seq_len=1, precision="p")
    ) == (needed)


def test_the_default_read_is_narrowed_to_the_columns_the_analysis_needs(tmp_path):
    """analyze_input reads only frames_for's columns by default (the Nsight Systems reader skips the rest: the
    kind of each API call and the GPU-metrics table stay empty), the kernel names included when the run does
    not state its identity (identification reads them) and the streams (the plausibility checks read them);
    ``frames=EVERYTHING`` reads it all. Same numbers."""
    item = resolve_input(_copy_alone(tmp_path))
    narrow = analyze_input(item)
    ops, api = narrow.source.trace.ops, narrow.source.trace.api
    assert ops.height == 4000
    assert api["kind"].null_count() == api.height == 4010  # not needed: not read
    assert ops["name"].null_count() == 0  # identification needs the kernel names
    assert ops["stream"].null_count() == 0  # the same-stream overlap check needs the streams
    assert narrow.source.trace.gpu_metrics.height == 0
    whole = analyze_input(item, frames=EVERYTHING)
    assert whole.source.trace.api["kind"].null_count() == 0
    assert whole.source.trace.gpu_metrics.height > 0
    assert narrow.iterations.equals(whole.iterations)


# ------------------------------------------------------------------------------------------- --cache


def test_the_cached_read_is_the_same_narrow_read_and_gives_the_same_analysis(tmp_path):
    """analyze_input(cache_dir=...): the first call reads (the same columns as without a cache) and stores one
    entry; the second is served from it; both give the analysis of the plain read."""
    item = resolve_input(_copy_alone(tmp_path))
    cache = tmp_path / "cache"
    plain = analyze_input(item)
    first = analyze_input(item, cache_dir=cache)
    assert first.source.trace.api["kind"].null_count() == first.source.trace.api.height
    assert first.source.trace.ops["name"].null_count() == 0
    assert len([p for p in cache.iterdir() if p.is_dir()]) == 1
    second = analyze_input(item, cache_dir=cache)
    for got in (first, second):
        assert got.iterations.equals(plain.iterations)
        assert got.config == plain.config
        assert got.trace == plain.trace


@pytest.mark.parametrize("cached", [False, True], ids=["read", "cache"])
def test_the_sidecar_the_input_carries_is_the_one_merged_into_the_trace(tmp_path, cached):
    """The sidecar is read once, when the input is resolved (TraceInput.sidecar); the read merges that one
    into the trace's meta, not whatever lies beside the file. Here it says the trace holds 2 warm-up runs as
    iterations (as ONNX Runtime profiles do): 2 of the 10 iterations are dropped by default."""
    item = resolve_input(_copy_alone(tmp_path))
    stated = {"warmup_in_trace": True, "warmup_iterations": 2, "iterations": 8, "model": "stated-model"}
    item = dataclasses.replace(item, sidecar=stated)
    a = analyze_input(item, cache_dir=tmp_path / "cache" if cached else None)
    assert a.skipped == 2
    assert a.iterations.height == 8
    assert a.config.model == "stated-model"


@pytest.mark.parametrize("cached", [False, True], ids=["read", "cache"])
def test_the_format_is_detected_once_when_the_input_is_resolved(tmp_path, monkeypatch, cached):
    """TraceInput carries the format detected when it was resolved; the read uses it instead of detecting it
    again (a second detection would read the file's head again, and a pipe's twice)."""
    from tracekit import readers

    item = resolve_input(_copy_alone(tmp_path))
    assert item.format == "nsys-sqlite"

    def detect_again(path, *args, **kwargs):
        raise AssertionError(f"format detected again for {path}")

    monkeypatch.setattr(readers, "detect_format", detect_again)
    a = analyze_input(item, cache_dir=tmp_path / "cache" if cached else None)
    assert a.iterations.height == 10


@pytest.mark.skipif(not Path("/dev/fd").is_dir(), reason="no /dev/fd to name a pipe by")
def test_cache_refuses_a_pipe_with_one_line_naming_it(tmp_path):
    """--cache needs a file: a pipe (here /dev/fd/N of an anonymous pipe) is refused before anything is read
    from it, with one line naming it."""
    read_end, write_end = os.pipe()
    os.write(write_end, b'{"traceEvents": []}')
    os.close(write_end)
    path = Path(f"/dev/fd/{read_end}")
    try:
        with pytest.raises(TracekitError) as caught:
            analyze_input(TraceInput(path=path, format="kineto"), cache_dir=tmp_path / "cache")
        assert str(caught.value) == f"{path}: {PIPE_WITH_CACHE}"
        assert caught.value.path == str(path)
        assert os.read(read_end, 100) == b'{"traceEvents": []}'  # nothing consumed
    finally:
        os.close(read_end)
    assert not (tmp_path / "cache").exists()


# ------------------------------------------------------------------------------------------- analyze_trace


def _two_iterations(meta: dict) -> object:
    """A hand-built (synthetic) trace: two 'iteration' ranges of 1000 ns, one 500 ns kernel in the first and a
    400 ns one in the second, each launched by a cudaLaunchKernel."""
    return make_trace(
        ranges=[(0, 1000, "iteration"), (1000, 2000, "iteration")],
        api=[(10, 20, 1, "cudaLaunchKernel"), (1010, 1020, 2, "cudaLaunchKernel")],
        ops=[(100, 600, 1, 7), (1100, 1500, 2, 7)],
        meta=meta,
    )


def _shown(run) -> str:
    """What the progress display showed while ``run()`` ran (on a fake terminal, escapes removed)."""
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=200, color_system=None)
    with progress.display(console):
        run()
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", buffer.getvalue())


def test_a_trace_analyzed_without_its_input_is_named_by_its_own_path():
    """analyze_trace(trace) with no input: the configuration's path, and the progress row, are the trace's
    meta path (its file name in the row)."""
    trace = _two_iterations({"path": "/runs/x/session_synthetic.json"})
    out: list = []
    text = _shown(lambda: out.append(analyze_trace(trace)))
    a = out[0]
    assert a.config.path == Path("/runs/x/session_synthetic.json")
    assert a.source.input == TraceInput(path=Path("/runs/x/session_synthetic.json"))
    assert "analyzing session_synthetic.json" in text
    assert a.summary.mean("gpu_utilization") == pytest.approx(0.45)  # (500 + 400) / 2000 ns


def test_a_trace_without_a_path_is_called_trace():
    trace = _two_iterations({"format": "kineto"})
    out: list = []
    text = _shown(lambda: out.append(analyze_trace(trace)))
    assert out[0].config.path == Path("trace")
    assert out[0].config.label == "trace"
    assert "analyzing trace" in text


def test_split_idle_applies_to_each_gpu_of_a_multi_gpu_trace():
    """--split-idle cuts each GPU's rows of a multi-GPU trace too, not only the whole trace's. Hand-built
    (synthetic): GPUs 0 and 1 (processes 1 and 2) each run three 100 us kernels 2 ms apart, each launched
    5 us before it starts (a 1 us launch call); at 1 ms each GPU has 3 iterations of 105 us, 100 us busy."""
    trace = two_gpu_launches([10_000, 2_010_000, 4_010_000])
    a = analyze_trace(trace, options=AnalysisOptions(split_idle_ms=1.0))
    assert a.iterations.height == 3
    assert [row["device"] for row in a.per_device] == [0, 1]
    for row in a.per_device:
        assert row["iterations"] == 3
        assert row["latency_ms"] == pytest.approx(0.105)
        assert row["gpu_busy_ms"] == pytest.approx(0.100)
        assert row["gpu_utilization"] == pytest.approx(100 / 105)
        assert row["bound"] == "compute"


def test_per_gpu_rows_of_a_trace_without_a_timeline_have_no_verdict():
    """An Nsight Compute report (no timeline) of two GPUs: no verdict for the trace, and each GPU's row says
    ``bound: None`` with the same keys as any row (no other key added). Hand-built (synthetic) rows."""
    ops = [(i * 1_000, i * 1_000 + 500, None, 7, "kernel", device) for device in (0, 1) for i in range(3)]
    trace = make_trace(
        ops=ops,
        meta={"path": "two_gpus.synthetic.ncu.csv", "format": "ncu-csv", "timeline": False},
        op_fields=("start", "end", "correlation", "stream", "kind", "device"),
    )
    a = analyze_trace(trace)
    assert a.no_verdict is not None and a.summary.bound is None
    assert [sorted(row) for row in a.per_device] == [sorted(ROW_KEYS)] * 2
    assert [(row["device"], row["bound"], row["gpu_busy_ms"]) for row in a.per_device] == [
        (0, None, pytest.approx(0.0015)),
        (1, None, pytest.approx(0.0015)),
    ]
    assert [row["verdict_uncertain"] for row in a.per_device] == [None, None]


# ------------------------------------------------------------------------------------------- for_each_input


def _step(item: str) -> str:
    """A step that fails, as a reader does, on the items named bad*."""
    if item.startswith("bad"):
        raise TracekitError("not a trace tracekit can read", item)
    return item.upper()


def test_a_bad_input_among_several_is_left_out_with_one_warning():
    assert for_each_input(["a", "bad1", "b"], _step) == (
        ["A", "B"],
        ["left out: bad1: not a trace tracekit can read"],
    )


def test_a_bad_input_alone_is_the_error_itself():
    with pytest.raises(TracekitError) as caught:
        for_each_input(["bad1"], _step)
    assert str(caught.value) == "bad1: not a trace tracekit can read"


def test_when_every_input_fails_the_error_lists_each():
    with pytest.raises(TracekitError) as caught:
        for_each_input(["bad1", "bad2"], _step)
    assert str(caught.value) == (
        "none of the 2 inputs could be analyzed: bad1: not a trace tracekit can read; "
        "bad2: not a trace tracekit can read"
    )


def test_no_inputs_is_no_results_and_no_error():
    assert for_each_input([], _step) == ([], [])


def test_real_analysis_of_several_inputs_one_empty_file(tmp_path):
    """for_each_input over analyze_input, as the commands use it: an empty file among two inputs is left out
    with the reader's one line, the sample is analyzed."""
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    results, warnings = for_each_input([SAMPLE, empty], analyze_input)
    assert [r.iterations.height for r in results] == [10]
    assert warnings == [f"left out: {empty}: empty file"]
