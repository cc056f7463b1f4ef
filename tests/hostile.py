"""Generated hostile inputs ("bombs", all SYNTHETIC) for tests/test_hostile_inputs.py: small files that
inflate or declare far more than they hold, built in a fraction of a second.

A gzip file may hold several members, each compressed alone (``gzip -d`` and every tracekit reader read
them one after the other): a member of 64 MiB of one byte is compressed once (~64 KiB) and repeated, so a
3 GiB run costs ~3 MB on disk and no time to build.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import sqlite3
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SAMPLE_TRACES

MIB = 1 << 20
GIB = 1 << 30
#: bytes of one repeated member's text
RUN = 64 * MIB


def _member(data: bytes, level: int = 9) -> bytes:
    return gzip.compress(data, compresslevel=level, mtime=0)


def _run_members(byte: bytes, size: int) -> bytes:
    """gzip members whose text is ``size`` bytes of ``byte`` (a multiple of :data:`RUN`, plus the rest)."""
    full, rest = divmod(size, RUN)
    out = _member(byte * RUN) * full if full else b""
    return out + (_member(byte * rest) if rest else b"")


def small_trace_events(iterations: int = 4, kernels: int = 3, t0: int = 1_000_000) -> list[dict]:
    """A tiny valid Kineto trace (SYNTHETIC): per iteration one ``iteration`` annotation, ``kernels``
    launches and kernels of 10 µs, 100 µs apart, in a range of 900 µs: latency 0.9 ms and GPU busy
    ``kernels`` x 0.01 ms per iteration."""
    events: list[dict] = []
    corr = 1
    for i in range(iterations):
        start = t0 + i * 1000
        events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": "iteration",
                "pid": 1,
                "tid": 1,
                "ts": start,
                "dur": 900,
            }
        )
        for k in range(kernels):
            launch = start + 10 + k * 100
            events.append(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaLaunchKernel",
                    "pid": 1,
                    "tid": 1,
                    "ts": launch,
                    "dur": 5,
                    "args": {"correlation": corr},
                }
            )
            events.append(
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": f"kernel_{k}",
                    "pid": 0,
                    "tid": 7,
                    "ts": launch + 20,
                    "dur": 10,
                    "args": {"correlation": corr, "device": 0, "stream": 7},
                }
            )
            corr += 1
    return events


def _events_text(events: list[dict]) -> bytes:
    return b",".join(json.dumps(e, separators=(",", ":")).encode() for e in events)


def whitespace_bomb(path: Path, spaces: int = 3 * GIB, byte: bytes = b" ") -> Path:
    """``{"traceEvents": [`` + ``spaces`` bytes of whitespace + ``]}``, gzipped (3 GiB: ~3 MB)."""
    path.write_bytes(_member(b'{"traceEvents": [') + _run_members(byte, spaces) + _member(b"]}"))
    return path


def padded_trace(path: Path, spaces: int, where: str = "between") -> Path:
    """A small valid trace with ``spaces`` bytes of whitespace ``between`` two events, ``inside`` one (between
    two of its keys), ``head`` (before ``traceEvents``) or ``tail`` (after the events array), gzipped."""
    events = small_trace_events()
    text = _events_text(events)
    cut = text.index(b',{"ph"', len(text) // 2)
    if where == "between":
        before, after = b'{"traceEvents":[' + text[: cut + 1], text[cut + 1 :] + b"]}"
    elif where == "inside":
        at = text.index(b'"cat"', cut)
        before, after = b'{"traceEvents":[' + text[:at], text[at:] + b"]}"
    elif where == "head":
        before, after = b'{"schemaVersion": 1,', b'"traceEvents":[' + text + b"]}"
    else:
        before, after = b'{"traceEvents":[' + text + b"]", b',"displayTimeUnit": "ms"}'
    path.write_bytes(_member(before) + _run_members(b" ", spaces) + _member(after))
    return path


def giant_string_trace(path: Path, length: int = 3 * GIB // 2, field: str = "name") -> Path:
    """The small valid trace whose first kernel has a ``field`` (``name``, or ``args.extra``) of ``length``
    bytes (1.5 GiB: ~1.6 MB gzipped)."""
    events = small_trace_events()
    first = next(i for i, e in enumerate(events) if e["cat"] == "kernel")
    marker = "@@GIANT@@"
    if field == "name":
        events[first]["name"] = marker
    else:
        events[first]["args"]["extra"] = marker
    text = b'{"traceEvents":[' + _events_text(events) + b"]}"
    before, after = text.split(marker.encode())
    path.write_bytes(_member(before) + _run_members(b"a", length) + _member(after))
    return path


def nested_trace(path: Path, depth: int = 900, width: int = 20_000, events: int = 40) -> Path:
    """The small valid trace plus ``events`` ignored (``python_function``) complete events whose args
    nest ``depth`` arrays deep (as deep as the decoders go: legal) and hold ``width`` small objects side by
    side (so every ``},{"`` inside them looks like a cut between events), gzipped."""
    nest = "[" * depth + "0" + "]" * depth
    wide = "[" + ",".join('{"a":1}' for _ in range(width)) + "]"
    extra = [
        {
            "ph": "X",
            "cat": "python_function",
            "name": "nested",
            "pid": 1,
            "tid": 2,
            "ts": 1_000_000 + i,
            "dur": 1,
            "args": {"deep": "@@NEST@@", "wide": "@@WIDE@@"},
        }
        for i in range(events)
    ]
    trace = small_trace_events()
    text = b'{"traceEvents":[' + _events_text(extra[: events // 2] + trace + extra[events // 2 :]) + b"]}"
    text = text.replace(b'"@@NEST@@"', nest.encode()).replace(b'"@@WIDE@@"', wide.encode())
    path.write_bytes(_member(text, level=6))
    return path


def ignored_events_trace(path: Path, ignored: int = 3_000_000, block: int = 100_000) -> Path:
    """The small valid trace followed by ``ignored`` complete events of a category tracekit does not read
    (``python_function``; distinct timestamps within each block of ``block`` events, repeated), gzipped as
    one member per block (~12:1, as real Kineto text compresses)."""

    def events(n: int) -> bytes:
        return b"".join(
            b',{"ph":"X","cat":"python_function","name":"torch/nn/modules/module.py(1501): _call_impl",'
            b'"pid":1,"tid":2,"ts":%d.%03d,"dur":1.000,"args":{"Python id":%d}}'
            % (2_000_000 + i // 1000, i % 1000, i)
            for i in range(n)
        )

    full, rest = divmod(ignored, block)
    body = _member(events(block), level=1) * full + (_member(events(rest), level=1) if rest else b"")
    head = b'{"traceEvents":[' + _events_text(small_trace_events())
    path.write_bytes(_member(head) + body + _member(b"]}"))
    return path


# ------------------------------------------------------------------------------------------- SQLite


def billion_row_sqlite(path: Path, rowid: int = 1_000_000_000) -> Path:
    """A tiny Nsight-Systems-shaped export whose kernel table's rowids run from 1 to ``rowid`` (three rows:
    the table declares a billion rows to anything that reads its rowid span), with a runtime table and one
    NVTX range, SYNTHETIC."""
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
            deviceId INTEGER, streamId INTEGER, globalPid INTEGER, correlationId INTEGER,
            demangledName INTEGER, shortName INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
            eventClass INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER);
        CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
            rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,
            textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL,
            uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
        """
    )
    con.execute("INSERT INTO StringIds VALUES (1, 'kernel_a'), (2, 'cudaLaunchKernel_v7000')")
    tid = (1 << 24) | 1
    for rid, start in ((1, 1000), (2, 3000), (rowid, 5000)):
        con.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (rowid, start, end, deviceId, streamId, globalPid, "
            "correlationId, demangledName, shortName) VALUES (?, ?, ?, 0, 7, ?, ?, 1, 1)",
            (rid, start + 100, start + 600, 1 << 24, rid),
        )
        con.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (rowid, start, end, eventClass, globalTid, correlationId, "
            "nameId) VALUES (?, ?, ?, 0, ?, ?, 2)",
            (rid, start, start + 50, tid, rid),
        )
    con.execute(
        "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (0, 10000, 59, 'iteration', ?)",
        (tid,),
    )
    con.commit()
    con.close()
    return path


def declared_pages_sqlite(source: Path, path: Path, pages: int = 2_000_000_000) -> Path:
    """``source`` (an SQLite file) with a header that declares ``pages`` pages (at 4 KiB, ~7.5 TiB), which the
    file does not hold."""
    data = bytearray(source.read_bytes())
    struct.pack_into(">I", data, 28, pages)
    path.write_bytes(bytes(data))
    return path


def inflate_ratio(path: Path) -> float:
    """Inflated text / bytes on disk of a gzip file (members read one after the other)."""
    data = path.read_bytes()
    total, inflater = 0, zlib.decompressobj(wbits=31)
    while data:
        total += len(inflater.decompress(data))
        data = inflater.unused_data
        inflater = zlib.decompressobj(wbits=31) if data else inflater
    return total / path.stat().st_size


def ort_event(cat: str, name: str, ts: int, dur: int, tid: int = 1, **args: Any) -> dict[str, Any]:
    return {"cat": cat, "pid": 1, "tid": tid, "dur": dur, "ts": ts, "ph": "X", "name": name, "args": args}


def ort_gpu_events(first_kernel_dur: Any = 100) -> list[dict[str, Any]]:
    """An ORT CUDA profile (SYNTHETIC; the spelling of tests/test_reader_ort.py's _gpu_profile): 3 model_run of
    1000 µs, each with a MatMul and a Relu Node (20 µs, CUDAExecutionProvider), each followed by its Kernel
    event of 100 µs 5 µs after the node began (stream "7", parent_name the node): latency 1.0, GPU busy 0.2,
    2 kernels per run. Run 0's MatMul kernel gets ``first_kernel_dur``."""

    def event(cat: str, name: str, ts: int, dur: Any, **args: Any) -> dict[str, Any]:
        return {"cat": cat, "pid": 1, "tid": 1, "dur": dur, "ts": ts, "ph": "X", "name": name, "args": args}

    events = [
        event("Session", "model_loading_uri", 0, 50),
        event("Session", "session_initialization", 60, 40),
    ]
    for r in range(3):
        t = 1000 * r + 200
        events.append(event("Session", "model_run", t, 1000))
        for k, op in enumerate(("MatMul", "Relu")):
            node_ts, node = t + 10 + 300 * k, f"/{k}/{op}_kernel_time"
            events.append(event("Node", node, node_ts, 20, op_name=op, provider="CUDAExecutionProvider"))
            kernel = event("Kernel", f"{op.lower()}_kernel", node_ts + 5, 100, stream="7", op_name=op)
            kernel.update(pid=-1, tid=-1)
            kernel["args"]["parent_name"] = node
            events.append(kernel)
    events[4]["dur"] = first_kernel_dur
    return events


def ort_cpu_events(runs: int = 3) -> list[dict[str, Any]]:
    """An ORT CPU profile (SYNTHETIC): ``runs`` model_run of 1000 µs, 2000 µs apart, each with a MatMul node
    of 300 µs and an Add node of 100 µs: latency 1.0 ms, operator busy 0.4 ms per run."""
    events = [
        ort_event("Session", "model_loading_uri", 0, 50),
        ort_event("Session", "session_initialization", 60, 40),
    ]
    for i in range(runs):
        events += ort_cpu_run(200 + i * 2000)
    return events


def ort_cpu_run(t: int) -> list[dict[str, Any]]:
    """One ORT model_run of 1000 µs at ``t`` µs (SYNTHETIC), holding a MatMul node of 300 µs (from +10) and an
    Add node of 100 µs (from +320): latency 1.0 ms, operator busy 0.4 ms."""
    return [
        ort_event("Session", "model_run", t, 1000),
        ort_event(
            "Node", "/a/MatMul_kernel_time", t + 10, 300, op_name="MatMul", provider="CPUExecutionProvider"
        ),
        ort_event("Node", "/b/Add_kernel_time", t + 320, 100, op_name="Add", provider="CPUExecutionProvider"),
    ]


def three_iteration_nsys(path: Path, iterations: int = 3, capture_ns: int | None = None) -> Path:
    """An nsys export (SYNTHETIC): ``iterations`` NVTX 'iteration' ranges of 1 ms, 2 ms apart from 10 ms, each
    launching two kernels (launch call 50-40 µs before each), at 100-300 µs and 400-500 µs into the range:
    latency 1.000 ms, GPU busy 0.300 ms, 2 kernels per iteration. ``capture_ns``: an ANALYSIS_DETAILS row
    saying the capture ran from 0 for that long."""
    b = three_iteration_builder(iterations)
    if capture_ns is not None:
        b.capture(capture_ns, start_time=0)
    return b.write(path)


def three_iteration_builder(iterations: int = 3) -> Any:
    """The :class:`tests.nsys_builder.NsysBuilder` of :func:`three_iteration_nsys` before its capture row and
    its write (correlation ids 1, 2, ... in launch order), for a test to add rows to."""
    from tests.nsys_builder import NsysBuilder

    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    corr = 1
    for i in range(iterations):
        t0 = 10_000_000 + i * 2_000_000
        b.nvtx_range(t0, t0 + 1_000_000, "iteration")
        for start, end in ((100, 300), (400, 500)):
            b.runtime(t0 + start * 1000 - 50_000, t0 + start * 1000 - 40_000, "cudaLaunchKernel_v7000",
                      correlation=corr)  # fmt: skip
            b.kernel(t0 + start * 1000, t0 + end * 1000, f"k{start}", correlation=corr)
            corr += 1
    return b


def run_sql(path: Path, *statements: str) -> Path:
    """``path`` (an SQLite file) after ``statements``, committed."""
    con = sqlite3.connect(path)
    try:
        for statement in statements:
            con.execute(statement)
        con.commit()
    finally:
        con.close()
    return path


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data))
    return path


def proc_stats() -> list[tuple[int, list[str]]]:
    """Every process's (pid, the fields of /proc/PID/stat after its name)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            found.append((int(entry.name), stat.rsplit(")", 1)[1].split()))
    return found


def descendants(pid: int) -> list[int]:
    stats = proc_stats()
    out, todo = [], [pid]
    while todo:
        parent = todo.pop()
        kids = [p for p, fields in stats if int(fields[1]) == parent]
        out += kids
        todo += kids
    return out


def session_processes(sid: int) -> list[int]:
    """The processes left in the session ``sid`` (zombies of the session leader aside)."""
    return [p for p, fields in proc_stats() if int(fields[3]) == sid and fields[0] != "Z" and p != sid]


#: Four small traces for an interrupted --jobs 2 run (tests of Ctrl-C while the pool works).
POOL_FILES = [
    SAMPLE_TRACES / "cpu_onnx_bert_ort/onnx_b1_s128.ort.json.gz",
    SAMPLE_TRACES / "synthetic/ranks4/rank0.synthetic.json.gz",
    SAMPLE_TRACES / "synthetic/ranks4/rank1.synthetic.json.gz",
    SAMPLE_TRACES / "synthetic/table3_onnx-cuda-graphs/onnx-cuda-graphs_b1_s128.synthetic.sqlite",
]


def interrupted_pool(tmp_path: Path, group: bool) -> tuple[int, str, list[int]]:
    """``analyze`` of POOL_FILES with --jobs 2, SIGINT to the command as soon as its two workers exist (the
    program forks them: tracekit.fleet.run.start_method), while they start, or (``group``) to its whole
    process group, as a terminal's Ctrl-C: (exit code, stderr, the processes of its session left 0.5 s after
    it ended)."""
    import signal
    import time

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tracekit.cli",
            "analyze",
            *map(str, POOL_FILES),
            "--jobs",
            "2",
            "--no-progress",
        ]
        + ["-q", "-o", "out.json"],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    start = time.monotonic()
    while len(descendants(proc.pid)) < 2 and time.monotonic() - start < 30:
        time.sleep(0.005)
    if group:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        for pid in [*descendants(proc.pid), proc.pid]:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("tracekit did not end within 30 s of Ctrl-C")
    time.sleep(0.5)  # the workers write their last words
    left = session_processes(proc.pid)
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return proc.returncode, err, left


#: A committed synthetic nsys export, and what its clean copy reads: 10 iterations of 160 kernels, mean GPU busy
#: 0.9134527 ms.
NSYS_SAMPLE = SAMPLE_TRACES / "synthetic/table3_onnx-cuda-graphs/onnx-cuda-graphs_b1_s128.synthetic.sqlite"
NSYS_KERNELS, NSYS_BUSY_MS = 160.0, 0.9134527


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``tracekit ARGS --no-progress`` in this process: (exit code, stdout, stderr)."""
    from tracekit.cli import main

    code = main([*args, "--no-progress"])
    out, err = capsys.readouterr()
    return code, out, err


def analyze_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict | None, str]:
    """``tracekit analyze ARGS --format json``: (exit code, the document or None, stderr)."""
    code, out, err = run_cli(capsys, "analyze", *args, "--format", "json")
    return code, json.loads(out) if code == 0 else None, err


def cli_process(args: list[str], cwd: Path, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """``python -m tracekit.cli ARGS`` in a child process, from ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "tracekit.cli", *args],
        cwd=cwd,
        text=True,
        timeout=120,
        **(kwargs if "stdout" in kwargs else {"capture_output": True, **kwargs}),
    )
