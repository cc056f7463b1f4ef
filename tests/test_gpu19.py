"""gpu19: the GPU calls of collection checked against the libraries' own source, pinned with fakes.

No GPU and no real torch here: fake ``torch`` / ``pynvml`` / ``onnxruntime`` modules stand in, shaped as the
real ones are (each fake says which source it follows). What was found right is pinned too, so that a change
that breaks it fails here first.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
MIB = 1024 * 1024


def _load_benchmark(name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fake_torch(monkeypatch: pytest.MonkeyPatch, cuda: bool = True, count: int = 1) -> types.ModuleType:
    fake = types.ModuleType("torch")
    fake.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        is_available=lambda: cuda, device_count=lambda: count if cuda else 0
    )
    fake.version = types.SimpleNamespace(cuda="13.0" if cuda else None)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", fake)
    return fake


# -- NVML: the bindings before convertStrBytes take and give bytes ----------------------------------------------
# nvidia-ml-py 13.615 (this venv's pynvml.py) wraps nvmlDeviceGetHandleByUUID, nvmlDeviceGetUUID, GetName and
# nvmlSystemGetDriverVersion in convertStrBytes: str in, str out. The older bindings do not: their
#     def nvmlDeviceGetHandleByUUID(uuid):
#         c_uuid = c_char_p(uuid)
# (NVIDIA's pynvml.py before convertStrBytes, and the gpuopenanalytics ``pynvml`` package up to 11.4.1, which
# NVIDIA's own pytorch:24.07 container ships and which shadows nvidia-ml-py's module: vllm-project/vllm#8953,
# huggingface/optimum-benchmark#240) give bytes back and take only bytes: ctypes.c_char_p(str) raises
# "TypeError: bytes or integer address expected instead of str instance".
class _NVMLError(Exception):
    pass


_OLD_GPUS = [  # (uuid, busId, busIdLegacy, name)
    (
        b"GPU-1111aaaa-0000-0000-0000-000000000000",
        b"00000000:19:00.0",
        b"0000:19:00.0",
        b"NVIDIA H100 80GB HBM3",
    ),
    (b"GPU-2222bbbb-0000-0000-0000-000000000000", b"00000000:3B:00.0", b"0000:3B:00.0", b"NVIDIA H200"),
]


def _old_pynvml(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    nv = types.ModuleType("pynvml")
    nv.NVMLError = _NVMLError  # type: ignore[attr-defined]
    nv.NVML_CLOCK_SM, nv.NVML_CLOCK_MEM = 1, 2  # type: ignore[attr-defined]

    def by_uuid(uuid: Any) -> int:
        c_uuid = ctypes.c_char_p(uuid)  # as the old binding does: a str raises TypeError here
        hits = [i for i, g in enumerate(_OLD_GPUS) if g[0] == c_uuid.value]
        if not hits:
            raise _NVMLError("Not Found")
        return hits[0]

    def by_index(i: int) -> int:
        if not 0 <= i < len(_OLD_GPUS):
            raise _NVMLError("Invalid Argument")
        return i

    for name, fn in {
        "nvmlInit": lambda: None,
        "nvmlDeviceGetCount": lambda: len(_OLD_GPUS),
        "nvmlDeviceGetHandleByIndex": by_index,
        "nvmlDeviceGetHandleByUUID": by_uuid,
        "nvmlDeviceGetIndex": lambda h: h,
        "nvmlDeviceGetUUID": lambda h: _OLD_GPUS[h][0],
        "nvmlDeviceGetName": lambda h: _OLD_GPUS[h][3],
        "nvmlSystemGetDriverVersion": lambda: b"535.54.03",
        "nvmlDeviceGetPciInfo": lambda h: types.SimpleNamespace(
            busId=_OLD_GPUS[h][1], busIdLegacy=_OLD_GPUS[h][2]
        ),
        "nvmlDeviceGetMemoryInfo": lambda h: types.SimpleNamespace(total=150_754_820_096, free=0, used=0),
        "nvmlDeviceGetClockInfo": lambda h, t: (345, 3201)[t - 1],
        "nvmlDeviceGetMaxClockInfo": lambda h, t: (1980, 3201)[t - 1],
        "nvmlDeviceGetCudaComputeCapability": lambda h: (9, 0),
    }.items():
        setattr(nv, name, fn)
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    return nv


class _CUuuid:
    """torch._C._CUuuid as get_device_properties(i).uuid gives it: str() without the GPU- prefix (H200 loan)."""

    def __init__(self, text: str) -> None:
        self._text = text

    def __str__(self) -> str:
        return self._text


def _torch_with_h200(monkeypatch: pytest.MonkeyPatch, uuid: str) -> None:
    fake = _fake_torch(monkeypatch)
    props = types.SimpleNamespace(
        name="NVIDIA H200", uuid=_CUuuid(uuid), major=9, minor=0, total_memory=143_771 * MIB
    )
    fake.cuda.get_device_properties = lambda i: props  # type: ignore[attr-defined]


def test_cuda_device_map_maps_the_gpu_with_an_old_nvml_binding_that_takes_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tracekit.collectors.gpu import cuda_device_map

    _old_pynvml(monkeypatch)
    _torch_with_h200(monkeypatch, "2222bbbb-0000-0000-0000-000000000000")
    ident = cuda_device_map(0, {"0000:19:00.0": 0, "0000:3b:00.0": 1})
    # before: how "none", nvml_index None and the note "NVML does not know GPU-2222bbbb-...: TypeError", so
    # the run had no NVML index, no nsys GPU id and no GPU metrics, on a GPU NVML knows well
    assert ident.to_json() == {
        "cuda_index": 0,
        "name": "NVIDIA H200",
        "uuid": "GPU-2222bbbb-0000-0000-0000-000000000000",
        "nvml_index": 1,
        "pci_bus_id": "0000:3b:00.0",
        "nsys_gpu_id": 1,
        "driver": "535.54.03",
        "compute_capability": "9.0",
        "memory_total_mib": 143_771,
        "how": "uuid",
        "notes": [
            "cuda:0 is NVML GPU 1 (CUDA orders fastest first or follows CUDA_VISIBLE_DEVICES; NVML orders "
            "by PCI bus)"
        ],
    }


def test_cuda_device_map_still_says_an_unknown_uuid_with_an_old_binding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tracekit.collectors.gpu import cuda_device_map

    _old_pynvml(monkeypatch)
    _torch_with_h200(monkeypatch, "9999cccc-0000-0000-0000-000000000000")
    ident = cuda_device_map(0)
    assert (ident.nvml_index, ident.nsys_gpu_id, ident.how) == (None, None, "none")
    assert ident.notes == ["NVML does not know GPU-9999cccc-0000-0000-0000-000000000000: _NVMLError"]


def test_the_other_nvml_reads_decode_an_old_bindings_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Right before this round, pinned: gpu_info, the UUID prefix lookup and the driver version decode bytes."""
    from tracekit.collectors.environment import versions
    from tracekit.collectors.profilers.nvml import gpu_info, nvml_uuid_to_index

    _old_pynvml(monkeypatch)
    assert gpu_info(1) == {
        "index": 1,
        "name": "NVIDIA H200",
        "uuid": "GPU-2222bbbb-0000-0000-0000-000000000000",
        "driver": "535.54.03",
        "memory_total_mib": 143_771,
        "sm_clock_mhz": 345,
        "mem_clock_mhz": 3201,
        "max_sm_clock_mhz": 1980,
        "max_mem_clock_mhz": 3201,
        "compute_capability": "9.0",
    }
    assert nvml_uuid_to_index("GPU-2222") == 1 and nvml_uuid_to_index("GPU-") is None
    fake = _fake_torch(monkeypatch)
    fake.backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=lambda: 91900))  # type: ignore[attr-defined]
    assert versions()["driver"] == "535.54.03"


# -- torch.compile(mode="reduce-overhead"): the graphs Inductor's cudagraph trees recorded -------------------------
# torch 2.13 torch/_inductor/cudagraph_trees.py: get_manager(device_index, create_if_none_exists=True);
# CUDAGraphTreeManager.roots: dict[FunctionID, list[CUDAGraphNode]]; a function run while another node is current
# is recorded as that node's child (``child_nodes = self.roots if self.current_node is None else
# self.current_node.children``), CUDAGraphNode.children: dict[FunctionID, list[CUDAGraphNode]]; shutdown() walks
# roots and then every node's children to reach every graph. counters["inductor"]["cudagraph_skips"] is bumped by
# cudagraph_utils.log_cudagraph_skip_and_bump_counter.
class _Node:
    def __init__(self, children: dict[str, list[_Node]] | None = None) -> None:
        self.children = children or {}


def _fake_inductor(monkeypatch: pytest.MonkeyPatch, roots: Any, skips: int = 0) -> list[tuple[int, bool]]:
    asked: list[tuple[int, bool]] = []
    manager = types.SimpleNamespace(roots=roots)

    def get_manager(device_index: int, create_if_none_exists: bool = True) -> Any:
        asked.append((device_index, create_if_none_exists))
        return manager

    torch = _fake_torch(monkeypatch)
    inductor = types.ModuleType("torch._inductor")
    trees = types.ModuleType("torch._inductor.cudagraph_trees")
    trees.get_manager = get_manager  # type: ignore[attr-defined]
    inductor.cudagraph_trees = trees  # type: ignore[attr-defined]
    dynamo = types.ModuleType("torch._dynamo")
    dynamo_utils = types.ModuleType("torch._dynamo.utils")
    dynamo_utils.counters = {"inductor": {"cudagraph_skips": skips}}  # type: ignore[attr-defined]
    dynamo.utils = dynamo_utils  # type: ignore[attr-defined]
    torch._inductor = inductor  # type: ignore[attr-defined]
    torch._dynamo = dynamo  # type: ignore[attr-defined]
    for name, module in {
        "torch._inductor": inductor,
        "torch._inductor.cudagraph_trees": trees,
        "torch._dynamo": dynamo,
        "torch._dynamo.utils": dynamo_utils,
    }.items():
        monkeypatch.setitem(sys.modules, name, module)
    return asked


def test_recorded_graphs_counts_every_graph_of_the_tree_not_only_its_roots(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tracekit.collectors.runtimes.base import RunContext
    from tracekit.collectors.runtimes.compile import CompileCudaGraphsRuntime, recorded_graphs

    # a forward split by two graph breaks: the first function a root, the next its child, the third the
    # child's child, which was recorded twice (a re-record beside the first): 4 graphs
    tree = {"f0": [_Node({"f1": [_Node({"f2": [_Node(), _Node()]})]})]}
    asked = _fake_inductor(monkeypatch, tree)
    assert recorded_graphs(1) == 4  # before: 1 (the roots alone)
    assert asked == [(1, False)]  # never makes a manager of its own
    runtime = CompileCudaGraphsRuntime()
    runtime.ctx = RunContext(model=None, inputs=(), device="cuda:1", precision="fp16")
    runtime._skips_before = 0
    assert runtime.describe() == {
        "runtime": "compile-cudagraphs",
        "mode": "reduce-overhead",
        "cuda_graphs_used": True,
        "graphs_recorded": 4,
        "cudagraph_skips": 0,
    }


def test_recorded_graphs_without_a_tree_is_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracekit.collectors.runtimes.compile import recorded_graphs

    _fake_inductor(monkeypatch, None)  # after shutdown(): roots None
    assert recorded_graphs(0) == 0
    _fake_inductor(monkeypatch, {})  # a manager that recorded nothing (every function skipped)
    assert recorded_graphs(0) == 0


# -- benchmarks/gpu_validate.py: the nsys it looks for, the runtimes it asks for on the GPU -------------------------
def _gpu_validate(monkeypatch: pytest.MonkeyPatch, bundled: str | None) -> types.ModuleType:
    """gpu_validate with gpu_check's CUDA preflight passing and ``bundled`` as what gpu_check's nsys_for_check
    finds (TRACEKIT_NSYS, PATH, else the nsys Nsight Compute bundles: the only nsys of the H200 image of the
    2026-11-28 loans, which had none on PATH)."""
    monkeypatch.setattr(sys, "path", list(sys.path))  # preflight puts benchmarks/ on it
    gpu_check = _load_benchmark("gpu_check")
    monkeypatch.setattr(gpu_check, "preflight", lambda device: None)
    monkeypatch.setattr(gpu_check, "nsys_for_check", lambda: bundled)
    monkeypatch.setitem(sys.modules, "gpu_check", gpu_check)
    from tracekit.collectors.profilers import nsys as nsys_mod

    monkeypatch.setattr(nsys_mod, "find_nsys", lambda: None)  # none on PATH, TRACEKIT_NSYS unset
    return _load_benchmark("gpu_validate")


def test_gpu_validate_collects_with_the_nsys_nsight_compute_bundles(monkeypatch: pytest.MonkeyPatch) -> None:
    bundled = "/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys"
    validate = _gpu_validate(monkeypatch, bundled)
    # main() sets TRACEKIT_NSYS itself: set then delete through monkeypatch so that its undo removes it
    monkeypatch.setenv("TRACEKIT_NSYS", "unset by the test")
    monkeypatch.delenv("TRACEKIT_NSYS")
    # before: "needs Nsight Systems (nsys) on PATH" (exit 2), where gpu_check collects with the bundled one
    assert validate.preflight("cuda:0") is None
    assert validate.os.environ["TRACEKIT_NSYS"] == bundled
    monkeypatch.delenv("TRACEKIT_NSYS")
    validate = _gpu_validate(monkeypatch, None)
    assert validate.preflight("cuda:0") == (
        "needs Nsight Systems (nsys): none on PATH or in TRACEKIT_NSYS, and no nsys bundled with Nsight Compute"
    )


def test_gpu_validate_does_not_collect_a_runtime_doctor_says_runs_on_the_cpu_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """doctor's runtimes: ``onnx`` works with ``devices: ["cpu"]`` where ORT's CUDA provider does not load (the
    CPU build of onnxruntime on the H200 image). Collecting it with --device cuda:0 only ended in exit 2."""
    validate = _gpu_validate(monkeypatch, "/usr/local/bin/nsys")
    monkeypatch.setenv("TRACEKIT_NSYS", "unset by the test")
    monkeypatch.delenv("TRACEKIT_NSYS")
    doc = {
        "profilers": {"ncu": {"works": False}},
        "onnxruntime": {"why": "no CUDAExecutionProvider in this build (install onnxruntime-gpu)"},
        "runtimes": {
            "pytorch": {"works": True, "devices": ["cpu", "cuda"]},
            "torchscript": {"works": True, "devices": ["cpu", "cuda"]},
            "cuda-graphs": {"works": True, "devices": ["cuda"]},
            "onnx": {"works": True, "devices": ["cpu"]},
            "onnx-cuda-graphs": {
                "works": False,
                "why": "needs ORT's CUDA provider (no CUDAExecutionProvider)",
            },
            "compile": {"works": True, "devices": ["cpu", "cuda"]},
            "compile-cudagraphs": {"works": True, "devices": ["cuda"]},
        },
    }
    from tracekit.collectors import doctor

    monkeypatch.setattr(doctor, "diagnose", lambda: doc)
    collected: list[str] = []

    def collect(runtime: str, out: Path, args: Any, ncu: bool) -> tuple[int, float]:
        collected.append(runtime)
        return 0, 1.0

    monkeypatch.setattr(validate, "collect", collect)
    monkeypatch.setattr(validate, "tracekit", lambda *argv: 0)
    assert validate.main(["-o", str(tmp_path / "v")]) == 1
    assert collected == ["pytorch", "torchscript", "cuda-graphs", "compile", "compile-cudagraphs"]
    summary = json.loads((tmp_path / "v" / "validate.json").read_text())
    assert summary["failures"] == [
        "onnx: cannot run on cuda:0 here (doctor: it runs on the cpu only; no CUDAExecutionProvider in this "
        "build (install onnxruntime-gpu))",
        "onnx-cuda-graphs: cannot run here (needs ORT's CUDA provider (no CUDAExecutionProvider))",
    ]


# -- benchmarks/gpu_check.py: what a lent GPU should show of the runtimes' own accounts -----------------------------
H200 = REPO / "sample_traces" / "h200_bert_fp16"


def test_gpu_check_checks_the_runtime_details_of_the_committed_h200_graph_runs() -> None:
    gpu_check = _load_benchmark("gpu_check")
    checks = gpu_check.runtime_checks(H200 / "compile-cudagraphs", "compile-cudagraphs")
    assert [(c["check"], c["ok"], c["detail"]) for c in checks] == [
        (
            "runtime used CUDA graphs",
            True,
            "compile-cudagraphs b1: cuda_graphs_used True (1 graph(s) in Inductor's cudagraph trees, "
            "0 cudagraph skips)",
        ),
        (
            "runtime used CUDA graphs",
            True,
            "compile-cudagraphs b8: cuda_graphs_used True (2 graph(s) in Inductor's cudagraph trees, "
            "0 cudagraph skips)",
        ),
    ]
    checks = gpu_check.runtime_checks(H200 / "cuda-graphs", "cuda-graphs")
    assert [(c["ok"], c["detail"]) for c in checks] == [
        (True, "cuda-graphs b1: cuda_graphs_used True"),
        (True, "cuda-graphs b8: cuda_graphs_used True"),
    ]
    assert gpu_check.runtime_checks(H200 / "pytorch", "pytorch") == []  # nothing to say of eager runs


def _run_dir(tmp_path: Path, details: list[dict[str, Any] | None], status: str = "ok") -> Path:
    """A synthetic run directory: run.json only, one configuration per ``details`` (batch 1, 8, ...)."""
    run = tmp_path / "synthetic-run"
    run.mkdir()
    configs = [
        {"batch_size": b, "seq_len": 128, "status": status, "runtime_details": d}
        for b, d in zip((1, 8, 16), details, strict=False)
    ]
    (run / "run.json").write_text(json.dumps({"synthetic": True, "configs": configs}))
    return run


def test_gpu_check_asks_an_onnx_cuda_run_for_the_cuda_provider_and_its_copies(tmp_path: Path) -> None:
    gpu_check = _load_benchmark("gpu_check")
    on_cuda = {
        "runtime": "onnx",
        "providers": ["CUDAExecutionProvider", "CPUExecutionProvider"],
        "provider_used": "CUDAExecutionProvider",
        "io_binding": True,
        "memcpy_nodes": 0,
        "cuda_graph": False,
        "cuda_graphs_used": False,
        "capture_runs_in_prepare": 0,
    }
    fell_back = {
        **on_cuda,
        "provider_used": "CPUExecutionProvider",
        "io_binding": False,
        "memcpy_nodes": None,
    }
    copies = {**on_cuda, "memcpy_nodes": 25}
    checks = gpu_check.runtime_checks(_run_dir(tmp_path, [on_cuda, fell_back, copies]), "onnx-cuda")
    assert [(c["check"], c["ok"], c["detail"]) for c in checks] == [
        ("ORT on the CUDA provider", True, "onnx-cuda b1: CUDAExecutionProvider, IO binding True"),
        ("ORT Memcpy nodes", True, "onnx-cuda b1: 0 host<->device copy nodes ORT inserted"),
        ("ORT on the CUDA provider", False, "onnx-cuda b8: CPUExecutionProvider, IO binding False"),
        ("ORT Memcpy nodes", False, "onnx-cuda b8: None host<->device copy nodes ORT inserted"),
        ("ORT on the CUDA provider", True, "onnx-cuda b16: CUDAExecutionProvider, IO binding True"),
        ("ORT Memcpy nodes", False, "onnx-cuda b16: 25 host<->device copy nodes ORT inserted"),
    ]


def test_gpu_check_asks_an_onnx_cuda_graphs_run_for_its_capture(tmp_path: Path) -> None:
    gpu_check = _load_benchmark("gpu_check")
    captured = {
        "runtime": "onnx-cuda-graphs",
        "provider_used": "CUDAExecutionProvider",
        "io_binding": True,
        "memcpy_nodes": 0,
        "cuda_graph": True,
        "cuda_graphs_used": True,
        "capture_runs_in_prepare": 3,
    }
    checks = gpu_check.runtime_checks(_run_dir(tmp_path, [captured, None], status="ok"), "onnx-cuda-graphs")
    assert [(c["check"], c["ok"], c["detail"]) for c in checks] == [
        ("ORT on the CUDA provider", True, "onnx-cuda-graphs b1: CUDAExecutionProvider, IO binding True"),
        ("ORT Memcpy nodes", True, "onnx-cuda-graphs b1: 0 host<->device copy nodes ORT inserted"),
        (
            "runtime used CUDA graphs",
            True,
            "onnx-cuda-graphs b1: cuda_graphs_used True (3 runs in prepare allocate and capture)",
        ),
        ("runtime details", False, "onnx-cuda-graphs b8: run.json holds no runtime_details"),
    ]


def test_gpu_check_collects_onnx_on_the_gpu_only_where_the_cuda_provider_is_built_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gpu_check = _load_benchmark("gpu_check")
    ran: list[list[str]] = []

    def fake_step(argv: list[str], timeout: float, cwd: Path) -> dict[str, Any]:
        ran.append(argv)
        return {"argv": argv, "rc": 0}

    monkeypatch.setattr(gpu_check, "preflight", lambda device: None)
    monkeypatch.setattr(gpu_check, "environment", lambda device: {})
    monkeypatch.setattr(gpu_check, "run_step", fake_step)
    monkeypatch.setattr(gpu_check, "nsys_for_check", lambda: None)
    monkeypatch.setenv("TRACEKIT_NO_PROGRESS", "unset by the test")
    monkeypatch.delenv("TRACEKIT_NO_PROGRESS")
    for providers in (
        ["AzureExecutionProvider", "CPUExecutionProvider"],
        ["CUDAExecutionProvider", "CPUExecutionProvider"],
    ):
        ort = types.ModuleType("onnxruntime")
        ort.get_available_providers = lambda providers=providers: list(providers)  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "onnxruntime", ort)
        ran.clear()
        out = tmp_path / str(len(providers) + ("CUDAExecutionProvider" in providers))
        only = ["onnx-cpu", "onnx-cuda", "onnx-cuda-graphs"]
        assert gpu_check.main(["-o", str(out), "--no-bundle", "--only", *only]) == 0
        summary = json.loads((out / "gpu_check.json").read_text())
        steps = [a[a.index("-o") + 1].rsplit("/", 1)[1] for a in ran]
        if "CUDAExecutionProvider" in providers:
            assert steps == ["onnx-cpu", "onnx-cuda", "onnx-cuda-graphs"]
            cuda_runs = {a[a.index("--runtime") + 1]: a for a in ran[1:]}
            for argv in cuda_runs.values():
                assert argv[argv.index("--device") + 1] == "cuda:0"
                assert argv[argv.index("--precision") + 1] == "fp16"
                assert argv[argv.index("--profiler") + 1] == "torch"
                assert argv[argv.index("--iters") + 1] == "20"  # not the CPU step's 10
            assert sorted(cuda_runs) == ["onnx", "onnx-cuda-graphs"]
        else:
            assert steps == ["onnx-cpu"]
            assert summary["steps"]["onnx-cuda"] == {
                "left out": "onnxruntime has no CUDAExecutionProvider here (AzureExecutionProvider, "
                "CPUExecutionProvider): the CPU build"
            }
            assert summary["steps"]["onnx-cuda-graphs"] == summary["steps"]["onnx-cuda"]


# -- torch.cuda graphs: the documented capture order, pinned ----------------------------------------------------
# torch 2.13 docs (CUDA Graphs, "Whole-network capture") and torch/cuda/graphs.py: warm up on a side stream that
# first waits on the current stream, make the current stream wait on the side stream, then capture inside
# torch.cuda.graph (whose __enter__ synchronizes the device, empties the cache and switches to its own capture
# stream), replay with graph.replay() and synchronize before reading the clock.
def _fake_cuda_torch(monkeypatch: pytest.MonkeyPatch, log: list[str]) -> types.ModuleType:
    import contextlib

    torch = _fake_torch(monkeypatch)

    class Stream:
        def __init__(self, name: str) -> None:
            self.name = name

        def wait_stream(self, other: Stream) -> None:
            log.append(f"{self.name}.wait_stream({other.name})")

    @contextlib.contextmanager
    def entered(what: str) -> Any:
        log.append(f"enter {what}")
        yield
        log.append(f"exit {what}")

    class Graph:
        def replay(self) -> None:
            log.append("replay")

    torch.device = lambda d: d  # type: ignore[attr-defined]
    torch.inference_mode = lambda: entered("inference_mode")  # type: ignore[attr-defined]
    torch.cuda.device = lambda d: entered(f"device {d}")  # type: ignore[attr-defined]
    torch.cuda.Stream = lambda device=None: log.append(f"Stream({device})") or Stream("side")  # type: ignore[attr-defined]
    torch.cuda.current_stream = lambda device=None: Stream("current")  # type: ignore[attr-defined]
    torch.cuda.stream = lambda s: entered(f"stream {s.name}")  # type: ignore[attr-defined]
    torch.cuda.CUDAGraph = lambda: log.append("CUDAGraph()") or Graph()  # type: ignore[attr-defined]
    torch.cuda.graph = lambda g: entered("graph capture")  # type: ignore[attr-defined]
    torch.cuda.synchronize = lambda device=None: log.append(f"synchronize({device})")  # type: ignore[attr-defined]
    return torch


def test_cuda_graphs_warms_up_on_a_side_stream_then_captures_then_replays_and_syncs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tracekit.collectors.runtimes.base import RunContext
    from tracekit.collectors.runtimes.cuda_graphs import CAPTURE_WARMUP, CudaGraphsRuntime

    log: list[str] = []
    _fake_cuda_torch(monkeypatch, log)
    inputs = (types.SimpleNamespace(clone=lambda: log.append("clone") or "static"),)
    model = types.SimpleNamespace(module=lambda *x: log.append(f"forward{x}") or "out")
    rt = CudaGraphsRuntime()
    rt.prepare(RunContext(model=model, inputs=inputs, device="cuda:1", precision="fp16"))
    assert CAPTURE_WARMUP == 3
    assert log == [
        "clone",
        "enter device cuda:1",
        "Stream(cuda:1)",
        "side.wait_stream(current)",  # the side stream sees the static inputs the current stream wrote
        "enter stream side",
        "enter inference_mode",
        "forward('static',)",
        "forward('static',)",
        "forward('static',)",
        "exit inference_mode",
        "exit stream side",
        "current.wait_stream(side)",  # the capture starts after the warm-up finished
        "CUDAGraph()",
        "enter graph capture",
        "enter inference_mode",
        "forward('static',)",  # the one captured forward, on the inputs the warm-up used
        "exit inference_mode",
        "exit graph capture",
        "exit device cuda:1",
        "synchronize(cuda:1)",
    ]
    log.clear()
    assert rt.run() == "out" and log == ["replay"]  # the timed run replays; the output stays the static one
    rt.sync()
    assert log == ["replay", "synchronize(cuda:1)"]


# -- ORT: the plain session that gives onnx-cuda-graphs its output shape is gone before the capture runs -------------
# onnxruntime 1.32 (onnxruntime_inference_collection.py): an IOBinding keeps its session (``_session``, checked by
# run_with_iobinding: "IOBinding must be used with the session that created it.") and its ORT-allocated outputs
# are OrtValues in that session's CUDA arena. ``del plain`` alone left the session alive through its binding
# until prepare returned: during the graph session's allocating and capture runs two sessions held the weights
# and their arenas on the GPU.
class _OrtFakeSession:
    def __init__(self, fake: _OrtFake, path: str, sess_options: Any = None, providers: Any = None) -> None:
        import weakref

        self.fake = fake
        self.graph = providers[0][1].get("enable_cuda_graph") == "1"
        fake.alive.append(weakref.ref(self))
        self.runs = 0

    def get_providers(self) -> list[str]:
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]

    def get_inputs(self) -> list[Any]:
        return [types.SimpleNamespace(name="input_ids"), types.SimpleNamespace(name="attention_mask")]

    def get_outputs(self) -> list[Any]:
        return [types.SimpleNamespace(name="output", type="tensor(float16)")]

    def io_binding(self) -> Any:
        session = self
        return types.SimpleNamespace(
            _session=session,  # as ORT's IOBinding keeps it
            bind_input=lambda *a: None,
            bind_output=lambda *a, **k: None,
            get_outputs=lambda: [types.SimpleNamespace(shape=lambda: [1, 128, 768], _session=session)],
        )

    def run_with_iobinding(self, binding: Any, run_options: Any = None) -> None:
        assert binding._session is self
        self.runs += 1
        if self.graph:  # how many sessions are alive while the graph session runs
            import gc

            gc.collect()
            self.fake.alive_during_graph_runs.append(sum(1 for ref in self.fake.alive if ref() is not None))


class _OrtFake(types.ModuleType):
    def __init__(self) -> None:
        super().__init__("onnxruntime")
        self.__version__ = "1.32.0"
        self.alive: list[Any] = []
        self.alive_during_graph_runs: list[int] = []
        self.SessionOptions = lambda: types.SimpleNamespace()
        self.InferenceSession = lambda path, sess_options=None, providers=None: _OrtFakeSession(
            self, path, sess_options, providers
        )

    def get_available_providers(self) -> list[str]:
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]


def test_onnx_cuda_graphs_frees_its_shape_session_before_capturing(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracekit.collectors.runtimes import onnx as onnx_mod
    from tracekit.collectors.runtimes.base import RunContext

    torch = _fake_torch(monkeypatch)
    for name in ("float32", "float16", "int64", "int32"):
        setattr(torch, name, name)
    torch.empty = lambda shape, dtype=None, device=None: types.SimpleNamespace(  # type: ignore[attr-defined]
        dtype=dtype, data_ptr=lambda: 0x7F00
    )
    torch.cuda.synchronize = lambda device=None: None  # type: ignore[attr-defined]
    monkeypatch.setattr(onnx_mod, "_np_dtype", lambda tensor: "np")
    ort = _OrtFake()
    monkeypatch.setitem(sys.modules, "onnxruntime", ort)
    monkeypatch.setattr(onnx_mod, "export_onnx", lambda *a, **k: Path("/nonexistent/synthetic-bert.onnx"))
    tensor = types.SimpleNamespace(shape=(1, 128), contiguous=lambda: tensor, data_ptr=lambda: 0x7E00)
    model = types.SimpleNamespace(input_names=["input_ids", "attention_mask"], kind="text")
    rt = onnx_mod.OnnxCudaGraphsRuntime()
    rt.prepare(RunContext(model=model, inputs=(tensor, tensor), device="cuda:0", precision="fp16"))
    assert len(ort.alive) == 2  # the graph session and the plain one that gave the output shape
    # before: [2, 2, 2], the plain session kept alive by its IO binding through every capture run
    assert ort.alive_during_graph_runs == [1, 1, 1]
