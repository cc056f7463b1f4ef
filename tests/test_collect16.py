"""collect16: the device resolved once (default profilers), flat report figures, GPU library calls pinned by
fakes (torch.cuda, onnxruntime, pynvml), hostile collection inputs (one line, exit 2, nothing half-written).

No test here imports the real torch: a fake ``torch`` module stands in where the collector asks for CUDA."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from tracekit.collectors import environment, sweep
from tracekit.collectors.profilers import nsys as nsys_mod
from tracekit.errors import TracekitError


class _Stop(Exception):
    """Raised by a patched step to end Sweep._prepare once what a test checks is decided."""


def _fake_torch(monkeypatch: pytest.MonkeyPatch, cuda: bool, count: int = 1) -> types.ModuleType:
    """A ``torch`` with only what device resolution asks: cuda.is_available/device_count, version.cuda."""
    fake = types.ModuleType("torch")
    fake.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        is_available=lambda: cuda, device_count=lambda: count if cuda else 0
    )
    fake.version = types.SimpleNamespace(cuda="12.4" if cuda else None)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", fake)
    return fake


def _counted_resolve(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, bool]]:
    calls: list[tuple[str, str, bool]] = []
    real = environment.resolve_device

    def counted(requested: str, runtime: str, cuda_only: bool) -> str:
        calls.append((requested, runtime, cuda_only))
        return real(requested, runtime, cuda_only)

    monkeypatch.setattr(environment, "resolve_device", counted)
    return calls


def _prepared(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, runtime: str, **over: Any
) -> tuple[sweep.Sweep, list[tuple[str, str, bool]]]:
    """A Sweep run up to finding its profilers (the step after the device and the profilers are chosen)."""
    calls = _counted_resolve(monkeypatch)

    def stop(self: sweep.Sweep) -> None:
        raise _Stop

    monkeypatch.setattr(sweep.Sweep, "_find_profilers", stop)
    opts = sweep.SweepOptions(runtime=runtime, model="tiny", out_dir=tmp_path / "run", **over)
    run = sweep.Sweep(opts)
    assert calls == []  # constructing a Sweep resolves nothing (and imports no torch)
    with pytest.raises(_Stop):
        run._prepare()
    return run, calls


# -- 1. --device auto is resolved once, and the default profilers follow that resolution --------------------
@pytest.mark.parametrize(
    ("cuda", "runtime", "nsys", "device", "profilers"),
    [
        (True, "pytorch", "/usr/bin/nsys", "cuda:0", ["nsys"]),
        (True, "onnx", "/usr/bin/nsys", "cuda:0", ["nsys"]),
        (True, "pytorch", None, "cuda:0", ["torch"]),
        (False, "pytorch", "/usr/bin/nsys", "cpu", ["torch"]),
        (False, "onnx", "/usr/bin/nsys", "cpu", ["ort"]),
        (False, "pytorch", None, "cpu", ["torch"]),
    ],
)
def test_auto_device_is_resolved_once_and_chooses_the_default_profilers(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    cuda: bool,
    runtime: str,
    nsys: str | None,
    device: str,
    profilers: list[str],
) -> None:
    _fake_torch(monkeypatch, cuda)
    monkeypatch.setattr(nsys_mod, "find_nsys", lambda: nsys)
    if runtime == "onnx" and cuda:  # the ORT CUDA check after resolution: a fake GPU build
        ort = types.ModuleType("onnxruntime")
        ort.get_available_providers = lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"]  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "onnxruntime", ort)
    run, calls = _prepared(monkeypatch, tmp_path, runtime)
    assert calls == [("auto", runtime, False)]
    assert (run.device, run.profilers) == (device, profilers)
    assert not (tmp_path / "run").exists()


def test_asked_profilers_are_kept_and_none_means_none(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _fake_torch(monkeypatch, cuda=True)
    monkeypatch.setattr(nsys_mod, "find_nsys", lambda: "/usr/bin/nsys")
    run, calls = _prepared(monkeypatch, tmp_path, "pytorch", profilers=["torch", "torch"])
    assert (len(calls), run.device, run.profilers) == (1, "cuda:0", ["torch"])
    run, calls = _prepared(monkeypatch, tmp_path, "pytorch", profilers=["none"])
    assert (len(calls), run.device, run.profilers) == (1, "cuda:0", [])


def test_a_cuda_only_runtime_on_auto_without_cuda_is_refused_once_before_any_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _fake_torch(monkeypatch, cuda=False)
    monkeypatch.setattr(nsys_mod, "find_nsys", lambda: "/usr/bin/nsys")
    calls = _counted_resolve(monkeypatch)
    opts = sweep.SweepOptions(
        runtime="cuda-graphs", model="tiny", warmup=2, out_dir=tmp_path / "run", profilers=None
    )
    run = sweep.Sweep(opts)
    with pytest.raises(TracekitError) as info:
        run.execute()
    assert info.value.message == "runtime 'cuda-graphs' needs CUDA, and this torch build has no CUDA"
    assert calls == [("auto", "cuda-graphs", True)]
    assert not (tmp_path / "run").exists()


def test_default_profilers_refuses_an_unresolved_device() -> None:
    with pytest.raises(ValueError, match="resolved device"):
        sweep.default_profilers("pytorch", "auto")
