"""The answer read one level too deep (C173, error): the task communicates a field of a nested
record (`r.flights[len(r.flights) - 1].destination`) whose record has a field of its own by
that name (`r.destination`), the task's hint names that field as the one (in backticks, or as a
word with an underscore: "the reservation's `destination` field"), and the two differ on a seed
(a round trip's last leg lands at its origin). Reported at the `communicate`, on the first
``MAX_SEEDS`` seeds, once per answer.
"""

from __future__ import annotations

from collections.abc import Mapping

from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.checks.hint_answer import named_fields
from tracec.checks.locate import root
from tracec.lang import ast as A
from tracec.runtime.lib import fmt
from tracec.runtime.outcome import values_equal

MAX_SEEDS = 32


class NestedAnswer(Check):
    """C173 over the first seeds; findings go to ``log``."""

    name = "answer read from a nested record"
    codes = ("C173",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        # task -> (k, the let the answer starts from, the field it ends with, its text)
        self.reads: dict[str, list[tuple[int, str, str]]] = {}
        for t in (self.where.ast.tasks if self.where.ast is not None else []):
            self.reads[t.name] = [
                (k, base, e.name) for k, e in enumerate(t.communicate)
                if isinstance(e, A.Attr) and not isinstance(e.obj, A.Name)
                and (base := root(e)) is not None]

    def instance(self, ctx: InstanceContext) -> None:
        inst, seed = ctx.inst, ctx.seed
        reads = self.reads.get(inst.task)
        if not reads or seed >= MAX_SEEDS:
            return
        ts = self.where.tasks.get(inst.task)
        hint = (ts.hint_literal if ts is not None and ts.hint_literal else inst.hint) or ""
        values = list(inst.communicate.values())
        for k, let, field in reads:
            rec = inst.values.get(let)
            if (inst.task, k) in self.done or k >= len(values) or not isinstance(rec, Mapping) \
                    or field not in rec or field not in named_fields(hint, [field]):
                continue
            if values_equal(values[k], rec[field]):
                continue
            self.done.add((inst.task, k))
            span = ts.communicate[k] if ts and k < len(ts.communicate) else self.where.task(inst.task)
            self.log.add(f"C173:{inst.task}:{k}", "error", "C173",
                         f"task `{inst.task}`: the answer reads `{field}` of a record nested in "
                         f"`{let}` ({fmt(values[k])!r} at seed {seed}), but the hint names "
                         f"`{let}`'s own `{field}` ({fmt(rec[field])!r}): the gold contradicts "
                         "its own hint", span, task=inst.task, seed=seed,
                         hint=f"communicate `{let}.{field}`, or say in the hint which nested "
                              "record holds the answer")
