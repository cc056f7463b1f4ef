"""The Nsight Compute join of analyzers/kernel_metrics.py at its edges (issue 33's mutation run found these
unchecked): nothing to join, one iteration, a profile that repeats the iteration's kernels with a remainder,
kernel counts that vary, rows not in order. Hand-built frames and traces (synthetic), exact values."""

from __future__ import annotations

import polars as pl
import pytest

from tests.test_table import NCU_TWO, SM_ACTIVE_PCT, WARPS_ACTIVE_PCT, ncu_trace, timeline
from tracekit.analyzers.iterations import analyze_iterations
from tracekit.analyzers.kernel_metrics import _join_ncu, analyze_kernel_metrics

TIMELINE_SCHEMA = {
    "op": pl.Int64,
    "iteration": pl.Int64,
    "position": pl.Int64,
    "timeline_name": pl.String,
    "timeline_ns": pl.Int64,
}


def _timeline_kernels(rows: list[tuple[int, int]]) -> pl.DataFrame:
    """(iteration, position) rows; op = row number, names k<position>, 100 ns each."""
    return pl.DataFrame(
        {
            "op": list(range(len(rows))),
            "iteration": [r[0] for r in rows],
            "position": [r[1] for r in rows],
            "timeline_name": [f"k{r[1]}" for r in rows],
            "timeline_ns": [100] * len(rows),
        },
        schema=TIMELINE_SCHEMA,
    )


def _values(sms: list[float]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "kernel": list(range(len(sms))),
            "name": [f"n{i}" for i in range(len(sms))],
            "sms_active": sms,
            "warp_occupancy": [v / 10 for v in sms],
        },
        schema={
            "kernel": pl.Int64,
            "name": pl.String,
            "sms_active": pl.Float64,
            "warp_occupancy": pl.Float64,
        },
    )


JOINED_SCHEMA = {**TIMELINE_SCHEMA, "sms_active": pl.Float64, "warp_occupancy": pl.Float64, "name": pl.String}


@pytest.mark.parametrize(("m", "n"), [(0, 2), (3, 0), (0, 0)])
def test_nothing_to_join_gives_an_empty_frame_of_the_joined_schema(m: int, n: int) -> None:
    warnings: list[str] = []
    joined = _join_ncu(_values([10.0, 20.0, 30.0][:m]), _timeline_kernels([(0, 0), (0, 1)][:n]), warnings)
    assert joined.is_empty() and dict(joined.schema) == JOINED_SCHEMA
    assert warnings == []


def test_one_kernel_in_one_iteration_is_joined() -> None:
    warnings: list[str] = []
    joined = _join_ncu(_values([42.0]), _timeline_kernels([(0, 0)]), warnings)
    assert joined.select("iteration", "position", "name", "sms_active", "warp_occupancy").rows() == [
        (0, 0, "n0", 42.0, 4.2)
    ]
    assert warnings == []


def test_a_profile_of_whole_iterations_plus_a_remainder_averages_the_whole_ones() -> None:
    # 3 kernels per iteration, 7 profiled: repetitions j = 0..5 count, j = 6 is left out
    warnings: list[str] = []
    timeline_kernels = _timeline_kernels([(i, p) for i in range(2) for p in range(3)])
    joined = _join_ncu(_values([10.0, 20.0, 30.0, 30.0, 40.0, 50.0, 1000.0]), timeline_kernels, warnings)
    by_position = dict(joined.filter(pl.col("iteration") == 0).select("position", "sms_active").rows())
    assert by_position == {0: 20.0, 1: 30.0, 2: 40.0}
    assert joined.height == 6 and joined.filter(pl.col("iteration") == 1)["sms_active"].to_list() == [
        20.0,
        30.0,
        40.0,
    ]
    assert warnings == [
        "Nsight Compute holds 7 kernels, not a multiple of the 3 kernels per iteration: the last 1 are ignored"
    ]


def test_varying_kernel_counts_join_in_order_even_from_unsorted_rows() -> None:
    warnings: list[str] = []
    rows = [(1, 1), (0, 1), (1, 0), (0, 0), (1, 2)]  # iteration 0: 2 kernels, iteration 1: 3
    joined = _join_ncu(_values([1.0, 2.0, 3.0, 4.0]), _timeline_kernels(rows), warnings)
    got = {(r["iteration"], r["position"]): r["sms_active"] for r in joined.to_dicts()}
    assert got == {(0, 0): 1.0, (0, 1): 2.0, (1, 0): 3.0, (1, 1): 4.0, (1, 2): None}
    assert warnings == [
        "Nsight Compute holds 4 kernels but the timeline's analyzed iterations hold 5 (kernels per iteration "
        "vary: 2..3): matched one to one in order; iterations not wholly matched get no wall-time value, and "
        "the kernel-time averages cover the wholly matched ones"
    ]


def test_one_iteration_timeline_with_the_ncu_profile_of_it() -> None:
    tl = timeline(kernels=[(100, 300, "void ns::A<int>(int*)"), (400, 500, "B(float*)")], ranges=((0, 1000),))
    result = analyze_kernel_metrics(ncu_trace(NCU_TWO), tl, analyze_iterations(tl))
    # (200 * 50 + 100 * 80) / 1000 ns = 18 %
    assert result.iterations["sms_active"].to_list() == pytest.approx([18.0])
    assert result.summary["sms_active"]["iterations"] == 1 and result.warnings == []
    assert (SM_ACTIVE_PCT, WARPS_ACTIVE_PCT) == (
        result.summary["sms_active"]["metric"],
        result.summary["warp_occupancy"]["metric"],
    )


@pytest.mark.parametrize(
    ("name", "bare"),
    [
        ("void at::native::(anonymous namespace)::k<float, 4>(int, float*)", "k"),
        ("(anonymous namespace)", "anon"),  # the namespace is all there is: it is the name
        ("ns::<unnamed>", "anon"),
        ("void f<(anonymous namespace)::X>(int)", "f"),
        ("", ""),
        (None, None),
    ],
)
def test_base_name_of_anonymous_and_unnamed(name: str | None, bare: str | None) -> None:
    from tracekit.analyzers.kernel_metrics import base_name

    assert base_name(name) == bare


def test_name_check_keeps_its_columns_and_names_the_first_mismatch() -> None:
    from tracekit.analyzers.kernel_metrics import _check_names

    warnings: list[str] = []
    empty = _check_names(_join_ncu(_values([]), _timeline_kernels([]), []), warnings)
    assert empty.is_empty() and empty.schema["name_match"] == pl.Boolean and "_a" not in empty.columns
    joined = _join_ncu(_values([1.0, 2.0, 3.0]), _timeline_kernels([(0, 0), (0, 1), (0, 2)]), [])
    joined = joined.with_columns(pl.Series("timeline_name", ["n0", "x1", "x2"]))
    checked = _check_names(joined, warnings)
    assert list(checked.columns) == [*JOINED_SCHEMA, "name_match"]
    assert checked["name_match"].to_list() == [True, False, False]
    assert warnings == [
        "2 of 3 matched kernels differ in name (first: iteration 0 position 1: Nsight Compute 'n1' vs timeline "
        "'x1'): the join by order may be wrong"
    ]


def test_an_iteration_without_kernels_stays_with_no_value() -> None:
    tl = timeline(kernels=[(100, 300, "void ns::A<int>(int*)"), (400, 500, "B(float*)")])  # iteration 1: none
    result = analyze_kernel_metrics(ncu_trace(NCU_TWO), tl, analyze_iterations(tl))
    assert result.iterations.columns == ["index", "latency_ms", "sms_active", "warp_occupancy"]
    assert result.iterations["index"].to_list() == [0, 1]
    assert result.iterations["sms_active"].to_list() == pytest.approx([18.0, None])


def _kineto_timeline(occupancy: dict[int, float]) -> object:
    """The hand-built two-iteration timeline with Kineto's per-kernel occupancy estimate on the kernels named
    in ``occupancy`` (kernel index in start order -> %), as the Kineto reader writes it."""
    from tracekit.analyzers.kernel_metrics import KINETO_OCCUPANCY

    km = pl.DataFrame(
        {
            "kernel": list(occupancy),
            "name": ["k"] * len(occupancy),
            "range": [None] * len(occupancy),
            "duration_ns": [None] * len(occupancy),
            "metric": [KINETO_OCCUPANCY] * len(occupancy),
            "unit": ["%"] * len(occupancy),
            "value": list(occupancy.values()),
        },
        schema_overrides={"range": pl.String, "duration_ns": pl.Int64},
    )
    return timeline(kernel_metrics=km)


def test_the_result_names_its_source() -> None:
    tl = timeline()
    analysis = analyze_iterations(tl)
    assert analyze_kernel_metrics(ncu_trace(NCU_TWO), tl, analysis).source == "ncu"
    assert analyze_kernel_metrics(ncu_trace(NCU_TWO)).source == "ncu"
    kineto = _kineto_timeline({0: 20.0, 1: 40.0, 2: 20.0, 3: 40.0})
    assert analyze_kernel_metrics(kineto, kineto, analyze_iterations(kineto)).source == "kineto estimate"
    # a metrics trace other than the timeline that carries the Kineto estimate is still the estimate
    assert analyze_kernel_metrics(kineto, tl, analysis).source == "kineto estimate"


def test_a_kernel_without_the_kineto_estimate_leaves_its_iteration_without_a_wall_value() -> None:
    kineto = _kineto_timeline({0: 20.0, 1: 40.0, 2: 20.0})  # the 4th kernel (iteration 1) has no estimate
    result = analyze_kernel_metrics(kineto, kineto, analyze_iterations(kineto))
    # iteration 0: (200 * 20 + 100 * 40) / 1000 = 8 %; iteration 1 incomplete
    assert result.iterations["warp_occupancy"].to_list() == pytest.approx([8.0, None])
    entry = result.summary["warp_occupancy"]
    assert (entry["unit"], entry["missing"], entry["kernels"]) == ("%", 0, 3)
    assert entry["kernel_time"] == pytest.approx((200 * 20 + 100 * 40 + 200 * 20) / 500)


def test_summary_counts_missing_values_and_has_a_unit() -> None:
    kernels = [NCU_TWO[0], ("B(float*)", "iteration", 90, {SM_ACTIVE_PCT: 80.0})]  # B: no warps metric
    result = analyze_kernel_metrics(ncu_trace(kernels))
    entry = result.summary["warp_occupancy"]
    assert (entry["unit"], entry["missing"], entry["nan_skipped"], entry["kernels"]) == ("%", 1, 0, 1)
    assert result.summary["sms_active"]["source"] == "ncu"


def test_one_profiled_kernel_and_all_nan_values() -> None:
    one = analyze_kernel_metrics(ncu_trace([NCU_TWO[0]]))
    assert one.summary["sms_active"]["source"] == "ncu" and one.value("sms_active", wall_time=False) == 50.0
    nan = analyze_kernel_metrics(ncu_trace([("k", None, 100, {SM_ACTIVE_PCT: float("nan")})]))
    assert nan.value("sms_active", wall_time=False) is None  # no kernel with a value: no average, not 0/0
    assert nan.summary["sms_active"]["nan_skipped"] == 1


def test_a_timeline_without_an_analysis_or_the_reverse_gives_kernel_time_only() -> None:
    tl = timeline()
    analysis = analyze_iterations(tl)
    for result in (
        analyze_kernel_metrics(ncu_trace(NCU_TWO), tl, None),
        analyze_kernel_metrics(ncu_trace(NCU_TWO), None, analysis),
    ):
        assert result.iterations is None and result.value("sms_active") is None
        assert result.value("sms_active", wall_time=False) == pytest.approx((150 * 50 + 90 * 80) / 240)


def test_no_ncu_kernel_in_the_range_uses_them_all_and_says_so() -> None:
    kernels = [(name, "warmup", dur, metrics) for name, _, dur, metrics in NCU_TWO]
    tl = timeline()
    result = analyze_kernel_metrics(ncu_trace(kernels), tl, analyze_iterations(tl))
    assert result.warnings[0] == (
        "no Nsight Compute kernel ran inside an NVTX range named 'iteration'; using all 2 kernels in "
        "profiling order"
    )
    assert result.value("sms_active") == pytest.approx(18.0)


def test_per_kernel_takes_the_first_good_metric_and_names_it() -> None:
    from tests.test_table import SM_CYCLES_ACTIVE, SM_CYCLES_ELAPSED
    from tracekit.analyzers.kernel_metrics import per_kernel

    km = ncu_trace(
        [
            # the percent is NaN: the cycles ratio stands in, and is named
            ("a", None, 10, {SM_ACTIVE_PCT: float("nan"), SM_CYCLES_ACTIVE: 30.0, SM_CYCLES_ELAPSED: 120.0}),
            # only a NaN: NaN, named after the metric that gave it
            ("b", None, 10, {SM_ACTIVE_PCT: float("nan")}),
            ("c", None, 10, {"something else": 1.0}),
        ]
    ).kernel_metrics
    # a metric written twice for one kernel (ncu sections can repeat one): the first row counts
    km = pl.concat([km, km.filter(pl.col("kernel") == 0).with_columns(pl.lit(99.0).alias("value"))])
    frame = per_kernel(km)
    assert frame.schema["sms_active"] == pl.Float64 and frame.schema["warp_occupancy"] == pl.Float64
    assert frame["sms_active"].to_list()[0] == 25.0 and frame["sms_active"].to_list()[2] is None
    assert frame["sms_active"].is_nan().to_list()[1] is True
    assert frame["sms_active_how"].to_list() == [
        f"100*{SM_CYCLES_ACTIVE}/{SM_CYCLES_ELAPSED}",
        SM_ACTIVE_PCT,
        None,
    ]
    assert frame["warp_occupancy"].to_list() == [None, None, None]
    only_unknown = per_kernel(ncu_trace([("c", None, 10, {"something else": 1.0})]).kernel_metrics)
    assert only_unknown.select("kernel", "name", "sms_active", "warp_occupancy").rows() == [
        (0, "c", None, None)
    ]
    assert only_unknown.schema["sms_active"] == pl.Float64


def test_summary_names_every_metric_used_and_counts_nan_kernels() -> None:
    from tests.test_table import SM_CYCLES_ACTIVE, SM_CYCLES_ELAPSED

    kernels = [
        ("a", None, 100, {SM_ACTIVE_PCT: 50.0}),
        ("b", None, 100, {SM_CYCLES_ACTIVE: 30.0, SM_CYCLES_ELAPSED: 120.0}),
        ("c", None, 100, {SM_ACTIVE_PCT: 10.0}),
        ("d", None, 100, {WARPS_ACTIVE_PCT: float("nan")}),
        ("e", None, 100, {WARPS_ACTIVE_PCT: float("nan")}),
    ]
    result = analyze_kernel_metrics(ncu_trace(kernels))
    sms = result.summary["sms_active"]
    assert sms["metric"] == SM_ACTIVE_PCT and sms["metrics_used"] == sorted(
        [SM_ACTIVE_PCT, f"100*{SM_CYCLES_ACTIVE}/{SM_CYCLES_ELAPSED}"]
    )
    assert sms["coverage"] == pytest.approx(300 / 500)
    warps = result.summary["warp_occupancy"]
    assert "metrics_used" not in warps and warps["coverage"] == 0.0 and warps["kernel_time"] is None
    assert f"warp_occupancy: 2 kernels with NaN {WARPS_ACTIVE_PCT} skipped" in result.warnings
    one = analyze_kernel_metrics(ncu_trace(kernels[:4]))
    assert f"warp_occupancy: 1 kernel with NaN {WARPS_ACTIVE_PCT} skipped" in one.warnings


def test_coverage_without_durations_is_unknown_not_zero() -> None:
    result = analyze_kernel_metrics(ncu_trace([("a", None, None, {SM_ACTIVE_PCT: 50.0})]))
    assert result.summary["sms_active"]["coverage"] is None


def test_the_result_holds_the_joined_kernels_and_the_iteration_count() -> None:
    tl = timeline()
    result = analyze_kernel_metrics(ncu_trace(NCU_TWO), tl, analyze_iterations(tl))
    assert result.kernels.height == 4 and result.kernels["name_match"].to_list() == [True] * 4
    assert result.summary["sms_active"]["iterations"] == 2


def test_the_timeline_kernels_follow_the_analysis_range_or_the_one_given() -> None:
    """Without the analysis' ops, the kernels are assigned to the ranges named by ``range_name``, else by the
    analysis' own range: here 'step' (one range over both 'iteration' ranges), not the default 'iteration'."""
    tl = timeline(ranges=((0, 1000), (1000, 2000)))
    step = tl.ranges.head(1).with_columns(pl.lit(2000, pl.Int64).alias("end"), pl.lit("step").alias("name"))
    tl = type(tl)(ops=tl.ops, ranges=pl.concat([tl.ranges, step]), meta=tl.meta)
    by_step = analyze_iterations(tl, range_name="step")
    assert by_step.iterations.height == 1
    result = analyze_kernel_metrics(ncu_trace(NCU_TWO), tl, by_step)
    # one 2000 ns iteration holding all 4 kernels, profiled as 2 per iteration: not a whole iteration
    assert result.kernels.height == 4 and result.iterations["sms_active"].to_list() == [None]
    assert any(
        "no analyzed iteration wholly (2 of the 4 kernels of iteration 0" in w for w in result.warnings
    )
    assert result.value("sms_active", wall_time=False) is None
    # range_name given: it decides the timeline's iterations (2 x 2 kernels), reported on the analysis' index 0
    by_iteration = analyze_kernel_metrics(ncu_trace(NCU_TWO), tl, by_step, "iteration")
    assert by_iteration.kernels["iteration"].to_list() == [0, 0]


def test_positions_follow_the_launch_order_within_each_iteration() -> None:
    """A kernel's position in its iteration is its rank by launch (its launching call's start), as ncu numbers
    kernels, not by start (overlapping kernels on two streams: the kernel launched first here ends last), and
    the joined kernels come in iteration order even when a kernel launched in iteration 0 starts after one
    launched in iteration 1. (Before fuzz 8 the rank was by start, then end.)"""
    from tests.builders import make_trace

    trace = make_trace(
        ranges=[(0, 1000, "iteration"), (1000, 2000, "iteration")],
        api=[
            (10, 20, 1, "cudaLaunchKernel"),
            (30, 40, 2, "cudaLaunchKernel"),
            (50, 60, 3, "cudaLaunchKernel"),
            (1010, 1020, 4, "cudaLaunchKernel"),
            (1030, 1040, 5, "cudaLaunchKernel"),
            (1050, 1060, 6, "cudaLaunchKernel"),
        ],
        ops=[
            (100, 500, 1, 7),  # iteration 0, position 0: starts first, ends last
            (100, 200, 2, 8),  # same start, ends first: position 0 by (start, end)
            (1120, 1220, 3, 9),  # launched in iteration 0, queued: starts after iteration 1's first kernel
            (1100, 1150, 4, 7),
            (1150, 1900, 5, 8),
            (1200, 1300, 6, 9),
        ],
    )
    # each position's kernel named alike in both iterations, as ncu names them (the join drops kernels whose
    # names differ): positions 0, 1, 2 (launch order) are x, y, z
    import dataclasses

    import polars as pl

    by_end = {500: "x", 200: "y", 1220: "z", 1150: "x", 1900: "y", 1300: "z"}
    names = pl.col("end").replace_strict(by_end, return_dtype=pl.String).alias("name")
    trace = dataclasses.replace(trace, ops=trace.ops.with_columns(names))
    analysis = analyze_iterations(trace)
    kernels = [
        (n, "iteration", 100, {SM_ACTIVE_PCT: v}) for n, v in zip("xyz", (10.0, 20.0, 30.0), strict=True)
    ]
    result = analyze_kernel_metrics(ncu_trace(kernels), trace, analysis)
    joined = result.kernels.select("iteration", "position", "timeline_ns", "sms_active").rows()
    # by launch: iteration 0 = (100-500, 100-200, 1120-1220), iteration 1 = (1100-1150, 1150-1900, 1200-1300)
    assert joined == [
        (0, 0, 400, 10.0),
        (0, 1, 100, 20.0),
        (0, 2, 100, 30.0),
        (1, 0, 50, 10.0),
        (1, 1, 750, 20.0),
        (1, 2, 100, 30.0),
    ]
