"""Kineto traces recorded with the Python tracer (torch.profiler ``with_stack``), round 15: the host's silent
stretches told apart by the python_function events (a thread blocked in a waiting call, or running Python).

Every trace built here is SYNTHETIC (hand-built Kineto JSON, file names holding "synthetic", exact answers);
the real traces (../shared/real_traces/tracelens) are read where present, never copied into the repo."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from tests.builders import kineto_event, kineto_file
from tracekit.analyzers import plausibility as P
from tracekit.api import analyze, read_trace
from tracekit.readers import kineto as K

REAL = Path(__file__).parents[2] / "shared/real_traces/tracelens"
UNRECORDED = "no CPU operator or API call on any host thread"
STEP_US = 10_000


def _steps(steps: int = 3) -> list[dict[str, Any]]:
    """vLLM's worker as torch.profiler records it (serving14's trace): ``ProfilerStep#k`` runs from step k's start
    to step k+1's; each step (t0 = 10 ms k): an ``aten::linear`` [t0+100, t0+1900) us holding 10 launches of 150
    us kernels (1.5 ms busy), a ``cudaDeviceSynchronize`` [t0+1900, t0+2000), then no CPU operator, API call or
    device op until the next step's operator at t0+10100: 8.0 ms of silence in the first step's window, 8.1 ms
    in the others' (their first 100 us close the previous silence)."""
    events, corr = [], 1
    for k in range(steps):
        t0 = k * STEP_US
        events.append(kineto_event("user_annotation", f"ProfilerStep#{k + 1}", t0, STEP_US))
        events.append(kineto_event("cpu_op", "aten::linear", t0 + 100, 1800))
        for i in range(10):
            call = t0 + 100 + 180 * i
            events.append(kineto_event("cuda_runtime", "cudaLaunchKernel", call, 10, correlation=corr))
            events.append(
                kineto_event(
                    "kernel", f"gemm_{i}", call + 15, 150, pid=0, tid=7, correlation=corr, stream=7, device=0
                )
            )
            corr += 1
        events.append(kineto_event("cuda_runtime", "cudaDeviceSynchronize", t0 + 1900, 100))
    return events


def _py(name: str, ts: int, dur: int, tid: int = 1) -> dict[str, Any]:
    return kineto_event("python_function", name, ts, dur, pid=1, tid=tid)


def _waiting(steps: int = 3) -> list[dict[str, Any]]:
    """The launching thread's Python in each step's silence: ``schedule`` [t0+2000, t0+2040) calling ``len``
    [t0+2010, t0+2020); ``queue.get`` [t0+2050, t0+9950) holding ``threading`` ``wait`` [t0+2060, t0+9940) and a
    lock's ``acquire`` [t0+2070, t0+9930) (blocked: 7.9 ms); ``process_outputs`` [t0+9960, t0+10000); under the
    busy loop's frame [0, 30000). Running Python (calls at most 100 us apart, outside the wait): [t0+2000,
    t0+2050) and [t0+9950, t0+10000), 0.1 ms a step."""
    events = [_py("vllm/v1/engine/core.py(700): run_busy_loop", 0, steps * STEP_US)]
    for k in range(steps):
        t0 = k * STEP_US
        events += [
            _py("vllm/v1/core/sched/scheduler.py(50): schedule", t0 + 2000, 40),
            _py("<built-in function len>", t0 + 2010, 10),
            _py("queue.py(171): get", t0 + 2050, 7900),
            _py("threading.py(320): wait", t0 + 2060, 7880),
            _py("<built-in method acquire of _thread.lock object at 0x7f5e1c2d3e40>", t0 + 2070, 7860),
            _py("vllm/v1/engine/core.py(260): process_outputs", t0 + 9960, 40),
        ]
    return events


def _framework(steps: int = 3) -> list[dict[str, Any]]:
    """The launching thread running Python through each step's silence: ``schedule`` [t0+2000, t0+10000)
    calling ``len`` every 50 us (160 calls of 10 us): 8.0 ms of Python a step, no blocking call."""
    events = []
    for k in range(steps):
        t0 = k * STEP_US
        events.append(_py("vllm/v1/core/sched/scheduler.py(50): schedule", t0 + 2000, 8000))
        events += [_py("<built-in function len>", t0 + 2000 + 50 * i, 10) for i in range(160)]
    return events


def _windows(rows: list[tuple[int, int]]) -> pl.DataFrame:
    return pl.DataFrame(
        {"window_start": [r[0] for r in rows], "window_end": [r[1] for r in rows]},
        schema={"window_start": pl.Int64, "window_end": pl.Int64},
    )


STEPS = _windows([(k * STEP_US * 1000, (k + 1) * STEP_US * 1000) for k in range(3)])


def _doubts(analysis: Any) -> list[str]:
    return [w for w in analysis.warnings if w.startswith("verdict uncertain: ") and UNRECORDED in w]


# ------------------------------------------------------------------------------------------------ the reader


def test_the_reader_keeps_each_threads_running_and_blocked_python_time(tmp_path: Path) -> None:
    trace = read_trace(kineto_file(tmp_path, _steps() + _waiting(), "wait.synthetic.json"))
    (thread,) = trace.meta[K.PYTHON_THREADS]
    assert (thread["pid"], thread["thread"]) == (1, 1)
    us = 1000
    assert thread["blocked"] == [
        [(k * STEP_US + 2050) * us, (k * STEP_US + 9950) * us, "queue.py: get"] for k in range(3)
    ]
    assert thread["running"] == [
        [(k * STEP_US + a) * us, (k * STEP_US + b) * us]
        for k in range(3)
        for a, b in ((2000, 2050), (9950, 10000))
    ]
    # the events themselves are no rows of any frame
    assert trace.ops.height == 30 and trace.api.height == 33 and trace.cpu_ops.height == 3


def test_a_lock_acquired_in_c_is_a_blocking_call_named_without_its_address() -> None:
    rows = pl.DataFrame(
        {
            "start": [0, 1_000_000],
            "dur_ns": [500_000, 200_000],
            "pid": [5, 5],
            "tid": ["7", "thread 8"],
            "name": [
                "<built-in method acquire of _thread.lock object at 0x7f5e1c2d3e40>",
                "<built-in function sleep>",
            ],
        }
    )
    pieces = K.python_pieces(rows).filter(pl.col("kind") == "block").sort("thread")
    assert pieces.select("pid", "thread", "start", "end", "call").rows() == [
        (5, 7, 0, 500_000, "<built-in method acquire of _thread.lock object>"),
        (5, 8, 1_000_000, 1_200_000, "<built-in function sleep>"),
    ]


@pytest.mark.parametrize(
    ("name", "blocking"),
    [
        ("threading.py(324): wait", True),
        ("/usr/lib/python3.12/threading.py(655): wait", True),
        ("queue.py(171): get", True),
        ("selectors.py(469): select", True),
        ("<built-in method poll of select.epoll object at 0x7f>", True),
        ("zmq/sugar/socket.py(778): recv_multipart", True),
        ("vllm/distributed/device_communicators/shm_broadcast.py(470): acquire_read", True),
        ("<built-in method get of _queue.SimpleQueue object at 0x7f>", True),
        ("<built-in method recv_multipart of Socket object at 0x7f>", True),
        ("<built-in function zmq_poll>", True),
        # not waits: a mapping's get, torch's GPU-side stream waits, a file named like threading.py
        ("_collections_abc.py(821): get", False),
        ("<built-in method get of dict object at 0x7f>", False),
        ("torch/cuda/streams.py(193): wait", False),
        ("<built-in method wait of Event object at 0x7f>", False),
        ("mythreading.py(3): wait", False),
        ("asyncio/base_events.py(1910): _run_once", False),
    ],
)
def test_blocking_calls_by_name(name: str, blocking: bool) -> None:
    assert pl.Series([name]).str.contains(K.BLOCKING_CALLS).item() is blocking


def test_python_events_split_across_chunks_join_at_the_seam(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 40,000 calls of 10 us, one every 20 us on one thread: one running stretch [0, 800 ms), whatever the
    # batches (of 32,768 rows) the reader cuts them into
    from tracekit.readers import kineto_wire

    monkeypatch.setattr(kineto_wire, "BATCH_ROWS", 1000)
    events = _steps(1) + [_py("<built-in function len>", 20 * i, 10, tid=3) for i in range(40_000)]
    trace = read_trace(kineto_file(tmp_path, events, "seams.synthetic.json"))
    (thread,) = [t for t in trace.meta[K.PYTHON_THREADS] if t["thread"] == 3]
    assert thread["running"] == [[0, 799_990_000]] and thread["blocked"] == []


def test_a_trace_without_python_events_has_no_record(tmp_path: Path) -> None:
    trace = read_trace(kineto_file(tmp_path, _steps(), "plain.synthetic.json"))
    assert K.PYTHON_THREADS not in trace.meta and "python_tracing" not in trace.meta


# ---------------------------------------------------------------------------------------------- the analysis


def test_a_silence_the_launching_thread_spent_in_a_blocking_call_is_said_to_be_a_wait(tmp_path: Path) -> None:
    # Before (serving14): "verdict uncertain: ... only the trace's Python call events (with_stack), which
    # tracekit does not read, say whether the host was waiting". Now the reader keeps them, and the doubt says
    # the host was waiting: 7.9 ms of each step's 8.1 ms silence in queue.get, 0.1 ms Python, 0.1 ms unknown.
    path = kineto_file(tmp_path, _steps() + _waiting(), "wait.synthetic.json")
    trace = read_trace(path)
    parts = P.silence_parts(trace, STEPS)
    assert parts.rows() == [
        (8_000_000, 7_900_000, 100_000),
        (8_100_000, 7_900_000, 100_000),
        (8_100_000, 7_900_000, 100_000),
    ]
    a = analyze(path)
    assert a.verdict == "framework"
    (doubt,) = _doubts(a)
    assert a.summary.verdict_uncertain is not None
    assert (
        "blocked in a waiting call for a median 7.900 ms an iteration ('queue.py: get' 23.700 ms in all)"
        in doubt
    )
    assert "running Python (framework code) for 0.100 ms, and 0.100 ms with no Python call" in doubt
    assert "the host was waiting then" in doubt
    # 1.5 ms busy of 10 - 7.9 ms
    assert "without the waits the median GPU utilization is 71.4% (threshold 50%), not 15.0%" in doubt
    assert "rests on the host's waits" in doubt


def test_a_silence_the_launching_thread_spent_running_python_is_framework_time(tmp_path: Path) -> None:
    # 8.0 ms of Python calls in each step's silence: framework code, rightly dispatch; the framework-bound
    # verdict stands (15.0%; without the 0.1 ms no record explains, 15.2%): no doubt, a note instead.
    path = kineto_file(tmp_path, _steps() + _framework(), "python.synthetic.json")
    trace = read_trace(path)
    assert P.silence_parts(trace, STEPS).rows() == [
        (8_000_000, 0, 8_000_000),
        (8_100_000, 0, 8_000_000),
        (8_100_000, 0, 8_000_000),
    ]
    a = analyze(path)
    assert a.verdict == "framework"
    assert _doubts(a) == []
    assert a.summary.verdict_uncertain is None
    frame = STEPS.with_columns(latency_ns=pl.lit(10_000_000), busy_ns=pl.lit(1_500_000))
    assert P.unrecorded_host(trace, frame) is None
    note = P.unrecorded_host_note(trace, frame)
    assert note is not None
    assert "running Python for a median 8.000 ms of it, in no blocking call" in note
    assert (
        "keeps the median GPU utilization at 15.2% (threshold 50%): the framework-bound verdict stands"
        in note
    )


def test_a_thread_that_makes_no_call_tells_nothing(tmp_path: Path) -> None:
    # One Python frame spanning the trace, no call begun or ended in the silences: the tracer does not say what
    # the thread did (a call it does not see, or computing): the doubt stays, with the time unknown.
    events = _steps() + [_py("vllm/v1/engine/core.py(700): run_busy_loop", 0, 3 * STEP_US)]
    path = kineto_file(tmp_path, events, "quiet.synthetic.json")
    trace = read_trace(path)
    assert P.silence_parts(trace, STEPS).rows() == [(8_000_000, 0, 0), (8_100_000, 0, 0), (8_100_000, 0, 0)]
    (doubt,) = _doubts(analyze(path))
    assert (
        "the trace's Python calls (with_stack) show no call begun or ended on the thread(s) that launch"
        in doubt
    )
    assert "without it the median GPU utilization is 78.9% (threshold 50%), not 15.0%" in doubt


def test_a_silence_partly_told_gives_its_parts(tmp_path: Path) -> None:
    # queue.get holds only [t0+6000, t0+9950) of each step's silence and the thread makes no call before it:
    # 3.95 ms waiting, 0.05 ms Python, 4.1 ms unknown (4.0 in the first step); without the waits 1.5 / 6.05 ms
    # is 24.8%: the waits alone do not decide; without the waits and the unknown time 1.5 / (10 - 8.05) ms is
    # 76.9%, without all of it 1.5 / 1.9 ms is 78.9%.
    events = _steps() + [_py("vllm/v1/engine/core.py(700): run_busy_loop", 0, 3 * STEP_US)]
    for k in range(3):
        t0 = k * STEP_US
        events += [
            _py("queue.py(171): get", t0 + 6000, 3950),
            _py("vllm/v1/engine/core.py(260): process_outputs", t0 + 9960, 40),
        ]
    path = kineto_file(tmp_path, events, "partly.synthetic.json")
    assert P.silence_parts(read_trace(path), STEPS).rows() == [
        (8_000_000, 3_950_000, 50_000),
        (8_100_000, 3_950_000, 50_000),
        (8_100_000, 3_950_000, 50_000),
    ]
    (doubt,) = _doubts(analyze(path))
    assert (
        "blocked in a waiting call for a median 3.950 ms an iteration ('queue.py: get' 11.850 ms in all)"
        in doubt
    )
    assert (
        "running Python (framework code) for 0.050 ms, and 4.100 ms with no Python call begun or ended"
        in doubt
    )
    assert (
        "the waits alone do not decide the verdict (without them the median GPU utilization is 24.8%, without "
        "the waits and the unknown time 76.9%, without all of it 78.9%; threshold 50%; now 15.0%)"
    ) in doubt


def test_another_threads_wait_is_not_the_launching_threads(tmp_path: Path) -> None:
    # tqdm's monitor thread (tid 9, no API call) waits through the whole trace, as in the real H100 traces; the
    # launching thread makes no call: nothing is known of it, so no wait is claimed.
    events = _steps() + [
        _py("vllm/v1/engine/core.py(700): run_busy_loop", 0, 3 * STEP_US),
        _py("threading.py(324): wait", 0, 3 * STEP_US, tid=9),
    ]
    trace = read_trace(kineto_file(tmp_path, events, "monitor.synthetic.json"))
    assert P.silence_parts(trace, STEPS).get_column("waiting_ns").to_list() == [0, 0, 0]


def test_a_wait_while_another_thread_runs_python_is_no_wait(tmp_path: Path) -> None:
    # The launching thread in queue.get [t0+2050, t0+9950) while thread 9 runs Python [t0+3000, t0+4000) (a
    # call every 50 us): that 1 ms is not the host waiting; 6.9 ms is.
    other = [
        _py("<built-in function len>", k * STEP_US + 3000 + 50 * i, 10, tid=9)
        for k in range(3)
        for i in range(20)
    ] + [_py("detokenizer.py(5): run", k * STEP_US + 3000, 1000, tid=9) for k in range(3)]
    trace = read_trace(kineto_file(tmp_path, _steps() + _waiting() + other, "two_threads.synthetic.json"))
    assert P.silence_parts(trace, STEPS).rows() == [
        (8_000_000, 6_900_000, 100_000),
        (8_100_000, 6_900_000, 100_000),
        (8_100_000, 6_900_000, 100_000),
    ]


def test_python_events_of_no_launching_thread_leave_the_doubt_as_it_was(tmp_path: Path) -> None:
    events = _steps() + [_py("queue.py(171): get", k * STEP_US + 2050, 7900, tid=9) for k in range(3)]
    path = kineto_file(tmp_path, events, "elsewhere.synthetic.json")
    assert P.silence_parts(read_trace(path), STEPS) is None
    (doubt,) = _doubts(analyze(path))
    assert (
        "the trace's Python call events (with_stack) hold none of the threads that launch device work"
        in doubt
    )
    assert "without it the median GPU utilization is 78.9% (threshold 50%), not 15.0%" in doubt


def test_without_python_events_the_doubt_is_unchanged(tmp_path: Path) -> None:
    (doubt,) = _doubts(analyze(kineto_file(tmp_path, _steps(), "plain.synthetic.json")))
    assert "torch.profiler records nothing for a thread that is blocked" in doubt
    assert "a median 8.100 ms an iteration, of a median latency of 10.000 ms (81.0%)" in doubt


def test_the_framework_answer_is_said_in_the_analysis(tmp_path: Path) -> None:
    a = analyze(kineto_file(tmp_path, _steps() + _framework(), "python.synthetic.json"))
    assert any("the framework-bound verdict stands" in w for w in a.warnings), a.warnings


# ----------------------------------------------------------------------------- real traces (read, never copied)


@pytest.mark.skipif(not REAL.exists(), reason="the real traces are not here")
def test_the_real_h100_bert_trace_keeps_tqdms_monitor_waiting_and_the_main_thread_running() -> None:
    # tqdm's monitor thread (the tracer's tid 0) sits in threading's wait for the whole 4.9 ms capture; the main
    # thread (19392, the one with API calls) runs Python in two stretches, split where no Python call began or
    # ended for 107.4 us (more than the 100 us that counts as running).
    trace = read_trace(REAL / "h100_bert-small.json.gz")
    threads = {(t["pid"], t["thread"]): t for t in trace.meta[K.PYTHON_THREADS]}
    assert threads[(0, 0)]["blocked"] == [[1419247332601468, 1419247337467316, "threading.py: wait"]]
    assert threads[(19392, 19392)]["blocked"] == []
    assert threads[(19392, 19392)]["running"] == [
        [1419247332652299, 1419247332871932],
        [1419247332979313, 1419247337467316],
    ]


def _real_step_in_a_profiler_step() -> Any:
    """serving14's case: the real vLLM full-graph decode step (its execute_* range: 19.114 ms, 10.718 ms busy)
    inside a ProfilerStep running 50 ms from the range's start (vLLM's profiler.step() to the next step)."""
    from tracekit.model import RANGES_SCHEMA, conform

    trace = read_trace(REAL / "vllm_decode_full_graphs.json.gz")
    step = trace.ranges.filter(pl.col("name").str.starts_with("execute_"))
    outer = step.with_columns(
        pl.lit("ProfilerStep#7").alias("name"), (pl.col("start") + 50_000_000).alias("end")
    ).select(trace.ranges.columns)
    trace.ranges = conform(pl.concat([trace.ranges, outer]), RANGES_SCHEMA).sort(
        ["start", "end"], descending=[False, True]
    )
    return trace, int(outer.get_column("end").item())


@pytest.mark.skipif(not REAL.exists(), reason="the real traces are not here")
def test_a_real_steps_silence_past_the_python_record_stays_in_doubt() -> None:
    # The 30.886 ms after the step's last device op lie past the Python tracer's last event: it says nothing
    # there, and the doubt stays (21.4% framework-bound; 56.1% without the silence), saying so.
    from tracekit.analyzers.iterations import analyze_iterations

    trace, _ = _real_step_in_a_profiler_step()
    a = analyze_iterations(trace)
    assert a.summary.bound == "framework"
    (doubt,) = [w for w in a.warnings if UNRECORDED in w]
    assert "a median 30.886 ms an iteration, of a median latency of 50.000 ms (61.8%)" in doubt
    assert "show no call begun or ended on the thread(s) that launch device work then" in doubt
    assert "without it the median GPU utilization is 56.1% (threshold 50%), not 21.4%" in doubt


@pytest.mark.skipif(not REAL.exists(), reason="the real traces are not here")
def test_a_real_step_whose_silence_the_worker_spent_waiting_is_said_to_rest_on_the_wait() -> None:
    # The same, with the worker's Python record holding vLLM's shared-memory spin-wait for the scheduler's next
    # message from the step's last device op to the ProfilerStep's end (what a real with_stack capture of a
    # waiting worker records; added in memory): the doubt now says the verdict rests on the host's wait.
    from tracekit.analyzers.iterations import analyze_iterations

    trace, step_end = _real_step_in_a_profiler_step()
    last = int(trace.ops.get_column("end").max())
    (main,) = [t for t in trace.meta[K.PYTHON_THREADS] if t["thread"] == 851]
    main["blocked"] = [
        [last, step_end, "vllm/distributed/device_communicators/shm_broadcast.py: acquire_read"]
    ]
    a = analyze_iterations(trace)
    (doubt,) = [w for w in a.warnings if UNRECORDED in w]
    assert "blocked in a waiting call for a median 30.886 ms an iteration" in doubt
    assert "without the waits the median GPU utilization is 56.1% (threshold 50%), not 21.4%" in doubt
    assert "rests on the host's waits" in doubt


def test_a_watchdog_threads_event_queries_do_not_hide_the_launching_threads_wait(tmp_path: Path) -> None:
    # PyTorch's NCCL watchdog (a C++ thread, no Python record) polls cudaEventQuery: an API-calling thread that
    # launches nothing. Before, every thread with an API call had to show a wait, so the watchdog's made the
    # wait unknown (0 ms): now the threads that launch work decide (7.898 ms a step: the 7.9 ms wait but the
    # query's own 2 us, which is a record, no silence).
    watchdog = [
        kineto_event("cuda_runtime", "cudaEventQuery", k * STEP_US + 5000, 2, pid=1, tid=5) for k in range(3)
    ]
    path = kineto_file(tmp_path, _steps() + _waiting() + watchdog, "watchdog.synthetic.json")
    assert P.silence_parts(read_trace(path), STEPS).get_column("waiting_ns").to_list() == [7_898_000] * 3


def test_a_short_wait_is_part_of_the_python_around_it(tmp_path: Path) -> None:
    # A lock handed over at once (an acquire of 2 us, every 50 us among calls every 5 us) is no wait: the thread's
    # record stays one running stretch, not 100,000 pieces (a with_stack trace of a busy engine holds such
    # acquires by the hundred thousand); a wait of 100 us or more is kept.
    rows = pl.DataFrame(
        {
            "start": [0, 5_000, 10_000, 15_000, 200_000],
            "dur_ns": [2_000, 1_000, 1_000, 150_000, 100_000],
            "pid": [1] * 5,
            "tid": [1] * 5,
            "name": [
                "<built-in method acquire of _thread.lock object at 0x7f00>",
                "<built-in function len>",
                "<built-in function len>",
                "<built-in function len>",
                "<built-in function sleep>",
            ],
        }
    )
    pieces = K.python_pieces(rows)
    assert pieces.filter(pl.col("kind") == "block").select("start", "end", "call").rows() == [
        (200_000, 300_000, "<built-in function sleep>")
    ]
    # (running: [0, 15) us, calls 5 us apart, the 2 us acquire among them; not the 150 us len call that holds no
    # call: quiet; then [165, 300) us, 35 and 100 us apart; python_threads leaves the sleep out of it)
    assert pieces.filter(pl.col("kind") == "run").select("start", "end").rows() == [
        (0, 15_000),
        (165_000, 300_000),
    ]


@pytest.mark.parametrize("how", ["worker", "lenient"])
def test_the_record_is_the_same_decoded_in_a_worker_or_leniently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    # The fast decoding hands the Python events over in columns of their own (kineto_wire.PYTHON_EVENTS); a
    # chunk decoded leniently (some value of another type: here an unread event's pid 1.5) keeps them as rows,
    # and a worker process pickles them: the same record each way.
    events = _steps() + _waiting()
    monkeypatch.setenv("TRACEKIT_DECODE_WORKER", "0")
    plain = read_trace(kineto_file(tmp_path, events, "plain.synthetic.json")).meta[K.PYTHON_THREADS]
    if how == "worker":
        monkeypatch.setenv("TRACEKIT_DECODE_WORKER", "1")
    else:
        events = [*events, kineto_event("overhead", "Activity Buffer Request", 0, 1, pid=1.5, tid=0)]
    other = read_trace(kineto_file(tmp_path, events, f"{how}.synthetic.json")).meta[K.PYTHON_THREADS]
    assert other == plain
    assert plain[0]["blocked"][0] == [2_050_000, 9_950_000, "queue.py: get"]


# -------------------------------------------------------------------------------- Task B: Kineto quirks


def _rccl_steps(kernel_correlation: Any) -> list[dict[str, Any]]:
    """3 ProfilerSteps of 1 ms (ROCm): two hipLaunchKernel'd 100 us gemms each, and an RCCL kernel [t0+400,
    t0+900) us launched by hipExtLaunchKernel, whose kernel event carries ``kernel_correlation`` (roctracer
    gives 0 for every communication kernel, ROCm/roctracer#100; None: no correlation arg)."""
    events, corr = [], 1
    for k in range(3):
        t0 = k * 1000
        events += [
            kineto_event("user_annotation", f"ProfilerStep#{k + 1}", t0, 1000),
            kineto_event("cpu_op", "aten::mm", t0 + 10, 300),
        ]
        for i in range(2):
            call = t0 + 20 + 100 * i
            events += [
                kineto_event("cuda_runtime", "hipLaunchKernel", call, 20, correlation=corr),
                kineto_event(
                    "kernel", "gemm", call + 30, 100, pid=0, tid=7, correlation=corr, stream=7, device=0
                ),
            ]
            corr += 1
        ids = {} if kernel_correlation is None else {"correlation": kernel_correlation}
        events += [
            kineto_event("cuda_runtime", "hipExtLaunchKernel", t0 + 300, 20, correlation=corr),
            kineto_event(
                "kernel", "ncclDevKernel_Generic", t0 + 400, 500, pid=0, tid=9, stream=9, device=0, **ids
            ),
        ]
        corr += 1
    return events


def test_a_kernel_of_correlation_0_has_no_correlation(tmp_path: Path) -> None:
    # roctracer writes correlation 0 for RCCL kernels (ROCm/roctracer#100; PyTorch's own profiler links only
    # ids > 0: `if corr_id > 0`). Before: 0 read as an id no call has, "launched before the capture began", and
    # the RCCL kernels' 0.5 ms a step counted in no iteration: GPU busy 0.2 ms of 1 ms, framework-bound. Now they
    # have no correlation, as when the arg is missing: assigned by their start, busy 0.7 ms.
    zero = analyze(kineto_file(tmp_path, _rccl_steps(0), "rccl0.synthetic.json"))
    missing = analyze(kineto_file(tmp_path, _rccl_steps(None), "rccl_none.synthetic.json"))
    assert missing.iterations.get_column("gpu_busy_ms").round(6).to_list() == [0.7, 0.7]
    assert zero.iterations.get_column("gpu_busy_ms").round(6).to_list() == [0.7, 0.7]
    assert zero.verdict == missing.verdict == "compute"
    assert not any("launched before the capture began" in w for w in zero.warnings)
    trace = read_trace(kineto_file(tmp_path, _rccl_steps(0), "rccl0.synthetic.json"))
    assert (
        trace.ops.filter(pl.col("name") == "ncclDevKernel_Generic").get_column("correlation").null_count()
        == 3
    )


def test_correlation_0_links_where_the_traces_own_calls_use_it(tmp_path: Path) -> None:
    # a hand-built trace numbering its launches from 0: there 0 is an id, and the first kernel keeps its call
    events = _rccl_steps(None)
    events[2]["args"]["correlation"] = events[3]["args"]["correlation"] = 0  # the first call and its gemm
    trace = read_trace(kineto_file(tmp_path, events, "from0.synthetic.json"))
    assert trace.ops.filter(pl.col("correlation") == 0).get_column("name").to_list() == ["gemm"]
