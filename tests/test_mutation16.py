"""mutation16: tests killing surviving mutants of the round's recently changed modules, in the order the round
named them: analyzers/gap_context.py ("host was in"), tracekit/quantiles.py (p90/p99 only when n(1-q) >= 1),
analyzers/attribution.py, analyzers/steps.py, tracekit/fleet/compact.py.

Every input is hand-built and synthetic (meta says so); times in integer ns; every expected number or text was
worked out by hand and is written beside its case.
"""

from __future__ import annotations

import dataclasses

import polars as pl
import pytest

from tests.builders import EPOCH, make_trace
from tracekit.analyzers.gap_context import OUTSIDE, cpu_context
from tracekit.model import CPU_OPS_SCHEMA
from tracekit.quantiles import min_values, quantile, quantile_given, withheld_note, withheld_quantiles

SYNTHETIC = {"path": "mutation16_synthetic", "synthetic": True}
API_PT = ("start", "end", "correlation", "name", "pid", "thread")
RANGE_PT = ("start", "end", "name", "depth", "domain", "pid", "thread")


# ------------------------------------------------------------------------------ gap_context.cpu_context


def _gap_trace(api=(), ranges=()):
    return make_trace(
        ranges=[(0, 10_000, "iteration", 0, "user", 1, 1), *ranges],
        api=list(api),
        meta=dict(SYNTHETIC),
        range_fields=RANGE_PT,
        api_fields=API_PT,
    )


def _longest(*gaps: tuple[int, int, int, int]) -> pl.DataFrame:
    """gaps as (_row, iteration, start_ns, end_ns)."""
    return pl.DataFrame(
        [
            {"_row": r, "iteration": i, "start_ns": s, "end_ns": e, "duration_ns": e - s}
            for r, i, s, e in gaps
        ],
        schema={
            "_row": pl.UInt32,
            "iteration": pl.Int64,
            "start_ns": pl.Int64,
            "end_ns": pl.Int64,
            "duration_ns": pl.Int64,
        },
    )


WINDOW = {"iteration": [0], "range_start": [0], "range_end": [10_000]}


def test_windows_of_every_process_name_a_call_of_any_process() -> None:
    # ranges without a pid column: a window of every process, so process 2's cudaMemcpy [2000, 5000) holds
    # the whole 3000-ns gap [2000, 5000): 100%. With the window owned by process 1 it is not named.
    trace = _gap_trace([(2000, 5000, None, "cudaMemcpy", 2, 2)])
    got = cpu_context(trace, _longest((0, 0, 2000, 5000)), pl.DataFrame(WINDOW))
    assert got.rows() == [(0, "cudaMemcpy (100%)")]
    owned = pl.DataFrame({**WINDOW, "pid": [1]})
    assert cpu_context(trace, _longest((0, 0, 2000, 5000)), owned).rows() == [(0, OUTSIDE)]


def test_a_call_ending_before_a_gap_is_no_candidate_of_that_gap() -> None:
    # two gaps, [500, 900) and [2000, 5000); on thread 1 cudaMemcpy [100, 1001) and then, 1 ns before it ends
    # (clock rounding), cudaStreamSynchronize [1000, 4000). The memcpy holds the first gap (100%); it ends
    # long before the second, so it neither takes part there nor makes the synchronize nested: 2000 of
    # 3000 ns, 66%
    trace = _gap_trace(
        [(100, 1001, None, "cudaMemcpy", 1, 1), (1000, 4000, None, "cudaStreamSynchronize", 1, 1)]
    )
    windows = pl.DataFrame({**WINDOW, "pid": [1]})
    got = cpu_context(trace, _longest((0, 0, 500, 900), (1, 0, 2000, 5000)), windows)
    assert sorted(got.rows()) == [(0, "cudaMemcpy (100%)"), (1, "cudaStreamSynchronize (66%)")]


def test_a_gap_of_one_ns_is_named_too() -> None:
    # a 1-ns gap [2000, 2001) inside a cudaMemcpy [1500, 2500): 1 of 1 ns, 100%; a 0-ns one is never named
    trace = _gap_trace([(1500, 2500, None, "cudaMemcpy", 1, 1)])
    windows = pl.DataFrame({**WINDOW, "pid": [1]})
    got = cpu_context(trace, _longest((0, 0, 2000, 2001), (1, 0, 2000, 2000)), windows)
    assert sorted(got.rows()) == [(0, "cudaMemcpy (100%)"), (1, OUTSIDE)]


def _held_context(ranges=(), cpu_ops=(), work=None) -> str:
    """cpu_context of the gap [2000, 5000) of iteration 0 (window [0, 10000), process 1), with the host
    ranges ``(start, end, name)`` and CPU operators ``(start, end, name)`` of process 1, thread 1."""
    trace = _gap_trace(ranges=[(s, e, name, 1, "user", 1, 1) for s, e, name in ranges])
    if cpu_ops:
        frame = pl.DataFrame(
            [{"start": s, "end": e, "pid": 1, "thread": 1, "name": name} for s, e, name in cpu_ops],
            schema=CPU_OPS_SCHEMA,
        )
        trace = dataclasses.replace(trace, cpu_ops=frame)
    windows = pl.DataFrame({**WINDOW, "pid": [1]})
    [(row, context)] = cpu_context(trace, _longest((0, 0, 2000, 5000)), windows, work).rows()
    assert row == 0
    return context


def _work(*spans: tuple[int, int, int]) -> pl.DataFrame:
    return pl.DataFrame(
        [{"iteration": i, "work_start": s, "work_end": e} for i, s, e in spans],
        schema={"iteration": pl.Int64, "work_start": pl.Int64, "work_end": pl.Int64},
    )


def test_a_range_holding_exactly_all_of_the_iterations_work_names_no_gap() -> None:
    # the iteration's device work spans [1000, 6000): a range over exactly that span holds every gap of the
    # iteration and names none; one ns shorter at either end it no longer holds all the work: named (100% of
    # the 3000-ns gap [2000, 5000))
    work = _work((0, 1000, 6000))
    assert _held_context([(1000, 6000, "Execute")], work=work) == OUTSIDE
    assert _held_context([(1001, 6000, "Execute")], work=work) == "in range Execute (100%)"
    assert _held_context([(1000, 5999, "Execute")], work=work) == "in range Execute (100%)"
    assert _held_context(cpu_ops=[(1000, 6000, "forward")], work=work) == OUTSIDE


def test_the_range_under_an_operator_around_all_the_work_is_named() -> None:
    # 'layer' [400, 4000) covers 2000 of 3000 ns (66%); the operator 'forward' [500, 7000), started later,
    # covers it all but holds all the work [1000, 6000): not a candidate, so 'layer' is named
    ranges, ops = [(400, 4000, "layer")], [(500, 7000, "forward")]
    assert _held_context(ranges, ops, _work((0, 1000, 6000))) == "in range layer (66%)"
    # without work spans, or with another iteration's only, or an iteration without one, 'forward' is named
    assert _held_context(ranges, ops) == "in op forward (100%)"
    assert _held_context(ranges, ops, _work((1, 1000, 6000))) == "in op forward (100%)"
    assert _held_context(ranges, ops, _work()) == "in op forward (100%)"


# ------------------------------------------------------------------------------ quantiles


def test_a_single_value_is_its_own_median_and_quantiles_at_the_ends() -> None:
    # one value: pos = q * 0 = 0, lo = hi = 0 (hi clamped to the last index, never past it)
    assert quantile([7.0], 0.5) == 7.0
    assert quantile([7.0], 0.0) == 7.0
    # two values: the median halfway; None and NaN are not values
    assert quantile([2.0, None, float("nan"), 1.0], 0.5) == 1.5
    # 10 values 1..10: p90 at pos 8.1 -> 9.1; 100 values: p99 at pos 98.01 -> 99.01
    assert quantile([float(v) for v in range(10, 0, -1)], 0.9) == pytest.approx(9.1, abs=1e-12)
    assert quantile(list(range(1, 101)), 0.99) == pytest.approx(99.01, abs=1e-12)
    assert quantile([1.0] * 9, 0.9) is None and quantile([], 0.5) is None


def test_the_withheld_sentence_with_three_names_joins_each_with_and() -> None:
    # order of QUANTILES whatever the order given; the first says "needs at least", the others "at least"
    assert withheld_note(0, ["p99", "p90", "p50"]) == (
        "p50 needs at least 1 iterations with a value and p90 at least 10 and p99 at least 100, so that one "
        "lies above each; 0 here (shown as —)"
    )
    assert withheld_note(5, ["p99", "p90"], "steps") == (
        "p90 needs at least 10 steps with a value and p99 at least 100, so that one lies above each; "
        "5 here (shown as —)"
    )
    assert withheld_note(50, ["p99"]) == (
        "p99 needs at least 100 iterations with a value, so that one lies above it; 50 here (shown as —)"
    )
    assert withheld_note(50, ["p75"]) is None and withheld_note(50, []) is None


def test_min_values_and_withheld_recorded_statistics() -> None:
    assert [min_values(q) for q in (0.0, 0.5, 0.51, 0.75, 0.9, 0.99)] == [1, 1, 3, 4, 10, 100]
    assert [quantile_given(0.99, n) for n in (0, 99, 100)] == [False, False, True]
    stats = {"p50": 1.0, "p90": 2.0, "p99": 3.0, "count": 20, "mean": 1.5}
    assert withheld_quantiles(stats) == {"p50": 1.0, "p90": 2.0, "p99": None, "count": 20, "mean": 1.5}
    assert withheld_quantiles({**stats, "count": 9}) == {**stats, "count": 9, "p90": None, "p99": None}
    # a count that is no integer (a bool, a float) withholds nothing; another count key is read when named
    assert withheld_quantiles({**stats, "count": True}) == {**stats, "count": True}
    assert withheld_quantiles({**stats, "count": 9.0}) == {**stats, "count": 9.0}
    assert withheld_quantiles({**stats, "n": 5}, "n")["p90"] is None


# ------------------------------------------------------------------------------ fleet.compact


def test_stated_configuration_keeps_only_what_the_run_states() -> None:
    from types import SimpleNamespace

    from tracekit.fleet.compact import stated_configuration
    from tracekit.inputs import FROM_RUN, FROM_SIDECAR, FROM_TRACE_META

    # run.json and the sidecar state runtime and batch; run.json's seq_len is None (nothing to state); the
    # precision was inferred from content: not stated
    config = SimpleNamespace(
        runtime="pytorch",
        batch_size=8,
        seq_len=None,
        precision="fp16",
        sources={
            "runtime": FROM_RUN,
            "batch_size": FROM_SIDECAR,
            "seq_len": FROM_RUN,
            "precision": "inferred from trace content",
        },
    )
    assert stated_configuration(config) == {"runtime": "pytorch", "batch_size": 8}
    # the trace's own metadata states; a file name does not
    meta = SimpleNamespace(
        runtime="ort",
        batch_size=1,
        seq_len=128,
        precision="fp32",
        sources={"batch_size": FROM_TRACE_META, "seq_len": "from file name", "precision": FROM_TRACE_META},
    )
    assert stated_configuration(meta) == {"batch_size": 1, "precision": "fp32"}
    assert stated_configuration(SimpleNamespace(runtime="x", sources=None)) == {}
    assert stated_configuration(SimpleNamespace(runtime="x")) == {}
    # a source for a value the object does not carry (not a TraceConfig): nothing stated, no AttributeError
    assert stated_configuration(SimpleNamespace(runtime="x", sources={"batch_size": FROM_RUN})) == {}


def test_rank_and_world_size_read_as_integers_or_not_at_all() -> None:
    from types import SimpleNamespace

    from tracekit.fleet.compact import _world_size, rank_of

    def rank(value):
        return rank_of(SimpleNamespace(trace_data=SimpleNamespace(meta={"rank": value})))

    assert [rank(v) for v in ("3", 0, "x", None, [1])] == [3, 0, None, None, None]
    assert rank_of(SimpleNamespace(trace_data=SimpleNamespace(meta={}))) is None
    assert [_world_size({"world_size": v}) for v in ("8", 16, "x", None, {})] == [8, 16, None, None, None]
    assert _world_size({}) is None


# ------------------------------------------------------------------------------ attribution: the next op


US = 1000
OP_PT = ("start", "end", "correlation", "stream", "kind", "device", "pid")
ONE_ITERATION = [(EPOCH, EPOCH + 100 * US, "iteration", 0, "user", 1, 1)]
CAUSE_KEYS = ("dispatch_ns", "launch_ns", "sync_ns", "other_api_ns", "in_flight_ns")


def _attributed(api, ops) -> dict[str, int]:
    """Causes and device-side causes of the one iteration [0, 100) us of process 1, in ns."""
    from tracekit.analyzers.attribution import DEVICE_NS, attribute_trace
    from tracekit.analyzers.iterations import analyze_iterations

    shifted_api = [(EPOCH + s * US, EPOCH + e * US, *rest) for s, e, *rest in api]
    shifted_ops = [(EPOCH + s * US, EPOCH + e * US, *rest) for s, e, *rest in ops]
    trace = make_trace(
        ONE_ITERATION,
        shifted_api,
        shifted_ops,
        dict(SYNTHETIC),
        range_fields=RANGE_PT,
        api_fields=API_PT,
        op_fields=OP_PT,
    )
    [row] = attribute_trace(trace, analyze_iterations(trace, attribute=False)).iterations.iter_rows(
        named=True
    )
    return {c: row[c] for c in (*CAUSE_KEYS, *DEVICE_NS)}


def test_an_own_op_launched_before_the_capture_ends_the_gap_before_an_op_launched_in_it() -> None:
    # K1 [10, 20) us launched by [2, 3); K2 [50, 60) launched by [30, 31); P [50, 55) of process 1 too, with a
    # correlation id no call in the trace has (launched before the capture). The inner gap [20, 50) has two
    # next ops, P first (launched first): the whole 30 us is in flight. Leading [0, 10): dispatch 2, launch
    # 1, in flight 7; trailing [60, 100): dispatch 40. (Were P no candidate, K2 would make [20, 30) dispatch,
    # [30, 31) launch, [31, 50) in flight.)
    api = [(2, 3, 1, "cudaLaunchKernel", 1, 1), (30, 31, 2, "cudaLaunchKernel", 1, 1)]
    ops = [(10, 20, 1, 7, "kernel", 0, 1), (50, 60, 2, 7, "kernel", 0, 1), (50, 55, 99, 8, "kernel", 0, 1)]
    got = _attributed(api, ops)
    assert {c: got[c] for c in CAUSE_KEYS} == {
        "dispatch_ns": 42 * US,
        "launch_ns": 1 * US,
        "sync_ns": 0,
        "other_api_ns": 0,
        "in_flight_ns": 37 * US,
    }
    assert got["launch_latency_ns"] == 37 * US


def test_the_first_launching_call_of_the_trace_can_follow_a_stream_wait() -> None:
    # cudaStreamWaitEvent [1, 2) us then the trace's first launch [2, 3) (the calls' row 0) of K1 [10, 20):
    # the leading gap's 7 us in flight are the stream wait's, not launch latency
    api = [(1, 2, None, "cudaStreamWaitEvent", 1, 1), (2, 3, 1, "cudaLaunchKernel", 1, 1)]
    got = _attributed(api, [(10, 20, 1, 7, "kernel", 0, 1)])
    assert {c: got[c] for c in CAUSE_KEYS} == {
        "dispatch_ns": 81 * US,
        "launch_ns": 1 * US,
        "sync_ns": 0,
        "other_api_ns": 1 * US,
        "in_flight_ns": 7 * US,
    }
    assert (got["stream_wait_ns"], got["launch_latency_ns"], got["queued_ns"]) == (7 * US, 0, 0)


def test_idle_attributed_for_some_iterations_only_leaves_the_others_gaps_out() -> None:
    # two iterations [0, 100) and [100, 200) us, each launching one kernel 2 us in (call [2, 3), kernel
    # [10, 20) after its start): asked for iteration 0 alone (an index that stops before the last iteration
    # whose gaps are given), iteration 1's gaps are left out: dispatch 2 + 80, launch 1, in flight 7;
    # asked for iteration 1 alone, the same shifted by 100 us
    from tracekit.analyzers.attribution import attribute_idle
    from tracekit.analyzers.iterations import analyze_iterations

    t0 = EPOCH
    ranges = [(t0 + k * 100 * US, t0 + (k + 1) * 100 * US, "iteration", 0, "user", 1, 1) for k in (0, 1)]
    api = [
        (t0 + (k * 100 + 2) * US, t0 + (k * 100 + 3) * US, k + 1, "cudaLaunchKernel", 1, 1) for k in (0, 1)
    ]
    ops = [(t0 + (k * 100 + 10) * US, t0 + (k * 100 + 20) * US, k + 1, 7, "kernel", 0, 1) for k in (0, 1)]
    trace = make_trace(
        ranges, api, ops, dict(SYNTHETIC), range_fields=RANGE_PT, api_fields=API_PT, op_fields=OP_PT
    )
    analysis = analyze_iterations(trace, attribute=False)
    ops_frame = trace.ops.select("start", "end", "pid", "correlation", "device")
    for only in (0, 1):
        att = attribute_idle(analysis.gaps, ops_frame, trace.api, analysis.ranges, pl.Series([only]))
        rows = att.iterations.select("index", *CAUSE_KEYS).rows()
        assert rows == [(only, 82 * US, 1 * US, 0, 0, 7 * US)]


# ------------------------------------------------------------------------------ steps


def test_iteration_windows_without_a_process_take_the_steps_inside_them_by_time() -> None:
    from tracekit.analyzers.steps import step_classes

    # windows [0, 1000) and [1000, 2000) without a pid column; an SGLang prefill step of process 1 in the
    # first, a decode step of process 2 in the second: by time alone, prefill (2, 0) then decode (0, 3)
    windows = pl.DataFrame(
        {
            "iteration": [0, 1],
            "range_start": [0, 1000],
            "range_end": [1000, 2000],
            "name": ["iteration", "iteration"],
        }
    )
    trace = make_trace(
        ranges=[
            (100, 400, "step[EXTEND bs=2 toks=50]", 1, "user", 1, 1),
            (1100, 1400, "step[DECODE bs=3]", 1, "user", 2, 2),
        ],
        meta=dict(SYNTHETIC),
        range_fields=RANGE_PT,
    )
    got = step_classes(windows, trace).with_columns(pl.col("step_class").cast(pl.String))
    assert got.rows() == [(0, "SGLang", "prefill", 2, 0), (1, "SGLang", "decode", 0, 3)]


def test_compact_carries_the_group_ranks_the_clock_base_and_the_collectives() -> None:
    from tracekit.fleet.compact import compact
    from tracekit.session import analyze_trace

    # rank 1 of 2: one iteration [0, 100) us whose one kernel, an NCCL all-reduce [10, 20) us, was launched
    # by [2, 3); meta as the Kineto reader writes it (the groups' member ranks, the clock's wall-time origin)
    base = 1_700_000_000_000_000_000
    meta = {
        **SYNTHETIC,
        "path": "rank1_mutation16.synthetic.json",
        "rank": 1,
        "world_size": 2,
        "collective_args": {"groups": {"0": [0, 1]}},
        "wall_clock_base_ns": base,
        "process_groups": [[0, 1]],
    }
    op_fields = ("start", "end", "correlation", "stream", "kind", "device", "pid", "name")
    trace = make_trace(
        ONE_ITERATION,
        [(EPOCH + 2 * US, EPOCH + 3 * US, 1, "cudaLaunchKernel", 1, 1)],
        [(EPOCH + 10 * US, EPOCH + 20 * US, 1, 7, "kernel", 0, 1, "ncclDevKernel_AllReduce_Sum_f32_RING_LL")],
        meta,
        range_fields=RANGE_PT,
        api_fields=API_PT,
        op_fields=op_fields,
    )
    c = compact(analyze_trace(trace))
    assert (c["rank"], c["world_size"], c["group_ranks"], c["process_groups"]) == (
        1,
        2,
        {"0": [0, 1]},
        [[0, 1]],
    )
    assert c["wall_clock_base_ns"] == base and "WALL_CLOCK_BASE_NS" not in c
    assert (c["collective_kinds"], c["collective_iterations"], c["collective_streams"]) == (
        ["allreduce"],
        [0],
        {0: 1},
    )
    assert c["collective_starts_ns"].tolist() == [EPOCH + 10 * US]
    assert c["collective_ends_ns"].tolist() == [EPOCH + 20 * US]
    assert (c["collective_ops"], c["collective_groups"]) == ([""], [""])
    assert (c["name"], c["synthetic"], c["range"], c["per_gpu"]) == (
        "rank1_mutation16.synthetic.json",
        True,
        "iteration",
        None,
    )
    assert c["iterations"]["comm_ms"].tolist() == [pytest.approx(0.01, abs=1e-12)]
    assert c["iterations"]["exposed_comm_ms"].tolist() == [pytest.approx(0.01, abs=1e-12)]


def test_compact_of_a_trace_without_collectives_has_no_group_ranks_and_no_comm() -> None:
    from tracekit.fleet.compact import compact
    from tracekit.session import analyze_trace

    # the same meta, but the kernel is a gemm: no collective, so no group ranks and comm not measured (None)
    meta = {**SYNTHETIC, "collective_args": {"groups": {"0": [0, 1]}}, "world_size": "x"}
    op_fields = ("start", "end", "correlation", "stream", "kind", "device", "pid", "name")
    trace = make_trace(
        ONE_ITERATION,
        [(EPOCH + 2 * US, EPOCH + 3 * US, 1, "cudaLaunchKernel", 1, 1)],
        [(EPOCH + 10 * US, EPOCH + 20 * US, 1, 7, "kernel", 0, 1, "gemm")],
        meta,
        range_fields=RANGE_PT,
        api_fields=API_PT,
        op_fields=op_fields,
    )
    c = compact(analyze_trace(trace))
    assert (c["group_ranks"], c["world_size"], c["rank"], c["wall_clock_base_ns"]) == (None, None, None, None)
    assert (c["collective_kinds"], c["collective_ops"], c["collective_streams"]) == ([], [], {})
    assert c["collective_starts_ns"].tolist() == [] and c["collective_ends_ns"].tolist() == []
    # float columns go as float64 arrays, a null as NaN (compact.columns)
    assert [str(v) for v in (*c["iterations"]["comm_ms"], *c["iterations"]["exposed_comm_ms"])] == [
        "nan",
        "nan",
    ]


def _causes_us(ranges, api, ops) -> dict[int, dict[str, float]]:
    """Per iteration, its nonzero causes and device-side causes in us (times given in us from EPOCH)."""
    from tracekit.analyzers.attribution import CAUSE_NS, DEVICE_NS, attribute_trace
    from tracekit.analyzers.iterations import analyze_iterations

    def shifted(rows):
        return [(EPOCH + s * US, EPOCH + e * US, *rest) for s, e, *rest in rows]

    trace = make_trace(
        shifted(ranges),
        shifted(api),
        shifted(ops),
        dict(SYNTHETIC),
        range_fields=RANGE_PT,
        api_fields=API_PT,
        op_fields=OP_PT,
    )
    frame = attribute_trace(trace, analyze_iterations(trace, attribute=False)).iterations
    return {
        row["index"]: {c.removesuffix("_ns"): row[c] / US for c in (*CAUSE_NS, *DEVICE_NS) if row[c]}
        for row in frame.iter_rows(named=True)
    }


def test_another_gpus_work_queues_nothing_on_this_one() -> None:
    # process 1 on GPU 0: K1 [10, 20) us launched by [2, 3), K2 [50, 60) launched by [30, 31); process 2 runs
    # its kernel [35, 50) on GPU 1 meanwhile. The inner gap's in-flight part [31, 50) waits on nothing of GPU
    # 0: launch latency, not queued. Dispatch [0, 2) + [20, 30) + [60, 100) = 52, launch 2, in flight 7 + 19.
    ranges = [(0, 100, "iteration", 0, "user", 1, 1)]
    api = [
        (2, 3, 1, "cudaLaunchKernel", 1, 1),
        (30, 31, 2, "cudaLaunchKernel", 1, 1),
        (33, 34, 3, "cudaLaunchKernel", 2, 2),
    ]
    ops = [(10, 20, 1, 7, "kernel", 0, 1), (50, 60, 2, 7, "kernel", 0, 1), (35, 50, 3, 9, "kernel", 1, 2)]
    assert _causes_us(ranges, api, ops) == {
        0: {"dispatch": 52.0, "launch": 2.0, "in_flight": 26.0, "launch_latency": 26.0}
    }


def test_an_op_launched_before_the_capture_whose_process_is_not_recorded_stays_a_candidate() -> None:
    # as the own-process case above, but P [50, 55) carries no pid: it may be this process's, so it ends the
    # inner gap [20, 50) (launched first): in flight 7 + 30
    ranges = [(0, 100, "iteration", 0, "user", 1, 1)]
    api = [(2, 3, 1, "cudaLaunchKernel", 1, 1), (30, 31, 2, "cudaLaunchKernel", 1, 1)]
    ops = [(10, 20, 1, 7, "kernel", 0, 1), (50, 60, 2, 7, "kernel", 0, 1), (50, 55, 99, 8, "kernel", 0, None)]
    assert _causes_us(ranges, api, ops) == {
        0: {"dispatch": 42.0, "launch": 1.0, "in_flight": 37.0, "launch_latency": 37.0}
    }


def test_a_trailing_gap_is_not_ended_by_another_iterations_zero_ns_op() -> None:
    # process 1's iteration [0, 100) us: K1 [10, 20) launched by [2, 3), then the trailing gap [20, 100).
    # Process 2's iteration [0, 200) launched (by [50, 51)) a 0-ns op at 100 us, the end of process 1's
    # window: not process 1's next op, so [20, 100) is all dispatch (82 with the leading 2); process 2's
    # window is one gap (its only op lasts 0 ns): 199 dispatch, 1 launch
    ranges = [(0, 100, "iteration", 0, "user", 1, 1), (0, 200, "iteration", 0, "user", 2, 2)]
    api = [(2, 3, 1, "cudaLaunchKernel", 1, 1), (50, 51, 5, "cudaLaunchKernel", 2, 2)]
    ops = [(10, 20, 1, 7, "kernel", 0, 1), (100, 100, 5, 9, "kernel", 0, 2)]
    assert _causes_us(ranges, api, ops) == {
        0: {"dispatch": 82.0, "launch": 1.0, "in_flight": 7.0, "launch_latency": 7.0},
        1: {"dispatch": 199.0, "launch": 1.0},
    }
