"""Fixes of round 16's second wave (fixncu16): the Nsight Compute reader and the utilization figures' names.

- An ncu CSV named ``*.synthetic.*`` is labelled synthetic, as the ORT, Kineto and nsys readers label theirs
  (hostile16's ``test_ncu_csv_named_synthetic_is_labelled_synthetic``).
- Range results (no launch dimensions: range replay, whole CUDA graphs) are no kernels: not counted as kernels
  (hostile16's ``test_ncu_kernels_beside_a_range_result_count_alone``); the GPU busy time they would be summed
  into is the analyzer's (analyzers/iterations.py: the lead applied this helper's patch).
- A GPU-metric name that already ends in its bracketed unit (nsys 2024+: "SMs Active [Throughput %]") is not
  given the unit again (nsys16's ``test_the_table_names_an_nsys_metric_once_with_its_unit``).

Every input is built here by hand (file names say synthetic); the expected numbers follow from what is
written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tracekit.cli import main
from tracekit.readers import read_trace

US = 1_000
NCU_HEAD = ['"ID","Process ID","Kernel Name","gpu__time_duration.sum"', '"","","","usecond"']
#: five kernels of 10, 20, 30, 40 and 50 µs: GPU busy 0.150 ms
FIVE = [f'"{i}","7","k{i}","{10 * (i + 1)}"' for i in range(5)]
RANGE_HEAD = [
    '"ID","Process ID","Kernel Name","Block Size","Grid Size","gpu__time_duration.sum"',
    '"","","","","","usecond"',
]
#: the same five kernels with launch dimensions, then one range result (no launch dimensions) of 150 µs
MIXED = [
    *(f'"{i}","7","k{i}","(128, 1, 1)","(4, 1, 1)","{10 * (i + 1)}"' for i in range(5)),
    '"5","7","range0","","","150"',
]
#: two range results of 150 and 250 µs, no kernel
RANGES = ['"0","7","range0","","","150"', '"1","7","range1","","","250"']


def _ncu(path: Path, rows: list[str], head: list[str] = NCU_HEAD) -> Path:
    path.write_text("\n".join([*head, *rows]) + "\n")
    return path


def _json(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, dict[str, Any] | None, str]:
    """``tracekit analyze PATH --format json``: (exit code, the document or None, stderr)."""
    code = main(["analyze", str(path), "--format", "json", "--no-progress"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == 0 else None, err


# ---------------------------------------------------------------------------------- synthetic by its name


@pytest.mark.parametrize(
    ("name", "synthetic"),
    [
        ("five.synthetic.ncu.csv", True),
        ("five.SYNTHETIC.ncu.csv", True),
        ("synthetic_five.ncu.csv", True),
        ("five.ncu.csv", False),
    ],
)
def test_an_ncu_csv_is_synthetic_by_its_name(tmp_path: Path, name: str, synthetic: bool) -> None:
    trace = read_trace(_ncu(tmp_path / name, FIVE))
    assert trace.meta["synthetic"] is synthetic
    assert trace.ops.height == 5


def test_an_ncu_csv_not_named_synthetic_is_a_measurement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc, err = _json(capsys, _ncu(tmp_path / "five.ncu.csv", FIVE))
    assert code == 0, err
    assert doc is not None
    assert doc["trace"]["synthetic"] is False


# ------------------------------------------------------------------------------ range results are no kernels


def test_range_results_are_ops_of_kind_graph_not_kernel(tmp_path: Path) -> None:
    """The 5 kernels are ops of kind "kernel" (10..50 µs back to back), the range result one op of kind
    "graph" (a whole piece of device work whose kernels are not recorded one by one), after them."""
    trace = read_trace(_ncu(tmp_path / "mixed.synthetic.ncu.csv", MIXED, RANGE_HEAD))
    ops = trace.ops.sort("start")
    assert ops.get_column("kind").cast(str).to_list() == ["kernel"] * 5 + ["graph"]
    assert ops.get_column("name").to_list() == ["k0", "k1", "k2", "k3", "k4", "range0"]
    assert ops.get_column("start").to_list() == [0, 10_000, 30_000, 60_000, 100_000, 150_000]
    assert ops.get_column("end").to_list() == [10_000, 30_000, 60_000, 100_000, 150_000, 300_000]
    assert trace.meta["range_results"] == [5]
    # every result keeps its kernel_metrics rows (the per-kernel analyses leave the range result out by index)
    assert sorted(trace.kernel_metrics.get_column("kernel").unique().to_list()) == [0, 1, 2, 3, 4, 5]


def test_range_results_alone_count_no_kernel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, err = _json(capsys, _ncu(tmp_path / "ranges.synthetic.ncu.csv", RANGES, RANGE_HEAD))
    assert code == 0, err
    assert doc is not None
    assert any("2 of 2 results have no launch dimensions" in w for w in doc["warnings"])
    (iteration,) = doc["iterations"]
    assert iteration["kernels"] == 0


def test_kernels_with_launch_dimensions_stay_kernels(tmp_path: Path) -> None:
    rows = [f'"{i}","7","k{i}","(128, 1, 1)","(4, 1, 1)","{10 * (i + 1)}"' for i in range(5)]
    trace = read_trace(_ncu(tmp_path / "dims.synthetic.ncu.csv", rows, RANGE_HEAD))
    assert trace.ops.get_column("kind").cast(str).to_list() == ["kernel"] * 5
    assert "range_results" not in trace.meta


def test_ncu_gpu_busy_beside_a_range_result_is_withheld(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc, err = _json(capsys, _ncu(tmp_path / "mixed.synthetic.ncu.csv", MIXED, RANGE_HEAD))
    assert code == 0, err
    assert doc is not None
    assert [(it["kernels"], it["gpu_busy_ms"]) for it in doc["iterations"]] == [(5, None)]


# ---------------------------------------------------------------- a GPU metric's unit, said once in its name


@pytest.mark.parametrize(
    ("metric", "unit", "named"),
    [
        # nsys 2024+ names carry their unit in brackets: said once
        ("SMs Active [Throughput %]", "%", "SMs Active [Throughput %]"),
        ("Compute Warps in Flight [Throughput %]", "%", "Compute Warps in Flight [Throughput %]"),
        ("SM Active [%]", "%", "SM Active [%]"),
        # older names carry none: the unit is added
        ("SMs Active", "%", "SMs Active [%]"),
        ("SM Issue", "%", "SM Issue [%]"),
        # a bracket that is not the unit ("ms" is not "s"; "Throughput %" is not "cycles"): the unit is added
        ("Latency [ms]", "s", "Latency [ms] [s]"),
        ("Foo [Throughput %]", "cycles", "Foo [Throughput %] [cycles]"),
        # no unit: the name alone
        ("SMs Active [Throughput %]", "", "SMs Active [Throughput %]"),
        ("SMs Active", "", "SMs Active"),
    ],
)
def test_a_metric_name_states_its_unit_once(metric: str, unit: str, named: str) -> None:
    from tracekit.analyzers.utilization import with_unit

    assert with_unit(metric, unit) == named


def test_the_table_names_an_nsys_metric_once_with_its_unit(tmp_path: Path) -> None:
    """nsys16's test of the same name (3 synchronized 40 µs iterations, one 20 µs kernel each, 'SMs Active
    [Throughput %]' sampled at 40 every 10 µs): the table's metric column says the unit once."""
    import tracekit
    from tests.nsys_builder import NsysBuilder

    b = NsysBuilder(version="2025.3.2.0")
    b.gpu(0, "NVIDIA H200")
    for i, t0 in enumerate([100 * US, 150 * US, 200 * US]):
        b.nvtx_range(t0, t0 + 40 * US, "iteration")
        b.runtime(t0 + 1 * US, t0 + 5 * US, "cudaLaunchKernel_v7000", correlation=2 * i + 1)
        b.kernel(t0 + 6 * US, t0 + 26 * US, "gemm", correlation=2 * i + 1)
        b.runtime(t0 + 5 * US, t0 + 27 * US, "cudaDeviceSynchronize_v3020", correlation=2 * i + 2)
    for t in range(100 * US, 250 * US, 10 * US):
        b.gpu_metric(t, "SMs Active [Throughput %]", 40)
    path = b.write(tmp_path / "metric_name.synthetic.sqlite")
    row = tracekit.table([path]).row(0, named=True)
    assert row["sms_active"] == 40.0
    assert row["sms_active_source"] == "nsys metrics"
    assert row["sms_active_metric"] == "SMs Active [Throughput %]"
