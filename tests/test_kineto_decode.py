"""Kineto fast decoding (issue 13): exact nanoseconds from 19-digit µs text, chunked decoding that gives the
same frames whatever the chunk size, the typed and the lenient decoding paths agreeing, escaped strings,
the fast µs -> ns conversion matching the exact one, progress reports, and damaged input. All traces
here are hand-built (synthetic)."""

from __future__ import annotations

import gzip
import json
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import tracekit.readers.kineto_decode as kd
import tracekit.readers.kineto_json as kj
from tests.builders import NON_FINITE_SPELLINGS
from tests.builders import write_file as _write
from tests.test_reader_kineto import (
    EXPECTED_CURRENT_API,
    EXPECTED_CURRENT_KERNEL_METRICS,
    EXPECTED_CURRENT_OPS,
    EXPECTED_CURRENT_RANGES,
    SYNTHETIC_CURRENT_RAW,
)
from tracekit.errors import TraceFormatError
from tracekit.model import Trace
from tracekit.readers.kineto import read, us_to_ns, us_to_ns_series


def _frames(trace: Trace) -> dict[str, pl.DataFrame]:
    return {"ops": trace.ops, "api": trace.api, "ranges": trace.ranges, "km": trace.kernel_metrics}


#: Epoch-µs timestamps with nanosecond fractions (as in HTA's ns-resolution traces): float64 cannot hold them.
BIG_TS = {
    "ph": "X",
    "cat": "kernel",
    "name": "k",
    "pid": 0,
    "tid": 7,
    "dur": 1.5,
    "args": {"device": 0, "stream": 7, "correlation": 1},
}


def _big_trace(extra_events: list[Any] | None = None) -> str:
    events = [
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 9,
            "tid": 9,
            "ts": "TS0",
            "dur": 2,
            "args": {"correlation": 1},
        },  # fmt: skip
        {**BIG_TS, "ts": "TS1"},
        {**BIG_TS, "ts": "TS2", "args": {"device": 0, "stream": 7, "correlation": 1}},
        *(extra_events or []),
    ]
    text = json.dumps({"traceEvents": events})
    # written as JSON numbers, not strings: the text is what Kineto writes
    return (
        text.replace('"TS0"', "1712195495519689.047")
        .replace('"TS1"', "1712195495519690.0005")
        .replace('"TS2"', "1712195495519691.9994999")
    )


@pytest.mark.parametrize("lenient", [False, True])
def test_19_digit_timestamps_exact_to_the_nanosecond(tmp_path: Path, lenient: bool) -> None:
    # a non-object element sends the chunk through the lenient decoding path
    trace = read(_write(tmp_path, "big.json", _big_trace([7] if lenient else None)))
    assert trace.api["start"].to_list() == [1712195495519689047]
    assert trace.api["end"].to_list() == [1712195495519691047]
    # .0005 rounds half away from zero; .9994999 rounds down
    assert trace.ops["start"].to_list() == [1712195495519690001, 1712195495519691999]
    assert trace.ops["end"].to_list() == [1712195495519691501, 1712195495519693499]


@pytest.mark.parametrize("chunk_bytes", [64, 300, 1 << 20])
@pytest.mark.parametrize("gz", [False, True])
def test_chunk_size_does_not_change_the_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_bytes: int, gz: bool
) -> None:
    monkeypatch.setattr(kj, "CHUNK_BYTES", chunk_bytes)
    trace = read(
        _write(tmp_path, "synthetic_current.json" + (".gz" if gz else ""), SYNTHETIC_CURRENT_RAW, gz)
    )
    assert_frame_equal(trace.ops, EXPECTED_CURRENT_OPS)
    assert_frame_equal(trace.api, EXPECTED_CURRENT_API)
    assert_frame_equal(trace.ranges, EXPECTED_CURRENT_RANGES)
    assert_frame_equal(trace.kernel_metrics, EXPECTED_CURRENT_KERNEL_METRICS)


#: Events whose names hold the text of an event boundary, nested args, escapes and unicode (synthetic).
TRICKY_EVENTS: list[Any] = [
    {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": 'launch "q" }, {"ph": "X"',
        "pid": 5,
        "tid": "5",
        "ts": 10,
        "dur": 1,
        "args": {"nested": {"a": [1, {"b": 2}]}, "correlation": 1},
    },  # fmt: skip
    {
        "ph": "X",
        "cat": "kernel",
        "name": "void f<{lambda()#1}, 2>(é, \\, \t)",
        "pid": 0,
        "tid": "stream 3",
        "ts": 11.25,
        "dur": 0.5,
        "args": {"device": 0, "correlation": 1, "est. achieved occupancy %": 12.5},
    },  # fmt: skip
    {"ph": "X", "cat": "kernel", "name": "no_args", "pid": 0, "tid": 3, "ts": 12, "dur": 1},
    {
        "ph": "X",
        "cat": "kernel",
        "name": "args_not_a_dict",
        "pid": 0,
        "tid": 3,
        "ts": 13,
        "dur": 1,
        "args": [1],
    },
    {"ph": "X", "cat": "user_annotation", "name": "iteration", "pid": "5", "tid": 5, "ts": 9, "dur": 10},
]


def test_tricky_names_and_both_decoding_paths_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = json.dumps({"traceEvents": TRICKY_EVENTS}, indent=1, ensure_ascii=True)
    reference = read(_write(tmp_path, "tricky.json", text))
    ops = reference.ops
    assert ops["name"].to_list() == ["void f<{lambda()#1}, 2>(é, \\, \t)", "no_args", "args_not_a_dict"]
    assert ops["start"].to_list() == [11250, 12000, 13000]
    assert ops["stream"].to_list() == [3, 3, 3]  # "stream 3" and 3
    assert ops["correlation"].to_list() == [1, None, None]
    assert reference.api["name"].to_list() == ['launch "q" }, {"ph": "X"']
    assert reference.kernel_metrics["value"].to_list() == [12.5]
    # tiny chunks (many cuts tried inside names and args) and the lenient path (args [1] is typed-invalid
    # in every chunk it lands in) give the same frames
    for chunk_bytes in (1, 50, 200):
        monkeypatch.setattr(kj, "CHUNK_BYTES", chunk_bytes)
        again = read(_write(tmp_path, "tricky.json", text))
        for name, frame in _frames(again).items():
            assert_frame_equal(frame, _frames(reference)[name])


def test_fast_and_lenient_chunks_give_the_same_columns() -> None:
    events = json.dumps(TRICKY_EVENTS[:3]).encode()
    fast = kj._DECODE_FAST.decode(events)
    lenient = kj._DECODE_EVENTS.decode(events)
    assert kj.is_fast(fast) and not kj.is_fast(lenient)
    fields = (*kj.EVENT_FIELDS[:-1], *kj.ARG_FIELDS)  # the fast type has no "id"
    assert_frame_equal(kd.columns(fast, fields, True), kd.columns(lenient, fields, False))


def test_value_text_follows_json_loads_then_string_cast() -> None:
    text = (
        b'[{"ph": "X", "pid": true, "tid": -0, "name": 1.50, "cat": null, "ts": "12", "dur": 1e3},'
        b' {"ph": "X", "pid": 123456789012345678901, "tid": "a\\"b", "name": "\\u00e9\xe4\xb8\xad", "ts": -0.0}]'
    )
    chunk = kj._DECODE_EVENTS.decode(text)
    cols = kd.columns(chunk, ("pid", "tid", "name", "cat", "ts", "dur"), False).rows()
    assert cols == [
        ("true", "0", "1.50", None, "12", "1e3"),
        ("123456789012345678901", 'a"b', "\u00e9\u4e2d", None, "-0.0", None),
    ]


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.decimals(min_value=Decimal("-9e15"), max_value=Decimal("9e15"), places=7, allow_nan=False).map(
            lambda d: format(d, "f")
        ),
        st.integers(min_value=-(10**17), max_value=10**17).map(str),
        st.text(alphabet="0123456789.-+eE ", max_size=22),
    )
)
def test_fast_us_to_ns_matches_the_exact_conversion(text: str) -> None:
    series = pl.Series("t", [text, None], dtype=pl.String)
    expected = pl.DataFrame({"t": series}).select(us_to_ns(pl.col("t"))).to_series().to_list()
    assert us_to_ns_series(series).to_list() == expected


#: Kineto's own spellings (integers, three fraction digits) near the int64-nanosecond limits, and text around them
_KINETO_US = st.one_of(
    st.decimals(min_value=Decimal("-9.3e15"), max_value=Decimal("9.3e15"), places=3, allow_nan=False).map(
        lambda d: format(d, "f")
    ),
    st.integers(min_value=-(2**63), max_value=2**63).map(str),
    # one or two fraction digits: Kineto re-saved by Python's json ("1683564901548726.5"), other tools
    st.decimals(min_value=Decimal("-9.3e15"), max_value=Decimal("9.3e15"), places=2, allow_nan=False).map(
        lambda d: format(d, "f")
    ),
    st.decimals(min_value=Decimal("-9.3e15"), max_value=Decimal("9.3e15"), places=1, allow_nan=False).map(
        lambda d: format(d, "f")
    ),
    st.sampled_from(
        ["9223372036854775.000", "9223372036854774.999", "-9223372036854775.000", "9223372036854775"]
        + ["9223372036854774.99", "9223372036854775.0", "-9223372036854774.9", ".5", "-.5", "+1.5", "5."]
    ),
    st.text(alphabet="0123456789.-+ ", min_size=1, max_size=21).filter(
        lambda t: 2 <= len(t) - t.find(".") <= 4
    ),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_KINETO_US, min_size=1, max_size=8))
def test_kineto_spellings_us_to_ns_match_the_exact_conversion(texts: list[str]) -> None:
    series = pl.Series("t", [*texts, None], dtype=pl.String)
    expected = pl.DataFrame({"t": series}).select(us_to_ns(pl.col("t"))).to_series().to_list()
    assert us_to_ns_series(series).to_list() == expected


@settings(max_examples=100, deadline=None)
@given(st.decimals(min_value=Decimal("1e15"), max_value=Decimal("2e15"), places=4, allow_nan=False))
def test_fast_us_to_ns_epoch_values_exact(value: Decimal) -> None:
    expected = int((value * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    assert us_to_ns_series(pl.Series([format(value, "f")])).item() == expected


def test_progress_reports_phases_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kj, "CHUNK_BYTES", 500)
    calls: list[tuple[str, float]] = []
    read(
        _write(tmp_path, "p.json.gz", SYNTHETIC_CURRENT_RAW, gz=True),
        progress=lambda p, f: calls.append((p, f)),
    )
    phases = [p for p, _ in calls]
    assert phases[0] == "read" and phases[-1] == "frames"
    decode = [f for p, f in calls if p == "decode"]
    assert len(decode) > 3 and decode == sorted(decode) and decode[-1] == 1.0
    assert all(0 < f <= 1 for f in decode)


@pytest.mark.parametrize("chunk_bytes", [200, 1 << 20])
def test_truncated_inside_the_events_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_bytes: int
) -> None:
    monkeypatch.setattr(kj, "CHUNK_BYTES", chunk_bytes)
    cut = SYNTHETIC_CURRENT_RAW[: int(len(SYNTHETIC_CURRENT_RAW) * 0.8)]
    for gz in (False, True):
        path = _write(tmp_path, "cut.json" + (".gz" if gz else ""), cut, gz)
        with pytest.raises(TraceFormatError, match="truncated or invalid JSON") as err:
            read(path)
        assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_bom_and_utf16_read_as_json_loads_did(tmp_path: Path) -> None:
    text = SYNTHETIC_CURRENT_RAW
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode())
    utf16 = tmp_path / "u16.json"
    utf16.write_bytes(text.encode("utf-16"))
    for path in (bom, utf16):
        assert_frame_equal(read(path).ops, EXPECTED_CURRENT_OPS)


def test_bare_event_array_and_foreign_arrays(tmp_path: Path) -> None:
    events = json.loads(SYNTHETIC_CURRENT_RAW)["traceEvents"]
    bare = _write(tmp_path, "bare.json", json.dumps(events))
    assert_frame_equal(read(bare).ops, EXPECTED_CURRENT_OPS)
    for bad in ('[{"ph": "X"}, {"name": "no ph"}]', '"text"', "3"):
        with pytest.raises(TraceFormatError, match="not a Kineto trace"):
            read(_write(tmp_path, "bad.json", bad))
    with pytest.raises(TraceFormatError, match="an empty JSON array: no events"):
        read(_write(tmp_path, "bad.json", "[]"))


def _document_around_events() -> str:
    """SYNTHETIC_CURRENT_RAW's events inside a header with decoys: the key's text inside a string and in a
    nested object before the real key, top-level keys after the array (one repeating an earlier key: the
    last value wins, as in json.loads), and "]}" inside a string after it."""
    raw = SYNTHETIC_CURRENT_RAW
    key = raw.index('"traceEvents": [')
    events = raw[key + len('"traceEvents": ') : raw.rindex("]") + 1]
    before = raw[1:key]
    return (
        '{"decoy": "\\"traceEvents\\": [", "nested": {"traceEvents": [{"ph": "X"}]},'
        + before
        + '"traceEvents": '
        + events
        + ' , "traceName": "x]}", "distributedInfo": {"rank": 5}\n}\n'
    )


@pytest.mark.parametrize("chunk_bytes", [64, 1 << 20])
@pytest.mark.parametrize("gz", [False, True])
def test_streamed_document_in_tiny_pieces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_bytes: int, gz: bool
) -> None:
    import tracekit.readers.kineto_stream as ks

    monkeypatch.setattr(kj, "CHUNK_BYTES", chunk_bytes)
    monkeypatch.setattr(ks, "READ_BYTES", 7)  # the header, the cuts and the end each span many pieces
    text = _document_around_events()
    trace = read(_write(tmp_path, "doc.json" + (".gz" if gz else ""), text, gz))
    assert_frame_equal(trace.ops, EXPECTED_CURRENT_OPS)
    assert_frame_equal(trace.api, EXPECTED_CURRENT_API)
    assert_frame_equal(trace.ranges, EXPECTED_CURRENT_RANGES)
    assert trace.meta["rank"] == 5 and trace.meta["gpu"] == "Synthetic GPU A"
    assert trace.meta["schema_version"] == 1
    # the same header as the whole-document decoding gives
    header, _ = kj.split_document(text.encode(), tmp_path / "doc.json")
    got: dict[str, Any] = {}
    for _ in ks.stream_events(tmp_path / ("doc.json" + (".gz" if gz else "")), header=got):
        pass
    assert got == header


def test_streamed_gzip_cut_short_is_a_gzip_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tracekit.readers.kineto_stream as ks

    monkeypatch.setattr(ks, "READ_BYTES", 16)
    data = gzip.compress(SYNTHETIC_CURRENT_RAW.encode())
    for cut in (len(data) - 4, len(data) // 2, 30):
        path = tmp_path / "cut.json.gz"
        path.write_bytes(data[:cut])
        with pytest.raises(TraceFormatError, match="damaged gzip file") as err:
            read(path)
        assert "\n" not in str(err.value)
    # two gzip members read as one text, as gzip.decompress reads them
    half = len(SYNTHETIC_CURRENT_RAW) // 2
    two = tmp_path / "two.json.gz"
    two.write_bytes(
        gzip.compress(SYNTHETIC_CURRENT_RAW[:half].encode())
        + gzip.compress(SYNTHETIC_CURRENT_RAW[half:].encode())
    )
    assert_frame_equal(read(two).ops, EXPECTED_CURRENT_OPS)


def test_unknown_or_missing_phase_reads_through_the_lenient_path(tmp_path: Path) -> None:
    # the fast decoding types events by phase; a phase it does not know, or none, sends the chunk to the
    # lenient decoding, which drops such events as before (they are not complete events)
    text = SYNTHETIC_CURRENT_RAW.replace(
        '"traceEvents": [',
        '"traceEvents": [{"ph": "Z", "cat": "kernel", "ts": 1}, {"name": "no ph", "ts": 2},',
        1,
    )
    trace = read(_write(tmp_path, "odd.json", text))
    assert_frame_equal(trace.ops, EXPECTED_CURRENT_OPS)
    assert_frame_equal(trace.api, EXPECTED_CURRENT_API)
    chunk = kj._decode_chunk(b'[{"ph": "Z"}]')
    assert chunk is not None and not kj.is_fast(chunk)
    fast = kj._decode_chunk(b'[{"ph": "s", "cat": "ac2g", "id": 1}, {"ph": "X", "cat": "kernel"}]')
    assert (
        kj.is_fast(fast)
        and [e.ph for e in fast] == ["s", "X"]
        and [e.cat for e in fast] == ["ac2g", "kernel"]
    )


WIRE_EVENTS: list[Any] = [
    # each value below makes the fast encoding take another column kind (kineto_wire's module doc)
    {"ph": "X", "cat": "kernel", "name": None, "pid": 0, "tid": 7, "ts": 1, "dur": 1},  # null name: list
    {"ph": "X", "cat": "kernel", "name": "a\u001fb", "pid": 0, "tid": 7, "ts": 2, "dur": 1},  # separator
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": "host", "tid": 7, "ts": 3, "dur": 1},
    {"ph": "X", "cat": "cuda_runtime", "name": "big", "pid": 2**70, "tid": -0, "ts": 4, "dur": 1},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": "stream 3", "ts": "5.5", "dur": "0.25",
     "args": {"correlation": 9, "device": 0, "stream": 3, "graph id": 2, "est. achieved occupancy %": "12.5"}},
    {"ph": "X", "cat": "python_function", "name": "dropped", "pid": 0, "tid": 7, "ts": 6, "dur": 1},
    {"ph": "f", "cat": "ac2g", "id": 9, "pid": 0, "tid": 7, "ts": 5.5},
]  # fmt: skip


def test_wire_kinds_give_the_lenient_rows() -> None:
    """Every column kind of the fast chunk encoding (distinct strings, number text, JSON text, value lists)
    gives, once the rows are finished, exactly the rows of the lenient encoding (every field as JSON text),
    which follows json.loads then a String cast."""
    from tracekit.readers import kineto as K
    from tracekit.readers import kineto_wire as kw

    text = json.dumps(WIRE_EVENTS).encode()
    fast, lenient = kj._DECODE_FAST.decode(text), kj._DECODE_EVENTS.decode(text)
    wire_fast, wire_lenient = kw.encode_chunk(fast), kw.encode_chunk(lenient)
    kinds = {name: kind for name, (kind, _) in wire_fast[2].items()}
    assert kinds["name"] == "list" and kinds["pid"] == "list" and kinds["cat"] == "dict"
    assert kinds["ts"] == "raw" and kinds["a_occupancy"] == "raw" and kinds["a_correlation"] == "num"
    rows_fast, cats_fast, _, bad = K.wire_rows(wire_fast)
    rows_lenient, cats_lenient, _, bad_lenient = K.wire_rows(wire_lenient)
    assert cats_fast == cats_lenient == {"kernel", "cuda_runtime", "python_function", "ac2g"}
    finished = K._finish_rows([rows_fast])
    assert bad == bad_lenient == 0 and finished.height == 5  # python_function and the flow are not kept
    assert_frame_equal(finished, K._finish_rows([rows_lenient]))
    assert finished["name"].to_list() == [None, "a\u001fb", "cudaLaunchKernel", "big", "k"]
    assert finished["pid"].to_list() == ["0", "0", "host", str(2**70), "0"]
    assert finished["tid"].to_list() == ["7", "7", "7", "0", "stream 3"]
    assert finished["start"].to_list() == [1000, 2000, 3000, 4000, 5500]
    assert finished["a_occupancy"].to_list() == [None, None, None, None, "12.5"]
    assert finished["a_graph"].to_list() == [None, None, None, None, 2]


def test_wire_repeated_names_are_sent_once() -> None:
    """A name repeated on many rows crosses as one string plus positions (the frame side gathers it, so
    polars string views share one copy), and comes back on every row."""
    from tracekit.readers import kineto as K
    from tracekit.readers import kineto_wire as kw

    name = "void at::native::elementwise_kernel<128, 4, " + "x" * 300 + ">"
    events = [
        {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": i, "dur": 1} for i in range(5000)
    ]
    wire = kw.encode_chunk(kj._DECODE_FAST.decode(json.dumps(events).encode()))
    assert wire[2]["name"][0] == "dict" and wire[2]["name"][1][0] == name  # one distinct name sent
    rows = K.wire_rows(wire)[0]
    assert rows["name"].to_list() == [name] * 5000
    assert len(wire[2]["name"][1][0]) + len(wire[2]["name"][1][1]) < 5000 * 3  # not 5000 x 345 bytes


@pytest.mark.parametrize("batch_rows", [1, 7, 1 << 15])
def test_batches_of_any_size_give_the_same_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_rows: int
) -> None:
    """Decoded chunks are merged into wire batches (kineto_wire._Batch): a batch per chunk, a few chunks
    per batch, or all of them (with flushes where a chunk's column kinds differ, as pid 5 then "5" here)
    give the frames of the default reading, on the tricky events and on the sample torch.profiler trace."""
    from tracekit.readers import kineto_wire as kw

    tricky = _write(tmp_path, "tricky.json", json.dumps({"traceEvents": TRICKY_EVENTS + WIRE_EVENTS}))
    sample = Path("sample_traces/cpu_pytorch_bert_torch/pytorch_b1_s128.torch.json.gz")
    expected = {path: _frames(read(path)) for path in (tricky, sample)}
    monkeypatch.setattr(kw, "BATCH_ROWS", batch_rows)
    for path, frames in expected.items():
        monkeypatch.setattr(kj, "CHUNK_BYTES", 300 if path == tricky else 1 << 16)
        again = _frames(read(path))
        for name, frame in frames.items():
            assert_frame_equal(again[name], frame)


#: JSON number texts for ts/dur: Kineto's own spelling (three fraction digits, up to the int64-ns limit and
#: past it), and the spellings that must keep the text path (other fraction lengths, integers, exponents)
_US_NUMBER = st.one_of(
    st.decimals(min_value=Decimal("-9.3e15"), max_value=Decimal("9.3e15"), places=3, allow_nan=False).map(
        lambda d: format(d, "f")
    ),
    st.sampled_from(
        ["9223372036854775.807", "9223372036854774.999", "-9223372036854774.999", "0.000", "-0.000",
         "99999999999999999999.000", "1.5", "1.2345", "12", "-3", "1.000e3", "2.500E-1", "7.25",
         "[1.000,5]", "[2.000]", "null"]
    ),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_US_NUMBER, _US_NUMBER), min_size=1, max_size=6))
@example([("[1.000,5]", "1.000"), ("2.000", "1.000")])  # one point per value and a ".ddd," after each
def test_wire_ns_kind_gives_the_exact_conversion(values: list[tuple[str, str]]) -> None:
    """ts/dur texts that are all Kineto's spelling (-?digits.ddd) cross as nanoseconds (the ``"ns"`` wire
    kind: points removed); any other spelling in the chunk (arrays, nulls) keeps a text kind. Either way the rows' start
    and duration are :func:`us_to_ns` of the texts (nulls past int64 ns; a null duration reads as 0)."""
    import re

    from tracekit.readers import kineto as K
    from tracekit.readers import kineto_wire as kw

    events = ",".join(
        f'{{"ph": "X", "cat": "kernel", "name": "k", "ts": {ts}, "dur": {dur}}}' for ts, dur in values
    )
    wire = kw.encode_chunk(kj._DECODE_FAST.decode(f"[{events}]".encode()))
    kineto_spelling = re.compile(r"-?\d+\.\d{3}")
    for i, field in enumerate(("ts", "dur")):
        texts = [v[i] for v in values]
        if all(kineto_spelling.fullmatch(t) for t in texts):
            assert wire[2][field][0] == "ns"
        else:  # a text kind: "num", or "raw" for the arrays
            assert wire[2][field][0] in ("num", "raw")
    rows, _, _, bad = K.wire_rows(wire)
    exact = pl.DataFrame({"ts": [v[0] for v in values], "dur": [v[1] for v in values]}).select(
        start=us_to_ns(pl.col("ts")), dur_ns=us_to_ns(pl.col("dur")).fill_null(0)
    )
    # (kernels without a readable ts keep their place, untimed: other events without one are skipped)
    assert bad == 0
    assert rows["start"].to_list() == exact["start"].to_list()
    assert rows["dur_ns"].to_list() == exact["dur_ns"].to_list()


# ------------------------------------------------------------ spellings strict JSON lacks, damaged text


#: the second kernel's occupancy in SYNTHETIC_CURRENT_RAW
_OCCUPANCY = '"est. achieved occupancy %": 25.5}'


@pytest.mark.parametrize("token", NON_FINITE_SPELLINGS)
@pytest.mark.parametrize("chunk_bytes", [200, 1 << 20])
@pytest.mark.parametrize("encoding", ["utf-8", "utf-8 gz", "utf-16"])
def test_non_finite_numbers_read_as_missing_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, token: str, chunk_bytes: int, encoding: str
) -> None:
    # C/C++ formatting writes inf/nan, Python's json NaN/Infinity; Kineto once wrote
    # "memory bandwidth (GB/s)": inf for zero-duration memcpys (kineto#105). Not JSON, but real traces:
    # read as null, i.e. the value is missing (an occupancy of inf would be a wrong number).
    monkeypatch.setattr(kj, "CHUNK_BYTES", chunk_bytes)
    assert SYNTHETIC_CURRENT_RAW.count(_OCCUPANCY) == 1
    unread = SYNTHETIC_CURRENT_RAW.replace(
        _OCCUPANCY, _OCCUPANCY[:-1] + f', "memory bandwidth (GB/s)": {token}}}'
    )
    occupancy = SYNTHETIC_CURRENT_RAW.replace(_OCCUPANCY, f'"est. achieved occupancy %": {token}}}')
    missing = SYNTHETIC_CURRENT_RAW.replace(_OCCUPANCY, '"est. achieved occupancy %": null}')
    # top-level values before and after the events array too
    unread = unread.replace('"schemaVersion": 1,', f'"schemaVersion": 1, "head": {token},', 1)
    unread = unread[: unread.rindex("}")].rstrip() + f', "tail": {token}\n}}'
    assert f'"head": {token}' in unread and unread.endswith(f'"tail": {token}\n}}')
    codec, gz = encoding.split(" ")[0], encoding.endswith("gz")
    expected = _frames(read(_write(tmp_path, "missing.json", missing)))
    assert expected["km"].height == EXPECTED_CURRENT_KERNEL_METRICS.height - 1  # that value is missing
    for name, text, want in (
        ("unread", unread, _frames(read(_write(tmp_path, "clean.json", SYNTHETIC_CURRENT_RAW)))),
        ("occupancy", occupancy, expected),
    ):
        got = _frames(read(_write(tmp_path, name + ".json" + (".gz" if gz else ""), text.encode(codec), gz)))
        for frame in want:
            assert_frame_equal(got[frame], want[frame])


#: text that looks like the tokens or like JSON structure, to put inside strings
_TRICKY = st.text(alphabet=list('infaIty-N :,[]{}"\\x\u00e9'), max_size=12)


def _decode_repairing(text: bytes) -> tuple[Any, int]:
    """(``text`` decoded with every non-finite number read as null, decodes it took)."""
    tries = 0
    while True:
        tries += 1
        try:
            return kj.msgspec.json.decode(text), tries
        except kj.msgspec.DecodeError as exc:
            repaired = kj.repair_non_finite(text, exc)
            assert repaired is not None, exc
            text = repaired


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            _TRICKY,
            st.one_of(st.integers(-5, 5), st.sampled_from(NON_FINITE_SPELLINGS)),
            st.sampled_from([" ", ""]),
        ),
        min_size=1,
        max_size=12,
    )
)
@example([('say \\"inf\\", nan', "inf", " "), ("[inf, -nan", "NaN", ""), ("x", 3, " ")])
@example([("[inf, -nan", "NaN", ""), ("x: Infinity", "-Infinity", " "), ("nan", 2, "")])
def test_non_finite_numbers_are_read_as_null_outside_strings_only(
    values: list[tuple[str, int | str, str]],
) -> None:
    # however many there are, in one repair (two decodes), and nothing inside a string is touched
    parts = [
        f'{{"name":{json.dumps(name)},"v":{space}{value}, "w": [{value}]}}' for name, value, space in values
    ]
    text = ("[" + ",".join(parts) + "]").encode()
    decoded, tries = _decode_repairing(text)
    expected = [
        {
            "name": name,
            "v": value if isinstance(value, int) else None,
            "w": [value if isinstance(value, int) else None],
        }
        for name, value, _ in values
    ]
    assert decoded == expected
    assert tries <= 2


def test_many_non_finite_numbers_cost_one_more_decode_per_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a non-finite value in every event with args (kineto#105's memcpy bandwidth) used to cost one decode of
    # the chunk per value: 6x the time of the clean file at one value in ten kernels of the benchmark's
    # 10^5-kernel trace. Now one more decode per chunk (per pass over the file), and the frames equal the
    # clean file's.
    monkeypatch.setattr(kj, "CHUNK_BYTES", 1 << 20)
    clean = SYNTHETIC_CURRENT_RAW
    marked = clean.replace('"correlation":', '"memory bandwidth (GB/s)": inf, "mb2": -nan, "correlation":')
    assert marked.count(": inf,") + marked.count(": -nan,") >= 6
    calls: list[int] = []
    decode = kj._decode_events
    monkeypatch.setattr(kj, "_decode_events", lambda text, lenient: calls.append(1) or decode(text, lenient))
    want = _frames(read(_write(tmp_path, "clean.json", clean)))
    clean_calls = len(calls)
    assert clean_calls >= 1  # one per pass over the one-chunk file
    calls.clear()
    got = _frames(read(_write(tmp_path, "marked.json", marked)))
    assert len(calls) == 2 * clean_calls, (len(calls), clean_calls)
    for frame in want:
        assert_frame_equal(got[frame], want[frame])


def test_bytes_that_are_not_utf8_read_as_replacement_characters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # in a name decoded as a string (the typed path) and in every field read as JSON text (the lenient
    # path: a float pid sends the chunk there), as trace viewers show them; the rest reads as before
    monkeypatch.setattr(kj, "CHUNK_BYTES", 200)
    data = SYNTHETIC_CURRENT_RAW.encode().replace(b'"gemm_kernel"', b'"gemm_k\xe9rnel"')
    lenient = data.replace(b'"pid": 100, "tid": 101, "ts": 15,', b'"pid": 100.5, "tid": 101, "ts": 15,')
    assert lenient != data
    expected = EXPECTED_CURRENT_OPS.with_columns(
        pl.col("name").str.replace("gemm_kernel", "gemm_k\ufffdrnel")
    )
    for gz in (False, True):
        assert_frame_equal(
            read(_write(tmp_path, "typed.json" + (".gz" if gz else ""), data, gz)).ops, expected
        )
        assert_frame_equal(
            read(_write(tmp_path, "lenient.json" + (".gz" if gz else ""), lenient, gz)).ops, expected
        )


@pytest.mark.parametrize("gz", [False, True])
def test_invalid_text_fails_at_once_naming_its_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gz: bool
) -> None:
    # an error inside a chunk's text (not at its end, where a cut inside a string or a nested value puts it)
    # cannot be mended by cutting elsewhere: one try per chunk, then the one-line error with the byte of the
    # JSON text. (Before, every earlier cut was tried and the window doubled: minutes on a 100 MB trace.)
    monkeypatch.setattr(kj, "CHUNK_BYTES", 200)
    data = SYNTHETIC_CURRENT_RAW.encode()
    at = data.index(b"20.0015")
    damaged = data[:at] + b"2x.0015" + data[at + 7 :]
    tries: list[int] = []
    decode = kj._decode_chunk
    monkeypatch.setattr(
        kj, "_decode_chunk", lambda text, lenient=False: tries.append(1) or decode(text, lenient)
    )
    with pytest.raises(TraceFormatError) as err:
        read(_write(tmp_path, "damaged.json" + (".gz" if gz else ""), damaged, gz))
    message = str(err.value)
    assert "truncated or invalid JSON: JSON is malformed: " in message
    assert message.endswith(f" at byte {at + 1} of the JSON text")
    assert "\n" not in message and damaged[at + 1 : at + 2] == b"x"
    chunks_before = at // 200 + 1
    assert len(tries) <= 2 * chunks_before + 2, len(tries)
