"""hostile12: the nsys profiler warm-up iteration (aaa8520): ``collect --profiler nsys`` on CUDA records one
warm-up step as the first 'iteration' range and its sidecar says ``warmup_in_trace`` true,
``warmup_iterations`` 1, ``iterations`` 20; analyze drops it by default. Hand-built, labelled-synthetic nsys
exports (tests/test_diff11_workload.py) with sidecars as tracekit collect writes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_diff11_workload import Call, Op, Range, Workload, write_nsys

US = 1000

#: What Sweep._meta writes for an nsys trace on CUDA since aaa8520 (the keys analyze reads).
NEW_SIDECAR = {
    "synthetic": True,
    "made_by": "tracekit collect",
    "profiler": "nsys",
    "runtime": "pytorch",
    "batch_size": 1,
    "seq_len": 128,
    "precision": "fp16",
    "device": "gpu",
    "range": "iteration",
    "iterations": 20,
    "warmup_iterations": 1,
    "warmup_runs": 10,
    "warmup_in_trace": True,
    "profiler_warmup_steps": 1,
}


def _write(folder: Path, ranges: int, sidecar: dict | None, stem: str = "pytorch_b1_s128.nsys") -> Path:
    """``ranges`` iterations, the first (the profiler warm-up) 1.9 ms long, the others 1.0 ms: each a 5 us
    launch at +10 us of one kernel [+20 us, end - 100 us), a synchronize [+20 us, end - 50 us); 100 us
    between iterations."""
    w, t = Workload(), 0
    for i in range(ranges):
        length = 1900 if i == 0 else 1000
        w.ranges.append(Range(t, t + length * US))
        w.calls.append(Call(t + 10 * US, t + 15 * US, "cudaLaunchKernel", 2 * i + 1))
        w.ops.append(Op(t + 20 * US, t + (length - 100) * US, "kernel", 7, 2 * i + 1))
        w.calls.append(Call(t + 20 * US, t + (length - 50) * US, "cudaDeviceSynchronize", 2 * i + 2))
        t += (length + 100) * US
    folder.mkdir(parents=True, exist_ok=True)
    path = write_nsys(w, folder / f"{stem}.sqlite")
    if sidecar is not None:
        (folder / f"{stem}.meta.json").write_text(json.dumps(sidecar))
    return path


def _analyze(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    from tracekit.cli import main

    assert main(["analyze", *argv, "--format", "json", "--no-progress"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_warm_up_range_the_sidecar_names_is_dropped_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 21 ranges = 1 warm-up + 20 timed: the 1.9 ms warm-up is dropped, 20 iterations of 1.0 ms (0.88 busy)
    # remain, JSON 'skipped' 1 and a note say so (a note: the run's own metadata names the warm-up; no warning).
    d = _analyze([str(_write(tmp_path, 21, NEW_SIDECAR))], capsys)
    assert d["skipped"] == 1 and d["summary"]["iterations"] == 20
    assert d["summary"]["latency_ms"]["max"] == pytest.approx(1.0)
    assert any("dropped the first iteration: the run's warm-up" in w for w in d["notes"])
    assert not any("dropped the first" in w for w in d["warnings"])


@pytest.mark.parametrize(("skip", "kept", "mean"), [(0, 21, (1.9 + 20) / 21), (2, 19, 1.0)])
def test_skip_overrides_the_sidecar_warm_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], skip: int, kept: int, mean: float
) -> None:
    # --skip N counts from the trace's first range, the warm-up included: --skip 0 keeps all 21 (mean
    # 21.9 / 21 ms), --skip 2 drops the warm-up and the first timed one (19 left, 1.0 ms), no warm-up warning.
    d = _analyze([str(_write(tmp_path, 21, NEW_SIDECAR)), "--skip", str(skip)], capsys)
    assert d["skipped"] == skip and d["summary"]["iterations"] == kept
    assert d["summary"]["latency_ms"]["mean"] == pytest.approx(mean)
    assert not any("warm-up" in w for w in d["warnings"])


def test_counts_that_do_not_add_up_drop_nothing_and_say_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The sidecar says 1 + 20 but the trace holds 20 ranges: nothing dropped (which one is the warm-up is
    # unknown), the warning names both counts.
    d = _analyze([str(_write(tmp_path, 20, NEW_SIDECAR))], capsys)
    assert d["skipped"] == 0 and d["summary"]["iterations"] == 20
    assert any(
        "the sidecar says the trace holds 1 warm-up and 20 timed runs, but it holds 20 iterations" in w
        for w in d["warnings"]
    )


def test_table_on_a_run_directory_drops_each_configs_warm_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A run directory of two nsys configurations, each with its warm-up range: the table's latency is the
    # mean over the 20 timed iterations, 1.000 ms (1.043 with the 1.9 ms warm-up in), for both rows.
    from tests.conftest import REPO
    from tracekit.cli import main

    run = json.loads((REPO / "sample_traces/h200_bert_fp16/pytorch/run.json").read_text())
    run.update(synthetic=True, profilers=["nsys"], configs=[])
    for batch in (1, 8):
        stem = f"pytorch_b{batch}_s128.nsys"
        _write(tmp_path, 21, {**NEW_SIDECAR, "batch_size": batch}, stem)
        run["configs"].append(
            {
                "batch_size": batch,
                "seq_len": 128,
                "status": "ok",
                "error": None,
                "untraced_latency_ms": {
                    "mean": 1.0,
                    "p50": 1.0,
                    "p90": 1.0,
                    "p99": 1.0,
                    "min": 1.0,
                    "max": 1.0,
                },
                "traces": {"nsys": f"{stem}.sqlite"},
                "traced_latency_ms": {"nsys": 1.0},
                "perturbation": {"nsys": 1.0},
            }
        )
    (tmp_path / "run.json").write_text(json.dumps(run))
    assert main(["table", str(tmp_path), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out["rows"] if isinstance(out, dict) else out
    assert [r["latency_ms"] for r in rows] == [pytest.approx(1.0)] * 2


def _with_operator_ranges(folder: Path) -> Path:
    """21 'iteration' ranges as :func:`_write`'s shape but two kernels each, launched at +15 and +415 us; the
    20 timed iterations also hold an 'aten::linear' range [+10, +310) us and [+410, +710) us around each launch
    (collect --op-ranges: emit_nvtx is entered around the timed loop only, so the warm-up has none)."""
    from tests.nsys_builder import NsysBuilder

    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    b.mem_kinds()
    t, corr = 0, 0
    for i in range(21):
        length = 1900 if i == 0 else 1000
        b.nvtx_range(t, t + length * US, "iteration")
        for j in range(2):
            s = t + 10 * US + j * 400 * US
            if i > 0:
                b.nvtx_range(s, s + 300 * US, "aten::linear")
            corr += 1
            b.runtime(s + 5 * US, s + 10 * US, "cudaLaunchKernel_v7000", correlation=corr)
            b.kernel(s + 20 * US, s + (380 if i == 0 else 200) * US, "gemm", correlation=corr)
        corr += 1
        b.runtime(t + 820 * US, t + (length - 50) * US, "cudaDeviceSynchronize_v3020", correlation=corr)
        t += (length + 100) * US
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pytorch_b1_s128.nsys.meta.json").write_text(
        json.dumps({**NEW_SIDECAR, "operator_ranges": True})
    )
    return b.write(folder / "pytorch_b1_s128.nsys.sqlite")


def test_the_sidecar_counts_are_not_checked_against_another_ranges_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # --range aten::linear: 40 ranges of 0.3 ms, all timed (the warm-up's 2 kernels, 0.72 ms, are launched
    # in no 'aten::linear' range and said so). The numbers are right; the sidecar-count warning is not:
    # nothing of the sidecar's 'iteration' counts is wrong, and --skip 1 or 2 would drop timed ranges.
    d = _analyze([str(_with_operator_ranges(tmp_path)), "--range", "aten::linear"], capsys)
    assert d["skipped"] == 0 and d["summary"]["iterations"] == 40
    assert d["summary"]["latency_ms"]["mean"] == pytest.approx(0.3)
    assert any(
        "2 device ops (0.720 ms busy) were launched outside every iteration" in w for w in d["warnings"]
    )
    assert not any("the sidecar says" in w for w in d["warnings"])
    assert (
        "the sidecar's warm-up runs are counted in its 'iteration' ranges, not in these 'aten::linear' ones: "
        "none dropped (--skip N drops the first N)"
    ) in d["warnings"]
