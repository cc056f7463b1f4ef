"""stats15: quantiles over too few values, and binary noise in JSON/CSV floats.

A. A p99 over 10 iterations, interpolated linearly, lies between the two largest values: no observation is above
   it, and it reads as a p99 a user can trust. Rule (one function, :func:`stats.quantile_given`): quantile q is
   given only over n values with ``n * (1 - q) >= 1`` (p90: n >= 10, p99: n >= 100); p50 always. Expected
   numbers by hand: over the values 1..n, the linear quantile q is ``1 + q * (n - 1)``: p50 over 9 values 5,
   over 10 values 5.5; p90 over 10 values 9.1, over 99 values 89.2, over 100 values 90.1; p99 over 100 values
   99.01.

Every trace here is hand-built (synthetic: the file names say so and the Kineto header carries
``"tracekit_synthetic": true``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from tests.builders import kineto_event
from tracekit.analyzers import stats


def kineto_trace(folder: Path, latencies_ms: list[float], name: str = "pytorch_b1_s8") -> Path:
    """A synthetic Kineto trace (GPU): one ``iteration`` user range per latency (ms), 0.1 ms apart; in each a
    5 us ``cudaLaunchKernel`` at +10 us and its 0.5 ms kernel from +20 us. ``<name>.synthetic.json``."""
    events: list[dict[str, Any]] = []
    t = 1_000_000.0  # us
    for i, length in enumerate(latencies_ms):
        events.append(kineto_event("user_annotation", "iteration", t, length * 1e3))
        events.append(kineto_event("cuda_runtime", "cudaLaunchKernel", t + 10, 5, correlation=i + 1))
        events.append(
            kineto_event("kernel", "gemm", t + 20, 500, 0, 7, correlation=i + 1, device=0, stream=7)
        )
        t += length * 1e3 + 100
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.synthetic.json"
    path.write_text(json.dumps({"schemaVersion": 1, "tracekit_synthetic": True, "traceEvents": events}))
    return path


def analyze(argv: list[str], capsys: pytest.CaptureFixture[str], fmt: str) -> str:
    from tracekit.cli import main

    assert main(["analyze", *argv, "--format", fmt, "--no-progress"]) == 0
    return capsys.readouterr().out


# ------------------------------------------------------------------------------ A. the rule itself


def test_fewest_values_for_each_quantile_exactly() -> None:
    # 10 * (1 - 0.9) is 0.9999999999999998 in floats: the count must come out 10, not 11.
    assert [stats.min_values(q) for q in (0.5, 0.9, 0.95, 0.99, 0.999)] == [1, 10, 20, 100, 1000]
    assert not stats.quantile_given(0.9, 9) and stats.quantile_given(0.9, 10)
    assert not stats.quantile_given(0.99, 99) and stats.quantile_given(0.99, 100)
    assert stats.quantile_given(0.5, 1) and not stats.quantile_given(0.5, 0)


@pytest.mark.parametrize(
    ("n", "p50", "p90", "p99"),
    [
        (9, 5.0, None, None),
        (10, 5.5, 9.1, None),
        (99, 50.0, 89.2, None),
        (100, 50.5, 90.1, 99.01),
    ],
)
def test_summarize_columns_gives_p90_p99_only_over_enough_values(
    n: int, p50: float, p90: float | None, p99: float | None
) -> None:
    frame = pl.DataFrame({"x": [float(v) for v in range(1, n + 1)]})
    got = stats.summarize_columns(frame, ["x"])["x"]
    assert got.p50 == pytest.approx(p50, abs=1e-12)
    assert got.p90 == (None if p90 is None else pytest.approx(p90, abs=1e-12))
    assert got.p99 == (None if p99 is None else pytest.approx(p99, abs=1e-12))
    assert (got.min, got.max, got.mean) == (1.0, float(n), pytest.approx((n + 1) / 2))
    # The list form (for recorded sets) agrees value for value.
    values = [float(v) for v in range(1, n + 1)]
    assert [stats.quantile(values, q) for q in (0.5, 0.9, 0.99)] == [got.p50, got.p90, got.p99]


def test_nulls_do_not_count_toward_the_values_a_quantile_needs() -> None:
    # 12 rows, 3 of them null: 9 values (1..9), too few for a p90; the median is over the 9.
    frame = pl.DataFrame({"x": [1.0, None, 2.0, 3.0, None, 4.0, 5.0, 6.0, None, 7.0, 8.0, 9.0]})
    got = stats.summarize_columns(frame, ["x"])["x"]
    assert (got.p50, got.p90, got.p99, got.mean) == (5.0, None, None, 5.0)
    # One more value (10 of 13 rows): p90 = 9 + 0.1 * (10 - 9) = 9.1.
    frame = pl.DataFrame({"x": [1.0, None, 2.0, 3.0, None, 4.0, 5.0, 6.0, None, 7.0, 8.0, 9.0, 10.0]})
    got = stats.summarize_columns(frame, ["x"])["x"]
    assert got.p90 == pytest.approx(9.1, abs=1e-12) and got.p99 is None
    assert stats.quantile([None, *range(1, 11), float("nan")], 0.9) == pytest.approx(9.1, abs=1e-12)
    # A column with no value at all: nothing, as before.
    empty = stats.summarize_columns(pl.DataFrame({"x": [None, None]}, schema={"x": pl.Float64}), ["x"])["x"]
    assert empty.to_dict() == dict.fromkeys(stats.STAT_NAMES)


def test_withheld_quantiles_on_a_recorded_set() -> None:
    recorded = {"mean": 5.0, "p50": 4.0, "p90": 8.2, "p99": 8.9, "count": 20}
    assert stats.withheld_quantiles(recorded) == {**recorded, "p99": None}
    assert stats.withheld_quantiles({**recorded, "count": 9}) == {
        **recorded,
        "p90": None,
        "p99": None,
        "count": 9,
    }
    assert stats.withheld_quantiles({"p99": 3.0}) == {"p99": 3.0}  # no count: unchanged


def test_the_note_says_why_once() -> None:
    assert stats.withheld_note(10, ["p99"]) == (
        "p99 needs at least 100 iterations with a value, so that one lies above it; 10 here (shown as —)"
    )
    assert stats.withheld_note(7, ["p99", "p90"]) == (
        "p90 needs at least 10 iterations with a value and p99 at least 100, so that one lies above each; "
        "7 here (shown as —)"
    )
    assert stats.withheld_note(500, []) is None


# --------------------------------------------------------------------- A. end to end, through analyze


def test_analyze_json_withholds_p99_over_10_iterations(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    path = kineto_trace(tmp_path / "ten", [float(v) for v in range(1, 11)])
    doc = json.loads(analyze([str(path)], capsys, "json"))
    latency = doc["summary"]["latency_ms"]
    assert doc["summary"]["iterations"] == 10
    assert latency["p50"] == pytest.approx(5.5, abs=1e-9)
    assert latency["p90"] == pytest.approx(9.1, abs=1e-9)
    assert latency["p99"] is None
    assert (latency["min"], latency["max"]) == (1.0, 10.0)


def test_analyze_table_and_markdown_say_once_why_p99_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = kineto_trace(tmp_path / "ten", [float(v) for v in range(1, 11)])
    note = "p99 needs at least 100 iterations with a value, so that one lies above it; 10 here (shown as —)"
    text = analyze([str(path)], capsys, "table")
    assert text.count("p99 needs") == 1 and f"note: {note}" in " ".join(text.split())
    markdown = analyze([str(path)], capsys, "markdown")
    assert markdown.count(f"Note: {note}") == 1
    latency_row = next(line for line in markdown.splitlines() if line.startswith("| latency |"))
    assert latency_row.split("|")[3:8] == [" 5.500 ", " 5.500 ", " 9.100 ", " — ", " 1.000 "]


def test_analyze_over_9_iterations_withholds_p90_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    path = kineto_trace(tmp_path / "nine", [float(v) for v in range(1, 10)])
    doc = json.loads(analyze([str(path)], capsys, "json"))
    assert (doc["summary"]["latency_ms"]["p90"], doc["summary"]["latency_ms"]["p99"]) == (None, None)
    assert doc["summary"]["latency_ms"]["p50"] == pytest.approx(5.0, abs=1e-9)
    # The idle time by cause (attribution.py: the same summarize_columns) withholds its p90 as well.
    causes = doc["idle_attribution"]["causes"]
    assert causes and all(c["p90_ms"] is None and c["p50_ms"] is not None for c in causes)
    markdown = analyze([str(path)], capsys, "markdown")
    assert markdown.count("p90 needs at least 10 iterations with a value and p99 at least 100") == 1


# ------------------------------------------------- A. the same rule where collect records and analyze passes on


def test_collect_records_no_p99_over_20_timed_iterations() -> None:
    from collectors.sweep import latency_stats

    got = latency_stats([float(v) for v in range(1, 21)])
    assert got["p90"] == pytest.approx(18.1) and got["p99"] is None


def test_analyze_config_does_not_pass_on_a_recorded_p99_over_20(tmp_path: Path) -> None:
    from tracekit.inputs import TraceConfig

    recorded = {"mean": 5.0, "p50": 4.0, "p90": 8.2, "p99": 8.9, "count": 20}
    config = TraceConfig(path=tmp_path / "x.synthetic.json", untraced_latency=recorded)
    assert config.to_json()["untraced_latency_ms"]["p99"] is None


# --------------------------------------------------------------------- B. floats as JSON and CSV write them


def test_round_float_takes_off_binary_noise_and_keeps_every_nanosecond() -> None:
    from tracekit.renderers.tabular import round_float

    assert round_float(11.013245999999999) == 11.013246  # the noise the brief names
    assert round_float(0.1 + 0.2) == 0.3
    assert round_float(2509.6000000000004) == 2509.6
    assert round_float(1.2345678901234567e-7) == 1.23456789012e-7  # 12 significant digits
    assert round_float(0.22640460522371547) == 0.226404605224
    # A 10^10 ns span in ms keeps its last ns; so does the largest value still rounded to 12 digits.
    assert round_float((10**10 + 1) / 1e6) == 10000.000001
    assert round_float(999999.999999) == 999999.999999
    # From 10^6 up: 6 decimals (13 to 15 digits), the ns of a ms value.
    assert round_float(1234567.1234567001) == 1234567.123457
    assert round_float(123456789.123456789) == 123456789.123457
    # From 10^9 up, whole values, NaN and infinities: as they are.
    for kept in (1e9 + 0.123456789, 4813693440182857.0, 3.0, -0.0, float("inf"), -float("inf")):
        assert repr(round_float(kept)) == repr(kept)
    assert round_float(float("nan")) != round_float(float("nan"))


def test_round_floats_vectorized_is_value_for_value_the_scalar_rule() -> None:
    import math

    import numpy as np

    from tracekit.renderers.tabular import round_float, round_floats

    rng = np.random.default_rng(15)
    values = np.concatenate(
        [
            rng.uniform(-1, 1, 20000) * 10.0 ** rng.integers(-14, 10, 20000),
            rng.integers(0, 10**12, 5000) / 1e6 + rng.integers(0, 10**9, 5000) / 1e6,  # sums of ns in ms
            # near-halves in the 12th digit, where the product x * 10^k could round either way
            np.array([1.00000000000050, 123.456789012500, 0.5e-11, 1.5e-11, 999.9999999999999, 1e6 - 1e-7]),
            np.array([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 5e-324, 1e300, 7.0]),
        ]
    )
    got = round_floats(values).tolist()
    want = [round_float(v) for v in values.tolist()]
    assert [repr(v) for v in got] == [repr(v) for v in want]
    # and no value moves by 1e-11 relative or more
    moved = [abs(b - a) / abs(a) for a, b in zip(values.tolist(), got, strict=True) if a and math.isfinite(a)]
    assert max(moved) < 1e-11


def test_render_json_writes_rounded_floats_on_both_paths() -> None:
    from tracekit.renderers.tabular import render_json

    doc = {
        "a": 11.013245999999999,
        "b": [0.30000000000000004],
        "c": float("nan"),
        "d": 1,
        "e": True,
        "f": None,
    }
    # (NaN/inf are written null, and the document says where they were: f32a5cb)
    assert render_json(doc) == (
        '{\n  "a": 11.013246,\n  "b": [\n    0.3\n  ],\n  "c": null,\n  "d": 1,\n  "e": true,\n  "f": null,\n'
        '  "non_finite": {\n    "count": 1,\n    "values": {\n      "c": "NaN"\n    }\n  }\n}\n'
    )
    # An integer beyond 64 bits sends the document through the json module: the same floats, NaN/inf null.
    big = {"big": 2**70, "a": 11.013245999999999, "c": float("inf")}
    assert render_json(big) == (
        '{\n  "big": 1180591620717411303424,\n  "a": 11.013246,\n  "c": null,\n'
        '  "non_finite": {\n    "count": 1,\n    "values": {\n      "c": "Infinity"\n    }\n  }\n}\n'
    )
    assert doc["a"] == 11.013245999999999  # the document itself is not changed


def test_render_json_rounds_long_record_lists_a_column_at_a_time() -> None:
    from tracekit.renderers.tabular import VECTOR_MIN, render_json

    n = VECTOR_MIN + 4
    rows: list[dict[str, Any]] = [
        {
            "index": i,
            "ms": i + 0.1 + 0.2,
            "maybe": None if i % 3 else 0.1 + 0.2,
            "mixed": i if i % 2 else 0.5 + 1e-16,
        }
        for i in range(n)
    ]
    rows[7] = {"ms": 7.3, "index": 7, "maybe": None, "mixed": 7}  # its own key order, kept
    rows[9]["nested"] = {"x": 0.1 + 0.2}  # keys differ: the list is rounded row by row
    out = json.loads(render_json({"rows": rows}))["rows"]
    assert out[9]["nested"] == {"x": 0.3}
    del rows[9]["nested"]
    text = render_json({"rows": rows})
    out = json.loads(text)["rows"]
    assert [r["ms"] for r in out[:3]] == [0.3, 1.3, 2.3]
    assert [r["maybe"] for r in out[:4]] == [0.3, None, None, 0.3]
    assert [r["mixed"] for r in out[:4]] == [0.5, 1, 0.5, 3] and '"mixed": 1\n' in text  # ints stay ints
    assert list(out[7]) == ["ms", "index", "maybe", "mixed"] and list(out[8]) == [
        "index",
        "ms",
        "maybe",
        "mixed",
    ]
    assert rows[0]["ms"] == 0.30000000000000004  # input unchanged
    floats = json.loads(render_json([0.1 + 0.2] * n + [None]))
    assert floats == [0.3] * n + [None]


def test_render_csv_writes_rounded_floats_short_and_long() -> None:
    from tracekit.renderers.tabular import VECTOR_MIN, render_csv

    row = {"x": 11.013245999999999, "y": float("nan"), "z": None, "w": 3, "s": "0.30000000000000004"}
    assert render_csv([row], ["x", "y", "z", "w", "s"]) == "x,y,z,w,s\n11.013246,nan,,3,0.30000000000000004\n"
    long = render_csv([row] * VECTOR_MIN, ["x", "y", "z", "w", "s"])
    assert long == "x,y,z,w,s\n" + "11.013246,nan,,3,0.30000000000000004\n" * VECTOR_MIN


def test_gaps_file_floats_rounded_nulls_kept(tmp_path: Path) -> None:
    from tracekit.renderers.analysis import write_gaps

    gaps = pl.DataFrame(
        {"iteration": [0, 1], "duration_us": [0.1 + 0.2, None], "offset_ms": [11.013245999999999, 2.5]}
    )
    write_gaps(str(tmp_path / "gaps.csv"), gaps)
    assert (tmp_path / "gaps.csv").read_text() == "iteration,duration_us,offset_ms\n0,0.3,11.013246\n1,,2.5\n"
    write_gaps(str(tmp_path / "gaps.json"), gaps)
    assert json.loads((tmp_path / "gaps.json").read_text()) == [
        {"iteration": 0, "duration_us": 0.3, "offset_ms": 11.013246},
        {"iteration": 1, "duration_us": None, "offset_ms": 2.5},
    ]


def test_analyze_json_and_csv_carry_no_float_noise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import re

    # 0.7 ms kernels in ranges 1.1 ms long: busy / latency and the overheads come out of float arithmetic.
    path = kineto_trace(tmp_path / "noise", [1.1, 1.3, 1.7, 2.9, 3.1, 1.9, 2.3, 1.1, 1.3, 1.7, 2.9, 3.1])
    for fmt in ("json", "csv"):
        text = analyze([str(path)], capsys, fmt)
        digits = [
            len(m.replace(".", "").lstrip("0")) for m in re.findall(r"(?<![\w.])\d+\.\d+(?![\d.])", text)
        ]
        assert digits and max(digits) <= 12, fmt


# --------------------------------------------------------------------------------- C. stability wording


def test_spread_warning_on_a_set_holding_a_0_ms_iteration_reads_from_0_to() -> None:
    from tracekit.analyzers.stability import spread_warning

    # Mean of all ten 45.1 / 10 = 4.51 ms; without iteration 0 (0 ms, dropped by rule 'outlier': a start
    # faster than the rest is no warm-up since followups18's 084f42d) 45.1 / 9 = 5.011 ms, 11% apart; sample
    # stdev of all ten sqrt(22.709 / 9) = 1.5885 ms, 35.2% of the mean.
    values = [0.0, 5.0, 5.1, 4.9, 5.0, 5.2, 5.0, 4.8, 5.1, 5.0]
    assert spread_warning(values) == (
        "iteration latencies vary from 0 to 5.2 ms (coefficient of variation 35.2% over all 10): iteration 0 "
        "is an outlier (rule 'outlier': modified z-score > 3.5), and the mean includes it (4.51 ms, 5.011 without it)"
    )
    # A set without a 0 keeps its ratio.
    assert spread_warning([2.0, 5.0, 5.1, 4.9, 5.0, 5.2, 5.0, 4.8, 5.1, 5.0]).startswith(
        "iteration latencies vary 2.6x (2 to 5.2 ms; coefficient of variation "
    )
