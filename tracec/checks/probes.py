"""Probe policies built from a task's gold actions, and the reward the rules promise them.

* ``oracle``: every gold call (one per turn, Hermes form), then a report of every
  ``communicate`` value (rendered with ``fmt``) -> must reach the top level;
* ``noop``: one plain message -> must reach the bottom level;
* ``silent_gold``: the gold calls without the report;
* ``gold_minus_one``: the oracle without its last write call (last call when none writes);
* ``forbidden`` (``forbidden_2``, ``forbidden_3``): the oracle plus one forbidden call, for
  each of the task's first three forbids (``tracec check`` rotates one probe through all of
  them, seed by seed); a bare ``forbid tool`` is called with the gold calls' arguments of the
  same names (skipped when a required argument has none).

The expected reward judges the rules on an :class:`Outcome` built directly from the probe's
calls replayed on a copy of the initial world; the actual reward comes from running the env.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracec.runtime.env import CapabilityEnv, TaskInstance
from tracec.runtime.oracle import report_text, turns_of
from tracec.runtime.outcome import Call, Outcome, judge
from tracec.runtime.user import STOP
from tracec.runtime.world import state_hash

NOOP_TEXT = "I'm sorry, I cannot help with that."
SILENT_TEXT = "Done."


@dataclass(frozen=True)
class Probe:
    """A scripted policy: its turns, and the calls and texts it makes (for the expectation)."""

    name: str
    calls: tuple[Call, ...]
    text: str  # the final message
    turns: tuple[str, ...]


MAX_FORBID_PROBES = 3


def forbid_call(forbid: Call, gold: Sequence[Call], tools: Mapping[str, Any] | None) -> Call | None:
    """The call a probe makes for ``forbid``: its own arguments, or (a bare forbid) the tool's
    required arguments taken from the gold calls' arguments of the same names."""
    if forbid.args is not None:
        return Call(forbid.name, dict(forbid.args))
    tool = (tools or {}).get(forbid.name)
    if tool is None:
        return None
    props = tool.parameters.get("properties", {}) or {}
    required = list(tool.parameters.get("required", []) or [])
    known: dict[str, Any] = {}
    for c in gold:
        for k, v in (c.args or {}).items():
            known.setdefault(k, v)
    if any(r not in known for r in required):
        return None
    return Call(forbid.name, {k: known[k] for k in props if k in known})


def build_probes(inst: TaskInstance, writes: frozenset[str], ends: frozenset[str],
                 tools: Mapping[str, Any] | None = None, rotate: int | None = None) -> list[Probe]:
    """The probes for one drawn task (``tools``: name -> Tool, to probe bare forbids).

    With ``rotate`` (the seed), one ``forbidden`` probe tries the task's forbids in turn, seed
    by seed, instead of one probe per forbid on every seed."""
    gold = tuple(inst.gold)
    report = report_text(inst)
    seen: dict[int, str] = {}  # each gold call rendered once for all probes
    probes = [
        Probe("oracle", gold, report, turns_of(gold, report, ends, seen)),
        Probe("noop", (), NOOP_TEXT, (NOOP_TEXT,)),
        Probe("silent_gold", gold, SILENT_TEXT, turns_of(gold, SILENT_TEXT, ends, seen)),
    ]
    if gold:
        idx = max((i for i, c in enumerate(gold) if c.name in writes), default=len(gold) - 1)
        minus = gold[:idx] + gold[idx + 1:]
        probes.append(Probe("gold_minus_one", minus, report, turns_of(minus, report, ends, seen)))
    body = tuple(c for c in gold if c.name not in ends)
    made = [c for c in (forbid_call(f, gold, tools) for f in inst.forbid) if c is not None]
    if rotate is not None and made:
        made = [made[rotate % len(made)]]
    for k, call in enumerate(made[:MAX_FORBID_PROBES]):
        calls = body + (call,)
        name = "forbidden" if k == 0 else f"forbidden_{k + 1}"
        probes.append(Probe(name, calls, report, turns_of(calls, report, ends, seen)))
    return probes


def expected(env: CapabilityEnv, probe: Probe) -> tuple[float, int | None]:
    """The reward the rules promise ``probe`` on the env's current task (env just reset)."""
    inst = env.instance
    box = env._box
    gold = tuple(inst.gold)
    if not probe.calls:  # nothing runs: the initial world (a lazy copy if any: compares fast)
        done: list[Call] = []
        matches = env.matches_gold(env.initial_for_compare())
    elif probe.calls == gold and not any(c.name in box.ends for c in gold[:-1]):
        # the gold calls: reset() replayed them (each succeeded) into the gold world
        done = [Call(c.name, c.arguments) for c in gold]
        matches = True
    else:
        db = env.initial_copy()
        done = []
        for c in probe.calls:
            _, ok, _ = box.run(db, c.name, c.arguments, observe=False)
            if ok:
                done.append(Call(c.name, c.arguments))
                if c.name in box.ends:
                    break
        matches = env.matches_gold(db)
    texts = [probe.text]
    o = Outcome.from_calls(
        state_matches=matches,
        gold=inst.gold,
        calls=done,
        forbid=inst.forbid,
        writes=box.writes,
        texts=texts,
        v=dict(inst.values),
    )
    return judge(env.capability.rules, o)


@dataclass
class Episode:
    """What running a probe in the env gave."""

    reward: float
    rule: int | None
    observations: list[str]
    rewards: list[float]
    final_hash: str
    ended_by: str
    tool_bugs: list[str]


def run_turns(env: CapabilityEnv, turns: Sequence[str], hash_state: bool = False) -> Episode:
    """Play ``turns`` (then ``###STOP###`` if the episode is still going) on a reset env."""
    observations: list[str] = []
    rewards: list[float] = []
    info: dict = {}
    for turn in list(turns) + [STOP]:
        obs, r, terminated, truncated, info = env.step(turn)
        observations.append(obs)
        rewards.append(r)
        if terminated or truncated:
            break
    bd = info.get("reward_breakdown", {})
    return Episode(
        reward=rewards[-1],
        rule=bd.get("rule"),
        observations=observations,
        rewards=rewards,
        final_hash=state_hash(env.db) if hash_state else "",
        ended_by=bd.get("ended_by", "?"),
        tool_bugs=list(env.tool_bugs),
    )
