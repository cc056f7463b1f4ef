"""Round 17 follow-ups (followups17): one untraced-latency rule for analyze and report, ncu/Kineto kernel names
paired in compare, quantile edges, a malformed world size in fleet metadata, and report/compare numbers."""

from __future__ import annotations

import csv
from pathlib import Path
from types import SimpleNamespace

import pytest

from tracekit.analyzers import profiler_cost, report
from tracekit.analyzers.profiler_cost import findings, untraced_median_ms
from tracekit.inputs import TraceConfig

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_traces"

# ---------------------------------------------------------------------------------------------------------
# 1. one rule for the untraced latency (analyze's profiler-cost check and report's row)

#: 20 untraced iterations of an old run: 3 warm-up (9, 8, 7 ms) the stability rules drop, then 2.0/2.2 ms.
#: Kept 17 (9 x 2.0, 8 x 2.2): median 2.0. All 20 (what the old run.json's p50 is over): 10th and 11th
#: sorted values 2.2 and 2.2, p50 2.2.
OLD_RUN_LATENCY = [9.0, 8.0, 7.0] + [2.0, 2.2] * 8 + [2.0]


def _old_run(tmp_path: Path) -> TraceConfig:
    """A synthetic run collected before the statistics were recorded: run.json's mean/p50 only, and the
    iterations in latency.csv (plus another configuration's rows, which must not count)."""
    with open(tmp_path / "latency.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["runtime", "batch_size", "seq_len", "iteration", "latency_ms"])
        for i, v in enumerate(OLD_RUN_LATENCY):
            writer.writerow(["pytorch", 1, 128, i, v])
        for i in range(20):
            writer.writerow(["pytorch", 8, 128, i, 50.0])
    mean = sum(OLD_RUN_LATENCY) / 20
    return TraceConfig(
        path=tmp_path / "pytorch_b1_s128.synthetic.torch.json.gz",
        runtime="pytorch",
        batch_size=1,
        seq_len=128,
        device="gpu",
        synthetic=True,
        untraced_latency={"mean": mean, "p50": 2.2, "min": 2.0, "max": 9.0, "count": 20},
    )


def test_an_old_run_gets_the_same_untraced_median_from_analyze_and_report(tmp_path: Path) -> None:
    config = _old_run(tmp_path)
    assert untraced_median_ms(config) == 2.0
    row_stats = report.untraced_measurement(SimpleNamespace(config=config, device="gpu"))
    assert row_stats is not None
    assert (row_stats.median, row_stats.count, row_stats.kept, row_stats.warmup) == (2.0, 20, 17, (0, 1, 2))
    assert (row_stats.ci_low, row_stats.ci_high) == (2.0, 2.2)
    # analyze's words, given the configuration: 4.0 / 2.0 = 2.00x (run.json's p50 alone would say 1.82x)
    warnings, _, _ = findings(4.0, None, "compute", 0.5, config)
    assert warnings == [
        "the profiler slowed this run 2.00x: median latency 4.000 ms traced against 2.000 ms untraced (the same "
        "configuration timed without a profiler, run.json): the framework overhead shown includes the "
        "profiler's own cost, about 2.000 ms per iteration"
    ]


def test_recorded_statistics_are_used_without_reading_latency_csv(tmp_path: Path, monkeypatch) -> None:
    """A run with the stability rules' statistics recorded: analyze's path reads no latency.csv."""
    config = _old_run(tmp_path)
    full = {"median": 2.5, "kept": 18, "count": 20, "ci_low": 2.4, "ci_high": 2.6, "p50": 2.2}
    config = TraceConfig(**{**config.__dict__, "untraced_latency": full})

    def no_read(*args: object) -> None:
        raise AssertionError("latency.csv read")

    monkeypatch.setattr(profiler_cost, "_latency_rows", no_read)
    stats = profiler_cost.untraced_of(config)
    assert stats is not None and (stats.median, stats.kept, stats.ci_low, stats.ci_high) == (
        2.5,
        18,
        2.4,
        2.6,
    )
    assert untraced_median_ms(config) == 2.5


def test_without_latency_csv_the_recorded_median_p50_or_mean_in_that_order(tmp_path: Path) -> None:
    config = _old_run(tmp_path)
    (tmp_path / "latency.csv").unlink()
    for recorded, expected in (
        ({"median": 2.5, "p50": 2.2, "mean": 3.0}, 2.5),
        ({"p50": 2.2, "mean": 3.0}, 2.2),
        ({"mean": 3.0, "count": 4}, 3.0),
        ({"p50": 0.0, "mean": 3.0}, None),
        ({"count": 4}, None),
    ):
        edited = TraceConfig(**{**config.__dict__, "untraced_latency": recorded})
        assert untraced_median_ms(edited) == expected
        row = report.untraced_measurement(SimpleNamespace(config=edited, device="gpu"))
        assert (None if row is None else row.median) == expected


def test_a_damaged_latency_csv_falls_back_to_the_recorded_p50(tmp_path: Path) -> None:
    config = _old_run(tmp_path)
    text = (
        (tmp_path / "latency.csv").read_text().replace("\npytorch,1,128,4,2.2\n", "\npytorch,1,128,4,fast\n")
    )
    (tmp_path / "latency.csv").write_text(text)
    assert untraced_median_ms(config) == 2.2
    assert report.untraced_measurement(SimpleNamespace(config=config, device="gpu")).median == 2.2


def test_analyze_of_the_committed_torchscript_run_uses_reports_untraced_median() -> None:
    """The committed H200 TorchScript batch-1 run predates the recorded statistics: run.json p50 2.088287 ms over
    20 iterations; latency.csv measured by the stability rules (17 kept) 2.054961 ms, report's latency_ms."""
    import tracekit

    a = tracekit.analyze(SAMPLES / "h200_bert_fp16" / "torchscript" / "torchscript_b1_s128.torch.json.gz")
    assert report.untraced_measurement(a).median == 2.054961
    slowed = [w for w in a.warnings if "slowed this run" in w]
    assert len(slowed) == 1 and "against 2.055 ms untraced" in slowed[0], slowed


# ---------------------------------------------------------------------------------------------------------
# 3. quantile edges


def test_quantile_one_is_the_maximum_and_zero_the_minimum() -> None:
    from tracekit.quantiles import min_values, quantile, quantile_given

    values = [3.0, None, 1.0, float("nan"), 2.0]
    assert quantile(values, 1.0) == 3.0
    assert quantile(values, 1) == 3.0
    assert quantile(values, 0.0) == 1.0
    assert quantile([7.0], 1.0) == 7.0 and quantile([7.0], 0) == 7.0
    assert min_values(1.0) == 1 and min_values(0.0) == 1
    assert quantile_given(1.0, 1) and not quantile_given(1.0, 0)
    # unchanged inside: p99 of 99 values withheld, of 100 given (linear: 0.99 * 99 = 98.01 -> 99.01)
    assert quantile(list(range(1, 100)), 0.99) is None
    assert quantile([float(v) for v in range(1, 101)], 0.99) == pytest.approx(99.01, abs=1e-12)


@pytest.mark.parametrize("q", [1.5, 1.0000001, -0.5, -1e-9, float("nan"), float("inf"), True])
def test_a_quantile_outside_zero_to_one_is_refused(q: float) -> None:
    from tracekit.quantiles import min_values, quantile, quantile_given

    with pytest.raises(ValueError, match="is not a number from 0 to 1"):
        quantile([1.0, 2.0, 3.0], q)
    with pytest.raises(ValueError):
        min_values(q)
    with pytest.raises(ValueError):
        quantile_given(q, 10)


def test_no_values_give_no_quantile_at_any_q() -> None:
    from tracekit.quantiles import quantile

    for q in (0.0, 0.5, 0.99, 1.0):
        assert quantile([], q) is None
        assert quantile([None, float("nan")], q) is None
    with pytest.raises(ValueError):
        quantile([], 2.0)


# ---------------------------------------------------------------------------------------------------------
# 4. fleet: a malformed world size or rank in a trace's metadata is not trusted


def _compact_of(meta_extra: dict) -> dict:
    """compact() of a one-iteration synthetic trace: a 10 us kernel launched at 2 us, in a 0-100 us range."""
    from tests.builders import EPOCH, make_trace
    from tracekit.fleet.compact import compact
    from tracekit.session import analyze_trace

    us = 1_000
    trace = make_trace(
        [(EPOCH, EPOCH + 100 * us, "iteration", 0, "user", 1, 1)],
        [(EPOCH + 2 * us, EPOCH + 3 * us, 1, "cudaLaunchKernel", 1, 1)],
        [(EPOCH + 10 * us, EPOCH + 20 * us, 1, 7, "kernel", 0, 1, "gemm")],
        {"path": "followups17_synthetic.json", "synthetic": True, **meta_extra},
        range_fields=("start", "end", "name", "depth", "domain", "pid", "thread"),
        api_fields=("start", "end", "correlation", "name", "pid", "thread"),
        op_fields=("start", "end", "correlation", "stream", "kind", "device", "pid", "name"),
    )
    return compact(analyze_trace(trace))


def _said(what: str, value: str, lowest: int, highest: int) -> str:
    return (
        f"the trace's metadata says {what} {value}, not a whole number from {lowest} to {highest}: the {what} "
        "is treated as unknown"
    )


@pytest.mark.parametrize(
    ("world_size", "shown"),
    [(2.9, "2.9"), (True, "True"), (-4, "-4"), (0, "0"), (10**9, "1000000000"), ("2.9", "'2.9'")],
)
def test_a_malformed_world_size_is_unknown_with_a_warning(world_size, shown: str) -> None:
    c = _compact_of({"world_size": world_size, "rank": 1})
    assert (c["world_size"], c["rank"]) == (None, 1)
    assert c["warnings"] == [_said("world size", shown, 1, 1_048_576)]


@pytest.mark.parametrize(("rank", "shown"), [(1.5, "1.5"), (True, "True"), (-1, "-1")])
def test_a_malformed_rank_is_unknown_with_a_warning(rank, shown: str) -> None:
    c = _compact_of({"world_size": 4, "rank": rank})
    assert (c["world_size"], c["rank"]) == (4, None)
    assert c["warnings"] == [_said("rank", shown, 0, 1_048_575)]


def test_whole_world_sizes_and_ranks_are_read_without_a_warning() -> None:
    import numpy as np

    for world_size, rank in ((4, 3), (4.0, 3.0), ("4", "3"), (1_048_576, 0), (np.int64(4), np.int32(3))):
        c = _compact_of({"world_size": world_size, "rank": rank})
        assert (c["world_size"], c["rank"], c["warnings"]) == (int(world_size), int(rank), [])
    c = _compact_of({})
    assert (c["world_size"], c["rank"], c["warnings"]) == (None, None, [])


# ---------------------------------------------------------------------------------------------------------
# 2. compare: the same kernel spelled by Nsight Compute and by Kineto

#: (Kineto's spelling, ncu's) of kernels of the committed H200 eager batch-1 run (pytorch/ and pytorch-ncu/)
SAME_KERNEL = [
    (
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::Half, float, false>(int, float, "
        "c10::Half const*, c10::Half const*, c10::Half const*, float*, float*, c10::Half*)",
        "void at::<unnamed>::vectorized_layer_norm_kernel<c10::Half, float, 0>(int, T2, const T1 *, const T1 *, "
        "const T1 *, T2 *, T2 *, T1 *)",
    ),
    (
        "void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::Half>, "
        "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::Half>, std::array<char*, 3ul>)",
        "void at::vectorized_elementwise_kernel<8, at::CUDAFunctor_add<c10::Half>, std::array<char *, 3>>(int, T2, T3)",
    ),
    (
        "void at::native::_scatter_gather_elementwise_kernel<128, 8, at::native::_cuda_scatter_gather_internal_kernel"
        "<false, at::native::OpaqueType<8>, long>::operator()<at::native::TensorAssign>(at::TensorIterator&, long, "
        "long, long, at::native::TensorAssign const&)::{lambda(int)#1}>(int, at::native::_cuda_scatter_gather_"
        "internal_kernel<false, at::native::OpaqueType<8>, long>::operator()<at::native::TensorAssign>(at::"
        "TensorIterator&, long, long, long, at::native::TensorAssign const&)::{lambda(int)#1})",
        "void at::_scatter_gather_elementwise_kernel<128, 8, void at::_cuda_scatter_gather_internal_kernel<0, "
        "at::OpaqueType<8>, long>::operator ()<at::TensorAssign>(at::TensorIterator &, long, long, long, const T1 &)"
        "::[lambda(int) (instance 1)]>(int, T3)",
    ),
    (  # Nsight Systems' spelling (the committed nsys-pytorch/ run of the same configuration) against ncu's
        "void at::native::<unnamed>::vectorized_layer_norm_kernel<c10::Half, float, (bool)0>(int, T2, const T1 *, "
        "const T1 *, const T1 *, T2 *, T2 *, T1 *)",
        "void at::<unnamed>::vectorized_layer_norm_kernel<c10::Half, float, 0>(int, T2, const T1 *, const T1 *, "
        "const T1 *, T2 *, T2 *, T1 *)",
    ),
    (
        "void at::native::vectorized_elementwise_kernel<(int)8, at::native::CUDAFunctor_add<c10::Half>, "
        "std::array<char *, (unsigned long)3>>(int, T2, T3)",
        "void at::vectorized_elementwise_kernel<8, at::CUDAFunctor_add<c10::Half>, std::array<char *, 3>>(int, T2, T3)",
    ),
    (  # ncu-rep (Nsight Compute 2023) writes integer template arguments with a cast
        "void at::native::(anonymous namespace)::distribution_kernel<float, 4, 4ul>(long)",
        "void at::native::<unnamed>::distribution_kernel<float, (int)4, (unsigned long)4>(long)",
    ),
]


@pytest.mark.parametrize(("kineto", "ncu"), SAME_KERNEL)
def test_one_kernel_spelled_by_ncu_and_kineto_has_one_key(kineto: str, ncu: str) -> None:
    from tracekit.analyzers.compare import kernel_name_key

    assert kernel_name_key(kineto) == kernel_name_key(ncu)


def test_kernels_that_differ_in_template_arguments_keep_apart() -> None:
    from tracekit.analyzers.compare import kernel_name_key

    half = "void at::native::vectorized_elementwise_kernel<8, at::native::FillFunctor<c10::Half>, std::array<char*, 1ul> >(int)"
    assert kernel_name_key(half) == "vectorized_elementwise_kernel<8,FillFunctor<Half>,array<char*,1>>"
    assert kernel_name_key(half.replace("c10::Half", "float")) != kernel_name_key(half)
    assert kernel_name_key(half.replace("<8,", "<4,")) != kernel_name_key(half)
    assert kernel_name_key("k<float, false>(int)") != kernel_name_key("k<float, true>(int)")


def _per_name(rows: list[tuple[str, float, float]]):
    import polars as pl

    return pl.DataFrame(
        rows, schema={"name": pl.String, "count": pl.Float64, "time_us": pl.Float64}, orient="row"
    )


def test_an_ncu_side_is_paired_with_the_other_sides_spelling() -> None:
    from tracekit.analyzers.compare import kernel_deltas

    kineto, ncu = SAME_KERNEL[1]
    a = _per_name([(kineto, 26.0, 28.0), ("nvjet_a", 12.0, 60.0), ("Memset (Device)", 12.0, 9.0)])
    b = _per_name([(ncu, 26.0, 66.0), ("nvjet_a", 12.0, 80.0)])
    notes: list[str] = []
    rows = {r["name"]: r for r in kernel_deltas(a, b, ncu_side="b", notes=notes).to_dicts()}
    assert set(rows) == {kineto, "nvjet_a", "Memset (Device)"}
    assert (rows[kineto]["count_a"], rows[kineto]["count_b"], rows[kineto]["time_delta_us"]) == (
        26.0,
        26.0,
        38.0,
    )
    assert notes == [
        "1 kernel name of B (Nsight Compute) paired with A's spelling of the same kernel and shown in it (ncu "
        "demangles namespaces, lambdas, template arguments and parameter lists in its own way)"
    ]
    # without an ncu side (two Kineto traces, say) nothing is paired by spelling
    plain = {r["name"] for r in kernel_deltas(a, b).to_dicts()}
    assert plain == {kineto, ncu, "nvjet_a", "Memset (Device)"}


def test_an_ambiguous_key_pairs_nothing_and_says_so() -> None:
    """Two kernels of A that differ only in a namespace (their keys are equal): the one ncu name of that key could
    be either, so none is paired."""
    from tracekit.analyzers.compare import kernel_deltas

    a = _per_name(
        [("void at::native::foo<float>(float*)", 1.0, 5.0), ("void other::foo<float>(float*)", 1.0, 7.0)]
    )
    b = _per_name([("void at::foo<float>(T1 *)", 1.0, 6.0)])
    notes: list[str] = []
    names = [r["name"] for r in kernel_deltas(a, b, ncu_side="b", notes=notes).to_dicts()]
    assert sorted(names) == sorted(
        ["void at::native::foo<float>(float*)", "void other::foo<float>(float*)", "void at::foo<float>(T1 *)"]
    )
    assert notes == [
        "not paired: 1 kernel name of B and 2 of A differ only in their spelling of namespaces, parameter lists or "
        "casts (e.g. void at::foo<float>(T1 *)), so which is which cannot be told: each is shown as a name of its "
        "side only"
    ]
    # a name found on both sides as it is is no candidate: A's exact match stays, B's other spelling is alone
    a = _per_name([("void at::native::foo<float>(float*)", 1.0, 5.0)])
    b = _per_name(
        [("void at::native::foo<float>(float*)", 1.0, 5.0), ("void at::foo<float>(T1 *)", 1.0, 6.0)]
    )
    notes = []
    names = [r["name"] for r in kernel_deltas(a, b, ncu_side="b", notes=notes).to_dicts()]
    assert len(names) == 2 and notes == []


def test_compare_pairs_the_committed_ncu_report_with_its_kineto_trace() -> None:
    """The committed H200 eager batch-1 run: Kineto 16 names (202 kernels and 12 memsets per iteration), ncu 15
    (606 kernels over 3 iterations). 5 names were spelled alike; with the key all 15 ncu names pair, each with
    the same count per iteration as Kineto's (Memset (Device) is Kineto's only: ncu profiles kernels)."""
    import tracekit
    from tracekit.analyzers.compare import compare

    run = SAMPLES / "h200_bert_fp16"
    a = tracekit.analyze(run / "pytorch" / "pytorch_b1_s128.torch.json.gz")
    b = tracekit.analyze(run / "pytorch-ncu" / "pytorch_b1_s128.ncu.csv.gz")
    doc = compare(a, b)
    both = [k for k in doc["kernels"] if k["count_a"] is not None and k["count_b"] is not None]
    assert (len(doc["kernels"]), len(both)) == (16, 15)
    assert all(k["count_a"] == k["count_b"] for k in both)
    assert sum(k["count_b"] for k in both) == 202.0
    assert [k["name"] for k in doc["kernels"] if k["count_b"] is None] == ["Memset (Device)"]
    assert any(w.startswith("10 kernel names of B (Nsight Compute) paired") for w in doc["warnings"])


# ---------------------------------------------------------------------------------------------------------
# 5. compare of two whole-trace windows (two Nsight Compute reports)


def _ncu_copy(tmp_path: Path, name: str, iterations: int | None):
    """The committed 3-iteration ncu report of the H200 eager run, copied; its sidecars edited to say
    ``iterations`` (a test edit), or removed (None)."""
    import json
    import shutil

    import tracekit

    folder = tmp_path / name
    folder.mkdir()
    source = SAMPLES / "h200_bert_fp16" / "pytorch-ncu"
    for path in source.glob("pytorch_b1_s128.ncu.*"):
        if path.name.endswith(".meta.json"):
            if iterations is not None:
                meta = json.loads(path.read_text())
                meta["iterations"] = iterations
                (folder / path.name).write_text(json.dumps(meta))
        else:
            shutil.copy(path, folder / path.name)
    return tracekit.analyze(folder / "pytorch_b1_s128.ncu.csv.gz")


def test_two_ncu_reports_are_compared_per_iteration_of_each() -> None:
    """Both reports hold the same 606 kernels (144 of nvjet_sm90_hsh_64x16_64x16_2x4_h_bz_bias_TNT, 797.088 us);
    A's sidecar says 3 iterations, B's 6: per iteration 48 and 24, 265.696 and 132.848 us. The summary's
    'kernels / iteration' had read 606 on both sides (totals over 3 iterations): withheld."""
    import tempfile

    from tracekit.analyzers.compare import compare

    with tempfile.TemporaryDirectory(prefix="followups17_synthetic_") as tmp:
        a = _ncu_copy(Path(tmp), "a", 3)
        b = _ncu_copy(Path(tmp), "b", 6)
        doc = compare(a, b)
        row = next(k for k in doc["kernels"] if k["name"] == "nvjet_sm90_hsh_64x16_64x16_2x4_h_bz_bias_TNT")
        assert (row["count_a"], row["count_b"], row["count_delta"]) == (48.0, 24.0, -24.0)
        assert row["time_a_us"] == pytest.approx(265.696, abs=1e-9)
        assert row["time_b_us"] == pytest.approx(132.848, abs=1e-9)
        assert all(r["a"] is None and r["b"] is None and r["delta"] is None for r in doc["summary"])
        assert doc["warnings"][0] == (
            "A and B have no iterations of their own (each one window over its whole trace): their figures are "
            "totals over each trace, not per iteration, so the summary shows none of them; the per-name table "
            "divides A's figures by 3 and B's by 6, the iterations their runs say they hold"
        )
        c = _ncu_copy(Path(tmp), "c", None)
        doc = compare(a, c)
        row = next(k for k in doc["kernels"] if k["name"] == "nvjet_sm90_hsh_64x16_64x16_2x4_h_bz_bias_TNT")
        assert (row["count_a"], row["count_b"], row["count_delta"], row["time_b_us"]) == (
            48.0,
            None,
            None,
            None,
        )
        assert doc["warnings"][0].endswith(
            "the per-name table divides A's figures by 3, the iterations its run says it holds; nothing says how "
            "many B holds, so it shows none of B's"
        )


# ---------------------------------------------------------------------------------------------------------
# 5. report: no profiler ratio beside windows that are not the timed iterations


def test_report_gives_no_profiler_ratio_for_split_idle_windows() -> None:
    """The committed H200 eager batch-1 run, untraced median 4.453193 ms over its 'iteration' ranges. Cut by
    --split-idle 0.05 into 675 windows (traced median 0.12392 ms), the row's profiler ratio had read
    0.12392 / 4.453193 = 0.0278 (the profiler 'sped the run up' 36x); analyze says nothing of the profiler's
    cost there. Over its own 20 iterations the ratio stays 7.940878 / 4.453193."""
    import tracekit
    from tracekit.analyzers.report import config_row

    trace = SAMPLES / "h200_bert_fp16" / "pytorch" / "pytorch_b1_s128.torch.json.gz"
    row = config_row(tracekit.analyze(trace, split_idle=0.05))
    assert row["iterations"] == 675
    assert row["traced_median_ms"] is None  # per window (0.12392 ms): withheld since followups18's 490bd70
    assert row["untraced_latency_ms"] == pytest.approx(4.453193, abs=1e-12)
    assert row["profiler_ratio"] is None
    assert row["warnings"][-2] == (
        "no profiler ratio: the untraced latency is of the run's 'iteration' iterations, and the traced latency "
        "here is of --split-idle windows (idle>0.05ms), not the same quantity"
    )
    assert row["warnings"][-1] == (
        "the report shows none of its traced figures (busy/overhead breakdown, its verdict): its iterations are "
        "the windows cut at idle gaps that the warning above counts, not its trace's iterations"
    )
    own = config_row(tracekit.analyze(trace))
    assert own["profiler_ratio"] == pytest.approx(7.940878 / 4.453193, rel=1e-12)
    assert not any(w.startswith("no profiler ratio") for w in own["warnings"])
