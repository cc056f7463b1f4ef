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
   kernels, or, on a Kineto trace, kernel launches outside any framework operator with no ATen kernels)
   -> ``onnx`` (``onnx-cuda-graphs`` with graph launches);
3. Inductor/Triton kernels (``triton_*``) or ``CompiledFunction`` / ``Torch-Compiled Region`` ranges or
   operators -> ``compile`` (``compile-cudagraphs`` with graph launches);
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
``meta["thread_names"]`` (optional)
    distinct thread names of the process.

Batch size (:func:`batch_from_content`): the first dim of the model input of the first model operator: its
first integer rank-2 tensor (token ids; for ``aten::embedding`` / ORT ``Gather`` the indices, not the table),
else its first tensor of rank >= 2 (factory operators such as ``aten::zeros`` are passed over). Sequence length: the second dim when that tensor is an integer ``[batch, seq]``
tensor (token ids). Precision (:func:`precision_from_content`): the first floating-point input type
(``c10::Half``/``float16`` -> fp16, ``c10::BFloat16``/``bfloat16`` -> bf16, ``float`` -> fp32, ``double`` ->
fp64), else the floating type of the kernels that carry one in their names, weighted by kernel time
(:func:`precision_from_kernels`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from tracekit.model import Trace

FROM_CONTENT = "inferred from trace content"
FROM_NAME = "from file name"

GRAPH_LAUNCH_NAMES = ("cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch")
TORCHSCRIPT_NAMES = ("<forward op>", "fallback_function")
TORCHSCRIPT_SUBSTRINGS = ("GraphExecutor", "graph_executor", "CodeImpl::")
COMPILE_SUBSTRINGS = ("CompiledFunction", "Torch-Compiled Region", "CompiledFxGraph")
ORT_SUBSTRINGS = ("onnxruntime", "ExecutionProvider")
ATEN_KERNEL = r"at::native::|at::cuda::"
#: Factory operators: their inputs are sizes, not the model's input.
FACTORY_OPS = re.compile(r"^aten::(empty|zeros|ones|full|rand|randn|arange|scalar_tensor|new_)")
#: Fraction of kernel launches outside any CPU operator above which a Kineto trace is not PyTorch-driven.
OUTSIDE_OPS_THRESHOLD = 0.5


@dataclass(frozen=True)
class Inferred:
    """One inferred value: ``value``, ``evidence`` (what in the trace or name says so), ``source``.

    ``ambiguous``: the content narrows it to a family (PyTorch eager or TorchScript) but not further."""

    value: Any
    evidence: str
    source: str = FROM_CONTENT
    ambiguous: bool = False


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
    if outside is not None and outside >= OUTSIDE_OPS_THRESHOLD and aten_kernels == 0:
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


def _compile_evidence(names: _TraceNames) -> str | None:
    triton = _count(names.ops, regex=r"(^|\s)triton_")
    if triton:
        return f"{triton} Inductor/Triton kernel name(s) (triton_*)"
    marks = _count(names.markers, contains=COMPILE_SUBSTRINGS)
    if marks:
        return "torch.compile ranges (CompiledFunction / Torch-Compiled Region)"
    return None


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
    compiled = _compile_evidence(names)
    if compiled is not None:
        if graphs:
            return Inferred("compile-cudagraphs", f"{compiled}; {graphs}")
        return Inferred("compile", compiled)
    if graphs:
        return Inferred("cuda-graphs", f"{graphs}, no ONNX Runtime evidence")
    torchscript = _torchscript_evidence(trace, names)
    if torchscript is not None:
        return Inferred("torchscript", torchscript)
    summary = _cpu_ops(trace)
    aten_ops = ((summary or {}).get("namespaces") or {}).get("aten", 0)
    if aten_ops:
        return Inferred("pytorch", f"{aten_ops} aten:: operators, no TorchScript or compile markers")
    aten_operators = _count(names.operators, regex=r"^aten::")
    if aten_operators:
        return Inferred(
            "pytorch", f"{aten_operators} aten:: operator names, no TorchScript or compile markers"
        )
    aten_ranges = _count(names.ranges, regex=r"^aten::")
    if aten_kernels or aten_ranges:
        what = f"{aten_kernels} ATen kernel name(s)" if aten_kernels else f"{aten_ranges} aten:: ranges"
        if summary is not None:
            return Inferred("pytorch", f"{what}, no TorchScript or compile markers")
        return Inferred(
            "pytorch",
            f"{what}; no CPU-operator information to tell eager from TorchScript",
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

_INTEGER_TYPES = ("long int", "int", "long", "int64", "int32", "short", "int16", "unsigned char", "uint8")
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


def _first_ops(trace: Trace) -> list[dict[str, Any]]:
    raw = trace.meta.get("first_op_inputs")
    ops = [raw] if isinstance(raw, dict) else raw if isinstance(raw, list) else []
    return [op for op in ops if isinstance(op, dict) and isinstance(op.get("dims"), list)]


def _model_input(op: dict[str, Any]) -> tuple[list[int], str] | None:
    """(dims, type) of the operator's model input, or None: its first integer tensor of rank 2 (token ids:
    ``aten::embedding``'s or ORT ``Gather``'s indices, not the embedding table), else its first tensor of
    rank >= 2. Factory operators (``aten::zeros``...) have none."""
    if FACTORY_OPS.match(str(op.get("name") or "")):
        return None
    dims, types = op["dims"], [str(t) for t in op.get("types") or []]
    inputs = [
        (d, types[i] if i < len(types) else "")
        for i, d in enumerate(dims)
        if isinstance(d, list) and len(d) >= 2 and all(isinstance(x, int) for x in d)
    ]
    tokens = [(d, t) for d, t in inputs if len(d) == 2 and t.lower() in _INTEGER_TYPES]
    return (tokens or inputs or [None])[0]


def batch_from_content(trace: Trace) -> tuple[Inferred | None, Inferred | None]:
    """(batch size, sequence length) from the first model operator's input dims (see module docstring)."""
    for op in _first_ops(trace):
        found = _model_input(op)
        if found is None:
            continue
        dims, dtype = found
        where = f"{op.get('name')} input {dims}"
        batch = Inferred(dims[0], f"first dim of {where}")
        seq = None
        if len(dims) == 2 and dtype.lower() in _INTEGER_TYPES:
            seq = Inferred(dims[1], f"second dim of {where} ({dtype} token ids)")
        return batch, seq
    return None, None


_KERNEL_TYPES: tuple[tuple[str, str], ...] = (
    ("bf16", r"bfloat16|bf16|__nv_bfloat16"),
    ("fp16", r"c10::half|__half\b|\bhalf\b|fp16|f16f16|h884|h1688|h16816"),
    ("fp32", r"<float[,>]|\bfloat\b|sgemm|scudnn|s884|s1688|s16816"),
)


def precision_from_kernels(trace: Trace) -> Inferred | None:
    """The floating type of the kernels whose names carry one, weighted by kernel time; None when none do.

    Half-precision kernels often also name ``float`` (accumulators): a kernel matching several types counts
    for the narrowest (bf16, then fp16)."""
    kernels = trace.ops.filter(pl.col("kind") == "kernel")
    if kernels.is_empty():
        return None
    # One row per distinct name first: the patterns run on a few hundred names, not on every kernel.
    per_name = kernels.group_by("name").agg(ns=(pl.col("end") - pl.col("start")).sum(), n=pl.len())
    lower = pl.col("name").str.to_lowercase()
    expr = pl.lit(None, dtype=pl.String)
    for value, pattern in reversed(_KERNEL_TYPES):
        expr = pl.when(lower.str.contains(pattern)).then(pl.lit(value)).otherwise(expr)
    typed = (
        per_name.select("ns", "n", dtype=expr)
        .drop_nulls("dtype")
        .group_by("dtype")
        .agg(pl.col("ns").sum(), pl.col("n").sum())
        .sort(["ns", "dtype"], descending=[True, False])
    )
    if typed.is_empty():
        return None
    top = typed.row(0, named=True)
    share = top["ns"] / max(typed.get_column("ns").sum(), 1)
    return Inferred(
        top["dtype"],
        f"kernel names: {share:.0%} of typed kernel time is {top['dtype']} ({top['n']} kernels)",
    )


def precision_from_content(trace: Trace) -> Inferred | None:
    """Precision from the first operators' input types (see module docstring), or None."""
    for op in _first_ops(trace):
        if FACTORY_OPS.match(str(op.get("name") or "")):
            continue
        for t in op.get("types") or []:
            value = _FLOAT_TYPES.get(str(t).lower())
            if value is not None:
                return Inferred(value, f"input type {t} of {op.get('name')}")
    return None


_BATCH_HINT = re.compile(r"(?:^|[^a-z0-9])(?:batch|bs|b)[-_]?(\d+)(?=$|[^a-z0-9])")
_SEQ_HINT = re.compile(r"(?:^|[^a-z0-9])(?:seq_len|seqlen|seq|sl|s)[-_]?(\d+)(?=$|[^a-z0-9])")
_PRECISION_HINTS: tuple[tuple[str, str], ...] = (
    (r"bfloat16|bf16", "bf16"),
    (r"float16|fp16|(^|[^a-z])half([^a-z]|$)", "fp16"),
    (r"float32|fp32", "fp32"),
    (r"fp8|float8", "fp8"),
    (r"int8", "int8"),
)


def hints_from_name(path: Path) -> dict[str, Inferred]:
    """``batch_size``, ``seq_len``, ``precision`` hints of a file name (``batch16``, ``bs16``, ``_b16_``,
    ``s128``, ``float16``/``fp16``); only the keys found."""
    text = _hint_text(path)
    out: dict[str, Inferred] = {}
    for key, pattern in (("batch_size", _BATCH_HINT), ("seq_len", _SEQ_HINT)):
        match = pattern.search(text)
        if match is not None:
            token = match.group(0).strip("_-/.")
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
    #: key (runtime, batch_size, seq_len, precision) -> a file-name hint that disagrees with the content.
    warnings: dict[str, str] = field(default_factory=dict)


def identify(trace: Trace, path: Path | str) -> Identity:
    """Runtime, batch size, sequence length and precision of a trace: its content first (for precision: the
    first operators' input types, then kernel names), then its file name (:data:`FROM_NAME`). A file-name
    hint that disagrees with the content is a warning."""
    path = Path(path)
    runtime, runtime_warnings = identify_runtime(trace, path)
    warnings = {"runtime": runtime_warnings[0]} if runtime_warnings else {}
    batch, seq = batch_from_content(trace)
    names = hints_from_name(path)
    precision = precision_from_content(trace) or precision_from_kernels(trace) or names.get("precision")
    for key, found in (("batch_size", batch), ("seq_len", seq), ("precision", precision)):
        hint = names.get(key)
        if (
            found is not None
            and hint is not None
            and found.source == FROM_CONTENT
            and hint.value != found.value
        ):
            warnings[key] = (
                f"the file name suggests {key} {hint.value} ({hint.evidence}) but the trace content says "
                f"{found.value} ({found.evidence}); using the content"
            )
    return Identity(
        runtime=runtime,
        batch_size=batch or names.get("batch_size"),
        seq_len=seq or names.get("seq_len"),
        precision=precision,
        warnings=warnings,
    )
