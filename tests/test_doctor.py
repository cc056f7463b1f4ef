"""tracekit doctor: for real on this CPU machine, and with a faked GPU machine (torch.cuda, NVML, ORT, probes)."""

from __future__ import annotations

import json
import shutil
import sys
import types
from typing import Any

import pytest

from tracekit.cli import main


def _needs(*modules: str) -> None:
    """Skip the calling test where one of ``modules`` cannot be imported (an install without the collection
    extra: torch, transformers, onnx, onnxruntime)."""
    for module in modules:
        pytest.importorskip(module)


def _doctor_json(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["doctor", "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_doctor_on_this_machine(capsys: pytest.CaptureFixture[str]) -> None:
    _needs("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this test describes a machine without CUDA")
    doc = _doctor_json(capsys)
    assert doc["cuda"] is False and doc["devices"] == []
    assert doc["summary"].startswith("CPU only: this torch build has no CUDA")
    assert doc["torch"]["version"] == torch.__version__
    assert {n: e["works"] for n, e in doc["runtimes"].items()} == {
        "pytorch": True,
        "torchscript": True,
        "cuda-graphs": False,
        "compile": True,
        "compile-cudagraphs": False,
        "onnx": True,
        "onnx-cuda-graphs": False,
    }
    assert doc["runtimes"]["cuda-graphs"]["why"] == "needs CUDA (this torch build has no CUDA)"
    assert doc["runtimes"]["onnx"]["devices"] == ["cpu"]
    assert doc["onnxruntime"]["cuda_provider_loads"] is False
    assert doc["profilers"]["ncu"]["works"] is False and doc["profilers"]["torch"]["works"] is True
    if shutil.which("nsys"):
        assert doc["nsys"]["version"].count(".") >= 2
        assert doc["profilers"]["nsys"]["records"].startswith("NVTX and OS runtime only")
    assert main(["doctor"]) == 0
    screen = capsys.readouterr().out
    assert "No CUDA device" in screen and "cuda-graphs" in screen and "tracekit[gpu]" in screen


def test_doctor_on_a_faked_gpu_machine(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _needs("torch")
    import torch

    from tests.test_collect_gpu import _FakeNvml
    from tracekit.collectors import gpu
    from tracekit.collectors.gpu import ProbeResult
    from tracekit.collectors.profilers import nvml
    from tracekit.collectors.runtimes import onnx as onnx_mod

    props = types.SimpleNamespace(
        name="Fake GPU 1",
        uuid="2222bbbb-0000-0000-0000-000000000000",
        major=9,
        minor=0,
        total_memory=80 << 30,
    )
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: props)
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    monkeypatch.setattr(nvml, "_nvml", lambda: _FakeNvml())
    monkeypatch.setenv("TRACEKIT_NCU", "/fake/ncu")
    monkeypatch.setattr(
        gpu,
        "probe_nsys_gpu_metrics",
        lambda nsys, version=None: ProbeResult(
            True, option="--gpu-metrics-devices", devices={"0000:3b:00.0": 1}
        ),
    )
    monkeypatch.setattr(
        gpu,
        "probe_ncu_counters",
        lambda ncu: ProbeResult(False, "no access to GPU performance counters (ERR_NVGPUCTRPERM)"),
    )
    monkeypatch.setattr("tracekit.collectors.environment._tool_version", lambda argv: "Version 2025.1.0")

    class Session:
        def __init__(self, model: Any, sess_options: Any = None, providers: Any = None) -> None:
            self.providers = providers

        def get_providers(self) -> list[str]:
            return ["CUDAExecutionProvider", "CPUExecutionProvider"]

    fake_ort = types.SimpleNamespace(
        __version__="1.22.0",
        SessionOptions=lambda: types.SimpleNamespace(),
        InferenceSession=Session,
        get_available_providers=lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"],
    )
    monkeypatch.setitem(sys.modules, "onnxruntime", fake_ort)
    monkeypatch.setattr(onnx_mod, "preload_cuda_libraries", lambda ort: None)
    doc = _doctor_json(capsys)
    assert doc["cuda"] is True and doc["summary"] == "1 CUDA device(s): GPU collection possible"
    dev = doc["devices"][0]
    assert (dev["cuda_index"], dev["nvml_index"], dev["nsys_gpu_id"], dev["uuid"], dev["driver"]) == (
        0,
        1,
        1,
        "GPU-2222bbbb-0000-0000-0000-000000000000",
        "570.86.15",
    )
    assert doc["onnxruntime"]["cuda_provider_loads"] is True
    assert all(e["works"] for e in doc["runtimes"].values())
    assert doc["runtimes"]["onnx"]["devices"] == ["cpu", "cuda"] and doc["runtimes"]["cuda-graphs"][
        "devices"
    ] == ["cuda"]
    assert doc["profilers"]["ncu"] == {
        "works": False,
        "why": "no access to GPU performance counters (ERR_NVGPUCTRPERM)",
    }
    if shutil.which("nsys"):
        assert doc["profilers"]["nsys"] == {
            "works": True,
            "records": "CUDA API, kernels, NVTX; GPU metrics sampled",
        }
    assert main(["doctor"]) == 0
    screen = capsys.readouterr().out
    assert "GPU-2222bbbb" in screen and "ERR_NVGPUCTRPERM" in screen


def test_doctor_says_when_nsys_cannot_make_a_report(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Nsight Compute's bundled nsys on an H200 image: nsys ran, but its QdstrmImporter could not load
    # libdw.so.1, so every capture stayed a .qdstrm
    from pathlib import Path

    from tracekit.collectors import doctor

    host = Path(tmp_path) / "host"
    (host / "target-linux-x64").mkdir(parents=True)
    (host / "linux-desktop-glibc_2_11_3-x64").mkdir()
    nsys = host / "target-linux-x64" / "nsys"
    importer = host / "linux-desktop-glibc_2_11_3-x64" / "QdstrmImporter"
    nsys.write_text("#!/bin/sh\necho 'NVIDIA Nsight Systems version 2025.3.1.0'\n")
    importer.write_text(
        "#!/bin/sh\necho 'QdstrmImporter: error while loading shared libraries: libdw.so.1: cannot open "
        "shared object file: No such file or directory' >&2\nexit 127\n"
    )
    for p in (nsys, importer):
        p.chmod(0o755)
    monkeypatch.setenv("TRACEKIT_NSYS", str(nsys))
    status = doctor.nsys_status(cuda=False)
    assert status["importer"]["starts"] is False and "libdw.so.1" in status["importer"]["why"]
    entry = doctor.profilers({"cuda_available": False}, {}, status, {"found": False, "why": "-"})["nsys"]
    assert entry["works"] is False
    assert entry["why"].startswith("its QdstrmImporter cannot start: QdstrmImporter: error while loading")
    # an importer that starts leaves nsys working
    importer.write_text("#!/bin/sh\necho 'NVIDIA Nsight Systems 36398880'\n")
    status = doctor.nsys_status(cuda=False)
    assert status["importer"] == {"path": str(importer), "starts": True}
    assert doctor.profilers({"cuda_available": False}, {}, status, {"found": False, "why": "-"})["nsys"][
        "works"
    ]


def test_doctor_screen_keeps_the_extras_its_summary_names(capsys: pytest.CaptureFixture[str]) -> None:
    # The summary names extras in brackets ("pip install 'tracekit[collect]'"): rich had read '[collect]' as
    # markup and printed "pip install 'tracekit'", an install hint that installs nothing (firsthour13).
    _needs("torch")
    doc = _doctor_json(capsys)
    doc["summary"] = "CPU only: torch is not installed (pip install 'tracekit[collect]')"
    from rich.console import Console

    from tracekit.commands.doctor import render

    console = Console(record=True, width=200)
    render(doc, console)
    assert "pip install 'tracekit[collect]'" in console.export_text()
