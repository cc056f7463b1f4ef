"""Parameters of the simulated mechanism, and presets for the five runtimes of the study's Table 3.

Every time is an integer number of nanoseconds. The presets describe a BERT-base-like encoder (12 layers,
fp16) at sequence length 128 on an unnamed "Simulated GPU"; they are plausible orders of magnitude chosen so
that the *mechanism* reproduces the study's qualitative picture, not fitted to its numbers:

- ``pytorch`` (eager): one kernel launch per operator, each preceded by a large framework cost (Python,
  dispatcher, autograd bookkeeping): the CPU dispatch time (~10 ms) dwarfs the GPU time (~1.6 ms) at batch 1.
- ``torchscript``: fewer operators (a few elementwise ops fused) and about half the per-operator cost.
- ``cuda-graphs``: the same kernels as eager, replayed with one ``cudaGraphLaunch`` per iteration; kernels
  run back to back with a tiny inter-kernel gap; the CPU only pays a fixed per-iteration cost.
- ``onnx``: ahead-of-time fused graph (fused attention, SkipLayerNorm, BiasGelu): far fewer operators,
  low per-operator cost, slightly less kernel work per token.
- ``onnx-cuda-graphs``: the ONNX Runtime kernels replayed as one CUDA graph.

Nothing here encodes a plateau or a transition batch size: both emerge from the race between the CPU's
dispatch time (independent of batch size) and the GPU's kernel time (growing with batch × sequence length).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from tracekit.errors import TracekitError

RUNTIMES: tuple[str, ...] = ("pytorch", "torchscript", "cuda-graphs", "onnx", "onnx-cuda-graphs")

#: The sequence length the presets were written for; kernel work scales with batch × seq_len around it.
REFERENCE_SEQ_LEN = 128


@dataclass(frozen=True)
class RuntimeParams:
    """All parameters of the discrete-event model (times in integer ns unless stated).

    Per iteration: the CPU opens an NVTX range ``iteration``, spends ``iter_pre_ns`` (input handling), then
    for each of ``ops`` operators spends a framework cost (mean ``op_cpu_ns``) and issues one
    ``cudaLaunchKernel`` lasting ``launch_call_ns`` (eager-style), or, when ``graph`` is set, issues a single
    ``cudaGraphLaunch`` lasting ``graph_launch_ns`` for all kernels. Kernel k becomes ready
    ``launch_latency_ns`` after its launch call starts and runs in launch order on one stream; its duration is
    ``kernel_floor_ns + share_k * gpu_ns_per_token * batch * seq_len`` (graph kernels follow each other with
    ``graph_kernel_gap_ns`` between them). After ``iter_post_ns`` the CPU calls ``cudaDeviceSynchronize``
    (at least ``sync_call_ns``), which returns ``sync_return_ns`` after the last kernel ends; the range closes
    ``range_close_ns`` later and the next iteration opens ``iter_gap_ns`` after that.
    """

    runtime: str
    #: Operators (= kernels) per iteration.
    ops: int
    #: One CUDA graph launch per iteration instead of one launch per operator.
    graph: bool
    #: Mean framework (CPU) cost per operator before its launch call, ns.
    op_cpu_ns: int
    #: Lognormal sigma of the per-operator framework cost across operators (fixed per operator).
    op_cpu_spread: float
    #: Relative standard deviation of per-iteration noise on every CPU cost and kernel duration.
    jitter: float
    #: Duration of one cudaLaunchKernel call, ns.
    launch_call_ns: int
    #: Launch latency: earliest kernel start after its launch call starts, ns.
    launch_latency_ns: int
    #: Fixed floor of every kernel's duration, ns.
    kernel_floor_ns: int
    #: Kernel work per iteration per token (batch × seq_len), summed over all kernels, ns.
    gpu_ns_per_token: float
    #: CPU time at the start of an iteration before the first operator (inputs, bindings), ns.
    iter_pre_ns: int
    #: CPU time after the last launch before the device synchronisation, ns.
    iter_post_ns: int
    #: Minimum duration of the cudaDeviceSynchronize call, ns.
    sync_call_ns: int
    #: Time from the end of the last kernel to the return of the sync call, ns.
    sync_return_ns: int
    #: Time from the sync's return to the range's close, ns.
    range_close_ns: int
    #: Time between one range's close and the next one's open (benchmark loop), ns.
    iter_gap_ns: int
    #: Duration of one cudaGraphLaunch call (graph runtimes), ns.
    graph_launch_ns: int
    #: Idle gap between consecutive kernels of a graph replay, ns.
    graph_kernel_gap_ns: int
    #: Scale of the fraction of SMs a kernel keeps busy at batch × seq = 128 (grows with sqrt of tokens).
    sm_fill: float
    #: Scale of the fraction of an active SM's warp slots in use (grows with the fourth root of tokens).
    warp_occupancy: float
    #: Operator mix: "eager" (unfused PyTorch kernels) or "fused" (ONNX Runtime kernels).
    kernel_mix: str

    def with_overrides(self, overrides: dict[str, Any]) -> RuntimeParams:
        """A copy with ``overrides`` applied (values converted to each field's type); unknown keys, values that
        are not of the field's type (a flag that is not a clear true or false) and ``runtime`` (chosen by
        ``--runtime``) are errors, one line each."""
        fields = {f.name: f for f in dataclasses.fields(self)}
        changes: dict[str, Any] = {}
        for key, raw in overrides.items():
            name = key.replace("-", "_")
            if name == "runtime":
                raise TracekitError(
                    "simulation parameter runtime is chosen by --runtime (one of "
                    f"{', '.join(RUNTIMES)}), not by --set"
                )
            if name not in fields:
                known = sorted(n for n in fields if n != "runtime")
                raise TracekitError(f"unknown simulation parameter {key!r}; known: {', '.join(known)}")
            current = getattr(self, name)
            try:
                if isinstance(current, bool):
                    value: Any = raw if isinstance(raw, bool) else _flag(key, raw)
                elif isinstance(current, int):
                    value = int(float(raw))
                elif isinstance(current, float):
                    value = float(raw)
                else:
                    value = str(raw)
            except (ValueError, OverflowError) as exc:
                raise TracekitError(f"simulation parameter {key}: {raw!r} is not a number") from exc
            changes[name] = value
        params = dataclasses.replace(self, **changes)
        params.validate()
        return params

    def validate(self) -> None:
        """Raise TracekitError on parameters the model cannot run with: a number that is not finite (NaN had
        passed ``value < 0`` and made kernels of 1 ns), negative, or beyond what the model's 64-bit
        nanosecond clock and memory allow (:data:`MAX_TIME_NS`, :data:`MAX_OPS`, :data:`MAX_SPREAD`)."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            if not math.isfinite(value):
                raise TracekitError(f"simulation parameter {f.name} must be a finite number (got {value})")
            if value < 0:
                raise TracekitError(f"simulation parameter {f.name} must be >= 0 (got {value})")
            if f.name in TIME_PARAMETERS and value > MAX_TIME_NS:
                raise TracekitError(
                    f"simulation parameter {f.name} must be at most {MAX_TIME_NS:.0e} ns (1 s; got {value:.6g})"
                )
        if self.ops < 1 or self.ops > MAX_OPS:
            raise TracekitError(f"simulation parameter ops must be from 1 to {MAX_OPS} (got {self.ops})")
        if self.kernel_mix not in KERNEL_MIXES:
            raise TracekitError(f"simulation parameter kernel_mix must be one of {', '.join(KERNEL_MIXES)}")
        if self.jitter >= 0.3:
            raise TracekitError("simulation parameter jitter must be < 0.3")
        if self.op_cpu_spread > MAX_SPREAD:
            raise TracekitError(
                f"simulation parameter op_cpu_spread must be at most {MAX_SPREAD} (got {self.op_cpu_spread})"
            )

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


KERNEL_MIXES = ("eager", "fused")
#: The parameters that are times (ns) or a time per token: each at most :data:`MAX_TIME_NS`.
TIME_PARAMETERS = frozenset(
    f.name
    for f in dataclasses.fields(RuntimeParams)
    if f.name.endswith("_ns") or f.name == "gpu_ns_per_token"
)
#: The longest time a parameter may give (ns): one second per operator, call, gap or token, far above any
#: real one (the presets' are microseconds); beyond it (1e19, 1e30) the 64-bit nanosecond clock overflows or
#: the simulation asks for petabytes of memory.
MAX_TIME_NS = 10**9
#: The most operators per iteration (the presets have 160 to 400).
MAX_OPS = 100_000
#: The largest lognormal sigma of the per-operator framework cost (the presets' is 0.35): beyond it the
#: costs' mean is that of a few operators, or not finite.
MAX_SPREAD = 5.0
#: The words ``--set`` reads as true and as false for a flag (``graph``).
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


def _flag(key: str, raw: Any) -> bool:
    """``raw`` read as a flag; TracekitError for anything but a clear true or false (``maybe`` had been read
    as false without a word)."""
    word = str(raw).strip().lower()
    if word in TRUE_WORDS or word in FALSE_WORDS:
        return word in TRUE_WORDS
    raise TracekitError(
        f"simulation parameter {key}: {raw!r} is not true or false ({'/'.join(TRUE_WORDS)} or "
        f"{'/'.join(FALSE_WORDS)})"
    )


_COMMON: dict[str, Any] = {
    "op_cpu_spread": 0.35,
    "jitter": 0.03,
    "launch_latency_ns": 3_000,
    "kernel_floor_ns": 2_500,
    "sync_call_ns": 3_000,
    "sync_return_ns": 4_000,
    "range_close_ns": 1_000,
    "iter_gap_ns": 40_000,
    "graph_kernel_gap_ns": 1_000,
    "sm_fill": 0.55,
    "warp_occupancy": 0.18,
}

PRESETS: dict[str, RuntimeParams] = {
    "pytorch": RuntimeParams(
        runtime="pytorch",
        ops=400,
        graph=False,
        op_cpu_ns=21_000,
        launch_call_ns=4_500,
        gpu_ns_per_token=4_700.0,
        iter_pre_ns=60_000,
        iter_post_ns=30_000,
        graph_launch_ns=0,
        kernel_mix="eager",
        **_COMMON,
    ),
    "torchscript": RuntimeParams(
        runtime="torchscript",
        ops=320,
        graph=False,
        op_cpu_ns=12_500,
        launch_call_ns=4_500,
        gpu_ns_per_token=4_500.0,
        iter_pre_ns=80_000,
        iter_post_ns=20_000,
        graph_launch_ns=0,
        kernel_mix="eager",
        **_COMMON,
    ),
    "cuda-graphs": RuntimeParams(
        runtime="cuda-graphs",
        ops=400,
        graph=True,
        op_cpu_ns=0,
        launch_call_ns=4_500,
        gpu_ns_per_token=4_700.0,
        iter_pre_ns=120_000,
        iter_post_ns=10_000,
        graph_launch_ns=15_000,
        kernel_mix="eager",
        **_COMMON,
    ),
    "onnx": RuntimeParams(
        runtime="onnx",
        ops=160,
        graph=False,
        op_cpu_ns=8_500,
        launch_call_ns=3_500,
        gpu_ns_per_token=4_000.0,
        iter_pre_ns=200_000,
        iter_post_ns=20_000,
        graph_launch_ns=0,
        kernel_mix="fused",
        **_COMMON,
    ),
    "onnx-cuda-graphs": RuntimeParams(
        runtime="onnx-cuda-graphs",
        ops=160,
        graph=True,
        op_cpu_ns=0,
        launch_call_ns=3_500,
        gpu_ns_per_token=4_000.0,
        iter_pre_ns=150_000,
        iter_post_ns=10_000,
        graph_launch_ns=12_000,
        kernel_mix="fused",
        **_COMMON,
    ),
}


def preset(runtime: str, overrides: dict[str, Any] | None = None) -> RuntimeParams:
    """The preset for ``runtime`` with ``overrides`` applied. TracekitError for an unknown runtime."""
    if runtime not in PRESETS:
        raise TracekitError(f"unknown runtime {runtime!r}; choose one of {', '.join(RUNTIMES)}")
    params = PRESETS[runtime]
    return params.with_overrides(overrides) if overrides else params
