"""Setup calls inside iterations (CUDA initialization, allocation, stream/module creation): named, and a
verdict that rests on them is uncertain (tracekit.analyzers.setup_calls).

Hand-built traces (synthetic, exact answers) first, then HTA's real AlexNet benchmark trace (skipped when
../shared/real_traces is absent), whose one range holds CUDA's lazy initialization.
"""

from __future__ import annotations

import polars as pl
import pytest

from tests.builders import make_trace
from tracekit.analyzers import setup_calls as S
from tracekit.analyzers.iterations import analyze_iterations
from tracekit.model import Trace
from tracekit.session import analyze_trace

from .conftest import real_trace

MS = 1_000_000


def _iterations(setup: list[tuple[int, str]], count: int = 3, length: int = 20 * MS) -> Trace:
    """``count`` iterations of ``length`` ns, each launching one 1 ms kernel at its start + 0.5 ms; iteration k
    also calls ``setup[k]`` = (ns, name) at its start + 2 ms (0 ns: no call), on the launching thread."""
    ranges, api, ops = [], [], []
    for k in range(count):
        t = k * length
        ranges.append((t, t + length, "iteration"))
        api.append((t + 400_000, t + 450_000, k + 1, "cudaLaunchKernel"))
        ops.append((t + 500_000, t + 1_500_000, k + 1, 7))
        ns, name = setup[k] if k < len(setup) else (0, "")
        if ns:
            api.append((t + 2 * MS, t + 2 * MS + ns, None, name))
        api.append((t + length - 100_000, t + length - 50_000, None, "cudaDeviceSynchronize"))
    return make_trace(ranges=ranges, api=api, ops=ops)


# ----------------------------------------------------------------------------------------- the calls


def test_setup_calls_are_found_by_name_with_suffixes_stripped() -> None:
    trace = make_trace(
        api=[
            (0, 10, None, "cudaMalloc_v3020"),
            (20, 30, None, "cudaStreamCreateWithFlags_ptsz"),
            (40, 50, None, "cudaMallocAsync"),  # stream-ordered: a steady state uses it
            (60, 70, 1, "cudaLaunchKernel"),
            (80, 90, None, "hipModuleLoadData"),
            (100, None, None, "cudaFree"),  # never ended: no length
        ]
    )
    calls = S.setup_calls(trace.api)
    assert calls.get_column("call").to_list() == [
        "cudaMalloc",
        "cudaStreamCreateWithFlags",
        "hipModuleLoadData",
    ]
    assert calls.get_column("start").to_list() == [0, 20, 80]


def test_a_frame_without_names_has_no_setup_calls() -> None:
    api = make_trace(api=[(0, 10, None, "cudaMalloc")]).api.with_columns(
        pl.lit(None, pl.String).alias("name")
    )
    assert S.setup_calls(api).is_empty()
    assert S.setup_calls(make_trace().api).is_empty()


def test_setup_time_is_clipped_to_the_window_and_capped_at_its_length() -> None:
    windows = pl.DataFrame(
        {"iteration": [0, 1, 2], "window_start": [0, 100, 300], "window_end": [100, 200, 400]}
    )
    calls = pl.DataFrame(
        {
            "start": [90, 120, 130, 150, 280, 310, 320, 330],
            "end": [130, 190, 400, 160, 310, 330, 321, 350],
            "pid": [1] * 8,
            "call": [
                "cudaMalloc",
                "cudaFree",
                "cudaMalloc",
                "cudaFree",
                "cudaStreamCreate",
                "cudaFree",
                "cudaEventCreate",
                "cudaMalloc",
            ],
        }
    )
    # the first call is iteration 0's (its start): 10 ns inside its window; iteration 1's three calls, on
    # several threads at once, cover [120, 200) once: 80 ns (their sum, 70 + 70 + 10, would be 150); iteration
    # 2's window starts after its range (an unsynchronized iteration: at the previous GPU end), so the call
    # begun at 280 counts from 300, and the calls cover [300, 350): 50 ns (the 1 ns call lies inside another;
    # by call: 20 + 1 + 20 + 10, a tie of 20 ns named in name order)
    iteration = pl.Series([0, 1, 1, 1, 2, 2, 2, 2])
    per = S.setup_ns_per_iteration(calls, windows, iteration)
    assert per.get_column("iteration").to_list() == [0, 1, 2]
    assert per.get_column("setup_ns").to_list() == [10, 80, 50]
    assert per.get_column("by_call").to_list()[1:] == [
        [{"call": "cudaFree", "ns": 80}, {"call": "cudaMalloc", "ns": 70}],
        [
            {"call": "cudaFree", "ns": 20},
            {"call": "cudaMalloc", "ns": 20},
            {"call": "cudaStreamCreate", "ns": 10},
            {"call": "cudaEventCreate", "ns": 1},
        ],
    ]


def test_the_empty_frames_have_their_columns() -> None:
    assert S.setup_calls(make_trace().api).schema == pl.Schema(
        {"start": pl.Int64, "end": pl.Int64, "pid": pl.Int64, "call": pl.String}
    )
    windows = pl.DataFrame({"iteration": [0], "window_start": [0], "window_end": [100]})
    empty = S.setup_ns_per_iteration(S.setup_calls(make_trace().api), windows, pl.Series([], dtype=pl.Int64))
    assert empty.schema == pl.Schema(
        {
            "iteration": pl.Int64,
            "setup_ns": pl.Int64,
            "by_call": pl.List(pl.Struct({"call": pl.String, "ns": pl.Int64})),
        }
    )


@pytest.mark.parametrize(
    ("indices", "text"),
    [
        ([3], "iteration 3"),
        ([2, 3, 4], "iterations 2-4"),
        ([0, 2, 5], "iterations 0, 2, 5"),
        (list(range(0, 20, 2)), "iterations 0, 2, 4, 6, 8, 10, 12, 14 and 2 more"),
        (list(range(0, 18, 2)), "iterations 0, 2, 4, 6, 8, 10, 12, 14 and 1 more"),
        (list(range(0, 16, 2)), "iterations 0, 2, 4, 6, 8, 10, 12, 14"),
    ],
)
def test_iterations_are_named_as_ranges_or_lists(indices: list[int], text: str) -> None:
    assert S._iterations_text(indices) == text


def test_calls_of_no_iteration_count_nowhere() -> None:
    windows = pl.DataFrame({"iteration": [0], "window_start": [0], "window_end": [100]})
    calls = pl.DataFrame({"start": [500], "end": [600], "pid": [1], "call": ["cudaMalloc"]})
    per = S.setup_ns_per_iteration(calls, windows, pl.Series([None], dtype=pl.Int64))
    assert per.is_empty() and per.columns == ["iteration", "setup_ns", "by_call"]


# ----------------------------------------------------------------------------------- the warnings


def _analysis(setup: list[tuple[int, str]], count: int = 3, skip: int = 0):  # type: ignore[no-untyped-def]
    return analyze_iterations(_iterations(setup, count), skip=skip)


def test_a_first_iteration_with_setup_is_named_with_the_skip_that_leaves_it_out() -> None:
    a = _analysis([(5 * MS, "cudaMalloc")])
    want = (
        "iteration 0 of 3 spends 5.000 ms (25% of its latency) in setup calls (cudaMalloc 5.000 ms): CUDA "
        "initialization, memory allocation, stream, event or module creation, graph instantiation; a first "
        "run's one-time costs, not the steady state: --skip 1 leaves them out"
    )
    assert want in a.warnings
    assert a.summary.verdict_uncertain is None
    assert a.setup_caveat is not None and a.setup_caveat.startswith(
        "iteration 0 holds 5.000 ms of setup calls"
    )


def test_the_skip_hint_counts_the_iterations_already_skipped() -> None:
    # --skip 1 drops iteration 0; iteration 1 allocates: it is the first analyzed, and --skip 2 drops it
    a = _analysis([(0, ""), (5 * MS, "cudaMalloc")], count=4, skip=1)
    (warning,) = [w for w in a.warnings if "setup calls" in w]
    assert warning.startswith("iteration 1 of 3 spends 5.000 ms")
    assert warning.endswith("--skip 2 leaves them out")


def test_skipping_the_set_up_iteration_leaves_nothing_to_say() -> None:
    a = _analysis([(5 * MS, "cudaMalloc")], skip=1)
    assert not [w for w in a.warnings if "setup calls" in w]
    assert a.setup_caveat is None and a.summary.verdict_uncertain is None


def test_a_set_up_iteration_in_the_middle_gets_no_skip_hint() -> None:
    a = _analysis([(0, ""), (5 * MS, "cudaStreamCreate")])
    (warning,) = [w for w in a.warnings if "setup calls" in w]
    assert warning.startswith("iteration 1 of 3 spends 5.000 ms (25% of its latency)")
    assert warning.endswith("they count as framework overhead (other_api) in those iterations")


@pytest.mark.parametrize(
    ("ns", "flagged"),
    [
        (MS - 1, False),  # under 1 ms (5% of 20 ms): not flagged
        (MS, False),  # 1 ms but 5% of the latency: under the 10% share
        (2 * MS - 1, False),  # 10% of 20 ms is 2 ms
        (2 * MS, True),
    ],
)
def test_setup_is_flagged_from_1_ms_and_10_percent_of_the_latency(ns: int, flagged: bool) -> None:
    a = _analysis([(ns, "cudaMalloc")])
    assert any("setup calls" in w for w in a.warnings) is flagged


@pytest.mark.parametrize(("ns", "flagged"), [(900_000, False), (MS - 1, False), (MS, True)])
def test_the_1_ms_floor_holds_for_short_iterations(ns: int, flagged: bool) -> None:
    # in a 5 ms iteration a call of 0.9 ms is 18% of it, but under the 1 ms floor; 1 ms itself counts
    trace = _iterations([(ns, "cudaMalloc")], count=3, length=5 * MS)
    assert any("setup calls" in w for w in analyze_iterations(trace).warnings) is flagged


def test_setup_in_most_iterations_makes_the_verdict_uncertain() -> None:
    a = _analysis([(5 * MS, "cudaMalloc"), (5 * MS, "cudaFree"), (0, "")])
    assert a.summary.verdict_uncertain == (
        "verdict uncertain: iterations 0-1 of 3 spend 10.000 ms (25% of their latency) in setup calls "
        "(cudaFree 5.000 ms, cudaMalloc 5.000 ms): CUDA initialization, memory allocation, stream, event or "
        "module creation, graph instantiation. A first run pays them once (CUDA initializes inside its first "
        "call; the caching allocator's first allocations): then they are not the steady state, so profile "
        "after a warm-up (torch.profiler's schedule(wait=, warmup=, active=), or more iterations and --skip). "
        "If they recur every iteration, they are a cost the framework pays each time. They count as framework "
        "overhead (other_api)"
    )
    # shown once among the warnings
    assert sum("setup calls" in w for w in a.warnings) == 1
    assert a.setup_caveat is not None
    assert a.setup_caveat.startswith(
        "iterations 0-1 hold 10.000 ms of setup calls (cudaFree 5.000 ms, cudaMalloc"
    )


def test_half_of_the_iterations_set_up_is_the_median_one_and_uncertain() -> None:
    a = _analysis([(5 * MS, "cudaMalloc"), (5 * MS, "cudaMalloc")], count=4)
    assert a.summary.verdict_uncertain is not None
    assert a.summary.verdict_uncertain.startswith("verdict uncertain: iterations 0-1 of 4 spend")


def test_exactly_three_calls_are_named_without_more() -> None:
    trace = make_trace(
        ranges=[(0, 20 * MS, "iteration")],
        api=[(MS, MS + 100, 1, "cudaLaunchKernel")]
        + [
            ((3 + 2 * i) * MS, (4 + 2 * i) * MS, None, n)
            for i, n in enumerate(["cudaMalloc", "cudaFree", "cuInit"])
        ],
        ops=[(2 * MS, 3 * MS, 1, 7)],
    )
    doubt = analyze_iterations(trace).summary.verdict_uncertain
    assert doubt is not None
    assert "in setup calls (cuInit 1.000 ms, cudaFree 1.000 ms, cudaMalloc 1.000 ms): CUDA" in doubt


def test_only_three_calls_are_named() -> None:
    names = ["cudaMalloc", "cudaFree", "cudaStreamCreate", "cudaEventCreate", "cuModuleLoadData"]
    trace = make_trace(
        ranges=[(0, 20 * MS, "iteration")],
        api=[(MS, MS + 100, 1, "cudaLaunchKernel")]
        + [((3 + 2 * i) * MS, (3 + 2 * i) * MS + (5 - i) * MS // 2, None, n) for i, n in enumerate(names)],
        ops=[(2 * MS, 3 * MS, 1, 7)],
    )
    doubt = analyze_iterations(trace).summary.verdict_uncertain
    assert doubt is not None
    assert "(cudaMalloc 2.500 ms, cudaFree 2.000 ms, cudaStreamCreate 1.500 ms and 2 more)" in doubt


def test_another_process_s_setup_calls_are_not_an_iteration_s() -> None:
    # pid 2 allocates during pid 1's iteration: not pid 1's cost
    trace = make_trace(
        ranges=[(0, 20 * MS, "iteration", 0, "user", 1)],
        api=[(MS, MS + 100, 1, "cudaLaunchKernel", 1), (3 * MS, 13 * MS, None, "cudaMalloc", 2)],
        ops=[(2 * MS, 3 * MS, 1, 7)],
        range_fields=("start", "end", "name", "depth", "domain", "pid"),
        api_fields=("start", "end", "correlation", "name", "pid"),
    )
    a = analyze_iterations(trace)
    assert not any("setup calls" in w for w in a.warnings)
    assert a.summary.verdict_uncertain is None


def test_split_idle_windows_count_the_calls_inside_them() -> None:
    # no ranges: one synthetic window over the trace holds the 5 ms allocation
    trace = make_trace(
        api=[
            (0, 100, 1, "cudaLaunchKernel"),
            (200, 5 * MS + 200, None, "cudaMalloc"),
            (5 * MS + 300, 5 * MS + 400, 2, "cudaLaunchKernel"),
        ],
        ops=[(150, 1_000, 1, 7), (5 * MS + 500, 6 * MS, 2, 7)],
    )
    doubt = analyze_iterations(trace).summary.verdict_uncertain
    assert doubt is not None and "in setup calls (cudaMalloc 5.000 ms)" in doubt


def test_the_projection_carries_the_caveat() -> None:
    trace = _iterations([(15 * MS, "cudaMalloc")], count=1)
    trace.meta.update({"path": "setup.synthetic.json"})
    analysis = analyze_trace(trace)
    assert analysis.projection is not None and analysis.projection.applies
    assert analysis.projection.caveat == (
        "iteration 0 holds 15.000 ms of setup calls (cudaMalloc 15.000 ms), which the projection removes as "
        "host work: a warmed-up eager run does not pay them, so against it the saving is smaller"
    )
    doc = analysis.to_json()
    assert doc["idle_attribution"]["cuda_graph_projection"]["caveat"] == analysis.projection.caveat


def test_no_caveat_key_without_setup() -> None:
    analysis = analyze_trace(_iterations([]))
    assert "caveat" not in analysis.to_json()["idle_attribution"]["cuda_graph_projection"]


# -------------------------------------------------------------------------------------------- real


def test_hta_alexnet_benchmark_range_is_mostly_cuda_initialization() -> None:
    analysis = analyze_trace_file(real_trace("kineto/hta_a100_alexnet_fwd_benchmark.json.gz"))
    doubt = analysis.summary.verdict_uncertain
    assert doubt is not None
    assert doubt.startswith(
        "verdict uncertain: iteration 0 of 1 spends 39,182.263 ms (90% of its latency) in setup calls "
        "(cudaDeviceGetStreamPriorityRange 29,927.381 ms, cudaFree 6,553.827 ms, cudaMalloc 1,956.700 ms and "
        "5 more)"
    )
    assert analysis.projection is not None and analysis.projection.caveat is not None


def analyze_trace_file(path):  # type: ignore[no-untyped-def]
    from tracekit.api import analyze

    return analyze(path)


def test_the_api_says_why_the_verdict_is_uncertain() -> None:
    from tracekit.api import analyze

    a = analyze(real_trace("kineto/hta_a100_alexnet_fwd_benchmark.json.gz"))
    assert a.verdict == "framework"
    assert a.verdict_uncertain == a.summary.verdict_uncertain
    assert a.verdict_uncertain is not None and "in setup calls" in a.verdict_uncertain
