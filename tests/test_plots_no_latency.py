"""The latency figure of configurations none of which has a latency (every median None): a figure that says
so, not matplotlib's "Data cannot be log-scaled because all values are <= 0" from tight_layout (found by
stats15). Inputs are hand-built series (synthetic)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from tracekit.renderers.plots import NO_LATENCY_TEXT, latency_figure  # noqa: E402


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.axes[0].texts]


def test_a_latency_figure_without_any_latency_says_so() -> None:
    series = [
        {"label": "onnx (synthetic)", "batch_sizes": [1, 2], "latency_ms": [None, None], "transition": None}
    ]
    fig = latency_figure(series)
    try:
        assert _texts(fig) == [NO_LATENCY_TEXT]
        assert fig.axes[0].get_yscale() == "linear"
    finally:
        plt.close(fig)


def test_a_latency_figure_with_one_latency_draws_it_on_log_axes() -> None:
    series = [
        {"label": "onnx (synthetic)", "batch_sizes": [1, 2], "latency_ms": [None, 2.5], "transition": None}
    ]
    fig = latency_figure(series)
    try:
        assert _texts(fig) == [] and fig.axes[0].get_yscale() == "log"
    finally:
        plt.close(fig)
