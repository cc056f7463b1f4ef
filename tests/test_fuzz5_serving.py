"""LLM-serving traces (vLLM, SGLang; CUDA/HIP graph capture and replay), fuzzed against the analysis (round 5).

The real traces of ``../shared/real_traces/tracelens`` (``tests.conftest.REAL_TRACES``) are read as they are
or edited at test time into pytest's temporary folder; those tests skip without them. Hand-built traces are
synthetic (made up for the test, not measurements) and named so.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import tracekit
from tests.builders import kineto_event, kineto_file
from tests.conftest import REAL_TRACES
from tracekit.analyzers import plausibility

TRACELENS = REAL_TRACES / "tracelens"


def _real(name: str) -> Path:
    path = TRACELENS / name
    if not path.is_file():
        pytest.skip(f"real trace {name} not present")
    return path


def _events(name: str) -> dict[str, Any]:
    with gzip.open(_real(name), "rt") as f:
        return json.load(f)


def _write(doc: dict[str, Any], path: Path) -> Path:
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    return path


# ------------------------------------------------------------------- an iteration that captures a CUDA graph


def test_a_step_that_captures_a_graph_is_no_framework_bound_inference_step() -> None:
    """SGLang's CUDA-graph capture at batch 32 (one ProfilerStep on ROCm): 544 of its 546 launch calls ran
    between hipStreamBeginCapture and hipStreamEndCapture, which record work into a graph and run nothing (2
    kernels ran). It read "framework-bound, 0.03%", 33.7 ms of framework overhead, and a CUDA-graph projection
    of 670x, with no word that the step builds the very graph it would replay: the verdict is uncertain and
    the projection does not apply."""
    a = tracekit.analyze(_real("sglang_decode_capture_bs_32_rank0.json.gz"))
    assert a.summary.verdict_uncertain and "capture" in a.summary.verdict_uncertain
    assert any("544 of their 546 launch calls" in w for w in a.warnings), a.warnings
    assert not a.projection.applies
    assert "capture" in a.projection.reason


def _eager_steps_with_one_capture(tmp_path: Path, eager_too: bool = False) -> Path:
    """Four 1 ms ProfilerSteps (pid 10, tid 11), each with three 10 µs cudaLaunchKernel calls of 200 µs
    kernels; in the second, the three calls sit between cudaStreamBeginCapture and cudaStreamEndCapture and
    run nothing (synthetic); with ``eager_too``, four eager launches of 20 µs kernels follow them there (a
    capture's warm-up run)."""
    events: list[dict[str, Any]] = []
    correlation = 1
    for step in range(4):
        t0 = 1000 + step * 1000
        events.append(kineto_event("user_annotation", f"ProfilerStep#{step}", t0, 990, 10, 11))
        if step == 1:
            events.append(
                kineto_event("cuda_runtime", "cudaStreamBeginCapture", t0 + 2, 2, 10, 11, correlation=900)
            )
            events.append(
                kineto_event("cuda_runtime", "cudaStreamEndCapture", t0 + 200, 5, 10, 11, correlation=901)
            )
        for k in range(3):
            ts = t0 + 10 + k * 50
            events.append(
                kineto_event("cuda_runtime", "cudaLaunchKernel", ts, 10, 10, 11, correlation=correlation)
            )
            if step != 1:
                start = t0 + 100 + k * 210
                events.append(
                    kineto_event("kernel", f"gemm{k}", start, 200, 0, 7, device=0, correlation=correlation)
                )
            correlation += 1
        if step == 1 and eager_too:
            for k in range(4):
                ts = t0 + 300 + k * 30
                events.append(
                    kineto_event("cuda_runtime", "cudaLaunchKernel", ts, 10, 10, 11, correlation=correlation)
                )
                events.append(
                    kineto_event("kernel", "warm", ts + 15, 20, 0, 7, device=0, correlation=correlation)
                )
                correlation += 1
    return kineto_file(tmp_path, events, "one_capture.synthetic.json")


def test_one_capturing_step_among_eager_steps_is_named_and_the_projection_refused(tmp_path: Path) -> None:
    """One step of four captures its three launches into a graph: it is named in a warning (the median
    step is an eager one, so the verdict stands), and the CUDA-graph projection, which had been offered for a
    program that already captures graphs, does not apply."""
    a = tracekit.analyze(_eager_steps_with_one_capture(tmp_path))
    assert a.summary.iterations == 4
    assert any(w.startswith("1 of 4 iterations (ProfilerStep#1) capture") for w in a.warnings), a.warnings
    assert not (a.summary.verdict_uncertain or "").count("capture")
    assert not a.projection.applies and "capture" in a.projection.reason


# ------------------------------------------------------------- graph replays whose work the trace does not hold

GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def _as_graph_replays(
    doc: dict[str, Any], drop_work: bool, graph_thread: int | None = None
) -> dict[str, Any]:
    """The real qwen H100 trace with two of every three runs of 10 consecutive ``cudaLaunchKernel`` calls made
    one ``cudaGraphLaunch`` (the first call renamed, the others removed, their kernels given its correlation
    id, as CUPTI links a replay's node kernels), flows removed; with ``drop_work``, the replays' kernels left
    out, as a profiler that recorded no graph node would; ``graph_thread``: the graph launches' thread id (one
    that launches nothing else)."""
    events = doc["traceEvents"]
    calls = {
        e["args"]["correlation"]: e
        for e in events
        if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})
    }
    launches = sorted(k for k, e in calls.items() if e["name"] == "cudaLaunchKernel")
    replay_of: dict[int, int] = {}
    for n, start in enumerate(range(0, len(launches), 10)):
        group = launches[start : start + 10]
        if n % 3:
            calls[group[0]]["name"] = "cudaGraphLaunch"
            if graph_thread is not None:
                calls[group[0]]["tid"] = graph_thread
            replay_of.update((k, group[0]) for k in group)
    heads = set(replay_of.values())
    kept = []
    for e in events:
        correlation = e.get("args", {}).get("correlation")
        if e.get("cat") == "ac2g" or (
            e.get("cat") == "cuda_runtime" and correlation in replay_of and correlation not in heads
        ):
            continue
        if e.get("cat") in GPU_CATEGORIES and correlation in replay_of:
            if drop_work:
                continue
            e["args"]["correlation"] = replay_of[correlation]
        kept.append(e)
    return {**doc, "traceEvents": kept}


def test_graph_replays_without_their_kernels_make_the_verdict_uncertain(tmp_path: Path) -> None:
    """57 graph launches whose node kernels the trace does not hold, while eager launches before and after
    them have theirs: the device ran the replays, the profiler recorded none of their work. GPU busy fell
    from 31.905 to 16.644 ms and the verdict from "compute, 64.6%" to "framework-bound, 33.8%" with no doubt
    (:func:`lost_kernels` leaves graph launches aside). With the kernels kept, no doubt."""
    whole = tracekit.analyze(
        _write(
            _as_graph_replays(_events("h100_qwen1.5-0.5b_chat.json.gz"), False), tmp_path / "graphs.json.gz"
        )
    )
    assert whole.summary.bound == "compute" and not whole.summary.verdict_uncertain
    lost = tracekit.analyze(
        _write(_as_graph_replays(_events("h100_qwen1.5-0.5b_chat.json.gz"), True), tmp_path / "lost.json.gz")
    )
    assert round(lost.iterations["gpu_busy_ms"][0], 3) == 16.644
    doubt = lost.summary.verdict_uncertain
    assert doubt and "57 of 57 CUDA-graph launches have no kernel" in doubt


def test_a_thread_of_graph_launches_without_their_kernels_makes_the_verdict_uncertain(tmp_path: Path) -> None:
    """The same 57 graph launches without their kernels, made by a thread of their own that launches
    nothing else: no launch of that thread has its op, so "later launches of their thread" never held and
    the doubt was missing; the process's other thread launched (and ran) work after them."""
    doc = _as_graph_replays(_events("h100_qwen1.5-0.5b_chat.json.gz"), True, graph_thread=424242)
    a = tracekit.analyze(_write(doc, tmp_path / "lost_on_a_thread.json.gz"))
    doubt = a.summary.verdict_uncertain
    assert doubt and "57 of 57 CUDA-graph launches have no kernel" in doubt


# ------------------------------------------------------------------------ a capture cut during a graph replay

#: the vLLM decode trace's hipGraphLaunch correlation id
VLLM_GRAPH_LAUNCH = 505113


def _steps_of(doc: dict[str, Any], copies: int, period_us: float) -> tuple[dict[str, Any], int]:
    """``copies`` copies of the trace's complete events, copy k shifted by k * ``period_us`` with its
    correlation and External ids offset by k * (the largest id + 1), flows left out; and that offset."""
    events = doc["traceEvents"]
    complete = [e for e in events if e.get("ph") == "X"]
    offset = max(e.get("args", {}).get("correlation", 0) or 0 for e in complete) + 1
    external = max(e.get("args", {}).get("External id", 0) or 0 for e in complete) + 1
    out = [e for e in events if e.get("ph") not in ("X", "s", "f")]
    for k in range(copies):
        for e in complete:
            args = dict(e.get("args", {}))
            if "correlation" in args:
                args["correlation"] += k * offset
            if "External id" in args:
                args["External id"] += k * external
            out.append({**e, "ts": float(e["ts"]) + k * period_us, "args": args})
    return {**doc, "traceEvents": out}, offset


def test_a_last_step_cut_during_its_graph_replay_is_left_out(tmp_path: Path) -> None:
    """Six copies of the real vLLM full-graph decode step, 20 ms apart; the capture ends halfway through the
    last step's hipGraphLaunch replay (its launch is the step's last, the later 210 of its 421 kernels not
    recorded). The launch has ops, so it was no cut-off launch: the step was kept at 5.34 ms busy of 10.72
    (mean busy 9.822 ms). It is left out with a warning; the full step, its replay whole, is kept."""
    doc, offset = _steps_of(_events("vllm_decode_full_graphs.json.gz"), 6, 20_000)
    last = VLLM_GRAPH_LAUNCH + 5 * offset
    replay = sorted(
        e["ts"]
        for e in doc["traceEvents"]
        if e.get("cat") == "kernel" and e["args"].get("correlation") == last
    )

    def kept(e: dict[str, Any], cut: bool) -> bool:
        correlation = e.get("args", {}).get("correlation") or 0
        if e.get("ph") == "X" and correlation > last:
            return False
        return not (cut and correlation == last and e["ts"] >= replay[len(replay) // 2])

    whole = tracekit.analyze(
        _write(
            {**doc, "traceEvents": [e for e in doc["traceEvents"] if kept(e, False)]}, tmp_path / "w.json.gz"
        )
    )
    assert whole.summary.iterations == 6
    a = tracekit.analyze(
        _write(
            {**doc, "traceEvents": [e for e in doc["traceEvents"] if kept(e, True)]}, tmp_path / "cut.json.gz"
        )
    )
    assert a.summary.iterations == 5
    assert [round(v, 6) for v in a.iterations["gpu_busy_ms"]] == [10.718138] * 5
    assert any("replay holds 210 ops, the first of the 421" in w for w in a.warnings), a.warnings
    # Without op names (not read when a run states the trace's identity) nothing is claimed.
    trace = tracekit.read_trace(tmp_path / "cut.json.gz")
    everything = (int(trace.ops["start"].min()) - 10**9, int(trace.ops["end"].max()), None)
    assert plausibility.cut_off_replay(trace, *everything) == (210, 421)
    trace.ops = trace.ops.with_columns(pl.lit(None, pl.String).alias("name"))
    assert plausibility.cut_off_replay(trace, *everything) is None


def test_a_step_with_a_few_captured_calls_gets_no_projection(tmp_path: Path) -> None:
    """A step whose calls are mostly eager (4 of 7) but which captures three into a graph is no capture step
    (nothing said of it), yet the CUDA-graph projection would count the capture's host time as saved: it
    does not apply."""
    a = tracekit.analyze(_eager_steps_with_one_capture(tmp_path, eager_too=True))
    assert not any("capture a stream" in w for w in a.warnings), a.warnings
    assert not a.projection.applies
    assert (
        a.projection.reason
        == "the iterations capture CUDA graphs (3 launch calls made during a stream capture)"
    )


# ------------------------------------------------------------------ prefill and decode steps in one trace


def _serving_steps(tmp_path: Path, classes: str) -> Path:
    """SGLang steps (pid 10, tid 11) in the order of ``classes``: P a 10 ms ``step[EXTEND ...]`` with nine
    1 ms kernels back to back (90% busy), D a 2 ms ``step[DECODE bs=32]`` with ten 30 µs kernels launched
    150 µs apart (15% busy); each step ends with a cudaDeviceSynchronize (synthetic)."""
    events: list[dict[str, Any]] = []
    correlation, t = 1, 1000
    for cls in classes:
        prefill = cls == "P"
        name = "step[EXTEND bs=4 toks=4096]" if prefill else "step[DECODE bs=32]"
        count, kernel, apart, step = (9, 1000, 1010, 10_000) if prefill else (10, 30, 150, 2000)
        events.append(kineto_event("user_annotation", name, t, step - 20, 10, 11))
        for k in range(count):
            ts = t + 20 + k * apart
            events.append(
                kineto_event("cuda_runtime", "cudaLaunchKernel", ts, 8, 10, 11, correlation=correlation)
            )
            events.append(
                kineto_event("kernel", f"k{k}", ts + 12, kernel, 0, 7, device=0, correlation=correlation)
            )
            correlation += 1
        events.append(
            kineto_event(
                "cuda_runtime", "cudaDeviceSynchronize", t + step - 40, 15, 10, 11, correlation=correlation
            )
        )
        correlation += 1
        t += step
    return kineto_file(tmp_path, events, f"serving_{classes}.synthetic.json")


def test_prefill_and_decode_steps_with_opposite_verdicts_make_the_verdict_uncertain(tmp_path: Path) -> None:
    """Three prefill steps at 90.2% and three decode steps at 15.2%: the headline read "compute-bound, median
    GPU utilization 52.7%, median framework overhead 1.330 ms of 5.980 ms", numbers of no step, with no
    word; with two prefill steps it read "framework-bound" (the decode steps') over a trace whose time is 77%
    prefill. Both are uncertain now, each class's median and verdict said; steps of one class are not."""
    for classes, bound in (("PPPDDD", "compute"), ("PPDDD", "framework")):
        a = tracekit.analyze(_serving_steps(tmp_path, classes))
        assert a.summary.bound == bound
        doubt = a.summary.verdict_uncertain
        assert (
            doubt and "prefill steps (" in doubt and "90.2%, compute-bound; decode steps (3) 15.2%" in doubt
        )
    assert not tracekit.analyze(_serving_steps(tmp_path, "DDDD")).summary.verdict_uncertain


def test_one_prefill_step_among_many_decode_steps_is_said_not_doubted(tmp_path: Path) -> None:
    """One prefill step (10 ms, 36% of the time) among nine decode steps: the verdict is the decode steps',
    rightly for nine steps of ten; a warning names the prefill steps' own verdict, and the verdict stands.
    The leading prefill step is no slow start (it had been called "warm-up in the trace" with --skip 1
    offered, which drops the prefill work); a slow first decode step still is."""
    a = tracekit.analyze(_serving_steps(tmp_path, "P" + "D" * 9))
    assert a.summary.bound == "framework" and not a.summary.verdict_uncertain
    assert any(w.startswith("the serving steps' classes get opposite verdicts") for w in a.warnings)
    assert not any("slow start" in w for w in a.warnings), a.warnings
    path = _serving_steps(tmp_path, "D" * 10)
    doc = json.loads(path.read_text())
    for e in doc["traceEvents"]:  # the first step's kernels 30 -> 1500 µs, its range 2 -> 9 ms
        if e["ts"] < 3000 and e["cat"] == "kernel":
            e["ts"], e["dur"] = 1000 + 20 + 12 + int(e["name"][1:]) * 800, 750
        elif e["ts"] < 3000 and e["cat"] == "user_annotation":
            e["dur"] = 8980
        elif e["ts"] >= 3000 or e["name"] == "cudaDeviceSynchronize":
            e["ts"] += 7000 if e["ts"] >= 2900 else 0
    path.write_text(json.dumps(doc))
    slow = tracekit.analyze(path)
    assert any("slow start" in w for w in slow.warnings), slow.warnings


# ------------------------------------------------------------- device work the iterations did not launch


def _step_behind_earlier_work(tmp_path: Path) -> Path:
    """One 10 ms ProfilerStep (pid 10, tid 11) of a server profiled mid-stream: the GPU still runs six 1 ms
    kernels launched before the capture (ids 1-6, no call in the trace) while the step's first call, a
    cudaDeviceSynchronize, waits 5.9 ms for them; then five launches of 600 µs kernels and a final sync
    (synthetic)."""
    events = [kineto_event("user_annotation", "ProfilerStep#0", 1000, 10_000, 10, 11)]
    for k in range(6):
        events.append(
            kineto_event("kernel", "earlier", 900 + k * 1000, 1000, 0, 7, device=0, correlation=1 + k)
        )
    events.append(kineto_event("cuda_runtime", "cudaDeviceSynchronize", 1010, 5900, 10, 11, correlation=100))
    for k in range(5):
        ts = 6920 + k * 50
        events.append(kineto_event("cuda_runtime", "cudaLaunchKernel", ts, 10, 10, 11, correlation=101 + k))
        events.append(kineto_event("kernel", "own", 6940 + k * 600, 600, 0, 7, device=0, correlation=101 + k))
    events.append(kineto_event("cuda_runtime", "cudaDeviceSynchronize", 7200, 2800, 10, 11, correlation=200))
    return kineto_file(tmp_path, events, "behind_earlier_work.synthetic.json")


def test_a_step_waiting_on_work_launched_before_the_capture_is_not_called_framework_bound(
    tmp_path: Path,
) -> None:
    """The step's own kernels are 3 ms of its 10 ms (30%, "framework-bound"); for 5.9 ms of its idle time
    the GPU ran work launched before the capture while the host waited on it in a sync call. It read
    "framework-bound, 30.0%", 7 ms of framework overhead, without a word (the unassigned-ops warning says
    only that those ops count in no iteration). Busy stays the step's own work; counted busy, that time gives
    89%, so the verdict is uncertain. The real qwen trace's 13.5 ms of such time is noted (compute either
    way)."""
    a = tracekit.analyze(_step_behind_earlier_work(tmp_path))
    assert round(a.iterations["gpu_busy_ms"][0], 6) == 3.0
    assert a.summary.bound == "framework"
    doubt = a.summary.verdict_uncertain
    assert doubt and "during 5.900 ms of the iterations' idle time" in doubt and "89.0%" in doubt
    qwen = tracekit.analyze(_real("h100_qwen1.5-0.5b_chat.json.gz"))
    assert qwen.summary.bound == "compute" and not qwen.summary.verdict_uncertain
    assert any(n.startswith("during 13.477 ms of the iterations' idle time (77%)") for n in qwen.notes)
