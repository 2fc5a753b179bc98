"""Multi-turn rollouts of a chat model in tracec envs, as token sequences with a model/env mask.

An episode is kept as TRL's rollout contract: ``prompt_ids`` (system + first user turn + the
assistant header), ``completion_ids`` (everything after: model turns and environment turns),
``env_mask`` (1 = model token, trained; 0 = tool result / user reply, not trained). The model's
own tokens are never re-tokenised: environment turns are rendered with the chat template as a
text delta and appended as tokens.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tracec.llm.chat import ChatRenderer
from tracec.llm.engine import ChunkedEngine, KVEngine, naive_engine
from tracec.llm.turns import TurnEngine, start_all
from tracec.train.config import ROLLOUT_ENGINES

# (prompts, max_new_tokens, temperature) -> completions, each ending at its stop token if any
Generator = Callable[[list[list[int]], int, float], list[list[int]]]


@dataclass
class Rollout:
    """One rollout. ``base_prompt_ids`` is the hint-free prompt used for the loss."""

    seed: int
    group: int
    hinted: bool
    prompt_ids: list[int]
    base_prompt_ids: list[int]
    messages: list[dict]
    tools: list[dict] | None
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    reward: float = 0.0
    done: bool = False
    turns: int = 0
    ended_by: str = ""
    breakdown: dict[str, Any] = field(default_factory=dict)
    # the server's log-probability of each model token, in order (None: not returned)
    sampler_logprobs: list[float | None] = field(default_factory=list)

    @property
    def length(self) -> int:
        return len(self.prompt_ids) + len(self.completion_ids)

    @property
    def model_tokens(self) -> int:
        return sum(self.env_mask)


def _assistant_index(messages: list[dict], start: int) -> int:
    """Index of the assistant turn the env appended at/after ``start`` (or -1)."""
    for i in range(start, len(messages)):
        if messages[i].get("role") == "assistant":
            return i
    return -1


def _split_messages(old_len: int, new: list[dict], text: str) -> tuple[list[dict], list[dict]]:
    """(messages up to and incl. the assistant turn, all messages) after an env step."""
    idx = _assistant_index(new, old_len)
    if idx < 0:  # env did not record the assistant turn: add it ourselves
        msgs = new[:old_len] + [{"role": "assistant", "content": text}] + new[old_len:]
        return msgs[: old_len + 1], msgs
    return new[: idx + 1], new


def start_group(make_env: Callable[[], Any], seed: int, group: int, size: int, n_hinted: int,
                renderer: ChatRenderer) -> tuple[list[Rollout], list[Any]]:
    """Reset ``size`` envs on one seed; the first ``n_hinted`` see the hint in the system prompt."""
    episodes, envs = [], []
    base_env = make_env()
    _, base_info = base_env.reset(seed=seed, options={"hint": False})
    base_ids = renderer.prompt_ids(base_info["messages"], base_info.get("tools"))
    base_env.close()
    for k in range(size):
        hinted = k < n_hinted
        env = make_env()
        _, info = env.reset(seed=seed, options={"hint": hinted})
        tools = info.get("tools")
        ids = renderer.prompt_ids(info["messages"], tools) if hinted else list(base_ids)
        episodes.append(Rollout(seed, group, hinted, ids, base_ids, list(info["messages"]), tools))
        envs.append(env)
    return episodes, envs


@dataclass
class RolloutStats:
    gen_seconds: float = 0.0
    gen_tokens: int = 0
    prefill_tokens: int = 0  # tokens forwarded by the model outside decode steps
    decode_steps: int = 0
    decode_rows: int = 0  # sum over decode steps of the batch size
    decode_row_counts: dict[int, int] = field(default_factory=dict)  # batch size -> decode steps


def naive_budgets(episodes: list[Rollout], active: list[int], gen_batch: int, max_new_tokens: int,
                  max_total_tokens: int) -> dict[int, int]:
    """Per-episode new-token budget of one round: the naive engine's rule (the longest sequence
    of each ``gen_batch`` chunk of active episodes bounds the whole chunk)."""
    out = {}
    for start in range(0, len(active), gen_batch):
        chunk = active[start: start + gen_batch]
        longest = max(episodes[i].length for i in chunk)
        budget = min(max_new_tokens, max(1, max_total_tokens - longest))
        out.update({i: budget for i in chunk})
    return out


def make_engine(engine: str | TurnEngine, model, tokenizer, stop_ids: list[int], gen_batch: int,
                device: Any = "cpu", generator: Generator | None = None,
                kv_rows: int | None = None) -> TurnEngine:
    """The engine ``run_episodes`` plays with: an instance is used as it is; ``"kv"`` is
    :class:`tracec.llm.engine.KVEngine` (``kv_rows`` rows, default ``gen_batch``), ``"naive"``
    ``transformers.generate`` re-prefilling every turn; ``generator(prompts, max_new_tokens,
    temperature)`` (a remote server) takes precedence over a name."""
    if not isinstance(engine, str):
        if not isinstance(engine, TurnEngine):
            raise TypeError(f"not a TurnEngine: {type(engine).__name__}")
        return engine
    if engine not in ROLLOUT_ENGINES:
        raise ValueError(f"unknown rollout engine {engine!r} (choose from {', '.join(ROLLOUT_ENGINES)})")
    if generator is not None:
        return ChunkedEngine(generator, gen_batch)
    if engine == "kv":
        return KVEngine(model, tokenizer.pad_token_id, stop_ids, device, max_rows=kv_rows or gen_batch)
    return naive_engine(model, tokenizer.pad_token_id, stop_ids, gen_batch, device)


def run_episodes(model, tokenizer, episodes: list[Rollout], envs: list[Any], *, stop_ids: list[int],
                 max_new_tokens: int, max_total_tokens: int, max_turns: int | None,
                 temperature: float, gen_batch: int, device: Any = "cpu",
                 stats: RolloutStats | None = None, generator: Generator | None = None,
                 engine: str | TurnEngine = "kv", kv_rows: int | None = None) -> None:
    """Play all episodes to the end, every round one turn of every active episode.

    ``engine`` is a :class:`~tracec.llm.turns.TurnEngine` or a name (see :func:`make_engine`;
    ``model`` is only read to build a named one). The per-turn token budgets are the naive
    engine's (:func:`naive_budgets`), so every engine gives the same greedy tokens and the same
    sampling distribution."""
    renderer = ChatRenderer(tokenizer)
    stats = stats if stats is not None else RolloutStats()
    eng = make_engine(engine, model, tokenizer, stop_ids, gen_batch, device, generator, kv_rows)
    work = getattr(eng, "stats", None)
    before = (work.prefill_tokens, work.decode_steps, len(work.decode_rows)) if work else None
    t0 = time.perf_counter()
    start_all(eng, [(i, ep.prompt_ids) for i, ep in enumerate(episodes) if not ep.done])
    stats.gen_seconds += time.perf_counter() - t0
    while True:
        active = [i for i, ep in enumerate(episodes) if not ep.done]
        if not active:
            break
        budgets = naive_budgets(episodes, active, gen_batch, max_new_tokens, max_total_tokens)
        t0 = time.perf_counter()
        outs = eng.generate(active, [episodes[i].prompt_ids + episodes[i].completion_ids
                                     for i in active], [budgets[i] for i in active], temperature)
        stats.gen_seconds += time.perf_counter() - t0
        stats.gen_tokens += sum(len(o) for o in outs)
        served = getattr(eng, "last_logprobs", None)  # a serving engine's sampled-token logprobs
        if served is not None:
            for i, out, lps in zip(active, outs, served):
                episodes[i].sampler_logprobs += lps if lps is not None else [None] * len(out)
        for i, out in zip(active, outs):
            _advance(episodes[i], envs[i], out, renderer, stop_ids, max_turns, max_total_tokens)
            if episodes[i].done:
                eng.finish(i)
    if work is not None and before is not None:
        stats.prefill_tokens += work.prefill_tokens - before[0]
        stats.decode_steps += work.decode_steps - before[1]
        rows = work.decode_rows[before[2]:]
        stats.decode_rows += sum(rows)
        for n in rows:
            stats.decode_row_counts[n] = stats.decode_row_counts.get(n, 0) + 1


def _advance(ep: Rollout, env: Any, out: list[int], renderer: ChatRenderer, stop_ids: list[int],
             max_turns: int | None, max_total_tokens: int) -> None:
    """Append one model turn, step the env, append its reply tokens (masked)."""
    tok = renderer.tok
    ended_turn = bool(out) and out[-1] in stop_ids
    text = tok.decode([t for t in out if t not in stop_ids], skip_special_tokens=False)
    ep.completion_ids += out
    ep.env_mask += [1] * len(out)
    ep.turns += 1
    old_len = len(ep.messages)
    _, reward, terminated, truncated, info = env.step(text)
    before, after = _split_messages(old_len, list(info.get("messages", ep.messages)), text)
    ep.messages = after
    if terminated or truncated:
        ep.reward = float(reward)
        ep.done = True
        ep.ended_by = "terminated" if terminated else "truncated"
        ep.breakdown = dict(info.get("reward_breakdown") or {})
        if not ended_turn:
            _append_env(ep, renderer.ids(renderer.end))
        env.close()
        return
    delta = renderer.env_delta(before, after, ep.tools, ended_turn)
    _append_env(ep, renderer.ids(delta))
    over_turns = max_turns is not None and ep.turns >= max_turns
    if over_turns or ep.length >= max_total_tokens - 1:
        ep.reward = 0.0  # cut short, like tau2's max-turn truncation
        ep.done = True
        ep.ended_by = "max_turns" if over_turns else "max_tokens"
        env.close()


def _append_env(ep: Rollout, ids: list[int]) -> None:
    ep.completion_ids += ids
    ep.env_mask += [0] * len(ids)
