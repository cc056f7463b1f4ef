"""Kineto reader (tracekit.readers.kineto): the cases the sampled mutation run of issue 33 (2026-11-26,
``python benchmarks/mutation.py kineto --sample 100``, and a second sample with ``--seed 34``) found
unchecked, one test per behaviour.

Every trace here is hand-built (synthetic, not a measurement); each test asserts the exact frame, value,
warning or error a user sees, or the documented decoding path (the fast µs -> ns conversion, the decoding
worker) that large real traces depend on for their reading time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tests.builders import kineto_event, kineto_file, write_file
from tests.test_reader_kineto import (
    EXPECTED_CURRENT_API,
    EXPECTED_CURRENT_KERNEL_METRICS,
    EXPECTED_CURRENT_OPS,
    EXPECTED_CURRENT_RANGES,
    SYNTHETIC_CURRENT_RAW,
)
from tracekit import limits
from tracekit.errors import TraceFormatError
from tracekit.readers import kineto as K
from tracekit.readers import kineto_worker as kw

_x = kineto_event


def _file(tmp_path: Path, events: list[dict[str, Any]], name: str = "synthetic_mutants.json") -> Path:
    return kineto_file(tmp_path, events, name)


# --------------------------------------------------------------------------------- µs -> ns conversion


def test_profiler_spellings_take_the_fast_conversion(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ts/dur spellings profilers write (integers; decimals with 1-3 fraction digits, ".25" included)
    are converted by :func:`us_to_ns_series`'s one integer cast, never by the slower split/regex path (which
    would make reading a large real trace several times slower, with the same numbers)."""

    def no_slow_path(text: pl.Series) -> pl.Series:
        raise AssertionError(f"slow path taken for {text.to_list()}")

    monkeypatch.setattr(K, "_us_to_ns_split", no_slow_path)
    texts = ["12", "-3", "1.5", "-0.25", ".25", "0.125", "1712195495519689.047", "1683564901548726.5"]
    out = K.us_to_ns_series(pl.Series("ts", texts))
    assert out.to_list() == [12_000, -3_000, 1_500, -250, 250, 125, 1712195495519689047, 1683564901548726500]
    assert out.dtype == pl.Int64 and out.name == "ts"


def test_split_conversion_reads_integers_and_decimals() -> None:
    """:func:`_us_to_ns_split` is :func:`us_to_ns` of a String series for every plain number, integers
    without a point too ("-12", its docstring's first example), not only decimals."""
    texts = ["-12", "12", "0", "7.5", "1009612.574", "1.0005", None]
    assert K._us_to_ns_split(pl.Series("t", texts)).to_list() == [
        -12_000,
        12_000,
        0,
        7_500,
        1_009_612_574,
        1_001,
        None,
    ]


# ------------------------------------------------------------------------------------------- GPU ops


def test_device_and_stream_come_from_the_args_before_pid_and_tid(tmp_path: Path) -> None:
    """``device`` = args "device" and ``stream`` = args "stream" when present, even where the event's pid
    and tid say otherwise; pid/tid are the fallbacks only."""
    events = [
        _x("cuda_runtime", "cudaLaunchKernel", 0, 1, pid=10, tid=10, correlation=1),
        _x("kernel", "with_args", 2, 1, pid=8, tid=3, device=1, stream=9, correlation=1),
        _x("kernel", "without_args", 4, 1, pid=8, tid="stream 3", correlation=1),
    ]
    trace = K.read(_file(tmp_path, events))
    assert trace.ops.select("name", "device", "stream", "pid").rows() == [
        ("with_args", 1, 9, 10),
        ("without_args", 8, 3, 10),
    ]


def test_occupancy_that_is_not_a_number_is_no_metric_and_no_error(tmp_path: Path) -> None:
    """A kernel whose "est. achieved occupancy %" is not a number (here the text "n/a") gives no
    kernel_metrics row, and the trace still reads: the other kernel's occupancy is kept."""
    events = [
        _x("cuda_runtime", "cudaLaunchKernel", 0, 1, correlation=1),
        _x("kernel", "k_text", 2, 1, pid=0, tid=7, correlation=1, **{K.OCCUPANCY_ARG: "n/a"}),
        _x("kernel", "k_number", 4, 1.5, pid=0, tid=7, correlation=1, **{K.OCCUPANCY_ARG: 40}),
    ]
    trace = K.read(_file(tmp_path, events))
    assert trace.ops["name"].to_list() == ["k_text", "k_number"]
    assert trace.kernel_metrics.select("kernel", "name", "duration_ns", "value").rows() == [
        (1, "k_number", 1_500, 40.0)
    ]


# ---------------------------------------------------------------------------------------------- meta


def test_memcpy_with_capitalised_category_is_the_2022_spelling(tmp_path: Path) -> None:
    """A 2022-spelling trace whose only GPU work is a copy (category "Memcpy", calls "cuda_runtime") reads
    as the 2022 spelling, not the generic "2022+" one."""
    events = [
        _x("cuda_runtime", "cudaMemcpyAsync", 0, 1, correlation=1),
        _x(
            "Memcpy",
            "Memcpy HtoD (Pageable -> Device)",
            2,
            1,
            pid=0,
            tid=7,
            device=0,
            stream=7,
            correlation=1,
        ),
    ]
    trace = K.read(_file(tmp_path, events))
    assert trace.ops.select("kind", "correlation").rows() == [("memcpy", 1)]
    assert trace.meta["kineto_spelling"] == "2022"
    assert trace.meta["format_version"] == "schema 1, 2022 spelling"


# ---------------------------------------------------------------------------------------- long names


@pytest.fixture
def max_string() -> Iterator[None]:
    """The limits in force restored after the test."""
    saved = limits.current
    yield
    limits.current = saved


def test_a_name_of_exactly_the_string_limit_is_not_cut(tmp_path: Path, max_string: None) -> None:
    """--max-string N cuts names *longer* than N bytes: a name of exactly N bytes is kept, no warning."""
    limits.configure(max_string=8)
    events = [_x("cuda_runtime", "cudaLau8", 0, 1, correlation=1)]  # 8 bytes
    trace = K.read(_file(tmp_path, events))
    assert trace.api["name"].to_list() == ["cudaLau8"]
    assert trace.meta["warnings"] == []


def test_long_names_are_cut_and_the_warning_names_the_first(tmp_path: Path, max_string: None) -> None:
    """Every name longer than --max-string is cut to it, and the one warning counts them and names the first
    such event in the file (its category, ts and the cut name)."""
    limits.configure(max_string=8)
    events = [
        _x("cuda_runtime", "cudaLaunchKernel", 1.5, 1, correlation=1),
        _x("cuda_runtime", "short", 3, 1, correlation=2),
        _x("cuda_runtime", "cudaMemcpyAsync", 5, 1, correlation=3),
    ]
    trace = K.read(_file(tmp_path, events))
    assert trace.api["name"].to_list() == ["cudaLaun", "short", "cudaMemc"]
    assert trace.meta["warnings"] == [
        "2 event name(s) longer than 8 B cut to 8 B (--max-string SIZE keeps more); the first: the "
        "cuda_runtime event at ts 1.500 us named 'cudaLaun...'"
    ]


def test_a_single_long_name_is_named_in_the_warning(tmp_path: Path, max_string: None) -> None:
    """One long name: the warning names it (count 1), the trace reads."""
    limits.configure(max_string=4)
    trace = K.read(_file(tmp_path, [_x("user_annotation", "iteration", 2, 1)]))
    assert trace.ranges["name"].to_list() == ["iter"]
    assert trace.meta["warnings"] == [
        "1 event name(s) longer than 4 B cut to 4 B (--max-string SIZE keeps more); the first: the "
        "user_annotation event at ts 2.000 us named 'iter...'"
    ]


# ------------------------------------------------------------------------------------------ errors


def test_nesting_past_the_decoder_names_the_file(tmp_path: Path) -> None:
    """Values nested deeper than the decoder goes: TraceFormatError naming the file (the CLI's one line)."""
    deep = "[" * 5000 + "]" * 5000
    text = (
        '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1, '
        f'"args": {{"a": {deep}}}}}]}}'
    )
    path = write_file(tmp_path, "synthetic_deep.json", text)
    with pytest.raises(TraceFormatError) as err:
        K.read(path)
    assert str(err.value) == f"{path}: truncated or invalid JSON: values nested too deeply to decode"


# ------------------------------------------------------------------------------------ decoding worker


def _assert_current_frames(trace: Any) -> None:
    assert_frame_equal(trace.ops, EXPECTED_CURRENT_OPS)
    assert_frame_equal(trace.api, EXPECTED_CURRENT_API)
    assert_frame_equal(trace.ranges, EXPECTED_CURRENT_RANGES)
    assert_frame_equal(trace.kernel_metrics, EXPECTED_CURRENT_KERNEL_METRICS)
    assert trace.meta["format_version"] == "schema 1, 2023+ spelling"
    assert trace.meta["gpu"] == "Synthetic GPU A" and trace.meta["rank"] == 3


def test_worker_decoding_gives_the_exact_frames_and_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the decoding worker asked for (TRACEKIT_DECODE_WORKER=1, as a large file gets it), read starts
    one worker and gives the in-process frames and the header's meta (schema, GPUs, rank)."""
    started: list[Path] = []
    start = kw.start

    def counting_start(path: Path) -> kw.Workers:
        started.append(path)
        return start(path)

    monkeypatch.setenv(kw.ENV, "1")
    monkeypatch.setattr(kw, "start", counting_start)
    path = write_file(tmp_path, "synthetic_current.json", SYNTHETIC_CURRENT_RAW)
    _assert_current_frames(K.read(path))
    assert started == [path]


def test_worker_that_cannot_start_decodes_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that cannot start (WorkerLost from start) is no error: the file is decoded in this process."""

    def lost(path: Path) -> kw.Workers:
        raise kw.WorkerLost("synthetic: no worker")

    monkeypatch.setenv(kw.ENV, "1")
    monkeypatch.setattr(kw, "start", lost)
    _assert_current_frames(K.read(write_file(tmp_path, "synthetic_current.json", SYNTHETIC_CURRENT_RAW)))


# ------------------------------------------------------------------------------------------ the rows


def test_a_gpu_pid_past_int64_does_not_stop_the_read(tmp_path: Path) -> None:
    """A GPU event whose pid is a JSON integer past int64 (2^64) is read: the pid column falls back to text
    for that chunk, the kernel's device comes from its args and its pid from its launching call."""
    events = [
        _x("cuda_runtime", "cudaLaunchKernel", 0, 1, pid=10, tid=10, correlation=1),
        _x("kernel", "k", 2, 1, pid=2**64, tid=7, device=0, stream=7, correlation=1),
    ]
    trace = K.read(_file(tmp_path, events))
    assert trace.ops.select("start", "end", "device", "stream", "pid", "correlation", "name").rows() == [
        (2000, 3000, 0, 7, 10, 1, "k")
    ]
    assert trace.api.select("pid", "thread", "correlation").rows() == [(10, 10, 1)]


def test_a_trace_without_complete_events_reads_as_an_empty_trace(tmp_path: Path) -> None:
    """Only metadata and instant events (no ``ph`` X at all, so no decoded chunk of rows): an empty CPU
    trace, no error."""
    events = [
        {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "python"}},
        {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 16, "args": {"Bytes": 4}},
    ]
    trace = K.read(_file(tmp_path, events))
    assert trace.ops.is_empty() and trace.api.is_empty() and trace.ranges.is_empty()
    assert trace.meta["device"] == "cpu" and trace.meta["warnings"] == []


def test_read_events_rows_hold_args_only_where_a_frame_uses_them(tmp_path: Path) -> None:
    """:func:`read_events` (public: the reference oracle of tests/reference_kineto.py decodes with it) keeps
    each ``args`` field only on the rows of the categories whose frames read it: correlation on GPU work and
    runtime/driver calls, device/stream/graph/occupancy on GPU work and GPU annotations; null elsewhere
    (a CPU operator's or a call's stray device/stream args are not carried)."""
    events = [
        _x("cpu_op", "aten::mm", 0, 5, correlation=7, device=3, stream=4),
        _x("cuda_runtime", "cudaLaunchKernel", 1, 1, correlation=1, device=3, stream=4, graph_id=5),
        _x("gpu_user_annotation", "iteration", 2, 3, pid=0, tid=7, correlation=8, stream=7, device=0),
        _x("kernel", "k", 2, 1, pid=0, tid=7, correlation=1, device=0, stream=7, graph_id=5),
    ]
    rows = K.read_events(_file(tmp_path, events))[0]
    assert rows.select("cat_l", "a_correlation", "a_device", "a_stream", "a_graph").rows() == [
        ("cpu_op", None, None, None, None),
        ("cuda_runtime", 1, None, None, None),
        ("gpu_user_annotation", None, 0, 7, None),
        ("kernel", 1, 0, 7, 5),
    ]


# ------------------------------------------------- second sample (seed 34): skipped events, names, spelling


def test_events_of_categories_not_read_give_an_empty_trace_without_warnings(tmp_path: Path) -> None:
    """A trace whose complete events are all of categories not read (``python_function``) plus instant
    events with a category: its chunk carries category names and no rows, which is no skipped event (no
    "without a readable ts" warning) and no error; the spelling is "unknown"."""
    events = [
        _x("python_function", "nn.Module: Linear", 0, 5),
        {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 16},
    ]
    trace = K.read(_file(tmp_path, events))
    assert trace.ops.is_empty() and trace.api.is_empty() and trace.ranges.is_empty()
    # (the one warning is that Python call tracing was on, which its python_function events say)
    assert trace.meta["warnings"] == [K.PYTHON_TRACING_WARNING]
    assert trace.meta["kineto_spelling"] == "unknown"


def test_events_without_a_readable_ts_are_counted_in_the_warning(tmp_path: Path) -> None:
    """Complete events whose ts is not a number (text, null) are skipped, and the one warning counts them
    all (2 here); the readable event is kept with its exact times."""
    events = [
        _x("cuda_runtime", "cudaLaunchKernel", "abc", 1, correlation=1),
        _x("cuda_runtime", "cudaLaunchKernel", None, 1, correlation=2),
        _x("cuda_runtime", "cudaMemcpyAsync", 3, 1.5, correlation=3),
    ]
    trace = K.read(_file(tmp_path, events))
    assert trace.api.select("start", "end", "correlation", "name").rows() == [
        (3_000, 4_500, 3, "cudaMemcpyAsync")
    ]
    assert trace.meta["warnings"] == ["2 complete events without a readable ts were skipped"]


def test_load_json_error_names_the_file(tmp_path: Path) -> None:
    """:func:`load_json` (the ONNX Runtime reader's JSON loader) on truncated JSON: TraceFormatError whose
    text is the CLI's one line, starting with the file's path."""
    path = write_file(tmp_path, "synthetic_truncated.json", '{"traceEvents": [{"ph": "X",')
    with pytest.raises(TraceFormatError) as err:
        K.load_json(path)
    assert str(err.value).startswith(f"{path}: truncated or invalid JSON: ")


def test_events_without_names_read_with_null_names(tmp_path: Path) -> None:
    """Complete events with no ``name`` (every one of the chunk): the trace reads, the kernel is kept with a
    null name (text column), the launch still joined by correlation, and the call, which launched it, is
    named cudaLaunchKernel so that it counts as a launch, said (round 19: it had read 0 launches)."""
    call = _x("cuda_runtime", "x", 1, 1, correlation=1)
    kernel = _x("kernel", "x", 2, 1, pid=0, tid=7, correlation=1)
    for event in (call, kernel):
        del event["name"]
    trace = K.read(_file(tmp_path, [call, kernel]))
    assert trace.api.select("start", "pid", "correlation", "kind", "name").rows() == [
        (1_000, 1, 1, "runtime", "cudaLaunchKernel")
    ]
    assert trace.ops.select("start", "pid", "correlation", "kind", "name").rows() == [
        (2_000, 1, 1, "kernel", None)
    ]
    assert trace.ops.schema["name"] == pl.String
    assert [w.split(":")[0] for w in trace.meta["warnings"]] == [
        "1 API calls have no name (a name id missing from the export's strings, or none written)"
    ]


def test_runtime_calls_only_are_the_generic_2022_plus_spelling(tmp_path: Path) -> None:
    """A trace with runtime calls only (category ``cuda_runtime``, no GPU work, no CPU operator or
    annotation) is the generic "2022+" spelling, not "unknown"."""
    trace = K.read(_file(tmp_path, [_x("cuda_runtime", "cudaDeviceSynchronize", 1, 1)]))
    assert trace.meta["kineto_spelling"] == "2022+"
    assert trace.meta["format_version"] == "schema 1, 2022+ spelling"


def test_json_null_ids_and_occupancy_are_null_in_the_rows(tmp_path: Path) -> None:
    """A JSON ``null`` pid, tid or occupancy is a null value in :func:`read_events`'s rows, not the text
    "null": pid and tid stay integer columns (Int64), and a call with a null pid is on no process, so a CPU
    operator with a null pid around it does not cover it (``launches_outside_ops`` 1.0)."""
    events = [
        _x("cpu_op", "aten::mm", 0, 10, pid=None, tid=None),
        _x("cuda_runtime", "cudaLaunchKernel", 2, 1, pid=None, tid=None, correlation=1),
        _x("kernel", "k", 3, 1, pid=0, tid=7, correlation=1, **{K.OCCUPANCY_ARG: None}),
    ]
    path = _file(tmp_path, events)
    rows = K.read_events(path)[0]
    assert rows.select("cat_l", "pid", "tid", "a_occupancy").rows() == [
        ("cpu_op", None, None, None),
        ("cuda_runtime", None, None, None),
        ("kernel", 0, 7, None),
    ]
    assert rows.schema["pid"] == pl.Int64 and rows.schema["tid"] == pl.Int64
    trace = K.read(path)
    assert trace.meta["cpu_op_summary"]["launches_outside_ops"] == 1.0
    assert trace.kernel_metrics.is_empty()
