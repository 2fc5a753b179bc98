"""Prompt completeness per variant (C153, error): a hint names a tool the env does not show.

Each variant is its own env with its own tools (`tools [...]`); the task's hint and the
capability's hint are read against the tools that env shows: a hint that says "call
get_user_details" where the variant hides it sends the agent to a tool it cannot call.
(The gold's own tools are checked by playing it: a hidden one fails at reset, C102; what the
answer depends on, by provenance, C152.)
"""

from __future__ import annotations

import re

from tracec.checks.check import Check, InstanceContext, RunContext


class PromptComplete(Check):
    """C153 over the drawn instances; findings go to ``log``."""

    name = "tools the hints name"
    codes = ("C153",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        names = set(self.cap.domain.tools) | {t.name for t in self.cap.tools}
        self.pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names), key=len,
                                                           reverse=True)) + r")\b") if names else None

    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        inst = env.instance
        if self.pattern is None or inst.task in self.done:
            return
        self.done.add(inst.task)
        shown = env.toolbox.tools
        ts = self.where.tasks.get(inst.task)
        for text, span, whose in ((inst.hint, ts.hint if ts else None, f"task `{inst.task}`'s hint"),
                                  (self.cap.hint, self.where.hint, "the capability's hint")):
            hidden = sorted({m for m in self.pattern.findall(text or "") if m not in shown})
            if not hidden:
                continue
            names = ", ".join(f"`{h}`" for h in hidden)
            self.log.add(f"C153:{whose}", "error", "C153",
                         f"{whose} names {names}, which env `{self.cap.name}` does not show the "
                         f"agent (seed {seed}): it is sent to a tool it cannot call",
                         span or self.where.task(inst.task), task=inst.task, seed=seed,
                         hint="add the tool to `tools [...]` of this variant, or say the step "
                              "without naming a hidden tool")

    def finish(self) -> None:
        """Nothing to fold: every finding is logged as it is found."""
