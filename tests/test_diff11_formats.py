"""Differential and property tests of the analysis across formats (diff11).

Hypothesis draws random workloads (tests/test_diff11_workload.py: iterations of kernels, copies, memsets,
graph launches, syncs and stream waits on several streams and devices, host gaps, launch delays, work that
outlives its range, iterations without device work, nested and overlapping ranges, a helper thread's
launches, work launched before the capture), each written as an Nsight Systems SQLite export and as a Kineto
JSON trace (all synthetic). Checked:

- the per-iteration figures (latency, busy, idle, the five causes and the device-side split, overhead,
  counts, launch statistics) and the verdict are identical across the two formats;
- where the ranges neither nest nor overlap, they equal the truth worked out from the workload itself
  (:func:`tests.test_diff11_workload.truth`, no tracekit code);
- invariants: causes sum to the idle time, busy <= latency, busy + idle = latency; unchanged by shuffling the
  events in the file and by shifting every timestamp by a constant (up to nsys timestamps near 2^62).
"""

from __future__ import annotations

import random
import re
import tempfile
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_diff11_workload import CAUSE_NAMES, Params, generate, truth, write_kineto, write_nsys
from tracekit.analyzers.iterations import analyze_iterations
from tracekit.readers import read_trace

#: the per-iteration columns compared across formats (those present)
COMPARED = (
    "index",
    "latency_ms",
    "cpu_ms",
    "gpu_busy_ms",
    "framework_overhead_ms",
    "gpu_utilization",
    "idle_ms",
    "idle_gaps",
    "kernels",
    "launches",
    "launch_api_us",
    "launch_latency_us",
    "queue_us",
    "synchronized",
    *(f"{c}_ms" for c in CAUSE_NAMES),
)
DEVICE_SPLIT = ("launch_latency_ns", "queued_ns", "stream_wait_ns", "launch_lag_ns")
#: 2^62 - 10^12: nsys timestamps near 2^62 (Kineto's µs stay below its 9.2e15 µs limit)
BASES = (0, 123_456_789, 1_700_000_000_000_000_000, (1 << 62) - 10**12)
SETTINGS = settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@st.composite
def workloads(draw: st.DrawFn, overlapping: bool = True) -> tuple[Params, int]:
    p = Params(
        iterations=draw(st.integers(1, 5)),
        streams=tuple(draw(st.sampled_from([(7,), (7, 13), (7, 13, 21)]))),
        copies=draw(st.booleans()),
        memsets=draw(st.booleans()),
        graphs=draw(st.booleans()),
        syncs=draw(st.sampled_from(["none", "some", "all"])),
        empty_iterations=draw(st.booleans()),
        second_thread=draw(st.booleans()),
        devices=draw(st.sampled_from([1, 1, 2])),
        stream_waits=draw(st.booleans()),
        whole_us=draw(st.booleans()),
        tight=draw(st.booleans()),
        nested=overlapping and draw(st.booleans()),
        foreign=draw(st.booleans()),
        worker=draw(st.booleans()),
    )
    return p, draw(st.integers(0, 2**32))


def _result(path: Path) -> tuple[pl.DataFrame, pl.DataFrame | None, str | None, list[str]]:
    trace = read_trace(path)
    own = set(trace.warnings)  # the reader's (format-specific) warnings are not compared
    a = analyze_iterations(trace)
    frame = a.iterations.select([c for c in COMPARED if c in a.iterations.columns])
    split = a.attribution.iterations.select(DEVICE_SPLIT) if a.attribution is not None else None
    # what the analysis says (numbers in words aside: a format's own advice and reader notes differ)
    said = sorted(re.sub(r"\(nsys profile.*|\(torch\.profiler.*", "", w) for w in a.warnings if w not in own)
    return frame, split, a.summary.bound, said


def _same(a: tuple, b: tuple, what: str) -> None:
    assert a[0].equals(b[0]), f"{what}: per-iteration figures differ\n{a[0]}\n{b[0]}"
    assert (a[1] is None) == (b[1] is None) and (a[1] is None or a[1].equals(b[1])), f"{what}: device split"
    assert a[2] == b[2], f"{what}: verdict {a[2]} vs {b[2]}"
    assert a[3] == b[3], f"{what}: warnings\n{a[3]}\n{b[3]}"


@SETTINGS
@given(workloads())
def test_nsys_and_kineto_of_one_workload_give_the_same_analysis(drawn: tuple[Params, int]) -> None:
    p, seed = drawn
    w = generate(random.Random(seed), p)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        nsys = _result(write_nsys(w, d / "w.synthetic.sqlite"))
        kineto = _result(write_kineto(w, d / "w.synthetic.json", integer=p.whole_us))
        _same(nsys, kineto, "nsys vs kineto")


@SETTINGS
@given(workloads(), st.sampled_from(BASES))
def test_the_analysis_is_unchanged_by_event_order_and_a_constant_time_shift(
    drawn: tuple[Params, int], base: int
) -> None:
    p, seed = drawn
    w = generate(random.Random(seed), p)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        plain = _result(write_nsys(w, d / "a.synthetic.sqlite"))
        moved = _result(write_nsys(w, d / "b.synthetic.sqlite", base=base, order=random.Random(seed)))
        _same(plain, moved, f"nsys shifted by {base} and shuffled")
        moved_k = _result(write_kineto(w, d / "b.synthetic.json", base=base, order=random.Random(seed + 1)))
        _same(plain, moved_k, f"kineto shifted by {base} and shuffled")


def _ns(value: float | None) -> int | None:
    return None if value is None else round(value * 1e6)


@SETTINGS
@given(workloads(overlapping=False))
def test_the_per_iteration_figures_are_the_truth_and_keep_the_invariants(drawn: tuple[Params, int]) -> None:
    p, seed = drawn
    w = generate(random.Random(seed), p)
    want = truth(w)
    with tempfile.TemporaryDirectory() as tmp:
        a = analyze_iterations(read_trace(write_nsys(w, Path(tmp) / "w.synthetic.sqlite")))
    it = a.iterations
    # invariants, whatever the iterations hold
    if it["gpu_busy_ms"].null_count() == 0 and it.height:
        assert (it["gpu_busy_ms"] <= it["latency_ms"] + 1e-12).all()
        assert ((it["gpu_busy_ms"] + it["idle_ms"] - it["latency_ms"]).abs() < 1e-9).all()
        if a.attribution is not None:
            att = a.attribution.iterations
            causes = sum(att[f"{c}_ns"] for c in CAUSE_NAMES)
            assert (causes == att["idle_ns"]).all()
            assert (sum(att[c] for c in DEVICE_SPLIT) == att["in_flight_ns"]).all()
    if all(t["busy"] == 0 for t in want):
        return  # no device work in any iteration: no busy figures to compare (a documented no-verdict case)
    if it.height < len(want):
        # the last iteration left out (cut-off replay or launches), said in a warning
        assert any("left out the last iteration" in x for x in a.warnings), a.warnings
        want = want[: it.height]
    got = [
        {
            "latency": _ns(r["latency_ms"]),
            "busy": _ns(r["gpu_busy_ms"]),
            "idle": _ns(r["idle_ms"]),
            "synchronized": r["synchronized"],
            "gaps": r["idle_gaps"],
            **{c: _ns(r[f"{c}_ms"]) for c in CAUSE_NAMES},
            "kernels": r["kernels"],
            "launches": r["launches"],
            "launch_api_ns": None if r["launch_api_us"] is None else round(r["launch_api_us"] * 1000),
            "launch_latency_ns": None
            if r["launch_latency_us"] is None
            else round(r["launch_latency_us"] * 1000, 3),
            "queue_ns": None if r["queue_us"] is None else round(r["queue_us"] * 1000, 3),
        }
        for r in it.iter_rows(named=True)
    ]
    assert got == want


@pytest.mark.parametrize("seed", range(3))
def test_a_drawn_workload_is_written_alike_in_both_formats(tmp_path: Path, seed: int) -> None:
    # the writers themselves: both files read back to the same ops, calls and ranges (ns), so that a
    # difference in the analysis is the analysis', not the test's
    p = Params(
        iterations=3, streams=(7, 13), copies=True, memsets=True, graphs=True, syncs="some", tight=True
    )
    w = generate(random.Random(seed), p)
    n = read_trace(write_nsys(w, tmp_path / "w.synthetic.sqlite"))
    k = read_trace(write_kineto(w, tmp_path / "w.synthetic.json"))
    cols = ["start", "end", "kind", "stream", "correlation", "device"]
    assert n.ops.select(cols).sort(cols).equals(k.ops.select(cols).sort(cols))
    cols = ["start", "end", "correlation"]
    assert n.api.select(cols).sort(cols).equals(k.api.select(cols).sort(cols))
    cols = ["start", "end", "name"]
    assert n.ranges.select(cols).sort(cols).equals(k.ranges.select(cols).sort(cols))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(overlapping=False))
def test_each_devices_own_figures_are_the_truth_of_its_part(drawn: tuple[Params, int]) -> None:
    # Two GPUs: each device's own analysis (the per-GPU rows, with the idle split) equals the truth of the
    # workload cut to that device: its ops, the calls launching them, and the calls that launched nothing
    # (syncs, waits, queries; ranges.device_trace). One range thread (threads taking turns are split between
    # devices by a documented heuristic, ranges._without_other_devices_series).
    from tests.test_diff11_workload import LAUNCHES, Workload
    from tracekit.analyzers.devices import analyze_devices

    p, seed = drawn
    p.devices, p.second_thread, p.foreign = 2, False, False
    w = generate(random.Random(seed), p)
    if len({o.device for o in w.ops}) < 2:
        return
    with tempfile.TemporaryDirectory() as tmp:
        parts = analyze_devices(read_trace(write_nsys(w, Path(tmp) / "w.synthetic.sqlite")), attribute=True)
    assert parts is not None
    linked = {o.corr for o in w.ops}
    for part in parts:
        if part.result is None:
            continue
        mine = {o.corr for o in w.ops if o.device == part.device}
        cut = Workload(
            list(w.ranges),
            [c for c in w.calls if c.corr in mine or (c.corr not in linked and c.name not in LAUNCHES)],
            [o for o in w.ops if o.device == part.device],
            2,
        )
        want = truth(cut)
        got = [
            {
                "latency": _ns(r["latency_ms"]),
                "busy": _ns(r["gpu_busy_ms"]),
                "idle": _ns(r["idle_ms"]),
                "synchronized": r["synchronized"],
                "gaps": r["idle_gaps"],
                **{c: _ns(r[f"{c}_ms"]) for c in CAUSE_NAMES},
            }
            for r in part.result.iterations.iter_rows(named=True)
        ]
        want = [{k: t[k] for k in (got[0] if got else t)} for t in want][: len(got)]
        assert got == want, part.device
