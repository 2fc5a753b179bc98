"""Behaviours judged by the rules without running an episode: what the reward ladder pays a
list of calls and a final message on the env's drawn task (the rules' own view, as
``probes.expected`` has it), and the wrong behaviours the gold checks compare with it.

* :func:`judged`: (reward, rule index, final world equals the gold world) of calls + text;
* :func:`stray_write`: a successful write after the gold calls that leaves another world (the
  last gold write again with one argument changed to another value the world holds, or again
  as it is; for a gold without writes, a shown write tool on the gold calls' arguments);
* :func:`wrong_report`: the oracle's report with every answer replaced by a wrong one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracec.checks.probes import replay_matches
from tracec.runtime.env import CapabilityEnv
from tracec.runtime.lib import fmt
from tracec.runtime.outcome import Call, Outcome, judge, spoken

MAX_STRAY_TRIES = 6


@dataclass(frozen=True)
class Judged:
    """What the rules pay a behaviour."""

    reward: float
    rule: int | None
    matches: bool


def judged(env: CapabilityEnv, calls: Sequence[Call], text: str) -> Judged:
    """The reward the rules give ``calls`` (replayed on a copy of the initial world; a refused
    call does nothing) followed by the final message ``text``."""
    box = env.toolbox
    inst = env.instance
    gold = tuple(inst.gold)
    if tuple(calls) == gold and not any(c.name in box.ends for c in gold[:-1]):
        # the gold calls: reset() replayed them (each succeeded) into the gold world
        done, matches = [Call(c.name, c.arguments) for c in gold], True
    else:
        matches, done = replay_matches(env, calls)
    o = Outcome.from_calls(state_matches=matches, gold=inst.gold, calls=done, forbid=inst.forbid,
                           writes=box.writes, texts=spoken([text], (), env.capability.communicate_raw),
                           v=dict(inst.values))
    reward, rule = judge(env.capability.rules, o)
    return Judged(reward, rule, matches)


def world_records(db: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every record of the world: the mapping values of its tables that are mappings."""
    for table in db.values():
        if isinstance(table, Mapping):
            for rec in table.values():
                if isinstance(rec, Mapping):
                    yield rec


def _world_values(db: Mapping[str, Any], key: str, limit: int = 8) -> Iterator[Any]:
    """Distinct scalar values the world holds under ``key`` (records one level deep)."""
    seen: set = set()
    for rec in world_records(db):
        v = rec.get(key)
        if isinstance(v, (str, int, float)) and not isinstance(v, bool) and v not in seen:
            seen.add(v)
            yield v
            if len(seen) >= limit:
                return


def _variants(call: Call, db: Mapping[str, Any]) -> Iterator[Call]:
    """``call`` with one argument changed to another value (the world's values of that name,
    else a number moved by one), then ``call`` as it is."""
    args = dict(call.args or {})
    for k, v in args.items():
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            continue
        others = [w for w in _world_values(db, k) if w != v and type(w) is type(v)]
        if not others and isinstance(v, (int, float)):
            others = [v + 1]
        for w in others[:2]:
            yield Call(call.name, {**args, k: w})
    yield call


def stray_write(env: CapabilityEnv) -> Call | None:
    """A write call that succeeds after the gold calls and leaves a world unlike the gold one
    (None when none is found in a few tries)."""
    box = env.toolbox
    gold = list(env.instance.gold)
    if any(c.name in box.ends for c in gold):
        return None
    writes = [c for c in gold if c.name in box.writes]
    if writes:
        candidates: Iterator[Call] = _variants(writes[-1], env.initial_db)
    else:
        known = {k: v for c in gold for k, v in (c.args or {}).items()}
        candidates = iter([Call(n, {k: known[k] for k in t.parameters.get("properties", {})
                                    if k in known})
                           for n, t in box.tools.items() if n in box.writes and n not in box.ends])
    forbid = env.instance.forbid
    for n, cand in enumerate(candidates):
        if n >= MAX_STRAY_TRIES:
            break
        if any(f.name == cand.name for f in forbid):
            continue  # the forbidden probes judge those
        db = env.initial_copy()
        for c in gold:
            box.run(db, c.name, c.arguments, observe=False)
        _, ok, _ = box.run(db, cand.name, cand.arguments, observe=False)
        if ok and not env.matches_gold(db):
            return cand
    return None


def _wrong(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return value + 17
    if isinstance(value, (list, tuple)):
        return [_wrong(v) for v in value][:-1] or ["nothing"]
    text = fmt(value)
    return "unknown" if "unknown" not in text.lower() else "nothing"


def wrong_report(communicate: Mapping[str, Any]) -> str:
    """The oracle's report (``report_text``) with every answer wrong."""
    parts = [f"{name.replace('_', ' ')}: {fmt(_wrong(v))}" for name, v in communicate.items()]
    return "Here is what I found. " + "; ".join(parts) + "."
