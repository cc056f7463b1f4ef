"""One-time setup inside iterations: CUDA/HIP calls that initialize, create, load or allocate.

A trace captured from a program's start (no profiler schedule, no warm-up) holds what the first run pays
once: CUDA's lazy initialization (it lands in whichever runtime call comes first, such as
``cudaDeviceGetStreamPriorityRange`` or ``cudaGetDeviceCount``), the caching allocator's first
``cudaMalloc``/``cudaFree``, stream and event creation, module loading, graph instantiation. None of that is
the steady state the framework tax is about, yet inside an iteration it reads as framework overhead (the
attribution's ``other_api``), and a whole-program range of 43 s whose GPU ran 66 ms reads as
"framework-bound, 0.2%".

Per iteration, :func:`setup_ns_per_iteration` sums the host time (ns) of the :data:`SETUP_API_NAMES` calls
that start inside its window, in its own process, clipped to the window: the union of their intervals, so
calls on several threads at once (or nested) count once, and the sum is at most the window's length. :func:`setup_warnings` turns that into warnings:

- an iteration is *set up* when its setup time is at least :data:`SETUP_MIN_NS` and at least
  :data:`SETUP_SHARE` of its latency;
- set-up iterations among the analyzed ones are named, with the calls that took the most time;
- when they are at least half of them (the median iteration is one), the verdict is uncertain: whether the
  calls are a first run's one-time costs or recur every iteration, the trace alone cannot tell apart.
"""

from __future__ import annotations

import polars as pl

from tracekit.model import API_NAME_SUFFIX, calls_named, newly_covered

#: API calls (after the version and per-thread suffixes are stripped) that set up rather than run:
#: initialization and device queries (CUDA initializes lazily, inside whichever of them comes first),
#: memory allocation and release, stream and event creation, module loading, graph instantiation. Each is
#: microseconds in a steady state; a long one is a first run's cost.
SETUP_API_NAMES: tuple[str, ...] = (
    # initialization, device and context
    "cuInit",
    "cuDeviceGet",
    "cuDeviceGetCount",
    "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease",
    "cuDevicePrimaryCtxReset",
    "cuCtxCreate",
    "cuCtxDestroy",
    "cudaGetDeviceCount",
    "cudaSetDevice",
    "cudaGetDeviceProperties",
    "cudaDeviceGetAttribute",
    "cudaDeviceGetStreamPriorityRange",
    "cudaDeviceGetPCIBusId",
    "cudaDeviceSetLimit",
    "cudaDeviceReset",
    "cudaFuncGetAttributes",
    "cudaFuncSetAttribute",
    "cudaFuncSetCacheConfig",
    "hipInit",
    "hipGetDeviceCount",
    "hipSetDevice",
    "hipGetDeviceProperties",
    "hipGetDevicePropertiesR0600",
    "hipDeviceGetAttribute",
    "hipDeviceGetStreamPriorityRange",
    "hipDeviceReset",
    "hipFuncGetAttributes",
    # memory allocation and release (not the stream-ordered cudaMallocAsync/cudaFreeAsync, which a
    # steady state uses by design)
    "cudaMalloc",
    "cudaMallocHost",
    "cudaHostAlloc",
    "cudaMallocManaged",
    "cudaMallocPitch",
    "cudaMalloc3D",
    "cudaMallocArray",
    "cudaFree",
    "cudaFreeHost",
    "cudaFreeArray",
    "cudaHostRegister",
    "cudaHostUnregister",
    "cuMemAlloc",
    "cuMemAllocHost",
    "cuMemAllocManaged",
    "cuMemAllocPitch",
    "cuMemHostAlloc",
    "cuMemFree",
    "cuMemFreeHost",
    "cuMemHostRegister",
    "cuMemHostUnregister",
    "cuMemCreate",
    "cuMemRelease",
    "cuMemMap",
    "cuMemUnmap",
    "cuMemSetAccess",
    "cuMemAddressReserve",
    "cuMemAddressFree",
    "hipMalloc",
    "hipMallocHost",
    "hipHostMalloc",
    "hipExtMallocWithFlags",
    "hipMallocManaged",
    "hipFree",
    "hipFreeHost",
    "hipHostFree",
    "hipHostRegister",
    "hipHostUnregister",
    # streams and events
    "cudaStreamCreate",
    "cudaStreamCreateWithFlags",
    "cudaStreamCreateWithPriority",
    "cudaStreamDestroy",
    "cudaEventCreate",
    "cudaEventCreateWithFlags",
    "cudaEventDestroy",
    "cuStreamCreate",
    "cuStreamCreateWithPriority",
    "cuStreamDestroy",
    "cuEventCreate",
    "cuEventDestroy",
    "hipStreamCreate",
    "hipStreamCreateWithFlags",
    "hipStreamCreateWithPriority",
    "hipStreamDestroy",
    "hipEventCreate",
    "hipEventCreateWithFlags",
    "hipEventDestroy",
    # modules and graphs
    "cuModuleLoad",
    "cuModuleLoadData",
    "cuModuleLoadDataEx",
    "cuModuleLoadFatBinary",
    "cuModuleGetFunction",
    "cuModuleUnload",
    "cuLibraryLoadData",
    "cuLibraryLoadFromFile",
    "cuLibraryGetKernel",
    "cuLibraryUnload",
    "hipModuleLoad",
    "hipModuleLoadData",
    "hipModuleLoadDataEx",
    "hipModuleGetFunction",
    "hipModuleUnload",
    "cudaGraphInstantiate",
    "cudaGraphInstantiateWithFlags",
    "cudaGraphInstantiateWithParams",
    "cudaGraphUpload",
    "cuGraphInstantiate",
    "cuGraphInstantiateWithFlags",
    "cuGraphInstantiateWithParams",
    "cuGraphUpload",
    "hipGraphInstantiate",
    "hipGraphInstantiateWithFlags",
    "hipGraphUpload",
)

#: An iteration with at least this much host time (ns) in setup calls, and at least :data:`SETUP_SHARE`
#: of its latency, is *set up* (module docstring).
SETUP_MIN_NS = 1_000_000
#: The share of an iteration's latency in setup calls from which it is *set up*.
SETUP_SHARE = 0.10
#: How many call names a warning names, the longest first.
NAMED_CALLS = 3


def setup_calls(api: pl.DataFrame) -> pl.DataFrame:
    """The setup calls of ``api`` (:data:`SETUP_API_NAMES`, suffixes stripped): ``start``, ``end``,
    ``pid`` and ``call`` (the stripped name). Empty when the frame has no names (not read). The names are
    matched once each (a trace holds a few hundred distinct ones among millions of calls)."""
    return (
        calls_named(api, SETUP_API_NAMES)
        .filter(pl.col("end").is_not_null())
        .select("start", "end", "pid", pl.col("name").str.replace(API_NAME_SUFFIX, "").alias("call"))
    )


def setup_ns_per_iteration(calls: pl.DataFrame, windows: pl.DataFrame, iteration: pl.Series) -> pl.DataFrame:
    """Per iteration holding setup calls: ``iteration``, ``setup_ns`` (the host time they cover, clipped to
    the window: the union of their intervals, so calls at once on several threads count once) and
    ``by_call`` (a list of structs ``call``, ``ns``, the longest first). ``calls``: :func:`setup_calls`;
    ``iteration``: each call's iteration (null: none), found by its start in the ranges of its own process;
    ``windows``: per iteration 0..n-1 in order, with ``window_start`` and ``window_end``."""
    calls = calls.with_columns(iteration.alias("iteration")).filter(pl.col("iteration").is_not_null())
    if calls.is_empty():
        return pl.DataFrame(
            schema={
                "iteration": pl.Int64,
                "setup_ns": pl.Int64,
                "by_call": pl.List(pl.Struct({"call": pl.String, "ns": pl.Int64})),
            }
        )
    bounds = windows.select("iteration", "window_start", "window_end")
    clipped = (
        calls.join(bounds, on="iteration", how="inner")
        .with_columns(
            (pl.min_horizontal("end", "window_end") - pl.max_horizontal("start", "window_start")).alias("ns")
        )
        .filter(pl.col("ns") > 0)
    )
    by_call = (
        clipped.group_by("iteration", "call")
        .agg(pl.col("ns").sum())
        .sort(["iteration", "ns", "call"], descending=[False, True, False])
        .group_by("iteration", maintain_order=True)
        .agg(pl.struct("call", "ns").alias("by_call"))
    )
    # The host time the calls cover: the union of their clipped intervals (calls on several threads at once,
    # or nested, cover it once: two threads allocating side by side had counted it twice), so at most the
    # window's length (a window never ends before it starts: tracekit.analyzers.iterations._windows).
    start = pl.max_horizontal("start", "window_start")
    end = pl.min_horizontal("end", "window_end")
    covered = (
        clipped.select("iteration", start.alias("_start"), end.alias("_end"))
        .sort("iteration", "_start")
        .with_columns(newly_covered("_start", "_end", "iteration").alias("ns"))
        .group_by("iteration")
        .agg(pl.col("ns").sum().alias("setup_ns"))
    )
    return (
        by_call.join(covered, on="iteration", how="inner")
        .select("iteration", "setup_ns", "by_call")
        .sort("iteration")
    )


def _ms(ns: int) -> str:
    return f"{ns / 1e6:,.3f} ms"


def _iterations_text(indices: list[int]) -> str:
    if len(indices) == 1:
        return f"iteration {indices[0]}"
    if indices == list(range(indices[0], indices[-1] + 1)):
        return f"iterations {indices[0]}-{indices[-1]}"
    shown = ", ".join(str(i) for i in indices[:8])
    return f"iterations {shown}" + (f" and {len(indices) - 8} more" if len(indices) > 8 else "")


def setup_warnings(
    per_iteration: pl.DataFrame, frame: pl.DataFrame
) -> tuple[list[str], list[str], str | None, list[int]]:
    """(warnings, doubts, caveat, the set-up iterations they name) about the set-up iterations (module
    docstring) among the analyzed ones; the caveat (None: no set-up iteration) is the CUDA-graph projection's:
    it removes setup calls as host work.
    ``per_iteration``: :func:`setup_ns_per_iteration`; ``frame``: the analyzed iterations (``index``,
    ``latency_ms``; warm-up already dropped). Doubts start "verdict uncertain"; the caller shows them as
    warnings too (they are not repeated in the first list)."""
    if per_iteration.is_empty() or frame.is_empty():
        return [], [], None, []
    latency = frame.select(
        pl.col("index").alias("iteration"), (pl.col("latency_ms") * 1e6).alias("latency_ns")
    )
    flagged = per_iteration.join(latency, on="iteration", how="inner").filter(
        (pl.col("setup_ns") >= SETUP_MIN_NS) & (pl.col("setup_ns") >= SETUP_SHARE * pl.col("latency_ns"))
    )
    if flagged.is_empty():
        return [], [], None, []
    indices = flagged.get_column("iteration").to_list()
    total = int(flagged.get_column("setup_ns").sum())
    calls = (
        flagged.select(pl.col("by_call").explode().struct.unnest())
        .group_by("call")
        .agg(pl.col("ns").sum())
        .sort(["ns", "call"], descending=[True, False])
    )
    named = ", ".join(f"{c} {_ms(n)}" for c, n in calls.head(NAMED_CALLS).iter_rows())
    more = f" and {calls.height - NAMED_CALLS} more" if calls.height > NAMED_CALLS else ""
    # (never 0: a flagged iteration's setup time, at least 1 ms, is at most its latency)
    share = total / float(flagged.get_column("latency_ns").sum())
    one = len(indices) == 1
    spend, its, hold = ("spends", "its", "holds") if one else ("spend", "their", "hold")
    iterations = _iterations_text(indices)
    what = (
        f"{iterations} of {frame.height} {spend} {_ms(total)} ({share:.0%} of {its} latency) in setup calls "
        f"({named}{more}): CUDA initialization, memory allocation, stream, event or module creation, graph "
        "instantiation"
    )
    caveat = (
        f"{iterations} {hold} {_ms(total)} of setup calls ({named}{more}), which the projection removes as "
        "host work: a warmed-up eager run does not pay them, so against it the saving is smaller"
    )
    first = frame.get_column("index").to_list()
    leading = indices == first[: len(indices)]
    if 2 * len(indices) < frame.height:
        hint = (
            # (--skip counts from the trace's first iteration, warm-up already skipped included)
            f"; a first run's one-time costs, not the steady state: --skip {indices[-1] + 1} leaves them out"
            if leading
            else "; they count as framework overhead (other_api) in those iterations"
        )
        return [what + hint], [], caveat, indices
    doubt = (
        f"verdict uncertain: {what}. A first run pays them once (CUDA initializes inside its first call; the "
        "caching allocator's first allocations): then they are not the steady state, so profile after a "
        "warm-up (torch.profiler's schedule(wait=, warmup=, active=), or more iterations and --skip). If "
        "they recur every iteration, they are a cost the framework pays each time. They count as framework "
        "overhead (other_api)"
    )
    return [], [doubt], caveat, indices
