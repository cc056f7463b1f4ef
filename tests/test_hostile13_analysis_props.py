"""hostile13 (analysis13): invariants of the analysis over generated, labelled-synthetic traces of several
processes, devices, threads and streams (graph launches, copies, stream waits, syncs, device ops that start
before their launch call returns or is queued behind earlier work):

- busy <= latency and busy + the five causes = latency, per iteration, per device row and under
  ``--split-idle``;
- a device's row (one process per device) is the analysis of that process's part alone;
- the CUDA-graph projection never saves more than the idle time, nor projects below the busy time;
- an iteration's serving-step class does not change when another process's steps are added beside it."""

from __future__ import annotations

import random
import warnings

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import EPOCH, make_trace
from tracekit.errors import NoActivityError
from tracekit.model import Trace
from tracekit.session import AnalysisOptions, analyze_trace

US = 1000
CAUSES = ("dispatch_ms", "launch_ms", "sync_ms", "other_api_ms", "in_flight_ms")
RANGE_PT = ("start", "end", "name", "depth", "domain", "pid", "thread")
API_PT = ("start", "end", "correlation", "name", "pid", "thread")
OP_PT = ("start", "end", "correlation", "stream", "kind", "device", "pid")
META = {"path": "hostile13_props.synthetic.json", "synthetic": True}
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def generated(seed: int, processes: int | None = None, device_per_process: bool = False) -> Trace:
    """A trace of 1-2 processes (``processes``), 1-5 'iteration' ranges each on 1-2 threads, 0-6 calls a
    range (launch, graph launch, async and sync copies, stream waits; a device sync after some), ops on 1-2
    streams and 1-2 devices (one per process when ``device_per_process``), starting up to 3 us before their
    call's start or later, never before the previous op of their process ended."""
    r = random.Random(seed)
    nproc = processes or r.choice([1, 1, 2])
    ndev = 1 if device_per_process else r.choice([1, 2])
    graph = r.random() < 0.3
    ranges, api, ops, corr = [], [], [], 0
    for pid in range(1, nproc + 1):
        t = EPOCH + r.randint(0, 50) * US
        for _ in range(r.randint(1, 5)):
            thread = r.randint(1, r.choice([1, 2]))
            start = t
            host = start + r.randint(0, 20) * US
            gpu_end = host
            for _ in range(r.randint(0, 6)):
                host += r.randint(0, 10) * US
                corr += 1
                names = ["cudaLaunchKernel", "cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemcpy"]
                name = (
                    "cudaGraphLaunch"
                    if graph and r.random() < 0.5
                    else r.choice([*names, "cudaStreamWaitEvent"])
                )
                call_end = host + r.randint(1, 8) * US
                api.append((host, call_end, corr, name, pid, thread))
                if name != "cudaStreamWaitEvent":
                    s = max(gpu_end, host + r.randint(-3, 30) * US)
                    device = pid - 1 if device_per_process else r.randint(0, ndev - 1)
                    for _ in range(r.randint(2, 4) if name == "cudaGraphLaunch" else 1):
                        op_start = s + r.randint(0, 5) * US
                        op_end = op_start + r.randint(0, 40) * US
                        kind = "memcpy" if "Memcpy" in name else "kernel"
                        ops.append((op_start, op_end, corr, r.choice([7, 7, 8]), kind, device, pid))
                        s, gpu_end = op_end, max(gpu_end, op_end)
                host = call_end
                if r.random() < 0.2:
                    corr += 1
                    sync_end = max(host + US, gpu_end) + r.randint(0, 3) * US
                    api.append((host, sync_end, corr, "cudaDeviceSynchronize", pid, thread))
                    host = sync_end
            end = host + r.randint(0, 20) * US
            ranges.append((start, end, "iteration", 0, "user", pid, thread))
            t = end + r.randint(0, 30) * US
    return make_trace(ranges, api, ops, dict(META), range_fields=RANGE_PT, api_fields=API_PT, op_fields=OP_PT)


def _analyze(trace: Trace, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return analyze_trace(trace, options=AnalysisOptions(**options), device_causes=True)
        except NoActivityError:
            return None


def _check_rows(rows: list[dict]) -> None:
    for row in rows:
        latency, busy = row.get("latency_ms"), row.get("gpu_busy_ms")
        if latency is None or busy is None:
            continue
        assert busy <= latency + 1e-9
        causes = [row.get(c) for c in CAUSES]
        if all(c is not None for c in causes):
            assert min(causes) >= 0
            assert sum(causes) == pytest.approx(latency - busy, abs=1e-9)


@SETTINGS
@given(st.integers(0, 10**9), st.sampled_from([{}, {"skip": 1}, {"split_idle_ms": 0.005}]))
def test_busy_and_causes_add_up_to_latency_everywhere(seed: int, options: dict) -> None:
    a = _analyze(generated(seed), **options)
    if a is None:
        return
    _check_rows(a.iterations.to_dicts())
    for device in a.source.devices or ():
        if device.result is not None:
            _check_rows(device.result.iterations.to_dicts())


@SETTINGS
@given(st.integers(0, 10**9))
def test_the_projection_saves_at_most_the_idle_time(seed: int) -> None:
    a = _analyze(generated(seed))
    if a is None or a.projection is None or not a.projection.applies:
        return
    frame = a.iterations
    idle = (frame["latency_ms"] - frame["gpu_busy_ms"]).mean()
    assert a.projection.saved_ms <= idle + 1e-9
    assert a.projection.projected_ms >= frame["gpu_busy_ms"].mean() - 1e-9


def _part(trace: Trace, pid: int) -> Trace:
    return Trace(
        ops=trace.ops.filter(pl.col("pid") == pid),
        api=trace.api.filter(pl.col("pid") == pid),
        ranges=trace.ranges.filter(pl.col("pid") == pid),
        meta=dict(trace.meta),
    )


@SETTINGS
@given(st.integers(0, 10**9))
def test_a_devices_row_is_its_process_analyzed_alone(seed: int) -> None:
    trace = generated(seed, processes=2, device_per_process=True)
    a = _analyze(trace)
    if a is None or not a.per_device:
        return
    for row in a.per_device:
        if "error" in row:
            continue
        alone = _analyze(_part(trace, row["device"] + 1))
        assert alone is not None
        stats = alone.summary.fields
        assert row["iterations"] == alone.summary.iterations
        for name in ("latency_ms", "gpu_busy_ms", "gpu_utilization"):
            assert row[name] == pytest.approx(stats[name].p50, abs=1e-9)
        assert row["bound"] == alone.summary.bound


STEP_NAMES = ("step[EXTEND bs=4]", "step[DECODE bs=32]", "step[MIXED bs=8]", "step[IDLE bs=0]")


@SETTINGS
@given(st.integers(0, 10**9), st.lists(st.sampled_from(STEP_NAMES), min_size=1, max_size=4))
def test_a_step_class_is_its_own_processs(seed: int, names: list[str]) -> None:
    # Process 1 runs ProfilerStep ranges around engine steps; process 2's engine steps, beside them in time
    # under their own ProfilerSteps, change none of process 1's classes.
    r = random.Random(seed)
    own = [r.choice(STEP_NAMES) for _ in names]
    ranges, api, ops = [], [], []
    for pid, steps in ((1, own), (2, names)):
        t = EPOCH + (pid - 1) * r.randint(-3, 3) * US
        for k, step in enumerate(steps):
            s = t + k * 100 * US
            corr = pid * 100 + k
            ranges.append((s, s + 95 * US, f"ProfilerStep#{k}", 0, "user", pid, pid))
            ranges.append((s + 2 * US, s + 90 * US, step, 1, "user", pid, pid))
            api.append((s + 5 * US, s + 6 * US, corr, "cudaLaunchKernel", pid, pid))
            ops.append((s + 10 * US, s + 80 * US, corr, 7, "kernel", pid - 1, pid))

    def classes(trace: Trace) -> list:
        a = _analyze(trace)
        assert a is not None
        frame = a.iterations.join(
            a.ranges.select(pl.col("iteration").alias("index"), "pid"), on="index", how="left"
        )
        return frame.filter(pl.col("pid") == 1).sort("start_ns")["step_class"].cast(pl.String).to_list()

    both = make_trace(ranges, api, ops, dict(META), range_fields=RANGE_PT, api_fields=API_PT, op_fields=OP_PT)
    alone = _part(both, 1)
    assert (
        classes(both)
        == classes(alone)
        == [
            {"step[EXTEND bs=4]": "prefill", "step[DECODE bs=32]": "decode", "step[MIXED bs=8]": "mixed"}.get(
                n, "idle"
            )
            for n in own
        ]
    )


@SETTINGS
@given(st.integers(0, 10**9), st.booleans())
def test_each_processs_iterations_are_measured_as_that_process_alone(seed: int, own_devices: bool) -> None:
    # Two processes' iterations in one trace: each iteration's latency, busy and causes are those of its
    # process analyzed alone (another process's op starting at the same instant ends none of its gaps). A
    # process whose ranges the headline leaves out (they hold none of its launches) is skipped, as is one
    # whose iterations alone hold no work (no verdict there: busy withheld).
    trace = generated(seed, processes=2, device_per_process=own_devices)
    a = _analyze(trace)
    if a is None:
        return
    columns = ["latency_ms", "gpu_busy_ms", *CAUSES]
    frame = a.iterations.join(a.ranges.select(pl.col("iteration").alias("index"), "pid"), on="index")
    for pid in (1, 2):
        alone = _analyze(_part(trace, pid))
        mine = frame.filter(pl.col("pid") == pid).sort("start_ns").select(columns)
        if alone is None or mine.height != alone.iterations.height or alone.summary.bound is None:
            continue
        expected = alone.iterations.sort("start_ns").select(columns)
        for column in columns:
            assert mine[column].to_list() == pytest.approx(expected[column].to_list(), abs=1e-9), column
