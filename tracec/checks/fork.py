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

The probes that change the gold's end (the gold minus its last write, the gold plus a forbidden
call, a forbidden call in place of the last write) share the gold's first turns too: the state
before the gold's last write call is kept as well (its world copied, :func:`fork`), and such a
probe resumes from the deepest kept state whose turns begin its own, on its own copy of that
state's world (its tail may write), when the world can be copied exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracec.checks.probes import Probe, ProbeRun, gold_results, run_turns
from tracec.runtime.env import CapabilityEnv
from tracec.runtime.toolcall import ToolCallParseError, hermes, parse_turn
from tracec.runtime.user import ScriptedUser
from tracec.runtime.world import fork


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
        # states before the prefix's end (their worlds private copies): before the gold's last
        # write, where the probes that change the gold's end start to differ
        self.marks: list[_Prefix] = []

    def _forkable(self, probe: Probe) -> bool:
        gold = tuple(self.env.instance.gold)
        return (bool(gold) and probe.calls == gold and len(probe.turns) == len(gold) + 1
                and not self.failed and _text_only(probe.turns[-1]))

    def _make_prefix(self, turns: tuple[str, ...], mark: int = 0) -> _Prefix | None:
        """The state after ``turns`` (None when they end or truncate the episode); with
        ``mark``, the state after the first ``mark`` turns is kept too (:attr:`marks`)."""
        env = self.env
        env.restart()
        observations: list[str] = []
        rewards: list[float] = []
        for i, turn in enumerate(turns):
            if i and i == mark:
                state = self._state(turns[:i], observations, rewards)
                state.db = fork(state.db)
                if state.db is not None:
                    self.marks.append(state)
            obs, r, terminated, truncated, _ = env.step(turn)
            observations.append(obs)
            rewards.append(r)
            if terminated or truncated:
                self.failed = True
                self.marks.clear()
                return None
        return self._state(turns, observations, rewards)

    def _state(self, turns: tuple[str, ...], observations: list[str],
               rewards: list[float]) -> _Prefix:
        env = self.env
        return _Prefix(turns, env.db, list(env.calls), list(env.texts), list(env.results),
                       list(env.tool_bugs), list(env.messages), env.turn, list(observations),
                       list(rewards))

    def gold_results(self) -> list[str]:
        """The gold calls' tool outputs, from the shared turns when the gold can be played
        alone (no call that ends the episode, within ``max_turns``), else from a replay."""
        env = self.env
        gold = tuple(env.instance.gold)
        box = env.toolbox
        if gold and not any(c.name in box.ends for c in gold) \
                and len(gold) < env.capability.max_turns:
            turns = tuple(hermes(c.name, c.arguments) for c in gold)
            # the gold minus its last write (the last call when none writes) and a forbidden
            # call in its place start to differ there (tracec.checks.probes.build_probes)
            last = max((i for i, c in enumerate(gold) if c.name in box.writes),
                       default=len(gold) - 1)
            self.prefix = self._make_prefix(turns, last)
            if self.prefix is not None and len(self.prefix.results) == len(gold):
                return list(self.prefix.results)
        return gold_results(env)

    def play(self, probe: Probe) -> ProbeRun:
        """``probe`` played on the env's current task from its initial world."""
        env = self.env
        if not self._forkable(probe):
            return self._resume(probe)
        head = probe.turns[:-1]
        if self.prefix is None or self.prefix.turns != head:
            self.prefix = self._make_prefix(head)
            if self.prefix is None:
                env.restart()
                return run_turns(env, probe.turns)
        return self._from(self.prefix, self.prefix.db, probe.turns[-1:])

    def _resume(self, probe: Probe) -> ProbeRun:
        """``probe`` from the deepest kept state whose turns begin its own, on a copy of that
        state's world; from the start when there is none (or the world cannot be copied)."""
        env = self.env
        turns = probe.turns
        for state in ([self.prefix] if self.prefix is not None else []) + self.marks[::-1]:
            k = len(state.turns)
            if k < len(turns) and turns[:k] == state.turns:
                db = fork(state.db)
                if db is not None:
                    return self._from(state, db, turns[k:])
        env.restart()
        return run_turns(env, turns)

    def _from(self, p: _Prefix, db: Any, tail: tuple[str, ...]) -> ProbeRun:
        """``tail`` played after the state ``p``, on the world ``db``."""
        env = self.env
        env.restart()
        env.db = db
        env.calls, env.texts, env.results = list(p.calls), list(p.texts), list(p.results)
        env.tool_bugs, env.messages, env.turn = list(p.tool_bugs), list(p.messages), p.turn
        env.user = ScriptedUser(env.instance.replies)
        end = run_turns(env, tail)
        return ProbeRun(reward=end.reward, rule=end.rule,
                        observations=p.observations + end.observations,
                        rewards=p.rewards + end.rewards, final_hash=end.final_hash,
                        ended_by=end.ended_by, tool_bugs=end.tool_bugs)
