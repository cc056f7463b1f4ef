"""firsthour17: a new user's first hour (README, docs, --help, error messages, the notebook API), and
render_json on numpy scalars. Inputs are hand-built (synthetic) or the committed samples."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tracekit.renderers.tabular import VECTOR_MIN, render_json

# ------------------------------------------------------------------------ render_json and numpy scalars


def test_render_json_takes_numpy_scalars():
    """numpy integer, float and bool scalars are written as the Python numbers they hold; a float32 as the
    shortest decimal of its value (as numpy prints it), not its binary expansion."""
    doc = {
        "i64": np.int64(3),
        "u8": np.uint8(255),
        "f64": np.float64(0.1234567890123456),
        "f32": np.float32(1.1),
        "f16": np.float16(0.5),
        "yes": np.bool_(True),
        "no": np.bool_(False),
    }
    text = render_json(doc)
    assert json.loads(text) == {
        "i64": 3,
        "u8": 255,
        "f64": 0.123456789012,
        "f32": 1.1,
        "f16": 0.5,
        "yes": True,
        "no": False,
    }
    assert '"yes": true' in text and '"i64": 3,' in text


def test_render_json_numpy_non_finite_is_null_and_listed():
    out = json.loads(render_json({"a": np.float32("nan"), "b": [np.float64("inf")]}))
    assert out["a"] is None and out["b"] == [None]
    assert out["non_finite"] == {"count": 2, "values": {"a": "NaN", "b[0]": "Infinity"}}


def test_render_json_long_lists_of_numpy_scalars():
    """Lists long enough to be rounded a column at a time (VECTOR_MIN) take numpy scalars too."""
    n = VECTOR_MIN + 4
    rows = [{"i": np.int64(k), "f": np.float32(k + 0.25), "ok": np.bool_(k % 2)} for k in range(n)]
    out = json.loads(render_json({"rows": rows, "ints": [np.int32(k) for k in range(n)]}))
    assert out["ints"] == list(range(n))
    assert out["rows"][3] == {"i": 3, "f": 3.25, "ok": True}
    assert out["rows"][n - 1] == {"i": n - 1, "f": n - 1 + 0.25, "ok": True}
    assert [r["ok"] for r in out["rows"][:4]] == [False, True, False, True]


def test_render_json_still_refuses_what_json_cannot_hold():
    with pytest.raises(TypeError):
        render_json({"x": object()})
