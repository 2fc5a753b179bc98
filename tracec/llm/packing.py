"""Weights laid out for decoding on CPU.

``nn.Linear`` keeps its weight ``[out, in]`` row-major and computes ``x @ W.T``. For the few rows
of a decode step, the CPU BLAS is faster on a column-major weight, whose transpose ``[in, out]``
is row-major (measured on SmolLM2-135M, fp32, one thread: a 576×1536 projection of one row
reads its weight at 13.6 GB/s instead of 8.9 GB/s; benchmarks/README.md). Re-striding a frozen
weight changes no value and no shape: every module, adapter and hook sees the same tensor, and
the products are the same up to summation order (tested equal on the engine's greedy tokens).
"""

from __future__ import annotations

from typing import Any


def pack_for_decode(model: Any) -> int:
    """Give every frozen, row-major ``nn.Linear`` weight of ``model`` on CPU a column-major
    layout (in place; values and shapes unchanged). Weights shared with another module (a tied
    embedding, whose row lookups want rows) and trainable ones are left as they are. Returns the
    number of weights re-laid."""
    import torch

    tied = {id(p) for m in model.modules() if isinstance(m, torch.nn.Embedding) for p in m.parameters()}
    done = 0
    with torch.no_grad():
        for module in model.modules():
            if not isinstance(module, torch.nn.Linear):
                continue
            w = module.weight
            if (w.requires_grad or id(w) in tied or w.device.type != "cpu" or w.dim() != 2
                    or not w.is_contiguous() or min(w.shape) < 2):
                continue
            w.data = w.data.t().contiguous().t()
            done += 1
    return done
