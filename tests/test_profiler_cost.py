"""What the profiler cost a traced run, against the same configuration timed untraced (analyzers/profiler_cost)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import tracekit
from tracekit.analyzers.profiler_cost import findings, untraced_median_ms

REPO = Path(__file__).resolve().parents[1]
H200_EAGER = REPO / "sample_traces" / "h200_bert_fp16" / "pytorch"


def test_within_the_ratio_nothing_is_said() -> None:
    assert findings(1.25, 0.2, "framework", 0.5, {"p50": 1.0}) == ([], [], None)
    assert findings(1.0, 0.2, "framework", 0.5, None) == ([], [], None)
    assert findings(None, 0.2, "framework", 0.5, {"p50": 1.0}) == ([], [], None)


@pytest.mark.parametrize(
    "stats", [{}, {"p50": 0}, {"p50": -1.0}, {"p50": True}, {"p50": "2"}, {"median": None}]
)
def test_no_usable_untraced_median(stats: dict) -> None:
    assert untraced_median_ms(stats) is None


def test_median_is_preferred_to_p50() -> None:
    assert untraced_median_ms({"median": 2.0, "p50": 3.0}) == 2.0
    assert untraced_median_ms({"p50": 3}) == 3.0


def test_a_framework_bound_verdict_that_holds_untraced_gets_a_note() -> None:
    # 4 ms traced, 2 ms untraced, 0.5 ms busy: 2.00x; 25.0% of the untraced latency, below 50%
    warnings, notes, doubt = findings(4.0, 0.5, "framework", 0.5, {"p50": 2.0}, "Nsight Systems")
    assert warnings == [
        "Nsight Systems slowed this run 2.00x: median latency 4.000 ms traced against 2.000 ms untraced (the same "
        "configuration timed without a profiler, run.json): the framework overhead shown includes Nsight "
        "Systems's own cost, about 2.000 ms per iteration"
    ]
    assert notes == [
        "framework-bound without Nsight Systems too: the GPU busy time traced here (0.500 ms, median) is 25.0% of "
        "the untraced median latency (2.000 ms), below the 50% threshold"
    ]
    assert doubt is None


def test_a_framework_bound_verdict_the_profiler_may_have_made_is_uncertain() -> None:
    # 3 ms traced, 1 ms untraced, 0.6 ms busy: 60.0% of the untraced latency, at or above 50%
    warnings, notes, doubt = findings(3.0, 0.6, "framework", 0.5, {"median": 1.0})
    assert notes == []
    assert doubt == (
        "verdict uncertain: without the profiler, the GPU busy time traced here (0.600 ms, median) is 60.0% of the "
        "untraced median latency (1.000 ms), at or above the 50% threshold: the run may be compute-bound, and "
        "framework-bound only under the profiler"
    )
    assert warnings[-1] == doubt and len(warnings) == 2


def test_a_compute_bound_verdict_needs_no_check() -> None:
    warnings, notes, doubt = findings(3.0, 0.8, "compute", 0.5, {"median": 1.0})
    assert len(warnings) == 1 and notes == [] and doubt is None


def test_a_compute_bound_verdict_whose_busy_time_exceeds_the_untraced_latency_is_doubted() -> None:
    """Busy 2.5 ms traced against 1.0 ms untraced in all: the profiler lengthened the traced work itself, so
    a compute-bound verdict may be its (firsthour20: torch.profiler's CPU operators)."""
    warnings, notes, doubt = findings(
        3.0, 2.5, "compute", 0.5, {"median": 1.0}, "torch.profiler", device="cpu"
    )
    assert notes == [] and doubt == warnings[1] == (
        "verdict uncertain: the operator busy time traced here (2.500 ms, median) is 250.0% of the untraced "
        "median latency (1.000 ms): torch.profiler lengthened the traced work itself, so the compute-bound "
        "verdict may be torch.profiler's"
    )


def test_the_h200_eager_sample_says_what_torch_profiler_cost() -> None:
    """BERT-base fp16 batch 1 on an H200: 7.941 ms traced (the median of the 19 of 20 analyzed iterations the
    stability rules keep, as report's traced median; 7.944 over all 20) against 4.453 ms untraced (run.json's
    p50), 1.78x; busy 0.606 ms is 13.6% of 4.453 ms: framework-bound either way."""
    a = tracekit.analyze(H200_EAGER / "pytorch_b1_s128.torch.json.gz")
    slowed = [w for w in a.warnings if "slowed this run" in w]
    assert slowed == [
        "torch.profiler slowed this run 1.78x: median latency 7.941 ms traced (over the 19 of 20 iterations the "
        "stability rules keep, as the untraced median is) against 4.453 ms untraced (the same configuration timed "
        "without a profiler, its sidecar .meta.json): the framework overhead shown includes torch.profiler's own cost, about "
        "3.488 ms per iteration"
    ]
    assert any(n.startswith("framework-bound without torch.profiler too:") and "13.6%" in n for n in a.notes)
    assert a.verdict == "framework" and a.verdict_uncertain is None


def test_an_untraced_latency_that_flips_the_verdict_makes_it_uncertain(tmp_path: Path) -> None:
    """The same trace with run.json's and the sidecar's untraced median set to 1.0 ms, recorded as the stability
    rules' (with "kept": else latency.csv's 4.453 ms is measured; a test edit in a temporary copy): busy
    0.606 ms is 60.6% of it, so the traced framework-bound verdict may be the profiler's."""
    run_dir = tmp_path / "pytorch"
    shutil.copytree(H200_EAGER, run_dir)
    run = json.loads((run_dir / "run.json").read_text())
    for config in run["configs"]:
        if config["batch_size"] == 1:
            config["untraced_latency_ms"].update(p50=1.0, median=1.0, kept=20)
    (run_dir / "run.json").write_text(json.dumps(run))
    sidecar = run_dir / "pytorch_b1_s128.torch.meta.json"
    meta = json.loads(sidecar.read_text())
    meta["untraced_latency_ms"].update(p50=1.0, median=1.0, kept=20)
    sidecar.write_text(json.dumps(meta))
    a = tracekit.analyze(run_dir / "pytorch_b1_s128.torch.json.gz")
    assert a.verdict == "framework"
    assert a.verdict_uncertain is not None and "is 60.6% of the untraced median latency (1.000 ms)" in (
        a.verdict_uncertain
    )
    assert a.verdict_uncertain in a.warnings
    out = tmp_path / "a.json"
    a.to_json()  # the document round-trips with the doubt in it
    out.write_text(json.dumps(a.to_json()))
    assert tracekit.load(out).summary.verdict_uncertain == a.verdict_uncertain


def test_other_ranges_or_split_windows_are_not_set_beside_the_untraced_latency(tmp_path: Path) -> None:
    """The untraced latency is of whole iterations: under --split-idle (675 windows of the eager sample) or a
    range other than the sidecar's, nothing is said of the profiler's cost, whatever the windows' latency."""
    run_dir = tmp_path / "pytorch"
    shutil.copytree(H200_EAGER, run_dir)
    sidecar = run_dir / "pytorch_b1_s128.torch.meta.json"
    meta = json.loads(sidecar.read_text())
    meta["untraced_latency_ms"].update(p50=0.001, median=0.001)  # any window would be "slowed" against it
    sidecar.write_text(json.dumps(meta))
    trace = run_dir / "pytorch_b1_s128.torch.json.gz"
    split = tracekit.analyze(trace, split_idle=0.05)
    assert split.iterations.height == 675
    assert not any("slowed this run" in w for w in split.warnings)
    assert any("slowed this run" in w for w in tracekit.analyze(trace).warnings)
    assert any("slowed this run" in w for w in tracekit.analyze(trace, range="iteration").warnings)
