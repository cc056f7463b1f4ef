"""One decoded chunk of Kineto events -> the columns the reader keeps, as a few strings (no polars).

This is the per-event half of the Kineto reader: it runs where the chunk was decoded (in the reader's own
process, or in the decoding worker of :mod:`tracekit.readers.kineto_worker`), and turns the chunk into a
:data:`WireChunk` whose columns are each one string (or, rarely, one list), so that building the polars
frame (:func:`tracekit.readers.kineto.wire_rows`) is vectorized and the hand-over between processes is a
few large strings. Every step is a C-level pass over the chunk (``map``/``filter``/``join``/msgspec), no
per-event Python code.

Column kinds (``(kind, payload)``):

``"dict"``
    decoded strings that repeat (names, categories): the distinct ones joined by ``\\x1f`` and each
    value's position among them (used when no value is null or holds ``\\x1f``).
``"num"``
    JSON scalar texts joined by ``,`` with no JSON string among them: numbers as written (``Raw`` texts
    such as ``1712195495519689.047`` stay exact) and ``null``.
``"ns"``
    ``ts``/``dur`` values that are all plain decimals with exactly three fraction digits (Kineto's own
    spelling, ``1712195495519689.047``): the values in nanoseconds, i.e. the same texts with the point
    removed (``1712195495519689047``), joined by ``,``: exact, and one integer cast on the frame side.
``"raw"``
    JSON value texts joined by ``\\x1f`` (never inside JSON text): read as
    :func:`tracekit.readers.kineto_decode.columns` reads them (strings unquoted and unescaped, ``-0`` as
    ``0``, ``null`` as null, nested values as their text).
``"list"``
    the Python values themselves (int, str or None), where neither of the above applies.

Chunks decoded as :class:`~tracekit.readers.kineto_json._FastEvent` are reduced here to the complete
events of the categories kept (:data:`~tracekit.readers.kineto_json.KEPT_CATEGORIES`), as a C-level test
on the category name. Chunks decoded as :class:`~tracekit.readers.kineto_json._Event` (other value types)
keep every event with every field as ``"raw"`` text plus a ``ph`` column: the frame side selects the rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import compress, repeat
from operator import is_not, not_, or_
from pathlib import Path
from typing import Any

import msgspec

from tracekit.readers.kineto_json import (
    _NULL,
    _SEP,
    BEGIN_END_MARK,
    BEGIN_END_TYPES,
    COMM_FIELDS,
    COMM_ROWS,
    CPU_OP_CATEGORIES,
    INPUT_FIELDS,
    INT_ARGS,
    KEPT_CATEGORIES,
    PYTHON_CATEGORIES,
    READ_CATEGORIES,
    Progress,
    _FastEvent,
    args_of,
    is_fast,
    join_raw_texts,
)
from tracekit.readers.kineto_stream import stream_events

#: one column: (kind, payload), see the module doc
Column = tuple[str, Any]
#: (events kept, category names of the chunk or None when the frame side is to find them, columns, the
#: ``Input Dims``/``Input type`` columns of the chunk's CPU operators, and the communication args of the
#: events that carry them (:data:`~tracekit.readers.kineto_json.COMM_FIELDS`, with their positions among the
#: chunk's events: :data:`~tracekit.readers.kineto_json.COMM_ROWS`), and a fast chunk's Python tracer events
#: (:data:`PYTHON_EVENTS`: a list of column dicts), or None when it has none of these)
WireChunk = tuple[int, "set[str] | None", dict[str, Column], "dict[str, Column] | None"]

#: the ``inputs`` key of a fast chunk's Python tracer events (:data:`~tracekit.readers.kineto_json.PYTHON_CATEGORIES`):
#: their own few columns (``name``, ``pid``, ``tid``, ``ts``, ``dur``), one dict per decoded chunk, never rows;
#: the frame side reduces them at once (:func:`tracekit.readers.kineto.python_pieces`)
PYTHON_EVENTS = "\x00python"
#: the columns of every chunk, in order (the lenient ones also carry ``ph``)
COLUMNS: tuple[str, ...] = ("cat", "name", "pid", "tid", *INT_ARGS, "a_occupancy", "ts", "dur")
_ENCODE = msgspec.json.Encoder()
_CPU_OP_NAMES = frozenset(CPU_OP_CATEGORIES)


def encode_chunk(chunk: list[Any], positions: dict[str, dict[str, int]] | None = None) -> WireChunk:
    """The :data:`WireChunk` of one decoded chunk (see module doc). ``positions``: per ``"dict"`` column, the
    distinct strings met so far and their positions, shared by the chunks of one batch (:class:`_Batch`);
    without it the chunk's ``"dict"`` payloads are complete."""
    if not is_fast(chunk):
        return _encode_lenient(chunk)
    own = positions is None
    positions = {} if positions is None else positions
    wire = _encode_fast(chunk, positions)
    if own:
        wire = _with_distinct(wire, positions)
    return wire


def wire_chunks(
    path: Path,
    progress: Progress | None = None,
    header: dict[str, Any] | None = None,
    part: tuple[int, int] = (0, 1),
) -> Iterator[WireChunk]:
    """The wire chunks of a Kineto file (or of one part of it, see :func:`stream_events`), decoded in this
    process: decoded chunks (small, so that their objects stay in cache and their memory is reused) are
    encoded and merged into batches of at least :data:`BATCH_ROWS` rows (few, so that the frame side does
    its column work a few times only)."""
    batch = _Batch()
    for chunk in stream_events(path, progress, header=header, part=part):
        yield from batch.add(chunk)
    yield from batch.flush()


#: rows of the wire chunks :func:`wire_chunks` sends (at least; one decoded chunk more at most)
BATCH_ROWS = 1 << 15


class _Batch:
    """Encoded chunks merged into one wire chunk: columns of the same kind joined (``"dict"`` columns share
    their distinct strings), until :data:`BATCH_ROWS` rows or a chunk whose column kinds differ."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.rows = 0
        self.categories: set[str] = set()
        self.kinds: dict[str, str] | None = None
        self.parts: dict[str, list[Any]] = {}
        self.inputs: dict[str, list[str]] = {}
        self.positions: dict[str, dict[str, int]] = {}
        self.python: list[dict[str, Column]] = []
        self.python_rows = 0

    def add(self, chunk: list[Any]) -> Iterator[WireChunk]:
        """Take one decoded chunk; yields the wire chunks that are complete."""
        if not is_fast(chunk):  # every event as text, with a phase column: sent alone
            yield from self.flush()
            yield encode_chunk(chunk)
            return
        wire = encode_chunk(chunk, self.positions)
        kinds = {name: kind for name, (kind, _) in wire[2].items()}
        if wire[0] and self.kinds is not None and kinds != self.kinds:  # not mergeable: a batch of its own
            yield from self.flush()
            wire = encode_chunk(chunk, self.positions)
        self._merge(wire, kinds)
        if self.rows >= BATCH_ROWS or self.python_rows >= BATCH_ROWS:
            yield from self.flush()

    def _merge(self, wire: WireChunk, kinds: dict[str, str]) -> None:
        n, categories, columns, inputs = wire
        self.categories |= categories or set()
        python = (inputs or {}).get(PYTHON_EVENTS)
        if python is not None:
            self.python.append(python[1])
            self.python_rows += python_count(python[1])
            inputs = {k: v for k, v in (inputs or {}).items() if k != PYTHON_EVENTS} or None
        if not n:  # no rows: its categories (and Python events) only
            return
        offset = self.rows
        self.rows += n
        self.kinds = kinds
        for name, (_, payload) in columns.items():
            self.parts.setdefault(name, []).append(payload)
        for name, (_, text) in (inputs or {}).items():
            if name == COMM_ROWS and offset:  # positions in the batch (few: communication kernels only)
                text = ",".join(str(int(i) + offset) for i in text.split(","))
            self.inputs.setdefault(name, []).append(text)

    def flush(self) -> Iterator[WireChunk]:
        """The batch's wire chunk (when it holds rows or category names), and a new batch."""
        python = {PYTHON_EVENTS: ("python", self.python)} if self.python else {}
        if self.kinds is None:
            if self.categories:
                yield 0, self.categories, {}, python or None
            self._reset()
            return
        columns: dict[str, Column] = {}
        for name, kind in self.kinds.items():
            parts = self.parts[name]
            if kind == "list":
                columns[name] = kind, [value for part in parts for value in part]
            elif kind == "raw":
                columns[name] = kind, _SEP.join(parts)
            else:  # "num", and the positions of "dict"
                columns[name] = kind, ",".join(parts)
        inputs = {
            name: ("num", ",".join(texts)) if name == COMM_ROWS else ("raw", _SEP.join(texts))
            for name, texts in self.inputs.items()
        }
        inputs = {**inputs, **python} or None
        yield _with_distinct((self.rows, self.categories, columns, inputs), self.positions)
        self._reset()


def _with_distinct(wire: WireChunk, positions: dict[str, dict[str, int]]) -> WireChunk:
    """``wire`` with each ``"dict"`` column's payload completed: (its distinct strings joined, positions)."""
    n, categories, columns, inputs = wire
    for name, (kind, codes) in list(columns.items()):
        if kind == "dict":
            columns[name] = kind, (_SEP.join(positions[name]), codes)
    return n, categories, columns, inputs


def _encode_fast(chunk: list[Any], positions: dict[str, dict[str, int]]) -> WireChunk:
    categories = set(map(getattr, chunk, repeat("cat"))) - {None}
    if not BEGIN_END_TYPES.isdisjoint(map(type, chunk)):  # (rare: a C-level test otherwise)
        categories |= begin_end_marks(e.cat for e in chunk if type(e) in BEGIN_END_TYPES)
    kept = list(filter(_FastEvent.__instancecheck__, chunk))
    cats = list(map(getattr, kept, repeat("cat")))
    present = set(cats)
    read = {c for c in present - {None} if c.lower() in KEPT_CATEGORIES}
    if read != present:  # some complete events are of categories not read: drop them
        is_read = list(map(read.__contains__, cats))
        kept, cats = list(compress(kept, is_read)), list(compress(cats, is_read))
    python = {c for c in read if c.lower() in PYTHON_CATEGORIES}
    python_events = None
    if python:  # the Python tracer's events: their own few columns, no args
        is_python = list(map(python.__contains__, cats))
        others = list(map(not_, is_python))
        python_events = _python_columns(list(compress(kept, is_python)))
        kept, cats = list(compress(kept, others)), list(compress(cats, others))
    args = args_of(kept)
    columns: dict[str, Column] = {
        "cat": _distinct(cats, positions.setdefault("cat", {})),
        "name": _distinct(list(map(getattr, kept, repeat("name"))), positions.setdefault("name", {})),
        "pid": _values(list(map(getattr, kept, repeat("pid")))),
        "tid": _values(list(map(getattr, kept, repeat("tid")))),
    }
    for field in INT_ARGS:
        columns[field] = _values(list(map(getattr, args, repeat(field), repeat(None))))
    columns["a_occupancy"] = _numbers(list(map(getattr, args, repeat("a_occupancy"), repeat(_NULL))))
    columns["ts"] = _microseconds(list(map(getattr, kept, repeat("ts"))))
    columns["dur"] = _microseconds(list(map(getattr, kept, repeat("dur"))))
    inputs = None
    cpu = {c for c in read if c.lower() in _CPU_OP_NAMES}
    if cpu:  # the Input Dims/Input type texts of the CPU operators, in row order
        cpu_args = args_of(list(compress(kept, map(cpu.__contains__, cats))))
        inputs = {f: _raws(list(map(getattr, cpu_args, repeat(f), repeat(_NULL)))) for f in INPUT_FIELDS}
    comm = _comm(args)
    if comm:
        inputs = {**(inputs or {}), **comm}
    if python_events is not None:
        inputs = {**(inputs or {}), PYTHON_EVENTS: ("python", python_events)}
    return len(kept), categories, columns, inputs


def begin_end_marks(categories: Iterable[str | None]) -> set[str]:
    """The marks (:data:`~tracekit.readers.kineto_json.BEGIN_END_MARK`) of the read categories among
    ``categories``, those of a chunk's begin/end events."""
    return {BEGIN_END_MARK + c for c in set(categories) - {None} if c.lower() in READ_CATEGORIES}


def python_count(columns: dict[str, Column]) -> int:
    """How many events a chunk's Python tracer columns (:func:`_python_columns`) hold."""
    kind, payload = columns["pid"]
    return len(payload) if kind == "list" else payload.count(",") + 1 if payload else 0


def _python_columns(events: list[Any]) -> dict[str, Column]:
    """The columns of a chunk's Python tracer events (fast events): ``name`` (``"dict"``, complete), ``pid``,
    ``tid``, ``ts`` and ``dur``, as the rows' columns are encoded."""
    position: dict[str, int] = {}
    name = _distinct(list(map(getattr, events, repeat("name"))), position)
    if name[0] == "dict":
        name = "dict", (_SEP.join(position), name[1])
    return {
        "name": name,
        "pid": _values(list(map(getattr, events, repeat("pid")))),
        "tid": _values(list(map(getattr, events, repeat("tid")))),
        "ts": _microseconds(list(map(getattr, events, repeat("ts")))),
        "dur": _microseconds(list(map(getattr, events, repeat("dur")))),
    }


def _encode_lenient(chunk: list[Any]) -> WireChunk:
    args = args_of(chunk)
    columns = {
        name: _raws(list(map(getattr, chunk, repeat(name))))
        for name in ("ph", "cat", "name", "pid", "tid", "ts", "dur")
    }
    for field in (*INT_ARGS, "a_occupancy"):
        columns[field] = _raws(list(map(getattr, args, repeat(field), repeat(_NULL))))
    inputs = {f: _raws(list(map(getattr, args, repeat(f), repeat(_NULL)))) for f in INPUT_FIELDS}
    inputs.update(_comm(args) or {})
    return len(chunk), None, columns, inputs


def _comm(args: list[Any]) -> dict[str, Column] | None:
    """The communication args (:data:`~tracekit.readers.kineto_json.COMM_FIELDS`) of the events that carry a
    collective's or a process group's name, as ``"raw"`` texts, and those events' positions among ``args``
    (``"num"``, :data:`~tracekit.readers.kineto_json.COMM_ROWS`); None when no event carries them. C-level
    passes over the chunk: the events that carry none (all but NCCL/RCCL kernels and their calls) cost a
    pointer test each."""
    names = list(map(getattr, args, repeat("a_coll_name"), repeat(_NULL)))
    groups = list(map(getattr, args, repeat("a_pg_name"), repeat(_NULL)))
    present = list(map(or_, map(is_not, names, repeat(_NULL)), map(is_not, groups, repeat(_NULL))))
    if not any(present):
        return None
    rows = list(compress(range(len(args)), present))
    out: dict[str, Column] = {COMM_ROWS: ("num", ",".join(map(str, rows)))}
    for field in COMM_FIELDS:
        out[field] = _raws(list(compress(map(getattr, args, repeat(field), repeat(_NULL)), present)))
    return out


def _distinct(values: list[Any], position: dict[str, int]) -> Column:
    """Decoded strings (or None) that repeat (names, categories): ``"dict"``, each value's position among
    the distinct strings (``position``, extended with the new ones; :func:`_with_distinct` adds them to the
    payload) as ``"num"``-like text, when no value is null or holds the separator; else ``"list"``. The
    frame side gathers the distinct strings, so a name seen a million times is stored once (polars string
    views share the buffer)."""
    new = [value for value in dict.fromkeys(values) if value not in position]
    if None in new or any(_SEP in value for value in new):
        return "list", values
    for value in new:
        position[value] = len(position)
    return "dict", _ENCODE.encode(list(map(position.__getitem__, values)))[1:-1].decode("ascii")


def _values(values: list[Any]) -> Column:
    """Decoded ints, strings or None: ``"num"`` when there is no string among them, else ``"list"``."""
    text = _ENCODE.encode(values)
    if b'"' not in text:
        return "num", text[1:-1].decode("ascii")
    return "list", values


def _numbers(values: list[msgspec.Raw], text: bytes | None = None) -> Column:
    """JSON texts of number fields: ``"num"`` when each is a plain scalar without a string, else ``"raw"``.
    ``text``: the values already joined by commas (``_ENCODE.encode(values)[1:-1]``), when at hand."""
    if text is None:
        text = _ENCODE.encode(values)[1:-1]
    if b'"' not in text and text.count(b",") == max(len(values) - 1, 0):
        try:
            return "num", text.decode("ascii")
        except UnicodeDecodeError:
            pass
    return _raws(values)


#: each digit -> ``d``: the shape of a number text, for :func:`_microseconds`
_DIGIT_SHAPE = bytes.maketrans(b"0123456789", b"d" * 10)


def _microseconds(values: list[msgspec.Raw]) -> Column:
    """JSON texts of ``ts``/``dur`` (microseconds): ``"ns"`` when every value is a plain decimal with
    exactly three fraction digits, else as :func:`_numbers`. The test is a few C-level passes over the
    joined text: its only commas are the n - 1 separators (no array or object holds one), it holds exactly
    one point per value, every point is followed by exactly three digits and then the next value or the
    end, and there is no string; so each value is a JSON value ending in ``.ddd``, i.e. a number
    ``-?digits.ddd``, and removing the points gives its nanoseconds exactly."""
    text = _ENCODE.encode(values)[1:-1]
    n = len(values)
    if n and text.count(b".") == n and text.count(b",") == n - 1 and b'"' not in text:
        shape = text.translate(_DIGIT_SHAPE)
        if shape.endswith(b".ddd") and shape.count(b".ddd,") == n - 1:
            return "ns", text.replace(b".", b"").decode("ascii")
    return _numbers(values, text)


def _raws(values: list[msgspec.Raw]) -> Column:
    """JSON texts of any values, ``"raw"`` (:func:`~tracekit.readers.kineto_json.join_raw_texts`)."""
    return "raw", join_raw_texts(values)
