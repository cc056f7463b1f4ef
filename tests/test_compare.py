"""tracekit compare: per-kernel-name deltas, summary deltas, CLI over simulated runs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_report import hand_trace
from tracekit.analyzers.compare import compare, kernel_deltas, per_name
from tracekit.session import AnalysisOptions, analyze_trace


def test_per_name_counts_and_times_per_iteration() -> None:
    trace = hand_trace(iters=4, kernels=5, kernel_ns=10_000)
    frame = per_name(analyze_trace(trace, options=AnalysisOptions(skip=1))).sort("name")
    # k0 at kernels 0, 2, 4; k1 at 1, 3: per iteration 3 x 10 us and 2 x 10 us.
    assert frame.to_dicts() == [
        {"name": "k0", "count": 3.0, "time_us": 30.0},
        {"name": "k1", "count": 2.0, "time_us": 20.0},
    ]


def test_compare_exact_deltas() -> None:
    a = hand_trace(iters=3, kernels=4, kernel_ns=10_000)
    b = hand_trace(iters=3, kernels=4, kernel_ns=25_000, graph=True)
    doc = compare(analyze_trace(a), analyze_trace(b))
    kernels = {k["name"]: k for k in doc["kernels"]}
    assert kernels["k0"] == {
        "name": "k0",
        "count_a": 2.0,
        "count_b": 2.0,
        "count_delta": 0.0,
        "time_a_us": 20.0,
        "time_b_us": 50.0,
        "time_delta_us": 30.0,
        "time_ratio": 2.5,
    }
    summary = {r["metric"]: r for r in doc["summary"]}
    # A: 109 us per iteration (see test_report); B: 20 dispatch + 3 + 4 x 25 + 1 = 124 us.
    assert summary["latency_ms"]["a"] == pytest.approx(0.109)
    assert summary["latency_ms"]["b"] == pytest.approx(0.124)
    assert summary["latency_ms"]["delta"] == pytest.approx(0.015)
    assert summary["launches"]["a"] == 4 and summary["launches"]["b"] == 1
    assert summary["gpu_busy_ms"]["ratio"] == pytest.approx(2.5)
    assert doc["a"]["bound"] == "framework" and doc["b"]["bound"] == "compute"


def test_kernel_deltas_outer_join_and_order() -> None:
    a = pl.DataFrame({"name": ["x", "y", "gone"], "count": [1.0, 2.0, 1.0], "time_us": [10.0, 5.0, 3.0]})
    b = pl.DataFrame({"name": ["x", "y", "new"], "count": [1.0, 4.0, 2.0], "time_us": [4.0, 5.0, 8.0]})
    out = kernel_deltas(a, b)
    assert out["name"].to_list() == ["new", "x", "gone", "y"]
    rows = {r["name"]: r for r in out.to_dicts()}
    # A name absent from one side is null there (shown "—"), and so are its deltas: never 0 / -time.
    assert rows["new"]["time_a_us"] is None and rows["new"]["count_a"] is None
    assert rows["new"]["count_delta"] is None and rows["new"]["time_delta_us"] is None
    assert rows["gone"]["time_b_us"] is None and rows["gone"]["time_delta_us"] is None
    assert rows["x"]["time_delta_us"] == -6.0


@settings(max_examples=50, deadline=None)
@given(
    st.dictionaries(st.sampled_from("abcdefgh"), st.floats(0, 1e6), max_size=8),
    st.dictionaries(st.sampled_from("abcdefgh"), st.floats(0, 1e6), max_size=8),
)
def test_kernel_deltas_invariants(ta: dict[str, float], tb: dict[str, float]) -> None:
    def frame(d: dict[str, float]) -> pl.DataFrame:
        return pl.DataFrame(
            {"name": list(d), "count": [1.0] * len(d), "time_us": list(d.values())},
            schema={"name": pl.String, "count": pl.Float64, "time_us": pl.Float64},
        )

    out = kernel_deltas(frame(ta), frame(tb))
    assert set(out["name"]) == set(ta) | set(tb)
    both = set(ta) & set(tb)
    assert out.filter(pl.col("name").is_in(list(both)))["time_delta_us"].sum() == pytest.approx(
        sum(tb[k] - ta[k] for k in both), rel=1e-9, abs=1e-6
    )
    assert out.filter(~pl.col("name").is_in(list(both)))["time_delta_us"].null_count() == len(
        (set(ta) | set(tb)) - both
    )
    # ordered by |delta|, an absent side counting as 0
    deltas = [abs(tb.get(n, 0.0) - ta.get(n, 0.0)) for n in out["name"]]
    assert deltas == sorted(deltas, reverse=True)


def _tracekit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracekit.cli", *args], capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("runs")
    for runtime in ("pytorch", "onnx"):
        proc = _tracekit(
            "simulate",
            "--runtime",
            runtime,
            "--batch-sizes",
            "1,4",
            "--iters",
            "6",  # the fewest with a 95% interval of the median
            "-o",
            str(root / runtime),
        )
        assert proc.returncode == 0, proc.stderr
    return root / "pytorch", root / "onnx"


def test_compare_cli_runs_config_by_config(two_runs: tuple[Path, Path]) -> None:
    a, b = two_runs
    proc = _tracekit("compare", str(a), str(b), "--format", "json", "--top", "5")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [c["config"] for c in doc["comparisons"]] == ["batch 1, seq 128", "batch 4, seq 128"]
    first = doc["comparisons"][0]
    assert first["a"]["runtime"] == "pytorch" and first["b"]["runtime"] == "onnx"
    latency = next(r for r in first["summary"] if r["metric"] == "latency_ms")
    assert latency["b"] < latency["a"]  # the simulated ONNX preset dispatches far fewer, cheaper operators
    assert latency["significant"] is True and latency["b_high"] < latency["a_low"]
    # The two presets run different kernels: every name is absent on one side, "—" there, never 0.
    deltas = [abs((k["time_b_us"] or 0.0) - (k["time_a_us"] or 0.0)) for k in first["kernels"]]
    assert deltas == sorted(deltas, reverse=True)
    assert all(
        k["time_delta_us"] is None for k in first["kernels"] if None in (k["time_a_us"], k["time_b_us"])
    )
    table = _tracekit("compare", str(a), str(b), "--top", "3").stdout
    assert "within noise" in table or "[" in table  # intervals shown beside the medians
    kernel_table = table.split("per-iteration time and count")[1].split("batch 4")[0]
    assert "—" in kernel_table and "│       0 │" not in kernel_table
    for fmt in ("rich", "markdown", "csv"):
        proc = _tracekit("compare", str(a), str(b), "--format", fmt, "--top", "3")
        assert proc.returncode == 0, proc.stderr
        assert "latency" in proc.stdout
    csv_rows = proc.stdout.strip().splitlines()
    assert csv_rows[0] == (
        "config,section,name,a,b,delta,ratio,a_low,a_high,b_low,b_high,significant,count_a,count_b,count_delta"
    )
    assert sum(",kernel," in line for line in csv_rows) <= 6


def test_compare_cli_two_traces_and_errors(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = two_runs
    ta = sorted(a.glob("*_b1_*.sqlite"))
    tb = sorted(b.glob("*_b4_*.sqlite"))
    assert ta and tb, "simulate writes one SQLite trace per configuration"
    proc = _tracekit("compare", str(ta[0]), str(tb[0]))
    assert proc.returncode == 0, proc.stderr
    assert "batch 1, seq 128 vs batch 4, seq 128" in proc.stdout
    proc = _tracekit("compare", str(a), str(tmp_path / "missing"))
    assert proc.returncode == 2 and "no such file" in proc.stderr and "Traceback" not in proc.stderr


def test_compare_says_when_the_runtime_was_inferred(capsys: pytest.CaptureFixture[str]) -> None:
    """Traces without run.json or sidecar: each side's runtime is inferred from content and labelled so."""
    from tests.conftest import real_trace
    from tracekit.cli import main

    onnx = real_trace(
        "paper", "kineto", "gpu_util_log_onnx-batch1_HERRON_3518956.1666209271797.pt.trace.json"
    )
    torch = real_trace(
        "paper",
        "kineto",
        "gpu_util_log_pytorch-batch16-torch.float16_HERRON_3494129.1666196964215.pt.trace.json",
    )
    assert main(["compare", str(onnx), str(torch), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)["comparisons"][0]
    assert (doc["a"]["runtime_label"], doc["b"]["runtime_label"]) == ("onnx (inferred)", "pytorch (inferred)")
    assert main(["compare", str(onnx), str(torch)]) == 0
    assert "A = onnx (inferred)" in capsys.readouterr().out


def test_compare_names_configurations_without_a_partner(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    """A configuration on one side only is not compared, and a warning names it (it was dropped in silence)."""
    a, b = two_runs
    shutil.copytree(b, tmp_path / "b")
    run_file = tmp_path / "b" / "run.json"
    run = json.loads(run_file.read_text())
    run["configs"] = [c for c in run["configs"] if c["batch_size"] == 1]
    run_file.write_text(json.dumps(run))
    proc = _tracekit("compare", str(a), str(tmp_path / "b"), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert [c["config"] for c in json.loads(proc.stdout)["comparisons"]] == ["batch 1, seq 128"]
    assert "warning: not compared: batch 4, seq 128 is only in A (" in proc.stderr


def test_pair_inputs_never_picks_one_of_several_partners() -> None:
    """Inputs that share a configuration on a side (traces of unknown configuration through the API, all
    "batch ?, seq ?") are not paired with an arbitrary partner: each such key is a note, and with no pair at
    all the comparison is refused. The first version paired every A with B's last trace of that key."""
    from tracekit.api import pair_inputs
    from tracekit.errors import TracekitError
    from tracekit.inputs import TraceInput

    def item(name: str, batch: int | None) -> TraceInput:
        return TraceInput(
            path=Path(name), format="kineto", batch_size=batch, seq_len=None if batch is None else 8
        )

    a = [item("a1.json", None), item("a2.json", None), item("a4.json", 4)]
    b = [item("b1.json", None), item("b4.json", 4), item("b9.json", 9)]
    pairs, notes = pair_inputs(a, b)
    assert [(label, x.path.name, y.path.name) for label, x, y in pairs] == [
        ("batch 4, seq 8", "a4.json", "b4.json")
    ]
    assert notes == [
        "not compared: batch ?, seq ?: 2 input(s) of A and 1 of B share this configuration (a1.json, a2.json "
        "against b1.json), so none can be matched to one partner; give each trace its configuration (run.json "
        "or a .meta.json sidecar) or compare the files two at a time",
        "not compared: batch 9, seq 8 is only in B (b9.json): A has no configuration like it",
    ]
    with pytest.raises(TracekitError, match="that pairs one trace with one"):
        pair_inputs(a[:2], b[:1] + b[2:])


def test_a_memset_of_unknown_kind_is_matched_to_the_other_sides() -> None:
    """Kineto names a memset replayed from a CUDA graph "Memset (Unknown)": compared with eager PyTorch's
    "Memset (Device)" (the H200 samples: 12 per iteration each) they had read as one name gone and one new,
    with no delta. One candidate of that op on the other side: matched, and the name says which side knew
    the kind. Two candidates: left apart (which one it is is not known)."""
    a = pl.DataFrame(
        {"name": ["Memset (Device)", "k"], "count": [12.0, 1.0], "time_us": [9.216, 5.0]},
    )
    b = pl.DataFrame(
        {"name": ["Memset (Unknown)", "k"], "count": [12.0, 1.0], "time_us": [10.206, 5.0]},
    )
    out = kernel_deltas(a, b)
    row = out.filter(pl.col("name") == "Memset (Device in A, Unknown in B)").to_dicts()
    assert len(row) == 1 and out.height == 2
    assert row[0]["count_delta"] == 0.0
    assert row[0]["time_delta_us"] == pytest.approx(0.99)
    # the other way round
    out = kernel_deltas(b, a)
    assert "Memset (Device in B, Unknown in A)" in out["name"].to_list()
    # two copies of known kinds on the other side: which one the unknown one is cannot be told
    c = pl.DataFrame(
        {
            "name": ["Memcpy HtoD (Pageable -> Device)", "Memcpy HtoD (Pinned -> Device)"],
            "count": [1.0, 1.0],
            "time_us": [3.0, 2.0],
        }
    )
    d = pl.DataFrame({"name": ["Memcpy HtoD (Unknown)"], "count": [2.0], "time_us": [5.0]})
    assert sorted(kernel_deltas(c, d)["name"].to_list()) == sorted(
        ["Memcpy HtoD (Pageable -> Device)", "Memcpy HtoD (Pinned -> Device)", "Memcpy HtoD (Unknown)"]
    )
    # a copy of another direction is not a candidate; names present on both sides stay as they are
    e = pl.DataFrame(
        {
            "name": ["Memcpy DtoH (Device -> Pinned)", "Memset (Unknown)"],
            "count": [1.0, 1.0],
            "time_us": [1.0, 1.0],
        }
    )
    f = pl.DataFrame(
        {"name": ["Memcpy HtoD (Unknown)", "Memset (Unknown)"], "count": [1.0, 1.0], "time_us": [1.0, 1.0]}
    )
    assert sorted(kernel_deltas(e, f)["name"].to_list()) == sorted(
        ["Memcpy DtoH (Device -> Pinned)", "Memcpy HtoD (Unknown)", "Memset (Unknown)"]
    )
