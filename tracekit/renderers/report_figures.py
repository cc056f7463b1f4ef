"""The report's figures (``tracekit report``): the latency breakdown, latency vs batch size and one timeline,
drawn from the report's data (:mod:`tracekit.renderers.plots` draws them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracekit.analyzers.report import CAUSE_COLUMNS
from tracekit.analyzers.sweep import config_key, sweep_key, sweep_label

#: The report's figures by key, each written as ``STEM.png`` and ``STEM.svg`` (:func:`write_figures`).
FIGURE_STEMS = {"breakdown": "fig_breakdown", "latency": "fig_latency", "timeline": "fig_timeline"}
FIGURE_FORMATS = ("png", "svg")


def stale_figures(out_dir: Path, drawn: dict[str, str]) -> list[Path]:
    """The files in ``out_dir`` named as one of the report's figures (:data:`FIGURE_STEMS`) that this report
    did not draw (``drawn``: figure key -> PNG name, :func:`write_figures`' result): an earlier report's,
    which would otherwise sit beside a report.md that does not show them. Sorted by name."""
    return sorted(
        out_dir / f"{stem}.{fmt}"
        for key, stem in FIGURE_STEMS.items()
        if key not in drawn
        for fmt in FIGURE_FORMATS
        if (out_dir / f"{stem}.{fmt}").is_file()
    )


def _causes(members: list[dict[str, Any]]) -> dict[str, list[Any]] | None:
    """The overhead of each configuration by idle cause ({cause: ms per batch size}), or None when no
    configuration has the attribution (the figure then stacks the overhead whole)."""
    if all(m.get(name) is None for m in members for name in CAUSE_COLUMNS):
        return None
    return {name[: -len("_ms")]: [m.get(name) for m in members] for name in CAUSE_COLUMNS}


def write_figures(report: Any, timeline: Any, out_dir: Path) -> dict[str, str]:
    """Render the three figures into ``out_dir``; returns figure key -> PNG file name."""
    from tracekit.renderers import plots

    figures: dict[str, str] = {}
    by_key = {config_key(r): r for r in report.configs}
    multi_seq = len({s["seq_len"] for s in report.sweeps}) > 1
    tag = " (synthetic)" if report.synthetic else ""
    devices = {s["device"] for s in report.sweeps}
    busy_label = (
        "GPU busy" if devices == {"gpu"} else ("operator busy" if devices == {"cpu"} else "device busy")
    )

    def label(s: dict[str, Any]) -> str:
        name = sweep_label(s)
        return name + (f" (seq {s['seq_len']})" if multi_seq and s["seq_len"] is not None else "")

    if report.sweeps:
        panels = []
        for s in report.sweeps:
            members = [by_key[(*sweep_key(s), b)] for b in s["batch_sizes"]]
            panels.append(
                {
                    "title": label(s)
                    if s["seq_len"] is None or multi_seq
                    else f"{sweep_label(s)} (seq {s['seq_len']})",
                    "batch_sizes": s["batch_sizes"],
                    "busy_ms": [m["gpu_busy_ms"] for m in members],
                    "overhead_ms": [m["framework_overhead_ms"] for m in members],
                    "transition": s["transition_batch_size"],
                    "plateau": s["plateau"],
                    "causes": _causes(members),
                }
            )
        fig = plots.breakdown_figure(
            panels, title=f"Latency breakdown vs batch size{tag}", busy_label=busy_label
        )
        plots.save_figure(fig, out_dir / FIGURE_STEMS["breakdown"])
        figures["breakdown"] = FIGURE_STEMS["breakdown"] + ".png"

        series = [
            {
                "label": label(s),
                "batch_sizes": s["batch_sizes"],
                "latency_ms": s["latency_ms"],
                "transition": s["transition_batch_size"],
                "ci_low": s.get("latency_ci_low"),
                "ci_high": s.get("latency_ci_high"),
            }
            for s in report.sweeps
        ]
        sources = {s["latency_source"] for s in report.sweeps}
        ylabel = f"{'/'.join(sorted(sources))} median latency (ms), 95% interval"
        fig = plots.latency_figure(series, title=f"Latency vs batch size{tag}", ylabel=ylabel)
        plots.save_figure(fig, out_dir / FIGURE_STEMS["latency"])
        figures["latency"] = FIGURE_STEMS["latency"] + ".png"

    if timeline is not None:
        work = "GPU" if timeline.device == "gpu" else "CPU operators"
        title = timeline.title + (
            " (iterations capped to keep the figure small)" if timeline.truncated else ""
        )
        fig = plots.timeline_figure(
            timeline.lanes, timeline.bars, timeline.gaps, timeline.iterations, title=title, device_label=work
        )
        plots.save_figure(fig, out_dir / FIGURE_STEMS["timeline"])
        figures["timeline"] = FIGURE_STEMS["timeline"] + ".png"
    return figures
