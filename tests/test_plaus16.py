"""plaus16: plausibility's interval helpers against model.py's, the JSON/CSV float rounding's speed (same bytes),
and hostile values (NaN, inf, -0.0, huge numbers, None) through the JSON, CSV and Markdown writers.

Every input is built by hand here; the expected numbers and texts are worked out in the comments.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

from tracekit.renderers import tabular
from tracekit.renderers.tabular import VECTOR_MIN, render_csv, render_json, round_float

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
    text = render_json({"rows": rows, "floats": HOSTILE_FLOATS * 20, "maybe": [None, 0.1 + 0.2] * 200})
    assert text == _reference_json(
        {"rows": rows, "floats": HOSTILE_FLOATS * 20, "maybe": [None, 0.1 + 0.2] * 200}
    )
    assert repr(rows) == before  # the input is not changed
    out = json.loads(text)
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
