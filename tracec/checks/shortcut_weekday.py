"""A weekday answer the agent can give without the shift (C345, warning).

"Push it back by {d} days ... which day will it be due?": when the gold shifts a time (a gold
call with an `instant` argument returns a number: `shift_timestamp(timestamp = t, days = d)`)
and the answer is a weekday, an answer that is the weekday of the time before the shift on at
least 75 % of the seeds (at least 10; a guess is right on 1 in 7) pays the agent that skips
the shift: a push by whole weeks (`let d = 7 * randint(1..2)`) keeps the weekday. Reported at
the `let` the shift's `days` argument is (else the shift call).
"""

from __future__ import annotations

from tracec.checks.blame import at_let
from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.checks.time_results import number_output
from tracec.checks.written_weekday import WEEKDAYS, weekday
from tracec.domains.units import is_instant_arg

MAX_SEEDS = 64
MIN_SEEDS = 10
SHARE = 0.75  # a random weekday is right on 1 in 7


class ShortcutWeekday(Check):
    """C345 over the first seeds; findings go to ``log``."""

    name = "weekday answers an agent gives without the shift"
    codes = ("C345",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        # task -> [seeds judged, seeds whose answer is the unshifted weekday, (tool, nth, arg)]
        self.counts: dict[str, list] = {}

    def instance(self, ctx: InstanceContext) -> None:
        inst, seed = ctx.inst, ctx.seed
        if seed >= MAX_SEEDS or not inst.gold:
            return
        answers = [v.capitalize() for v in inst.communicate.values()
                   if isinstance(v, str) and v.capitalize() in WEEKDAYS]
        if not answers:
            return
        schema = self.cap.domain.schema
        counts: dict[str, int] = {}
        for call, out in zip(inst.gold, ctx.results):
            nth = counts.get(call.name, 0)
            counts[call.name] = nth + 1
            start = [(a, v) for a, v in (call.args or {}).items()
                     if is_instant_arg(schema, call.name, a) and isinstance(v, (int, float))]
            if len(start) != 1 or len(call.args or {}) < 2 or not number_output(out):
                continue
            item = self.counts.setdefault(inst.task, [0, 0, (call.name, nth)])
            item[0] += 1
            item[1] += weekday(start[0][1]) in answers
            return

    def finish(self) -> None:
        for task, (total, same, (tool, nth)) in self.counts.items():
            if total < MIN_SEEDS or same < SHARE * total:
                continue
            at = self.where.gold(task, tool, nth)
            built = at_let(self.where, task, tool, nth, "days")
            self.log.add(f"C345:{task}", "warning", "C345",
                         f"task `{task}`: the weekday answer is the weekday of the time before "
                         f"the gold's `{tool}` on {same} of {total} seeds: an agent that skips "
                         "the shift is paid"
                         + (f" (`days` = `{built[0]}`, passed to `{tool}` at line {at.line})"
                            if built and at else ""),
                         built[1] if built else at, task=task,
                         hint="draw shifts that move the weekday (not whole weeks), or ask for "
                              "something the shift changes")
