"""Probe episodes that share the gold calls' turns (speed: issue 30 item 5).

The oracle, the silent gold calls, the two echoes and the shotgun play the same gold calls,
one per turn, and differ only in their final message; the gold calls' tool outputs (which the
echoes paste and the gold checks read) are those turns' observations. :class:`GoldFork` plays those tool
turns once per drawn instance through ``env.step`` and keeps the episode's state after them;
each of these probes then resumes from a copy of that state and plays its own final message
(and the user's stop), as a fresh episode would. A text turn writes no world, so the world
after the gold calls is shared read-only; the episode's lists are copied. A probe whose
final message parses as a tool call, or a prefix that ends or truncates the episode, is
played from the start (``env.restart()``) instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracec.checks.probes import Probe, ProbeRun, gold_results, run_turns
from tracec.runtime.env import CapabilityEnv
from tracec.runtime.toolcall import ToolCallParseError, hermes, parse_turn
from tracec.runtime.user import ScriptedUser


@dataclass
class _Prefix:
    """The episode's state after the gold calls' turns."""

    turns: tuple[str, ...]
    db: Any
    calls: list
    texts: list
    results: list
    tool_bugs: list
    messages: list
    turn: int
    observations: list[str]
    rewards: list[float]


def _text_only(turn: str) -> bool:
    try:
        return not parse_turn(turn).calls
    except ToolCallParseError:
        return False


class GoldFork:
    """Plays probes on ``env`` (just reset), sharing the gold calls' turns between those that
    start with them; :meth:`play` gives what :func:`run_turns` would after ``env.restart()``."""

    def __init__(self, env: CapabilityEnv) -> None:
        self.env = env
        self.prefix: _Prefix | None = None
        self.failed = False  # the prefix ended or truncated the episode: no fork

    def _forkable(self, probe: Probe) -> bool:
        gold = tuple(self.env.instance.gold)
        return (bool(gold) and probe.calls == gold and len(probe.turns) == len(gold) + 1
                and not self.failed and _text_only(probe.turns[-1]))

    def _make_prefix(self, turns: tuple[str, ...]) -> _Prefix | None:
        env = self.env
        env.restart()
        observations: list[str] = []
        rewards: list[float] = []
        for turn in turns:
            obs, r, terminated, truncated, _ = env.step(turn)
            observations.append(obs)
            rewards.append(r)
            if terminated or truncated:
                self.failed = True
                return None
        return _Prefix(turns, env.db, list(env.calls), list(env.texts), list(env.results),
                       list(env.tool_bugs), list(env.messages), env.turn, observations, rewards)

    def gold_results(self) -> list[str]:
        """The gold calls' tool outputs, from the shared turns when the gold can be played
        alone (no call that ends the episode, within ``max_turns``), else from a replay."""
        env = self.env
        gold = tuple(env.instance.gold)
        box = env.toolbox
        if gold and not any(c.name in box.ends for c in gold) \
                and len(gold) < env.capability.max_turns:
            turns = tuple(hermes(c.name, c.arguments) for c in gold)
            self.prefix = self._make_prefix(turns)
            if self.prefix is not None and len(self.prefix.results) == len(gold):
                return list(self.prefix.results)
        return gold_results(env)

    def play(self, probe: Probe) -> ProbeRun:
        """``probe`` played on the env's current task from its initial world."""
        env = self.env
        if not self._forkable(probe):
            env.restart()
            return run_turns(env, probe.turns)
        head = probe.turns[:-1]
        if self.prefix is None or self.prefix.turns != head:
            self.prefix = self._make_prefix(head)
            if self.prefix is None:
                env.restart()
                return run_turns(env, probe.turns)
        p = self.prefix
        env.restart()
        env.db = p.db  # read-only from here: the tail is a text turn
        env.calls, env.texts, env.results = list(p.calls), list(p.texts), list(p.results)
        env.tool_bugs, env.messages, env.turn = list(p.tool_bugs), list(p.messages), p.turn
        env.user = ScriptedUser(env.instance.replies)
        tail = run_turns(env, probe.turns[-1:])
        return ProbeRun(reward=tail.reward, rule=tail.rule,
                        observations=p.observations + tail.observations,
                        rewards=p.rewards + tail.rewards, final_hash=tail.final_hash,
                        ended_by=tail.ended_by, tool_bugs=tail.tool_bugs)
