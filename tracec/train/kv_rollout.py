"""The ``kv`` rollout engine: every token is prefilled once.

* Distinct first prompts are prefilled once each (G samples of a group share one prompt; a hinted
  prompt is its own), and a new prompt reuses the cached keys/values of the longest token prefix
  it shares with an already prefilled one (the system prompt and tool schemas, across groups).
* Each episode keeps its own keys/values across turns, so a new turn prefills only the tokens it
  has not seen: the model's last sampled token and the environment's reply.
* Generation is batched across episodes. A batch row is laid out as
  ``[holes | cached tokens | holes | new tokens | generated …]``: holes are masked out of
  attention and RoPE positions are given per row, so each row computes exactly what a fresh,
  unpadded forward of its own conversation would (up to floating-point summation order).

Sampling is the one of ``transformers.generate`` with ``top_k=0, top_p=1``: ``softmax(logits/T)``
then ``torch.multinomial``; ``T = 0`` is argmax. Per-turn token budgets are those of the naive
engine (``tracec.train.rollout.naive_budgets``), so greedy episodes match it token for token.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from tracec.llm.kvbuffer import buffer_cache as _buffer_cache

PREFILL_CHUNK = 1024  # tokens per prefill forward: bounds the attention working set


def _cache_kwarg(model) -> str:
    """Name of the cache argument of the wrapped transformers model (``cache`` from 5.x)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    params = inspect.signature(base.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def kv_bytes_per_token(model_config, dtype_bytes: int = 4) -> int:
    """Bytes of keys + values one token occupies over all layers."""
    cfg = model_config.get_text_config() if hasattr(model_config, "get_text_config") else model_config
    heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    return 2 * cfg.num_hidden_layers * heads * head_dim * dtype_bytes


@dataclass
class _Prefix:
    """Cached keys/values ``[1, H, n, D]`` per layer of a prompt's first ``n`` tokens."""

    ids: list[int]
    keys: list[torch.Tensor]
    values: list[torch.Tensor]


@dataclass
class _EpisodeKV:
    prefix: _Prefix
    own_keys: list[torch.Tensor] | None = None  # tokens after the prefix, [1, H, m, D] per layer
    own_values: list[torch.Tensor] | None = None
    cached: int = 0  # tokens of prompt + completion whose keys/values are cached

    @property
    def own(self) -> int:
        return 0 if self.own_keys is None else self.own_keys[0].shape[-2]


@dataclass
class KVStats:
    """Work done, for the efficiency benchmark: tokens forwarded and decode steps."""

    prefill_tokens: int = 0  # tokens forwarded in prefill (shared prompts once, then new tokens)
    prefill_seconds: float = 0.0
    decode_steps: int = 0
    decode_rows: list[int] = field(default_factory=list)  # batch size of each decode step
    decode_seconds: float = 0.0


class KVEngine:
    """Generates turns for many episodes with per-episode KV caches (see the module doc)."""

    def __init__(self, model, pad_id: int, stop_ids: list[int], device: str = "cpu",
                 max_rows: int = 32, on_logits=None) -> None:
        self.model = model
        self.on_logits = on_logits  # test hook: called with (episode keys, next-token logits)
        self.pad = pad_id
        self.stops = set(stop_ids)
        self.device = device
        self.max_rows = max(1, max_rows)
        self.kw = _cache_kwarg(model)
        self.prefixes: list[_Prefix] = []
        self.states: dict[int, _EpisodeKV] = {}
        self.stats = KVStats()

    # ------------------------------------------------------------------ forward helpers
    def _forward(self, ids, mask, pos, cache):
        kwargs = {self.kw: cache}
        return self.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True,
                          logits_to_keep=1, **kwargs).logits[:, -1]

    def _empty(self, rows: int, cap: int, like: list[torch.Tensor]) -> list[torch.Tensor]:
        return [torch.zeros(rows, t.shape[1], cap, t.shape[3], dtype=t.dtype, device=t.device)
                for t in like]

    def _prefill_prefix(self, ids: list[int]) -> _Prefix:
        """Keys/values of ``ids`` (batch 1), reusing the longest cached common token prefix."""
        best, common = None, 0
        for p in self.prefixes:
            n = 0
            for a, b in zip(p.ids, ids):
                if a != b:
                    break
                n += 1
            if n > common:
                best, common = p, n
        if best is not None and common == len(ids):
            return _Prefix(ids, [k[:, :, :common] for k in best.keys],
                           [v[:, :, :common] for v in best.values])
        n_layers = None
        t0 = time.perf_counter()
        with torch.no_grad():
            if best is None:  # probe shapes with the first chunk through a growing cache
                from transformers.cache_utils import DynamicCache

                cache = DynamicCache()
                first = ids[:PREFILL_CHUNK]
                self._forward(torch.tensor([first], device=self.device), None,
                              torch.arange(len(first), device=self.device)[None], cache)
                like = [layer.keys for layer in cache.layers]
                kbuf, vbuf = self._empty(1, len(ids), like), self._empty(1, len(ids), like)
                for i, layer in enumerate(cache.layers):
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
            n_layers = len(kbuf)
            cache = _buffer_cache(kbuf, vbuf, done)
            while done < len(ids):
                part = ids[done: done + PREFILL_CHUNK]
                pos = torch.arange(done, done + len(part), device=self.device)[None]
                self._forward(torch.tensor([part], device=self.device), None, pos, cache)
                done += len(part)
                self.stats.prefill_tokens += len(part)
        self.stats.prefill_seconds += time.perf_counter() - t0
        assert n_layers is not None
        prefix = _Prefix(list(ids), kbuf, vbuf)
        self.prefixes.append(prefix)
        return prefix

    # ------------------------------------------------------------------ episodes
    def start(self, key: int, prompt_ids: list[int]) -> None:
        """Register an episode; its prompt minus the last token is prefilled (shared)."""
        if len(prompt_ids) < 2:
            raise ValueError("a prompt needs at least two tokens")
        prefix_ids = prompt_ids[:-1]
        same = next((p for p in self.prefixes if p.ids == prefix_ids), None)
        prefix = same or self._prefill_prefix(prefix_ids)
        self.states[key] = _EpisodeKV(prefix, cached=len(prefix_ids))

    def finish(self, key: int) -> None:
        """Drop an episode's cache (and shared prefixes nobody uses any more)."""
        self.states.pop(key, None)
        live = {id(s.prefix) for s in self.states.values()}
        self.prefixes = [p for p in self.prefixes if id(p) in live]

    def generate(self, keys: list[int], seqs: list[list[int]], budgets: list[int],
                 temperature: float) -> list[list[int]]:
        """One turn for each episode ``keys[i]`` whose full token sequence so far is ``seqs[i]``;
        at most ``budgets[i]`` new tokens, cut after the first stop token."""
        outs: list[list[int]] = [[] for _ in keys]
        order = sorted(range(len(keys)), key=lambda i: -len(seqs[i]))  # similar lengths together
        for start in range(0, len(order), self.max_rows):
            chunk = order[start: start + self.max_rows]
            res = self._turn([keys[i] for i in chunk], [seqs[i] for i in chunk],
                             [budgets[i] for i in chunk], temperature)
            for i, r in zip(chunk, res):
                outs[i] = r
        return outs

    def _turn(self, keys: list[int], seqs: list[list[int]], budgets: list[int],
              temperature: float) -> list[list[int]]:
        dev = self.device
        states = [self.states[k] for k in keys]
        pending = [s[st.cached:] for s, st in zip(seqs, states)]
        assert all(pending), "every turn starts with at least one new token"
        rows = len(keys)
        big_p = max(st.cached for st in states)
        big_q = max(len(p) for p in pending)
        cap = big_p + big_q + max(budgets)
        like_k, like_v = states[0].prefix.keys, states[0].prefix.values
        kbuf, vbuf = self._empty(rows, cap, like_k), self._empty(rows, cap, like_v)
        mask = torch.zeros(rows, cap, dtype=torch.long, device=dev)
        ids = torch.full((rows, big_q), self.pad, dtype=torch.long, device=dev)
        pos = torch.zeros(rows, big_q, dtype=torch.long, device=dev)
        for r, (st, pend) in enumerate(zip(states, pending)):
            a = big_p - st.cached
            n_pre = st.prefix.keys[0].shape[-2]
            for i in range(len(kbuf)):
                kbuf[i][r, :, a: a + n_pre] = st.prefix.keys[i][0]
                vbuf[i][r, :, a: a + n_pre] = st.prefix.values[i][0]
                if st.own:
                    kbuf[i][r, :, a + n_pre: big_p] = st.own_keys[i][0]
                    vbuf[i][r, :, a + n_pre: big_p] = st.own_values[i][0]
            mask[r, a: big_p] = 1
            q = len(pend)
            mask[r, big_p + big_q - q: big_p + big_q] = 1
            ids[r, big_q - q:] = torch.tensor(pend, device=dev)
            pos[r] = st.cached  # holes take the first new position (they are masked anyway)
            pos[r, big_q - q:] = torch.arange(st.cached, st.cached + q, device=dev)
        cache = _buffer_cache(kbuf, vbuf, big_p)
        t0 = time.perf_counter()
        with torch.no_grad():
            logits = self._forward(ids, mask[:, : big_p + big_q], pos, cache)
        self.stats.prefill_tokens += sum(len(p) for p in pending)
        self.stats.prefill_seconds += time.perf_counter() - t0
        t0 = time.perf_counter()
        outs: list[list[int]] = [[] for _ in keys]
        active = [True] * rows
        next_pos = [st.cached + len(p) for st, p in zip(states, pending)]
        length = big_p + big_q
        with torch.no_grad():
            while True:
                if self.on_logits is not None:
                    self.on_logits([k for k, a in zip(keys, active) if a], logits[torch.tensor(active)])
                tokens = self._select(logits, temperature).tolist()
                for r in range(rows):
                    if active[r]:
                        outs[r].append(tokens[r])
                        if tokens[r] in self.stops or len(outs[r]) >= budgets[r]:
                            active[r] = False
                if not any(active):
                    break
                feed = torch.tensor([[t if a else self.pad] for t, a in zip(tokens, active)], device=dev)
                mask[:, length] = torch.tensor(active, dtype=torch.long, device=dev)
                step_pos = torch.tensor([[p] for p in next_pos], device=dev)
                logits = self._forward(feed, mask[:, : length + 1], step_pos, cache)
                length += 1
                next_pos = [p + 1 if a else p for p, a in zip(next_pos, active)]
                self.stats.decode_steps += 1
                self.stats.decode_rows.append(rows)
        self.stats.decode_seconds += time.perf_counter() - t0
        # keep each row's real tokens (all but its last sampled one) as its own cache
        for r, (st, out) in enumerate(zip(states, outs)):
            a = big_p - st.cached
            n_pre = st.prefix.keys[0].shape[-2]
            real = torch.nonzero(mask[r, a + n_pre: length]).squeeze(1) + a + n_pre
            st.own_keys = [k[r: r + 1, :, real] for k in kbuf]
            st.own_values = [v[r: r + 1, :, real] for v in vbuf]
            st.cached += len(pending[r]) + len(out) - 1
            assert st.own + n_pre == st.cached
        return outs

    @staticmethod
    def _select(logits: torch.Tensor, temperature: float) -> torch.Tensor:
        scores = logits.to(torch.float32)
        if temperature > 0:
            probs = torch.softmax(scores / temperature, dim=-1)
            return torch.multinomial(probs, num_samples=1).squeeze(1)
        return torch.argmax(scores, dim=-1)


def rows_for_memory(kv_per_token: int, tokens: int, budget_bytes: float, limit: int) -> int:
    """How many batch rows of ``tokens`` tokens fit a KV budget (at least 1, at most ``limit``)."""
    per_row = max(1, kv_per_token * tokens)
    return max(1, min(limit, int(budget_bytes // per_row)))


def engine_summary(stats: KVStats) -> dict[str, Any]:
    mean_rows = sum(stats.decode_rows) / len(stats.decode_rows) if stats.decode_rows else 0.0
    return {"prefill_tokens": stats.prefill_tokens, "prefill_seconds": stats.prefill_seconds,
            "decode_steps": stats.decode_steps, "decode_mean_rows": mean_rows,
            "decode_seconds": stats.decode_seconds}
