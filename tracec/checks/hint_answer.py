"""The answer against the task's own hint (C156, error): the hint says which field of a record
holds the answer (`` `destination` ``, ``the reservation's cabin_class``) and the task
communicates another field of that record (``communicate r.origin``).

Judged once per task, on its first drawn instance: for each `communicate` value read as a field
of a `let` record (``r.origin``, or nested, ``r.flights[0].origin``, when `r` has that field
too), the fields of that record the hint names in backticks (or,
with an underscore, as a word) must include the one read, when they name any. Reported at the
`communicate`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.checks.locate import root
from tracec.lang import ast as A

_TICKED = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")


def named_fields(hint: str, fields: list[str]) -> set[str]:
    """The fields of ``fields`` the hint names: in backticks, or as a word with an underscore."""
    ticked = set(_TICKED.findall(hint))
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", hint))
    return {f for f in fields if f in ticked or ("_" in f and f in words)}


class HintAnswer(Check):
    """C156 over the drawn instances; findings go to ``log``."""

    name = "answer vs its hint"
    codes = ("C156",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        where = self.where
        self.reads: dict[str, list[tuple[int, str, str]]] = {}  # task -> (k, let, field)
        for t in (where.ast.tasks if where.ast is not None else []):
            # `r.origin`, and a nested read `r.flights[0].origin` judged by the fields of `r`
            self.reads[t.name] = [(k, base, e.name) for k, e in enumerate(t.communicate)
                                  if isinstance(e, A.Attr) and (base := root(e)) is not None]

    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        inst = env.instance
        if not self.first_of_task(inst.task):
            return
        ts = self.where.tasks.get(inst.task)
        hint = (ts.hint_literal if ts is not None and ts.hint_literal else inst.hint) or ""
        for k, let, field in self.reads.get(inst.task, []):
            rec = inst.values.get(let)
            if not isinstance(rec, Mapping) or field not in rec:
                continue
            named = named_fields(hint, [f for f in rec if isinstance(f, str)])
            if not named or field in named or re.search(rf"\b{re.escape(field)}\b", hint):
                continue
            said = ", ".join(f"`{f}`" for f in sorted(named))
            span = ts.communicate[k] if ts and k < len(ts.communicate) else self.where.task(inst.task)
            self.log.add(f"C156:{inst.task}:{k}", "error", "C156",
                         f"task `{inst.task}`: the answer reads `{let}.{field}`, but the task's "
                         f"hint points at {said} of the same record: the gold contradicts its own "
                         "hint", span, task=inst.task, seed=seed,
                         hint=f"communicate the field the question asks for (`{let}."
                              f"{min(named)}`?), or fix the hint")
