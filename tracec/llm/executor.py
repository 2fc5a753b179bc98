"""The engine's executor: every forward and every key/value the engine keeps.

* **Conversations** (:meth:`Executor.start_many`, :meth:`Executor.finish`): a prompt is matched
  against the shared :class:`~tracec.llm.kvcache.PrefixCache` and only the tokens after the
  match are prefilled, rows of similar lengths in one padded forward (:func:`plan_buckets`),
  each attending to its matched entry's single copy; a conversation's own keys/values stay with
  it across turns.
* **A batch** (:meth:`Executor.open` … :meth:`Executor.close`): per-layer buffers
  ``[rows, Hkv, capacity, D]`` sized once; a row is laid out as
  ``[holes | own cached tokens | holes | new tokens | generated …]``, holes masked out and RoPE
  positions given per row, so each row computes what a fresh, unpadded forward of its own
  conversation would (up to floating-point summation order). Rows whose conversations share a
  cached prompt attend to one copy of it (:mod:`tracec.llm.split_attention`).
* **Forwards** go through the lean Llama forward (:mod:`tracec.llm.lean`) where it applies,
  else transformers' forward with the state passed per call.
"""

from __future__ import annotations

import inspect
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers.cache_utils import DynamicCache

from tracec.llm.kvbuffer import buffer_cache
from tracec.llm.kvcache import Entry, PrefixCache
from tracec.llm.lean import LeanLlama, eligible, lean_forward
from tracec.llm.scheduler import Request
from tracec.llm.split_attention import SplitState, split_forward, supported

PREFILL_CHUNK = 1024  # tokens per prefill forward: bounds the attention working set
# A forward's fixed cost (streaming every weight once, the per-layer Python), in prefill tokens:
# rows of different lengths share a forward when that costs less than their padding.
FORWARD_OVERHEAD_TOKENS = 32


def plan_buckets(lengths: list[int], overhead: int = FORWARD_OVERHEAD_TOKENS,
                 max_tokens: int = PREFILL_CHUNK) -> list[tuple[int, int]]:
    """Split rows of new-token ``lengths`` (sorted longest first) into runs ``[lo, hi)``, one
    padded forward each, minimising Σ (``overhead`` + rows × the run's longest length); a run of
    more than one row holds at most ``max_tokens`` padded tokens."""
    n = len(lengths)
    if any(a < b for a, b in itertools.pairwise(lengths)):
        raise ValueError("lengths must be sorted longest first")
    best = [0.0] + [float("inf")] * n  # best[j]: cost of rows [0, j)
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        for i in range(j - 1, -1, -1):
            padded = (j - i) * lengths[i]
            if j - i > 1 and padded > max_tokens:
                break
            cost = best[i] + overhead + padded
            if cost < best[j]:
                best[j], cut[j] = cost, i
    runs, j = [], n
    while j > 0:
        runs.append((cut[j], j))
        j = cut[j]
    return runs[::-1]


def prefix_groups(members: list[tuple[int, Entry, int]], device: Any) -> list[tuple]:
    """Shared-prefix attention groups (:class:`~tracec.llm.split_attention.SplitState`) of rows
    ``(row index, cache entry, prefix length)``: one group per entry, over its first
    ``max(length)`` positions, with a ``visible`` mask where rows use fewer of them."""
    found: dict[int, tuple[list[int], list[int], Entry]] = {}
    for row, entry, n in members:
        rows, lengths, _ = found.setdefault(id(entry), ([], [], entry))
        rows.append(row)
        lengths.append(n)
    groups = []
    for rows, lengths, entry in found.values():
        n = max(lengths)
        keys, values = entry.head(n)
        visible = None  # rows that use fewer of the entry's positions mask the others
        if min(lengths) < n:
            visible = torch.arange(n, device=device)[None] < torch.tensor(lengths, device=device)[:, None]
        groups.append((torch.tensor(rows, device=device), keys, values, visible))
    return groups


def left_padded(tails: list[list[int]], starts: list[int], width: int, pad: int, device: Any
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids, positions)`` ``[rows, width]``: each row's new tokens right-aligned after pad
    holes, at RoPE positions from its ``start`` (holes take ``start``; they are masked anyway)."""
    ids = torch.full((len(tails), width), pad, dtype=torch.long, device=device)
    pos = torch.zeros(len(tails), width, dtype=torch.long, device=device)
    for r, (tail, start) in enumerate(zip(tails, starts)):
        q = len(tail)
        ids[r, width - q:] = torch.tensor(tail, device=device)
        pos[r] = start
        pos[r, width - q:] = torch.arange(start, start + q, device=device)
    return ids, pos


def cache_kwarg(model) -> str:
    """Name of the cache argument of the wrapped transformers model (``cache`` from 5.x)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    params = inspect.signature(base.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def empty_kv(rows: int, cap: int, like: list[torch.Tensor]) -> list[torch.Tensor]:
    """Zeroed per-layer buffers ``[rows, H, cap, D]`` shaped like ``like``'s layers."""
    return [torch.zeros(rows, t.shape[1], cap, t.shape[3], dtype=t.dtype, device=t.device)
            for t in like]


@dataclass
class Conversation:
    """A conversation's cached keys/values: a shared cache entry's first ``n_prefix`` positions,
    then its own (``[1, H, m, D]`` per layer)."""

    entry: Entry
    n_prefix: int
    ids: list[int]  # the tokens whose keys/values are cached
    own_keys: list[torch.Tensor] | None = None
    own_values: list[torch.Tensor] | None = None

    @property
    def cached(self) -> int:
        return len(self.ids)

    @property
    def own(self) -> int:
        return 0 if self.own_keys is None else self.own_keys[0].shape[-2]


@dataclass
class EngineStats:
    """Work done, for the efficiency benchmark: tokens forwarded and decode steps."""

    prefill_tokens: int = 0  # tokens forwarded in prefill (cached prefixes not counted)
    prefill_seconds: float = 0.0
    decode_steps: int = 0
    decode_rows: list[int] = field(default_factory=list)  # batch size of each decode step
    decode_seconds: float = 0.0
    cached_tokens: int = 0  # prompt tokens served from the prefix cache
    peak_row_positions: int = 0  # most rows × buffer positions one batch held


class Forward:
    """One model forward over per-layer KV buffers → next-token logits of the last position:
    the lean Llama forward where it applies, else transformers' (with shared-prefix attention
    switched on around it when ``state`` has groups)."""

    def __init__(self, model, lean: bool | None = None) -> None:
        self.model = model
        self.kw = cache_kwarg(model)
        self.lean = lean_forward(model) if (lean is None or lean) and eligible(model) else None

    def _lean(self) -> LeanLlama | None:
        """The lean forward, fused again if the model's weights were rebound since; None while
        it does not compute the model's (LoRA dropout in training mode)."""
        if self.lean is not None and not self.lean.current():
            self.lean = lean_forward(self.model)
        return self.lean if self.lean is not None and self.lean.applies() else None

    def __call__(self, ids: torch.Tensor, pos: torch.Tensor, keys: list[torch.Tensor],
                 values: list[torch.Tensor], cached: int, state: SplitState, split: bool) -> torch.Tensor:
        lean = self._lean()
        if lean is not None:
            return lean.forward(ids, pos, keys, values, cached, state)
        kwargs = {self.kw: buffer_cache(keys, values, cached)}
        if not split:
            return self.model(input_ids=ids, attention_mask=state.mask, position_ids=pos,
                              use_cache=True, logits_to_keep=1, **kwargs).logits[:, -1]
        with split_forward(self.model):
            return self.model(input_ids=ids, attention_mask=state.mask, position_ids=pos,
                              use_cache=True, logits_to_keep=1, split_state=state,
                              **kwargs).logits[:, -1]

    def first(self, ids: list[int], device: Any) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        """A prompt's first chunk with nothing cached: ``(logits, keys, values)`` (the cache's
        per-layer shapes are the model's)."""
        t = torch.tensor([ids], device=device)
        pos = torch.arange(len(ids), device=device)[None]
        lean = self._lean()
        if lean is not None:
            layers, heads, dim, dtype = lean.kv_layout()
            keys = [torch.zeros(1, heads, len(ids), dim, dtype=dtype, device=device) for _ in range(layers)]
            values = [torch.zeros_like(k) for k in keys]
            mask = torch.ones(1, len(ids), dtype=torch.long, device=device)
            return lean.forward(t, pos, keys, values, 0, SplitState(mask, [])), keys, values
        probe = DynamicCache()
        logits = self.model(input_ids=t, position_ids=pos, use_cache=True, logits_to_keep=1,
                            **{self.kw: probe}).logits[:, -1]
        return logits, [layer.keys for layer in probe.layers], [layer.values for layer in probe.layers]


class Executor:
    """Runs the engine's forwards and keeps every key/value (see the module doc).

    ``prefix_cache`` may be shared between engines over the same weights; ``cache_key`` names
    those weights. ``retain``: finished conversations leave their keys/values in the prefix
    cache. ``shared_prefix``: rows attend to one copy of a shared prompt (where the model's
    attention allows it). ``lean``: the lean Llama forward (None: wherever it applies)."""

    def __init__(self, model, pad_id: int, device: Any = "cpu", prefix_cache: PrefixCache | None = None,
                 cache_key: Any = None, retain: bool = False, shared_prefix: bool = True,
                 forward_overhead: int = FORWARD_OVERHEAD_TOKENS, lean: bool | None = None) -> None:
        self.forward = Forward(model, lean)
        self.pad = pad_id
        self.device = device
        self.cache = prefix_cache if prefix_cache is not None else PrefixCache()
        self.cache_key = cache_key
        self.retain = retain
        self.split = shared_prefix and (self.forward.lean is not None or supported(model))
        self.forward_overhead = forward_overhead
        self.states: dict[int, Conversation] = {}
        self.stats = EngineStats()
        self.batch: Rows | None = None

    # ------------------------------------------------------------------ conversations
    def computed(self, key: int) -> int:
        """How many of the conversation's tokens have cached keys/values."""
        return self.states[key].cached

    def _prefill(self, ids: list[int]) -> tuple[Entry, Entry | None, int]:
        """``(entry holding ids' keys/values, the cached entry it grew from, common length)``:
        the longest cached common prefix is reused and only the rest is forwarded."""
        common, best = self.cache.match(ids, self.cache_key)
        self.stats.cached_tokens += common
        if best is not None and common == len(ids):
            return best, best, common
        t0 = time.perf_counter()
        dev = self.device
        with torch.no_grad():
            if best is None:  # the first chunk gives the cache's shapes
                first = ids[:PREFILL_CHUNK]
                _, keys, values = self.forward.first(first, dev)
                kbuf, vbuf = empty_kv(1, len(ids), keys), empty_kv(1, len(ids), values)
                for i in range(len(kbuf)):
                    kbuf[i][:, :, :len(first)] = keys[i]
                    vbuf[i][:, :, :len(first)] = values[i]
                done = len(first)
                self.stats.prefill_tokens += len(first)
            else:
                kbuf, vbuf = empty_kv(1, len(ids), best.keys), empty_kv(1, len(ids), best.values)
                for i in range(len(kbuf)):
                    kbuf[i][:, :, :common] = best.keys[i][:, :, :common]
                    vbuf[i][:, :, :common] = best.values[i][:, :, :common]
                done = common
            while done < len(ids):
                part = ids[done: done + PREFILL_CHUNK]
                pos = torch.arange(done, done + len(part), device=dev)[None]
                mask = torch.ones(1, done + len(part), dtype=torch.long, device=dev)
                self.forward(torch.tensor([part], device=dev), pos, kbuf, vbuf, done,
                             SplitState(mask, []), False)
                done += len(part)
                self.stats.prefill_tokens += len(part)
        self.stats.prefill_seconds += time.perf_counter() - t0
        entry = self.cache.insert(ids, kbuf, vbuf, self.cache_key)
        return entry, best, common

    def start_many(self, items: list[tuple[int, list[int]]]) -> None:
        """Register conversations ``(key, prompt ids)``; each prompt minus its last token is
        prefilled once. A prompt that matches nothing cached is prefilled alone (the later ones
        then match it); the rest prefill only the tokens after their match, many rows per
        forward (:func:`plan_buckets`), attending to the matched entries' single copies."""
        todo = []
        for key, prompt in items:
            if len(prompt) < 2:
                raise ValueError("a prompt needs at least two tokens")
            todo.append((key, list(prompt[:-1])))
        while todo:
            batch, seen, later = [], set(), []
            for key, ids in todo:
                if tuple(ids) in seen:  # a copy of a prompt being prefilled: matches it in full next
                    later.append((key, ids))
                    continue
                common, best = self.cache.match(ids, self.cache_key)
                long_rest = len(ids) - common > PREFILL_CHUNK
                if best is not None and common == len(ids):
                    self.stats.cached_tokens += common
                    self.states[key] = Conversation(best, common, ids)
                elif best is None or long_rest or not self.split:
                    self._start_alone(key, ids)
                else:
                    batch.append((key, ids, common, best))
                    seen.add(tuple(ids))
            if batch:
                self._start_batch(batch)
            todo = later

    def _start_alone(self, key: int, ids: list[int]) -> None:
        entry, best, common = self._prefill(ids)
        if best is None or best is entry:
            self.states[key] = Conversation(entry, len(ids), ids)
        else:  # share the matched entry's head (the system prompt); the rest is the row's own
            self.states[key] = Conversation(best, common, ids, [k[:, :, common:] for k in entry.keys],
                                            [v[:, :, common:] for v in entry.values])

    def _start_batch(self, batch: list[tuple[int, list[int], int, Entry]]) -> None:
        """Prefill the uncached tails of matched prompts, rows bucketed by tail length; every
        row attends to its matched entry's head through shared-prefix attention."""
        batch = sorted(batch, key=lambda b: -(len(b[1]) - b[2]))
        tails = [len(ids) - common for _, ids, common, _ in batch]
        self.stats.cached_tokens += sum(common for _, _, common, _ in batch)
        t0 = time.perf_counter()
        dev = self.device
        for lo, hi in plan_buckets(tails, self.forward_overhead):
            rows = batch[lo:hi]
            width = tails[lo]
            n = hi - lo
            like = rows[0][3]
            kbuf, vbuf = empty_kv(n, width, like.keys), empty_kv(n, width, like.values)
            mask = torch.zeros(n, width, dtype=torch.long, device=dev)
            for r in range(n):
                mask[r, width - tails[lo + r]:] = 1
            ids, pos = left_padded([seq[common:] for _, seq, common, _ in rows],
                                   [common for _, _, common, _ in rows], width, self.pad, dev)
            groups = prefix_groups([(r, best, common) for r, (_, _, common, best) in enumerate(rows)], dev)
            with torch.no_grad():
                self.forward(ids, pos, kbuf, vbuf, 0, SplitState(mask, groups), True)
            self.stats.prefill_tokens += sum(tails[lo:hi])
            for r, (key, seq, common, best) in enumerate(rows):
                q = len(seq) - common
                own_k = [k[r: r + 1, :, width - q:].clone() for k in kbuf]
                own_v = [v[r: r + 1, :, width - q:].clone() for v in vbuf]
                head_k, head_v = best.head(common)
                self.cache.insert(seq, [torch.cat([a, b], dim=2) for a, b in zip(head_k, own_k)],
                                  [torch.cat([a, b], dim=2) for a, b in zip(head_v, own_v)],
                                  self.cache_key)
                self.states[key] = Conversation(best, common, seq, own_k, own_v)
        self.stats.prefill_seconds += time.perf_counter() - t0

    def finish(self, key: int) -> None:
        """Forget a conversation (with ``retain``, its keys/values stay in the prefix cache)."""
        conv = self.states.pop(key, None)
        if conv is None or not self.retain or not conv.own:
            return
        keys, values = conv.entry.head(conv.n_prefix)
        self.cache.insert(conv.ids, [torch.cat([a, b], dim=2) for a, b in zip(keys, conv.own_keys)],
                          [torch.cat([a, b], dim=2) for a, b in zip(values, conv.own_values)],
                          self.cache_key)

    # ------------------------------------------------------------------ a batch
    def open(self, keys: list[int]) -> None:
        """Start a batch over conversations ``keys``; the split pays off where rows share a
        prompt (a lone row attends to its own copy)."""
        shared: dict[int, int] = {}
        for k in keys:
            conv = self.states[k]
            if conv.n_prefix:
                shared[id(conv.entry)] = shared.get(id(conv.entry), 0) + 1
        self.batch = Rows(self, self.split and max(shared.values(), default=0) >= 2)

    def close(self) -> None:
        self.batch = None

    def prefill(self, assign: list[tuple[int, Request]], capacity: int) -> torch.Tensor:
        """Prefill each request's pending tokens into its row; next-token logits ``[n, V]`` in
        ``assign``'s order. ``capacity`` > 0: the batch's first rows (buffers of that many rows)."""
        assert self.batch is not None, "open() a batch first"
        t0 = time.perf_counter()
        if capacity:
            logits = self.batch.fill([req for _, req in assign], capacity)
        else:
            logits = torch.cat([self.batch.enter(r, req) for r, req in assign])
        self.stats.prefill_tokens += sum(len(req.pending) for _, req in assign)
        self.stats.prefill_seconds += time.perf_counter() - t0
        return logits

    def decode(self, requests: list[Request]) -> torch.Tensor:
        """One decode step of rows ``[0, len(requests))``, each fed its last sampled token."""
        assert self.batch is not None, "open() a batch first"
        t0 = time.perf_counter()
        logits = self.batch.decode(requests)
        self.stats.decode_seconds += time.perf_counter() - t0
        self.stats.decode_steps += 1
        self.stats.decode_rows.append(len(requests))
        return logits

    def release(self, row: int, request: Request) -> None:
        """The row's turn ended: its real tokens (all but the last sampled one) become the
        conversation's own cache."""
        assert self.batch is not None, "open() a batch first"
        self.batch.retire(row, request)

    def drop(self, row: int) -> None:
        assert self.batch is not None, "open() a batch first"
        self.batch.drop(row)


class Rows:
    """One batch's buffers: rows ``[0, live)`` of per-layer buffers ``[R, H, cap, D]`` decode
    together; buffer columns ``[0, length)`` are in use."""

    def __init__(self, ex: Executor, split: bool) -> None:
        self.ex = ex
        self.split = split
        self.starts: list[int] = []  # first buffer column of each row's cached tokens
        self.length = 0
        self._groups: list[Any] | None = None  # the prefix groups of rows _groups_span
        self._groups_span = (0, 0)

    # -- buffers
    def _alloc(self, rows: int, cap: int, like: Conversation) -> None:
        self.kbuf = empty_kv(rows, cap, like.entry.keys)
        self.vbuf = empty_kv(rows, cap, like.entry.values)
        self.mask = torch.zeros(rows, cap, dtype=torch.long, device=self.ex.device)
        self._note_size()

    def _note_size(self) -> None:
        stats = self.ex.stats
        stats.peak_row_positions = max(stats.peak_row_positions, self.mask.shape[0] * self.mask.shape[1])

    @property
    def cap(self) -> int:
        return self.kbuf[0].shape[2]

    def _cols(self, conv: Conversation) -> int:
        """Buffer columns a conversation's cached tokens take (its own ones, with the split)."""
        return conv.own if self.split else conv.cached

    def _place(self, r: int, conv: Conversation, start: int) -> None:
        """Copy a conversation's cached keys/values into row ``r`` from column ``start``."""
        n_pre = 0 if self.split else conv.n_prefix
        end = start + self._cols(conv)
        for i in range(len(self.kbuf)):
            if n_pre:
                self.kbuf[i][r, :, start: start + n_pre] = conv.entry.keys[i][0, :, :n_pre]
                self.vbuf[i][r, :, start: start + n_pre] = conv.entry.values[i][0, :, :n_pre]
            if conv.own:
                self.kbuf[i][r, :, start + n_pre: end] = conv.own_keys[i][0]
                self.vbuf[i][r, :, start + n_pre: end] = conv.own_values[i][0]
        self.mask[r] = 0
        self.mask[r, start: end] = 1
        self._groups = None

    def _make_room(self) -> None:
        """Ensure a free column after ``length``: drop the columns before every live row's
        start, else grow the buffers."""
        if self.length < self.cap:
            return
        shift = min(self.starts, default=self.length)
        if shift > 0:
            keep = self.length - shift
            for buf in (*self.kbuf, *self.vbuf):
                buf[:, :, :keep] = buf[:, :, shift: self.length].clone()
            self.mask[:, :keep] = self.mask[:, shift: self.length].clone()
            self.mask[:, keep:] = 0
            self.starts = [s - shift for s in self.starts]
            self.length = keep
            return
        self._grow(max(16, self.cap // 2))

    def _grow(self, grow: int) -> None:
        """Add ``grow`` columns to the buffers."""
        self.kbuf = [torch.cat([b, b.new_zeros(*b.shape[:2], grow, b.shape[3])], 2) for b in self.kbuf]
        self.vbuf = [torch.cat([b, b.new_zeros(*b.shape[:2], grow, b.shape[3])], 2) for b in self.vbuf]
        self.mask = torch.cat([self.mask, self.mask.new_zeros(self.mask.shape[0], grow)], 1)
        self._note_size()

    def shift_right(self, by: int) -> None:
        """Move every live row ``by`` columns to the right (a newcomer longer than ``length``)."""
        if self.length + by > self.cap:
            self._grow(self.length + by - self.cap + 16)
        n = self.length
        for buf in (*self.kbuf, *self.vbuf):
            buf[:, :, by: by + n] = buf[:, :, :n].clone()
            buf[:, :, :by] = 0
        self.mask[:, by: by + n] = self.mask[:, :n].clone()
        self.mask[:, :by] = 0
        self.starts = [s + by for s in self.starts]
        self.length += by

    # -- rows
    def fill(self, first: list[Request], capacity: int) -> torch.Tensor:
        """The first rows (longest pending first): every request's pending tokens prefilled, rows
        of similar lengths together (one padded forward per run of :func:`plan_buckets`), all
        ending at one column."""
        ex = self.ex
        pending = [req.pending for req in first]
        assert all(pending), "every turn starts with at least one new token"
        convs = [ex.states[req.key] for req in first]
        big_p = max(self._cols(c) for c in convs)
        big_q = len(pending[0])
        self._alloc(capacity, big_p + big_q + max(req.budget for req in first), convs[0])
        end = big_p + big_q
        for r, (conv, tail) in enumerate(zip(convs, pending)):
            start = big_p - self._cols(conv)
            self._place(r, conv, start)
            self.mask[r, end - len(tail): end] = 1
            self.starts.append(start)
        self.length = end
        parts = []
        for lo, hi in plan_buckets([len(p) for p in pending], ex.forward_overhead):
            width = len(pending[lo])
            ids, pos = left_padded(pending[lo:hi], [c.cached for c in convs[lo:hi]], width,
                                   ex.pad, ex.device)
            parts.append(self._forward(ids, lo, hi, pos, end - width, first))
        return torch.cat(parts)

    def enter(self, r: int, req: Request) -> torch.Tensor:
        """Row ``r`` takes request ``req``, its pending tokens prefilled there (ending at column
        ``length``); its next-token logits ``[1, V]``."""
        ex = self.ex
        conv = ex.states[req.key]
        pend = req.pending
        assert pend, "every turn starts with at least one new token"
        total = self._cols(conv) + len(pend)
        if total > self.length:
            self.shift_right(total - self.length)
        start = self.length - total
        self._place(r, conv, start)
        self.mask[r, self.length - len(pend): self.length] = 1
        if r == len(self.starts):
            self.starts.append(start)
        else:
            self.starts[r] = start
        dev = ex.device
        rows = [None] * r + [req]
        return self._forward(torch.tensor([pend], device=dev), r, r + 1,
                             torch.arange(conv.cached, conv.cached + len(pend), device=dev)[None],
                             self.length - len(pend), rows)

    def retire(self, r: int, req: Request) -> None:
        """Row ``r``'s turn ended: keep its real tokens (all but the last sampled one) as the
        conversation's own cache."""
        conv = self.ex.states[req.key]
        lo = self.starts[r] + (0 if self.split else conv.n_prefix)
        real = torch.nonzero(self.mask[r, lo: self.length]).squeeze(1) + lo
        conv.own_keys = [k[r: r + 1, :, real] for k in self.kbuf]
        conv.own_values = [v[r: r + 1, :, real] for v in self.vbuf]
        conv.ids = list(req.seq) + req.out[:-1]
        assert conv.own + conv.n_prefix == conv.cached

    def drop(self, r: int) -> None:
        """Remove row ``r`` from the batch: the last live row moves into its place."""
        last = len(self.starts) - 1
        if r != last:
            n = self.length
            for buf in (*self.kbuf, *self.vbuf):
                buf[r, :, :n] = buf[last, :, :n]
            self.mask[r, :n] = self.mask[last, :n]
            self.starts[r] = self.starts[last]
        self.starts.pop()
        self._groups = None

    def decode(self, requests: list[Request]) -> torch.Tensor:
        """One token for each live row: its last sampled token fed at the next column."""
        live = len(requests)
        self._make_room()
        col = self.length
        self.mask[:live, col] = 1
        dev = self.ex.device
        feed = torch.tensor([[req.out[-1]] for req in requests], device=dev)
        pos = torch.tensor([[req.position] for req in requests], device=dev)
        logits = self._forward(feed, 0, live, pos, col, requests)
        self.length += 1
        return logits

    def _forward(self, ids: torch.Tensor, lo: int, hi: int, pos: torch.Tensor, cached: int,
                 rows: list[Request | None]) -> torch.Tensor:
        """Forward rows ``[lo, hi)`` (``rows[r]``: row r's request) whose first ``cached``
        columns are filled; ``ids`` are written after them."""
        mask = self.mask[lo:hi, : cached + ids.shape[1]]
        groups = self._prefix_groups(lo, hi, rows) if self.split else []
        return self.ex.forward(ids, pos, [k[lo:hi] for k in self.kbuf], [v[lo:hi] for v in self.vbuf],
                               cached, SplitState(mask, groups), self.split)

    def _prefix_groups(self, lo: int, hi: int, rows: list[Request | None]):
        """``(row indices relative to lo, prefix keys, prefix values)`` per shared prefix."""
        if self._groups is not None and (lo, hi) == self._groups_span:
            return self._groups
        members = []
        for r in range(lo, hi):
            conv = self.ex.states[rows[r].key]
            if conv.n_prefix:
                members.append((r - lo, conv.entry, conv.n_prefix))
        groups = prefix_groups(members, self.mask.device)
        self._groups, self._groups_span = groups, (lo, hi)
        return groups
