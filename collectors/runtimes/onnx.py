"""ONNX Runtime: export once (cached), then an InferenceSession on the CUDA EP with IO binding, or the CPU EP.

Exports are cached under ``$TRACEKIT_CACHE/onnx`` (default ``~/.cache/tracekit/onnx``) as
``{model}-{precision}-opset{N}-{config hash}.onnx`` with dynamic batch and sequence axes, written to a
temporary name and renamed when complete. ``onnx-cuda-graphs`` enables ORT's CUDA graph capture
(``enable_cuda_graph``), which needs IO binding with fixed input and output buffers; the runs in which ORT
allocates and captures happen in ``prepare`` (:data:`ORT_GRAPH_CAPTURE_RUNS`), before warm-up and timing.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tracekit.collectors.runtimes.base import RunContext, Runtime
from tracekit.errors import RunFailure, TracekitError


def cache_dir() -> Path:
    """Where exported models are cached (``TRACEKIT_CACHE`` overrides ``~/.cache/tracekit``)."""
    root = os.environ.get("TRACEKIT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "tracekit")
    return Path(root) / "onnx"


#: Cached fp16 exports made before :func:`_consistent_fp16` are not loadable: their file name differs
_FP16_EXPORT = "-v2"


def export_path(model: Any, precision: str, opset: int) -> Path:
    """The cache file of (model, precision, opset): ``{model}-{precision}-opset{N}-{config hash}.onnx`` (fp16:
    ``...-v2.onnx``, the consistent-fp16 rewrite)."""
    version = _FP16_EXPORT if precision == "fp16" else ""
    return cache_dir() / f"{model.spec.name}-{precision}-opset{opset}-{model.config_hash()}{version}.onnx"


def export_onnx(model: Any, inputs: tuple[Any, ...], precision: str, opset: int) -> Path:
    """The cached ONNX file for (model, precision, opset), exporting it first when absent.

    Uses the TorchScript-based exporter (``dynamo=False``, fast) and falls back to the dynamo exporter.
    A failed export raises RunFailure with the exporter's error in one line.
    """
    import torch

    target = export_path(model, precision, opset)
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    names = model.input_names
    example = tuple(t[:1] for t in inputs)
    axes = {n: ({0: "batch"} if model.kind == "image" else {0: "batch", 1: "sequence"}) for n in names}
    axes["output"] = {0: "batch"} if model.kind == "image" else {0: "batch", 1: "sequence"}
    tmpdir = Path(tempfile.mkdtemp(prefix=".export-", dir=target.parent))
    tmp = tmpdir / target.name
    try:
        errors: list[str] = []
        for dynamo in (False, True):
            try:
                with warnings.catch_warnings(), torch.no_grad():
                    warnings.simplefilter("ignore")
                    kwargs: dict[str, Any] = {
                        "input_names": names,
                        "output_names": ["output"],
                        "opset_version": opset,
                        "dynamo": dynamo,
                    }
                    if dynamo:
                        kwargs["dynamic_shapes"] = tuple(
                            {k: torch.export.Dim.AUTO for k in axes[n]} for n in names
                        )
                        kwargs["external_data"] = False
                    else:
                        kwargs["dynamic_axes"] = axes
                    torch.onnx.export(model.module, example, str(tmp), **kwargs)
                break
            except Exception as exc:  # the exporter's own error, reported in one line
                errors.append(
                    f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
                )
        else:
            raise RunFailure(
                f"ONNX export of {model.spec.name} ({precision}, opset {opset}) failed: {errors[0]}"
            )
        if precision == "fp16":
            _consistent_fp16(tmp)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    return target


def _consistent_fp16(path: Path) -> None:
    """Rewrite the fp16 export at ``path`` so that every float tensor is fp16, with ONNX Runtime's own
    converter (``onnxruntime.transformers.float16.convert_float_to_float16``, which keeps the ops it knows
    need fp32 behind casts). The TorchScript exporter writes a half-precision BERT's attention in fp32 (casts
    to float and fp32 weights after ``scaled_dot_product_attention``), so the residual add fed a float tensor
    to an fp16 LayerNormalization, and ONNX Runtime refused the model on every device ("Type parameter (T) of
    Optype (LayerNormalization) bound to different types"; firsthour20)."""
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    onnx.save(convert_float_to_float16(onnx.load(str(path)), keep_io_types=False), str(path))


def _np_dtype(tensor: Any) -> Any:
    import numpy as np
    import torch

    return {
        torch.int64: np.int64,
        torch.float32: np.float32,
        torch.float16: np.float16,
        torch.int32: np.int32,
    }[tensor.dtype]


#: Runs a graph-enabled ORT session makes in ``prepare``: ORT's CUDA provider makes
#: ``min_num_runs_before_cuda_graph_capture_`` regular runs (2 since microsoft/onnxruntime#15005, 1 before; they
#: allocate the arena memory a capture may not allocate), captures the graph in the next run and replays it from
#: then on (onnxruntime/core/providers/cuda/cuda_execution_provider.h/.cc, OnRunStart/OnRunEnd). Recent versions
#: make them all inside the first call: InferenceSession::Run calls itself until the graph is captured ("As N+1
#: inference runs ... are needed before replaying the captured graph, here run N inference runs recursively"),
#: so the other calls replay; without that recursion the third call captures. Made here, the capture is done
#: before the warm-up: with ``--warmup 2`` it had landed in the first timed iteration, and inside nsys's capture
#: range.
ORT_GRAPH_CAPTURE_RUNS = 3

#: cuDNN convolution algorithm choice for ORT, matching torch's ``cudnn.benchmark = False`` (cuDNN's
#: heuristics, no timing of candidates): ORT's own default is EXHAUSTIVE (time every algorithm on first use),
#: which would compare a tuned ORT with an untuned torch on convolutional models.
ORT_CONV_ALGO_SEARCH = "HEURISTIC"


def cuda_provider_options(device_id: int, cuda_graph: bool, tf32: bool) -> dict[str, str]:
    """CUDA execution provider options: the device, TF32 as torch has it (``use_tf32``, ORT's default is on;
    accepted from onnxruntime 1.18 on), convolution algorithms chosen as torch chooses them
    (:data:`ORT_CONV_ALGO_SEARCH`) and ORT's CUDA graph capture (``enable_cuda_graph``) for
    ``onnx-cuda-graphs``."""
    opts = {
        "device_id": str(device_id),
        "use_tf32": "1" if tf32 else "0",
        "cudnn_conv_algo_search": ORT_CONV_ALGO_SEARCH,
    }
    if cuda_graph:
        opts["enable_cuda_graph"] = "1"
    return opts


def preload_cuda_libraries(ort: Any) -> str | None:
    """``onnxruntime.preload_dlls()`` where the installed ORT has it (1.21+): load the CUDA/cuDNN libraries
    that onnxruntime-gpu needs (from torch's or the nvidia pip packages) before the provider is created.
    Returns a one-line note when it failed (the session check below decides), else None."""
    preload = getattr(ort, "preload_dlls", None)
    if preload is None:
        return None
    try:
        preload()
    except Exception as exc:
        return f"onnxruntime.preload_dlls() failed: {type(exc).__name__}: {str(exc).strip()[:200]}"
    return None


def _pkg_version(name: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def cuda_provider_problem(
    ort: Any, providers: list[str], note: str | None = None, *, session: bool = True
) -> str:
    """Why ORT has no CUDA provider, and what to install (one line). ``providers``: the session's providers
    (``session=True``, ORT fell back), or the build's available providers (``session=False``, checked before
    any session: the CPU build of 1.30 lists AzureExecutionProvider first, which no session ran on)."""
    cpu, gpu = _pkg_version("onnxruntime"), _pkg_version("onnxruntime-gpu")
    if session:
        got = providers[0] if providers else "no provider"
        head = f"onnxruntime created the session on {got}, not CUDAExecutionProvider"
    else:
        version = getattr(ort, "__version__", None) or cpu or gpu or "?"
        head = (
            f"onnxruntime {version} has no CUDAExecutionProvider "
            f"(its providers: {', '.join(providers) or 'none'})"
        )
    if cpu and gpu:
        fix = (
            f"both onnxruntime {cpu} and onnxruntime-gpu {gpu} are installed and the CPU build wins; run "
            "'pip uninstall -y onnxruntime onnxruntime-gpu && pip install onnxruntime-gpu'"
        )
    elif not gpu:
        fix = "this is the CPU build of onnxruntime; install onnxruntime-gpu (pip install 'tracekit[gpu]')"
    else:
        try:
            import torch

            cuda = torch.version.cuda
            cudnn = torch.backends.cudnn.version()
        except Exception:
            cuda = cudnn = None
        fix = (
            f"the CUDA provider library of onnxruntime-gpu {gpu} did not load: its CUDA and cuDNN major "
            f"versions must match the installed ones (torch uses CUDA {cuda}, cuDNN {cudnn}); install the "
            "onnxruntime-gpu build for them (see onnxruntime.ai CUDA EP requirements)"
        )
    return f"{head}: {fix}" + (f" ({note})" if note else "")


#: ONNX Runtime's own words when creating a provider failed and its Python wrapper fell back to the CPU
#: (printed to stdout, not raised: "EP Error <what> when using [...]", or "EP Error: <what> using [...]").
_EP_ERROR = re.compile(r"EP Error:? (?!\*)(?P<what>.*?)\s+(?:when )?using \[", re.S)


#: ORT refusing graph capture for a model, in the words of older ("... cannot use the CUDA Graph feature as
#: requested ...") and recent versions ("... cannot use the graph capture feature as requested ...").
_GRAPH_REFUSAL = re.compile(r"cannot use the (?:CUDA Graph|graph capture) feature")
#: How pybind writes an ORT status into an exception's text ("[ONNXRuntimeError] : 1 : FAIL : ", Status::ToString).
_ORT_STATUS_PREFIX = re.compile(r"^\[ONNXRuntimeError\] : \d+ : [A-Z_]+ : ")


def ep_error(printed: str) -> str | None:
    """The provider error ORT printed while falling back (first line, at most 300 characters), else None."""
    match = _EP_ERROR.search(printed)
    if not match:
        return None
    first = match.group("what").strip().splitlines()
    return first[0][:300] if first else None


def create_session(ort: Any, model: Any, **kwargs: Any) -> tuple[Any, str | None]:
    """``ort.InferenceSession(model, **kwargs)`` with what ORT prints captured: (session, its "EP Error" text
    when it fell back from a provider that failed to initialize, else None). ORT's wrapper reports such a
    failure (e.g. an option the installed version does not accept) only by printing it and retrying on the
    CPU; without its words the fallback looks like a broken install."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        session = ort.InferenceSession(model, **kwargs)
    printed = buffer.getvalue()
    error = ep_error(printed)
    if printed and not error:
        sys.stdout.write(printed)  # anything else ORT printed is passed on unchanged
    return session, error


#: ORT's count of the copy nodes it inserted between host and device for the CUDA provider: nodes placed off it
#: (a CPU kernel, a shape subgraph whose result goes back to the GPU) run on the CPU with a copy each way
#: (onnxruntime/core/optimizer/transformer_memcpy.cc: LOGS(logger, WARNING) << copy_node_counter << " Memcpy
#: nodes are added to the graph " << graph.Name() << " for " << provider << ...; logged for the CUDA EP only,
#: once per graph and subgraph). ORT says it nowhere else.
_MEMCPY_NODES = re.compile(r"\b(\d+) Memcpy nodes are added to the graph \S* for CUDAExecutionProvider")
#: A log line of ORT's default sink below error level ("<date> <time> [W:onnxruntime:<logid>, <file>:<line> ...").
_ORT_LOG_LINE = re.compile(r"^\S+ \S+ \[[VIW]:onnxruntime:")


@contextlib.contextmanager
def stderr_captured(into: list[str]) -> Iterator[None]:
    """File descriptor 2 (where ORT's C++ log sink writes) redirected to a temporary file for the block;
    its text is appended to ``into`` when the block ends, raising or not. Without a usable fd 2 the block runs
    uncaptured."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            into.append(tmp.read().decode(errors="replace"))


def split_ort_log(text: str) -> tuple[int, str]:
    """(the Memcpy nodes ORT says it added for the CUDA provider, summed over its graphs; ``text`` less ORT's
    own log lines below error level, which is passed on)."""
    count = sum(int(m.group(1)) for m in _MEMCPY_NODES.finditer(text))
    rest = "".join(line for line in text.splitlines(keepends=True) if not _ORT_LOG_LINE.match(line))
    return count, rest


def require_cuda_session(ort: Any, session: Any, note: str | None = None, error: str | None = None) -> None:
    """TracekitError (exit 2) unless ``session`` really runs on the CUDA provider: ``get_available_providers``
    lists compiled-in providers, not loadable ones, and ORT silently falls back to the CPU. ``error``: ORT's own
    "EP Error" text (:func:`create_session`), quoted as the reason when there is one."""
    providers = list(session.get_providers())
    if not providers or providers[0] != "CUDAExecutionProvider":
        if error:
            version = getattr(ort, "__version__", "?")
            raise TracekitError(
                f"onnxruntime {version} could not create its CUDA provider and fell back to the CPU; "
                f"its own words: EP Error {error}"
            )
        raise TracekitError(cuda_provider_problem(ort, providers, note))


class OnnxRuntime(Runtime):
    name = "onnx"
    cuda_graph = False

    def prepare(self, ctx: RunContext) -> None:
        import onnxruntime as ort

        super().prepare(ctx)
        self.on_cuda = ctx.device.startswith("cuda")
        note = preload_cuda_libraries(ort) if self.on_cuda else None
        path = export_onnx(ctx.model, ctx.inputs, ctx.precision, ctx.opset)
        opts = ort.SessionOptions()
        # Errors only on the CPU; on CUDA warnings too, while the session is made, for ORT's Memcpy count
        # (split_ort_log), which it logs as a warning and nowhere else.
        opts.log_severity_level = 2 if self.on_cuda else 3
        if ctx.ort_profile_prefix:
            opts.enable_profiling = True
            opts.profile_file_prefix = ctx.ort_profile_prefix
        if self.on_cuda:
            if "CUDAExecutionProvider" not in ort.get_available_providers():
                available = list(ort.get_available_providers())
                raise TracekitError(cuda_provider_problem(ort, available, note, session=False))
            self.device_id = ctx.cuda_index or 0
            self.provider_options = cuda_provider_options(self.device_id, self.cuda_graph, ctx.tf32)
            providers: list[Any] = [("CUDAExecutionProvider", self.provider_options)]
        else:
            self.provider_options = {}
            providers = ["CPUExecutionProvider"]
        self.model_path = path
        logged: list[str] = []
        try:
            with stderr_captured(logged) if self.on_cuda else contextlib.nullcontext():
                self.session, error = create_session(ort, str(path), sess_options=opts, providers=providers)
        except Exception as exc:
            raise RunFailure(self._session_failure(path.name, exc)) from exc
        finally:
            self.memcpy_nodes, rest = split_ort_log("".join(logged)) if self.on_cuda else (None, "")
            if rest:
                sys.stderr.write(rest)
        if self.on_cuda:
            require_cuda_session(ort, self.session, note, error)
        names = [i.name for i in self.session.get_inputs()]
        if self.on_cuda:
            self._bind(names)
        else:
            self.feeds = {n: t.detach().cpu().numpy() for n, t in zip(names, ctx.inputs, strict=True)}

    def _session_failure(self, file_name: str, exc: Exception) -> str:
        """One line for an ``InferenceSession(...)`` that raised. ORT refuses ``enable_cuda_graph`` in
        ``InferenceSession::Initialize`` for a model with control flow nodes, nodes on another provider or
        Memcpy nodes ("This session cannot use the CUDA Graph feature" in older versions, "the graph capture
        feature" in recent ones); pybind raises that as ``Fail``, not a RuntimeError, so the wrapper's CPU
        fallback lets it through. The model loaded: what ORT refused is graph capture, which runtime 'onnx'
        does without."""
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        if self.cuda_graph and _GRAPH_REFUSAL.search(first):
            words = _ORT_STATUS_PREFIX.sub("", first)
            return (
                f"onnxruntime refused CUDA graph capture for {file_name} (runtime '{self.name}'): {words}; "
                "runtime 'onnx' runs the model on the CUDA provider without graphs"
            )
        return f"onnxruntime could not load {file_name}: {first}"

    def _bind(self, names: list[str]) -> None:
        """IO binding on the GPU: inputs bound to the torch tensors' device memory, output to a device buffer."""
        import torch

        self.binding = self.session.io_binding()
        self.inputs = tuple(t.contiguous() for t in self.ctx.inputs)
        for name, tensor in zip(names, self.inputs, strict=True):
            self.binding.bind_input(
                name, "cuda", self.device_id, _np_dtype(tensor), tuple(tensor.shape), tensor.data_ptr()
            )
        out_name = self.session.get_outputs()[0].name
        # Run once with an ORT-allocated output to learn the output shape, then bind a fixed torch buffer
        # (CUDA graphs replay into fixed addresses).
        probe = self.session.io_binding()
        for name, tensor in zip(names, self.inputs, strict=True):
            probe.bind_input(
                name, "cuda", self.device_id, _np_dtype(tensor), tuple(tensor.shape), tensor.data_ptr()
            )
        probe.bind_output(out_name, "cuda", self.device_id)
        if not self.cuda_graph:
            self.session.run_with_iobinding(probe)
            shape = probe.get_outputs()[0].shape()
            dtype = {
                "tensor(float)": torch.float32,
                "tensor(float16)": torch.float16,
                "tensor(int64)": torch.int64,
            }[self.session.get_outputs()[0].type]
        else:
            # A graph-enabled session must not run before its buffers are final: take the shape from a
            # plain CUDA session of the same model.
            import onnxruntime as ort

            plain_options = cuda_provider_options(self.device_id, False, self.ctx.tf32)
            plain, error = create_session(
                ort, str(self.model_path), providers=[("CUDAExecutionProvider", plain_options)]
            )
            require_cuda_session(ort, plain, error=error)
            pb = plain.io_binding()
            for name, tensor in zip(names, self.inputs, strict=True):
                pb.bind_input(
                    name, "cuda", self.device_id, _np_dtype(tensor), tuple(tensor.shape), tensor.data_ptr()
                )
            pb.bind_output(out_name, "cuda", self.device_id)
            plain.run_with_iobinding(pb)
            shape = pb.get_outputs()[0].shape()
            dtype = {
                "tensor(float)": torch.float32,
                "tensor(float16)": torch.float16,
                "tensor(int64)": torch.int64,
            }[plain.get_outputs()[0].type]
            # The binding keeps its session (IOBinding._session) and its output lives in that session's arena:
            # both go now, not after the capture runs below, which would otherwise run beside a second copy of
            # the weights and a second CUDA arena.
            del pb, plain
        self.output = torch.empty(tuple(shape), dtype=dtype, device=f"cuda:{self.device_id}")
        self.binding.bind_output(
            out_name, "cuda", self.device_id, _np_dtype(self.output), tuple(shape), self.output.data_ptr()
        )
        if self.cuda_graph:  # the regular runs and the capture run, now: none of them is warm-up or timed
            for k in range(1, ORT_GRAPH_CAPTURE_RUNS + 1):
                try:
                    self.session.run_with_iobinding(self.binding)
                except Exception as exc:  # pybind: RuntimeError("Error in execution: <ORT status>")
                    text = str(exc).strip()
                    raise RunFailure(
                        f"onnxruntime failed in run {k} of the {ORT_GRAPH_CAPTURE_RUNS} that capture its CUDA "
                        f"graph ({Path(str(self.model_path)).name}, prepare, before warm-up): "
                        f"{text.splitlines()[0] if text else type(exc).__name__}"
                    ) from exc
            torch.cuda.synchronize(f"cuda:{self.device_id}")

    def run(self) -> Any:
        if self.on_cuda:
            self.session.run_with_iobinding(self.binding)
            return self.output
        return self.session.run(None, self.feeds)

    def describe(self) -> dict[str, Any]:
        return {
            "runtime": self.name,
            "providers": self.session.get_providers(),
            "provider_used": self.session.get_providers()[0],
            "provider_options": {
                k: v
                for k, v in self.provider_options.items()
                if k in ("device_id", "use_tf32", "enable_cuda_graph", "cudnn_conv_algo_search")
            },
            "io_binding": self.on_cuda,
            # host<->device copy nodes ORT inserted (nodes it placed off the CUDA provider); None on the CPU
            "memcpy_nodes": self.memcpy_nodes,
            "cuda_graph": self.cuda_graph,
            "cuda_graphs_used": self.cuda_graph and self.on_cuda,
            "capture_runs_in_prepare": ORT_GRAPH_CAPTURE_RUNS if self.cuda_graph and self.on_cuda else 0,
            "model_file": Path(str(self.model_path)).name,
        }

    def end_profiling(self) -> str | None:
        if self.ctx is not None and self.ctx.ort_profile_prefix:
            return self.session.end_profiling()
        return None

    def close(self) -> None:
        """Release the session: the IO binding (whose IOBinding holds the session) and the bound output buffer
        first, then the session itself, so its CUDA arena and captured graph are freed now."""
        self.binding = None
        self.output = None
        self.session = None


class OnnxCudaGraphsRuntime(OnnxRuntime):
    name = "onnx-cuda-graphs"
    needs_cuda = True
    captures_graphs = True
    cuda_graph = True
