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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.lang import ast as A
from tracec.runtime.lib import fmt
from tracec.runtime.outcome import mentioned, values_equal

MAX_SEEDS = 32
_MISSING = object()


def _value(expr: Any, values: Mapping[str, Any]) -> Any:
    """The value of a field read `x.f`, `x.f[0].g` on the instance's `let`s (else _MISSING)."""
    if isinstance(expr, A.Name):
        return values.get(expr.id, _MISSING)
    if isinstance(expr, A.Attr):
        obj = _value(expr.obj, values)
        return obj.get(expr.name, _MISSING) if isinstance(obj, Mapping) else _MISSING
    if isinstance(expr, A.Index) and isinstance(expr.index, A.Num):
        obj = _value(expr.obj, values)
        i = expr.index.value
        if isinstance(obj, list) and isinstance(i, int) and -len(obj) <= i < len(obj):
            return obj[i]
    return _MISSING


class UserValues(Check):
    """C174 over the first seeds; findings go to ``log``."""

    name = "gold arguments vs the values the user states"
    codes = ("C174",)

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
        self.done: set[tuple[str, str, str]] = set()

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
                said = [v for v in (_value(e, inst.values) for e in fields[arg])
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
