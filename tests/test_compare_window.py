"""compare where one side is a whole-trace window (no iteration ranges: an Nsight Compute report) and the other
has iterations: the window's totals are not set beside per-iteration medians."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tracekit.cli import main

H200 = Path(__file__).resolve().parents[1] / "sample_traces" / "h200_bert_fp16"
EAGER = H200 / "pytorch" / "pytorch_b1_s128.torch.json.gz"
NCU = H200 / "pytorch-ncu" / "pytorch_b1_s128.ncu.csv.gz"


def _compare(capsys: pytest.CaptureFixture[str], a: Path, b: Path) -> dict:
    assert main(["compare", str(a), str(b), "--format", "json", "-q"]) == 0
    (comparison,) = json.loads(capsys.readouterr().out)["comparisons"]
    return comparison


def test_an_ncu_report_of_three_iterations_is_divided_by_them(capsys: pytest.CaptureFixture[str]) -> None:
    """The ncu report holds 3 iterations' 606 kernels (its sidecar: iterations 3). Before, compare set its
    totals beside the Kineto trace's medians: kernels / iteration 202 vs 606 (3.000), GPU busy 0.6058 vs
    2.628 ms (4.338)."""
    c = _compare(capsys, EAGER, NCU)
    rows = {row["metric"]: row for row in c["summary"]}
    assert rows["kernels"]["a"] == 202 and rows["kernels"]["b"] is None
    assert rows["gpu_busy_ms"]["b"] is None and rows["gpu_busy_ms"]["ratio"] is None
    assert all(row["b"] is None and row["delta"] is None for row in c["summary"])
    by_name = {k["name"]: k for k in c["kernels"]}
    gemm = by_name["nvjet_sm90_hsh_64x16_64x16_2x4_h_bz_bias_TNT"]
    assert (gemm["count_a"], gemm["count_b"]) == (48, 48)  # 144 in the report, over its 3 iterations
    assert sum(k["count_b"] or 0 for k in c["kernels"]) == pytest.approx(202)
    assert c["warnings"][0] == (
        "B has no iterations of its own (one window over its whole trace) and A has 20: B's figures are totals "
        "over its trace, not per iteration, so the summary shows none of them; its run says it holds 3 "
        "iterations, so the per-name table divides its figures by 3"
    )


def test_without_a_count_the_window_side_is_withheld(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same report without its sidecar (and so without run.json's word on its iterations): A's side stays,
    the window's per-name figures are withheld."""
    bare = tmp_path / "pytorch_b1_s128.ncu.csv.gz"
    shutil.copy(NCU, bare)
    c = _compare(capsys, bare, EAGER)
    assert all(row["a"] is None for row in c["summary"])
    assert all(
        k["count_a"] is None and k["time_a_us"] is None and k["time_delta_us"] is None for k in c["kernels"]
    )
    assert any(k["count_b"] == 48 for k in c["kernels"])
    assert c["warnings"][0].startswith(
        "A has no iterations of its own (one window over its whole trace) and B has 20"
    )
    assert c["warnings"][0].endswith(
        "nothing says how many iterations it holds, so the per-name table shows none of its figures"
    )


def test_two_windows_compare_per_iteration_of_each(capsys: pytest.CaptureFixture[str]) -> None:
    """The same 3-iteration ncu report on both sides: the summary had read 'kernels / iteration' 606 (its 3
    iterations' total); now withheld, and the per-name table is per iteration of each (202 kernels)."""
    c = _compare(capsys, NCU, NCU)
    rows = {row["metric"]: row for row in c["summary"]}
    assert rows["kernels"]["a"] is None and rows["kernels"]["b"] is None and rows["kernels"]["ratio"] is None
    assert sum(k["count_a"] for k in c["kernels"]) == pytest.approx(202)
    assert sum(k["count_b"] for k in c["kernels"]) == pytest.approx(202)
    assert c["warnings"][0] == (
        "A and B have no iterations of their own (each one window over its whole trace): their figures are "
        "totals over each trace, not per iteration, so the summary shows none of them; the per-name table "
        "divides A's figures by 3 and B's by 3, the iterations their runs say they hold"
    )
