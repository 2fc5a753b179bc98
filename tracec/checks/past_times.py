"""A gold write that sets a time already past (C181, error): a gold write passes a time (an
argument of the contract's `instant` dimension: `add_reminder(reminder_timestamp = ...)`) that is
before the world's clock (a record field `now` of that dimension, `settings.now`), on one of the
first ``MAX_SEEDS`` seeds: a reminder for a holiday of this year that has already gone by, a day
counted back instead of forward. The user asks for something ahead; the gold schedules it in
the past, and an agent that picks the next occurrence is scored wrong.

Reported at the gold call, once per task (the time is usually built inline from several `let`s).
"""

from __future__ import annotations

from typing import Any

from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.domains.units import is_instant
from tracec.runtime.lib import fmt

MAX_SEEDS = 32


class PastTimes(Check):
    """C181 over the first seeds; findings go to ``log``."""

    name = "gold writes of past times"
    codes = ("C181",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        schema = self.cap.domain.schema
        self.arg_units = getattr(schema, "arg_units", {}) or {}
        # the record kinds whose `now` field is the world's clock
        self.clocks = [t for t, fields in (getattr(schema, "units", {}) or {}).items()
                       if is_instant(fields.get("now"))]
        self.done: set[str] = set()

    def _now(self, db: dict) -> float | None:
        for kind in self.clocks:
            rec: Any = db.get(kind)
            if isinstance(rec, dict) and isinstance(rec.get("now"), (int, float)):
                return float(rec["now"])
        return None

    def instance(self, ctx: InstanceContext) -> None:
        inst, seed = ctx.inst, ctx.seed
        if seed >= MAX_SEEDS or inst.task in self.done or not self.clocks:
            return
        writes = ctx.env.toolbox.writes
        timed = [(n, c, a, v) for n, c in enumerate(inst.gold) if c.name in writes
                 for a, v in (c.args or {}).items()
                 if is_instant((self.arg_units.get(c.name) or {}).get(a))
                 and isinstance(v, (int, float)) and not isinstance(v, bool)]
        if not timed:
            return
        now = self._now(ctx.env.initial_db)
        for n, c, a, v in timed:
            if now is None or v >= now:
                continue
            self.done.add(inst.task)
            nth = sum(1 for g in inst.gold[:n] if g.name == c.name)
            days = (now - v) / 86400
            self.log.add(f"C181:{inst.task}", "error", "C181",
                         f"task `{inst.task}`: the gold's `{c.name}` sets `{a}` to {fmt(v)}, "
                         f"{days:.1f} days before the world's current time {fmt(now)} (seed "
                         f"{seed}): the user asks for something ahead, the gold schedules it in "
                         "the past", self.where.gold(inst.task, c.name, nth),
                         task=inst.task, seed=seed,
                         hint="draw the date ahead of the clock (the next occurrence: this year's "
                              "if it is still to come, else next year's)")
            return
