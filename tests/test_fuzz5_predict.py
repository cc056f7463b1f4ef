"""Fuzz round 5: the estimates of what a change would buy (report, recommendations, compare, table).

Each test builds its synthetic inputs here (rows as ``config_row`` makes them, or hand-made traces) and fails
on the code before its fix; the module docstring of each fixed function says the rule."""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_report import make_row, recommendations
from tracekit.analyzers.report import build_report


def _texts(rep: Any) -> list[str]:
    return [r["text"] for r in recommendations(rep)]


# ------------------------------------------------------------------------ sweeps of one model and device


def test_cpu_and_gpu_runs_of_one_runtime_are_two_sweeps() -> None:
    """A CPU run's batch 1 and a GPU run's batches 1 and 8 of one runtime had been one sweep (the GPU batch 1
    dropped as a 'duplicate'): 'batch 8 costs 0.00x batch 1, 1797.6-2442.6x the throughput for free' on the
    committed cpu_pytorch_bert_torch + h200_bert_fp16/pytorch samples. Each device is its own sweep."""
    rows = [
        make_row("pytorch", 1, 1461.0, busy=1400.0, device="cpu", model="bert-base", precision="fp32"),
        make_row("pytorch", 1, 4.45, busy=0.6, model="bert-base", precision="fp16"),
        make_row("pytorch", 8, 5.35, busy=1.5, model="bert-base", precision="fp16"),
    ]
    rep = build_report(rows)
    assert not any("duplicate" in w for w in rep.warnings)
    assert len(rep.sweeps) == 2
    by_device = {s["device"]: s for s in rep.sweeps}
    assert by_device["cpu"]["batch_sizes"] == [1]
    gpu = by_device["gpu"]
    assert gpu["batch_sizes"] == [1, 8]
    assert gpu["smallest_latency_ms"] == pytest.approx(4.45)
    assert gpu["headroom_latency_ratio"] is None or gpu["headroom_batch_size"] == 1
    assert gpu["transition_batch_size"] == 8  # 5.35 / 4.45 = 1.20x: off the 10% plateau
    texts = _texts(rep)
    assert not any("0.00x" in t for t in texts)
    # the two sweeps are told apart in the wording
    assert any(t.startswith("pytorch (gpu, fp16) (seq 128)") for t in texts)
    assert set(rep.transition_by_runtime) == {"pytorch (cpu, fp32)", "pytorch (gpu, fp16)"}


def test_two_models_of_one_runtime_do_not_make_one_curve() -> None:
    """bert-base at batches 1, 2 and gpt2-xl at batches 4, 8 (one runtime, one sequence length) had been one
    latency curve: a transition at batch 4 (4.00x) that is gpt2-xl's latency over bert-base's."""
    rows = [
        make_row("pytorch", 1, 10.0, busy=1.0, model="bert-base"),
        make_row("pytorch", 2, 10.2, busy=1.5, model="bert-base"),
        make_row("pytorch", 4, 40.0, busy=30.0, model="gpt2-xl"),
        make_row("pytorch", 8, 80.0, busy=70.0, model="gpt2-xl"),
    ]
    rep = build_report(rows)
    assert sorted(s["batch_sizes"] for s in rep.sweeps) == [[1, 2], [4, 8]]
    assert all(s["transition_batch_size"] != 4 for s in rep.sweeps)
    bert = next(s for s in rep.sweeps if s["model"] == "bert-base")
    assert bert["transition_batch_size"] is None and bert["label"] == "pytorch (bert-base)"


def test_alternative_runtime_is_of_the_same_model_and_device() -> None:
    """'onnx measured 5.0x faster here' had named an ONNX Runtime run of another model on another device."""
    rows = [
        make_row("pytorch", 1, 10.0, busy=1.0, model="bert-base"),
        make_row("onnx", 1, 2.0, busy=1.0, model="gpt2-xl", device="cpu"),
    ]
    rep = build_report(rows)
    (fo,) = [
        r for r in recommendations(rep) if r["kind"] == "framework_overhead" and r["runtime"] == "pytorch"
    ]
    assert "alternative_runtime" not in fo["numbers"]
    # the same model and device: still named
    rows = [
        make_row("pytorch", 1, 10.0, busy=1.0, model="bert-base"),
        make_row("onnx", 1, 2.0, busy=1.0, model="bert-base"),
    ]
    (fo,) = [
        r
        for r in recommendations(build_report(rows))
        if r["kind"] == "framework_overhead" and r["runtime"] == "pytorch"
    ]
    assert fo["numbers"]["alternative_runtime"] == "onnx"


# ---------------------------------------------------------------------------------- CUDA-graph estimate


def _row_of(trace: Any, batch: int = 1) -> dict[str, Any]:
    from pathlib import Path

    from tracekit.analyzers.report import config_row
    from tracekit.inputs import TraceInput
    from tracekit.session import AnalysisOptions, analyze_trace

    item = TraceInput(
        path=Path(f"pytorch_b{batch}.synthetic.sqlite"),
        runtime="pytorch",
        batch_size=batch,
        seq_len=128,
        profiler="nsys",
    )
    return config_row(analyze_trace(trace, item, AnalysisOptions()))


def test_no_cuda_graph_recommendation_where_launches_hide_behind_busy_gpu() -> None:
    """A GPU 99.5% busy whose launch calls (25% of the latency) all ran while kernels did had been told 'CUDA
    graphs would remove launches ...: projected latency 1 ms' of a traced 1.005 ms: a graph saves nothing."""
    from tests.test_report import hand_trace

    row = _row_of(hand_trace(iters=8, kernels=50, dispatch_ns=1000, launch_ns=5000, kernel_ns=20000))
    assert row["gpu_utilization"] > 0.99 and row["launch_api_ms"] >= 0.2 * row["traced_latency_ms"]
    assert row["graph_projected_ms"] == pytest.approx(row["traced_latency_ms"], rel=0.01)
    assert not [r for r in recommendations(build_report([row])) if r["kind"] == "launch_calls"]
    # the host-bound case keeps it: 20 µs of dispatch before each 10 µs kernel
    row = _row_of(hand_trace(iters=8, kernels=50, dispatch_ns=20_000, launch_ns=5000, kernel_ns=10_000))
    (lc,) = [r for r in recommendations(build_report([row])) if r["kind"] == "launch_calls"]
    assert lc["numbers"]["projected_latency_ms"] == pytest.approx(row["graph_projected_ms"])
    assert lc["numbers"]["projected_latency_ms"] < 0.9 * row["traced_latency_ms"]


# ----------------------------------------------------------------------------------- compute-bound from


def test_compute_bound_from_a_batch_size_holds_for_every_larger_one() -> None:
    """Utilization 20%, 51%, 29%, 40% at batches 1, 2, 4, 8 had read 'from batch 2 the GPU is busy 51% ...
    from there device work ... is the larger share of latency', while batches 4 and 8 are framework-bound."""
    rows = [
        make_row("pytorch", 1, 10.0, busy=2.0),
        make_row("pytorch", 2, 10.2, busy=5.2),
        make_row("pytorch", 4, 10.5, busy=3.0),
        make_row("pytorch", 8, 20.0, busy=8.0),
    ]
    assert not [r for r in recommendations(build_report(rows)) if r["kind"] == "compute_bound"]
    rows.append(make_row("pytorch", 16, 40.0, busy=30.0))
    (cb,) = [r for r in recommendations(build_report(rows)) if r["kind"] == "compute_bound"]
    assert cb["batch_size"] == 16 and cb["numbers"]["reached_before"] == [2]
    assert "from batch 16" in cb["text"] and "batch 2 reached it too" in cb["text"]


# ------------------------------------------------------------------------ table: ncu of another config


def test_table_leaves_out_an_ncu_report_of_another_configuration(tmp_path: Any, capsys: Any) -> None:
    """An Nsight Compute report of batch 1 joined to a batch-8 timeline had given the row 'SMs active 18%
    (ncu)' with no word (the real H200 pair: 4.0% from the b1 report on the b8 timeline, warned only that
    names differ). Kernel names alike, the values are another run's: the report is left out, said why."""
    import json

    from tests.test_table import NCU_CSV, write_nsys
    from tracekit.cli import main

    trace = write_nsys(tmp_path / "pytorch_b8.synthetic.sqlite", metrics=False)
    stated = {
        "runtime": "pytorch",
        "model": "bert-base",
        "seq_len": 128,
        "precision": "fp16",
        "synthetic": True,
    }
    (tmp_path / "pytorch_b8.synthetic.meta.json").write_text(json.dumps({**stated, "batch_size": 8}))
    ncu = tmp_path / "pytorch_b1.synthetic.ncu.csv"
    ncu.write_text(NCU_CSV)
    (tmp_path / "pytorch_b1.synthetic.ncu.meta.json").write_text(json.dumps({**stated, "batch_size": 1}))
    out = tmp_path / "t.json"
    code = main(["table", str(trace), "--ncu", str(ncu), "--format", "json", "-o", str(out)])
    (row,) = json.loads(out.read_text())["rows"]
    assert row["sms_active"] is None and row["sms_active_source"] is None and row["ncu_trace"] is None
    err = capsys.readouterr().err
    assert "another configuration" in err and "batch size 1 (the timeline: 8)" in err
    assert code == 1  # an input left out, as an unreadable --ncu file is
    # the same report stated as batch 8: joined as before
    (tmp_path / "pytorch_b1.synthetic.ncu.meta.json").write_text(json.dumps({**stated, "batch_size": 8}))
    assert main(["table", str(trace), "--ncu", str(ncu), "--format", "json", "-o", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert row["sms_active"] == pytest.approx(18.0) and row["sms_active_source"] == "ncu"


# -------------------------------------------------------------------- 'outside the noise' only when known


def test_faster_runtime_is_outside_the_noise_only_when_the_noise_is_known() -> None:
    """Medians without intervals (fewer than 6 iterations) had been worded 'onnx measured 5.0x faster here,
    outside the noise': nothing was known of the noise."""
    from tracekit.analyzers.stability import measure

    rows = [make_row("pytorch", 1, 10.0, busy=1.0), make_row("onnx", 1, 2.0, busy=1.0)]
    (fo,) = [
        r
        for r in recommendations(build_report(rows))
        if r["kind"] == "framework_overhead" and r["runtime"] == "pytorch"
    ]
    assert fo["numbers"]["alternative_runtime"] == "onnx" and fo["numbers"]["noise_known"] is False
    assert "outside the noise" not in fo["text"] and "noise unknown" in fo["text"]
    # with 8 iterations a side, the intervals are known and the claim is made
    rows[0]["_latency"] = measure([10.0 + 0.01 * i for i in range(8)])
    rows[1]["_latency"] = measure([2.0 + 0.01 * i for i in range(8)])
    (fo,) = [
        r
        for r in recommendations(build_report(rows))
        if r["kind"] == "framework_overhead" and r["runtime"] == "pytorch"
    ]
    assert fo["numbers"]["noise_known"] is True and "5.0x faster here, outside the noise" in fo["text"]


# ------------------------------------------------------------ untraced against traced in one latency curve


def test_a_traced_latency_is_not_compared_with_an_untraced_one() -> None:
    """Batch 1 with an untraced latency (4.45 ms) and batch 8 with only its traced one (7.51 ms; untraced it
    was 5.35 ms: 1.20x) had read 'no framework-bound plateau: batch 8 already costs 1.69x batch 1 (95%
    interval 1.64-1.72x)' (the committed H200 pytorch run with batch 8's untraced timing removed)."""
    from tracekit.analyzers.stability import measure

    b1 = make_row("pytorch", 1, 7.94, busy=0.61, latency_ms=4.45, latency_source="untraced")
    b1["_latency"] = measure([4.40 + 0.01 * i for i in range(11)])
    b8 = make_row("pytorch", 8, 7.51, busy=0.87)
    b8["_latency"] = measure([7.46 + 0.01 * i for i in range(11)])
    rep = build_report([b1, b8])
    (sweep,) = rep.sweeps
    assert sweep["transition_batch_size"] is None and sweep["plateau"] == [1]
    assert sweep["plateau_edge"] == [8] and sweep["not_compared"] == [8]
    row8 = next(r for r in rep.configs if r["batch_size"] == 8)
    assert row8["latency_vs_smallest"] is None and row8["plateau_state"] == "within noise"
    texts = _texts(rep)
    assert not any("1.69x" in t or "already costs" in t for t in texts)
    assert any("batch 8 not compared" in t for t in texts)
    assert any("batch 8 has no untraced latency like batch 1's" in w for w in rep.warnings)
    # one source throughout: compared as before
    b8u = make_row("pytorch", 8, 7.51, busy=0.87, latency_ms=5.35, latency_source="untraced")
    b8u["_latency"] = measure([5.30 + 0.01 * i for i in range(11)])
    (sweep,) = build_report([b1, b8u]).sweeps
    assert sweep["transition_batch_size"] == 8 and sweep["not_compared"] == []


# ----------------------------------------------------------- a transition between batch sizes never run


def test_transition_across_unmeasured_batch_sizes_is_a_range() -> None:
    """A simulated sweep of batches 1 and 64 only (true plateau to 16) had read 'no framework-bound
    plateau: batch 64 already costs 3.85x batch 1'; with 16 and 32 failed, 'it leaves the plateau at batch
    64' read as the transition batch size. Both now say that it lies after the last batch size measured
    below the line, at the first above it at the latest."""
    rows = [make_row("pytorch", 1, 10.3, busy=1.6), make_row("pytorch", 64, 39.6, busy=39.0)]
    (tr,) = [r for r in recommendations(build_report(rows)) if r["kind"] == "transition"]
    assert tr["batch_size"] == 64 and tr["numbers"]["after_batch_size"] == 1
    assert "no framework-bound plateau" not in tr["text"]
    assert "no batch size between 1 and 64 was measured" in tr["text"]
    rows = [make_row("pytorch", b, 10.3, busy=1.6) for b in (1, 4, 8)] + [make_row("pytorch", 64, 39.6)]
    (tr,) = [r for r in recommendations(build_report(rows)) if r["kind"] == "transition"]
    assert (
        "up to batch 8" in tr["text"] and "somewhere after batch 8, at batch 64 at the latest" in tr["text"]
    )
    # consecutive powers of two: the usual wording, no range
    rows = [make_row("pytorch", 1, 10.3, busy=1.6), make_row("pytorch", 2, 20.0, busy=15.0)]
    (tr,) = [r for r in recommendations(build_report(rows)) if r["kind"] == "transition"]
    assert "no framework-bound plateau: batch 2 already costs" in tr["text"] and "measured" not in tr["text"]


def test_traced_latencies_of_two_profilers_are_not_compared() -> None:
    """Batches 1 and 2 traced under nsys and batch 4 under torch.profiler (no untraced timing; a run folder
    whose nsys capture of batch 4 failed): the torch.profiler trace's own overhead had made batch 4 'leave the
    plateau' at 1.40x."""
    rows = [
        make_row("pytorch", 1, 10.0, busy=1.0, profiler="nsys"),
        make_row("pytorch", 2, 10.2, busy=1.2, profiler="nsys"),
        make_row("pytorch", 4, 14.0, busy=1.4, profiler="torch"),
    ]
    rep = build_report(rows)
    (sweep,) = rep.sweeps
    assert sweep["transition_batch_size"] is None and sweep["not_compared"] == [4]
    assert sweep["plateau"] == [1, 2]
    assert any("has no traced (nsys) latency like batch 1's" in w for w in rep.warnings)


def test_a_faster_runtime_is_named_only_on_one_latency_basis() -> None:
    """Traced medians only: a PyTorch run traced by torch.profiler and an ONNX Runtime run traced by nsys had
    been compared ('onnx measured 2.0x faster here'), each profiler's own inflation included."""
    rows = [
        make_row("pytorch", 1, 10.0, busy=1.0, profiler="torch"),
        make_row("onnx", 1, 5.0, busy=1.0, profiler="nsys"),
    ]
    (fo,) = [
        r
        for r in recommendations(build_report(rows))
        if r["kind"] == "framework_overhead" and r["runtime"] == "pytorch"
    ]
    assert "alternative_runtime" not in fo["numbers"]
    rows[1]["profiler"] = "torch"
    (fo,) = [
        r
        for r in recommendations(build_report(rows))
        if r["kind"] == "framework_overhead" and r["runtime"] == "pytorch"
    ]
    assert fo["numbers"]["alternative_runtime"] == "onnx"


# -------------------------------------------------------------------- compare: CPU operators vs GPU kernels


def _cpu_trace() -> Any:
    """A synthetic CPU-only trace: 3 iterations of 4 operators of 20 µs with 5 µs between them."""
    import polars as pl

    from tracekit.model import Trace

    ops, ranges, t = [], [], 1_000_000
    for _ in range(3):
        start = t
        for k in range(4):
            ops.append((t + 5_000, t + 25_000, f"aten::op{k}"))
            t += 25_000
        ranges.append((start, t + 5_000))
        t += 10_000
    return Trace(
        ops=pl.DataFrame(
            {
                "start": [o[0] for o in ops],
                "end": [o[1] for o in ops],
                "device": -1,
                "stream": 1,
                "pid": 1,
                "kind": "operator",
                "name": [o[2] for o in ops],
            }
        ),
        ranges=pl.DataFrame(
            {
                "start": [r[0] for r in ranges],
                "end": [r[1] for r in ranges],
                "pid": 1,
                "thread": 1,
                "depth": 0,
                "name": "iteration",
            }
        ),
        meta={"device": "cpu", "synthetic": True},
    )


def test_compare_of_cpu_operators_and_gpu_kernels_differences_only_host_time() -> None:
    """A CPU-only trace against a GPU trace had been differenced field by field: 'device utilization B / A
    0.077', 'kernels / iteration -91', each side's busy time being another quantity (operators vs kernels)."""
    from pathlib import Path

    from tests.test_report import hand_trace
    from tracekit.analyzers.compare import compare
    from tracekit.inputs import TraceInput
    from tracekit.session import AnalysisOptions, analyze_trace

    def analyzed(trace: Any, name: str) -> Any:
        return analyze_trace(trace, TraceInput(path=Path(name), runtime="pytorch"), AnalysisOptions())

    doc = compare(
        analyzed(_cpu_trace(), "cpu.synthetic.json"), analyzed(hand_trace(iters=3), "gpu.synthetic.sqlite")
    )
    rows = {r["metric"]: r for r in doc["summary"]}
    assert rows["latency_ms"]["delta"] is not None and rows["latency_ms"]["ratio"] is not None
    for metric in ("gpu_busy_ms", "gpu_utilization", "kernels", "idle_ms", "dispatch_ms"):
        assert rows[metric]["a"] is not None and rows[metric]["b"] is not None
        assert rows[metric]["delta"] is None and rows[metric]["ratio"] is None, metric
        assert rows[metric]["significant"] is None
    assert any("A measured CPU operators and B GPU kernels" in w for w in doc["warnings"])
    # two GPU traces: every field differenced, no such warning
    doc = compare(
        analyzed(hand_trace(iters=3), "a.synthetic.sqlite"), analyzed(hand_trace(iters=3), "b.sqlite")
    )
    assert all(r["delta"] is not None for r in doc["summary"] if r["a"] is not None and r["b"] is not None)
    assert not any("A measured" in w for w in doc["warnings"])


# --------------------------------------------------------- traces of no stated model, batch size guessed


def test_traces_of_no_stated_model_and_a_guessed_batch_size_are_not_one_sweep() -> None:
    """The real traces of ../shared (tracelens, kineto) in one report: sglang_qwen3-8b_prefilldecode (batch 15
    inferred) and sglang_decode_capture_bs_32 (batch 32 from the name), both 'pytorch (bf16)', had made one
    sweep: 'batch 32 costs 0.03x batch 15 ... 62.5x the throughput'; and a vLLM trace (compile-cudagraphs,
    batch 32 guessed) was 'measured 24.8x faster' than an SGLang qwen3-8b trace. Nothing says they are one
    model: each such trace is a sweep by itself, named by its file."""
    from pathlib import Path

    from tests.test_report import hand_trace
    from tracekit.analyzers.report import config_row
    from tracekit.inputs import TraceInput
    from tracekit.session import AnalysisOptions, analyze_trace

    def row(name: str, iters: int, kernels: int) -> dict[str, Any]:
        item = TraceInput(path=Path(name), runtime="pytorch")  # no model, no batch size: the name's guess
        return config_row(analyze_trace(hand_trace(iters=iters, kernels=kernels), item, AnalysisOptions()))

    rows = [row("qwen_prefill_bs15.synthetic.sqlite", 3, 40), row("other_decode_bs32.synthetic.sqlite", 3, 4)]
    assert [r["batch_size"] for r in rows] == [15, 32] and all(r["unidentified"] for r in rows)
    rep = build_report(rows)
    assert sorted(s["batch_sizes"] for s in rep.sweeps) == [[15], [32]]
    assert not [r for r in recommendations(rep) if r["kind"] in ("headroom", "transition")]
    assert {s["label"] for s in rep.sweeps} == {
        "pytorch (qwen_prefill_bs15.synthetic.sqlite)",
        "pytorch (other_decode_bs32.synthetic.sqlite)",
    }
    # a stated model (run.json, sidecar) keeps them comparable
    stated = [make_row("pytorch", 15, 10.0, busy=1.0), make_row("pytorch", 32, 10.2, busy=2.0)]
    assert [s["batch_sizes"] for s in build_report(stated).sweeps] == [[15, 32]]


# ------------------------------------------------------ a cold start dominating the CUDA-graph projection


def test_cuda_graph_projection_dominated_by_a_cold_start_says_so() -> None:
    """TraceLens' normalization_layer_test (3 iterations: 128 ms of which 116 ms in its first launch calls,
    then 0.67 and 0.22 ms) had been projected 'mean latency 42.957 ms -> 70.3 µs (610.80x)' and reported
    'the launch-call time alone is 38.7 ms per iteration ... projected latency 0.0703 ms' with no word. A
    hand-made eager trace whose first iteration's launch calls are slow: the projection and the launch-call
    recommendation carry a caveat with the median iteration's projection."""
    from pathlib import Path

    import polars as pl

    from tests.test_report import hand_trace
    from tracekit.analyzers.report import config_row
    from tracekit.inputs import TraceInput
    from tracekit.model import Trace
    from tracekit.session import AnalysisOptions, analyze_trace

    item = TraceInput(path=Path("cold.synthetic.sqlite"), runtime="pytorch", batch_size=1, model="m")

    def cold_run(iters: int):
        base = hand_trace(iters=iters, kernels=20)
        first_end = base.ranges.get_column("end")[0]
        cold = 30_000_000  # 30 ms more in the first launch call (lazy module loading)
        shift = lambda c: pl.when(pl.col(c) >= first_end).then(pl.col(c) + cold).otherwise(pl.col(c))  # noqa: E731
        first_call = base.api.get_column("start").min()
        api = base.api.with_columns(
            shift("start"),
            pl.when(pl.col("start") == first_call)
            .then(pl.col("end") + cold)
            .otherwise(shift("end"))
            .alias("end"),
        )
        ops = base.ops.with_columns(
            pl.when(pl.col("start") >= first_call).then(pl.col(c) + cold).otherwise(pl.col(c)).alias(c)
            for c in ("start", "end")
        )
        ranges = base.ranges.with_columns(shift("start"), (pl.col("end") + cold).alias("end"))
        trace = Trace(ops=ops, api=api, ranges=ranges, meta=base.meta)
        return analyze_trace(trace, item, AnalysisOptions(skip=0))

    def launch_calls(analyzed):
        (lc,) = [
            r for r in recommendations(build_report([config_row(analyzed)])) if r["kind"] == "launch_calls"
        ]
        return lc

    # 3 iterations, as TraceLens' trace: the report's means keep the cold one (too few for a warm-up drop)
    analyzed = cold_run(3)
    lat = analyzed.iterations.get_column("latency_ms")
    assert lat[0] > 30 and lat.median() < 1
    p = analyzed.projection
    assert p.applies and p.caveat is not None and "the median iteration projects" in p.caveat
    assert "Caution: the mean latency" in launch_calls(analyzed)["text"]
    # 5 iterations: the report's means drop the cold one as warm-up, and so does its projection (review 6):
    # the caveat about means the row does not show is left out with it
    analyzed = cold_run(5)
    assert analyzed.projection.caveat is not None and config_row(analyzed)["traced_kept_iterations"] == 4
    assert "Caution" not in launch_calls(analyzed)["text"]
    # without the cold start: no caveat
    plain = analyze_trace(hand_trace(iters=5, kernels=20), item, AnalysisOptions(skip=0))
    assert plain.projection.caveat is None


def test_launch_recommendation_to_a_run_that_replays_graphs_says_so() -> None:
    """A run that replays a CUDA graph each iteration and still launches 20 kernels eagerly had been told 'a
    CUDA graph would remove it', as if it used none (the projection is refused there, and the rule's fallback
    spoke)."""
    from pathlib import Path

    import polars as pl

    from tests.test_report import hand_trace
    from tracekit.analyzers.report import config_row
    from tracekit.inputs import TraceInput
    from tracekit.model import Trace
    from tracekit.session import AnalysisOptions, analyze_trace

    base = hand_trace(iters=5, kernels=20)
    starts = base.ranges.get_column("start").to_list()
    corr = [10_000 + i for i in range(len(starts))]
    api = pl.concat(
        [
            base.api,
            base.api.head(0).vstack(
                pl.DataFrame(
                    {
                        "start": [s + 1_000 for s in starts],
                        "end": [s + 3_000 for s in starts],
                        "pid": 1,
                        "thread": 1,
                        "correlation": corr,
                        "kind": "runtime",
                        "name": "cudaGraphLaunch",
                    }
                )
                .select(base.api.columns)
                .cast(base.api.schema)
            ),
        ]
    )
    ops = base.ops.vstack(
        pl.DataFrame(
            {
                "start": [s + 4_000 for s in starts],
                "end": [s + 5_000 for s in starts],
                "device": 0,
                "stream": 7,
                "pid": 1,
                "correlation": corr,
                "graph": 1,
                "kind": "kernel",
                "name": "graph_node",
            }
        )
        .select(base.ops.columns)
        .cast(base.ops.schema)
    )
    trace = Trace(ops=ops, api=api, ranges=base.ranges, meta=base.meta)
    item = TraceInput(
        path=Path("mixed.synthetic.sqlite"), runtime="compile-cudagraphs", batch_size=1, model="m"
    )
    row = config_row(analyze_trace(trace, item, AnalysisOptions(skip=0)))
    assert row["graph_projected_ms"] is None and row["launches"] >= 20
    (lc,) = [r for r in recommendations(build_report([row])) if r["kind"] == "launch_calls"]
    assert lc["numbers"]["replays_graphs"] is True
    assert "already replays CUDA graphs" in lc["text"] and "a CUDA graph would remove it" not in lc["text"]
