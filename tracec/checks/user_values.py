"""A gold argument against the value the user states for it (C174, error): the user's text
interpolates a field of the argument's name (`ship it to {a.address1}, ...`) and the gold
passes that argument another value (`address1 = ord.address.address1`, the order's current
line): the agent that does what the user says is scored wrong.

A field the user's words state is an `{x.f}` interpolation of the task's `user` text whose
value, on the drawn instance, is a number or a text; a gold call's scalar argument named `f`
must equal one of the values stated for `f` (the old and the new value both count: "from
{old.zip} to {new.zip}"), or be said in the user's message in another way (a reminder's
`content` that is the `{label}` the user gives, beside the message's `{m.content}`). Judged on the first ``MAX_SEEDS`` seeds, at the gold call, once per
task and argument.

C196 (error): a value the user names by its field is written into another field. The user's
words just before a `{x}` interpolation of a plain variable name a field of the task's writes
("the first passenger's last name is {newlast}": `last_name`, the field whose words, with `_`
as a space, stand nearest before it), and a dict the task builds (or a gold call) puts `x` under
another key while it has that field too (`{"first_name": newlast, "last_name": lead.last_name}`):
judged from the spec alone, at the `let` that builds the dict (else the gold call).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any

from tracec.checks.blame import path_value
from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.lang import ast as A
from tracec.runtime.lib import fmt
from tracec.runtime.outcome import mentioned, values_equal

MAX_SEEDS = 32

class UserValues(Check):
    """C174 over the first seeds; findings go to ``log``."""

    name = "gold arguments vs the values the user states"
    codes = ("C174", "C196")

    def start(self) -> None:
        for t in (self.where.ast.tasks if self.where.ast is not None else []):
            for var, field in named_fields(t):
                for key, fields, site in _placed(t, var):
                    if key == field or field not in fields:
                        continue
                    span = self.where.let(t.name, site) if isinstance(site, str) else \
                        self.where.gold(t.name, site[0], site[1])
                    self.log.add(f"C196:{t.name}:{var}", "error", "C196",
                                 f"task `{t.name}`: the user's words give `{var}` as the "
                                 f"{field.replace('_', ' ')}, but the task writes it as "
                                 f"`{key}` (beside a `{field}` of its own): the gold writes the "
                                 "value into another field than the user names",
                                 span or self.where.task(t.name), task=t.name,
                                 hint=f"put `{var}` under `{field}`")
                    break

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        # task -> field name -> the user text's interpolations of a field of that name
        self.stated: dict[str, dict[str, list[Any]]] = {}
        for t in (self.where.ast.tasks if self.where.ast is not None else []):
            parts = t.user.parts if isinstance(t.user, A.Text) else []
            fields: dict[str, list[Any]] = {}
            for p in parts:
                if isinstance(p, A.Attr):
                    fields.setdefault(p.name, []).append(p)
            if fields:
                self.stated[t.name] = fields

    def instance(self, ctx: InstanceContext) -> None:
        inst, seed = ctx.inst, ctx.seed
        fields = self.stated.get(inst.task)
        if not fields or seed >= MAX_SEEDS:
            return
        nth: dict[str, int] = {}
        for call in inst.gold:
            k = nth[call.name] = nth.get(call.name, -1) + 1
            for arg, value in (call.args or {}).items():
                if arg not in fields or isinstance(value, (bool, list, dict)) or value is None \
                        or (inst.task, call.name, arg) in self.done:
                    continue
                said = [v for v in (path_value(e, inst.values) for e in fields[arg])
                        if isinstance(v, (int, float, str)) and not isinstance(v, bool)]
                if not said or any(values_equal(value, v) for v in said) \
                        or mentioned(value, [inst.user]):
                    continue
                self.done.add((inst.task, call.name, arg))
                shown = " or ".join(repr(fmt(v)) for v in said)
                self.log.add(f"C174:{inst.task}:{call.name}:{arg}", "error", "C174",
                             f"task `{inst.task}`: the user says {arg} {shown}, but the gold's "
                             f"`{call.name}` passes {arg} = {fmt(value)!r} (first at seed "
                             f"{seed}): the agent that does what the user says is scored wrong",
                             self.where.gold(inst.task, call.name, k), task=inst.task, seed=seed,
                             hint=f"pass the value the user gives for `{arg}`, or let the user's "
                                  "words give the gold's")


def named_fields(task: A.Task) -> list[tuple[str, str]]:
    """(variable, field) for each `{x}` of the `user` text whose words just before it name a
    field of the task's writes by its words (`last name` for `last_name`), the nearest one."""
    parts = task.user.parts if isinstance(task.user, A.Text) else []
    fields = {key for key, _, _ in _all_placed(task)}
    out = []
    for before, part in itertools.pairwise(parts):
        if not (isinstance(before, str) and isinstance(part, A.Name)):
            continue
        clause = re.split(r"[.;:!?,]", before.lower())[-1]
        at = [(m.start(), f) for f in fields if "_" in f
              for m in re.finditer(rf"\b{re.escape(f.replace('_', ' '))}\b", clause)]
        if at:
            out.append((part.id, max(at)[1]))
    return out


def _all_placed(task: A.Task) -> Iterator[tuple[str, set[str], Any]]:
    """(key, its siblings' keys, where) for each value a dict literal of a `let` or gold call
    holds, and each keyword of a gold call; where: the `let`'s name, or (tool, nth)."""
    sites: list[tuple[Any, Any]] = [(let.name, let.value) for let in task.lets]
    counts: dict[str, int] = {}
    for call in A.gold_calls(task.gold):
        nth = counts.get(call.name, 0)
        counts[call.name] = nth + 1
        sites.append(((call.name, nth), call))
        names = {kw.name for kw in call.args}
        for kw in call.args:
            yield kw.name, names, ((call.name, nth), kw.value)
    for site, tree in sites:
        for node in A.walk(tree):
            if isinstance(node, A.DictLit):
                keys = {p.key.value for p in node.pairs if isinstance(p.key, A.Str)}
                for p in node.pairs:
                    if isinstance(p.key, A.Str):
                        yield p.key.value, keys, (site, p.value)


def _placed(task: A.Task, var: str) -> list[tuple[str, set[str], Any]]:
    """(key, siblings, site) where the task writes the plain variable ``var``."""
    return [(key, keys, site) for key, keys, (site, value) in _all_placed(task)
            if isinstance(value, A.Name) and value.id == var]
