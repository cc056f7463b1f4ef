"""The ``tracekit`` command line: one subcommand module per verb under :mod:`tracekit.commands`.

Each command module exposes ``register(subparsers) -> None`` (adds its parser and sets ``func``) and is
imported lazily, so ``tracekit analyze`` never pays for torch. Errors the user can fix become one line on
stderr (``tracekit: FILE: problem``) with exit code 2 (input/usage) or 1 (run failure).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import errno
import importlib
import os
import sys
from typing import Any, NoReturn

from tracekit import __version__
from tracekit.errors import TracekitError, one_line

COMMANDS: dict[str, str] = {
    "analyze": "Per-iteration latency, GPU (or CPU operator) busy, idle gaps by cause, launches and framework "
    "overhead of a trace.",
    "collect": "Run a model under one runtime over a batch/sequence sweep, under profilers.",
    "simulate": "Write synthetic nsys-schema SQLite and Kineto traces with known ground truth.",
    "table": "The study's utilization table (latency, SMs active, warp occupancy) across runtimes.",
    "report": "Sweep report: boundedness, transition batch size, figures and recommendations.",
    "compare": "Two traces or runs side by side: medians with their intervals, and per-op-name (kernel or CPU "
    "operator) deltas.",
    "doctor": "What this machine can collect: CUDA devices, runtimes, profilers and their permissions.",
}


#: Commands that only read and analyze traces: numpy's BLAS (which tracekit never calls) is kept to one thread
#: in them. By default OpenBLAS starts a thread per core when numpy is imported, which adds to the CPU time
#: of the import and competes with the trace decoding for the cores (measured: benchmarks/README.md).
ANALYSIS_COMMANDS = frozenset({"analyze", "table", "report", "compare"})


class OneLineErrorParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (the option and what is allowed), exit code 2."""

    def error(self, message: str) -> NoReturn:
        import re

        wrong = re.match(r"argument COMMAND: invalid choice: '([^']*)'", message)
        if wrong:  # tracekit analyse ...: the nearest command
            import difflib

            near = difflib.get_close_matches(wrong.group(1), list(COMMANDS), n=1, cutoff=0.6)
            if near:
                message += f"; did you mean {near[0]}?"
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = OneLineErrorParser(prog="tracekit", description="Measure the framework tax of inference.")
    parser.add_argument("--version", action="version", version=f"tracekit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name, help_text in COMMANDS.items():
        if name == chosen:
            module = importlib.import_module(f"tracekit.commands.{name}")
            module.register(sub)
        else:
            sub.add_parser(name, help=help_text, description=help_text)
    return parser


def parser_of(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser | None:
    """The subcommand ``command``'s parser inside ``parser`` (None when it has none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices.get(command)
    return None


#: Commands that write their results into their ``-o`` folder and print none: no ``--format``.
NO_FORMAT_COMMANDS = ("collect", "simulate")  # (simulate's hidden --format, the old --traces, says it first)


def _long_options(parser: argparse.ArgumentParser) -> list[str]:
    return [o for action in parser._actions for o in action.option_strings if o.startswith("--")]


def commands_with_option(option: str) -> list[str]:
    """The commands (sorted) whose parser has the long option ``option``: every command's parser is built
    for it (an error path only; the command modules import nothing heavy)."""
    parser = argparse.ArgumentParser(add_help=False)
    sub = parser.add_subparsers()
    found = []
    for name in sorted(COMMANDS):
        importlib.import_module(f"tracekit.commands.{name}").register(sub)
        if option in _long_options(sub.choices[name]):
            found.append(name)
    return found


#: a format given as its own flag, as other tools take it (``jq``-style ``--json``): the --format it means
FORMAT_FLAGS = {"--json": "json", "--csv": "csv", "--markdown": "markdown", "--md": "markdown"}


def unrecognized(extras: list[str], parser: argparse.ArgumentParser) -> str:
    """argparse's "unrecognized arguments" message, with the nearest option of ``parser`` for a misspelled
    one (``--fromat``: did you mean --format?), else the commands that have the option (``analyze --ncu``:
    an option of tracekit table; ``collect --format``: collect prints no result)."""
    import difflib

    text = f"unrecognized arguments: {' '.join(extras)}"
    options = _long_options(parser)
    command = parser.prog.split()[-1]
    for extra in extras:
        if extra.startswith("--"):
            option = extra.split("=", 1)[0]
            if option in FORMAT_FLAGS and command in NO_FORMAT_COMMANDS:
                option = "--format"  # collect --json: that it takes no format at all, said below
            if option in FORMAT_FLAGS and "--format" in options:
                return f"{text}; did you mean --format {FORMAT_FLAGS[option]}?"
            if option == "--format" and command in NO_FORMAT_COMMANDS:
                return (
                    f"{text}; {command} writes its results into its -o folder and prints none, so it takes no "
                    "--format"
                )
            near = difflib.get_close_matches(option, options, n=1, cutoff=0.7)
            if near:
                return f"{text}; did you mean {near[0]}?"
            others = [c for c in commands_with_option(option) if c != command] if command in COMMANDS else []
            if others:
                return f"{text}; {option} is an option of tracekit {', '.join(others)}, not of {command}"
    return text


def main(argv: list[str] | None = None) -> int:
    """The command line ``argv`` (default: the program's): its exit code. Standard output is guarded for the
    whole call (:class:`_GuardedStdout`): a result, a help or a version text that cannot be written to it
    (closed, a full disk) is one line and exit 2, not a silent success or an internal error."""
    real_stdout = sys.stdout
    sys.stdout = _GuardedStdout(real_stdout)  # type: ignore[assignment]
    try:
        return _main(argv)
    except TracekitError as exc:  # standard output failed while argparse wrote to it (--help > /dev/full)
        print(f"tracekit: {one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    finally:
        sys.stdout = real_stdout


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args, extras = parser.parse_known_args(argv)
    if extras:  # said by the command's own parser: its name, and its --help to see
        command = getattr(args, "command", None)
        chosen = parser_of(parser, command) if command else None
        (chosen or parser).error(unrecognized(extras, chosen or parser))
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if args.command in ANALYSIS_COMMANDS:  # before anything imports numpy; the user's own setting wins
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from tracekit.commands.output import dash_outputs

    try:
        dash_outputs(args)
        apply_limits(args)
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a full disk says so here, not in the exit's flush (whose errors are lost)
        return code
    except TracekitError as exc:
        print(f"tracekit: {one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("tracekit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:
        if exc.errno != errno.ENAMETOOLONG or exc.filename is None:
            return _internal_error(args, exc)
        # a name the file system cannot hold, as an input or an output, wherever it is first opened
        print(
            f"tracekit: {one_line(os.fsdecode(exc.filename))}: a name too long for the file system "
            "(ENAMETOOLONG): choose a shorter one",
            file=sys.stderr,
        )
        return 2
    except Exception as exc:  # a bug, not bad input: one line unless TRACEKIT_DEBUG asks for the traceback
        return _internal_error(args, exc)
    finally:
        release_limits()


def _internal_error(args: argparse.Namespace, exc: Exception) -> int:
    """A bug, not bad input: one line (exit 1); with ``TRACEKIT_DEBUG`` set, the exception being handled is
    raised again (its traceback). Called from ``_main``'s except clauses only."""
    if os.environ.get("TRACEKIT_DEBUG"):
        raise exc
    where = getattr(args, "trace", None) or ""
    print(
        one_line(
            f"tracekit: internal error{' on ' + str(where) if where else ''}: {type(exc).__name__}: {exc} "
            "(set TRACEKIT_DEBUG=1 for the traceback)"
        ),
        file=sys.stderr,
    )
    return 1


class _GuardedStdout:
    """Standard output for one command: a failed write or flush (a full disk: ENOSPC, ``> /dev/full``) is a
    TracekitError naming standard output (one line, exit 2) rather than an internal error blaming the trace; a
    closed standard output (``>&-``: ``sys.stdout`` is None) is refused the same way at the first write, so a
    command with ``-o FILE`` still runs. A broken pipe stays a BrokenPipeError (``tracekit ... | head``: exit 0).
    Everything else is the wrapped stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _failed(self, exc: OSError | None) -> NoReturn:
        if exc is None:
            raise TracekitError("cannot write: it is closed (>&-)", "standard output")
        raise TracekitError(f"cannot write: {exc.strerror or exc}", "standard output") from None

    def write(self, text: str) -> int:
        if self._stream is None:
            self._failed(None)
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            self._failed(exc)

    def flush(self) -> None:
        if self._stream is None:
            return
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            self._failed(exc)

    def isatty(self) -> bool:
        try:
            return self._stream is not None and bool(self._stream.isatty())
        except (AttributeError, ValueError):
            return False

    def __getattr__(self, name: str) -> Any:
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


def release_limits() -> None:
    """Stop the memory ceiling and restore the default limits (``main`` may run again in this process: tests,
    embedding); the ``tracekit`` program exits right after."""
    limits = sys.modules.get("tracekit.limits")
    if limits is not None:
        limits.stop_memory_ceiling()
        limits.current = limits.Limits()


def apply_limits(args: argparse.Namespace) -> None:
    """Set the input limits the command's options ask for (:mod:`tracekit.limits`; the analysis commands
    have them) and, for those commands, start the memory ceiling: ``--max-memory``, else 3/4 of the
    machine's memory. Any path that escapes the readers' own limits then ends in one line and exit 2."""
    if not hasattr(args, "max_memory"):
        return
    from tracekit import limits

    limits.configure(
        max_inflated=args.max_inflated,
        max_string=args.max_string,
        max_event=args.max_event,
        max_memory=args.max_memory or limits.default_memory(),
    )
    limits.start_memory_ceiling(limits.current.max_memory)
    trace = getattr(args, "trace", None)
    if isinstance(trace, str):
        limits.reading(trace)


def entry() -> NoReturn:
    """The ``tracekit`` program: :func:`main`, then an exit that skips the interpreter's teardown of every
    module and frame (~0.15 s after an analysis, more than the analysis of a small trace): exit handlers
    run and the standard streams are flushed first, so nothing written is lost."""
    try:
        from tracekit.readers import program_allocator

        program_allocator()  # the program's allocator setting, before polars loads (the readers' concern)
        _hold_closed_standard_streams()
        code = main()
    except SystemExit as exc:  # argparse's --help, --version and usage errors: their text is flushed below
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=sys.stderr)
    except KeyboardInterrupt:  # Ctrl-C before main's own handler (its imports, building the parser)
        with contextlib.suppress(OSError, ValueError, AttributeError):
            print("tracekit: interrupted", file=sys.stderr)
        code = 130
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_handlers is not None:
        run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            pass
        except OSError as exc:  # what main did not flush itself (--help > /dev/full): not a silent success
            if stream is sys.stdout and code == 0:
                code = 2
                with contextlib.suppress(OSError, ValueError, AttributeError):
                    print(f"tracekit: standard output: cannot write: {exc.strerror or exc}", file=sys.stderr)
                    sys.stderr.flush()
        except (ValueError, AttributeError):  # a closed stream, or none (>&-)
            pass
    os._exit(code)


def _hold_closed_standard_streams() -> None:
    """Where the program was started with standard output or error closed (``>&-``), put /dev/null on the
    descriptor, so that no file the command opens (an output, a trace) becomes descriptor 1 or 2 and receives
    what a child process (a profiler) writes there; ``sys.stdout`` stays None (:class:`_GuardedStdout`
    refuses to write the result to it) and a closed stderr's lines are dropped, not written to stdout."""
    for fd in (1, 2):
        try:
            os.fstat(fd)
        except OSError:
            held = os.open(os.devnull, os.O_WRONLY)
            if held != fd:
                os.dup2(held, fd)
                os.close(held)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (for the program's lifetime)


if __name__ == "__main__":
    entry()
