"""Review of 2026-11-27's fuzz-5 changes: each test failed on the code before its fix."""

from __future__ import annotations

from builders import make_trace

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
