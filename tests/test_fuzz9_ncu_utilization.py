"""The Kineto occupancy estimate's usability, fuzz 9: judged over the kernels of the analyzed iterations, the
ones its figure is computed from, not over every kernel of the trace (warm-up included). Hand-built traces
(labelled synthetic: values invented), exact values."""

from __future__ import annotations

import polars as pl

from tests.test_table import timeline
from tracekit.analyzers.iterations import analyze_iterations
from tracekit.analyzers.kernel_metrics import KINETO_OCCUPANCY, analyze_kernel_metrics
from tracekit.analyzers.utilization import Utilization, _fill_from_estimate

#: a warm-up kernel (9 us, estimated 20%) before two iterations of A (600 ns, estimated 0) and B (400 ns, 30%)
KERNELS = [
    (0, 9000, "warmup"),
    (10000, 10600, "A"),
    (10600, 11000, "B"),
    (11000, 11600, "A"),
    (11600, 12000, "B"),
]
ESTIMATES = [20.0, 0.0, 30.0, 0.0, 30.0]


def _trace():
    km = pl.DataFrame(
        {
            "kernel": list(range(len(KERNELS))),
            "name": [k[2] for k in KERNELS],
            "range": [None] * len(KERNELS),
            "duration_ns": [k[1] - k[0] for k in KERNELS],
            "metric": [KINETO_OCCUPANCY] * len(KERNELS),
            "unit": ["%"] * len(KERNELS),
            "value": ESTIMATES,
        },
        schema_overrides={"range": pl.String},
    )
    return timeline(kernels=KERNELS, ranges=((10000, 11000), (11000, 12000)), kernel_metrics=km)


def test_the_unestimated_share_is_that_of_the_analyzed_iterations() -> None:
    """Over the whole trace the kernels estimated 0 hold 11% of the kernel time (the warm-up kernel dilutes
    them), and the estimate's wall-time warp occupancy (12%) had been shown with a warning that it may be low
    by up to 11%; over the iterations it is computed from they hold 60%: no figure."""
    trace = _trace()
    analysis = analyze_iterations(trace)
    metrics = analyze_kernel_metrics(trace, trace, analysis)
    assert metrics.summary["warp_occupancy"]["wall_time"] == 12.0
    result = Utilization()
    _fill_from_estimate(result, metrics, trace)
    assert result.wall["warp_occupancy"].value is None
    assert result.kernel_time["warp_occupancy"] is None
    assert any(
        "0 for 2 of 4 kernels, 60% of the kernel time" in w and "no warp occupancy" in w
        for w in result.warnings
    )
