"""Probe policies built from a task's gold actions, and the reward the rules promise them.

* ``oracle``: every gold call (one per turn, Hermes form), then a report of every
  ``communicate`` value (rendered with ``fmt``) -> must reach the top level;
* ``noop``: one plain message -> must reach the bottom level;
* ``silent_gold``: the gold calls without the report;
* ``gold_minus_one``: the oracle without its last write call (last call when none writes);
* ``forbidden`` (``forbidden_2``, ``forbidden_3``): the oracle plus one forbidden call, for
  each of the task's first three forbids (``tracec check`` rotates one probe through all of
  them, seed by seed); ``forbidden_instead`` (...): the oracle with the forbidden call *in
  place of* its last write call (a forbidden alternative action: a return instead of an
  exchange). The forbidden call has the forbid's own arguments, and the arguments it does not
  name are filled in from the gold call of the same tool, else from the gold calls' arguments
  of the same names (skipped when a required argument has none);
* ``echo``: the gold calls, then the raw tool outputs pasted back as the final message, in
  ``<tool_response>`` markup as a chat template renders them; ``echo_bare``: the same without
  the markup. ``communicated()`` counts the agent's own words only, so both must get what the
  silent probe gets (unless the spec declares `communicate raw`).

The expected reward judges the rules on an :class:`Outcome` built directly from the probe's
calls replayed on a copy of the initial world; the actual reward comes from running the env.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracec.runtime.env import CapabilityEnv, TaskInstance
from tracec.runtime.oracle import report_text, turns_of
from tracec.runtime.outcome import Call, Outcome, judge, spoken
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
    forbid: int | None = None  # the index of the forbid a forbidden probe plays
    forbidden: Call | None = None  # the forbidden call it makes
    why_not: str = ""  # a forbid that could not be played: why


MAX_FORBID_PROBES = 3


def forbid_call(forbid: Call, gold: Sequence[Call], tools: Mapping[str, Any] | None) -> Call | None:
    """The call a probe makes for ``forbid`` (None when it cannot be made: see
    :func:`forbid_plan`)."""
    return forbid_plan(forbid, gold, tools)[0]


def forbid_plan(forbid: Call, gold: Sequence[Call],
                tools: Mapping[str, Any] | None) -> tuple[Call | None, str]:
    """(the call a probe makes for ``forbid``, or None and why not). Its arguments are the
    forbid's own; those it does not name come from the gold call of the same tool, else from
    the gold calls' arguments of the same names, for every parameter of the tool."""
    own = dict(forbid.args or {})
    tool = (tools or {}).get(forbid.name)
    if tool is None:  # an unknown tool: the call is refused, which the rules can tell
        return Call(forbid.name, own), ""
    props = tool.parameters.get("properties", {}) or {}
    required = list(tool.parameters.get("required", []) or [])
    same = next((c for c in gold if c.name == forbid.name), None)
    known: dict[str, Any] = dict(same.args or {}) if same is not None else {}
    for c in gold:
        for k, v in (c.args or {}).items():
            known.setdefault(k, v)
    args = {k: own[k] if k in own else known[k] for k in props if k in own or k in known}
    args.update({k: v for k, v in own.items() if k not in args})
    missing = [r for r in required if r not in args]
    if missing:
        names = ", ".join(f"`{m}`" for m in missing)
        return None, (f"`{forbid.name}` needs {names}, which neither the forbid nor any gold "
                      "call gives")
    return Call(forbid.name, args), ""


def echo_text(results: Sequence[str], markup: bool = True) -> str:
    """The tool outputs pasted back as one message (in ``<tool_response>`` markup, or bare)."""
    if markup:
        return "\n".join(f"<tool_response>\n{r}\n</tool_response>" for r in results) or "."
    return "\n".join(results) or "."


def build_probes(inst: TaskInstance, writes: frozenset[str], ends: frozenset[str],
                 tools: Mapping[str, Any] | None = None, rotate: int | None = None,
                 results: Sequence[str] | None = None,
                 rendered: Mapping[int, str] | None = None) -> list[Probe]:
    """The probes for one drawn task (``tools``: name -> Tool, to probe forbids; ``results``:
    the gold calls' tool outputs, for the echo probes; ``rendered``: turns already rendered,
    by the ``id`` of a gold call of ``inst``).

    With ``rotate`` (the seed), one ``forbidden`` probe tries the task's forbids in turn, seed
    by seed, instead of one probe per forbid on every seed."""
    gold = tuple(inst.gold)
    report = report_text(inst)
    seen: dict[int, str] = dict(rendered or {})  # each gold call rendered once for all probes
    probes = [
        Probe("oracle", gold, report, turns_of(gold, report, ends, seen)),
        Probe("noop", (), NOOP_TEXT, (NOOP_TEXT,)),
        Probe("silent_gold", gold, SILENT_TEXT, turns_of(gold, SILENT_TEXT, ends, seen)),
    ]
    if gold:
        idx = max((i for i, c in enumerate(gold) if c.name in writes), default=len(gold) - 1)
        minus = gold[:idx] + gold[idx + 1:]
        probes.append(Probe("gold_minus_one", minus, report, turns_of(minus, report, ends, seen)))
    if results is not None and gold:
        for name, markup in (("echo", True), ("echo_bare", False)):
            text = echo_text(results, markup)
            probes.append(Probe(name, gold, text, turns_of(gold, text, ends, seen)))
    body = tuple(c for c in gold if c.name not in ends)
    plans = [(i, *forbid_plan(f, gold, tools)) for i, f in enumerate(inst.forbid)]
    if rotate is not None and plans:
        plans = [plans[rotate % len(plans)]]
    last_write = max((i for i, c in enumerate(body) if c.name in writes), default=None)
    for k, (index, call, why) in enumerate(plans[:MAX_FORBID_PROBES]):
        name = "forbidden" if k == 0 else f"forbidden_{k + 1}"
        if call is None:
            probes.append(Probe(name, (), "", (), forbid=index, why_not=why))
            continue
        calls = body + (call,)
        probes.append(Probe(name, calls, report, turns_of(calls, report, ends, seen), forbid=index,
                              forbidden=call))
        if last_write is not None and body[last_write] != call:
            instead = body[:last_write] + (call,) + body[last_write + 1:]
            probes.append(Probe(name.replace("forbidden", "forbidden_instead"), instead, report,
                                turns_of(instead, report, ends, seen), forbid=index,
                                forbidden=call))
    return probes


def replay(env: CapabilityEnv, calls: Sequence[Any]) -> tuple[Any, list[Call]]:
    """The world after running ``calls`` on a fresh copy, and the calls that succeeded (up to
    the first that ends the episode)."""
    box = env.toolbox
    db = env.initial_copy()
    done: list[Call] = []
    for c in calls:
        _, ok, _ = box.run(db, c.name, c.arguments, observe=False)
        if ok:
            done.append(Call(c.name, c.arguments))
            if c.name in box.ends:
                break
    return db, done


# replay_matches of the drawn instance judged last: (initial world, gold world, toolbox, {call
# objects' ids: (calls, matches, done)}); the probes' expectations and the ladder checks judge
# the same call lists on one instance (only the last one is kept: its worlds stay alive)
_REPLAYS: list = [None, None, None, {}]


def replay_matches(env: CapabilityEnv, calls: Sequence[Call]) -> tuple[bool, list[Call]]:
    """(the world after :func:`replay` of ``calls`` equals the gold world, the calls that
    succeeded), computed once per drawn instance and list of call objects."""
    calls = tuple(calls)
    world, gold_db, box = env.initial_db, env.gold_db, env.toolbox
    if _REPLAYS[0] is not world or _REPLAYS[1] is not gold_db or _REPLAYS[2] is not box:
        _REPLAYS[:] = [world, gold_db, box, {}]
    memo = _REPLAYS[3]
    key = tuple(map(id, calls))
    hit = memo.get(key)
    if hit is not None:
        return hit[1], list(hit[2])  # hit[0] keeps the calls alive: their ids stay theirs
    db, done = replay(env, calls)
    matches = env.matches_gold(db)
    memo[key] = (calls, matches, tuple(done))
    return matches, done


def expected(env: CapabilityEnv, probe: Probe,
             results: Sequence[str] | None = None) -> tuple[float, int | None]:
    """The reward the rules promise ``probe`` on the env's current task (env just reset;
    ``results``: the gold calls' tool outputs when known, for an echo of the gold calls)."""
    inst = env.instance
    box = env.toolbox
    gold = tuple(inst.gold)
    if not probe.calls:  # nothing runs: the initial world (a lazy copy if any: compares fast)
        done: list[Call] = []
        matches = env.matches_gold(env.initial_for_compare())
    elif probe.calls == gold and not any(c.name in box.ends for c in gold[:-1]):
        # the gold calls: reset() replayed them (each succeeded) into the gold world
        done = [Call(c.name, c.arguments) for c in gold]
        matches = True
    else:
        matches, done = replay_matches(env, probe.calls)
    if not probe.name.startswith("echo"):
        results = ()
    elif results is None or probe.calls != gold:
        results = probe_results(env, probe)
    texts = spoken([probe.text], results, env.capability.communicate_raw)
    o = Outcome.from_calls(
        state_matches=matches,
        gold=inst.gold,
        calls=done,
        forbid=inst.forbid,
        writes=box.writes,
        texts=texts,
        v=dict(inst.values),
        rivals=env.claim_rivals,
    )
    return judge(env.capability.rules, o)


def gold_results(env: CapabilityEnv) -> list[str]:
    """The tool outputs of the gold calls, replayed on a copy of the initial world."""
    db, run = env.initial_copy(), env.toolbox.run
    out = []
    for c in env.instance.gold:
        obs, _, _ = run(db, c.name, c.arguments)
        out.append(obs)
    return out


def probe_results(env: CapabilityEnv, probe: Probe) -> list[str]:
    """The tool outputs of ``probe``'s calls, replayed on a copy of the initial world."""
    db, run = env.initial_copy(), env.toolbox.run
    return [run(db, c.name, c.arguments)[0] for c in probe.calls]


@dataclass
class ProbeRun:
    """What running a probe in the env gave."""

    reward: float
    rule: int | None
    observations: list[str]
    rewards: list[float]
    final_hash: str
    ended_by: str
    tool_bugs: list[str]


def run_turns(env: CapabilityEnv, turns: Sequence[str], hash_state: bool = False) -> ProbeRun:
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
    return ProbeRun(
        reward=rewards[-1],
        rule=bd.get("rule"),
        observations=observations,
        rewards=rewards,
        final_hash=state_hash(env.db) if hash_state else "",
        ended_by=bd.get("ended_by", "?"),
        tool_bugs=list(env.tool_bugs),
    )
