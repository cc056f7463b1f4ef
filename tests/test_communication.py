"""A compute-bound verdict that rests on exposed communication is uncertain (tracekit.analyzers.communication).

Hand-built traces (synthetic, exact answers): a collective kernel is GPU busy while it waits for the other
ranks, so "compute-bound" on its strength is said to be uncertain, with the numbers.
"""

from __future__ import annotations

import polars as pl
import pytest

from tests.builders import make_trace
from tracekit.analyzers import communication as C
from tracekit.analyzers.iterations import analyze_iterations
from tracekit.model import Trace

US = 1000
ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
OP_FIELDS = ("start", "end", "correlation", "stream", "kind", "device", "name")


def _trace(
    comm: tuple[int, int], compute: tuple[int, int] = (10, 50), devices: tuple[int, int] = (0, 0)
) -> Trace:
    """Two 100 µs iterations; in each, a compute kernel at ``compute`` µs (device ``devices[0]``) and an
    all-reduce at ``comm`` µs (device ``devices[1]``), both launched at the iteration's start, on streams 7
    and 9; a synchronize closes each."""
    ranges, api, ops = [], [], []
    for it in range(2):
        t = it * 100 * US
        ranges.append((t, t + 100 * US, "iteration"))
        api.append((t + 1 * US, t + 2 * US, 10 * it + 1, "cudaLaunchKernel"))
        api.append((t + 3 * US, t + 4 * US, 10 * it + 2, "cudaLaunchKernel"))
        api.append((t + 95 * US, t + 99 * US, None, "cudaDeviceSynchronize"))
        ops.append((t + compute[0] * US, t + compute[1] * US, 10 * it + 1, 7, "kernel", devices[0], "gemm"))
        ops.append((t + comm[0] * US, t + comm[1] * US, 10 * it + 2, 9, "kernel", devices[1], ALLREDUCE))
    return make_trace(ranges=ranges, api=api, ops=ops, op_fields=OP_FIELDS)


def test_compute_bound_on_exposed_communication_is_uncertain() -> None:
    # busy 80 µs of 100 (80%): 40 µs of it the all-reduce alone; 40% without it
    a = analyze_iterations(_trace(comm=(50, 90)))
    assert a.summary.bound == "compute"
    want = (
        "verdict uncertain: compute-bound at a median utilization of 80.0%, but 40.0% without the communication "
        "no computation overlaps (NCCL/RCCL kernels, median 0.040 ms per iteration): a collective counts as busy "
        "while it waits for the other ranks, so this GPU may be waiting on the network or on a straggler, not "
        "computing"
    )
    assert a.summary.verdict_uncertain == want
    assert want in a.warnings


def test_communication_hidden_by_computation_leaves_the_verdict() -> None:
    # the all-reduce runs beside the kernel: nothing exposed
    a = analyze_iterations(_trace(comm=(20, 50), compute=(10, 70)))
    assert a.summary.bound == "compute" and a.summary.verdict_uncertain is None


@pytest.mark.parametrize(("compute_end", "uncertain"), [(60, False), (59, True)])
def test_the_threshold_without_communication(compute_end: int, uncertain: bool) -> None:
    # computation 50 µs of 100: 50% without the exposed all-reduce, the threshold (compute-bound); 49 µs: 49%
    a = analyze_iterations(_trace(comm=(60, 80), compute=(10, compute_end)))
    assert a.summary.bound == "compute"
    assert (a.summary.verdict_uncertain is not None) is uncertain


def test_a_framework_bound_verdict_is_left_alone() -> None:
    a = analyze_iterations(_trace(comm=(50, 59), compute=(10, 40)))  # 39% busy
    assert a.summary.bound == "framework" and a.summary.verdict_uncertain is None


def test_without_names_or_on_two_devices_nothing_is_said() -> None:
    trace = _trace(comm=(50, 90))
    ops = trace.ops.with_columns(_ops_of(trace).get_column("iteration"))
    assert C.communication_doubt(_frame_of(trace), ops, 0.5) is not None
    assert C.communication_doubt(_frame_of(trace), ops.drop("name"), 0.5) is None
    assert (
        C.communication_doubt(_frame_of(trace), ops.with_columns(name=pl.lit(None, pl.String)), 0.5) is None
    )
    two = _trace(comm=(50, 90), devices=(0, 1))
    assert analyze_iterations(two).summary.verdict_uncertain is None


def test_the_doubt_reads_only_the_analyzed_iterations() -> None:
    # skipping the first iteration leaves the second: the same numbers
    a = analyze_iterations(_trace(comm=(50, 90)), skip=1)
    assert (
        a.summary.verdict_uncertain is not None
        and "median 0.040 ms per iteration" in a.summary.verdict_uncertain
    )


def _doubt(rows: list[tuple[float, float, int | None]]) -> str | None:
    """:func:`C.communication_doubt` on iterations of (latency ms, busy ms, exposed all-reduce ns or None):
    each exposed all-reduce one op of its own on device 0, nothing beside it."""
    frame = pl.DataFrame(
        {
            "index": list(range(len(rows))),
            "latency_ms": [r[0] for r in rows],
            "gpu_busy_ms": [r[1] for r in rows],
            "gpu_utilization": [r[1] / r[0] if r[0] else None for r in rows],
        }
    )
    ops = pl.DataFrame(
        [
            (i, 0, 1_000_000 * i, 1_000_000 * i + r[2], "kernel", ALLREDUCE)
            for i, r in enumerate(rows)
            if r[2]
        ],
        schema={
            "iteration": pl.Int64,
            "device": pl.Int32,
            "start": pl.Int64,
            "end": pl.Int64,
            "kind": pl.String,
            "name": pl.String,
        },
        orient="row",
    )
    return C.communication_doubt(frame, ops, 0.5)


def test_iterations_without_communication_count_with_their_own_utilization() -> None:
    # 80% and 80%, one with 0.04 ms exposed (40% without): the median without is 60%, compute-bound
    assert _doubt([(0.1, 0.08, 40_000), (0.1, 0.08, None)]) is None
    # 80% and 75%: 20% and 75% without, median 47.5%; the exposed median counts the 0 of the second
    doubt = _doubt([(0.1, 0.08, 60_000), (0.1, 0.075, None)])
    assert doubt is not None
    assert "at a median utilization of 77.5%, but 47.5% without" in doubt
    assert "(NCCL/RCCL kernels, median 0.030 ms per iteration)" in doubt


def test_compute_bound_at_exactly_the_threshold_is_checked() -> None:
    doubt = _doubt([(0.1, 0.05, 10_000)])
    assert doubt is not None and "at a median utilization of 50.0%, but 40.0% without" in doubt


def test_an_iteration_of_no_length_has_no_utilization() -> None:
    doubt = _doubt([(0.1, 0.08, 40_000), (0.0, 0.0, None)])
    assert doubt is not None and "at a median utilization of 80.0%, but 40.0% without" in doubt


def _frame_of(trace: Trace):  # type: ignore[no-untyped-def]
    return analyze_iterations(trace).iterations


def _ops_of(trace: Trace):  # type: ignore[no-untyped-def]
    from tracekit.analyzers.iterations import assign

    return assign(trace).ops


def test_each_device_of_a_two_gpu_trace_says_its_own_doubt() -> None:
    """One process drives two GPUs, each computing 40 µs then waiting 40 µs in an all-reduce: the headline
    (their union) is not checked, but each device's row is, and the table marks it."""
    from tracekit.renderers.analysis import render_rich_text
    from tracekit.session import analyze_trace

    one, other = _trace(comm=(50, 90), devices=(0, 0)), _trace(comm=(50, 90), devices=(1, 1))
    both = make_trace(
        ranges=[(r[0], r[1], r[2]) for r in one.ranges.select("start", "end", "name").rows()],
        api=one.api.select("start", "end", "correlation", "name").rows()
        + [
            (s + 500, e + 500, c + 100 if c else None, n)
            for s, e, c, n in other.api.select("start", "end", "correlation", "name").rows()
        ],
        ops=one.ops.select(*OP_FIELDS).rows()
        + [(s, e, c + 100, st, k, d, n) for s, e, c, st, k, d, n in other.ops.select(*OP_FIELDS).rows()],
        op_fields=OP_FIELDS,
        meta={"path": "two_gpus.synthetic.json"},
    )
    analysis = analyze_trace(both)
    assert analysis.summary.verdict_uncertain is None  # the union over both GPUs is not weighed
    rows = analysis.per_device
    assert rows is not None and [r["device"] for r in rows] == [0, 1]
    for row in rows:
        assert row["bound"] == "compute"
        assert (
            row["verdict_uncertain"] is not None
            and "40.0% without the communication" in row["verdict_uncertain"]
        )
    text = render_rich_text(analysis.to_json(), width=200)
    assert text.count("compute (uncertain)") == 2


def test_communication_outlasting_the_iteration_leaves_no_negative_utilization() -> None:
    # The all-reduce runs from 50 µs to 2 ms, past the 100 µs iteration (its window clips the busy time, not
    # the communication): "-1850.0% without the communication" was said; now 0.0%.
    frame = pl.DataFrame({"index": [0], "latency_ms": [0.1], "gpu_busy_ms": [0.1], "gpu_utilization": [1.0]})
    ops = pl.DataFrame(
        {
            "iteration": [0, 0],
            "device": [0, 0],
            "start": [10 * US, 50 * US],
            "end": [50 * US, 2000 * US],
            "kind": ["kernel", "kernel"],
            "name": ["gemm", ALLREDUCE],
        }
    )
    doubt = C.communication_doubt(frame, ops, 0.5)
    assert doubt is not None and doubt.startswith(
        "verdict uncertain: compute-bound at a median utilization of 100.0%, but 0.0% without the communication"
    )
