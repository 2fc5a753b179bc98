"""Keys/values of token prefixes, kept across batches, turns and episodes (one LRU cache).

An entry holds the per-layer keys and values ``[1, H, n, D]`` of a token sequence, computed under
one set of weights (``key``: a model whose weights change between calls passes another key, and
only entries of the same key are reused). A lookup matches a new token sequence against *every*
entry by longest common prefix, so a prompt reuses the system prompt and tool schemas of any
earlier conversation, and a later turn of a conversation reuses that conversation's earlier
turns. Memory is bounded in bytes; the least recently used entries go first.

Entries are read-only: callers copy or view them, never write into them.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_BYTES = 1 << 30  # 1 GiB: ~23k tokens of SmolLM2-135M in fp32


def common_prefix(a: list[int] | tuple[int, ...], b: list[int] | tuple[int, ...]) -> int:
    """Length of the longest common prefix of two token sequences (binary search over slice
    equality: C-speed comparisons, O(n log n))."""
    lo, hi = 0, min(len(a), len(b))
    if list(a[:hi]) == list(b[:hi]):
        return hi
    while lo < hi:  # invariant: a[:lo] == b[:lo] and a[:hi+1] != b[:hi+1]
        mid = (lo + hi + 1) // 2
        if list(a[:mid]) == list(b[:mid]):
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass
class Entry:
    """Keys/values of ``ids`` under the weights named ``key``."""

    key: Any
    ids: tuple[int, ...]
    keys: list[Any]  # per layer, [1, H, len(ids), D]
    values: list[Any]

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (*self.keys, *self.values))

    def head(self, n: int) -> tuple[list[Any], list[Any]]:
        """Views of the first ``n`` positions (no copy)."""
        return [k[:, :, :n] for k in self.keys], [v[:, :, :n] for v in self.values]


class PrefixCache:
    """An LRU cache of prefix keys/values, bounded by ``max_bytes`` (see the module doc).

    ``min_tokens``: a match shorter than this is not worth a lookup's bookkeeping and is
    reported as none."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES, min_tokens: int = 16) -> None:
        self.max_bytes = int(max_bytes)
        self.min_tokens = max(1, int(min_tokens))
        self._entries: OrderedDict[int, Entry] = OrderedDict()  # id -> entry, least recent first
        self._next = 0
        self.hits = 0  # tokens served from the cache
        self.lookups = 0

    @property
    def entries(self) -> list[Entry]:
        """The entries, least recently used first."""
        return list(self._entries.values())

    @property
    def nbytes(self) -> int:
        return sum(e.nbytes for e in self._entries.values())

    def match(self, ids: list[int], key: Any = None) -> tuple[int, Entry | None]:
        """``(n, entry)``: the entry of ``key`` sharing the longest prefix with ``ids`` and that
        prefix's length (``(0, None)`` below ``min_tokens``); the entry becomes most recent."""
        self.lookups += 1
        best, best_n, best_id = None, 0, None
        for eid, entry in self._entries.items():
            if entry.key != key:
                continue
            n = common_prefix(entry.ids, ids)
            if n > best_n or (n == best_n and best_id is not None and eid < best_id):
                # ties go to the entry inserted first: conversations then share one copy
                best, best_n, best_id = entry, n, eid
        if best is None or best_n < self.min_tokens:
            return 0, None
        self._entries.move_to_end(best_id)
        self.hits += best_n
        return best_n, best

    def insert(self, ids: list[int], keys: list[Any], values: list[Any], key: Any = None) -> Entry:
        """Store the keys/values of ``ids`` (taken over, not copied). Entries of ``key`` whose
        tokens are a prefix of ``ids`` are dropped (the new entry serves them); then the least
        recently used entries go until the cache fits ``max_bytes``."""
        entry = Entry(key, tuple(ids), list(keys), list(values))
        for eid, old in list(self._entries.items()):
            if old.key == key and len(old.ids) <= len(entry.ids) and entry.ids[: len(old.ids)] == old.ids:
                del self._entries[eid]
        if entry.nbytes > self.max_bytes:
            return entry  # larger than the whole cache: used once, not kept
        self._entries[self._next] = entry
        self._next += 1
        total = self.nbytes
        while total > self.max_bytes and self._entries:
            _, old = self._entries.popitem(last=False)
            total -= old.nbytes
        return entry

    def clear(self) -> None:
        self._entries.clear()
