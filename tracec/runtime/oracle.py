"""The oracle's turns on a drawn task: every gold call (Hermes form), then a report of every
``communicate`` value rendered as the rules read it. The episode runner gives them to the oracle
agent; the checker's ``oracle`` probe is the same turns."""

from __future__ import annotations

from collections.abc import Sequence

from tracec.runtime.env import CapabilityEnv, TaskInstance
from tracec.runtime.lib import fmt
from tracec.runtime.outcome import Call
from tracec.runtime.toolcall import hermes


def report_text(inst: TaskInstance) -> str:
    """The oracle's final message: every communicate value, rendered with fmt."""
    if not inst.communicate:
        return "All done."
    parts = [f"{name.replace('_', ' ')}: {fmt(value)}" for name, value in inst.communicate.items()]
    return "Here is what I found. " + "; ".join(parts) + "."


def turns_of(calls: Sequence[Call], text: str, ends: frozenset[str]) -> tuple[str, ...]:
    turns = [hermes(c.name, c.arguments) for c in calls]
    if turns and calls[-1].name in ends:  # the last call ends the episode: say it in that turn
        turns[-1] = f"{text}\n{turns[-1]}"
    else:
        turns.append(text)
    return tuple(turns)


def oracle_turns(env: CapabilityEnv) -> tuple[str, ...]:
    """The oracle's turns on the env's current task: every gold call, then the report."""
    inst = env.instance
    return turns_of(tuple(inst.gold), report_text(inst), frozenset(env.capability.domain.ends_episode))
