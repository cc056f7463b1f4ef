"""Every command x every format on the sample traces, and the presentation rules of issue 11 (items 7-12, 14)
as the user meets them on the command line."""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
from pathlib import Path

import pytest

from tracekit.cli import main
from tracekit.commands.output import FORMATS

ROOT = Path(__file__).resolve().parents[1] / "sample_traces"
SYN = ROOT / "synthetic" / "table3_pytorch"
SYN_TRACE = SYN / "pytorch_b1_s128.synthetic.sqlite"
CPU_NSYS = ROOT / "cpu_onnx_bert_nsys"
CPU_ORT = ROOT / "cpu_onnx_bert_ort"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, str]:
    assert main(list(argv)) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def commands(tmp: Path) -> dict[str, list[str]]:
    return {
        "analyze": ["analyze", str(SYN_TRACE)],
        "table": ["table", str(SYN)],
        "compare": ["compare", str(SYN), str(ROOT / "synthetic" / "table3_onnx")],
        "report": ["report", str(SYN), "-o", str(tmp / "rep"), "--no-figures"],
    }


# ---- the simulator's ground truth: what every format of every command must show (independent of the analysis)


def _truth(run_dir: str) -> dict:
    (path,) = (ROOT / "synthetic" / run_dir).glob("*.truth.json")
    return json.loads(path.read_text())


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


PT, ONNX = _truth("table3_pytorch"), _truth("table3_onnx")
PT_LATENCY = [it["latency_ns"] / 1e6 for it in PT["iterations"]]
PT_BUSY = [it["gpu_busy_ns"] / 1e6 for it in PT["iterations"]]
ONNX_LATENCY = [it["latency_ns"] / 1e6 for it in ONNX["iterations"]]
#: (mean, median) latency and GPU busy of the simulated eager-PyTorch run, from the truth per iteration
PT_LAT_MEAN, PT_LAT_P50 = sum(PT_LATENCY) / len(PT_LATENCY), _median(PT_LATENCY)
PT_BUSY_MEAN, PT_BUSY_P50 = sum(PT_BUSY) / len(PT_BUSY), _median(PT_BUSY)
ONNX_LAT_P50 = _median(ONNX_LATENCY)


def test_the_truth_is_what_the_simulator_says_it_is() -> None:
    # the expectations below come from the truth files, checked here against their own summary
    assert len(PT_LATENCY) == 10 and PT_LAT_MEAN == pytest.approx(PT["summary"]["latency_ms_mean"], abs=1e-12)
    assert PT_LAT_P50 == pytest.approx(PT["summary"]["latency_ms_p50"], abs=1e-12)
    assert PT_BUSY_MEAN == pytest.approx(PT["summary"]["gpu_busy_ms_mean"], abs=1e-12)
    assert ONNX_LAT_P50 == pytest.approx(ONNX["summary"]["latency_ms_p50"], abs=1e-12)
    assert round(PT_LAT_P50, 3) != round(PT_LAT_MEAN, 3)  # mean and median tell apart at 3 decimals


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _shown(cell: str, value: float) -> bool:
    """Whether the first number in ``cell`` is ``value`` rounded to the decimals shown."""
    match = _NUMBER.search(cell.replace(",", ""))
    assert match, f"no number in {cell!r}"
    text = match.group()
    decimals = len(text.split(".")[1]) if "." in text else 0
    return abs(float(text) - value) <= 0.5 * 10**-decimals + 1e-12


def _rows(text: str) -> list[dict[str, str]]:
    """The body rows of every Markdown or terminal (box-drawn) table in ``text``, as {header: cell}; header
    words wrapped over several terminal lines are joined."""
    lines = text.splitlines()
    rows: list[dict[str, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("|") and i + 1 < len(lines) and lines[i + 1].strip().startswith("|---"):
            header = [c.strip() for c in line.strip("|").split("|")]
            i += 2
            while i < len(lines) and lines[i].strip().startswith("|"):
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                rows.append(dict(zip(header, cells, strict=False)))
                i += 1
            continue
        if line[:1] in ("┏", "┌"):
            parts: list[list[str]] = []
            i += 1
            while i < len(lines) and lines[i].strip()[:1] in ("┃", "│"):
                parts.append([c.strip() for c in re.split("[┃│]", lines[i].strip())[1:-1]])
                i += 1
            header = (
                [" ".join(p[k] for p in parts if p[k]).strip() for k in range(len(parts[0]))] if parts else []
            )
            i += 1  # the rule under the header
            while i < len(lines) and lines[i].strip()[:1] == "│":
                cells = [c.strip() for c in lines[i].strip().split("│")[1:-1]]
                if cells and cells[0]:  # a wrapped continuation line has an empty first cell
                    rows.append(dict(zip(header, cells, strict=False)))
                i += 1
            continue
        i += 1
    return rows


def _cell(rows: list[dict[str, str]], first: str, column: str) -> str:
    """The cell of the row whose first cell is ``first``, in the column whose header starts with ``column``."""
    row = next(r for r in rows if next(iter(r.values())) == first or r.get("runtime") == first)
    return next(v for k, v in row.items() if k.startswith(column))


def _csv(text: str) -> list[dict[str, str]]:
    rows = list(csv.reader(io.StringIO(text)))
    assert len(rows) >= 2 and all(len(r) == len(rows[0]) for r in rows)
    return [dict(zip(rows[0], r, strict=True)) for r in rows[1:]]


def _check_analyze(fmt: str, out: str) -> None:
    if fmt == "json":
        doc = json.loads(out)
        assert doc["trace"]["synthetic"] is True and doc["summary"]["bound"] == "framework"
        assert [it["latency_ms"] for it in doc["iterations"]] == pytest.approx(PT_LATENCY, abs=1e-12)
        assert [it["gpu_busy_ms"] for it in doc["iterations"]] == pytest.approx(PT_BUSY, abs=1e-12)
        assert [it["kernels"] for it in doc["iterations"]] == [it["kernels"] for it in PT["iterations"]]
        assert [it["dispatch_ms"] for it in doc["iterations"]] == pytest.approx(
            [it["dispatch_ns"] / 1e6 for it in PT["iterations"]], abs=1e-12
        )
        assert doc["summary"]["latency_ms"]["p50"] == pytest.approx(PT_LAT_P50, abs=1e-12)
    elif fmt == "csv":
        rows = _csv(out)
        assert [float(r["latency_ms"]) for r in rows] == pytest.approx(PT_LATENCY, abs=1e-12)
        assert [float(r["gpu_busy_ms"]) for r in rows] == pytest.approx(PT_BUSY, abs=1e-12)
        assert [int(r["launches"]) for r in rows] == [it["launches"] for it in PT["iterations"]]
    else:
        rows = _rows(out)
        assert _shown(_cell(rows, "latency", "mean"), PT_LAT_MEAN)
        assert _shown(_cell(rows, "latency", "p50"), PT_LAT_P50)
        assert _shown(_cell(rows, "GPU busy", "mean"), PT_BUSY_MEAN)
        assert _shown(_cell(rows, "kernels (copies, memsets not counted)", "p50"), 400)
        assert "framework-bound" in out


def _check_table(fmt: str, out: str) -> None:
    if fmt == "json":
        (row,) = json.loads(out)["rows"]
        assert row["synthetic"] is True and (row["runtime"], row["batch_size"]) == ("pytorch", 1)
        assert row["latency_ms"] == pytest.approx(PT_LAT_MEAN, abs=1e-12)
        assert row["gpu_busy_ms"] == pytest.approx(PT_BUSY_MEAN, abs=1e-12)
        assert row["iterations"] == len(PT_LATENCY)
    elif fmt == "csv":
        (row,) = _csv(out)
        assert float(row["latency_ms"]) == pytest.approx(PT_LAT_MEAN, abs=1e-12)
        assert float(row["gpu_busy_ms"]) == pytest.approx(PT_BUSY_MEAN, abs=1e-12)
        assert row["synthetic"] == "True"
    else:
        rows = _rows(out)
        assert _shown(_cell(rows, "pytorch", "latency ms"), PT_LAT_MEAN)
        assert _shown(_cell(rows, "pytorch", "GPU busy"), PT_BUSY_MEAN)


def _check_compare(fmt: str, out: str) -> None:
    if fmt == "json":
        (comparison,) = json.loads(out)["comparisons"]
        latency = next(r for r in comparison["summary"] if r["metric"] == "latency_ms")
        assert (latency["a"], latency["b"]) == pytest.approx((PT_LAT_P50, ONNX_LAT_P50), abs=1e-12)
        assert latency["delta"] == pytest.approx(ONNX_LAT_P50 - PT_LAT_P50, abs=1e-12)
    elif fmt == "csv":
        row = next(r for r in _csv(out) if r["section"] == "summary" and r["name"] == "traced latency (ms)")
        assert float(row["a"]) == pytest.approx(PT_LAT_P50, abs=1e-12)
        assert float(row["b"]) == pytest.approx(ONNX_LAT_P50, abs=1e-12)
        assert float(row["delta"]) == pytest.approx(ONNX_LAT_P50 - PT_LAT_P50, abs=1e-12)
    else:
        rows = _rows(out)
        assert _shown(_cell(rows, "traced latency (ms)", "A "), PT_LAT_P50)
        assert _shown(_cell(rows, "traced latency (ms)", "B "), ONNX_LAT_P50)
        assert _shown(_cell(rows, "traced latency (ms)", "B −"), ONNX_LAT_P50 - PT_LAT_P50)


def _check_report(fmt: str, out: str) -> None:
    if fmt == "json":
        doc = json.loads(out)
        (sweep,) = doc["sweeps"]
        assert doc["synthetic"] is True and sweep["batch_sizes"] == [1]
        assert sweep["latency_statistic"] == "median"
        assert sweep["latency_ms"] == pytest.approx([PT_LAT_P50], abs=1e-12)
    elif fmt == "csv":
        (row,) = _csv(out)
        assert float(row["latency_ms"]) == pytest.approx(PT_LAT_P50, abs=1e-12)
        assert float(row["gpu_busy_ms"]) == pytest.approx(PT_BUSY_MEAN, abs=1e-12)
    else:
        assert _shown(_cell(_rows(out), "pytorch", "smallest batch"), PT_LAT_P50)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("command", ["analyze", "table", "compare", "report"])
def test_every_command_every_format(command: str, fmt: str, tmp_path: Path, capsys) -> None:
    """Each format of each command shows the simulator's true numbers (JSON/CSV to 1e-12 ms, text formats
    rounded as shown) for the synthetic BERT runs, and says the input is synthetic."""
    out, _ = run(capsys, *commands(tmp_path)[command], "--format", fmt)
    {"analyze": _check_analyze, "table": _check_table, "compare": _check_compare, "report": _check_report}[
        command
    ](fmt, out)
    if fmt == "json":
        assert "synthetic" in json.dumps(json.loads(out))  # the document carries it
    elif fmt != "csv":  # item 8: a synthetic input is said on stdout
        assert "synthetic" in out.lower()


def test_the_table_reader_of_these_tests_reads_both_styles() -> None:
    md = "x\n| metric | mean | p50 |\n|---|---|---|\n| latency | 10.302 | 10.301 |\n"
    box = (
        "┏━━━━━━━━━┳━━━━━━━━━┓\n┃         ┃ latency ┃\n┃ metric  ┃ ms      ┃\n┡━━━━━━━━━╇━━━━━━━━━┩\n"
        "│ latency │  10.302 │\n│         │  (wrap) │\n└─────────┴─────────┘\n"
    )
    assert _rows(md) == [{"metric": "latency", "mean": "10.302", "p50": "10.301"}]
    assert _rows(box) == [{"metric": "latency", "latency ms": "10.302"}]
    assert (
        _shown("10.302", 10.3020479)
        and not _shown("10.302", 10.301078)
        and _shown("10.3 [10.29–10.32]", 10.30)
    )
    assert _shown("-8.153", -8.153002) and not _shown("400", 401)


def _parser(command: str) -> argparse.ArgumentParser:
    import importlib

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    importlib.import_module(f"tracekit.commands.{command}").register(sub)
    return sub.choices[command]


@pytest.mark.parametrize("command", ["analyze", "table", "compare", "report"])
def test_help_describes_every_option_with_its_default(command: str) -> None:
    for action in _parser(command)._actions:
        if isinstance(action, argparse._HelpAction) or not action.option_strings:
            continue
        assert action.help and "default" in action.help, (command, action.option_strings)


def test_counts_are_integers_and_gaps_start_in_the_iteration(capsys) -> None:
    out, _ = run(capsys, "analyze", str(SYN_TRACE))
    kernels = next(
        line for line in out.splitlines() if line.startswith("│ kernels (copies, memsets not counted)")
    )
    assert "400.0" not in kernels and "│      400 │" in kernels
    assert "starts at (ms into iteration)" in out and "start (ns)" not in out
    doc = json.loads(run(capsys, "analyze", str(SYN_TRACE), "--format", "json")[0])
    gap = doc["longest_gaps"][0]
    assert 0 <= gap["offset_ms"] <= doc["iterations"][0]["latency_ms"]


def test_cpu_traces_say_operator_not_gpu(tmp_path: Path, capsys) -> None:
    text, _ = run(capsys, "table", str(CPU_ORT), "--format", "markdown")  # (rich wraps long headers)
    assert "operator busy ms" in text and "GPU busy" not in text
    header = run(capsys, "table", str(CPU_ORT), "--format", "csv")[0].splitlines()[0].split(",")
    assert "operator_busy_ms" in header and "gpu_busy_ms" not in header
    assert json.loads(run(capsys, "table", str(CPU_ORT), "--format", "json")[0])["rows"][0]["device"] == "cpu"
    run(capsys, "report", str(CPU_ORT), "-o", str(tmp_path / "r"), "--no-figures")
    md = (tmp_path / "r" / "report.md").read_text()
    assert "operator utilization" in md and "GPU utilization" not in md and "GPU busy" not in md
    assert "1 sweep " in md or "1 sweep (" in md
    assert "1 sweeps" not in md
    assert "operator_busy_ms" in (tmp_path / "r" / "report.csv").read_text().splitlines()[0]


def test_table_and_report_label_their_latency_and_device(tmp_path: Path, capsys) -> None:
    text, _ = run(capsys, "table", str(SYN), "--paper", "--format", "markdown")
    assert "latency ms (traced)" in text and "latency ms (published)" in text and "device" in text
    run(capsys, "report", str(CPU_ORT), "-o", str(tmp_path / "r"), "--no-figures")
    md = (tmp_path / "r" / "report.md").read_text()
    assert "| latency used |" in md and "| untraced |" in md and "| cpu |" in md


def test_compare_verdict_and_table_use_one_statistic(capsys) -> None:
    doc = json.loads(run(capsys, *commands(Path("."))["compare"], "--format", "json")[0])
    (comparison,) = doc["comparisons"]
    assert comparison["statistic"] == "p50"
    util = next(r for r in comparison["summary"] if r["metric"] == "gpu_utilization")
    assert util["a"] == comparison["a"]["gpu_utilization"]
    assert (comparison["a"]["bound"] == "framework") == (util["a"] < 0.5)
    assert all("time_ratio" in k for k in comparison["kernels"])  # the ratio is in JSON, not only CSV
    out = run(capsys, *commands(Path("."))["compare"])[0]
    assert f"median GPU utilization {util['a']:.1%}" in out and "A median [95%]" in out


def test_queue_time_is_never_negative_and_the_early_starts_are_explained(capsys) -> None:
    # The simulated launch call returns after its kernel starts: that op waited for nothing after its call
    # returned, so its queue time is 0 (a negative "queue time" shown as a measurement was a wrong number),
    # and a note counts such launches.
    doc = json.loads(run(capsys, "analyze", str(SYN_TRACE), "--format", "json")[0])
    assert doc["summary"]["queue_us"]["min"] >= 0
    assert any("the first op started before its launch call returned" in n for n in doc["notes"])
    out = run(capsys, "analyze", str(SYN_TRACE))[0]
    assert "note: queue time: in " in out and "their queue time is 0, not negative" in " ".join(out.split())


def test_breakdown_panel_without_device_data_says_so() -> None:
    from tracekit.renderers.plots import NO_DATA_TEXT, breakdown_figure

    panel = {"title": "onnx", "batch_sizes": [1], "busy_ms": [None], "overhead_ms": [None], "plateau": [1]}
    fig = breakdown_figure([panel])
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert NO_DATA_TEXT in texts and NO_DATA_TEXT == "no device/operator data in this trace"
    assert list(fig.axes[0].get_yticks()) == []


def _bar_pixels(png: Path) -> float:
    """Share of the image's pixels in the breakdown's bar colours (GPU busy, framework overhead)."""
    import matplotlib.colors as mcolors
    import matplotlib.image as mimage
    import numpy as np

    from tracekit.renderers.plots import BUSY_COLOR, OVERHEAD_COLOR

    img = mimage.imread(png)[..., :3]
    hits = sum(
        (np.abs(img - np.array(mcolors.to_rgb(c))).max(axis=-1) < 0.02).sum()
        for c in (BUSY_COLOR, OVERHEAD_COLOR)
    )
    return float(hits) / (img.shape[0] * img.shape[1])


def test_report_cli_draws_the_no_data_panel(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU ONNX Runtime run under nsys has latency but no device or operator activity: the report's
    breakdown figure says so in its panel and draws no bar (checked on the figure the report saves and on the
    pixels of the PNG it wrote, against a run with data)."""
    from tracekit.renderers import plots

    saved: dict[str, dict] = {}
    save_figure = plots.save_figure

    def spy(fig, base, dpi: int = 120):
        saved[Path(base).name] = {
            "texts": [t.get_text() for ax in fig.axes for t in ax.texts],
            "bars": sum(len(ax.patches) for ax in fig.axes),
        }
        return save_figure(fig, base, dpi)

    monkeypatch.setattr(plots, "save_figure", spy)
    run(capsys, "report", str(CPU_NSYS), "-o", str(tmp_path / "none"))
    assert saved["fig_breakdown"]["texts"] == [plots.NO_DATA_TEXT] and saved["fig_breakdown"]["bars"] == 0
    run(capsys, "report", str(SYN), "-o", str(tmp_path / "data"))
    assert saved["fig_breakdown"]["bars"] > 0 and plots.NO_DATA_TEXT not in saved["fig_breakdown"]["texts"]
    # the PNGs: only the legend's two swatches in bar colours without data; bars fill several % with data
    assert _bar_pixels(tmp_path / "none" / "fig_breakdown.png") < 0.005
    assert _bar_pixels(tmp_path / "data" / "fig_breakdown.png") > 0.05


def test_analyze_and_report_outputs_carry_the_idle_time_by_cause(tmp_path: Path, capsys) -> None:
    causes = ["dispatch_ms", "launch_ms", "sync_ms", "other_api_ms", "in_flight_ms"]
    for fmt, title in (
        ("table", "idle time by cause (per iteration)"),
        ("markdown", "## Idle time by cause"),
    ):
        out = run(capsys, "analyze", str(SYN_TRACE), "--format", fmt)[0]
        assert title in out and "CUDA-graph projection: mean latency" in out and "Assumptions:" in out
        # the causes have their own section, not rows of the summary table
        assert "idle: dispatch" not in out
    doc = json.loads(run(capsys, "analyze", str(SYN_TRACE), "--format", "json")[0])
    assert set(causes) <= set(doc["iterations"][0]) and set(causes) <= set(doc["summary"])
    assert set(doc["idle_attribution"]) >= {"causes", "idle_ms", "definitions", "cuda_graph_projection"}
    header = run(capsys, "analyze", str(SYN_TRACE), "--format", "csv")[0].splitlines()[0].split(",")
    assert set(causes) <= set(header)
    run(capsys, "report", str(SYN), "-o", str(tmp_path / "r"), "--no-figures")
    md = (tmp_path / "r" / "report.md").read_text()
    assert "## Framework overhead by cause" in md and "| dispatch ms |" in md
    report_header = (tmp_path / "r" / "report.csv").read_text().splitlines()[0].split(",")
    assert set(causes) <= set(report_header) and "graph_projected_ms" in report_header
    config = json.loads((tmp_path / "r" / "report.json").read_text())["configs"][0]
    assert sum(config[c] for c in causes) == pytest.approx(config["framework_overhead_ms"], abs=1e-9)
