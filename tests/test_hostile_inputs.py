"""A trace from a stranger cannot take the machine down (issue 31): bounded memory and time on hostile or
huge inputs. Every input here is SYNTHETIC, generated in the test (tests/hostile.py: small gzip files that
inflate to gigabytes, SQLite files that declare what they do not hold).

The command-line runs (:func:`_run`) start ``tracekit analyze`` in a subprocess under an address-space
rlimit (:data:`ADDRESS_SPACE`, polars held to :data:`THREADS` threads so that its reservations do not grow
with the machine), so that a regression fails the test instead of taking the machine down, with
``--max-memory 1G`` (the program's own ceiling, summed over it and its decoding workers: past it the run
ends with a "memory use passed" line, not the expected outcome) and a timeout; the peak resident memory of
its largest process (``wait4``) is checked as well. The issue's table (3 GiB of whitespace in 3.1 MB, a
1.5 GiB name in 1.6 MB, a named pipe, process substitution, ``/dev/zero``) is run at full size.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

import msgspec
import polars as pl
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import tracekit.readers.kineto_json as kj
import tracekit.readers.kineto_stream as ks
import tracekit.readers.kineto_worker as kw
from tests import hostile
from tests.conftest import REPO, SAMPLE_TRACES
from tracekit import io as tio
from tracekit import limits
from tracekit.errors import TraceFormatError
from tracekit.readers import detect_format, json_value
from tracekit.readers.sqlite_engine import check_header

#: the issue's bounds for each input of its table
SECONDS, PEAK = 60, 1 << 30
#: the address-space limit of every run (polars reserves far more address space than it touches: ~2.5 GB
#: for ~110 MB resident on an SQLite export with two threads)
ADDRESS_SPACE = 6 << 30
THREADS = "2"
#: the expected analysis of tests/hostile.small_trace_events(): 4 iterations of 0.9 ms, 3 kernels of 10 us
EXPECTED = {"iterations": 4, "latency_ms": 0.9, "gpu_busy_ms": 0.03, "kernels": 3}
SQLITE_SAMPLE = SAMPLE_TRACES / "synthetic/table3_pytorch/pytorch_b1_s128.synthetic.sqlite"
KINETO_SAMPLE = SAMPLE_TRACES / "synthetic/table3_pytorch/pytorch_b1_s128.synthetic.json.gz"


class Run(NamedTuple):
    code: int
    seconds: float
    peak: int  # bytes: the largest resident set of the run's processes
    stdout: str
    stderr: str


#: the process that runs each command: it puts the address-space limit on itself (its children inherit it),
#: starts the command in a session of its own, kills that session after the timeout, and writes the
#: command's exit status, seconds and peak to a file. A child of this small process, not of pytest: a child's
#: peak (``ru_maxrss``) starts at its parent's resident set when forked, however little it uses after exec.
LAUNCHER = """
import json, os, resource, signal, subprocess, sys, threading, time
result, limit, timeout, out, err, *command = sys.argv[1:]
resource.setrlimit(resource.RLIMIT_AS, (int(limit), int(limit)))
with open(out, "wb") as o, open(err, "wb") as e:
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=o, stderr=e, start_new_session=True)
    timer = threading.Timer(float(timeout), lambda: os.killpg(proc.pid, signal.SIGKILL))
    timer.start()
    _, status, usage = os.wait4(proc.pid, 0)
    timer.cancel()
    seconds = time.perf_counter() - start
with open(result, "w") as fh:
    json.dump([os.waitstatus_to_exitcode(status), seconds, usage.ru_maxrss * 1024], fh)
"""


def _run(args: list[str], tmp_path: Path, timeout: float = SECONDS, shell: str | None = None) -> Run:
    """``tracekit analyze ARGS --format json --max-memory 1G`` (unless ARGS set it) in a subprocess (or
    ``shell``, a bash command whose ``{tracekit}`` is that command) under :data:`ADDRESS_SPACE`, killed after
    ``timeout`` seconds (:data:`LAUNCHER`)."""
    ceiling = [] if "--max-memory" in args else ["--max-memory", "1G"]
    command = [sys.executable, "-m", "tracekit.cli", "analyze", *args, "--format", "json", *ceiling]
    if shell is not None:
        command = ["bash", "-c", shell.replace("{tracekit}", " ".join(command))]
    env = {**os.environ, "POLARS_MAX_THREADS": THREADS, "PYTHONPATH": str(REPO)}
    out, err, result = tmp_path / "stdout", tmp_path / "stderr", tmp_path / "result.json"
    paths = [str(result), str(ADDRESS_SPACE), str(timeout), str(out), str(err)]
    subprocess.run(
        [sys.executable, "-c", LAUNCHER, *paths, *command], env=env, check=True, timeout=timeout + 30
    )
    code, seconds, peak = json.loads(result.read_text())
    return Run(code, seconds, peak, out.read_text(), err.read_text())


def _one_line(run: Run, *fragments: str) -> None:
    """The run ended within the issue's bounds with exit 2 and one line on stderr holding ``fragments``."""
    assert run.seconds <= SECONDS and run.peak <= PEAK, run
    assert run.code == 2, run
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tracekit: "), run.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def _analysis(run: Run, peak: int = PEAK) -> dict[str, Any]:
    """The run's analysis (within the bounds; ``peak``: a tighter memory bound), checked against
    :data:`EXPECTED`."""
    assert run.seconds <= SECONDS and run.peak <= peak, run
    assert run.code == 0, run.stderr
    doc = json.loads(run.stdout)
    rows = doc["iterations"]
    assert len(rows) == EXPECTED["iterations"]
    for row in rows:
        assert row["latency_ms"] == pytest.approx(EXPECTED["latency_ms"])
        assert row["gpu_busy_ms"] == pytest.approx(EXPECTED["gpu_busy_ms"])
        assert row["kernels"] == EXPECTED["kernels"]
    return doc


@pytest.fixture
def limits_reset() -> Any:
    """The limits in force restored after the test."""
    saved = limits.current
    yield limits
    limits.current = saved


# ------------------------------------------------------------------------------- the table


def test_table_whitespace_bomb_is_one_line(tmp_path: Path) -> None:
    # {"traceEvents": [ + 3 GiB of spaces + ]} in 3.1 MB: was 57 s and 7.4 GB, then "no ranges" (exit 2)
    bomb = hostile.whitespace_bomb(tmp_path / "ws.json.gz")
    assert bomb.stat().st_size < 3_300_000
    _one_line(
        _run([str(bomb)], tmp_path), "inflates past 597 MiB", "200x its 2.99 MiB on disk", "--max-inflated"
    )


def test_table_giant_name_is_one_line(tmp_path: Path) -> None:
    # one kernel named with 1.5 GiB of text, 1.6 MB gzipped: was killed by the OOM killer at 24 GB after 207 s
    bomb = hostile.giant_string_trace(tmp_path / "giant.json.gz")
    assert bomb.stat().st_size < 1_700_000
    _one_line(_run([str(bomb)], tmp_path), "inflates past", "--max-inflated SIZE to allow it")


def test_table_named_pipe_is_read_once(tmp_path: Path) -> None:
    # mkfifo t.json: format detection opened it twice, and the second open waited for a writer that was gone
    fifo = tmp_path / "t.json"
    os.mkfifo(fifo)
    data = KINETO_SAMPLE.read_bytes()

    def write() -> None:
        with open(fifo, "wb") as fh:  # waits for the reader's open
            fh.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    piped = _run([str(fifo)], tmp_path)
    writer.join(timeout=5)
    direct = _run([str(KINETO_SAMPLE)], tmp_path)
    assert piped.code == 0 and direct.code == 0, piped.stderr
    assert json.loads(piped.stdout)["iterations"] == json.loads(direct.stdout)["iterations"]
    assert piped.seconds <= SECONDS and piped.peak <= PEAK


def test_table_process_substitution_gzip_and_plain(tmp_path: Path) -> None:
    direct = json.loads(_run([str(KINETO_SAMPLE)], tmp_path).stdout)["iterations"]
    for source in (f"cat {KINETO_SAMPLE}", f"zcat {KINETO_SAMPLE}"):
        run = _run([], tmp_path, shell=f"{{tracekit}} <({source})")
        assert run.code == 0, run.stderr
        assert json.loads(run.stdout)["iterations"] == direct
        assert run.seconds <= SECONDS and run.peak <= PEAK


def test_table_dev_zero_is_one_line(tmp_path: Path) -> None:
    _one_line(_run(["/dev/zero"], tmp_path, timeout=20), "not a trace tracekit can read")


# -------------------------------------------------------------------- the bombs, limits lifted


@pytest.mark.parametrize("where", ["between", "inside", "head", "tail"])
def test_whitespace_costs_time_not_memory(tmp_path: Path, where: str) -> None:
    # 1 GiB of spaces between two events, between two keys of one event, before traceEvents or after the
    # events array: with the inflation limit lifted, the analysis is the trace's own, in bounded memory
    bomb = hostile.padded_trace(tmp_path / "pad.json.gz", 1 << 30, where)
    _analysis(_run([str(bomb), "--max-inflated", "2G"], tmp_path), peak=400 << 20)


def test_whitespace_only_events_with_the_limit_lifted(tmp_path: Path) -> None:
    bomb = hostile.whitespace_bomb(tmp_path / "ws.json.gz", 1 << 30, b"\n")
    _one_line(_run([str(bomb), "--max-inflated", "2G"], tmp_path), "no ranges and no device activity")


def test_giant_name_is_cut_with_a_warning(tmp_path: Path) -> None:
    bomb = hostile.giant_string_trace(tmp_path / "giant.json.gz", 1 << 30)
    run = _run([str(bomb), "--max-inflated", "2G"], tmp_path)
    _analysis(run, peak=400 << 20)
    warning = "1 event name(s) longer than 64 KiB cut to 64 KiB (--max-string SIZE keeps more); the first: the kernel "
    assert warning + "event at ts 1000030.000 us named 'aaaa" in run.stderr


def test_giant_string_in_args_is_skipped(tmp_path: Path) -> None:
    bomb = hostile.giant_string_trace(tmp_path / "giant.json.gz", 1 << 30, field="args")
    run = _run([str(bomb), "--max-inflated", "2G"], tmp_path)
    _analysis(run, peak=400 << 20)
    assert "cut" not in run.stderr


def test_event_past_the_event_limit_is_one_line(tmp_path: Path) -> None:
    # a name cut to 64 KiB is still kept to 6 x 64 KiB of text by the decoder: with --max-event 256K the
    # event is too long even so
    bomb = hostile.giant_string_trace(tmp_path / "giant.json.gz", 64 << 20)
    _one_line(
        _run([str(bomb), "--max-event", "256K"], tmp_path),
        "the JSON value at byte",
        "is longer than 256 KiB even with its whitespace collapsed and its strings cut to 64 KiB",
        "--max-event SIZE",
    )


def test_deep_and_wide_nesting(tmp_path: Path) -> None:
    # events nested 900 arrays deep (legal: the decoders go to ~1000) holding 20,000 objects side by side:
    # every "},{" inside them looks like a cut between events; took > 30 s in one process before
    bomb = hostile.nested_trace(tmp_path / "nested.json.gz")
    _analysis(_run([str(bomb)], tmp_path, timeout=30))
    env_run = _run([], tmp_path, shell=f"TRACEKIT_DECODE_WORKER=0 {{tracekit}} {bomb}", timeout=30)
    _analysis(env_run)


def test_nesting_past_the_decoders_is_one_line(tmp_path: Path) -> None:
    bomb = hostile.nested_trace(tmp_path / "nested.json.gz", depth=5000, width=10, events=4)
    _one_line(_run([str(bomb)], tmp_path), "nested too deeply")


def test_millions_of_ignored_events_cost_time_not_memory(tmp_path: Path) -> None:
    bomb = hostile.ignored_events_trace(tmp_path / "ignored.json.gz", ignored=2_000_000)
    _analysis(_run([str(bomb)], tmp_path), peak=400 << 20)


def test_ort_profile_padded_with_newlines(tmp_path: Path) -> None:
    session = b'{"cat" : "Session","pid" :1,"tid" :1,"dur" :900,"ts" :100,"ph" : "X","name" :"model_run","args" : {}}'
    node = (
        b'{"cat" : "Node","pid" :1,"tid" :1,"dur" :500,"ts" :200,"ph" : "X","name" :"mm_kernel_time",'
        b'"args" : {"op_name" : "MatMul"}}'
    )
    path = tmp_path / "ort.json.gz"
    path.write_bytes(
        hostile._member(b"[" + session + b",")
        + hostile._run_members(b"\n", 1 << 30)
        + hostile._member(node + b"]")
    )
    run = _run([str(path), "--max-inflated", "2G"], tmp_path)
    assert run.code == 0 and run.peak <= 400 << 20, run
    (row,) = json.loads(run.stdout)["iterations"]
    assert row["latency_ms"] == pytest.approx(0.9) and row["gpu_busy_ms"] == pytest.approx(0.5)


# ------------------------------------------------------------------------------------------ SQLite


def test_sqlite_billion_row_declared_table(tmp_path: Path) -> None:
    # three kernel rows at rowids 1, 2 and 10^9: anything that sized its work by the rowid span would die
    bomb = hostile.billion_row_sqlite(tmp_path / "billion.sqlite")
    run = _run([str(bomb)], tmp_path, timeout=30)
    assert run.code == 0 and run.seconds <= 30 and run.peak <= PEAK, run
    (row,) = json.loads(run.stdout)["iterations"]
    assert row["kernels"] == 3 and row["gpu_busy_ms"] == pytest.approx(0.0015)


def test_sqlite_declaring_more_pages_than_it_holds_is_refused_before_reading(tmp_path: Path) -> None:
    bomb = hostile.declared_pages_sqlite(SQLITE_SAMPLE, tmp_path / "pages.sqlite")
    _one_line(
        _run([str(bomb)], tmp_path, timeout=30),
        "corrupt SQLite (truncated or forged): its header declares 2,000,000,000 pages of",
        "refused before reading",
    )


def test_sqlite_value_past_the_event_limit_is_one_line(tmp_path: Path) -> None:
    import sqlite3

    bomb = hostile.billion_row_sqlite(tmp_path / "long.sqlite", rowid=3)
    con = sqlite3.connect(bomb)
    con.execute("UPDATE StringIds SET value = ? WHERE id = 1", ("k" * (2 << 20),))
    con.commit()
    con.close()
    _one_line(
        _run([str(bomb), "--max-event", "1M"], tmp_path, timeout=30), "longer than 1 MiB", "--max-event SIZE"
    )
    assert _run([str(bomb)], tmp_path, timeout=30).code == 0


def test_sqlite_header_checks() -> None:
    header = bytearray(SQLITE_SAMPLE.read_bytes()[:100])
    size = SQLITE_SAMPLE.stat().st_size
    check_header(bytes(header), size, SQLITE_SAMPLE)  # the sample is fine
    with pytest.raises(TraceFormatError, match="less than its 100-byte header"):
        check_header(bytes(header[:50]), 50, SQLITE_SAMPLE)
    with pytest.raises(TraceFormatError, match="declares"):
        check_header(bytes(header), size - 1, SQLITE_SAMPLE)
    stale = bytearray(header)
    stale[92:96] = (int.from_bytes(header[24:28], "big") + 1).to_bytes(4, "big")
    check_header(bytes(stale), size - 1, SQLITE_SAMPLE)  # a stale count: SQLite ignores it, so does this
    odd = bytearray(header)
    odd[16:18] = (1000).to_bytes(2, "big")
    with pytest.raises(TraceFormatError, match="page size of 1000"):
        check_header(bytes(odd), size, SQLITE_SAMPLE)


# ------------------------------------------------------------------------------------------- pipes


def test_sqlite_from_a_pipe_is_refused_at_once(tmp_path: Path) -> None:
    run = _run([], tmp_path, shell=f"{{tracekit}} <(cat {SQLITE_SAMPLE})", timeout=20)
    _one_line(run, "an SQLite file needs random access, which a pipe cannot give: save it to a file first")


def test_second_pass_over_a_pipe_is_refused(tmp_path: Path) -> None:
    # kernels without a correlation id: their flow events are read in a second pass, which a pipe cannot give
    events = [
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": 10,
            "dur": 5,
        },
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 30, "dur": 10},
        {"ph": "s", "cat": "ac2g", "name": "f", "id": 1, "pid": 1, "tid": 1, "ts": 10},
        {"ph": "f", "cat": "ac2g", "name": "f", "id": 1, "pid": 0, "tid": 7, "ts": 30, "bp": "e"},
    ]
    path = tmp_path / "flows.json"
    path.write_text(json.dumps({"traceEvents": events}))
    assert _run([str(path)], tmp_path).code == 0
    _one_line(_run([], tmp_path, shell=f"{{tracekit}} <(cat {path})"), "a pipe can be read only once")


def test_silent_named_pipe_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fifo = tmp_path / "silent.json"
    os.mkfifo(fifo)
    monkeypatch.setattr(tio, "STREAM_WAIT_S", 0.2)
    start = time.perf_counter()
    with pytest.raises(TraceFormatError, match="the pipe stayed silent for 0 s"):
        detect_format(fifo)
    assert time.perf_counter() - start < 5


def test_stream_head_is_replayed_once(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, b'{"traceEvents": []}')
    os.close(write_end)
    path = Path(f"/proc/self/fd/{read_end}")
    try:
        assert tio.is_stream(path)
        assert tio.peek_input(path, 4) == b'{"tr'
        assert tio.peek_input(path, 1 << 16) == b'{"traceEvents": []}'
        with tio.open_input(path) as fh:
            assert fh.read() == b'{"traceEvents": []}'
        with pytest.raises(TraceFormatError, match="only once"):
            tio.open_input(path)
    finally:
        tio.forget_inputs()
        os.close(read_end)


# ---------------------------------------------------------------------------------- memory ceiling


def test_memory_ceiling_is_one_line(tmp_path: Path) -> None:
    run = _run([str(KINETO_SAMPLE), "--max-memory", "30M"], tmp_path)
    _one_line(run, "memory use passed 30 MiB", "pass --max-memory SIZE to allow more")


def test_watchdog_pauses_for_forks() -> None:
    limits.start_memory_ceiling(1 << 40)
    try:
        assert limits.watchdog_threads() == 1
        with limits.watchdog_paused():
            assert limits.watchdog_threads() == 0
        assert limits.watchdog_threads() == 1
    finally:
        limits.stop_memory_ceiling()
    assert limits.watchdog_threads() == 0


# ------------------------------------------------------------------------------------- inflating


def test_inflate_guard_limits_and_messages(limits_reset: Any) -> None:
    guard = limits.InflateGuard("f.gz", 10 << 20)
    assert guard.limit == 2000 << 20
    guard.add(2000 << 20)
    with pytest.raises(
        limits.LimitError, match=r"inflates past 1.95 GiB of text \(200x its 10 MiB on disk\)"
    ):
        guard.add(1)
    small = limits.InflateGuard("s.gz", 1000)
    assert small.limit == limits.INFLATE_FLOOR_BYTES
    with pytest.raises(limits.LimitError, match="the 256 MiB any file may inflate to"):
        small.add(limits.INFLATE_FLOOR_BYTES + 1)
    huge = limits.InflateGuard("h.gz", 1 << 40)
    assert huge.limit == limits.MAX_INFLATED_BYTES
    pipe = limits.InflateGuard("p", None)
    pipe.add(limits.INFLATE_FLOOR_BYTES, read=10 << 20)  # 25x what was read: fine
    with pytest.raises(limits.LimitError, match="200x the 1 MiB read from the pipe"):
        pipe.add(1, read=1 << 20)
    limits.configure(max_inflated=5)
    fixed = limits.InflateGuard("x.gz", 1 << 30)
    with pytest.raises(limits.LimitError, match=r"inflates past 5 B of text \(--max-inflated\)"):
        fixed.add(6)


def test_worker_passes_the_limit_error_on(tmp_path: Path, limits_reset: Any) -> None:
    # a worker started afresh gets the limits on its command line, and its LimitError is the reader's error
    # (no second decoding in this process)
    text = json.dumps({"traceEvents": hostile.small_trace_events(200)})
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(text.encode()))
    limits.configure(max_inflated=len(text) // 2)
    workers = kw.start(path)
    try:
        with pytest.raises(limits.LimitError, match="inflates past"):
            list(workers.chunks(None, {}))
    finally:
        workers.close()


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("1500", 1500),
        ("64K", 65536),
        ("64KiB", 65536),
        ("1.5G", 3 << 29),
        ("2gb", 2 << 30),
        (" 4 M ", 4 << 20),
    ],
)
def test_parse_size(text: str, size: int) -> None:
    assert limits.parse_size(text) == size


@pytest.mark.parametrize("text", ["", "G", "-1M", "0", "1.5X", "4 GiBs"])
def test_parse_size_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        limits.parse_size(text)


def test_format_size() -> None:
    assert [limits.format_size(n) for n in (512, 65536, 3_250_000, 620 << 20, 3 << 29, 64 << 30)] == [
        "512 B",
        "64 KiB",
        "3.1 MiB",
        "620 MiB",
        "1.5 GiB",
        "64 GiB",
    ]


# --------------------------------------------------------------------------- json_value properties


class _Pieces:
    """A json_value stream over ``data`` delivered ``step`` bytes at a time (as kineto_stream._Text)."""

    def __init__(self, data: bytes, step: int) -> None:
        self.data, self.step, self.at = data, step, 0
        self.buf, self.eof, self.dropped = b"", False, 0

    def fill(self, size: int) -> None:
        while len(self.buf) < size and not self.eof:
            piece = self.data[self.at : self.at + self.step]
            self.at += len(piece)
            if not piece:
                self.eof = True
            self.buf += piece

    def drop(self, pos: int) -> None:
        self.buf = self.buf[pos:]
        self.dropped += pos

    def rest(self) -> bytes:
        return self.buf + self.data[self.at :]


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=30),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=30,
)
_PADDING = st.sampled_from(["", " ", "\n", " \t\r\n" * 5, " " * 300])


@settings(max_examples=200, deadline=None)
@given(
    value=_VALUES,
    padding=_PADDING,
    step=st.integers(min_value=1, max_value=64),
    after=st.sampled_from([",1", "]", "}"]),
)
@example(value={"a": ['x"\\y', {"b": [[], {}]}]}, padding=" " * 300, step=1, after="]")
def test_read_value_copy_decodes_to_the_value(value: Any, padding: str, step: int, after: str) -> None:
    # any JSON value, with whitespace wherever JSON allows it, fed in pieces of any size: the compact copy
    # decodes to the value itself, and reading stops just after it
    text = json.dumps(value, separators=("," + padding, ":" + padding), ensure_ascii=False).encode()
    stream = _Pieces(text + after.encode(), step)
    stream.fill(1)
    copy, end, cuts = json_value.read_value(stream, 0, 1 << 20, 1 << 20)
    assert cuts == 0
    assert json.loads(copy) == value
    assert stream.buf[end:] + stream.data[stream.at :] == after.encode()


@settings(max_examples=100, deadline=None)
@given(
    text=st.text(alphabet=st.characters(codec="utf-8"), min_size=0, max_size=400),
    limit=st.integers(min_value=1, max_value=40),
    step=st.integers(min_value=1, max_value=50),
)
def test_read_value_cuts_long_strings_to_prefixes(text: str, limit: int, step: int) -> None:
    # a string longer than the limit is cut to a prefix that decodes (whole escapes, whole characters) and is
    # still longer than the limit in UTF-8, so that the reader's own cut and warning see it
    doc = json.dumps({"name": text, "n": 1}).encode()
    stream = _Pieces(doc, step)
    stream.fill(1)
    copy, _, cuts = json_value.read_value(stream, 0, limit, 1 << 20)
    got = json.loads(copy)
    assert got["n"] == 1 and text.startswith(got["name"])
    raw = json.dumps(text)[1:-1].encode()
    if len(raw) > json_value.string_keep(limit):
        assert cuts == 1 and len(got["name"].encode()) > limit
    else:
        assert cuts == 0 and got["name"] == text


def test_read_value_ends_and_limits() -> None:
    stream = _Pieces(b'{"a": "open', 3)
    stream.fill(1)
    with pytest.raises(json_value.Truncated):
        json_value.read_value(stream, 0, 100, 1000)
    stream = _Pieces(b"[" + b"1," * 600 + b"1]", 7)
    stream.fill(1)
    with pytest.raises(json_value.TooLong):
        json_value.read_value(stream, 0, 100, 1000)
    stream = _Pieces(b"    \n\t  x", 2)
    stream.fill(1)
    at = json_value.skip_ws(stream, 0)
    assert stream.buf[at : at + 1] == b"x" and stream.dropped + at == 8


# ------------------------------------------------------------------- the stream decoder, fuzzed


def _events(count: int, seed: int) -> list[dict[str, Any]]:
    import random

    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for i in range(count):
        event: dict[str, Any] = {
            "ph": rng.choice(["X", "X", "X", "i"]),
            "cat": rng.choice(["kernel", "cuda_runtime", "cpu_op", "python_function", "user_annotation"]),
            "name": "".join(rng.choice('ab"\\{}[],: é') for _ in range(rng.randrange(0, 30))),
            "pid": rng.choice([0, 1]),
            "tid": rng.choice([1, 7, "stream 7"]),
            "ts": rng.randrange(10**9, 2 * 10**9) / 1000,
            "dur": rng.randrange(0, 10**4),
            "args": {"correlation": i, "wide": [{"a": j} for j in range(rng.randrange(0, 40))]},
        }
        if rng.random() < 0.2:
            event["args"]["deep"] = json.loads("[" * 50 + "]" * 50)
        out.append(event)
    return out


def _padded(events: list[dict[str, Any]], seed: int, pad: int) -> str:
    """The document with runs of ``pad`` whitespace bytes at random places outside strings: before
    ``traceEvents``, between events, between an event's members, after the events array."""
    import random

    rng = random.Random(seed)

    def ws() -> str:
        return rng.choice([" ", "\n", "\t", "\r\n"]) * (pad if rng.random() < 0.3 else 1)

    parts = [
        json.dumps(e, separators=("," + ws(), ":"), ensure_ascii=False)
        if rng.random() < 0.5
        else json.dumps(e)
        for e in events
    ]
    body = ("," + ws()).join(parts)
    return (
        "{"
        + ws()
        + '"schemaVersion": 1,'
        + ws()
        + '"traceEvents": ['
        + ws()
        + body
        + ws()
        + "]"
        + ws()
        + ', "x": 2}'
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    count=st.integers(min_value=0, max_value=60),
    seed=st.integers(min_value=0, max_value=2**32),
    pad=st.sampled_from([1, 700, 5000]),
    gz=st.booleans(),
)
def test_stream_with_padding_and_nesting_equals_the_whole_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int, seed: int, pad: int, gz: bool
) -> None:
    # the fuzz corpus's new shapes: whitespace runs longer than a chunk window (read by json_value, so the
    # window never grows with them), nested arrays of objects (cut candidates inside events) and deep nesting,
    # with tiny windows so that every path runs: the events and the header are the whole document's
    monkeypatch.setattr(kj, "CHUNK_BYTES", 300)
    monkeypatch.setattr(ks, "READ_BYTES", 97)
    monkeypatch.setattr(ks, "OVERSIZED_WINDOW", 1200)
    monkeypatch.setattr(ks, "HEAD_SCAN", 500)
    monkeypatch.setattr(json_value, "STEP", 333)
    events = _events(count, seed)
    text = _padded(events, seed, pad)
    path = tmp_path / ("p.json.gz" if gz else "p.json")
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    header: dict[str, Any] = {}
    got = [
        (type(e).__name__, msgspec.json.encode(e))
        for chunk in ks.stream_events(path, header=header)
        for e in chunk
    ]
    compact = json.dumps(json.loads(text)).encode()
    head, array = kj.split_document(compact, path)
    want = [(type(e).__name__, msgspec.json.encode(e)) for chunk in kj.event_chunks(array) for e in chunk]
    assert got == want
    assert header == head == {"schemaVersion": 1, "x": 2}
    # in parts (decoding workers): the parts concatenate to the whole, or a part gives up on a value longer than
    # its window (the reader then decodes the file in one process)
    for n in (2, 3):
        parts: list[tuple[str, bytes]] = []
        try:
            for k in range(n):
                parts += [
                    (type(e).__name__, msgspec.json.encode(e))
                    for c in ks.stream_events(path, part=(k, n))
                    for e in c
                ]
        except ks.PartBoundaryError:
            continue
        assert parts == want


def test_nested_cut_candidates_cost_a_few_decodes(monkeypatch: pytest.MonkeyPatch) -> None:
    # one event holding 5,000 objects side by side straddles the target: the candidates inside it are not
    # tried one by one (5,000 decodes of the chunk) but 1, 2, 4, ... back and then by halves
    wide = {
        "ph": "X",
        "cat": "kernel",
        "name": "w",
        "ts": 1,
        "dur": 1,
        "args": {"w": [{"a": i} for i in range(5000)]},
    }
    small = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "ts": i, "dur": 1} for i in range(50)]
    text = json.dumps(small + [wide] + small).encode()
    calls = []
    decode = kj._decode_chunk
    monkeypatch.setattr(kj, "_decode_chunk", lambda t, lenient=False: calls.append(1) or decode(t, lenient))
    start = text.index(b"{")
    target = text.index(b'"w": [') + 20_000
    events, cut, following = kj.decodable_cut(memoryview(text), start, target, False)
    assert [e.name for e in events] == [f"k{i}" for i in range(50)]
    assert text[following:].startswith(b'{"ph": "X", "cat": "kernel", "name": "w"')
    assert len(calls) <= 30


def test_help_names_every_limit_flag() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "tracekit.cli", "analyze", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    for flag in ("--max-inflated", "--max-memory", "--max-string", "--max-event"):
        assert flag in run.stdout


# -- events recorded twice -------------------------------------------------------------------------------------


@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),
            st.integers(0, 2),
            st.one_of(st.none(), st.integers(0, 2)),
            st.sampled_from("ab"),
        ),
        max_size=30,
    )
)
def test_only_rows_equal_in_every_field_with_a_correlation_are_dropped(
    raw: list[tuple[int, int, int | None, str]],
) -> None:
    """:func:`tracekit.model.drop_repeated_rows` against counting by hand: of rows equal in every column, the
    first is kept and the others dropped, but only where the correlation id is known; the order of the kept
    rows is the frame's own."""
    from tracekit.model import drop_repeated_rows

    # sorted by start and end, as the trace's frames are (the rest of the order as generated)
    rows = sorted(((s, s + length, corr, name) for s, length, corr, name in raw), key=lambda r: r[:2])
    frame = pl.DataFrame(rows, schema=["start", "end", "correlation", "name"], orient="row")
    kept, dropped = drop_repeated_rows(frame)
    seen: set[tuple[int, int, int | None, str]] = set()
    want = []
    for row in rows:
        if row[2] is not None and row in seen:
            continue
        seen.add(row)
        want.append(row)
    assert kept.rows() == want
    assert dropped == len(rows) - len(want)
