"""``tracekit collect``: run a model under one runtime over a batch/sequence sweep, under profilers."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tracekit.commands.options import int_list
from tracekit.errors import TracekitError

RUNTIME_NAMES = (
    "pytorch",
    "torchscript",
    "cuda-graphs",
    "compile",
    "compile-cudagraphs",
    "onnx",
    "onnx-cuda-graphs",
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "collect",
        help="Run a model under one runtime over a batch/sequence sweep, under profilers.",
        description=(
            "Build a model offline (random weights), run it under one runtime for every batch size and sequence "
            "length, time every configuration without a profiler (latency.csv) and once under each profiler "
            "(traces for tracekit analyze). One output directory per run, with run.json."
        ),
    )
    parser.add_argument(
        "--runtime",
        default="pytorch",
        choices=RUNTIME_NAMES,
        metavar="NAME",
        help=f"one of {', '.join(RUNTIME_NAMES)} (default pytorch)",
    )
    parser.add_argument(
        "--model",
        default="bert-base",
        metavar="NAME",
        help="bert-base (default), distilbert, roberta-base, funnel, mobilebert, squeezebert, gpt2, "
        "resnet50, vit-base, tiny (2-layer test preset)",
    )
    parser.add_argument(
        "--layers",
        type=int,
        metavar="N",
        help="override the number of layers (depth scaling; default: the preset's own)",
    )
    parser.add_argument(
        "--hidden",
        type=int,
        metavar="N",
        help="override the hidden size (width scaling; heads = N/64, FFN = 4N; default: the preset's own)",
    )
    parser.add_argument(
        "--gen-tokens",
        type=int,
        default=8,
        metavar="N",
        help="tokens generated per iteration by gpt2 (fixed-length generation, default 8)",
    )
    parser.add_argument(
        "--batch-sizes",
        type=int_list,
        default=[1],
        metavar="LIST",
        help="comma-separated batch sizes, e.g. 1,2,4,8,16,32,64,128 (default 1)",
    )
    parser.add_argument(
        "--seq-lens",
        type=int_list,
        default=None,
        metavar="LIST",
        help="comma-separated sequence lengths (default 128; image side for image models, default 224, the only "
        "one vit-base takes)",
    )
    _run_options(parser)
    parser.set_defaults(func=run)


def _run_options(parser: argparse.ArgumentParser) -> None:
    """Precision, TF32, timing, device, profilers and output options of ``collect``."""
    parser.add_argument(
        "--precision",
        default="fp32",
        choices=["fp32", "fp16"],
        help="weights and activations precision (default fp32)",
    )
    parser.add_argument(
        "--tf32",
        action="store_true",
        help="allow TF32 for fp32 matmuls and convolutions in torch and ONNX Runtime alike (default off for "
        "both; ONNX Runtime's own default would be on, torch's off for matmuls)",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=10,
        metavar="N",
        help="warm-up iterations before timing (default 10; at least 2 for torchscript, cuda-graphs, "
        "compile-cudagraphs and onnx-cuda-graphs)",
    )
    parser.add_argument(
        "--iters",
        type=int,
        default=100,
        metavar="N",
        help="timed iterations: exactly N under a profiler, at least N untraced (default 100)",
    )
    parser.add_argument(
        "--min-time",
        type=float,
        default=1.0,
        metavar="S",
        help="untraced timing goes on past --iters until the 95%% interval of the median is within 2%% of it, "
        "and for at least S seconds (default 1)",
    )
    parser.add_argument(
        "--max-time",
        type=float,
        default=30.0,
        metavar="S",
        help="... or until S seconds of untraced timing have passed (default 30; 0: exactly --iters)",
    )
    parser.add_argument("--device", default="auto", metavar="DEV", help="auto (default), cpu, cuda or cuda:N")
    parser.add_argument(
        "--profiler",
        action="append",
        dest="profilers",
        metavar="NAME",
        help="nsys, torch, ort, ncu or none; repeatable (default nsys when installed and the device is not "
        "cpu, else ort for ONNX runtimes and torch for the others)",
    )
    parser.add_argument(
        "--opset", type=int, default=17, metavar="N", help="ONNX opset for exports (default 17)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, metavar="N", help="seed for weights and inputs (default 0)"
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="run directory (default runs/{model}-{runtime}-{device}-{YYYYmmdd-HHMMSS})",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="reuse an output directory that holds a run (default: refuse)",
    )
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar, one line per configuration (default: a bar on a terminal)",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bar and no per-configuration lines on stderr; warnings still appear (default: off)",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run the untraced, torch and ort timings in this process instead of a fresh worker "
        "process each (faster; nsys and ncu always wrap a worker; default: a fresh worker each)",
    )


#: Python packages collection imports, and the extra that installs them.
COLLECT_PACKAGES: tuple[str, ...] = ("torch", "transformers")
ONNX_PACKAGES: tuple[str, ...] = ("onnx", "onnxruntime")
INSTALL_EXTRA = "pip install 'tracekit[collect]'"


def require_collect_packages(runtime: str) -> None:
    """One line (exit 2) naming the extra to install when a base install lacks the collection stack.

    Looks the packages up without importing them (``find_spec``): torch and transformers take seconds to
    import, and a run refused for its device or options must not pay that first."""
    import importlib.util

    wanted = COLLECT_PACKAGES + (ONNX_PACKAGES if runtime.startswith("onnx") else ())
    missing = []
    for name in wanted:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # ValueError: a module in sys.modules without a spec
            found = False
        if not found:
            missing.append(name)
    if missing:
        raise TracekitError(
            f"collect needs {', '.join(missing)}, not installed here; install the collection extra: "
            f"{INSTALL_EXTRA} (on a CUDA machine: pip install 'tracekit[gpu]')"
        )


#: profilers that record nothing of an ONNX Runtime CPU session: nsys sees no CUDA work, and torch.profiler only
#: torch's own operators (a tiny-model run: "5 of 5 timed iterations hold no operator in the torch.profiler trace")
ORT_BLIND_ON_CPU = ("nsys", "torch")


def ort_blind_profilers(runtime: str, device: str, profilers: list[str]) -> str | None:
    """The warning, said before the sweep starts, when ``--device cpu`` runs an ONNX runtime under a profiler
    that records none of its operators (its trace gives latency only, and analyze no verdict); None otherwise.
    Only for ``--device cpu`` as given: ``auto`` is resolved later (torch is imported then), and on a GPU nsys
    records ORT's kernels."""
    if device != "cpu" or not runtime.startswith("onnx"):
        return None
    blind = [p for p in ORT_BLIND_ON_CPU if p in profilers]
    if not blind:
        return None
    names = " and ".join(blind)
    return (
        f"--profiler {names} record{'s' if len(blind) == 1 else ''} no ONNX Runtime operator on the CPU (ORT's "
        "nodes are neither torch operators nor CUDA work): such a trace gives each iteration's latency only, no "
        "operator busy time and no verdict; --profiler ort records ORT's nodes"
    )


def run(args: argparse.Namespace) -> int:
    # collectors.sweep imports neither torch nor transformers: names and numbers are checked (validate) before
    # anything heavy is imported, and the CUDA check (Sweep) imports torch alone, before any model is built.
    from tracekit.collectors.sweep import Sweep, SweepOptions, validate

    profilers: list[str] | None = None
    if args.profilers:
        profilers = [p.strip() for item in args.profilers for p in item.split(",") if p.strip()]
        if "none" in profilers and len(profilers) > 1:
            raise TracekitError("--profiler none cannot be combined with other profilers")
    opts = SweepOptions(
        runtime=args.runtime,
        model=args.model,
        layers=args.layers,
        hidden=args.hidden,
        gen_tokens=args.gen_tokens,
        device=args.device,
        precision=args.precision,
        batch_sizes=args.batch_sizes,
        seq_lens=args.seq_lens,
        warmup=args.warmup,
        iters=args.iters,
        profilers=profilers,
        opset=args.opset,
        seed=args.seed,
        out_dir=Path(args.output) if args.output else None,
        overwrite=args.overwrite,
        command=["tracekit", *sys.argv[1:]]
        if sys.argv and Path(sys.argv[0]).name in ("tracekit", "cli.py")  # the script, python -m tracekit.cli
        else ["tracekit", "collect", *_argv_of(args)],
        progress=not args.no_progress,
        quiet=args.quiet,
        min_time_s=args.min_time,
        max_time_s=args.max_time,
        in_process=args.in_process,
        tf32=args.tf32,
    )
    if args.output:  # (-o run.json had made a folder named run.json)
        from tracekit.commands.output import check_output_folder

        check_output_folder(Path(args.output), "the run: run.json and the traces", stdout_format=False)
    validate(opts)
    require_collect_packages(args.runtime)
    blind = ort_blind_profilers(args.runtime, args.device, profilers or [])
    if blind:
        print(f"tracekit collect: warning: {blind}", file=sys.stderr)
    sweep = Sweep(opts)
    result = sweep.execute()
    ok = sum(1 for c in result["configs"] if c["status"] == "ok")
    if not args.quiet:
        print(f"tracekit collect: {ok} configuration(s) written to {sweep.out}", file=sys.stderr)
    return 0


def _argv_of(args: argparse.Namespace) -> list[str]:
    """A reconstructed command line (when called programmatically rather than from the tracekit script)."""
    out: list[str] = []
    for key in ("runtime", "model", "device", "precision"):
        out += [f"--{key}", str(getattr(args, key))]
    out += ["--batch-sizes", ",".join(map(str, args.batch_sizes))]
    if args.seq_lens:
        out += ["--seq-lens", ",".join(map(str, args.seq_lens))]
    out += ["--warmup", str(args.warmup), "--iters", str(args.iters)]
    out += ["--min-time", str(args.min_time), "--max-time", str(args.max_time)]
    if args.tf32:
        out.append("--tf32")
    for prof in args.profilers or []:
        out += ["--profiler", prof]
    if args.output:
        out += ["-o", args.output]
    return out
