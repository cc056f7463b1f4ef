"""Presentation of the ``tracekit table`` document: terminal table, Markdown, CSV, JSON.

The terminal table fits 120 columns: one row per configuration, numbered; what each row is (runtime, device,
precision, batch size, sequence length) in two columns, values inferred from the trace marked ``(inferred)`` /
``*`` and file-name hints ``(file name)`` / ``†``; the metric sources, the trace files and the inference
evidence in a legend under the table. ``wide`` shows every column instead. With ``--paper`` the published
rows sit under the measured rows of the same runtime, in the same columns, with measured / published latency
where the configurations match.

Busy/utilization are worded from the rows' device ("GPU" / "operator"), in headers and CSV columns alike."""

from __future__ import annotations

import io
import shutil
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracekit.errors import one_line
from tracekit.fields import common_device, device_name, device_word
from tracekit.renderers.tabular import format_value, render_csv, render_json, render_markdown

if TYPE_CHECKING:
    from rich.table import Table

#: The narrowest terminal the default table is laid out for.
MIN_WIDTH = 120
#: Markers of inferred values in the config cell (the runtime says "(inferred)" / "(file name)" in words).
MARKS = {"inferred from trace content": "*", "from file name": "†"}
RUNTIME_TAGS = {"inferred from trace content": " (inferred)", "from file name": " (file name)"}
COMPILATION_SHORT = {"ahead-of-time": "AOT", "just-in-time": "JIT", "none": "none"}
SERIALIZATION_SHORT = {"yes": "yes", "none": "no"}

PAPER_COLUMNS = [
    ("runtime", "runtime"),
    ("device", "device"),
    ("graph_compilation", "graph compilation"),
    ("kernel_serialization", "kernel serialization"),
    ("latency_ms", "latency ms (published)"),
    ("sms_active", "SMs active %"),
    ("warp_occupancy", "warp occupancy %"),
]

# ------------------------------------------------------------------------------------------- cells


def short_gpu(name: str | None) -> str | None:
    """ "Quadro RTX 8000" -> "RTX 8000", "NVIDIA H100 80GB HBM3" -> "H100 80GB": vendor and product line
    dropped, at most two words kept."""
    if not name:
        return None
    words = [w for w in name.split() if w not in ("NVIDIA", "Quadro", "GeForce", "Tesla", "AMD", "Instinct")]
    return " ".join(words[:2]) or name


def runtime_cell(row: dict[str, Any]) -> str:
    """The runtime with "(inferred)" / "(file name)", or the run directory and file when unknown."""
    if row.get("runtime") is None:
        path = Path(row["trace"])
        return f"? {path.parent.name}/{path.name}" if path.parent.name else f"? {path.name}"
    return row["runtime"] + RUNTIME_TAGS.get(row.get("runtime_source") or "", "")


def _mark(row: dict[str, Any], key: str) -> str:
    return MARKS.get(row.get(f"{key}_source") or "", "")


#: Source of a value that varies by serving step (its candidates are the lowest and highest).
VARIES_SOURCE = "varies by serving step"


def value_text(row: dict[str, Any], key: str) -> str | None:
    """A row's value of ``key`` as shown, with its mark: ``16*``, ``16†``; an uncertain one ``32*?`` (its
    evidence may not mean it), ``32|16?`` (sources disagree: no value), ``1–32`` (varies by serving step);
    None when unknown."""
    value, candidates = row.get(key), (row.get("uncertain") or {}).get(key)
    if value is not None:
        return f"{format_value(value)}{_mark(row, key)}" + ("?" if candidates else "")
    if not candidates:
        return None
    if row.get(f"{key}_source") == VARIES_SOURCE:
        return "–".join(map(str, candidates))
    return "|".join(map(str, candidates)) + "?"


def config_cell(row: dict[str, Any]) -> str:
    """ "RTX 8000 fp16* bs16† s128": device (GPU name, else gpu/cpu), precision, batch size, sequence length
    where known, each inferred value marked (* trace content, † file name; ? uncertain, see
    :func:`value_text`)."""
    parts = [short_gpu(row.get("gpu")) or row.get("device") or "?"]
    for key, prefix in (("precision", ""), ("batch_size", "bs"), ("seq_len", "s")):
        text = value_text(row, key)
        if text is not None:
            parts.append(prefix + text)
    return " ".join(parts)


def traits_cell(row: dict[str, Any]) -> str:
    """ "AOT / no": graph compilation / kernel serialization, short."""
    comp, ser = row.get("graph_compilation"), row.get("kernel_serialization")
    if comp is None and ser is None:
        return "—"
    return (
        f"{COMPILATION_SHORT.get(comp or '', comp or '—')} / {SERIALIZATION_SHORT.get(ser or '', ser or '—')}"
    )


def _number(digits: int) -> Callable[[dict[str, Any], str], str]:
    return lambda row, key: format_value(row.get(key), digits)


def _published_config(setup: dict[str, Any]) -> str:
    return f"{short_gpu(setup['gpu'])} {setup['precision']} bs{setup['batch_size']} s{setup['seq_len']}"


def _short_mismatch(mismatch: list[str]) -> str:
    """ "≠ bs16 fp32" from ["bs16 (published bs1)", "fp32 (published fp16)"]."""
    words = [m.split(" (")[0].replace(" unknown", "?").replace("batch size", "bs") for m in mismatch]
    return "≠ " + " ".join(w.replace("model ", "") for w in words)


def ratio_cell(entry: dict[str, Any]) -> str:
    if entry["published"] is None:
        return "no paper row"
    if entry["mismatch"]:
        return _short_mismatch(entry["mismatch"])
    ratio = entry["latency_ratio"]
    if ratio is None:
        return "—"
    low, high = entry.get("latency_ratio_low"), entry.get("latency_ratio_high")
    noise = f" [{low:.2f}–{high:.2f}]" if low is not None and high is not None else ""
    return f"{ratio:.2f}×{noise}" + (" (traced)" if entry.get("latency_basis") == "traced" else "")


# ------------------------------------------------------------------------------------------- columns

#: (key, header, justify, cell) of every terminal column; cell(row, key) -> text.
Column = tuple[str, str, str, Callable[[dict[str, Any], str], str]]


def _text(row: dict[str, Any], key: str) -> str:
    return format_value(row.get(key))


def _mixed_profilers(doc: dict[str, Any]) -> bool:
    """Whether the rows come from more than one profiler (then the table names each row's)."""
    return len({r.get("profiler") for r in doc["rows"]}) > 1


def _columns(doc: dict[str, Any], device: str | None, wide: bool, paper: bool) -> list[Column]:
    word = device_word(device)
    cols: list[Column] = [
        ("row", "#", "right", _text),
        ("runtime", "runtime", "left", lambda r, k: runtime_cell(r)),
    ]
    if wide:
        cols += [
            ("profiler", "profiler", "left", lambda r, k: r.get(k) or "—"),
            ("trace", "trace", "left", lambda r, k: Path(r["trace"]).name if r.get("trace") else ""),
            ("device", "device", "left", _text),
            ("gpu", "GPU", "left", _text),
            ("model", "model", "left", _text),
        ]
        cols += [
            (k, h, "right", lambda r, k: value_text(r, k) or "—")
            for k, h in (("precision", "precision"), ("batch_size", "batch"), ("seq_len", "seq len"))
        ]
        cols += [
            ("graph_compilation", "graph compilation", "left", _text),
            ("kernel_serialization", "kernel serialization", "left", _text),
            ("iterations", "iterations", "right", _text),
        ]
    else:
        cols += [
            ("config", "device / precision / batch / seq", "left", lambda r, k: config_cell(r)),
            ("traits", "compile / serialize", "left", lambda r, k: traits_cell(r)),
        ]
    cols.append(("latency_ms", "latency ms", "right", _number(3)))
    if any(r.get("untraced_latency_ms") is not None for r in doc["rows"]):
        cols.append(("untraced_latency_ms", "untraced ms", "right", _number(3)))
    if wide or not paper:
        cols += [
            ("gpu_busy_ms", f"{word} busy ms", "right", _number(3)),
            ("framework_overhead_ms", "framework overhead ms", "right", _number(3)),
        ]
    if wide:
        cols.append(("gpu_utilization", f"{word} util.", "right", _number(3)))
    cols.append(("sms_active", "SMs active %", "right", _number(1)))
    if wide:
        cols.append(("sms_active_source", "source", "left", _text))
    cols.append(("warp_occupancy", "warp occupancy %", "right", _number(1)))
    if wide:
        cols += [
            ("warp_occupancy_source", "source", "left", _text),
            ("sms_active_kernel_time", "SMs active % (kernel time)", "right", _number(1)),
            ("warp_occupancy_kernel_time", "warp occ. % (kernel time)", "right", _number(1)),
            ("kernel_time_source", "source", "left", _text),
        ]
        if any(r.get("synthetic") for r in doc["rows"]):
            cols.append(("synthetic", "synthetic", "left", _text))
    if paper:
        cols.append(("vs_paper", "latency measured / published", "right", lambda r, k: r.get(k) or ""))
    return cols


def _published_row(doc: dict[str, Any], paper_row: dict[str, Any]) -> dict[str, Any]:
    setup = doc["paper"]["setup"]
    return {
        **paper_row,
        "row": "pub",
        "runtime": paper_row["label"],
        "runtime_source": None,
        "trace": "",
        "gpu": setup["gpu"],
        "precision": setup["precision"],
        "model": setup["model"],
        "iterations": None,
        "sms_active_source": "published",
        "warp_occupancy_source": "published",
        "synthetic": False,
    }


def _aligned_rows(doc: dict[str, Any]) -> list[tuple[dict[str, Any], bool]]:
    """(row, last of its runtime group) in the --paper order: each runtime's measured rows, then its
    published row; cells of published rows are the paper's."""
    out: list[tuple[dict[str, Any], bool]] = []
    entries = doc["paper"]["aligned"]
    for i, entry in enumerate(entries):
        if entry["measured"] is not None:
            out.append(({**doc["rows"][entry["measured"]], "vs_paper": ratio_cell(entry)}, False))
        last = i + 1 == len(entries) or entries[i + 1]["runtime"] != entry["runtime"]
        if last and entry["published"] is not None:
            out.append((_published_row(doc, entry["published"]), True))
        elif last:
            out[-1] = (out[-1][0], True)
    return out


def rich_table(
    doc: dict[str, Any], wide: bool = False, paper: bool = False, width: int | None = MIN_WIDTH
) -> Table:
    """The terminal table (a rich Table) for ``width`` columns (None: natural width): measured rows, or with
    ``paper`` measured and published rows."""
    from rich import box
    from rich.table import Table

    device = common_device(r["device"] for r in doc["rows"])
    columns = _columns(doc, device, wide, paper)
    title = "Measured"
    if paper:
        setup = doc["paper"]["setup"]
        title = (
            f"Measured beside published ({doc['paper']['citation']}: {setup['model']} {setup['precision']} "
            f"bs{setup['batch_size']} s{setup['seq_len']}, {setup['gpu']})"
        )
    rows = _aligned_rows(doc) if paper else [(r, False) for r in doc["rows"]]
    cells = [[cell(row, key) for key, _, _, cell in columns] for row, _ in rows]
    widths = column_widths(columns, cells, width)
    table = Table(title=title, header_style="bold", box=box.SQUARE)
    for (_key, header, justify, _), w in zip(columns, widths, strict=True):
        table.add_column(header, justify=justify, width=w, overflow="fold")  # type: ignore[arg-type]
    for (row, end), texts in zip(rows, cells, strict=True):
        style = "dim" if row.get("row") == "pub" else None
        table.add_row(*texts, style=style, end_section=end)
    return table


#: Columns whose cells may wrap when the table is too wide (the others never wrap a cell or cut a header).
SHRINKABLE = ("runtime", "config", "trace")
#: The narrowest a shrinkable column gets.
SHRINK_FLOOR = 12


def column_widths(columns: Sequence[Column], cells: list[list[str]], width: int | None) -> list[int]:
    """Each column's width: its longest cell, at least its header's longest word (a header wraps between
    words, never inside one); when the table would pass ``width`` columns, the widest shrinkable column
    (runtime, config, trace) gives up one character at a time, down to :data:`SHRINK_FLOOR`."""
    widths = []
    for i, (_, header, _, _) in enumerate(columns):
        # At the natural width (None) headers stay on one line; otherwise they may wrap between words.
        head = len(header) if width is None else max(len(w) for w in header.split())
        widths.append(max([head, *(len(row[i]) for row in cells)]))
    if width is None:
        return widths
    floors = [
        max(SHRINK_FLOOR, max(len(w) for w in header.split())) if key in SHRINKABLE else widths[i]
        for i, (key, header, _, _) in enumerate(columns)
    ]
    excess = sum(widths) + 3 * len(widths) + 1 - width  # "│ x " per column and the closing "│"
    while excess > 0:
        i = max(range(len(widths)), key=lambda j: widths[j] - floors[j])
        if widths[i] <= floors[i]:
            break
        widths[i] -= 1
        excess -= 1
    return widths


# ------------------------------------------------------------------------------------------- legend


def _rows_list(numbers: Sequence[int]) -> str:
    return ", ".join(str(n) for n in numbers)


#: Under a table that shows the untraced latency beside the traced one (not --paper, which says it its way).
UNTRACED_LEGEND = (
    "traced latency: the mean of every analyzed iteration (profiler on); untraced latency: the median of the "
    "same configuration timed without a profiler (run.json or the trace's sidecar; an older run's latency.csv), "
    "after the stability rules"
)


def legend(doc: dict[str, Any], wide: bool = False, paper: bool = False) -> list[str]:
    """Lines under the terminal table: what each row is (trace file, evidence), markers, metric sources."""
    rows = doc["rows"]
    marks = "* inferred from trace content, † from file name, ? uncertain"
    lines = [f"rows ({marks if not wide else 'sources'}):"]
    mixed = _mixed_profilers(doc)
    for r in rows:
        path = Path(r["trace"])
        where = f"{path.parent.name}/{path.name}" if path.parent.name else path.name
        said = []
        for key in ("runtime", "batch_size", "seq_len", "precision"):
            source = r.get(f"{key}_source")
            # (a value withheld is shown where it is uncertain or has evidence: nvFuser's JIT is no runtime)
            withheld = key not in (r.get("uncertain") or {}) and not (r.get("evidence") or {}).get(key)
            if source is None or (r.get(key) is None and withheld):
                continue
            evidence = (r.get("evidence") or {}).get(key, "").replace(f" in {path.name}", "")
            shown = source if r.get(key) is None else f"{r[key]} {source}"
            if r.get(key) is not None and key in (r.get("uncertain") or {}):
                shown += ", uncertain"
            said.append(f"{key.replace('_', ' ')} {shown}" + (f" ({evidence})" if evidence else ""))
        if r.get("empty_because"):
            said.append(r["empty_because"])
        synthetic = " (synthetic)" if r.get("synthetic") else ""
        # rows of one configuration under several profilers differ by it: say it first (--wide: a column)
        profiler = f"{r['profiler']}, " if r.get("profiler") and mixed and not wide else ""
        lines.append(f"  {r['row']}  {profiler}{where}{synthetic}" + (": " + "; ".join(said) if said else ""))
    if not wide:
        by_source: dict[str, dict[str, list[int]]] = {}
        for r in rows:
            for key, name in (("sms_active", "SMs active"), ("warp_occupancy", "warp occupancy")):
                source = r.get(f"{key}_source") or "none"
                by_source.setdefault(name, {}).setdefault(source, []).append(r["row"])
        parts = [
            f"{name}: " + "; ".join(f"{src} (rows {_rows_list(nums)})" for src, nums in sources.items())
            for name, sources in by_source.items()
        ]
        lines.append("sources: " + " — ".join(parts))
        lines.append(
            "compile / serialize: graph compilation (AOT ahead-of-time, JIT just-in-time) / kernel serialization "
            "(CUDA graphs); --wide shows every column (sources, kernel-time averages, utilization)"
        )
    if paper:
        lines.append(
            "latency: traced (profiler on) for measured rows, published for 'pub' rows; untraced: the median of "
            "the same configuration timed without a profiler (run.json); measured / published uses the untraced "
            "latency ('(traced)' where the run has none), only where batch size and precision match the study's "
            "(≠: what differs, ?: unknown)"
        )
    elif any(r.get("untraced_latency_ms") is not None for r in rows):
        # two latencies of one configuration side by side, often 2x apart: say which statistic each is
        lines.append(UNTRACED_LEGEND)
    return lines


def _wrap(lines: list[str], width: int) -> str:
    out = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip()) + 3)
        out += textwrap.wrap(line, width=width, subsequent_indent=indent, break_on_hyphens=False) or [""]
    return "".join(line + "\n" for line in out)


def terminal_width() -> int:
    """The terminal's width (``COLUMNS`` first), never below :data:`MIN_WIDTH`."""
    return max(shutil.get_terminal_size((MIN_WIDTH, 24)).columns, MIN_WIDTH)


def render_text(doc: dict[str, Any], width: int = MIN_WIDTH, wide: bool = False) -> str:
    """The terminal rendering at ``width`` columns (``wide``: every column, at the table's natural width)."""
    from rich.console import Console

    paper = "paper" in doc
    console = Console(record=True, width=10_000 if wide else width, file=io.StringIO())
    console.print(rich_table(doc, wide, paper, None if wide else width))
    text = "\n".join(line.rstrip() for line in console.export_text().splitlines()) + "\n"
    footer = legend(doc, wide, paper)
    footer += [f"note: {n}" for n in doc["notes"]] + [f"warning: {w}" for w in doc["warnings"]]
    return text + _wrap(footer, width)


# ------------------------------------------------------------------------------------------- files


def _markdown_columns(doc: dict[str, Any], device: str | None) -> list[tuple[str, str]]:
    word = device_word(device)
    cols = [
        ("row", "#"),
        ("runtime", "runtime"),
        ("runtime_source", "runtime source"),
        *([("profiler", "profiler")] if _mixed_profilers(doc) else []),
        ("device", "device"),
        ("gpu", "GPU"),
        ("precision", "precision"),
        ("batch_size", "batch"),
        ("seq_len", "seq len"),
        ("graph_compilation", "graph compilation"),
        ("kernel_serialization", "kernel serialization"),
        ("latency_ms", "latency ms (traced)"),
        ("untraced_latency_ms", "latency ms (untraced)"),
        ("gpu_busy_ms", f"{word} busy ms"),
        ("framework_overhead_ms", "framework overhead ms"),
        ("sms_active", "SMs active %"),
        ("sms_active_source", "source"),
        ("warp_occupancy", "warp occupancy %"),
        ("warp_occupancy_source", "source"),
        ("sms_active_kernel_time", "SMs active % (kernel time)"),
        ("warp_occupancy_kernel_time", "warp occ. % (kernel time)"),
        ("kernel_time_source", "source"),
    ]
    if any(r["synthetic"] for r in doc["rows"]):
        cols.append(("synthetic", "synthetic"))
    return cols


def _markdown(doc: dict[str, Any], device: str | None) -> str:
    rows = [
        {
            **r,
            **{
                k: r[k] or "none"
                for k in ("sms_active_source", "warp_occupancy_source", "kernel_time_source")
            },
            "runtime": r["runtime"] or Path(r["trace"]).name,
            "runtime_source": r.get("runtime_source") or "unknown",
        }
        for r in doc["rows"]
    ]
    parts = ["## Measured", "", render_markdown(rows, _markdown_columns(doc, device))]
    # (each bullet one line: a file name's newline written "\\n", as errors.one_line writes it)
    parts += [f"- {one_line(line.strip())}" for line in legend(doc, wide=True)[1:]]
    parts += [f"- note: {one_line(n)}" for n in doc["notes"]]
    parts += [f"- warning: {one_line(w)}" for w in doc["warnings"]]
    if "paper" in doc:
        gpu = doc["paper"]["setup"]["gpu"]
        published = [{**r, "runtime": r["label"], "device": f"gpu ({gpu})"} for r in doc["paper"]["rows"]]
        aligned = [
            {
                "runtime": e["runtime"],
                "measured": "—" if e["measured"] is None else doc["rows"][e["measured"]]["row"],
                "published": (e["published"] or {}).get("label", "—"),
                "latency measured / published": (
                    "no published row" if e["published"] is None else ratio_cell(e).replace("×", "")
                ),
                "differences": "; ".join(e["mismatch"]) or "—",
            }
            for e in doc["paper"]["aligned"]
        ]
        parts += [
            "",
            f"## Published ({doc['paper']['citation']})",
            "",
            render_markdown(published, PAPER_COLUMNS),
            "## Measured vs published",
            "",
            render_markdown(aligned, [(k, k) for k in aligned[0]] if aligned else []),
        ]
    return "\n".join(parts) + "\n"


def _uncertain_text(uncertain: dict[str, list[Any]] | None) -> str | None:
    """``{"batch_size": [32, 16]}`` as one CSV cell: ``batch_size=32|16``."""
    if not uncertain:
        return None
    return "; ".join(f"{k}={'|'.join(map(str, v))}" for k, v in uncertain.items())


def _csv(doc: dict[str, Any], device: str | None) -> str:
    from tracekit.analyzers.table import ROW_KEYS

    keys = [k for k in ROW_KEYS if k != "evidence"]
    rows = [{**r, "table": "measured", "uncertain": _uncertain_text(r.get("uncertain"))} for r in doc["rows"]]
    if "paper" in doc:
        keys = ["table", *keys]
        rows += [{**r, "table": "paper"} for r in doc["paper"]["rows"]]
    header = {k: device_name(k, device) for k in keys}
    return render_csv([{header[k]: r.get(k) for k in keys} for r in rows], list(header.values()))


def render(doc: dict[str, Any], fmt: str, wide: bool = False, width: int | None = None) -> str:
    """The document as a terminal table (``width`` columns, default: the terminal's, at least 120; ``wide``:
    every column), Markdown, CSV or JSON."""
    device = common_device(r["device"] for r in doc["rows"])
    if fmt == "json":
        return render_json(doc)
    if fmt == "csv":
        return _csv(doc, device)
    if fmt == "markdown":
        return _markdown(doc, device)
    return render_text(doc, width or terminal_width(), wide)
