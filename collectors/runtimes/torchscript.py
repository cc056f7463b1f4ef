"""TorchScript: ``torch.jit.trace`` of the wrapped model on the configuration's inputs, then ``torch.jit.freeze``."""

from __future__ import annotations

import warnings
from typing import Any

from tracekit.collectors.runtimes.base import RunContext, Runtime


class TorchScriptRuntime(Runtime):
    name = "torchscript"

    def prepare(self, ctx: RunContext) -> None:
        import torch

        super().prepare(ctx)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer warnings about Python booleans in transformers' masking
            traced = torch.jit.trace(ctx.model.module, ctx.inputs, check_trace=False, strict=False)
            self.module = torch.jit.freeze(traced.eval())

    def run(self) -> Any:
        import torch

        with torch.no_grad():
            return self.module(*self.ctx.inputs)

    def describe(self) -> dict[str, Any]:
        return {"runtime": self.name, "method": "torch.jit.trace + torch.jit.freeze"}
