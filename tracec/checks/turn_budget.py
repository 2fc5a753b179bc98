"""Turn budget vs policy (C134): `max_turns` leaves room for the turns the policy and the
user's scripted replies take, not only for the gold calls and the report (C133).

An agent that follows the policy spends one turn more per scripted reply it triggers (it asks,
the user answers), and one for the confirmation the policy demands before a write ("obtain
explicit user confirmation") when no reply of the task is that confirmation.
"""

from __future__ import annotations

import re
from typing import Any

from tracec.checks.check import Check, InstanceContext, RunContext

_CONFIRMS = re.compile(r"\bconfirm", re.IGNORECASE)


def _confirmation(reply: Any) -> bool:
    return any(k in ("confirm", "proceed", "yes") or "confirm" in k for k in reply.keywords)


class TurnBudget(Check):
    """C134 over the drawn instances; findings go to ``log``."""

    name = "turn budget"
    codes = ("C134",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        self.policy_confirms = bool(_CONFIRMS.search(self.cap.policy_text() or ""))

    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        inst, box = env.instance, env.toolbox
        gold = tuple(inst.gold)
        base = len(gold) + (0 if gold and gold[-1].name in box.ends else 1)  # as turns_of
        if base > self.cap.max_turns:
            return  # C133 says it
        extra = len(inst.replies)
        why = [f"{len(inst.replies)} scripted user repl{'y' if extra == 1 else 'ies'}"] if extra else []
        if self.policy_confirms and any(c.name in box.writes for c in gold) \
                and not any(_confirmation(r) for r in inst.replies):
            extra += 1
            why.append("the confirmation the policy demands before a write")
        if base + extra <= self.cap.max_turns:
            return
        self.log.add(f"C134:{inst.task}", "error", "C134",
                     f"max_turns {self.cap.max_turns} leaves no room for the policy: task "
                     f"`{inst.task}` needs {base + extra} turns ({len(gold)} gold calls and the "
                     f"report, {base} turns, plus one for {' and '.join(why)}) at seed {seed}; "
                     "an agent that follows the policy is truncated",
                     self.where.max_turns or self.where.task(inst.task), task=inst.task, seed=seed,
                     hint=f"raise `max_turns` to at least {base + extra}")

    def finish(self) -> None:
        """Nothing to fold: every finding is logged as it is found."""
