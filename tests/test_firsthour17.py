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


# ------------------------------------------------------------------ output files named for another format

from pathlib import Path  # noqa: E402

from tests.hostile import run_cli  # noqa: E402

SAMPLES = Path(__file__).resolve().parent.parent / "sample_traces"
SYNTHETIC_SQLITE = SAMPLES / "synthetic" / "table3_pytorch" / "pytorch_b1_s128.synthetic.sqlite"


@pytest.mark.parametrize("name", ["tl.png", "tl.svg", "tl.pdf", "tl.html", "tl.csv", "tl.md"])
def test_timeline_named_as_another_format_is_refused_before_any_work(tmp_path, capsys, name):
    """--timeline writes Chrome trace-event JSON whatever the name: 'wrote tl.png: open it in ui.perfetto.dev'
    left JSON in a .png. Now one line naming the file and what to name it, exit 2, nothing written."""
    target = tmp_path / name
    code, out, err = run_cli(capsys, "analyze", str(SYNTHETIC_SQLITE), "--timeline", str(target))
    assert code == 2 and out == ""
    suffix = Path(name).suffix
    assert err == (
        f"tracekit: {target}: --timeline writes Chrome trace-event JSON (for ui.perfetto.dev), not a "
        f"{suffix} file: name it .json (or .json.gz)\n"
    )
    assert not target.exists()


@pytest.mark.parametrize("name", ["g.xlsx", "g.parquet", "g.md", "g.png", "g.tsv", "g.csv.gz", "g.json.gz"])
def test_gaps_named_as_another_format_is_refused_before_any_work(tmp_path, capsys, name):
    """--gaps writes CSV (JSON for .json): 'wrote gaps.xlsx' left CSV text in an .xlsx."""
    target = tmp_path / name
    code, out, err = run_cli(capsys, "analyze", str(SYNTHETIC_SQLITE), "--gaps", str(target))
    assert code == 2 and out == ""
    suffix = Path(name).suffix
    assert err == (
        f"tracekit: {target}: --gaps writes CSV (JSON when the name ends in .json), not a {suffix} file: "
        "name it .csv or .json\n"
    )
    assert not target.exists()


@pytest.mark.parametrize(
    ("option", "name"),
    [("--timeline", "t.json"), ("--timeline", "t.json.gz"), ("--timeline", "t.trace"), ("--gaps", "g.csv"),
     ("--gaps", "g.json"), ("--gaps", "gaps")],
)  # fmt: skip
def test_timeline_and_gaps_names_that_fit_are_written(tmp_path, capsys, option, name):
    target = tmp_path / name
    code, _, err = run_cli(capsys, "analyze", str(SYNTHETIC_SQLITE), option, str(target), "--format", "json")
    assert code == 0, err
    assert target.stat().st_size > 0
