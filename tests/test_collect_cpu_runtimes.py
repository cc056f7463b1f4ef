"""tracekit collect on a CPU-only machine: every runtime that runs on the CPU, under its profilers, checked
against what was asked (iterations, warm-up, run.json fields, no GPU claimed, trace latency = timed latency);
refusals that come before anything heavy is imported; interrupted runs marked as such."""

from __future__ import annotations

import csv
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from tracekit.cli import main

TINY = [
    "--model",
    "tiny",
    "--layers",
    "1",
    "--device",
    "cpu",
    "--seq-lens",
    "8",
    "--warmup",
    "2",
    "--iters",
    "4",
    "--max-time",
    "0",
    "--in-process",
    "-q",
]


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a cache of this test's own: test_collect.py counts the exports in the session's shared one
    monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path / "tracekit-cache"))


def _err_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


# -- refusals before anything heavy --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--runtime", "cuda-graphs", "--device", "cpu"], "runtime 'cuda-graphs' needs a CUDA device"),
        (["--runtime", "onnx-cuda-graphs", "--device", "cpu"], "runtime 'onnx-cuda-graphs' needs a CUDA"),
        (["--batch-sizes", "0"], "--batch-sizes must be positive integers"),
        (["--batch-sizes=-2"], "--batch-sizes must be positive integers"),
        (["--seq-lens", "0"], "--seq-lens must be positive integers"),
        (["--model", "bert-huge"], "unknown model 'bert-huge'"),
        (["--device", "gpu"], "unknown device 'gpu'"),
        (["--device", "cuda:x"], "unknown device 'cuda:x'"),
        (["--device", "cudax"], "unknown device 'cudax'"),
        (
            ["--device", "cpu", "--profiler", "ncu"],
            "--profiler ncu profiles GPU kernels; it needs --device cuda",
        ),
        (["--gen-tokens", "0"], "--gen-tokens must be >= 1"),
        (["--iters", "0"], "--iters >= 1"),
        (["--model", "vit-base", "--seq-lens", "32"], "model vit-base takes 224x224 images"),
    ],
)
def test_bad_options_refused_before_torch_is_imported(
    argv: list[str],
    words: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # torch and transformers cannot be imported: a refusal that needs neither must not try (they take seconds;
    # before, every refusal imported torch, transformers and onnxruntime first, ~10 s on a busy 2-core machine)
    for name in ("torch", "transformers", "onnxruntime"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setenv("PATH", str(tmp_path))  # no nsys, no ncu
    assert main(["collect", "--model", "tiny", *argv, "-o", str(tmp_path / "r")]) == 2
    line = _err_line(capsys)
    assert words in line, line
    assert not (tmp_path / "r").exists()


def test_cuda_only_runtime_refused_before_transformers_or_a_missing_profiler(tmp_path: Path) -> None:
    """On a machine without CUDA the missing GPU is named (not the missing ncu), importing torch alone."""
    pytest.importorskip("torch")
    if _cuda():
        pytest.skip("CUDA is available here")
    code = (
        "import sys\n"
        "from tracekit.cli import main\n"
        "rc = main(['collect', '--runtime', 'onnx-cuda-graphs', '--model', 'tiny', '--profiler', 'ncu',"
        f" '-o', {str(tmp_path / 'r')!r}])\n"
        "print(rc, 'transformers' in sys.modules, 'onnxruntime' in sys.modules, 'onnx' in sys.modules)\n"
    )
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}  # no ncu
    env.pop("TRACEKIT_NCU", None)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.stdout.split() == ["2", "False", "False", "False"], (proc.stdout, proc.stderr)
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tracekit: runtime 'onnx-cuda-graphs' needs CUDA, and "), err
    assert not (tmp_path / "r").exists()


def test_compile_without_a_cxx_compiler_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inductor compiles CPU kernels with a C++ compiler: a missing one is named before any model is built
    (before: every configuration built, traced and compiled the model, then failed with InvalidCxxCompiler)."""
    pytest.importorskip("torch")
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-g++"))
    monkeypatch.delenv("TORCH_INDUCTOR_INSTALL_GXX", raising=False)
    import tracekit.collectors.worker as worker

    def never(cfg: dict) -> dict:
        raise AssertionError("a model was run")

    monkeypatch.setattr(worker, "run_config", never)
    assert (
        main(["collect", "--runtime", "compile", *TINY, "--profiler", "none", "-o", str(tmp_path / "r")]) == 2
    )
    line = _err_line(capsys)
    assert "needs a C++ compiler" in line and "no-such-g++" in line and "CXX" in line
    assert not (tmp_path / "r").exists()


def test_duplicate_sizes_run_once() -> None:
    from tracekit.collectors.sweep import Sweep, SweepOptions

    sweep = Sweep(
        SweepOptions(model="tiny", device="cpu", batch_sizes=[1, 4, 1], seq_lens=[8, 8], profilers=["none"])
    )
    assert sweep.opts.batch_sizes == [1, 4] and sweep.opts.seq_lens == [8]


# -- interrupted and stopped runs ----------------------------------------------------------------------------
def test_interrupted_run_is_marked_and_read_as_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("transformers")
    import tracekit.collectors.worker as worker

    real = worker.run_config

    def interrupted(cfg: dict) -> dict:
        if cfg["batch_size"] == 2:
            raise KeyboardInterrupt
        return real(cfg)

    monkeypatch.setattr(worker, "run_config", interrupted)
    out = tmp_path / "run"
    argv = ["collect", "--runtime", "pytorch", *TINY, "--batch-sizes", "1,2,4", "--profiler", "none"]
    assert main([*argv, "-o", str(out)]) == 130
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "interrupted" and run["finished"] is None
    assert [(c["batch_size"], c["status"]) for c in run["configs"]] == [
        (1, "ok"),
        (2, "skipped"),
        (4, "skipped"),
    ]
    assert run["configs"][1]["error"] == "not run: the sweep was interrupted"
    from tracekit.runs import check_run

    assert check_run(run) is None  # still a valid run.json for analyze, table and report


def test_complete_run_says_complete(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    out = tmp_path / "run"
    assert main(["collect", "--runtime", "pytorch", *TINY, "--profiler", "none", "-o", str(out)]) == 0
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "complete" and run["finished"]


# -- every CPU runtime under its profilers ------------------------------------------------------------------
def _check_run(out: Path, runtime: str, profiler: str) -> None:
    """run.json and the sidecar say what ran; the trace holds --iters iterations; its per-iteration latency is
    the timed one's; nothing claims a GPU."""
    run = json.loads((out / "run.json").read_text())
    assert (run["runtime"], run["model"], run["device"], run["precision"]) == (runtime, "tiny", "cpu", "fp32")
    assert run["profilers"] == [profiler] and run["warmup"] == 2 and run["iters"] == 4
    assert run["gpu"] is None and run["device_map"] is None and run["versions"]["torch"]
    assert "cuda" not in run["versions"] and "driver" not in run["versions"]
    assert run["status"] == "complete"
    (config,) = run["configs"]
    assert (config["batch_size"], config["seq_len"], config["status"]) == (2, 8, "ok")
    trace = out / config["traces"][profiler]
    meta = json.loads(trace.with_name(trace.name.split(".")[0] + f".{profiler}.meta.json").read_text())
    assert (meta["runtime"], meta["model"], meta["batch_size"], meta["seq_len"]) == (runtime, "tiny", 2, 8)
    assert (meta["device"], meta["gpu"], meta["profiler"], meta["precision"]) == (
        "cpu",
        None,
        profiler,
        "fp32",
    )
    assert meta["iterations"] == 4 and meta["warmup_runs"] == 2
    if profiler == "torch":
        # one run traced by torch.profiler's schedule and discarded (its start-up cost) before the timed four:
        # ProfilerStep#0 is not in the trace; #1-#4 each hold one timed iteration
        from tracekit.readers import read_trace

        assert meta["profiler_warmup_steps"] == 1
        names = read_trace(trace).ranges["name"].to_list()
        assert sorted(n for n in names if n.startswith("ProfilerStep#")) == [
            f"ProfilerStep#{i}" for i in range(1, 5)
        ]
        assert names.count("iteration") == 4 and "warmup" not in names
    with open(out / "latency.csv") as fh:
        rows = list(csv.DictReader(fh))
    timed = [float(r["latency_ms"]) for r in rows if r["set"] == profiler]
    assert len(timed) == 4 and len([r for r in rows if r["set"] == "untraced"]) == 4
    try:
        import tracekit

        analysis = tracekit.analyze(str(trace))
    except ModuleNotFoundError:  # an install without the analysis package
        return
    assert analysis.config.runtime == runtime
    latencies = analysis.iterations["latency_ms"].to_list()
    assert len(latencies) == 4  # warm-up runs left out (or skipped where the trace holds them)
    # the trace's iteration ranges and the harness' clock time the same iterations: each range lies inside the
    # span the harness timed (its NVTX push to its sync; whole-µs rounding aside), and holds a real part of it.
    # Not equal: on a loaded 2-core host (two test workers) the host work around a range was up to 61% of its
    # span (ORT: 1.382 ms traced of 3.560 ms timed; eager 2.988 of 5.331), where 25% had been asserted
    assert all(a <= t + 0.01 for a, t in zip(latencies, timed, strict=True)), (latencies, timed)
    assert statistics.median(latencies) >= 0.1 * statistics.median(timed), (latencies, timed)
    assert analysis.device == "cpu" and analysis.config.device == "cpu"  # measured and stated: no GPU


CPU_CASES = [
    ("pytorch", "torch"),
    ("torchscript", "torch"),
    ("onnx", "ort"),
]


@pytest.mark.parametrize(("runtime", "profiler"), CPU_CASES)
def test_cpu_runtime_under_its_profiler(runtime: str, profiler: str, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    if runtime == "onnx":
        pytest.importorskip("onnxruntime")
    out = tmp_path / "run"
    argv = [*TINY, "--batch-sizes", "2", "--profiler", profiler]
    assert main(["collect", "--runtime", runtime, *argv, "-o", str(out)]) == 0
    _check_run(out, runtime, profiler)


# -- traced/untraced ratios on medians -------------------------------------------------------------------------
def test_untraced_over_traced_check_uses_medians() -> None:
    """A stall (or the first run, dropped by the stability rules) must not fail the GPU validation's ratio."""
    from tracekit.collectors.validate import ratio_check

    stalled = {
        "untraced_latency_ms": {"mean": 27.6, "median": 11.0},  # one 182 ms run among 11 ms ones
        "traced_latency_ms": {"mean": 18.6, "median": 11.5},
    }
    check = ratio_check("t", "pytorch", stalled)
    assert check.ok is True and check.detail.startswith("0.957 ") and "medians" in check.detail
    faster = {"untraced_latency_ms": {"median": 6.0}, "traced_latency_ms": {"median": 5.0}}
    assert ratio_check("t", "pytorch", faster).ok is False


def test_perturbation_is_the_ratio_of_medians(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tracekit.collectors import sweep as sweep_mod

    sets = {
        "none": [100.0, 10.0, 10.0, 10.0, 10.0],  # a slow first run: the mean is 28, the median 10
        "torch": [11.0, 11.0, 11.0, 11.0, 11.0],
    }

    def worker(self: object, cfg: dict, tmp: Path, wrap: object = None) -> dict:
        result = {"latencies_ms": sets[cfg["profiler"]], "cpu_ms": [], "warnings": []}
        if cfg["profiler"] == "torch":
            Path(cfg["trace_out"]).write_text("trace")
            result["trace"] = cfg["trace_out"]
        return result

    monkeypatch.setattr(sweep_mod.Sweep, "_worker", worker)
    opts = sweep_mod.SweepOptions(
        model="tiny", device="cpu", profilers=["torch"], seq_lens=[8], out_dir=tmp_path / "r"
    )
    sweep = sweep_mod.Sweep(opts)
    monkeypatch.setattr("tracekit.collectors.environment.resolve_device", lambda *a: "cpu")
    sweep._prepare()
    entry = sweep._config(1, 8, lambda: None)
    assert entry["perturbation"]["torch"] == pytest.approx(1.1)  # not 11 / 28 = 0.39 ("tracing is faster")
