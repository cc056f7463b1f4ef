"""The CUDA collection paths, tested without a GPU: torch.cuda, onnxruntime, NVML and the nsys/ncu command
lines are replaced by fakes that record what tracekit asks of them (issue 10, defects 1-11)."""

from __future__ import annotations

import contextlib
import gzip
import json
import stat
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from tests.test_collect import TINY
from tracekit.cli import main
from tracekit.errors import RunFailure, TracekitError


def _needs(*modules: str) -> None:
    """Skip the calling test where one of ``modules`` cannot be imported (an install without the collection
    extra: torch, transformers, onnx, onnxruntime)."""
    for module in modules:
        pytest.importorskip(module)


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path_factory.getbasetemp() / "tracekit-cache"))


def _err_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def _tiny_cfg(**over: Any) -> dict[str, Any]:
    cfg = {
        "model": "tiny",
        "layers": 1,
        "hidden": None,
        "runtime": "pytorch",
        "device": "cpu",
        "precision": "fp32",
        "batch_size": 1,
        "seq_len": 8,
        "warmup": 1,
        "iters": 3,
        "profiler": "none",
        "trace_out": None,
    }
    cfg.update(over)
    return cfg


# -- defect 1: every runtime runs, syncs and captures on cuda:N ----------------------------------------------
class _Stop(Exception):
    pass


def test_worker_makes_the_requested_device_current(monkeypatch: pytest.MonkeyPatch) -> None:
    _needs("torch", "transformers")
    import torch

    from tracekit.collectors import worker

    calls: list[Any] = []
    monkeypatch.setattr(torch.cuda, "set_device", lambda d: calls.append(("set_device", d)))

    def model(*a: Any, **k: Any) -> Any:
        calls.append(("build", a[1]))
        raise _Stop

    monkeypatch.setattr(worker, "get_model", model)
    with pytest.raises(_Stop):
        worker.run_config(_tiny_cfg(device="cuda:1"))
    assert calls == [("set_device", 1), ("build", "cuda:1")]  # current device set before anything is built


def test_sync_waits_on_the_runs_device(monkeypatch: pytest.MonkeyPatch) -> None:
    _needs("torch", "transformers")
    import torch

    from tracekit.collectors.runtimes.base import RunContext, Runtime

    synced: list[Any] = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: synced.append(device))
    rt = Runtime()
    rt.prepare(RunContext(model=None, inputs=(), device="cuda:2", precision="fp32"))
    rt.sync()
    assert synced == ["cuda:2"]


class _FakeStream:
    def __init__(self, log: list[Any], device: Any = None) -> None:
        self.device = device
        self.log = log

    def wait_stream(self, other: Any) -> None:
        self.log.append(("wait_stream", str(getattr(other, "device", None))))


def _fake_cuda(monkeypatch: pytest.MonkeyPatch, log: list[Any]) -> None:
    import torch

    @contextlib.contextmanager
    def ctx(name: str, arg: Any) -> Any:
        log.append((name, str(arg)))
        yield

    monkeypatch.setattr(
        torch.cuda,
        "Stream",
        lambda device=None, **k: log.append(("Stream", str(device))) or _FakeStream(log, device),
    )
    monkeypatch.setattr(
        torch.cuda,
        "current_stream",
        lambda device=None: log.append(("current_stream", str(device))) or _FakeStream(log, device),
    )
    monkeypatch.setattr(torch.cuda, "stream", lambda s: ctx("stream", s.device))
    monkeypatch.setattr(torch.cuda, "device", lambda d: ctx("device", d))
    monkeypatch.setattr(torch.cuda, "graph", lambda g, **k: ctx("graph", "capture"))
    monkeypatch.setattr(
        torch.cuda, "CUDAGraph", lambda: types.SimpleNamespace(replay=lambda: log.append(("replay", "")))
    )
    monkeypatch.setattr(
        torch.cuda, "synchronize", lambda device=None: log.append(("synchronize", str(device)))
    )


def test_cuda_graphs_warms_up_and_captures_on_the_requested_device(monkeypatch: pytest.MonkeyPatch) -> None:
    _needs("torch", "transformers")
    import torch

    from tracekit.collectors.runtimes.base import RunContext
    from tracekit.collectors.runtimes.cuda_graphs import CAPTURE_WARMUP, CudaGraphsRuntime

    log: list[Any] = []
    _fake_cuda(monkeypatch, log)
    runs: list[int] = []
    model = types.SimpleNamespace(module=lambda *x: runs.append(1) or x[0])
    rt = CudaGraphsRuntime()
    rt.prepare(RunContext(model=model, inputs=(torch.ones(2),), device="cuda:1", precision="fp32"))
    rt.run()
    rt.sync()
    assert len(runs) == CAPTURE_WARMUP + 1
    devices = {arg for name, arg in log if name in ("Stream", "current_stream", "device", "synchronize")}
    assert devices == {"cuda:1"}, log  # nothing falls back to the current (default) device
    assert (
        ("Stream", "cuda:1") in log
        and ("graph", "capture") in log
        and log[-2:]
        == [
            ("replay", ""),
            ("synchronize", "cuda:1"),
        ]
    )


# -- defect 2 and 3: ORT's CUDA provider really loaded; TF32 the same for torch and ORT ------------------------
def _fake_ort(monkeypatch: pytest.MonkeyPatch, session_providers: list[str]) -> dict[str, Any]:
    seen: dict[str, Any] = {"preload": 0}

    class Session:
        def __init__(self, path: str, sess_options: Any = None, providers: Any = None) -> None:
            seen["providers"] = providers

        def get_providers(self) -> list[str]:
            return session_providers

        def get_inputs(self) -> list[Any]:
            raise _Stop  # the test ends once the session is checked

    fake = types.SimpleNamespace(
        SessionOptions=lambda: types.SimpleNamespace(),
        InferenceSession=Session,
        get_available_providers=lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"],
        preload_dlls=lambda: seen.__setitem__("preload", seen["preload"] + 1),
        __version__="1.22.0",
    )
    monkeypatch.setitem(sys.modules, "onnxruntime", fake)
    from tracekit.collectors.runtimes import onnx as onnx_mod

    monkeypatch.setattr(onnx_mod, "export_onnx", lambda *a, **k: Path("/nonexistent/tiny.onnx"))
    return seen


def _onnx_ctx(device: str = "cuda:0", tf32: bool = False) -> Any:
    from tracekit.collectors.runtimes.base import RunContext

    return RunContext(model=None, inputs=(), device=device, precision="fp32", tf32=tf32)


def test_ort_session_that_fell_back_to_cpu_fails_in_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracekit.collectors.runtimes import onnx as onnx_mod

    seen = _fake_ort(monkeypatch, ["CPUExecutionProvider"])
    monkeypatch.setattr(onnx_mod, "_pkg_version", {"onnxruntime": "1.22.0", "onnxruntime-gpu": "1.22.0"}.get)
    with pytest.raises(TracekitError) as info:
        onnx_mod.OnnxRuntime().prepare(_onnx_ctx())
    message = info.value.message
    assert "\n" not in message
    assert message.startswith(
        "onnxruntime created the session on CPUExecutionProvider, not CUDAExecutionProvider"
    )
    assert "both onnxruntime 1.22.0 and onnxruntime-gpu 1.22.0 are installed" in message
    assert "pip install onnxruntime-gpu" in message
    assert seen["preload"] == 1  # preload_dlls() before the session, where ORT has it


def test_ort_cuda_provider_gets_device_and_tf32_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracekit.collectors.runtimes import onnx as onnx_mod

    seen = _fake_ort(monkeypatch, ["CUDAExecutionProvider", "CPUExecutionProvider"])
    with pytest.raises(_Stop):  # the provider check passed; binding starts
        onnx_mod.OnnxRuntime().prepare(_onnx_ctx("cuda:3", tf32=False))
    conv = {"cudnn_conv_algo_search": "HEURISTIC"}  # as torch's cudnn.benchmark = False
    assert seen["providers"] == [("CUDAExecutionProvider", {"device_id": "3", "use_tf32": "0", **conv})]
    with pytest.raises(_Stop):
        onnx_mod.OnnxCudaGraphsRuntime().prepare(_onnx_ctx("cuda:0", tf32=True))
    assert seen["providers"] == [
        ("CUDAExecutionProvider", {"device_id": "0", "use_tf32": "1", **conv, "enable_cuda_graph": "1"})
    ]


def test_cpu_only_onnxruntime_is_named_with_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracekit.collectors.runtimes import onnx as onnx_mod

    monkeypatch.setattr(onnx_mod, "_pkg_version", {"onnxruntime": "1.22.0"}.get)
    line = onnx_mod.cuda_provider_problem(None, ["CPUExecutionProvider"])
    assert line.endswith(
        "this is the CPU build of onnxruntime; install onnxruntime-gpu (pip install 'tracekit[gpu]')"
    )


def test_cpu_build_without_the_cuda_provider_names_its_providers_not_a_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seen on the H200 image (onnxruntime 1.30.0, CPU build): collect --runtime onnx --device cuda:0 was
    refused before any session, but the line said 'created the session on AzureExecutionProvider', the first
    of the build's available providers, which no session had run on."""
    from tracekit.collectors.runtimes import onnx as onnx_mod

    seen = _fake_ort(monkeypatch, ["CPUExecutionProvider"])
    sys.modules["onnxruntime"].get_available_providers = lambda: [
        "AzureExecutionProvider",
        "CPUExecutionProvider",
    ]
    monkeypatch.setattr(onnx_mod, "_pkg_version", {"onnxruntime": "1.30.0"}.get)
    with pytest.raises(TracekitError) as info:
        onnx_mod.OnnxRuntime().prepare(_onnx_ctx())
    assert info.value.message == (
        "onnxruntime 1.22.0 has no CUDAExecutionProvider (its providers: AzureExecutionProvider, "
        "CPUExecutionProvider): this is the CPU build of onnxruntime; install onnxruntime-gpu "
        "(pip install 'tracekit[gpu]')"
    )
    assert "providers" not in seen  # refused before any session was made


def test_tf32_and_attention_recorded_and_applied(tmp_path: Path) -> None:
    _needs("torch", "transformers")
    import torch

    from tracekit.collectors.zoo import attention_path

    for flag, expected in (([], False), (["--tf32"], True)):
        out = tmp_path / f"run{expected}"
        argv = ["collect", "--runtime", "pytorch", *TINY, "--profiler", "none", "-o", str(out), *flag]
        assert main(argv) == 0
        run = json.loads((out / "run.json").read_text())
        assert run["tf32"]["enabled"] is expected
        assert (
            torch.backends.cuda.matmul.allow_tf32 is expected and torch.backends.cudnn.allow_tf32 is expected
        )
        assert run["attention"] == attention_path("tiny")
        assert run["attention"].startswith("sdpa with a 4-D boolean padding mask")
    torch.backends.cudnn.allow_tf32 = True  # torch's default, for the other tests


# -- defect 4: emit_nvtx entered once around the timed loop --------------------------------------------------
def test_operator_ranges_entered_once_around_the_timed_loop() -> None:
    from tracekit.collectors.harness import time_iterations

    events: list[str] = []

    @contextlib.contextmanager
    def op_ranges() -> Any:
        events.append("enter")
        yield
        events.append("exit")

    latencies = time_iterations(lambda: events.append("run"), lambda: None, 2, 4, op_ranges=op_ranges)
    assert len(latencies) == 4
    assert events == ["run", "run", "enter", "run", "run", "run", "run", "exit"]


# -- defect 5: one attention path in every runtime, and the warm-up runs what capture records ------------------
def _aten_ops(fn: Any) -> list[str]:
    from torch.utils._python_dispatch import TorchDispatchMode

    names: list[str] = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            name = func.overloadpacket.__name__
            if "scaled_dot_product" in name:
                mask = (kwargs or {}).get("attn_mask", args[3] if len(args) > 3 else None)
                name += "[masked]" if mask is not None else "[unmasked]"
            names.append(name)
            return func(*args, **(kwargs or {}))

    with Record():
        fn()
    return names


def test_eager_and_capture_run_the_same_masked_attention(monkeypatch: pytest.MonkeyPatch) -> None:
    _needs("torch", "transformers")
    import torch

    from tracekit.collectors.inputs import make_inputs
    from tracekit.collectors.zoo import ModelSpec, build

    model = build(ModelSpec("tiny", layers=1))
    inputs = make_inputs(model, 2, 8, "cpu", "fp32")
    with torch.inference_mode():
        eager = _aten_ops(lambda: model.module(*inputs))
        # what transformers sees during CUDA-graph capture (its is_tracing() asks this)
        monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
        captured = _aten_ops(lambda: model.module(*inputs))
    assert eager == captured
    assert any(n.endswith("[masked]") for n in eager) and not any(n.endswith("[unmasked]") for n in eager)
    assert "_local_scalar_dense" not in eager  # no device-to-host sync to decide the mask


def test_wrapper_masks_give_transformers_results() -> None:
    _needs("torch", "transformers")
    import torch

    from tracekit.collectors.inputs import make_inputs
    from tracekit.collectors.zoo import ModelSpec, build

    bert = build(ModelSpec("tiny"))
    ids, mask = make_inputs(bert, 2, 8, "cpu", "fp32")
    mask = mask.clone()
    mask[0, 5:] = 0  # padding in one row
    gpt = build(ModelSpec("gpt2", layers=1, hidden=64))
    gids, gmask = make_inputs(gpt, 1, 6, "cpu", "fp32")
    with torch.inference_mode():
        ours = bert.module(ids, mask)
        theirs = bert.module.model(input_ids=ids, attention_mask=mask).last_hidden_state
        gours = gpt.module.model(input_ids=gids, attention_mask=gpt.module.mask(gids, gmask), use_cache=False)
        gtheirs = gpt.module.model(input_ids=gids, attention_mask=gmask, use_cache=False)
    assert torch.equal(ours[1], theirs[1]) and torch.allclose(ours[0, :5], theirs[0, :5], atol=1e-6)
    assert torch.allclose(gours.logits, gtheirs.logits, atol=1e-5)


def test_transformers_floor_is_a_capture_safe_5x() -> None:
    import re

    tomllib = pytest.importorskip("tomllib")
    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    for extra in ("collect", "gpu"):
        floors = [
            d for d in pyproject["project"]["optional-dependencies"][extra] if d.startswith("transformers")
        ]
        match = re.match(r"transformers>=(\d+)", floors[0])
        assert match and int(match.group(1)) >= 5, floors


# -- defect 6: GPU-metrics and ncu permission probes -----------------------------------------------------------
NSYS_HELP_OK = """Possible --gpu-metrics-devices values are:
\t0: NVIDIA H100 80GB HBM3 PCI[0000:19:00.0]
\t1: NVIDIA H100 80GB HBM3 PCI[0000:3b:00.0]
\tall: Select all supported GPUs
\tnone: Disable GPU Metrics [Default]
"""
NSYS_HELP_PERM = """Possible --gpu-metrics-device values are:
\t0: NVIDIA A100-SXM4-40GB PCI[0000:07:00.0]
Insufficient privilege, see https://developer.nvidia.com/ERR_NVGPUCTRPERM
"""


def test_parse_gpu_metrics_help() -> None:
    from tracekit.collectors.gpu import parse_gpu_metrics_help

    ok = parse_gpu_metrics_help(NSYS_HELP_OK)
    assert ok.permitted and ok.devices == {"0000:19:00.0": 0, "0000:3b:00.0": 1}
    refused = parse_gpu_metrics_help(NSYS_HELP_PERM)
    assert not refused.permitted and "ERR_NVGPUCTRPERM" in refused.reason
    none = parse_gpu_metrics_help(
        "Possible --gpu-metrics-device values are:\n\tNVIDIA GPUs not found, feature is not available\n"
    )
    assert not none.permitted and none.reason == "NVIDIA GPUs not found, feature is not available"


def test_parse_ncu_probe() -> None:
    from tracekit.collectors.gpu import parse_ncu_probe

    perm = "==PROF== Connected to process 7\n==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on the target device 0.\n"
    refused = parse_ncu_probe(1, perm)
    assert not refused.permitted and refused.reason.startswith(
        "no access to GPU performance counters (==ERROR== ERR_NVGPUCTRPERM"
    )
    ok = parse_ncu_probe(
        0, '==PROF== Connected to process 7\n==PROF== Profiling "kernel": 0%....100% - 1 pass\n'
    )
    assert ok.permitted and ok.reason is None
    assert not parse_ncu_probe(0, "no kernels\n").permitted


def _cuda_sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, profilers: list[str]) -> Any:
    """A Sweep that believes it runs on cuda:0 (device resolution, GPU identity and probes faked)."""
    from tracekit.collectors import environment, gpu
    from tracekit.collectors import sweep as sweep_mod
    from tracekit.collectors.gpu import ProbeResult

    monkeypatch.setenv("TRACEKIT_NSYS", "/fake/nsys")
    monkeypatch.setenv("TRACEKIT_NCU", "/fake/ncu")
    monkeypatch.setattr(environment, "resolve_device", lambda *a: "cuda:0")
    monkeypatch.setattr(
        environment,
        "gpu_for",
        lambda dev, listing=None: {"name": "Fake GPU", "nsys_gpu_id": 1, "device_map": {"cuda_index": 0}},
    )
    refused = ProbeResult(False, "no access to GPU performance counters (ERR_NVGPUCTRPERM)")
    monkeypatch.setattr(gpu, "probe_nsys_gpu_metrics", lambda nsys, version=None: refused)
    monkeypatch.setattr(gpu, "probe_ncu_counters", lambda ncu: refused)
    monkeypatch.setattr("tracekit.collectors.profilers.nsys.nsys_version", lambda nsys: "2024.5.1")
    opts = sweep_mod.SweepOptions(
        runtime="pytorch", model="tiny", profilers=profilers, out_dir=tmp_path / "run", device="cuda"
    )
    return sweep_mod.Sweep(opts)


def test_refused_gpu_metrics_and_counters_keep_the_run_and_say_why_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _needs("torch", "transformers")
    sweep = _cuda_sweep(tmp_path, monkeypatch, ["nsys", "ncu"])
    sweep._prepare()
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["gpu_metrics"]["permitted"] is False and "ERR_NVGPUCTRPERM" in run["gpu_metrics"]["reason"]
    assert run["ncu_counters"]["permitted"] is False
    assert sweep.profilers == ["nsys"] and sweep.gpu_metrics_device is None
    assert run["notes"] == [
        "nsys runs without GPU metrics: no access to GPU performance counters (ERR_NVGPUCTRPERM)",
        "ncu profiler skipped: no access to GPU performance counters (ERR_NVGPUCTRPERM)",
    ]
    err = capsys.readouterr().err.splitlines()
    assert sum("ERR_NVGPUCTRPERM" in ln for ln in err) == 2


def test_failed_config_keeps_its_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _needs("torch", "transformers")
    from tracekit.collectors import sweep as sweep_mod

    def failing(self: Any, batch: int, seq: int, tmp: Path) -> list[float]:
        (tmp / "worker-none.log").write_text("==ERROR== the reason\n")
        raise RunFailure("untraced run failed (exit 1): ==ERROR== the reason")

    monkeypatch.setattr(sweep_mod.Sweep, "_untraced", failing)
    opts = sweep_mod.SweepOptions(
        runtime="pytorch", model="tiny", device="cpu", profilers=["none"], out_dir=tmp_path / "run"
    )
    sweep = sweep_mod.Sweep(opts)
    sweep._prepare()
    entry = sweep._config(1, 16, lambda: None)
    assert entry["status"] == "failed" and entry["logs"] == ["logs/pytorch_b1_s16.worker-none.log"]
    assert (tmp_path / "run" / entry["logs"][0]).read_text() == "==ERROR== the reason\n"


# -- defect 7: CUDA index -> NVML/nsys by UUID; nsys option spelling -----------------------------------------
class _FakeNvml:
    """Two GPUs in PCI order; NVML wants the GPU- prefix (as the real nvmlDeviceGetHandleByUUID does)."""

    GPUS = [
        ("GPU-1111aaaa-0000-0000-0000-000000000000", "00000000:19:00.0"),
        ("GPU-2222bbbb-0000-0000-0000-000000000000", "00000000:3B:00.0"),
    ]
    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> int:  # noqa: N802
        for i, (u, _) in enumerate(self.GPUS):
            if u == uuid:
                return i
        raise RuntimeError("NVML_ERROR_NOT_FOUND")

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:  # noqa: N802
        return i

    def nvmlDeviceGetIndex(self, h: int) -> int:  # noqa: N802
        return h

    def nvmlDeviceGetPciInfo(self, h: int) -> Any:  # noqa: N802
        return types.SimpleNamespace(busId=self.GPUS[h][1].encode())

    def nvmlDeviceGetUUID(self, h: int) -> str:  # noqa: N802
        return self.GPUS[h][0]

    def nvmlDeviceGetName(self, h: int) -> str:  # noqa: N802
        return f"Fake GPU {h}"

    def nvmlSystemGetDriverVersion(self) -> str:  # noqa: N802
        return "570.86.15"


def _fake_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from tracekit.collectors.profilers import nvml

    # CUDA's fastest-first order puts the PCI-second GPU first: cuda:0 is NVML GPU 1.
    props = [
        types.SimpleNamespace(
            name="Fake GPU 1",
            uuid="2222bbbb-0000-0000-0000-000000000000",
            major=9,
            minor=0,
            total_memory=80 << 30,
        )
    ]
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: props[i])
    monkeypatch.setattr(nvml, "_nvml", lambda: _FakeNvml())


def test_cuda_device_maps_to_nvml_and_nsys_by_uuid(monkeypatch: pytest.MonkeyPatch) -> None:
    _needs("torch", "transformers")
    from tracekit.collectors.environment import gpu_for
    from tracekit.collectors.gpu import cuda_device_map

    _fake_gpus(monkeypatch)
    ident = cuda_device_map(0, {"0000:19:00.0": 0, "0000:3b:00.0": 1})
    assert (ident.uuid, ident.nvml_index, ident.pci_bus_id, ident.nsys_gpu_id) == (
        "GPU-2222bbbb-0000-0000-0000-000000000000",
        1,
        "0000:3b:00.0",
        1,
    )
    assert ident.driver == "570.86.15" and ident.compute_capability == "9.0"
    info = gpu_for("cuda:0")
    assert info["nvml_index"] == info["physical_index"] == 1 and info["cuda_index"] == 0
    assert info["name"] == "Fake GPU 1" and info["uuid"] == "GPU-2222bbbb-0000-0000-0000-000000000000"
    assert info["device_map"]["notes"][0].startswith("cuda:0 is NVML GPU 1")


def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_gpu_metrics_option_spelling_follows_the_installed_nsys(tmp_path: Path) -> None:
    from tracekit.collectors.gpu import gpu_metrics_option
    from tracekit.collectors.profilers.nsys import build_profile_argv

    new = _script(tmp_path / "nsys-new", "echo '  --gpu-metrics-devices=   Collect GPU Metrics'\n")
    old = _script(tmp_path / "nsys-old", "echo '  --gpu-metrics-device=   Collect GPU Metrics'\n")
    silent = _script(tmp_path / "nsys-silent", "exit 1\n")
    assert gpu_metrics_option(new) == "--gpu-metrics-devices"
    assert gpu_metrics_option(old) == "--gpu-metrics-device"
    assert gpu_metrics_option(silent, "2024.2.1") == "--gpu-metrics-devices"
    assert gpu_metrics_option(silent, "2022.4.2") == "--gpu-metrics-device"
    argv = build_profile_argv("nsys", "out", ["py"], True, 1, "--gpu-metrics-devices")
    assert "--gpu-metrics-devices=1" in argv and argv[-1] == "py"


# -- defect 8: ORT profile runs before the timed ones ------------------------------------------------------
def _ort_profile(path: Path, runs: int) -> None:
    events = [
        {
            "cat": "Session",
            "pid": 1,
            "tid": 1,
            "dur": 50,
            "ts": 1,
            "ph": "X",
            "name": "session_initialization",
            "args": {},
        }
    ]
    for i in range(runs):
        ts = 100 + i * 1000
        events.append(
            {
                "cat": "Session",
                "pid": 1,
                "tid": 1,
                "dur": 500,
                "ts": ts,
                "ph": "X",
                "name": "model_run",
                "args": {},
            }
        )
        events.append(
            {
                "cat": "Node",
                "pid": 1,
                "tid": 1,
                "dur": 100,
                "ts": ts + 10,
                "ph": "X",
                "name": "/l0/MatMul_kernel_time",
                "args": {"op_name": "MatMul", "provider": "CUDAExecutionProvider"},
            }
        )
    path.write_text("[\n" + ",\n".join(json.dumps(e).replace('":', '" :') for e in events) + "\n]\n")


def test_ort_runs_before_timed_are_counted_and_skipped(tmp_path: Path) -> None:
    _needs("torch", "transformers")
    from tracekit.analyzers.iterations import analyze_iterations
    from tracekit.collectors import worker
    from tracekit.readers import read_trace

    raw = tmp_path / "ort_raw.json"
    _ort_profile(raw, 2 + 1 + 1 + 3)  # shape probe, 2 warm-up, ORT's extra capture run, 3 timed

    class FakeOrt:
        eager_torch = False

        def run(self) -> None:
            return None

        def sync(self) -> None:
            return None

        def end_profiling(self) -> str:
            return str(raw)

    trace = tmp_path / "onnx-cuda-graphs_b1_s8.ort.json.gz"
    out = worker._timed(FakeOrt(), _tiny_cfg(warmup=2, iters=3, trace_out=str(trace)), "cuda:0", "ort")
    assert out["trace_runs"] == 7 and out["runs_before_timed"] == 4
    assert len(json.loads(gzip.open(trace).read())) == 1 + 2 * 7
    meta = {
        "warmup_iterations": out["runs_before_timed"],
        "warmup_in_trace": True,
        "iterations": 3,
        "synthetic": False,
    }
    trace.with_name("onnx-cuda-graphs_b1_s8.ort.meta.json").write_text(json.dumps(meta))
    analysis = analyze_iterations(read_trace(trace), None, None)
    assert analysis.skipped == 4 and analysis.iterations.height == 3


# -- defect 9: torch.profiler and graphs captured before it starts ---------------------------------------------
def test_torch_profiler_initialized_before_capture_and_empty_iterations_warned(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _needs("torch", "transformers")
    import torch

    from tracekit.collectors import worker
    from tracekit.collectors.runtimes.base import Runtime

    order: list[str] = []
    monkeypatch.setattr(torch.profiler._utils, "_init_for_cuda_graphs", lambda: order.append("init"))

    class Replay(Runtime):
        name = "fake-graphs"
        captures_graphs = True

        def prepare(self, ctx: Any) -> None:
            super().prepare(ctx)
            order.append("capture")

        def run(self) -> None:  # a replay whose kernels the profiler did not see
            return None

    monkeypatch.setattr(worker, "get_runtime", lambda name: Replay())
    result = worker.run_config(_tiny_cfg(profiler="torch", trace_out=str(tmp_path / "t.torch.json.gz")))
    assert order == ["init", "capture"]
    assert result["warnings"] == ["3 of 3 timed iterations hold no operator in the torch.profiler trace"]


# -- defect 10: ncu limited to a few iterations; its first error line surfaces ------------------------------
def test_ncu_runs_few_iterations_and_reports_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracekit.collectors import sweep as sweep_mod
    from tracekit.collectors.profilers.ncu import NCU_ITERATIONS, build_profile_argv, no_report_reason

    argv = build_profile_argv("ncu", "x", ["py"])
    assert "--launch-count" not in argv  # every kernel of the filtered iterations (GPT-2: ~1.4k each)
    assert build_profile_argv("ncu", "x", ["py"], max_kernels=4200)[4:6] == ["--launch-count", "4200"]
    log = "==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\nmore\n"
    assert (
        no_report_reason(log)
        == "ncu wrote no report: ==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"
    )
    monkeypatch.setenv("TRACEKIT_NCU", "/fake/ncu")
    sweep = sweep_mod.Sweep(sweep_mod.SweepOptions(model="tiny", device="cpu", profilers=["none"], iters=100))
    sweep.device = "cuda:0"
    assert sweep._cfg(1, 16, "ncu")["iters"] == NCU_ITERATIONS == 3
    assert sweep._cfg(1, 16, "nsys")["iters"] == 100


# -- defect 11: graph runtimes need 2 warm-up runs; compile-cudagraphs says whether graphs were used ---------
@pytest.mark.parametrize("runtime", ["cuda-graphs", "compile-cudagraphs", "onnx-cuda-graphs", "torchscript"])
def test_graph_runtimes_need_two_warmup_runs(
    runtime: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _needs("torch", "transformers", "onnx", "onnxruntime")
    assert (
        main(["collect", "--runtime", runtime, "--warmup", "1", "--model", "tiny", "-o", str(tmp_path / "r")])
        == 2
    )
    assert f"runtime '{runtime}' needs --warmup >= 2" in _err_line(capsys)


def test_compile_cudagraphs_says_whether_graphs_were_used(monkeypatch: pytest.MonkeyPatch) -> None:
    _needs("torch")
    from torch._dynamo.utils import counters
    from torch._inductor import cudagraph_trees

    from tracekit.collectors.runtimes.base import RunContext
    from tracekit.collectors.runtimes.compile import CompileCudaGraphsRuntime

    manager = types.SimpleNamespace(roots={"fn": ["graph0", "graph1"]})
    monkeypatch.setattr(
        cudagraph_trees, "get_manager", lambda i, create_if_none_exists=True: manager if i == 1 else None
    )
    rt = CompileCudaGraphsRuntime()
    rt.ctx = RunContext(model=None, inputs=(), device="cuda:1", precision="fp32")
    rt._skips_before = int(counters["inductor"]["cudagraph_skips"])
    assert rt.describe()["cuda_graphs_used"] is True and rt.describe()["graphs_recorded"] == 2
    counters["inductor"]["cudagraph_skips"] += 1
    try:
        described = rt.describe()
    finally:
        counters["inductor"]["cudagraph_skips"] -= 1
    assert described["cuda_graphs_used"] is False and described["cudagraph_skips"] == 1
    manager.roots = {}
    rt._skips_before = int(counters["inductor"]["cudagraph_skips"])
    assert rt.describe() == {
        "runtime": "compile-cudagraphs",
        "mode": "reduce-overhead",
        "cuda_graphs_used": False,
        "graphs_recorded": 0,
        "cudagraph_skips": 0,
    }


# -- issue 11 item 4: a base install names the extra --------------------------------------------------------
@pytest.mark.parametrize("missing", ["torch", "transformers"])
def test_base_install_names_the_extra(
    missing: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pytest.importorskip(
        {"torch": "transformers", "transformers": "torch"}[missing]
    )  # the other one installed
    monkeypatch.setitem(sys.modules, missing, None)  # import fails as on a base install
    assert main(["collect", "--model", "tiny", "--device", "cpu", "-o", str(tmp_path / "r")]) == 2
    line = _err_line(capsys)
    assert line.startswith(f"tracekit: collect needs {missing}, not installed here")
    assert "pip install 'tracekit[collect]'" in line and "internal error" not in line
    assert not (tmp_path / "r").exists()


def test_collect_help_gives_every_option_a_default(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from tracekit.commands import collect

    parser = argparse.ArgumentParser()
    collect.register(parser.add_subparsers())
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["collect"]
    for action in sub._actions:
        if action.dest == "help":
            continue
        assert action.help and "default" in action.help, action.dest


# -- ORT + CUDA graphs: ORT's regular runs and its capture run happen in prepare, never in timed iterations ----
class _FakeGraphOrt:
    """ORT's CUDA provider with ``enable_cuda_graph``, as onnxruntime/core/providers/cuda/
    cuda_execution_provider.h has it since 1.17: ``min_num_runs_before_cuda_graph_capture_ = 2`` regular runs,
    then one run that captures, then replays. Every run is logged with its kind and whether the binding's
    output was bound (fixed addresses) by then."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str, bool]] = []

    def module(self) -> Any:
        fake = self

        class Binding:
            def __init__(self) -> None:
                self.output_bound = False

            def bind_input(self, *a: Any) -> None:
                pass

            def bind_output(self, *a: Any) -> None:
                self.output_bound = True

            def get_outputs(self) -> list[Any]:
                return [types.SimpleNamespace(shape=lambda: [1, 8, 4])]

        class Session:
            def __init__(self, path: str, sess_options: Any = None, providers: Any = None) -> None:
                self.graph = providers[0][1].get("enable_cuda_graph") == "1"
                self.runs = 0

            def get_providers(self) -> list[str]:
                return ["CUDAExecutionProvider", "CPUExecutionProvider"]

            def get_inputs(self) -> list[Any]:
                return [types.SimpleNamespace(name="input_ids"), types.SimpleNamespace(name="attention_mask")]

            def get_outputs(self) -> list[Any]:
                return [types.SimpleNamespace(name="output", type="tensor(float)")]

            def io_binding(self) -> Any:
                return Binding()

            def run_with_iobinding(self, binding: Any) -> None:
                self.runs += 1
                if not self.graph:
                    kind = "plain"
                else:
                    kind = "regular" if self.runs <= 2 else "capture" if self.runs == 3 else "replay"
                fake.log.append(("graph" if self.graph else "plain", kind, binding.output_bound))

        return types.SimpleNamespace(
            SessionOptions=lambda: types.SimpleNamespace(),
            InferenceSession=Session,
            get_available_providers=lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"],
            preload_dlls=lambda: None,
            __version__="1.22.0",
        )


def test_ort_cuda_graph_is_captured_in_prepare_not_in_timed_iterations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _needs("torch")
    import torch

    from tracekit.collectors.harness import time_iterations
    from tracekit.collectors.runtimes import MIN_WARMUP
    from tracekit.collectors.runtimes import onnx as onnx_mod
    from tracekit.collectors.runtimes.base import RunContext

    fake = _FakeGraphOrt()
    monkeypatch.setitem(sys.modules, "onnxruntime", fake.module())
    monkeypatch.setattr(onnx_mod, "export_onnx", lambda *a, **k: Path("/nonexistent/tiny.onnx"))
    real_empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, device=None, **k: real_empty(*a, **k))  # a "device" buffer
    synced: list[Any] = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: synced.append(device))
    inputs = (torch.ones(1, 8, dtype=torch.int64), torch.ones(1, 8, dtype=torch.int64))
    rt = onnx_mod.OnnxCudaGraphsRuntime()
    rt.prepare(RunContext(model=None, inputs=inputs, device="cuda:0", precision="fp32"))
    prepared = len(fake.log)
    time_iterations(rt.run, rt.sync, MIN_WARMUP["onnx-cuda-graphs"], 3)
    graph_runs = [(kind, bound) for session, kind, bound in fake.log if session == "graph"]
    # the output buffer was bound (fixed addresses) before the graph-enabled session ran at all
    assert all(bound for _, bound in graph_runs)
    assert [kind for kind, _ in graph_runs[:3]] == ["regular", "regular", "capture"]
    assert [kind for _, kind, _ in fake.log[prepared:]] == ["replay"] * (MIN_WARMUP["onnx-cuda-graphs"] + 3)
    assert synced and synced[0] == "cuda:0"  # the capture finished before prepare returned
    assert rt.describe()["capture_runs_in_prepare"] == onnx_mod.ORT_GRAPH_CAPTURE_RUNS == 3
