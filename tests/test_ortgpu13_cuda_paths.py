"""ONNX Runtime's CUDA paths (``--runtime onnx --device cuda:N`` and ``onnx-cuda-graphs``), pinned without a GPU.

No GPU build of onnxruntime has ever run them, so fakes of ``onnxruntime`` and of the few ``torch`` calls the
ORT runtime makes record every call, and the tests pin the call sequence against what ONNX Runtime's own
source says (cited at each assertion; microsoft/onnxruntime as stored in the reference index, and the
installed CPU wheel's ``onnxruntime/capi/onnxruntime_inference_collection.py`` 1.32.0):

- ``CUDAExecutionProviderInfo::FromProviderOptions`` (cuda_execution_provider_info.cc): option names
  ``device_id``, ``use_tf32``, ``cudnn_conv_algo_search`` (EXHAUSTIVE | HEURISTIC | DEFAULT),
  ``enable_cuda_graph`` (a provider option of the CUDA EP, not a session config entry); booleans parse as
  "0"/"1"/"true"/"false" (core/common/parse_string.h); an unknown name fails with 'Unknown provider option'
  (provider_options_utils.h), which the Python wrapper prints and answers by falling back to the CPU.
- ``InferenceSession::Initialize`` (inference_session.cc): with ``enable_cuda_graph`` the session is refused
  ("This session cannot use the CUDA Graph feature as requested by the user ...") when the model has control
  flow nodes, or nodes on another provider, or Memcpy nodes; CPU shape nodes without Memcpy are allowed.
- ``InferenceSession::Run``: once captured, a Run only replays (``ReplayGraph``); before, Run calls itself
  again until the graph is captured ("As N+1 inference runs (N for memory allocation and 1 for graph
  capturing) ... run N inference runs recursively"), ``min_num_runs_before_cuda_graph_capture_`` regular runs
  first (1 in 1.16, 2 later: cuda_execution_provider.h). ``OnRunEnd(sync_stream)`` ends with
  ``cudaStreamSynchronize`` unless the run option ``disable_synchronize_execution_providers`` is "1".
- pybind: ``Fail``, ``InvalidArgument``... derive from ``Exception``, not ``RuntimeError``
  (``pybind11::register_exception<Fail>(m, "Fail")``, onnxruntime_pybind_exceptions.cc; checked on the
  installed wheel: ``Fail.__mro__`` is (Fail, Exception, BaseException, object)), and the wrapper falls back
  to the CPU only on ``(ValueError, RuntimeError)``: a session refused by ``Initialize`` raises ``Fail``
  straight out of ``InferenceSession(...)``, with no fallback and nothing printed.
"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tracekit.errors import RunFailure, TracekitError

# ORT's own words (inference_session.cc, InferenceSession::Initialize), as pybind formats a FAIL status
# ("[ONNXRuntimeError] : 1 : FAIL : " + message, Status::ToString).
GRAPH_REFUSAL = (
    "[ONNXRuntimeError] : 1 : FAIL : This session cannot use the CUDA Graph feature as requested by the user "
    " as all compute graph nodes have not been partitioned to the CUDA EP."
)


class FakeFail(Exception):
    """onnxruntime.capi.onnxruntime_pybind11_state.Fail: an Exception, not a RuntimeError."""


# -- a fake torch: dtypes, tensors with device pointers, torch.empty and torch.cuda.synchronize ------------
class _Dtype:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class FakeTensor:
    _next_ptr = 0x7F0000000000

    def __init__(self, shape: tuple[int, ...], dtype: _Dtype, device: str, log: list[Any]) -> None:
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = device
        self._ptr = FakeTensor._next_ptr
        FakeTensor._next_ptr += 0x100000
        self._log = log

    def contiguous(self) -> FakeTensor:
        return self

    def data_ptr(self) -> int:
        return self._ptr


def _fake_torch(monkeypatch: pytest.MonkeyPatch, log: list[Any]) -> types.ModuleType:
    torch = types.ModuleType("torch")
    for name in ("float32", "float16", "int64", "int32", "bfloat16"):
        setattr(torch, name, _Dtype(name))

    def empty(shape: tuple[int, ...], dtype: Any = None, device: Any = None) -> FakeTensor:
        tensor = FakeTensor(tuple(shape), dtype, str(device), log)
        log.append(("torch.empty", tuple(shape), dtype.name, str(device), tensor.data_ptr()))
        return tensor

    torch.empty = empty
    torch.cuda = types.SimpleNamespace(
        synchronize=lambda device=None: log.append(("torch.cuda.synchronize", str(device)))
    )
    monkeypatch.setitem(sys.modules, "torch", torch)
    return torch


# -- a fake onnxruntime that records the calls ------------------------------------------------------------
class FakeNodeArg:
    def __init__(self, name: str, type_: str, shape: list[Any]) -> None:
        self.name, self.type, self.shape = name, type_, shape


class FakeOrtValue:
    def __init__(self, shape: tuple[int, ...]) -> None:
        self._shape = list(shape)

    def shape(self) -> list[int]:
        return self._shape


class FakeIOBinding:
    def __init__(self, session: FakeSession) -> None:
        self.session = session
        self.id = len(session.log_bindings)
        session.log_bindings.append(self)
        self.inputs: dict[str, tuple[Any, ...]] = {}
        self.outputs: dict[str, tuple[Any, ...]] = {}

    def bind_input(
        self, name: str, device_type: str, device_id: int, element_type: Any, shape: Any, ptr: int
    ):
        self.session.log.append(
            (
                "bind_input",
                self.session.sid,
                self.id,
                name,
                device_type,
                device_id,
                element_type,
                tuple(shape),
                ptr,
            )
        )
        self.inputs[name] = (device_type, device_id, element_type, tuple(shape), ptr)

    def bind_output(
        self,
        name: str,
        device_type: str = "cpu",
        device_id: int = 0,
        element_type: Any = None,
        shape: Any = None,
        buffer_ptr: int | None = None,
    ) -> None:
        # ORT: element_type and shape are required with a buffer (onnxruntime_inference_collection.py)
        if buffer_ptr is not None and (element_type is None or shape is None):
            raise ValueError(
                "`element_type` and `shape` are to be provided if pre-allocated memory is provided"
            )
        self.session.log.append(
            (
                "bind_output",
                self.session.sid,
                self.id,
                name,
                device_type,
                device_id,
                element_type,
                None if shape is None else tuple(shape),
                buffer_ptr,
            )
        )
        self.outputs[name] = (device_type, device_id, element_type, shape, buffer_ptr)

    def get_outputs(self) -> list[FakeOrtValue]:
        return [FakeOrtValue(self.session.fake.output_shape)]


class FakeSession:
    def __init__(self, fake: FakeOrt, path: str, sess_options: Any = None, providers: Any = None) -> None:
        self.fake = fake
        self.log = fake.log
        self.sid = len(fake.sessions)
        fake.sessions.append(self)
        self.log_bindings: list[FakeIOBinding] = []
        self.providers_requested = providers
        self.sess_options = sess_options
        self.runs = 0
        self.log.append(("InferenceSession", self.sid, path, providers))
        level = getattr(sess_options, "log_severity_level", 2)  # ORT's default session severity: WARNING
        for line in fake.stderr_lines:
            if level <= 2 or not line.startswith("20"):  # ORT's own log lines obey the severity
                os.write(2, (line + "\n").encode())
        opts = dict(providers[0][1]) if providers and isinstance(providers[0], tuple) else {}
        if opts.get("enable_cuda_graph") == "1" and fake.graph_refusal:
            # InferenceSession::Initialize refuses, pybind raises Fail (not a RuntimeError): no fallback
            raise FakeFail(GRAPH_REFUSAL)

    def get_providers(self) -> list[str]:
        return list(self.fake.session_providers)

    def get_inputs(self) -> list[FakeNodeArg]:
        return [FakeNodeArg(n, "tensor(int64)", ["batch", "sequence"]) for n in self.fake.input_names]

    def get_outputs(self) -> list[FakeNodeArg]:
        return [FakeNodeArg("output", self.fake.output_type, ["batch", "sequence", 32])]

    def io_binding(self) -> FakeIOBinding:
        return FakeIOBinding(self)

    def run_with_iobinding(self, binding: FakeIOBinding, run_options: Any = None) -> None:
        # ORT 1.32: "IOBinding must be used with the session that created it."
        assert binding.session is self, "IOBinding used with another session"
        self.runs += 1
        self.log.append(
            ("run_with_iobinding", self.sid, binding.id, dict(binding.inputs), dict(binding.outputs))
        )

    def end_profiling(self) -> str:
        self.log.append(("end_profiling", self.sid))
        return f"{self.sess_options.profile_file_prefix}_2026-11-28_10-00-00.json"


class FakeOrt(types.ModuleType):
    def __init__(self) -> None:
        super().__init__("onnxruntime")
        self.__version__ = "1.22.0"
        self.log: list[Any] = []
        self.sessions: list[FakeSession] = []
        self.session_providers = ["CUDAExecutionProvider", "CPUExecutionProvider"]
        self.input_names = ["input_ids", "attention_mask"]
        self.output_shape = (2, 8, 32)
        self.output_type = "tensor(float)"
        self.graph_refusal = False
        self.stderr_lines: list[str] = []
        fake = self

        class SessionOptions:
            pass

        self.SessionOptions = SessionOptions
        self.InferenceSession = lambda path, sess_options=None, providers=None: FakeSession(
            fake, path, sess_options, providers
        )

    def get_available_providers(self) -> list[str]:
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> tuple[FakeOrt, list[Any]]:
    torch_log: list[Any] = []
    _fake_torch(monkeypatch, torch_log)
    ort = FakeOrt()
    monkeypatch.setitem(sys.modules, "onnxruntime", ort)
    from tracekit.collectors.runtimes import onnx as onnx_mod

    monkeypatch.setattr(onnx_mod, "export_onnx", lambda *a, **k: Path("/nonexistent/synthetic-tiny.onnx"))
    return ort, torch_log


def _ctx(device: str = "cuda:0", profile: str | None = None, shape: tuple[int, int] = (2, 8)) -> Any:
    from tracekit.collectors.runtimes.base import RunContext

    torch = sys.modules["torch"]
    inputs = (FakeTensor(shape, torch.int64, device, []), FakeTensor(shape, torch.int64, device, []))
    model = types.SimpleNamespace(input_names=["input_ids", "attention_mask"], kind="text")
    return RunContext(model=model, inputs=inputs, device=device, precision="fp32", ort_profile_prefix=profile)


def _events(log: list[Any], *names: str) -> list[Any]:
    return [e for e in log if e[0] in names]


# -- 1. provider options ----------------------------------------------------------------------------------
def test_cuda_session_gets_documented_option_names_and_string_values(fakes: Any) -> None:
    from tracekit.collectors.runtimes.onnx import OnnxCudaGraphsRuntime, OnnxRuntime

    ort, _ = fakes
    OnnxRuntime().prepare(_ctx("cuda:1"))
    OnnxCudaGraphsRuntime().prepare(_ctx("cuda:0"))
    requested = [s.providers_requested for s in ort.sessions]
    # every value a str: check_and_normalize_provider_args str()s them anyway, and the C++ parsers read
    # strings ("1"/"0" for bools, parse_string.h; enum names for cudnn_conv_algo_search)
    for providers in requested:
        assert all(isinstance(v, str) for _, opts in providers for v in opts.values())
    assert requested[0] == [
        ("CUDAExecutionProvider", {"device_id": "1", "use_tf32": "0", "cudnn_conv_algo_search": "HEURISTIC"})
    ]
    graph_opts = requested[1][0][1]
    assert requested[1][0][0] == "CUDAExecutionProvider" and graph_opts["enable_cuda_graph"] == "1"
    assert graph_opts["device_id"] == "0"
    # the shape probe of the graph runtime is a plain CUDA session: no enable_cuda_graph in it
    assert "enable_cuda_graph" not in requested[2][0][1]
    # only the CUDA provider is asked for (ORT appends the CPU provider itself); no TensorRT
    assert all(len(p) == 1 for p in requested)


# -- 2. IO binding on the device, fixed buffers, the capture runs in prepare -----------------------------
def test_plain_cuda_session_binds_device_buffers_once_and_runs_once_per_iteration(fakes: Any) -> None:
    from tracekit.collectors.runtimes.onnx import OnnxRuntime

    ort, torch_log = fakes
    rt = OnnxRuntime()
    ctx = _ctx("cuda:0")
    rt.prepare(ctx)
    session = ort.sessions[0]
    main = session.log_bindings[0]
    # inputs bound to the torch tensors' device memory, int64 ids as np.int64, shape (batch, seq)
    assert main.inputs == {
        "input_ids": ("cuda", 0, np.int64, (2, 8), ctx.inputs[0].data_ptr()),
        "attention_mask": ("cuda", 0, np.int64, (2, 8), ctx.inputs[1].data_ptr()),
    }
    (empty,) = _events(torch_log, "torch.empty")
    assert empty[1:4] == ((2, 8, 32), "float32", "cuda:0")
    assert main.outputs == {"output": ("cuda", 0, np.float32, (2, 8, 32), empty[4])}
    runs_in_prepare = session.runs
    assert runs_in_prepare == 1  # the probe that learns the output shape (ORT-allocated output)
    before = len(ort.log)
    for _ in range(3):
        out = rt.run()
        assert out.data_ptr() == empty[4]
    after = ort.log[before:]
    # one Run per iteration, on the fixed binding, nothing rebound between iterations
    assert [e[0] for e in after] == ["run_with_iobinding"] * 3
    assert {e[2] for e in after} == {main.id}


def test_graph_session_binds_fixed_buffers_before_its_first_run_and_captures_in_prepare(fakes: Any) -> None:
    from tracekit.collectors.runtimes.onnx import ORT_GRAPH_CAPTURE_RUNS, OnnxCudaGraphsRuntime

    ort, torch_log = fakes
    rt = OnnxCudaGraphsRuntime()
    ctx = _ctx("cuda:2")
    rt.prepare(ctx)
    graph, probe = ort.sessions[0], ort.sessions[1]
    main = graph.log_bindings[0]
    graph_runs = [e for e in ort.log if e[0] == "run_with_iobinding" and e[1] == graph.sid]
    # ORT captures within the first user Run (Run recurses until captured) or, without the recursion, on
    # run min_num_runs_before_cuda_graph_capture_ + 1 <= 3: ORT_GRAPH_CAPTURE_RUNS covers both
    assert len(graph_runs) == ORT_GRAPH_CAPTURE_RUNS == 3
    # every graph run, the capture included, saw the same fixed device buffers: a replay reads and writes
    # the addresses recorded at capture
    (empty,) = _events(torch_log, "torch.empty")
    for run in graph_runs:
        assert run[2] == main.id
        assert run[3] == {
            "input_ids": ("cuda", 2, np.int64, (2, 8), ctx.inputs[0].data_ptr()),
            "attention_mask": ("cuda", 2, np.int64, (2, 8), ctx.inputs[1].data_ptr()),
        }
        assert run[4] == {"output": ("cuda", 2, np.float32, (2, 8, 32), empty[4])}
    # the graph session's first run came after its output was bound (no ORT-allocated output in a capture)
    first_run = ort.log.index(graph_runs[0])
    out_bind = [i for i, e in enumerate(ort.log) if e[0] == "bind_output" and e[1] == graph.sid and e[8]]
    assert out_bind and out_bind[-1] < first_run
    # the shape came from a plain session (its own binding, its own run), never from the graph session
    assert probe.runs == 1 and "enable_cuda_graph" not in probe.providers_requested[0][1]
    # the device is synchronized after the capture runs, before warm-up and timing
    assert torch_log[-1] == ("torch.cuda.synchronize", "cuda:2")
    before = len(ort.log)
    rt.run()
    assert [e[:3] for e in ort.log[before:]] == [("run_with_iobinding", graph.sid, main.id)]
    assert rt.describe()["capture_runs_in_prepare"] == 3


def test_sync_synchronizes_the_run_device(fakes: Any) -> None:
    """The timing loop reads the clock after ``runtime.sync()``: torch.cuda.synchronize(device) is
    cudaDeviceSynchronize on that device, which waits for every stream there, ORT's own stream (created
    cudaStreamNonBlocking for graphs, cuda_execution_provider.cc) included."""
    from tracekit.collectors.runtimes.onnx import OnnxRuntime

    _, torch_log = fakes
    rt = OnnxRuntime()
    rt.prepare(_ctx("cuda:3"))
    rt.run()
    rt.sync()
    assert torch_log[-1] == ("torch.cuda.synchronize", "cuda:3")


def test_a_failure_in_the_capture_runs_is_named_as_such(fakes: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect (ortgpu13): a Run that fails raises RuntimeError("Error in execution: ...") (pybind's
    run_with_iobinding throws std::runtime_error); one in the runs that capture the graph, in prepare, left
    the worker as 'RuntimeError: Error in execution: ...', which does not say that the capture failed, nor
    in which of the runs: it reads like a failed timed iteration."""
    from tracekit.collectors.runtimes.onnx import OnnxCudaGraphsRuntime

    ort, _ = fakes
    calls = {"n": 0}
    real_run = FakeSession.run_with_iobinding

    def failing(self: FakeSession, binding: FakeIOBinding, run_options: Any = None) -> None:
        if self.sid == 0:  # the graph session
            calls["n"] += 1
            if calls["n"] == 1:
                raise RuntimeError(
                    "Error in execution: CUDA failure 900: operation not permitted when stream is capturing ; "
                    "GPU=0 ; hostname=synthetic ; expr=cudaStreamSynchronize(stream);\nmore"
                )
        real_run(self, binding, run_options)

    monkeypatch.setattr(FakeSession, "run_with_iobinding", failing)
    with pytest.raises(RunFailure) as info:
        OnnxCudaGraphsRuntime().prepare(_ctx("cuda:0"))
    assert info.value.message == (
        "onnxruntime failed in run 1 of the 3 that capture its CUDA graph (synthetic-tiny.onnx, prepare, before "
        "warm-up): Error in execution: CUDA failure 900: operation not permitted when stream is capturing ; "
        "GPU=0 ; hostname=synthetic ; expr=cudaStreamSynchronize(stream);"
    )


#: ORT's warning when it places nodes off the CUDA provider and copies between host and device
#: (onnxruntime/core/optimizer/transformer_memcpy.cc: LOGS(logger, WARNING) << copy_node_counter << " Memcpy nodes
#: are added to the graph " << graph.Name() << " for " << provider << ...; CUDA EP only), as the default sink
#: writes it to stderr.
MEMCPY_WARNING = (
    "2026-11-28 10:00:00.000000000 [W:onnxruntime:, transformer_memcpy.cc:111 ApplyImpl] 4 Memcpy nodes are "
    "added to the graph main_graph for CUDAExecutionProvider. It might have negative impact on performance "
    "(including unable to run CUDA graph). Set session_options.log_severity_level=1 to see the detail logs "
    "before this message."
)


def test_memcpy_nodes_ort_adds_on_cuda_are_counted_not_silenced(
    fakes: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    """Defect (ortgpu13): the session was made with log_severity_level 3 (errors only), which silences ORT's
    only word that it placed nodes on the CPU and inserted host<->device copies ('N Memcpy nodes are added to
    the graph ... for CUDAExecutionProvider'): an 'onnx' CUDA latency could include CPU nodes and copies,
    and nothing in run.json said so. Now the warning level is kept while the session is made, ORT's log lines
    are read off stderr, and the count is recorded (runtime_details.memcpy_nodes); other stderr lines pass."""
    from tracekit.collectors.runtimes.onnx import OnnxRuntime

    ort, _ = fakes
    ort.stderr_lines = [MEMCPY_WARNING, "a line that is not ORT's"]
    rt = OnnxRuntime()
    rt.prepare(_ctx("cuda:0"))
    assert rt.describe()["memcpy_nodes"] == 4
    err = capfd.readouterr().err
    assert "Memcpy nodes are added" not in err and "a line that is not ORT's" in err


def test_no_memcpy_warning_records_zero(fakes: Any) -> None:
    from tracekit.collectors.runtimes.onnx import OnnxRuntime

    rt = OnnxRuntime()
    rt.prepare(_ctx("cuda:0"))
    assert rt.describe()["memcpy_nodes"] == 0


# -- 4. profiling -----------------------------------------------------------------------------------------
def test_ort_profiling_options_and_end_profiling_path(fakes: Any) -> None:
    from tracekit.collectors.runtimes.onnx import OnnxRuntime

    ort, _ = fakes
    rt = OnnxRuntime()
    rt.prepare(_ctx("cuda:0", profile="/tmp/synthetic-ort13/ort"))
    opts = ort.sessions[0].sess_options
    assert opts.enable_profiling is True and opts.profile_file_prefix == "/tmp/synthetic-ort13/ort"
    # end_profiling returns the file ORT wrote (Session.end_profiling returns self._sess.end_profiling())
    assert rt.end_profiling() == "/tmp/synthetic-ort13/ort_2026-11-28_10-00-00.json"


# -- 2b. a model ORT will not capture ---------------------------------------------------------------------
def test_graph_refusal_is_named_as_a_refusal_of_cuda_graphs_not_a_failed_load(fakes: Any) -> None:
    """Defect (ortgpu13): ORT refuses ``enable_cuda_graph`` for a model with nodes on another provider, Memcpy
    nodes or control flow (InferenceSession::Initialize); pybind raises ``Fail`` (an Exception, not a
    RuntimeError), so the wrapper's CPU fallback does not catch it and it leaves ``InferenceSession(...)``.
    The line said 'onnxruntime could not load synthetic-tiny.onnx': the model had loaded; what ORT refused was
    CUDA graph capture, which runtime 'onnx' does without."""
    from tracekit.collectors.runtimes.onnx import OnnxCudaGraphsRuntime

    ort, _ = fakes
    ort.graph_refusal = True
    with pytest.raises(RunFailure) as info:
        OnnxCudaGraphsRuntime().prepare(_ctx("cuda:0"))
    assert info.value.message == (
        "onnxruntime refused CUDA graph capture for synthetic-tiny.onnx (runtime 'onnx-cuda-graphs'): "
        "This session cannot use the CUDA Graph feature as requested by the user  as all compute graph nodes "
        "have not been partitioned to the CUDA EP.; runtime 'onnx' runs the model on the CUDA provider "
        "without graphs"
    )
    assert isinstance(info.value, TracekitError) and "\n" not in info.value.message


#: The words of recent ORT versions (InferenceSession::Initialize once graph capture served the CUDA, JS, DML and
#: WebGPU providers alike), as seen in published logs: "graph capture feature", the provider named by its type.
GRAPH_REFUSAL_RECENT = (
    "[ONNXRuntimeError] : 1 : FAIL : This session cannot use the graph capture feature as requested by the user "
    "as all compute graph nodes have not been partitioned to the CUDAExecutionProvider"
)


def test_graph_refusal_in_recent_ort_words_is_named_as_a_refusal_too(
    fakes: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Defect (ortgpu13): the refusal was recognized only in the old words ('CUDA Graph feature'); recent ORT
    says 'graph capture feature', and that line still read 'could not load <file>'."""
    from tracekit.collectors.runtimes.onnx import OnnxCudaGraphsRuntime

    ort, _ = fakes
    ort.graph_refusal = True
    monkeypatch.setitem(globals(), "GRAPH_REFUSAL", GRAPH_REFUSAL_RECENT)
    with pytest.raises(RunFailure) as info:
        OnnxCudaGraphsRuntime().prepare(_ctx("cuda:0"))
    assert info.value.message == (
        "onnxruntime refused CUDA graph capture for synthetic-tiny.onnx (runtime 'onnx-cuda-graphs'): "
        "This session cannot use the graph capture feature as requested by the user as all compute graph "
        "nodes have not been partitioned to the CUDAExecutionProvider; runtime 'onnx' runs the model on the "
        "CUDA provider without graphs"
    )


# -- 5. fp16 ----------------------------------------------------------------------------------------------
def test_fp16_model_output_buffer_and_binding_are_float16(fakes: Any) -> None:
    """An fp16 export's output is ``tensor(float16)`` (NodeArg.type); ids stay int64 (np.int64), the output
    buffer is a torch.float16 tensor bound as np.float16 (IOBinding.bind_output takes a numpy type)."""
    from tracekit.collectors.runtimes.onnx import OnnxRuntime

    ort, torch_log = fakes
    ort.output_type = "tensor(float16)"
    rt = OnnxRuntime()
    ctx = _ctx("cuda:0")
    ctx.precision = "fp16"
    rt.prepare(ctx)
    (empty,) = _events(torch_log, "torch.empty")
    assert empty[1:4] == ((2, 8, 32), "float16", "cuda:0")
    main = ort.sessions[0].log_bindings[0]
    assert main.outputs["output"] == ("cuda", 0, np.float16, (2, 8, 32), empty[4])
    assert {v[2] for v in main.inputs.values()} == {np.int64}


# -- 6. close releases the session --------------------------------------------------------------------------
def test_close_releases_the_session_its_binding_holds(fakes: Any) -> None:
    """Defect (ortgpu13): close() dropped ``self.session`` but kept ``self.binding``, whose IOBinding holds the
    session (ORT 1.32's Python IOBinding keeps ``_session``; run_with_iobinding checks it), and the output
    buffer: the session, its CUDA arena and its captured graph stayed alive after close."""
    import gc
    import weakref

    from tracekit.collectors.runtimes.onnx import OnnxCudaGraphsRuntime

    ort, _ = fakes
    rt = OnnxCudaGraphsRuntime()
    rt.prepare(_ctx("cuda:0"))
    session = weakref.ref(ort.sessions[0])
    ort.sessions.clear()  # the fake's own list of sessions must not keep them alive
    rt.close()
    gc.collect()
    assert session() is None
    assert rt.binding is None and rt.output is None


# -- for others' files (were strict xfails; fixed) ---------------------------------------------------------------------
def test_zoo_text_model_holds_no_pooler_that_only_eager_runs() -> None:
    """Seen here (CPU, bert-base --layers 1): torch.profiler of one eager forward counts aten::linear 7 and
    aten::tanh 1 (6 linears per layer + the pooler's), while the cached ONNX export
    (bert-base-fp32-opset17-*.onnx) holds 8 MatMul and no Tanh node. Fix in zoo.build: construct the
    encoder-only models with ``add_pooling_layer=False`` (BertModel, RobertaModel, ViTModel accept it), so
    every runtime runs exactly the graph whose output is returned."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tracekit.collectors.zoo import ModelSpec, build

    model = build(ModelSpec(name="bert-base", layers=1))
    assert getattr(model.module.model, "pooler", None) is None


def test_stderr_capture_reads_the_installed_ort_log_sink(tmp_path: Path) -> None:
    """The real (CPU) onnxruntime writes its session log through CLogSink (std::clog, flushed per message:
    core/common/logging/sinks/clog_sink.h) to fd 2: stderr_captured reads every line of it, and every one is
    an ORT log line that split_ort_log keeps back. (What the CUDA build adds, the Memcpy warning, cannot be
    produced without it: its text is pinned above from transformer_memcpy.cc and logs of real runs.)"""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    from tracekit.collectors.runtimes.onnx import split_ort_log, stderr_captured

    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["y"])],
        "synthetic_add",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    path = tmp_path / "synthetic-add.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    opts = ort.SessionOptions()
    opts.log_severity_level = 0  # verbose: ORT logs the session's options and more while it is made
    got: list[str] = []
    with stderr_captured(got):
        ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])
    text = "".join(got)
    assert "TraceSessionOptions" in text
    assert split_ort_log(text) == (0, "")
    assert split_ort_log(MEMCPY_WARNING + "\n" + MEMCPY_WARNING.replace(" 4 ", " 3 ") + "\nE line\n") == (
        7,
        "E line\n",
    )


@pytest.mark.parametrize(("copies", "said"), [(3, True), (0, False), (None, False), (True, False)])
def test_the_worker_warns_of_ort_copy_nodes_on_cuda(copies: object, said: bool) -> None:
    """A CUDA session whose graph ORT split (Memcpy nodes inserted, counted in describe()'s memcpy_nodes) is
    said in the run's warnings, not only in run.json; none, unknown (CPU: None) or a malformed count: nothing."""
    from tracekit.collectors.worker import runtime_warnings

    warnings = runtime_warnings({"memcpy_nodes": copies})
    assert bool(warnings) is said
    if said:
        assert warnings == [
            "onnxruntime inserted 3 host<->device copy node(s) for the CUDA provider: some nodes run on the CPU, "
            "and their copies are in the latency (run.json runtime_details.memcpy_nodes)"
        ]
