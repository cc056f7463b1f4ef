"""Kineto decoding in worker processes (:mod:`tracekit.readers.kineto_worker`) and the file parts they
share (``stream_events(..., part=(k, n))``): the worker path gives exactly the in-process frames and meta
(sample and real traces, any number of parts), the parts of a file concatenate to the whole, a part cut
inside an event falls back to in-process decoding, damaged files give the in-process error (and the CLI's
one-line error), lost workers fall back, prefetch/take, no polars in the worker modules, and no worker
process outlives a read. The generated traces here are synthetic (hand-built)."""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import polars as pl
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import tracekit.readers.kineto_json as kj
import tracekit.readers.kineto_stream as ks
import tracekit.readers.kineto_worker as kw
from tests.builders import NON_FINITE_SPELLINGS, write_file
from tests.conftest import REPO, SAMPLE_TRACES, real_trace
from tracekit.errors import TraceFormatError
from tracekit.model import Trace
from tracekit.readers.kineto import read

SAMPLES = [
    *sorted(
        p.relative_to(SAMPLE_TRACES).as_posix() for p in SAMPLE_TRACES.glob("synthetic/table3_*/*.json.gz")
    ),
    "cpu_pytorch_bert_torch/pytorch_b1_s128.torch.json.gz",
]
#: real traces (../shared/real_traces/kineto), each test skipped when absent: a small one, a DDP trace and
#: one over the forked workers' size (WORKER_MIN_JSON_BYTES)
REAL = [
    "hta_mi250_rocm_minitoy.json.gz",
    "hta_a100_ddp_nccl_rank0.json.gz",
    "kineto_tbplugin_v100_resnet50_worker0.pt.trace.json.gz",
]
PYTORCH_SAMPLE = SAMPLE_TRACES / "synthetic/table3_pytorch/pytorch_b1_s128.synthetic.json.gz"


# ------------------------------------------------------------------------------------------- helpers


def _frames(trace: Trace) -> dict[str, pl.DataFrame | None]:
    return {
        "ops": trace.ops,
        "api": trace.api,
        "ranges": trace.ranges,
        "kernel_metrics": trace.kernel_metrics,
        "cpu_ops": trace.cpu_ops,
    }


def _meta(trace: Trace) -> dict[str, Any]:
    return {k: v for k, v in trace.meta.items() if k != "path"}


def _assert_same_trace(got: Trace, expected: Trace) -> None:
    want = _frames(expected)
    for name, frame in _frames(got).items():
        if want[name] is None or frame is None:
            assert frame is None and want[name] is None, name
        else:
            try:
                assert_frame_equal(frame, want[name])
            except AssertionError as exc:
                raise AssertionError(f"{name}: {exc}") from None
    assert _meta(got) == _meta(expected)


def _read_in_process(monkeypatch: pytest.MonkeyPatch, path: Path) -> Trace:
    """``read(path)`` decoded in this process (TRACEKIT_DECODE_WORKER=0); leaves the switch at 1 (workers)."""
    monkeypatch.setenv(kw.ENV, "0")
    trace = read(path)
    monkeypatch.setenv(kw.ENV, "1")
    return trace


def _error_in_process(monkeypatch: pytest.MonkeyPatch, path: Path) -> str:
    """The TraceFormatError message of ``read(path)`` in this process; leaves the switch at 1."""
    monkeypatch.setenv(kw.ENV, "0")
    with pytest.raises(TraceFormatError) as err:
        read(path)
    monkeypatch.setenv(kw.ENV, "1")
    return str(err.value)


class Spy:
    """Records the workers started (:func:`kw.start`) and what each ``Workers.chunks`` call gave: the
    chunks per part and how it ended ("done", or "lost" for WorkerLost)."""

    def __init__(self) -> None:
        self.started: list[kw.Workers] = []
        self.start_failed = 0
        self.reads: list[dict[str, Any]] = []

    def outcomes(self) -> list[str]:
        return [r["outcome"] for r in self.reads]

    def assert_exited(self) -> None:
        """Every worker process started has exited and every message pump thread has ended."""
        for workers in self.started:
            for proc in workers.procs:
                assert proc.poll() is not None, f"worker {proc.pid} still running"
        deadline = time.monotonic() + 10
        for thread in threading.enumerate():
            if thread.name.startswith("kineto-decode-"):
                thread.join(max(0.0, deadline - time.monotonic()))
                assert not thread.is_alive(), f"{thread.name} still running"


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Iterator[Spy]:
    record = Spy()
    start, chunks = kw.start, kw.Workers.chunks

    def recording_start(path: Path) -> kw.Workers:
        try:
            workers = start(path)
        except kw.WorkerLost:
            record.start_failed += 1
            raise
        record.started.append(workers)
        return workers

    def recording_chunks(self: kw.Workers, progress: Any, header: Any) -> Iterator[tuple[int, Any]]:
        entry: dict[str, Any] = {"workers": self, "parts": {}, "outcome": "closed"}
        record.reads.append(entry)
        try:
            for index, wire in chunks(self, progress, header):
                entry["parts"][index] = entry["parts"].get(index, 0) + 1
                yield index, wire
        except kw.WorkerLost:  # a worker's error too: the reader then decodes the file itself
            entry["outcome"] = "lost"
            raise
        entry["outcome"] = "done"

    monkeypatch.setattr(kw, "start", recording_start)
    monkeypatch.setattr(kw.Workers, "chunks", recording_chunks)
    before = set(kw._PREFETCHED)
    yield record
    for key in set(kw._PREFETCHED) - before:  # prefetched by the test and not taken
        kw._PREFETCHED.pop(key).close()
    for workers in record.started:
        workers.close()


def _parts(monkeypatch: pytest.MonkeyPatch, parts: int) -> None:
    """Workers share each file in ``parts`` parts, whatever the cores of this machine."""
    monkeypatch.setattr(kw, "worker_count", lambda json_size=None: parts)


# ------------------------------------------------------------------------ 1. worker == in-process


def _file_says(path: Path) -> dict[str, Any] | None:
    """What the file holds, decoded by the standard library's json (exact decimals, no code shared with the
    reader): every GPU kernel's (start ns, end ns, name), the memcpy count and the runtime/driver call count.
    None for a file that is not standard JSON (the reader's extensions: bare inf/nan, bytes not UTF-8)."""
    from decimal import Decimal

    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data = gzip.decompress(data)
    try:
        doc = json.loads(data, parse_float=Decimal)
    except ValueError:
        return None
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    complete = [e for e in events if isinstance(e, dict) and e.get("ph") == "X"]

    def ns(value: Any) -> int:
        return int(Decimal(value) * 1000)

    def cat(e: dict[str, Any]) -> str:
        return str(e.get("cat") or "").lower()

    return {
        "kernels": sorted(
            (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"]) for e in complete if cat(e) == "kernel"
        ),
        "memcpy": sum(cat(e) in ("gpu_memcpy", "memcpy") for e in complete),
        "api": sum(cat(e) in ("cuda_runtime", "cuda_driver", "runtime") for e in complete),
    }


def _trace_says(trace: Trace) -> dict[str, Any]:
    kind = pl.col("kind").cast(pl.String)
    return {
        "kernels": sorted(trace.ops.filter(kind == "kernel").select("start", "end", "name").rows()),
        "memcpy": trace.ops.filter(kind == "memcpy").height,
        "api": trace.api.height,
    }


def _check_worker_equals_in_process(
    monkeypatch: pytest.MonkeyPatch, spy: Spy, path: Path, parts: int
) -> None:
    """The workers' frames are what the file holds (kernels, memcpys, API calls, checked against the
    standard library's decoding where the file is standard JSON) and equal the in-process frames exactly."""
    _parts(monkeypatch, parts)
    expected = _read_in_process(monkeypatch, path)
    assert spy.started == []  # TRACEKIT_DECODE_WORKER=0: no worker
    got = read(path)
    truth = _file_says(path)
    if truth is not None:
        assert _trace_says(got) == truth
    _assert_same_trace(got, expected)
    # the workers really decoded the file: one start, every part sent chunks, none was lost
    assert len(spy.started) == 1 and len(spy.started[0].procs) == parts
    assert spy.outcomes() == ["done"]
    assert sorted(spy.reads[0]["parts"]) == list(range(parts))
    spy.assert_exited()


@pytest.mark.parametrize("gz", [False, True])
def test_worker_equals_in_process_with_non_finite_numbers_and_bytes_not_utf8(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: Spy, gz: bool
) -> None:
    # the spellings read beyond strict JSON (an unread arg of inf on 200 events, a kernel name with a byte
    # that is not UTF-8) read the same in the workers as in this process
    text = gzip.decompress(PYTORCH_SAMPLE.read_bytes())
    text = text.replace(b'"args": {', b'"args": {"memory bandwidth (GB/s)": inf, ', 200)
    at = text.index(b'"cat": "kernel", "name": "') + len(b'"cat": "kernel", "name": "')
    text = text[:at] + b"\xe9" + text[at:]
    path = write_file(tmp_path, "quirks.json" + (".gz" if gz else ""), text, gz)
    _check_worker_equals_in_process(monkeypatch, spy, path, 3)
    assert read(path).ops.get_column("name").str.starts_with("\ufffd").sum() == 1


@pytest.mark.parametrize("parts", [2, 4])
@pytest.mark.parametrize("name", SAMPLES)
def test_worker_equals_in_process_on_sample_traces(
    monkeypatch: pytest.MonkeyPatch, spy: Spy, name: str, parts: int
) -> None:
    _check_worker_equals_in_process(monkeypatch, spy, SAMPLE_TRACES / name, parts)


@pytest.mark.parametrize("name", REAL)
def test_worker_equals_in_process_on_real_traces(
    monkeypatch: pytest.MonkeyPatch, spy: Spy, name: str
) -> None:
    _check_worker_equals_in_process(monkeypatch, spy, real_trace("kineto", name), 3)


@pytest.mark.parametrize("gz", [False, True])
def test_worker_equals_in_process_with_top_level_keys_after_the_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: Spy, gz: bool
) -> None:
    # the last part alone reads the keys after the events array (distributedInfo: meta["rank"])
    text = _document(_generated_events(400, seed=7), indent=None, bare=False)
    path = write_file(tmp_path, "gen.json.gz" if gz else "gen.json", text, gz)
    _check_worker_equals_in_process(monkeypatch, spy, path, 3)
    assert spy.reads[0]["workers"].path == path
    assert read(path).meta["rank"] == 2


@pytest.mark.parametrize("parts", [3, 4])
def test_worker_equals_in_process_when_one_event_spans_a_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: Spy, parts: int
) -> None:
    # three events, the second longer than a part: a part that starts and ends at the same cut holds no
    # event (it read on, and the kernel after it came twice: two kernels in ops instead of one)
    text = _document(_generated_events(3, seed=0), indent=None, bare=False)
    path = write_file(tmp_path, "spanned.json", text)
    _parts(monkeypatch, parts)
    expected = _read_in_process(monkeypatch, path)
    assert expected.ops.height == 1
    got = read(path)
    _assert_same_trace(got, expected)
    assert len(spy.started) == 1 and len(spy.started[0].procs) == parts
    assert spy.outcomes() == ["done"]
    assert len(spy.reads[0]["parts"]) < parts  # some part sent no chunk
    spy.assert_exited()


def test_default_worker_count_equals_in_process(monkeypatch: pytest.MonkeyPatch, spy: Spy) -> None:
    # as many parts as worker_count() gives on this machine for this file (1 to MAX_WORKERS)
    count = kw.worker_count(kw.json_bytes(PYTORCH_SAMPLE))
    assert 1 <= count <= kw.MAX_WORKERS
    _check_worker_equals_in_process(monkeypatch, spy, PYTORCH_SAMPLE, count)


@pytest.mark.parametrize(
    ("cores", "json_size", "expected"),
    [
        (1, None, 1),
        (1, 1 << 30, 1),
        (2, 100 << 20, 2),
        (8, 100 << 20, 2),  # a 10^5-kernel trace: two keep ahead of the analyzing process
        (8, (256 << 20) - 1, 2),
        (8, 256 << 20, 3),  # a third from 256 MB of JSON
        (8, 1 << 30, 3),
        (8, None, 3),
        (2, 1 << 30, 2),
    ],
)
def test_worker_count_follows_the_cores_and_the_size(
    monkeypatch: pytest.MonkeyPatch, cores: int, json_size: int | None, expected: int
) -> None:
    monkeypatch.setattr(kw.os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert kw.worker_count(json_size) == expected


def test_wanted_follows_the_switch_and_the_size(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = write_file(tmp_path, "t.json", "x" * 100)
    zipped = write_file(tmp_path, "t.json.gz", gzip.compress(b"x" * 1000))
    assert kw.json_bytes(path) == 100 and kw.json_bytes(zipped) == zipped.stat().st_size * kw.GZIP_RATIO
    monkeypatch.setenv(kw.ENV, "0")
    monkeypatch.setattr(kw, "WORKER_MIN_JSON_BYTES", {"fork": 10, "spawn": 10})
    assert not kw.wanted(path)
    monkeypatch.setenv(kw.ENV, "1")
    monkeypatch.setattr(kw, "WORKER_MIN_JSON_BYTES", {"fork": 1000, "spawn": 1000})
    assert kw.wanted(path)
    monkeypatch.delenv(kw.ENV)
    assert not kw.wanted(path)
    monkeypatch.setattr(kw, "WORKER_MIN_JSON_BYTES", {"fork": 100, "spawn": 101})
    monkeypatch.setattr(kw, "_can_fork", lambda: True)
    assert kw.wanted(path)  # forked workers from 100 bytes
    monkeypatch.setattr(kw, "_can_fork", lambda: False)
    assert not kw.wanted(path)  # fresh interpreters only from 101
    assert not kw.wanted(tmp_path / "missing.json")


# ------------------------------------------------------------------ 2. parts concatenate to the whole

_CATS = ["kernel", "cuda_runtime", "cpu_op", "user_annotation", "gpu_memcpy", "python_function", "Trace"]
#: characters that spell event boundaries, escapes and unicode inside names (JSON escapes every '"')
_NAME_CHARS = 'ab}{,:" []\\é中\t'


def _generated_events(count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` synthetic events of varied lengths: complete events (some with nested args that hold no
    event boundary), flow starts, instants and metadata."""
    rng = random.Random(seed)
    events: list[dict[str, Any]] = []
    for i in range(count):
        name = "".join(rng.choice(_NAME_CHARS) for _ in range(rng.randrange(0, 40)))
        kind = rng.random()
        if kind < 0.75:
            event: dict[str, Any] = {
                "ph": "X",
                "cat": rng.choice(_CATS),
                "name": name,
                "pid": rng.choice([0, 1, 100]),
                "tid": rng.choice([1, 7, "stream 7"]),
                "ts": rng.randrange(10**15, 2 * 10**15) / 1000,
                "dur": rng.randrange(0, 10**6),
            }
            args: dict[str, Any] = {"correlation": i}
            if rng.random() < 0.5:
                args.update(device=0, stream=7, **{"est. achieved occupancy %": rng.randrange(100)})
            if rng.random() < 0.3:
                args["nested"] = {"a": [1, {"b": name}], "pad": "p" * rng.randrange(0, 200)}
            event["args"] = args
        elif kind < 0.85:
            event = {"ph": "s", "cat": "ac2g", "name": name, "id": i, "pid": 1, "tid": 1, "ts": i}
        elif kind < 0.95:
            event = {"ph": "i", "cat": "instant", "name": name, "pid": 1, "tid": 1, "ts": i, "s": "t"}
        else:
            event = {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": name}}
        events.append(event)
    return events


def _document(events: list[dict[str, Any]], indent: int | None, bare: bool) -> str:
    if bare:
        return json.dumps(events, indent=indent)
    head = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Synthetic GPU", "numSms": 2}]}
    doc = {**head, "traceEvents": events, "traceName": "gen]}", "distributedInfo": {"rank": 2}, "f": 1.50}
    return json.dumps(doc, indent=indent, ensure_ascii=False)


def _events_of(chunks: Iterator[list[Any]]) -> list[tuple[str, bytes]]:
    return [(type(e).__name__, msgspec.json.encode(e)) for chunk in chunks for e in chunk]


def _false_cuts(path: Path, events: int) -> int:
    """How many boundary candidates (``kj._CUT``: ``}, {"``) of the file are not between two events: the
    candidates beyond the ``events - 1`` separators of the events array (a string or a nested array can hold
    the same bytes)."""
    data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    return len(kj._CUT.findall(data)) - max(events - 1, 0)


def _check_parts_concatenate(
    path: Path, max_parts: int = 4
) -> tuple[list[tuple[str, bytes]], dict[str, Any]]:
    """For n in 1..max_parts: the events of parts 0..n-1 in order are the whole file's, and their headers
    merged in order are its header; returns (the whole file's events, its header). A cut may fall on a
    candidate that is not between events (inside a string): then the part before it raises
    PartBoundaryError, on which the reader decodes the file in one part (test_boundary_inside_an_event_falls_back_to_in_process); that is
    accepted only where the file holds such a candidate."""
    whole_header: dict[str, Any] = {}
    whole = _events_of(ks.stream_events(path, header=whole_header))
    for n in range(1, max_parts + 1):
        events: list[tuple[str, bytes]] = []
        merged: dict[str, Any] = {}
        try:
            for k in range(n):
                header: dict[str, Any] = {}
                events += _events_of(ks.stream_events(path, header=header, part=(k, n)))
                merged.update(header)
        except ks.PartBoundaryError:
            assert _false_cuts(path, len(whole)) > 0, (
                f"parts of {n}: a boundary refused with no false candidate"
            )
            continue
        assert events == whole, f"parts of {n}"
        assert merged == whole_header, f"headers of {n} parts"
    return whole, whole_header


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    count=st.integers(min_value=0, max_value=300),
    seed=st.integers(min_value=0, max_value=2**32),
    indent=st.sampled_from([None, 1]),
    gz=st.booleans(),
    bare=st.sampled_from([False, False, False, True]),
    read_bytes=st.sampled_from([64, 200, 1 << 18]),
)
# an event longer than a part: parts 1 and 2 of 3 started at the same cut, and both read the last event
@example(count=3, seed=0, indent=None, gz=False, bare=False, read_bytes=1 << 18)
@example(count=3, seed=0, indent=1, gz=True, bare=False, read_bytes=64)
# a name holding '}, {"' where the 3-part cut falls (found by CI): the part before it refuses the boundary
@example(count=36, seed=1327134, indent=None, gz=False, bare=False, read_bytes=64)
def test_parts_concatenate_to_the_whole(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    count: int,
    seed: int,
    indent: int | None,
    gz: bool,
    bare: bool,
    read_bytes: int,
) -> None:
    monkeypatch.setattr(kj, "CHUNK_BYTES", 200)
    monkeypatch.setattr(ks, "READ_BYTES", read_bytes)
    events = _generated_events(max(count, 1) if bare else count, seed)  # "[]" is no Kineto trace
    text = _document(events, indent, bare)
    path = write_file(tmp_path, "gen.json.gz" if gz else "gen.json", text, gz)
    whole, header = _check_parts_concatenate(path)
    # the whole file's stream is the document itself: every event, the header as split_document gives it
    assert len(whole) == len(events)
    assert header == kj.split_document(text.encode(), path)[0]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    count=st.integers(min_value=1, max_value=200),
    seed=st.integers(min_value=0, max_value=2**32),
    every=st.integers(min_value=1, max_value=5),
    chunk_bytes=st.sampled_from([200, 700, 1 << 20]),
    bare=st.sampled_from([False, False, True]),
)
def test_non_finite_numbers_read_as_null_in_every_chunk_and_part(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    count: int,
    seed: int,
    every: int,
    chunk_bytes: int,
    bare: bool,
) -> None:
    # non-finite values in args of many events (names full of quotes, backslashes, braces and "inf" text
    # beside them), cut into chunks anywhere and into parts: the events read as those of the same file with
    # null in their place, in one part and in 2..4
    monkeypatch.setattr(kj, "CHUNK_BYTES", chunk_bytes)
    monkeypatch.setattr(ks, "READ_BYTES", 200)
    rng = random.Random(seed)
    events = _generated_events(count, seed)
    tokens = []
    for i, event in enumerate(events):
        if i % every == 0 and isinstance(event.get("args"), dict):
            event["args"]["bw"] = f"@TOKEN{len(tokens)}@"
            event["name"] = f"{event['name']} inf, nan: [-Infinity"
            tokens.append(rng.choice(NON_FINITE_SPELLINGS))
    text = _document(events, None, bare)
    nulled = tokened = text
    for k, token in enumerate(tokens):
        nulled = nulled.replace(f'"@TOKEN{k}@"', "null")
        tokened = tokened.replace(f'"@TOKEN{k}@"', token)
    want = _events_of(ks.stream_events(write_file(tmp_path, "nulled.json", nulled), header={}))
    path = write_file(tmp_path, "tokened.json", tokened)
    got, _ = _check_parts_concatenate(path)
    assert got == want
    assert len(got) == len(events)


def test_parts_of_a_sample_trace_concatenate_to_the_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kj, "CHUNK_BYTES", 50_000)
    monkeypatch.setattr(ks, "READ_BYTES", 4096)
    _check_parts_concatenate(
        SAMPLE_TRACES / "synthetic/table3_onnx-cuda-graphs/onnx-cuda-graphs_b1_s128.synthetic.json.gz"
    )


# ------------------------------------------------------------------- 3. a part boundary inside an event


def _nested_events(count: int, every: int) -> list[dict[str, Any]]:
    """Kernels and their launches; every ``every``-th launch carries ``args`` with a nested array of
    objects (``}, {"`` inside the event: an event boundary candidate that is not one)."""
    events: list[dict[str, Any]] = []
    for i in range(count):
        launch: dict[str, Any] = {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": 10 * i,
            "dur": 2,
            "args": {"correlation": i},
        }
        if i % every == 0:
            launch["args"]["x"] = [{"a": j} for j in range(12)]
        kernel = {
            "ph": "X",
            "cat": "kernel",
            "name": f"k{i % 5}",
            "pid": 0,
            "tid": 7,
            "ts": 10 * i + 3,
            "dur": 5,
            "args": {"device": 0, "stream": 7, "correlation": i},
        }
        events += [launch, kernel]
    return events


def _nested_file(tmp_path: Path, every: int = 1, name: str = "nested.json") -> Path:
    doc = {"schemaVersion": 1, "traceEvents": _nested_events(150, every), "traceName": "nested"}
    return write_file(tmp_path, name, json.dumps(doc))


def test_boundary_inside_an_event_is_a_part_boundary_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kj, "CHUNK_BYTES", 200)
    raised: list[tuple[int, int, int]] = []
    clean = 0
    for every in (1, 3):
        path = _nested_file(tmp_path, every)
        whole = _events_of(ks.stream_events(path))
        for read_bytes in (64, 700, 1 << 18):
            monkeypatch.setattr(ks, "READ_BYTES", read_bytes)
            for n in (2, 3, 4):
                events: list[tuple[str, bytes]] = []
                failed = False
                for k in range(n):
                    try:
                        events += _events_of(ks.stream_events(path, part=(k, n)))
                    except ks.PartBoundaryError:
                        # only the part before a boundary raises it: never the last one
                        assert k < n - 1
                        raised.append((read_bytes, n, k))
                        failed = True
                    except TraceFormatError:
                        failed = True  # a part that starts inside an event (its predecessor raised)
                if not failed:  # every cut between events: the parts are the whole
                    clean += 1
                    assert events == whole
    assert raised, "no part boundary landed inside an event"
    assert clean, "every split failed (the file is meant to have clean splits too)"


def _ordered_pumps(monkeypatch: pytest.MonkeyPatch, first: int) -> None:
    """The workers' messages reach the reader part ``first``'s first (all of them, up to its last one),
    then the others' (as the scheduling of the processes may have it)."""
    pump = kw.Workers._pump

    def ordered(self: kw.Workers, index: int, proc: subprocess.Popen[bytes]) -> None:
        gate = self.__dict__.setdefault("_test_gate", threading.Event())
        if index != first:
            gate.wait(timeout=30)
        try:
            pump(self, index, proc)
        finally:
            if index == first:
                gate.set()

    monkeypatch.setattr(kw.Workers, "_pump", ordered)


def _assert_split_inside_an_event(path: Path, parts: int) -> None:
    with pytest.raises(ks.PartBoundaryError):
        for _ in ks.stream_events(path, part=(0, parts)):
            pass


@pytest.mark.parametrize("first", [0, 1], ids=["earlier-part-first", "later-part-first"])
def test_boundary_inside_an_event_falls_back_to_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: Spy, first: int
) -> None:
    """Whichever part reports first (the earlier one: the bad cut; the later one, which starts inside an
    event: an error of its own), the reader decodes the file itself and gives the in-process frames."""
    path = _nested_file(tmp_path)
    _parts(monkeypatch, 2)
    _assert_split_inside_an_event(path, 2)
    expected = _read_in_process(monkeypatch, path)
    _ordered_pumps(monkeypatch, first=first)
    try:
        _assert_same_trace(read(path), expected)
        assert len(spy.started) == 1 and spy.outcomes() == ["lost"]
    finally:
        spy.assert_exited()


# ----------------------------------------------------------------------- 4. errors through the worker


def _truncated_gz(tmp_path: Path) -> Path:
    data = PYTORCH_SAMPLE.read_bytes()
    return write_file(tmp_path, "truncated.json.gz", data[: len(data) // 2])


def _cut_json(tmp_path: Path) -> Path:
    text = gzip.decompress(PYTORCH_SAMPLE.read_bytes())
    return write_file(tmp_path, "cut.json", text[: int(len(text) * 0.6)])


@pytest.mark.parametrize("parts", [1, 2, 4])
@pytest.mark.parametrize(
    "make, words", [(_truncated_gz, "damaged gzip file"), (_cut_json, "truncated or invalid JSON")]
)
def test_damaged_file_through_the_worker_same_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: Spy, make: Any, words: str, parts: int
) -> None:
    path = make(tmp_path)
    _parts(monkeypatch, parts)
    expected = _error_in_process(monkeypatch, path)
    assert words in expected and str(path) in expected and "\n" not in expected
    with pytest.raises(TraceFormatError) as err:
        read(path)
    assert str(err.value) == expected
    # a worker's error hands the file back: the reader decodes it itself and says what is wrong, as always
    assert len(spy.started) == 1 and spy.outcomes() == ["lost"]
    spy.assert_exited()


def test_invalid_text_through_the_worker_same_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: Spy
) -> None:
    text = gzip.decompress(PYTORCH_SAMPLE.read_bytes())
    at = text.index(b'"name": "', len(text) // 2) + len(b'"name": "ab')
    path = write_file(tmp_path, "invalid.json", text[:at] + b"\n")  # a raw newline inside a string
    _parts(monkeypatch, 2)
    expected = _error_in_process(monkeypatch, path)
    assert "truncated or invalid JSON" in expected
    with pytest.raises(TraceFormatError) as err:
        read(path)
    assert spy.outcomes() == ["lost"]  # the worker's message (offsets within its part) is not the one shown
    spy.assert_exited()
    assert str(err.value) == expected


@pytest.mark.parametrize("make", [_truncated_gz, _cut_json])
def test_cli_damaged_file_through_the_worker_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: Any
) -> None:
    path = make(tmp_path)
    expected = _error_in_process(monkeypatch, path)
    proc = subprocess.run(
        [sys.executable, "-m", "tracekit.cli", "analyze", str(path), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, kw.ENV: "1"},
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0] == f"tracekit: {expected}"


# -------------------------------------------------------------------------- 5. a lost worker falls back


def _truncating_worker(tmp_path: Path) -> str:
    """A worker command whose output stops after 300 bytes (a worker that dies mid-message)."""
    script = tmp_path / "dying_worker.sh"
    script.write_text(f'#!/bin/sh\n"{sys.executable}" "$@" | head -c 300\n')
    script.chmod(0o755)
    return str(script)


@pytest.mark.parametrize("command", ["/bin/true", "/bin/echo", "truncating", "missing"])
def test_lost_worker_falls_back_to_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: Spy, command: str
) -> None:
    path = PYTORCH_SAMPLE
    _parts(monkeypatch, 2)
    expected = _read_in_process(monkeypatch, path)
    executable = {"truncating": _truncating_worker(tmp_path), "missing": str(tmp_path / "no_python")}.get(
        command, command
    )
    # a fresh interpreter, never a fork (polars is loaded here anyway), started as this command
    monkeypatch.setattr(
        kw, "sys", types.SimpleNamespace(executable=executable, platform="linux", modules=sys.modules)
    )
    _assert_same_trace(read(path), expected)
    if command == "missing":  # cannot start: no worker, decoded here
        assert spy.start_failed == 1 and spy.started == [] and spy.reads == []
    else:
        assert len(spy.started) == 1 and spy.outcomes() == ["lost"]
    spy.assert_exited()


# ---------------------------------------------------------------------------------- 6. prefetch / take


def test_prefetch_then_take_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: Spy) -> None:
    monkeypatch.setenv(kw.ENV, "1")
    _parts(monkeypatch, 2)
    path = write_file(tmp_path, "t.json.gz", PYTORCH_SAMPLE.read_bytes())
    kw.prefetch(path)
    assert len(spy.started) == 1
    workers = kw.take(path)
    assert workers is spy.started[0] and workers.path == path
    assert kw.take(path) is None  # handed over once
    header: dict[str, Any] = {}
    try:
        assert sum(1 for _ in workers.chunks(None, header)) >= 2
    finally:
        workers.close()
    whole: dict[str, Any] = {}
    for _ in ks.stream_events(path, header=whole):
        pass
    assert header == whole and "tracekit_truth" in header  # a key after the events array
    assert spy.outcomes() == ["done"]
    spy.assert_exited()


def test_read_uses_the_prefetched_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: Spy) -> None:
    path = write_file(tmp_path, "t.json.gz", PYTORCH_SAMPLE.read_bytes())
    expected = _read_in_process(monkeypatch, path)
    _parts(monkeypatch, 2)
    kw.prefetch(path)
    assert len(spy.started) == 1
    _assert_same_trace(read(path), expected)
    assert len(spy.started) == 1 and spy.reads[0]["workers"] is spy.started[0]  # no second start
    assert spy.outcomes() == ["done"] and kw.take(path) is None
    spy.assert_exited()


def test_file_changed_after_prefetch_is_not_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: Spy
) -> None:
    monkeypatch.setenv(kw.ENV, "1")
    _parts(monkeypatch, 2)
    path = write_file(tmp_path, "t.json.gz", PYTORCH_SAMPLE.read_bytes())
    kw.prefetch(path)
    assert len(spy.started) == 1
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5 * 10**9))
    assert kw.take(path) is None
    # the stale workers stay registered under the old identity (closed by the fixture)
    assert spy.started[0] in kw._PREFETCHED.values()


def test_prefetch_does_nothing_for_other_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: Spy
) -> None:
    kineto = write_file(tmp_path, "t.json.gz", PYTORCH_SAMPLE.read_bytes())
    before = dict(kw._PREFETCHED)
    monkeypatch.setenv(kw.ENV, "1")
    sqlite = SAMPLE_TRACES / "synthetic/table3_torchscript/torchscript_b1_s128.synthetic.sqlite"
    for path in (tmp_path / "missing.json.gz", sqlite, tmp_path, write_file(tmp_path, "e.json.gz", b"")):
        kw.prefetch(path)  # raises nothing
        kw.prefetch(str(path))
        assert kw.take(Path(path)) is None
    monkeypatch.setenv(kw.ENV, "0")  # a Kineto file the reader would not decode in a worker
    kw.prefetch(kineto)
    monkeypatch.delenv(kw.ENV)  # small (< WORKER_MIN_JSON_BYTES)
    kw.prefetch(kineto)
    assert spy.started == [] and kw._PREFETCHED == before


# ------------------------------------------------------------------------------------- 7. polars-free


def test_worker_modules_never_import_polars() -> None:
    code = f"""
import io, pickle, sys
from pathlib import Path
import tracekit.readers.kineto_worker as kw, tracekit.readers.kineto_wire
assert "polars" not in sys.modules, "import"
path = {str(PYTORCH_SAMPLE)!r}
# the worker's own work, here: decode part 0 of 2 into a buffer
out = io.BytesIO()
assert kw.decode_part([path, "200000", "65536", "0", "2"], out) == 0
kinds = []
out.seek(0)
while out.tell() < len(out.getvalue()):
    kinds.append(pickle.load(out)[0])
assert kinds[0] == "read" and kinds[-1] == "done" and "chunk" in kinds, kinds
# the CLI's prefetch (before it imports the analysis): single-threaded, no polars: the workers are forked
import os
os.environ[kw.ENV] = "1"
assert kw._can_fork()
kw.prefetch(path)
workers = kw.take(Path(path))
assert workers is not None and all(isinstance(p, kw._Forked) for p in workers.procs)
workers.close()
assert all(p.poll() is not None for p in workers.procs)
assert "polars" not in sys.modules, "use"
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_cli_forked_workers_give_the_in_process_output() -> None:
    """``tracekit analyze`` prefetches before loading polars, so its workers are forked (not started
    afresh): the output is byte for byte the one-process output, and no worker is left behind."""
    outputs = {}
    for setting in ("1", "0"):
        run = subprocess.run(
            [sys.executable, "-m", "tracekit.cli", "analyze", str(PYTORCH_SAMPLE), "--format", "json"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
            env={**os.environ, kw.ENV: setting},
        )
        assert run.returncode == 0, run.stderr
        outputs[setting] = run.stdout
    assert outputs["1"] == outputs["0"] and '"iterations"' in outputs["1"]


_MALLINFO = """
import ctypes, sys
from tracekit.readers.kineto_worker import keep_freed_memory

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
if sys.argv[1] == "keep":
    keep_freed_memory()
before = libc.mallinfo2().hblks
block = bytearray(8 << 20)
print(libc.mallinfo2().hblks - before)
"""


def _glibc_with_mallinfo2() -> bool:
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        return bool(libc.gnu_get_libc_version and libc.mallinfo2)
    except (OSError, AttributeError):
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _glibc_with_mallinfo2(), reason="glibc only")
@pytest.mark.parametrize(("mode", "mapped_blocks"), [("default", 1), ("keep", 0)])
def test_worker_keeps_large_blocks_in_its_heap(mode: str, mapped_blocks: int) -> None:
    """A worker's multi-megabyte blocks come from its heap (reused chunk after chunk) rather than from a
    mapping of their own that is unmapped when freed and faulted in again for the next chunk."""
    out = subprocess.run(
        [sys.executable, "-c", _MALLINFO, mode], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert int(out.stdout) == mapped_blocks
