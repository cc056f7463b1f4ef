"""One input to analyze, resolved once: :class:`TraceInput` (used by ``analyze``, ``table``, ``report``,
``compare``, the Python API and the many-trace runs alike), and :class:`TraceConfig`, what is known about the
configuration that produced it once the trace is read.

Resolution (:func:`resolve_inputs`, :func:`resolve_input`) turns command-line inputs into TraceInputs:

- a run directory (``run.json``, :mod:`tracekit.runs`) gives one TraceInput per successful configuration: its
  most preferred trace (:data:`PROFILER_PREFERENCE`), with what ``run.json`` states about it, and the
  configuration's Nsight Compute trace (``ncu``) when it has one besides;
- a trace file gives one TraceInput, with what its sidecar ``.meta.json`` states.

Each file's format is detected from its content here, once (:func:`tracekit.readers.detect_format`; a file
that cannot be detected keeps ``format`` None and its reader says what is wrong when it is read), and its
sidecar is read here, once (``sidecar``: it fills the trace's ``meta`` when the trace is read).

**The one precedence** (what :meth:`TraceConfig.resolve` and :func:`tracekit.readers.read_trace` both follow):

- *configuration* values (:data:`CONFIG_KEYS`: runtime, model, batch size, sequence length, precision,
  synthetic, warm-up, untraced latency): ``run.json``, then the sidecar ``.meta.json``, then the trace's own
  metadata, then the trace's content (:mod:`tracekit.analyzers.identify`), then the file name;
- *measured* values (format, the device the ops ran on, the GPU, every timestamp): the trace itself; a
  sidecar only fills what the reader left unset.

This module stays free of polars (it runs before the analysis modules load, so that a reader can start
decoding while they do: :func:`tracekit.readers.begin_reading`).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracekit.errors import TracekitError
from tracekit.quantiles import withheld_quantiles

if TYPE_CHECKING:
    from tracekit.model import Trace

#: Where a configuration value came from, besides :mod:`tracekit.analyzers.identify`'s sources.
FROM_RUN = "from run.json"
FROM_SIDECAR = "from sidecar .meta.json"
FROM_TRACE_META = "from trace metadata"
#: The configuration values :meth:`TraceConfig.resolve` infers from the trace when nothing states them.
INFERABLE = ("runtime", "batch_size", "seq_len", "precision")
#: Configuration keys of a trace's ``meta``: for these, what the run states (run.json, sidecar) wins over the
#: reader's own value (the module docstring's precedence); every other key is measured by the reader.
#: (``synthetic`` is either side's: see :func:`merge_meta`.)
CONFIG_KEYS = (
    "runtime",
    "model",
    "batch_size",
    "seq_len",
    "precision",
    "profiler",
    "warmup_iterations",
    "warmup_in_trace",
    "iterations",
    "untraced_latency_ms",
)
#: Order in which a configuration's traces are preferred when one trace must stand for it.
PROFILER_PREFERENCE = ("nsys", "torch", "kineto", "ort", "ncu")


@dataclass(frozen=True)
class TraceInput:
    """One trace to analyze and what its run states about it (None: not stated).

    ``format``: the trace format detected from the content (None: not detected, the reader says why);
    ``stated_by``: :data:`FROM_RUN` or :data:`FROM_SIDECAR` (None: nothing states the configuration);
    ``sidecar``: the sidecar ``.meta.json`` as read (``{}``: none); ``untraced_latency_ms``: the statistics of
    the latency measured with the profiler off (mean, median, interval, ...; None: not recorded); ``ncu``: an
    Nsight Compute trace of the same configuration (``tracekit table`` joins it); ``notes``: what resolving
    the input found that its analysis should say (a duplicate entry of run.json left out in its favour): they
    join its configuration's warnings (:attr:`TraceConfig.inference_warnings`); ``disputed``: configuration
    values (batch size, sequence length) that run.json gives differently for this one trace (two configurations naming
    it), each with every value given: :meth:`TraceConfig.resolve` does not trust them (``uncertain: sources
    disagree``), as it does not a value run.json and the sidecar give differently
    (:func:`stated_disagreements`)."""

    path: Path
    format: str | None = None
    profiler: str | None = None
    runtime: str | None = None
    model: str | None = None
    batch_size: int | None = None
    seq_len: int | None = None
    precision: str | None = None
    device: str | None = None
    synthetic: bool = False
    untraced_latency_ms: Mapping[str, Any] | None = None
    stated_by: str | None = None
    sidecar: Mapping[str, Any] = field(default_factory=dict, repr=False)
    ncu: Path | None = None
    notes: tuple[str, ...] = ()
    disputed: Mapping[str, tuple[Any, ...]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))

    @property
    def states_identity(self) -> bool:
        """Whether the run states every value :data:`INFERABLE` (then nothing needs to be inferred)."""
        return all(getattr(self, key) is not None for key in INFERABLE)

    def with_ncu(self, ncu: Path | None) -> TraceInput:
        """This input with its Nsight Compute trace."""
        return replace(self, ncu=ncu)


def sidecar_meta_path(trace_path: Path) -> Path:
    """``x.sqlite`` (or ``x.sqlite.gz``) -> ``x.meta.json``; ``x.json.gz`` -> ``x.meta.json``; ``x.pt.trace.json`` -> ``x.pt.trace.meta.json``."""
    name = trace_path.name
    for suffix in (".json.gz", ".csv.gz", ".sqlite.gz", ".sqlite", ".json", ".csv", ".ncu-rep", ".nsys-rep"):
        if name.endswith(suffix):
            return trace_path.with_name(name[: -len(suffix)] + ".meta.json")
    return trace_path.with_name(name + ".meta.json")


#: sidecar keys whose value is text or null, positive dimensions, counts, and flags (:func:`check_sidecar`)
SIDECAR_TEXT = ("runtime", "model", "precision", "profiler", "device")
SIDECAR_DIMENSIONS = ("batch_size", "seq_len")
SIDECAR_COUNTS = ("warmup_iterations", "iterations")
SIDECAR_FLAGS = ("synthetic", "warmup_in_trace")


def check_sidecar(meta: Mapping[str, Any]) -> str | None:
    """What is wrong with a sidecar ``.meta.json`` (None: nothing), the first problem found, naming the field,
    as :func:`tracekit.runs.check_run` says it of a run.json: the configuration values a command reads
    (:data:`CONFIG_KEYS`) must be of their type (text; a batch size or sequence length from 1 to 2^31 - 1,
    not a boolean; a count; true or false; untraced latency statistics), or null. Other keys are kept as
    they are."""
    from tracekit.runs import MAX_DIMENSION, _check_untraced, _is_int, _wrong

    for key in SIDECAR_TEXT:
        value = meta.get(key)
        if value is not None and not (isinstance(value, str) and value.strip()):
            return _wrong(key, value, "text or null")
    for key in SIDECAR_DIMENSIONS:
        value = meta.get(key)
        if value is not None and not (_is_int(value) and 1 <= value <= MAX_DIMENSION):
            return _wrong(key, value, f"a positive integer (1 to {MAX_DIMENSION}) or null")
    for key in SIDECAR_COUNTS:
        value = meta.get(key)
        if value is not None and not (_is_int(value) and value >= 0):
            return _wrong(key, value, "a non-negative integer or null")
    for key in SIDECAR_FLAGS:
        value = meta.get(key)
        if value is not None and not isinstance(value, bool):
            return _wrong(key, value, "true, false or null")
    return _check_untraced("untraced_latency_ms", meta.get("untraced_latency_ms"))


def load_sidecar_meta(trace_path: Path, check: bool = False) -> dict[str, Any]:
    """The ``.meta.json`` written beside a trace (by ``tracekit collect`` / ``simulate``), or ``{}`` (none, or
    one that cannot be used: :func:`read_sidecar` says why). ``check`` (what an analysis asks): TracekitError
    (one line, naming the sidecar and the field) when a configuration value in it is of the wrong type or out
    of range (:func:`check_sidecar`): it would be stated as the trace's configuration, or end the analysis
    with an internal error. Without it (a script that reads one value and copes with a wrong one) the values
    are as written."""
    return read_sidecar(trace_path, check)[0]


def read_sidecar(trace_path: Path, check: bool = False) -> tuple[dict[str, Any], str | None]:
    """The sidecar ``.meta.json`` of ``trace_path`` (``{}``: none) as :func:`load_sidecar_meta` reads it, and
    why a sidecar that is there is not used (None: it is, or there is none): it cannot be read, is not JSON
    (a trailing comma), or is JSON but not an object (an array). Its statements (warm-up iterations, batch
    size) are then not known, so the warning must be said: an ignored sidecar's warm-up had been analyzed as
    measured iterations without a word. Read as UTF-8 with or without a byte-order mark (what Windows
    editors write), as traces are."""
    import json

    path = sidecar_meta_path(Path(trace_path))
    if not path.is_file():
        return {}, None
    from tracekit.io import register_input

    register_input(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as exc:
        return {}, _unused(path, f"cannot be read ({exc.strerror or exc})")
    except ValueError as exc:  # (UnicodeDecodeError included)
        return {}, _unused(path, f"not JSON ({exc})")
    if not isinstance(data, dict):
        kinds = {list: "an array", str: "a string", bool: "true or false", type(None): "null"}
        kind = kinds.get(type(data), "a number")
        return {}, _unused(path, f"its JSON is {kind}, not an object of fields")
    problem = check_sidecar(data) if check else None
    if problem is not None:
        raise TracekitError(f"damaged sidecar .meta.json of {Path(trace_path).name}: {problem}", path)
    return data, None


def _unused(path: Path, why: str) -> str:
    """The warning of a sidecar :func:`read_sidecar` does not use."""
    return (
        f"sidecar {path.name} not used: {why}; what it states of the trace (warm-up iterations, batch size, "
        "...) is not known"
    )


def merge_meta(meta: dict[str, Any], stated: Mapping[str, Any]) -> None:
    """Fill a trace's ``meta`` (in place) from what its run states (a sidecar): the module docstring's
    precedence. A configuration key (:data:`CONFIG_KEYS`) takes the stated value; any other key only where the
    reader left it unset, except ``synthetic``, which either side can set (a file the simulator marked is
    synthetic whatever its sidecar says)."""
    for key, value in stated.items():
        if value is None:
            continue
        if key in CONFIG_KEYS or meta.get(key) is None or (key == "synthetic" and value):
            meta[key] = value


def _detected(path: Path) -> str | None:
    """The format of ``path`` (None when it cannot be told: the reader reports the problem when it reads)."""
    from tracekit.readers import detect_format

    try:
        return detect_format(path)
    except (TracekitError, OSError):
        return None


def _file_input(path: Path) -> TraceInput:
    """The input of one trace file, with what its sidecar states (and why it is not used, when it is not)."""
    meta, unused = read_sidecar(path, check=True)
    return TraceInput(
        path=path,
        format=_detected(path),
        profiler=meta.get("profiler"),
        runtime=meta.get("runtime"),
        model=meta.get("model"),
        batch_size=meta.get("batch_size"),
        seq_len=meta.get("seq_len"),
        precision=meta.get("precision"),
        device=meta.get("device"),
        synthetic=bool(meta.get("synthetic", False)),
        untraced_latency_ms=meta.get("untraced_latency_ms"),
        stated_by=FROM_SIDECAR if meta else None,
        sidecar=meta,
        notes=() if unused is None else (unused,),
    )


def _run_inputs(path: Path, prefer: tuple[str, ...]) -> list[TraceInput]:
    """One input per successful configuration of the run directory ``path`` (its most preferred trace; the
    configuration's ncu trace besides, when it has one).

    ``run.json`` is checked whole when it is read (:func:`tracekit.runs.load_run`: a wrongly typed or out of
    range value ends the command, naming the field). A configuration whose status is not "ok", or that names
    no trace, is not analyzed; one that repeats an earlier one's batch size and sequence length is left out,
    the first kept (:func:`tracekit.analyzers.report.build_report`'s rule), and the kept one's input says so
    (:attr:`TraceInput.notes`)."""
    from tracekit.runs import RUN_FILE, load_run

    run = load_run(path)
    out: list[TraceInput] = []
    first: dict[tuple[int, int], int] = {}  # (batch size, seq len) -> index into ``out``
    named: dict[Any, int] = {}  # the trace file (_file_key) -> index into ``out``
    numbers: list[int] = []  # each input's index in run.json's configs
    for number, config in enumerate(run["configs"]):
        if config.get("status", "ok") != "ok":
            continue
        traces = config.get("traces") or {}
        profiler = next((p for p in prefer if p in traces), None)
        if profiler is None:
            continue
        trace = path / traces[profiler]
        key = (config["batch_size"], config["seq_len"])
        same = _file_key(trace)
        if same in named:  # (first: a file named again is disputed even where its key repeats another's)
            kept = named[same]
            out[kept] = _named_twice(
                out[kept], config, f"{path / RUN_FILE}: configs[{number}]", numbers[kept]
            )
            continue
        if key in first:
            kept = first[key]
            note = (
                f"{path / RUN_FILE}: configs[{number}] ({trace.name}) is a duplicate configuration (runtime "
                f"{run.get('runtime')}, seq {key[1]}, batch {key[0]}) of configs[{numbers[kept]}]; kept the "
                "first one"
            )
            out[kept] = replace(out[kept], notes=(*out[kept].notes, note))
            continue
        ncu = path / traces["ncu"] if traces.get("ncu") and profiler != "ncu" else None
        named[same] = len(out)
        first[key] = len(out)
        numbers.append(number)
        sidecar, unused = read_sidecar(trace, check=True)
        notes = () if unused is None else (unused,)
        named_as = Path(traces[profiler])
        if named_as.is_absolute() or ".." in named_as.parts:  # (hostile17: a foreign file read as batch 1)
            notes += (
                f"{path / RUN_FILE}: configs[{number}] names a trace outside the run folder ({named_as}): read as "
                "run.json says, though it is not among the run's own files",
            )
        out.append(
            TraceInput(
                path=trace,
                format=_detected(trace),
                profiler=profiler,
                runtime=run.get("runtime"),
                model=run.get("model"),
                batch_size=config["batch_size"],
                seq_len=config["seq_len"],
                precision=run.get("precision"),
                device=run.get("device"),
                synthetic=bool(run.get("synthetic", False)),
                untraced_latency_ms=config.get("untraced_latency_ms"),
                stated_by=FROM_RUN,
                sidecar=sidecar,
                ncu=ncu,
                notes=notes,
            )
        )
    return _with_incompleteness(path, run, out)


def _file_key(path: Path) -> Any:
    """What tells one trace file from another: its device and inode (two spellings of a path, a link to it),
    else its absolute path (a file that does not exist: its reader says so)."""
    import os

    try:
        st = os.stat(path)
    except OSError:
        return os.path.abspath(path)
    return (st.st_dev, st.st_ino)


def _named_twice(item: TraceInput, config: Mapping[str, Any], where: str, number: int) -> TraceInput:
    """``item`` (run.json's configs[``number``]) when another configuration of run.json (``where``, of
    ``config``) names the same trace: one recording cannot be of two configurations, so it is analyzed once,
    and each value the two give differently (batch size, sequence length) is disputed (not trusted: a batch-2
    configuration given batch 1's trace had been reported as batch 2 with batch 1's numbers, twice the
    throughput on a plateau never measured)."""
    disputed = {k: tuple(v) for k, v in item.disputed.items()}
    differ = []
    for key in ("batch_size", "seq_len"):
        values = disputed.get(key) or (getattr(item, key),)
        if config[key] not in values:
            disputed[key] = (*values, config[key])
            differ.append(key.replace("_", " "))
    note = (
        f"{where} (batch {config['batch_size']}, seq {config['seq_len']}) names the same trace as "
        f"configs[{number}] (batch {item.batch_size}, seq {item.seq_len}), {item.path.name}: one recording "
        "cannot be of both; analyzed once" + (f", its {' and '.join(differ)} uncertain" if differ else "")
    )
    return replace(item, notes=(*item.notes, note), disputed=disputed)


#: run.json ``status`` values of a collection that did not finish (``collect`` writes them)
INCOMPLETE_RUN = ("running", "interrupted", "stopped")


def _with_incompleteness(path: Path, run: dict[str, Any], out: list[TraceInput]) -> list[TraceInput]:
    """``out`` with a note, on its first input, when the run is incomplete (run.json's ``status``: the
    collection interrupted, stopped or still running) or some configurations were not analyzed (failed,
    skipped, no trace): a partial sweep must not read as a complete smaller one. TracekitError (one line,
    naming the run) when none was analyzed: the folder would otherwise drop out of the inputs in silence."""
    from collections import Counter

    from tracekit.runs import RUN_FILE

    configs = run.get("configs") or []
    kinds = Counter(str(c.get("status", "ok")) for c in configs if c.get("status", "ok") != "ok")
    status = run.get("status")
    left = sum(kinds.values())
    if not kinds and status not in INCOMPLETE_RUN and (out or not configs):
        return out
    said = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    why = f"the collection was {status}" if status in INCOMPLETE_RUN else "not all configurations ran"
    if not out:
        raise TracekitError(
            f"no configuration to analyze: {why} ({said or 'none with a trace'})", path / RUN_FILE
        )
    note = (
        f"{path / RUN_FILE}: {why}: {left} of {len(configs)} configurations not analyzed"
        + (f" ({said})" if said else "")
        + ": the sweep is incomplete"
    )
    return [replace(out[0], notes=(*out[0].notes, note)), *out[1:]]


#: The input name that means standard input, as for most command-line tools.
STDIN_NAME = "-"


def input_path(raw: str | Path) -> Path:
    """The path of a command-line input: ``-`` is standard input (``/dev/stdin``, a pipe read once)."""
    return Path("/dev/stdin") if str(raw) == STDIN_NAME else Path(raw)


def resolve_inputs(
    paths: Sequence[str | Path], ncu: Sequence[str | Path] = (), prefer: tuple[str, ...] = PROFILER_PREFERENCE
) -> list[TraceInput]:
    """Run directories and trace files (the module docstring) as TraceInputs, in order; ``ncu``: Nsight Compute
    traces to join to them (``table --ncu``), matched by their sidecar's (runtime, batch size, sequence length),
    else in order. TracekitError (one line) for a missing input given alone (one of several is kept, so that
    its analysis fails alone and it is left out as a damaged trace is) or an ncu file that matches no input. One path
    alone (``tracekit.table("runs/bert-onnx")``, as a notebook user writes it) is one input, not its
    characters."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    if isinstance(ncu, (str, Path)):
        ncu = [ncu]
    inputs: list[TraceInput] = []
    for raw in paths:
        path = input_path(raw)
        if path.is_dir():
            _check_run_dir(path)
            inputs += _run_inputs(path, prefer)
        elif not path.exists():
            if len(paths) == 1:
                raise TracekitError(missing(path), path)
            inputs.append(TraceInput(path=path))  # one of several: its read fails alone (left out, exit 1)
        else:
            item = _file_input(path)
            if item.format is None and len(paths) == 1:
                _refuse_alone(path)
            inputs.append(item)
    return _attach_ncu(inputs, [Path(p) for p in ncu]) if ncu else inputs


def _refuse_alone(path: Path) -> None:
    """TracekitError (one line) for a file given alone that is no trace, with its reader's reason, as a missing
    file given alone is: ``compare`` pairs a side's inputs by configuration, so such a file had read "no
    configuration ... in both A [(None, None)] and B [...]", and ``table``/``report`` had said it as a left-out
    input. A run's ``run.json`` (given for its run) names its folder, for whichever command reads it: the
    reader's own line names ``tracekit analyze``. Standard input is left to its read (a pipe is read once)."""
    import json

    from tracekit.io import is_stream
    from tracekit.readers import detect_format, holds_no_trace
    from tracekit.runs import RUN_FILE

    if is_stream(path):
        return
    try:
        detect_format(path)
    except TracekitError as e:
        if path.name == RUN_FILE and holds_no_trace(path):
            try:
                configs = json.loads(path.read_bytes()).get("configs")
            except (OSError, ValueError, AttributeError):
                configs = None
            if isinstance(configs, list):
                folder = shlex.quote(str(path.parent))
                raise TracekitError(
                    f"a tracekit {RUN_FILE} (settings), not a trace: pass its folder ({folder}) instead", path
                ) from None
        raise e from None
    except OSError:
        return  # its read names the problem


#: File names that look like traces, for the hint of :func:`_check_run_dir`.
TRACE_GLOBS = (
    "*.json.gz",
    "*.json",
    "*.sqlite",
    "*.sqlite.gz",
    "*.nsys-rep",
    "*.qdrep",
    "*.csv.gz",
    "*.csv",
    "*.ncu-rep",
)


def _first_three(names: list[str]) -> str:
    """``a, b, c and 4 more``: the first three of ``names``, and how many others."""
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _check_run_dir(path: Path) -> None:
    """TracekitError (one line) for a folder given as a run directory that has no run.json. When run
    directories stand below it (a folder of ``collect`` runs), the line names them and says to pass them;
    else, when it holds trace files (``simulate --ranks``, a folder of torch.profiler traces), it says to pass
    those, which ``table``, ``report`` and ``compare`` take (``analyze`` takes such a folder itself). JSON
    files that plainly hold no trace (a tool's results, settings) are not counted as traces."""
    from tracekit.readers import holds_no_trace
    from tracekit.runs import RUN_FILE

    if (path / RUN_FILE).is_file():
        return
    shell = shlex.quote(str(path))  # the folder in the commands named below, as a shell takes it
    runs = sorted(p.parent for p in path.glob(f"*/{RUN_FILE}") if p.is_file())
    if runs:
        raise TracekitError(
            f"not a tracekit run directory (no run.json); the run director{'ies' if len(runs) > 1 else 'y'} "
            f"{_first_three([r.name for r in runs])} stand{'' if len(runs) > 1 else 's'} below it: pass "
            f"{'them' if len(runs) > 1 else 'it'} ({shell}/*/), or analyze the folder with tracekit analyze {shell}",
            path,
        )
    traces = sorted(
        {
            p.name
            for g in TRACE_GLOBS
            for p in path.glob(g)
            if p.is_file() and not p.name.endswith(".meta.json")
        }
    )
    traces = [
        t
        for t in traces
        if not t.endswith((".truth.json", RUN_FILE))
        and not (t.endswith((".json", ".json.gz")) and holds_no_trace(path / t))
        # a CSV is a trace when it is Nsight Compute's (tracekit report's report.csv is none)
        and not (t.endswith((".csv", ".csv.gz")) and _detected(path / t) is None)
    ]
    if not traces:
        others = (
            sorted(p.name for p in path.iterdir() if not p.name.startswith(".")) if _listable(path) else []
        )
        raise TracekitError(
            "not a tracekit run directory (no run.json), and it holds no trace files"
            + (f" ({_first_three(others)}: not traces)" if others else ""),
            path,
        )
    from fnmatch import fnmatch

    shown = _first_three(traces)
    pattern = max(TRACE_GLOBS, key=lambda g: sum(fnmatch(t, g) for t in traces))
    raise TracekitError(
        f"not a tracekit run directory (no run.json); it holds {len(traces)} trace file"
        f"{'s' if len(traces) > 1 else ''} ({shown}): pass the files ({shell}/{pattern}), or analyze the "
        f"folder with tracekit analyze {shell}",
        path,
    )


def _listable(path: Path) -> bool:
    """Whether the folder ``path`` can be listed."""
    try:
        next(iter(path.iterdir()), None)
    except OSError:
        return False
    return True


def missing(path: Path) -> str:
    """Why ``path``, which does not exist as far as :meth:`Path.exists` can tell, cannot be read: no such file
    or directory, or a symbolic link that leads nowhere (to a missing file, or back to itself)."""
    import errno
    import os

    if not path.is_symlink():
        return "no such file or directory"
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop (the link leads back to itself)"
    return f"a symbolic link to {os.readlink(path)}, which does not exist"


def resolve_input(path: str | Path, begin: bool = False) -> TraceInput:
    """The input of one trace file (a folder is kept as it is: its reader says what is wrong with it).

    ``begin``: let the reader start on the file now (:func:`tracekit.readers.begin_reading`), while the caller
    loads the analysis; the read then picks up what was begun."""
    path = input_path(path)
    if path.is_dir():
        return TraceInput(path=path)
    if not path.exists():
        raise TracekitError(missing(path), path)
    item = _file_input(path)
    if begin and item.format is not None:
        from tracekit.readers import begin_reading

        begin_reading(path, item.format)
    return item


def _attach_ncu(inputs: list[TraceInput], files: list[Path]) -> list[TraceInput]:
    """``inputs`` with each ``--ncu`` file joined to its input: matched by sidecar (runtime, batch, seq), else
    given in order to the inputs that have none."""
    for f in files:
        if not f.is_file():
            raise TracekitError("no such file", f)
    out = list(inputs)
    left: list[Path] = []
    for f in files:
        meta = load_sidecar_meta(f, check=True)
        key = (meta.get("runtime"), meta.get("batch_size"), meta.get("seq_len"))
        match = [
            i
            for i, x in enumerate(out)
            if None not in key and (x.runtime, x.batch_size, x.seq_len) == key and x.ncu is None
        ]
        if len(match) == 1:
            out[match[0]] = out[match[0]].with_ncu(f)
        else:
            left.append(f)
    free = [i for i, x in enumerate(out) if x.ncu is None]
    if left and len(left) != len(free):
        raise TracekitError(
            f"cannot tell which input each --ncu file belongs to ({len(left)} unmatched files for {len(free)} "
            "inputs without one; give one --ncu file per input, in the same order, or sidecar .meta.json files)"
        )
    for i, f in zip(free, left, strict=False):
        out[i] = out[i].with_ncu(f)
    return out


# ------------------------------------------------------------------------------------------- configuration


#: the runtimes of each framework: a stated runtime of one and a content inference of the other contradict
RUNTIME_FAMILIES = {
    "onnx": "ONNX Runtime",
    "onnx-cuda-graphs": "ONNX Runtime",
    "pytorch": "PyTorch",
    "torchscript": "PyTorch",
    "cuda-graphs": "PyTorch",
    "compile": "PyTorch",
    "compile-cudagraphs": "PyTorch",
}


def _runtime_contradicted(stated: str, source: str, trace: Trace) -> tuple[tuple[Any, ...], str] | None:
    """(the candidate runtimes, a warning) when the trace's content says, surely, a runtime of another
    framework than the one ``source`` states (run.json labelled ``onnx`` over a PyTorch eager trace: its
    numbers would be shown as ONNX Runtime's); None when it agrees, says nothing sure, or either runtime is
    not one :data:`RUNTIME_FAMILIES` knows."""
    from tracekit.analyzers.identify import runtime_from_content

    found = runtime_from_content(trace)
    if found is None or found.uncertain or found.value == "cuda-graphs":
        # (an ambiguous one still names its framework; "cuda-graphs" is read from graph launches and the
        # absence of ONNX Runtime evidence, which is no evidence of PyTorch)
        return None
    said, seen = RUNTIME_FAMILIES.get(str(stated)), RUNTIME_FAMILIES.get(str(found.value))
    if said is None or seen is None or said == seen:
        return None
    return (stated, found.value), (
        f"runtime {stated} {source}, but the trace content says {found.value} ({found.evidence}): a "
        f"{seen} trace labelled {said}; which ran is not known"
    )


#: The configuration values a sweep is drawn from (its axes, and what its rows are compared by), which
#: :func:`stated_disagreements` checks between run.json and the sidecar; a runtime that run.json and the trace's
#: content disagree on is said by :func:`_runtime_contradicted`.
DIMENSIONS = ("batch_size", "seq_len", "runtime", "precision")


def stated_disagreements(item: TraceInput) -> tuple[dict[str, tuple[Any, ...]], tuple[str, ...]]:
    """The batch size, sequence length, runtime and precision (:data:`DIMENSIONS`) stated of ``item`` that its
    sources give differently, each with every value given, and one warning each: run.json against the trace's own sidecar ``.meta.json`` (a
    hand-edited run.json, or a configuration given another one's trace: run.json's batch 8 for the trace whose
    sidecar says batch 2 had been reported as batch 8, four times the throughput), and the values run.json
    gives differently for one trace (:attr:`TraceInput.disputed`). A disputed value is not used
    (:meth:`TraceConfig.resolve`: ``uncertain: sources disagree``, as :func:`tracekit.analyzers.identify.settle`
    has it of inferred values), so that no sweep figure is drawn from it."""
    disputes = {key: tuple(values) for key, values in item.disputed.items() if key in DIMENSIONS}
    warnings = []
    for key in DIMENSIONS:
        stated, said = getattr(item, key), item.sidecar.get(key) if item.stated_by == FROM_RUN else None
        words = key.replace("_", " ")
        if key in disputes:
            given = disputes[key]
            extra = f"; sidecar .meta.json: {said}" if said is not None else ""
            if said is not None and said not in given:
                disputes[key] = (*given, said)
            warnings.append(
                f"{words} uncertain, sources disagree: run.json gives this one trace "
                f"{' and '.join(map(str, given))}{extra}; none is used"
            )
        elif stated is not None and said is not None and said != stated:
            disputes[key] = (stated, said)
            warnings.append(
                f"{words} uncertain, sources disagree: {stated} {FROM_RUN} vs {said} {FROM_SIDECAR} "
                f"({sidecar_meta_path(item.path).name}); neither is used"
            )
    return disputes, tuple(warnings)


#: A reader's format -> the profiler that wrote it, in ``tracekit collect --profiler`` words (run.json's
#: ``traces`` keys and the sidecars' ``profiler``), so that a trace's profiler has one spelling whichever
#: source names it: a Kineto file alone (format ``kineto``) and one in a run directory (``torch``) had been
#: two profilers, and their latencies never compared.
PROFILER_OF_FORMAT = {
    "nsys-sqlite": "nsys",
    "kineto": "torch",
    "ort": "ort",
    "ncu-csv": "ncu",
    "ncu-rep": "ncu",
}


def profiler_name(value: str | None) -> str | None:
    """``value`` (a run.json key, a sidecar's ``profiler`` or a reader's format) in collect's words."""
    return PROFILER_OF_FORMAT.get(value, value) if value else None


@dataclass(frozen=True)
class TraceConfig:
    """The configuration of one analyzed trace, by the module docstring's precedence: what the run states
    (run.json, sidecar), then the trace's own metadata, then what its content (or, weaker, its file name) says
    (:mod:`tracekit.analyzers.identify`).

    ``sources``: for each of runtime, batch_size, seq_len, precision that is known, where it came from
    (:data:`FROM_RUN`, :data:`FROM_SIDECAR`, :data:`FROM_TRACE_META`, ``"inferred from trace content"``,
    ``"from file name"``, or, with the value None, ``"uncertain: sources disagree"`` / ``"varies by serving
    step"``); ``evidence``: for the inferred ones, what in the trace or name says so; ``uncertain``: the
    inferred values that are not sure, each with its candidate values (both disagreeing values; the lowest
    and highest of a varying batch; the value itself when its evidence may not mean it);
    ``inference_warnings``: why those are uncertain, file-name hints the content overrides (runtime), and what
    resolving the input noted of it (:attr:`TraceInput.notes`: a duplicate entry of run.json left out).
    ``untraced_latency``: the statistics of the latency measured with the profiler off, as recorded (mean,
    median, interval, count; None when not recorded)."""

    path: Path
    profiler: str | None = None
    runtime: str | None = None
    model: str | None = None
    batch_size: int | None = None
    seq_len: int | None = None
    precision: str | None = None
    device: str | None = None
    synthetic: bool = False
    untraced_latency: Mapping[str, Any] | None = None
    sources: Mapping[str, str] = field(default_factory=dict)
    evidence: Mapping[str, str] = field(default_factory=dict)
    uncertain: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    inference_warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # a p90/p99 recorded over too few iterations to give it (tracekit.quantiles; a run.json of an older
        # tracekit records one over 20) is withheld here, so the config and its JSON say the same
        if isinstance(self.untraced_latency, Mapping):
            object.__setattr__(self, "untraced_latency", withheld_quantiles(dict(self.untraced_latency)))

    @classmethod
    def resolve(
        cls, item: TraceInput, meta: Mapping[str, Any], device: str | None, trace: Trace | None = None
    ) -> TraceConfig:
        """The configuration of ``item`` read as a trace with ``meta``; ``device``: the measured one;
        ``trace``: the trace itself, to infer what nothing states (None: no inference)."""
        given = item.stated_by or FROM_SIDECAR
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for key in INFERABLE:
            if getattr(item, key) is not None:
                values[key], sources[key] = getattr(item, key), given
            elif meta.get(key) is not None:
                values[key], sources[key] = meta[key], FROM_TRACE_META
        evidence: dict[str, str] = {}
        uncertain: dict[str, tuple[Any, ...]] = {}
        disputes, warnings = stated_disagreements(item)
        if disputes:
            from tracekit.analyzers.identify import UNCERTAIN

            for key, candidates in disputes.items():  # in doubt: never inferred over, never a silent pick
                values[key], sources[key], uncertain[key] = None, UNCERTAIN, candidates
        if trace is not None and any(key not in values for key in INFERABLE):
            from tracekit.analyzers.identify import identify

            identity = identify(trace, meta.get("path") or item.path)
            for key in INFERABLE:
                found = getattr(identity, key)
                if key not in values and found is not None:
                    values[key], sources[key], evidence[key] = found.value, found.source, found.evidence
                    if found.uncertain:
                        uncertain[key] = tuple(found.candidates or (found.value,))
            warnings += tuple(w for key, w in identity.warnings.items() if key in evidence)
        if trace is not None and values.get("runtime") is not None and "runtime" not in evidence:
            contradiction = _runtime_contradicted(values["runtime"], sources["runtime"], trace)
            if contradiction is not None:
                uncertain["runtime"] = contradiction[0]
                warnings = (*warnings, contradiction[1])
        batch, seq = values.get("batch_size"), values.get("seq_len")
        untraced = item.untraced_latency_ms
        return cls(
            path=Path(item.path),
            profiler=profiler_name(item.profiler or meta.get("profiler") or meta.get("format")),
            runtime=values.get("runtime"),
            model=item.model or meta.get("model"),
            batch_size=None if batch is None else int(batch),
            seq_len=None if seq is None else int(seq),
            precision=values.get("precision"),
            device=device or item.device,
            synthetic=bool(item.synthetic or meta.get("synthetic", False)),
            untraced_latency=dict(untraced) if isinstance(untraced, Mapping) else None,
            sources=sources,
            evidence=evidence,
            uncertain=uncertain,
            inference_warnings=(*warnings, *item.notes),
        )

    def inferred(self, key: str) -> bool:
        """Whether ``key`` (runtime, batch_size, seq_len, precision) was inferred (content or file name, sure or
        not)."""
        from tracekit.analyzers.identify import INFERRED_SOURCES

        return self.sources.get(key) in INFERRED_SOURCES

    @property
    def runtime_label(self) -> str | None:
        """The runtime as shown: ``"onnx"``, ``"onnx (inferred)"`` (from the content), ``"onnx (file name)"``."""
        from tracekit.analyzers.identify import FROM_CONTENT, FROM_NAME

        if self.runtime is None:
            return None
        tag = {FROM_CONTENT: " (inferred)", FROM_NAME: " (file name)"}.get(
            self.sources.get("runtime", ""), ""
        )
        return self.runtime + tag

    @property
    def untraced_latency_ms(self) -> float | None:
        """Mean untraced latency (ms), or None."""
        mean = (self.untraced_latency or {}).get("mean")
        return None if mean is None else float(mean)

    @property
    def label(self) -> str:
        """``runtime b1 s128`` (the run directory and file name when the runtime is unknown)."""
        return config_label(self.runtime_label, self.batch_size, self.seq_len, self.path)

    def to_json(self) -> dict[str, Any]:
        """The ``config`` object of ``tracekit analyze --format json`` (without the path: the document's
        ``trace`` object names the file)."""
        return {
            "profiler": self.profiler,
            "runtime": self.runtime,
            "model": self.model,
            "batch_size": self.batch_size,
            "seq_len": self.seq_len,
            "precision": self.precision,
            "device": self.device,
            "synthetic": self.synthetic,
            "untraced_latency_ms": None if self.untraced_latency is None else dict(self.untraced_latency),
            "sources": dict(self.sources),
            "evidence": dict(self.evidence),
            "uncertain": {k: list(v) for k, v in self.uncertain.items()},
            "inference_warnings": list(self.inference_warnings),
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], path: str | Path) -> TraceConfig:
        """The inverse of :meth:`to_json` (``path``: the trace's)."""
        return cls(
            path=Path(path),
            profiler=doc.get("profiler"),
            runtime=doc.get("runtime"),
            model=doc.get("model"),
            batch_size=doc.get("batch_size"),
            seq_len=doc.get("seq_len"),
            precision=doc.get("precision"),
            device=doc.get("device"),
            synthetic=bool(doc.get("synthetic", False)),
            untraced_latency=doc.get("untraced_latency_ms"),
            sources=dict(doc.get("sources") or {}),
            evidence=dict(doc.get("evidence") or {}),
            uncertain={k: tuple(v) for k, v in (doc.get("uncertain") or {}).items()},
            inference_warnings=tuple(doc.get("inference_warnings") or ()),
        )


def config_label(runtime_label: str | None, batch_size: int | None, seq_len: int | None, path: Path) -> str:
    """``runtime b1 s128`` (the run directory and file name when the runtime is unknown): the one label of a
    configuration, in tables, reports and warnings."""
    path = Path(path)
    if runtime_label is None:
        parts = [f"{path.parent.name}/{path.name}" if path.parent.name else path.name]
    else:
        parts = [runtime_label]
    if batch_size is not None:
        parts.append(f"b{batch_size}")
    if seq_len is not None:
        parts.append(f"s{seq_len}")
    return " ".join(parts)


#: Start of the note that says which configuration values were inferred (the table shows them in its legend).
INFERRED_NOTE = "not stated by run.json or sidecar metadata, inferred: "


def inference_notes(config: TraceConfig) -> list[str]:
    """One line naming the inferred values, their source and evidence (none when nothing was inferred): so
    that ``report``, ``compare`` and ``analyze`` say it where they list a trace's warnings."""
    said = []
    for key in INFERABLE:
        if not (config.inferred(key) and key in config.evidence):
            continue
        value = getattr(config, key)
        shown = config.sources[key] if value is None else f"{value} {config.sources[key]}"
        mark = " (uncertain)" if value is not None and key in config.uncertain else ""
        said.append(f"{key.replace('_', ' ')} {shown}{mark} ({config.evidence[key]})")
    return [INFERRED_NOTE + "; ".join(said)] if said else []
