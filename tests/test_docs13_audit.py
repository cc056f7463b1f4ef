"""docs13: where the code contradicted what the documents state as its behaviour, found while auditing
docs/metrics.md, docs/formats.md, docs/collection.md and docs/design.md against the code (written as strict
xfails; each fixed since, the tests now pin the documented behaviour).

Traces are hand-built (synthetic; meta says so), times in integer ns, one process and thread unless a row
says otherwise.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tests.builders import make_trace
from tracekit.analyzers.iterations import analyze_iterations
from tracekit.cli import main

SYNTHETIC = {"path": "docs13_synthetic", "synthetic": True}


def _context(trace_gaps: pl.DataFrame, start_ns: int) -> str | None:
    row = trace_gaps.filter(pl.col("start_ns") == start_ns)
    assert row.height == 1
    return row.get_column("cpu_context").item()


def _launches_and_ops() -> tuple[list[tuple[int, int, int, str]], list[tuple[int, int, int, int]]]:
    # two kernels launched early in the range: [1000, 2000) and [5000, 6000); the inner gap is [2000, 5000)
    api = [(100, 200, 1, "cudaLaunchKernel"), (300, 400, 2, "cudaLaunchKernel")]
    ops = [(1000, 2000, 1, 7), (5000, 6000, 2, 7)]
    return api, ops


def test_baseline_host_code_outside_api_calls_when_nothing_is_open() -> None:
    # The control case: iteration [0, 10000) alone; at the inner gap's start (2000) no call and no other range
    # is open, so the host was in its own code.
    api, ops = _launches_and_ops()
    trace = make_trace(ranges=[(0, 10_000, "iteration")], api=api, ops=ops, meta=dict(SYNTHETIC))
    gaps = analyze_iterations(trace).gaps
    assert _context(gaps, 2000) == "host code outside API calls"


def test_a_gpu_side_annotation_is_not_what_the_host_was_in() -> None:
    # Host range [0, 10000) and Kineto's GPU-side copy of it [1000, 9000) (domain "gpu", as
    # gpu_user_annotation is read). At the inner gap's start (2000) the host runs its own code: no API call,
    # no other host range. The GPU-side range is the device's span of the iteration, not host state.
    api, ops = _launches_and_ops()
    trace = make_trace(
        ranges=[(0, 10_000, "iteration", 0, "user"), (1000, 9000, "iteration", 0, "gpu")],
        api=api,
        ops=ops,
        meta=dict(SYNTHETIC),
    )
    gaps = analyze_iterations(trace).gaps
    assert _context(gaps, 2000) == "host code outside API calls"


def test_an_enclosing_range_still_open_is_named_when_a_later_inner_one_has_ended() -> None:
    # iteration [0, 10000) holds 'forward' [50, 5500), which holds 'layer' [60, 150). At the inner gap's
    # start (2000) 'layer' has ended and 'forward' covers the whole gap: the host is in range forward.
    # ('forward' ends before the last kernel does: a range around all of the iteration's device work, [1000,
    # 6000), would hold every gap and name none: tests/test_gap_context.py)
    api, ops = _launches_and_ops()
    trace = make_trace(
        ranges=[(0, 10_000, "iteration", 0), (50, 5500, "forward", 1), (60, 150, "layer", 2)],
        api=api,
        ops=ops,
        meta=dict(SYNTHETIC),
    )
    gaps = analyze_iterations(trace).gaps
    assert _context(gaps, 2000) == "in range forward (100%)"


def test_an_api_call_still_running_is_named_when_a_later_nested_call_has_ended() -> None:
    # A cudaMemcpy [1500, 4000) with a short driver call nested in it [1600, 1700). At the inner gap's start
    # (2000) the host is inside cudaMemcpy, for 2000 of the gap's 3000 ns.
    api, ops = _launches_and_ops()
    api += [(1500, 4000, None, "cudaMemcpy"), (1600, 1700, None, "cuMemcpyHtoD")]
    trace = make_trace(ranges=[(0, 10_000, "iteration")], api=api, ops=ops, meta=dict(SYNTHETIC))
    gaps = analyze_iterations(trace).gaps
    assert _context(gaps, 2000) == "cudaMemcpy (66%)"


ORT_SAMPLE = "sample_traces/cpu_onnx_bert_ort/onnx_b1_s128.ort.json.gz"


def test_table_leaves_out_a_damaged_trace_among_several_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The control case of formats.md: a trace that cannot be read, beside one that can, is left out with a
    # 'left out: FILE: problem' warning, the other is shown, and the exit code is 1.
    damaged = tmp_path / "damaged_synthetic.json"
    damaged.write_text('{"traceEvents": [')
    good = Path(__file__).resolve().parents[1] / ORT_SAMPLE
    code = main(["table", str(damaged), str(good), "-o", str(tmp_path / "t.json"), "-q"])
    err = capsys.readouterr().err
    assert code == 1
    assert f"left out: {damaged}" in err


def test_table_leaves_out_a_missing_trace_among_several_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing_synthetic.json"
    good = Path(__file__).resolve().parents[1] / ORT_SAMPLE
    code = main(["table", str(missing), str(good), "-o", str(tmp_path / "t.json"), "-q"])
    err = capsys.readouterr().err
    assert (tmp_path / "t.json").is_file()
    assert code == 1
    assert f"left out: {missing}" in err
