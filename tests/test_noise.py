"""Noisy simulated sweeps (tracekit simulate --noise): the simulator's noise-free truth, and a report whose
conclusions match that truth, saying "within noise" where the truth difference is below the noise.
Every trace here is synthetic."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tracekit.cli import main
from tracekit.simulate import preset
from tracekit.simulate.mechanism import Noise, Simulation

BATCHES = (1, 2, 4, 8, 16, 32, 64)
NOISE = ["--noise", "0.08", "--noise-stalls", "0.1", "--noise-warmup", "3"]


def _latencies(sim: Simulation) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    chunks = list(sim.chunks())
    lat = np.concatenate([c.range_end - c.range_start for c in chunks])
    if chunks[0].noise_free_latency is None:
        return lat, None, None
    free = np.concatenate([c.noise_free_latency for c in chunks])  # type: ignore[misc]
    stall = np.concatenate([c.stall_ns for c in chunks])  # type: ignore[misc]
    return lat, free, stall


@pytest.mark.parametrize("runtime", ["pytorch", "cuda-graphs"])
def test_noise_free_latency_is_the_run_without_noise(runtime: str) -> None:
    params = preset(runtime)
    quiet, _, _ = _latencies(Simulation(params, 2, 128, 25, 5, chunk_kernels=4000))
    lat, free, stall = _latencies(
        Simulation(params, 2, 128, 25, 5, chunk_kernels=4000, noise=Noise(sd=0.1, stall_rate=0.2, warmup=4))
    )
    assert free is not None and stall is not None
    assert np.array_equal(free, quiet)  # exactly: the noise has its own random generator
    assert not np.array_equal(lat, quiet)
    # A stall adds exactly its length (the device is idle at every iteration start).
    assert stall.sum() > 0 and np.all(stall[stall > 0] == np.rint(free[stall > 0]))
    # An inactive Noise is no noise at all.
    none, _, _ = _latencies(Simulation(params, 2, 128, 25, 5, chunk_kernels=4000, noise=Noise()))
    assert np.array_equal(none, quiet)


def test_warmup_iterations_are_slower() -> None:
    lat, free, _ = _latencies(Simulation(preset("pytorch"), 1, 128, 20, 0, noise=Noise(warmup=3)))
    assert free is not None
    ratio = lat / free
    assert ratio[0] > 2.5 and ratio[1] > ratio[2] > 1.2 and np.allclose(ratio[3:], 1.0, atol=0.002)


def test_noise_options_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s"
    assert main(["simulate", "--runtime", "onnx", "--noise", "1.5", "-o", str(out), "-q"]) == 2
    assert "--noise" in capsys.readouterr().err
    assert main(["simulate", "--runtime", "onnx", "--noise-stalls", "2", "-o", str(out), "-q"]) == 2
    with pytest.raises(SystemExit):
        main(["simulate", "--runtime", "tensorrt", "-o", str(out)])


@pytest.fixture(scope="module")
def noisy_sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A noisy eager-PyTorch sweep (host noise 8%, 10% of iterations stalled, 3 warm-up iterations) and its
    report (JSON document)."""
    base = tmp_path_factory.mktemp("noisy")
    sim = base / "sim"
    argv = ["simulate", "--runtime", "pytorch", "--batch-sizes", ",".join(map(str, BATCHES))]
    argv += ["--iters", "40", "--traces", "nsys", "--seed", "11", "-q", "-o", str(sim), *NOISE]
    assert main(argv) == 0
    rep = base / "report"
    assert main(["report", str(sim), "-o", str(rep), "--no-figures", "-q", "--format", "json"]) == 0
    return sim, json.loads((rep / "report.json").read_text())


def _truth(sim: Path) -> dict[int, dict[str, Any]]:
    out = {}
    for path in sim.glob("*.truth.json"):
        doc = json.loads(path.read_text())
        out[doc["batch_size"]] = doc
    return out


def test_noisy_report_matches_the_truth(noisy_sweep: tuple[Path, dict[str, Any]]) -> None:
    sim, doc = noisy_sweep
    truth = _truth(sim)
    free = {b: truth[b]["summary"]["latency_ms_noise_free_mean"] for b in BATCHES}
    configs = {c["batch_size"]: c for c in doc["configs"]}
    (sweep,) = doc["sweeps"]
    tol = doc["settings"]["plateau_tolerance"]
    true_ratio = {b: free[b] / free[1] for b in BATCHES}
    # The noise is real: the plain means of the noisy iterations are off by far more than the jitter.
    assert all(truth[b]["summary"]["latency_ms_mean"] > 1.05 * free[b] for b in (1, 2, 4))
    for b in BATCHES:
        c = configs[b]
        # Each median's 95% interval holds the noise-free latency, and the stalled and warm-up
        # iterations were dropped by rule.
        assert c["latency_ci_low"] <= free[b] <= c["latency_ci_high"], (b, c["latency_ms"], free[b])
        stats = c["latency_stats"]
        stalled = [r["index"] for r in truth[b]["iterations"] if r["stall_ms"] > 0]
        # warm-up slows the host: it shows (and is dropped) where the host sets the latency; a stall right
        # after it extends the leading run of slow iterations
        assert set(stats["dropped_warmup"]) <= {0, 1, 2, *stalled}
        if b <= 4:
            assert {0, 1, 2} <= set(stats["dropped_warmup"]), b
        if stats["dropped_outliers"]:
            assert set(stalled) <= set(stats["dropped_warmup"] + stats["dropped_outliers"]), b
        else:  # the rule drops at most a quarter: a set with more "outliers" keeps them all, and says so
            assert stats["unstable"] and "outliers" in stats["warnings"][-1], b
        # The ratio's interval holds the true ratio; the plateau state agrees with the truth. The smallest
        # batch is the base: its ratio is 1 by definition, with no interval (not one of a row against itself).
        if b == BATCHES[0]:
            assert c["sweep_base"] is True and c["latency_vs_smallest"] == 1.0, c
            assert c["latency_vs_smallest_low"] is None and c["latency_vs_smallest_high"] is None, c
            continue
        assert c["latency_vs_smallest_low"] <= true_ratio[b] <= c["latency_vs_smallest_high"], b
        state = c["plateau_state"]
        if state == "on":
            assert true_ratio[b] <= 1 + tol
        elif state == "off":
            assert true_ratio[b] > 1 + tol
        else:  # within noise: the truth is closer to the line than the noise
            assert c["latency_vs_smallest_low"] <= 1 + tol < c["latency_vs_smallest_high"]
    # Batch sizes whose true latency equals batch 1's (to 0.1%) are "within noise" of it, never different.
    same = [b for b in BATCHES[1:] if abs(true_ratio[b] - 1) < 0.001]
    assert same and all(configs[b]["vs_smallest"] == "within noise" for b in same)
    # Far outside the noise, the difference is stated, with the right sign.
    assert all(configs[b]["vs_smallest"] == "higher" for b in BATCHES if true_ratio[b] > 1.5)
    # The transition is the truth's, and nothing past the plateau is called on it.
    true_transition = next(b for b in BATCHES if true_ratio[b] > 1 + tol)
    assert sweep["transition_batch_size"] == true_transition
    assert set(sweep["plateau"]) | set(sweep["plateau_edge"]) <= {b for b in BATCHES if b < true_transition}


def test_noisy_report_words_say_within_noise(noisy_sweep: tuple[Path, dict[str, Any]]) -> None:
    _, doc = noisy_sweep
    texts = {r["kind"]: r["text"] for r in doc["recommendations"]}
    head = next(r for r in doc["recommendations"] if r["kind"] == "headroom")
    assert head["numbers"]["difference"] == "within noise"
    assert (
        "costs the same as batch 1 within noise" in texts["headroom"] and "95% interval" in texts["headroom"]
    )
    assert "leaves the plateau at batch" in texts["transition"]
    # Medians, not means: the headroom's latencies are the medians of the kept iterations.
    configs = {c["batch_size"]: c for c in doc["configs"]}
    hb = head["batch_size"]
    assert configs[hb]["latency_ms"] == pytest.approx(
        statistics.median(
            [
                v
                for i, v in enumerate(_iteration_latencies(doc, hb))
                if i not in configs[hb]["latency_stats"]["dropped_warmup"]
                and i not in configs[hb]["latency_stats"]["dropped_outliers"]
            ]
        )
    )


def _iteration_latencies(doc: dict[str, Any], batch: int) -> list[float]:
    from tracekit.session import analyze_input

    path = next(c["path"] for c in doc["configs"] if c["batch_size"] == batch)
    return analyze_input(path).iterations["latency_ms"].to_list()
