"""Inputs shared by every runtime: random token ids with an all-ones attention mask, or random images."""

from __future__ import annotations

from typing import Any

from tracekit.collectors.zoo import IMAGE_SIZE, BuiltModel


def make_inputs(
    model: BuiltModel, batch_size: int, seq_len: int, device: str, precision: str, seed: int = 0
) -> tuple[Any, ...]:
    """Positional input tensors for ``model`` on ``device`` (same seed -> same inputs for every runtime).

    Text: ``input_ids`` (int64, uniform in [0, vocab)) and ``attention_mask`` (int64 ones), shape
    (batch_size, seq_len). Image: ``pixel_values`` (batch_size, 3, seq_len, seq_len), float32 or float16.
    """
    import torch

    gen = torch.Generator().manual_seed(seed)
    if model.kind == "image":
        side = seq_len or IMAGE_SIZE
        pixels = torch.randn(batch_size, 3, side, side, generator=gen)
        if precision == "fp16":
            pixels = pixels.half()
        return (pixels.to(device),)
    vocab = max(2, model.vocab_size)
    ids = torch.randint(0, vocab, (batch_size, seq_len), generator=gen, dtype=torch.long)
    mask = torch.ones(batch_size, seq_len, dtype=torch.long)
    return (ids.to(device), mask.to(device))
