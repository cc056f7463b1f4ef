"""Options shared by the commands that analyze iterations (analyze, table, report, compare): their argparse
definitions; their defaults and checks are :class:`tracekit.api.Options`'s, the same as the Python API's."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracekit.api import Options


def int_list(text: str) -> list[int]:
    """argparse type: comma-separated integers ("1,2,4"), at least one, in the order given."""
    items = text.replace(" ", "").split(",")
    if items == [""]:
        raise argparse.ArgumentTypeError("expected at least one integer")
    if "" in items:  # "1,,2" or "1,": a typo, not a list of two
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r} (an empty item)")
    try:
        return [int(v) for v in items]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from exc


def positive_int(text: str) -> int:
    """An option's integer of at least 1 (--jobs, --timeline-iterations)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {value}")
    return value


def add_iteration_options(
    parser: argparse.ArgumentParser, bound_threshold: bool = True, workers: bool = False
) -> None:
    """Add ``--range``, ``--skip`` and (optionally) ``--bound-threshold`` with one meaning everywhere, and the
    input limits (``workers``: the command takes ``--jobs`` and ``--scheduler``, which ``--max-memory``'s help
    then speaks of)."""
    parser.add_argument(
        "--range",
        dest="range_name",
        metavar="NAME",
        help="range that delimits one iteration: a name, a glob ('execute_*') or a regular expression "
        "('re:^step\\[') (default: 'iteration', else torch.profiler's 'ProfilerStep#N', else vLLM/SGLang/"
        "TensorRT-LLM step ranges, else the most frequent top-level range; a trace without ranges is "
        "analyzed as one window)",
    )
    parser.add_argument(
        "--split-idle",
        type=float,
        default=None,
        metavar="MS",
        help="ignore ranges and cut the device timeline into iterations at idle gaps longer than MS "
        "milliseconds (default: off)",
    )
    parser.add_argument(
        "--skip",
        type=int,
        default=None,
        metavar="N",
        help="drop the first N iterations (warm-up); default 0, or the run's warm-up count when a trace "
        "records its warm-up runs as iterations (ONNX Runtime profiles, tracekit's nsys captures on CUDA: "
        "from the trace's .meta.json; only for the ranges it counts, also when --range names them, not "
        "another --range or --split-idle)",
    )
    if bound_threshold:
        from tracekit.api import Options

        parser.add_argument(
            "--bound-threshold",
            type=float,
            default=None,
            metavar="U",
            help="framework-bound when the median GPU (or operator) utilization is below U (default "
            f"{Options().bound_threshold:g})",
        )
    add_input_limit_options(parser, workers)


def iteration_options(args: argparse.Namespace) -> Options:
    """The analysis options of a parsed command line (:class:`tracekit.api.Options`: every default once, the
    same checks as the Python API's), or TracekitError (one line naming the option)."""
    from tracekit.api import Options

    return Options.from_args(args)


def size(text: str) -> int:
    """argparse type: a size in bytes as :func:`tracekit.limits.parse_size` reads it (``512M``, ``4G``)."""
    from tracekit.limits import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def add_input_limit_options(parser: argparse.ArgumentParser, workers: bool = False) -> None:
    """Add the options that lift the limits on what one input may cost (:mod:`tracekit.limits`); ``workers``:
    the command takes ``--jobs``/``--scheduler`` (analyze), whose worker processes no ceiling holds."""
    group = parser.add_argument_group("limits on hostile or huge inputs (sizes: 512M, 4G, 1.5GiB)")
    group.add_argument(
        "--max-inflated",
        type=size,
        metavar="SIZE",
        help="stop when a compressed input (or a pipe) inflates past SIZE of text (default: 200x its size on "
        "disk, at least 256 MiB, at most 64 GiB)",
    )
    group.add_argument(
        "--max-memory",
        type=size,
        metavar="SIZE",
        help="stop when tracekit and its decoding workers hold more than SIZE of memory (default: 3/4 of "
        "the machine's"
        + (
            "; with several traces, the collecting process: --jobs and Dask workers have no ceiling)"
            if workers
            else ")"
        ),
    )
    group.add_argument(
        "--max-string",
        type=size,
        metavar="SIZE",
        help="cut JSON strings (event names) longer than SIZE, with a warning (default 64K)",
    )
    group.add_argument(
        "--max-event",
        type=size,
        metavar="SIZE",
        help="refuse a JSON event (its strings cut) or an SQLite value longer than SIZE (default 16M)",
    )
