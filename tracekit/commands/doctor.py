"""``tracekit doctor``: what this machine can collect (one screen, or ``--format json``); always exit 0."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tracekit.commands.output import add_output_options, emit, resolve_output
from tracekit.errors import TracekitError

#: What doctor prints: its screen of tables, or the JSON document.
FORMATS = ("table", "json")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="What this machine can collect: CUDA devices, runtimes, profilers and their permissions.",
        description=(
            "Report the CUDA devices (CUDA index, NVML index, UUID, name, driver), the torch and ONNX Runtime "
            "builds and whether ORT's CUDA provider really loads, Nsight Systems and Nsight Compute versions, "
            "whether GPU metrics and ncu counters are permitted, and which runtimes and profilers will work. "
            "On a GPU it runs two short probes (nsys --gpu-metrics-device=help and a one-kernel ncu profile)."
        ),
    )
    add_output_options(parser, formats=FORMATS)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tracekit.collectors.doctor import diagnose

    fmt = resolve_output(args, [])
    if fmt not in FORMATS:
        raise TracekitError(f"doctor prints --format table or json, not {fmt}", args.output)
    doc = diagnose()
    if fmt == "json":
        emit(args, json.dumps(doc, indent=2, default=str) + "\n")
    elif args.output or not sys.stdout.isatty():
        # rendered first, then written: a reader that stops early (| head) ends the command with exit 0, as
        # every command's, where rich writing to the pipe itself would exit 1
        import io

        from rich.console import Console

        console = Console(file=io.StringIO(), width=120 if args.output else None, record=True)
        render(doc, console)
        emit(args, console.export_text())
    else:
        render(doc)
    return 0


def _mark(ok: bool | None) -> str:
    return "[green]yes[/]" if ok else "[red]no[/]"


def render(doc: dict[str, Any], console: Any = None) -> None:
    """One screen of rich tables (summary, devices, software, runtimes, profilers) on ``console``."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = console or Console()
    # (escaped: the summary names extras such as 'tracekit[collect]', which rich would read as markup)
    console.print(f"[bold]tracekit doctor[/]: {escape(doc['summary'])}")
    console.print(
        f"CPU: {escape(str(doc['machine']['cpu']))}; Python {escape(str(doc['machine']['python']))}"
    )
    if doc["devices"]:
        table = Table(title="CUDA devices", title_justify="left")
        for col in ("cuda", "nvml", "nsys id", "UUID", "name", "driver", "CC"):
            table.add_column(col)
        for d in doc["devices"]:
            table.add_row(
                str(d["cuda_index"]),
                str(d["nvml_index"]),
                str(d["nsys_gpu_id"]),
                str(d["uuid"]),
                escape(str(d["name"])),
                str(d["driver"]),
                str(d["compute_capability"]),
            )
        console.print(table)
    else:
        console.print("[yellow]No CUDA device[/]: only CPU collection is possible here.")
    torch_s, ort_s, nsys_s, ncu_s = doc["torch"], doc["onnxruntime"], doc["nsys"], doc["ncu"]
    soft = Table(title="Software", title_justify="left")
    soft.add_column("component")
    soft.add_column("version")
    soft.add_column("detail")
    soft.add_row(
        "torch",
        str(torch_s.get("version", "-")),
        f"{'CUDA ' + str(torch_s['cuda_build']) + ' build' if torch_s.get('cuda_build') else 'CPU-only build'}, CUDA available: {_mark(torch_s.get('cuda_available'))}"
        if torch_s.get("installed")
        else escape(str(torch_s.get("why"))),
    )
    soft.add_row("transformers", str(doc["transformers"].get("version") or "-"), "")
    ort_detail = (
        f"CUDA provider loads: {_mark(ort_s.get('cuda_provider_loads'))}"
        + (f" ({escape(ort_s['why'])})" if ort_s.get("why") else "")
        + (f"; {escape(ort_s['warning'])}" if ort_s.get("warning") else "")
    )
    soft.add_row("onnxruntime", str(ort_s.get("version", "-")), ort_detail)
    metrics = nsys_s.get("gpu_metrics", {})
    soft.add_row(
        "nsys",
        str(nsys_s.get("version", "-")),
        f"GPU metrics permitted: {_mark(metrics.get('permitted'))}"
        + (f" ({escape(str(metrics.get('reason')))})" if metrics.get("reason") else "")
        if nsys_s.get("found")
        else escape(str(nsys_s.get("why"))),
    )
    counters = ncu_s.get("counters", {})
    soft.add_row(
        "ncu",
        str(ncu_s.get("version") or "-"),
        f"counters permitted: {_mark(counters.get('permitted'))}"
        + (f" ({escape(str(counters.get('reason')))})" if counters.get("reason") else "")
        if ncu_s.get("found")
        else escape(str(ncu_s.get("why"))),
    )
    console.print(soft)
    for title, key, detail in (("Runtimes", "runtimes", "devices"), ("Profilers", "profilers", "records")):
        table = Table(title=title, title_justify="left")
        table.add_column("name")
        table.add_column("works")
        table.add_column("detail")
        for name, entry in doc[key].items():
            text = entry.get("why") or (
                ", ".join(entry[detail])
                if isinstance(entry.get(detail), list)
                else str(entry.get(detail, ""))
            )
            if entry.get("note"):
                text += f" ({entry['note']})"
            table.add_row(name, _mark(entry["works"]), escape(text))
        console.print(table)
