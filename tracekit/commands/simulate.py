"""``tracekit simulate``: write synthetic traces (nsys-schema SQLite, Kineto JSON) with known ground truth."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

from tracekit.commands.options import int_list
from tracekit.commands.output import add_progress_options
from tracekit.errors import TracekitError

RUNTIME_CHOICES = ("pytorch", "torchscript", "cuda-graphs", "onnx", "onnx-cuda-graphs")


#: The largest batch size and sequence length (run.json's check and collect take the same): past it the
#: model's kernel durations overflow int64 (2^63 had written 1-ns kernels as ground truth, after a numpy warning).
MAX_DIMENSION = 2**31 - 1
#: Iterations per batch size (and --noise-warmup), kernels per batch size, ranks: bounds, so that a count no run
#: could finish (2^63) is refused at once instead of running on (or ending in an OverflowError).
MAX_ITERS = 10_000_000
MAX_KERNELS = 100_000_000
MAX_RANKS = 1024


def _batch_sizes(text: str) -> list[int]:
    values = int_list(text)
    if any(v < 1 for v in values):
        raise argparse.ArgumentTypeError("batch sizes must be integers >= 1")
    return sorted(set(values))


def _integer_at_least(minimum: int, text: str) -> int:
    try:
        value = int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from exc
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be >= {minimum}")
    return value


def _at_least(minimum: int) -> Callable[[str], int]:
    """argparse type: an integer of at least ``minimum`` (the maxima are checked by :func:`check_bounds`, in
    one line naming the option and the value, after parsing: a usage error here raises SystemExit)."""

    def parse(text: str) -> int:
        return _integer_at_least(minimum, text)

    return parse


def check_bounds(args: argparse.Namespace) -> None:
    """TracekitError (one line, exit 2, before anything is written) for a count or size past simulate's bounds."""
    bounds = [
        ("--seq-len", args.seq_len, 1, MAX_DIMENSION),
        ("--iters", args.iters, 1, MAX_ITERS),
        ("--kernels", args.kernels, 1, MAX_KERNELS),
        ("--noise-warmup", args.noise_warmup, 0, MAX_ITERS),
        ("--ranks", args.ranks, 2, MAX_RANKS),
    ]
    for option, value, low, high in bounds:
        if value is not None and value > high:
            raise TracekitError(f"{option} must be from {low} to {high} (got {value})")
    big = [b for b in args.batch_sizes if b > MAX_DIMENSION]
    if big:
        raise TracekitError(f"--batch-sizes must be from 1 to {MAX_DIMENSION} (got {big[0]})")
    # (the model's kernel durations grow with the tokens of an iteration: past it, no int64 ns holds one)
    tokens = max(args.batch_sizes, default=1) * (args.seq_len or 1)
    if tokens > MAX_DIMENSION:
        raise TracekitError(
            f"--batch-sizes x --seq-len must be at most {MAX_DIMENSION} tokens per iteration (got "
            f"{max(args.batch_sizes)} x {args.seq_len} = {tokens})"
        )


def _ranks(text: str) -> int:
    """--ranks: two at least (one rank has no straggler, no clock offset and no collective to wait at)."""
    try:
        return _integer_at_least(2, text)
    except argparse.ArgumentTypeError as exc:
        if str(exc).startswith("must be"):
            raise argparse.ArgumentTypeError(
                f"{exc} (one rank has no straggler, clock offset or collective to wait at)"
            ) from None
        raise


def _non_negative(text: str) -> int:
    return _integer_at_least(0, text)


TRACE_CHOICES = ("nsys", "kineto", "both")
#: The longest GPU-metrics sampling interval simulate takes, µs (1 s; nsys samples at 10 Hz to 200 kHz).
METRICS_INTERVAL_MAX_US = 1_000_000


def _old_traces(text: str) -> str:
    """argparse type of the hidden ``--format`` (the old name of ``--traces``): an output format of the other
    commands (``json``) is refused, saying why, not as an invalid trace choice."""
    if text in TRACE_CHOICES:
        return text
    raise argparse.ArgumentTypeError(
        f"simulate prints no result, so it takes no output format ({text!r}): it writes traces, their truth "
        "and run.json into -o DIR (--traces nsys|kineto|both chooses the traces)"
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="Write synthetic nsys-schema SQLite and Kineto traces with known ground truth.",
        description=(
            "Run a discrete-event model of the framework tax (CPU dispatch per operator, launch calls, launch "
            "latency, kernels growing with batch x sequence length, device sync per iteration) for one runtime "
            "preset over a batch-size sweep, and write, per batch size, an Nsight Systems-schema SQLite, a Kineto "
            "JSON, a .truth.json with the exact per-iteration metrics, and a sidecar .meta.json. All outputs are "
            "named and marked synthetic."
        ),
    )
    parser.add_argument(
        "--runtime", choices=RUNTIME_CHOICES, help="runtime preset (required, except with --ranks)"
    )
    parser.add_argument(
        "--ranks",
        type=_ranks,
        metavar="N",
        help="instead of a sweep: N synthetic rank traces (Kineto) of one distributed step loop with a known "
        "straggler, clock offsets and NCCL all-reduces, a sidecar .meta.json each, and their truth (--iters "
        "steps, --ops compute kernels per step, --kernels per rank; see tracekit/simulate/ranks.py; default: off)",
    )
    parser.add_argument(
        "--batch-sizes",
        type=_batch_sizes,
        default=[1],
        metavar="B1,B2,...",
        help="batch sizes to simulate (default 1)",
    )
    parser.add_argument(
        "--seq-len",
        type=_at_least(1),
        default=128,
        metavar="S",
        help="sequence length (default 128)",
    )
    parser.add_argument(
        "--iters",
        type=_at_least(1),
        default=20,
        metavar="N",
        help="iterations per batch size (default 20)",
    )
    parser.add_argument(
        "--kernels",
        type=_at_least(1),
        metavar="N",
        help="target kernels per batch size (overrides --iters; for benchmarks; default: off)",
    )
    parser.add_argument(
        "--ops",
        type=_at_least(1),
        metavar="N",
        help="operators (kernels) per iteration (preset default)",
    )
    parser.add_argument(
        "--seed", type=_non_negative, default=0, metavar="S", help="random seed, an integer >= 0 (default 0)"
    )
    parser.add_argument(
        "--traces",
        choices=TRACE_CHOICES,
        default=None,
        help="which traces to write: nsys (SQLite), kineto (JSON) or both (default both)",
    )
    # The old name of --traces, kept working (hidden: --format means the output format in every other command).
    parser.add_argument("--format", dest="old_traces", type=_old_traces, help=argparse.SUPPRESS)
    parser.add_argument(
        "--metrics-interval-us",
        type=float,
        default=100.0,
        metavar="US",
        help="GPU-metrics sampling interval in the SQLite, microseconds (default 100 = nsys's default "
        "10 kHz; 0 = none)",
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a model parameter (repeatable), e.g. --set op_cpu_ns=15000; "
        "see tracekit/simulate/presets.py (default: the preset's values)",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="output run directory (its parent must exist; a folder holding a run needs --overwrite; default "
        "runs/simulated-{runtime}-{YYYYmmdd-HHMMSS}, as collect's)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a run already in DIR: its files (those its run.json lists) are removed first",
    )
    parser.add_argument(
        "--noise",
        type=float,
        default=0.0,
        metavar="F",
        help="per-iteration host noise: every host cost of an iteration times 1 + F*z, z standard normal "
        "(e.g. 0.05; the truth file keeps each iteration's noise-free latency; default 0: none)",
    )
    parser.add_argument(
        "--noise-stalls",
        type=float,
        default=0.0,
        metavar="P",
        help="share P of the iterations descheduled once at their start for as long as the iteration "
        "(CPU time taken by another process; default 0)",
    )
    parser.add_argument(
        "--noise-warmup",
        type=int,
        default=0,
        metavar="K",
        help="the first K iterations run slower (host costs up to 3x, falling to 1x: warm-up drift; default 0)",
    )
    add_progress_options(parser)
    parser.set_defaults(func=run)


def run_ranks(args: argparse.Namespace) -> int:
    """``simulate --ranks N``: one synthetic Kineto trace per rank plus ``ranks.synthetic.truth.json``."""
    from pathlib import Path

    from tracekit.io import output_dir
    from tracekit.simulate.ranks import RankSimulation, write_ranks

    if args.ranks < 2:
        raise TracekitError("--ranks needs at least 2 ranks")
    kernels = args.ops or 20
    steps = args.iters if args.kernels is None else max(1, args.kernels // (kernels + 2))
    # (the parameters checked before anything is removed: --overwrite with a bad --set had removed the earlier
    # rank traces, then refused, leaving their truth file describing traces no longer there)
    params: dict[str, Any] = {
        "ranks": args.ranks,
        "steps": steps,
        "kernels": kernels,
        "straggler": 1 % args.ranks,
    }
    params.update(_rank_overrides(args.overrides, RankSimulation))
    try:
        sim = RankSimulation(**params)
    except ValueError as exc:
        raise TracekitError(f"simulate --ranks: {exc}") from exc
    if args.output:
        from tracekit.commands.output import check_output_folder

        check_output_folder(Path(args.output), "the rank traces", stdout_format=False)
    if not args.output:
        from datetime import datetime

        Path("runs").mkdir(exist_ok=True)
        args.output = f"runs/simulated-ranks-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    out = output_dir(args.output)
    existing = list(out.glob("rank*.synthetic.json.gz"))
    if existing and not args.overwrite:
        raise TracekitError("holds simulated rank traces already; pass --overwrite to replace them", out)
    for old in [*existing, *out.glob("rank*.synthetic.meta.json")]:  # the traces and their sidecars
        old.unlink()
    paths = write_ranks(sim, out)
    if not args.quiet:
        print(
            f"simulated {args.ranks} ranks x {steps} steps x {kernels + 2} kernels into {out} "
            f"(straggler rank {sim.straggler}; truth in ranks.synthetic.truth.json)",
            file=sys.stderr,
        )
    return 0 if paths else 1


def _rank_overrides(items: list[str], simulation: type) -> dict[str, Any]:
    """``--set KEY=VALUE`` for ``simulate --ranks``: fields of
    :class:`tracekit.simulate.ranks.RankSimulation` (ints, floats; ``host_delay_ns`` and ``clock_offset_ns``
    as comma-separated ints, one per rank), typed as the field is; ``ranks`` has its own option. An unknown key
    or a value of the wrong type is one line (it had been ignored without a word)."""
    import dataclasses

    defaults = {f.name: f for f in dataclasses.fields(simulation) if f.name != "ranks"}
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not key:
            raise TracekitError(f"--set expects KEY=VALUE, got {item!r}")
        if key not in defaults:
            raise TracekitError(
                f"--set {key}: not a parameter of simulate --ranks (one of: {', '.join(sorted(defaults))})"
            )
        kind = str(defaults[key].type)
        try:
            if kind.startswith("list"):
                out[key] = [int(v) for v in value.split(",")]
            elif kind == "float":
                out[key] = float(value)
            else:
                out[key] = int(value)
        except ValueError as exc:
            raise TracekitError(f"--set {key}={value}: expected {kind} ({exc})") from exc
    return out


def run(args: argparse.Namespace) -> int:
    from tracekit.simulate import Noise, preset, simulate_sweep

    check_bounds(args)
    if args.ranks is not None:
        return run_ranks(args)
    if args.runtime is None:
        raise TracekitError("simulate needs --runtime (or --ranks N for rank traces)")

    overrides: dict[str, str] = {}
    for item in args.overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise TracekitError(f"--set expects KEY=VALUE, got {item!r}")
        overrides[key.strip()] = value.strip()
    if args.ops is not None:
        overrides["ops"] = str(args.ops)
    if args.metrics_interval_us < 0:
        raise TracekitError("--metrics-interval-us must be >= 0")
    if not args.metrics_interval_us <= METRICS_INTERVAL_MAX_US:  # NaN, infinity, 1e30: ns that are no int64
        raise TracekitError(
            f"--metrics-interval-us must be a number of microseconds from 0 (none) to {METRICS_INTERVAL_MAX_US} "
            f"(got {args.metrics_interval_us:.12g})"
        )
    if args.old_traces is not None:
        print(
            f"tracekit: note: simulate --format {args.old_traces} is now --traces {args.old_traces}",
            file=sys.stderr,
        )
        args.traces = args.traces or args.old_traces
    args.traces = args.traces or "both"
    params = preset(args.runtime, overrides)
    if args.kernels is None and args.iters * params.ops > MAX_KERNELS:
        raise TracekitError(
            f"--iters x operators per iteration (--ops, or the preset's) must be at most {MAX_KERNELS:,} kernels "
            f"per batch size (got {args.iters:,} x {params.ops:,} = {args.iters * params.ops:,})"
        )
    noise = Noise(sd=args.noise, stall_rate=args.noise_stalls, warmup=args.noise_warmup)
    noise.validate()
    if args.output:  # (-o sim.json had made a folder named sim.json)
        from pathlib import Path

        from tracekit.commands.output import check_output_folder

        check_output_folder(Path(args.output), "the run: run.json and the traces", stdout_format=False)
    if not args.output:
        from datetime import datetime
        from pathlib import Path

        Path("runs").mkdir(exist_ok=True)  # the default ./runs/ folder, as collect makes it
        args.output = f"runs/simulated-{args.runtime}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    started = time.perf_counter()

    def progress(result) -> None:  # noqa: ANN001 - SimulatedConfig
        if args.quiet:
            return
        s = result.summary
        print(
            f"simulated {args.runtime} b{result.batch_size} s{result.seq_len}: {s['iterations']} iterations, "
            f"{s['kernels']} kernels, latency {s['latency_ms_mean']:.3f} ms, utilization "
            f"{s['gpu_utilization_mean']:.2f} ({time.perf_counter() - started:.1f} s)",
            file=sys.stderr,
        )

    run_doc = simulate_sweep(
        args.output,
        params,
        args.batch_sizes,
        args.seq_len,
        args.iters,
        args.seed,
        fmt=args.traces,
        kernels=args.kernels,
        metrics_interval_ns=int(round(args.metrics_interval_us * 1000)),
        command=["tracekit", *sys.argv[1:]] if sys.argv and sys.argv[0].endswith("tracekit") else None,
        progress=progress,
        overwrite=args.overwrite,
        noise=noise if noise.active else None,
    )
    if not args.quiet:
        transition = run_doc["sweep"]["transition_batch_size"]
        count = len(run_doc["configs"])
        where = (
            f"transition batch size {transition}"
            if transition is not None
            else "no transition within the batch sizes simulated"
        )
        print(
            f"wrote {count} synthetic config{'s' if count != 1 else ''} to {args.output} ({where})",
            file=sys.stderr,
        )
    return 0
