"""One ``--format`` vocabulary and one ``-o`` rule for every command that prints a result.

Formats: ``table`` (aligned text; rich on a terminal), ``markdown``, ``csv``, ``json``. The older names ``rich``
and ``md`` still work and print a deprecation note. With ``-o FILE`` and no ``--format`` the format comes from
the file's extension (``.json``, ``.csv``, ``.md``/``.markdown``, ``.txt``); a ``--format`` that contradicts the
extension is refused. ``-o`` never replaces an input of the command (:func:`tracekit.io.check_outputs`) and never
creates missing folders.
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
from pathlib import Path

from tracekit.errors import LEFT_OUT, TracekitError, one_line
from tracekit.io import COMPRESSED_SUFFIXES, check_file_target, check_outputs, compressed_suffix

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


def format_name(text: str, formats: tuple[str, ...] = FORMATS) -> str:
    """argparse type for ``--format``: a current name, or an old one mapped to it (with a note). An unknown
    name is refused listing ``formats``, the ones the command renders (``doctor``: table and json)."""
    name = text.strip().lower()
    if name in FORMATS:
        return name
    if name in FORMAT_ALIASES:
        new = FORMAT_ALIASES[name]
        print(f"tracekit: note: --format {name} is now called --format {new}", file=sys.stderr)
        return new
    raise argparse.ArgumentTypeError(f"unknown format {text!r} (choose from {', '.join(formats)})")


class _NoProgress(argparse.Action):
    """``--no-progress``: sets ``TRACEKIT_NO_PROGRESS`` as soon as it is parsed, so every progress display of
    the command (:mod:`tracekit.progress`, collect's bar) stays off."""

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[no-untyped-def]
        import os

        from tracekit.progress import DISABLE_ENV

        os.environ[DISABLE_ENV] = "1"
        setattr(namespace, self.dest, True)


def add_progress_options(parser: argparse.ArgumentParser) -> None:
    """The two flags every command takes: ``--no-progress`` (no live progress display on stderr; the display
    only ever appears on a terminal) and ``-q``/``--quiet`` (no informational lines on stderr: progress
    lines, "wrote FILE", notes). Errors are always printed on stderr, and so are warnings, except where
    ``analyze`` or ``table`` print their table (``--format table``) on stdout: it ends with them (a terminal,
    a file or a pipe alike)."""
    parser.add_argument(
        "--no-progress",
        action=_NoProgress,
        nargs=0,
        default=False,
        help="no live progress display on stderr (default: shown on a terminal only)",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no informational lines on stderr (progress lines, 'wrote FILE'); warnings and errors still "
        "appear (default: off)",
    )


def info(args: argparse.Namespace, text: str) -> None:
    """An informational line on stderr, unless ``--quiet``."""
    if not getattr(args, "quiet", False):
        print(one_line(text), file=sys.stderr)


def exit_code(args: argparse.Namespace, warnings: list[str]) -> int:
    """The exit code of ``table``, ``report`` and ``compare``, by ``analyze``'s rule on several traces: 1 when
    some input was left out for failing (its ``left out: FILE: problem`` warning, :data:`LEFT_OUT`, said why;
    a configuration that run.json records as failed or skipped is no failure of the command), else 0. (When
    none could be analyzed, the command has already ended with one line and exit 2.)"""
    failed = sum(1 for w in warnings if w.startswith(LEFT_OUT))
    if not failed:
        return 0
    info(args, f"tracekit: {failed} input{'s' if failed > 1 else ''} left out (each said above)")
    return 1


def warn(lines: list[str]) -> None:
    """Warnings on stderr (with ``-o`` too): ``warning: LINE`` each. (``analyze`` and ``table`` do not call it
    where their table on stdout already ends with them.)"""
    for line in lines:
        print(f"warning: {one_line(line)}", file=sys.stderr)


def add_output_options(
    parser: argparse.ArgumentParser,
    output: bool = True,
    format_help: str | None = None,
    formats: tuple[str, ...] = FORMATS,
) -> None:
    """Add ``--format`` (and ``-o FILE`` unless ``output`` is False) with one meaning everywhere, and the
    progress and quiet flags (:func:`add_progress_options`). ``format_help``: ``--format``'s help when the
    command's ``-o`` is not a file (``report``); ``formats``: the formats the command renders, when not all
    (``--help`` lists them; the command refuses the others in one line, exit 2)."""
    add_progress_options(parser)
    parser.add_argument(
        "--format",
        type=format_name if formats == FORMATS else functools.partial(format_name, formats=formats),
        default=None,
        metavar="{" + ",".join(formats) + "}",
        help=format_help or "output format (default: from the -o file's extension, else table)",
    )
    if output:
        parser.add_argument(
            "-o",
            "--output",
            metavar="FILE",
            help="write to FILE (atomically; never over an input; its folder must exist) instead of stdout; "
            "- is stdout (default: stdout)",
        )


#: Names ``-o DIR`` refuses as folder names: they look like files (``report -o rep.json``).
FILE_LIKE_SUFFIXES: frozenset[str] = frozenset(
    [*EXTENSION_FORMATS, ".html", ".htm", ".png", ".svg", ".pdf", ".sqlite", *COMPRESSED_SUFFIXES]
)


def check_output_folder(path: Path, what: str, stdout_format: bool = True) -> None:
    """TracekitError (exit 2) when a folder output (``report -o DIR``, ``simulate``, ``collect``) is named like a
    file or is a file: ``what`` names what the folder receives; ``stdout_format``: the command prints a
    ``--format`` on stdout (the hint names it)."""
    if path.exists() and not path.is_dir():
        kind = (
            "a file" if path.is_file() else "no folder (a device or a pipe)"
        )  # (/dev/stdout read "is a file")
        raise TracekitError(f"is {kind}; -o takes a folder (it receives {what})", path)
    if path.suffix.lower() in FILE_LIKE_SUFFIXES and not path.is_dir():
        hint = (
            f" (--format {EXTENSION_FORMATS.get(path.suffix.lower(), 'json')} chooses what is printed on stdout)"
            if stdout_format
            else ""
        )
        raise TracekitError(
            f"-o takes a folder (it receives {what}), and this looks like a file name; give a folder name "
            f"such as {path.with_suffix('')}{hint}",
            path,
        )


#: Commands whose ``-o`` is a folder (and what it receives): ``-o -`` cannot be standard output for them.
FOLDER_OUTPUT_COMMANDS = {
    "report": "report.md, report.json, report.csv and the figures",
    "collect": "run.json and the traces",
    "simulate": "run.json, the traces and their truth",
}


def dash_outputs(args: argparse.Namespace) -> None:
    """``-o -`` is standard output, as ``-`` is standard input (it had written a file, or for ``report`` a
    folder, named "-"). Where standard output cannot take it, one line (exit 2) before any work: a command
    whose ``-o`` is a folder, and ``analyze --gaps -`` / ``--timeline -`` (standard output holds the main
    result)."""
    if getattr(args, "output", None) == "-":
        command = getattr(args, "command", None)
        if command in FOLDER_OUTPUT_COMMANDS:
            raise TracekitError(
                f"-o -: {command} writes a folder ({FOLDER_OUTPUT_COMMANDS[command]}), not standard output: "
                "name the folder"
            )
        args.output = None
    for flag in ("gaps", "timeline"):
        if getattr(args, flag, None) == "-":
            raise TracekitError(
                f"--{flag} -: standard output holds the main result, not --{flag}'s file: name a file"
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
        check_file_target(target)
        packed = compressed_suffix(target)
        if packed is not None:
            # (the last suffix names no format: out.json.gz, .xz, .zst, out.csv.zip had received the terminal
            # table, uncompressed)
            raise TracekitError(
                f"-o writes uncompressed text, not a {packed} file: name it {target.name[: -len(packed)]} (and "
                "compress that file yourself)",
                target,
            )
        implied = EXTENSION_FORMATS.get(target.suffix.lower())
        if fmt is None and implied is None and target.suffix:
            # (a file named as a spreadsheet or a web page would get the terminal table without a word)
            info(
                args,
                f"tracekit: note: -o {target.name}: the extension '{target.suffix}' names no format, so the "
                "table is written as text (.json, .csv, .md or .txt choose the format; or --format)",
            )
        if fmt is None:
            fmt = implied or "table"
        elif implied is not None and implied != fmt:
            raise TracekitError(f"--format {fmt} contradicts the file's extension ({implied})", target)
    args.format = fmt or "table"
    return args.format


#: control characters (C0 but tab and newline, DEL, C1) that a terminal acts on: an escape sequence in a file or
#: kernel name (clear the screen, set the title) would act as well as print
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def as_text(text: str) -> str:
    """``text`` with each control character but tab and newline written as Python escapes it (``\\x1b``), as
    :func:`tracekit.errors.one_line` writes stderr's lines: names from a trace reach the terminal as text."""
    return CONTROL.sub(lambda m: repr(m.group())[1:-1], text) if CONTROL.search(text) else text


def as_text_doc(doc: object) -> object:
    """``doc`` (a JSON-like document) with every string :func:`as_text`: for a renderer that writes to the
    terminal itself (analyze's table on a terminal, through rich), where :func:`emit` cannot clean its text."""
    if isinstance(doc, str):
        return as_text(doc)
    if isinstance(doc, dict):
        return {k: as_text_doc(v) for k, v in doc.items()}
    if isinstance(doc, (list, tuple)):
        return [as_text_doc(v) for v in doc]
    return doc


def emit(args: argparse.Namespace, text: str, said: bool = True) -> None:
    """Write a rendered result to ``-o FILE`` (atomically; "wrote FILE" on stderr unless ``said`` is False: the
    caller says it once the file is in place) or to stdout. The formats read by people (the terminal table,
    Markdown) write control characters as text (:func:`as_text`); JSON escapes them itself, and CSV keeps the
    data as it is."""
    from tracekit.io import write_text_atomic

    if getattr(args, "format", None) in ("table", "markdown"):
        text = as_text(text)
    out = getattr(args, "output", None)
    if out:
        write_text_atomic(out, text)
        if said:
            info(args, f"wrote {out}")
    else:
        try:
            sys.stdout.write(text)
        except UnicodeEncodeError:  # a lone surrogate (a file name that is not UTF-8) on a strict stream
            encoding = sys.stdout.encoding or "utf-8"
            sys.stdout.write(text.encode(encoding, "backslashreplace").decode(encoding))
