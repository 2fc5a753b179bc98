"""Probes of the own-words rule: a list of every possible value (the *shotgun*) and a final
message that is only pasted tool output (the *echo* probes of :mod:`tracec.checks.probes`).

* ``shotgun``: the gold calls, then one message naming each `communicate` value together with
  every other possible value of it (:class:`tracec.runtime.rivals.Rivals`: its enum's other
  values, the same field's values elsewhere in the world). ``communicated()`` refuses a value
  named beside its rivals, so the shotgun must get no more than the silent gold calls: C121
  (an error), or C321 (a warning) under `communicate raw`, which reads a mention as enough.
  A task whose values have no rivals (numbers, a value unique in its field) plays none.

:func:`rungs` tallies the rung each of these probes reaches, for the report.
"""

from __future__ import annotations

from typing import Any

from tracec.checks.probes import Probe
from tracec.runtime.env import CapabilityEnv
from tracec.runtime.lib import fmt
from tracec.runtime.oracle import turns_of

OWN_WORDS_PROBES = ("shotgun", "echo", "echo_bare")


def shotgun_text(values: list[Any], rivals: Any) -> str | None:
    """One message listing each value with all its rivals (None when no value has any)."""
    named: list[str] = []
    extra = False
    for v in values:
        for x in [fmt(v), *sorted(rivals(v))]:
            extra = extra or x != fmt(v)
            if x.lower() not in (n.lower() for n in named):
                named.append(x)
    if not extra:
        return None
    return "It is one of these: " + ", ".join(named) + "."


def shotgun_probe(env: CapabilityEnv, seen: dict[int, str] | None = None) -> Probe | None:
    """The shotgun probe of the env's current task (None: nothing to list beside the values)."""
    inst = env.instance
    if not inst.gold or not inst.communicate:
        return None
    text = shotgun_text(list(inst.communicate.values()), env.rivals)
    if text is None:
        return None
    gold = tuple(inst.gold)
    return Probe("shotgun", gold, text, turns_of(gold, text, env.toolbox.ends, seen))


def rungs(tally: dict[str, dict[str, int]], probe: str, rule_text: str) -> None:
    """Count one episode of an own-words ``probe`` at the rung ``rule_text``."""
    if probe in OWN_WORDS_PROBES:
        per = tally.setdefault(probe, {})
        per[rule_text] = per.get(rule_text, 0) + 1


def rungs_line(tally: dict[str, dict[str, int]]) -> str:
    """``shotgun -> rule 2 `...` (64); echo -> ...``: where the own-words probes landed."""
    return "; ".join(f"{p} -> " + ", ".join(f"{rule} ({n})" for rule, n in tally[p].items())
                     for p in OWN_WORDS_PROBES if p in tally)


RAW_HINT = "drop `communicate raw` unless the env must score as the target does"


def paid_finding(log: Any, key: str, raw: bool, where: Any, paid: str, task: str, seed: int, *,
                 raw_code: str, raw_why: str, code: str, why: str, hint: str) -> None:
    """A probe paid more than the silent gold calls: a warning (``raw_code``) under
    `communicate raw`, which pays it on purpose, an error (``code``) otherwise."""
    if raw:
        log.add(key, "warning", raw_code, paid + raw_why, where, task=task, seed=seed,
                hint=RAW_HINT)
    else:
        log.add(key, "error", code, paid + why, where, task=task, seed=seed, hint=hint)


def shotgun_paid(log: Any, where_map: Any, cap: Any, task: str, ep: Any, silent: float,
                 rule: str, seed: int) -> None:
    """The finding for a shotgun paid more than the silent gold calls."""
    paid = (f"task `{task}`, probe shotgun: listing every possible value gets {ep.reward:.2f} "
            f"({rule}), more than the silent gold calls ({silent:.2f}), first at seed {seed}: ")
    paid_finding(log, f"shotgun:{task}", cap.communicate_raw, where_map.rule(ep.rule), paid, task,
                 seed, raw_code="C321",
                 raw_why="`communicate raw` counts a value named in a list of alternatives",
                 code="C121", why="the rule pays for a list of guesses",
                 hint="a rule above the calls must need `communicated()` (one claim in the "
                      "agent's own words), not a `mentioned`-style test of its own")
