"""A weekday answer that is the day of no time the gold handles (C175, error): the task answers
a weekday ("On what day of the week did she send it?") and the gold's calls pass times (an
argument of the contract's `instant` dimension: `timestamp_to_datetime_info(timestamp =
m.creation_timestamp)`), but the answer is the UTC weekday of none of the times the gold passes
or gets back (its tool outputs' timestamps): a weekday table read from the wrong start
(`weekdays[(day + 3) % 7]` for a list that starts on Thursday) teaches a day the tools
contradict. Judged on the first ``MAX_SEEDS`` seeds, at the `let` the answer is read from (else
the `communicate`), once per task.
"""

from __future__ import annotations

import re

from tracec.checks.blame import cone, names, task_ast
from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.checks.locate import literal
from tracec.checks.written_weekday import WEEKDAYS, weekday
from tracec.domains.units import is_instant_arg
from tracec.lang import ast as A

MAX_SEEDS = 32
_STAMP = re.compile(r"(?<![\d.])\d{9,11}(?:\.\d+)?(?![\d.])")  # a POSIX timestamp in a tool output


class SeenWeekday(Check):
    """C175 over the first seeds; findings go to ``log``."""

    name = "weekday answers vs the gold's times"
    codes = ("C175",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        self.flagged: list[tuple[str, int]] = []  # (task, answer index) reported

    def instance(self, ctx: InstanceContext) -> None:
        inst, seed = ctx.inst, ctx.seed
        if seed >= MAX_SEEDS or inst.task in self.done:
            return
        answers = [(k, v) for k, v in enumerate(inst.communicate.values())
                   if isinstance(v, str) and v.capitalize() in WEEKDAYS]
        if not answers:
            return
        passed = [v for c in inst.gold for a, v in (c.args or {}).items()
                  if is_instant_arg(self.cap.domain.schema, c.name, a)
                  and isinstance(v, (int, float)) and not isinstance(v, bool)]
        if not passed:
            return
        days = {weekday(t) for t in passed}
        days |= {weekday(float(t)) for r in ctx.results for t in _STAMP.findall(r or "")}
        for k, value in answers:
            if value.capitalize() in days:
                continue
            self.done.add(inst.task)
            self.flagged.append((inst.task, k))
            self.log.add(f"C175:{inst.task}", "error", "C175",
                         f"task `{inst.task}`: the weekday answer is {value!r}, but every time "
                         f"the gold passes or gets back falls on {' or '.join(sorted(days))} "
                         f"(UTC, seed {seed}): the answer contradicts the gold's own time tools",
                         self.where.answer(inst.task, k), task=inst.task, seed=seed,
                         hint="answer the weekday of the time the question is about (the "
                              "weekday of a POSIX day d is that of d + 3 in a Monday-first list)")
            return

    def finish(self) -> None:
        """Two tasks or more off, whose answers all read one seed table written in the spec
        (`weekdays = ["Thursday", ...]`): the table is the slip, not each task's `let`."""
        if len(self.flagged) < 2 or self.where.ast is None:
            return
        tables = {st.name: st for st in self.where.ast.seed
                  if isinstance(st.value, A.ListLit) and all(literal(x) for x in st.value.items)}
        common: set[str] | None = None
        for task, k in self.flagged:
            t = task_ast(self.where, task)
            if t is None or k >= len(t.communicate):
                return
            lets = {let.name: let.value for let in t.lets}
            read = names(t.communicate[k]) | {n for x in cone(t, t.communicate[k])
                                               for n in names(lets[x])}
            common = (read & tables.keys()) if common is None else common & read
        if not common or len(common) != 1:
            return
        (table,) = common
        for task, _ in self.flagged:
            self.log.amend(f"C175:{task}", self.where.seed_span(tables[table]),
                           f" (every task off reads the seed table `{table}`: "
                           f"{len(self.flagged)} tasks)",
                           f"check the seed table `{table}`: the weekday of a POSIX day d is "
                           "that of d + 3 in a Monday-first list")
