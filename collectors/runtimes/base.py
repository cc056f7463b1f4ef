"""The runtime adapter interface: prepare once, run once (output left on the device), describe."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class RunContext:
    """Everything a runtime needs to prepare one configuration.

    ``model`` is a :class:`tracekit.collectors.zoo.BuiltModel` (already on ``device`` and in ``precision``), ``inputs`` the
    positional input tensors on ``device``. ``ort_profile_prefix``: when set, ONNX Runtime profiling is enabled
    with that file prefix (the ``ort`` profiler). ``opset``: ONNX opset for exports.
    """

    model: Any
    inputs: tuple[Any, ...]
    device: str
    precision: str
    opset: int = 17
    ort_profile_prefix: str | None = None
    #: TF32 for fp32 matmuls/convolutions: the same setting for torch and ONNX Runtime (``use_tf32``).
    tf32: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def cuda_index(self) -> int | None:
        """N of ``cuda:N`` (0 for plain ``cuda``), None on the CPU."""
        return cuda_index(self.device)


def cuda_index(device: str) -> int | None:
    """N of ``cuda:N`` (0 for ``cuda``), None for a non-CUDA device."""
    if not device.startswith("cuda"):
        return None
    return int(device.split(":")[1]) if ":" in device else 0


class Runtime:
    """One way of executing a model. Subclasses set ``name`` and implement :meth:`prepare` and :meth:`run`."""

    name: str = ""
    #: True when the runtime cannot run without a CUDA device (it then refuses with one line).
    needs_cuda: bool = False
    #: True when torch operators run eagerly in Python (operator NVTX ranges are meaningful).
    eager_torch: bool = False
    #: True when the runtime replays captured CUDA graphs (needs >= 2 warm-up runs; torch.profiler workaround).
    captures_graphs: bool = False

    def __init__(self) -> None:
        self.ctx: RunContext | None = None

    def prepare(self, ctx: RunContext) -> None:
        """Build whatever the runtime needs (trace, capture, compile, export + session)."""
        self.ctx = ctx

    def run(self) -> Any:
        """Execute one inference on the prepared inputs; the output stays on the device (not copied back)."""
        raise NotImplementedError

    def sync(self) -> None:
        """Wait until the run's device (``cuda:N``, not the current device) has finished all work issued."""
        if self.ctx is not None and self.ctx.device.startswith("cuda"):
            import torch

            torch.cuda.synchronize(self.ctx.device)

    def describe(self) -> dict[str, Any]:
        """What ran, for run.json (e.g. execution providers, compile mode)."""
        return {"runtime": self.name}

    def end_profiling(self) -> str | None:
        """Stop runtime-internal profiling and return the profile file written (ORT), else None."""
        return None

    def close(self) -> None:
        """Release sessions and graphs."""
