"""The lead's round-20 fixes that no helper's file pins (hand-built SYNTHETIC traces, exact answers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import analyze_json, run_sql, small_trace_events, three_iteration_nsys

PAIRED = "are written as begin/end pairs ('ph' 'B'/'E' or 'b'/'e') beside complete events ('ph' 'X')"


def _kineto(tmp_path: Path, name: str, events: list[dict[str, Any]]) -> Path:
    doc = {"schemaVersion": 1, "traceEvents": events, "metadata": {"synthetic": True}}
    path = tmp_path / f"{name}.synthetic.json"
    path.write_text(json.dumps(doc))
    return path


def _analyze(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, Any]:
    code, doc, err = analyze_json(capsys, str(path))
    assert code == 0, err
    assert doc is not None
    return doc


def _rows(doc: dict[str, Any]) -> list[tuple[float, float | None, int, int | None]]:
    return [(it["latency_ms"], it["gpu_busy_ms"], it["kernels"], it["launches"]) for it in doc["iterations"]]


def _paired(events: list[dict[str, Any]], category: str, which: set[int], phases: str = "BE") -> list[Any]:
    """``events`` with the events of ``category`` whose position among that category's is in ``which``
    written as a begin/end pair of ``phases`` (the end event: pid, tid and end time only, as the Trace Event
    Format allows)."""
    out, n = [], 0
    for e in events:
        if e["cat"] == category:
            n += 1
            if n - 1 in which:
                begin = {k: v for k, v in e.items() if k != "dur"} | {"ph": phases[0]}
                out += [begin, {"ph": phases[1], "pid": e["pid"], "tid": e["tid"], "ts": e["ts"] + e["dur"]}]
                continue
        out.append(e)
    return out


def test_a_middle_iterations_kernel_as_a_begin_end_pair_is_said_and_doubts_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Iteration 1's second kernel (of 12, position 4) as a B/E pair: that iteration holds 2 kernels of its 3
    launches, 0.02 ms busy; the others (0.9, 0.03, 3, 3). Before: nothing said, the verdict sure. Now the
    reader says the pairs were not read and the analysis doubts the verdict (GPU busy is a lower bound)."""
    doc = _analyze(capsys, _kineto(tmp_path, "be_middle", _paired(small_trace_events(), "kernel", {4})))
    assert _rows(doc) == [(0.9, 0.03, 3, 3), (0.9, 0.02, 2, 3), (0.9, 0.03, 3, 3), (0.9, 0.03, 3, 3)]
    said = [w for w in doc["warnings"] if PAIRED in w]
    assert len(said) == 1 and said[0].startswith("events of category 'kernel' "), doc["warnings"]
    assert "GPU busy time is short by it" in said[0]
    assert "events tracekit does not read ('kernel' events written as begin/end pairs)" in str(
        doc["summary"]["verdict_uncertain"]
    )


def test_async_begin_end_pairs_in_a_chunk_the_lenient_decoder_reads_are_said_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same kernel as an async 'b'/'e' pair, in a file the fast decoder hands to the lenient one (an
    event's name is a number): the begin/end pairs are found from the lenient chunk's phase column."""
    events = _paired(small_trace_events(), "kernel", {4}, phases="be")
    events.append({"ph": "i", "cat": "marker", "name": 7, "pid": 1, "tid": 1, "ts": 1_000_001, "s": "t"})
    doc = _analyze(capsys, _kineto(tmp_path, "be_lenient", events))
    assert _rows(doc)[1] == (0.9, 0.02, 2, 3)
    assert [w for w in doc["warnings"] if PAIRED in w and "'kernel'" in w], doc["warnings"]
    assert doc["summary"]["verdict_uncertain"]


def test_launch_calls_as_begin_end_pairs_are_said_as_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Iteration 2's first launch call (cuda_runtime position 6) as a B/E pair: its kernel has no call and
    counts in no iteration (said so), iteration 2 reads (0.9, 0.02, 2, 2); the reader says the launch calls
    the pairs record are left out."""
    doc = _analyze(capsys, _kineto(tmp_path, "be_calls", _paired(small_trace_events(), "cuda_runtime", {6})))
    assert _rows(doc)[2] == (0.9, 0.02, 2, 2)
    said = [w for w in doc["warnings"] if PAIRED in w]
    assert len(said) == 1 and "'cuda_runtime'" in said[0] and "launch counts" in said[0], doc["warnings"]


def test_annotations_all_begin_end_are_said_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every annotation a B/E pair: the trace's one warning for it stays the 'none is a complete event' one
    (no second line for the same pairs), and the trace reads whole as one iteration, as before."""
    doc = _analyze(
        capsys, _kineto(tmp_path, "be_all", _paired(small_trace_events(), "user_annotation", {0, 1, 2, 3}))
    )
    assert _rows(doc) == [(3.23, 0.12, 12, 12)]
    said = [w for w in doc["warnings"] if "begin/end" in w]
    assert len(said) == 1 and "begin/end pairs are not read" in said[0], said


# ------------------------------------------------------ calls of unknown end: their iterations' launch figures


def test_a_kineto_launch_call_of_negative_dur_withholds_its_iterations_launch_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Iteration 1's second launch call (of 5 µs) written with dur -5 (kineto#646's lost end): it lasts 0,
    so its iteration's launch-call time would read 10 µs for 15 and its queue 15 µs from the call's start.
    Now iteration 1's launch_api_us, queue_us and idle causes are withheld (None), named by index; the
    other iterations keep theirs (15.0 µs, 15.0 µs, launch 0.015 ms); the launches still count (3)."""
    events = small_trace_events()
    [e for e in events if e["cat"] == "cuda_runtime"][4]["dur"] = -5
    doc = _analyze(capsys, _kineto(tmp_path, "negative_call", events))
    fields = ("launches", "launch_api_us", "queue_us", "launch_ms", "dispatch_ms")
    got = [tuple(it[f] for f in fields) for it in doc["iterations"]]
    assert (
        got
        == [(3, 15.0, 15.0, 0.015, 0.81), (3, None, None, None, None)] + [(3, 15.0, 15.0, 0.015, 0.81)] * 2
    )
    assert any(
        w.startswith("1 of 4 iterations (index 1) hold API calls whose end time is unknown")
        for w in doc["warnings"]
    )


def test_an_nsys_launch_call_ending_before_it_starts_is_said_again_from_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The nsys twin (review19's case: iteration 1's call of correlation 4 stamped to end 1 µs before it
    starts), analyzed twice through --cache: the second analysis (the mended frames and meta from the cache)
    withholds and names the same iteration; the others keep 20.0 µs and a 40.0 µs queue."""
    path = run_sql(
        three_iteration_nsys(tmp_path / "negative_call.synthetic.sqlite"),
        "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = start - 1000 WHERE correlationId = 4",
    )
    cache = tmp_path / "cache"
    for _ in range(2):
        code, doc, err = analyze_json(capsys, str(path), "--cache", str(cache))
        assert code == 0 and doc is not None, err
        got = [(it["launch_api_us"], it["queue_us"]) for it in doc["iterations"]]
        assert got == [(20.0, 40.0), (None, None), (20.0, 40.0)]
        assert sum("(index 1) hold API calls whose end time is unknown" in w for w in doc["warnings"]) == 1


def test_an_infinite_latency_is_named_by_the_traces_index_not_its_position() -> None:
    """stability.measure names warm-up, outliers and shifts by ``indices`` (analyze's numbering); its
    infinite-latency line had still named positions: with iterations 2-11 measured, an infinite 4th read
    'iteration 3' for iteration 5."""
    from tracekit.analyzers.stability import measure

    values = [1.0, 1.0, 1.0, float("inf"), 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    got = measure(values, indices=list(range(2, 12)))
    assert got.warnings[0] == (
        "1 of 10 iterations (iteration 5) has an infinite latency (ms), no duration: left out of the statistics"
    )
    none_finite = measure([float("inf")] * 2, indices=[7, 9])
    assert none_finite.warnings == (
        "2 of 2 iterations (iterations 7, 9) have an infinite latency (ms), no duration: left out of the statistics",
    )


def test_a_synchronized_range_that_begins_inside_earlier_gpu_work_is_said_with_its_overlap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """hostile20's spill trace (tests.test_hostile20._spill_events): ranges of 1 ms, the even ones' kernels
    of 1.4 ms spilling 0.43 ms into the next range, whose own kernel (10 µs) is synchronized: those windows are
    their ranges (the documented rule), and the warning names them and the overlap exactly."""
    from tests.test_hostile20 import _spill_events

    doc = _analyze(capsys, _kineto(tmp_path, "spill", _spill_events()))
    said = [w for w in doc["warnings"] if "earlier iteration's GPU work still runs" in w]
    assert said == [
        "3 of 6 iterations (index 1, 3, 5) begin while an earlier iteration's GPU work still runs: their windows, "
        "their ranges, overlap it (1.290 ms in all, up to 0.430 ms), so that time is in two iterations' "
        "latencies, and in theirs it reads as idle time (framework overhead) though the device was busy with "
        "the earlier work"
    ]


# ---------------------------------------------------------------------- nvFuser's JIT is none of the runtimes


def _fused(names: list[str]) -> Any:
    """A hand-built trace of kernels named ``names``, 10 ns each but the first three 100 ns."""
    from tests.builders import make_trace

    ops = [
        (i * 200, i * 200 + (100 if i < 3 else 10), i, 7, "kernel", 0, name) for i, name in enumerate(names)
    ]
    return make_trace(ops=ops, op_fields=("start", "end", "correlation", "stream", "kind", "device", "name"))


def test_nvfusers_kernels_withhold_the_runtime_with_their_evidence() -> None:
    """nvFuser's kernels (as nsys demangles them: '<unnamed>::nvfuser_pointwise_f0_c1_r0_g0(...)') beside ATen
    ones: not PyTorch eager (the real NVIDIA/Fuser exports had read 'pytorch'), and none of tracekit's runtimes:
    the value is withheld with its evidence (2 of 5 kernels, 200 of 320 ns: 62%)."""
    from tracekit.analyzers.identify import OTHER_RUNTIME, runtime_from_content

    found = runtime_from_content(
        _fused(
            [
                "<unnamed>::nvfuser_pointwise_f0_c1_r0_g0(<unnamed>::Tensor<float, (int)2, (int)2>)",
                "nvfuser_inner_persistent_f1_c1_r0_g2",
                "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
                "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
                "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN",
            ]
        )
    )
    assert found is not None and (found.value, found.source) == (None, OTHER_RUNTIME)
    assert found.evidence.startswith("2 of 5 kernels are nvFuser's JIT-fused kernels (nvfuser_*, 62% of the")


def test_one_nvfuser_kernel_among_many_is_a_helper_not_the_runtime() -> None:
    """Below 0.5% of the kernels (1 of 300), as Inductor's helper rule: the ATen rule decides (pytorch)."""
    from tracekit.analyzers.identify import runtime_from_content

    found = runtime_from_content(
        _fused(["nvfuser_pointwise_f0_c1_r0_g0"] + ["void at::native::reduce_kernel<512, 1>"] * 299)
    )
    assert found is not None and found.value == "pytorch"


def test_a_zeroed_kernel_whose_id_another_processs_zeroed_call_carries_is_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pytorch#188481's zeroed events ('ts 0.000, dur 0.000') in a file of two processes: process 2's launch
    call and kernel of correlation 5 both zeroed, while process 1's call of id 5 (iteration 1's second) is
    placed. Correlation ids are per process, so the zeroed kernel may be process 2's: it had been kept,
    untimed, in process 1's iteration 1 (4 kernels for 3 launches); it is left out now, said."""
    events = small_trace_events()
    events += [
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 2,
            "tid": 2,
            "ts": 0,
            "dur": 0,
            "args": {"correlation": 5},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "other",
            "pid": 0,
            "tid": 8,
            "ts": 0,
            "dur": 0,
            "args": {"correlation": 5, "device": 0, "stream": 8},
        },
    ]
    doc = _analyze(capsys, _kineto(tmp_path, "two_processes_zeroed", events))
    assert _rows(doc) == [(0.9, 0.03, 3, 3)] * 4
    assert any("pytorch#188481" in w and "left out of every figure" in w for w in doc["warnings"]), doc[
        "warnings"
    ]


def test_a_sidecar_whose_warm_up_is_every_run_says_so_not_skip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sidecar saying 3 warm-up runs and 0 timed ones, on a trace of 3 iterations, with no --skip given:
    exit 2 naming the sidecar's counts, where it had said '--skip 3 drops all 3' of a --skip nobody gave."""
    path = _kineto(tmp_path, "all_warmup", small_trace_events(iterations=3))
    sidecar = {"synthetic": True, "warmup_in_trace": True, "warmup_iterations": 3, "iterations": 0}
    path.with_name("all_warmup.synthetic.meta.json").write_text(json.dumps(sidecar))
    code, _, err = analyze_json(capsys, str(path))
    assert code == 2
    assert err.strip().endswith(
        "the sidecar says the first 3 of the 3 'iteration' iterations are warm-up (warmup_iterations 3, "
        "iterations 0): no timed iteration is left (--skip 0 analyzes them all)"
    ), err


def test_iteration_ranges_of_two_nvtx_domains_are_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """3 'iteration' ranges of the default domain (1 ms, 2 ms apart, one kernel each) and 3 'iteration'
    ranges a library opened in its own domain 'libfoo' between them, holding nothing: 6 iterations, 3 empty,
    as before, and now a warning naming the two domains and their counts (hostile20's seen-not-tested)."""
    from tests.nsys_builder import NsysBuilder

    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    b.nvtx_domain(1, 5, "libfoo")
    for i in range(3):
        t0 = 10_000_000 + i * 2_000_000
        b.nvtx_range(t0, t0 + 1_000_000, "iteration")
        b.nvtx_range(t0 + 1_200_000, t0 + 1_300_000, "iteration", domain=5)
        b.runtime(t0 + 50_000, t0 + 60_000, "cudaLaunchKernel_v7000", correlation=i + 1)
        b.kernel(t0 + 100_000, t0 + 300_000, "k", correlation=i + 1)
    path = b.write(tmp_path / "two_domains.synthetic.sqlite")
    doc = _analyze(capsys, path)
    assert len(doc["iterations"]) == 6
    said = [w for w in doc["warnings"] if "NVTX domains" in w]
    assert said == [
        "the 6 iteration ranges come from 2 NVTX domains (default: 3, libfoo: 3): a library may name its own "
        "ranges as the program names its iterations, and those are other work; --range chooses by name, not "
        "by domain"
    ], doc["warnings"]


def test_kernels_on_gpus_of_two_models_are_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An H100 (device 0) and an A100 (device 1) each running one kernel per iteration: the trace's GPU is the
    busiest (a tie: the lower id, the H100), and now a warning says the kernels ran on two models."""
    from tests.nsys_builder import NsysBuilder

    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    b.gpu(1, "NVIDIA A100")
    for i in range(3):
        t0 = 10_000_000 + i * 2_000_000
        b.nvtx_range(t0, t0 + 1_000_000, "iteration")
        for d in (0, 1):
            b.runtime(
                t0 + 50_000 + d * 100,
                t0 + 60_000 + d * 100,
                "cudaLaunchKernel_v7000",
                correlation=2 * i + d + 1,
            )
            b.kernel(t0 + 100_000, t0 + 300_000, "k", device=d, correlation=2 * i + d + 1)
    doc = _analyze(capsys, b.write(tmp_path / "two_models.synthetic.sqlite"))
    assert doc["trace"]["gpu"] == "NVIDIA H100"
    said = [w for w in doc["warnings"] if "GPUs of" in w]
    assert said == [
        "the kernels ran on GPUs of 2 models (NVIDIA A100: 3, NVIDIA H100: 3 kernels): the trace's GPU names the "
        "busiest, NVIDIA H100, and the iterations' figures mix the models"
    ], doc["warnings"]


def test_a_dask_client_is_built_with_the_collector_paused_and_a_failed_one_collected() -> None:
    """fleet.run._connect: Dask's LoopRunner holds a class-wide lock while a Client starts; a garbage
    collection there had finalized an earlier failed Client, whose close takes the lock again (a CI hang).
    A stand-in Client records whether the collector ran during its construction; a failure is one line and
    leaves the collector as it was."""
    import gc

    from tracekit.errors import TracekitError
    from tracekit.fleet.run import _connect

    seen: list[bool] = []

    class Failing:
        def __init__(self, address: str, timeout: str) -> None:
            seen.append(gc.isenabled())
            raise ValueError("no port")

    class Working:
        def __init__(self, address: str, timeout: str) -> None:
            seen.append(gc.isenabled())

    with pytest.raises(TracekitError) as caught:
        _connect(Failing, "tcp://host")
    assert str(caught.value) == "--scheduler tcp://host: not a Dask scheduler address (no port)"
    assert isinstance(_connect(Working, "tcp://host:8786"), Working)
    assert seen == [False, False] and gc.isenabled()


def test_a_memory_watchdog_interrupted_before_its_thread_started_halts_without_an_error() -> None:
    """limits._Watchdog.halt: a Ctrl-C between making the thread and starting it (in start()) had left a thread
    that was never started, and halt()'s join raised 'cannot join thread before it is started': the
    interrupted command ended in a traceback, exit 1 (test_hostile16's Ctrl-C pin, in CI)."""
    import threading

    from tracekit.limits import _Watchdog

    dog = _Watchdog(1 << 40)
    dog.thread = threading.Thread(target=lambda: None)  # made, not started
    dog.halt()
    assert dog.thread is None and dog.stop.is_set()


def test_table_says_when_its_rows_are_cut_by_different_ranges(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`table A B`: A cut by 'iteration' annotations, B the same work under 'ProfilerStep#N' ones: the table
    says its rows' iterations are cut by different ranges, as compare and analyze A B do (fix20a left table)."""
    import copy

    from tests.hostile import run_cli

    a = _kineto(tmp_path, "a_iteration", small_trace_events())
    steps = copy.deepcopy(small_trace_events())
    n = 0
    for e in steps:
        if e["cat"] == "user_annotation":
            e["name"] = f"ProfilerStep#{n}"
            n += 1
    b = _kineto(tmp_path, "b_steps", steps)
    code, out, err = run_cli(capsys, "table", str(a), str(b), "--format", "json")
    assert code == 0, err
    said = [w for w in json.loads(out)["warnings"] if "cut by different ranges" in w]
    assert len(said) == 1 and "'iteration' in " in said[0] and "'ProfilerStep#*' in " in said[0], said
    assert all("_range" not in row for row in json.loads(out)["rows"])
