"""A weekday answer that is not the day of the time the gold writes (C167, error).

"Add a reminder for 9:00, three days after that message. Which day of the week will that
be?": when the user asks what day something *will* be and the gold writes a time (an
`add_reminder`'s or `modify_reminder`'s timestamp, a unit of the `instant` dimension), a
weekday answer must be the weekday (UTC) of one of the times the gold writes; the message's own
weekday, or the old due time's, teaches the agent to answer about the wrong time. Judged on the
first ``MAX_SEEDS`` seeds (the first seed that shows it is reported), at the `let` the answer
is read from (else the `communicate`; at the `communicate` when another `let` holds the written
weekday on every seed judged: :class:`tracec.checks.blame.WrongVariable`).
"""

from __future__ import annotations

import re

from tracec.checks.blame import WrongVariable
from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.domains.units import is_instant_arg

MAX_SEEDS = 32
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_FUTURE = re.compile(r"\bwill\b[^.?!]*\b(day|weekday)\b|\b(day|weekday)\b[^.?!]*\bwill\b",
                     re.IGNORECASE)


def weekday(ts: float) -> str:
    """The UTC weekday of a POSIX timestamp (1970-01-01 was a Thursday)."""
    return WEEKDAYS[(int(ts // 86400) + 3) % 7]


class WrittenWeekday(Check):
    """C167 over the drawn instances; findings go to ``log``."""

    name = "weekday answers vs the written time"
    codes = ("C167",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        self.wrong = WrongVariable(self.where)

    def _instant(self, tool: str, arg: str) -> bool:
        return is_instant_arg(self.cap.domain.schema, tool, arg)

    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        inst = env.instance
        if seed >= MAX_SEEDS or not _FUTURE.search(inst.user or ""):
            return
        written = {weekday(v) for c in inst.gold if c.name in env.toolbox.writes
                   for a, v in (c.args or {}).items()
                   if self._instant(c.name, a) and isinstance(v, (int, float))
                   and not isinstance(v, bool)}
        if not written:
            return
        for k, (name, value) in enumerate(inst.communicate.items()):
            if not isinstance(value, str) or value.capitalize() not in WEEKDAYS:
                continue
            if len(written) == 1:
                day = next(iter(written))
                self.wrong.see(inst.task, k, inst.values, day if value[:1].isupper() else day.lower())
            if value.capitalize() in written:
                continue
            span = self.where.answer(inst.task, k)
            self.wrong.hold(k, f"C167:{inst.task}", "error", "C167",
                            f"task `{inst.task}`: the user asks what day it will be, the answer "
                            f"`{name}` is {value!r}, but the gold writes a time on "
                            f"{' or '.join(sorted(written))} (seed {seed}): the answer is about "
                            "another time", span, task=inst.task, seed=seed,
                            hint="answer the weekday of the time the gold writes")
            return

    def finish(self) -> None:
        self.wrong.release(self.log)
