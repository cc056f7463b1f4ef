"""Renderers: one module per command document, each with ``render(doc, fmt) -> str`` for every format of
:data:`tracekit.commands.output.FORMATS` (table, markdown, csv, json). :func:`render` is the one registry."""

from __future__ import annotations

import importlib
from typing import Any

#: Command -> the module that renders its document.
RENDERERS: dict[str, str] = {
    "analyze": "tracekit.renderers.analysis",
    "table": "tracekit.renderers.table",
    "compare": "tracekit.renderers.compare",
    "report": "tracekit.renderers.report_text",
}


def render(command: str, doc: dict[str, Any], fmt: str) -> str:
    """``command``'s document rendered in ``fmt`` (table | markdown | csv | json)."""
    return importlib.import_module(RENDERERS[command]).render(doc, fmt)
