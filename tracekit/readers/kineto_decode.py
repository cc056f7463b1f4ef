"""Fast, bounded-memory decoding of Kineto chrome-trace JSON into polars text columns.

The file is inflated in one piece (ISA-L's inflater when ``isal`` is installed, else the standard library's), the top level is decoded with every value left as a zero-copy :class:`msgspec.Raw`, and
the ``traceEvents`` array is then decoded in chunks of about :data:`CHUNK_BYTES` bytes of JSON, each into
typed :class:`msgspec.Struct` events whose fields are again ``Raw`` (the exact JSON text of the value: no
float ever rounds a timestamp). Each chunk becomes one polars frame of *text* columns with a single C-level
``join`` per column and one vectorized split, so there is no per-event Python code; the caller reduces each
chunk to the rows it needs before the next one is decoded, which bounds memory to the inflated file plus
the kept rows.

Chunk boundaries: a cut is tried after a ``}`` followed by ``,`` and accepted only when the cut text decodes
as a JSON array of events. A cut inside a string leaves the string unterminated and a cut inside a nested
object leaves a brace open, so only a cut between two top-level events decodes; a failed try moves the cut
back. The whole document has already been validated by the first decode, so a failure there is never the
file's fault.

Column text follows ``json.loads(..., parse_float=str)`` followed by a polars ``String`` cast: JSON strings
unescaped, numbers as their exact text (``-0`` as ``0``, as Python prints the int), ``true``/``false`` as
such, ``null`` or a missing key as null; nested arrays/objects keep their JSON text.
"""

from __future__ import annotations

import gzip
import json
import operator
import re
import zlib
from collections.abc import Callable, Iterator
from itertools import repeat
from pathlib import Path
from typing import Any

import msgspec
import polars as pl

from tracekit.errors import TraceFormatError

_GZIP_ERRORS: tuple[type[BaseException], ...] = (OSError, EOFError, zlib.error)
try:  # ISA-L inflates gzip ~2x faster than zlib (a dependency; the standard library is the fallback)
    from isal.igzip import decompress as _gunzip
    from isal.igzip_lib import IsalError

    _GZIP_ERRORS += (IsalError,)
except ImportError:  # pragma: no cover - depends on the environment
    _gunzip = gzip.decompress

#: progress callback: (phase, fraction done in [0, 1]); phases "read", "decode", "frames"
Progress = Callable[[str, float], None]

GZIP_MAGIC = b"\x1f\x8b"
#: bytes of event JSON decoded per chunk (bounds the Python objects alive at once to ~ this size x 3)
CHUNK_BYTES = 24 * 2**20
#: never valid in JSON text (control characters must be escaped inside strings): safe column separator
_SEP = "\x1f"
_NULL = msgspec.Raw(b"null")
_CUT = re.compile(rb"\}\s*,")
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


class _Args(msgspec.Struct, gc=False):
    """The few ``args`` keys tracekit reads (everything else in ``args`` is skipped by the decoder)."""

    a_correlation: msgspec.Raw = msgspec.field(default=_NULL, name="correlation")
    a_device: msgspec.Raw = msgspec.field(default=_NULL, name="device")
    a_stream: msgspec.Raw = msgspec.field(default=_NULL, name="stream")
    a_occupancy: msgspec.Raw = msgspec.field(default=_NULL, name="est. achieved occupancy %")
    a_graph: msgspec.Raw = msgspec.field(default=_NULL, name="graph id")


class _Event(msgspec.Struct, gc=False):
    """One chrome-trace event: the fields tracekit reads, each as its JSON text."""

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


_Item = _Event | list[Any] | str | int | float | bool | None
_DECODE_EVENTS = msgspec.json.Decoder(list[_Event])
_DECODE_ITEMS = msgspec.json.Decoder(list[_Item])
_DECODE_HEADER = msgspec.json.Decoder(float_hook=str)
_DECODE_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw] | list[msgspec.Raw])


# ------------------------------------------------------------------------------------------- bytes


def read_json_bytes(path: Path, progress: Progress | None = None) -> bytes:
    """The file's JSON text as UTF-8 bytes (inflated when gzipped). TraceFormatError on a damaged file."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise TraceFormatError(f"cannot read ({exc.strerror})", path) from exc
    if raw.startswith(GZIP_MAGIC):
        try:
            raw = _gunzip(raw)
        except _GZIP_ERRORS as exc:
            raise TraceFormatError(f"damaged gzip file ({exc})", path) from exc
    encoding = json.detect_encoding(raw[:4])
    if encoding == "utf-8-sig":
        raw = raw[3:]
    elif encoding != "utf-8":  # UTF-16/32, as json.loads accepts: re-encode (never written by torch)
        try:
            raw = raw.decode(encoding).encode()
        except UnicodeError as exc:
            raise TraceFormatError(f"truncated or invalid JSON: {exc}", path) from exc
    if progress:
        progress("read", 1.0)
    return raw


def split_document(data: bytes, path: Path) -> tuple[dict[str, Any], msgspec.Raw | bytes]:
    """(header, events array text) of a Kineto document: the header holds the decoded top-level values
    except ``traceEvents``; the array is the raw ``[...]`` text. Validates the whole JSON text.

    TraceFormatError on invalid JSON, or when the document is not a dict with a ``traceEvents`` array nor
    a non-empty array of objects each with a ``ph`` key (the chrome "JSON array format")."""
    try:
        top = _DECODE_TOP.decode(data)
    except msgspec.ValidationError:  # valid JSON, but a scalar at the top
        raise TraceFormatError("not a Kineto trace: no traceEvents", path) from None
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise TraceFormatError(f"truncated or invalid JSON: {exc}", path) from exc
    if isinstance(top, dict):
        events = top.pop("traceEvents", None)
        if events is None or not bytes(memoryview(events)[:1]).startswith(b"["):
            raise TraceFormatError("not a Kineto trace: no traceEvents", path)
        # floats as their text, as json.loads(parse_float=str) gave them (tracekit_meta values keep their text)
        header = {key: _DECODE_HEADER.decode(value) for key, value in top.items()}
        return header, events
    # a bare array: Kineto only when every element is an object with "ph"
    if not top or not _all_have_ph(data):
        raise TraceFormatError("not a Kineto trace: no traceEvents", path)
    return {}, data


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


def _cut_after(mv: memoryview, start: int, target: int) -> int | None:
    """Offset just past the last ``}`` followed by ``,`` in mv[start:target] (None when none)."""
    window = _CUT_WINDOW
    while True:
        lo = max(start, target - window)
        last = None
        for match in _CUT.finditer(mv, lo, target):
            last = match
        if last is not None:
            return last.start() + 1
        if lo == start:
            return None
        window *= 2


def _next_event_start(mv: memoryview, cut: int) -> int:
    """Offset of the first byte after the comma that follows the cut."""
    match = _CUT.match(mv, cut - 1)
    assert match is not None
    return match.end()


def event_chunks(events: msgspec.Raw | bytes, progress: Progress | None = None) -> Iterator[list[_Event]]:
    """Decode the events array text in chunks of about :data:`CHUNK_BYTES`: each a list of events (array
    elements that are not objects are dropped, as before)."""
    mv = memoryview(events)
    total = len(mv)
    start = 1  # past "["
    while start < total:
        target = start + CHUNK_BYTES
        chunk: list[_Event] | None = None
        end = total
        if target < total - 1:
            hi = target
            while chunk is None:
                cut = _cut_after(mv, start, hi)
                if cut is None:
                    break  # no cut possible before target: decode up to the end
                chunk = _decode_chunk(b"".join((b"[", mv[start:cut], b"]")))
                if chunk is not None:
                    end = _next_event_start(mv, cut)
                else:
                    hi = cut - 1  # the cut was inside a string or a nested object: move back
        if chunk is None:
            chunk = _decode_chunk(b"".join((b"[", mv[start:])))
            end = total
            if chunk is None:  # cannot happen: the document was validated
                raise ValueError("events array does not decode")
        start = end
        if progress:
            progress("decode", min(1.0, start / total))
        yield chunk


def _decode_chunk(text: bytes) -> list[_Event] | None:
    """Events of one array text; None when the text is not a JSON array (a bad cut)."""
    try:
        return _DECODE_EVENTS.decode(text)
    except msgspec.ValidationError:
        # some element is not an object: keep the objects only
        items = _DECODE_ITEMS.decode(text)
        return list(filter(_Event.__instancecheck__, items))
    except msgspec.DecodeError:
        return None


# ------------------------------------------------------------------------------------------ frames


def _raw_texts(values: list[msgspec.Raw]) -> pl.Series:
    """JSON texts -> one String series of those texts, in one join and one vectorized split."""
    blob = _SEP.encode().join(values).decode("utf-8")
    texts = pl.Series([blob]).str.split(_SEP).explode()
    if texts.len() != len(values):  # a separator inside a value: impossible in valid JSON, but be sure
        texts = pl.Series([bytes(v).decode("utf-8") for v in values], dtype=pl.String)
    return texts


def _json_scalar_text(texts: pl.Series) -> pl.Series:
    """JSON value texts -> the value as text: strings unescaped, ``null`` -> null, ``-0`` -> ``0``."""
    frame = pl.DataFrame({"t": texts})
    is_str = pl.col("t").str.starts_with('"')
    escaped = is_str & pl.col("t").str.contains("\\", literal=True)
    out = frame.select(
        v=pl.when(is_str)
        .then(pl.col("t").str.slice(1, pl.col("t").str.len_chars() - 2))
        .when(pl.col("t") == "null")
        .then(None)
        .when(pl.col("t") == "-0")
        .then(pl.lit("0"))
        .otherwise(pl.col("t")),
        escaped=escaped,
    )
    values = out.get_column("v")
    mask = out.get_column("escaped")
    if mask.any():
        idx = mask.arg_true()
        decoded = texts.gather(idx).str.json_decode(pl.String)
        values = values.scatter(idx, decoded)
    return values


def chunk_frame(events: list[_Event]) -> pl.DataFrame:
    """One chunk of events as text columns (:data:`EVENT_FIELDS`, then the ``a_*`` args columns)."""
    data: dict[str, pl.Series] = {}
    for name in EVENT_FIELDS:
        raws = list(map(getattr, events, repeat(name)))
        data[name] = _json_scalar_text(_raw_texts(raws)).alias(name)
    args = list(map(getattr, events, repeat("args")))
    for column in ARG_FIELDS:
        raws = list(map(getattr, args, repeat(column), repeat(_NULL)))
        data[column] = _json_scalar_text(_raw_texts(raws)).alias(column)
    return pl.DataFrame(data)
