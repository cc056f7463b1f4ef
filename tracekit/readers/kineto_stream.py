"""Streaming decode of a Kineto file: the JSON text is inflated and decoded piece by piece, so that neither
the whole inflated text nor all decoded events are ever held at once (peak memory ~ the frames plus a few
chunks, whatever the file size).

The top level is found without decoding the whole document: the ``"traceEvents": [`` key is accepted
where the text before it, closed with ``}``, decodes as a JSON object (a key inside a string or a nested
object leaves it unterminated or unbalanced). The events array is then cut into chunks of about
:data:`tracekit.readers.kineto_json.CHUNK_BYTES` as in :func:`tracekit.readers.kineto_json.event_chunks`;
a cut is accepted only when the chunk decodes, and when no cut before the target decodes the window grows.
A chunk whose text is invalid before its end (not because of where it was cut) fails at once, with the
one-line error naming the byte of the JSON text (inflated) where it is invalid. At the end of the text, the
array's closing ``]`` is the last one after which the rest of the document (``, "key": value ... }``)
decodes as the remaining top-level keys.

Documents this does not handle (a bare event array, no ``traceEvents`` array in the first
:data:`HEAD_SCAN` bytes, a UTF-16/32 encoding) are read whole by
:func:`tracekit.readers.kineto_json.read_json_bytes` / ``split_document`` instead, which also gives their
errors.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from tracekit import limits
from tracekit.errors import TraceFormatError
from tracekit.io import _only_zeros, collapse_padding, input_size, open_input
from tracekit.limits import InflateGuard, LimitError, format_size
from tracekit.readers import json_value
from tracekit.readers import kineto_json as kd

try:  # ISA-L inflates ~2x faster than zlib (a dependency; the standard library is the fallback)
    from isal import isal_zlib as _zlib
    from isal.isal_zlib import error as _IsalError  # noqa: N812

    _INFLATE_ERRORS: tuple[type[BaseException], ...] = (zlib.error, _IsalError, OSError)
except ImportError:  # pragma: no cover - depends on the environment
    _zlib = zlib
    _INFLATE_ERRORS = (zlib.error, OSError)

#: compressed (or plain) bytes read from the file per step (under a MB of text once inflated)
READ_BYTES = 1 << 16
#: the most text one step inflates (a step of a Kineto file inflates to ~1 MB; a bomb's, to up to 64 MB)
PIECE_TEXT = 4 << 20
#: how far into the text the ``traceEvents`` key is looked for by a regex search; past it, the head is read
#: value by value (:func:`_head_streamed`)
HEAD_SCAN = 1 << 20
#: a chunk window that grows to this size without a cut that decodes: the value at its start is longer than
#: a window (or is whitespace), and is read by :mod:`tracekit.readers.json_value` (:func:`_oversized`)
OVERSIZED_WINDOW = 8 << 20
#: how far past a part's mark its first event boundary is looked for (:func:`_find_from`); none within: no
#: event starts in that part (the part before it reads on)
BOUNDARY_SEARCH = 16 << 20
#: how many ``]`` candidates for the end of the events array are tried before the text is called invalid
END_TRIES = 1000
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
#: a "]" followed by the end of the document or by another top-level key
_END = re.compile(rb"\]\s*(?:\}|,\s*\")")
_DECODE_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_WS = b" \t\r\n"


class _Whole(Exception):
    """The document is to be read whole (see module doc); ``text`` holds what was read so far."""

    def __init__(self, text: bytes) -> None:
        super().__init__("read whole")
        self.text = text


def _pieces(path: Path) -> Iterator[tuple[bytes, float]]:
    """(inflated text piece, fraction of the file read) until the end; TraceFormatError on a damaged or
    truncated gzip stream, LimitError when the inflated text passes its limit (:class:`InflateGuard`,
    watched piece by piece: a piece is at most :data:`PIECE_TEXT` bytes). A pipe is read once
    (:func:`tracekit.io.open_input`); its fraction read is 0 until the end (its size is unknown)."""
    fh = open_input(path)
    size = input_size(path)
    with fh:
        first = fh.read(READ_BYTES)
        if not first.startswith(kd.GZIP_MAGIC):
            guard = None if size is not None else InflateGuard(path, None, compressed=False)
            block, read = first, 0
            while block:
                read += len(block)
                if guard is not None:
                    guard.add(len(block))
                yield block, read / size if size else 0.0
                block = fh.read(READ_BYTES)
            return
        guard = InflateGuard(path, size)
        inflater = _zlib.decompressobj(wbits=31)
        block, read = first, len(first)
        between = False  # after a member and the zero bytes that followed it (as gzip reads them)
        try:
            while block:
                data = block
                if between:  # zero padding after a member runs on, or the next member starts
                    data = data.lstrip(b"\0")
                    if data:
                        _member_follows(data, read - len(data), path)
                        between = False
                        inflater = _zlib.decompressobj(wbits=31)
                while data:
                    out = inflater.decompress(data, PIECE_TEXT)
                    data = inflater.unconsumed_tail
                    # concatenated gzip members, zero bytes after a member skipped (as gzip.decompress reads
                    # them: GzipFile._read_eof)
                    if inflater.eof and inflater.unused_data and not data:
                        data = inflater.unused_data.lstrip(b"\0")
                        if data:
                            _member_follows(data, read - len(data), path)
                            inflater = _zlib.decompressobj(wbits=31)
                        else:
                            between = True
                    if out:
                        guard.add(len(out), read)
                        yield out, read / size if size else 0.0
                block = fh.read(READ_BYTES)
                read += len(block)
        except _INFLATE_ERRORS as exc:
            raise TraceFormatError(f"damaged gzip file ({exc})", path) from exc
        if not inflater.eof:
            raise TraceFormatError(
                "damaged gzip file (Compressed file ended before the end-of-stream marker was reached)", path
            )


def _member_follows(data: bytes, at: int, path: Path) -> None:
    """TraceFormatError unless ``data`` (at byte ``at`` of the file, after a gzip member and any zero bytes
    that followed it) can begin another gzip member: bytes appended to a whole gzip file are said as the
    ORT/ncu/SQLite inflater says them (:func:`tracekit.io._only_zeros`: 'bytes that are not gzip data follow
    its compressed data ...'), not called a stream that ended before its end-of-stream marker."""
    if not kd.GZIP_MAGIC.startswith(data[:2]):
        _only_zeros(data, at, at, path)


class _Text:
    """The inflated text from some offset on: ``buf`` (bytes), filled piece by piece."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.pieces = _pieces(path)
        self.buf = b""
        self.eof = False
        #: fraction of the file read; inflated bytes read; bytes dropped from the front of ``buf``
        self.fraction = 0.0
        self.read = 0
        self.dropped = 0
        #: part marks: share of the file -> the text offset where that share was read (interpolated in the
        #: piece that reached it; -1 until then), the same in every process reading the file
        self.marks: dict[float, int] = {}

    def fill(self, size: int) -> None:
        """Read until ``buf`` holds at least ``size`` bytes or the text ends."""
        parts = [self.buf]
        have = len(self.buf)
        while have < size and not self.eof:
            piece = next(self.pieces, None)
            if piece is None:
                self.eof = True
                break
            parts.append(piece[0])
            have += len(piece[0])
            before, self.read = self.read, self.read + len(piece[0])
            last, self.fraction = self.fraction, piece[1]
            for share, offset in self.marks.items():
                if offset < 0 and self.fraction >= share:  # the text offset where the file's share was read
                    within = (share - last) / max(self.fraction - last, 1e-12)
                    self.marks[share] = before + int(len(piece[0]) * min(1.0, max(0.0, within)))
        if len(parts) > 1:
            self.buf = b"".join(parts)

    def drop(self, pos: int) -> None:
        """Forget ``buf[:pos]``."""
        if pos:
            self.buf = self.buf[pos:]
            self.dropped += pos

    def done(self, pos: int) -> float:
        """Estimated fraction of the text before ``buf[pos]`` (from the share of the file read so far)."""
        total = self.read / max(self.fraction, 1e-9)
        return max(1e-6, min(1.0, (self.dropped + pos) / max(total, 1.0)))

    def rest(self) -> bytes:
        """All the text from ``buf`` on (reads to the end), for a document read whole; a piece that is all
        whitespace is kept as one space (:func:`tracekit.io.collapse_padding`), so padding costs no memory."""
        parts = [self.buf]
        for piece, _ in self.pieces:
            parts.append(collapse_padding(piece))
        self.eof = True
        self.buf = b"".join(parts)
        return self.buf


def _head(text: _Text) -> tuple[dict[str, msgspec.Raw], int]:
    """(top-level values before ``traceEvents``, offset of its ``[`` in ``text.buf``); raises
    :class:`_Whole` for documents read whole."""
    text.fill(READ_BYTES)
    while True:
        buf = text.buf
        if buf[:3] == b"\xef\xbb\xbf":
            buf = text.buf = buf[3:]
        body = buf.lstrip(_WS)
        if not body.startswith(b"{") or json.detect_encoding(buf[:4]) != "utf-8":
            raise _Whole(text.rest())
        opening = len(buf) - len(body)
        for match in _EVENTS_KEY.finditer(buf):
            before = buf[opening : match.start()].rstrip(_WS)
            if before == b"{":
                return {}, match.end() - 1
            if before.endswith(b","):
                head = _decode_object(before[:-1] + b"}")
                if head is None:
                    continue
                if len(before) + 1 > limits.current.max_event:  # (no copy of the head otherwise)
                    check_sizes(before[:-1] + b"}", text.dropped + opening, text.path)
                return head, match.end() - 1
        if text.eof:
            raise _Whole(text.rest())
        if (
            len(buf) > HEAD_SCAN
        ):  # a long head (padding, a huge value, no traceEvents): read it value by value
            return _head_streamed(text, opening)
        text.fill(len(buf) * 2)


def _head_streamed(text: _Text, opening: int) -> tuple[dict[str, msgspec.Raw], int]:
    """:func:`_head` for a head longer than :data:`HEAD_SCAN`: the top-level keys and values are read one by
    one (:func:`tracekit.readers.json_value.read_value`, dropping what is read) until ``"traceEvents": [``;
    the values are their compact copies."""
    path = text.path
    head: dict[str, msgspec.Raw] = {}
    pos = opening + 1
    try:
        while True:
            pos = json_value.skip_ws(text, pos)
            if pos >= len(text.buf):
                raise TraceFormatError("truncated or invalid JSON: the document ends before its events", path)
            byte = text.buf[pos : pos + 1]
            if byte == b"}":
                raise TraceFormatError(f"not a Kineto trace: no traceEvents{kd._own_output(head)}", path)
            if byte == b"," and head:
                pos += 1
                continue
            if byte != b'"':
                raise _invalid_at(text, pos, "expected a key")
            key, pos, _ = json_value.read_value(
                text, pos, limits.current.max_string, limits.current.max_event
            )
            pos = json_value.skip_ws(text, pos)
            if text.buf[pos : pos + 1] != b":":
                raise _invalid_at(text, pos, "expected ':'")
            pos = json_value.skip_ws(text, pos + 1)
            if key == b'"traceEvents"' and text.buf[pos : pos + 1] == b"[":
                return head, pos
            # another tool's document (an execution trace's nodes: megabytes) is named before its value is read
            known = kd._own_output(dict.fromkeys([*head, *(_decode_object(b"{" + key + b": null}") or {})]))
            if known:
                raise TraceFormatError(f"not a Kineto trace: no traceEvents{known}", path)
            at = text.dropped + pos
            value, pos, _ = json_value.read_value(
                text, pos, limits.current.max_string, limits.current.max_event
            )
            name = _decode_object(b"{" + key + b": null}")
            if name is None:
                raise _invalid_at(text, pos, "a key that is not a JSON string")
            # the value decoded (mended as the events are: a non-finite number, a lone backslash or surrogate)
            pair = _decode_object(b"{" + key + b":" + value + b"}")
            if pair is None:
                raise TraceFormatError(
                    f"truncated or invalid JSON: the top-level value at byte {at} of the JSON text does not decode",
                    path,
                )
            head.update(pair)
    except json_value.Truncated:
        raise TraceFormatError(
            "truncated or invalid JSON: the document ends before its events", path
        ) from None
    except json_value.TooLong as exc:
        raise _too_long(path, exc.start) from None


def _invalid_at(text: _Text, pos: int, reason: str) -> TraceFormatError:
    return TraceFormatError(
        f"truncated or invalid JSON: {reason} at byte {text.dropped + pos} of the JSON text", text.path
    )


class _Bytes:
    """A text held whole, as the stream :func:`tracekit.readers.json_value.read_value` reads
    (``dropped``: the absolute offset of its first byte)."""

    def __init__(self, buf: bytes, dropped: int) -> None:
        self.buf, self.eof, self.dropped = buf, True, dropped

    def fill(self, size: int) -> None:
        """Nothing to read: the text is all here."""

    def drop(self, pos: int) -> None:
        """Nothing is dropped (read_value drops only text it has read when more is to come)."""


_DECODE_RAWS = msgspec.json.Decoder(list[msgspec.Raw])
#: what lies between two values of an array or object: whitespace, one ``,`` or ``:``, whitespace
_BETWEEN = re.compile(rb"[ \t\r\n]*(?:[,:][ \t\r\n]*)?")


def check_sizes(text: bytes, base: int, path: Path, start: int = 1) -> None:
    """LimitError (:func:`_too_long`) when a value of the JSON array or object ``text`` (at absolute offset
    ``base`` of the JSON text; its values from ``text[start]`` on, to its closing bracket) is longer than
    the event limit (``--max-event``), measured as a value too long for any decode window is
    (:func:`_oversized`): its compact copy, whitespace runs collapsed and strings cut
    (:func:`tracekit.readers.json_value.read_value`). An event of a chunk, a top-level value or key.

    A text no longer than the limit holds no such value: with the default limit (16 MiB, above every decode
    window) this is one comparison. Past it, an array's elements are measured by one msgspec pass (their
    text lengths, an upper bound of their copies' lengths); only an element longer than the limit (or every
    value, when that pass fails: a text the decoder mends) has its copy measured."""
    limit = limits.current.max_event
    if len(text) <= limit:
        return
    sizes: list[int] | None = None
    if start == 1 and text[:1] == b"[":
        try:
            sizes = list(map(len, _DECODE_RAWS.decode(text)))
        except (msgspec.DecodeError, UnicodeDecodeError):
            sizes = None
        if sizes is not None and max(sizes, default=0) <= limit:
            return
    stream = _Bytes(text, base)
    pos, index = start, 0
    try:
        while True:
            between = _BETWEEN.match(text, pos)
            assert between is not None  # (it matches the empty text)
            pos = between.end()
            if pos >= len(text) or text[pos] in b"]}":
                return
            if sizes is not None and index < len(sizes) and sizes[index] <= limit:
                pos += sizes[index]
            else:
                _, pos, _ = json_value.read_value(stream, pos, limits.current.max_string, limit)
            index += 1
    except json_value.Truncated:  # (the text decoded: cannot happen)
        return
    except json_value.TooLong as exc:
        raise _too_long(path, exc.start) from None


def _too_long(path: Path, start: int) -> LimitError:
    """The error for a value whose compact copy passes the event limit."""
    return LimitError(
        f"the JSON value at byte {start} of the JSON text is longer than {format_size(limits.current.max_event)} even "
        f"with its whitespace collapsed and its strings cut to {format_size(limits.current.max_string)}; pass "
        "--max-event SIZE to allow it",
        path,
    )


def _tail(rest: bytes) -> dict[str, msgspec.Raw] | None:
    """The top-level values after the events array (``rest``: the text after its ``]``), or None when
    ``rest`` does not end the document."""
    rest = rest.strip(_WS)
    if rest == b"}":
        return {}
    if rest.startswith(b","):
        return _decode_object(b"{" + rest[1:])
    return None


def _decode_object(text: bytes) -> dict[str, msgspec.Raw] | None:
    """The top-level values of a JSON object text (None when it is not one), non-finite numbers read as
    null and lone backslashes as themselves, as in the events (:func:`tracekit.readers.kineto_json.repair`)."""
    while True:
        try:
            return _DECODE_OBJECT.decode(text)
        except (msgspec.ValidationError, UnicodeDecodeError):
            return None
        except msgspec.DecodeError as exc:
            repaired = kd.repair(text, exc)
            if repaired is None:
                return None
            text = repaired


def _last_chunk(
    buf: bytes, start: int, path: Path, lenient: kd.Lenient, base: int = 0
) -> tuple[list[Any], dict[str, msgspec.Raw]]:
    """(events, top-level values after the array) of the end of the text, ``buf[start:]``; ``base``: the
    offset of ``buf[0]`` in the JSON text, for the byte an error names."""
    mv = memoryview(buf)
    ends = list(_END.finditer(buf, start))
    complete: int | None = None  # the last "]" before which the events decode, when what follows does not
    for match in reversed(ends[-END_TRIES:]):
        body = bytes(mv[start : match.start()])
        tail = _tail(buf[match.start() + 1 :])
        if tail is None:
            if complete is None and kd._decode_chunk(b"[" + body + b"]", lenient) is not None:
                complete = match.start()
            continue
        events = [] if not body.strip(_WS) else kd._decode_chunk(b"[" + body + b"]", lenient)
        if events is not None:
            if len(buf) - start + 2 > limits.current.max_event:  # (no copies otherwise)
                check_sizes(b"[" + body + b"]", base + start - 1, path)
                check_sizes(buf[match.start() + 1 :], base + match.start() + 1, path, start=0)
            return events, tail
    if complete is not None:
        raise TraceFormatError(_after_events(buf, complete + 1, base), path)
    try:  # say what is wrong with the text (the decoder's message)
        msgspec.json.decode(b"[" + bytes(mv[start:]))
    except msgspec.DecodeError as exc:
        offset = kd._error_offset(exc)
        if offset is None:  # the text ends inside the events
            raise TraceFormatError(
                f"truncated or invalid JSON: the text ends inside the events, at byte {base + len(buf)}", path
            ) from None
        reason, at = kd._error_reason(exc), base + start + offset - 1  # (less the "[" put before the text)
        if "trailing characters" in reason:  # after the events array (msgspec names the byte after the first)
            reason, at = "the events array is followed by neither , nor }", at - 1
        raise TraceFormatError(
            f"truncated or invalid JSON: {reason} at byte {at} of the JSON text", path
        ) from None
    except msgspec.ValidationError as exc:
        raise TraceFormatError(f"truncated or invalid JSON: {exc}", path) from None
    raise TraceFormatError("truncated or invalid JSON: the document does not end after its events", path)


def _after_events(buf: bytes, at: int, base: int) -> str:
    """What is wrong with the text after the events array (``buf[at:]``, after its ``]``), which does not end
    the document although the events decode: the document's end missing, or text where it should end."""
    rest = buf[at:]
    skipped = len(rest) - len(rest.lstrip(_WS))
    rest = rest[skipped:]
    here = base + at + skipped
    if not rest:
        return f"truncated or invalid JSON: the document ends after its events without its closing brace (byte {here})"
    if rest.startswith(b"}"):  # the document ended: text follows it
        after = rest[1:]
        gap = len(after) - len(after.lstrip(_WS))
        return f"truncated or invalid JSON: text after the end of the document, at byte {here + 1 + gap}"
    try:
        msgspec.json.decode(b"{" + rest[1:])
    except msgspec.DecodeError as exc:
        offset = kd._error_offset(exc)
        if offset is None:
            return (
                "truncated or invalid JSON: the document ends before its closing brace (truncated?), after the "
                f"events, at byte {base + len(buf)}"
            )
        reason = kd._error_reason(exc)
        if "trailing characters" in reason:  # (msgspec names the byte after the first one)
            return (
                f"truncated or invalid JSON: text after the end of the document, at byte {here + offset - 1}"
            )
        return f"truncated or invalid JSON: {reason} at byte {here + offset} of the JSON text"
    return f"truncated or invalid JSON: the text after the events does not end the document (byte {here})"


def stream_events(
    path: Path,
    progress: kd.Progress | None = None,
    lenient: kd.Lenient = False,
    header: dict[str, Any] | None = None,
    part: tuple[int, int] = (0, 1),
) -> Iterator[list[Any]]:
    """Decoded event chunks of a Kineto file (as :func:`tracekit.readers.kineto_json.event_chunks`),
    reading the file as it goes; ``header`` (when given) receives the decoded top-level values other than
    ``traceEvents`` once the events are read. Documents of other shapes are read whole (module doc).

    ``part = (k, n)``: only the k-th of n consecutive parts of the events array (0-based), so that n
    processes can decode one file together; the parts' chunks, in order, are the whole file's. Part k
    starts at the first event boundary candidate at or after the text offset where the k-th n-th of the
    file (compressed bytes) has been read, and the part before it ends there (:func:`_boundary`). That
    cut is checked by the earlier part, whose last chunk must decode: :class:`PartBoundaryError` when it
    does not (the caller reads the file in one part instead). The head's values go to part 0's
    ``header``, the tail's to the last part's; documents read whole are all part 0's."""
    index, count = part
    text = _Text(path)
    for k in range(1, count):
        text.marks[k / count] = -1
    try:
        head, start = _head(text)
    except _Whole as whole:
        if index == 0:
            yield from _whole(path, whole.text, progress, lenient, header)
        return
    if progress:
        progress("read", 1.0)
    pos = start + 1
    stop = (index + 1) / count if index + 1 < count else None
    if index > 0:
        found = _boundary(text, index / count, start)
        if found is None:  # no event starts in this part: the one before reads to the end
            return
        if stop is not None and 0 <= text.marks[stop] < found[0]:
            # the next part's mark is at or before this cut's "}": the next part starts at this same cut, and
            # no event is this part's (one event spans the whole part: a small file in many parts)
            return
        pos = found[1] - text.dropped
        head = {}
    tail = yield from _chunks(text, pos, path, progress, lenient, stop, start)
    if "traceEvents" in head or "traceEvents" in tail:
        raise TraceFormatError(kd.TRACE_EVENTS_TWICE, path)
    if header is not None:
        header.update({k: kd.decode_header_value(v) for k, v in {**head, **tail}.items()})


class PartBoundaryError(Exception):
    """The cut between two parts of a file (:func:`stream_events`) is not between two events."""


def _boundary(text: _Text, share: float, start: int) -> tuple[int, int] | None:
    """(absolute text offset just past the ``}``, absolute offset of the next ``{``) of the first event
    boundary candidate at or after the part mark ``share`` (not before the events array, which starts at
    ``text.buf[start]``), or None when the text has none. Text before the mark is dropped on the way."""
    array_start = text.dropped + start
    while text.marks[share] < 0 and not text.eof:
        text.drop(max(0, len(text.buf) - 64))  # keep a few bytes: the events array start may be here
        text.fill(len(text.buf) + READ_BYTES)
    return _part_cut(text, share, array_start, drop=True)


def _part_cut(text: _Text, share: float, array_start: int, drop: bool) -> tuple[int, int] | None:
    """The cut where the part starting at mark ``share`` begins: the first event boundary candidate at or
    after the mark's text offset (the end of the text when the mark was never reached) and not before the
    events array (``array_start``, absolute). The part that starts there and the part that ends there both
    call this, so they cannot disagree on it."""
    mark = text.marks[share] if text.marks[share] >= 0 else text.read
    return _find_from(text, max(mark, array_start), drop)


def _find_from(text: _Text, offset: int, drop: bool) -> tuple[int, int] | None:
    """The first ``_CUT`` candidate whose ``}`` is at absolute text offset >= ``offset`` and that lies within
    :data:`BOUNDARY_SEARCH` bytes of it (reading more text as needed; with ``drop``, text before ``offset``
    is forgotten); None when there is none. The windows searched, ``[offset, offset + want)`` for ``want``
    doubling from :data:`READ_BYTES`, depend on ``offset`` alone, so the two parts that call this for one
    cut find the same one whatever text each holds."""
    if drop and offset > text.dropped:
        text.drop(min(offset - text.dropped, len(text.buf)))
    want = READ_BYTES
    while True:
        lo = max(offset - text.dropped, 0)
        text.fill(lo + want)
        match = kd._CUT.search(text.buf, lo, lo + want)
        if match is not None:
            return text.dropped + match.start() + 1, text.dropped + match.start(1)
        if (text.eof and lo + want >= len(text.buf)) or want >= BOUNDARY_SEARCH:
            return None
        want *= 2


def _whole(
    path: Path, data: bytes, progress: kd.Progress | None, lenient: kd.Lenient, header: dict[str, Any] | None
) -> Iterator[list[Any]]:
    """Chunks of a document read whole (bare arrays, other encodings, errors)."""
    data = kd.normalize_json_bytes(data, path)
    if progress:
        progress("read", 1.0)
    head, events = kd.split_document(data, path)
    if len(events) > limits.current.max_event:  # (its text is found in the document's: a copy holds it too)
        check_sizes(bytes(events), data.find(bytes(events)) if events is not data else 0, path)
    if header is not None:
        header.update(head)
    yield from kd.event_chunks(events, progress, lenient)


def _chunks(
    text: _Text,
    pos: int,
    path: Path,
    progress: kd.Progress | None,
    lenient: kd.Lenient,
    stop: float | None = None,
    start: int = 0,
) -> Iterator[list[Any]]:
    """Event chunks from ``text.buf[pos:]`` on; returns the top-level values after the array. ``stop``:
    the part mark where the next part of the file begins (:func:`stream_events`; ``start``: the absolute
    text offset of the events array's ``[``): the chunks end at that boundary, and nothing is returned."""
    try:
        return (yield from _chunks_of(text, pos, path, progress, lenient, stop, start))
    except kd.InvalidJSON as exc:  # each chunk's text starts at text.dropped, after the "[" put before it
        raise TraceFormatError(
            f"truncated or invalid JSON: {exc.reason} at byte {text.dropped + exc.offset - 1} of the JSON text",
            path,
        ) from None


def _chunks_of(
    text: _Text,
    pos: int,
    path: Path,
    progress: kd.Progress | None,
    lenient: kd.Lenient,
    stop: float | None,
    start: int,
) -> Iterator[list[Any]]:
    """:func:`_chunks`, raising :class:`~tracekit.readers.kineto_json.InvalidJSON` as it is."""
    want = kd.CHUNK_BYTES
    end_at: tuple[int, int] | None = None  # the next part's boundary, once the text reaches its mark
    while True:
        text.drop(pos)  # forget what is decoded (the rest is less than one piece)
        pos = 0
        text.fill(want + 2)
        if stop is not None and end_at is None and (text.marks[stop] >= 0 or text.eof):
            end_at = _part_cut(text, stop, start, drop=False)
            if end_at is None:  # no event starts in the next part: this one reads to the end
                stop = None
        buf = text.buf
        if end_at is not None and end_at[0] - text.dropped <= want + 1:  # the last chunk of this part
            body = buf[pos : end_at[0] - text.dropped]
            events = kd._decode_chunk(b"[" + body + b"]", lenient)
            if events is None:
                raise PartBoundaryError(f"the part boundary at text offset {end_at[0]} is not between events")
            if len(body) + 2 > limits.current.max_event:
                check_sizes(b"[" + body + b"]", text.dropped + pos - 1, path)
            if progress:
                progress("decode", text.done(end_at[0] - text.dropped))
            yield events
            return {}
        chunk, end = None, None
        if len(buf) > pos + want + 1:  # text beyond the target: cut before it
            chunk, cut, end = _cut_chunk(buf, pos, pos + want, lenient)
            if chunk is None and want >= OVERSIZED_WINDOW:  # one value longer than any window: read it alone
                if stop is not None:  # (not within a part: the file is then decoded in one process)
                    raise PartBoundaryError("a value longer than the decode window")
                del buf
                events, pos, at_end = _oversized(text, pos, path, lenient)
                want = kd.CHUNK_BYTES
                if events:
                    if progress:
                        progress("decode", text.done(pos))
                    yield events
                if at_end:  # pos is at the events array's "]"
                    return _tail_streamed(text, pos + 1)
                continue
            if chunk is None:  # no event boundary before the target decodes: a bigger window
                want *= 2
                continue
        else:  # the end of the text
            events, tail = _last_chunk(buf, pos, path, lenient, text.dropped)
            if progress:
                progress("decode", 1.0)
            yield events
            return tail
        if cut - pos + 2 > limits.current.max_event:  # (no copy of the chunk's text otherwise)
            check_sizes(b"[" + buf[pos:cut] + b"]", text.dropped + pos - 1, path)
        del buf  # the next drop copies the rest of the text: do not keep this one alive
        pos, want = end, kd.CHUNK_BYTES
        if progress:
            progress("decode", text.done(pos))
        yield chunk


def _cut_chunk(buf: bytes, start: int, target: int, lenient: kd.Lenient) -> tuple[list[Any] | None, int, int]:
    """(events of buf[start:cut], cut, offset of the next event) for an event boundary before ``target``
    whose chunk decodes (:func:`tracekit.readers.kineto_json.decodable_cut`); (None, 0, 0) when none does."""
    found = kd.decodable_cut(memoryview(buf), start, target, lenient)
    if found is None:
        return None, 0, 0
    return found


def _oversized(text: _Text, pos: int, path: Path, lenient: kd.Lenient) -> tuple[list[Any], int, bool]:
    """(events, offset in ``text.buf`` where the next one starts, whether the events array ends there) for
    the one value at ``text.buf[pos:]`` (after whitespace) that no chunk window holds: read by
    :func:`tracekit.readers.json_value.read_value` (bounded memory: its compact copy, strings cut) and
    decoded alone. With ``at_end``, the offset is that of the array's ``]``."""
    max_string, max_event = limits.current.max_string, limits.current.max_event
    try:
        pos = json_value.skip_ws(text, pos)
        if text.buf[pos : pos + 1] == b"]":
            return [], pos, True
        start = text.dropped + pos
        value, pos, _ = json_value.read_value(text, pos, max_string, max_event)
        pos = json_value.skip_ws(text, pos)
    except json_value.Truncated:
        raise TraceFormatError(
            "truncated or invalid JSON: the text ends inside the events array", path
        ) from None
    except json_value.TooLong as exc:
        raise _too_long(path, exc.start) from None
    try:
        events = kd._decode_chunk(b"[" + value + b"]", lenient) if value else None
    except kd.InvalidJSON as exc:
        raise TraceFormatError(
            f"truncated or invalid JSON: {exc.reason} in the value at byte {start} of the JSON text", path
        ) from None
    if events is None:
        raise _invalid_at(text, pos, "a value that does not decode ends")
    byte = text.buf[pos : pos + 1]
    if byte == b"]":
        return events, pos, True
    if byte != b",":
        raise _invalid_at(text, pos, "expected ',' or ']'")
    try:
        pos = json_value.skip_ws(text, pos + 1)
    except json_value.Truncated:  # pragma: no cover - skip_ws does not raise it
        pos = len(text.buf)
    return events, pos, False


def _tail_streamed(text: _Text, pos: int) -> dict[str, msgspec.Raw]:
    """The top-level values after the events array, whose ``]`` is just before ``text.buf[pos]``, read as a
    compact copy (:func:`tracekit.readers.json_value.read_rest`): bounded whatever follows."""
    try:
        rest = json_value.read_rest(text, pos, limits.current.max_string, limits.current.max_event)
    except json_value.Truncated:
        rest = b""
    except json_value.TooLong as exc:
        raise _too_long(text.path, exc.start) from None
    tail = _tail(rest)
    if tail is None:
        raise TraceFormatError(
            "truncated or invalid JSON: the document does not end after its events", text.path
        )
    return tail


#: signature of a chunk source: (path, progress, lenient, header) -> chunks
ChunkSource = Callable[..., Iterator[list[Any]]]
