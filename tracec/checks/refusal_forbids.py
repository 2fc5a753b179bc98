"""A refusal that forbids another write than the one the user asks for (C179, error): the
task's gold makes no write, the user's words ask for a write (its verb, not negated: "I need to
move flight X"), and the task forbids writes, none of them one the user asks for (`forbid
cancel_reservation(...)` where the user asks to move a flight): the write the refusal is about
goes unpunished, and the forbid punishes a mistake no agent is led to make. Judged on the first
drawn instance of each task, reported at its first forbid.
"""

from __future__ import annotations

from tracec.checks.check import Check, InstanceContext
from tracec.checks.refusals import asks_for


class RefusalForbids(Check):
    """C179 over the first instance of each task; findings go to ``log``."""

    name = "refusals' forbids vs the write asked for"
    codes = ("C179",)


    def instance(self, ctx: InstanceContext) -> None:
        inst, box = ctx.inst, ctx.env.toolbox
        if not self.first_of_task(inst.task):
            return
        if not inst.forbid or any(c.name in box.writes for c in inst.gold):
            return
        shown = set(box.tools or {})
        asked = sorted(t for t in box.writes if t in shown and asks_for(t, inst.user or ""))
        forbidden = [f.name for f in inst.forbid if f.name in box.writes]
        if not asked or not forbidden or any(f in asked for f in forbidden):
            return
        self.log.add(f"C179:{inst.task}", "error", "C179",
                     f"task `{inst.task}`: the gold refuses and the user asks for "
                     f"{' or '.join(f'`{t}`' for t in asked)}, but the task forbids only "
                     f"{', '.join(f'`{f}`' for f in forbidden)} (seed {ctx.seed}): the write "
                     "the refusal is about goes unpunished", self.where.forbid(inst.task, 0),
                     task=inst.task, seed=ctx.seed,
                     hint="forbid the write the user asks for, on their record")
