"""``torch.compile``: default mode (``compile``) and ``mode="reduce-overhead"`` (``compile-cudagraphs``).

``reduce-overhead`` asks Inductor for CUDA graphs (cudagraph trees) but Inductor silently falls back to
launching kernels one by one when it cannot use them (CPU tensors in the graph, mutated inputs, dynamic
shapes...; it logs "skipping cudagraphs" and counts ``counters["inductor"]["cudagraph_skips"]``).
:meth:`CompileCudaGraphsRuntime.describe` therefore reports whether graphs were really recorded.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Any

from tracekit.collectors.runtimes.base import RunContext, Runtime
from tracekit.errors import TracekitError


def require_cxx_compiler() -> str:
    """The C++ compiler TorchInductor will use for CPU kernels, found as Inductor finds it
    (``torch._inductor.config.cpp.cxx``: ``$CXX``, else ``g++``; ``clang++`` on macOS; it runs
    ``COMPILER --version``), without importing torch. A missing one is one line (TracekitError, exit 2) before
    any model is built: otherwise every configuration would build and trace the model and then fail with
    Inductor's ``InvalidCxxCompiler``. ``TORCH_INDUCTOR_INSTALL_GXX`` (Inductor installs g++ from conda
    itself) is trusted as set."""
    default = "clang++" if sys.platform == "darwin" else "g++"
    compiler = os.environ.get("CXX") or default
    if os.environ.get("TORCH_INDUCTOR_INSTALL_GXX"):
        return compiler
    found = shutil.which(compiler)
    works = False
    if found:
        try:
            subprocess.run([found, "--version"], capture_output=True, timeout=60, check=True)
            works = True
        except (OSError, subprocess.SubprocessError):
            works = False
    if not works:
        what = f"'{compiler}' (from $CXX)" if os.environ.get("CXX") else f"'{compiler}'"
        state = "does not run" if found else "not found on PATH"
        raise TracekitError(
            f"runtime 'compile' on the CPU needs a C++ compiler for TorchInductor's kernels: {what} {state}; "
            f"install one (Debian/Ubuntu: apt-get install g++) or point CXX at it"
        )
    return found or compiler


def cudagraph_skips() -> int:
    """Inductor's running count of "skipping cudagraphs" decisions in this process."""
    try:
        from torch._dynamo.utils import counters

        return int(counters["inductor"]["cudagraph_skips"])
    except Exception:
        return 0


def recorded_graphs(device_index: int) -> int:
    """CUDA graphs recorded by Inductor's cudagraph trees on ``device_index`` (0 when none, or no manager): every
    node of the trees. A function run while another graph is current is recorded as that node's child
    (``CUDAGraphNode.children``), so a forward split by graph breaks is one root and its descendants, and the
    roots alone undercount it; the walk is the one ``CUDAGraphTreeManager.shutdown`` makes."""
    try:
        from torch._inductor import cudagraph_trees

        manager = cudagraph_trees.get_manager(device_index, create_if_none_exists=False)
    except Exception:
        return 0
    if manager is None or getattr(manager, "roots", None) is None:
        return 0
    nodes = [node for roots in manager.roots.values() for node in roots]
    count = 0
    while nodes:
        node = nodes.pop()
        count += 1
        for children in (getattr(node, "children", None) or {}).values():
            nodes.extend(children)
    return count


class CompileRuntime(Runtime):
    name = "compile"
    mode: str | None = None

    def prepare(self, ctx: RunContext) -> None:
        import torch

        super().prepare(ctx)
        self._skips_before = cudagraph_skips()
        self.module = torch.compile(ctx.model.module, mode=self.mode, dynamic=False)
        # Compile now, not inside the first timed iteration (warm-up runs follow anyway).
        with torch.inference_mode():
            self.module(*ctx.inputs)
        self.sync()

    def run(self) -> Any:
        import torch

        with torch.inference_mode():
            return self.module(*self.ctx.inputs)

    def describe(self) -> dict[str, Any]:
        return {"runtime": self.name, "mode": self.mode or "default"}


class CompileCudaGraphsRuntime(CompileRuntime):
    name = "compile-cudagraphs"
    mode = "reduce-overhead"
    needs_cuda = True
    captures_graphs = True

    def describe(self) -> dict[str, Any]:
        """Adds ``cuda_graphs_used`` (graphs recorded and no skip), ``graphs_recorded`` and
        ``cudagraph_skips`` (Inductor's skip decisions since :meth:`prepare`).

        ``graphs_recorded`` is what Inductor's cudagraph trees hold on the device in this process: a fresh worker
        process per run (the default) gives the configuration's own graphs, but an ``--in-process`` sweep adds
        up its configurations (the H200 check's compile-cudagraphs b8 read 2: b1's graph and its own; its
        traces launch 1 graph per iteration). Which graphs a configuration replayed is in its trace."""
        index = self.ctx.cuda_index if self.ctx is not None else None
        graphs = recorded_graphs(index) if index is not None else 0
        skips = cudagraph_skips() - getattr(self, "_skips_before", 0)
        return {
            "runtime": self.name,
            "mode": self.mode,
            "cuda_graphs_used": graphs > 0 and skips == 0,
            "graphs_recorded": graphs,
            "cudagraph_skips": skips,
        }
