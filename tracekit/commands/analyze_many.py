"""``tracekit analyze A B C ...`` (several files, folders or globs): one analysis per trace, in parallel, then the
cross-trace table (:mod:`tracekit.analyzers.ranks`). Argument parsing and output only; the work is
:func:`tracekit.api.analyze_many`."""

from __future__ import annotations

import argparse
import glob
import os
import shlex
import sys
from pathlib import Path

from tracekit.commands.options import positive_int
from tracekit.errors import TracekitError, one_line

#: File names taken from a folder (any other file there is ignored): what the readers detect.
TRACE_SUFFIXES = (".sqlite", ".sqlite.gz", ".json", ".json.gz", ".ncu-rep", ".ncu.csv", ".ncu.csv.gz")
SKIPPED_SUFFIXES = (".meta.json", ".truth.json", "run.json", "report.json")
#: Nsight Systems reports: taken from a folder only without their SQLite export beside them (``X.sqlite``, which
#: is read instead): each is exported by the installed nsys when read, or named in one line saying how to
#: export it, never passed over in silence.
REPORT_SUFFIXES = (".nsys-rep", ".qdrep")
#: What a folder with none of those names is told (a file of any name is read by its content when named).
FOLDER_NAMES = (
    "a folder is searched for *.sqlite(.gz), *.json(.gz), *.nsys-rep, *.qdrep, *.ncu-rep and *.ncu.csv(.gz); "
    "give a file of another name itself"
)


def add_many_options(parser: argparse.ArgumentParser) -> None:
    """``--jobs``, ``--scheduler`` (they apply when several traces are given) and ``--cache`` (always)."""
    parser.add_argument(
        "--jobs",
        type=positive_int,
        default=None,
        metavar="N",
        help="with several traces: analyze N at once in worker processes (default: the usable cores)",
    )
    parser.add_argument(
        "--scheduler",
        default=os.environ.get("TRACEKIT_SCHEDULER"),
        metavar="ADDRESS",
        help="with several traces: run them on a Dask cluster (tcp://HOST:PORT; default $TRACEKIT_SCHEDULER, "
        "else local); the workers read the traces (shared file system or an fsspec URL)",
    )
    parser.add_argument(
        "--cache",
        metavar="DIR",
        help="keep each trace's normalized frames as Parquet in DIR (keyed by content hash and reader "
        "version) and reuse them on the next analysis, of one trace or many; bounded by $TRACEKIT_CACHE_MAX "
        "(default 10G: the least recently used entries go first) (default: no cache)",
    )


def _is_trace_name(name: str) -> bool:
    return name.endswith(TRACE_SUFFIXES) and not name.endswith(SKIPPED_SUFFIXES)


def _in_folder(path: Path) -> bool:
    """Whether a file found in a folder is an input: a trace file, or a report not exported beside itself."""
    if path.name.endswith(REPORT_SUFFIXES):
        return not any(path.with_suffix(s).is_file() for s in (".sqlite", ".sqlite.gz"))
    return _is_trace_name(path.name)


def expand(inputs: list[str]) -> tuple[list[str], list[str]]:
    """(inputs, passed over). Files as given; folders: the trace files in them (recursively, sorted), and the
    Nsight Systems reports without an SQLite export beside them (exported when read:
    :mod:`tracekit.readers.nsys_report`), passing over the JSON files there that plainly hold no trace (a run's settings, a tool's
    results: :func:`tracekit.api.holds_no_trace`; a file named on the command line is always analyzed); globs
    (``*``, ``?``, ``[``) expanded here when the shell did not. URLs (``s3://...``) are passed on for the
    workers to open. TracekitError when an input matches nothing."""
    from tracekit import api

    out: list[str] = []
    passed_over: list[str] = []
    for raw in inputs:
        if "://" in raw:
            out.append(raw)
            continue
        path = Path(raw)
        if path.is_dir():
            # (a link named as a trace whose target is gone is an input too: its one line says so, and the
            # run exits 1, rather than leaving it out unsaid; hostile20)
            found = sorted(
                str(p)
                for p in path.rglob("*")
                if (p.is_file() or (p.is_symlink() and not p.exists())) and _in_folder(p)
            )
            if not found:
                raise TracekitError(f"a directory with no trace files in it ({FOLDER_NAMES})", path)
            skip = [p for p in found if p.endswith((".json", ".json.gz")) and api.holds_no_trace(p)]
            if len(skip) == len(found):
                raise TracekitError(
                    "a directory with no trace files in it (only JSON files that hold none)", path
                )
            passed_over += skip
            skipped = set(skip)
            out += [p for p in found if p not in skipped]
        elif any(c in raw for c in "*?[") and not path.exists():
            found = sorted(p for p in glob.glob(raw, recursive=True) if Path(p).is_file())
            if not found:
                raise TracekitError("no file matches this pattern", raw)
            out += found
        else:
            out.append(raw)
    named = set(out)
    return list(dict.fromkeys(out)), list(dict.fromkeys(p for p in passed_over if p not in named))


def run_many(args: argparse.Namespace, inputs: list[str], options: object) -> int:
    """Analyze every input; print the cross-trace table. Exit 0 when all were analyzed, 1 when some failed
    (each said in one line), 2 when none could be."""
    from tracekit import api, progress
    from tracekit.commands.output import emit, info, warn
    from tracekit.renderers.ranks import render_ranks

    if args.cache and not args.scheduler:  # (on a cluster the folder is the workers': checked there)
        api.cache_folder(args.cache)
    paths, passed_over = expand(inputs)
    if getattr(args, "output", None):
        from tracekit.io import check_outputs

        # (a pattern matching -o's own file, an earlier run's output: it was tried as a trace, left out, and
        # replaced; refused before the work, as an input named outright is)
        check_outputs([args.output], [p for p in paths if "://" not in p])
    if passed_over:
        shown = ", ".join(passed_over[:3]) + (
            f" and {len(passed_over) - 3} more" if len(passed_over) > 3 else ""
        )
        info(
            args,
            f"tracekit: passed over {len(passed_over)} JSON file(s) in the folders that hold no trace: {shown}",
        )
    if len(paths) == 1 and "://" not in paths[0]:  # a folder or pattern that found one trace
        info(
            args,
            f"tracekit: note: one trace found ({paths[0]}): this is the cross-trace table (one row); "
            f"tracekit analyze {shlex.quote(paths[0])} gives its per-iteration analysis",
        )
    failed: list[str] = []
    with progress.task(f"analyzing {len(paths)} traces", total=len(paths)) as bar:

        def done(outcome: object) -> None:
            bar.advance(1)
            if not outcome.ok:  # type: ignore[attr-defined]
                failed.append(outcome.error)  # type: ignore[attr-defined]
                print(f"tracekit: {one_line(str(outcome.error))}", file=sys.stderr)  # type: ignore[attr-defined]

        doc = api.analyze_many(
            paths,
            options,  # type: ignore[arg-type]
            jobs=args.jobs,
            scheduler=args.scheduler,
            cache_dir=args.cache,
            on_done=done,
        )
    warn(doc["warnings"])
    emit(args, render_ranks(doc, args.format))
    if failed:
        info(args, f"tracekit: {len(failed)} of {len(paths)} traces failed (each said above)")
        return 1
    return 0
