"""PyTorch + CUDA Graphs: capture one inference with ``torch.cuda.CUDAGraph`` on static inputs, replay it."""

from __future__ import annotations

from typing import Any

from tracekit.collectors.runtimes.base import RunContext, Runtime


class CudaGraphsRuntime(Runtime):
    name = "cuda-graphs"
    needs_cuda = True

    def prepare(self, ctx: RunContext) -> None:
        import torch

        super().prepare(ctx)
        module = ctx.model.module
        self.static_inputs = tuple(t.clone() for t in ctx.inputs)
        # Warm up on a side stream before capture (as the CUDA Graphs documentation requires).
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.inference_mode():
            for _ in range(3):
                module(*self.static_inputs)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph), torch.inference_mode():
            self.static_output = module(*self.static_inputs)
        torch.cuda.synchronize()

    def run(self) -> Any:
        self.graph.replay()
        return self.static_output

    def describe(self) -> dict[str, Any]:
        return {"runtime": self.name, "method": "torch.cuda.CUDAGraph capture + replay"}

    def close(self) -> None:
        self.graph = None
