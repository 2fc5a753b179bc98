"""The local generation engine: one KV-cached, continuously batched engine for every caller
(``tracec eval``'s local model, GRPO rollouts, classifier routing, the composed model), shaped
like vLLM's ``EngineCore``: ``step() = schedule → execute → update``.

* :mod:`tracec.llm.scheduler` — which requests hold the batch's rows each step (continuous
  batching); it sees requests and token counts only.
* :mod:`tracec.llm.executor` — every forward and every key/value: the prefix cache, prompt
  prefills bucketed by length, shared-prefix decode, the lean Llama forward
  (:mod:`tracec.llm.lean`).
* :mod:`tracec.llm.sampler` — one ``torch.Generator`` per request, seeded from the engine's seed
  and the request's identity, so a request's tokens never depend on its batch-mates.
* the update step (:meth:`KVEngine._update`) — appends each sampled token to its request and
  finishes the requests that hit a stop token or their budget.

Greedy tokens equal plain ``transformers.generate`` (:func:`generate_plain`, the reference).
"""

from __future__ import annotations

import itertools
import time
import warnings
from typing import Any

import torch

from tracec.llm.chat import cut_at_stop
from tracec.llm.executor import (
    FORWARD_OVERHEAD_TOKENS,
    PREFILL_CHUNK,
    Conversation,
    EngineStats,
    Executor,
    plan_buckets,
)
from tracec.llm.kvcache import PrefixCache
from tracec.llm.sampler import draw_seed, generator, request_seed, select
from tracec.llm.scheduler import Request, Scheduler, SchedulerOutput

__all__ = ["FORWARD_OVERHEAD_TOKENS", "PREFILL_CHUNK", "ChunkedEngine", "EngineStats", "KVEngine",
           "generate_plain", "naive_engine", "plan_buckets"]


class KVEngine:
    """Generates turns for many conversations (a :class:`~tracec.llm.turns.TurnEngine`).

    ``prefix_cache``, ``cache_key``, ``retain``, ``shared_prefix``, ``lean``: see
    :class:`~tracec.llm.executor.Executor`. ``seed``: the run seed every request's generator
    derives from (None: drawn once from torch's global generator, so a run seeded with
    ``torch.manual_seed`` stays reproducible). ``on_logits``: a test hook called with
    (conversation keys, next-token logits) before each sampling."""

    def __init__(self, model, pad_id: int, stop_ids: list[int], device: Any = "cpu",
                 max_rows: int = 32, on_logits=None, prefix_cache: PrefixCache | None = None,
                 cache_key: Any = None, retain: bool = False, shared_prefix: bool = True,
                 forward_overhead: int = FORWARD_OVERHEAD_TOKENS, seed: int | None = None,
                 lean: bool | None = None) -> None:
        self.model = model
        self.executor = Executor(model, pad_id, device, prefix_cache, cache_key, retain,
                                 shared_prefix, forward_overhead, lean)
        self.on_logits = on_logits
        self.stops = set(stop_ids)
        self.device = device
        self.max_rows = max(1, max_rows)
        self.seed = draw_seed() if seed is None else int(seed)
        self.turns: dict[int, int] = {}  # turns generated per conversation: its requests' seeds
        self._keys = itertools.count(1 << 40)  # private keys of one-shot completions

    @property
    def stats(self) -> EngineStats:
        return self.executor.stats

    @property
    def states(self) -> dict[int, Conversation]:
        return self.executor.states

    @property
    def split(self) -> bool:
        return self.executor.split

    @property
    def cache(self) -> PrefixCache:
        return self.executor.cache

    @property
    def cache_key(self) -> Any:
        return self.executor.cache_key

    @cache_key.setter
    def cache_key(self, key: Any) -> None:  # other weights (a merged adapter): other entries
        self.executor.cache_key = key

    def set_seed(self, seed: int) -> None:
        """Seed the next requests (like :meth:`~tracec.llm.serving.ServingEngine.set_seed`)."""
        self.seed = int(seed)

    # ------------------------------------------------------------------ conversations
    def start(self, key: int, prompt_ids: list[int]) -> None:
        """Register a conversation; its prompt minus the last token is prefilled (shared)."""
        self.start_many([(key, prompt_ids)])

    def start_many(self, items: list[tuple[int, list[int]]]) -> None:
        """Register conversations ``(key, prompt ids)``, prefilled together
        (:meth:`~tracec.llm.executor.Executor.start_many`)."""
        self.executor.start_many(items)
        for key, _ in items:
            self.turns[key] = 0

    def finish(self, key: int) -> None:
        """Forget a conversation (with ``retain``, its keys/values stay in the prefix cache)."""
        self.executor.finish(key)
        self.turns.pop(key, None)

    def complete(self, prompts: list[list[int]], max_new_tokens: int, temperature: float = 0.0,
                 seed: int | None = None, seeds: list[int] | None = None) -> list[list[int]]:
        """One turn for each prompt (start, generate, finish): the ids sampled, each cut after
        its first stop token. Prompt ``i`` samples with ``seeds[i]`` when given, else with
        :func:`~tracec.llm.serving.request_seed` ``(seed, i, 0)`` (``seed`` None: the engine's)."""
        if not prompts:
            return []
        if seeds is None:
            base = self.seed if seed is None else seed
            seeds = [request_seed(base, i, 0) for i in range(len(prompts))]
        keys = [next(self._keys) for _ in prompts]
        self.start_many(list(zip(keys, prompts)))
        try:
            return self.generate(keys, prompts, [max_new_tokens] * len(prompts), temperature, seeds)
        finally:
            for k in keys:
                self.finish(k)

    # ------------------------------------------------------------------ generation
    def generate(self, keys: list[int], seqs: list[list[int]], budgets: list[int],
                 temperature: float, seeds: list[int] | None = None) -> list[list[int]]:
        """One turn for each conversation ``keys[i]`` whose full token sequence so far is
        ``seqs[i]``; at most ``budgets[i]`` new tokens, cut after the first stop token. Request
        ``i`` samples with its own generator: ``seeds[i]``, else
        :func:`~tracec.llm.serving.request_seed` ``(engine seed, key, turn)``."""
        if not keys:
            return []
        requests = []
        for i, key in enumerate(keys):
            turn = self.turns.get(key, 0)
            self.turns[key] = turn + 1
            gen = None
            if temperature > 0:
                gen = generator(seeds[i] if seeds is not None else request_seed(self.seed, key, turn),
                                self.device)
            requests.append(Request(i, key, list(seqs[i]), self.executor.computed(key), budgets[i], gen))
        requests.sort(key=lambda r: -len(r.seq))  # similar lengths together
        scheduler = Scheduler(requests, self.max_rows)
        self.executor.open(keys)
        try:
            with torch.no_grad():
                while self.step(scheduler, temperature):
                    pass
        finally:
            self.executor.close()
        outs: list[list[int]] = [[] for _ in keys]
        for req in requests:
            outs[req.index] = req.out
        return outs

    def step(self, scheduler: Scheduler, temperature: float) -> bool:
        """schedule → execute → update; False when every request is done."""
        plan = scheduler.schedule()
        if plan is None:
            return False
        sampled, logits = self._execute(plan)
        if sampled:
            self._update(scheduler, sampled, logits, temperature)
        return True

    def _execute(self, plan: SchedulerOutput) -> tuple[list[Request], torch.Tensor | None]:
        """Run the plan's forwards: ``(requests that get a token, their logits)``."""
        ex = self.executor
        if plan.prefill:
            logits = ex.prefill(plan.prefill, plan.capacity)
            for row in plan.drop:
                ex.drop(row)
            return [req for _, req in plan.prefill], logits
        for row in plan.drop:
            ex.drop(row)
        if not plan.decode:
            return [], None
        return plan.decode, ex.decode(plan.decode)

    def _update(self, scheduler: Scheduler, requests: list[Request], logits: torch.Tensor,
                temperature: float) -> None:
        """Sample a token for each request, append it, and finish the requests whose turn ended
        (a stop token or the budget): their rows' keys/values go back to their conversations."""
        if self.on_logits is not None:
            self.on_logits([req.key for req in requests], logits)
        tokens = select(logits, temperature, [req.generator for req in requests])
        for req, token in zip(requests, tokens):
            req.out.append(token)
            if token in self.stops or len(req.out) >= req.budget:
                self.executor.release(scheduler.row_of(req), req)
                scheduler.finish(req)


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
