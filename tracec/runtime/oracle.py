"""The oracle's turns on a drawn task: every gold call (Hermes form), then a report of every
``communicate`` value rendered as the rules read it. The episode runner gives them to the oracle
agent; the checker's ``oracle`` probe is the same turns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tracec.runtime.env import CapabilityEnv, TaskInstance
from tracec.runtime.lib import fmt
from tracec.runtime.outcome import Call
from tracec.runtime.toolcall import hermes
from tracec.runtime.user import STOP


def report_text(inst: TaskInstance) -> str:
    """The oracle's final message: every communicate value, rendered with fmt."""
    if not inst.communicate:
        return "All done."
    parts = [f"{name.replace('_', ' ')}: {fmt(value)}" for name, value in inst.communicate.items()]
    return "Here is what I found. " + "; ".join(parts) + "."


def turns_of(calls: Sequence[Call], text: str, ends: frozenset[str],
             rendered: dict[int, str] | None = None) -> tuple[str, ...]:
    """The turns that make ``calls`` (Hermes form) and then say ``text``. ``rendered`` (by the
    ``id`` of a call that stays alive meanwhile) keeps each call's text for the next probe."""
    if rendered is None:
        turns = [hermes(c.name, c.arguments) for c in calls]
    else:
        turns = []
        for c in calls:
            turn = rendered.get(id(c))
            if turn is None:
                turn = rendered[id(c)] = hermes(c.name, c.arguments)
            turns.append(turn)
    if turns and calls[-1].name in ends:  # the last call ends the episode: say it in that turn
        turns[-1] = f"{text}\n{turns[-1]}"
    else:
        turns.append(text)
    return tuple(turns)


def oracle_turns(env: CapabilityEnv) -> tuple[str, ...]:
    """The oracle's turns on the env's current task: every gold call, then the report."""
    inst = env.instance
    return turns_of(tuple(inst.gold), report_text(inst), frozenset(env.capability.domain.ends_episode))


@dataclass
class OracleRun:
    """One episode of the oracle: what reset gave, the turns played, the final messages."""

    reset_info: dict
    turns: list[str]
    messages: list[dict]
    reward: float
    info: dict  # the last step's info


def run_oracle(env: Any, seed: int, options: dict | None = None) -> OracleRun:
    """Play the oracle's turns (then goodbyes) on ``env`` (a compiled env, possibly wrapped)
    from ``env.reset(seed=seed, options=options)`` until the episode ends."""
    inner = getattr(env, "unwrapped", env)
    _, info = env.reset(seed=seed, options=options)
    messages, reward, played, last = list(info["messages"]), 0.0, [], info
    for turn in list(oracle_turns(inner)) + [f"Goodbye. {STOP}"] * 2:
        _, reward, term, trunc, last = env.step(turn)
        played.append(turn)
        messages = list(last["messages"])
        if term or trunc:
            break
    return OracleRun(info, played, messages, float(reward), last)
