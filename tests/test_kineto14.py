"""Kineto round 14: trace spellings of real profilers the reader had not met, rebuilt by hand.

Every trace here is hand-built (``tracekit_synthetic``, file names holding "synthetic"); times are in
microseconds in the JSON, and the expected numbers follow from them by hand. Sources are named per test
(libkineto's ``ActivityType`` names and ``output_json.cpp``; Cambricon's ``kineto_mlu`` fork).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import tracekit
from tests.builders import kineto_event
from tracekit.errors import TraceFormatError
from tracekit.readers.kineto import read

PID, TID, DEVICE, STREAM = 10, 11, 0, 7
STEPS = 3


def _write(tmp_path: Path, events: list[dict[str, Any]], name: str = "kineto14.synthetic.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"schemaVersion": 1, "tracekit_synthetic": True, "traceEvents": events}))
    return path


def _device(cat: str, name: str, ts: int, dur: int, corr: int) -> dict[str, Any]:
    return kineto_event(cat, name, ts, dur, DEVICE, STREAM, device=DEVICE, stream=STREAM, correlation=corr)


# --- Cambricon MLU (torch_mlu's kineto_mlu fork)


def _mlu_run(runtime: str = "mlu_runtime", memcpy: str = "mlu_memcpy") -> list[dict[str, Any]]:
    """A Cambricon MLU trace as torch_mlu's Kineto fork writes it (``third_party/kineto_mlu``:
    ``ActivityType.cpp`` names ``mlu_runtime``, ``mlu_memcpy``, ``mlu_memset``, and ``kernel`` for
    ``MLU_CONCURRENT_KERNEL``; ``CnperfActivity.cpp`` puts ``device``, ``stream`` and ``correlation`` in a
    device task's args, and the correlation in a runtime call's). Per 1000 µs step: ``cnInvokeKernel`` 20..30
    µs launches a 200 µs kernel at 50 µs; ``cnrtMemcpyAsync`` 260..270 µs makes a 100 µs copy at 300 µs. GPU
    busy 300 µs a step."""
    events: list[dict[str, Any]] = []
    for i in range(STEPS):
        t0 = 1000 * i
        k, c = 100 + 2 * i, 101 + 2 * i
        events += [
            kineto_event("user_annotation", f"ProfilerStep#{i}", t0, 1000, PID, TID),
            kineto_event("cpu_op", "aten::mm", t0 + 10, 100, PID, TID),
            kineto_event(runtime, "cnInvokeKernel", t0 + 20, 10, PID, TID, correlation=k),
            _device("kernel", "MLUUnion1KernelGemm", t0 + 50, 200, k),
            kineto_event(runtime, "cnrtMemcpyAsync", t0 + 260, 10, PID, TID, correlation=c),
            _device(memcpy, "Memcpy HtoD", t0 + 300, 100, c),
        ]
    return events


def test_an_mlu_trace_reads_its_copies_and_runtime_calls(tmp_path: Path) -> None:
    """Before: the ``mlu_memcpy`` events were dropped (GPU busy 200 µs a step instead of 300: a wrong number
    with no word) and the ``mlu_runtime`` calls too, so the analysis said the host side was not profiled."""
    path = _write(tmp_path, _mlu_run(), "mlu.synthetic.json")
    trace = read(path)
    assert trace.ops.get_column("kind").value_counts().sort("kind").rows() == [("kernel", 3), ("memcpy", 3)]
    assert trace.api.height == 6
    assert trace.api.get_column("kind").unique().to_list() == ["runtime"]
    # every device op is linked to its call (pid of the process, not the device)
    assert trace.ops.get_column("pid").to_list() == [PID] * 6
    assert not any("host side was not profiled" in w for w in trace.meta["warnings"])
    analysis = tracekit.analyze(path, skip=0)
    assert analysis.iterations.get_column("gpu_busy_ms").to_list() == pytest.approx([0.3] * STEPS, abs=1e-12)
    assert analysis.iterations.get_column("gpu_utilization").to_list() == pytest.approx([0.3] * STEPS)


def test_an_mlu_memset_is_a_memset(tmp_path: Path) -> None:
    """``mlu_memset`` (``MLU_MEMSET``): a device op of kind memset, 100 µs."""
    events = _mlu_run(memcpy="mlu_memset")
    trace = read(_write(tmp_path, events, "mlu_memset.synthetic.json"))
    memsets = trace.ops.filter(pl.col("kind") == "memset")
    assert memsets.height == STEPS
    assert (memsets["end"] - memsets["start"]).to_list() == [100_000] * STEPS


def test_an_mlu_trace_needs_no_word_on_its_launch_calls(tmp_path: Path) -> None:
    """cnInvokeKernel is a launch name of :data:`tracekit.model.LAUNCH_API_NAMES`: the reader's warning on
    kernels launched by calls it does not count ("3 of 3 kernels ...") is not given."""
    trace = read(_write(tmp_path, _mlu_run(), "mlu_launch.synthetic.json"))
    assert trace.ops.height and not any("cnInvokeKernel" in w for w in trace.meta["warnings"])


def test_an_mlu_kernel_launch_counts_as_a_launch(tmp_path: Path) -> None:
    analysis = tracekit.analyze(_write(tmp_path, _mlu_run(), "mlu_launches.synthetic.json"), skip=0)
    assert analysis.iterations.get_column("launches").to_list() == [1] * STEPS


def test_an_mlu_runtime_without_device_ops_is_still_refused(tmp_path: Path) -> None:
    """Read as a runtime now, ``mlu_runtime`` calls without a device op still say the device's work is not in
    the trace (as test_fuzz11's fork test has it), not a CPU run."""
    events = [e for e in _mlu_run() if e["cat"] not in ("kernel", "mlu_memcpy")]
    with pytest.raises(TraceFormatError, match="events of category 'mlu_runtime'"):
        read(_write(tmp_path, events, "mlu_no_device.synthetic.json"))


@pytest.mark.parametrize("category", ["musa_runtime", "npu_driver"])
def test_an_unread_runtime_category_beside_device_ops_is_said(tmp_path: Path, category: str) -> None:
    """A vendor fork's runtime category tracekit does not read, in a trace whose kernels it reads: the calls
    are left out of the launch figures and of the host's API time, and a warning now says so by category
    (before: nothing but 'the host side was not profiled', which was not true)."""
    events = _mlu_run(runtime=category, memcpy="kernel")
    trace = read(_write(tmp_path, events, "unread_runtime.synthetic.json"))
    assert trace.ops.height == 6
    assert any(f"'{category}'" in w and "launch counts" in w for w in trace.meta["warnings"])


@pytest.mark.parametrize("category", ["musa_memcpy", "npu_memset", "xyz_kernel"])
def test_an_unread_device_op_category_beside_device_ops_is_said(tmp_path: Path, category: str) -> None:
    """Device work of a category tracekit does not read, beside kernels it reads: its time is out of the GPU
    busy time, and a warning says so by category (before: no word, GPU busy 200 µs a step of 300)."""
    events = _mlu_run(runtime="cuda_runtime", memcpy=category)
    trace = read(_write(tmp_path, events, "unread_device_ops.synthetic.json"))
    assert trace.ops.height == 3
    assert any(f"'{category}'" in w and "GPU busy time" in w for w in trace.meta["warnings"])


# --- events torch.profiler could not place in time: "ts": 0.000, "dur": 0.000 (pytorch#188481)


def _zeroed_run(zeroed_from: int, steps: int = 6) -> str:
    """Steps of 1000 µs from 5 s on (current Kineto writes times relative to its base time); from step
    ``zeroed_from`` on, every event of the step reads ``"ts": 0.000, "dur": 0.000``, as in pytorch#188481
    (torch 2.12's export_chrome_trace: 'for the first half of the trace, all the events have valid
    timestamps. In the second half ... nearly all of them list "ts": 0.000 and "dur": 0.000'; libkineto's
    transToRelativeTime clamps a time before its base to 0, and kineto#646 names end times of 0). Each valid
    step: 900 µs, a 200 µs kernel."""
    events: list[dict[str, Any]] = []
    for i in range(steps):
        t0 = 5_000_000 + 1000 * i
        step = [
            kineto_event("user_annotation", f"ProfilerStep#{i}", t0, 900, PID, TID),
            kineto_event("cpu_op", "aten::mm", t0 + 10, 100, PID, TID),
            kineto_event("cuda_runtime", "cudaLaunchKernel", t0 + 20, 10, PID, TID, correlation=100 + i),
            _device("kernel", f"k{i}", t0 + 50, 200, 100 + i),
        ]
        if i >= zeroed_from:
            for event in step:
                event["ts"] = event["dur"] = "ZERO"
        events += step
    text = json.dumps({"schemaVersion": 1, "tracekit_synthetic": True, "traceEvents": events})
    return text.replace('"ZERO"', "0.000")


def test_events_without_a_time_are_left_out_and_said(tmp_path: Path) -> None:
    """Before: the 3 zeroed steps read as ranges at 0 of 0 µs, one of them an iteration of latency 0.000 ms
    beside the 3 real ones (0.9 ms), and the 3 zeroed kernels as device ops 'outside every iteration'.
    After: the 12 zeroed events are left out, a warning counts them, and the analysis has the 3 real steps."""
    path = tmp_path / "zeroed.synthetic.json"
    path.write_text(_zeroed_run(3))
    trace = read(path)
    assert trace.ranges.filter(pl.col("domain") == "user").height == 3
    assert trace.ops.height == 3
    assert trace.api.height == 3
    assert trace.ops.get_column("start").min() == 5_000_050_000
    assert any("12 events" in w and "ts 0.000 and dur 0.000" in w for w in trace.meta["warnings"])
    analysis = tracekit.analyze(path, skip=0)
    assert analysis.iterations.get_column("latency_ms").to_list() == pytest.approx([0.9] * 3)
    assert analysis.iterations.get_column("gpu_busy_ms").to_list() == pytest.approx([0.2] * 3)


def test_a_trace_with_no_zeroed_event_is_unchanged(tmp_path: Path) -> None:
    """No event at ts 0 with dur 0: nothing is left out and no warning."""
    path = tmp_path / "unzeroed.synthetic.json"
    path.write_text(_zeroed_run(6))
    trace = read(path)
    assert trace.ranges.filter(pl.col("domain") == "user").height == 6
    assert not any("ts 0.000 and dur 0.000" in w for w in trace.meta["warnings"])


def test_an_event_at_zero_with_a_duration_is_kept(tmp_path: Path) -> None:
    """A step that starts at ts 0 and lasts (the time origin of a hand-made trace, or a start clamped to the
    base whose end is known) is a placed event: kept."""
    events = [
        kineto_event("user_annotation", "ProfilerStep#0", 0, 900, PID, TID),
        kineto_event("cuda_runtime", "cudaLaunchKernel", 0, 10, PID, TID, correlation=1),
        _device("kernel", "k", 50, 200, 1),
        kineto_event("user_annotation", "ProfilerStep#1", 1000, 900, PID, TID),
    ]
    trace = read(_write(tmp_path, events, "at_zero.synthetic.json"))
    assert trace.ranges.filter(pl.col("domain") == "user").height == 2
    assert trace.api.height == 1


def test_a_trace_whose_every_device_op_has_no_time_is_refused(tmp_path: Path) -> None:
    """Every kernel zeroed, the host's events placed: without them the trace would read as a CPU run (its
    operators' time standing for the device's). One line instead."""
    doc = json.loads(_zeroed_run(6))
    for event in doc["traceEvents"]:
        if event["cat"] == "kernel":
            event["ts"] = event["dur"] = 0
    path = tmp_path / "zeroed_device.synthetic.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError, match="6 events .6 of them device ops. read ts 0.000 and dur 0.000"):
        read(path)


def test_a_step_of_no_duration_between_steps_is_no_iteration(tmp_path: Path) -> None:
    """Steps of 900 µs at 5, 5.001 and 5.002 s, each with a 200 µs kernel; the middle one reads dur 0. No
    iteration may read a latency of 0: the middle step is left out (or withheld) with a word."""
    doc = json.loads(_zeroed_run(3, steps=3))
    doc["traceEvents"][4]["dur"] = 0  # ProfilerStep#1
    path = tmp_path / "step_dur0.synthetic.json"
    path.write_text(json.dumps(doc))
    analysis = tracekit.analyze(path, skip=0)
    latencies = analysis.iterations.get_column("latency_ms").to_list()
    assert 0.0 not in latencies
    assert latencies == pytest.approx([0.9, 0.9])
    assert any(w.startswith("left out 1 range of no duration ('ProfilerStep#1')") for w in analysis.warnings)


# --- Windows paths written unescaped (pytorch#98432: torch 2.0 with with_stack=True on Windows)


def test_unescaped_windows_paths_are_read_as_written(tmp_path: Path) -> None:
    """torch 2.0 on Windows wrote ``"name": "torch\\cuda\\__init__.py(219): _lazy_init"`` with its
    backslashes unescaped (pytorch#98432; libkineto's sanitizeStrForJSON now turns them into '/'): invalid
    JSON, which had refused the whole trace in one line. Now a backslash that starts no JSON escape reads as
    itself, and the trace reads as it would have: 3 steps of 0.9 ms with 0.2 ms of kernel each; a range named
    ``load C:\\Users\\me`` keeps its name. Valid escapes (``\\n``, ``\\u00e9``, ``\\\\``) read as JSON has them."""
    doc = json.loads(_zeroed_run(3, steps=3))
    doc["traceEvents"] += [
        kineto_event("python_function", "PY1", 5_000_000, 2900, PID, TID),
        kineto_event("user_annotation", "PY2", 5_000_005, 1, PID, TID),
        kineto_event("user_annotation", "PY3", 5_000_006, 1, PID, TID),
    ]
    text = json.dumps(doc)
    text = text.replace("PY1", r"torch\cuda\__init__.py(219): _lazy_init")
    text = text.replace("PY2", r"load C:\Users\me\x.py")
    text = text.replace("PY3", r"a\nb \u00e9 c\\d")
    path = tmp_path / "windows.synthetic.json"
    path.write_text(text)
    trace = read(path)
    names = trace.ranges.filter(pl.col("depth") > 0).get_column("name").to_list()
    assert sorted(names) == sorted(["load C:\\Users\\me\\x.py", "a\nb \u00e9 c\\d"])
    analysis = tracekit.analyze(path, skip=0)
    assert analysis.iterations.get_column("latency_ms").to_list() == pytest.approx([0.9] * 3)
    assert analysis.iterations.get_column("gpu_busy_ms").to_list() == pytest.approx([0.2] * 3)


# --- what libkineto logged while tracing: the top-level "INFO"/"WARNING"/"ERROR" lists


def _logged_run(tmp_path: Path, logs: dict[str, list[str]], name: str) -> Path:
    """Three placed steps (0.9 ms, a 200 µs kernel each) with libkineto's log lists as top-level keys, as its
    ChromeTraceLogger::finalizeTrace writes them (the real HTA traces here hold an "INFO" list)."""
    doc = json.loads(_zeroed_run(3, steps=3))
    doc.update(logs)
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


STOPPED_EARLY = (
    "INFO:2026-11-28 10:00:01 1:1 CuptiActivityProfiler.cpp:333] Record counts: Out-of-range = 12, Blocklisted "
    "runtime = 40, Invalid ext correlations = 0, CPU GPU out-of-order = 0, Unexpected CUDA events = 0, CUPTI "
    "stopped early? = 1"
)
BUFFER_WARNING = (
    "WARNING:2026-11-28 10:00:00 1:1 CuptiActivityApi.cpp:140] Exceeded max GPU buffer count (33 >= 32) - "
    "terminating tracing"
)


def test_gpu_tracing_that_stopped_early_is_said(tmp_path: Path) -> None:
    """libkineto stops collecting GPU activity past its buffer limit ('Exceeded max GPU buffer count ... -
    terminating tracing', CuptiActivityApi::bufferRequested) and says so in its record counts ('CUPTI stopped
    early? = 1'): the device work after that point is not in the trace, and the host's steps there would read
    as idle GPU time. Before: no word. Now a warning, and the messages in meta['profiler_log']."""
    path = _logged_run(
        tmp_path, {"INFO": [STOPPED_EARLY], "WARNING": [BUFFER_WARNING]}, "stopped.synthetic.json"
    )
    trace = read(path)
    said = [w for w in trace.meta["warnings"] if "stopped collecting GPU activity early" in w]
    assert len(said) == 1
    assert "Exceeded max GPU buffer count (33 >= 32)" in said[0]
    assert trace.meta["profiler_log"] == {"WARNING": [BUFFER_WARNING]}
    assert trace.meta["gpu_tracing_stopped_early"] is True


def test_profiler_warnings_and_errors_are_said(tmp_path: Path) -> None:
    """Any WARNING or ERROR libkineto logged is counted in one warning that quotes the first (its log prefix
    left out); the INFO list of a trace that stopped nothing gives none."""
    info = STOPPED_EARLY.replace("= 1", "= 0")
    logs = {
        "INFO": [info],
        "WARNING": ["WARNING:2026-11-28 10:00:00 1:1 CuptiActivityProfiler.cpp:99] Unexpected thing A"],
        "ERROR": [
            "ERROR:2026-11-28 10:00:00 1:1 CuptiActivityProfiler.cpp:98] Failed B",
            "ERROR:x] Failed C",
        ],
    }
    trace = read(_logged_run(tmp_path, logs, "logged.synthetic.json"))
    said = [w for w in trace.meta["warnings"] if "torch.profiler (libkineto) logged" in w]
    assert said == [
        "torch.profiler (libkineto) logged 2 error(s) and 1 warning(s) while tracing (first: 'Failed B'): "
        "what they report may be missing from the trace"
    ]
    assert not any("stopped collecting GPU activity early" in w for w in trace.meta["warnings"])
    assert trace.meta.get("gpu_tracing_stopped_early") is None


def test_an_info_log_alone_gives_no_warning(tmp_path: Path) -> None:
    info = STOPPED_EARLY.replace("= 1", "= 0")
    trace = read(
        _logged_run(tmp_path, {"INFO": [info, "INFO:x] Enabling GPU tracing"]}, "info.synthetic.json")
    )
    assert not any("libkineto" in w for w in trace.meta["warnings"])
    assert "profiler_log" not in trace.meta


def test_a_verdict_on_gpu_tracing_that_stopped_early_is_uncertain(tmp_path: Path) -> None:
    """Six steps of 900 µs, each launching a 800 µs kernel (compute-bound), but libkineto stopped collecting
    GPU activity after the second: the last four steps hold their launches and no kernel. Their GPU busy
    reads 0, so the median utilization falls to 0 and the verdict would be framework-bound."""
    doc = json.loads(_zeroed_run(6, steps=6))
    kept = []
    for event in doc["traceEvents"]:
        if event["cat"] == "kernel":
            event["dur"] = 800
            if event["ts"] >= 5_002_000:
                continue
        kept.append(event)
    doc["traceEvents"] = kept
    doc["INFO"] = [STOPPED_EARLY]
    doc["WARNING"] = [BUFFER_WARNING]
    path = tmp_path / "stopped_verdict.synthetic.json"
    path.write_text(json.dumps(doc))
    analysis = tracekit.analyze(path, skip=0)
    assert analysis.verdict_uncertain is not None
    assert "stopped collecting GPU activity before the capture ended" in analysis.verdict_uncertain


# --- gzip padded with zero bytes after its last member (Python's gzip module reads it: GzipFile._read_eof)


@pytest.mark.parametrize("tail", [b"\0" * 1000, b"\0" * 70_000])
def test_a_gzip_trace_padded_with_zero_bytes_is_read(tmp_path: Path, tail: bytes) -> None:
    """``gzip.open(path)`` and ``gzip.decompress`` read a member followed by zero bytes (block-padded
    storage, tape, some copy tools), so ``json.load(gzip.open(...))`` reads such a trace. Before: refused
    in one line ('damaged gzip file (Error -4 Invalid gzip/zlib wrapper found)'). Now read: 3 steps of 0.9
    ms with 0.2 ms of kernel each (a tail longer than one 64 KiB read too)."""
    path = tmp_path / "padded.synthetic.json.gz"
    path.write_bytes(gzip.compress(_zeroed_run(3, steps=3).encode()) + tail)
    analysis = tracekit.analyze(path, skip=0)
    assert analysis.iterations.get_column("latency_ms").to_list() == pytest.approx([0.9] * 3)
    assert analysis.iterations.get_column("gpu_busy_ms").to_list() == pytest.approx([0.2] * 3)


def test_zero_bytes_between_gzip_members_are_skipped(tmp_path: Path) -> None:
    """As Python's gzip reads it: zeros after a member, then another member (the document cut in two)."""
    text = _zeroed_run(3, steps=3).encode()
    half = len(text) // 2
    path = tmp_path / "padded_members.synthetic.json.gz"
    path.write_bytes(gzip.compress(text[:half]) + b"\0" * 100 + gzip.compress(text[half:]))
    assert read(path).ranges.filter(pl.col("domain") == "user").height == 3


def test_other_bytes_after_zero_padding_are_a_damaged_gzip(tmp_path: Path) -> None:
    path = tmp_path / "padded_junk.synthetic.json.gz"
    path.write_bytes(gzip.compress(_zeroed_run(3, steps=3).encode()) + b"\0" * 100 + b"junk")
    with pytest.raises(TraceFormatError, match="damaged gzip file"):
        read(path)
