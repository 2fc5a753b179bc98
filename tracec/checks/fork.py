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

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tracec.checks.probes import Probe, ProbeRun, gold_results, run_turns
from tracec.runtime.env import CapabilityEnv
from tracec.runtime.outcome import Call
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


def _apart(p: _Prefix) -> _Prefix | None:
    """``p`` with its own copy of the world and of its calls (a tool may keep an argument's
    value in the world: the copies share it as the episode does), None when it cannot be
    copied."""
    copied = fork(p.db, [c.args for c in p.calls])
    if copied is None:
        return None
    db, args = copied
    calls = [Call(c.name, a) for c, a in zip(p.calls, args)]
    return dataclasses.replace(p, db=db, calls=calls)


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
        self.rendered: dict[int, str] = {}  # the gold calls' turns, by the id of each call

    def _forkable(self, probe: Probe) -> bool:
        gold = tuple(self.env.instance.gold)
        return (bool(gold) and probe.calls == gold and len(probe.turns) == len(gold) + 1
                and not self.failed and _text_only(probe.turns[-1]))

    def _make_prefix(self, turns: tuple[str, ...], mark: int = 0) -> _Prefix | None:
        """The state after ``turns`` (None when they end or truncate the episode); with
        ``mark`` (2 or more: a copy of the world costs about what a tool turn does), the state
        after the first ``mark`` turns is kept too (:attr:`marks`)."""
        env = self.env
        env.restart()
        observations: list[str] = []
        rewards: list[float] = []
        for i, turn in enumerate(turns):
            if i > 1 and i == mark:
                state = self._state(turns[:i], observations, rewards)
                copied = _apart(state)
                if copied is not None:
                    self.marks.append(copied)
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
            self.rendered = {id(c): t for c, t in zip(gold, turns)}
            # the gold minus its last write (the last call when none writes) and a forbidden
            # call in its place start to differ there (tracec.checks.probes.build_probes)
            last = max((i for i, c in enumerate(gold) if c.name in box.writes),
                       default=len(gold) - 1)
            self.prefix = self._make_prefix(turns, last)
            if self.prefix is not None and len(self.prefix.results) == len(gold):
                return list(self.prefix.results)
        return gold_results(env)

    def play(self, probe: Probe, later: Sequence[Probe] | None = None) -> ProbeRun:
        """``probe`` played on the env's current task from its initial world; ``later``: the
        probes to be played after it, when known (a kept state none of them reads is handed
        to ``probe`` without a copy)."""
        env = self.env
        if not self._forkable(probe):
            return self._resume(probe, later)
        head = probe.turns[:-1]
        if self.prefix is None or self.prefix.turns != head:
            self.prefix = self._make_prefix(head)
            if self.prefix is None:
                env.restart()
                return run_turns(env, probe.turns)
        return self._from(self.prefix, self.prefix.db, probe.turns[-1:])

    def _choice(self, turns: tuple[str, ...]) -> _Prefix | None:
        """The deepest kept state whose turns begin ``turns``, with turns left to play."""
        for state in ([self.prefix] if self.prefix is not None else []) + self.marks[::-1]:
            k = len(state.turns)
            if k < len(turns) and turns[:k] == state.turns:
                return state
        return None

    def _uses(self, probe: Probe, state: _Prefix) -> bool:
        """Whether playing ``probe`` reads ``state`` (a text tail shares the prefix's world)."""
        if self._forkable(probe):
            return state is self.prefix
        return self._choice(probe.turns) is state

    def _resume(self, probe: Probe, later: Sequence[Probe] | None = None) -> ProbeRun:
        """``probe`` from the deepest kept state whose turns begin its own, on a copy of that
        state's world (the state itself when no ``later`` probe reads it: it is dropped);
        from the start when there is none (or the world cannot be copied)."""
        env = self.env
        turns = probe.turns
        state = self._choice(turns)
        if state is not None:
            if later is not None and not any(self._uses(p, state) for p in later):
                if state is self.prefix:
                    self.prefix = None
                else:
                    self.marks = [m for m in self.marks if m is not state]
                return self._from(state, state.db, turns[len(state.turns):])
            copied = _apart(state)
            if copied is not None:
                return self._from(copied, copied.db, turns[len(state.turns):])
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
