"""plaus16: plausibility's interval helpers against model.py's, the JSON/CSV float rounding's speed (same bytes),
and hostile values (NaN, inf, -0.0, huge numbers, None) through the JSON, CSV and Markdown writers.

Every input is built by hand here; the expected numbers and texts are worked out in the comments.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import orjson
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from tracekit.renderers import tabular
from tracekit.renderers.tabular import VECTOR_MIN, render_csv, render_json, render_markdown, round_float

# ------------------------------------------------------------------ 2. rounding a column at a time: same bytes

#: Hand-picked floats: binary noise (11.013245999999999 -> 11.013246), the extremes of the double range, signed
#: zero, non-finite values, a value kept unrounded (>= 1e9), one with 6 decimals kept (>= 1e6), the smallest
#: subnormal, a tiny negative.
HOSTILE_FLOATS = [
    11.013245999999999,
    1e-300,
    1e300,
    -0.0,
    0.0,
    float("nan"),
    float("inf"),
    float("-inf"),
    5e-324,
    -1e-12,
    0.1 + 0.2,
    1234567.1234567001,
    1e9 + 0.5,
    -2509.6000000000004,
    0.22640460522371547,
]


def _value_by_value(data: Any) -> Any:
    """The rounding rule applied one value at a time (the scalar :func:`round_float`), as a reference."""
    if isinstance(data, float):
        return round_float(data)
    if isinstance(data, dict):
        return {k: _value_by_value(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [_value_by_value(v) for v in data]
    return data


def _reference_json(data: Any) -> str:
    return (
        orjson.dumps(_value_by_value(data), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
        + "\n"
    )


def _records(n: int) -> list[dict[str, Any]]:
    k = len(HOSTILE_FLOATS)
    return [
        {
            "index": i,
            "ms": HOSTILE_FLOATS[i % k],
            "maybe": None if i % 3 == 0 else HOSTILE_FLOATS[(i * 7) % k],
            "flag": i % 2 == 0,
            "mixed": i if i % 2 else HOSTILE_FLOATS[i % k],
            "nested": [HOSTILE_FLOATS[(i * 5) % k], {"x": 0.1 + 0.2}],
            "text": "0.30000000000000004",
            "huge": 2**63 - 1,
        }
        for i in range(n)
    ]


def test_long_record_lists_write_the_bytes_the_value_by_value_rule_writes() -> None:
    rows = _records(VECTOR_MIN + 44)  # the column path
    rows[5] = dict(reversed(list(rows[5].items())))  # a row with its own key order, kept
    before = repr(rows)
    # a bare list: no place for the non-finite values' note (test_json_writes_non_finite_values_as_null_...)
    text = render_json([rows, HOSTILE_FLOATS * 20, [None, 0.1 + 0.2] * 200])
    assert text == _reference_json([rows, HOSTILE_FLOATS * 20, [None, 0.1 + 0.2] * 200])
    assert repr(rows) == before  # the input is not changed
    out = dict(zip(["rows", "floats", "maybe"], json.loads(text), strict=True))
    assert list(out["rows"][5]) == list(reversed(list(_records(6)[5])))
    # exact values: noise off, extremes and -0.0 as they are, NaN/inf null, ints and bools untouched
    assert [r["ms"] for r in out["rows"][:15]] == [
        11.013246, 1e-300, 1e300, -0.0, 0.0, None, None, None, 5e-324, -1e-12, 0.3, 1234567.123457,
        1000000000.5, -2509.6, 0.226404605224,
    ]  # fmt: skip
    assert '"ms": -0.0,' in text and '"ms": 1e+300,' in text and '"huge": 9223372036854775807' in text
    # maybe: row 0 None; row 1 HOSTILE_FLOATS[7] = -inf -> null; row 2 HOSTILE_FLOATS[14]
    assert [r["maybe"] for r in out["rows"][:3]] == [None, None, 0.226404605224]
    assert out["rows"][0]["flag"] is True and out["rows"][1]["mixed"] == 1


def test_rows_with_other_keys_are_rounded_row_by_row() -> None:
    rows = _records(VECTOR_MIN + 1)
    del rows[3]["ms"]
    rows[3]["other"] = 0.1 + 0.2  # same number of keys, not the same keys
    text = render_json(rows)
    assert text == _reference_json(rows)
    assert json.loads(text)[3]["other"] == 0.3
    rows = _records(VECTOR_MIN + 1)
    rows[4]["extra"] = 0.1 + 0.2  # every key of the first row and one more
    text = render_json(rows)
    assert text == _reference_json(rows)
    assert json.loads(text)[4]["extra"] == 0.3


def test_long_csv_writes_the_bytes_of_the_short_one() -> None:
    rows = _records(VECTOR_MIN + 3)
    columns = ["index", "ms", "maybe", "flag", "mixed", "nested", "text", "huge", "absent"]
    long = render_csv(rows, columns)
    short = "".join(render_csv(rows[i : i + 10], columns).split("\n", 1)[1] for i in range(0, len(rows), 10))
    assert long == long.split("\n", 1)[0] + "\n" + short
    lines = long.splitlines()
    assert lines[0] == ",".join(columns)
    # row 0: maybe None -> empty, nested [HOSTILE_FLOATS[0], {x: 0.1 + 0.2}]; rows 3-7: ms -0.0, 0.0, nan, inf, -inf
    assert (
        lines[1]
        == "0,11.013246,,True,11.013246,\"[11.013246, {'x': 0.3}]\",0.30000000000000004,9223372036854775807,"
    )
    assert [line.split(",")[1] for line in lines[4:9]] == ["-0.0", "0.0", "nan", "inf", "-inf"]


def test_a_float_column_holding_none_and_nan_keeps_each() -> None:
    column = [None, float("nan"), 0.1 + 0.2, None, float("-inf"), -0.0] * 50
    out = tabular._rounded_column(column)
    assert out is not None and len(out) == 300
    assert out[:6:3] == [None, None] and math.isnan(out[1]) and out[2] == 0.3 and out[4] == -math.inf
    assert math.copysign(1.0, out[5]) == -1.0  # -0.0 stays negative
    assert [v is None for v in out] == [v is None for v in column]


# --------------------------------------------------- 1. plausibility's interval algebra against model.py's union


def _iv(*pairs: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([p[0] for p in pairs], dtype=np.int64), np.array([p[1] for p in pairs], dtype=np.int64)


def _pairs_of(intervals: tuple[np.ndarray, np.ndarray]) -> list[tuple[int, int]]:
    return list(zip(intervals[0].tolist(), intervals[1].tolist(), strict=True))


def test_union_joins_touching_intervals_and_drops_those_of_no_length() -> None:
    from tracekit.analyzers import plausibility as pz

    # [0,5) and [5,10) touch: one; [20,20) has no length: none; [40,38) is inverted: none; [50,60) and (in a
    # second set) [55,70) overlap: one. Union: [0,10), [12,15), [50,70), 10 + 3 + 20 = 33 ns.
    first = _iv((0, 5), (5, 10), (20, 20), (12, 15), (40, 38), (50, 60))
    union = pz._union([first, _iv((55, 70))])
    assert _pairs_of(union) == [(0, 10), (12, 15), (50, 70)]
    assert union[0].dtype == np.int64 and union[1].dtype == np.int64
    assert _pairs_of(pz._union([])) == [] and _pairs_of(pz._union([_iv((7, 7), (9, 3))])) == []
    # model.merged_intervals agrees on the intervals that have a length; it keeps the one of no length (its
    # documented rule), which plausibility does not want: a zero-length piece is no time of the Python tracer's
    from tracekit.model import merged_intervals

    rows = pl.DataFrame({"start": [0, 5, 20, 12, 50, 55], "end": [5, 10, 20, 15, 60, 70]})
    assert merged_intervals(rows).rows() == [(0, 10), (12, 15), (20, 20), (50, 70)]


def test_intersection_of_touching_intervals_holds_no_time() -> None:
    from tracekit.analyzers import plausibility as pz

    # a [0,5) touches b [5,10), which touches a [10,20): no shared time there; a [10,20) and b [15,30): [15,20)
    assert _pairs_of(pz._intersect(_iv((0, 5), (10, 20)), _iv((5, 10), (15, 30)))) == [(15, 20)]
    # nested, and two pieces of the result that touch join: [10,20) + [20,30) -> [10,30)
    got = pz._intersect(_iv((0, 100)), _iv((10, 20), (20, 30), (50, 60)))
    assert _pairs_of(got) == [(10, 30), (50, 60)]
    assert _pairs_of(pz._intersect(_iv((0, 10)), _iv())) == []


def test_difference_cuts_at_touching_ends_and_ignores_no_length() -> None:
    from tracekit.analyzers import plausibility as pz

    a = _iv((0, 10), (20, 30))
    assert _pairs_of(pz._minus(a, _iv((10, 20)))) == [(0, 10), (20, 30)]  # touches both: nothing taken
    assert _pairs_of(pz._minus(a, _iv((5, 25)))) == [(0, 5), (25, 30)]
    assert _pairs_of(pz._minus(a, _iv((0, 10)))) == [(20, 30)]
    assert _pairs_of(pz._minus(a, _iv((3, 3)))) == [(0, 10), (20, 30)]  # a point takes no time
    assert _pairs_of(pz._minus(a, _iv((-5, 100)))) == []


def test_time_within_windows_of_touching_and_zero_length_windows() -> None:
    from tracekit.analyzers import plausibility as pz

    lo, hi = _iv((0, 10), (12, 15), (50, 70))
    ws = np.array([5, 10, 60, 0, 15], dtype=np.int64)
    we = np.array([55, 12, 60, 100, 50], dtype=np.int64)
    # [5,55): 5 + 3 + 5; [10,12) lies between two intervals it touches: 0; [60,60): 0; [0,100): 33; [15,50): 0
    assert pz._time_within(lo, hi, ws, we).tolist() == [13, 0, 0, 33, 0]


def _launching_trace(threads: list[dict[str, Any]]) -> Any:
    from tracekit.model import META_PYTHON_THREADS, Trace

    api = pl.DataFrame(
        {
            "start": [0],
            "end": [1_000],
            "pid": [1],
            "thread": [2],
            "correlation": [1],
            "name": ["cudaLaunchKernel"],
        }
    )
    return Trace(api=api, meta={META_PYTHON_THREADS: threads})


def test_python_cover_leaves_out_pieces_of_no_length_and_inverted_ones() -> None:
    from tracekit.analyzers import plausibility as pz

    ms = 1_000_000
    # the launching thread (1, 2) ran Python [0,5) ms and [5,10) ms (touching: one), an instant at 20 ms and a
    # malformed piece [40, 38) ms; it was blocked in queue.get [10, 30) ms, an instant call at 30 ms and an
    # inverted one. Another thread ran Python [25, 28) ms: not waiting then.
    threads = [
        {
            "pid": 1,
            "thread": 2,
            "running": [[0, 5 * ms], [5 * ms, 10 * ms], [20 * ms, 20 * ms], [40 * ms, 38 * ms]],
            "blocked": [
                [10 * ms, 30 * ms, "queue.get"],
                [30 * ms, 30 * ms, "sleep"],
                [60 * ms, 50 * ms, "select"],
            ],
        },
        {"pid": 1, "thread": 9, "running": [[25 * ms, 28 * ms]], "blocked": []},
    ]
    cover = pz._python_cover(_launching_trace(threads))
    assert cover is not None
    running, waiting, calls = cover
    assert _pairs_of(running) == [(0, 10 * ms)]
    assert _pairs_of(waiting) == [(10 * ms, 25 * ms), (28 * ms, 30 * ms)]  # 17 ms
    assert len(calls) == 3
    # the silent stretch [8, 32) ms: 2 ms running, 17 ms waiting, all of it in queue.get
    silent = _iv((8 * ms, 32 * ms))
    assert _pairs_of(pz._intersect(silent, running)) == [(8 * ms, 10 * ms)]
    waited = pz._intersect(silent, waiting)
    assert pz._top_calls(calls, waited) == "'queue.get' 17.000 ms in all"


def test_merged_intervals_leave_out_an_inverted_row() -> None:
    from tracekit.model import merged_intervals, union_ns

    # [0,10), [30,20) (inverted: no point), [35,50): the union is [0,10), [35,50), 25 ns (union_ns says 25)
    rows = pl.DataFrame({"start": [0, 30, 35], "end": [10, 20, 50]})
    assert union_ns(rows["start"], rows["end"]) == 25
    assert merged_intervals(rows).rows() == [
        (0, 10),
        (35, 50),
    ]  # before: [(0, 10), (30, 20), (35, 50)], 15 ns


_PIECE = st.tuples(st.integers(0, 40), st.integers(-3, 12)).map(
    lambda p: (p[0], p[0] + p[1])
)  # some inverted


def _points(pairs: list[tuple[int, int]]) -> set[int]:
    return {t for s, e in pairs for t in range(s, e)}


def _runs(points: set[int]) -> list[tuple[int, int]]:
    """The maximal runs of consecutive integer points as [start, end) intervals (brute force)."""
    out: list[tuple[int, int]] = []
    for t in sorted(points):
        if out and out[-1][1] == t:
            out[-1] = (out[-1][0], t + 1)
        else:
            out.append((t, t + 1))
    return out


@settings(max_examples=300, deadline=None)
@given(a=st.lists(_PIECE, max_size=12), b=st.lists(_PIECE, max_size=12))
def test_union_intersection_difference_are_the_point_sets(a: list, b: list) -> None:
    from tracekit.analyzers import plausibility as pz

    ua, ub = pz._union([_iv(*a)]), pz._union([_iv(*b)])
    assert _pairs_of(ua) == _runs(_points(a))
    assert _pairs_of(pz._union([_iv(*a), _iv(*b)])) == _runs(_points(a) | _points(b))
    assert _pairs_of(pz._intersect(ua, ub)) == _runs(_points(a) & _points(b))
    assert _pairs_of(pz._minus(ua, ub)) == _runs(_points(a) - _points(b))
    ws = np.array([s for s, _ in b], dtype=np.int64)
    we = np.array([max(s, e) for s, e in b], dtype=np.int64)
    assert pz._time_within(*ua, ws, we).tolist() == [
        len(_points(a) & set(range(s, e))) for s, e in zip(ws.tolist(), we.tolist(), strict=True)
    ]


# ------------------------------------------------------------------- 3. hostile values through the writers


def test_markdown_cells_holding_a_pipe_or_a_line_break_stay_in_their_column() -> None:
    # Before: "a|b" split into two cells, so 1.500 sat under no header and "b" under "v"; a line break ended
    # the row in the middle.
    rows = [{"name": "a|b", "v": 1.5}, {"name": "line1\nline2\r\nline3", "v": 2.0}]
    assert render_markdown(rows, [("name", "name"), ("v", "v")]) == (
        "| name | v |\n|---|---|\n| a\\|b | 1.500 |\n| line1 line2 line3 | 2.000 |\n"
    )


def test_markdown_writes_every_hostile_value_as_one_cell() -> None:
    values = [None, float("nan"), float("inf"), float("-inf"), -0.0, 1e-300, 2**64, True, False, "", [1, "|"]]
    text = render_markdown([{"v": v} for v in values], [("v", "v")])
    cells = [line.split(" | ") for line in text.splitlines()[2:]]
    assert all(len(c) == 1 for c in cells)  # no cell split
    assert [c[0][2:-2] for c in cells] == [
        "—", "—", "inf", "-inf", "-0.000", "0.000", "18446744073709551616", "yes", "no", "", "[1, '\\|']",
    ]  # fmt: skip


def _strict_json(text: str) -> Any:
    """json.loads that refuses the non-JSON constants NaN, Infinity, -Infinity."""

    def refuse(name: str) -> Any:
        raise ValueError(f"bare {name} in JSON")

    return json.loads(text, parse_constant=refuse)


def test_json_writes_non_finite_values_as_null_and_says_what_they_were() -> None:
    # Before: NaN, inf and -inf were written null like None, and nothing said which was which.
    rows = [{"i": i, "u": 0.5, "maybe": None, "mixed": i} for i in range(VECTOR_MIN)]
    rows[3]["u"] = float("nan")
    rows[4]["maybe"] = float("inf")  # a float column holding None: not non-finite there
    rows[5]["mixed"] = float("-inf")  # a column mixing ints and floats
    doc = {
        "summary": {"x": float("-inf"), "y": None, "z": [1.5, float("nan")]},
        "iterations": rows,
        "long": [0.25] * VECTOR_MIN + [float("inf")],
    }
    for big in (False, True):  # the orjson path, and the json one an integer beyond 64 bits takes
        out = _strict_json(render_json({**doc, "big": 2**70} if big else doc))
        assert out["summary"] == {"x": None, "y": None, "z": [1.5, None]}
        assert out["iterations"][3]["u"] is None and out["iterations"][0]["maybe"] is None
        assert out["non_finite"] == {
            "count": 6,
            "values": {
                "summary.x": "-Infinity",
                "summary.z[1]": "NaN",
                "iterations[3].u": "NaN",
                "iterations[4].maybe": "Infinity",
                "iterations[5].mixed": "-Infinity",
                f"long[{VECTOR_MIN}]": "Infinity",
            },
        }
    assert "non_finite" not in doc  # the input is not changed
    assert "non_finite" not in _strict_json(render_json({"a": 0.5, "b": None}))  # only when there is one


def test_json_lists_at_most_100_non_finite_values_and_counts_them_all() -> None:
    out = _strict_json(render_json({"x": [float("nan")] * 300}))
    assert out["x"] == [None] * 300
    assert out["non_finite"]["count"] == 300
    assert list(out["non_finite"]["values"]) == [f"x[{i}]" for i in range(100)]


def test_gaps_json_stays_json_with_a_nan_or_inf_duration(tmp_path: Any) -> None:
    from tracekit.renderers.analysis import write_gaps

    gaps = pl.DataFrame({"iteration": [0, 1, 2], "duration_us": [float("nan"), float("inf"), 2.5]})
    write_gaps(str(tmp_path / "gaps.synthetic.json"), gaps)
    out = _strict_json((tmp_path / "gaps.synthetic.json").read_text())
    assert [r["duration_us"] for r in out] == [None, None, 2.5]


def test_gaps_csv_says_nan_and_inf() -> None:
    # the --gaps CSV (polars write_csv after round_frame) spells them NaN / inf; null stays an empty cell
    from tracekit.renderers.tabular import round_frame

    gaps = pl.DataFrame(
        {"iteration": [0, 1, 2, 3], "duration_us": [float("nan"), float("-inf"), None, 0.1 + 0.2]}
    )
    assert round_frame(gaps).write_csv() == "iteration,duration_us\n0,NaN\n1,-inf\n2,\n3,0.3\n"


def test_huge_integers_none_and_signed_zero_in_every_writer() -> None:
    rows = [
        {"n": 2**70, "z": -0.0, "none": None, "b": False},
        {"n": -(2**64), "z": 0.0, "none": None, "b": True},
    ]
    columns = ["n", "z", "none", "b"]
    assert (
        render_csv(rows, columns)
        == "n,z,none,b\n1180591620717411303424,-0.0,,False\n-18446744073709551616,0.0,,True\n"
    )
    text = render_json(rows)  # beyond 64 bits: the json module's path; ints exact, -0.0 kept
    assert '"n": 1180591620717411303424' in text and '"n": -18446744073709551616' in text
    assert _strict_json(text) == [
        {"n": 2**70, "z": -0.0, "none": None, "b": False},
        {"n": -(2**64), "z": 0.0, "none": None, "b": True},
    ]
    assert '"z": -0.0' in text
    assert render_markdown(rows, [(c, c) for c in columns]).splitlines()[2:] == [
        "| 1180591620717411303424 | -0.000 | — | no |",
        "| -18446744073709551616 | 0.000 | — | yes |",
    ]
