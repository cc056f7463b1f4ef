"""Round 18 follow-ups (followups18): the smallest batch size as the base of report's ratios (not an interval
of a row against itself), which iterations a traced median is over, and wrong numbers in report, compare,
stability and recommendations on hand-built inputs with known answers. Synthetic inputs only (no torch)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tracekit.analyzers.report import CONFIG_COLUMNS, build_report
from tracekit.analyzers.stability import Measurement, measure
from tracekit.renderers.recommendations import describe
from tracekit.renderers.report_markdown import config_display_rows, render_report_markdown
from tracekit.renderers.report_text import configs_csv, render

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_traces"

# ---------------------------------------------------------------------------------------------------------
# 1. the smallest batch size is the base of the ratios

#: 10 iterations, no warm-up drift, no outlier (interleaved): median 1.1, 95% interval [1.0, 1.2] (order
#: statistics of ranks 1 and 8 of 10), CV 7.4%. Batch 2 is each value doubled: 2.2 [2.0, 2.4].
BASE_VALUES = [1.0, 1.1, 1.2, 1.0, 1.1, 1.2, 1.0, 1.1, 1.2, 1.1]


def _row(batch: int, stats: Measurement, busy: float = 0.2, **extra: Any) -> dict[str, Any]:
    """A configuration row as report's config_row makes it, from a latency Measurement (synthetic)."""
    latency = stats.median
    row: dict[str, Any] = {k: None for k in CONFIG_COLUMNS}
    row.update(
        runtime="pytorch",
        seq_len=128,
        batch_size=batch,
        device="gpu",
        synthetic=True,
        latency_ms=latency,
        latency_source="traced",
        latency_ci_low=stats.ci_low,
        latency_ci_high=stats.ci_high,
        traced_latency_ms=latency,
        gpu_busy_ms=busy,
        framework_overhead_ms=None if latency is None else latency - busy,
        framework_overhead_fraction=None if not latency else (latency - busy) / latency,
        gpu_utilization=None if not latency else busy / latency,
        kernels=100.0,
        launches=1.0,
        launch_api_ms=0.0,
        path=f"pytorch_b{batch}.synthetic",
        warnings=[],
        _latency=stats,
    )
    row.update(extra)
    return row


def _two_batch_report() -> dict[str, Any]:
    rows = [_row(1, measure(BASE_VALUES)), _row(2, measure([2 * v for v in BASE_VALUES]))]
    return build_report(rows).to_json(describe)


def test_the_smallest_batch_is_the_base_with_no_interval_in_json() -> None:
    """The base row against itself had read 1.00x [0.91-1.09] (difference(m, m): 1.0/1.2 to 1.2/1.0)."""
    doc = _two_batch_report()
    base, b2 = doc["configs"]
    assert base["sweep_base"] is True and b2["sweep_base"] is False
    assert base["latency_vs_smallest"] == 1.0
    assert base["latency_vs_smallest_low"] is None and base["latency_vs_smallest_high"] is None
    assert base["vs_smallest"] is None
    # the other rows keep their conservative interval: [2.0 / 1.2, 2.4 / 1.0]
    assert b2["latency_vs_smallest"] == pytest.approx(2.0, rel=1e-12)
    assert b2["latency_vs_smallest_low"] == pytest.approx(2.0 / 1.2, rel=1e-12)
    assert b2["latency_vs_smallest_high"] == pytest.approx(2.4, rel=1e-12)
    assert b2["vs_smallest"] == "higher"
    # machine-readable: null, not NaN or a string
    text = json.dumps(doc["configs"][0])
    assert '"latency_vs_smallest_low": null' in text and '"sweep_base": true' in text


def test_the_base_row_reads_base_in_markdown_and_csv() -> None:
    doc = _two_batch_report()
    shown = [r["vs_smallest_shown"] for r in config_display_rows(doc)]
    assert shown == ["1.00x (base)", "2.00x [1.67–2.40]"]
    md = render_report_markdown(doc, {})
    assert "1.00x (base)" in md and "1.00x [" not in md
    csv_text = configs_csv(doc)
    header, first, second = csv_text.splitlines()[:3]
    names = header.split(",")
    at = {n: i for i, n in enumerate(names)}
    assert first.split(",")[at["sweep_base"]] == "True" and second.split(",")[at["sweep_base"]] == "False"
    assert first.split(",")[at["latency_vs_smallest_low"]] == ""
    assert first.split(",")[at["latency_vs_smallest"]] == "1.0"
    # the stdout table's headroom column was already "—" where the headroom is the base
    assert "1.00x [" not in render(doc, "markdown") and "1.00x [" not in render(doc, "table")


def test_a_headroom_at_the_base_has_no_interval_of_itself() -> None:
    """Batch 2 off the plateau: the headroom is batch 1 itself; its ratio 1 and gain 1 have no interval
    (they had read [0.83-1.2], the base against itself)."""
    (sweep,) = _two_batch_report()["sweeps"]
    assert sweep["headroom_batch_size"] == 1
    assert sweep["headroom_latency_ratio"] == 1.0 and sweep["headroom_throughput_gain"] == 1.0
    assert sweep["headroom_latency_ratio_low"] is None and sweep["headroom_latency_ratio_high"] is None
    assert sweep["headroom_throughput_gain_low"] is None and sweep["headroom_throughput_gain_high"] is None


def test_a_base_without_a_latency_gets_no_ratio() -> None:
    """A base whose latency is 0 (a damaged set) is no base of a ratio: null, not 1.0."""
    rows = [_row(1, Measurement(count=3, kept=3, median=0.0)), _row(2, measure(BASE_VALUES))]
    doc = build_report(rows).to_json(describe)
    base = doc["configs"][0]
    assert base["sweep_base"] is True and base["latency_vs_smallest"] is None


def test_the_committed_sweep_reads_base_for_batch_1(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """H200 sweep-cuda-graphs (committed): batch 1 had read '1.00x [0.99–1.01]' in report.md."""
    from tracekit.cli import main

    out = tmp_path / "rep"
    assert (
        main(
            ["report", str(SAMPLES / "h200_bert_fp16" / "sweep-cuda-graphs"), "-o", str(out), "--no-figures"]
        )
        == 0
    )
    capsys.readouterr()
    md = (out / "report.md").read_text()
    (line,) = [x for x in md.splitlines() if x.startswith("| cuda-graphs | 128 | 1 | gpu | untraced |")]
    assert "| 1.00x (base) |" in line
    doc = json.loads((out / "report.json").read_text())
    b1 = next(c for c in doc["configs"] if c["batch_size"] == 1)
    assert (b1["sweep_base"], b1["latency_vs_smallest_low"], b1["latency_vs_smallest_high"]) == (
        True,
        None,
        None,
    )
    b2 = next(c for c in doc["configs"] if c["batch_size"] == 2)
    assert b2["sweep_base"] is False and b2["latency_vs_smallest_low"] < b2["latency_vs_smallest_high"]
