"""``torch.compile``: default mode (``compile``) and ``mode="reduce-overhead"`` (``compile-cudagraphs``)."""

from __future__ import annotations

from typing import Any

from tracekit.collectors.runtimes.base import RunContext, Runtime


class CompileRuntime(Runtime):
    name = "compile"
    mode: str | None = None

    def prepare(self, ctx: RunContext) -> None:
        import torch

        super().prepare(ctx)
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
