"""ONNX Runtime run shapes against odd-but-real run sequences (round 10).

The inputs are SYNTHETIC run-shape sequences (what the ORT reader's ``meta["run_shapes"]`` gives, in run
order), written by hand; :func:`generation_classes` is a pure function of them.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tracekit.analyzers.iterations import generation_classes

GEN = "[1,7,64]"
TOK = "[1,1,64]"


def test_a_generation_loop_is_labelled() -> None:
    """Control: a 7-token prompt, then 5 token runs (ORT GenAI)."""
    assert generation_classes([GEN] + [TOK] * 5) == {GEN: "prefill", TOK: "decode"}


def test_a_server_mixing_batch_sizes_is_no_generation_loop() -> None:
    """An ORT server taking requests of batch 8 and batch 1 (``[8,128,64]`` and ``[1,128,64]``), the
    batch-1 ones the majority, each batch-8 run followed by a batch-1 run. The shapes differ in the batch
    axis (0), never the token axis a generation loop's do: before, the batch-8 runs were labelled 'prefill'
    and the batch-1 runs 'decode', and the step-class table and rule spoke of prompt and token runs that
    are none. Now: no labels (the per-shape line speaks instead)."""
    big, one = "[8,128,64]", "[1,128,64]"
    assert generation_classes([big, one, one, big, one, one, big, one, one]) is None
    # input_ids [batch, tokens] too
    assert generation_classes(["[8,32]", "[1,32]", "[1,32]", "[8,32]", "[1,32]"]) is None


def test_token_runs_before_any_prompt_run_are_no_generation_loop() -> None:
    """Requests of 1 token then one of 128 (a request-length sweep ending on its longest): a generation
    loop's prompt run comes before its token runs. Before: the last, 128-token run was labelled 'prefill'
    of token runs that came before it. Now: no labels."""
    assert generation_classes([TOK, TOK, TOK, TOK, GEN]) is None
    assert generation_classes([TOK, GEN, TOK, TOK]) is None


def test_a_profile_started_after_the_prompt_is_unlabelled_not_wrong() -> None:
    """The cost of that rule: a profile that starts inside a generation (token runs, a second prompt, its
    tokens) gets the per-shape line, not the labels (conservative: no label is shown that may be wrong)."""
    assert generation_classes([TOK, TOK, GEN, TOK, TOK, TOK]) is None


def test_odd_shape_texts_are_no_labels_and_no_error() -> None:
    """Shapes the reader may give from odd profiles: symbolic or negative dims, empty, scalars."""
    for shapes in (
        ["[1,N,64]", "[1,1,64]", "[1,1,64]"],
        ["[]", "[1]", "[1]"],
        ["[1,-1,64]", "[1,1,64]", "[1,1,64]"],
        ["[1,,7]", "[1,1]", "[1,1]"],
        [None, None],
        [],
    ):
        assert generation_classes(shapes) is None, shapes


DIM = st.integers(min_value=1, max_value=9)


@settings(max_examples=400, deadline=None)
@given(
    rest=st.lists(DIM, min_size=1, max_size=3),
    batches=st.lists(st.integers(min_value=1, max_value=4), min_size=2, max_size=12),
)
def test_a_batch_sweep_is_never_labelled(rest: list[int], batches: list[int]) -> None:
    """Property: runs whose shapes differ only in the batch axis (0) are never a generation loop."""
    shapes = ["[" + ",".join(map(str, [b, *rest])) + "]" for b in batches]
    assert generation_classes(shapes) is None


@settings(max_examples=400, deadline=None)
@given(
    lengths=st.lists(st.integers(min_value=1, max_value=5), min_size=2, max_size=12),
    batch=st.integers(min_value=1, max_value=4),
)
def test_labels_only_when_a_prompt_run_comes_first(lengths: list[int], batch: int) -> None:
    """Property: when labelled, the first run is a prefill run and decode runs are the majority; the
    decode shape has 1 in the token axis."""
    shapes = [f"[{batch},{n},64]" for n in lengths]
    labels = generation_classes(shapes)
    if labels is not None:
        assert labels[shapes[0]] == "prefill"
        decode = [s for s, c in labels.items() if c == "decode"]
        assert decode == [f"[{batch},1,64]"]
        assert 2 * shapes.count(decode[0]) > len(shapes)
