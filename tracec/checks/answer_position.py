"""An answer that is always the same one of the options the user names (C347, warning).

"Which is due first, A or B?": when the answer is one of the values the user's text names for
the same field (`{a.content}`, `{b.content}`; the answer `early.content`) and it is the one at
the same place (the first named, say) on at least 90 % of the seeds checked (at least 10), an
agent that always answers the first option is paid without reading anything. Reported at the
`pick` of an option whose filter reads another option (`let b = pick(x for x in notes if
x.reminder_timestamp > a.reminder_timestamp ...)`: it fixes their order), else at the answer's
`let`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tracec.checks.blame import names, path_value, task_ast
from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.lang import ast as A

MAX_SEEDS = 64
MIN_SEEDS = 10
SHARE = 0.9


class AnswerPosition(Check):
    """C347 over the first seeds; findings go to ``log``."""

    name = "answers always at the same place among the options named"
    codes = ("C347",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        # (task, k) -> the user text's `{x.F}` of the answer's field F, in order
        self.options: dict[tuple[str, int], list[A.Attr]] = {}
        for t in (self.where.ast.tasks if self.where.ast is not None else []):
            parts = t.user.parts if isinstance(t.user, A.Text) else []
            for k, e in enumerate(t.communicate):
                if not isinstance(e, A.Attr):
                    continue
                opts = [p for p in parts if isinstance(p, A.Attr) and p.name == e.name
                        and isinstance(p.obj, A.Name)]
                if len({p.obj.id for p in opts}) >= 2:
                    self.options[(t.name, k)] = opts
        self.places: dict[tuple[str, int], Counter] = {}

    def instance(self, ctx: InstanceContext) -> None:
        inst = ctx.inst
        if ctx.seed >= MAX_SEEDS:
            return
        for k, value in enumerate(inst.communicate.values()):
            opts = self.options.get((inst.task, k))
            if not opts or not isinstance(value, str):
                continue
            said = [path_value(p, inst.values) for p in opts]
            if said.count(value) == 1 and len(set(said)) == len(said):
                self.places.setdefault((inst.task, k), Counter())[said.index(value)] += 1

    def finish(self) -> None:
        for (task, k), places in self.places.items():
            n = sum(places.values())
            place, top = places.most_common(1)[0]
            if n < MIN_SEEDS or top < SHARE * n:
                continue
            opts = self.options[(task, k)]
            span, why = self._order_let(task, [p.obj.id for p in opts])  # type: ignore[attr-defined]
            self.log.add(f"C347:{task}:{k}", "warning", "C347",
                         f"task `{task}`: the answer is the option the user names "
                         f"{'first' if place == 0 else f'in place {place + 1}'} on {top} of {n} "
                         f"seeds: an agent that always answers it is paid without reading"
                         f"{why}", span or self.where.answer(task, k), task=task,
                         hint="draw the options so that either may be the answer")

    def _order_let(self, task: str, options: list[str]) -> tuple[Any, str]:
        """(span, note) of the `pick` of an option whose filter reads another option."""
        t = task_ast(self.where, task)
        picks = dict(self.where.pick_lets(task))
        for let in (t.lets if t is not None else []):
            if let.name in options and let.name in picks:
                others = (names(let.value) & set(options)) - {let.name}
                if others:
                    return picks[let.name], (f" (`let {let.name}` is drawn against "
                                             f"`{min(others)}`: the filter fixes their order)")
        return None, ""
