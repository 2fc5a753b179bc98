"""The local generation engine: one KV-cached, continuously batched scheduler for every caller
(``tracec eval``'s local model, GRPO rollouts, classifier routing, the composed model).

* **Prefix cache.** A conversation's first prompt is matched against every entry of a shared
  :class:`~tracec.llm.kvcache.PrefixCache` by longest common prefix, and only the tokens after
  the match are prefilled (the system prompt and tool schemas once per cache, across batches,
  turns and episodes). A finished conversation may leave its whole KV in the cache
  (``retain=True``), so the next turn of an eval episode prefills only the new messages.
* **Per-conversation KV.** Each conversation keeps its own keys/values across turns: a new turn
  prefills only the tokens not seen yet (the last sampled token and the environment's reply).
* **Batched prefill.** Prompts started together (:meth:`KVEngine.start_many`) and a turn's new
  tokens go through few padded forwards, rows of similar lengths together (:func:`plan_buckets`),
  each row attending to its matched cache entry's single copy.
* **Continuous batching.** At most ``max_rows`` rows decode together; a row whose turn ended is
  at once given to the next waiting conversation (its new tokens prefilled into that row), or,
  with nobody waiting, dropped from the batch (the last row moves into its place), so finished
  rows are never decoded as holes.
* **Shared-prefix decode.** Rows whose conversations share a cached prompt attend to one copy
  of its keys/values (:mod:`tracec.llm.split_attention`); a row's buffer holds only its own
  tokens (``shared_prefix=False``: a copy of the prefix in every row, plain attention).
* A batch row is laid out as ``[holes | own cached tokens | holes | new tokens | generated …]``;
  holes are masked out of attention and RoPE positions are given per row, so each row computes
  exactly what a fresh, unpadded forward of its own conversation would (up to floating-point
  summation order).

Sampling is the one of ``transformers.generate`` with ``top_k=0, top_p=1``: ``softmax(logits/T)``
then ``torch.multinomial``; ``T = 0`` is argmax.
"""

from __future__ import annotations

import inspect
import itertools
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers.cache_utils import DynamicCache

from tracec.llm.chat import cut_at_stop
from tracec.llm.kvbuffer import buffer_cache
from tracec.llm.kvcache import Entry, PrefixCache
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


@dataclass
class _Conv:
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


@dataclass
class _Row:
    key: int
    index: int  # position in the caller's lists
    budget: int
    start: int  # first buffer column of the row's cached tokens
    next_pos: int  # RoPE position of the next token fed
    new: int  # tokens fed to this row in this call (pending + generated)
    out: list[int] = field(default_factory=list)


class KVEngine:
    """Generates turns for many conversations (a :class:`~tracec.llm.turns.TurnEngine`).

    ``prefix_cache`` may be shared between engines over the same weights; ``cache_key`` names
    those weights (see :class:`~tracec.llm.kvcache.PrefixCache`). ``retain``: finished
    conversations leave their keys/values in the prefix cache. ``shared_prefix``: rows attend to
    one copy of a shared prompt (where the model's attention allows it)."""

    def __init__(self, model, pad_id: int, stop_ids: list[int], device: Any = "cpu",
                 max_rows: int = 32, on_logits=None, prefix_cache: PrefixCache | None = None,
                 cache_key: Any = None, retain: bool = False, shared_prefix: bool = True,
                 forward_overhead: int = FORWARD_OVERHEAD_TOKENS) -> None:
        self.model = model
        self.on_logits = on_logits  # test hook: called with (conversation keys, next-token logits)
        self.pad = pad_id
        self.stops = set(stop_ids)
        self.device = device
        self.max_rows = max(1, max_rows)
        self.kw = cache_kwarg(model)
        self.cache = prefix_cache if prefix_cache is not None else PrefixCache()
        self.cache_key = cache_key
        self.retain = retain
        self.split = shared_prefix and supported(model)
        self.forward_overhead = forward_overhead  # see plan_buckets
        self.states: dict[int, _Conv] = {}
        self.stats = EngineStats()
        self._keys = itertools.count(1 << 40)  # private keys of one-shot completions

    # ------------------------------------------------------------------ forward helpers
    def _forward(self, ids, mask, pos, cache):
        kwargs = {self.kw: cache}
        return self.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True,
                          logits_to_keep=1, **kwargs).logits[:, -1]

    @staticmethod
    def _empty(rows: int, cap: int, like: list[torch.Tensor]) -> list[torch.Tensor]:
        return [torch.zeros(rows, t.shape[1], cap, t.shape[3], dtype=t.dtype, device=t.device)
                for t in like]

    def _prefill(self, ids: list[int]) -> tuple[Entry, Entry | None, int]:
        """``(entry holding ids' keys/values, the cached entry it grew from, common length)``:
        the longest cached common prefix is reused and only the rest is forwarded."""
        common, best = self.cache.match(ids, self.cache_key)
        if best is not None and common == len(ids):
            self.stats.cached_tokens += common
            return best, best, common
        self.stats.cached_tokens += common
        t0 = time.perf_counter()
        dev = self.device
        with torch.no_grad():
            if best is None:  # probe shapes with the first chunk through a growing cache

                probe = DynamicCache()
                first = ids[:PREFILL_CHUNK]
                self._forward(torch.tensor([first], device=dev), None,
                              torch.arange(len(first), device=dev)[None], probe)
                like = [layer.keys for layer in probe.layers]
                kbuf, vbuf = self._empty(1, len(ids), like), self._empty(1, len(ids), like)
                for i, layer in enumerate(probe.layers):
                    kbuf[i][:, :, :len(first)] = layer.keys
                    vbuf[i][:, :, :len(first)] = layer.values
                done = len(first)
                self.stats.prefill_tokens += len(first)
            else:
                kbuf, vbuf = self._empty(1, len(ids), best.keys), self._empty(1, len(ids), best.values)
                for i in range(len(kbuf)):
                    kbuf[i][:, :, :common] = best.keys[i][:, :, :common]
                    vbuf[i][:, :, :common] = best.values[i][:, :, :common]
                done = common
            cache = buffer_cache(kbuf, vbuf, done)
            while done < len(ids):
                part = ids[done: done + PREFILL_CHUNK]
                pos = torch.arange(done, done + len(part), device=dev)[None]
                self._forward(torch.tensor([part], device=dev), None, pos, cache)
                done += len(part)
                self.stats.prefill_tokens += len(part)
        self.stats.prefill_seconds += time.perf_counter() - t0
        entry = self.cache.insert(ids, kbuf, vbuf, self.cache_key)
        return entry, best, common

    # ------------------------------------------------------------------ conversations
    def start(self, key: int, prompt_ids: list[int]) -> None:
        """Register a conversation; its prompt minus the last token is prefilled (shared)."""
        self.start_many([(key, prompt_ids)])

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
                    self.states[key] = _Conv(best, common, ids)
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
            self.states[key] = _Conv(entry, len(ids), ids)
        else:  # share the matched entry's head (the system prompt); the rest is the row's own
            self.states[key] = _Conv(best, common, ids, [k[:, :, common:] for k in entry.keys],
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
            kbuf, vbuf = self._empty(n, width, like.keys), self._empty(n, width, like.values)
            mask = torch.zeros(n, width, dtype=torch.long, device=dev)
            for r in range(n):
                mask[r, width - tails[lo + r]:] = 1
            ids, pos = left_padded([seq[common:] for _, seq, common, _ in rows],
                                   [common for _, _, common, _ in rows], width, self.pad, dev)
            groups = prefix_groups([(r, best, common) for r, (_, _, common, best) in enumerate(rows)], dev)
            with torch.no_grad(), split_forward(self.model, SplitState(mask, groups)):
                self._forward(ids, mask, pos, buffer_cache(kbuf, vbuf, 0))
            self.stats.prefill_tokens += sum(tails[lo:hi])
            for r, (key, seq, common, best) in enumerate(rows):
                q = len(seq) - common
                own_k = [k[r: r + 1, :, width - q:].clone() for k in kbuf]
                own_v = [v[r: r + 1, :, width - q:].clone() for v in vbuf]
                head_k, head_v = best.head(common)
                self.cache.insert(seq, [torch.cat([a, b], dim=2) for a, b in zip(head_k, own_k)],
                                  [torch.cat([a, b], dim=2) for a, b in zip(head_v, own_v)],
                                  self.cache_key)
                self.states[key] = _Conv(best, common, seq, own_k, own_v)
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

    def complete(self, prompts: list[list[int]], max_new_tokens: int, temperature: float = 0.0,
                 seed: int | None = None) -> list[list[int]]:
        """One turn for each prompt (start, generate, finish): the ids sampled, each cut after
        its first stop token."""
        if not prompts:
            return []
        if seed is not None:
            torch.manual_seed(seed)
        keys = [next(self._keys) for _ in prompts]
        self.start_many(list(zip(keys, prompts)))
        try:
            return self.generate(keys, prompts, [max_new_tokens] * len(prompts), temperature)
        finally:
            for k in keys:
                self.finish(k)

    # ------------------------------------------------------------------ generation
    def generate(self, keys: list[int], seqs: list[list[int]], budgets: list[int],
                 temperature: float) -> list[list[int]]:
        """One turn for each conversation ``keys[i]`` whose full token sequence so far is
        ``seqs[i]``; at most ``budgets[i]`` new tokens, cut after the first stop token."""
        if not keys:
            return []
        order = sorted(range(len(keys)), key=lambda i: -len(seqs[i]))  # similar lengths together
        return _Batch(self, keys, seqs, budgets, temperature, order).run()

    @staticmethod
    def _select(logits: torch.Tensor, temperature: float) -> torch.Tensor:
        scores = logits.to(torch.float32)
        if temperature > 0:
            probs = torch.softmax(scores / temperature, dim=-1)
            return torch.multinomial(probs, num_samples=1).squeeze(1)
        return torch.argmax(scores, dim=-1)


class _Batch:
    """One ``generate`` call: rows ``[0, live)`` of per-layer buffers ``[R, H, cap, D]`` decode
    together; buffer columns ``[0, length)`` are in use."""

    def __init__(self, eng: KVEngine, keys, seqs, budgets, temperature, order) -> None:
        self.eng, self.keys, self.seqs, self.budgets = eng, keys, seqs, budgets
        self.temperature = temperature
        self.waiting = list(order)
        self.outs: list[list[int]] = [[] for _ in keys]
        self.rows: list[_Row] = []
        # the split pays off where rows share a prompt; a lone row attends to its own copy
        shared: dict[int, int] = {}
        for k in keys:
            conv = eng.states[k]
            if conv.n_prefix:
                shared[id(conv.entry)] = shared.get(id(conv.entry), 0) + 1
        self.split = eng.split and max(shared.values(), default=0) >= 2
        self._groups: list[Any] | None = None  # the prefix groups of rows _groups_span
        self._groups_span = (0, 0)

    # -- buffers
    def _alloc(self, rows: int, cap: int, like: _Conv) -> None:
        self.kbuf = KVEngine._empty(rows, cap, like.entry.keys)
        self.vbuf = KVEngine._empty(rows, cap, like.entry.values)
        self.mask = torch.zeros(rows, cap, dtype=torch.long, device=self.eng.device)
        self._note_size()

    def _note_size(self) -> None:
        stats = self.eng.stats
        stats.peak_row_positions = max(stats.peak_row_positions, self.mask.shape[0] * self.mask.shape[1])

    @property
    def cap(self) -> int:
        return self.kbuf[0].shape[2]

    def _cols(self, conv: _Conv) -> int:
        """Buffer columns a conversation's cached tokens take (its own ones, with the split)."""
        return conv.own if self.split else conv.cached

    def _place(self, r: int, conv: _Conv, start: int) -> None:
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
        shift = min((row.start for row in self.rows), default=self.length)
        if shift > 0:
            keep = self.length - shift
            for buf in (*self.kbuf, *self.vbuf):
                buf[:, :, :keep] = buf[:, :, shift: self.length].clone()
            self.mask[:, :keep] = self.mask[:, shift: self.length].clone()
            self.mask[:, keep:] = 0
            for row in self.rows:
                row.start -= shift
            self.length = keep
            return
        self._grow(max(16, self.cap // 2))

    def _grow(self, grow: int) -> None:
        """Add ``grow`` columns to the buffers."""
        self.kbuf = [torch.cat([b, b.new_zeros(*b.shape[:2], grow, b.shape[3])], 2) for b in self.kbuf]
        self.vbuf = [torch.cat([b, b.new_zeros(*b.shape[:2], grow, b.shape[3])], 2) for b in self.vbuf]
        self.mask = torch.cat([self.mask, self.mask.new_zeros(self.mask.shape[0], grow)], 1)
        self._note_size()

    def _shift_right(self, by: int) -> None:
        """Move every live row ``by`` columns to the right (a newcomer longer than ``length``)."""
        if self.length + by > self.cap:
            self._grow(self.length + by - self.cap + 16)
        n = self.length
        for buf in (*self.kbuf, *self.vbuf):
            buf[:, :, by: by + n] = buf[:, :, :n].clone()
            buf[:, :, :by] = 0
        self.mask[:, by: by + n] = self.mask[:, :n].clone()
        self.mask[:, :by] = 0
        for row in self.rows:
            row.start += by
        self.length += by

    # -- rows
    def _views(self, lo: int, hi: int, length: int):
        return buffer_cache([k[lo:hi] for k in self.kbuf], [v[lo:hi] for v in self.vbuf], length)

    def _fill(self) -> torch.Tensor:
        """The first rows: every conversation's new tokens prefilled, rows of similar lengths
        together (one padded forward per run of :func:`plan_buckets`), all ending at one column."""
        eng = self.eng
        first = [self.waiting.pop(0) for _ in range(min(eng.max_rows, len(self.waiting)))]
        pending = {i: self.seqs[i][eng.states[self.keys[i]].cached:] for i in first}
        assert all(pending.values()), "every turn starts with at least one new token"
        first.sort(key=lambda i: -len(pending[i]))  # stable: the longest conversations first
        convs = [eng.states[self.keys[i]] for i in first]
        big_p = max(self._cols(c) for c in convs)
        big_q = len(pending[first[0]])
        budget = max(self.budgets[i] for i in first)
        self._alloc(eng.max_rows if self.waiting else len(first), big_p + big_q + budget, convs[0])
        end = big_p + big_q
        dev = eng.device
        for r, (i, conv) in enumerate(zip(first, convs)):
            q = len(pending[i])
            start = big_p - self._cols(conv)
            self._place(r, conv, start)
            self.mask[r, end - q: end] = 1
            self.rows.append(_Row(self.keys[i], i, self.budgets[i], start, conv.cached + q, q))
        self.length = end
        t0 = time.perf_counter()
        parts = []
        for lo, hi in plan_buckets([len(pending[i]) for i in first], eng.forward_overhead):
            width = len(pending[first[lo]])
            ids, pos = left_padded([pending[i] for i in first[lo:hi]],
                                   [c.cached for c in convs[lo:hi]], width, eng.pad, dev)
            parts.append(self._forward(ids, lo, hi, pos, end - width))
        eng.stats.prefill_tokens += sum(len(p) for p in pending.values())
        eng.stats.prefill_seconds += time.perf_counter() - t0
        return torch.cat(parts)

    def _admit(self, r: int) -> torch.Tensor:
        """Give row ``r`` to the next waiting conversation; its next-token logits ``[1, V]``."""
        return self._enter(r, self.waiting.pop(0))

    def _enter(self, r: int, i: int) -> torch.Tensor:
        """Row ``r`` takes conversation ``i``, its new tokens prefilled there (ending at column
        ``length``); its next-token logits ``[1, V]``."""
        eng = self.eng
        conv = eng.states[self.keys[i]]
        pend = self.seqs[i][conv.cached:]
        assert pend, "every turn starts with at least one new token"
        total = self._cols(conv) + len(pend)
        if total > self.length:
            self._shift_right(total - self.length)
        start = self.length - total
        self._place(r, conv, start)
        self.mask[r, self.length - len(pend): self.length] = 1
        row = _Row(self.keys[i], i, self.budgets[i], start, conv.cached + len(pend), len(pend))
        if r == len(self.rows):
            self.rows.append(row)
        else:
            self.rows[r] = row
        dev = eng.device
        t0 = time.perf_counter()
        logits = self._forward(torch.tensor([pend], device=dev), r, r + 1,
                               torch.arange(conv.cached, conv.cached + len(pend), device=dev)[None],
                               self.length - len(pend))
        eng.stats.prefill_tokens += len(pend)
        eng.stats.prefill_seconds += time.perf_counter() - t0
        return logits

    def _retire(self, r: int) -> None:
        """Row ``r``'s turn ended: keep its real tokens (all but the last sampled one) as the
        conversation's own cache, and record its output."""
        row = self.rows[r]
        conv = self.eng.states[row.key]
        lo = row.start + (0 if self.split else conv.n_prefix)
        real = torch.nonzero(self.mask[r, lo: self.length]).squeeze(1) + lo
        conv.own_keys = [k[r: r + 1, :, real] for k in self.kbuf]
        conv.own_values = [v[r: r + 1, :, real] for v in self.vbuf]
        conv.ids = list(self.seqs[row.index]) + row.out[:-1]
        assert conv.own + conv.n_prefix == conv.cached
        self.outs[row.index] = row.out

    def _drop(self, r: int) -> None:
        """Remove row ``r`` from the batch: the last live row moves into its place."""
        last = len(self.rows) - 1
        if r != last:
            n = self.length
            for buf in (*self.kbuf, *self.vbuf):
                buf[r, :, :n] = buf[last, :, :n]
            self.mask[r, :n] = self.mask[last, :n]
            self.rows[r] = self.rows[last]
        self.rows.pop()
        self._groups = None

    def _forward(self, ids: torch.Tensor, lo: int, hi: int, pos: torch.Tensor, cached: int
                 ) -> torch.Tensor:
        """Forward rows ``[lo, hi)`` whose first ``cached`` columns are filled; ``ids`` are written
        after them."""
        mask = self.mask[lo:hi, : cached + ids.shape[1]]
        cache = self._views(lo, hi, cached)
        if not self.split:
            return self.eng._forward(ids, mask, pos, cache)
        with split_forward(self.eng.model, SplitState(mask, self._prefix_groups(lo, hi))):
            return self.eng._forward(ids, mask, pos, cache)

    def _prefix_groups(self, lo: int, hi: int):
        """``(row indices relative to lo, prefix keys, prefix values)`` per shared prefix."""
        if self._groups is not None and (lo, hi) == self._groups_span:
            return self._groups
        members = []
        for r in range(lo, hi):
            conv = self.eng.states[self.rows[r].key]
            if conv.n_prefix:
                members.append((r - lo, conv.entry, conv.n_prefix))
        groups = prefix_groups(members, self.mask.device)
        self._groups, self._groups_span = groups, (lo, hi)
        return groups

    def _sample(self, logits: torch.Tensor, rows: list[int]) -> list[int]:
        eng = self.eng
        if eng.on_logits is not None:
            eng.on_logits([self.rows[r].key for r in rows], logits)
        return eng._select(logits, self.temperature).tolist()

    def _take(self, r: int, token: int) -> bool:
        """Append a sampled token to row ``r``; whether its turn goes on."""
        row = self.rows[r]
        row.out.append(token)
        return not (token in self.eng.stops or len(row.out) >= row.budget)

    def run(self) -> list[list[int]]:
        eng = self.eng
        with torch.no_grad():
            logits = self._fill()
            tokens = self._sample(logits, list(range(len(self.rows))))
            going = [self._take(r, t) for r, t in enumerate(tokens)]
            while True:
                # rows whose turn ended: hand them to waiting conversations, or drop them
                r = len(self.rows) - 1
                while r >= 0:
                    if not going[r]:
                        self._retire(r)
                        while self.waiting:
                            t = self._sample(self._admit(r), [r])[0]
                            going[r] = self._take(r, t)
                            if going[r]:
                                break
                            self._retire(r)
                        if not going[r]:
                            self._drop(r)
                            going[r] = going[len(self.rows)] if r < len(self.rows) else False
                            going.pop()
                    r -= 1
                if not self.rows:
                    return self.outs
                live = len(self.rows)
                self._make_room()
                col = self.length
                self.mask[:live, col] = 1
                feed = torch.tensor([[row.out[-1]] for row in self.rows], device=eng.device)
                pos = torch.tensor([[row.next_pos] for row in self.rows], device=eng.device)
                t0 = time.perf_counter()
                logits = self._forward(feed, 0, live, pos, col)
                eng.stats.decode_seconds += time.perf_counter() - t0
                eng.stats.decode_steps += 1
                eng.stats.decode_rows.append(live)
                self.length += 1
                for row in self.rows:
                    row.next_pos += 1
                tokens = self._sample(logits, list(range(live)))
                going = [self._take(r, t) for r, t in enumerate(tokens)]


def generate_plain(model, pad_id: int, prompts: list[list[int]], stop_ids: list[int],
                   max_new_tokens: int, temperature: float, seed: int | None = None,
                   device: Any = "cpu") -> list[list[int]]:
    """``transformers.generate`` on a left-padded batch, every prompt prefilled in full: the
    reference the engine is measured and tested against. Each completion is cut after its first
    stop token."""
    if not prompts:
        return []
    width = max(len(p) for p in prompts)
    input_ids = torch.tensor([[pad_id] * (width - len(p)) + p for p in prompts], device=device)
    attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)
    kwargs: dict[str, Any] = {"do_sample": temperature > 0, "max_new_tokens": max_new_tokens,
                              "eos_token_id": stop_ids, "pad_token_id": pad_id}
    if temperature > 0:
        kwargs.update(temperature=temperature, top_k=0, top_p=1.0)
    else:
        kwargs.update(temperature=None, top_k=None, top_p=None)
    if seed is not None:
        torch.manual_seed(seed)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        out = model.generate(input_ids=input_ids, attention_mask=attention, **kwargs)
    return [cut_at_stop(row, stop_ids) for row in out[:, width:].tolist()]


class ChunkedEngine:
    """A :class:`~tracec.llm.turns.TurnEngine` over a stateless batch generator
    ``generate(prompts, max_new_tokens, temperature)``: every turn sends each conversation's
    whole sequence again, ``chunk`` conversations per call, each chunk with its first row's
    budget (the ``naive`` engine over ``transformers.generate``, or a remote server)."""

    def __init__(self, generate, chunk: int) -> None:
        self._generate = generate
        self.chunk = max(1, chunk)
        self.stats = EngineStats()

    def start(self, key: int, prompt_ids: list[int]) -> None:
        pass

    def finish(self, key: int) -> None:
        pass

    def generate(self, keys: list[int], seqs: list[list[int]], budgets: list[int],
                 temperature: float) -> list[list[int]]:
        outs: list[list[int]] = []
        for lo in range(0, len(keys), self.chunk):
            prompts = seqs[lo: lo + self.chunk]
            t0 = time.perf_counter()
            got = self._generate(prompts, budgets[lo], temperature)
            self.stats.prefill_tokens += sum(len(p) for p in prompts)
            steps = max((len(o) for o in got), default=1) - 1
            self.stats.decode_steps += steps
            self.stats.decode_rows += [len(prompts)] * steps
            self.stats.decode_seconds += time.perf_counter() - t0
            outs += got
        return outs


def naive_engine(model, pad_id: int, stop_ids: list[int], chunk: int, device: Any = "cpu"
                 ) -> ChunkedEngine:
    """The ``naive`` engine: ``transformers.generate`` re-prefilling every conversation each turn."""
    return ChunkedEngine(lambda prompts, budget, temperature: generate_plain(
        model, pad_id, prompts, stop_ids, budget, temperature, None, device), chunk)
