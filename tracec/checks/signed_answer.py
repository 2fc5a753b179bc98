"""An answer whose sign the draw decides (C178, error): a numeric answer that is negative on
some of the first ``MAX_SEEDS`` seeds and positive on others (`round(target.price -
item.price, 2)` for "what's the difference?"): the user asks for an amount, and the agent that
says it as one ("12.50, refunded to you") is scored wrong whenever the draw makes it negative.
Reported at the `let` the answer is read from (else the `communicate`), once per answer.
"""

from __future__ import annotations

from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.runtime.lib import fmt

MAX_SEEDS = 64


class SignedAnswer(Check):
    """C178 over the first seeds; findings go to ``log``."""

    name = "answers whose sign the draw decides"
    codes = ("C178",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        # (task, k) -> [positive seeds, negative seeds, the first negative value, its seed]
        self.signs: dict[tuple[str, int], list] = {}

    def instance(self, ctx: InstanceContext) -> None:
        if ctx.seed >= MAX_SEEDS:
            return
        for k, value in enumerate(ctx.inst.communicate.values()):
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value == 0:
                continue
            item = self.signs.setdefault((ctx.inst.task, k), [0, 0, None, None])
            if value > 0:
                item[0] += 1
            else:
                item[1] += 1
                if item[2] is None:
                    item[2], item[3] = value, ctx.seed

    def finish(self) -> None:
        for (task, k), (pos, neg, value, seed) in self.signs.items():
            if not pos or not neg:
                continue
            self.log.add(f"C178:{task}:{k}", "error", "C178",
                         f"task `{task}`: the answer is negative on {neg} of {pos + neg} seeds "
                         f"(first {fmt(value)!r} at seed {seed}) and positive on the others: the "
                         "user asks for an amount, and the agent that says it as one is scored "
                         "wrong when the draw makes it negative", self.where.answer(task, k),
                         task=task, seed=seed,
                         hint="communicate `abs(...)` (and say the direction in words), or ask "
                              "the user's question so that the sign is part of the answer")
