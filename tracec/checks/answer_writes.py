"""The answer against the gold's own writes (C155, error): a money answer the gold's writes
contradict.

When a task's gold writes record amounts (τ²'s payment histories: a cancellation appends the
refunds, a bag or flight change the payment, an item change the difference), a numeric
`communicate` value of that task must be one of them: an amount the gold appended, the total
of one record's new amounts, or the total of all new payments or all new refunds. An answer
that is none of these (the flights' prices summed where the refund is the payments') teaches
the agent a number its own tool calls contradict. Judged on the first ``MAX_SEEDS`` seeds, on
the records the gold's write calls name; reported at the `let` the answer is, else at the
`communicate`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracec.checks.blame import overriding_literal
from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.runtime.lib import fmt

MAX_SEEDS = 64
AMOUNT = "amount"


def _new_amounts(old: Any, new: Any) -> list[list[float]]:
    """Per list of ``new`` that grew since ``old``: the amounts of its appended records."""
    out: list[list[float]] = []
    if not isinstance(new, Mapping):
        return out
    for key, value in new.items():
        before = old.get(key) if isinstance(old, Mapping) else None
        if isinstance(value, list):
            start = len(before) if isinstance(before, list) else 0
            got = [float(r[AMOUNT]) for r in value[start:] if isinstance(r, Mapping)
                   and isinstance(r.get(AMOUNT), (int, float)) and not isinstance(r.get(AMOUNT), bool)]
            if got:
                out.append(got)
        elif isinstance(value, Mapping):
            out += _new_amounts(before, value)
    return out


def explained(answer: float, lists: list[list[float]]) -> bool:
    """``answer`` is an appended amount, one record's total, or all payments' or refunds' total."""
    flat = [a for amounts in lists for a in amounts]
    cands = flat + [sum(a) for a in lists] + [sum(a for a in flat if a > 0),
                                              sum(a for a in flat if a < 0), sum(flat)]
    return any(abs(abs(answer) - abs(c)) < 0.005 for c in cands)


class AnswerWrites(Check):
    """C155 over the drawn instances; findings go to ``log``."""

    name = "answer vs the gold's writes"
    codes = ("C155",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        cap = self.cap
        self.ids = {k.id_field: k.collection for k in cap.domain.entities.values() if k.id_field}

    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        inst = env.instance
        if seed >= MAX_SEEDS or inst.task in self.done:
            return
        answers = [(k, name, v) for k, (name, v) in enumerate(inst.communicate.items())
                   if isinstance(v, (int, float)) and not isinstance(v, bool) and v != 0]
        writes = [c for c in inst.gold if c.name in env.toolbox.writes]
        if not answers or not writes:
            return
        lists: list[list[float]] = []
        seen: set[tuple[str, str]] = set()
        for call in writes:
            for arg, value in (call.args or {}).items():
                table = self.ids.get(arg)
                if table is None or not isinstance(value, str) or (table, value) in seen:
                    continue
                seen.add((table, value))
                old = (env.initial_db.get(table) or {}).get(value)
                new = (env.gold_db.get(table) or {}).get(value)
                lists += _new_amounts(old, new)
        if not lists:
            return
        for k, name, value in answers:
            if explained(float(value), lists):
                continue
            self.done.add(inst.task)
            flat = ", ".join(fmt(a) for amounts in lists for a in amounts)
            span, why = self._span(inst.task, k, name), ""
            ts = self.where.tasks.get(inst.task)
            t = next((t for t in (self.where.ast.tasks if self.where.ast is not None else [])
                      if t.name == inst.task), None)
            records = {v: (env.initial_db.get(self.ids[a]) or {}).get(v) for c in writes
                       for a, v in (c.args or {}).items() if a in self.ids and isinstance(v, str)}
            odd = overriding_literal(self.where, inst.task, writes, records, t.communicate[k]) \
                if t is not None and k < len(t.communicate) else None
            if odd is not None:  # the gold's constant, not the answer, is the odd one out
                at = f" at line {span.line}" if span is not None and ts is not None else ""
                why = (f"; the gold call `{odd[0]}` passes `{odd[1]}` as a constant where the "
                       f"record's is {fmt(odd[2])!r}, which the answer{at} reads")
                span = odd[3]
            self.log.add(f"C155:{inst.task}:{k}", "error", "C155",
                         f"task `{inst.task}`: the answer `{name}` is {fmt(value)!r} at seed {seed}, "
                         f"but the gold's own writes record the amounts {flat}: the answer is "
                         f"none of them nor their total{why}", span,
                         task=inst.task, seed=seed,
                         hint="compute the answer from the records the gold's writes change (the "
                              "payments refunded or charged), not from other fields" if not why
                         else f"pass the value the user asks for (`{odd[1]}` of the record?)")
            return

    def _span(self, task: str, k: int, name: str) -> Any:
        ts = self.where.tasks.get(task)
        return self.where.let(task, name) or (ts.communicate[k] if ts and k < len(ts.communicate)
                                              else self.where.task(task))
