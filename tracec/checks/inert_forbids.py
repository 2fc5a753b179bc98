"""A forbid of a write that changes nothing (C176, error): the task forbids a write call the
spec gives in full (every required argument), and that call, made on the task's initial world
and on the world after the gold, fails or leaves the world as it was in both
(`forbid set_wifi_status(on = False)` where wifi is off all along): no agent ever makes the
mistake it was meant to punish, so the forbid teaches nothing (the wrong polarity, the wrong
record). Judged on the first ``MAX_SEEDS`` seeds: reported at the `forbid` when it is inert on
every one of them.
"""

from __future__ import annotations

from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.runtime.world import state_hash

MAX_SEEDS = 8


class InertForbids(Check):
    """C176 over the first seeds; findings go to ``log``."""

    name = "forbids that change nothing"
    codes = ("C176",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        self.inert: dict[tuple[str, int], list[int]] = {}  # (task, forbid) -> [seeds, inert]

    def _changes(self, db: dict, name: str, args: dict) -> bool:
        before = state_hash(db)
        _, ok, _ = self.run.env.toolbox.run(db, name, args, observe=False)
        return bool(ok) and state_hash(db) != before

    def instance(self, ctx: InstanceContext) -> None:
        env, inst = ctx.env, ctx.inst
        if ctx.seed >= MAX_SEEDS or not inst.forbid:
            return
        box = env.toolbox
        full = []
        for i, f in enumerate(inst.forbid):
            item = self.inert.get((inst.task, i))
            if item is not None and item[1] < item[0]:
                continue  # it changed the world on a seed already: not inert
            tool = (box.tools or {}).get(f.name)
            required = set((tool.parameters.get("required", []) or []) if tool is not None else ())
            if f.name in box.writes and tool is not None and required <= set(f.args or {}):
                full.append((i, f))
        if not full:
            return
        for i, f in full:
            item = self.inert.setdefault((inst.task, i), [0, 0])
            item[0] += 1
            if self._changes(env.initial_copy(), f.name, f.arguments):
                continue
            gold_db = env.initial_copy()
            for c in inst.gold:
                box.run(gold_db, c.name, c.arguments, observe=False)
            if not self._changes(gold_db, f.name, f.arguments):
                item[1] += 1

    def finish(self) -> None:
        for (task, i), (seen, inert) in self.inert.items():
            if not seen or inert < seen:
                continue
            self.log.add(f"C176:{task}:{i}", "error", "C176",
                         f"task `{task}`: the forbidden call changes nothing on the task's world, "
                         f"before or after the gold, on all {seen} seeds checked (it fails or "
                         "leaves every record as it was): no agent can make the mistake it "
                         "punishes", self.where.forbid(task, i), task=task,
                         hint="forbid the call that does the harm (the other value, the other "
                              "record), or drop the forbid")
