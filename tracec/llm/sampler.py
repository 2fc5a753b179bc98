"""Sampling of the local engine: one ``torch.Generator`` per request, seeded from the run's seed
and the request's identity (:func:`~tracec.llm.serving.request_seed`, the serving engine's too), so that a request's tokens never depend on
which requests share its batch, and no global torch seed is touched.

The distribution is the one of ``transformers.generate`` with ``top_k=0, top_p=1``:
``softmax(logits / T)`` then ``torch.multinomial``; ``T = 0`` is argmax.
"""

from __future__ import annotations

import torch

from tracec.llm.serving import SEED_MOD, request_seed

__all__ = ["draw_seed", "generator", "request_seed", "select"]


def generator(seed: int, device: object = "cpu") -> torch.Generator:
    """A fresh generator for one request, on the device its logits are on."""
    return torch.Generator(device=device).manual_seed(int(seed))


def draw_seed() -> int:
    """A run seed drawn from torch's global generator: an engine built after
    ``torch.manual_seed(s)`` samples reproducibly without being given a seed."""
    return int(torch.randint(0, SEED_MOD, (), dtype=torch.long))


def select(logits: torch.Tensor, temperature: float,
           generators: list[torch.Generator | None]) -> list[int]:
    """One token per row of ``logits`` ``[B, V]``: argmax at ``temperature`` 0, else a draw
    from ``softmax(logits / T)`` with row ``r``'s own generator."""
    scores = logits.to(torch.float32)
    if temperature <= 0:
        return torch.argmax(scores, dim=-1).tolist()
    probs = torch.softmax(scores / temperature, dim=-1)
    return [int(torch.multinomial(probs[r], 1, generator=g)) for r, g in enumerate(generators)]
