"""The many-trace summary's rows per GPU: a trace whose work ran on two GPUs keeps its row (the GPUs together)
and gets one row per GPU under it, in JSON, CSV, Markdown and the table; the cross-trace statistics stay per
trace. The traces here are SYNTHETIC, hand-built Kineto files in tmp folders with known truth; the real
2-GPU Nsight Systems export in ../shared/real_traces is read where present, never copied into the repo."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.builders import EPOCH
from tracekit.analyzers.ranks import MEAN_FIELDS, summarize
from tracekit.fleet.run import analyze_many
from tracekit.renderers.ranks import render_ranks
from tracekit.session import AnalysisOptions

GEMM = "sm90_xmma_gemm_f16f16_synthetic"
STEPS = 4
#: per step (µs after the step's start): (device, launch call, kernel start, kernel end)
TWO_GPUS = ((0, 10, 50, 950), (1, 20, 100, 400))


def _us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def _event(cat: str, name: str, pid: int, tid: int, ts_ns: int, dur_ns: int, **args: int) -> str:
    """One Kineto complete event as JSON text, ``ts``/``dur`` written as exact decimal µs (epoch times have
    more digits than a float holds)."""
    head = json.dumps(
        {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, **({"args": args} if args else {})}
    )
    return head[:-1] + f', "ts": {_us(ts_ns)}, "dur": {_us(dur_ns)}}}'


def _kineto(path: Path, step_us: int, kernels: tuple[tuple[Any, ...], ...], gpus: list[str]) -> str:
    """A SYNTHETIC Kineto trace: one process (pid 100) running :data:`STEPS` ``ProfilerStep#N`` of
    ``step_us`` µs back to back; in each, per ``kernels`` entry ``(device, call, start, end[, name])`` (µs
    after the step's start) one kernel on that device (stream 7, named :data:`GEMM` unless given; its
    launching ``cudaLaunchKernel`` 1 µs long), then a ``cudaDeviceSynchronize`` from 30 µs until 40 µs before
    the step ends. ``gpus``: the names of devices 0, 1, ... (``deviceProperties``)."""
    lines, corr = [], 1
    for step in range(STEPS):
        s0 = EPOCH + step * step_us * 1000
        lines.append(_event("user_annotation", f"ProfilerStep#{step}", 100, 100, s0, step_us * 1000))
        for device, call, start, end, *name in kernels:
            lines.append(
                _event("cuda_runtime", "cudaLaunchKernel", 100, 100, s0 + call * 1000, 1000, correlation=corr)
            )
            lines.append(
                _event(
                    "kernel", name[0] if name else GEMM, device, 7, s0 + start * 1000, (end - start) * 1000,
                    device=device, stream=7, correlation=corr,
                )
            )  # fmt: skip
            corr += 1
        lines.append(
            _event(
                "cuda_runtime",
                "cudaDeviceSynchronize",
                100,
                100,
                s0 + 30_000,
                (step_us - 70) * 1000,
                correlation=corr,
            )
        )
        corr += 1
    header = json.dumps(
        {
            "schemaVersion": 1,
            "tracekit_synthetic": True,
            "deviceProperties": [{"id": i, "name": name, "numSms": 132} for i, name in enumerate(gpus)],
        }
    )
    path.write_text(header[:-1] + ', "traceEvents": [\n' + ",\n".join(lines) + "\n]}\n")
    return str(path)


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """A SYNTHETIC 2-GPU trace (one process driving both: GPU 0 busy 900 µs of each 1 ms step, GPU 1 300 µs,
    inside GPU 0's) and a SYNTHETIC 1-GPU trace (2 ms steps, 1 ms kernels)."""
    out = tmp_path_factory.mktemp("per_gpu")
    return [
        _kineto(out / "two_gpus.synthetic.json", 1000, TWO_GPUS, ["Synthetic GPU A", "Synthetic GPU B"]),
        _kineto(out / "one_gpu.synthetic.json", 2000, ((0, 10, 500, 1500),), ["Synthetic GPU A"]),
    ]


def _doc(paths: list[str], jobs: int = 1) -> dict:
    outcomes = analyze_many(paths, AnalysisOptions(), jobs=jobs)
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    return summarize([o.result for o in outcomes])


FIGURES = (
    "iterations",
    "median_latency_ms",
    "mean_latency_ms",
    "mean_gpu_busy_ms",
    "mean_framework_overhead_ms",
)


def test_each_gpu_of_a_two_gpu_trace_is_a_row_of_its_own(traces: list[str]) -> None:
    doc = _doc(traces)
    # the trace rows as before: the 2-GPU trace counts its GPUs together (busy: the union, 900 µs)
    assert [r["trace"] for r in doc["rows"]] == ["one_gpu.synthetic.json", "two_gpus.synthetic.json"]
    assert doc["traces"] == 2
    whole = doc["rows"][1]
    assert [whole[k] for k in FIGURES] == pytest.approx([STEPS, 1.0, 1.0, 0.9, 0.1], abs=1e-12)
    # one row per GPU: each its own work in the same steps
    gpus = doc["gpu_rows"]
    assert [g["trace"] for g in gpus] == ["two_gpus.synthetic.json GPU 0", "two_gpus.synthetic.json GPU 1"]
    assert [g["of_trace"] for g in gpus] == ["two_gpus.synthetic.json"] * 2
    assert [g["device_id"] for g in gpus] == [0, 1]
    assert [g["gpu"] for g in gpus] == ["Synthetic GPU A", "Synthetic GPU B"]
    assert [gpus[0][k] for k in FIGURES] == pytest.approx([STEPS, 1.0, 1.0, 0.9, 0.1], abs=1e-12)
    assert [gpus[1][k] for k in FIGURES] == pytest.approx([STEPS, 1.0, 1.0, 0.3, 0.7], abs=1e-12)
    assert [g["mean_gpu_utilization"] for g in gpus] == pytest.approx([0.9, 0.3], abs=1e-12)
    # the row's means add up, with the idle split by cause as the trace rows have it
    for g in gpus:
        assert g["mean_gpu_busy_ms"] + g["mean_framework_overhead_ms"] == pytest.approx(g["mean_latency_ms"])
        assert g["mean_sync_ms"] is not None
    # verdicts as the trace's own per-device table says them: GPU 1 framework-bound, uncertain (its idle time
    # is its wait for GPU 0, driven by the same process), said under the table
    assert [(g["verdict"], g["verdict_uncertain"]) for g in gpus] == [("compute", False), ("framework", True)]
    assert any(
        w.startswith("two_gpus.synthetic.json GPU 1: verdict uncertain: one process drives devices 0, 1")
        for w in doc["warnings"]
    )


def test_the_gpu_rows_are_the_per_device_table_of_the_trace_alone(traces: list[str]) -> None:
    from tracekit.api import analyze

    alone = analyze(traces[0]).per_device
    rows = _doc(traces)["gpu_rows"]
    assert [(d["device"], d["iterations"], d["latency_ms"], d["gpu_busy_ms"], d["bound"]) for d in alone] == [
        (g["device_id"], g["iterations"], g["median_latency_ms"], g["mean_gpu_busy_ms"], g["verdict"])
        for g in rows
    ]


def test_the_statistics_compare_whole_traces_not_gpus(traces: list[str]) -> None:
    doc = _doc(traces)
    assert doc["spread"]["slowest"] == "one_gpu.synthetic.json"
    assert doc["spread"]["fastest"] == "two_gpus.synthetic.json"
    assert doc["spread"]["ratio"] == pytest.approx(2.0)
    assert doc["slowest_by_step"] == {
        "steps": STEPS,
        "slowest": "one_gpu.synthetic.json",
        "slowest_steps": STEPS,
    }
    assert "compare whole traces, not GPUs" in doc["gpu_note"]
    # a trace alone: no spread, though it has two GPU rows
    alone = _doc(traces[:1])
    assert alone["traces"] == 1 and "spread" not in alone and len(alone["gpu_rows"]) == 2


def test_single_gpu_traces_have_no_gpu_rows(traces: list[str]) -> None:
    doc = _doc(traces[1:])
    assert "gpu_rows" not in doc and "gpu_note" not in doc


def test_every_format_shows_the_gpu_rows_under_their_trace(traces: list[str]) -> None:
    doc = _doc(traces)
    table = render_ranks(doc, "table").splitlines()
    names = [line.split("  ")[0] if not line.startswith("  ") else line.split("  ")[1] for line in table[2:6]]
    assert names == [
        "one_gpu.synthetic.json",
        "two_gpus.synthetic.json",
        "two_gpus.synthetic.json GPU 0",
        "two_gpus.synthetic.json GPU 1",
    ]
    assert table[4].startswith("  two_gpus.synthetic.json GPU 0") and "framework (uncertain)" in table[5]
    assert any(
        line.startswith("GPU rows: two_gpus.synthetic.json: the trace ran on several GPUs") for line in table
    )
    markdown = render_ranks(doc, "markdown")
    assert "| two_gpus.synthetic.json GPU 1 | 4 | 1.000 | 1.000 | 0.300 | 0.700 |" in markdown
    rows = list(csv.DictReader(io.StringIO(render_ranks(doc, "csv"))))
    assert [(r["trace"], r["scope"], r["of_trace"], r["device_id"]) for r in rows] == [
        ("one_gpu.synthetic.json", "trace", "", ""),
        ("two_gpus.synthetic.json", "trace", "", ""),
        ("two_gpus.synthetic.json GPU 0", "gpu", "two_gpus.synthetic.json", "0"),
        ("two_gpus.synthetic.json GPU 1", "gpu", "two_gpus.synthetic.json", "1"),
    ]
    assert float(rows[3]["mean_gpu_busy_ms"]) == pytest.approx(0.3)
    assert json.loads(render_ranks(doc, "json"))["gpu_rows"][1]["mean_gpu_busy_ms"] == pytest.approx(0.3)


def test_the_compact_result_holds_a_few_numbers_per_gpu(traces: list[str]) -> None:
    (outcome,) = analyze_many(traces[:1], AnalysisOptions(), jobs=1)
    per_gpu = outcome.result["per_gpu"]
    assert len(per_gpu) == 2
    # scalars (the row's figures), and the lane: the GPU's iteration times and step numbers (4 columns) and
    # its collectives, as the trace's own are carried, for the comparison of one capture's GPUs
    assert {type(v) for g in per_gpu for k, v in g.items() if k != "lane"} <= {int, float, str, type(None)}
    assert sorted(per_gpu[1]) == sorted(
        ["device", "gpu", "range", "iterations", "median_latency_ms", "verdict", "verdict_uncertain", "lane"]
        + [f"mean_{k}" for k in MEAN_FIELDS]
    )
    assert sorted(per_gpu[1]["lane"]) == ["iterations"]  # (no collectives in this trace)
    assert sorted(per_gpu[1]["lane"]["iterations"]) == ["end_ns", "index", "latency_ms", "start_ns", "step"]
    assert list(per_gpu[1]["lane"]["iterations"]["step"]) == list(range(STEPS))


def test_one_job_two_jobs_and_a_dask_cluster_give_the_same_json(
    traces: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from tracekit.cli import main

    base = ["analyze", *traces, "--format", "json", "--no-progress"]
    docs = []
    for extra in (["--jobs", "1"], ["--jobs", "2"]):
        assert main(base + extra) == 0
        docs.append(json.loads(capsys.readouterr().out))
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as c:
        assert main(base + ["--scheduler", c.scheduler_address]) == 0
        docs.append(json.loads(capsys.readouterr().out))
    assert docs[0] == docs[1] == docs[2]
    assert len(docs[0]["gpu_rows"]) == 2


def test_the_real_two_gpu_nsys_export(real_traces: Path) -> None:
    path = real_traces / "nsys" / "nsysai_h100_2gpu_1s_fastvideo_2026.2.sqlite"
    if not path.exists():
        pytest.skip("the real 2-GPU export is not here")
    doc = _doc([str(path)])
    (whole,) = doc["rows"]
    assert round(whole["mean_gpu_busy_ms"], 3) == 967.639  # both GPUs together, as before
    got = [
        (g["trace"], round(g["median_latency_ms"], 3), round(g["mean_gpu_busy_ms"], 3))
        for g in doc["gpu_rows"]
    ]
    # as `tracekit analyze` on the trace alone shows its per-device table
    assert got == [
        ("nsysai_h100_2gpu_1s_fastvideo_2026.2.sqlite GPU 0", 969.448, 962.890),
        ("nsysai_h100_2gpu_1s_fastvideo_2026.2.sqlite GPU 1", 969.259, 962.811),
    ]


def test_within_a_trace_its_gpus_busy_time_is_compared(traces: list[str]) -> None:
    doc = _doc(traces)
    (spread,) = doc["gpu_busy_spread"]
    assert spread["trace"] == "two_gpus.synthetic.json"
    assert (spread["busiest"], spread["least_busy"]) == (
        "two_gpus.synthetic.json GPU 0",
        "two_gpus.synthetic.json GPU 1",
    )
    assert [spread["busiest_mean_gpu_busy_ms"], spread["least_busy_mean_gpu_busy_ms"]] == pytest.approx(
        [0.9, 0.3], abs=1e-12
    )
    assert spread["ratio"] == pytest.approx(3.0)
    assert (
        "GPU busy within two_gpus.synthetic.json (mean per iteration): most two_gpus.synthetic.json GPU 0 "
        "(0.900 ms), least two_gpus.synthetic.json GPU 1 (0.300 ms), 3.000x"
    ) in render_ranks(doc, "table").splitlines()


def _gpu(device: int, iterations: int | None = 2, busy: float | None = 0.5, **extra: object) -> dict:
    """A compact result's ``per_gpu`` entry (:func:`tracekit.fleet.compact.per_gpu`), hand-built."""
    figures = {f"mean_{k}": None for k in MEAN_FIELDS}
    figures.update(mean_latency_ms=1.0 if busy is not None else None, mean_gpu_busy_ms=busy)
    return {
        "device": device,
        "gpu": None,
        "iterations": iterations,
        "median_latency_ms": 1.0 if busy is not None else None,
        **figures,
        "verdict": "compute" if busy is not None else None,
        "verdict_uncertain": None,
        **extra,
    }


def test_a_ranked_trace_names_its_gpus_rank_n_gpu_k_and_a_gpu_without_figures_says_why() -> None:
    from tests.builders import compact_result

    two = {
        **compact_result("r3.json", rank=3),
        "per_gpu": [_gpu(0), {"device": 1, "gpu": None, "error": "no iteration holds this device's work"}],
    }
    doc = summarize([compact_result("r2.json", rank=2), two])
    assert [r["trace"] for r in doc["rows"]] == ["rank 2", "rank 3"]
    assert [(g["trace"], g.get("error")) for g in doc["gpu_rows"]] == [
        ("rank 3 GPU 0", None),
        ("rank 3 GPU 1", "no iteration holds this device's work"),
    ]
    assert "rank 3 GPU 1: no iteration holds this device's work" in doc["warnings"]
    assert doc["gpu_busy_spread"] == [{"trace": "rank 3", "why": "rank 3 GPU 1: no figures"}]
    table = render_ranks(doc, "table")
    assert "no figures: no iteration holds this device's work" in table
    assert "GPU busy within rank 3: not compared (rank 3 GPU 1: no figures)" in table
    # GPUs that hold other numbers of iterations (other steps) are not compared either
    other = {**compact_result("r3.json", rank=3), "per_gpu": [_gpu(0, 2, 0.5), _gpu(1, 3, 0.2)]}
    assert summarize([other])["gpu_busy_spread"] == [
        {"trace": "rank 3", "why": "its GPUs hold 2 to 3 iterations: their steps are not the same"}
    ]


ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def test_each_gpu_row_has_its_own_communication(tmp_path: Path) -> None:
    # GPU 0: compute 50-600 µs, all-reduce 600-800 (none of it hidden); GPU 1: compute 100-400, all-reduce
    # 350-800 (50 µs of it under its compute)
    kernels = (
        (0, 10, 50, 600),
        (0, 12, 600, 800, ALL_REDUCE),
        (1, 20, 100, 400),
        (1, 22, 350, 800, ALL_REDUCE),
    )
    path = _kineto(tmp_path / "two_gpus_nccl.synthetic.json", 1000, kernels, ["A", "B"])
    doc = _doc([path])
    (whole,) = doc["rows"]
    # the trace's row is the union over its GPUs, as its GPU busy is: communication [350, 800) µs, exposed
    # [400, 800) (GPU 0's all-reduce [600, 800) and GPU 1's [400, 800) beyond its compute); summed it had read
    # 0.65 and 0.6
    assert [whole["mean_comm_ms"], whole["mean_exposed_comm_ms"]] == pytest.approx([0.45, 0.4], abs=1e-12)
    got = [(g["mean_comm_ms"], g["mean_exposed_comm_ms"], g["mean_gpu_busy_ms"]) for g in doc["gpu_rows"]]
    assert got == [pytest.approx((0.2, 0.2, 0.75), abs=1e-12), pytest.approx((0.45, 0.4, 0.7), abs=1e-12)]


def test_an_nsys_capture_of_two_ranks_gets_a_row_per_gpu(tmp_path: Path) -> None:
    """A SYNTHETIC Nsight Systems export of two processes (pid 100 on GPU 0, pid 200 on GPU 1, as nsys
    records a ``torchrun`` of two ranks), each with 4 ``iteration`` ranges of 1 ms (pid 200's 100 µs later)
    holding one kernel: 400 µs on GPU 0, 800 µs on GPU 1."""
    from tests.nsys_builder import NsysBuilder

    b = NsysBuilder()
    b.gpu(0, "Synthetic GPU A")
    b.gpu(1, "Synthetic GPU B")
    corr = 1
    for pid, device, busy, shift in ((100, 0, 400_000, 0), (200, 1, 800_000, 100_000)):
        for step in range(STEPS):
            s0 = 1_000_000_000 + shift + step * 1_000_000
            b.nvtx_range(s0, s0 + 1_000_000, "iteration", pid=pid, tid=pid)
            b.runtime(s0 + 10_000, s0 + 11_000, "cudaLaunchKernel_v7000", correlation=corr, pid=pid, tid=pid)
            b.kernel(s0 + 50_000, s0 + 50_000 + busy, GEMM, device=device, correlation=corr, pid=pid)
            b.runtime(
                s0 + 20_000,
                s0 + 960_000,
                "cudaDeviceSynchronize_v3020",
                correlation=corr + 1,
                pid=pid,
                tid=pid,
            )
            corr += 2
    path = str(b.write(tmp_path / "two_ranks.synthetic.sqlite"))
    doc = _doc([path])
    (whole,) = doc["rows"]
    # the trace's row: both processes' ranges (8 iterations), busy 0.6 ms on average, "compute"
    assert [whole[k] for k in FIGURES] == pytest.approx([8, 1.0, 1.0, 0.6, 0.4], abs=1e-12)
    assert whole["verdict"] == "compute"
    # each GPU: its own process's 4 iterations; GPU 0 framework-bound, which the trace's row hid
    rows = doc["gpu_rows"]
    assert [(g["trace"], g["gpu"], g["verdict"], g["verdict_uncertain"]) for g in rows] == [
        ("two_ranks.synthetic.sqlite GPU 0", "Synthetic GPU A", "framework", False),
        ("two_ranks.synthetic.sqlite GPU 1", "Synthetic GPU B", "compute", False),
    ]
    assert [rows[0][k] for k in FIGURES] == pytest.approx([4, 1.0, 1.0, 0.4, 0.6], abs=1e-12)
    assert [rows[1][k] for k in FIGURES] == pytest.approx([4, 1.0, 1.0, 0.8, 0.2], abs=1e-12)
    (spread,) = doc["gpu_busy_spread"]
    assert (spread["busiest"], spread["least_busy"]) == (
        "two_ranks.synthetic.sqlite GPU 1",
        "two_ranks.synthetic.sqlite GPU 0",
    )
    assert spread["ratio"] == pytest.approx(2.0)


def test_the_gpu_rows_take_the_runs_options(traces: list[str]) -> None:
    outcomes = analyze_many(traces[:1], AnalysisOptions(skip=1), jobs=1)
    doc = summarize([o.result for o in outcomes])
    assert [r["iterations"] for r in doc["rows"]] == [STEPS - 1]
    assert [g["iterations"] for g in doc["gpu_rows"]] == [STEPS - 1, STEPS - 1]


def test_a_many_trace_run_analyzes_each_gpu_once_and_says_what_a_second_analysis_would(
    traces: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The per-GPU rows reuse the per-device analyses the trace's own table made (with the idle split by
    cause, asked for by the run): two device analyses for the 2-GPU trace, none for the 1-GPU one (before:
    each GPU analyzed twice). The entries equal those made afresh from a plain analysis."""
    import tracekit
    from tracekit.analyzers import iterations
    from tracekit.fleet.compact import per_gpu

    calls: list[str] = []
    real = iterations.analyze_iterations

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append("device")
        return real(*args, **kwargs)

    monkeypatch.setattr(iterations, "analyze_iterations", counted)
    outcomes = analyze_many(traces, AnalysisOptions(), jobs=1)
    assert len(calls) == 2
    reused = next(o.result["per_gpu"] for o in outcomes if o.result["per_gpu"] is not None)
    calls.clear()
    afresh = per_gpu(tracekit.analyze(traces[0]))  # a plain analysis keeps no causes: made again here
    assert len(calls) == 4  # (two for its per-device table, two with the causes)

    def plain(x: Any) -> str:
        return json.dumps(x, default=lambda a: a.tolist(), sort_keys=True)

    assert plain(reused) == plain(afresh)


ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"


def _capture_of_two_ranks(path: Path, collectives: bool = True, step_numbers: bool = True) -> str:
    """A SYNTHETIC Nsight Systems export of one capture of two ranks (pid 100 on GPU 0, pid 200 on GPU 1,
    one session clock): 4 steps of 1 ms each (``ProfilerStep#N``, or ``iteration``), pid 200's starting
    100 µs later; in each a 300 µs GEMM, then (``collectives``) an all-reduce that GPU 0 starts at 450 µs and
    GPU 1 at 700 µs (its own 600 µs) after GPU 0's step start, both ending at 900 µs: GPU 1 arrives last,
    0.25 ms after GPU 0, at every collective."""
    from tests.nsys_builder import NsysBuilder

    b = NsysBuilder()
    b.gpu(0, "Synthetic GPU A")
    b.gpu(1, "Synthetic GPU B")
    corr = 1
    for pid, device, shift, arrive in ((100, 0, 0, 450_000), (200, 1, 100_000, 700_000)):
        for step in range(STEPS):
            base = 1_000_000_000 + step * 1_000_000
            s0 = base + shift
            name = f"ProfilerStep#{step + 5}" if step_numbers else "iteration"
            b.nvtx_range(s0, s0 + 1_000_000, name, pid=pid, tid=pid)
            b.runtime(s0 + 10_000, s0 + 11_000, "cudaLaunchKernel_v7000", correlation=corr, pid=pid, tid=pid)
            b.kernel(s0 + 50_000, s0 + 350_000, GEMM, device=device, correlation=corr, pid=pid)
            if collectives:
                b.runtime(
                    s0 + 20_000, s0 + 21_000, "cudaLaunchKernel_v7000", correlation=corr + 1, pid=pid, tid=pid
                )
                b.kernel(
                    base + arrive, base + 900_000, ALLREDUCE, device=device, correlation=corr + 1, pid=pid
                )
            corr += 2
    return str(b.write(path))


def test_the_gpus_of_one_capture_are_compared_on_its_one_clock(tmp_path: Path) -> None:
    """One capture of two ranks: no clock alignment is needed between its GPUs; GPU 1 starts each step
    0.1 ms later, ends each last, and arrives last at every all-reduce, 0.25 ms after GPU 0."""
    doc = _doc([_capture_of_two_ranks(tmp_path / "capture.synthetic.sqlite")])
    (within,) = doc["gpu_within"]
    assert within["trace"] == "capture.synthetic.sqlite" and within["gpus"] == ["GPU 0", "GPU 1"]
    assert within["skew"]["steps"] == STEPS
    assert within["skew"]["median_start_skew_ms"] == pytest.approx(0.1, abs=1e-12)
    assert within["skew"]["max_start_skew_ms"] == pytest.approx(0.1, abs=1e-12)
    assert (within["skew"]["ends_last"], within["skew"]["ends_last_steps"]) == ("GPU 1", STEPS)
    assert within["slowest_by_step"] == {"steps": STEPS}  # every step 1 ms on both: no slowest
    assert (within["straggler"], within["arrives_last"], within["collectives"]) == ("GPU 1", STEPS, STEPS)
    assert within["median_wait_ms"] == pytest.approx(0.25, abs=1e-12)
    assert within["total_wait_ms"] == pytest.approx(0.25 * STEPS, abs=1e-12)
    # the separate-trace statistics are untouched: one trace, nothing to compare across traces
    assert "straggler" not in doc and "skew" not in doc
    text = render_ranks(doc, "table")
    assert "within capture.synthetic.sqlite (one clock): straggler GPU 1" in text


def test_within_a_capture_without_collectives_the_skew_stays_and_no_straggler_is_named(
    tmp_path: Path,
) -> None:
    doc = _doc([_capture_of_two_ranks(tmp_path / "capture.synthetic.sqlite", collectives=False)])
    (within,) = doc["gpu_within"]
    assert within["straggler"] is None and within["straggler_why"] == "not every GPU has collectives"
    assert within["skew"]["median_start_skew_ms"] == pytest.approx(0.1, abs=1e-12)


def test_the_gpus_of_one_process_share_its_steps_and_are_not_compared(traces: list[str]) -> None:
    assert "gpu_within" not in _doc(traces)  # (the 2-GPU trace of one process: the same windows)


def test_within_a_capture_collectives_that_do_not_end_together_name_no_straggler() -> None:
    """Hand-built compact GPU entries: matched in launch order, GPU 1's collectives end 0.5 ms after GPU 0's
    on the one clock: not the same operations (another process group), so no straggler."""
    from tracekit.analyzers.ranks import within_capture

    def lane(shift: int) -> dict[str, Any]:
        starts = [1_000_000 * k for k in range(4)]
        return {
            "iterations": {
                "index": list(range(4)),
                "start_ns": starts,
                "end_ns": [s + 900_000 for s in starts],
                "latency_ms": [0.9] * 4,
                "step": [None] * 4,
            },
            "collective_starts_ns": [s + 100_000 + shift for s in starts],
            "collective_ends_ns": [s + 200_000 + shift for s in starts],
            "collective_kinds": ["allreduce"] * 4,
            "collective_iterations": list(range(4)),
        }

    result = {
        "name": "t.synthetic.sqlite",
        "rank": None,
        "per_gpu": [{"device": 0, "lane": lane(0)}, {"device": 1, "lane": {**lane(500_000)}}],
    }
    result["per_gpu"][1]["lane"]["iterations"]["start_ns"] = [
        s + 50_000 for s in range(0, 4_000_000, 1_000_000)
    ]
    within = within_capture(result)
    assert within is not None and within["straggler"] is None
    assert within["straggler_why"].startswith(
        "the GPUs' collectives, matched in launch order, do not end together"
    )
