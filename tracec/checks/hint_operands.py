"""The answer against a count its hint names (C171, error): the task's hint says the value
depends on a list of the record the answer reads ("multiply by the number of passengers", "free
bags per passenger") and no numeric answer of the task reads that list (`total = sum(f.price for
f in r.flights)` where the hint says "... and multiply by the number of passengers").

Judged once per task, on its first drawn instance: the words after "number of" or "per" in the
hint (its own, else the capability's) are matched, singular or plural, against the list fields
of the records the task's numeric answers read (`r` of `sum(... r.flights)`); a matched list
that no numeric answer reads, through its `let`s, is reported at the first answer that reads
its record (at the `let` the answer is, else the `communicate`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.lang import ast as A

_COUNTED = re.compile(r"\b(?:number of|per)\s+([a-z][a-z_]*)", re.IGNORECASE)


def stem(word: str) -> str:
    """``passengers`` -> ``passenger``; ``payment_history`` -> ``payment``."""
    word = word.lower().split("_")[0]
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


def value_reads(expr: Any, lets: dict[str, Any], seen: frozenset[str] = frozenset()) -> set[tuple[str, str]]:
    """(`r`, `flights`) for every field read `r.f` the value is computed from, through the
    `let`s it names; the condition that selects a drawn element (`pick(d for d in ds if
    ... len(r.passengers))`) is no part of the value."""
    out: set[tuple[str, str]] = set()
    if isinstance(expr, A.Attr) and isinstance(expr.obj, A.Name):
        out.add((expr.obj.id, expr.name))
    if isinstance(expr, A.Name):
        if expr.id in lets and expr.id not in seen:
            return value_reads(lets[expr.id], lets, seen | {expr.id})
        return out
    if isinstance(expr, A.CallGen) and expr.func in {"pick", "first", "sample", "shuffle", "min_by", "max_by"}:
        return value_reads(expr.elt, lets, seen) | value_reads(expr.comp.iter, lets, seen)
    if isinstance(expr, A.Node):
        for v in expr.__dict__.values():
            if isinstance(v, (A.Node, list)):
                out |= value_reads(v, lets, seen)
    elif isinstance(expr, list):
        for v in expr:
            out |= value_reads(v, lets, seen)
    return out


def counted_words(hint: str) -> set[str]:
    """The stems of what the hint counts: ``number of passengers``, ``per passenger``."""
    return {stem(w) for w in _COUNTED.findall(hint)}


class HintOperands(Check):
    """C171 over the first instance of each task; findings go to ``log``."""

    name = "answer vs the count its hint names"
    codes = ("C171",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        # task -> per `communicate` value: the (let, field) reads it makes through its lets
        self.reads: dict[str, list[set[tuple[str, str]]]] = {}
        for t in (self.where.ast.tasks if self.where.ast is not None else []):
            lets = {let.name: let.value for let in t.lets}
            self.reads[t.name] = [{r for r in value_reads(e, lets) if r[0] in lets}
                                  for e in t.communicate]
        self.done: set[str] = set()

    def instance(self, ctx: InstanceContext) -> None:
        inst = ctx.inst
        if inst.task in self.done:
            return
        self.done.add(inst.task)
        ts = self.where.tasks.get(inst.task)
        words = counted_words((ts.hint_literal if ts is not None and ts.hint_literal else inst.hint) or "")
        reads = self.reads.get(inst.task, [])
        if not words or not reads:
            return
        numeric = [k for k, v in enumerate(inst.communicate.values())
                   if k < len(reads) and isinstance(v, (int, float)) and not isinstance(v, bool)]
        read = {f for k in numeric for _, f in reads[k]}
        for k in numeric:
            for name in sorted({n for n, _ in reads[k]}):
                rec = inst.values.get(name)
                if not isinstance(rec, Mapping):
                    continue
                lists = [f for f, v in rec.items() if isinstance(f, str) and isinstance(v, list)
                         and stem(f) in words and f not in read]
                if not lists:
                    continue
                field = lists[0]
                self.log.add(f"C171:{inst.task}", "error", "C171",
                             f"task `{inst.task}`: the hint counts `{name}.{field}` (\"number "
                             f"of\"/\"per\" {stem(field)}), but no answer reads it: the answer "
                             "the gold gives ignores what the hint tells the agent to count",
                             self.where.answer(inst.task, k), task=inst.task, seed=ctx.seed,
                             hint=f"compute the answer with `len({name}.{field})` (or over "
                                  f"`{name}.{field}`), or fix the hint")
                return
