"""fixfar18: the far-timestamp rule (tracekit/readers/timestamps.py) for ranges, and for device ops whose launch
call was left out as far, in the nsys SQLite and Kineto readers.

Every trace is hand-built here (SYNTHETIC: file names say so). Bases: an nsys export of NVTX 'iteration' ranges of
1 ms (:func:`_nsys`: a kernel at 100-300 µs and one at 400-500 µs into each, launched 50-40 µs before: latency
1.0 ms, GPU busy 0.3 ms, 2 kernels) and tests.hostile.small_trace_events (Kineto: an 'iteration' annotation of
900 µs with 3 kernels of 10 µs: latency 0.9, busy 0.03 ms), moved to Kineto's epoch-µs clock.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from tests.hostile import analyze_json, small_trace_events, write_json
from tests.nsys_builder import NsysBuilder
from tracekit.readers.timestamps import FAR_NS, far_events, launched_by_far_calls

S_NS = 10**9
HOUR_NS = FAR_NS
T0_US = 1_700_000_000_000_000
HOUR_US = 3_600 * 10**6
CAPTURE = 20_000_000
NEAR = [10_000_000, 12_000_000, 14_000_000]


def _s(values: list[int | None]) -> pl.Series:
    return pl.Series(values, dtype=pl.Int64)


def _nsys(
    path: Path,
    starts: list[int],
    capture_ns: int | None = CAPTURE,
    call_shift: dict[int, int] | None = None,
    call: str = "cudaLaunchKernel_v7000",
    graph: bool = False,
    copy: bool = False,
    driver_twin: bool = False,
    far_ranges: list[tuple[int, int]] = (),  # type: ignore[assignment]
) -> Path:
    """nsys export (SYNTHETIC) of a 1-ms NVTX 'iteration' at each of ``starts`` (ns), each with a kernel at
    100-300 µs and one at 400-500 µs into it, launched by ``call`` 50-40 µs before each (correlation ids 1, 2,
    ... in order). ``graph``: both kernels of an iteration launched by its first call (one correlation id, a
    CUDA graph's). ``copy``: a memcpy of 100 µs at 600-700 µs into each, launched by cudaMemcpyAsync at 550 µs
    (correlation 100 + i). ``driver_twin``: each launch also recorded as cuLaunchKernel nested in it (same id).
    ``call_shift``: correlation id -> ns added to its calls' times; ``far_ranges``: more 'iteration' ranges
    (start, end) with no work; ``capture_ns``: ANALYSIS_DETAILS' duration."""
    shift = call_shift or {}
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    corr = 1
    for i, t0 in enumerate(starts):
        b.nvtx_range(t0, t0 + 1_000_000, "iteration")
        first = corr
        for k, (start, end) in enumerate(((100, 300), (400, 500))):
            c = first if graph else corr
            if not (graph and k):
                at = t0 + start * 1000 - 50_000 + shift.get(c, 0)
                b.runtime(at, at + 10_000, call, correlation=c)
                if driver_twin:
                    b.driver(at + 2_000, at + 8_000, "cuLaunchKernel", correlation=c)
            b.kernel(
                t0 + start * 1000, t0 + end * 1000, f"k{start}", correlation=c, graph=1 if graph else None
            )
            corr += 1
        if copy:
            c = 100 + i
            at = t0 + 550_000 + shift.get(c, 0)
            b.runtime(at, at + 10_000, "cudaMemcpyAsync_v3020", correlation=c)
            b.memcpy(t0 + 600_000, t0 + 700_000, correlation=c)
    for start, end in far_ranges:
        b.nvtx_range(start, end, "iteration")
    if capture_ns is not None:
        b.capture(capture_ns, start_time=0)
    return b.write(path)


def _rows(doc: dict[str, Any]) -> list[tuple[float, float, int]]:
    return [(it["latency_ms"], it["gpu_busy_ms"], it["kernels"]) for it in doc["iterations"]]


def _analyze(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, Any]:
    code, doc, err = analyze_json(capsys, str(path))
    assert code == 0 and doc is not None, err
    return doc


# ------------------------------------------------------------------- ranges: timestamps.far_events


def test_a_lone_range_hours_from_all_work_is_far() -> None:
    ops, calls = _s([0, 10, 20]), _s([-5, 5, 15])
    far, warning = far_events(
        {"device ops": ops, "API calls": calls}, ranges={"ranges": _s([-10, 2, 5 * HOUR_NS])}
    )
    assert far["ranges"].to_list() == [False, False, True]
    assert far["device ops"].to_list() == [False] * 3 and far["API calls"].to_list() == [False] * 3
    assert warning is not None and warning.startswith(
        "1 ranges stamped more than an hour from every other event"
    )
    assert warning.endswith(
        "left out: no profiler records a range so far from all the work of its capture (a damaged row or an exporter's bug), and read as it is such a range becomes an iteration hours long, or one without work"
    )


def test_a_range_beside_other_events_is_not_far() -> None:
    """A far range with an operator beside it (a CPU phase of its own), or a far range beside far device ops and
    calls (a phase the profiler resumed), is kept; so is any range of a trace of ranges alone (nothing else
    places it)."""
    ops = _s([0, 10, 20])
    far, warning = far_events(
        {"device ops": ops}, anchors=[_s([1, 5 * HOUR_NS + 1])], ranges={"ranges": _s([-10, 5 * HOUR_NS])}
    )
    assert far["ranges"].to_list() == [False, False] and warning is None
    far, warning = far_events(
        {"device ops": _s([0, 10, 20, 5 * HOUR_NS + 2])}, ranges={"ranges": _s([-10, 5, 5 * HOUR_NS])}
    )
    assert far["ranges"].to_list() == [False] * 3 and far["device ops"].to_list() == [False] * 4
    assert warning is None
    far, warning = far_events({"device ops": _s([])}, ranges={"ranges": _s([0, 1, 2, 5 * HOUR_NS])})
    assert far["ranges"].to_list() == [False] * 4 and warning is None


def test_far_ranges_that_are_a_majority_are_kept_and_said() -> None:
    """2 of 3 ranges 5 h from the ops (the ops' cluster, 3 of 5 starts, is the body): not a minority of the
    ranges, so kept, and said."""
    far, warning = far_events(
        {"device ops": _s([0, 1])}, ranges={"ranges": _s([2, 5 * HOUR_NS, 5 * HOUR_NS + 1])}
    )
    assert far["ranges"].to_list() == [False] * 3
    assert warning is not None and warning.startswith("2 of 3 ranges are stamped more than an hour")


def test_ranges_outside_a_stated_capture() -> None:
    """With a capture of 20 ms: a range 5 h after it with no work beside it is far (the capture's words); one
    at 70 s beside device ops there contradicts the record, which is then not used (nothing left out); one 30 s
    after the capture's end (inside the 60-s slack) is no range outside it."""
    ops = _s([10_000_000, 12_000_000])
    far, warning = far_events(
        {"device ops": ops}, capture=(0, CAPTURE), ranges={"ranges": _s([9_000_000, 11_000_000, 5 * HOUR_NS])}
    )
    assert far["ranges"].to_list() == [False, False, True]
    assert warning is not None and warning.startswith(
        "1 ranges stamped outside the capture (which the trace says ran from 0 to 20,000,000 ns), e.g. one at "
        "18,000,000,000,000 ns, 5 hours after its end, left out"
    )
    far, warning = far_events(
        {"device ops": _s([10_000_000, 12_000_000, 70 * S_NS + 5])},
        capture=(0, CAPTURE),
        ranges={"ranges": _s([9_000_000, 11_000_000, 70 * S_NS])},
    )
    assert far["ranges"].to_list() == [False] * 3 and far["device ops"].to_list() == [False] * 3
    assert warning is not None and warning.startswith(
        "the trace says its capture ran from 0 to 20,000,000 ns, but 1 of its ranges and 1 other event lie "
        "outside it"
    )
    far, warning = far_events(
        {"device ops": ops}, capture=(0, CAPTURE), ranges={"ranges": _s([9_000_000, CAPTURE + 30 * S_NS])}
    )
    assert far["ranges"].to_list() == [False, False] and warning is None


# ------------------------------------------------------------------------------- ranges: the readers


def test_nsys_range_hours_after_the_capture_is_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _nsys(
        tmp_path / "far_range.synthetic.sqlite", NEAR, far_ranges=[(5 * HOUR_NS, 5 * HOUR_NS + 10**6)]
    )
    doc = _analyze(capsys, path)
    assert _rows(doc) == [(1.0, 0.3, 2)] * 3
    assert doc["warnings"][0].startswith("1 NVTX ranges stamped outside the capture"), doc["warnings"]


def test_nsys_range_inside_the_capture_slack_is_still_an_iteration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pin: an empty range 30 s after a 20-ms capture's end (inside the 60-s slack) is read (an iteration of
    no work, said as such by the analysis), nothing left out."""
    late = CAPTURE + 30 * S_NS
    doc = _analyze(
        capsys, _nsys(tmp_path / "slack.synthetic.sqlite", NEAR, far_ranges=[(late, late + 10**6)])
    )
    assert _rows(doc) == [(1.0, 0.3, 2)] * 3 + [(1.0, 0.0, 0)]
    assert not any("stamped" in w for w in doc["warnings"]), doc["warnings"]


def test_nsys_range_hours_from_the_rest_without_a_capture_is_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _nsys(tmp_path / "far_range_nocap.synthetic.sqlite", NEAR, capture_ns=None,
                 far_ranges=[(5 * HOUR_NS, 5 * HOUR_NS + 10**6)])  # fmt: skip
    doc = _analyze(capsys, path)
    assert _rows(doc) == [(1.0, 0.3, 2)] * 3
    assert doc["warnings"][0].startswith("1 NVTX ranges stamped more than an hour from every other event")


def _kineto(tmp_path: Path, name: str, events: list[dict[str, Any]]) -> Path:
    return write_json(tmp_path / name, {"traceEvents": events, "traceName": "synthetic"})


def test_kineto_annotation_beside_an_operator_hours_later_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pin: an annotation 5 h after the rest with a CPU operator inside it is a CPU phase of its own (kept, an
    iteration of no device work), not a damaged row."""
    events = small_trace_events(4, t0=T0_US)
    late = T0_US + 5 * HOUR_US
    events.append(dict(events[0], ts=late))
    events.append(
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": late + 10, "dur": 50}
    )
    doc = _analyze(capsys, _kineto(tmp_path, "cpu_phase.synthetic.json", events))
    assert _rows(doc) == [(0.9, 0.03, 3)] * 4 + [(0.9, 0.0, 0)]
    assert not any("stamped" in w for w in doc["warnings"]), doc["warnings"]


# ------------------------------------------------------------- device ops whose launch call was far


def test_launched_by_far_calls_needs_every_call_of_the_id_gone() -> None:
    calls = pl.DataFrame({"pid": [1, 1, 1, 2], "correlation": [1, 1, 2, 2]})
    far = pl.Series([True, False, True, False])
    ops = pl.DataFrame({"pid": [1, 1, 2, 1], "correlation": [1, 2, 2, None]})
    # id 1 of pid 1 has a kept twin; id 2 of pid 1 is gone (pid 2's id 2 is another process's)
    assert launched_by_far_calls(ops, calls, far).to_list() == [False, True, False, False]
    assert launched_by_far_calls(ops, calls, far, ["correlation"]).to_list() == [False, False, False, False]
    assert launched_by_far_calls(ops, calls, pl.Series([False] * 4)).to_list() == [False] * 4


def test_nsys_copy_whose_call_was_far_counts_in_its_iteration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _nsys(tmp_path / "far_copy_call.synthetic.sqlite", NEAR, copy=True, call_shift={100: 3 * HOUR_NS})
    doc = _analyze(capsys, path)
    assert _rows(doc) == [(1.0, 0.4, 2)] * 3
    assert doc["warnings"][0].startswith("1 API calls stamped outside the capture"), doc["warnings"]
    assert "1 device ops launched by those calls lie among the rest" in doc["warnings"][0]
    assert not any("before the capture began" in w for w in doc["warnings"]), doc["warnings"]


def test_nsys_graph_launch_far_keeps_all_its_kernels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One launch call of correlation 1 for both kernels of iteration 0 (a CUDA graph's), stamped 3 h after the
    capture: both kernels keep iteration 0 (busy 0.3 ms)."""
    path = _nsys(tmp_path / "far_graph_call.synthetic.sqlite", NEAR, call="cudaGraphLaunch_v10000", graph=True,
                 call_shift={1: 3 * HOUR_NS})  # fmt: skip
    doc = _analyze(capsys, path)
    assert _rows(doc) == [(1.0, 0.3, 2)] * 3
    assert "2 device ops launched by those calls lie among the rest" in doc["warnings"][0], doc["warnings"]


def test_nsys_far_runtime_call_with_a_near_driver_twin_keeps_the_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """cudaLaunchKernel of id 1 stamped 3 h away but its nested cuLaunchKernel (same id) where it was: the kernel
    keeps its correlation id (its launch is the driver call's), no op is placed by its own start (the reader
    collapses one launch recorded twice to the outermost row, the earlier: the driver's, before the far rule)."""
    path = _nsys(tmp_path / "far_twin.synthetic.sqlite", NEAR, driver_twin=True, call_shift={1: 0})
    # shift only the runtime row of id 1 (the driver row stays)
    import sqlite3

    con = sqlite3.connect(path)
    con.execute(
        "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = start + 10800000000000, end = end + 10800000000000 "
        "WHERE correlationId = 1 AND eventClass = 0"
    )
    con.commit()
    con.close()
    doc = _analyze(capsys, path)
    assert _rows(doc) == [(1.0, 0.3, 2)] * 3
    # (the reader keeps one call per (pid, correlation), the outermost: the driver row, the earlier one)
    assert not any("lie among the rest" in w or "no correlation id" in w for w in doc["warnings"])


def test_nsys_far_call_of_a_far_kernel_goes_with_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pin: call and kernel of id 1 both 3 h away: both left out, nothing placed by its own start (iteration 0:
    one kernel, 0.1 ms)."""
    path = _nsys(tmp_path / "far_both.synthetic.sqlite", NEAR, call_shift={1: 3 * HOUR_NS})
    import sqlite3

    con = sqlite3.connect(path)
    con.execute(
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + 10800000000000, end = end + 10800000000000 "
        "WHERE correlationId = 1"
    )
    con.commit()
    con.close()
    doc = _analyze(capsys, path)
    assert _rows(doc) == [(1.0, 0.1, 1), (1.0, 0.3, 2), (1.0, 0.3, 2)]
    assert doc["warnings"][0].startswith("1 device ops and 1 API calls stamped outside the capture")
    assert not any("lie among the rest" in w for w in doc["warnings"]), doc["warnings"]


def test_kineto_far_call_linked_by_a_flow_event_keeps_its_kernel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The kernels carry no correlation arg; ac2g flow events link them (the flow's end at the kernel's ts). The
    first call, 3 h away, is left out; its kernel, linked by the flow, keeps iteration 0 by its own start."""
    events = small_trace_events(4, t0=T0_US)
    flows = []
    for e in events:
        corr = e.get("args", {}).get("correlation")
        if corr is None:
            continue
        if e["cat"] == "kernel":
            del e["args"]["correlation"]
            flows.append({"ph": "f", "bp": "e", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": e["pid"],
                          "tid": e["tid"], "ts": e["ts"]})  # fmt: skip
        else:
            flows.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": e["pid"], "tid": e["tid"],
                          "ts": e["ts"]})  # fmt: skip
    first = next(e for e in events if e["cat"] == "cuda_runtime")
    first["ts"] += 3 * HOUR_US
    doc = _analyze(capsys, _kineto(tmp_path, "flow_far_call.synthetic.json", events + flows))
    assert _rows(doc) == [(0.9, 0.03, 3)] * 4
    assert doc["warnings"][0].startswith("1 API calls stamped more than an hour"), doc["warnings"]
    assert "1 device ops launched by those calls lie among the rest" in doc["warnings"][0]
    assert not any("launched before the capture" in w for w in doc["warnings"]), doc["warnings"]


def test_kineto_far_call_whose_id_another_call_carries_keeps_the_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """cudaLaunchKernel of id 1 3 h away, its cuLaunchKernel (cuda_driver, same id) where it was: the kernel keeps
    its link, and its launch time is the driver call's."""
    events = small_trace_events(4, t0=T0_US)
    first = next(e for e in events if e["cat"] == "cuda_runtime")
    twin = dict(first, cat="cuda_driver", name="cuLaunchKernel", ts=first["ts"] + 1, dur=3)
    first["ts"] += 3 * HOUR_US
    doc = _analyze(capsys, _kineto(tmp_path, "twin_far_call.synthetic.json", [*events, twin]))
    assert _rows(doc) == [(0.9, 0.03, 3)] * 4
    assert doc["warnings"][0].startswith("1 API calls stamped more than an hour"), doc["warnings"]
    assert not any("lie among the rest" in w or "no correlation id" in w for w in doc["warnings"])


# ----------------------------------------------------------------------------- a range's damaged end


def test_a_range_ending_hours_after_everything_is_far() -> None:
    """A range's end judged as an event's: past the stated capture (with its slack), or more than FAR_NS after
    its cluster's last start; a range over all the work, ending with it, is kept."""
    ops = _s([10, 20, 30])
    starts, ends = _s([0, 5, 9]), _s([5 * HOUR_NS, 9, 40])
    far, warning = far_events({"device ops": ops}, ranges={"ranges": starts}, ends={"ranges": ends})
    assert far["ranges"].to_list() == [True, False, False]
    assert warning is not None and warning.startswith(
        "1 ranges stamped to end more than an hour after every other event began, e.g. one ending at "
        "18,000,000,000,000 ns, left out"
    )
    far, warning = far_events(
        {"device ops": ops}, ranges={"ranges": starts}, ends={"ranges": _s([40, 9, 40])}
    )
    assert far["ranges"].to_list() == [False] * 3 and warning is None
    far, warning = far_events(
        {"device ops": ops},
        capture=(0, CAPTURE),
        ranges={"ranges": starts},
        ends={"ranges": _s([CAPTURE + 60 * S_NS + 1, CAPTURE + 60 * S_NS, None])},
    )
    assert far["ranges"].to_list() == [True, False, False]
    assert warning is not None and warning.startswith("1 ranges stamped to end after the capture")


@pytest.mark.parametrize("capture", [CAPTURE, None])
def test_nsys_iteration_whose_end_was_damaged_does_not_swallow_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], capture: int | None
) -> None:
    """Iteration 0's NVTX end stamped 5 h later: it had been one iteration of 17,999,990 ms holding the other
    two (left out as nested in it). Now it is left out, said, and the other two read as they are; iteration 0's
    2 kernels count in no iteration (said)."""
    path = _nsys(tmp_path / "far_end.synthetic.sqlite", NEAR, capture_ns=capture)
    import sqlite3

    con = sqlite3.connect(path)
    con.execute("UPDATE NVTX_EVENTS SET end = 18000000000000 WHERE rowid = 1")
    con.commit()
    con.close()
    doc = _analyze(capsys, path)
    assert _rows(doc) == [(1.0, 0.3, 2)] * 2
    assert doc["warnings"][0].startswith("1 NVTX ranges stamped to end "), doc["warnings"]
    assert any(
        w.startswith("2 device ops (0.300 ms busy) were launched outside every iteration")
        for w in doc["warnings"]
    )


def test_kineto_annotation_whose_dur_was_damaged_does_not_swallow_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = small_trace_events(4, t0=T0_US)
    events[0]["dur"] = 5 * HOUR_US  # the first 'iteration' annotation
    doc = _analyze(capsys, _kineto(tmp_path, "far_dur.synthetic.json", events))
    assert _rows(doc) == [(0.9, 0.03, 3)] * 3
    assert doc["warnings"][0].startswith(
        "1 annotations stamped to end more than an hour after every other event"
    )


@pytest.mark.parametrize("capture", [CAPTURE, None])
def test_nsys_range_hours_before_the_capture_is_said_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], capture: int | None
) -> None:
    """A range 5 h before the rest (start < 0) is left out as far, said once: not a second time as a range that
    'began before the capture started'."""
    path = _nsys(tmp_path / "far_before.synthetic.sqlite", NEAR, capture_ns=capture,
                 far_ranges=[(-5 * HOUR_NS, -5 * HOUR_NS + 10**6)])  # fmt: skip
    doc = _analyze(capsys, path)
    assert _rows(doc) == [(1.0, 0.3, 2)] * 3
    assert doc["warnings"][0].startswith("1 NVTX ranges stamped "), doc["warnings"]
    assert len(doc["warnings"]) == 1, doc["warnings"]


def test_kineto_cpu_only_trace_leaves_out_a_lone_annotation_hours_away(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CPU-only Kineto trace (annotations and operators, no device op or call): an annotation 5 h after the
    rest with nothing beside it is left out; the 3 iterations stay (each 0.9 ms)."""
    events: list[dict[str, Any]] = []
    for i in range(3):
        ts = T0_US + i * 1000
        events.append({"ph": "X", "cat": "user_annotation", "name": "iteration", "pid": 1, "tid": 1, "ts": ts,
                       "dur": 900})  # fmt: skip
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": ts + 100,
                       "dur": 500})  # fmt: skip
    events.append(dict(events[0], ts=T0_US + 5 * HOUR_US))
    doc = _analyze(capsys, _kineto(tmp_path, "cpu_far.synthetic.json", events))
    assert [it["latency_ms"] for it in doc["iterations"]] == [0.9, 0.9, 0.9]
    assert doc["warnings"][0].startswith("1 annotations stamped more than an hour"), doc["warnings"]


def test_nsys_far_runtime_row_before_its_near_driver_twin_keeps_the_twin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """cudaLaunchKernel of id 1 stamped 3 h *before* the capture, its nested cuLaunchKernel (same id) where it
    was. The reader keeps one row per launch (the outermost: the earliest), which had been the damaged one: it
    was then left out as far, the kernel lost its link (placed by its own start, 'no correlation id') and
    iteration 0 counted 1 launch of 2. The far rows are now left out before the collapse: 2 launches, the link
    kept."""
    path = _nsys(tmp_path / "far_twin_before.synthetic.sqlite", NEAR, driver_twin=True)
    import sqlite3

    con = sqlite3.connect(path)
    con.execute(
        "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = start - 10800000000000, end = end - 10800000000000 "
        "WHERE correlationId = 1 AND eventClass = 0"
    )
    con.commit()
    con.close()
    doc = _analyze(capsys, path)
    assert [(*row, it["launches"]) for row, it in zip(_rows(doc), doc["iterations"], strict=True)] == [
        (1.0, 0.3, 2, 2)
    ] * 3
    assert doc["warnings"][0].startswith("1 API calls stamped outside the capture"), doc["warnings"]
    assert len(doc["warnings"]) == 1, doc["warnings"]
