"""Readers: one module per trace format, each turning a file into a :class:`tracekit.model.Trace`.

The format is detected from the file's content, not its extension. Readers know formats and nothing of
metrics. Every reader opens its input read-only and raises :class:`tracekit.errors.TraceFormatError`
(naming the file and the problem) on damaged or foreign input.
"""

from __future__ import annotations

import importlib
import json
import re
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracekit import progress
from tracekit.errors import TraceFormatError
from tracekit.io import is_stream, peek_input, register_input
from tracekit.readers.memory import program_allocator  # noqa: F401 (the program's allocator setting)

if TYPE_CHECKING:
    from tracekit.model import FrameSpec, Trace

#: the first bytes of every SQLite 3 database file (the package stays free of polars until a reader loads:
#: the Kineto decoding worker imports it)
SQLITE_MAGIC = b"SQLite format 3\x00"

#: format name -> module under tracekit.readers exposing ``read(path: Path) -> Trace``
READERS: dict[str, str] = {
    "nsys-sqlite": "nsys_sqlite",
    "nsys-rep": "nsys_report",
    "kineto": "kineto",
    "ort": "ort",
    "ncu-csv": "ncu",
    "ncu-rep": "ncu",
}

GZIP_MAGIC = b"\x1f\x8b"
#: how the files of XLA's profiler (JAX's ``jax.profiler.trace``, TensorFlow's, torch_xla's) end: protobuf
#: XSpace, which tracekit does not read (their JSON export is named by the Kineto reader:
#: :data:`tracekit.readers.kineto.XLA_PROCESS_NAME`)
XPLANE_SUFFIX = ".xplane.pb"
#: the first bytes of an Nsight Systems report (``.nsys-rep``, and the older ``.qdrep``)
NSYS_REPORT_MAGIC = b"NVIDIA Tegra Profiler Report"


#: bytes of the input (compressed or not) that format detection sniffs
SNIFF_BYTES = 1 << 17
#: inflated bytes of a gzipped input that format detection looks at
SNIFF_TEXT = 1 << 16


def _json_head(path: Path, head: bytes) -> str:
    """The first few KB of a (possibly gzipped) JSON input, as text, for sniffing: in the encoding JSON text
    is read in (UTF-8, or UTF-16/32 as ``json.loads`` detects it, e.g. a trace saved by PowerShell). Only
    :data:`SNIFF_BYTES` of the input are read (a stream keeps them for its reader), and at most
    :data:`SNIFF_TEXT` bytes are inflated from them."""
    raw = peek_input(path, SNIFF_BYTES)
    if head.startswith(GZIP_MAGIC):
        try:
            raw = zlib.decompressobj(wbits=31).decompress(raw, SNIFF_TEXT)
        except zlib.error as exc:
            raise TraceFormatError(f"damaged gzip file ({exc})", path) from exc
        if raw.startswith(GZIP_MAGIC + b"\x08"):  # (deflate, the only method gzip writes)
            raise TraceFormatError(
                "gzipped twice (the gzip file holds another gzip file): inflate it once (gzip -dc FILE > "
                "NEW.gz) and give tracekit what it holds",
                path,
            )
    else:
        raw = raw[:SNIFF_TEXT]
    return raw.decode(json.detect_encoding(raw[:4]), "replace")


def holds_no_trace(path: str | Path) -> bool:
    """Whether ``path`` is plainly a JSON document that no reader reads (a run's settings, a tool's results):
    the whole file (at most :data:`SNIFF_BYTES`, inflated to at most :data:`SNIFF_TEXT`) decodes as JSON, and
    it is an object without ``traceEvents``, an array whose items are not all events (objects with ``ph``
    or ``cat``), or a bare value. False for everything else, a damaged or truncated trace included, which
    its reader then names in one line; nothing larger is judged (a folder of large traces is not read
    twice)."""
    path = Path(path)
    try:
        if is_stream(path) or path.stat().st_size > SNIFF_BYTES:
            return False
        raw = path.read_bytes()
        if raw.startswith(GZIP_MAGIC):
            inflater = zlib.decompressobj(wbits=31)
            raw = inflater.decompress(raw, SNIFF_TEXT)
            if not inflater.eof or inflater.unconsumed_tail:
                return False
        doc = json.loads(raw)
    except (OSError, zlib.error, ValueError, RecursionError):
        return False
    if isinstance(doc, dict):
        return "traceEvents" not in doc
    if isinstance(doc, list):
        # an empty array may be a profile that recorded nothing: its reader says so
        return not all(isinstance(e, dict) and ("ph" in e or "cat" in e) for e in doc)
    return True


#: formats read with random access (by SQLite or Nsight Compute's own module): never from a stream
RANDOM_ACCESS: frozenset[str] = frozenset({"nsys-sqlite", "nsys-rep", "ncu-rep"})
RANDOM_ACCESS_NAMES = {
    "nsys-sqlite": "an SQLite file",
    "nsys-rep": "an Nsight Systems report",
    "ncu-rep": "a .ncu-rep report",
}


def detect_format(path: str | Path) -> str:
    """Name the trace format of ``path`` from its content. Raises TraceFormatError when unknown, or when a
    pipe holds a format that needs random access (SQLite, ``.ncu-rep``)."""
    fmt = _detect_format(Path(path))
    if fmt in RANDOM_ACCESS and is_stream(path):
        raise TraceFormatError(
            f"{RANDOM_ACCESS_NAMES[fmt]} needs random access, which a pipe "
            "cannot give: save it to a file first",
            path,
        )
    return fmt


#: what marks an ONNX Runtime profile in its head: an event of category Session or Node, however the
#: writer spaces around the colon (ORT writes ``"cat" : "Node"``; Python's json.dumps, jq and json.tool
#: write ``"cat": "Node"``), or one of ORT's own event names
ORT_HEAD = re.compile(r'"cat"\s*:\s*"(?:Session|Node)"|"model_run"|"model_loading')


#: an ONNX Runtime category in a JSON object's head, and categories only Kineto writes: ORT events wrapped in a
#: ``{"traceEvents": [...]}`` object (a tool's wrapping, which the ORT reader takes) are told from a Kineto trace
ORT_CATEGORY = re.compile(r'"cat"\s*:\s*"(?:Session|Node)"')
KINETO_CATEGORY = re.compile(
    r'"cat"\s*:\s*"(?:cpu_op|kernel|cuda_runtime|cuda_driver|user_annotation|gpu_user_annotation|python_function|'
    r'gpu_memcpy|gpu_memset|ac2g|Operator|Runtime|Memcpy|Memset|Trace)"|"schemaVersion"|"deviceProperties"'
)


def _looks_like_ort(text_head: str) -> bool:
    """Whether the head of a JSON array (:func:`_json_head`) holds an ONNX Runtime event (:data:`ORT_HEAD`)
    anywhere: a profile whose first events are Nodes (re-saved, reordered, its session events dropped) is
    still ORT. One regular-expression search of the head."""
    return ORT_HEAD.search(text_head) is not None


#: how nvprof's CSV output begins: its log lines (``==4242== NVPROF is profiling process ...``; ncu's are
#: ``==PROF==``), or the header of its summary (``"Type","Time(%)"``) or GPU trace (``"Start","Duration"``)
NVPROF_HEAD = re.compile(r'==\d+== |"Type","Time\(%\)"|"Start","Duration","Grid X"')


#: the head of an Nsight Systems capture stream (``.qdstrm``) that was never imported into a report
QDSTRM_MAGIC = b"NVIDIA Nsight Systems Stream"


#: the report formats a suffix names, when the content is no other format tracekit reads (:func:`_detect_format`)
REPORT_SUFFIXES = {
    ".nsys-rep": "nsys-rep",
    ".qdrep": "nsys-rep",
    ".ncu-rep": "ncu-rep",
    ".ncu-repz": "ncu-rep",
}


def _tracekit_settings(path: Path, text_head: str) -> str | None:
    """The one line for a JSON file of tracekit's own settings given as a trace (a run folder's ``run.json``, a
    trace's sidecar ``.meta.json``, a synthetic trace's ``.truth.json``), which would otherwise read as a
    Kineto trace without ``traceEvents``; None for anything else. Only a file whose whole text is in the sniffed
    head (``text_head``: settings files are a few KB) is judged."""
    if "traceEvents" in text_head:
        return None
    try:
        doc = json.loads(text_head)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    from tracekit.runs import RUN_FILE

    name = path.name.removesuffix(".gz")
    if isinstance(doc.get("configs"), list) and (
        name == RUN_FILE or "profilers" in doc or "tracekit_version" in doc
    ):
        folder = (
            "the folder that holds it (tracekit analyze DIR)"  # read from a pipe: its folder is not known
            if is_stream(path)
            else f"the folder (tracekit analyze {path.parent})"
        )
        return f"a tracekit {RUN_FILE} (settings), not a trace: pass {folder}"
    if name.endswith(".meta.json") and any(k in doc for k in ("profiler", "made_by", "runtime")):
        return "a tracekit sidecar .meta.json (what the run states of the trace beside it), not a trace: pass the trace"
    if name.endswith(".truth.json") and any(k in doc for k in ("definitions", "iterations", "made_by")):
        return (
            "the ground truth of a synthetic trace (tracekit simulate's .truth.json), not a trace: pass the trace "
            "beside it"
        )
    return None


#: what ``tracekit analyze --timeline`` writes at the head of its file (its ``otherData`` comes first)
TIMELINE_MADE_BY = re.compile(r'"made_by"\s*:\s*"tracekit analyze --timeline"')
TIMELINE_TRACE = re.compile(r'"trace"\s*:\s*("(?:[^"\\]|\\.)*")')


def _tracekit_timeline(text_head: str) -> str | None:
    """The one line for tracekit's own ``--timeline`` output given as a trace: its rows are the analysis' view
    of a trace (iterations, idle pieces, operators laid out for Perfetto), which would otherwise read as a
    Kineto CPU trace and get a verdict of its own; None for anything else."""
    if TIMELINE_MADE_BY.search(text_head) is None:
        return None
    source = TIMELINE_TRACE.search(text_head)
    try:
        trace = json.loads(source.group(1)) if source else ""
    except ValueError:
        trace = ""
    made_from = f" ({trace})" if isinstance(trace, str) and trace else ""
    return (
        "tracekit's own --timeline output (a view of an analysis, for ui.perfetto.dev), not a trace: analyze "
        f"the trace it was made from{made_from}"
    )


def _detect_format(path: Path) -> str:
    if not path.exists():
        if path.is_symlink():
            from tracekit.inputs import missing

            raise TraceFormatError(missing(path), path)
        raise TraceFormatError("no such file", path)
    if path.is_dir():
        raise TraceFormatError("is a directory, not a trace file", path)
    head = peek_input(path, 64)
    if not head:
        raise TraceFormatError("empty file", path)
    if head.startswith(SQLITE_MAGIC):
        return "nsys-sqlite"
    if head.startswith(NSYS_REPORT_MAGIC):
        return "nsys-rep"  # exported by the installed nsys when read (:mod:`tracekit.readers.nsys_report`)
    named = REPORT_SUFFIXES.get(path.suffix)
    if named is not None:
        # a report's suffix on what is plainly another format (a JSON trace or a CSV renamed, gzipped or not)
        # is read by its content; anything else goes to the report's reader, which says what is wrong
        return _by_content(path, head, named)
    return _by_content(path, head)


def _by_content(path: Path, head: bytes, named: str | None = None) -> str:
    """The format of ``path`` (whose first bytes are ``head``) from its text: JSON (ORT or Kineto), an ncu CSV,
    a gzipped SQLite file. ``named``: the format its suffix names, returned when the text is none of these
    (TraceFormatError otherwise)."""
    if named is None and (QDSTRM_MAGIC in head or path.suffix == ".qdstrm"):
        raise TraceFormatError(
            "an Nsight Systems capture stream (.qdstrm) that nsys did not import into a report (its importer "
            "was missing or failed): import it with QdstrmImporter -i FILE (in nsys's host folder), then give "
            "tracekit the .nsys-rep, or its SQLite export (nsys export --type sqlite)",
            path,
        )
    if named is None and path.name.endswith(XPLANE_SUFFIX):  # a protobuf's name says what it is
        raise TraceFormatError(
            "a JAX/TensorFlow XPlane profile (protobuf, from jax.profiler or TensorFlow's profiler), not a "
            "torch.profiler trace: tracekit reads torch.profiler/Kineto traces (and Nsight Systems, ONNX Runtime "
            "and Nsight Compute ones); for a JAX or TensorFlow program, profile it with nsys (nsys profile -t "
            "cuda,nvtx)",
            path,
        )
    if named is not None and not head.startswith(GZIP_MAGIC):
        first = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
        if first not in (b"{", b"[", b'"', b"I", b"="):  # not JSON, nor an ncu CSV or its log
            return named  # a binary report (or what its reader will call damaged): nothing more to sniff
    raw_head = _json_head(path, head)
    if raw_head.startswith(SQLITE_MAGIC.decode()):
        return "nsys-sqlite"  # gzipped (``x.sqlite.gz``): inflated to a temporary file when read
    text_head = raw_head.lstrip("\ufeff \t\r\n")
    if text_head.startswith("{") or text_head.startswith("["):
        # ORT profiles are a JSON list of events with cat Session/Node; Kineto is a dict with traceEvents.
        if text_head.startswith("[") and _looks_like_ort(text_head):
            return "ort"
        if ORT_CATEGORY.search(text_head) and not KINETO_CATEGORY.search(text_head):
            return "ort"  # ORT's events in a {"traceEvents": [...]} object
        if text_head.startswith("{"):
            settings = _tracekit_settings(path, text_head) or _tracekit_timeline(text_head)
            if settings is not None:
                raise TraceFormatError(settings, path)
        return "kineto"
    if NVPROF_HEAD.match(text_head):
        raise TraceFormatError(
            "an nvprof CSV (its ==PID== lines or its summary / GPU-trace header), not an Nsight Compute CSV: "
            "tracekit does not read nvprof's output; profile with nsys (nsys profile -t cuda,nvtx, then nsys export "
            "--type sqlite), or ncu --csv for per-kernel metrics",
            path,
        )
    if (
        # ncu quotes every field; a CSV re-saved by pandas or Excel not (nor with its commas: the reader names
        # a ";" or tab separator)
        text_head.startswith(('"ID"', "ID,", "ID;", "ID\t"))
        or text_head.startswith("==PROF==")
        or '"Kernel Name"' in text_head[:4096]
        or ",Kernel Name," in text_head[:4096]
    ):
        return "ncu-csv"
    if named is not None:
        return named
    raise TraceFormatError(
        "not a trace tracekit can read (expected Nsight Systems SQLite, Kineto JSON, ORT profile JSON or ncu CSV)",
        path,
    )


#: Reader modules whose ``read`` takes ``frames`` (see :func:`read_trace`); the others read everything.
READS_FRAMES: frozenset[str] = frozenset({"nsys_sqlite", "nsys_report", "kineto"})


def _parameters(function: object) -> list[str]:
    """The parameter names of ``function`` (``inspect`` is imported here: it is slow to import, and the
    package must stay light for the Kineto decoding workers)."""
    import inspect

    return list(inspect.signature(function).parameters)  # type: ignore[arg-type]


#: SQLite exports up to this size get huge pages for their frames (:func:`begin_reading`): fewer page faults
#: (about half at 10^6 kernels, a 140 MB export), a few percent of the run; above it the peak memory matters
#: more (+60 MB at 10^7 kernels, measured).
HUGE_PAGES_MAX_SQLITE_BYTES = 512 << 20


def begin_reading(path: str | Path, fmt: str | None = None) -> bool:
    """Let the reader of ``path`` start now, while the caller loads the analysis (True when it did): a large
    Kineto file is decoded by worker processes forked before polars loads (:mod:`tracekit.readers.kineto_worker`,
    with huge pages for the frames built from their batches: :func:`tracekit.readers.memory.use_huge_pages`);
    an SQLite export up to :data:`HUGE_PAGES_MAX_SQLITE_BYTES` gets huge pages too; other formats have nothing
    to begin. :func:`read_trace` picks up what was begun. Never raises: the read reports any problem with the
    file."""
    if fmt == "nsys-sqlite":
        from tracekit.readers.memory import use_huge_pages

        try:
            small = Path(path).stat().st_size <= HUGE_PAGES_MAX_SQLITE_BYTES
        except OSError:
            return False
        if small:
            use_huge_pages()
        return small
    if (fmt or "kineto") != "kineto":
        return False
    from tracekit.readers import kineto_worker

    if kineto_worker.prefetch(path, fmt):
        from tracekit.readers.memory import use_huge_pages

        use_huge_pages()
        return True
    return False


def read_trace(
    path: str | Path,
    frames: FrameSpec = None,
    fmt: str | None = None,
    sidecar: Mapping[str, Any] | None = None,
) -> Trace:
    """Read any supported trace into a normalized Trace; what its run states (the sidecar ``.meta.json``) goes
    into ``meta`` by the one precedence of :mod:`tracekit.inputs` (:func:`tracekit.inputs.merge_meta`:
    configuration keys from the run, measured keys from the trace).

    ``frames`` says what the caller needs (:data:`tracekit.model.FrameSpec`: None = everything, frame names,
    or {frame: columns}); readers that can skip work use it (Nsight Systems SQLite: the GPU-metrics table and
    unneeded columns of the large tables), the others read everything. What is skipped stays empty or null.
    ``fmt``: the format when already detected (:class:`tracekit.inputs.TraceInput` detects it once);
    ``sidecar``: the sidecar when already read (None: read it here).

    On a terminal, a progress row "reading NAME" is shown on standard error while the file is read
    (:mod:`tracekit.progress`; nothing when output is not a terminal). A reader whose ``read`` takes a
    ``progress`` argument gets :func:`tracekit.progress.report` (``(stage, fraction)``) when it is shown.
    While the file is read, numpy (which the analysis needs next) is imported on a thread
    (:func:`tracekit.readers.memory.warm_numpy`)."""
    from tracekit import limits
    from tracekit.inputs import load_sidecar_meta, merge_meta
    from tracekit.model import wanted_frames
    from tracekit.readers.memory import warm_numpy

    path = Path(path)
    register_input(path)
    limits.reading(path)
    wanted = wanted_frames(frames)  # validate the request before any reading
    fmt = fmt or detect_format(path)
    module_name = READERS[fmt]
    module = importlib.import_module(f"tracekit.readers.{module_name}")
    warm_numpy()
    with progress.task(f"reading {path.name}") as task:
        kwargs: dict[str, object] = {}
        if frames is not None and module_name in READS_FRAMES:
            kwargs["frames"] = wanted
        if task.shown and "progress" in _parameters(module.read):
            kwargs["progress"] = progress.report  # a reader's optional (stage, fraction) callback
        trace: Trace = module.read(path, **kwargs)
    trace.meta.setdefault("path", str(path))
    trace.meta.setdefault("format", fmt)
    merge_meta(trace.meta, load_sidecar_meta(path, check=True) if sidecar is None else sidecar)
    return trace
