"""tracekit collect: argument building, device resolution, output layout, atomicity, real tiny collections."""

from __future__ import annotations

import csv
import json
import os
import shutil
import sqlite3
import stat
from pathlib import Path

import pytest

from tracekit.cli import main
from tracekit.collectors.profilers import ncu as ncu_mod
from tracekit.collectors.profilers import nsys as nsys_mod
from tracekit.collectors.profilers.nvml import physical_gpu_index


def _needs(*modules: str) -> None:
    """Skip the calling test where one of ``modules`` cannot be imported (an install without the collection
    extra: torch, transformers, onnx, onnxruntime)."""
    for module in modules:
        pytest.importorskip(module)


TINY = [
    "--model",
    "tiny",
    "--device",
    "cpu",
    "--seq-lens",
    "16",
    "--warmup",
    "1",
    "--iters",
    "3",
    "--max-time",
    "0",  # exactly --iters untraced iterations (no adaptive timing): the layout tests count them
    "--in-process",
]


def _torch_has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACEKIT_CACHE", str(tmp_path_factory.getbasetemp() / "tracekit-cache"))


def _no_hidden(run_dir: Path) -> None:
    leftovers = [p.name for p in run_dir.iterdir() if p.name.startswith(".")]
    assert leftovers == [], leftovers


# -- argument building ---------------------------------------------------------------------------------------
def test_nsys_argv_cpu() -> None:
    argv = nsys_mod.build_profile_argv(
        "/usr/bin/nsys", "/r/x.nsys", ["python", "-m", "w"], cuda=False, gpu_metrics_device=3
    )
    assert argv == [
        "/usr/bin/nsys",
        "profile",
        "-t",
        "nvtx,osrt",
        "--sample=none",
        "--cpuctxsw=none",
        "--force-overwrite=true",
        "-o",
        "/r/x.nsys",
        "python",
        "-m",
        "w",
    ]


def test_nsys_argv_cuda_with_gpu_metrics() -> None:
    argv = nsys_mod.build_profile_argv("nsys", Path("out"), ["py"], cuda=True, gpu_metrics_device=2)
    assert argv == [
        "nsys",
        "profile",
        "-t",
        "cuda,nvtx,osrt",
        "--sample=none",
        "--cpuctxsw=none",
        "--force-overwrite=true",
        "-o",
        "out",
        "--cuda-graph-trace=node",
        "--capture-range=cudaProfilerApi",
        "--capture-range-end=stop",
        "--gpu-metrics-device=2",
        "py",
    ]
    no_metrics = nsys_mod.build_profile_argv("nsys", "out", ["py"], cuda=True, gpu_metrics_device=None)
    assert not any(a.startswith("--gpu-metrics-device") for a in no_metrics)


def test_ncu_argv() -> None:
    argv = ncu_mod.build_profile_argv("ncu", "/r/x.ncu", ["python", "w.py"])
    assert argv == [
        "ncu",
        "--nvtx",
        "--nvtx-include",
        "iteration/",
        "--clock-control",
        "none",
        "--metrics",
        "sm__cycles_active.avg.pct_of_peak_sustained_elapsed,"
        "sm__warps_active.avg.pct_of_peak_sustained_active,sm__cycles_active.avg,"
        "sm__cycles_elapsed.avg,gpu__time_duration.sum",
        "--target-processes",
        "all",
        "--force-overwrite",
        "-o",
        "/r/x.ncu",
        "python",
        "w.py",
    ]
    assert ncu_mod.build_csv_argv("ncu", "/r/x.ncu.ncu-rep") == [
        "ncu",
        "--import",
        "/r/x.ncu.ncu-rep",
        "--csv",
        "--page",
        "raw",
    ]


# -- CUDA_VISIBLE_DEVICES -> physical GPU index ----------------------------------------------------------------
def test_physical_gpu_index_indices() -> None:
    assert physical_gpu_index(0, None) == 0
    assert physical_gpu_index(1, None) == 1
    assert physical_gpu_index(0, "3") == 3
    assert physical_gpu_index(1, "2, 5") == 5
    assert physical_gpu_index(2, "2,5") is None
    assert physical_gpu_index(0, "") is None
    assert physical_gpu_index(0, "-1") is None
    assert physical_gpu_index(1, "4,-1,5") is None  # CUDA stops at the first invalid entry


def test_physical_gpu_index_uuids() -> None:
    table = {"GPU-aaaa-1111": 6, "GPU-bbbb-2222": 1}

    def lookup(uuid: str) -> int | None:
        hits = [i for u, i in table.items() if u.startswith(uuid)]
        return hits[0] if len(hits) == 1 else None

    assert physical_gpu_index(0, "GPU-bbbb-2222,GPU-aaaa-1111", lookup) == 1
    assert physical_gpu_index(1, "GPU-bbbb-2222,GPU-aaaa-1111", lookup) == 6
    assert physical_gpu_index(0, "GPU-aaaa", lookup) == 6  # unique prefix
    assert physical_gpu_index(0, "bbbb-2222", lookup) == 1  # without the GPU- prefix
    assert physical_gpu_index(0, "MIG-0b2c-7a", lookup) is None


# -- nsys finalization (fake nsys install: only a .qdstrm is left, as with Debian's 2022.4) -------------------
def _fake_nsys(root: Path) -> str:
    (root / "bin").mkdir(parents=True)
    (root / "host-linux-x64").mkdir()
    nsys = root / "bin" / "nsys"
    # export: writes a file at -o (argument after -o) from the report (last argument)
    nsys.write_text(
        '#!/bin/sh\nout=""; prev=""\nfor a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done\n'
        'cat "$a" > "$out"\n'
    )
    importer = root / "host-linux-x64" / "QdstrmImporter"
    importer.write_text('#!/bin/sh\nq="$2"; printf report > "${q%.qdstrm}.nsys-rep"\n')
    for p in (nsys, importer):
        p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return str(nsys)


def test_finds_the_importer_of_nsight_computes_bundled_nsys(tmp_path: Path) -> None:
    # the layout of the H200 image's only nsys (Nsight Compute 2025.3.1), whose own import failed there
    host = tmp_path / "nsight-compute" / "2025.3.1" / "host"
    (host / "target-linux-x64").mkdir(parents=True)
    (host / "linux-desktop-glibc_2_11_3-x64").mkdir()
    nsys = host / "target-linux-x64" / "nsys"
    importer = host / "linux-desktop-glibc_2_11_3-x64" / "QdstrmImporter"
    for p in (nsys, importer):
        p.write_text("#!/bin/sh\n")
        p.chmod(p.stat().st_mode | stat.S_IXUSR)
    assert nsys_mod.find_importer(str(nsys)) == importer


def test_finalize_imports_qdstrm_then_exports(tmp_path: Path) -> None:
    nsys = _fake_nsys(tmp_path / "nsight")
    assert nsys_mod.find_importer(nsys) == tmp_path / "nsight" / "host-linux-x64" / "QdstrmImporter"
    base = tmp_path / "out" / "onnx_b1_s16.nsys"
    base.parent.mkdir()
    base.with_name(base.name + ".qdstrm").write_text("raw")
    report, sqlite = nsys_mod.finalize(nsys, base)
    assert report.name == "onnx_b1_s16.nsys.nsys-rep"
    assert sqlite.name == "onnx_b1_s16.nsys.sqlite" and sqlite.read_text() == "report"
    assert not base.with_name(base.name + ".qdstrm").exists()


def test_finalize_says_what_to_do_when_the_importer_lacks_a_library(tmp_path: Path) -> None:
    # Nsight Compute's bundled nsys on the H200 image: its QdstrmImporter could not load libdw.so.1
    from tracekit.errors import RunFailure

    nsys = _fake_nsys(tmp_path / "nsight")
    importer = tmp_path / "nsight" / "host-linux-x64" / "QdstrmImporter"
    importer.write_text(
        "#!/bin/sh\necho 'QdstrmImporter: error while loading shared libraries: libdw.so.1: cannot open shared "
        "object file: No such file or directory' >&2\nexit 127\n"
    )
    base = tmp_path / "out" / "pytorch_b1_s128.nsys"
    base.parent.mkdir()
    base.with_name(base.name + ".qdstrm").write_text("raw")
    with pytest.raises(RunFailure) as info:
        nsys_mod.finalize(nsys, base)
    assert str(info.value).startswith(
        "QdstrmImporter failed on pytorch_b1_s128.nsys.qdstrm: QdstrmImporter: "
    )
    assert "libdw.so.1" in str(info.value) and "LD_LIBRARY_PATH" in str(info.value)


def test_finalize_without_report_fails_in_one_line(tmp_path: Path) -> None:
    from tracekit.errors import RunFailure

    nsys = _fake_nsys(tmp_path / "nsight")
    with pytest.raises(RunFailure, match="nsys wrote no report"):
        nsys_mod.finalize(nsys, tmp_path / "missing.nsys")


# -- refusals (exit 2, one line) ------------------------------------------------------------------------------
def _err_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_unknown_runtime_lists_choices(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as info:  # argparse's choices: refused before anything is imported
        main(["collect", "--runtime", "tensorrt", "-o", str(tmp_path / "r")])
    assert info.value.code == 2
    line = _err_line(capsys)
    assert "invalid choice: 'tensorrt'" in line
    for name in (
        "pytorch",
        "torchscript",
        "cuda-graphs",
        "compile",
        "compile-cudagraphs",
        "onnx",
        "onnx-cuda-graphs",
    ):
        assert name in line
    assert not (tmp_path / "r").exists()


def test_unknown_model_lists_choices(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _needs("torch", "transformers")
    assert main(["collect", "--model", "bert-huge", "-o", str(tmp_path / "r")]) == 2
    line = _err_line(capsys)
    assert (
        "unknown model 'bert-huge'" in line and "bert-base" in line and "resnet50" in line and "gpt2" in line
    )


@pytest.mark.parametrize("runtime", ["cuda-graphs", "compile-cudagraphs", "onnx-cuda-graphs"])
def test_cuda_only_runtime_refuses_without_cuda(
    runtime: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _needs("torch", "transformers", "onnx", "onnxruntime")
    if _torch_has_cuda():
        pytest.skip("CUDA is available here")
    assert (
        main(
            [
                "collect",
                "--runtime",
                runtime,
                "--model",
                "tiny",
                "--profiler",
                "none",
                "-o",
                str(tmp_path / "r"),
            ]
        )
        == 2
    )
    assert _err_line(capsys).startswith(f"tracekit: runtime '{runtime}' needs CUDA, and ")
    assert main(["collect", "--runtime", runtime, "--device", "cpu", "-o", str(tmp_path / "r")]) == 2
    assert "needs a CUDA device" in _err_line(capsys)


def test_device_cuda_refuses_without_cuda(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _needs("torch", "transformers")
    if _torch_has_cuda():
        pytest.skip("CUDA is available here")
    assert (
        main(
            [
                "collect",
                "--runtime",
                "pytorch",
                "--device",
                "cuda",
                "--model",
                "tiny",
                "--profiler",
                "none",
                "-o",
                str(tmp_path / "r"),
            ]
        )
        == 2
    )
    assert "--device cuda needs CUDA" in _err_line(capsys)


def test_missing_nsys_says_how_to_install(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _needs("torch", "transformers")
    monkeypatch.delenv("TRACEKIT_NSYS", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["collect", *TINY, "--profiler", "nsys", "-o", str(tmp_path / "r")]) == 2
    line = _err_line(capsys)
    assert "nsys (Nsight Systems) not found" in line and "apt-get install nsight-systems" in line


def test_missing_ncu_says_how_to_install(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _needs("torch", "transformers")
    monkeypatch.delenv("TRACEKIT_NCU", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    # A CUDA machine without ncu (on a CPU-only one the missing GPU is named first: test_collect_cpu_runtimes)
    monkeypatch.setattr("tracekit.collectors.environment.resolve_device", lambda *a: "cuda:0")
    argv = [a for a in TINY if a not in ("--device", "cpu")]
    assert main(["collect", *argv, "--profiler", "ncu", "-o", str(tmp_path / "r")]) == 2
    assert "ncu (Nsight Compute) not found" in _err_line(capsys)


def test_ort_profiler_needs_onnx_runtime(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _needs("torch", "transformers")
    assert (
        main(["collect", "--runtime", "pytorch", *TINY, "--profiler", "ort", "-o", str(tmp_path / "r")]) == 2
    )
    assert "--profiler ort profiles ONNX Runtime" in _err_line(capsys)


def test_bad_batch_sizes_is_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as info:
        main(["collect", "--batch-sizes", "1,x", "-o", str(tmp_path / "r")])
    assert info.value.code == 2


# -- output layout (real tiny run, no profiler) -------------------------------------------------------------
def test_layout_run_json_and_latency_csv(tmp_path: Path) -> None:
    _needs("torch", "transformers")
    out = tmp_path / "run"
    assert (
        main(
            [
                "collect",
                "--runtime",
                "pytorch",
                *TINY,
                "--batch-sizes",
                "1,2",
                "--profiler",
                "none",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    run = json.loads((out / "run.json").read_text())
    assert run["kind"] == "collect" and run["synthetic"] is False
    assert (run["runtime"], run["model"], run["device"], run["precision"]) == (
        "pytorch",
        "tiny",
        "cpu",
        "fp32",
    )
    assert run["command"][:2] == ["tracekit", "collect"]
    assert run["versions"]["torch"] and run["versions"]["python"] and run["cpu"]
    assert [(c["batch_size"], c["seq_len"], c["status"]) for c in run["configs"]] == [
        (1, 16, "ok"),
        (2, 16, "ok"),
    ]
    assert all(c["untraced_latency_ms"]["count"] == 3 and c["traces"] == {} for c in run["configs"])
    with open(out / "latency.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == [
        "runtime",
        "model",
        "device",
        "precision",
        "batch_size",
        "seq_len",
        "iteration",
        "latency_ms",
        "cpu_ms",
        "dropped",
        "set",
    ]
    assert all(float(r["cpu_ms"]) >= 0 and r["dropped"] in ("", "warmup", "outlier") for r in rows)
    assert {r["set"] for r in rows} == {"untraced"}  # no profiler: the untraced sets only
    assert [(r["batch_size"], r["iteration"]) for r in rows] == [
        ("1", "0"),
        ("1", "1"),
        ("1", "2"),
        ("2", "0"),
        ("2", "1"),
        ("2", "2"),
    ]
    assert all(float(r["latency_ms"]) > 0 for r in rows)
    mean_b1 = sum(float(r["latency_ms"]) for r in rows[:3]) / 3
    assert run["configs"][0]["untraced_latency_ms"]["mean"] == pytest.approx(mean_b1, rel=1e-4)
    _no_hidden(out)
    # an existing run is not overwritten silently
    assert main(["collect", "--runtime", "pytorch", *TINY, "--profiler", "none", "-o", str(out)]) == 2


# -- atomicity: a crash or Ctrl-C mid-sweep leaves completed configs intact, no temp files ---------------------
def test_failure_mid_sweep_keeps_completed_configs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _needs("torch", "transformers")
    import tracekit.collectors.worker as worker

    real = worker.run_config

    def flaky(cfg: dict) -> dict:
        if cfg["batch_size"] == 2 and cfg["profiler"] == "torch":
            raise RuntimeError("simulated crash\nsecond line")
        return real(cfg)

    monkeypatch.setattr(worker, "run_config", flaky)
    out = tmp_path / "run"
    assert (
        main(
            [
                "collect",
                "--runtime",
                "pytorch",
                *TINY,
                "--batch-sizes",
                "1,2,4",
                "--profiler",
                "torch",
                "-o",
                str(out),
            ]
        )
        == 1
    )
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "1 of 3 configurations failed; first: RuntimeError: simulated crash" in err
    run = json.loads((out / "run.json").read_text())
    assert [c["status"] for c in run["configs"]] == ["ok", "failed", "ok"]
    assert run["configs"][1]["error"] == "RuntimeError: simulated crash"
    assert (out / "pytorch_b1_s16.torch.json.gz").is_file() and (
        out / "pytorch_b4_s16.torch.json.gz"
    ).is_file()
    assert not list(out.glob("pytorch_b2_s16*"))
    with open(out / "latency.csv") as fh:
        assert sorted({r["batch_size"] for r in csv.DictReader(fh)}) == ["1", "4"]
    _no_hidden(out)


def test_interrupt_mid_sweep_leaves_no_partial_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _needs("torch", "transformers")
    import tracekit.collectors.worker as worker

    real = worker.run_config

    def interrupted(cfg: dict) -> dict:
        if cfg["batch_size"] == 2 and cfg["profiler"] == "torch":
            Path(cfg["trace_out"]).write_text("half a trace")  # a profiler caught mid-write
            raise KeyboardInterrupt
        return real(cfg)

    monkeypatch.setattr(worker, "run_config", interrupted)
    out = tmp_path / "run"
    assert (
        main(
            [
                "collect",
                "--runtime",
                "pytorch",
                *TINY,
                "--batch-sizes",
                "1,2",
                "--profiler",
                "torch",
                "-o",
                str(out),
            ]
        )
        == 130
    )
    run = json.loads((out / "run.json").read_text())
    # the configuration not finished is listed as skipped, and the run says it was interrupted
    assert [(c["batch_size"], c["status"]) for c in run["configs"]] == [(1, "ok"), (2, "skipped")]
    assert run["status"] == "interrupted" and run["finished"] is None
    assert sorted(p.name for p in out.iterdir()) == [
        "latency.csv",
        "pytorch_b1_s16.torch.json.gz",
        "pytorch_b1_s16.torch.meta.json",
        "run.json",
    ]


# -- real tiny collections ----------------------------------------------------------------------------------
def test_real_torch_profiler_collection(tmp_path: Path) -> None:
    _needs("torch", "transformers")
    out = tmp_path / "run"
    assert main(["collect", "--runtime", "pytorch", *TINY, "--profiler", "torch", "-o", str(out)]) == 0
    trace = out / "pytorch_b1_s16.torch.json.gz"
    meta = json.loads((out / "pytorch_b1_s16.torch.meta.json").read_text())
    assert (
        meta["synthetic"] is False and meta["made_by"] == "tracekit collect" and meta["profiler"] == "torch"
    )
    assert (meta["runtime"], meta["model"], meta["batch_size"], meta["seq_len"]) == ("pytorch", "tiny", 1, 16)
    assert meta["untraced_latency_ms"]["count"] == 3
    import gzip

    events = json.loads(gzip.open(trace).read())["traceEvents"]
    assert sum(1 for e in events if e.get("name") == "iteration" and e.get("ph") == "X") == 3
    run = json.loads((out / "run.json").read_text())
    config = run["configs"][0]
    assert config["traces"] == {"torch": "pytorch_b1_s16.torch.json.gz"}
    assert config["perturbation"]["torch"] == pytest.approx(
        config["traced_stats"]["torch"]["median"] / config["untraced_latency_ms"]["median"]
    )
    try:
        from tracekit.readers import read_trace

        parsed = read_trace(trace)
    except ModuleNotFoundError:
        return
    assert parsed.meta["synthetic"] is False
    assert parsed.ranges.filter(parsed.ranges["name"] == "iteration").height == 3


def test_real_ort_profiler_collection(tmp_path: Path) -> None:
    _needs("torch", "transformers", "onnx", "onnxruntime")
    out = tmp_path / "run"
    assert main(["collect", "--runtime", "onnx", *TINY, "--profiler", "ort", "-o", str(out)]) == 0
    import gzip

    events = json.loads(gzip.open(out / "onnx_b1_s16.ort.json.gz").read())
    runs = [e for e in events if e.get("name") == "model_run"]
    assert len(runs) == 1 + 3  # warm-up runs are in ORT profiles (the sidecar says how many)
    assert any(e.get("cat") == "Node" for e in events)
    meta = json.loads((out / "onnx_b1_s16.ort.meta.json").read_text())
    assert meta["warmup_iterations"] == 1 and meta["warmup_in_trace"] is True
    assert meta["runtime_details"]["providers"] == ["CPUExecutionProvider"]
    # the timed iterations are the profile's runs, so report sets the traced median against the untraced one
    # (the sidecar had said 'iteration', the collector's NVTX name, and report gave no profiler ratio)
    assert meta["range"] == "model_run"
    import tracekit

    row = tracekit.report([str(out)]).configs.row(0, named=True)
    assert row["profiler_ratio"] == pytest.approx(row["traced_median_ms"] / row["untraced_latency_ms"])
    cached = list((Path(os.environ["TRACEKIT_CACHE"]) / "onnx").glob("tiny-fp32-opset17-*.onnx"))
    assert len(cached) == 1


def test_real_torchscript_collection(tmp_path: Path) -> None:
    _needs("torch", "transformers")
    out = tmp_path / "run"
    argv = [*TINY, "--warmup", "2"]  # the last --warmup wins: TorchScript needs two (profiling executor)
    assert main(["collect", "--runtime", "torchscript", *argv, "--profiler", "none", "-o", str(out)]) == 0
    run = json.loads((out / "run.json").read_text())
    assert run["configs"][0]["status"] == "ok"


@pytest.mark.slow
def test_real_compile_collection(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["collect", "--runtime", "compile", *TINY, "--profiler", "none", "-o", str(out)]) == 0
    assert json.loads((out / "run.json").read_text())["configs"][0]["status"] == "ok"


def test_onnx_export_is_cached(tmp_path: Path) -> None:
    _needs("torch", "transformers", "onnx")
    from tracekit.collectors.inputs import make_inputs
    from tracekit.collectors.runtimes.onnx import export_onnx, export_path
    from tracekit.collectors.zoo import ModelSpec, build

    model = build(ModelSpec("tiny", layers=1))
    inputs = make_inputs(model, 2, 8, "cpu", "fp32")
    first = export_onnx(model, inputs, "fp32", 17)
    assert first == export_path(model, "fp32", 17) and first.name.startswith("tiny-fp32-opset17-")
    mtime = first.stat().st_mtime_ns
    assert export_onnx(model, inputs, "fp32", 17).stat().st_mtime_ns == mtime
    other = build(ModelSpec("tiny", layers=2))
    assert export_path(other, "fp32", 17) != first  # the config hash separates width/depth variants
    assert not [p for p in first.parent.iterdir() if p.name.startswith(".")]


def test_zoo_overrides() -> None:
    _needs("torch", "transformers")
    from tracekit.collectors.zoo import ModelSpec, build, model_kind

    model = build(ModelSpec("tiny", layers=1, hidden=128))
    assert model.config["num_hidden_layers"] == 1 and model.config["hidden_size"] == 128
    assert model.config["num_attention_heads"] == 2 and model.config["intermediate_size"] == 512
    assert [model_kind(m) for m in ("bert-base", "gpt2", "resnet50", "vit-base")] == [
        "text",
        "generate",
        "image",
        "image",
    ]


def test_nvtx_emitter_bypasses_enabled_check() -> None:
    from tracekit.collectors.harness import Nvtx

    nv = Nvtx()
    assert nv.method == "nvtx-domain"
    with nv.range("iteration"):  # a no-op without a tool attached, and must not raise
        pass


@pytest.mark.skipif(shutil.which("nsys") is None, reason="nsys is not installed")
def test_real_nsys_collection(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["collect", "--runtime", "onnx", *TINY, "--profiler", "nsys", "-o", str(out)]) == 0
    sqlite = out / "onnx_b1_s16.nsys.sqlite"
    assert sqlite.is_file() and (out / "onnx_b1_s16.nsys.nsys-rep").is_file()
    assert not list(out.glob("*.qdstrm"))
    con = sqlite3.connect(f"file:{sqlite}?mode=ro", uri=True)
    names = con.execute(
        "SELECT COALESCE(n.text, s.value), COUNT(*) FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
        "WHERE n.eventType = 59 GROUP BY 1"
    ).fetchall()
    con.close()
    assert dict(names) == {"iteration": 3, "warmup": 1}
    meta = json.loads((out / "onnx_b1_s16.nsys.meta.json").read_text())
    assert meta["profiler"] == "nsys" and meta["nvtx"] == "nvtx-domain"
    try:
        from tracekit.readers import read_trace

        trace = read_trace(sqlite)
    except ModuleNotFoundError:
        return
    assert trace.ranges.filter(trace.ranges["name"] == "iteration").height == 3
    assert trace.meta["synthetic"] is False


def test_the_default_profiler_of_a_cpu_run_records_operators(monkeypatch: pytest.MonkeyPatch) -> None:
    # nsys records no operators of a CPU run (its trace has no verdict): with --device cpu the default is the
    # runtime's own profiler even where nsys is installed (firsthour13); on a GPU it stays nsys
    from tracekit.collectors import sweep
    from tracekit.collectors.profilers import nsys

    monkeypatch.setattr(nsys, "find_nsys", lambda: "/usr/bin/nsys")
    assert sweep.default_profilers("onnx", "cpu") == ["ort"]
    assert sweep.default_profilers("pytorch", "cpu") == ["torch"]
    assert sweep.default_profilers("pytorch", "cuda:0") == ["nsys"]
    monkeypatch.setattr(nsys, "find_nsys", lambda: None)
    assert sweep.default_profilers("pytorch", "cuda:0") == ["torch"]
