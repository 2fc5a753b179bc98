"""The task's hint against its own gold and forbids (C159, error): a hint that tells the agent to
call a tool the task forbids (and the gold never calls) or a write tool the gold never calls,
or that orders two gold tools ("call A, then B", "A before B") the other way round from every
gold call of them.

GRPO shows the hint to a share of each group: a hint that contradicts the gold teaches the wrong
action or order, and the rest of the group is judged against the gold. The hint shown with the
task is read (its own, else the capability's), once per task, on its first drawn instance;
a tool named in a sentence that negates it ("do not call X", "never", "instead of", "must
stay", "leave ... alone") or makes it conditional ("only", "if", "unless", "when") is not a
call, and an order is read only from "then" or "before" between two tool names. Reported at
the hint.
"""

from __future__ import annotations

import re
from itertools import pairwise

from tracec.checks.check import Check, InstanceContext, RunContext

# a sentence with one of these does not tell the agent to call the tool it names (a condition
# may be the task's other branch)
_NEGATION = re.compile(r"\b(not|never|don't|do not|avoid|instead of|rather than|without|no|only|"
                       r"if|unless|when|stays?|leave|alone|keep|untouched|wrong|forbidden)\b",
                       re.IGNORECASE)
_ORDER = re.compile(r"\b(then|before)\b", re.IGNORECASE)
_AFTER = re.compile(r"\b(after|once|when)\b", re.IGNORECASE)


def sentences(text: str) -> list[str]:
    """The text split into sentences (after `.`, `!`, `?`, `;` or `:` and a space)."""
    return [s for s in re.split(r"(?<=[.!?;:])\s+", text) if s]


class HintTools(Check):
    """C159 over the drawn instances; findings go to ``log``."""

    name = "hint vs the gold's tools"
    codes = ("C159",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        names = set(self.cap.domain.tools) | {t.name for t in self.cap.tools}
        self.pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names), key=len,
                                                           reverse=True)) + r")\b") if names else None

    def instance(self, ctx: InstanceContext) -> None:
        inst, seed = ctx.env.instance, ctx.seed
        ts = self.where.tasks.get(inst.task)
        # the task's own hint, else the capability's, which is the one shown with it
        span = (ts.hint or self.where.hint) if ts is not None else None
        if self.pattern is None or inst.task in self.done or span is None:
            return
        self.done.add(inst.task)
        hint = inst.hint or ""
        gold = [c.name for c in inst.gold]
        forbidden = {c.name for c in inst.forbid} - set(gold)
        # a write the gold never makes is as wrong to call as a forbidden one
        stray = (set(ctx.env.toolbox.writes) & set(ctx.env.toolbox.tools)) - set(gold) - forbidden
        why = self._forbidden(hint, forbidden, "which the task forbids") \
            or self._forbidden(hint, stray, "a write the gold never makes") or self._order(hint, gold)
        if why is None:
            return
        self.log.add(f"C159:{inst.task}", "error", "C159",
                     f"task `{inst.task}`'s hint {why} (seed {seed}): the hint contradicts the "
                     "gold it is shown with", span, task=inst.task, seed=seed,
                     hint="make the hint say the gold's steps, in the gold's order")

    def _forbidden(self, hint: str, forbidden: set[str], what: str) -> str | None:
        for sentence in sentences(hint):
            for m in self.pattern.finditer(sentence):
                if m.group(1) in forbidden and not _NEGATION.search(sentence):
                    return f"tells the agent to call `{m.group(1)}`, {what}"
        return None

    def _order(self, hint: str, gold: list[str]) -> str | None:
        for sentence in sentences(hint) if len(gold) > 1 else []:
            found = [m for m in self.pattern.finditer(sentence) if m.group(1) in gold]
            for a, b in pairwise(found):
                first, then = a.group(1), b.group(1)
                between = sentence[a.end():b.start()]
                if first == then or not _ORDER.search(between) or _AFTER.search(between):
                    continue
                at_a = [i for i, g in enumerate(gold) if g == first]
                at_b = [i for i, g in enumerate(gold) if g == then]
                if min(at_a) > max(at_b):
                    return (f"says `{first}` and then `{then}`, but the gold calls `{then}` "
                            f"before every `{first}`")
        return None
