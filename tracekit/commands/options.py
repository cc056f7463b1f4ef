"""Options shared by the commands that analyze iterations (analyze, table, report, compare)."""

from __future__ import annotations

import argparse

from tracekit.errors import TracekitError


def int_list(text: str) -> list[int]:
    """argparse type: comma-separated integers ("1,2,4"), at least one, in the order given."""
    try:
        values = [int(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from exc
    if not values:
        raise argparse.ArgumentTypeError("expected at least one integer")
    return values


def add_iteration_options(parser: argparse.ArgumentParser, bound_threshold: bool = True) -> None:
    """Add ``--range``, ``--skip`` and (optionally) ``--bound-threshold`` with one meaning everywhere."""
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
        "records its warm-up runs as iterations (ONNX Runtime profiles; from the trace's .meta.json)",
    )
    if bound_threshold:
        parser.add_argument(
            "--bound-threshold",
            type=float,
            default=0.5,
            metavar="U",
            help="framework-bound when the median GPU (or operator) utilization is below U (default 0.5)",
        )
    add_input_limit_options(parser)


def check_iteration_options(args: argparse.Namespace) -> None:
    """One-line errors for out-of-range values of the options above."""
    check_option_values(
        args.range_name,
        args.skip,
        getattr(args, "bound_threshold", None),
        getattr(args, "split_idle", None),
        CLI_NAMES,
    )


#: how :func:`check_option_values` names each option: on the command line and in the Python API
CLI_NAMES = {"range": "--range", "skip": "--skip", "threshold": "--bound-threshold", "split": "--split-idle"}
API_NAMES = {"range": "range", "skip": "skip", "threshold": "bound_threshold", "split": "split_idle"}


def check_option_values(
    range_name: str | None,
    skip: int | None,
    bound_threshold: float | None,
    split_idle: float | None,
    names: dict[str, str],
) -> None:
    """TracekitError (one line, the option spelled as ``names`` says) for an out-of-range value: the one
    check behind the command line (:func:`check_iteration_options`) and :mod:`tracekit.api`."""
    if skip is not None and skip < 0:
        raise TracekitError(f"{names['skip']} must be >= 0")
    if split_idle is not None:
        from tracekit.analyzers.ranges import check_split_idle

        check_split_idle(split_idle, option=names["split"])
    if split_idle is not None and range_name is not None:
        raise TracekitError(f"{names['range']} and {names['split']} exclude each other: use one of them")
    if bound_threshold is not None and not 0 < bound_threshold <= 1:
        raise TracekitError(f"{names['threshold']} must be in (0, 1]")


def size(text: str) -> int:
    """argparse type: a size in bytes as :func:`tracekit.limits.parse_size` reads it (``512M``, ``4G``)."""
    from tracekit.limits import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def add_input_limit_options(parser: argparse.ArgumentParser) -> None:
    """Add the options that lift the limits on what one input may cost (:mod:`tracekit.limits`)."""
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
        "the machine's)",
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
