"""Review of 2026-11-27's fuzz-5 changes: each test failed on the code before its fix."""

from __future__ import annotations

from tests.builders import make_trace
from tracekit.analyzers import plausibility
from tracekit.analyzers.iterations import analyze_iterations

NAMED_OPS = ("start", "end", "correlation", "stream", "kind", "device", "name")


def _piecewise_steps(steps: int = 4):
    """``steps`` whole iterations, each replaying two CUDA graphs (piecewise capture): a piece of ops a, b,
    c, d, then the last piece, a, b (a prefix of the first by name and order), the device's last op."""
    ranges, api, ops = [], [], []
    correlation = 1
    for i in range(steps):
        t0 = i * 1_000_000
        ranges.append((t0, t0 + 900_000, "iteration"))
        for piece, names in enumerate((["a", "b", "c", "d"], ["a", "b"])):
            launch = t0 + 10_000 + piece * 400_000
            api.append((launch, launch + 5_000, correlation, "cudaGraphLaunch"))
            for j, name in enumerate(names):
                start = launch + 20_000 + j * 50_000
                ops.append((start, start + 40_000, correlation, 7, "kernel", 0, name))
            correlation += 1
    return make_trace(ranges, api, ops, op_fields=NAMED_OPS)


def test_a_whole_last_piece_of_a_piecewise_graph_step_is_no_cut_replay() -> None:
    """Every step's last graph piece holds the first ops of its first piece; the last step's is as whole as
    the earlier steps' (an earlier replay holds exactly its ops). It had been read as a replay the capture
    cut, and the last, complete, step left out with a warning."""
    trace = _piecewise_steps()
    assert plausibility.cut_off_replay(trace, 3_000_000, 3_900_000, None) is None
    result = analyze_iterations(trace)
    assert result.summary.iterations == 4
    assert not any("CUDA-graph replay holds" in w for w in result.warnings), result.warnings


def _slow_first_step(first: str):
    """Ten 1 ms iterations of one 0.5 ms kernel; the first lasts 60 ms: 50 ms in a cudaMalloc (``first``
    "setup"), or capturing three launches into a graph (``first`` "capture")."""
    ranges, api, ops = [], [], []
    t, correlation = 0, 1
    for i in range(10):
        length = 60_000_000 if i == 0 else 1_000_000
        ranges.append((t, t + length, "iteration"))
        start = t
        if i == 0 and first == "setup":
            api.append((t + 1_000, t + 50_000_000, None, "cudaMalloc"))
            start = t + 50_000_000
        if i == 0 and first == "capture":
            api.append((t + 1_000, t + 2_000, None, "cudaStreamBeginCapture"))
            for k in range(3):
                api.append((t + 10_000 + k * 10_000, t + 15_000 + k * 10_000, 1000 + k, "cudaLaunchKernel"))
            api.append((t + 50_000_000, t + 50_001_000, None, "cudaStreamEndCapture"))
            start = t + 50_000_000
        api.append((start + 1_000, start + 6_000, correlation, "cudaLaunchKernel"))
        ops.append((start + 10_000, start + 500_000, correlation, 7))
        correlation += 1
        t += length + 100_000
    return make_trace(ranges, api, ops)


def test_a_slow_first_step_that_a_rule_explains_is_said_once() -> None:
    """A first iteration slow by its setup calls had two warnings for the one fact, each offering --skip 1:
    the setup rule's (cudaMalloc named) and the slow start's, which guessed 'lazy loading, compilation, cold
    caches'; a first iteration capturing a graph had the same pair. The slow start is said only when no rule
    names its iterations."""
    result = analyze_iterations(_slow_first_step("setup"), skip=None)
    assert any("in setup calls (cudaMalloc" in w for w in result.warnings), result.warnings
    assert not any("slow start" in w for w in result.warnings), result.warnings
    captured = analyze_iterations(_slow_first_step("capture"), skip=None)
    assert any("capture a stream into a CUDA graph" in w for w in captured.warnings), captured.warnings
    assert not any("slow start" in w for w in captured.warnings), captured.warnings
    plain = analyze_iterations(_slow_first_step("none"), skip=None)
    assert any("slow start" in w for w in plain.warnings), plain.warnings


def test_ops_whose_launch_calls_were_lost_are_not_also_work_the_iterations_did_not_launch() -> None:
    """Five 0.9 ms iterations, each launching a 0.19 ms kernel; a second 0.5 ms kernel in each runs in the
    iteration's idle time with a correlation id no call of the trace has. The lost-launch doubt says their
    calls were lost during the capture (the iterations' own work); the foreign-work check had added a second
    doubt for the same ops, 'work they did not launch ... not paying a framework tax': one fact, two causes."""
    ranges, api, ops = [], [], []
    for i in range(5):
        t = 10_000_000 + i * 1_000_000
        ranges.append((t, t + 900_000, "iteration"))
        api.append((t + 1_000, t + 6_000, i + 1, "cudaLaunchKernel"))
        ops.append((t + 10_000, t + 200_000, i + 1, 7))
        ops.append((t + 300_000, t + 800_000, 900 + i, 7))
    result = analyze_iterations(make_trace(ranges, api, ops))
    doubts = result.summary.verdict_uncertain or ""
    assert "their launch calls were lost" in doubts
    assert "did not launch" not in doubts, doubts


def test_a_leading_prefill_step_is_no_slow_start_when_another_prefill_step_follows(tmp_path) -> None:
    """A 10 ms prefill step first and another among ten 2 ms decode steps: the first had been called a slow
    start ('warm-up in the trace ... --skip 1 drops them') because the rest held a prefill step too; it is
    a prefill step like the later one. A slow first decode step is still named (test_fuzz5_serving)."""
    import tracekit
    from tests.test_fuzz5_serving import _serving_steps

    for classes in ("PDDDDPDDDDDD", "PDDDDDDDDDPD"):
        a = tracekit.analyze(_serving_steps(tmp_path, classes))
        assert not any("slow start" in w for w in a.warnings), (classes, a.warnings)


def test_the_2021_scope_doubt_is_the_warning_the_verdict_line_points_to(tmp_path) -> None:
    """The verdict line says "UNCERTAIN: see the warning 'verdict uncertain'", and every other check's doubt
    begins so (plausibility's module contract); the 2021 scope doubt began "3 top-level operators ...", so
    the warning pointed to was not there."""
    import tracekit
    from tests.test_fuzz5_kineto import _cpu_run

    a = tracekit.analyze(_cpu_run(tmp_path, "2021", scope="forward"))
    assert any(w.startswith("verdict uncertain: ") and "'forward' (3)" in w for w in a.warnings), a.warnings


def test_the_report_does_not_say_its_means_include_a_slow_start_it_left_out() -> None:
    """The report's traced means leave out the warm-up drift that the stability rules drop, which is the
    analysis' slow start (both stability.warmup_prefix): its row had kept the analysis' warning 'the means
    include them (mean latency 1.093 ms, 0.860 without them)' beside a traced latency of 0.860 ms."""
    import tracekit
    from tests.conftest import SAMPLE_TRACES
    from tracekit.analyzers.report import config_row

    path = SAMPLE_TRACES / "h200_bert_fp16" / "sweep-cuda-graphs" / "cuda-graphs_b1_s128.torch.json.gz"
    analyzed = tracekit.analyze(path)
    assert any("slow start" in w for w in analyzed.warnings)  # analyze's means do include it
    row = config_row(analyzed)
    assert round(row["traced_latency_ms"], 3) == 0.860 and row["traced_kept_iterations"] == 9
    assert not any("slow start" in w for w in row["warnings"]), row["warnings"]
    assert any(w.startswith("traced latency: dropped 1 warm-up") for w in row["warnings"]), row["warnings"]
