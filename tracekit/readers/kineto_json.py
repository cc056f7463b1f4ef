"""Kineto chrome-trace JSON at the msgspec level (no polars): the event types, the chunk decoding and the
whole-document helpers. Imported by the decoding worker process
(:mod:`tracekit.readers.kineto_wire`), which must start fast and never load polars.

The ``traceEvents`` array is decoded in chunks of about :data:`CHUNK_BYTES` bytes of JSON, each into typed
:class:`msgspec.Struct` events whose number fields are :class:`msgspec.Raw` (the exact JSON text of the
value: no float ever rounds a timestamp): :class:`_FastEvent` (events as Kineto writes them, typed by
phase) or, when some value has another type, :class:`_Event` (every field as JSON text).

Chunk boundaries: a cut is tried after a ``}`` followed by ``,`` and ``{"`` and accepted only when the cut
text decodes as a JSON array of events. A cut inside a string leaves the string unterminated and a cut
inside a nested object leaves a brace open, so only a cut between two top-level events decodes; a failed
try moves the cut back.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Iterator
from itertools import repeat
from pathlib import Path
from typing import Any, Union

import msgspec

from tracekit.errors import TraceFormatError
from tracekit.io import read_inflated

#: progress callback: (phase, fraction done in [0, 1]); phases "read", "decode", "frames"
Progress = Callable[[str, float], None]
#: how chunks are decoded: False (as :class:`_FastEvent`, else :class:`_Event`), True (always as
#: :class:`_Event`), or a msgspec decoder of a reader's own event type, tried first in the fast one's place
#: (:data:`DECODE_LAUNCHES`)
Lenient = Union[bool, msgspec.json.Decoder]  # noqa: UP007

GZIP_MAGIC = b"\x1f\x8b"
#: bytes of event JSON decoded per chunk (bounds the Python objects alive at once to ~ this size x 3;
#: small, so that they stay in cache and their memory is reused: :mod:`tracekit.readers.kineto_wire` merges
#: the encoded chunks into large batches)
CHUNK_BYTES = 1 << 20
#: never valid in JSON text (control characters must be escaped inside strings): safe column separator
_SEP = "\x1f"
_NULL = msgspec.Raw(b"null")
#: the error for JSON whose arrays/objects nest deeper than the decoders go (msgspec and json.loads raise
#: RecursionError there)
NESTED_TOO_DEEPLY = "truncated or invalid JSON: values nested too deeply to decode"


def join_raw_texts(values: list[msgspec.Raw]) -> str:
    """JSON value texts joined by :data:`_SEP` (which JSON text cannot hold), as one str; bytes that are not
    UTF-8, which msgspec leaves as they are in a raw value, read as U+FFFD."""
    return _SEP.encode().join(values).decode("utf-8", "replace")


#: the end of one event and the start of the next: "}" "," "{" '"' with optional whitespace between
_CUT = re.compile(rb"\}\s*,\s*(\{)\s*\"")
#: how far back from the target a chunk cut is looked for before the window doubles
_CUT_WINDOW = 1 << 16

#: top-level event fields read as text; ``args`` keys read as text (column name -> args key)
EVENT_FIELDS: tuple[str, ...] = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "id")
ARG_FIELDS: dict[str, str] = {
    "a_correlation": "correlation",
    "a_device": "device",
    "a_stream": "stream",
    "a_occupancy": "est. achieved occupancy %",
    "a_graph": "graph id",
}
#: ``args`` keys of kernels read as JSON text by the second pass that reads launch dimensions
#: (:func:`tracekit.readers.kineto._launches`, only when the ``launches`` frame is asked for): never by the
#: first, whose fast decoding skips them (column name -> key; Kineto writes ``"grid": [x, y, z]``)
LAUNCH_FIELDS: dict[str, str] = {"a_grid": "grid", "a_block": "block"}
#: ``args`` keys of CPU operators read as JSON text for ``meta["first_op_inputs"]`` (column name -> key)
INPUT_FIELDS: dict[str, str] = {"a_input_dims": "Input Dims", "a_input_type": "Input type"}
#: ``args`` keys PyTorch writes on a communication kernel (from its ``record_param_comms`` call): the operation
#: (``allreduce``, ``_allgather_base``, ``send``, ``recv``, ``all_to_all``...), the process group's name (the
#: same on every member rank) and its member ranks (text such as ``"[0, 1]"``). Read as JSON text for the
#: events that carry them only (:data:`COMM_ROWS`), never as a column of every event.
COMM_FIELDS: dict[str, str] = {
    "a_coll_name": "Collective name",
    "a_pg_name": "Process Group Name",
    "a_pg_ranks": "Process Group Ranks",
}
#: the wire name of the row positions (in the chunk) of the events that carry :data:`COMM_FIELDS`
COMM_ROWS = "comm_rows"


#: lower-cased category -> ops kind; ``mtia_ccp_events`` are the on-device events of Meta's MTIA accelerator
#: (Kineto's ``MTIA_CCP_EVENTS``, which newer Kineto aliases to ``CONCURRENT_KERNEL``; HTA reads them as
#: kernels too); ``mlu_memcpy``/``mlu_memset`` are Cambricon MLU's copies and sets (torch_mlu's Kineto fork,
#: ``kineto_mlu``, whose kernels are ``kernel`` events: ``MLU_CONCURRENT_KERNEL``), with ``device``, ``stream``
#: and ``correlation`` args as CUDA's
OP_CATEGORIES: dict[str, str] = {
    "kernel": "kernel",
    "mtia_ccp_events": "kernel",
    "gpu_memcpy": "memcpy",
    "memcpy": "memcpy",
    "mlu_memcpy": "memcpy",
    "gpu_memset": "memset",
    "memset": "memset",
    "mlu_memset": "memset",
}
#: lower-cased category -> api kind: CUDA/HIP (``cuda_runtime``, ``Runtime`` in 2021, ``cuda_driver``), Intel XPU
#: (``xpu_runtime``: SYCL/Unified Runtime calls such as ``urEnqueueKernelLaunch``; ``xpu_driver``: Level Zero
#: calls such as ``zeCommandListAppendLaunchKernel``) and out-of-tree PrivateUse1 backends
#: (``privateuse1_runtime``/``privateuse1_driver``), as Kineto's ActivityType names them; their events carry
#: the launch's ``correlation`` in args, as the CUDA ones do
API_CATEGORIES: dict[str, str] = {
    "cuda_runtime": "runtime",
    "runtime": "runtime",
    "cuda_driver": "driver",
    "xpu_runtime": "runtime",
    "xpu_driver": "driver",
    "privateuse1_runtime": "runtime",
    "privateuse1_driver": "driver",
    # the host-side runtimes of other accelerators (MTIA, Gaudi's HPU, Glow), and the accelerator-agnostic
    # ``driver`` of newer Kineto (``runtime`` is above)
    "mtia_runtime": "runtime",
    "hpu_op": "runtime",
    "glow_runtime": "runtime",
    "driver": "driver",
    # Cambricon MLU (torch_mlu's ``kineto_mlu``): CNRT/CNDrv/CNNL calls, the launch's ``correlation`` in args
    "mlu_runtime": "runtime",
}
CPU_OP_CATEGORIES: tuple[str, ...] = ("cpu_op", "operator")
USER_RANGE_CATEGORIES: tuple[str, ...] = ("user_annotation",)
GPU_RANGE_CATEGORIES: tuple[str, ...] = ("gpu_user_annotation",)
#: the 2021 spelling of ``gpu_user_annotation``: libkineto's ``handleGenericActivity`` wrote the GPU-side
#: annotations as ``"cat": "User"``, pid the device, tid ``"stream N user"``, args ``External id`` only (the
#: reader takes only the events of such a tid: :data:`tracekit.readers.kineto.LEGACY_GPU_RANGE_TID`)
LEGACY_GPU_RANGE_CATEGORIES: tuple[str, ...] = ("user",)
FLOW_CATEGORIES: tuple[str, ...] = ("ac2g", "async", "async_cpu_to_gpu")
#: categories of the complete events that end up in a frame (the others are dropped while decoding)
READ_CATEGORIES: tuple[str, ...] = (
    *OP_CATEGORIES,
    *API_CATEGORIES,
    *CPU_OP_CATEGORIES,
    *USER_RANGE_CATEGORIES,
    *GPU_RANGE_CATEGORIES,
    *LEGACY_GPU_RANGE_CATEGORIES,
)
#: the Python tracer's events (torch.profiler ``with_stack=True``): kept as rows only until the frame side has
#: reduced them to each thread's running and blocked time (:func:`tracekit.readers.kineto.python_pieces`)
PYTHON_CATEGORIES: tuple[str, ...] = ("python_function",)
#: categories of the complete events the decoding keeps (the others are dropped while decoding)
KEPT_CATEGORIES: tuple[str, ...] = (*READ_CATEGORIES, *PYTHON_CATEGORIES)
#: ``args`` fields read as integers (the others as text)
INT_ARGS: tuple[str, ...] = ("a_correlation", "a_device", "a_stream", "a_graph")


class _Args(msgspec.Struct, gc=False):
    """The few ``args`` keys tracekit reads (everything else in ``args`` is skipped by the decoder)."""

    a_correlation: msgspec.Raw = msgspec.field(default=_NULL, name="correlation")
    a_device: msgspec.Raw = msgspec.field(default=_NULL, name="device")
    a_stream: msgspec.Raw = msgspec.field(default=_NULL, name="stream")
    a_occupancy: msgspec.Raw = msgspec.field(default=_NULL, name="est. achieved occupancy %")
    a_graph: msgspec.Raw = msgspec.field(default=_NULL, name="graph id")
    a_input_dims: msgspec.Raw = msgspec.field(default=_NULL, name="Input Dims")
    a_input_type: msgspec.Raw = msgspec.field(default=_NULL, name="Input type")
    a_coll_name: msgspec.Raw = msgspec.field(default=_NULL, name="Collective name")
    a_pg_name: msgspec.Raw = msgspec.field(default=_NULL, name="Process Group Name")
    a_pg_ranks: msgspec.Raw = msgspec.field(default=_NULL, name="Process Group Ranks")
    a_grid: msgspec.Raw = msgspec.field(default=_NULL, name="grid")
    a_block: msgspec.Raw = msgspec.field(default=_NULL, name="block")


class _Event(msgspec.Struct, gc=False):
    """One chrome-trace event, any spelling: the fields tracekit reads, each as its JSON text."""

    ph: msgspec.Raw = _NULL
    cat: msgspec.Raw = _NULL
    name: msgspec.Raw = _NULL
    pid: msgspec.Raw = _NULL
    tid: msgspec.Raw = _NULL
    ts: msgspec.Raw = _NULL
    dur: msgspec.Raw = _NULL
    id: msgspec.Raw = _NULL
    # args that are not an object (or absent) read as no args
    args: _Args | list[Any] | str | int | float | bool | None = None


class _FastArgs(msgspec.Struct, gc=False):
    """:class:`_Args` as Kineto writes them (ids as integers or strings), decoded to Python values."""

    a_correlation: int | str | None = msgspec.field(default=None, name="correlation")
    a_device: int | str | None = msgspec.field(default=None, name="device")
    a_stream: int | str | None = msgspec.field(default=None, name="stream")
    a_occupancy: msgspec.Raw = msgspec.field(default=_NULL, name="est. achieved occupancy %")
    a_graph: int | str | None = msgspec.field(default=None, name="graph id")
    a_input_dims: msgspec.Raw = msgspec.field(default=_NULL, name="Input Dims")
    a_input_type: msgspec.Raw = msgspec.field(default=_NULL, name="Input type")
    a_coll_name: msgspec.Raw = msgspec.field(default=_NULL, name="Collective name")
    a_pg_name: msgspec.Raw = msgspec.field(default=_NULL, name="Process Group Name")
    a_pg_ranks: msgspec.Raw = msgspec.field(default=_NULL, name="Process Group Ranks")


class _FastEvent(msgspec.Struct, gc=False, tag_field="ph", tag="X"):
    """A complete event (``ph`` "X") as Kineto writes it: strings, integer or string ids, ``ts``/``dur``
    as JSON text; no ``id`` (flow events are read apart). Events of the other phases decode as
    :data:`_FAST_OTHER` (their category only). A chunk with any other value type, a missing ``ph`` or an
    unknown phase is decoded again as :class:`_Event` (same columns, slower)."""

    cat: str | None = None
    name: str | None = None
    pid: int | str | None = None
    tid: int | str | None = None
    ts: msgspec.Raw = _NULL
    dur: msgspec.Raw = _NULL
    args: _FastArgs | None = None

    @property
    def ph(self) -> str:
        """The event's phase (the union's tag)."""
        return "X"


#: chrome-trace phases other than "X" (the trace event format's list, Kineto's included)
OTHER_PHASES = "BEIiCbneSTpFstfPONDMVvRc()"


def _other_event(phase: str) -> type[msgspec.Struct]:
    """A struct for events of one phase other than "X": only their category is read."""
    return msgspec.defstruct(
        f"_FastPhase{ord(phase)}",
        [("cat", str | None, None)],
        tag_field="ph",
        tag=phase,
        gc=False,
        namespace={"ph": property(lambda self, p=phase: p, doc="The event's phase (the union's tag).")},
    )


_FAST_OTHER: tuple[type[msgspec.Struct], ...] = tuple(_other_event(p) for p in OTHER_PHASES)
#: the phases of begin/end pairs: duration events (``B``/``E``) and async ones (``b``/``e``), which tracekit
#: does not read (Kineto writes complete events; a trace merged from another writer may hold pairs)
BEGIN_END_PHASES = "BEbe"
#: the fast structs of :data:`BEGIN_END_PHASES`' events
BEGIN_END_TYPES: frozenset[type[msgspec.Struct]] = frozenset(
    t for t, p in zip(_FAST_OTHER, OTHER_PHASES, strict=True) if p in BEGIN_END_PHASES
)
#: the prefix of the entries a chunk's category names gain for the read categories some of whose events are
#: begin/end pairs (:data:`BEGIN_END_PHASES`): ``BEGIN_END_MARK + category``; the reader takes them out
BEGIN_END_MARK = "\x00begin/end "


class _LaunchArgs(msgspec.Struct, gc=False):
    """The ``args`` keys the launch-dimension pass reads (:data:`LAUNCH_FIELDS`, and the stream)."""

    a_stream: int | str | None = msgspec.field(default=None, name="stream")
    a_grid: msgspec.Raw = msgspec.field(default=_NULL, name="grid")
    a_block: msgspec.Raw = msgspec.field(default=_NULL, name="block")


class LaunchEvent(msgspec.Struct, gc=False, tag_field="ph", tag="X"):
    """A complete event as the launch-dimension pass reads it (:func:`tracekit.readers.kineto._launches`):
    only what finds a kernel among the ops (category, tid, ts, dur, the stream) and its ``grid``/``block``;
    every other field is skipped by the decoder. A chunk with other value types decodes as :class:`_Event`."""

    cat: str | None = None
    tid: int | str | None = None
    ts: msgspec.Raw = _NULL
    dur: msgspec.Raw = _NULL
    args: _LaunchArgs | None = None

    @property
    def ph(self) -> str:
        """The event's phase (the union's tag)."""
        return "X"


_FAST_TYPES = frozenset({_FastEvent, *_FAST_OTHER})
_Item = _Event | list[Any] | str | int | float | bool | None
_DECODE_FAST = msgspec.json.Decoder(list[Union[(_FastEvent, *_FAST_OTHER)]])  # noqa: UP007
_DECODE_EVENTS = msgspec.json.Decoder(list[_Event])
#: the launch-dimension pass's decoder (a ``lenient`` value: see :data:`Lenient`)
DECODE_LAUNCHES = msgspec.json.Decoder(list[Union[(LaunchEvent, *_FAST_OTHER)]])  # noqa: UP007
_DECODE_ITEMS = msgspec.json.Decoder(list[_Item])
_DECODE_HEADER = msgspec.json.Decoder(float_hook=str)
_DECODE_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw] | list[msgspec.Raw])
#: fields whose typed (fast) value is Raw text, not a Python value
_RAW_FIELDS = frozenset({"ts", "dur", "a_occupancy", *INPUT_FIELDS, *COMM_FIELDS, *LAUNCH_FIELDS})
#: fields that :class:`_FastEvent` decodes as str
_STR_FIELDS = frozenset({"ph", "cat", "name"})


# ------------------------------------------------------------------------------------------- bytes


def read_json_bytes(path: Path, progress: Progress | None = None) -> bytes:
    """The file's JSON text as UTF-8 bytes (inflated when gzipped, the inflated size watched, whitespace
    padding kept as one space: :func:`tracekit.io.read_inflated`; a pipe read once). TraceFormatError on a
    damaged file, LimitError past the inflation limit."""
    raw = normalize_json_bytes(read_inflated(path, json_text=True), path)
    if progress:
        progress("read", 1.0)
    return raw


def normalize_json_bytes(raw: bytes, path: Path) -> bytes:
    """JSON text as UTF-8 bytes without a byte-order mark (UTF-16/32 re-encoded, as json.loads reads them)."""
    encoding = json.detect_encoding(raw[:4])
    if encoding == "utf-8-sig":
        raw = raw[3:]
    elif encoding != "utf-8":  # UTF-16/32, as json.loads accepts: re-encode (never written by torch)
        try:  # a lone surrogate code unit (json.loads keeps it: surrogatepass) as its escape, then read as an
            # escaped one is (:func:`repair_surrogates`: the six characters of its escape)
            raw = raw.decode(encoding, "surrogatepass").encode("utf-8", "backslashreplace")
        except UnicodeError as exc:
            raise TraceFormatError(f"truncated or invalid JSON: {exc}", path) from exc
    return raw


#: the one line for a document whose top level holds ``traceEvents`` twice (RFC 8259: names SHOULD be unique,
#: and readers then differ: JSON.parse and Python's json keep the last, tracekit's streaming reader had read the
#: first without a word, 4 iterations that a JSON reader never sees, or none of them)
TRACE_EVENTS_TWICE = (
    "the document holds the key traceEvents twice at its top level: JSON readers disagree on which array is "
    "the trace (JSON.parse and Python's json keep the last, a streaming reader reads the first), so neither is "
    "read: keep one"
)


def _trace_events_twice(data: bytes) -> bool:
    """Whether the JSON object text ``data`` (valid) names ``traceEvents`` twice at its top level (read with
    Python's json, for the rare document read whole whose text holds the name twice)."""
    last = 0

    def count(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal last
        last = sum(key == "traceEvents" for key, _ in items)
        return {}

    try:  # (every object's pairs are counted as it closes: the top-level object closes last)
        json.loads(data, object_pairs_hook=count)
    except (ValueError, RecursionError):
        return False
    return last > 1


def split_document(data: bytes, path: Path) -> tuple[dict[str, Any], msgspec.Raw | bytes]:
    """(header, events array text) of a Kineto document: the header holds the decoded top-level values
    except ``traceEvents``; the array is the raw ``[...]`` text. Validates the whole JSON text.

    TraceFormatError on invalid JSON, or when the document is not a dict with a ``traceEvents`` array nor
    a non-empty array of objects each with a ``ph`` key (the chrome "JSON array format")."""
    while True:
        try:
            top = _DECODE_TOP.decode(data)
            break
        except msgspec.ValidationError:  # valid JSON, but a scalar at the top
            raise TraceFormatError("not a Kineto trace: no traceEvents", path) from None
        except msgspec.DecodeError as exc:  # a non-finite number reads as null (see _decode_chunk)
            repaired = repair(data, exc)
            if repaired is None:
                raise TraceFormatError(f"truncated or invalid JSON: {exc}", path) from exc
            data = repaired
        except RecursionError:
            raise TraceFormatError(NESTED_TOO_DEEPLY, path) from None
        except UnicodeDecodeError as exc:
            raise TraceFormatError(f"truncated or invalid JSON: {exc}", path) from exc
    if isinstance(top, dict):
        if data.count(b'"traceEvents"') > 1 and _trace_events_twice(data):
            raise TraceFormatError(TRACE_EVENTS_TWICE, path)
        events = top.pop("traceEvents", None)
        if events is None or not bytes(memoryview(events)[:1]).startswith(b"["):
            raise TraceFormatError(f"not a Kineto trace: no traceEvents{_own_output(top)}", path)
        # floats as their text, as json.loads(parse_float=str) gave them (tracekit_meta values keep their text)
        header = {key: decode_header_value(value) for key, value in top.items()}
        return header, events
    # a bare array: Kineto only when every element is an object with "ph"
    if not top:
        raise TraceFormatError(
            "an empty JSON array: no events (an ONNX Runtime profile or chrome trace that recorded nothing)",
            path,
        )
    if not _all_have_ph(data):
        raise TraceFormatError("not a Kineto trace: no traceEvents", path)
    return {}, data


#: Top-level keys that together mark a JSON document tracekit itself wrote (``--format json``), by command.
OWN_OUTPUT_KEYS = (
    ("analyze", {"range_choice", "iterations", "summary"}),
    ("analyze", {"rows", "traces", "spread"}),  # of several traces
    ("table", {"rows", "notes"}),
    ("compare", {"a", "b", "comparisons"}),
)


#: Top-level keys of the report.json that ``tracekit report`` writes into its folder (analyzers/report.py).
REPORT_KEYS = frozenset({"configs", "recommendations", "sweeps", "transition_batch_size"})


def _own_output(top: dict[str, Any]) -> str:
    """``" (...)"`` naming the tracekit command whose ``--format json`` output ``top`` (the document's top-level
    keys) looks like, so that an output given back as a trace is named as such; "" for any other document."""
    if REPORT_KEYS <= top.keys():
        return " (this looks like tracekit report's report.json, not a profiler's trace)"
    for command, keys in OWN_OUTPUT_KEYS:
        if keys <= top.keys():
            return (
                f" (this looks like the output of `tracekit {command} --format json`, not a profiler's trace)"
            )
    if EXECUTION_TRACE_KEYS <= top.keys():
        return (
            " (this looks like a PyTorch execution trace, ExecutionTraceObserver's Chakra JSON: it records "
            "operators and their dependencies, not their times; give the Kineto trace of the same run, "
            "export_chrome_trace's or tensorboard_trace_handler's)"
        )
    return ""


#: Top-level keys of a PyTorch execution trace (``torch.profiler.ExecutionTraceObserver``: schema
#: "1.1.1-chakra.0.0.4" in torch 2.13, with pid, time, start_ts, finish_ts), written beside the Kineto trace
EXECUTION_TRACE_KEYS = frozenset({"schema", "nodes"})


def decode_header_value(value: msgspec.Raw) -> Any:
    """A top-level value of the document, decoded (floats as their text; bytes that are not UTF-8 in its
    strings as U+FFFD)."""
    try:
        return _DECODE_HEADER.decode(value)
    except UnicodeDecodeError:
        return _DECODE_HEADER.decode(bytes(value).decode("utf-8", "replace").encode())


_MISSING = msgspec.Raw(b"")


class _PhProbe(msgspec.Struct, gc=False):
    ph: msgspec.Raw = _MISSING


def _all_have_ph(data: bytes) -> bool:
    """Every element of the array is an object with a ``ph`` key."""
    probe = msgspec.json.decode(data, type=list[_PhProbe | list[Any] | str | int | float | bool | None])
    if set(map(type, probe)) != {_PhProbe}:
        return False
    return not any(map(operator.is_, map(operator.attrgetter("ph"), probe), repeat(_MISSING)))


# ------------------------------------------------------------------------------------------ chunks


def _cut_after(mv: memoryview, start: int, target: int) -> tuple[int, int] | None:
    """(offset just past the ``}``, offset of the next ``{``) of the last event boundary candidate that
    starts in mv[start:target] (None when none)."""
    window = _CUT_WINDOW
    while True:
        lo = max(start, target - window)
        last = None
        for match in _CUT.finditer(mv, lo, target):
            last = match
        if last is not None:
            return last.start() + 1, last.start(1)
        if lo == start:
            return None
        window *= 2


def decodable_cut(
    mv: memoryview, start: int, target: int, lenient: Lenient
) -> tuple[list[Any], int, int] | None:
    """(events of mv[start:cut], cut, offset of the next event) for an event boundary candidate before
    ``target`` whose chunk decodes; None when none does.

    The last candidate before ``target`` is tried first (nearly always the one: Kineto's events hold no
    ``},{"`` inside them). When it does not decode (it is inside an event whose nested values hold objects
    in arrays), the candidates before it are tried one, two, four, ... back, and then between the last
    that failed and the first that decoded by halves: a few decodes whatever the number of candidates
    inside the event (trying each in turn, back from the target, took a decode of the whole chunk per
    nested object)."""
    found = _cut_after(mv, start, target)
    if found is None:
        return None
    chunk = _decode_chunk(b"".join((b"[", mv[start : found[0]], b"]")), lenient)
    if chunk is not None:
        return chunk, found[0], found[1]
    cuts = [(m.start() + 1, m.start(1)) for m in _CUT.finditer(mv, start, found[0] - 1)]
    tried: dict[int, list[Any] | None] = {}

    def attempt(i: int) -> list[Any] | None:
        if i not in tried:
            cut = cuts[i][0]
            tried[i] = _decode_chunk(b"".join((b"[", mv[start:cut], b"]")), lenient)
        return tried[i]

    bad, step, good = len(cuts), 1, -1
    while bad - step >= 0:
        if attempt(bad - step) is not None:
            good = bad - step
            break
        bad, step = bad - step, step * 2
    else:
        if cuts and attempt(0) is not None:
            good = 0
        else:
            return None
    while bad - good > 1:  # a decodable candidate closer to the failed one
        mid = (good + bad) // 2
        if attempt(mid) is not None:
            good = mid
        else:
            bad = mid
    events = tried[good]
    assert events is not None
    return events, cuts[good][0], cuts[good][1]


def event_chunks(
    events: msgspec.Raw | bytes, progress: Progress | None = None, lenient: Lenient = False
) -> Iterator[list[_FastEvent] | list[_Event]]:
    """Decode the events array text in chunks of about :data:`CHUNK_BYTES`: each a list of events (array
    elements that are not objects are dropped, as before). ``lenient``: always as :class:`_Event`."""
    mv = memoryview(events)
    total = len(mv)
    start = 1  # past "["
    while start < total:
        target = start + CHUNK_BYTES
        chunk: list[_FastEvent] | list[_Event] | None = None
        end = total
        if target < total - 1:
            found = decodable_cut(mv, start, target, lenient)
            if found is not None:  # else no cut possible before target: decode up to the end
                chunk, _, end = found
        if chunk is None:
            chunk = _decode_chunk(b"".join((b"[", mv[start:])), lenient)
            end = total
            if chunk is None:  # cannot happen: the document was validated
                raise ValueError("events array does not decode")
        start = end
        if progress:
            progress("decode", min(1.0, start / total))
        yield chunk


def _decode_chunk(text: bytes, lenient: Lenient = False) -> list[_FastEvent] | list[_Event] | None:
    """Events of one array text (:class:`_FastEvent`, else :class:`_Event` when some value has another
    type, or always with ``lenient``); None when the text is not a JSON array because of where it was cut:
    its error is at its end (the cut was inside a string or a nested value), or the array closes before
    the error (the text runs past the end of the events array).

    Four spellings that some profilers write and strict JSON lacks are read: a non-finite number
    (:func:`repair_non_finite`) becomes null, a backslash that starts no escape reads as itself
    (:func:`repair_escapes`), an escaped lone UTF-16 surrogate as its escape's text (:func:`repair_surrogates`),
    and a string with bytes that are not UTF-8 gets U+FFFD for them (as most trace viewers show it). Any other error inside the text raises :class:`InvalidJSON`:
    moving the cut back cannot help then."""
    while True:
        try:
            return _decode_events(text, lenient)
        except UnicodeDecodeError:  # a string's bytes are not UTF-8 (outside strings it is a DecodeError)
            text = text.decode("utf-8", "replace").encode()
        except msgspec.DecodeError as exc:
            repaired = repair(text, exc)
            if repaired is not None:
                text = repaired
                continue
            offset = _error_offset(exc)
            if offset is None or offset >= len(text) - 1 or _closes_before(text, offset):
                return None  # a bad cut (or a truncated text)
            raise InvalidJSON(_error_reason(exc), offset) from None


def _decode_events(text: bytes, lenient: Lenient) -> list[_FastEvent] | list[_Event]:
    """:func:`_decode_chunk` of a text, raising msgspec's DecodeError (or UnicodeDecodeError) as it is."""
    if lenient is not True:
        try:
            return (_DECODE_FAST if lenient is False else lenient).decode(text)
        except msgspec.ValidationError:
            pass
    try:
        return _DECODE_EVENTS.decode(text)
    except msgspec.ValidationError:
        # some element is not an object: keep the objects only
        items = _DECODE_ITEMS.decode(text)
        return list(filter(_Event.__instancecheck__, items))


_VALIDATE = msgspec.json.Decoder(msgspec.Raw)


def _closes_before(text: bytes, offset: int) -> bool:
    """Whether the text's value is complete before the error msgspec names at ``offset``: the text up to
    there is one JSON value (validated without building it). msgspec names the byte of most errors, but
    the byte after the first one for trailing characters, so both ends are tried."""
    for end in (offset, offset - 1):
        try:
            _VALIDATE.decode(text[:end])
            return True
        except (msgspec.DecodeError, UnicodeDecodeError):
            pass
    return False


class InvalidJSON(Exception):
    """A chunk's text is not JSON at ``offset`` (bytes into the text decoded), for a reason other than
    where the chunk was cut."""

    def __init__(self, reason: str, offset: int) -> None:
        super().__init__(f"{reason} (byte {offset})")
        self.reason = reason
        self.offset = offset


#: msgspec's DecodeError messages end with the offset of the error, e.g. "invalid character (byte 377)"
_ERROR_AT = re.compile(r"\s*\(byte (\d+)\)$")


def _error_offset(exc: msgspec.DecodeError) -> int | None:
    """The byte offset a msgspec DecodeError names (None when it names none, as for truncated input)."""
    match = _ERROR_AT.search(str(exc))
    return int(match.group(1)) if match else None


def _error_reason(exc: msgspec.DecodeError) -> str:
    """A msgspec DecodeError's message without its offset."""
    return _ERROR_AT.sub("", str(exc))


#: non-finite numbers as C/C++ formatting (``inf``, ``nan``) and Python's json (``Infinity``, ``NaN``) write
#: them; Kineto once wrote ``"memory bandwidth (GB/s)": inf`` for a memcpy of zero duration (kineto#105)
_NON_FINITE = re.compile(rb"-?(?:inf(?:inity)?|nan|Infinity|NaN)(?![0-9A-Za-z_])")


def repair_non_finite(text: bytes, error: msgspec.DecodeError) -> bytes | None:
    """``text`` with the non-finite number where msgspec stopped decoding it (``error``) replaced by
    ``null``, the value that reads as missing, and so every other non-finite number after it outside a
    string; None when there is none where msgspec stopped. The byte the error names is where the token
    starts, one byte after its minus sign, or (for ``nan``, read as a misspelt ``null``) up to four bytes
    after its start, i.e. one past its end. The token must start a value (after ``:``, ``,`` or ``[``), so
    it is outside any string; the text before it decoded, so it holds no other such token.

    The rest of the text is mended in the same call (:func:`_nulls_after`), not one token per decode: a
    trace with a non-finite value in every tenth kernel (a zero-duration memcpy's bandwidth, kineto#105)
    would otherwise decode each 1 MB chunk a hundred times over."""
    offset = _error_offset(error)
    if offset is None:
        return None
    for start in range(offset, max(offset - _NULL_LOOKAHEAD, 0) - 1, -1):
        match = _NON_FINITE.match(text, start)
        if match is None or match.end() + 1 < offset:  # ``nan`` + one byte: one past its end
            continue
        if _before_token(text, start) in _VALUE_STARTS:
            return b"".join((text[:start], b"null", _nulls_after(text[match.end() :])))
    return None


#: msgspec's reasons for a backslash that starts no JSON escape (``\c``; ``\u`` without four hex digits); its
#: untyped and raw decoders, and a typed one skipping a field, say "invalid escaped character" for ``\c``
_BAD_ESCAPES: tuple[str, ...] = (
    "invalid escape character in string",
    "invalid escaped character",
    "invalid character in unicode escape",
)
#: a JSON escape (kept as it is) or a backslash that starts none (group 1: the backslash alone)
_ESCAPE_OR_LONE = re.compile(rb'\\(?:u[0-9a-fA-F]{4}|["\\/bfnrt])|(\\)')


def repair_escapes(text: bytes, error: msgspec.DecodeError) -> bytes | None:
    """``text`` with every backslash that starts no JSON escape doubled, so that it reads as itself, when
    msgspec stopped at such a backslash (``error``); None otherwise (and when nothing changes). torch 2.0 on
    Windows wrote Python paths in ``with_stack`` names unescaped (pytorch#98432:
    ``"torch\\cuda\\__init__.py(219): _lazy_init"``; libkineto's ``sanitizeStrForJSON`` now writes '/').
    Escapes are matched pairwise from the left, so an escaped backslash (two) stays one and a valid escape
    (``\\n``, ``\\u00e9``) keeps its meaning."""
    if not _error_reason(error).endswith(_BAD_ESCAPES):
        return None
    repaired = _ESCAPE_OR_LONE.sub(lambda m: b"\\\\" if m.group(1) else m.group(0), text)
    return repaired if repaired != text else None


#: msgspec's reasons for an escaped UTF-16 surrogate without its other half (``"\\udce9"``; its typed decoders
#: say "unexpected end of hex escape" for a high one followed by no escape)
_SURROGATE_ERRORS: tuple[str, ...] = (
    "invalid utf-16 surrogate pair",
    "unexpected end of escaped utf-16 surrogate pair",
    "unexpected end of hex escape",
)
#: an escaped surrogate pair (kept), a lone escaped surrogate (group 1, after its backslash), or any other escape
#: (kept: a backslash and the byte after it, so that ``\\\\`` pairs up)
_PAIR_OR_LONE_SURROGATE = re.compile(
    rb"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|(u[dD][89a-fA-F][0-9a-fA-F]{2})|.)",
    re.DOTALL,
)


def repair_surrogates(text: bytes, error: msgspec.DecodeError) -> bytes | None:
    """``text`` with every escaped UTF-16 surrogate that is not half of a pair written as the text of its
    escape (``\\udce9`` -> ``\\\\udce9``: the string then holds the six characters ``\\udce9``), when msgspec
    stopped at one (``error``); None otherwise (and when nothing changes).

    Python's json.dump writes such an escape for a str holding a lone surrogate, which is how Python holds a
    file name or argument that is not UTF-8 (``os.fsdecode``'s surrogateescape): a ``with_stack`` path or a
    record_function name taken from one. json.loads and JSON.parse read it; msgspec, and UTF-8 text (polars'
    strings), cannot hold it. Its escape is kept rather than U+FFFD so that two such names stay apart, as
    tracekit's outputs write such a name (backslashreplace) and as the ORT reader reads it."""
    if not _error_reason(error).endswith(_SURROGATE_ERRORS):
        return None
    repaired = _PAIR_OR_LONE_SURROGATE.sub(lambda m: b"\\\\" + m.group(1) if m.group(1) else m.group(0), text)
    return repaired if repaired != text else None


def repair(text: bytes, error: msgspec.DecodeError) -> bytes | None:
    """``text`` mended where msgspec stopped (``error``) for a spelling some profilers write that strict JSON
    lacks (:func:`repair_non_finite`, :func:`repair_escapes`, :func:`repair_surrogates`); None when it is no
    such spelling."""
    return repair_non_finite(text, error) or repair_escapes(text, error) or repair_surrogates(text, error)


#: a JSON string (matched whole, so that nothing inside it is touched) or a non-finite number (group 1)
_STRING_OR_NON_FINITE = re.compile(
    rb'"[^"\\]*(?:\\.[^"\\]*)*"|(?<![0-9A-Za-z_.])(' + _NON_FINITE.pattern + rb")", re.DOTALL
)
#: every non-finite spelling holds one of these (``-Infinity``: ``Inf``); found with ``bytes.find``, which is
#: far faster than a regex search over the whole text
_NON_FINITE_CORES: tuple[bytes, ...] = (b"inf", b"Inf", b"nan", b"NaN")


def _nulls_after(rest: bytes) -> bytes:
    """``rest`` (JSON text that starts outside any string) with every non-finite number outside its strings
    as ``null``.

    Candidates are found by ``bytes.find`` of the spellings' cores and kept when they are a whole token
    that starts a value (after ``:``, ``,`` or ``[``) and lie outside every string: an even number of ``"``
    since the text's start (counted by ``bytes.count``, from one candidate to the next). That count needs a
    text without backslashes (an escaped quote does not end a string); one with a backslash is scanned by
    a regex that steps over strings whole instead (slower; rare in Kineto text). A string left open at the
    end (a chunk cut inside one) may be changed: that text fails to decode at its end whatever is replaced,
    and is cut again from the file's own bytes."""
    starts = sorted(
        {
            hit - 1 if hit and rest[hit - 1] == 0x2D else hit  # the minus sign of -inf, -nan, -Infinity
            for core in _NON_FINITE_CORES
            for hit in _find_all(rest, core)
        }
    )
    if not starts:  # the usual case: nothing more to mend
        return rest
    if b"\\" in rest:
        return _STRING_OR_NON_FINITE.sub(_null_unless_string, rest)
    parts: list[bytes] = []
    copied = counted = quotes = 0
    for start in starts:
        if start < copied or _before_token(rest, start) not in _VALUE_STARTS:  # e.g. ``TensorInfo``
            continue
        match = _NON_FINITE.match(rest, start)
        if match is None:
            continue
        quotes += rest.count(b'"', counted, start)
        counted = start
        if quotes % 2 == 0:
            parts += (rest[copied:start], b"null")
            copied = counted = match.end()
    return b"".join((*parts, rest[copied:]))


#: the bytes after which a value starts: a key's colon, a separating comma, an array's opening bracket
_VALUE_STARTS = frozenset(b":,[")


def _before_token(text: bytes, start: int) -> int:
    """The last byte before ``text[start]`` that is not whitespace (-1 when there is none)."""
    at = start - 1
    while at >= 0 and text[at] in b" \t\r\n":
        at -= 1
    return text[at] if at >= 0 else -1


def _find_all(text: bytes, word: bytes) -> Iterator[int]:
    """Every offset of ``word`` in ``text``."""
    at = text.find(word)
    while at >= 0:
        yield at
        at = text.find(word, at + 1)


def _null_unless_string(match: re.Match[bytes]) -> bytes:
    return b"null" if match.group(1) is not None else match.group(0)


#: how far before msgspec's offset a non-finite token can start (the ``-`` of ``-nan`` plus ``null``'s 4)
_NULL_LOOKAHEAD = 5


def is_fast(events: list[Any]) -> bool:
    """Whether a chunk from :func:`event_chunks` was decoded as :class:`_FastEvent` (else :class:`_Event`)."""
    return bool(events) and type(events[0]) in _FAST_TYPES


def args_of(events: list[Any]) -> list[Any]:
    """The ``args`` value of each event (for :func:`tracekit.readers.kineto_decode.columns` and
    :mod:`tracekit.readers.kineto_wire`)."""
    return list(map(getattr, events, repeat("args")))
