"""ONNX Runtime profile reader: exact frames on hand-built synthetic profiles (CPU provider, CUDA provider,
GPU Kernel events), a real profile of a tiny exported model, and damaged input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tracekit.errors import TraceFormatError
from tracekit.model import OPS_SCHEMA, RANGES_SCHEMA
from tracekit.readers import detect_format, read_trace
from tracekit.readers.ort import read


def _ev(cat: str, name: str, ts: int, dur: int, tid: int = 11, **args: Any) -> dict[str, Any]:
    return {"cat": cat, "pid": 10, "tid": tid, "dur": dur, "ts": ts, "ph": "X", "name": name, "args": args}


#: A synthetic ORT CPU-provider profile (made up for this test): loading, initialization, two runs of two
#: nodes each, plus old-style fence events that must be skipped.
SYNTHETIC_CPU = [
    _ev("Session", "model_loading_uri", 5, 100),
    _ev("Session", "session_initialization", 110, 200),
    _ev("Node", "/0/MatMul_fence_before", 1001, 0, op_name="MatMul"),
    _ev("Node", "/0/MatMul_kernel_time", 1002, 20, op_name="MatMul", provider="CPUExecutionProvider"),
    _ev("Node", "/0/MatMul_fence_after", 1022, 0, op_name="MatMul"),
    _ev("Node", "/1/Relu_kernel_time", 1023, 3, op_name="Relu", provider="CPUExecutionProvider"),
    _ev("Session", "SequentialExecutor::Execute", 1001, 30),
    _ev("Session", "model_run", 1000, 33),
    _ev("Node", "/0/MatMul_kernel_time", 2002, 18, op_name="MatMul", provider="CPUExecutionProvider"),
    _ev("Node", "/1/Relu_kernel_time", 2021, 2, op_name="Relu", provider="CPUExecutionProvider"),
    _ev("Session", "SequentialExecutor::Execute", 2001, 25),
    _ev("Session", "model_run", 2000, 27),
]


def _write(tmp_path: Path, name: str, events: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(events, indent=0))
    return path


def test_cpu_profile_exact_frames(tmp_path: Path) -> None:
    path = _write(tmp_path, "synthetic_ort_cpu.json", SYNTHETIC_CPU)
    assert detect_format(path) == "ort"
    trace = read_trace(path)
    expected_ops = pl.DataFrame(
        {
            "start": [1002000, 1023000, 2002000, 2021000],
            "end": [1022000, 1026000, 2020000, 2023000],
            "device": [-1] * 4,
            "stream": [11] * 4,
            "pid": [10] * 4,
            "correlation": [None] * 4,
            "graph": [None] * 4,
            "kind": ["operator"] * 4,
            "name": ["MatMul:/0/MatMul", "Relu:/1/Relu", "MatMul:/0/MatMul", "Relu:/1/Relu"],
        },
        schema=OPS_SCHEMA,
    )
    assert_frame_equal(trace.ops, expected_ops)
    expected_ranges = pl.DataFrame(
        {
            "start": [5000, 110000, 1000000, 1001000, 2000000, 2001000],
            "end": [105000, 310000, 1033000, 1031000, 2027000, 2026000],
            "pid": [10] * 6,
            "thread": [11] * 6,
            "depth": [0, 0, 0, 1, 0, 1],
            "domain": ["session"] * 6,
            "name": [
                "model_loading_uri",
                "session_initialization",
                "model_run",
                "SequentialExecutor::Execute",
                "model_run",
                "SequentialExecutor::Execute",
            ],
        },
        schema=RANGES_SCHEMA,
    )
    assert_frame_equal(trace.ranges, expected_ranges)
    assert trace.api.is_empty() and trace.kernel_metrics.is_empty()
    meta = trace.meta
    assert meta["format"] == "ort" and meta["device"] == "cpu"
    assert meta["providers"] == ["CPUExecutionProvider"]
    assert meta["synthetic"] is True and meta["warnings"] == []
    assert "format_version" not in meta  # no version in these events


def test_cuda_provider_nodes_stay_host_operators(tmp_path: Path) -> None:
    events = [
        _ev("Session", "model_run", 0, 50),
        _ev("Node", "MatMul_0_kernel_time", 1, 10, op_name="MatMul", provider="CUDAExecutionProvider"),
        _ev("Node", "Shape_1_kernel_time", 12, 1, op_name="Shape", provider="CPUExecutionProvider"),
    ]
    trace = read(_write(tmp_path, "synthetic_ort_cuda.json", events))
    assert trace.meta["device"] == "cpu"
    assert trace.meta["providers"] == ["CPUExecutionProvider", "CUDAExecutionProvider"]
    assert trace.ops.select("kind", "device", "name").rows() == [
        ("operator", -1, "MatMul:MatMul_0"),
        ("operator", -1, "Shape:Shape_1"),
    ]
    assert trace.meta["warnings"] == [
        "1 of 2 operator events ran on a GPU execution provider (CUDAExecutionProvider): ORT times them on the "
        "host (argument setup and kernel launch), not on the GPU; profile with nsys or torch.profiler for GPU "
        "kernel times"
    ]


def test_kernel_events_become_gpu_ops(tmp_path: Path) -> None:
    """ORT builds with CUDA profiling add cat "Kernel" events (pid/tid -1, args with stream and grid)."""
    kernel_args = {
        "stream": "13",
        "grid_x": "4",
        "grid_y": "1",
        "grid_z": "1",
        "block_x": "128",
        "block_y": "1",
        "block_z": "1",
        "op_name": "MatMul",
    }
    events = [
        {
            "cat": "Session",
            "pid": 10,
            "tid": 11,
            "dur": 100,
            "ts": 0,
            "ph": "X",
            "name": "model_run",
            "args": {"ort_version": "1.99.0"},
        },
        _ev("Node", "MatMul_0_kernel_time", 1, 10, op_name="MatMul", provider="CUDAExecutionProvider"),
        {
            "cat": "Kernel",
            "pid": -1,
            "tid": -1,
            "dur": 30,
            "ts": 8,
            "ph": "X",
            "name": "ampere_sgemm_32x32",
            "args": kernel_args,
        },
        {
            "cat": "Kernel",
            "pid": -1,
            "tid": -1,
            "dur": 2,
            "ts": 40,
            "ph": "X",
            "name": "MemcpyDeviceToHost",
            "args": {**kernel_args, "stream": "0x7f00", "grid_x": "-1"},
        },
    ]
    trace = read(_write(tmp_path, "synthetic_ort_kernels.json", events))
    assert trace.meta["device"] == "gpu" and trace.meta["format_version"] == "1.99.0"
    assert trace.ops.select(
        "start", "end", "device", "stream", "pid", "correlation", "kind", "name"
    ).rows() == [
        (8000, 38000, None, 13, 10, None, "kernel", "ampere_sgemm_32x32"),
        (40000, 42000, None, 0x7F00, 10, None, "memcpy", "MemcpyDeviceToHost"),
    ]
    # the host-side node time is a range, not device work
    assert trace.ranges.select("name", "domain", "depth").rows() == [
        ("model_run", "session", 0),
        ("MatMul:MatMul_0", "node", 0),
    ]
    assert len(trace.meta["warnings"]) == 1 and "no correlation ids" in trace.meta["warnings"][0]


def test_gzipped_profile(tmp_path: Path) -> None:
    path = tmp_path / "synthetic_ort.json.gz"
    path.write_bytes(gzip.compress(json.dumps(SYNTHETIC_CPU).encode()))
    assert detect_format(path) == "ort"
    assert read_trace(path).ops.height == 4


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (json.dumps(SYNTHETIC_CPU)[:300], "truncated or invalid JSON"),
        ('{"a": 1}', "not an ONNX Runtime profile"),
        ('[{"cat": "Other", "name": "x", "ph": "X", "ts": 1}]', "not an ONNX Runtime profile"),
        ("[1, 2]", "not an ONNX Runtime profile"),
    ],
)
def test_bad_input(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad_ort.json"
    path.write_text(content)
    with pytest.raises(TraceFormatError, match=message) as err:
        read(path)
    assert str(path) in str(err.value)


def test_real_ort_profile(tmp_path: Path) -> None:
    """Export a tiny torch model to ONNX, run it 4 times under ORT's profiler, and read the profile."""
    torch = pytest.importorskip("torch")
    ort = pytest.importorskip("onnxruntime")
    import warnings

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16), torch.nn.Tanh()
    )
    x = torch.randn(2, 8)
    onnx_path = tmp_path / "tiny.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), str(onnx_path), input_names=["x"], output_names=["y"], dynamo=False)
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path / "ort_profile")
    session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
    runs = 4
    for _ in range(runs):
        session.run(None, {"x": x.numpy()})
    profile = Path(session.end_profiling())

    assert detect_format(profile) == "ort"
    trace = read_trace(profile)
    assert trace.meta["format"] == "ort" and trace.meta["device"] == "cpu"
    assert trace.meta["providers"] == ["CPUExecutionProvider"]
    runs_frame = trace.ranges.filter(pl.col("name") == "model_run")
    assert runs_frame.height == runs
    assert (runs_frame["depth"] == 0).all()
    executors = trace.ranges.filter(pl.col("name").str.ends_with("Executor::Execute"))
    assert executors.height == runs and (executors["depth"] == 1).all()
    assert trace.ops.height > 0 and set(trace.ops["kind"]) == {"operator"}
    assert all(":" in name and not name.endswith("_kernel_time") for name in trace.ops["name"])
    # every operator lies inside one model_run, and each run holds the same number of operators
    per_run = [
        trace.ops.filter((pl.col("start") >= s) & (pl.col("end") <= e)).height
        for s, e in runs_frame.select("start", "end").rows()
    ]
    assert sum(per_run) == trace.ops.height
    assert len(set(per_run)) == 1 and per_run[0] > 0


def _gpu_profile(shift_us: int, runs: int = 3) -> list[dict[str, Any]]:
    """A synthetic ORT CUDA profile: ``runs`` model_runs of 1000 µs, each with two nodes, each node followed
    (file order, as ORT merges them) by its kernel, which starts 5 µs after its node began plus
    ``shift_us`` (negative: a kernel clock behind the CPU's)."""
    events: list[dict[str, Any]] = []
    for r in range(runs):
        t = 1000 * r + 100
        events.append(_ev("Session", "model_run", t, 1000))
        for k, op in enumerate(("MatMul", "Relu")):
            node_ts = t + 10 + 300 * k
            node = f"/{k}/{op}_kernel_time"
            events.append(_ev("Node", node, node_ts, 20, op_name=op, provider="CUDAExecutionProvider"))
            events.append(
                {
                    "cat": "Kernel",
                    "pid": -1,
                    "tid": -1,
                    "dur": 100,
                    "ts": node_ts + 5 + shift_us,
                    "ph": "X",
                    "name": f"{op.lower()}_kernel",
                    "args": {"stream": "7", "op_name": op, "parent_name": node},
                }
            )
    return events


@pytest.mark.parametrize(
    ("shift_us", "counts"), [(0, None), (-7, None), (-8, [6, 6, 3000]), (-505, [6, 6, 500_000])]
)
def test_kernels_that_start_before_their_node_are_counted(tmp_path: Path, shift_us: int, counts: Any) -> None:
    """A kernel starting up to 2 µs before its node (rounding: both starts cut to the µs) is not counted."""
    trace = read(_write(tmp_path, "synthetic_ort_gpu.json", _gpu_profile(shift_us)))
    assert trace.meta.get("ops_before_parent") == counts


def test_kernel_parents_are_the_nearest_earlier_node_of_their_name(tmp_path: Path) -> None:
    # the second run's kernels name the same nodes as the first's: each is linked to its own run's node
    events = _gpu_profile(0, runs=2)
    events[-1]["ts"] -= 400  # the last kernel (run 2's Relu, its node at 1410) now starts at 1015
    trace = read(_write(tmp_path, "synthetic_ort_gpu.json", events))
    assert trace.meta["ops_before_parent"] == [1, 4, 395_000]


def test_kernels_far_before_their_nodes_make_the_verdict_uncertain(tmp_path: Path) -> None:
    from tracekit.session import analyze_trace

    a = analyze_trace(read(_write(tmp_path, "synthetic_ort_gpu.json", _gpu_profile(-505))))
    assert a.summary.verdict_uncertain == (
        "verdict uncertain: 6 of 6 kernels started before the node that launched them began, by up to 0.500 ms "
        "(50% of the median iteration): the profile's GPU and CPU times are on different clocks, so the GPU "
        "busy time inside the iterations, the idle gaps and the framework overhead compare times of two clocks"
    )
    near = analyze_trace(read(_write(tmp_path, "synthetic_ort_gpu2.json", _gpu_profile(-8))))
    assert near.summary.verdict_uncertain is None
    assert (
        "6 of 6 kernels started before the node that launched them began, by up to 0.003 ms: the GPU and CPU "
        "times disagree (by at most 1% of the median iteration)"
    ) in near.notes


def test_a_kernel_is_linked_to_its_named_node_not_the_one_just_before_it(tmp_path: Path) -> None:
    """ORT inserts a kernel after the last event with its parent's start; another node can come between:
    the parent is found by name. Here run 1's MatMul kernel follows the Relu node, which began after it."""
    events = _gpu_profile(0, runs=1)
    matmul_kernel = events.pop(2)  # model_run, MatMul node, [MatMul kernel], Relu node, Relu kernel
    events.insert(3, matmul_kernel)  # now after the Relu node (ts 410), itself at ts 115
    trace = read(_write(tmp_path, "synthetic_ort_gpu.json", events))
    assert trace.meta.get("ops_before_parent") is None


def test_an_ort_profile_without_its_sidecar_says_its_warm_up_may_be_among_the_runs(tmp_path) -> None:
    # Read from stdin or copied without its .meta.json, the committed ORT profile's 10 warm-up runs had
    # counted as iterations without a word (30 runs, median 572.8 ms instead of 20 and 605.8 ms).
    import shutil

    from tests.conftest import SAMPLE_TRACES
    from tracekit.api import analyze

    source = SAMPLE_TRACES / "cpu_onnx_bert_ort" / "onnx_b1_s128.ort.json.gz"
    alone = tmp_path / source.name
    shutil.copyfile(source, alone)
    said = (
        "an ONNX Runtime profile records every run since its session began, warm-up runs included, and nothing "
        "beside this one says how many of its 30 runs were warm-up: none are dropped (--skip N drops the first N)"
    )
    a = analyze(alone)
    assert a.iterations.height == 30 and said in a.warnings
    b = analyze(source)  # its sidecar says 10 warm-up runs: dropped, nothing to say
    assert b.iterations.height == 20 and not any("nothing beside this one" in w for w in b.warnings)
    assert not any("nothing beside this one" in w for w in analyze(alone, skip=10).warnings)
