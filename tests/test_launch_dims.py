"""The timelines' launch dimensions for the Nsight Compute join (labelled-synthetic inputs, exact values).

ncu's per-kernel values are joined to a timeline's kernels by launch order; kernel names alone do not tell a
batch-1 profile from the batch-8 timeline it is joined to when both run the same kernels. Launch dimensions do
(a larger batch launches larger grids), and the join compared them already: but no timeline reader kept them,
so the comparison never ran. The readers now give them in the ``launches`` frame, read only when asked for
(``tracekit table --ncu``): Kineto's ``grid``/``block`` args (a second pass over the file), nsys's
``CUPTI_ACTIVITY_KIND_KERNEL.gridX``..``blockZ``.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import polars as pl
import pytest

from tests.nsys_builder import NsysBuilder
from tracekit.analyzers.kernel_metrics import analyze_kernel_metrics, timeline_launches
from tracekit.analyzers.table import table_row
from tracekit.inputs import TraceInput
from tracekit.model import ALL_FRAMES, LAUNCHES_SCHEMA, Trace, wanted_frames
from tracekit.readers import kineto as kineto_reader
from tracekit.readers import read_trace
from tracekit.session import AnalysisOptions, analyze_trace

SAMPLES = Path(__file__).resolve().parent.parent / "sample_traces" / "h200_bert_fp16"

GEMM = "gemm_kernel"
SOFTMAX = "softmax_kernel"
#: the batch-8 timeline's launches: (grid, block) of each kernel
B8 = {GEMM: ((64, 1, 1), (128, 1, 1)), SOFTMAX: ((8, 12, 1), (256, 1, 1))}
#: the batch-1 profile's: the same kernels, smaller grids
B1 = {GEMM: ((8, 1, 1), (128, 1, 1)), SOFTMAX: ((1, 12, 1), (256, 1, 1))}
#: each iteration (a ProfilerStep of 100 us): GEMM 30 us, then SOFTMAX 10 us
ITERATIONS = 3
KERNELS = ((GEMM, 10, 30), (SOFTMAX, 40, 10))  # (name, start in the step in us, duration in us)


def kineto_timeline(path: Path, dims: dict = B8) -> Path:
    """A Kineto trace (2023+ spelling) of three ProfilerSteps, each launching GEMM then SOFTMAX on stream 7,
    with the ``grid``/``block`` args torch.profiler writes on each kernel."""
    events: list[dict] = []
    corr = 0
    for i in range(ITERATIONS):
        base = 1000 + 100 * i
        events.append(
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1,
             "ts": base, "dur": 100}
        )  # fmt: skip
        for k, (name, offset, dur) in enumerate(KERNELS):
            corr += 1
            events.append(
                {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                 "ts": base + 1 + k, "dur": 1, "args": {"correlation": corr}}
            )  # fmt: skip
            grid, block = dims[name]
            events.append(
                {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": base + offset,
                 "dur": dur, "args": {"device": 0, "stream": 7, "correlation": corr, "grid": list(grid),
                                      "block": list(block), "registers per thread": 32}}
            )  # fmt: skip
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


IDS = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size"'
SM_PCT = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
WARPS = "sm__warps_active.avg.pct_of_peak_sustained_active"
#: ncu's values of each kernel: SMs active %, warp occupancy %
VALUES = {GEMM: (10.0, 5.0), SOFTMAX: (40.0, 20.0)}


def ncu_profile(path: Path, dims: dict = B1) -> Path:
    """An ncu raw-page CSV of one iteration (GEMM, SOFTMAX) launched with ``dims``."""
    lines = [
        f'{IDS},"gpu__time_duration.sum","{SM_PCT}","{WARPS}"',
        '"","","","","","","","","","usecond","%","%"',
    ]
    for i, (name, _, dur) in enumerate(KERNELS):
        (gx, gy, gz), (bx, by, bz) = dims[name]
        sm, warps = VALUES[name]
        lines.append(
            f'"{i}","4242","python","h","{name}","1","7","({bx}, {by}, {bz})","({gx}, {gy}, {gz})","{dur}",'
            f'"{sm}","{warps}"'
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def _row(tmp_path: Path, timeline_dims: dict, ncu_dims: dict) -> tuple[dict, list[str]]:
    tl = kineto_timeline(tmp_path / "synthetic_b8.torch.json", timeline_dims)
    ncu = ncu_profile(tmp_path / "synthetic_b1.ncu.csv", ncu_dims)
    return table_row(TraceInput(path=tl, ncu=ncu), AnalysisOptions())


# ------------------------------------------------------------------------------------------------ readers


def test_kineto_launch_dimensions_are_read_when_asked_for(tmp_path: Path) -> None:
    path = kineto_timeline(tmp_path / "synthetic.torch.json")
    trace = read_trace(path, frames=ALL_FRAMES)
    expected = [
        (
            7,
            (1000 + 100 * i + offset) * 1000,
            (1000 + 100 * i + offset + dur) * 1000,
            *B8[name][0],
            *B8[name][1],
        )
        for i in range(ITERATIONS)
        for name, offset, dur in KERNELS
    ]
    assert trace.launches.sort("start").rows() == expected
    assert dict(trace.launches.schema) == LAUNCHES_SCHEMA
    # every kernel found among the ops (by stream, start and end)
    assert timeline_launches(trace).height == 2 * ITERATIONS


def test_an_ordinary_read_makes_no_second_pass(tmp_path: Path, monkeypatch) -> None:
    """Everything (``frames=None``) does not include the on-request frame: the file is read once."""
    path = kineto_timeline(tmp_path / "synthetic.torch.json")

    def refuse(path: Path) -> pl.DataFrame:
        raise AssertionError("launch dimensions read without being asked for")

    monkeypatch.setattr(kineto_reader, "_launches", refuse)
    assert "launches" not in wanted_frames(None)
    assert read_trace(path).launches.is_empty()
    assert read_trace(path, frames=["ops", "api", "ranges"]).launches.is_empty()


def test_a_kernel_without_three_integer_dimensions_has_no_launch_row(tmp_path: Path) -> None:
    path = kineto_timeline(tmp_path / "synthetic.torch.json")
    doc = json.loads(path.read_text())
    kernels = [e for e in doc["traceEvents"] if e["cat"] == "kernel"]
    kernels[0]["args"]["grid"] = [64, 1]  # two values
    kernels[1]["args"]["block"] = "256"  # not a list
    del kernels[2]["args"]["grid"]
    kernels[3]["args"]["grid"] = [8, 12, 1, 1]  # four
    kernels[4]["args"]["grid"] = [64, 1.5, 1]  # not whole
    path.write_text(json.dumps(doc))
    assert read_trace(path, frames=ALL_FRAMES).launches.height == 2 * ITERATIONS - 5


def test_kernels_sharing_stream_start_and_end_get_no_launch(tmp_path: Path) -> None:
    """Two kernel events of one stream, start and end (timestamps in whole microseconds): which launch is
    whose is unknown, so neither gets one (never another kernel's)."""
    trace = Trace(
        ops=pl.DataFrame(
            {"start": [0, 0, 50], "end": [10, 10, 60], "stream": [7, 7, 7], "kind": ["kernel"] * 3,
             "name": ["a", "b", "c"]}
        ),
        launches=pl.DataFrame(
            {"stream": [7, 7, 7], "start": [0, 0, 50], "end": [10, 10, 60], "grid_x": [1, 2, 3],
             "grid_y": [1] * 3, "grid_z": [1] * 3, "block_x": [32] * 3, "block_y": [1] * 3, "block_z": [1] * 3}
        ),
    )  # fmt: skip
    assert timeline_launches(trace).rows() == [(2, "grid (3, 1, 1) block (32, 1, 1)")]


def _nsys_timeline(path: Path, dims: dict) -> Path:
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H200")
    corr = 0
    for i in range(ITERATIONS):
        base = 1_000_000 + 100_000 * i
        b.nvtx_range(base, base + 100_000, "iteration")
        for k, (name, offset, dur) in enumerate(KERNELS):
            corr += 1
            b.runtime(
                base + 1000 + k * 1000, base + 1500 + k * 1000, "cudaLaunchKernel_v7000", correlation=corr
            )
            b.kernel(base + offset * 1000, base + (offset + dur) * 1000, name, correlation=corr)
    b.write(path)
    with sqlite3.connect(path) as con:
        for name, ((gx, gy, gz), (bx, by, bz)) in dims.items():
            con.execute(
                "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX=?, gridY=?, gridZ=?, blockX=?, blockY=?, blockZ=? "
                "WHERE demangledName = (SELECT id FROM StringIds WHERE value = ?)",
                (gx, gy, gz, bx, by, bz, name),
            )
    return path


def test_nsys_launch_dimensions_are_read_when_asked_for(tmp_path: Path) -> None:
    path = _nsys_timeline(tmp_path / "synthetic.sqlite", B8)
    assert read_trace(path).launches.is_empty()
    launches = read_trace(path, frames=ALL_FRAMES).launches.sort("start")
    assert launches.select("grid_x", "grid_y", "block_x").rows() == [(64, 1, 128), (8, 12, 256)] * ITERATIONS
    assert launches["start"].to_list()[:2] == [1_010_000, 1_040_000]


# ------------------------------------------------------------------------------------------ the ncu join


def test_a_batch_1_profile_joined_to_a_batch_8_timeline_is_caught(tmp_path: Path) -> None:
    """Same kernel names and counts, every grid 8x smaller. Before: names matched, the b1 values were joined
    and shown (SMs active 17.5 % kernel-time, (30x10 + 10x40) / 40). Now none is used."""
    row, warnings = _row(tmp_path, B8, B1)
    assert row["sms_active"] is None and row["sms_active_kernel_time"] is None
    assert row["warp_occupancy"] is None and row["warp_occupancy_kernel_time"] is None
    said = [w for w in warnings if w.startswith("ncu: ")]
    assert said == [
        "ncu: 6 of 6 matched kernels differ in launch dimensions (first: iteration 0 position 0: Nsight Compute "
        "grid (8, 1, 1) block (128, 1, 1) vs timeline grid (64, 1, 1) block (128, 1, 1)): the join by order may "
        "be wrong",
        "ncu: the launch dimensions of 6 of 6 matched kernels differ: the Nsight Compute profile is not in the "
        "timeline's kernel order (another configuration, or cut elsewhere in the iteration), so none of its "
        "values is used",
    ]


def test_a_profile_of_the_same_launches_is_joined_as_before(tmp_path: Path) -> None:
    row, warnings = _row(tmp_path, B8, B8)
    assert row["sms_active_kernel_time"] == pytest.approx((30 * 10 + 10 * 40) / 40)
    assert row["warp_occupancy_kernel_time"] == pytest.approx((30 * 5 + 10 * 20) / 40)
    assert row["sms_active"] is not None and row["sms_active_source"] == "ncu"
    assert not any("launch" in w for w in warnings)


def test_one_kernel_launched_otherwise_loses_its_value(tmp_path: Path) -> None:
    """The profile's SOFTMAX ran another grid: its value is another launch's. GEMM's stands: kernel-time
    10 %, no wall-time figure (each iteration lacks a kernel's value)."""
    row, warnings = _row(tmp_path, B8, {GEMM: B8[GEMM], SOFTMAX: B1[SOFTMAX]})
    assert row["sms_active_kernel_time"] == pytest.approx(10.0)
    assert row["sms_active"] is None
    assert any(w.startswith("ncu: 3 of 6 matched kernels differ in launch dimensions") for w in warnings)


def test_the_nsys_timeline_catches_it_too(tmp_path: Path) -> None:
    tl = _nsys_timeline(tmp_path / "synthetic_b8.sqlite", B8)
    trace = read_trace(tl, frames=ALL_FRAMES)
    analyzed = analyze_trace(trace)
    for dims, used in ((B1, False), (B8, True)):
        ncu = read_trace(ncu_profile(tmp_path / "synthetic.ncu.csv", dims))
        result = analyze_kernel_metrics(ncu, trace, analyzed, analyzed.range_name, analyzed.ops)
        assert result.kernels["launch_match"].to_list() == [used] * 2 * ITERATIONS
        kernel_time = result.value("sms_active", wall_time=False)
        assert kernel_time == (pytest.approx(17.5) if used else None)


# ------------------------------------------------------------------------------- the committed H200 sample


@pytest.mark.parametrize(
    "timeline", ["pytorch/pytorch_b1_s128.torch.json.gz", "nsys-pytorch/pytorch_b1_s128.nsys.sqlite.gz"]
)
def test_the_real_h200_profile_agrees_with_its_timelines_in_every_launch(timeline: str) -> None:
    """The committed ncu profile (b1) against the same run's Kineto and nsys timelines: 4,040 joined kernels,
    every launch the same, and the figures unchanged (3.094 % / 41.63 % SMs active)."""
    trace = read_trace(SAMPLES / timeline, frames=ALL_FRAMES)
    assert trace.launches.height == 4040
    analyzed = analyze_trace(trace)
    ncu = read_trace(SAMPLES / "pytorch-ncu" / "pytorch_b1_s128.ncu.csv.gz")
    result = analyze_kernel_metrics(ncu, trace, analyzed, analyzed.range_name, analyzed.ops)
    assert result.kernels["launch_match"].to_list() == [True] * 4040
    assert result.warnings == []


def test_the_real_b1_profile_against_the_real_b8_timeline_is_withheld() -> None:
    trace = read_trace(SAMPLES / "pytorch" / "pytorch_b8_s128.torch.json.gz", frames=ALL_FRAMES)
    analyzed = analyze_trace(trace)
    ncu = read_trace(SAMPLES / "pytorch-ncu" / "pytorch_b1_s128.ncu.csv.gz")
    result = analyze_kernel_metrics(ncu, trace, analyzed, analyzed.range_name, analyzed.ops)
    assert result.kernels["launch_match"].value_counts().sort("launch_match").rows() == [
        (False, 3700),
        (True, 120),
    ]
    assert result.value("sms_active") is None and result.value("sms_active", wall_time=False) is None


def test_a_timeline_from_a_pipe_says_its_launches_are_not_checked(tmp_path: Path) -> None:
    """A pipe is read once: no second pass, so no launch dimensions, and a warning says the check is not
    made (the join goes on by names, as before), never a traceback."""
    import subprocess
    import sys

    tl = kineto_timeline(tmp_path / "synthetic_b8.torch.json", B8)
    ncu = ncu_profile(tmp_path / "synthetic_b1.ncu.csv", B1)
    done = subprocess.run(
        [sys.executable, "-m", "tracekit.cli", "table", "-", "--ncu", str(ncu), "--format", "json"],
        input=tl.read_bytes(),
        capture_output=True,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    warnings = json.loads(done.stdout)["warnings"]
    assert any(kineto_reader.LAUNCHES_FROM_A_PIPE in w for w in warnings)
    assert "Traceback" not in done.stderr.decode()
