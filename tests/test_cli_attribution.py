"""`tracekit analyze` and `tracekit report` carry the idle time by cause (issue 14): on every committed sample
trace the breakdown is shown and its JSON causes sum to idle_ms per iteration; the simulator's truth comes
back exactly through the CLI's JSON; the CUDA-graph projection is printed with its assumptions (or why not)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracekit.analyzers.attribution import CAUSE_MS, CAUSES
from tracekit.cli import main

ROOT = Path(__file__).resolve().parents[1] / "sample_traces"
SAMPLES = sorted(
    p
    for p in ROOT.rglob("*")
    if p.name.endswith((".sqlite", ".sqlite.gz", ".json.gz"))
    and not p.name.endswith((".meta.json", ".truth.json"))
)


def analyze(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["analyze", *argv]) == 0
    return capsys.readouterr().out


#: every sample folder's traces: (format, device, synthetic) as the reader must report them, by hand from
#: sample_traces/*/run.json and the H200 README (which profiler wrote them on which device)
SAMPLE_KINDS = {
    "cpu_onnx_bert_nsys": {("nsys-sqlite", "cpu", False)},
    "cpu_onnx_bert_ort": {("ort", "cpu", False)},
    "cpu_pytorch_bert_torch": {("kineto", "cpu", False)},
    **{
        run: {("kineto", "gpu", False)}
        for run in (
            "compile",
            "compile-cudagraphs",
            "compile-cudagraphs-run5",
            "cuda-graphs",
            "cuda-graphs-run5",
            "pytorch",
            "sweep-cuda-graphs",
            "torchscript",
        )
    },
    "nsys-pytorch": {("nsys-sqlite", "gpu", False)},
    "nsys-cuda-graphs": {("nsys-sqlite", "gpu", False)},
    "h200_nsys_probe": {("nsys-sqlite", "gpu", False)},
    "sweep_pytorch": {("nsys-sqlite", "gpu", True)},
    "ranks4": {("kineto", "gpu", True)},
    **{
        f"table3_{run}": {("kineto", "gpu", True), ("nsys-sqlite", "gpu", True)}
        for run in ("cuda-graphs", "onnx", "onnx-cuda-graphs", "pytorch", "torchscript")
    },
}


def test_there_are_sample_traces() -> None:
    """The parametrized test below runs on every kind of sample: each folder's traces read as the format,
    device and synthetic flag they were written as (the CPU nsys/ORT/Kineto runs, the real H200 Kineto runs,
    the synthetic SQLite and Kineto presets), and no folder is missing."""
    from tracekit.readers import read_trace

    kinds: dict[str, set[tuple[str, str, bool]]] = {}
    for path in SAMPLES:
        meta = read_trace(path).meta
        kinds.setdefault(path.parent.name, set()).add(
            (meta["format"], meta["device"], bool(meta.get("synthetic")))
        )
    assert kinds == SAMPLE_KINDS


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_sample_trace_shows_the_breakdown_and_its_sums_hold(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(analyze(capsys, str(path), "--format", "json"))
    section = doc["idle_attribution"]
    assert [row["cause"] for row in section["causes"]] == list(CAUSES)
    for it in doc["iterations"]:
        if it["idle_ms"] is None:  # no device work at all: nothing idle to attribute
            assert all(it[c] is None for c in CAUSE_MS)
            continue
        assert all(it[c] >= 0 for c in CAUSE_MS)
        assert abs(sum(it[c] for c in CAUSE_MS) - it["idle_ms"]) <= 1e-9
    shares = [row["share_of_idle"] for row in section["causes"]]
    if any(s is not None for s in shares):
        assert sum(shares) == pytest.approx(1.0, abs=1e-12)
    text = analyze(capsys, str(path))
    md = analyze(capsys, str(path), "--format", "markdown")
    if not section["available"]:  # latency only (ORT CPU under nsys): said, not shown as zeros
        assert all(it["idle_ms"] is None for it in doc["iterations"])
        assert "idle time by cause: not available" in text and "not available" in md
        return
    assert "idle time by cause (per iteration)" in text and "dispatch" in text and "in_flight" in text
    assert "CUDA-graph projection:" in text
    assert "## Idle time by cause (per iteration)" in md and "CUDA-graph projection" in md
    header = analyze(capsys, str(path), "--format", "csv").splitlines()[0].split(",")
    assert header[header.index("idle_ms") + 1 : header.index("idle_ms") + 6] == list(CAUSE_MS)


def test_the_simulators_truth_comes_back_exactly_through_the_cli_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("table3_pytorch/pytorch_b1_s128", "table3_cuda-graphs/cuda-graphs_b1_s128"):
        truth = json.loads((ROOT / "synthetic" / f"{name}.synthetic.truth.json").read_text())
        want = {r["index"]: [r[f"{c}_ns"] for c in CAUSES] for r in truth["iterations"]}
        for suffix in (".synthetic.sqlite", ".synthetic.json.gz"):  # nsys and Kineto outputs of one run
            doc = json.loads(analyze(capsys, str(ROOT / "synthetic" / f"{name}{suffix}"), "--format", "json"))
            got = {r["index"]: [round(r[c] * 1e6) for c in CAUSE_MS] for r in doc["iterations"]}
            assert got == {i: want[i] for i in got} and len(got) == len(want), (name, suffix)


def test_projection_is_printed_with_its_assumptions_or_the_reason_there_is_none(
    capsys: pytest.CaptureFixture[str],
) -> None:
    eager = ROOT / "synthetic" / "table3_pytorch" / "pytorch_b1_s128.synthetic.sqlite"
    doc = json.loads(analyze(capsys, str(eager), "--format", "json"))
    projection = doc["idle_attribution"]["cuda_graph_projection"]
    assert projection["applies"] and len(projection["assumptions"]) == 5
    assert projection["projected_ms"] < doc["summary"]["latency_ms"]["mean"]
    assert projection["projected_ms"] >= doc["summary"]["gpu_busy_ms"]["mean"]
    text = analyze(capsys, str(eager))
    flat = " ".join(text.split())
    assert "kernel gap 777 ns, graph head 26,792 ns, graph tail 12,458 ns (measured: " in flat
    assert "kernels keep their durations" in text
    graphs = ROOT / "synthetic" / "table3_cuda-graphs" / "cuda-graphs_b1_s128.synthetic.sqlite"
    doc = json.loads(analyze(capsys, str(graphs), "--format", "json"))
    projection = doc["idle_attribution"]["cuda_graph_projection"]
    assert not projection["applies"] and "already replays CUDA graphs" in projection["reason"]
    # graph replays: the idle time between the graph's kernels is in flight
    assert doc["summary"]["in_flight_ms"]["mean"] > 0
    cpu = ROOT / "cpu_onnx_bert_ort" / "onnx_b1_s128.ort.json.gz"
    doc = json.loads(analyze(capsys, str(cpu), "--format", "json"))
    section = doc["idle_attribution"]
    assert not section["cuda_graph_projection"]["applies"]
    assert section["causes"][0]["share_of_idle"] == 1.0  # operators as device ops, no API calls: dispatch


def test_compare_carries_the_causes(capsys: pytest.CaptureFixture[str]) -> None:
    a, b = ROOT / "synthetic" / "table3_pytorch", ROOT / "synthetic" / "table3_cuda-graphs"
    assert main(["compare", str(a), str(b), "--format", "json"]) == 0
    (comparison,) = json.loads(capsys.readouterr().out)["comparisons"]
    rows = {r["metric"]: r for r in comparison["summary"]}
    assert set(CAUSE_MS) <= set(rows)
    assert rows["dispatch_ms"]["a"] > rows["dispatch_ms"]["b"]  # graphs remove the dispatch between kernels


def test_latency_only_trace_says_the_breakdown_is_not_available(capsys) -> None:
    """Ranges without device or operator ops (ORT CPU under nsys): no cause is reported as 0, it is unknown."""
    from tests.conftest import SAMPLE_TRACES
    from tracekit.cli import main

    path = SAMPLE_TRACES / "cpu_onnx_bert_nsys" / "onnx_b1_s128.nsys.sqlite.gz"
    assert main(["analyze", str(path), "--format", "json"]) == 0
    section = json.loads(capsys.readouterr().out)["idle_attribution"]
    assert section["available"] is False
    assert all(row["mean_ms"] is None and row["total_ms"] is None for row in section["causes"])
    assert main(["analyze", str(path)]) == 0
    out = capsys.readouterr().out
    assert "idle time by cause: not available" in out and "dispatch" not in out
