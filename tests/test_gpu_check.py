"""The air-gapped GPU check (benchmarks/gpu_check.py), its polars-free trace checks, and the collection defects
of issue 26 (each pinned with fakes of onnxruntime, nvtx and torch.cuda: no GPU needed).

The committed H200 traces (sample_traces/h200_bert_fp16) were written by this very check on a real GPU: the
tests read them with exact numbers."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import subprocess
import sys
import tarfile
import types
from pathlib import Path
from typing import Any

import pytest

from tracekit.collectors.kineto_check import empty_iteration_warnings, summarize


def _needs(*modules: str) -> None:
    """Skip the calling test where one of ``modules`` cannot be imported (an install without the collection
    extra: torch, transformers, onnx, onnxruntime)."""
    for module in modules:
        pytest.importorskip(module)


REPO = Path(__file__).resolve().parents[1]
H200 = REPO / "sample_traces" / "h200_bert_fp16"


def _load_gpu_check() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_check", REPO / "benchmarks" / "gpu_check.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the committed real traces, read without polars --------------------------------------------------------------
@pytest.mark.parametrize(
    ("trace", "kernels", "launches"),
    [
        ("pytorch/pytorch_b1_s128.torch.json.gz", 202, 0),
        ("pytorch/pytorch_b8_s128.torch.json.gz", 191, 0),
        ("torchscript/torchscript_b1_s128.torch.json.gz", 175, 0),
        ("cuda-graphs/cuda-graphs_b1_s128.torch.json.gz", 202, 1),
        ("compile/compile_b1_s128.torch.json.gz", 136, 0),
        ("compile-cudagraphs/compile-cudagraphs_b8_s128.torch.json.gz", 125, 1),
    ],
)
def test_kineto_check_on_real_h200_traces(trace: str, kernels: int, launches: int) -> None:
    summary = summarize(H200 / trace)
    assert len(summary.iterations) == 20
    assert summary.warmup_ranges == 0  # warm-up ran before the profiler started
    assert set(summary.kernels_per_iteration) == {kernels}
    assert set(summary.graph_launches_per_iteration) == {launches}
    assert summary.kernels_outside == 0 and summary.kernels_total == 20 * kernels
    assert empty_iteration_warnings(H200 / trace, "cuda:0") == []


def test_kineto_check_counts_by_launch_not_by_time(tmp_path: Path) -> None:
    """A kernel launched inside iteration 0 but running after its range belongs to iteration 0; a kernel whose
    launch is outside every range is counted outside."""
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "iteration", "ts": 0, "dur": 10},
        {"ph": "X", "cat": "user_annotation", "name": "iteration", "ts": 20, "dur": 10},
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "ts": 1,
            "dur": 1,
            "args": {"correlation": 7},
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaGraphLaunch",
            "ts": 21,
            "dur": 1,
            "args": {"correlation": 8},
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "ts": 15,
            "dur": 1,
            "args": {"correlation": 9},
        },
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 25, "dur": 3, "args": {"correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": "g", "ts": 22, "dur": 1, "args": {"correlation": 8}},
        {"ph": "X", "cat": "kernel", "name": "g", "ts": 23, "dur": 1, "args": {"correlation": 8}},
        {"ph": "X", "cat": "kernel", "name": "o", "ts": 16, "dur": 1, "args": {"correlation": 9}},
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    summary = summarize(path)
    assert summary.kernels_per_iteration == [1, 2]
    assert summary.graph_launches_per_iteration == [0, 1]
    assert summary.kernels_outside == 1 and summary.kernels_total == 4
    assert summary.kernel_names == {"k": 1, "g": 2, "o": 1}


def test_empty_iteration_warning_names_what_is_missing(tmp_path: Path) -> None:
    events = [{"ph": "X", "cat": "user_annotation", "name": "iteration", "ts": t, "dur": 5} for t in (0, 10)]
    events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 1})
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    assert empty_iteration_warnings(path, "cpu") == [
        "1 of 2 timed iterations hold no operator in the torch.profiler trace"
    ]
    assert empty_iteration_warnings(path, "cuda:0") == [
        "2 of 2 timed iterations hold no kernel in the torch.profiler trace"
    ]


# -- the check script ---------------------------------------------------------------------------------------------
def test_gpu_check_refuses_without_cuda_in_one_line() -> None:
    _needs("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is visible")
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "gpu_check.py"), "-o", "unused"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "gpu_check: needs a CUDA device, and this torch build has no CUDA"
    ]


def test_gpu_check_checks_on_the_committed_run(tmp_path: Path) -> None:
    """The checks the script runs on the box, run again on what came back: all pass, with the numbers."""
    gpu_check = _load_gpu_check()
    checks, names = gpu_check.kineto_checks(H200 / "cuda-graphs", "cuda-graphs", 20)
    failed = [c for c in checks if c["ok"] is False]
    assert not failed
    launches = [c for c in checks if c["check"] == "graph launches per iteration"]
    assert [c["detail"] for c in launches] == [
        "cuda-graphs b1: [1] (expected 1)",
        "cuda-graphs b8: [1] (expected 1)",
    ]
    precision = gpu_check.precision_checks({"cuda-graphs": names})
    assert precision[0]["ok"] is True and precision[0]["fp32_gemm_kernels"] == []
    ncu = gpu_check.ncu_checks(H200, 202)
    assert ncu[0]["ok"] is True and ncu[0]["detail"].startswith("606 kernels profiled, expected 606")


def test_gpu_check_nsys_checks_on_the_committed_nsys_runs(tmp_path: Path) -> None:
    """The nsys steps' checks (standard library only) on the real H200 nsys runs: 20 iterations of 202
    kernels, none launched outside them (the warm-up out of the capture range), one graph launch per CUDA-graph
    iteration and none for eager, GPU metrics sampled and verified."""
    import shutil

    gpu_check = _load_gpu_check()
    for step in ("nsys-pytorch", "nsys-cuda-graphs"):
        shutil.copytree(H200 / step, tmp_path / step)
    checks = gpu_check.nsys_checks(tmp_path, 20)
    assert [c for c in checks if c["ok"] is False] == []
    details = {(c["check"], c["detail"].split(":")[0]): c for c in checks}
    assert details[("graph launches per iteration", "nsys-cuda-graphs b1")]["detail"].endswith(
        "[1] (expected 1)"
    )
    assert details[("graph launches per iteration", "nsys-pytorch b1")]["detail"].endswith("[0] (expected 0)")
    assert details[("warm-up excluded", "nsys-pytorch b1")]["detail"] == (
        "nsys-pytorch b1: 0 of 4040 kernels launched outside the iterations"
    )
    summary = details[("summary", "nsys-pytorch b1")]
    assert summary["gpu_metric_samples"] == 390500 and summary["kernels_per_iteration"] == {
        "min": 202,
        "max": 202,
    }
    # bundled as one gzipped tar per step without the reports
    (tmp_path / "nsys-pytorch" / "x.nsys-rep").write_bytes(b"report")
    assert gpu_check.bundle_nsys(tmp_path) == ["nsys-pytorch.tar.gz", "nsys-cuda-graphs.tar.gz"]
    assert not (tmp_path / "nsys-pytorch").exists()
    with tarfile.open(tmp_path / "nsys-pytorch.tar.gz") as tar:
        names = tar.getnames()
    assert "nsys-pytorch/pytorch_b1_s128.nsys.sqlite.gz" in names and not any(
        n.endswith(".nsys-rep") for n in names
    )


def test_gpu_check_splits_an_nsys_bundle_over_the_returned_file_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step whose one tar would pass the limit (nsys-compile's 26 MB on the 2026-11-28 H200 loan) comes back
    as one tar per configuration, each with run.json and latency.csv and only its own exports; a step under the
    limit stays one tar."""
    import os

    gpu_check = _load_gpu_check()
    big = tmp_path / "nsys-compile"
    big.mkdir()
    for name in ("run.json", "latency.csv"):
        (big / name).write_text("{}")
    for config in ("compile_b1_s128", "compile_b8_s128"):
        (big / f"{config}.nsys.sqlite").write_bytes(os.urandom(3000))  # incompressible
        (big / f"{config}.nsys.meta.json").write_text("{}")
        (big / f"{config}.nsys.nsys-rep").write_bytes(b"report")
    small = tmp_path / "nsys-pytorch"
    small.mkdir()
    (small / "run.json").write_text("{}")
    (small / "pytorch_b1_s128.nsys.sqlite").write_bytes(b"x" * 3000)  # compresses well
    monkeypatch.setattr(gpu_check, "MAX_RETURNED_BYTES", 4000)
    assert gpu_check.bundle_nsys(tmp_path) == [
        "nsys-pytorch.tar.gz",
        "nsys-compile.compile_b1_s128.tar.gz",
        "nsys-compile.compile_b8_s128.tar.gz",
    ]
    assert not big.exists() and not small.exists() and not (tmp_path / "nsys-compile.tar.gz").exists()
    with tarfile.open(tmp_path / "nsys-compile.compile_b8_s128.tar.gz") as tar:
        assert sorted(tar.getnames()) == [
            "nsys-compile",
            "nsys-compile/compile_b8_s128.nsys.meta.json",
            "nsys-compile/compile_b8_s128.nsys.sqlite",
            "nsys-compile/latency.csv",
            "nsys-compile/run.json",
        ]


def test_nsys_check_counts_a_warm_up_left_in_the_capture(tmp_path: Path) -> None:
    """A synthetic export whose warm-up kernels were launched before the first iteration range."""
    from tracekit.collectors.nsys_check import summarize

    db = tmp_path / "warm.synthetic.sqlite"
    con = sqlite3.connect(db)
    con.executescript(
        "CREATE TABLE StringIds (id INT, value TEXT);"
        "INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'cudaGraphLaunch_v10000');"
        "CREATE TABLE NVTX_EVENTS (start INT, end INT, eventType INT, text TEXT, textId INT);"
        "INSERT INTO NVTX_EVENTS VALUES (100, 200, 59, 'iteration', NULL), (300, 400, 59, 'iteration', NULL);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT, end INT, correlationId INT, nameId INT);"
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (10, 12, 1, 1), (110, 112, 2, 1), (310, 312, 3, 2);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, correlationId INT);"
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (20, 30, 1), (120, 130, 2), (320, 330, 3), (331, 340, 3);"
    )
    con.close()
    s = summarize(db)
    assert s.kernels_per_iteration == [1, 2] and s.graph_launches_per_iteration == [0, 1]
    assert s.kernels_outside == 1 and s.gpu_metric_samples is None


def test_gpu_check_precision_flags_fp32_gemms() -> None:
    gpu_check = _load_gpu_check()
    names = {"pytorch": {"1": {"ampere_sgemm_128x64_tn": 1, "flash_fwd_kernel": 1}}}
    out = gpu_check.precision_checks(names)
    assert out[0]["ok"] is False and out[0]["fp32_gemm_kernels"] == ["ampere_sgemm_128x64_tn"]


def test_gpu_check_bundles_leave_out_huge_files(tmp_path: Path) -> None:
    gpu_check = _load_gpu_check()
    run = tmp_path / "pytorch-ncu"
    run.mkdir()
    (run / "run.json").write_text("{}")
    with open(run / "x.ncu-rep", "wb") as fh:
        fh.truncate(gpu_check.MAX_BUNDLED_BYTES + 1)
    (tmp_path / "pytorch").mkdir()
    (tmp_path / "pytorch" / "run.json").write_text("{}")
    assert gpu_check.bundle(tmp_path, ["pytorch", "torchscript", "pytorch-ncu"]) == "runs.tar.gz"
    with tarfile.open(tmp_path / "runs.tar.gz") as tar:
        assert sorted(tar.getnames()) == [
            "pytorch",
            "pytorch-ncu",
            "pytorch-ncu/run.json",
            "pytorch/run.json",
        ]
    assert not run.exists() and not (tmp_path / "pytorch").exists()
    assert gpu_check.bundle(tmp_path, ["pytorch"]) is None


def test_gpu_check_runs_tracekit_outside_the_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python -m` puts the working folder first on sys.path; in the checkout its tracekit/ (without
    tracekit.collectors) would shadow an installed tracekit, so steps run in the output folder."""
    gpu_check = _load_gpu_check()
    seen: dict[str, Any] = {}

    def fake_run(argv: list[str], **kwargs: Any) -> Any:
        seen.update(kwargs, argv=argv)
        return types.SimpleNamespace(returncode=0, stdout="", stderr="")

    monkeypatch.setattr(gpu_check.subprocess, "run", fake_run)
    gpu_check.run_step(["doctor"], 5, tmp_path)
    assert seen["cwd"] == tmp_path and seen["argv"][1:] == ["-m", "tracekit.cli", "doctor"]


def test_worker_pythonpath_is_the_package_parent() -> None:
    from tracekit.collectors import sweep

    assert (sweep.PACKAGE_ROOT / "tracekit" / "__init__.py").is_file()


# -- issue 26, section 2 ------------------------------------------------------------------------------------------
def test_dependency_floors() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    deps = project["dependencies"]
    extras = project["optional-dependencies"]
    assert "nvtx>=0.2.11" in deps  # Domain.get_event_attributes
    for extra, ort in (("collect", "onnxruntime>=1.18"), ("gpu", "onnxruntime-gpu>=1.18")):
        assert ort in extras[extra]  # use_tf32 is always passed to the CUDA provider
        assert "torch>=2.6" in extras[extra]


class _FallingBackOrt:
    """onnxruntime whose CUDA provider rejects an option: its wrapper prints "EP Error" and retries on CPU."""

    __version__ = "1.17.3"

    @staticmethod
    def get_available_providers() -> list[str]:
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]

    class InferenceSession:
        def __init__(self, model: Any, sess_options: Any = None, providers: Any = None) -> None:
            print("*************** EP Error ***************")
            print(
                "EP Error [ONNXRuntimeError] : 1 : FAIL : Unknown option: use_tf32\n when using "
                "[('CUDAExecutionProvider', {'use_tf32': '0'})]"
            )
            print("Falling back to ['CPUExecutionProvider'] and retrying.")

        @staticmethod
        def get_providers() -> list[str]:
            return ["CPUExecutionProvider"]


def test_ort_fallback_quotes_its_ep_error(capsys: pytest.CaptureFixture[str]) -> None:
    from tracekit.collectors.runtimes.onnx import create_session, require_cuda_session
    from tracekit.errors import TracekitError

    session, error = create_session(_FallingBackOrt, "m.onnx", providers=["CUDAExecutionProvider"])
    assert error == "[ONNXRuntimeError] : 1 : FAIL : Unknown option: use_tf32"
    assert capsys.readouterr().out == ""  # ORT's banner is not passed on: the error line says it
    with pytest.raises(TracekitError) as info:
        require_cuda_session(_FallingBackOrt, session, error=error)
    assert info.value.message == (
        "onnxruntime 1.17.3 could not create its CUDA provider and fell back to the CPU; its own words: "
        "EP Error [ONNXRuntimeError] : 1 : FAIL : Unknown option: use_tf32"
    )


def test_ort_newer_ep_error_spelling() -> None:
    from tracekit.collectors.runtimes.onnx import ep_error

    assert ep_error("EP Error: CUDA failure 35 using ['CUDAExecutionProvider']\n") == "CUDA failure 35"
    assert ep_error("nothing to see") is None


def test_ort_and_torch_choose_conv_algorithms_alike() -> None:
    _needs("torch")
    import torch

    from tracekit.collectors.runtimes.onnx import cuda_provider_options
    from tracekit.collectors.worker import apply_tf32

    assert cuda_provider_options(0, False, False)["cudnn_conv_algo_search"] == "HEURISTIC"
    torch.backends.cudnn.benchmark = True
    try:
        assert apply_tf32(False)["torch_cudnn_benchmark"] is False
        assert torch.backends.cudnn.benchmark is False
    finally:
        torch.backends.cudnn.benchmark = False


def test_run_json_records_the_conv_rule(tmp_path: Path) -> None:
    _needs("torch")
    from tracekit.cli import main

    out = tmp_path / "run"
    argv = [
        "collect",
        "--model",
        "tiny",
        "--device",
        "cpu",
        "--seq-lens",
        "8",
        "--iters",
        "2",
        "--warmup",
        "1",
    ]
    assert main([*argv, "--profiler", "none", "--in-process", "-o", str(out)]) == 0
    run = json.loads((out / "run.json").read_text())
    assert run["conv_algorithms"]["onnxruntime_cudnn_conv_algo_search"] == "HEURISTIC"
    assert run["conv_algorithms"]["torch_cudnn_benchmark"] is False


def test_old_nvtx_without_get_event_attributes_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """nvtx 0.2.5-0.2.10 lack Domain.get_event_attributes: the emitter must not crash at its first range."""
    pushed: list[str] = []

    class Domain:  # no get_event_attributes
        pass

    lib = types.SimpleNamespace(Domain=Domain, DomainHandle=lambda name: object())
    fake_lib_module = types.ModuleType("nvtx._lib")
    fake_lib_module.lib = lib  # type: ignore[attr-defined]
    fake_nvtx = types.ModuleType("nvtx")
    fake_nvtx.push_range = lambda name: pushed.append(name)  # type: ignore[attr-defined]
    fake_nvtx.pop_range = lambda: pushed.append("pop")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nvtx", fake_nvtx)
    monkeypatch.setitem(sys.modules, "nvtx._lib", fake_lib_module)
    from tracekit.collectors.harness import Nvtx

    emitter = Nvtx()
    assert emitter.method == "nvtx-public"
    with emitter.range("iteration"):
        pass
    assert pushed == ["iteration", "pop"]


def test_ncu_runs_push_plain_strings(monkeypatch: pytest.MonkeyPatch) -> None:
    """ncu's --nvtx-include matches plain push/pop messages: ncu runs use torch.cuda.nvtx (nvtxRangePushA)."""
    _needs("torch")
    import torch

    from tracekit.collectors import harness
    from tracekit.collectors import sweep as sweep_mod

    calls: list[str] = []
    monkeypatch.setattr(torch.cuda.nvtx, "range_push", lambda name: calls.append(name))
    monkeypatch.setattr(torch.cuda.nvtx, "range_pop", lambda: calls.append("pop"))
    monkeypatch.setattr(harness, "_NVTX", None)
    emitter = harness.use_plain_nvtx()
    assert emitter.method == "torch-cuda-nvtx" and harness.nvtx_ranges() is emitter
    emitter.push("iteration")
    emitter.pop()
    assert calls[-2:] == ["iteration", "pop"]
    monkeypatch.setenv("TRACEKIT_NCU", "/fake/ncu")
    sweep = sweep_mod.Sweep(sweep_mod.SweepOptions(model="tiny", device="cpu", profilers=["none"]))
    sweep.device = "cuda:0"
    assert sweep._cfg(1, 16, "ncu")["nvtx"] == "plain"
    assert "nvtx" not in sweep._cfg(1, 16, "nsys")


def test_doctor_probe_model_pins_its_ir_version() -> None:
    onnx = pytest.importorskip("onnx")
    from tracekit.collectors.doctor import PROBE_IR_VERSION, _tiny_onnx

    model = onnx.load_from_string(_tiny_onnx())
    assert model.ir_version == PROBE_IR_VERSION == 8


def test_nsys_records_from_the_capture_range(monkeypatch: pytest.MonkeyPatch) -> None:
    _needs("torch")
    from tracekit.collectors import worker
    from tracekit.collectors.profilers.nsys import build_profile_argv

    argv = build_profile_argv("nsys", "out", ["py"], cuda=True)
    assert "--capture-range=cudaProfilerApi" in argv and "--capture-range-end=stop" in argv
    assert not any(a.startswith("--capture-range") for a in build_profile_argv("nsys", "o", [], cuda=False))

    order: list[str] = []

    class Fake:
        eager_torch = False

        def run(self) -> None:
            order.append("run")

        def sync(self) -> None:
            pass

    monkeypatch.setattr(worker, "start_capture", lambda: order.append("start"))
    cfg = {"warmup": 1, "iters": 2}
    out = worker._timed(Fake(), cfg, "cuda:0", "nsys")
    # after prepare (export, capture) and the warm-up: the trace holds the profiler warm-up step, then the
    # timed iterations; the sidecar names the one before them (analyze drops it)
    assert order == ["run", "start", "run", "run", "run"]
    assert out["runs_before_timed"] == out["profiler_warmup_steps"] == worker.PROFILER_WARMUP_STEPS == 1
    assert len(out["latencies_ms"]) == 2
    order.clear()
    out = worker._timed(Fake(), cfg, "cpu", "nsys")
    assert order == ["run", "run", "run"] and "runs_before_timed" not in out


def test_nsys_sidecar_names_the_profiler_warm_up_step_in_the_trace() -> None:
    """The sidecar of an nsys run on CUDA says the trace holds PROFILER_WARMUP_STEPS iterations before the
    timed ones (analyze drops them by default, as for ORT); a torch.profiler run's discarded step is not in
    its trace."""
    import types

    from tracekit.collectors.sweep import Sweep

    opts = types.SimpleNamespace(
        runtime="cuda-graphs", model="bert-base", precision="fp16", iters=2, warmup=10, tf32=False,
        layers=None, hidden=None,
    )  # fmt: skip
    stub = types.SimpleNamespace(
        opts=opts, device="cuda:0", gpu={"name": "NVIDIA H200"}, run={"cpu": "x", "versions": {}}
    )
    nsys = {"latencies_ms": [1.0, 1.0], "runs_before_timed": 1, "profiler_warmup_steps": 1}
    meta = Sweep._meta(stub, "nsys", 1, 128, {}, nsys, {})  # type: ignore[arg-type]
    assert (meta["warmup_in_trace"], meta["warmup_iterations"], meta["iterations"]) == (True, 1, 2)
    assert meta["warmup_runs"] == 10 and meta["profiler_warmup_steps"] == 1
    torch_run = {"latencies_ms": [1.0, 1.0], "profiler_warmup_steps": 1}
    meta = Sweep._meta(stub, "torch", 1, 128, {}, torch_run, {})  # type: ignore[arg-type]
    assert (meta["warmup_in_trace"], meta["warmup_iterations"]) == (False, 10)
    stub.device = "cpu"
    meta = Sweep._meta(stub, "nsys", 1, 128, {}, {"latencies_ms": [1.0, 1.0]}, {})  # type: ignore[arg-type]
    assert (meta["warmup_in_trace"], meta["warmup_iterations"]) == (False, 10)


def _metrics_db(path: Path, type_ids: list[int] | None) -> Path:
    con = sqlite3.connect(path)
    if type_ids is not None:
        con.execute("CREATE TABLE GPU_METRICS (timestamp INT, typeId INT, metricId INT, value INT)")
        con.executemany(
            "INSERT INTO GPU_METRICS VALUES (?, ?, 0, 1)", [(i, t) for i, t in enumerate(type_ids)]
        )
    else:
        con.execute("CREATE TABLE GENERIC_EVENTS (x INT)")
    con.commit()
    con.close()
    return path


def test_gpu_metrics_verified_on_the_first_trace(tmp_path: Path) -> None:
    from tracekit.collectors.profilers.nsys import verify_gpu_metrics

    # typeId's low byte is the GPU id (here 0x100 | 1 = GPU 1)
    assert verify_gpu_metrics(_metrics_db(tmp_path / "a.sqlite", [0x101, 0x101]), 1) == (
        True,
        "2 samples from GPU 1",
    )
    assert verify_gpu_metrics(_metrics_db(tmp_path / "b.sqlite", [0x100]), 1) == (
        False,
        "the trace holds GPU-metric samples of GPU [0], not of GPU 1",
    )
    ok, why = verify_gpu_metrics(_metrics_db(tmp_path / "c.sqlite", []), 0)
    assert ok is False and "holds no sample" in why
    ok, why = verify_gpu_metrics(_metrics_db(tmp_path / "d.sqlite", None), 0)
    assert ok is None and why.startswith("unverified")


def test_sweep_turns_metrics_off_when_the_trace_has_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracekit.collectors import sweep as sweep_mod

    sweep = sweep_mod.Sweep(sweep_mod.SweepOptions(model="tiny", device="cpu", profilers=["none"]))
    sweep.gpu_metrics = {"permitted": True}
    sweep.gpu_metrics_device = 0
    sweep.notes = []
    sweep._verify_gpu_metrics(_metrics_db(tmp_path / "t.sqlite", []))
    assert sweep.gpu_metrics["verified"] is False and sweep.gpu_metrics["permitted"] is False
    assert sweep.gpu_metrics_device is None
    assert sweep.notes[0].startswith("nsys GPU metrics turned off after the first trace:")


def test_collection_imports_no_analysis_stack(tmp_path: Path) -> None:
    """A GPU box's image may lack polars, msgspec and nvtx: collection (and its torch.profiler check) must not
    import them."""
    script = (
        "import sys\n"
        "for m in ('polars', 'msgspec', 'nvtx', 'orjson', 'matplotlib', 'adbc_driver_sqlite'):\n"
        "    sys.modules[m] = None\n"
        "from tracekit.cli import main\n"
        "rc = main(sys.argv[1:])\n"
        "assert not any(k.startswith('polars') and sys.modules[k] is not None for k in sys.modules)\n"
        "sys.exit(rc)\n"
    )
    argv = [
        "collect",
        "--model",
        "tiny",
        "--device",
        "cpu",
        "--seq-lens",
        "8",
        "--iters",
        "2",
        "--warmup",
        "1",
    ]
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-c", script, *argv, "--profiler", "torch", "--in-process", "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    meta = json.loads((out / "pytorch_b1_s8.torch.meta.json").read_text())
    assert meta["warnings"] == [] and meta["nvtx"] in ("torch-cuda-nvtx", "none")


def test_gpu_check_runs_the_nsys_steps_when_an_nsys_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gpu_check = _load_gpu_check()
    ran: list[list[str]] = []

    def fake_step(argv: list[str], timeout: float, cwd: Path) -> dict[str, Any]:
        ran.append(argv)
        return {"argv": argv, "rc": 0}

    monkeypatch.setattr(gpu_check, "preflight", lambda device: None)
    monkeypatch.setattr(gpu_check, "environment", lambda device: {})
    monkeypatch.setattr(gpu_check, "run_step", fake_step)
    # main() sets these in os.environ itself: set then delete through monkeypatch, so that its undo removes
    # them (a delenv of an absent variable records nothing, and the fake nsys path had leaked into later tests)
    for name in ("TRACEKIT_NSYS", "TRACEKIT_NO_PROGRESS"):
        monkeypatch.setenv(name, "unset by the test")
        monkeypatch.delenv(name)
    for found, expect_nsys in (
        ("/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys", True),
        (None, False),
    ):
        ran.clear()
        monkeypatch.setattr(gpu_check, "nsys_for_check", lambda found=found: found)
        assert gpu_check.main(["-o", str(tmp_path / str(expect_nsys)), "--no-bundle"]) == 0
        summary = json.loads((tmp_path / str(expect_nsys) / "gpu_check.json").read_text())
        nsys_runs = [a for a in ran if "nsys" in a]
        if expect_nsys:
            assert [a[a.index("-o") + 1].rsplit("/", 1)[1] for a in nsys_runs] == [
                "nsys-pytorch",
                "nsys-cuda-graphs",
                "nsys-torchscript",
                "nsys-compile",
            ]
            assert not any("--in-process" in a for a in nsys_runs)
            assert "left out" in summary["steps"]["onnx-cpu"]  # the time budget
            assert gpu_check.os.environ["TRACEKIT_NSYS"] == found
        else:
            assert nsys_runs == [] and "left out" in summary["steps"]["nsys-pytorch"]
            assert summary["steps"]["onnx-cpu"]["rc"] == 0
        monkeypatch.delenv("TRACEKIT_NSYS", raising=False)


def test_gpu_check_counts_the_profiler_warm_up_step_an_nsys_sidecar_names(tmp_path: Path) -> None:
    gpu_check = _load_gpu_check()
    trace = tmp_path / "cuda-graphs_b1_s128.nsys.sqlite.gz"
    assert gpu_check._runs_before_timed(trace) == 0  # no sidecar
    sidecar = tmp_path / "cuda-graphs_b1_s128.nsys.meta.json"
    sidecar.write_text(json.dumps({"warmup_in_trace": True, "warmup_iterations": 1}))
    assert gpu_check._runs_before_timed(trace) == 1
    assert gpu_check._runs_before_timed(tmp_path / "cuda-graphs_b1_s128.nsys.sqlite") == 1
    sidecar.write_text(json.dumps({"warmup_in_trace": False, "warmup_iterations": 10}))
    assert gpu_check._runs_before_timed(trace) == 0
    sidecar.write_text(json.dumps({"warmup_in_trace": True, "warmup_iterations": "one"}))
    assert gpu_check._runs_before_timed(trace) == 0
