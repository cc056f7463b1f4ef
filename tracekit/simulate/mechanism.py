"""The discrete-event model of the framework tax, vectorized with numpy, generated chunk by chunk.

One CPU thread runs timed iterations. Each iteration (times relative to its NVTX range start, integer ns):

1. the range opens; the CPU spends ``iter_pre_ns`` on inputs;
2. eager-style runtimes: for each operator k, a framework cost ``cpu_k`` then a ``cudaLaunchKernel`` call
   ``[L_k, L_k + call_k]``; graph runtimes: one ``cudaGraphLaunch`` call for all kernels;
3. the GPU runs the kernels in launch order on one stream: kernel k is ready at ``L_k + launch latency`` and
   starts at ``max(ready_k, end_(k-1))`` (graph kernels: back to back with ``graph_kernel_gap_ns``); its
   duration is ``floor + share_k * gpu_ns_per_token * batch * seq_len`` (times a small seeded noise);
4. after ``iter_post_ns`` the CPU calls ``cudaDeviceSynchronize``, which returns at
   ``max(call start + sync_call_ns, last kernel end) + sync_return_ns``; the range closes
   ``range_close_ns`` later; the next range opens ``iter_gap_ns`` after that.

The per-kernel recurrence ``end_k = max(ready_k, end_(k-1)) + d_k`` is solved in closed form with prefix sums:
``end_k = D_k + max_(j<=k)(ready_j - D_(j-1))`` where ``D`` is the running sum of durations, so a chunk of
iterations is one ``np.maximum.accumulate`` over a (iterations × ops) array. Because every iteration ends
with a device sync the GPU is idle at each range start, so iterations are independent given their start
time and the chunks can be generated and written one after another in bounded memory.

Everything is deterministic given the seed; chunk boundaries depend only on the operator count.

**Noise** (:class:`Noise`, ``tracekit simulate --noise``; off by default, and then the events are exactly those of
a run without it): what disturbs real timings, with known truth. Per iteration, every host (CPU) cost of the
iteration (pre/post work, operator costs, launch, sync and range-close calls, the gap to the next iteration) is
multiplied by one factor ``1 + sd * z`` (z standard normal, clipped to +-3; at least 0.1); a share
``stall_rate`` of the iterations is descheduled once at its start (CPU time taken by another process) for
``stall`` times the iteration's noise-free latency; and the first ``warmup`` iterations are slowed (factor
``1 + warmup_slowdown`` for the first, falling linearly to 1). Device work is untouched. Each chunk then also
carries every iteration's *noise-free* latency (the same iteration with factor 1 and no stall), which the truth
file records.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from tracekit.simulate.presets import REFERENCE_SEQ_LEN, RuntimeParams

#: API kinds in :class:`Chunk` (``api_kind``).
API_LAUNCH, API_GRAPH_LAUNCH, API_SYNC = 0, 1, 2
#: Their names as a CUDA 12 runtime reports them to Nsight Systems (with version suffixes).
API_NAMES = {
    API_LAUNCH: "cudaLaunchKernel_v7000",
    API_GRAPH_LAUNCH: "cudaGraphLaunch_v10000",
    API_SYNC: "cudaDeviceSynchronize_v3020",
}
#: CUPTI callback ids as Kineto reports them (``cbid``).
API_CBIDS = {API_LAUNCH: 211, API_GRAPH_LAUNCH: 311, API_SYNC: 165}

#: Simulated device and stream, process and thread ids.
DEVICE_ID = 0
STREAM_ID = 7
CONTEXT_ID = 1
PID = 4242
TID = 4242
#: CUDA graph id carried by every kernel of a graph replay.
GRAPH_ID = 1
#: First range opens this long after the (simulated) session start.
T0_NS = 1_000_000_000
#: Default number of kernels generated (and written) per chunk.
CHUNK_KERNELS = 50_000


@dataclass(frozen=True)
class Noise:
    """Per-iteration disturbance of the simulated host (module docstring). All zero: no noise."""

    #: relative standard deviation of the per-iteration host-cost factor
    sd: float = 0.0
    #: share of the iterations descheduled once (0..1)
    stall_rate: float = 0.0
    #: a stall's length, relative to the iteration's noise-free latency
    stall: float = 1.0
    #: leading iterations slowed (warm-up drift)
    warmup: int = 0
    #: the first iteration's extra host-cost factor (falls linearly to 0 over ``warmup`` iterations)
    warmup_slowdown: float = 2.0

    @property
    def active(self) -> bool:
        return bool(self.sd or self.stall_rate or self.warmup)

    def validate(self) -> None:
        """TracekitError on values the model cannot use."""
        from tracekit.errors import TracekitError

        if not 0 <= self.sd < 1:
            raise TracekitError("--noise (the host-cost standard deviation) must be in [0, 1)")
        if not 0 <= self.stall_rate <= 1 or self.stall < 0:
            raise TracekitError("--noise-stalls must be in [0, 1] (and a stall length >= 0)")
        if self.warmup < 0 or self.warmup_slowdown < 0:
            raise TracekitError("--noise-warmup must be >= 0")

    def as_dict(self) -> dict[str, float | int]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class KernelKind:
    """One kind of kernel: its names, relative work, SM fill and warp occupancy scales, launch shape."""

    short: str
    demangled: str
    work: float
    fill: float
    occupancy: float
    registers: int
    block: int


_ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, {f}, at::detail::Array<char*, {n}> >(int, {f}, at::detail::Array<char*, {n}>)"
_COPY = (
    "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)"
    "::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::Half)#1}, "
    "at::detail::Array<char*, 2>, OffsetCalculator<1, unsigned int, false>, OffsetCalculator<1, unsigned int, false>, "
    "at::native::memory::LoadWithoutCast, at::native::memory::StoreWithoutCast>(int, "
    "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}"
    "::operator()() const::{lambda(c10::Half)#1}, at::detail::Array<char*, 2>, OffsetCalculator<1, unsigned int, false>, "
    "OffsetCalculator<1, unsigned int, false>, at::native::memory::LoadWithoutCast, at::native::memory::StoreWithoutCast)"
)

KERNEL_KINDS: dict[str, KernelKind] = {
    "gemm": KernelKind(
        "turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_stages_32x1_tn",
        "turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_stages_32x1_tn",
        10.0,
        0.45,
        0.10,
        128,
        256,
    ),
    "bmm": KernelKind(
        "turing_fp16_s1688gemm_fp16_64x64_sliced1x2_ldg8_f2f_nn",
        "turing_fp16_s1688gemm_fp16_64x64_sliced1x2_ldg8_f2f_nn",
        3.0,
        0.40,
        0.10,
        128,
        128,
    ),
    "add": KernelKind(
        "vectorized_elementwise_kernel",
        _ELEMENTWISE.format(f="at::native::CUDAFunctor_add<c10::Half>", n=3),
        0.5,
        0.8,
        0.35,
        24,
        128,
    ),
    "div": KernelKind(
        "vectorized_elementwise_kernel",
        _ELEMENTWISE.format(
            f="at::native::BinaryFunctor<c10::Half, c10::Half, c10::Half, "
            "at::native::binary_internal::DivFunctor<float> >",
            n=3,
        ),
        0.5,
        0.8,
        0.35,
        24,
        128,
    ),
    "copy": KernelKind("unrolled_elementwise_kernel", _COPY, 0.6, 0.8, 0.30, 32, 128),
    "softmax": KernelKind(
        "softmax_warp_forward",
        "void (anonymous namespace)::softmax_warp_forward<c10::Half, c10::Half, float, 7, false, false>"
        "(c10::Half*, c10::Half const*, int, int, int, bool const*, int, bool)",
        1.2,
        0.7,
        0.25,
        40,
        128,
    ),
    "layernorm": KernelKind(
        "vectorized_layer_norm_kernel",
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::Half, float>"
        "(int, float, c10::Half const*, c10::Half const*, c10::Half const*, float*, float*, c10::Half*)",
        0.8,
        0.6,
        0.20,
        40,
        256,
    ),
    "gelu": KernelKind(
        "vectorized_elementwise_kernel",
        _ELEMENTWISE.format(
            f="at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)"
            "::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const"
            "::{lambda(c10::Half)#1}",
            n=2,
        ),
        1.0,
        0.8,
        0.35,
        24,
        128,
    ),
    "index_select": KernelKind(
        "indexSelectLargeIndex",
        "void at::native::indexSelectLargeIndex<c10::Half, long, unsigned int, 2, 2, -2, true>"
        "(at::cuda::detail::TensorInfo<c10::Half, unsigned int>, at::cuda::detail::TensorInfo"
        "<c10::Half, unsigned int>, at::cuda::detail::TensorInfo<long, unsigned int>, int, int, "
        "unsigned int, unsigned int, long)",
        0.4,
        0.5,
        0.20,
        32,
        128,
    ),
    # ONNX Runtime's fused kernels.
    "ort_gemm": KernelKind(
        "sm75_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage2_warpsize2x2x1_tensor16x8x8_kernel",
        "sm75_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage2_warpsize2x2x1_tensor16x8x8_kernel",
        10.0,
        0.50,
        0.12,
        168,
        128,
    ),
    "ort_attention": KernelKind(
        "fmha_v2_fp16_128_64_sm75_kernel", "fmha_v2_fp16_128_64_sm75_kernel", 5.0, 0.55, 0.15, 96, 128
    ),
    "ort_skip_layernorm": KernelKind(
        "SkipLayerNormKernelSmall",
        "void onnxruntime::contrib::cuda::SkipLayerNormKernelSmall<__half, float, __half, 256, 8, "
        "true>(int, __half const*, __half const*, __half const*, __half const*, __half const*, "
        "float, __half*, __half*, bool)",
        1.0,
        0.6,
        0.25,
        40,
        256,
    ),
    "ort_fast_gelu": KernelKind(
        "FastGeluKernel2",
        "void onnxruntime::contrib::cuda::FastGeluKernel2<256>(__half2, __half2, __half2, __half2, "
        "int, int, __half2 const*, __half2 const*, __half2*)",
        1.0,
        0.8,
        0.35,
        24,
        256,
    ),
    "ort_add": KernelKind(
        "_BinaryElementWiseSimple",
        "void onnxruntime::cuda::_BinaryElementWiseSimple<true, true, __half, __half, __half, "
        "onnxruntime::cuda::OP_Add<__half, __half, __half>, 256, 4>(__half const*, __half const*, __half*, "
        "onnxruntime::cuda::OP_Add<__half, __half, __half> const&, int)",
        0.5,
        0.8,
        0.35,
        24,
        256,
    ),
    "ort_embed_layernorm": KernelKind(
        "EmbedLayerNormKernel",
        "void onnxruntime::contrib::cuda::EmbedLayerNormKernel<__half, 256>(int, int const*, "
        "int const*, __half const*, __half const*, __half const*, __half const*, __half const*, "
        "float, __half*, int const*)",
        0.6,
        0.5,
        0.20,
        48,
        256,
    ),
    "ort_cast": KernelKind(
        "_UnaryElementWise",
        "void onnxruntime::cuda::_UnaryElementWise<int, int, onnxruntime::cuda::OP_Cast<int, int>, 256, 4>"
        "(int const*, int*, onnxruntime::cuda::OP_Cast<int, int>, int)",
        0.2,
        0.3,
        0.20,
        16,
        256,
    ),
}

#: Operator sequences: a prelude (embeddings) then one encoder layer repeated (and cut to ``ops``).
KERNEL_SEQUENCES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "eager": (
        ("index_select", "index_select", "index_select", "add", "add", "layernorm"),
        (
            "gemm",
            "add",
            "copy",
            "gemm",
            "add",
            "copy",
            "gemm",
            "add",
            "copy",
            "copy",
            "bmm",
            "div",
            "add",
            "softmax",
            "copy",
            "bmm",
            "copy",
            "copy",
            "gemm",
            "add",
            "add",
            "layernorm",
            "gemm",
            "add",
            "gelu",
            "copy",
            "gemm",
            "add",
            "add",
            "layernorm",
            "copy",
            "div",
            "copy",
        ),
    ),
    "fused": (
        ("ort_cast", "ort_embed_layernorm", "ort_cast"),
        (
            "ort_gemm",
            "ort_add",
            "ort_attention",
            "ort_gemm",
            "ort_add",
            "ort_skip_layernorm",
            "ort_gemm",
            "ort_fast_gelu",
            "ort_gemm",
            "ort_add",
            "ort_skip_layernorm",
            "ort_cast",
            "ort_add",
        ),
    ),
}


@dataclass
class OpTable:
    """The model's operators (fixed for a seed, the same at every batch size)."""

    kinds: list[str]
    #: index of each op's kernel kind in ``kind_names``
    kind_index: np.ndarray
    kind_names: list[str]
    #: share of the per-token kernel work, sums to 1
    share: np.ndarray
    #: relative framework cost, mean 1
    cpu_shape: np.ndarray
    fill_base: np.ndarray
    occ_base: np.ndarray


def build_op_table(params: RuntimeParams, seed: int) -> OpTable:
    """The operator list of the simulated model and its seeded per-operator properties."""
    prelude, layer = KERNEL_SEQUENCES[params.kernel_mix]
    kinds = list(itertools.islice(itertools.chain(prelude, itertools.cycle(layer)), params.ops))
    kind_names = sorted(set(kinds))
    kind_index = np.array([kind_names.index(k) for k in kinds], dtype=np.int64)
    rng = np.random.default_rng([seed, 0x5EED])
    work = np.array([KERNEL_KINDS[k].work for k in kinds]) * rng.lognormal(0.0, 0.25, len(kinds))
    share = work / work.sum()
    cpu_shape = (
        rng.lognormal(0.0, params.op_cpu_spread, len(kinds)) if params.op_cpu_spread else np.ones(len(kinds))
    )
    cpu_shape = cpu_shape / cpu_shape.mean()
    fill = np.array([KERNEL_KINDS[k].fill for k in kinds]) * (params.sm_fill / 0.55)
    occ = np.array([KERNEL_KINDS[k].occupancy for k in kinds]) * (params.warp_occupancy / 0.18)
    return OpTable(kinds, kind_index, kind_names, share, cpu_shape, fill, occ)


@dataclass
class Chunk:
    """Events of consecutive iterations. Times are absolute integer ns; arrays are flat and time-ordered.

    ``n_iter`` iterations of ``ops`` kernels each. Kernel arrays are in launch order (iteration-major), API
    arrays in call order (per iteration: the launches, then the sync).
    """

    n_iter: int
    ops: int
    iter_index: np.ndarray
    range_start: np.ndarray
    range_end: np.ndarray
    api_start: np.ndarray
    api_end: np.ndarray
    api_corr: np.ndarray
    api_kind: np.ndarray
    k_start: np.ndarray
    k_end: np.ndarray
    k_corr: np.ndarray
    k_op: np.ndarray
    k_grid_id: np.ndarray
    #: index of the kernel inside its graph (-1 when not launched from a graph)
    k_node: np.ndarray
    #: fraction of SMs busy while the kernel runs (0..1)
    k_fill: np.ndarray
    #: fraction of an active SM's warp slots in use (0..1)
    k_occ: np.ndarray
    #: registers per thread and grid/block x-dimensions (for the kernel table's launch shape columns)
    k_regs: np.ndarray
    k_grid: np.ndarray
    k_block: np.ndarray
    #: with :class:`Noise`: each iteration's latency without it (ns), and its stall (ns); None without noise
    noise_free_latency: np.ndarray | None = None
    stall_ns: np.ndarray | None = None


_HOST_DRAWS = ("pre", "post", "cpu", "call", "sync_call", "close", "gap_after")


def _with_host_factor(draws: dict[str, np.ndarray], factor: np.ndarray, graph: bool) -> dict[str, np.ndarray]:
    """``draws`` with every host cost of iteration i times ``factor[i]`` (integer ns, launch calls >= 1 ns)."""
    out = dict(draws)
    for key in _HOST_DRAWS:
        if key not in draws:
            continue
        values = draws[key]
        f = factor if values.ndim == 1 else factor[:, None]
        scaled = np.rint(values * f).astype(np.int64)
        out[key] = np.maximum(scaled, 1) if key == "call" else scaled
    return out


class Simulation:
    """Generates the events of ``iterations`` iterations of one (runtime, batch size, seq len) config."""

    def __init__(
        self,
        params: RuntimeParams,
        batch_size: int,
        seq_len: int,
        iterations: int,
        seed: int,
        chunk_kernels: int = CHUNK_KERNELS,
        noise: Noise | None = None,
    ) -> None:
        params.validate()
        self.noise = noise if noise is not None and noise.active else None
        if self.noise is not None:
            self.noise.validate()
        self.params = params
        self.batch_size = int(batch_size)
        self.seq_len = int(seq_len)
        self.iterations = int(iterations)
        self.seed = int(seed)
        self.ops = build_op_table(params, seed)
        self.iters_per_chunk = max(1, chunk_kernels // params.ops)
        tokens = self.batch_size * self.seq_len
        scale = tokens / REFERENCE_SEQ_LEN
        #: noise-free kernel durations per op, ns (float)
        self.kernel_ns = params.kernel_floor_ns + self.ops.share * params.gpu_ns_per_token * tokens
        self.fill = np.clip(self.ops.fill_base * np.sqrt(scale), 0.01, 1.0)
        self.occ = np.clip(self.ops.occ_base * scale**0.25, 0.01, 1.0)
        kinds = [KERNEL_KINDS[k] for k in self.ops.kinds]
        self.regs = np.array([k.registers for k in kinds], dtype=np.int64)
        self.block = np.array([k.block for k in kinds], dtype=np.int64)
        # Grid: enough blocks to cover the work, at least one; grows with tokens.
        self.grid = np.maximum(1, np.rint(self.fill * 72 * np.maximum(1.0, scale**0.5))).astype(np.int64)

    @property
    def kernels_per_iteration(self) -> int:
        return self.params.ops

    def chunks(self) -> Iterator[Chunk]:
        """Yield the run's events chunk by chunk (each a few tens of thousands of kernels)."""
        cursor = T0_NS
        corr_next = 1
        grid_next = 1
        done = 0
        chunk_no = 0
        while done < self.iterations:
            n = min(self.iters_per_chunk, self.iterations - done)
            chunk = self._chunk(n, done, cursor, corr_next, grid_next, chunk_no)
            yield chunk
            cursor = int(chunk.range_end[-1]) + self._last_gap
            corr_next = int(chunk.api_corr[-1]) + 1
            grid_next = int(chunk.k_grid_id[-1]) + 1
            done += n
            chunk_no += 1

    def _chunk(self, n: int, first: int, cursor: int, corr0: int, grid0: int, chunk_no: int) -> Chunk:
        p = self.params
        m = p.ops
        rng = np.random.default_rng([self.seed, self.batch_size, self.seq_len, chunk_no, 0xC0DE])

        def noisy(mean: float | np.ndarray, shape: tuple[int, ...], minimum: int = 0) -> np.ndarray:
            if p.jitter:
                factor = np.clip(1.0 + p.jitter * rng.standard_normal(shape), 0.5, 1.5)
            else:
                factor = np.ones(shape)
            return np.maximum(np.rint(mean * factor).astype(np.int64), minimum)

        kdur = noisy(self.kernel_ns[None, :], (n, m), minimum=1)
        pre = noisy(p.iter_pre_ns, (n,))
        post = noisy(p.iter_post_ns, (n,))
        draws: dict[str, np.ndarray] = {"kdur": kdur, "pre": pre, "post": post}
        if p.graph:
            draws["call"] = noisy(p.graph_launch_ns, (n,), minimum=1)
            draws["latency"] = noisy(p.launch_latency_ns, (n,))
            draws["gaps"] = noisy(p.graph_kernel_gap_ns, (n, m))
        else:
            draws["cpu"] = noisy(p.op_cpu_ns * self.ops.cpu_shape[None, :], (n, m))
            draws["call"] = noisy(p.launch_call_ns, (n, m), minimum=1)
            draws["latency"] = noisy(p.launch_latency_ns, (n, m))
        draws["sync_call"] = noisy(p.sync_call_ns, (n,))
        draws["sync_return"] = noisy(p.sync_return_ns, (n,))
        draws["close"] = noisy(p.range_close_ns, (n,))
        draws["gap_after"] = noisy(p.iter_gap_ns, (n,))
        noise_free = stall = None
        if self.noise is not None:
            free = self._timeline(draws, n, m)
            noise_free = free["range_len"]
            factor, stall = self._noise(n, first, chunk_no, noise_free)
            draws = _with_host_factor(draws, factor, p.graph)
            draws["pre"] = draws["pre"] + stall
        t = self._timeline(draws, n, m)
        api_rel_start, api_rel_end = t["api_rel_start"], t["api_rel_end"]
        kstart, kend, range_len, gap_after = t["kstart"], t["kend"], t["range_len"], t["gap_after"]
        calls_per_iter = api_rel_start.shape[1]
        offsets = np.empty(n, dtype=np.int64)
        offsets[0] = cursor
        if n > 1:
            offsets[1:] = cursor + np.cumsum(range_len + gap_after)[:-1]
        self._last_gap = int(gap_after[-1])

        corr = corr0 + np.arange(n * calls_per_iter, dtype=np.int64).reshape(n, calls_per_iter)
        kinds = np.full((n, calls_per_iter), API_GRAPH_LAUNCH if p.graph else API_LAUNCH, dtype=np.int8)
        kinds[:, -1] = API_SYNC
        if p.graph:
            k_corr = np.repeat(corr[:, 0], m)
            k_node = np.tile(np.arange(m, dtype=np.int64), n)
        else:
            k_corr = corr[:, :m].reshape(-1)
            k_node = np.full(n * m, -1, dtype=np.int64)
        op = np.tile(np.arange(m, dtype=np.int64), n)
        return Chunk(
            n_iter=n,
            ops=m,
            iter_index=np.arange(first, first + n, dtype=np.int64),
            range_start=offsets,
            range_end=offsets + range_len,
            api_start=(api_rel_start + offsets[:, None]).reshape(-1),
            api_end=(api_rel_end + offsets[:, None]).reshape(-1),
            api_corr=corr.reshape(-1),
            api_kind=kinds.reshape(-1),
            k_start=(kstart + offsets[:, None]).reshape(-1),
            k_end=(kend + offsets[:, None]).reshape(-1),
            k_corr=k_corr,
            k_op=op,
            k_grid_id=grid0 + np.arange(n * m, dtype=np.int64),
            k_node=k_node,
            k_fill=self.fill[op],
            k_occ=self.occ[op],
            k_regs=self.regs[op],
            k_grid=self.grid[op],
            k_block=self.block[op],
            noise_free_latency=noise_free,
            stall_ns=stall,
        )

    def _timeline(self, d: dict[str, np.ndarray], n: int, m: int) -> dict[str, np.ndarray]:
        """Times relative to each iteration's range start, from the drawn durations ``d`` (module docstring)."""
        p = self.params
        kdur, pre, post = d["kdur"], d["pre"], d["post"]
        if p.graph:
            call = d["call"]
            lstart = pre
            lend = lstart + call
            first_ready = lstart + d["latency"]
            gaps = d["gaps"].copy()
            gaps[:, 0] = 0
            kstart = first_ready[:, None] + np.cumsum(gaps, axis=1) + (np.cumsum(kdur, axis=1) - kdur)
            kend = kstart + kdur
            last_call_end = lend
            api_rel_start = np.stack([lstart, np.zeros(n, dtype=np.int64)], axis=1)
            api_rel_end = np.stack([lend, np.zeros(n, dtype=np.int64)], axis=1)
        else:
            cpu, call = d["cpu"], d["call"]
            lstart = pre[:, None] + np.cumsum(cpu + call, axis=1) - call
            lend = lstart + call
            ready = lstart + d["latency"]
            dsum = np.cumsum(kdur, axis=1)
            kend = dsum + np.maximum.accumulate(ready - (dsum - kdur), axis=1)
            kstart = kend - kdur
            last_call_end = lend[:, -1]
            api_rel_start = np.concatenate([lstart, np.zeros((n, 1), dtype=np.int64)], axis=1)
            api_rel_end = np.concatenate([lend, np.zeros((n, 1), dtype=np.int64)], axis=1)
        sync_start = last_call_end + post
        sync_end = np.maximum(sync_start + d["sync_call"], kend[:, -1]) + d["sync_return"]
        range_len = sync_end + d["close"]
        api_rel_start[:, -1] = sync_start
        api_rel_end[:, -1] = sync_end
        return {
            "api_rel_start": api_rel_start,
            "api_rel_end": api_rel_end,
            "kstart": kstart,
            "kend": kend,
            "range_len": range_len,
            "gap_after": d["gap_after"],
        }

    def _noise(
        self, n: int, first: int, chunk_no: int, noise_free: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(host-cost factor, stall ns) of the chunk's iterations, from a generator of their own (so the
        noise-free draws stay those of a run without noise)."""
        noise = self.noise
        assert noise is not None
        rng = np.random.default_rng([self.seed, self.batch_size, self.seq_len, chunk_no, 0x401E])
        z = np.clip(rng.standard_normal(n), -3.0, 3.0)
        factor = np.maximum(1.0 + noise.sd * z, 0.1)
        if noise.warmup:
            index = first + np.arange(n)
            ramp = np.clip((noise.warmup - index) / noise.warmup, 0.0, None)
            factor = factor * (1.0 + noise.warmup_slowdown * ramp)
        hit = rng.random(n) < noise.stall_rate
        stall = np.where(hit, np.rint(noise.stall * noise_free), 0).astype(np.int64)
        return factor, stall
