"""Mutation round 15 (helper mutation15): tests that kill surviving mutants of the ORT reader's round-14 code
(:mod:`tracekit.readers.ort`): Kernel events ORT 1.8-1.13 stamped at their end (:func:`_from_their_end`), the
CUPTI-error event (:func:`_without_cupti_error`), a model_run without a readable dur, and a node name that
breaks the profile's JSON (:func:`_unescaped_name`).

Every profile is SYNTHETIC, hand-built in pytest's temporary folder and named ``*.synthetic.ort.json``; times
are in microseconds in the JSON (ns in the frames), and the expected numbers and texts are exact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tracekit.errors import TraceFormatError
from tracekit.readers.ort import _unescaped_name, read

END_STAMPED = (
    "GPU ops (Kernel events) carry the args of ORT's CUDA profiler before 1.14 (correlation_id, or op_name "
    "without parent_name), which stamps each kernel at its end (ts = CUPTI's end time): each is read from ts - dur"
)
NODE = "/a/MatMul_kernel_time"


def _ev(cat: str, name: str, ts: Any, dur: Any, pid: int = 1, tid: int = 1, **args: Any) -> dict[str, Any]:
    return {"cat": cat, "pid": pid, "tid": tid, "dur": dur, "ts": ts, "ph": "X", "name": name, "args": args}


def _run(*kernels: dict[str, Any]) -> list[dict[str, Any]]:
    """One model_run of 1000 µs from 100 µs with one CUDA MatMul node (105..115 µs), and ``kernels``."""
    return [
        _ev("Session", "model_run", 100, 1000),
        _ev("Node", NODE, 105, 10, op_name="MatMul", provider="CUDAExecutionProvider"),
        *kernels,
    ]


def _read(tmp_path: Path, events: list[dict[str, Any]], name: str = "p"):  # noqa: ANN202
    path = tmp_path / f"{name}.synthetic.ort.json"
    path.write_text(json.dumps(events))
    return read(path)


def _kernels(trace) -> list[tuple[str, int, int]]:  # noqa: ANN001
    return trace.ops.sort("start").select("name", "start", "end").rows()


def _said(trace, word: str) -> list[str]:  # noqa: ANN001
    return [w for w in trace.meta["warnings"] if word in w]


def test_an_end_stamped_kernel_beside_a_start_stamped_one_is_moved_alone(tmp_path: Path) -> None:
    """k0 (op_name, no parent_name, stream "7") ts 400 dur 200 runs 200..400 µs; k1 (both names) stays
    700..800 µs. '1 of 2'."""
    trace = _read(
        tmp_path,
        _run(
            _ev("Kernel", "k0", 400, 200, -1, -1, op_name="MatMul", stream="7"),
            _ev("Kernel", "k1", 700, 100, -1, -1, op_name="MatMul", parent_name=NODE, stream="7"),
        ),
    )
    assert _kernels(trace) == [("k0", 200_000, 400_000), ("k1", 700_000, 800_000)]
    assert _said(trace, "before 1.14") == [f"1 of 2 {END_STAMPED}"]


def test_a_kernel_that_would_start_exactly_at_the_profile_start_is_moved(tmp_path: Path) -> None:
    """ts 200 = dur 200: the kernel ran from 0, the profile's start: not before it, so it is moved (with a
    correlation_id, ORT 1.8-1.10's args; stream " 7 " read with its spaces stripped)."""
    trace = _read(tmp_path, _run(_ev("Kernel", "k", 200, 200, -1, -1, correlation_id="3", stream=" 7 ")))
    assert _kernels(trace) == [("k", 0, 200_000)]
    assert _said(trace, "before 1.14") == [f"1 of 1 {END_STAMPED}"]


def test_one_kernel_that_would_start_before_the_profile_keeps_every_kernel_as_written(tmp_path: Path) -> None:
    """k0 ts 400 dur 200, k1 ts 150 dur 151 (it would start at -1 µs): the args do not mean ORT's old writer,
    so neither is moved, and nothing is said."""
    trace = _read(
        tmp_path,
        _run(
            _ev("Kernel", "k0", 400, 200, -1, -1, op_name="MatMul", stream="7"),
            _ev("Kernel", "k1", 150, 151, -1, -1, op_name="MatMul", stream="7"),
        ),
    )
    assert _kernels(trace) == [("k1", 150_000, 301_000), ("k0", 400_000, 600_000)]
    assert not _said(trace, "before 1.14")


@pytest.mark.parametrize(
    "args",
    [
        {"op_name": "MatMul", "stream": "0x7f3a1c000b10"},  # ROCm: begin-stamped, a pointer stream
        {"op_name": "MatMul", "stream": "7a"},
        {"op_name": "MatMul"},  # no stream
        {"stream": "7"},  # neither op_name nor correlation_id
    ],
)
def test_kernels_without_the_old_writer_s_args_keep_their_times(tmp_path: Path, args: dict[str, str]) -> None:
    trace = _read(tmp_path, _run(_ev("Kernel", "k", 400, 200, -1, -1, **args)))
    assert _kernels(trace) == [("k", 400_000, 600_000)]
    assert not _said(trace, "before 1.14")


def test_an_end_stamped_kernel_without_a_readable_dur_keeps_its_ts(tmp_path: Path) -> None:
    """k0's dur is null: its length is not known, so it is not moved, and does not count; k1 is moved."""
    trace = _read(
        tmp_path,
        _run(
            _ev("Kernel", "k0", 300, None, -1, -1, op_name="MatMul", stream="7"),
            _ev("Kernel", "k1", 600, 100, -1, -1, op_name="MatMul", stream="7"),
        ),
    )
    assert trace.ops.sort("start").select("name", "start").rows() == [("k0", 300_000), ("k1", 500_000)]
    assert _said(trace, "before 1.14") == [f"1 of 2 {END_STAMPED}"]


def test_a_copy_event_with_old_args_is_not_a_kernel_to_move(tmp_path: Path) -> None:
    """Only Kernel events are moved: a Node event with op_name and no parent_name (every node's args) keeps its
    time, and the Kernel count is of Kernel events alone."""
    trace = _read(tmp_path, _run(_ev("Kernel", "k", 500, 100, -1, -1, op_name="MatMul", stream="7")))
    nodes = trace.ranges.filter(trace.ranges["domain"] == "node")
    assert nodes.select("start", "end").rows() == [(105_000, 115_000)]
    assert _kernels(trace) == [("k", 400_000, 500_000)]


def test_the_cupti_error_event_is_dropped_and_said(tmp_path: Path) -> None:
    """Beside one real kernel (begin-stamped, 1.14+), the CUPTI-error Kernel event is no kernel: one kernel,
    and the exact warning; a Node event of that name is no such event."""
    trace = _read(
        tmp_path,
        _run(
            _ev("Kernel", "not_available_due_to_cupti_error", 0, 0),
            _ev("Kernel", "k", 300, 100, -1, -1, op_name="MatMul", parent_name=NODE, stream="7"),
        ),
    )
    assert _kernels(trace) == [("k", 300_000, 400_000)]
    assert _said(trace, "not_available_due_to_cupti_error") == [
        "the profile holds ORT's 'not_available_due_to_cupti_error' Kernel event: its CUDA profiler could not "
        "start CUPTI (another profiler attached, or no permission to the GPU's performance counters), so it "
        "recorded no GPU kernel; the Node events are host times"
    ]


def test_a_model_run_without_a_readable_dur_is_skipped_and_counted(tmp_path: Path) -> None:
    """Two model_runs with a dur and one without: the third is skipped, and the warning counts 1."""
    events = [
        _ev("Session", "model_run", 100, 1000),
        _ev("Node", "/a/Add_kernel_time", 105, 10, op_name="Add", provider="CPUExecutionProvider"),
        _ev("Session", "model_run", 1200, 1000),
        _ev("Node", "/a/Add_kernel_time", 1205, 10, op_name="Add", provider="CPUExecutionProvider"),
        _ev("Session", "model_run", 2300, "NaN"),
        _ev("Node", "/a/Add_kernel_time", 2305, 10, op_name="Add", provider="CPUExecutionProvider"),
    ]
    trace = _read(tmp_path, events, "runs")
    assert _said(trace, "without a readable dur") == [
        "1 'model_run' event(s) without a readable dur (null, missing, NaN, Infinity or not a number) were "
        "skipped: how long those runs lasted is not known, so their nodes count in no iteration"
    ]


# ------------------------------------------------------------------------ a node name ORT did not escape


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ('{"cat" : "Node","name" :"a\\b","args" : {}}', "a\\b"),
        ('{"cat" : "Node","name" :"say "hi"","args" : {}}', 'say "hi"'),
        ('{"cat" : "Node","name" :"tab\there","args" : {}}', "tab\there"),
        ('{"cat" : "Node","name" :"plain","args" : {}}', None),  # nothing JSON needs escaped
        ('{"cat" : "Node","name" :"a\\b", "args" : {}}', None),  # not ORT's own spacing
        ('{"cat" : "Node","nom" :"a\\b","args" : {}}', None),
    ],
)
def test_unescaped_name(line: str, name: str | None) -> None:
    text = "[\n" + '{"cat" : "Session","name" :"x","args" : {}},\n' + line + ",\n{}\n]"
    pos = text.index(line) + 5
    assert _unescaped_name(text, pos) == name


def test_unescaped_name_on_the_last_line_without_a_newline() -> None:
    text = '[\n{"cat" : "Node","name" :"a\\b","args" : {}}'
    assert _unescaped_name(text, len(text) - 3) == "a\\b"
    # the line of pos is the one read, not the next one
    two = '{"cat" : "Node","name" :"ok","args" : {}}\n{"cat" : "Node","name" :"a\\b","args" : {}}'
    assert _unescaped_name(two, 3) is None
    assert _unescaped_name(two, len(two) - 1) == "a\\b"


def test_a_node_name_with_a_backslash_is_named_in_the_error(tmp_path: Path) -> None:
    text = (
        '[\n{"cat" : "Session","pid" :1,"tid" :1,"dur" :1000,"ts" :100,"ph" : "X","name" :"model_run","args" : {}},\n'
        '{"cat" : "Node","pid" :1,"tid" :1,"dur" :10,"ts" :105,"ph" : "X","name" :"C:\\x\\y","args" : {}}\n]'
    )
    path = tmp_path / "backslash.synthetic.ort.json"
    path.write_text(text)
    with pytest.raises(TraceFormatError) as err:
        read(path)
    assert (
        "ONNX Runtime writes event names as they are, without JSON escaping, so a name holding a backslash or a "
        "double quote breaks its profile (here 'C:\\\\x\\\\y'): rename the node, or escape the name in the file"
    ) in str(err.value)


def test_unescaped_name_reads_from_the_first_name_key_to_the_first_args_after_it() -> None:
    """The name runs from ORT's '"name" :"' to the first '","args" :' after it: a line holding that closing
    text twice gives the shorter name; a line that starts with the name key is read too."""
    twice = '{"cat" : "Node","name" :"a\\b","args" : {"k" :"v","args" : 1}}'
    assert _unescaped_name(twice, 5) == "a\\b"
    assert _unescaped_name('"name" :"a\\b","args" : {}', 3) == "a\\b"
    odd = '{"cat" : "Node","name" :","args" : {"a" :"x\\y","args" : {}}}'
    assert _unescaped_name(odd, 5) == ',"args" : {"a" :"x\\y'
