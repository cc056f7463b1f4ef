"""Matplotlib figures for ``tracekit report`` (Agg backend, PNG and SVG, written atomically).

The functions take plain data (lists, dicts, polars frames with named columns) prepared by the report
command; they compute nothing beyond layout.

- :func:`breakdown_figure`: latency breakdown vs batch size, stacked GPU busy / framework overhead, one
  panel per sweep (the study's Figure 3); with the idle-time attribution, the overhead is stacked by cause
  (dispatch, launch, sync, other API, in flight).
- :func:`latency_figure`: latency vs batch size per sweep on log-log axes, transitions marked (Figure 4).
- :func:`timeline_figure`: a few iterations of one configuration: CPU ranges, API calls, device ops by
  stream and the idle gaps shaded, plus a zoom into the first iteration.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

from tracekit.io import write_bytes_atomic  # noqa: E402

BUSY_COLOR = "#2c7fb8"
OVERHEAD_COLOR = "#fdae61"
IDLE_COLOR = "#e31a1c"
CATEGORY_COLORS: dict[str, str] = {
    "range": "#9ecae1",
    "nested range": "#c6dbef",
    "launch call": "#f16913",
    "sync call": "#7f2704",
    "other API call": "#969696",
    "kernel": "#238b45",
    "operator": "#238b45",
    "memcpy": "#6a51a3",
    "memset": "#9e9ac8",
    "graph": "#74c476",
}
#: The idle-time causes, bottom to top above busy, with their legend labels and colors.
CAUSE_STYLES: dict[str, tuple[str, str]] = {
    "dispatch": ("dispatch (host outside API calls)", "#fdae61"),
    "launch": ("launch calls", "#d7301f"),
    "sync": ("sync calls", "#7f2704"),
    "other_api": ("other API calls", "#969696"),
    "in_flight": ("in flight (launched, not started)", "#9e9ac8"),
}
RUNTIME_COLORS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def save_figure(fig: Figure, base: str | Path, dpi: int = 120) -> list[Path]:
    """Write ``base``.png and ``base``.svg atomically, close the figure, return the two paths."""
    base = Path(base)
    paths = []
    for fmt in ("png", "svg"):
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=dpi, bbox_inches="tight", metadata=_metadata(fmt))
        target = base.with_name(base.name + f".{fmt}")
        write_bytes_atomic(target, buf.getvalue())
        paths.append(target)
    plt.close(fig)
    return paths


def _metadata(fmt: str) -> dict[str, Any]:
    # Reproducible files: no creation date in PNG/SVG.
    if fmt == "svg":
        return {"Date": None}
    return {"Software": "tracekit (matplotlib)"}


def _grid(n: int, max_cols: int = 3) -> tuple[int, int]:
    cols = min(max_cols, max(n, 1))
    return math.ceil(max(n, 1) / cols), cols


#: Drawn in a breakdown panel whose traces hold no device work (e.g. ONNX Runtime CPU under nsys).
NO_DATA_TEXT = "no device/operator data in this trace"


#: Drawn in a latency figure none of whose configurations has a latency.
NO_LATENCY_TEXT = "no latency measured in these configurations"

#: Drawn in a latency figure whose latencies are all 0 ms (or below): nothing a log axis can show.
NO_POSITIVE_LATENCY_TEXT = "no latency above 0 ms in these configurations"

#: Drawn in a breakdown panel whose stacked values are all 0 ms (on a 0-1 ms axis, not a 1e-9 ms one).
ALL_ZERO_TEXT = "every value is 0 ms"

#: A flat latency series (one value, or all equal, intervals included) spans this factor either side of its
#: value on the log axis: half a decade, so the 1-2-5 ticks label it (matplotlib's own autoscale of a single
#: value can give identical limits and warn, e.g. 0.09999999999999999 ms).
FLAT_LOG_SPAN = 10**0.5


def _no_data(ax: Any, batches: list[Any]) -> None:
    """A panel with nothing to stack: say so instead of drawing empty bars on a meaningless axis."""
    ax.text(
        0.5, 0.5, NO_DATA_TEXT, transform=ax.transAxes, ha="center", va="center", fontsize=9, color="#444444"
    )
    ax.set_xticks(np.arange(len(batches)), [str(b) for b in batches])
    ax.set_xlabel("batch size")
    ax.set_yticks([])


def _values(values: Sequence[Any]) -> np.ndarray:
    return np.array([v if v is not None else np.nan for v in values], dtype=float)


def _layers(panel: dict[str, Any], busy_label: str) -> list[tuple[str, str, np.ndarray]]:
    """(label, color, values) of the stacked layers of a panel, bottom first: busy, then each idle cause
    (``causes``) or the whole overhead."""
    layers = [(busy_label, BUSY_COLOR, _values(panel["busy_ms"]))]
    causes = panel.get("causes")
    if causes:
        layers += [
            (CAUSE_STYLES[c][0], CAUSE_STYLES[c][1], _values(causes[c])) for c in CAUSE_STYLES if c in causes
        ]
    else:
        layers.append(("framework overhead", OVERHEAD_COLOR, _values(panel["overhead_ms"])))
    return layers


def _mark_transition(ax: Any, batches: list[Any], transition: Any) -> None:
    if transition is None or transition not in batches:
        return
    ti = batches.index(transition)
    ax.axvline(ti - 0.5, color="#444444", linestyle="--", linewidth=1)
    # In the band above the tallest bar (ylim leaves ~25% headroom), so it never hides a bar label.
    ax.text(
        ti - 0.45,
        0.97,
        f"transition: batch {transition}",
        transform=ax.get_xaxis_transform(),
        fontsize=7,
        va="top",
        ha="left",
        color="#444444",
    )


def breakdown_figure(
    panels: Sequence[dict[str, Any]], title: str = "", busy_label: str = "GPU busy"
) -> Figure:
    """Stacked bars per batch size: busy (bottom) + framework overhead (top), one panel per sweep; the
    percentage above a bar is the overhead share of its latency.

    Each panel: ``title``, ``batch_sizes``, ``busy_ms``, ``overhead_ms`` (lists, None allowed),
    ``transition`` (batch size or None), ``plateau`` (list of batch sizes), and optionally ``causes``
    ({cause: list of ms} for the :data:`CAUSE_STYLES` causes): then the overhead is drawn as one layer per
    cause (they sum to it).
    """
    rows, cols = _grid(len(panels))
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.6 * rows), squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    legend: dict[str, str] = {}
    for ax, panel in zip(axes.flat, panels, strict=False):
        batches = list(panel["batch_sizes"])
        x = np.arange(len(batches))
        layers = _layers(panel, busy_label)
        ax.set_title(panel["title"], fontsize=10)
        if all(np.isnan(values).all() for _, _, values in layers):
            _no_data(ax, batches)
            continue
        bottom = np.zeros(len(batches))
        for label, color, values in layers:
            ax.bar(x, np.nan_to_num(values), bottom=bottom, color=color, label=label, width=0.75)
            bottom = bottom + np.nan_to_num(values)
            legend.setdefault(label, color)
        busy = np.nan_to_num(layers[0][2])
        over = bottom - busy
        # Overhead share above each bar.
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(bottom > 0, over / bottom, np.nan)
        for xi, (t, s) in enumerate(zip(bottom, share, strict=False)):
            if not np.isnan(s):
                ax.text(xi, t, f"{100 * s:.0f}%", ha="center", va="bottom", fontsize=7, color="#7f3b08")
        tallest = float(np.nanmax(bottom)) if bottom.size else 0.0
        if tallest > 0:
            ax.set_ylim(0, tallest * 1.32)
        else:  # every bar 0 ms: say so on a readable axis
            ax.set_ylim(0, 1.0)
            ax.text(
                0.5,
                0.5,
                ALL_ZERO_TEXT,
                transform=ax.transAxes,
                ha="center",
                va="center",
                fontsize=9,
                color="#444444",
            )
        _mark_transition(ax, batches, panel.get("transition"))
        ax.set_xticks(x, [str(b) for b in batches])
        ax.set_xlabel("batch size")
        ax.set_ylabel("traced latency (ms)")
        ax.grid(axis="y", alpha=0.3)
    if not legend:
        legend = {busy_label: BUSY_COLOR, "framework overhead": OVERHEAD_COLOR}
    handles = [Patch(color=color, label=label) for label, color in legend.items()]
    ncol = min(len(handles), 3 if len(handles) > 2 else 2)
    fig.legend(
        handles=handles, loc="upper center", ncol=ncol, frameon=False, bbox_to_anchor=(0.5, 1.0), fontsize=8
    )
    if title:
        fig.suptitle(title, y=1.05 + 0.03 * (math.ceil(len(handles) / ncol) - 1), fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.95 - 0.04 * (math.ceil(len(handles) / ncol) - 1)))
    return fig


def latency_figure(series: Sequence[dict[str, Any]], title: str = "", ylabel: str = "latency (ms)") -> Figure:
    """Latency vs batch size on log-log axes, one line per series.

    Each series: ``label``, ``batch_sizes``, ``latency_ms``, ``transition`` (batch size or None), and
    optionally ``ci_low``/``ci_high`` (the 95% interval of each median, drawn as error bars where known).
    """
    fig, ax = plt.subplots(figsize=(7.5, 5.0))
    all_batches: set[int] = set()
    marked = False  # a transition circle drawn (the legend names it only then)
    for i, s in enumerate(series):
        color = RUNTIME_COLORS[i % len(RUNTIME_COLORS)]
        b = np.array(s["batch_sizes"], dtype=float)
        y = np.array([v if v is not None else np.nan for v in s["latency_ms"]], dtype=float)
        all_batches.update(int(v) for v in s["batch_sizes"])
        ax.plot(
            b, y, marker=MARKERS[i % len(MARKERS)], color=color, label=s["label"], linewidth=1.6, markersize=5
        )
        lows, highs = s.get("ci_low") or [], s.get("ci_high") or []
        known = [k for k in range(len(b)) if k < len(lows) and lows[k] is not None and highs[k] is not None]
        if known:
            yk = y[known]
            err = np.array(
                [
                    [yk[j] - lows[k] for j, k in enumerate(known)],
                    [highs[k] - yk[j] for j, k in enumerate(known)],
                ]
            )
            ax.errorbar(
                b[known], yk, yerr=np.clip(err, 0, None), fmt="none", ecolor=color, capsize=3, linewidth=1
            )
        t = s.get("transition")
        if t is not None and t in s["batch_sizes"]:
            yt = y[list(s["batch_sizes"]).index(t)]
            marked = True
            ax.plot(
                [t],
                [yt],
                marker="o",
                markersize=13,
                markerfacecolor="none",
                markeredgecolor=color,
                markeredgewidth=1.5,
            )
    ax.set_xscale("log", base=2)
    measured = any(v is not None and v > 0 for s in series for v in s["latency_ms"])
    if measured:
        flat = _flat_log_limits(series)
        if flat is not None:  # set before the log scale, whose autoscale would otherwise run on the one value
            ax.set_ylim(*flat)
        ax.set_yscale("log")
        # Plain-number labels at 1-2-5 steps: log axes otherwise label only the decades.
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
    else:  # nothing to put on a log axis (matplotlib would refuse it): say so
        known = any(v is not None for s in series for v in s["latency_ms"])
        text = NO_POSITIVE_LATENCY_TEXT if known else NO_LATENCY_TEXT
        ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=9)
        ax.set_yticks([])
    if all_batches:
        ticks = sorted(all_batches)
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.minorticks_off() if len(ticks) > 1 else None
    ax.set_xlabel("batch size")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    if marked:
        ax.plot(
            [],
            [],
            marker="o",
            markersize=11,
            markerfacecolor="none",
            markeredgecolor="#444444",
            linestyle="",
            label="transition batch size",
        )
    ax.legend(fontsize=8, loc="upper left")
    if title:
        ax.set_title(title, fontsize=11)
    fig.tight_layout()
    return fig


def _flat_log_limits(series: Sequence[dict[str, Any]]) -> tuple[float, float] | None:
    """Log-axis limits for a flat latency figure: every positive latency and interval bound the same value v
    (to 1e-9 relative) gives (v / :data:`FLAT_LOG_SPAN`, v * :data:`FLAT_LOG_SPAN`); None otherwise (matplotlib
    autoscales a figure whose values differ)."""
    values = [
        float(v)
        for s in series
        for key in ("latency_ms", "ci_low", "ci_high")
        for v in (s.get(key) or [])
        if v is not None and math.isfinite(v) and v > 0
    ]
    if not values:
        return None
    low, high = min(values), max(values)
    if high - low > 1e-9 * high:
        return None
    return low / FLAT_LOG_SPAN, high * FLAT_LOG_SPAN


def _draw_lanes(
    ax: Any, lanes: list[str], bars: pl.DataFrame, gaps: pl.DataFrame, op_lanes: list[int]
) -> None:
    height = 0.8
    for category, group in bars.group_by("category", maintain_order=True):
        cat = category[0]
        color = CATEGORY_COLORS.get(cat, "#737373")
        for lane, sub in group.group_by("lane", maintain_order=True):
            if lane[0] not in lanes:
                continue
            y = len(lanes) - 1 - lanes.index(lane[0])
            xr = sub.select("start_ms", "duration_ms").to_numpy()
            ax.broken_barh(xr, (y - height / 2, height), facecolors=color, edgecolors=color, linewidth=0.4)
    if gaps.height and op_lanes:
        ys = [len(lanes) - 1 - i for i in op_lanes]
        lo, hi = min(ys) - 0.5, max(ys) + 0.5
        ax.broken_barh(
            gaps.select("start_ms", "duration_ms").to_numpy(),
            (lo, hi - lo),
            facecolors=IDLE_COLOR,
            alpha=0.18,
            linewidth=0,
        )
    ax.set_yticks(range(len(lanes)), list(reversed(lanes)), fontsize=8)
    ax.set_ylim(-0.6, len(lanes) - 0.4)


def timeline_figure(
    lanes: list[str],
    bars: pl.DataFrame,
    gaps: pl.DataFrame,
    iterations: pl.DataFrame,
    title: str = "",
    device_label: str = "GPU",
) -> Figure:
    """A per-iteration timeline: one lane per CPU range depth, API calls and device stream; idle gaps shaded.

    ``bars``: lane, category, start_ms, duration_ms. ``gaps``: start_ms, duration_ms. ``iterations``: index,
    start_ms, end_ms, latency_ms, gpu_busy_ms. The lower panel zooms into the first iteration's start.
    """
    op_lanes = [i for i, lane in enumerate(lanes) if lane.startswith(device_label)]
    fig, (ax, zoom) = plt.subplots(
        2, 1, figsize=(14, 2.2 + 0.9 * len(lanes) * 2), gridspec_kw={"height_ratios": [1, 1]}
    )
    for a in (ax, zoom):
        _draw_lanes(a, lanes, bars, gaps, op_lanes)
        a.grid(axis="x", alpha=0.3)
    end = float(iterations["end_ms"].max()) if iterations.height else 1.0
    if not end > 0:  # iterations of 0 ms at the origin: a 0-1 ms axis, not identical limits
        end = 1.0
    ax.set_xlim(0, end)
    starts = iterations["start_ms"].to_numpy()
    ax.vlines(
        np.append(starts, end), -0.6, len(lanes) - 0.4, colors="#252525", linestyles="dotted", linewidth=1
    )
    titles: list[tuple[Any, float, float, list[str]]] = []
    for row in iterations.iter_rows(named=True):
        busy, latency = row["gpu_busy_ms"], row["latency_ms"]
        # latency is None without a measured timeline (an Nsight Compute report alone)
        short = f"iteration {row['index']}" + (f": {ms_text(latency)} ms" if latency is not None else "")
        label = short
        if busy is not None:
            label += f", {device_label} busy {ms_text(busy)} ms" + (
                f" ({100 * busy / latency:.0f}%)" if latency else ""
            )
        text = ax.text(
            (row["start_ms"] + row["end_ms"]) / 2,
            len(lanes) - 0.35,
            label,
            ha="center",
            va="bottom",
            fontsize=8,
        )
        titles.append((text, row["start_ms"], row["end_ms"], [label, short, f"iteration {row['index']}"]))
    ax.set_xlabel(_timeline_xlabel(_fit_titles(fig, ax, titles)))
    if iterations.height:
        first = iterations.row(0, named=True)
        span = first["end_ms"] - first["start_ms"]
        z0 = first["start_ms"]
        if span > 0:
            zoom.set_xlim(z0, z0 + span * 0.15)
            zoom.set_title(
                f"zoom: the first 15% of iteration {first['index']} ({ms_text(span * 0.15)} ms)", fontsize=9
            )
        else:  # nothing to zoom into (identical limits would warn and mean nothing)
            zoom.set_xlim(z0, z0 + 1.0)
            zoom.set_title(f"zoom: iteration {first['index']} lasts 0 ms", fontsize=9)
    zoom.set_xlabel("time (ms)")
    handles = [
        Patch(color=CATEGORY_COLORS[c], label=c)
        for c in CATEGORY_COLORS
        if c in set(bars["category"].to_list())
    ]
    handles.append(Patch(color=IDLE_COLOR, alpha=0.25, label=f"{device_label} idle gap"))
    fig.legend(
        handles=handles,
        loc="upper center",
        ncol=len(handles),
        fontsize=8,
        frameon=False,
        bbox_to_anchor=(0.5, 1.0),
    )
    if title:
        fig.suptitle(title, y=1.03, fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    ax.set_xlabel(_timeline_xlabel(_fit_titles(fig, ax, titles)))  # again, in the final layout
    return fig


def ms_text(value: float) -> str:
    """Milliseconds to 3 significant digits without an exponent: 2134, 565, 12.3, 0.400, 0.0000123 (``.3g``
    wrote 2.13e+03 for 2133.6)."""
    if not math.isfinite(value) or value == 0:
        return f"{value:g}"
    decimals = min(9, max(0, 2 - math.floor(math.log10(abs(value)))))
    return f"{value:.{decimals}f}"


def _timeline_xlabel(untitled: int) -> str:
    if not untitled:
        return "time (ms)"
    return f"time (ms); {untitled} iteration{'s' if untitled > 1 else ''} too narrow for a title"


def _fit_titles(fig: Figure, ax: Any, titles: list[tuple[Any, float, float, list[str]]]) -> int:
    """Give each iteration's title text the first of its candidates (the full title, then shorter ones) that
    fits within the iteration's span on the axes and overlaps no title placed before it, else no text; the
    number of iterations left without a title. Measured in the figure's current layout (call it again after
    tight_layout)."""
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    placed: list[Any] = []
    untitled = 0
    for text, start, end, candidates in titles:
        (left, _), (right, _) = ax.transData.transform([(start, 0.0), (end, 0.0)])
        left, right = max(left, frame.x0), min(right, frame.x1)
        chosen = ""
        for candidate in candidates:
            text.set_text(candidate)
            box = text.get_window_extent(renderer)
            if box.x0 >= left - 0.5 and box.x1 <= right + 0.5 and not any(box.overlaps(p) for p in placed):
                chosen = candidate
                placed.append(box)
                break
        text.set_text(chosen)
        untitled += not chosen
    return untitled
