"""The protocol every rollout generation engine implements (local KV engine, serving engine).

An engine generates one assistant turn for many conversations at once. Conversations are named
by an integer ``key``; ``start`` gives a conversation's first prompt, ``generate`` continues
each named conversation from its full token sequence so far (``seqs[i]`` = prompt + everything
since, model and env tokens alike) by at most ``budgets[i]`` tokens, and returns the sampled ids
(ending with a stop id when the turn ended); ``finish`` forgets a conversation. An engine that
prefills many prompts better together also has ``start_many(items)`` (:func:`start_all`).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class TurnEngine(Protocol):
    """One scheduler for many callers: start conversations, generate turns, finish them."""

    def start(self, key: int, prompt_ids: list[int]) -> None: ...

    def generate(self, keys: list[int], seqs: list[list[int]], budgets: list[int],
                 temperature: float) -> list[list[int]]: ...

    def finish(self, key: int) -> None: ...


def start_all(engine: TurnEngine, items: list[tuple[int, list[int]]]) -> None:
    """Start conversations ``(key, prompt ids)``: in one ``start_many`` call where the engine
    has one (the local engine then batches their prefills), else one ``start`` each."""
    many = getattr(engine, "start_many", None)
    if many is not None:
        many(items)
        return
    for key, ids in items:
        engine.start(key, ids)
