"""The answer against the order the user asks for (C157, error): "which is due first, A or B?"
answered with the later one (`max_by` for `min_by`, `>` for `<`).

For a text `communicate` value that is a field of one record (a reminder's content), when the
user's first message names that field's value for two or more records of the same kind and asks
for the first/earliest/next (or the last/latest) one, the answer's record must have the least
(or greatest) value of the kind's one time field the user's words name ("my reminders":
``reminder_timestamp``; fields with a time unit in the domain's contract). Judged on the first
``MAX_SEEDS`` seeds; reported at the `let` the answer is read from, else at the `communicate`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.domains.units import UNITS
from tracec.runtime.outcome import mentioned

MAX_SEEDS = 64
_LEAST = re.compile(r"\b(first|earliest|soonest|sooner|earlier|next)\b", re.IGNORECASE)
_GREATEST = re.compile(r"\b(latest|later|last)\b", re.IGNORECASE)
_TIME_DIMS = ("instant", "date", "datetime")


class AnswerOrder(Check):
    """C157 over the drawn instances; findings go to ``log``."""

    name = "answer vs the order asked"
    codes = ("C157",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        cap = self.cap
        schema = cap.domain.schema
        units = getattr(schema, "units", {}) or {}
        self.kinds = []  # (collection, time fields)
        for kind in cap.domain.entities.values():
            times = [f for f, u in (units.get(kind.name) or {}).items() if _is_time(u)]
            if times and kind.id_field:
                self.kinds.append((kind.collection, times))
        self.done: set[str] = set()

    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        inst = env.instance
        if seed >= MAX_SEEDS or inst.task in self.done or not self.kinds:
            return
        text = inst.user or ""
        least, greatest = bool(_LEAST.search(text)), bool(_GREATEST.search(text))
        if least == greatest:
            return
        for k, (name, value) in enumerate(inst.communicate.items()):
            if not isinstance(value, str) or len(value) < 3:
                continue
            for table, times in self.kinds:
                why = self._judge(env.initial_db.get(table), times, value, text, least)
                if why:
                    self.done.add(inst.task)
                    self._report(inst, seed, k, name, why, least)
                    return

    def _judge(self, records: Any, times: list[str], value: str, text: str,
               least: bool) -> str | None:
        if not isinstance(records, Mapping):
            return None
        low = text.lower()
        fields = [f for f in times if re.search(rf"\b{re.escape(f.split('_')[0].lower())}", low)]
        if len(fields) != 1:
            return None
        time = fields[0]
        recs = [r for r in records.values() if isinstance(r, Mapping)]
        for field in {f for r in recs for f, v in r.items() if v == value}:
            named = [r for r in recs if isinstance(r.get(field), str) and len(r[field]) >= 3
                     and mentioned(r[field], [text]) and isinstance(r.get(time), (int, float, str))]
            answer = [r for r in named if r.get(field) == value]
            if len(named) < 2 or len(answer) != 1 or len({r[field] for r in named}) != len(named):
                continue
            pick = (min if least else max)(named, key=lambda r: r[time])
            if pick is not answer[0]:
                return (f"`{field}` {value!r} is not the {'earliest' if least else 'latest'} by "
                        f"`{time}` of the {len(named)} the user names ({pick[field]!r} is)")
        return None

    def _report(self, inst: Any, seed: int, k: int, name: str, why: str, least: bool) -> None:
        span = self.where.answer(inst.task, k) or self.where.task(inst.task)
        asks = "first" if least else "last"
        self.log.add(f"C157:{inst.task}:{k}", "error", "C157",
                     f"task `{inst.task}`: the user asks which is {asks}, but the answer `{name}` "
                     f"is the other end: {why} (seed {seed})", span, task=inst.task, seed=seed,
                     hint="pick the record the question asks for (`min_by` for the first, "
                          "`max_by` for the last; `<` vs `>`)")


def _is_time(unit: str) -> bool:
    u = UNITS.get(unit)
    return u is not None and u.dim in _TIME_DIMS
