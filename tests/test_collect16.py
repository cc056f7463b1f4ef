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
    assert info.value.message == (
        "runtime 'cuda-graphs' needs CUDA, and this torch build has no CUDA: on this machine choose a runtime "
        "that runs on the CPU (pytorch, torchscript, compile, onnx) with --device cpu; `tracekit doctor` says "
        "what it can run"
    )
    assert calls == [("auto", "cuda-graphs", True)]
    assert not (tmp_path / "run").exists()


def test_default_profilers_called_with_auto_resolves_it_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    # (a direct caller's 'auto', as test_firsthour15 asks; the sweep passes the device it resolved)
    _fake_torch(monkeypatch, cuda=True)
    monkeypatch.setattr(nsys_mod, "find_nsys", lambda: "/usr/bin/nsys")
    calls = _counted_resolve(monkeypatch)
    assert sweep.default_profilers("onnx", "auto") == ["nsys"]
    assert calls == [("auto", "onnx", False)]


# -- 2. report figures of a flat series: no matplotlib warning, an axis that shows the value -----------------
def _latency(values: list[float | None], **extra: Any) -> list[dict[str, Any]]:
    batches = [2**i for i in range(len(values))]
    return [
        {
            "label": "pytorch (synthetic)",
            "batch_sizes": batches,
            "latency_ms": values,
            "transition": None,
            **extra,
        }
    ]


def _drawn(make: Any, tmp_path: Path) -> Any:
    """The figure made by ``make()`` and saved (PNG and SVG), every warning an error meanwhile."""
    import warnings

    from tracekit.renderers import plots

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = make()
        limits = [ax.get_ylim() for ax in fig.axes]
        texts = [t.get_text() for ax in fig.axes for t in ax.texts]
        scales = [ax.get_yscale() for ax in fig.axes]
        plots.save_figure(fig, tmp_path / "fig_synthetic")
    return limits, texts, scales


# 0.09999999999999999 is the traced median of labels14's one-configuration synthetic sweep: matplotlib's log
# autoscale of that one value gave identical limits and warned ("Attempting to set identical low and high
# ylims"); a flat series spans half a decade either side of its value.
@pytest.mark.parametrize(
    "values",
    [[0.09999999999999999], [0.09999999999999999] * 3, [0.09999999999999999, None, 0.09999999999999999]],
)
def test_a_flat_latency_series_draws_half_a_decade_around_it_without_warning(
    tmp_path: Path, values: list[float | None]
) -> None:
    from tracekit.renderers import plots

    limits, texts, scales = _drawn(lambda: plots.latency_figure(_latency(values)), tmp_path)
    low, high = limits[0]
    assert scales == ["log"] and texts == []
    assert low == pytest.approx(0.09999999999999999 / 10**0.5, rel=1e-12)
    assert high == pytest.approx(0.09999999999999999 * 10**0.5, rel=1e-12)


def test_a_flat_latency_series_with_its_interval_keeps_the_interval_in_view(tmp_path: Path) -> None:
    from tracekit.renderers import plots

    series = _latency([4.0, 4.0], ci_low=[2.0, 4.0], ci_high=[8.0, 4.0])
    limits, _, scales = _drawn(lambda: plots.latency_figure(series), tmp_path)
    low, high = limits[0]
    assert scales == ["log"] and low <= 2.0 and high >= 8.0


def test_an_all_zero_latency_series_says_no_latency_above_zero(tmp_path: Path) -> None:
    from tracekit.renderers import plots

    limits, texts, scales = _drawn(lambda: plots.latency_figure(_latency([0.0, 0.0])), tmp_path)
    assert texts == [plots.NO_POSITIVE_LATENCY_TEXT] and scales == ["linear"]
    assert plots.NO_POSITIVE_LATENCY_TEXT == "no latency above 0 ms in these configurations"
    # None only: no latency at all (as before)
    _, texts, _ = _drawn(lambda: plots.latency_figure(_latency([None, None])), tmp_path)
    assert texts == [plots.NO_LATENCY_TEXT]


def _panel(busy: list[float | None], over: list[float | None]) -> dict[str, Any]:
    return {
        "title": "pytorch (synthetic)",
        "batch_sizes": [2**i for i in range(len(busy))],
        "busy_ms": busy,
        "overhead_ms": over,
        "transition": None,
        "plateau": [],
    }


def test_an_all_zero_breakdown_says_so_on_a_0_to_1_ms_axis(tmp_path: Path) -> None:
    # before: the axis ran from 0 to 1.32e-09 ms (1e-9 * 1.32), ticks in 1e-10 ms for bars of 0 ms
    from tracekit.renderers import plots

    limits, texts, _ = _drawn(lambda: plots.breakdown_figure([_panel([0.0, 0.0], [0.0, 0.0])]), tmp_path)
    assert limits[0] == (0.0, 1.0)
    assert texts == [plots.ALL_ZERO_TEXT] and plots.ALL_ZERO_TEXT == "every value is 0 ms"


@pytest.mark.parametrize(
    ("busy", "over", "top"),
    [([3.0], [1.0], 4.0 * 1.32), ([3.0, 3.0, 3.0], [1.0, 1.0, 1.0], 4.0 * 1.32), ([None], [2.5], 2.5 * 1.32)],
)
def test_a_flat_breakdown_draws_its_bars_with_headroom(
    tmp_path: Path, busy: list[float | None], over: list[float | None], top: float
) -> None:
    from tracekit.renderers import plots

    limits, texts, _ = _drawn(lambda: plots.breakdown_figure([_panel(busy, over)]), tmp_path)
    assert limits[0] == pytest.approx((0.0, top), rel=1e-12)
    assert texts == ["25%"] * len(busy) if busy[0] is not None else texts == ["100%"]


def test_a_nan_only_breakdown_says_no_data(tmp_path: Path) -> None:
    from tracekit.renderers import plots

    _, texts, _ = _drawn(lambda: plots.breakdown_figure([_panel([None, None], [None, None])]), tmp_path)
    assert texts == [plots.NO_DATA_TEXT]


def test_a_timeline_of_a_0_ms_iteration_draws_a_0_to_1_ms_axis(tmp_path: Path) -> None:
    import polars as pl

    from tracekit.renderers import plots

    bars = pl.DataFrame(
        {"lane": ["GPU stream 7"], "category": ["kernel"], "start_ms": [0.0], "duration_ms": [0.0]}
    )
    gaps = pl.DataFrame(schema={"start_ms": pl.Float64, "duration_ms": pl.Float64})
    iterations = pl.DataFrame(
        {"index": [0], "start_ms": [0.0], "end_ms": [0.0], "latency_ms": [0.0], "gpu_busy_ms": [0.0]}
    )
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = plots.timeline_figure(["GPU stream 7"], bars, gaps, iterations, title="synthetic")
        top, zoom = fig.axes[0], fig.axes[1]
        assert top.get_xlim() == (0.0, 1.0) and zoom.get_xlim() == (0.0, 1.0)
        assert zoom.get_title() == "zoom: iteration 0 lasts 0 ms"
        plots.save_figure(fig, tmp_path / "fig_timeline_synthetic")


# -- 4. hostile collection inputs: one line naming the problem, exit 2, nothing created -----------------------
TINY = [
    "--model",
    "tiny",
    "--seq-lens",
    "16",
    "--warmup",
    "1",
    "--iters",
    "2",
    "--max-time",
    "0",
    "--in-process",
]


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def _no_heavy_imports(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch, transformers and onnxruntime cannot be imported: the refusal must come before them."""
    for name in ("torch", "transformers", "onnxruntime"):
        monkeypatch.setitem(sys.modules, name, None)


def _spec_torch(monkeypatch: pytest.MonkeyPatch, cuda: bool) -> None:
    """The fake torch, findable by collect's package check (find_spec) as an installed one is."""
    import importlib.machinery

    _fake_torch(monkeypatch, cuda).__spec__ = importlib.machinery.ModuleSpec("torch", None)


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--iters", "0"], "tracekit: --warmup must be >= 0 and --iters >= 1 (got --iters 0)"),
        (["--warmup", "-1"], "tracekit: --warmup must be >= 0 and --iters >= 1 (got --warmup -1)"),
        (["--batch-sizes", "0,4,-1"], "tracekit: --batch-sizes must be positive integers (got 0, -1)"),
        (["--seq-lens", "16,0"], "tracekit: --seq-lens must be positive integers (got 0)"),
        (["--model", "bert-huge"], "tracekit: unknown model 'bert-huge'; choose from: "),
        (
            ["--runtime", "cuda-graphs", "--device", "cpu", "--warmup", "2"],
            "tracekit: runtime 'cuda-graphs' needs ",
        ),
    ],
)
def test_bad_numbers_and_names_are_one_line_before_torch(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    argv: list[str],
    line: str,
) -> None:
    from tracekit.cli import main

    _no_heavy_imports(monkeypatch)
    assert main(["collect", *TINY, *argv, "-o", str(tmp_path / "run")]) == 2
    assert _one_line(capsys).startswith(line)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("bad", ["x", "1,,2", "1.5", ""])
def test_unparsable_batch_sizes_are_argparses_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, bad: str
) -> None:
    from tracekit.cli import main

    with pytest.raises(SystemExit) as info:
        main(["collect", *TINY, "--batch-sizes", bad, "-o", str(tmp_path / "run")])
    assert info.value.code == 2
    line = _one_line(capsys)
    assert (
        line.startswith("tracekit collect: error: argument --batch-sizes: expected ")
        and "Traceback" not in line
    )
    assert list(tmp_path.iterdir()) == []


def test_an_output_that_cannot_be_a_run_folder_is_refused_before_torch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tracekit.cli import main

    _no_heavy_imports(monkeypatch)
    afile = tmp_path / "afile.synthetic.txt"
    afile.write_text("not a folder")
    held = tmp_path / "held"
    held.mkdir()
    (held / "run.json").write_text('{"kind": "collect", "synthetic": true}')
    cases = [
        (
            afile,
            f"tracekit: {afile}: is a file; -o takes a folder (it receives the run: run.json and the traces)",
        ),
        (
            afile / "sub" / "run",
            f"tracekit: {afile / 'sub' / 'run'}: cannot create the output folder: {afile} is a file, not a folder",
        ),
        (
            tmp_path / "missing" / "run",
            f"tracekit: {tmp_path / 'missing' / 'run'}: cannot create the output folder: "
            f"{tmp_path / 'missing'} does not exist",
        ),
        (held, f"tracekit: {held}: already holds a run (run.json); choose another -o or pass --overwrite"),
    ]
    for out, line in cases:
        assert main(["collect", *TINY, "--device", "cpu", "-o", str(out)]) == 2
        assert _one_line(capsys) == line
    assert afile.read_text() == "not a folder"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile.synthetic.txt", "held"]
    assert sorted(p.name for p in held.iterdir()) == ["run.json"]


def test_an_unwritable_output_folder_is_refused_before_torch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # (this machine's tests run as root, whom permission bits do not stop: os.access says what an ordinary
    # user would be told)
    import os

    from tracekit.cli import main

    _no_heavy_imports(monkeypatch)
    locked = tmp_path / "locked"
    locked.mkdir()
    real = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode, **kw: False if Path(p) == locked else real(p, mode, **kw)
    )
    assert main(["collect", *TINY, "--device", "cpu", "-o", str(locked / "run")]) == 2
    assert _one_line(capsys) == (
        f"tracekit: {locked / 'run'}: cannot create the output folder: {locked} is not writable (permission denied)"
    )
    assert main(["collect", *TINY, "--device", "cpu", "-o", str(locked)]) == 2
    assert _one_line(capsys) == f"tracekit: {locked}: the output folder is not writable (permission denied)"
    assert list(locked.iterdir()) == []


def test_a_default_runs_folder_that_is_a_file_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tracekit.cli import main

    _spec_torch(monkeypatch, cuda=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").write_text("a file named runs")
    assert main(["collect", *TINY, "--device", "cpu", "--profiler", "none"]) == 2
    assert _one_line(capsys) == (
        "tracekit: runs: exists and is not a folder (the default output folder; or pass -o)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]


@pytest.mark.parametrize("what", ["missing", "folder", "not executable", "name"])
@pytest.mark.parametrize(("variable", "profiler"), [("TRACEKIT_NSYS", "nsys"), ("TRACEKIT_NCU", "ncu")])
def test_a_profiler_path_that_cannot_run_is_one_line_before_any_folder(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    what: str,
    variable: str,
    profiler: str,
) -> None:
    # before: TRACEKIT_NSYS=/nonexistent/nsys timed every configuration untraced, then failed each traced run
    # with "FileNotFoundError: [Errno 2] No such file or directory: '/nonexistent/nsys'" (exit 1) and left a
    # run folder of failed configurations
    from tracekit.cli import main

    tools = tmp_path / "tools"
    tools.mkdir()
    plain = tools / f"{profiler}-synthetic"
    plain.write_text("#!/bin/sh\n")  # no execute bit
    value, why = {
        "missing": (str(tools / "nowhere" / profiler), "no such file"),
        "folder": (str(tools), f"a folder, not the {profiler} executable"),
        "not executable": (str(plain), "not executable"),
        "name": (f"{profiler}-not-installed-synthetic", "not found on PATH"),
    }[what]
    monkeypatch.setenv(variable, value)
    _spec_torch(monkeypatch, cuda=True)
    monkeypatch.setattr(environment, "gpu_for", lambda *a, **k: None)
    out = tmp_path / "run"
    assert main(["collect", *TINY, "--device", "cuda", "--profiler", profiler, "-o", str(out)]) == 2
    assert _one_line(capsys) == (
        f"tracekit: {variable}={value}: {why}; point it at the {profiler} executable, "
        f"or unset it to use {profiler} from PATH"
    )
    assert not out.exists()
    from tracekit.collectors import doctor

    status = (doctor.nsys_status if profiler == "nsys" else doctor.ncu_status)(False)
    assert status == {
        "found": False,
        "why": f"{variable}={value}: {why}; point it at the {profiler} executable, "
        f"or unset it to use {profiler} from PATH",
    }


def test_a_runnable_profiler_path_is_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import os

    from tracekit.collectors.profilers import ncu, tool_problem

    tool = tmp_path / "ncu-synthetic"
    tool.write_text("#!/bin/sh\n")
    os.chmod(tool, 0o755)
    monkeypatch.setenv("TRACEKIT_NCU", str(tool))
    assert tool_problem("TRACEKIT_NCU", "ncu") is None and ncu.require_ncu() == str(tool)
    monkeypatch.setenv("TRACEKIT_NCU", "sh")  # a name on PATH, as subprocess runs it
    assert tool_problem("TRACEKIT_NCU", "ncu") is None and ncu.require_ncu() == "sh"
    monkeypatch.delenv("TRACEKIT_NCU")
    assert tool_problem("TRACEKIT_NCU", "ncu") is None


# -- defects in files that are not collect16's (strict xfail; the lead fixes) -------------------------------
def test_io_output_dir_names_a_parent_that_is_a_file(tmp_path: Path) -> None:
    from tracekit.io import output_dir

    afile = tmp_path / "afile.synthetic.txt"
    afile.write_text("x")
    with pytest.raises(TracekitError) as info:
        output_dir(afile / "sub")
    assert "is a file" in info.value.message and "does not exist" not in info.value.message


# -- 3. NVML and torch.cuda identity calls pinned by fakes shaped as the real libraries are -------------------
# nvidia-ml-py 13.615 (pynvml.py, read in this venv): nvmlSystemGetDriverVersion, nvmlDeviceGetUUID and
# nvmlDeviceGetName are wrapped by convertStrBytes (str in, str out); nvmlDeviceGetPciInfo returns an
# nvmlPciInfo_t whose char-array fields _PrintableStructure decodes to str, busId formatted "%08X:%02X:%02X.0"
# (upper-case hex, 8-digit domain) and busIdLegacy "%04X:%02X:%02X.0"; nvmlDeviceGetMemoryInfo returns a
# c_nvmlMemory_t (total in bytes); nvmlDeviceGetCudaComputeCapability a (major, minor) tuple; every failure
# raises an NVMLError subclass (nvmlInit without a driver: NVMLError_LibraryNotFound). torch's
# get_device_properties(i).uuid is a _CUuuid object whose str() is the UUID without NVML's "GPU-" prefix.
# Checked on an H200 (2026-11-28 loan, torch with CUDA 13.0, driver 580.159.04): type(uuid).__name__ ==
# "_CUuuid", str 'a7dbd0cb-98ca-...' (lower case, no prefix); busId '00000000:00:06.0' and busIdLegacy
# '0000:00:06.0' as str; name 'NVIDIA H200' as str; memory total 150754820096; capability (9, 0); clocks 345
# (SM, idle) / 3201 (memory), max 1980 / 3201 with NVML_CLOCK_SM 1 and NVML_CLOCK_MEM 2; an unknown UUID
# raised NVMLError_NotFound (an NVMLError).
class _NVMLError(Exception):
    pass


MIB = 1024 * 1024
_GPUS = [  # (uuid, busId, busIdLegacy, name, memory bytes, (sm, mem) clocks, (max sm, max mem), capability)
    (
        "GPU-1111aaaa-0000-0000-0000-000000000000",
        "00000000:19:00.0",
        "0000:19:00.0",
        "NVIDIA H100 80GB HBM3",
        81_559 * MIB + 123,
        (1755, 2619),
        (1980, 2619),
        (9, 0),
    ),
    (
        "GPU-2222bbbb-0000-0000-0000-000000000000",
        "00000000:3B:00.0",
        "0000:3B:00.0",
        "NVIDIA H200",
        150_754_820_096,  # an H200's, as NVML gave it on the 2026-11-28 loan: 143,771 MiB exactly
        (345, 3201),  # idle SM clock, as read there
        (1980, 3201),
        (9, 0),
    ),
]


def _fake_pynvml(
    monkeypatch: pytest.MonkeyPatch, init_error: Exception | None = None, unsupported: tuple[str, ...] = ()
) -> types.ModuleType:
    nv = types.ModuleType("pynvml")
    nv.NVMLError = _NVMLError  # type: ignore[attr-defined]
    nv.NVML_CLOCK_SM, nv.NVML_CLOCK_MEM = 1, 2  # type: ignore[attr-defined]  (pynvml's values)
    calls: list[str] = []
    nv.calls = calls  # type: ignore[attr-defined]

    def checked(name: str, fn: Any) -> Any:
        def call(*args: Any) -> Any:
            calls.append(name)
            if name in unsupported:
                raise _NVMLError("Not Supported")
            return fn(*args)

        return call

    def init() -> None:
        calls.append("nvmlInit")
        if init_error is not None:
            raise init_error

    def handle(i: int) -> int:
        if not 0 <= i < len(_GPUS):
            raise _NVMLError("Invalid Argument")
        return i

    def by_uuid(uuid: str) -> int:
        hits = [i for i, g in enumerate(_GPUS) if g[0] == uuid]
        if not hits:
            raise _NVMLError("Not Found")
        return hits[0]

    for name, fn in {
        "nvmlInit": None,
        "nvmlDeviceGetCount": lambda: len(_GPUS),
        "nvmlDeviceGetHandleByIndex": handle,
        "nvmlDeviceGetHandleByUUID": by_uuid,
        "nvmlDeviceGetIndex": lambda h: h,
        "nvmlDeviceGetUUID": lambda h: _GPUS[h][0],
        "nvmlDeviceGetName": lambda h: _GPUS[h][3],
        "nvmlSystemGetDriverVersion": lambda: "570.86.15",
        "nvmlDeviceGetPciInfo": lambda h: types.SimpleNamespace(busId=_GPUS[h][1], busIdLegacy=_GPUS[h][2]),
        "nvmlDeviceGetMemoryInfo": lambda h: types.SimpleNamespace(total=_GPUS[h][4], free=0, used=0),
        "nvmlDeviceGetClockInfo": lambda h, t: _GPUS[h][5][t - 1],
        "nvmlDeviceGetMaxClockInfo": lambda h, t: _GPUS[h][6][t - 1],
        "nvmlDeviceGetCudaComputeCapability": lambda h: _GPUS[h][7],
    }.items():
        setattr(nv, name, init if fn is None else checked(name, fn))
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    return nv


class _CUuuid:
    """torch._C._CUuuid as get_device_properties(i).uuid gives it: str() without the GPU- prefix."""

    def __init__(self, text: str) -> None:
        self._text = text

    def __str__(self) -> str:
        return self._text


def _torch_with_gpu(monkeypatch: pytest.MonkeyPatch, uuid: Any) -> None:
    fake = _fake_torch(monkeypatch, cuda=True)
    props = types.SimpleNamespace(name="NVIDIA H200", uuid=uuid, major=9, minor=0, total_memory=143_771 * MIB)
    fake.cuda.get_device_properties = lambda i: props  # type: ignore[attr-defined]


def test_gpu_info_reads_name_memory_clocks_and_capability_as_nvml_gives_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tracekit.collectors.profilers.nvml import gpu_info

    _fake_pynvml(monkeypatch)
    assert gpu_info(1) == {
        "index": 1,
        "name": "NVIDIA H200",
        "uuid": "GPU-2222bbbb-0000-0000-0000-000000000000",
        "driver": "570.86.15",
        "memory_total_mib": 143_771,
        "sm_clock_mhz": 345,
        "mem_clock_mhz": 3201,
        "max_sm_clock_mhz": 1980,
        "max_mem_clock_mhz": 3201,
        "compute_capability": "9.0",
    }
    assert gpu_info(5) is None  # NVML's Invalid Argument for an index it does not have


def test_gpu_info_leaves_out_what_nvml_does_not_support(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracekit.collectors.profilers.nvml import gpu_info

    _fake_pynvml(monkeypatch, unsupported=("nvmlDeviceGetClockInfo", "nvmlDeviceGetCudaComputeCapability"))
    assert gpu_info(0) == {
        "index": 0,
        "name": "NVIDIA H100 80GB HBM3",
        "uuid": "GPU-1111aaaa-0000-0000-0000-000000000000",
        "driver": "570.86.15",
        "memory_total_mib": 81_559,  # 81,559 MiB + 123 bytes, floored
        "max_sm_clock_mhz": 1980,
        "max_mem_clock_mhz": 2619,
    }


def test_nvml_unavailable_is_none_not_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracekit.collectors.profilers import nvml

    nv = _fake_pynvml(monkeypatch, init_error=_NVMLError("NVML Shared Library Not Found"))
    assert nvml._nvml() is None and nv.calls == ["nvmlInit"]
    assert nvml.gpu_info(0) is None and nvml.nvml_uuid_to_index("GPU-1111aaaa") is None
    monkeypatch.setitem(sys.modules, "pynvml", None)  # not installed
    assert nvml._nvml() is None


def test_nvml_uuid_to_index_takes_a_unique_prefix_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracekit.collectors.profilers.nvml import nvml_uuid_to_index, physical_gpu_index

    _fake_pynvml(monkeypatch)
    assert nvml_uuid_to_index("GPU-2222bbbb-0000-0000-0000-000000000000") == 1
    assert nvml_uuid_to_index("GPU-1111") == 0
    assert nvml_uuid_to_index("GPU-") is None  # both GPUs: ambiguous, as CUDA would refuse it
    assert nvml_uuid_to_index("GPU-3333") is None
    # CUDA_VISIBLE_DEVICES by UUID, the second visible device: NVML GPU 0
    assert physical_gpu_index(1, "GPU-2222bbbb,GPU-1111aaaa") == 0


@pytest.mark.parametrize("legacy_only", [False, True])
def test_cuda_device_map_with_torchs_uuid_object_and_nvmls_upper_case_bus_id(
    monkeypatch: pytest.MonkeyPatch, legacy_only: bool
) -> None:
    from tracekit.collectors.gpu import cuda_device_map

    nv = _fake_pynvml(monkeypatch)
    if legacy_only:  # an nvmlPciInfo_t whose busId is empty: the 4-digit legacy field is read
        real = nv.nvmlDeviceGetPciInfo
        nv.nvmlDeviceGetPciInfo = lambda h: types.SimpleNamespace(busId="", busIdLegacy=real(h).busIdLegacy)  # type: ignore[attr-defined]
    _torch_with_gpu(monkeypatch, _CUuuid("2222bbbb-0000-0000-0000-000000000000"))
    ident = cuda_device_map(0, {"0000:19:00.0": 0, "0000:3b:00.0": 1})
    assert ident.to_json() == {
        "cuda_index": 0,
        "name": "NVIDIA H200",
        "uuid": "GPU-2222bbbb-0000-0000-0000-000000000000",
        "nvml_index": 1,
        "pci_bus_id": "0000:3b:00.0",
        "nsys_gpu_id": 1,
        "driver": "570.86.15",
        "compute_capability": "9.0",
        "memory_total_mib": 143_771,
        "how": "uuid",
        "notes": [
            "cuda:0 is NVML GPU 1 (CUDA orders fastest first or follows CUDA_VISIBLE_DEVICES; NVML orders "
            "by PCI bus)"
        ],
    }


def test_cuda_device_map_says_when_nvml_does_not_know_the_uuid(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracekit.collectors.gpu import cuda_device_map

    _fake_pynvml(monkeypatch)
    _torch_with_gpu(monkeypatch, _CUuuid("9999cccc-0000-0000-0000-000000000000"))
    ident = cuda_device_map(0)
    assert (ident.nvml_index, ident.nsys_gpu_id, ident.how) == (None, None, "none")
    assert ident.notes == ["NVML does not know GPU-9999cccc-0000-0000-0000-000000000000: _NVMLError"]


def test_versions_read_the_driver_from_nvml_and_cudnn_only_with_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracekit.collectors.environment import versions

    _fake_pynvml(monkeypatch)
    fake = _fake_torch(monkeypatch, cuda=True)
    fake.backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=lambda: 91002))  # type: ignore[attr-defined]
    found = versions()
    assert (found["driver"], found["cuda"], found["cudnn"]) == ("570.86.15", "12.4", 91002)
    _fake_pynvml(monkeypatch, init_error=_NVMLError("Driver Not Loaded"))
    fake = _fake_torch(monkeypatch, cuda=False)
    fake.backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=lambda: 91002))  # type: ignore[attr-defined]
    found = versions()
    assert "driver" not in found and "cuda" not in found and "cudnn" not in found


# Lengths past a model's position embeddings had failed in every configuration after the model was built
# (exit 1, a run folder of failed configurations): tiny --seq-lens 513 "The expanded size of the tensor (513)
# must match the existing size (512)", roberta-base 513 "index 514 is out of bounds for dimension 1 with size
# 514", gpt2 1018 with 8 generated tokens "IndexError: index out of range in self". 512, 512 and 1017 ran.
@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["--model", "tiny", "--seq-lens", "16,513"],
            "tracekit: --seq-lens 513: model tiny takes at most 512 tokens (its position embeddings)",
        ),
        (
            ["--model", "roberta-base", "--seq-lens", "513"],
            "tracekit: --seq-lens 513: model roberta-base takes at most 512 tokens (its position embeddings)",
        ),
        (
            ["--model", "gpt2", "--seq-lens", "1018", "--gen-tokens", "8"],
            "tracekit: --seq-lens 1018 with --gen-tokens 8: model gpt2 runs its last step over 1025 tokens and "
            "its position embeddings hold 1024; use --seq-lens <= 1017",
        ),
    ],
)
def test_a_sequence_longer_than_the_models_positions_is_one_line_before_torch(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    argv: list[str],
    line: str,
) -> None:
    from tracekit.cli import main

    _no_heavy_imports(monkeypatch)
    base = [a for a in TINY if a not in ("tiny", "--model")]
    base = base[: base.index("--seq-lens")] + base[base.index("--seq-lens") + 2 :]
    assert main(["collect", *base, *argv, "--device", "cpu", "-o", str(tmp_path / "run")]) == 2
    assert _one_line(capsys) == line
    assert list(tmp_path.iterdir()) == []


def test_the_longest_sequences_that_ran_are_accepted() -> None:
    for model, seq, gen in (
        ("tiny", 512, 8),
        ("roberta-base", 512, 8),
        ("gpt2", 1017, 8),
        ("funnel", 4096, 8),
    ):
        sweep.validate(sweep.SweepOptions(model=model, seq_lens=[seq], gen_tokens=gen, device="cpu"))


# --hidden 129 on tiny had failed after the model was built, in every configuration (exit 1): "ValueError: The
# hidden size (129) is not a multiple of the number of attention heads (2)"; --max-time inf timed the untraced
# set until its interval was within 2% (a loaded machine: still running after 300 s)
@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["--hidden", "129"],
            "tracekit: --hidden 129: model tiny gets 2 attention heads (one per 64 of width) and 129 is not a "
            "multiple of 2; use a multiple of 64",
        ),
        (
            ["--model", "gpt2", "--hidden", "200"],
            "tracekit: --hidden 200: model gpt2 gets 3 attention heads (one per 64 of width) and 200 is not a "
            "multiple of 3; use a multiple of 64",
        ),
        (["--max-time", "inf"], "tracekit: --min-time and --max-time must be finite (seconds)"),
        (["--min-time", "inf"], "tracekit: --min-time and --max-time must be finite (seconds)"),
    ],
)
def test_widths_the_heads_do_not_divide_and_endless_budgets_are_one_line(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    argv: list[str],
    line: str,
) -> None:
    from tracekit.cli import main

    _no_heavy_imports(monkeypatch)
    assert main(["collect", *TINY, *argv, "--device", "cpu", "-o", str(tmp_path / "run")]) == 2
    assert _one_line(capsys) == line
    assert list(tmp_path.iterdir()) == []


def test_widths_that_built_are_accepted() -> None:
    # built on this machine: tiny/bert 128 and 192, mobilebert and vit-base 129 (their heads do not split it)
    for model, hidden in (("tiny", 128), ("tiny", 192), ("tiny", 63), ("mobilebert", 129), ("vit-base", 129)):
        seq = [224] if model == "vit-base" else None
        sweep.validate(sweep.SweepOptions(model=model, hidden=hidden, seq_lens=seq, device="cpu"))


@pytest.mark.parametrize(
    ("available", "build", "device", "line"),
    [
        # a CUDA build of torch with no device visible (CUDA_VISIBLE_DEVICES="", a node without a GPU):
        # torch.cuda.is_available() is False while torch.version.cuda names the build's CUDA
        (
            False,
            "12.8",
            "cuda",
            "tracekit: --device cuda needs CUDA, and no CUDA device is visible: run --runtime pytorch with "
            "--device cpu (or auto); `tracekit doctor` says what this machine can run",
        ),
        (
            False,
            None,
            "cuda:0",
            "tracekit: --device cuda needs CUDA, and this torch build has no CUDA: run --runtime pytorch with "
            "--device cpu (or auto); `tracekit doctor` says what this machine can run",
        ),
        (True, "12.8", "cuda:1", "tracekit: cuda:1: only 1 CUDA device(s) visible"),
    ],
)
def test_a_cuda_device_that_is_not_there_is_one_line_before_any_folder(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    available: bool,
    build: str | None,
    device: str,
    line: str,
) -> None:
    from tracekit.cli import main

    _spec_torch(monkeypatch, cuda=available)
    sys.modules["torch"].version.cuda = build  # type: ignore[attr-defined]
    assert (
        main(["collect", *TINY, "--device", device, "--profiler", "none", "-o", str(tmp_path / "run")]) == 2
    )
    assert _one_line(capsys) == line
    assert list(tmp_path.iterdir()) == []
