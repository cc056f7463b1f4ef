"""One JSON value read from a stream of text in bounded memory, as a compact copy (no polars, no msgspec).

The Kineto stream decoder (:mod:`tracekit.readers.kineto_stream`) cuts the events array into chunks of
about a megabyte and lets msgspec decode them. A value that no chunk window holds (an event with a string
of a gigabyte, an event padded with gigabytes of whitespace, or gigabytes of whitespace between two events)
would make that window grow with it, and the memory with the window. Such a value is read here instead,
piece by piece, dropping what it has read: what is kept is its compact copy, in which

* every run of whitespace outside strings is one space (JSON's meaning is unchanged; two tokens never
  join);
* every string keeps at most :func:`string_keep` bytes of its text (whole escapes and whole UTF-8
  characters only), enough that, decoded, it is still longer than the string limit: the reader then cuts
  it to the limit and warns (:mod:`tracekit.readers.kineto`);

and that copy may not pass the event limit (:class:`tracekit.limits.LimitError`). So the memory is the
copy plus one piece of text, and the time is one pass with ``bytes.find`` (C speed) plus Python work per
bracket run, string and escape of the copy.

The stream is a :class:`tracekit.readers.kineto_stream._Text` (``buf``, ``drop``, ``fill``, ``eof``,
``dropped``). Offsets returned are into its ``buf`` as it is on return.
"""

from __future__ import annotations

import re
from typing import Protocol

#: text read into the stream's buffer per step while a value is scanned
STEP = 1 << 20
_WS = b" \t\r\n"
_WS_RUN = re.compile(rb"[ \t\r\n]+")
_OPEN_RUN = re.compile(rb"[\[{]+")
_CLOSE_RUN = re.compile(rb"[\]}]+")
_QUOTE, _U = 0x22, 0x75


class Stream(Protocol):
    """What :func:`read_value` needs of a text stream (``kineto_stream._Text``)."""

    buf: bytes
    eof: bool
    dropped: int

    def fill(self, size: int) -> None: ...

    def drop(self, pos: int) -> None: ...


class Truncated(Exception):
    """The text ends inside the value."""


class TooLong(Exception):
    """The value's compact copy passed ``max_out`` bytes; ``start`` is its absolute text offset."""

    def __init__(self, start: int) -> None:
        super().__init__(start)
        self.start = start


def string_keep(max_string: int) -> int:
    """Bytes of a string's JSON text kept by :func:`read_value`: decoded, at least ``max_string`` + 1 bytes
    (an escape of 6 bytes decodes to 1 at least)."""
    return 6 * max_string + 12


def skip_ws(text: Stream, pos: int) -> int:
    """The offset in ``text.buf`` of the first byte at or after ``pos`` that is not whitespace, reading on
    (and dropping the whitespace read) as needed; ``len(text.buf)`` when the text ends first."""
    while True:
        buf = text.buf
        if pos < len(buf):
            rest = buf[pos : pos + STEP]
            if rest.translate(None, _WS):  # something else in this step: find it
                return pos + len(rest) - len(rest.lstrip(_WS))
            pos += len(rest)
            if pos < len(buf):
                continue
        if text.eof:
            return len(buf)
        text.drop(pos)
        pos = 0
        text.fill(STEP)
        if not text.buf and text.eof:
            return 0


class _Finder:
    """The next offset of each of a few bytes in one buffer, each found by ``bytes.find`` and kept until it is
    passed (so that a byte absent from the buffer is searched for once, not once per token)."""

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.at: dict[bytes, int] = {}

    def next(self, byte: bytes, pos: int) -> int:
        """The offset of ``byte`` at or after ``pos`` (``len(buf)`` when there is none)."""
        at = self.at.get(byte, -1)
        if at < pos:
            at = self.buf.find(byte, pos)
            if at < 0:
                at = len(self.buf)
            self.at[byte] = at
        return at


def _escape_size(buf: bytes, at: int, eof: bool) -> int:
    """Bytes of the string escape at ``buf[at]`` (a backslash): 2, 6 (``\\uXXXX``) or 12 (a surrogate pair);
    0 when the buffer ends before it can tell and the text goes on (``eof``: it does not)."""
    if at + 1 >= len(buf):
        return 0
    if buf[at + 1] != _U:
        return 2
    if at + 6 > len(buf):
        return 0 if not eof else 6
    if buf[at + 2 : at + 4].lower() in (b"d8", b"d9", b"da", b"db"):  # a high surrogate: its pair follows
        if at + 12 > len(buf) and not eof and buf[at + 6 : at + 8] in (b"", b"\\", b"\\u"):
            return 0
        if buf[at + 6 : at + 8] == b"\\u" and buf[at + 8 : at + 10].lower() in (b"dc", b"dd", b"de", b"df"):
            return 12
    return 6


def read_value(text: Stream, pos: int, max_string: int, max_out: int) -> tuple[bytes, int, int]:
    """(compact copy of the JSON value that starts at ``text.buf[pos]`` (not whitespace), offset in
    ``text.buf`` just after it, number of strings cut). The text before the value's end may be dropped on
    the way (``text.dropped`` grows). :class:`Truncated` when the text ends inside it, :class:`TooLong`
    when its copy passes ``max_out`` bytes. A value that is not an object, array or string (a number, a
    literal, or text that is not JSON) ends at the first ``,``, ``]`` or ``}``; the decoder judges it."""
    start = text.dropped + pos
    keep = string_keep(max_string)
    out = bytearray()
    depth = 0
    cuts = 0
    in_string = False
    kept = 0  # bytes of the current string's text kept
    cut = False  # the current string is cut
    buf = text.buf
    find = _Finder(buf)
    i = pos
    while True:
        if i >= len(buf):  # this buffer is read: drop it, read on
            if text.eof:
                raise Truncated
            text.drop(i)
            i = 0
            text.fill(STEP)
            if len(text.buf) == 0:
                raise Truncated
            buf = text.buf
            find = _Finder(buf)
            continue
        if in_string:
            quote = find.next(b'"', i)
            slash = find.next(b"\\", i)
            stop = min(quote, slash)
            if not cut:  # keep the plain text up to the stop, within the string's share
                room = keep - kept
                end = min(stop, i + room)
                if end < stop:  # not inside a UTF-8 character
                    while end > i and 0x80 <= buf[end] < 0xC0:
                        end -= 1
                    cut = True
                out += buf[i:end]
                kept += end - i
            if stop == len(buf):
                i = stop
                continue
            if stop == quote:
                out.append(_QUOTE)
                in_string = False
                cuts += cut
                i = stop + 1
                if depth == 0:
                    if len(out) > max_out:
                        raise TooLong(start)
                    return bytes(out), i, cuts
                continue
            # an escape: two bytes, six for \uXXXX, twelve for a surrogate pair (kept whole: half of one is no
            # character); read on when the buffer ends inside it
            size = _escape_size(buf, stop, text.eof)
            if size == 0:
                if text.eof:
                    raise Truncated
                text.drop(stop)
                i = 0
                text.fill(len(text.buf) + STEP)
                buf = text.buf
                find = _Finder(buf)
                continue
            if not cut and kept + size <= keep:
                out += buf[stop : stop + size]
                kept += size
            else:
                cut = True
            i = stop + size
            continue
        # outside strings: the next quote or bracket (or, at depth 0, the comma that ends a scalar)
        stop = min(
            find.next(b'"', i),
            find.next(b"{", i),
            find.next(b"[", i),
            find.next(b"}", i),
            find.next(b"]", i),
            find.next(b",", i) if depth == 0 else len(buf),
        )
        if stop > i:
            out += _WS_RUN.sub(b" ", buf[i:stop])
            if len(out) > max_out:
                raise TooLong(start)
        if stop == len(buf):
            i = stop
            continue
        byte = buf[stop]
        if byte == _QUOTE:
            out.append(_QUOTE)
            in_string, kept, cut = True, 0, False
            i = stop + 1
        elif byte in b"[{":
            run = _OPEN_RUN.match(buf, stop)
            assert run is not None
            out += run.group()
            depth += run.end() - stop
            i = run.end()
        elif byte in b"]}" and depth:
            run = _CLOSE_RUN.match(buf, stop)
            assert run is not None
            n = min(run.end() - stop, depth)
            out += buf[stop : stop + n]
            depth -= n
            i = stop + n
            if depth == 0:
                if len(out) > max_out:  # (its closing brackets count too)
                    raise TooLong(start)
                return bytes(out), i, cuts
        else:  # "," "]" "}" at depth 0: the end of a scalar (or of nothing: the decoder judges)
            return bytes(out), stop, cuts
        if len(out) > max_out:
            raise TooLong(start)


def read_rest(text: Stream, pos: int, max_string: int, max_out: int) -> bytes:
    """The compact copy (as :func:`read_value`) of all the text from ``text.buf[pos]`` to its end: values
    one after the other, the bytes between them (``,`` ``:`` ``}``) kept, whitespace collapsed."""
    out = bytearray()
    start = text.dropped + pos
    while True:
        pos = skip_ws(text, pos)
        if pos >= len(text.buf):
            return bytes(out)
        byte = text.buf[pos]
        if byte in b",:]}":
            out.append(byte)
            pos += 1
        else:
            if out and out[-1] not in b",:[{":
                out.append(0x20)  # two values: keep them apart (the decoder judges)
            value, pos, _ = read_value(text, pos, max_string, max_out - len(out))
            out += value
        if len(out) > max_out:
            raise TooLong(start)
