"""A transformers ``DynamicCache`` that writes into preallocated key/value buffers in place.

``DynamicCache`` grows by ``torch.cat`` on every forward, so a decode step copies the whole cache
(for a 5k-token τ² system prompt: ~250 MB per row per step). Buffer layers hold the same values
in a buffer sized once for the whole generation; the attention reads views of the filled part.
"""

from __future__ import annotations

from typing import Any


def buffer_cache(keys: list[Any], values: list[Any], length: int):
    """A cache over per-layer buffers ``[B, H, capacity, D]`` whose first ``length`` positions are
    filled; ``update`` writes new keys/values after them."""
    from transformers.cache_utils import DynamicCache, DynamicLayer

    class BufferLayer(DynamicLayer):
        def __init__(self, kbuf, vbuf, n: int) -> None:
            super().__init__()
            self.kbuf, self.vbuf, self.n = kbuf, vbuf, n
            self.device = kbuf.device
            self.dtype = kbuf.dtype
            self.is_initialized = True
            self.keys, self.values = kbuf[:, :, :n], vbuf[:, :, :n]

        def update(self, key_states, value_states, *args, **kwargs):
            m = key_states.shape[-2]
            if self.n + m > self.kbuf.shape[-2]:
                raise RuntimeError(f"KV buffer of {self.kbuf.shape[-2]} positions is full")
            self.kbuf[:, :, self.n: self.n + m] = key_states
            self.vbuf[:, :, self.n: self.n + m] = value_states
            self.n += m
            self.keys, self.values = self.kbuf[:, :, :self.n], self.vbuf[:, :, :self.n]
            return self.keys, self.values

        def get_seq_length(self) -> int:
            return self.n

    cache = DynamicCache()
    cache.layers = [BufferLayer(k, v, length) for k, v in zip(keys, values)]
    return cache
