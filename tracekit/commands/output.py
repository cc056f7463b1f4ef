"""One ``--format`` vocabulary and one ``-o`` rule for every command that prints a result.

Formats: ``table`` (aligned text; rich on a terminal), ``markdown``, ``csv``, ``json``. The older names ``rich``
and ``md`` still work and print a deprecation note. With ``-o FILE`` and no ``--format`` the format comes from
the file's extension (``.json``, ``.csv``, ``.md``/``.markdown``, ``.txt``); a ``--format`` that contradicts the
extension is refused. ``-o`` never replaces an input of the command (:func:`tracekit.io.check_outputs`) and never
creates missing folders.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tracekit.errors import TracekitError
from tracekit.io import check_outputs

#: The output formats every command accepts, in the order ``--help`` lists them.
FORMATS: tuple[str, ...] = ("table", "markdown", "csv", "json")
#: Old names -> current names (kept working, with a note on stderr).
FORMAT_ALIASES: dict[str, str] = {"rich": "table", "md": "markdown"}
#: File extension -> format, for ``-o FILE`` without ``--format``.
EXTENSION_FORMATS: dict[str, str] = {
    ".json": "json",
    ".csv": "csv",
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "table",
}


def format_name(text: str) -> str:
    """argparse type for ``--format``: a current name, or an old one mapped to it (with a note)."""
    name = text.strip().lower()
    if name in FORMATS:
        return name
    if name in FORMAT_ALIASES:
        new = FORMAT_ALIASES[name]
        print(f"tracekit: note: --format {name} is now called --format {new}", file=sys.stderr)
        return new
    raise argparse.ArgumentTypeError(f"unknown format {text!r} (choose from {', '.join(FORMATS)})")


def add_output_options(parser: argparse.ArgumentParser, output: bool = True) -> None:
    """Add ``--format`` (and ``-o FILE`` unless ``output`` is False) with one meaning everywhere."""
    parser.add_argument(
        "--format",
        type=format_name,
        default=None,
        metavar="{" + ",".join(FORMATS) + "}",
        help="output format (default: from the -o file's extension, else table)",
    )
    if output:
        parser.add_argument(
            "-o",
            "--output",
            metavar="FILE",
            help="write to FILE (atomically; never over an input; its folder must exist) instead of stdout "
            "(default: stdout)",
        )


def resolve_output(args: argparse.Namespace, inputs: list[str | Path]) -> str:
    """The format to render (``args.format`` filled in) after checking ``-o`` against the inputs.

    Raises TracekitError (exit 2) when ``-o`` is an input, its folder is missing, or ``--format`` contradicts
    the file's extension.
    """
    out = getattr(args, "output", None)
    fmt = args.format
    if out:
        target = Path(out)
        check_outputs([target], inputs)
        if target.is_dir():
            raise TracekitError("is a folder; -o takes a file name", target)
        if not target.parent.is_dir():
            raise TracekitError(f"cannot write: the folder {target.parent} does not exist", target)
        implied = EXTENSION_FORMATS.get(target.suffix.lower())
        if fmt is None:
            fmt = implied or "table"
        elif implied is not None and implied != fmt:
            raise TracekitError(f"--format {fmt} contradicts the file's extension ({implied})", target)
    args.format = fmt or "table"
    return args.format


def emit(args: argparse.Namespace, text: str) -> None:
    """Write a rendered result to ``-o FILE`` (atomically; "wrote FILE" on stderr) or to stdout."""
    from tracekit.io import write_text_atomic

    out = getattr(args, "output", None)
    if out:
        write_text_atomic(out, text)
        print(f"wrote {out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
