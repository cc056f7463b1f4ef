"""Mutation round 15 (helper mutation15): tests that kill surviving mutants of the Kineto reader's round-14 code
(:mod:`tracekit.readers.kineto`): what libkineto logged while tracing (:func:`_profiler_log`,
:func:`_log_message`), events torch.profiler could not place in time (:func:`_without_unplaced_events`), and
vendors' fork categories (:func:`_unread_fork_categories`, :func:`_unread_fork_warnings`,
:func:`_device_work_not_read`).

Every trace is SYNTHETIC and hand-built (``tracekit_synthetic``, file names holding "synthetic"); times are in
microseconds in the JSON, and the expected numbers and texts are exact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from tests.builders import kineto_event
from tracekit.errors import TraceFormatError
from tracekit.readers.kineto import read

PID, TID, DEVICE, STREAM = 10, 11, 0, 7


def _device(cat: str, name: str, ts: int, dur: int, corr: int) -> dict[str, Any]:
    return kineto_event(cat, name, ts, dur, DEVICE, STREAM, device=DEVICE, stream=STREAM, correlation=corr)


def _steps(n: int = 2, t0: int = 5_000_000) -> list[dict[str, Any]]:
    """``n`` steps of 900 µs, 1000 µs apart from ``t0``, each launching a 200 µs kernel."""
    events: list[dict[str, Any]] = []
    for i in range(n):
        t = t0 + 1000 * i
        events += [
            kineto_event("user_annotation", f"ProfilerStep#{i}", t, 900, PID, TID),
            kineto_event("cuda_runtime", "cudaLaunchKernel", t + 20, 10, PID, TID, correlation=100 + i),
            _device("kernel", f"k{i}", t + 50, 200, 100 + i),
        ]
    return events


def _write(tmp_path: Path, events: list[dict[str, Any]], name: str, **top: Any) -> Path:
    path = tmp_path / name
    path.write_text(
        json.dumps({"schemaVersion": 1, "tracekit_synthetic": True, "traceEvents": events, **top})
    )
    return path


def _said(trace, word: str) -> list[str]:  # noqa: ANN001
    return [w for w in trace.meta["warnings"] if word in w]


# ------------------------------------------------------------------------ libkineto's log lists


def test_a_long_log_message_is_cut_to_200_characters(tmp_path: Path) -> None:
    """The first message is quoted without its prefix ('ERROR:<time> <ids> <file>:<line>] '), cut to 199
    characters and '…' when longer than 200; one of exactly 200 is quoted whole."""
    long, exact = "E" * 201, "F" * 200
    path = _write(
        tmp_path,
        _steps(),
        "long_log.synthetic.json",
        ERROR=[f"ERROR:2026-11-28 10:00:00 1:1 a.cpp:9] {long}"],
    )
    assert _said(read(path), "libkineto) logged") == [
        f"torch.profiler (libkineto) logged 1 error(s) while tracing (first: {'E' * 199 + '…'!r}): what they "
        "report may be missing from the trace"
    ]
    path = _write(tmp_path, _steps(), "exact_log.synthetic.json", WARNING=[f"WARNING:x] {exact}"])
    assert _said(read(path), "libkineto) logged") == [
        f"torch.profiler (libkineto) logged 1 warning(s) while tracing (first: {exact!r}): what they report may "
        "be missing from the trace"
    ]


def test_only_the_first_prefix_of_a_message_is_taken_off(tmp_path: Path) -> None:
    """'WARNING:a] B:c] d': the logger's prefix is 'WARNING:a] ', and the message 'B:c] d' is kept as is."""
    path = _write(tmp_path, _steps(), "prefix.synthetic.json", WARNING=["WARNING:a] B:c] d"])
    assert "(first: 'B:c] d')" in _said(read(path), "libkineto) logged")[0]


def test_a_message_without_the_prefix_is_quoted_as_is(tmp_path: Path) -> None:
    path = _write(tmp_path, _steps(), "noprefix.synthetic.json", ERROR=["cupti: out of memory"])
    assert "(first: 'cupti: out of memory')" in _said(read(path), "libkineto) logged")[0]


def test_log_lists_that_are_not_lists_of_strings_are_not_read(tmp_path: Path) -> None:
    """A level whose value is a string, or a list holding no string, gives nothing; strings among other values
    are read alone."""
    path = _write(
        tmp_path,
        _steps(),
        "not_lists.synthetic.json",
        ERROR="ERROR:x] a string, not a list",
        WARNING=[1, None, {"a": 1}, "WARNING:x] kept", True],
    )
    trace = read(path)
    assert trace.meta["profiler_log"] == {"WARNING": ["WARNING:x] kept"]}
    assert _said(trace, "libkineto) logged") == [
        "torch.profiler (libkineto) logged 1 warning(s) while tracing (first: 'kept'): what they report may be "
        "missing from the trace"
    ]


def test_an_empty_error_list_is_no_error(tmp_path: Path) -> None:
    path = _write(tmp_path, _steps(), "empty_err.synthetic.json", ERROR=[], WARNING=["WARNING:x] w"])
    trace = read(path)
    assert trace.meta["profiler_log"] == {"WARNING": ["WARNING:x] w"]}
    assert "logged 1 warning(s) while tracing (first: 'w')" in _said(trace, "libkineto) logged")[0]


def test_the_log_kept_in_meta_is_the_first_20_lines_of_each_level(tmp_path: Path) -> None:
    lines = [f"WARNING:x] w{i}" for i in range(25)]
    trace = read(_write(tmp_path, _steps(), "many.synthetic.json", WARNING=lines))
    assert trace.meta["profiler_log"] == {"WARNING": lines[:20]}
    assert "logged 25 warning(s) while tracing (first: 'w0')" in _said(trace, "libkineto) logged")[0]


@pytest.mark.parametrize("level", ["ERROR", "INFO"])
def test_the_buffer_message_in_any_level_says_tracing_stopped(tmp_path: Path, level: str) -> None:
    """'Exceeded max GPU buffer count' in the ERROR or INFO list (not only WARNING) says the GPU tracing
    stopped, quoting the message without its prefix."""
    line = (
        f"{level}:2026 1:1 CuptiActivityApi.cpp:140] Exceeded max GPU buffer count (33 >= 32) - terminating"
    )
    trace = read(_write(tmp_path, _steps(), f"buf_{level}.synthetic.json", **{level: [line]}))
    assert trace.meta["gpu_tracing_stopped_early"] is True
    assert _said(trace, "stopped collecting")[0].startswith(
        "torch.profiler (libkineto) stopped collecting GPU activity early ('Exceeded max GPU buffer count "
        "(33 >= 32) - terminating'): the device work after that point is not in the trace"
    )


def test_the_record_counts_alone_say_tracing_stopped_without_a_quote(tmp_path: Path) -> None:
    """'CUPTI stopped early? = true' in an INFO line: stopped, no message to quote (no parentheses)."""
    info = "INFO:x] Record counts: Unexpected CUDA events = 0, CUPTI stopped early? = true"
    trace = read(_write(tmp_path, _steps(), "counts.synthetic.json", INFO=[info]))
    assert trace.meta["gpu_tracing_stopped_early"] is True
    assert "profiler_log" not in trace.meta
    assert _said(trace, "stopped collecting")[0].startswith(
        "torch.profiler (libkineto) stopped collecting GPU activity early: the device work after that point"
    )


@pytest.mark.parametrize("value", ["= 0", "= 10", "= truest", "=1"])
def test_record_counts_that_do_not_say_1_or_true_say_nothing(tmp_path: Path, value: str) -> None:
    info = f"INFO:x] Record counts: CUPTI stopped early? {value}"
    trace = read(_write(tmp_path, _steps(), "counts0.synthetic.json", INFO=[info]))
    assert "gpu_tracing_stopped_early" not in trace.meta
    assert not _said(trace, "stopped collecting")


# ------------------------------------------------------------------------ events at ts 0 of dur 0


def test_unplaced_events_are_counted_with_their_device_ops(tmp_path: Path) -> None:
    """Two placed steps and, read "ts": 0, "dur": 0: one step, one launch call and two kernels: 4 events, 2
    of them device ops, all left out (z1's launch call is zeroed too, z2 has none), with the exact warning."""
    events = _steps()
    events += [
        kineto_event("user_annotation", "ProfilerStep#9", 0, 0, PID, TID),
        kineto_event("cuda_runtime", "cudaLaunchKernel", 0, 0, PID, TID, correlation=900),
        _device("kernel", "z1", 0, 0, 900),
        _device("kernel", "z2", 0, 0, 901),
    ]
    trace = read(_write(tmp_path, events, "unplaced.synthetic.json"))
    assert trace.ops.height == 2
    assert trace.api.height == 2
    assert _said(trace, "ts 0.000 and dur 0.000") == [
        "4 events (2 of them device ops) read ts 0.000 and dur 0.000, as torch.profiler writes an event it could "
        "not place in time (pytorch#188481): their times are unknown: they are left out of every figure: the "
        "steps, operators, calls and device work they record count nowhere, and an iteration that held some of "
        "them is short by them"
    ]


def test_an_unplaced_device_op_whose_launch_call_is_placed_stays_untimed(tmp_path: Path) -> None:
    """The twin: z1 zeroed but its launch call (correlation 900) placed: z1 stays, untimed (no start, no end),
    z2 (no call) is left out with the zeroed step; the warning counts both, and no 'no readable ts' line
    says z1 again."""
    events = _steps()
    events += [
        kineto_event("user_annotation", "ProfilerStep#9", 0, 0, PID, TID),
        kineto_event("cuda_runtime", "cudaLaunchKernel", 2_000, 5, PID, TID, correlation=900),
        _device("kernel", "z1", 0, 0, 900),
        _device("kernel", "z2", 0, 0, 901),
    ]
    trace = read(_write(tmp_path, events, "unplaced_kept.synthetic.json"))
    assert trace.ops.height == 3
    assert trace.ops.filter(pl.col("start").is_null() & pl.col("end").is_null())["name"].to_list() == ["z1"]
    assert _said(trace, "ts 0.000 and dur 0.000") == [
        "3 events (2 of them device ops) read ts 0.000 and dur 0.000, as torch.profiler writes an event it could "
        "not place in time (pytorch#188481): their times are unknown: 2 of them are left out of every figure: the "
        "steps, operators, calls and device work they record count nowhere, and an iteration that held some of "
        "them is short by them; 1 device ops whose launch calls are placed count as kernels of unknown time in "
        "the iterations those calls lie in (in no busy time)"
    ]
    assert not _said(trace, "no readable ts")


def test_a_zeroed_event_whose_duration_does_not_read_is_kept(tmp_path: Path) -> None:
    """ts 0 with a dur that does not read (a string) is not 'ts 0.000, dur 0.000': no such warning."""
    events = _steps() + [kineto_event("user_annotation", "odd", 0, "n/a", PID, TID)]
    trace = read(_write(tmp_path, events, "unread_dur.synthetic.json"))
    assert not _said(trace, "ts 0.000 and dur 0.000")


def test_zeroed_host_events_alone_are_left_out_without_a_refusal(tmp_path: Path) -> None:
    """Zeroed events none of which is a device op: left out with the count '(0 of them device ops)'."""
    events = _steps() + [kineto_event("cpu_op", "aten::zero_", 0, 0, PID, TID)]
    trace = read(_write(tmp_path, events, "host_zeroed.synthetic.json"))
    assert _said(trace, "ts 0.000 and dur 0.000")[0].startswith(
        "1 events (0 of them device ops) read ts 0.000"
    )


def test_every_device_op_zeroed_is_refused_with_the_counts(tmp_path: Path) -> None:
    events = [e for e in _steps() if e["cat"] != "kernel"] + [_device("kernel", "z", 0, 0, 100)]
    path = _write(tmp_path, events, "all_ops_zeroed.synthetic.json")
    with pytest.raises(TraceFormatError) as err:
        read(path)
    assert err.value.path == str(path)
    assert (
        "1 events (1 of them device ops) read ts 0.000 and dur 0.000, as torch.profiler writes an event it could "
        "not place in time (pytorch#188481): their times are unknown, and they are all of its device ops, so the "
        "device's busy time is not known: profile again (a shorter capture, or another torch version)"
    ) in str(err.value)


def test_a_trace_whose_every_event_is_zeroed_is_not_said_to_be_zeroed(tmp_path: Path) -> None:
    """When nothing is placed, no event is 'unplaced beside placed ones': the rule leaves the trace alone."""
    events = [
        kineto_event("user_annotation", "ProfilerStep#0", 0, 0, PID, TID),
        kineto_event("cpu_op", "aten::mm", 0, 0, PID, TID),
    ]
    trace = read(_write(tmp_path, events, "all_zeroed.synthetic.json"))
    assert not _said(trace, "ts 0.000 and dur 0.000")


# ------------------------------------------------------------------------ vendors' fork categories


def test_unread_fork_categories_beside_device_ops_are_said_exactly_and_sorted(tmp_path: Path) -> None:
    """Beside CUDA kernels: ' npu_runtime ' (spaces, upper case elsewhere), 'AAA_driver', 'zz_kernel',
    'musa_memset', and 'other_thing' (no fork suffix: not a fork's). Calls first, then work, each sorted."""
    events = _steps()
    for i, cat in enumerate(["zz_kernel", " npu_runtime ", "musa_memset", "AAA_driver", "other_thing"]):
        events.append(kineto_event(cat, f"e{i}", 5_000_100 + i, 1, PID, TID))
    trace = read(_write(tmp_path, events, "forks.synthetic.json"))
    calls = (
        "(a runtime tracekit does not know): the calls they record are left out of the launch counts and of the "
        "host's API time, and the device ops they launched are not linked to them"
    )
    work = (
        "(device work of a category tracekit does not know): what they record is left out of the GPU busy time "
        "and of every device figure, which may be short by it"
    )
    assert _said(trace, "were not read (") == [
        f"events of category ' npu_runtime ' were not read {calls}",
        f"events of category 'AAA_driver' were not read {calls}",
        f"events of category 'musa_memset' were not read {work}",
        f"events of category 'zz_kernel' were not read {work}",
    ]


def test_read_categories_in_another_case_are_no_fork(tmp_path: Path) -> None:
    """'CUDA_RUNTIME' and 'MLU_Runtime' are categories tracekit reads (any case): no fork warning."""
    events = _steps()
    events.append(kineto_event("CUDA_RUNTIME", "cudaMemsetAsync", 5_000_100, 1, PID, TID))
    events.append(kineto_event("MLU_Runtime", "cnrtQueueSync", 5_000_200, 1, PID, TID))
    trace = read(_write(tmp_path, events, "cases.synthetic.json"))
    assert not _said(trace, "were not read (")


def test_a_trace_without_device_ops_names_its_fork_categories_sorted(tmp_path: Path) -> None:
    """Without device ops, the fork's categories refuse the trace, named sorted: calls, work and a read fork
    runtime ('MLU_runtime') alike."""
    events = [
        kineto_event("user_annotation", "ProfilerStep#0", 1000, 900, PID, TID),
        kineto_event("cpu_op", "aten::mm", 1010, 100, PID, TID),
        kineto_event("zz_memcpy", "copy", 1200, 10, PID, TID),
        kineto_event("MLU_runtime", "cnInvokeKernel", 1020, 10, PID, TID),
        kineto_event("abc_driver", "drv", 1300, 10, PID, TID),
    ]
    with pytest.raises(TraceFormatError) as err:
        read(_write(tmp_path, events, "fork_cpu.synthetic.json"))
    assert (
        "the trace records an accelerator's runtime calls (events of category 'MLU_runtime', events of category "
        "'abc_driver', events of category 'zz_memcpy') but no event of a device-op category tracekit reads "
        "(kernel, gpu_memcpy, gpu_memset, mtia_ccp_events, mlu_memcpy, mlu_memset): the device's work is not in "
        "it"
    ) in str(err.value)


def test_known_runtimes_and_fork_categories_are_named_together(tmp_path: Path) -> None:
    """Two 'privateuse1_runtime' calls and one 'mtia_runtime', most first, then the fork categories."""
    events = [
        kineto_event("user_annotation", "ProfilerStep#0", 1000, 900, PID, TID),
        kineto_event("mtia_runtime", "a", 1010, 10, PID, TID),
        kineto_event("privateuse1_runtime", "b", 1030, 10, PID, TID),
        kineto_event("privateuse1_runtime", "c", 1050, 10, PID, TID),
        kineto_event("xpu2_kernel", "k", 1100, 10, PID, TID),
    ]
    with pytest.raises(TraceFormatError) as err:
        read(_write(tmp_path, events, "runtimes.synthetic.json"))
    assert (
        "the trace records an accelerator's runtime calls (2 privateuse1_runtime events, 1 mtia_runtime events, "
        "events of category 'xpu2_kernel') but no event"
    ) in str(err.value)


def test_runtimes_of_equal_counts_are_named_in_order_of_category(tmp_path: Path) -> None:
    """One call each of four runtime categories, written in reverse order: named by category, ascending."""
    events = [kineto_event("user_annotation", "ProfilerStep#0", 1000, 900, PID, TID)]
    for i, cat in enumerate(["privateuse1_runtime", "privateuse1_driver", "mtia_runtime", "glow_runtime"]):
        events.append(kineto_event(cat, f"c{i}", 1010 + 20 * i, 10, PID, TID))
    with pytest.raises(TraceFormatError) as err:
        read(_write(tmp_path, events, "ties.synthetic.json"))
    assert (
        "runtime calls (1 glow_runtime events, 1 mtia_runtime events, 1 privateuse1_driver events, 1 "
        "privateuse1_runtime events) but no event"
    ) in str(err.value)


def test_a_gaudi_trace_is_named_as_such(tmp_path: Path) -> None:
    """Intel Gaudi's hpu_op events (host calls and engine work alike) beside a fork category: the Gaudi line,
    with every category found."""
    events = [
        kineto_event("user_annotation", "ProfilerStep#0", 1000, 900, PID, TID),
        kineto_event("hpu_op", "a", 1010, 10, PID, TID),
        kineto_event("hpu_op", "b", 1030, 10, PID, TID),
        kineto_event("hpu_op", "c", 1050, 10, PID, TID),
        kineto_event("mtia_runtime", "d", 1070, 10, PID, TID),
        kineto_event("zz_kernel", "e", 1090, 10, PID, TID),
    ]
    with pytest.raises(TraceFormatError) as err:
        read(_write(tmp_path, events, "gaudi.synthetic.json"))
    assert str(err.value).endswith(
        "an Intel Gaudi (HPU) trace (3 hpu_op events, 1 mtia_runtime events, events of category 'zz_kernel', no "
        "event of a device-op category tracekit reads: kernel, gpu_memcpy, gpu_memset, mtia_ccp_events, "
        "mlu_memcpy, mlu_memset): tracekit does not read Gaudi's device work (its engines' hpu_op events), so the "
        "device's busy time is not known, and read as a CPU run its CPU operators' time would stand for the "
        "device's; tracekit reads the device activity of CUDA, ROCm, Intel XPU and MTIA traces"
    )


def test_a_runtime_trace_names_the_whole_reason(tmp_path: Path) -> None:
    events = [
        kineto_event("user_annotation", "ProfilerStep#0", 1000, 900, PID, TID),
        kineto_event("privateuse1_driver", "a", 1010, 10, PID, TID),
    ]
    with pytest.raises(TraceFormatError) as err:
        read(_write(tmp_path, events, "driver.synthetic.json"))
    assert str(err.value).endswith(
        "the trace records an accelerator's runtime calls (1 privateuse1_driver events) but no event of a "
        "device-op category tracekit reads (kernel, gpu_memcpy, gpu_memset, mtia_ccp_events, mlu_memcpy, "
        "mlu_memset): the device's work is not in it (its activity was not recorded, or the backend names it "
        "otherwise), so its busy time is not known, and read as a CPU run its CPU operators' time would stand "
        "for the device's; profile the device activity too"
    )
