"""What produced a trace, when no ``run.json`` / sidecar says it: runtime, batch size, sequence length, precision.

Pure functions over a :class:`~tracekit.model.Trace` (and its path). Each answer is an :class:`Inferred`: the
value, the evidence (one line a user can check in the trace) and its source:

- ``"inferred from trace content"`` (:data:`FROM_CONTENT`): the trace's own events;
- ``"from file name"`` (:data:`FROM_NAME`): hints in the trace's file name or run directory name (weaker: a
  name is what someone typed, the content is what ran).

Runtime rules, first match wins (:func:`runtime_from_content`):

1. CUDA-graph launches (``cudaGraphLaunch`` / ``cuGraphLaunch`` / ``hipGraphLaunch`` calls, or a non-null
   ``graph`` id on ops) mean kernel serialization;
2. ONNX Runtime evidence (an ORT profile, ORT thread names, execution-provider strings, ``onnxruntime::``
   kernels, or, on a Kineto trace that recorded CPU operators, kernel launches outside any of them with no
   ATen kernels; a trace with no CPU operator at all says nothing: its profiler recorded no CPU activity)
   -> ``onnx`` (``onnx-cuda-graphs`` with graph launches);
3. Inductor/Triton kernels (``triton_*``) or ``CompiledFunction`` / ``Torch-Compiled Region`` ranges or
   operators -> ``compile`` (``compile-cudagraphs`` with graph launches); Inductor kernels under 0.5% of the
   kernels are a helper compiled by itself (vLLM's embedding mask in eager mode), said in the evidence of the
   rules below, which decide;
4. graph launches otherwise -> ``cuda-graphs`` (PyTorch + CUDA Graphs);
5. TorchScript markers (``prim::`` operators, ``<forward op>``, ``fallback_function``, graph-executor names)
   -> ``torchscript``;
6. ATen operators or kernels (``aten::`` operators, ``at::native`` kernels) -> ``pytorch`` (eager). Without
   CPU-operator information (ATen kernels only) this cannot tell eager from TorchScript: the answer is then
   *ambiguous* and a file-name hint of ``torchscript`` refines it (:func:`identify_runtime`).

CPU-operator evidence on GPU traces comes from two reader-filled ``meta`` keys (the Kineto reader's contract):

``meta["cpu_op_summary"]``
    ``{"count": int, "names": {name: count}, "namespaces": {ns: count}, "launches": int,
    "launches_outside_ops": float}``: ``count`` CPU operator events (Kineto ``cpu_op``); ``names`` their
    distinct names with counts (the Kineto reader keeps the 50 most frequent plus up to 50 more names outside
    ``aten::``, so that rare TorchScript/ONNX markers are never cut); ``namespaces`` counts by the part before the first
    ``::`` ("" for names without one, e.g. ``<forward op>``); ``launches`` kernel-launch runtime calls;
    ``launches_outside_ops`` the fraction (0..1) of those calls not enclosed by any CPU operator on their
    thread (None when there are no launches).
``meta["first_op_inputs"]``
    a dict (the Kineto reader: the earliest non-factory operator whose first input has rank >= 1), or a list of
    up to 8 dicts in start order (the ORT reader), ``{"name": str, "dims": [[int, ...], ...],
    "types": [str, ...]}``: the first model operators, their ``Input Dims`` (one
    list per input; ``[]`` for scalars and non-tensors) and ``Input type`` (verbatim, e.g. ``"c10::Half"``,
    ``"float"``, ``"long int"``; ORT's ``"float16"``, ``"int64"``).
``meta["embedding_inputs"]`` (ORT reader, optional)
    embedding lookups (``Gather`` of a floating rank-2 table by integer ids) in the shape of ``first_op_inputs``.
``meta["operator_types"]`` (ORT reader, optional)
    per ONNX operator type ``{"op", "ns", "count", "types"}``: total node time (ns), node count, the input
    element types of its first node.
``meta["thread_names"]`` (optional)
    distinct thread names of the process.

Batch size, strongest evidence first (:func:`identify`):

1. serving-engine step names (:func:`batch_from_steps`): SGLang's ``step[MODE bs=N]``, vLLM's
   ``execute_..._context_C(...)_generation_G(...)`` / ``execute_new_N_cached_M`` and TensorRT-LLM's
   ``C ctx reqs, G gen reqs`` (C + G requests); one value over all steps, or none when it varies by step
   (source :data:`VARIES`, lowest and highest shown);
2. recorded input shapes (:func:`batch_from_content`): the integer ids of an embedding lookup (``aten::embedding``,
   an ORT ``Gather`` of a floating rank-2 table; the one with the largest table, i.e. the token embedding),
   never the table (the weight): ids ``[batch, seq]`` give both; flat ids ``[N]`` are N tokens, the batch only
   when every request feeds one token, so that value is *uncertain*; else the first dim of a convolution's
   (or batch/group/instance norm's) ``[N, C, ...]`` activation input. No other operator's shape is read (a ``slice`` of a block table, a ``linear`` over
   batch x tokens);
3. the file name (:func:`hints_from_name`): ``batch16``, ``bs16``, ``bs_16``; a bare ``b16`` only in tracekit's own
   trace names (``pytorch_b16_s128.torch.json.gz``); never a GPU model (``b200``, ``h100``, ``mi300x``...:
   :data:`GPU_MODELS`).

Sequence length: the second dim of ``[batch, seq]`` ids, else the file name (``seq128``, ``sl128``, tracekit's
``s128``). Precision: the dominant compute operators of an ONNX Runtime profile (:func:`precision_from_operators`:
``QLinear*``, ``MatMulInteger``, ``ConvInteger``... -> int8; ``MatMul``, ``Gemm``, ``Conv``, attention -> their
floating input type; by total node time), else the floating type in kernel names weighted by kernel time
(:func:`precision_from_kernels`), else the first model operator's floating input type (``c10::Half``/``float16``
-> fp16, ``c10::BFloat16``/``bfloat16`` -> bf16, ``float`` -> fp32, ``double`` -> fp64; indexing, view and factory
operators passed over), else the file name.

Confidence (:func:`settle`): when two sure sources give different values, the value is None with source
:data:`UNCERTAIN`, both values in ``candidates`` and the evidence, and a warning; a source unsure of what its
evidence means (flat ids) only corroborates or stands alone, flagged ``uncertain``. Nothing is picked silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from tracekit.analyzers.paper import RUNTIME_ORDER
from tracekit.model import GRAPH_LAUNCH_NAMES, on_host

if TYPE_CHECKING:
    from tracekit.model import Trace

#: What identifying a trace reads of it beyond what the metrics read (a :data:`tracekit.model.FrameSpec` part:
#: the ops' names, kinds and CUDA-graph ids; the API calls' names; every range).
FRAMES_READ: dict[str, tuple[str, ...] | None] = {
    "ops": ("start", "end", "kind", "name", "graph"),
    "api": ("name",),
    "ranges": None,
}

FROM_CONTENT = "inferred from trace content"
FROM_NAME = "from file name"

TORCHSCRIPT_NAMES = ("<forward op>", "fallback_function")
TORCHSCRIPT_SUBSTRINGS = ("GraphExecutor", "graph_executor", "CodeImpl::")
COMPILE_SUBSTRINGS = ("CompiledFunction", "Torch-Compiled Region", "CompiledFxGraph")
#: Kernel names Inductor generates (``triton_poi_fused_add_0``, older ``triton__0d1d2d``).
INDUCTOR_KERNEL = r"(^|\s)triton_"
#: Kernel names nvFuser generates (``<unnamed>::nvfuser_pointwise_f0_c1_r0_g0(...)``, ``nvfuser_inner_persistent_...``).
NVFUSER_KERNEL = r"(^|\s|::)nvfuser_"
#: Share of a trace's kernels below which its Inductor kernels are a compiled helper, not a compiled model
#: (:func:`_compile_evidence`).
COMPILED_HELPER_SHARE = 0.005
ORT_SUBSTRINGS = ("onnxruntime", "ExecutionProvider")
ATEN_KERNEL = r"at::native::|at::cuda::"
#: Factory operators: their inputs are sizes, not the model's input.
FACTORY_OPS = re.compile(r"^aten::(empty|zeros|ones|full|rand|randn|arange|scalar_tensor|new_)")
#: Fraction of kernel launches outside any CPU operator above which a Kineto trace is not PyTorch-driven.
OUTSIDE_OPS_THRESHOLD = 0.5


@dataclass(frozen=True)
class Inferred:
    """One inferred value: ``value``, ``evidence`` (what in the trace or name says so), ``source``.

    ``ambiguous``: the content narrows it to a family (PyTorch eager or TorchScript) but not further.
    ``uncertain``: the evidence may not mean this value (flat token ids), or the sources disagree or vary
    (``value`` None, source :data:`UNCERTAIN` / :data:`VARIES`, the values in ``candidates``)."""

    value: Any
    evidence: str
    source: str = FROM_CONTENT
    ambiguous: bool = False
    uncertain: bool = False
    candidates: tuple[Any, ...] = ()


# ---------------------------------------------------------------------------------------------- runtime


def _names(frame: pl.DataFrame) -> pl.Series:
    """Distinct non-null names of a frame (a few hundred even on large traces)."""
    return frame.get_column("name").drop_nulls().unique()


def _count(names: pl.Series, *, contains: tuple[str, ...] = (), regex: str | None = None) -> int:
    if names.is_empty():
        return 0
    hit = pl.lit(False)
    for s in contains:
        hit = hit | pl.col("name").str.contains(s, literal=True)
    if regex is not None:
        hit = hit | pl.col("name").str.contains(regex)
    return names.to_frame("name").filter(hit).height


def _cpu_ops(trace: Trace) -> dict[str, Any] | None:
    summary = trace.meta.get("cpu_op_summary")
    return summary if isinstance(summary, dict) else None


class _TraceNames:
    """The distinct names of one trace's frames, each computed once per identification (the rules ask for
    them several times; a unique over every kernel name is the costly step on large traces)."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace

    @cached_property
    def ops(self) -> pl.Series:
        return _names(self.trace.ops)

    @cached_property
    def operators(self) -> pl.Series:
        return _names(self.trace.ops.filter(pl.col("kind") == "operator"))

    @cached_property
    def ranges(self) -> pl.Series:
        return _names(self.trace.ranges)

    @cached_property
    def markers(self) -> pl.Series:
        """Names where framework markers can appear: ranges, CPU operators (contract), thread names."""
        summary = _cpu_ops(self.trace) or {}
        extra = [*(summary.get("names") or {}), *(self.trace.meta.get("thread_names") or [])]
        return pl.concat([self.ranges, self.operators, pl.Series("name", extra, dtype=pl.String)]).unique()


def graph_launches(trace: Trace) -> str | None:
    """Evidence of CUDA-graph launches (``"10 cudaGraphLaunch calls"``), or None."""
    calls = trace.api.filter(pl.col("name").is_in(GRAPH_LAUNCH_NAMES))
    if calls.height:
        names = " / ".join(sorted(set(calls.get_column("name").to_list())))
        return f"{calls.height} {names} call{'s' if calls.height != 1 else ''}"
    nodes = trace.ops.get_column("graph").drop_nulls()
    if nodes.len():
        return f"{nodes.len()} ops ran as nodes of {nodes.n_unique()} CUDA graph(s)"
    return None


def ort_evidence(trace: Trace, aten_kernels: int, names: _TraceNames | None = None) -> str | None:
    """Evidence that ONNX Runtime ran the model, or None (see the module docstring, rule 2)."""
    names = names or _TraceNames(trace)
    if trace.meta.get("format") == "ort":
        return "ONNX Runtime profile format"
    providers = [p for p in trace.meta.get("providers") or [] if p]
    if providers:
        return f"execution providers {', '.join(providers)}"
    kernels = _count(names.ops, contains=("onnxruntime::",))
    if kernels:
        return f"{kernels} onnxruntime:: kernel name(s)"
    marks = _count(names.markers, contains=ORT_SUBSTRINGS)
    if marks:
        return f"{marks} ONNX Runtime thread/range/operator name(s)"
    summary = _cpu_ops(trace)
    outside = (summary or {}).get("launches_outside_ops")
    recorded = (summary or {}).get("count") or 0  # no CPU operator at all: CPU activity was off, no evidence
    if outside is not None and outside >= OUTSIDE_OPS_THRESHOLD and aten_kernels == 0 and recorded > 0:
        return (
            f"{outside:.0%} of {summary.get('launches', '?')} kernel launches outside any framework operator, "
            "no ATen kernels"
        )
    return None


def _torchscript_evidence(trace: Trace, trace_names: _TraceNames) -> str | None:
    names = trace_names.markers
    found = _count(names, contains=(*TORCHSCRIPT_NAMES, *TORCHSCRIPT_SUBSTRINGS), regex=r"^prim::")
    prim = ((_cpu_ops(trace) or {}).get("namespaces") or {}).get("prim", 0)
    if not found and not prim:
        return None
    shown = names.to_frame("name").filter(
        pl.col("name").is_in(TORCHSCRIPT_NAMES) | pl.col("name").str.starts_with("prim::")
    )
    example = ", ".join(sorted(shown.get_column("name").to_list())[:3]) or "graph-executor names"
    return f"TorchScript operators ({example})"


def _compile_evidence(trace: Trace, names: _TraceNames) -> tuple[str | None, str | None]:
    """(evidence that torch.compile ran the model, or None; a note when it ran only around a helper, or None).

    Inductor kernels fewer than :data:`COMPILED_HELPER_SHARE` of the trace's kernels are a helper compiled by
    itself, not a compiled model: vLLM compiles VocabParallelEmbedding's ``get_masked_input_and_mask`` even in
    eager mode (the real B200 eager trace: 1 Inductor kernel and 1 'Torch-Compiled Region' among 768 kernels,
    read 'compile' over a file name saying 'eager'). A compiled model's fused kernels are a large share (29-32%
    on the committed H200 compile traces, 11% on TraceLens's MI300 vLLM full-graph trace, 1.3% on HTA's recsys
    trace, whose 35 CompiledFunction operators compile parts of it); its compile ranges then say nothing more."""
    triton = _count(names.ops, regex=INDUCTOR_KERNEL)
    if triton:
        kernels = trace.ops.filter(pl.col("kind") == "kernel")
        inductor = kernels.filter(pl.col("name").str.contains(INDUCTOR_KERNEL)).height
        if kernels.height and inductor < COMPILED_HELPER_SHARE * kernels.height:
            share = inductor / kernels.height
            return None, (
                f"torch.compile only around a helper ({inductor} of {kernels.height} kernels from Inductor: "
                f"{share:.2%})"
            )
        return f"{triton} Inductor/Triton kernel name(s) (triton_*)", None
    marks = _count(names.markers, contains=COMPILE_SUBSTRINGS)
    if marks:
        return "torch.compile ranges (CompiledFunction / Torch-Compiled Region)", None
    return None, None


def _nvfuser_evidence(trace: Trace, names: _TraceNames) -> str | None:
    """Evidence that nvFuser (NVIDIA's JIT fuser: Lightning Thunder, TorchScript's old fuser, its own C++
    tests) compiled the model's kernels, or None: its kernels (``nvfuser_*``) are at least
    :data:`COMPILED_HELPER_SHARE` of the trace's kernels. The real NVIDIA/Fuser exports: 31-34% of the kernel
    time, beside cuBLAS and ATen's input fills, which had read "pytorch" (eager)."""
    if not _count(names.ops, regex=NVFUSER_KERNEL):
        return None
    kernels = trace.ops.filter(pl.col("kind") == "kernel")
    fused = kernels.filter(pl.col("name").str.contains(NVFUSER_KERNEL))
    if not kernels.height or fused.height < COMPILED_HELPER_SHARE * kernels.height:
        return None
    timed = kernels.select((pl.col("end") - pl.col("start")).sum()).item() or 0
    share = (fused.select((pl.col("end") - pl.col("start")).sum()).item() or 0) / timed if timed else None
    of_time = f", {share:.0%} of the kernel time" if share is not None else ""
    return (
        f"{fused.height} of {kernels.height} kernels are nvFuser's JIT-fused kernels (nvfuser_*{of_time}): "
        "a JIT compiler (nvFuser, as Lightning Thunder runs it), not PyTorch eager, TorchScript or torch.compile"
    )


def runtime_from_content(trace: Trace) -> Inferred | None:
    """The runtime the trace's events point to (rules 1-6 of the module docstring), or None."""
    graphs = graph_launches(trace)
    names = _TraceNames(trace)
    aten_kernels = _count(names.ops, regex=ATEN_KERNEL)
    ort = ort_evidence(trace, aten_kernels, names)
    if ort is not None:
        if graphs:
            return Inferred("onnx-cuda-graphs", f"{ort}; {graphs}")
        return Inferred("onnx", ort)
    nvfuser = _nvfuser_evidence(trace, names)
    if nvfuser is not None:  # (no runtime of tracekit's: withheld, with its evidence)
        return Inferred(None, nvfuser, OTHER_RUNTIME)
    compiled, helper = _compile_evidence(trace, names)
    if compiled is not None:
        if graphs:
            return Inferred("compile-cudagraphs", f"{compiled}; {graphs}")
        return Inferred("compile", compiled)
    # a helper compiled by itself is said beside the runtime of the rest
    also = "" if helper is None else f"; {helper}"
    markers = "no TorchScript or compile markers" if helper is None else f"no TorchScript markers{also}"
    if graphs:
        return Inferred("cuda-graphs", f"{graphs}, no ONNX Runtime evidence{also}")
    torchscript = _torchscript_evidence(trace, names)
    if torchscript is not None:
        return Inferred("torchscript", f"{torchscript}{also}")
    summary = _cpu_ops(trace)
    aten_ops = ((summary or {}).get("namespaces") or {}).get("aten", 0)
    if aten_ops:
        return Inferred("pytorch", f"{aten_ops} aten:: operators, {markers}")
    aten_operators = _count(names.operators, regex=r"^aten::")
    if aten_operators:
        return Inferred("pytorch", f"{aten_operators} aten:: operator names, {markers}")
    aten_ranges = _count(names.ranges, regex=r"^aten::")
    if aten_kernels or aten_ranges:
        what = f"{aten_kernels} ATen kernel name(s)" if aten_kernels else f"{aten_ranges} aten:: ranges"
        if summary is not None:
            return Inferred("pytorch", f"{what}, {markers}")
        return Inferred(
            "pytorch",
            f"{what}; no CPU-operator information to tell eager from TorchScript{also}",
            ambiguous=True,
        )
    return None


_RUNTIME_HINTS: tuple[tuple[str, str], ...] = (
    (r"onnx|(^|[^a-z])ort([^a-z]|$)", "onnx"),
    (r"inductor|compile", "compile"),
    (r"torchscript|(^|[^a-z])jit([^a-z]|$)", "torchscript"),
    (r"cuda[-_]?graph", "cuda-graphs"),
    (r"pytorch|eager", "pytorch"),
)
_GRAPH_HINT = r"cuda[-_]?graph"


def _hint_text(path: Path) -> str:
    """The file name and its folder's name, lower case (a run directory names its runtime)."""
    return f"{path.parent.name}/{path.name}".lower()


def runtime_from_name(path: Path) -> Inferred | None:
    """The runtime a file name (or its folder's name) names, or None."""
    text = _hint_text(path)
    for pattern, runtime in _RUNTIME_HINTS:
        match = re.search(pattern, text)
        if match is None:
            continue
        if runtime in ("onnx", "compile") and re.search(_GRAPH_HINT, text):
            runtime = f"{runtime}-cuda-graphs" if runtime == "onnx" else "compile-cudagraphs"
        return Inferred(runtime, f"{match.group(0).strip('_-/.')!r} in {path.name}", FROM_NAME)
    return None


#: Runtimes that ATen kernels without CPU operators cannot tell apart.
PYTORCH_FAMILY = ("pytorch", "torchscript")


def identify_runtime(trace: Trace, path: Path) -> tuple[Inferred | None, list[str]]:
    """(the runtime from content, refined or replaced by the file name; warnings when the two disagree)."""
    content, name = runtime_from_content(trace), runtime_from_name(path)
    if content is None:
        return name, []
    if name is None or name.value == content.value:
        return content, []
    if content.ambiguous and name.value in PYTORCH_FAMILY:
        evidence = f"{name.evidence}; trace content: {content.evidence}"
        return Inferred(name.value, evidence, FROM_NAME), []
    return content, [
        f"the file name suggests runtime {name.value!r} ({name.evidence}) but the trace content says "
        f"{content.value!r} ({content.evidence}); using the content"
    ]


# ------------------------------------------------------------------------------ batch, sequence, precision

_INTEGER_TYPES = (
    "long int",
    "int",
    "long",
    "int64",
    "int32",
    "short",
    "int16",
    "unsigned char",
    "uint8",
    "c10::long",
    "c10::int",
)
_FLOAT_TYPES: dict[str, str] = {
    "c10::half": "fp16",
    "half": "fp16",
    "float16": "fp16",
    "c10::bfloat16": "bf16",
    "bfloat16": "bf16",
    "float": "fp32",
    "float32": "fp32",
    "double": "fp64",
    "float64": "fp64",
    "c10::float8_e4m3fn": "fp8",
    "c10::float8_e5m2": "fp8",
}

#: Embedding lookups (Kineto ``aten::embedding``, ORT ``Gather`` of a float table): the integer input holds the
#: token ids (its first dim is the batch), the floating rank-2 input is the weight (never the batch).
EMBEDDING_OPS = re.compile(r"^(?:aten::embedding(?:_bag)?|aten::_embedding_bag|Gather)(?::|$)")
#: Convolutions and batch/group/instance norms: the first dim of the activation input (rank >= 3, floating,
#: ``[N, C, ...]``) is the batch.
CONV_OPS = re.compile(
    r"^(?:aten::(?:conv[123]d|_convolution|convolution|cudnn_convolution|mkldnn_convolution|batch_norm|"
    r"_batch_norm_impl_index|native_batch_norm|cudnn_batch_norm|group_norm|instance_norm)"
    r"|Conv|BatchNormalization|InstanceNormalization|GroupNormalization)(?::|$)"
)
#: Indexing, view and copy operators: their input types are whatever buffer they touch (a position-id table,
#: a float mask), not the model's precision.
INDEXING_OPS = re.compile(
    r"^aten::(?:slice|select|view|reshape|index|index_select|narrow|expand|unsqueeze|squeeze|permute|"
    r"transpose|t|as_strided|cat|stack|contiguous|clone|_unsafe_view|split|chunk|arange|item|"
    r"_local_scalar_dense|normal_|uniform_|random_)$"
)
#: ONNX operator types that compute on 8-bit integers (activations and weights): the model runs in int8.
QUANTIZED_OPS = re.compile(
    r"^(?:QLinear\w+|MatMulInteger\w*|ConvInteger|QGemm|QAttention|QOrdered\w+|DynamicQuantizeMatMul|"
    r"DynamicQuantizeLSTM)$"
)
#: ONNX operator types whose floating inputs carry the model's compute precision.
FLOAT_COMPUTE_OPS = frozenset(
    {
        "MatMul",
        "Gemm",
        "Conv",
        "ConvTranspose",
        "FusedMatMul",
        "FusedGemm",
        "FusedConv",
        "NhwcConv",
        "Attention",
        "MultiHeadAttention",
        "GroupQueryAttention",
        "PackedAttention",
        "DecoderMaskedMultiHeadAttention",
        "SparseAttention",
        "Einsum",
        "LSTM",
        "GRU",
        "RNN",
    }
)

#: Source of a value that two kinds of evidence give differently (the value is then None; both are shown).
UNCERTAIN = "uncertain: sources disagree"
#: Source of a batch size that differs from one serving step to the next (the value is then None).
VARIES = "varies by serving step"
#: Source of a runtime the content names that is none of tracekit's (nvFuser's JIT: the value is then None).
OTHER_RUNTIME = "none of tracekit's runtimes"
#: Every source of an inferred value.
INFERRED_SOURCES = (FROM_CONTENT, FROM_NAME, UNCERTAIN, VARIES, OTHER_RUNTIME)


def _first_ops(trace: Trace) -> list[dict[str, Any]]:
    raw = trace.meta.get("first_op_inputs")
    ops = [raw] if isinstance(raw, dict) else raw if isinstance(raw, list) else []
    return [op for op in ops if isinstance(op, dict) and isinstance(op.get("dims"), list)]


def _inputs(op: dict[str, Any]) -> list[tuple[list[int], str]]:
    """(dims, type) of each tensor input of a ``first_op_inputs`` entry (non-tensors left out)."""
    dims, types = op["dims"], [str(t) for t in op.get("types") or []]
    return [
        (d, types[i].lower() if i < len(types) else "")
        for i, d in enumerate(dims)
        if isinstance(d, list) and d and all(isinstance(x, int) for x in d)
    ]


def _lookups(trace: Trace) -> list[tuple[dict[str, Any], list[int], list[int], str]]:
    """(op, table dims, ids dims, ids type) of every embedding lookup the reader recorded (Kineto's first
    operator, ORT's ``embedding_inputs``): an :data:`EMBEDDING_OPS` operator with a floating rank-2 input (the
    weight) and an integer input (the ids)."""
    extra = trace.meta.get("embedding_inputs")
    ops = _first_ops(trace) + [
        op for op in extra or [] if isinstance(op, dict) and isinstance(op.get("dims"), list)
    ]
    found = []
    for op in ops:
        if not EMBEDDING_OPS.match(str(op.get("name") or "")):
            continue
        inputs = _inputs(op)
        table = next((d for d, t in inputs if t in _FLOAT_TYPES and len(d) == 2), None)
        ids = next(((d, t) for d, t in inputs if t in _INTEGER_TYPES), None)
        if table is not None and ids is not None:
            found.append((op, table, ids[0], ids[1]))
    return found


def batch_from_content(trace: Trace) -> tuple[Inferred | None, Inferred | None]:
    """(batch size, sequence length) from the operators' recorded input shapes (module docstring): the ids of
    the embedding lookup with the largest table (the token embedding), else a convolution's activation input;
    never an embedding's weight, never an indexing or view operator's input."""
    lookups = _lookups(trace)
    if lookups:
        op, table, ids, dtype = max(lookups, key=lambda x: x[1][0])  # the first of the largest tables
        name = op.get("name")
        if len(ids) >= 2:
            batch = Inferred(ids[0], f"first dim of {name} ids {ids} ({dtype}; {table} is its weight)")
            seq = None
            if len(ids) == 2:
                seq = Inferred(ids[1], f"second dim of {name} ids {ids} ({dtype} token ids)")
            return batch, seq
        return (
            Inferred(
                ids[0],
                f"{name} ids {ids}: {ids[0]} tokens in one flat batch, the batch size only when every request "
                "feeds one token (decode)",
                uncertain=True,
            ),
            None,
        )
    for op in _first_ops(trace):
        if CONV_OPS.match(str(op.get("name") or "")):
            activation = next((d for d, t in _inputs(op) if len(d) >= 3 and t in _FLOAT_TYPES), None)
            if activation is not None:
                return Inferred(activation[0], f"first dim of {op.get('name')} input {activation}"), None
    return None, None


#: SGLang's batch size as its step name spells it.
_SGLANG_BS = r"^step\[[A-Z][A-Z0-9_]* bs=(\d+)"
#: Longest step name quoted in evidence.
_EXAMPLE_CHARS = 60


def batch_from_steps(trace: Trace) -> Inferred | None:
    """The batch size serving-engine step names state (:mod:`tracekit.analyzers.steps`): SGLang's ``bs=N``,
    vLLM's and TensorRT-LLM's context + generation requests; steps without requests (idle) left out. One value
    over every step -> that value; several -> value None with source :data:`VARIES`; no step names -> None."""
    from tracekit.analyzers.steps import outermost_steps, step_counts

    if trace.ranges.is_empty():
        return None
    host = trace.ranges.filter(on_host()).select("name")
    names = pl.DataFrame({"name": host.get_column("name").drop_nulls().unique()})
    named = names.with_columns(step_counts(pl.col("name"))).filter(pl.col("step_engine").is_not_null())
    if named.is_empty():
        return None
    # each step once: a step range inside another of its process is the same step annotated twice
    host = outermost_steps(trace).select("name")
    batch = (
        pl.when(pl.col("step_engine") == "SGLang")
        .then(pl.col("name").str.extract(_SGLANG_BS, 1).cast(pl.Int64, strict=False))
        .otherwise(pl.col("context_requests") + pl.col("generation_requests"))
    )
    named = named.select("name", "step_engine", batch.alias("batch")).filter(pl.col("batch") > 0)
    steps = host.join(named, on="name", how="inner", maintain_order="left")
    if steps.is_empty():
        return None
    # (the engines whose names the steps bear, the inner annotations' too: both name the step)
    engines = " and ".join(sorted(named.get_column("step_engine").unique().to_list()))
    values = steps.get_column("batch").unique().sort()
    example = steps.get_column("name")[0]
    if len(example) > _EXAMPLE_CHARS:
        example = example[: _EXAMPLE_CHARS - 1] + "…"
    if values.len() == 1:
        n = values[0]
        what = "request" if n == 1 else "requests"
        return Inferred(
            int(n), f"{engines} step names: {n} {what} in each of {steps.height} step(s) ({example!r})"
        )
    low, high = int(values.min()), int(values.max())
    return Inferred(
        None,
        f"{engines} step names: {low} to {high} requests per step over {steps.height} steps "
        f"({values.len()} sizes; e.g. {example!r}): no single batch size",
        VARIES,
        uncertain=True,
        candidates=(low, high),
    )


#: hipBLASLt/Tensile GEMM names (ROCm) put the data types after the index tokens: ``Cijk_Alik_Bljk_BBS_...``
#: (bf16 in and out, fp32 compute), ``..._HHS_...`` (fp16), ``..._SB_...`` (fp32); the first letter is the
#: input type.
_TENSILE = r"^cijk_a[a-z]+_b[a-z]+_"
#: Triton's MoE GEMM (triton_kernels ``matmul_ogs``) spells ``_matmul_ogs_NNT_{Y}x{X}x{W}_...``: output,
#: activation, weight (``mxfp4`` for packed fp4 weights). The activation is the type it computes in: the weights
#: are dequantized to it (``_matmul_ogs_NNT_bf16xbf16xmxfp4`` is bf16 compute over fp4 weights).
_OGS = r"^_matmul(?:_ogs)?_[nt]+_[a-z0-9]+x"
#: TensorRT-LLM's generated batched GEMMs (trtllm-gen, FlashInfer) spell ``bmm_{out}_{A}{B}_{accumulator}_...``
#: (``bmm_Bfloat16_E2m1E2m1_Fp32``: fp4 x fp4; ``bmm_Bfloat16_MxE2m1Bfloat16_Fp32``: fp4 weights, bf16 compute).
_BMM = r"^bmm_[a-z0-9]+_"
#: Spellings of fp8 that are no fp8 compute, taken out before typing: vLLM's KV-cache type as a template
#: argument ``(vllm::Fp8KVCacheDataType)N`` (mangled ``...TypeEN``; ``::kAuto``, ``::kFp8E4M3`` where a
#: demangler names the value) and TensorRT-LLM XQA's ``kvt_e4m3``: the cache's storage type (0 = kAuto, the
#: model's; 1 and 2 e4m3 and e5m2), which the attention kernel dequantizes to its own type (``scalar_t``, named
#: beside it) and computes in float: a bf16 model with an fp8 cache is a bf16 model; and block-scale factors: NVFP4's unsigned e4m3 scales (``ue4m3``: cuBLASLt's
#: ``nvjet_sm100_ootst_..._Avec16UE4M3_Bvec16UE4M3``, CUTLASS's ``block_scaled_ue4m3xe2m1``) scale fp4 data,
#: MX formats' ``ue8m0`` scales whatever they scale.
_NOT_FP8 = r"fp8kvcachedatatype(?:\)\d|e\d|::k[a-z0-9]+)|kvt_e[45]m[23]|ue4m3|ue8m0"
#: cuBLASLt's NVFP4 operands: 16-element blocks with ue4m3 scales (``Avec16UE4M3``) hold e2m1 data (read as
#: such before the scales are taken out)
_NVFP4_BLOCKS = r"vec16ue4m3"
#: cuBLASLt's nvjet GEMMs (Hopper, Blackwell) spell their types in letters after ``nvjet_`` (and the arch):
#: ``tst`` bf16 in and out with fp32 compute, ``hsh`` fp16, ``sss`` fp32; the first letter is the input's.
_NVJET = r"^nvjet_(?:sm\d+[a-z]?_)?"
#: CUTLASS kernels over int8 (``int8_t`` demangles as ``signed char``): their operands are int8 where the name
#: says so; only CUTLASS's, since a PyTorch kernel over an int8 tensor (a fill, a copy) computes nothing in it.
_CUTLASS_INT8 = r"^(?:void )?cutlass::.*\bsigned char\b"
#: A kernel naming several types counts for the first of these that matches: the narrowest it computes in.
_KERNEL_TYPES: tuple[tuple[str, str], ...] = (
    # weight-only fp4 GEMMs compute in their activations' type (the fp4 weights are dequantized to it)
    ("bf16", rf"{_OGS}bf16x|{_BMM}(?:(?:mx)?e2m1bfloat16|bfloat16(?:mx)?e2m1)_"),
    ("fp16", rf"{_OGS}fp16x|{_BMM}(?:(?:mx)?e2m1fp16|fp16(?:mx)?e2m1)_"),
    # fp8 (e4m3, e5m2; Triton's fp8e4nv, ROCm's fnuz; Tensile's F8 and B8): activations, attention or KV cache
    # in fp8. A GEMM of fp4 weights and fp8 activations (``MxE2m1MxE4m3``, W4A8) runs at the fp8 rate.
    # cuBLASLt's nvjet GEMMs of five letters name A's type first: ``qqtst`` e4m3 x e4m3 to bf16 (``ootst``,
    # e2m1 with NVFP4's scales, is typed by them: an ``o`` with MX scales is not known to be fp4)
    ("fp8", rf"e4m3|e5m2|float8|fp8|f8f8|{_TENSILE}(?:f8|b8)|{_NVJET}q[a-z]{{4}}_"),
    # fp4 (e2m1: NVFP4, MXFP4) on both sides of the GEMM (W4A4)
    ("fp4", rf"e2m1|fp4|{_TENSILE}f4"),
    # int8 GEMMs (W8A8): CUTLASS templates over ``signed char`` operands (int32 accumulator, a float epilogue
    # that had made them fp32), CUTLASS library instances (``i16832gemm_s8``), cute's integer MMA atoms
    # (``S32S8S8``), cuBLAS's xmma tactics (``xmma_gemm_i8i8_i8i32``), hipBLASLt/Tensile's ``I8``. NCCL's
    # ``..._int8_t`` collectives and element-wise kernels over int8 tensors compute in no type: not matched
    ("int8", rf"{_CUTLASS_INT8}|i\d{{4,6}}gemm_s8|s32[su]8[su]8|xmma_gemm_i8|i8i32|{_TENSILE}i8"),
    # mangled names (ROCm's ck_tile, aiter): DF16b is std::bfloat16_t in the Itanium ABI
    # nvFuser's runtime names bf16 ``__bfloat`` (its own struct)
    ("bf16", rf"bfloat16|bf16|__nv_bfloat16|__bfloat\b|{_TENSILE}b|^_z.*df16b|{_NVJET}t[a-z]{{2}}_"),
    # CUTLASS: cutlass::half_t in a templated kernel; tensorop_f16_s16816gemm_f16 in its library's instances;
    # DF16_ is _Float16 (mangled)
    (
        "fp16",
        rf"c10::half|__half\b|\bhalf\b|half_t\b|_f16_s\d|fp16|f16f16|h884|h1688|h16816|{_TENSILE}h|^_z.*df16_"
        rf"|{_NVJET}h[a-z]{{2}}_",
    ),
    # cuBLAS/cuDNN sm80+ fp32 GEMMs spell f32f32, or tf32f32 where TF32 tensor cores compute an fp32 model's
    ("fp32", rf"<float[,>]|\bfloat\b|sgemm|scudnn|s884|s1688|s16816|f32f32|{_TENSILE}s|{_NVJET}s[a-z]{{2}}_"),
)


def kernel_type(name: pl.Expr) -> pl.Expr:
    """The floating type a kernel name spells (:data:`_KERNEL_TYPES`, first match), or null."""
    lower = (
        name.str.to_lowercase().str.replace_all(_NVFP4_BLOCKS, "vec16_e2m1_").str.replace_all(_NOT_FP8, "")
    )
    expr = pl.lit(None, dtype=pl.String)
    for value, pattern in reversed(_KERNEL_TYPES):
        expr = pl.when(lower.str.contains(pattern)).then(pl.lit(value)).otherwise(expr)
    return expr


def precision_from_kernels(trace: Trace) -> Inferred | None:
    """The floating type of the kernels whose names carry one, weighted by kernel time; None when none do
    (value None, :data:`UNCERTAIN`, when two types have exactly the same time).

    Half-precision kernels often also name ``float`` (accumulators), fp8 ones ``bfloat16`` (output, scales): a
    kernel matching several types counts for the narrowest it computes in (fp8, fp4, int8, bf16, fp16, fp32; a GEMM
    of fp4 weights counts for its activations' type, :data:`_KERNEL_TYPES`)."""
    kernels = trace.ops.filter(pl.col("kind") == "kernel")
    if kernels.is_empty():
        return None
    # One row per distinct name first: the patterns run on a few hundred names, not on every kernel.
    # (durations in floating point: an absurd timestamp must not wrap an integer sum around)
    duration = pl.col("end").cast(pl.Float64) - pl.col("start").cast(pl.Float64)
    per_name = kernels.group_by("name").agg(ns=duration.sum(), n=pl.len())
    typed = (
        per_name.select("ns", "n", dtype=kernel_type(pl.col("name")))
        .drop_nulls("dtype")
        .group_by("dtype")
        .agg(pl.col("ns").sum(), pl.col("n").sum())
        .sort(["ns", "dtype"], descending=[True, False])
    )
    if typed.is_empty():
        return None
    if not typed.get_column("ns").sum() > 0:  # no kernel durations recorded: weighed by count instead
        typed = typed.with_columns(pl.col("n").cast(pl.Float64).alias("ns")).sort(
            ["ns", "dtype"], descending=[True, False]
        )
        top = typed.row(0, named=True)
        evidence = (
            f"kernel names: {top['n']} of {int(typed.get_column('n').sum())} typed kernels are {top['dtype']} "
            "(no kernel durations recorded)"
        )
    else:
        top = typed.row(0, named=True)
        share = top["ns"] / typed.get_column("ns").sum()
        evidence = f"kernel names: {share:.0%} of typed kernel time is {top['dtype']} ({top['n']} kernels)"
    if typed.height > 1 and typed.get_column("ns")[1] == top["ns"]:
        tied = typed.filter(pl.col("ns") == top["ns"]).get_column("dtype").to_list()
        return Inferred(
            None,
            f"kernel names: equal kernel time in {' and '.join(tied)}",
            UNCERTAIN,
            uncertain=True,
            candidates=tuple(tied),
        )
    return Inferred(top["dtype"], evidence)


def _operator_precision(op: str, types: list[str]) -> str | None:
    """The precision one ONNX operator type computes in: int8 for quantized operators, else the type of its
    first floating input for the compute operators; None for the rest (element-wise, shape, data movement)."""
    if QUANTIZED_OPS.match(op):
        return "int8"
    if op in FLOAT_COMPUTE_OPS:
        return next((_FLOAT_TYPES[t.lower()] for t in types if t.lower() in _FLOAT_TYPES), None)
    return None


def precision_from_operators(trace: Trace) -> Inferred | None:
    """The precision of the dominant compute operators of an ONNX Runtime profile (``meta["operator_types"]``):
    each compute operator type counts its total node time for its precision (:func:`_operator_precision`:
    ``QLinear*``, ``MatMulInteger``, ``ConvInteger``, ``QGemm``, ``QAttention``... -> int8; ``MatMul``,
    ``Gemm``, ``Conv``, attention... -> their floating input type); the precision with the most time wins.
    When no node time is recorded at all (ORT writes whole microseconds), node counts weigh instead, and the
    evidence says so. None when no compute operator records its input types; value None (:data:`UNCERTAIN`)
    on an exact tie."""
    entries = trace.meta.get("operator_types")
    if not isinstance(entries, list):
        return None
    time: dict[str, int] = {}
    ops: dict[str, list[tuple[int, str, int]]] = {}
    for e in entries:  # one entry per operator type (tens), not per node
        if not isinstance(e, dict):
            continue
        precision = _operator_precision(str(e.get("op")), [str(t) for t in e.get("types") or []])
        if precision is None:
            continue
        time[precision] = time.get(precision, 0) + int(e.get("ns") or 0)
        ops.setdefault(precision, []).append(
            (int(e.get("ns") or 0), str(e.get("op")), int(e.get("count") or 0))
        )
    if not time:
        return None
    measure, verb = "compute-operator time", "is"
    if not sum(time.values()):  # ORT writes whole microseconds: a model of sub-microsecond nodes records 0
        time = {p: sum(n for _, _, n in rows) for p, rows in ops.items()}
        measure, verb = "compute-operator nodes (no node time recorded)", "are"
    ranked = sorted(time.items(), key=lambda kv: (-kv[1], kv[0]))
    if len(ranked) > 1 and ranked[1][1] == ranked[0][1]:
        tied = tuple(p for p, ns in ranked if ns == ranked[0][1])
        return Inferred(
            None,
            f"ONNX operator types: equal {measure} in {' and '.join(tied)}",
            UNCERTAIN,
            uncertain=True,
            candidates=tied,
        )
    top, ns = ranked[0]
    share = ns / max(sum(time.values()), 1)
    named = ", ".join(f"{op} x{n}" for _, op, n in sorted(ops[top], reverse=True)[:3])
    return Inferred(top, f"ONNX operator types: {share:.0%} of {measure} {verb} {top} ({named})")


def precision_from_content(trace: Trace) -> Inferred | None:
    """Precision from the first operators' input types (see module docstring), or None. Factory, indexing and
    view operators (:data:`INDEXING_OPS`) are passed over: their inputs are buffers, not the model's tensors."""
    for op in _first_ops(trace):
        name = str(op.get("name") or "")
        if FACTORY_OPS.match(name) or INDEXING_OPS.match(name):
            continue
        for t in op.get("types") or []:
            value = _FLOAT_TYPES.get(str(t).lower())
            if value is not None:
                return Inferred(value, f"input type {t} of {op.get('name')}")
    return None


_BATCH_HINT = re.compile(r"(?:^|[^a-z0-9])(?:batch|bs)[-_]?(\d+)(?=$|[^a-z0-9])")
_SEQ_HINT = re.compile(r"(?:^|[^a-z0-9])(?:seq_len|seqlen|seq|sl)[-_]?(\d+)(?=$|[^a-z0-9])")
#: GPU model names: never read as a batch size or sequence length (``b200_vllm_eager.json.gz`` ran on a B200).
GPU_MODELS = re.compile(
    r"(?<![a-z0-9])(?:gb\d{3}|[abh]\d{2,3}[a-z]?|l4|l40s?|t4|v100|p100|k80|mi\d{3}[a-z]?|"
    r"rtx[-_]?[a-z]?\d{3,4}|gtx[-_]?\d{3,4}|quadro)(?![a-z0-9])"
)
#: tracekit's own trace names (``collect``, ``simulate``): ``{runtime}_b{B}_s{S}[.synthetic].{ext}``; only in
#: these does a bare ``b``/``s`` number mean batch size and sequence length.
_OWN_NAME = re.compile(
    r"^(?:" + "|".join(re.escape(r) for r in sorted(RUNTIME_ORDER, key=len, reverse=True)) + r")"
    r"_b(\d+)_s(\d+)(?:\.synthetic)?\.[a-z]"
)
_PRECISION_HINTS: tuple[tuple[str, str], ...] = (
    (r"bfloat16|bf16", "bf16"),
    (r"float16|fp16|(^|[^a-z])half([^a-z]|$)", "fp16"),
    (r"float32|fp32", "fp32"),
    (r"fp8|float8", "fp8"),
    (r"int8", "int8"),
)


def hints_from_name(path: Path) -> dict[str, Inferred]:
    """``batch_size``, ``seq_len``, ``precision`` hints of a file name: ``batch16``, ``bs16``, ``bs_16``,
    ``seq128``, ``seq_len128``, ``sl128``, ``float16``/``fp16``; a bare ``b16``/``s128`` only in tracekit's own
    trace names (``pytorch_b16_s128.torch.json.gz``), never in other names, where ``b200``, ``h100``... are GPU
    models (:data:`GPU_MODELS` are taken out of the text first). Only the keys found."""
    text = GPU_MODELS.sub(" ", _hint_text(path))
    out: dict[str, Inferred] = {}
    own = _OWN_NAME.match(path.name.lower())
    if own is not None:
        for key, group, letter in (("batch_size", 1, "b"), ("seq_len", 2, "s")):
            token = f"{letter}{own.group(group)}"
            out[key] = Inferred(
                int(own.group(group)), f"{token!r} in {path.name} (tracekit's trace naming)", FROM_NAME
            )
    for key, pattern in (("batch_size", _BATCH_HINT), ("seq_len", _SEQ_HINT)):
        match = pattern.search(text)
        if match is not None and key not in out:
            token = match.group(0).strip("_-/. ")
            out[key] = Inferred(int(match.group(1)), f"{token!r} in {path.name}", FROM_NAME)
    for pattern, value in _PRECISION_HINTS:
        match = re.search(pattern, text)
        if match is not None:
            out["precision"] = Inferred(value, f"{match.group(0).strip('_-/.')!r} in {path.name}", FROM_NAME)
            break
    return out


@dataclass(frozen=True)
class Identity:
    """Everything inferred about one trace (None where nothing says it) and the warnings of the inference."""

    runtime: Inferred | None = None
    batch_size: Inferred | None = None
    seq_len: Inferred | None = None
    precision: Inferred | None = None
    #: key (runtime, batch_size, seq_len, precision) -> why the value is uncertain (sources that disagree, a
    #: batch that varies by step, evidence that may not mean the value) or a file-name hint the content
    #: overrides (runtime).
    warnings: dict[str, str] = field(default_factory=dict)


_SOURCE_WORDS = {FROM_CONTENT: "the trace content", FROM_NAME: "the file name"}


def _said(found: Inferred) -> str:
    return f"{found.value} {found.source} ({found.evidence})"


def settle(key: str, ordered: list[Inferred | None]) -> tuple[Inferred | None, str | None]:
    """One value of ``key`` from its sources, strongest first (``ordered``), and a warning when it is uncertain.

    Sources that are sure of their value decide: the strongest one, unless another gives a different value,
    then the answer is :data:`UNCERTAIN` (value None, both values in ``candidates`` and the evidence) rather
    than a pick. A source unsure of what its evidence means (``uncertain``) only corroborates (an agreeing sure
    source makes it sure) or stands alone (value kept, flagged uncertain); it never contradicts a sure one.
    A strongest source without a single value (:data:`VARIES`) ends the search."""
    found = [x for x in ordered if x is not None]
    if not found:
        return None, None
    words = key.replace("_", " ")
    if found[0].value is None:
        return found[0], f"{words} unknown: {found[0].evidence}"
    sure = [x for x in found if not x.uncertain and x.value is not None]
    if not sure:
        lone = found[0]
        return lone, f"{words} {lone.value} is uncertain: {lone.evidence}"
    first = sure[0]
    other = next((x for x in sure[1:] if x.value != first.value), None)
    if other is not None:
        evidence = f"{_said(first)} vs {_said(other)}"
        return (
            Inferred(None, evidence, UNCERTAIN, uncertain=True, candidates=(first.value, other.value)),
            f"{words} uncertain, sources disagree: {evidence}; neither is used",
        )
    agreeing = [x for x in found if x is not first and x.value == first.value and x.source != first.source]
    if agreeing:
        also = "; ".join(f"{_SOURCE_WORDS.get(x.source, x.source)}: {x.evidence}" for x in agreeing)
        return Inferred(first.value, f"{first.evidence}; agrees with {also}", first.source), None
    return first, None


def identify(trace: Trace, path: Path | str) -> Identity:
    """Runtime, batch size, sequence length and precision of a trace. Batch size: serving-engine step names,
    then the operators' recorded shapes (embedding ids, convolution input), then the file name; sequence
    length: token ids, then the file name; precision: the dominant compute operators' types (ONNX Runtime),
    then kernel names weighted by time, then the first model operator's input type, then the file name. Where
    two sources disagree the value is :data:`UNCERTAIN` (:func:`settle`), never a silent pick."""
    path = Path(path)
    runtime, runtime_warnings = identify_runtime(trace, path)
    warnings = {"runtime": runtime_warnings[0]} if runtime_warnings else {}
    batch, seq = batch_from_content(trace)
    names = hints_from_name(path)
    content_precision = (
        precision_from_operators(trace) or precision_from_kernels(trace) or precision_from_content(trace)
    )
    settled: dict[str, Inferred | None] = {}
    for key, ordered in (
        ("batch_size", [batch_from_steps(trace), batch, names.get("batch_size")]),
        ("seq_len", [seq, names.get("seq_len")]),
        ("precision", [content_precision, names.get("precision")]),
    ):
        settled[key], warning = settle(key, ordered)
        if warning is not None:
            warnings[key] = warning
    return Identity(runtime=runtime, warnings=warnings, **settled)
