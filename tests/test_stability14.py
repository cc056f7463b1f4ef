"""stability14: a mean or a verdict shown with confidence on iterations that contradict it.

Every trace here is hand-built (synthetic: the file names say so and the Kineto header carries
``"tracekit_synthetic": true``), with per-iteration latencies whose statistics are worked out by hand:

- :data:`NOISY` (firsthour13's CPU run, ``runs/bert-pt/pytorch_b4_s32``): mean of all ten 2599.1 ms; the
  modified z-scores against the median 1855.5 ms (MAD 542) are 4.55 and 4.69 for iterations 1 and 2 (5515,
  5628 ms), above 3.5: outliers by rule 'outlier'; 3120 ms (iteration 0) scores 1.57 and stays. Mean of the eight
  kept 14848 / 8 = 1856.0 ms (their coefficient of variation 33.9%); the warm-up rule drops nothing (3120 ms
  against the second half's median 1697 ms and MAD 317 scores 3.03). Max / min = 5628 / 1218 = 4.6x; the
  coefficient of variation of all ten (n - 1) 64.0%.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from tests.builders import kineto_event
from tracekit.analyzers.stability import measure

#: firsthour13's noisy CPU run: iteration latencies (ms) in order.
NOISY = [3120.0, 5515.0, 5628.0, 1239.0, 1691.0, 1546.0, 2323.0, 2014.0, 1218.0, 1697.0]


def kineto_trace(
    folder: Path, latencies_ms: list[float], busy_ms: float | list[float], name: str = "pytorch_b4_s32"
) -> Path:
    """A synthetic Kineto trace (GPU): one ``iteration`` user range per latency (ms), 0.1 ms apart; in each a
    5 us ``cudaLaunchKernel`` at +10 us and its kernel from +20 us, ``busy_ms`` long (one value or one per
    iteration). File ``<name>.synthetic.json`` in ``folder``."""
    busy = busy_ms if isinstance(busy_ms, list) else [busy_ms] * len(latencies_ms)
    events: list[dict[str, Any]] = []
    t = 1_000_000.0  # us
    for i, (length, work) in enumerate(zip(latencies_ms, busy, strict=True)):
        events.append(kineto_event("user_annotation", "iteration", t, length * 1e3))
        events.append(kineto_event("cuda_runtime", "cudaLaunchKernel", t + 10, 5, correlation=i + 1))
        events.append(
            kineto_event("kernel", "gemm", t + 20, work * 1e3, 0, 7, correlation=i + 1, device=0, stream=7)
        )
        t += length * 1e3 + 100
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.synthetic.json"
    path.write_text(json.dumps({"schemaVersion": 1, "tracekit_synthetic": True, "traceEvents": events}))
    return path


def run_json(command: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    from tracekit.cli import main

    assert main([command, *argv, "--format", "json", "--no-progress"]) == 0
    return json.loads(capsys.readouterr().out)


# ------------------------------------------------------------------------------- the numbers themselves


def test_the_noisy_runs_numbers_are_the_ones_worked_out_by_hand() -> None:
    m = measure(NOISY)
    assert m.outliers == (1, 2) and m.warmup == ()
    assert m.mean == pytest.approx(1856.0) and statistics.fmean(NOISY) == pytest.approx(2599.1)
    assert m.cv == pytest.approx(0.33937, abs=1e-5) and m.unstable
    assert statistics.stdev(NOISY) / statistics.fmean(NOISY) == pytest.approx(0.63960, abs=1e-5)


# -------------------------------------------------------------------------- 4. false 'no single mode'


def test_a_set_within_a_fraction_of_a_percent_is_not_called_unstable() -> None:
    # The synthetic sweep's b32 traced latencies (tests/golden/analyze/.../sweep_pytorch): 20.4164 to
    # 20.4495 ms, 0.16% apart. Their MAD is 0.0016 ms, so 20.43225 and 20.4164 score 3.8 and 7.9: two of
    # five 'outliers', and the set was called unstable, "no single mode", on a spread of 0.16%.
    values = [20.44691, 20.43225, 20.4495, 20.4164, 20.44848]
    m = measure(values)
    assert m.cv is not None and m.cv < 0.001
    assert not m.unstable and m.warnings == ()
