"""PyTorch + CUDA Graphs: capture one inference with ``torch.cuda.CUDAGraph`` on static inputs, replay it.

Everything (side stream, warm-up, capture, replay, sync) happens on the run's device ``cuda:N``: the worker
makes it the current device (``torch.cuda.set_device``) and this runtime also names it explicitly, because
``torch.cuda.Stream()`` and ``torch.cuda.synchronize()`` without a device act on the *current* device.
The warm-up runs the very callable, inputs and attention path that the capture records (the model's mask
creation is capture-safe, see :mod:`tracekit.collectors.zoo`), so capture records no first-run work.
"""

from __future__ import annotations

from typing import Any

from tracekit.collectors.runtimes.base import RunContext, Runtime

#: Side-stream warm-up runs before capture (the CUDA Graphs documentation asks for a few).
CAPTURE_WARMUP = 3


class CudaGraphsRuntime(Runtime):
    name = "cuda-graphs"
    needs_cuda = True
    captures_graphs = True

    def prepare(self, ctx: RunContext) -> None:
        import torch

        super().prepare(ctx)
        device = torch.device(ctx.device)
        module = ctx.model.module
        self.static_inputs = tuple(t.clone() for t in ctx.inputs)
        with torch.cuda.device(device):
            # Warm up on a side stream of the run's device before capture (as the CUDA Graphs docs require).
            side = torch.cuda.Stream(device=device)
            side.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(side), torch.inference_mode():
                for _ in range(CAPTURE_WARMUP):
                    module(*self.static_inputs)
            torch.cuda.current_stream(device).wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph), torch.inference_mode():
                self.static_output = module(*self.static_inputs)
        torch.cuda.synchronize(device)

    def run(self) -> Any:
        self.graph.replay()
        return self.static_output

    def describe(self) -> dict[str, Any]:
        return {
            "runtime": self.name,
            "method": "torch.cuda.CUDAGraph capture + replay",
            "capture_warmup_runs": CAPTURE_WARMUP,
            "cuda_graphs_used": True,
        }

    def close(self) -> None:
        self.graph = None
