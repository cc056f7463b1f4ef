"""Metadata from the right evidence, with its confidence (issue 25, item 5): never a batch size from a GPU model
name or a bare ``bN`` in a name tracekit did not write; batch from an embedding's ids, never its weight;
serving engines' step names first; sources that disagree are both shown and the value called uncertain.

Hand-built (synthetic) traces carry only what each rule reads; the dev-set traces of
``../shared/real_traces/tracelens`` (AMD TraceLens test traces) are checked end to end."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tests.conftest import real_trace
from tracekit.analyzers.identify import (
    FROM_CONTENT,
    FROM_NAME,
    UNCERTAIN,
    VARIES,
    batch_from_content,
    batch_from_steps,
    hints_from_name,
    identify,
)
from tracekit.analyzers.table import table_row
from tracekit.inputs import TraceInput
from tracekit.model import Trace
from tracekit.renderers.table import config_cell
from tracekit.session import AnalysisOptions, TraceConfig


def trace(ranges: list[str] = (), first: object = None, meta: dict | None = None) -> Trace:
    """Host ranges by name (back to back, 10 ns each) and a ``first_op_inputs``; synthetic."""
    n = len(ranges)
    frame = pl.DataFrame(
        {"start": [10 * i for i in range(n)], "end": [10 * i + 10 for i in range(n)], "name": list(ranges)},
        schema={"start": pl.Int64, "end": pl.Int64, "name": pl.String},
    )
    extra = {"first_op_inputs": first} if first is not None else {}
    return Trace(ranges=frame, meta={"synthetic": True, **extra, **(meta or {})})


def embedding(table: list[int], ids: list[int], name: str = "aten::embedding") -> dict:
    return {
        "name": name,
        "dims": [table, ids, [], []],
        "types": ["c10::BFloat16", "long int", "Scalar", "Scalar"],
    }


# ------------------------------------------------------------------------------------------- file names

GPUS = [
    "a100",
    "h100",
    "h200",
    "b200",
    "b100",
    "gb200",
    "mi250",
    "mi300x",
    "mi355x",
    "v100",
    "l4",
    "t4",
    "rtx4090",
]


@pytest.mark.parametrize("gpu", GPUS)
def test_a_gpu_model_name_is_never_a_batch_size(gpu):
    assert "batch_size" not in hints_from_name(Path(f"{gpu}_vllm_eager.json.gz"))
    assert "batch_size" not in hints_from_name(Path(f"llama_{gpu}_trace.json"))
    assert hints_from_name(Path(f"llama_{gpu}_bs16.json"))["batch_size"].value == 16  # said in words: kept


@pytest.mark.parametrize(
    ("name", "batch", "seq"),
    [
        ("b200_vllm_eager.json.gz", None, None),  # the GPU, not a batch of 200
        ("model_b16.json", None, None),  # a bare bN in a name tracekit did not write
        ("run_s3_bucket.json", None, None),
        ("sglang_decode_capture_bs_32_rank0.json.gz", 32, None),
        ("model_batch8_seq256.json", 8, 256),
        ("pytorch_b4_s128.nsys.sqlite", 4, 128),  # tracekit's own naming
        ("onnx-cuda-graphs_b16_s512.synthetic.sqlite", 16, 512),
        ("pytorch_b1_s128.ncu.csv.gz", 1, 128),
    ],
)
def test_batch_and_sequence_hints(name, batch, seq):
    hints = hints_from_name(Path("runs") / name)
    got = {k: v.value for k, v in hints.items() if k != "precision"}
    assert got == {k: v for k, v in (("batch_size", batch), ("seq_len", seq)) if v is not None}


# --------------------------------------------------------------------------------------- embedding ids


def test_batch_from_the_ids_never_the_weight():
    batch, seq = batch_from_content(trace(first=embedding([151936, 4096], [8, 128])))
    assert (batch.value, seq.value, batch.uncertain) == (8, 128, False)
    assert (
        batch.evidence == "first dim of aten::embedding ids [8, 128] (long int; [151936, 4096] is its weight)"
    )


def test_flat_ids_are_tokens_so_the_batch_they_give_is_uncertain():
    batch, seq = batch_from_content(trace(first=embedding([151936, 4096], [32])))
    assert (batch.value, batch.uncertain, seq) == (32, True, None)
    alone = identify(trace(first=embedding([151936, 4096], [32])), "trace.json")
    assert alone.batch_size.value == 32 and alone.batch_size.uncertain
    assert alone.warnings["batch_size"].startswith(
        "batch size 32 is uncertain: aten::embedding ids [32]: 32 tokens"
    )
    # a name that says the same makes it sure; one that says otherwise wins over flat ids (prefill: tokens)
    agreed = identify(trace(first=embedding([151936, 4096], [32])), "capture_bs_32.json").batch_size
    assert (agreed.value, agreed.uncertain, agreed.source) == (32, False, FROM_NAME)
    assert "agrees with the trace content: aten::embedding ids [32]" in agreed.evidence
    prefill = identify(trace(first=embedding([151936, 4096], [15360])), "run_bs15.json").batch_size
    assert (prefill.value, prefill.uncertain) == (15, False)


def test_the_token_table_is_the_largest_lookup_of_an_ort_profile():
    lookups = [
        {"name": "Gather:/pos/Gather", "dims": [[512, 768], [1, 128]], "types": ["float", "int64"]},
        {"name": "Gather:/word/Gather", "dims": [[30522, 768], [8, 128]], "types": ["float", "int64"]},
    ]
    batch, seq = batch_from_content(trace(meta={"embedding_inputs": lookups}))
    assert (batch.value, seq.value) == (8, 128)  # not the position ids' [1, 128]


def test_a_normalization_over_nchw_gives_the_batch():
    # normalization_layer_test.json.gz (dev set) starts with this batch_norm
    first = {"name": "aten::batch_norm", "dims": [[8, 16, 32, 32], [16], [16]], "types": ["float"] * 3}
    batch, seq = batch_from_content(trace(first=first))
    assert (batch.value, batch.evidence, seq) == (
        8,
        "first dim of aten::batch_norm input [8, 16, 32, 32]",
        None,
    )


@pytest.mark.parametrize("name", ["aten::slice", "aten::select", "aten::linear", "aten::index"])
def test_other_operators_give_no_batch(name):
    first = {"name": name, "dims": [[1024, 72]], "types": ["int"]}  # a vLLM block table slice
    assert batch_from_content(trace(first=first)) == (None, None)


# ------------------------------------------------------------------------------------- serving engines


def test_step_names_come_first():
    steps = ["step[DECODE bs=32]"] * 3
    found = identify(trace(steps, first=embedding([1000, 8], [7, 3])), "model_bs16.json").batch_size
    # step names (32) disagree with the embedding ids (7) and the name (16): uncertain, not a pick
    assert (found.value, found.source, found.candidates) == (None, UNCERTAIN, (32, 7))
    only_steps = identify(trace(steps), "trace.json").batch_size
    assert (only_steps.value, only_steps.source) == (32, FROM_CONTENT)
    assert only_steps.evidence == "SGLang step names: 32 requests in each of 3 step(s) ('step[DECODE bs=32]')"


def test_vllm_and_trtllm_step_names_count_requests():
    vllm = batch_from_steps(trace(["execute_context_2(300)_generation_3(3)"]))
    assert vllm.value == 5
    trt = batch_from_steps(trace(["[Executor] _forward_step 7: 1 ctx reqs, 6 gen reqs"]))
    assert trt.value == 7
    idle = batch_from_steps(trace(["execute_context_0(0)_generation_0(0)"]))
    assert idle is None  # no request: no batch


def test_a_batch_that_varies_by_step_is_no_single_number():
    found = identify(
        trace(["step[DECODE bs=32]", "step[EXTEND bs=4 toks=512]", "step[DECODE bs=31]"]), "x_bs8.json"
    )
    batch = found.batch_size
    assert (batch.value, batch.source, batch.candidates) == (None, VARIES, (4, 32))
    assert found.warnings["batch_size"].startswith(
        "batch size unknown: SGLang step names: 4 to 32 requests per step"
    )


def test_uncertain_values_are_shown_with_both_candidates():
    t = trace(["step[DECODE bs=32]"])
    config = TraceConfig.resolve(TraceInput(path=Path("x_bs16.json")), {}, "gpu", t)
    assert config.batch_size is None and config.uncertain == {"batch_size": (32, 16)}
    assert config.sources["batch_size"] == UNCERTAIN
    assert config.evidence["batch_size"] == (
        "32 inferred from trace content (SGLang step names: 32 requests in each of 1 step(s) "
        "('step[DECODE bs=32]')) vs 16 from file name ('bs16' in x_bs16.json)"
    )
    row = {
        "device": "gpu",
        "batch_size": None,
        "batch_size_source": UNCERTAIN,
        "uncertain": {"batch_size": [32, 16]},
    }
    assert config_cell(row) == "gpu bs32|16?"
    varies = {
        "device": "gpu",
        "batch_size": None,
        "batch_size_source": VARIES,
        "uncertain": {"batch_size": [4, 32]},
    }
    assert config_cell(varies) == "gpu bs4–32"
    weak = {
        "device": "gpu",
        "batch_size": 32,
        "batch_size_source": FROM_CONTENT,
        "uncertain": {"batch_size": [32]},
    }
    assert config_cell(weak) == "gpu bs32*?"


# ------------------------------------------------------------------------------------ the dev-set traces

DEV_SET = {
    # file -> (batch, its source, seq)
    "b200_vllm_eager.json.gz": (1, FROM_CONTENT, None),  # one context request in its one vLLM step, not 200
    "sglang_decode_capture_bs_32_rank0.json.gz": (
        32,
        FROM_NAME,
        None,
    ),  # ids [32] agree; never the 151936 weight
    "vllm_decode_full_graphs.json.gz": (
        32,
        FROM_CONTENT,
        None,
    ),  # 32 generation requests; not the [1024, 72] slice
}


@pytest.mark.real_traces
@pytest.mark.parametrize("name", sorted(DEV_SET))
def test_dev_set_metadata(name):
    path = real_trace("tracelens", name)
    batch, source, seq = DEV_SET[name]
    row, warnings = table_row(TraceInput(path=path), AnalysisOptions())
    assert (row["batch_size"], row["batch_size_source"], row["seq_len"]) == (batch, source, seq)
    assert row["uncertain"] is None
    # (the B200 gpt-oss trace's MoE GEMMs and attention compute in fp8: typed since round 18, 54% of its typed
    # kernel time; the others are bf16 models)
    assert row["precision"] == ("fp8" if name == "b200_vllm_eager.json.gz" else "bf16")
    assert not any("batch" in w for w in warnings), warnings


def test_a_run_label_the_trace_content_contradicts_is_said_and_marked_uncertain(tmp_path) -> None:
    # run.json saying "onnx" over a PyTorch eager trace (its aten:: operators) had been shown as ONNX Runtime's
    # row without a word; a label of the same framework, or content without sure evidence, stays quiet.
    import json
    import shutil

    from tests.conftest import SAMPLE_TRACES
    from tracekit.api import table_document

    run = tmp_path / "run"
    shutil.copytree(SAMPLE_TRACES / "h200_bert_fp16" / "pytorch", run)
    doc = json.loads((run / "run.json").read_text())

    def label(runtime: str) -> None:  # run.json and the sidecars alike (where they disagree, neither is used)
        doc["runtime"] = runtime
        (run / "run.json").write_text(json.dumps(doc))
        for sidecar in run.glob("*.meta.json"):
            meta = json.loads(sidecar.read_text())
            meta["runtime"] = runtime
            sidecar.write_text(json.dumps(meta))

    label("onnx")
    table = table_document([run])
    said = [w for w in table["warnings"] if "but the trace content says pytorch" in w]
    assert len(said) == 2 and "runtime onnx from run.json, but the trace content says pytorch (" in said[0]
    assert said[0].endswith("a PyTorch trace labelled ONNX Runtime; which ran is not known")
    label("torchscript")  # same framework: content cannot tell the label wrong
    assert not any("but the trace content says" in w for w in table_document([run])["warnings"])


def test_a_trace_has_one_profiler_name_whichever_source_names_it() -> None:
    # a Kineto file alone (reader format "kineto") and one in a run directory (run.json key "torch") had been
    # two profilers, so the report never compared their traced latencies (latency_basis)
    import tracekit
    from tracekit.inputs import profiler_name

    samples = Path(__file__).resolve().parents[1] / "sample_traces"
    loose = tracekit.analyze(samples / "synthetic" / "ranks4" / "rank0.synthetic.json.gz")
    in_run = tracekit.analyze(samples / "h200_bert_fp16" / "pytorch" / "pytorch_b1_s128.torch.json.gz")
    assert loose.config.profiler == in_run.config.profiler == "torch"
    assert [profiler_name(v) for v in ("nsys-sqlite", "nsys", "ncu-csv", "ncu-rep", "ort", None)] == [
        "nsys",
        "nsys",
        "ncu",
        "ncu",
        "ort",
        None,
    ]
