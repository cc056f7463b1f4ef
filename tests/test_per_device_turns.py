"""Per-device rows of one process driving two GPUs that take turns (pipeline stages in one process): each
device's wait for the other's work is idle time of that device, which its row counts as framework overhead.
With the devices busy together above the threshold, such a row's "framework" verdict is marked uncertain.
Traces are hand-built here (synthetic)."""

from __future__ import annotations

import pytest

from tests.builders import device_trace
from tracekit.session import analyze_trace

US = 1000


def _turns(second_half_device: int) -> object:
    """4 iterations of 1 ms; each launches 9 kernels of 50 µs on device 0 in its first half and 9 on
    ``second_half_device`` in its second half (launch calls 1 µs long, 5 µs before each kernel)."""
    ranges, api, ops, c = [], [], [], 0
    for i in range(4):
        t0 = i * 1000 * US
        ranges.append((t0, t0 + 1000 * US, "iteration"))
        for half, device in ((0, 0), (1, second_half_device)):
            for k in range(9):
                c += 1
                s = t0 + half * 500 * US + 20 * US + k * 50 * US
                api.append((s - 5 * US, s - 4 * US, c, "cudaLaunchKernel"))
                ops.append((s, s + 50 * US, c, 7, device))
    return device_trace(ranges=ranges, api=api, ops=ops, meta={"path": "turns.synthetic", "synthetic": True})


def test_a_device_waiting_for_the_other_is_not_said_framework_bound_without_doubt() -> None:
    a = analyze_trace(_turns(1))
    assert a.summary.bound == "compute"  # 18 x 50 µs of each 1 ms: 90% busy, both devices together
    rows = {row["device"]: row for row in a.per_device}
    for device in (0, 1):
        assert rows[device]["gpu_utilization"] == pytest.approx(0.45)
        assert rows[device]["bound"] == "framework"
        assert rows[device]["verdict_uncertain"] == (
            "verdict uncertain: one process drives devices 0, 1 in the same iterations, which together are "
            "busy 90% of them (compute-bound): this device's idle time includes its waits for the other "
            "devices' work, which this row counts as framework overhead"
        )


def test_one_device_alone_has_no_rows_to_doubt() -> None:
    a = analyze_trace(_turns(0))
    assert a.per_device is None and a.summary.bound == "compute"
