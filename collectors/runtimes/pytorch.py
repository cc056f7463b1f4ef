"""PyTorch eager execution under ``torch.inference_mode``."""

from __future__ import annotations

from typing import Any

from tracekit.collectors.runtimes.base import RunContext, Runtime


class PyTorchRuntime(Runtime):
    name = "pytorch"
    eager_torch = True

    def prepare(self, ctx: RunContext) -> None:
        super().prepare(ctx)
        self.module = ctx.model.module

    def run(self) -> Any:
        import torch

        with torch.inference_mode():
            return self.module(*self.ctx.inputs)
