"""A time the gold feeds its own time tools that nothing gave (C166, error).

The gold's read-only time tools (`shift_timestamp`, `timestamp_to_datetime_info`,
`timestamp_diff`) start from a time the agent has: the user's words, a scripted reply, or an
earlier gold call's output (the message's `creation_timestamp`, `search_holiday`'s date, an
earlier shift's result). A time argument the spec computes (`day * 86400`) that is in none of
them (a holiday's day counted one week late, a midnight taken from the wrong date) is a time
the agent could never pass: the gold contradicts what its own tools return, and the write it
leads to with it. Judged on the first ``MAX_SEEDS`` seeds (the first seed that shows it is
reported), at the `let` the argument is computed from (else the gold call). Time arguments
read straight from the world are C152's (provenance).
"""

from __future__ import annotations

from typing import Any

from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.checks.provenance import direct
from tracec.domains.units import is_instant_arg
from tracec.lang import ast as A
from tracec.runtime.lib import fmt
from tracec.runtime.outcome import mentioned

MAX_SEEDS = 32


def names(expr: Any) -> list[str]:
    """The names an expression reads, in source order."""
    return [n.id for n in A.walk(expr) if isinstance(n, A.Name)]


class TimeBases(Check):
    """C166 over the drawn instances; findings go to ``log``."""

    name = "times the gold's time tools start from"
    codes = ("C166",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        # (task, tool, nth, arg) -> the let the computed argument reads (None: the call)
        self.computed: dict[tuple[str, str, int, str], str | None] = {}
        for t in (self.where.ast.tasks if self.where.ast is not None else []):
            lets = {let.name: let.value for let in t.lets}
            counts: dict[str, int] = {}
            for c in A.gold_calls(t.gold):
                nth = counts.get(c.name, 0)
                counts[c.name] = nth + 1
                for kw in c.args:
                    if not direct(kw.value, lets):
                        first = next((n for n in names(kw.value) if n in lets), None)
                        self.computed[(t.name, c.name, nth, kw.name)] = first

    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        inst = env.instance
        if seed >= MAX_SEEDS or not inst.gold:
            return
        results = ctx.results
        known = inst.said
        counts: dict[str, int] = {}
        for n, call in enumerate(inst.gold):
            nth = counts.get(call.name, 0)
            counts[call.name] = nth + 1
            if call.name in env.toolbox.writes:
                continue
            for arg, value in (call.args or {}).items():
                key = (inst.task, call.name, nth, arg)
                if f"{key}" in self.done or key not in self.computed \
                        or not is_instant_arg(self.cap.domain.schema, call.name, arg) \
                        or not isinstance(value, int) or isinstance(value, bool) \
                        or mentioned(value, known + list(results[:n])):
                    continue
                self.done.add(f"{key}")
                let = self.computed[key]
                span = (self.where.let(inst.task, let) if let else None) \
                    or self.where.gold(inst.task, call.name, nth)
                self.log.add(f"C166:{inst.task}:{call.name}:{nth}:{arg}", "error", "C166",
                             f"task `{inst.task}`: the gold call `{call.name}` starts from "
                             f"`{arg}` = {fmt(value)!r}, a time no earlier gold call returned and "
                             f"the user did not give (seed {seed}): the gold contradicts its own "
                             "tools' results", span, task=inst.task, seed=seed,
                             hint="start from the time an earlier tool returned (check the day "
                                  "count and the date it is computed from)")
