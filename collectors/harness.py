"""The timing harness: warm-up, then timed iterations, each in an NVTX range and device-synchronised.

Warm-up iterations run inside NVTX ranges named ``warmup`` and timed ones inside ``iteration`` (so a trace's
``iteration`` ranges are exactly the timed iterations). Each iteration ends with a device synchronisation
inside its range, so the range length is the iteration's latency including GPU completion.

NVTX and Nsight Systems 2022.4: the ``nvtx`` Python package (from 0.2.12 on) asks the injected tool
``nvtxDomainIsEnabled`` before handing out a domain and, when the tool does not implement that newer
callback (Nsight Systems 2022.4 does not), silently returns a dummy domain that emits nothing. :class:`Nvtx`
therefore builds the ``nvtx`` domain without that check (the push/pop calls themselves work with every
Nsight version) and falls back to ``nvtx.push_range``/``pop_range`` when the package's internals differ.
With no tool attached, NVTX calls are no-ops either way.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


class Nvtx:
    """Push/pop NVTX ranges in the default domain, working with old Nsight Systems (see module doc)."""

    def __init__(self) -> None:
        self._attrs: dict[str, Any] = {}
        self._push: Callable[[str], None]
        self._pop: Callable[[], None]
        self.method = "none"
        try:
            from nvtx._lib import lib as nvtx_lib

            if not hasattr(nvtx_lib.Domain, "get_event_attributes"):  # added in nvtx 0.2.11
                raise AttributeError("nvtx < 0.2.11: no Domain.get_event_attributes")
            handle = nvtx_lib.DomainHandle(None)
            domain = object.__new__(nvtx_lib.Domain)
            domain.handle = handle
            domain.__init__(None)
            push_range, pop_range = nvtx_lib.push_range, nvtx_lib.pop_range

            def push(name: str) -> None:
                attrs = self._attrs.get(name)
                if attrs is None:
                    attrs = self._attrs[name] = domain.get_event_attributes(message=name)
                push_range(attrs, handle)

            def pop() -> None:
                pop_range(handle)

            self._push, self._pop = push, pop
            self.method = "nvtx-domain"
        except Exception:  # older/newer nvtx layouts: the public API (fine with nvtx<=0.2.11 or new nsys)
            try:
                import nvtx

                self._push = lambda name: nvtx.push_range(name)
                self._pop = lambda: nvtx.pop_range()
                self.method = "nvtx-public"
            except Exception:
                self._use_torch_nvtx()

    def _use_torch_nvtx(self) -> None:
        """Plain ``nvtxRangePushA``/``nvtxRangePop`` through torch's CUDA build (no ``nvtx`` package needed);
        no-ops on a torch without NVTX (CPU builds)."""
        try:
            import torch

            torch.cuda.nvtx.range_push("tracekit")  # CPU builds raise here: no NVTX in them
            torch.cuda.nvtx.range_pop()
            self._push = lambda name: torch.cuda.nvtx.range_push(name)
            self._pop = lambda: torch.cuda.nvtx.range_pop()
            self.method = "torch-cuda-nvtx"
        except Exception:
            self._push = lambda name: None
            self._pop = lambda: None
            self.method = "none"

    def push(self, name: str) -> None:
        self._push(name)

    def pop(self) -> None:
        self._pop()

    @contextlib.contextmanager
    def range(self, name: str) -> Iterator[None]:
        self._push(name)
        try:
            yield
        finally:
            self._pop()


_NVTX: Nvtx | None = None


def use_plain_nvtx() -> Nvtx:
    """Make the process-wide emitter push plain ASCII messages (``torch.cuda.nvtx``): the ``nvtx`` package
    may register its strings, and Nsight Compute's ``--nvtx-include`` filter is documented for plain push/pop
    range names. Used by ncu runs."""
    global _NVTX
    _NVTX = Nvtx.__new__(Nvtx)
    _NVTX._attrs = {}
    _NVTX._use_torch_nvtx()
    return _NVTX


def nvtx_ranges() -> Nvtx:
    """The process-wide :class:`Nvtx` emitter."""
    global _NVTX
    if _NVTX is None:
        _NVTX = Nvtx()
    return _NVTX


def operator_ranges(device: str) -> contextlib.AbstractContextManager[Any]:
    """A context that puts one NVTX range around every torch operator (eager PyTorch under nsys).

    On CUDA builds this is ``torch.autograd.profiler.emit_nvtx()``. CPU builds of torch lack NVTX, so a
    ``TorchDispatchMode`` pushes an ``aten::<op>`` range around each ATen call instead (a Python call per
    operator: part of the profiler perturbation that the traced/untraced ratio reports).
    """
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.autograd.profiler.emit_nvtx(record_shapes=False)
    from torch.utils._python_dispatch import TorchDispatchMode

    ranges = nvtx_ranges()
    names: dict[Any, str] = {}

    class _NvtxOps(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            name = names.get(func)
            if name is None:
                name = names[func] = f"aten::{func.overloadpacket.__name__}"
            ranges.push(name)
            try:
                return func(*args, **(kwargs or {}))
            finally:
                ranges.pop()

    return _NvtxOps()


def time_iterations(
    run: Callable[[], Any],
    sync: Callable[[], None],
    warmup: int,
    iters: int,
    range_name: str = "iteration",
    record_function: bool = False,
    op_ranges: Callable[[], contextlib.AbstractContextManager[Any]] | None = None,
    on_iteration: Callable[[], None] | None = None,
    cpu_ms: list[float] | None = None,
    budget: TimingBudget | None = None,
    preempted: list[int] | None = None,
) -> list[float]:
    """Run ``warmup`` + ``iters`` iterations; return the timed iterations' latencies in milliseconds.

    ``cpu_ms``, when given, receives each timed iteration's process CPU time (``time.process_time_ns``, every
    thread of the process) over the same span, in ms: what the stability rules compare with wall time to tell
    CPU time stolen by another process (:mod:`tracekit.analyzers.stability`); ``preempted`` the process'
    involuntary context switches in each (``getrusage``'s ``ru_nivcsw``, every thread: the scheduler took a
    CPU from it for another runnable thread). ``budget``: keep timing past
    ``iters`` as :class:`TimingBudget` says (``iters`` is then the least number of timed iterations).

    Latency = wall time (``time.perf_counter_ns``) from just before the NVTX push to just after the device
    sync that closes the iteration. ``record_function`` adds a ``torch.profiler.record_function(range_name)``
    (torch.profiler annotation) per iteration. ``op_ranges`` (an operator-range context such as
    ``torch.autograd.profiler.emit_nvtx``) is entered **once** around the whole timed loop, after the warm-up:
    entering and leaving emit_nvtx synchronizes the device and toggles the profiler, which must not be
    counted as any iteration's latency.
    """
    nv = nvtx_ranges()
    for _ in range(warmup):
        with nv.range("warmup"):
            run()
            sync()
        if on_iteration:
            on_iteration()
    latencies: list[float] = []
    rf: Callable[[str], contextlib.AbstractContextManager[Any]] | None = None
    if record_function:
        import torch

        rf = torch.profiler.record_function
    began = time.perf_counter()
    with op_ranges() if op_ranges else contextlib.nullcontext():
        while len(latencies) < iters or (
            budget is not None and not budget.done(latencies, time.perf_counter() - began)
        ):
            start = time.perf_counter_ns()
            cpu_start = time.process_time_ns()
            switches = _involuntary_switches() if preempted is not None else 0
            nv.push(range_name)
            try:
                with rf(range_name) if rf else contextlib.nullcontext():
                    run()
                    sync()
            finally:
                nv.pop()
            latencies.append((time.perf_counter_ns() - start) / 1e6)
            if cpu_ms is not None:
                cpu_ms.append((time.process_time_ns() - cpu_start) / 1e6)
            if preempted is not None:
                preempted.append(_involuntary_switches() - switches)
            if on_iteration:
                on_iteration()
    return latencies


def _involuntary_switches() -> int:
    """The process' involuntary context switches so far (0 where ``resource`` is missing: Windows)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Linux/macOS
        return 0
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw)


@dataclass
class TimingBudget:
    """Adaptive timing of one set (``tracekit collect --min-time/--max-time``), as pyperf and hyperfine do it.

    After the set's least number of iterations, timing goes on until the 95% interval of the median is within
    ``target`` (fraction) of the median (:func:`tracekit.analyzers.stability.is_tight`, on the iterations its
    rules keep) and at least ``min_time_s`` of timed iterations have passed, or until ``max_time_s`` have
    passed or ``max_iters`` iterations were timed, whichever comes first. The interval is checked at
    iteration counts growing by 10% (and every iteration while the time limits decide), so the check costs
    little next to the iterations. ``max_time_s`` 0: exactly the least number of iterations.
    """

    min_time_s: float = 1.0
    max_time_s: float = 30.0
    target: float = 0.02
    max_iters: int = 100_000
    stopped_by: str | None = None
    _next_check: int = 0

    def done(self, latencies: list[float], elapsed_s: float) -> bool:
        """Whether to stop timing now (``stopped_by`` says why: "max_time", "max_iters" or "tight")."""
        if elapsed_s >= self.max_time_s:
            self.stopped_by = "max_time"
            return True
        if len(latencies) >= self.max_iters:
            self.stopped_by = "max_iters"
            return True
        if elapsed_s < self.min_time_s or len(latencies) < self._next_check:
            return False
        from tracekit.analyzers.stability import is_tight, measure

        self._next_check = max(len(latencies) + 1, int(len(latencies) * 1.1))
        if is_tight(measure(latencies), self.target):
            self.stopped_by = "tight"
            return True
        return False
