"""The answer against the order the user asks for (C157, error): "which is due first, A or B?"
answered with the later one (`max_by` for `min_by`, `>` for `<`).

For a text `communicate` value that is a field of one record (a reminder's content), when the
user's first message names that field's value for two or more records of the same kind and asks
for the first/earliest/next (or the last/latest) one, the answer's record must have the least
(or greatest) value of the kind's one time field the user's words name ("my reminders":
``reminder_timestamp``; fields with a time unit in the domain's contract). Judged on the first
``MAX_SEEDS`` seeds; reported at the `let` the answer is read from, else at the `communicate`;
at the `communicate` when another `let` holds the record asked for on every seed judged and the
answer's own `let` has a use beside it (:class:`tracec.checks.blame.WrongVariable`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tracec.checks.blame import WrongVariable
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
        # task -> the first failing instance's (seed, k, answer name, why, least)
        self.failed: dict[str, tuple[int, int, str, str, bool]] = {}
        self.wrong = WrongVariable(self.where)

    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        inst = env.instance
        if seed >= MAX_SEEDS or not self.kinds:
            return
        text = inst.user or ""
        least, greatest = bool(_LEAST.search(text)), bool(_GREATEST.search(text))
        if least == greatest:
            return
        for k, (name, value) in enumerate(inst.communicate.items()):
            if not isinstance(value, str) or len(value) < 3:
                continue
            for table, times in self.kinds:
                asked, why = self._judge(env.initial_db.get(table), times, value, text, least)
                if asked is not None:
                    self.wrong.see(inst.task, k, inst.values, asked)
                if why and inst.task not in self.failed:
                    self.failed[inst.task] = (seed, k, name, why, least)
                if asked is not None:
                    return

    def finish(self) -> None:
        for task, (seed, k, name, why, least) in self.failed.items():
            self._report(task, seed, k, name, why, least)

    def _judge(self, records: Any, times: list[str], value: str, text: str,
               least: bool) -> tuple[Any, str | None]:
        """(the value of the record asked for in the answer's field, or None when the answer
        is not judged; why the answer is not that record, or None)."""
        if not isinstance(records, Mapping):
            return None, None
        low = text.lower()
        fields = [f for f in times if re.search(rf"\b{re.escape(f.split('_')[0].lower())}", low)]
        if len(fields) != 1:
            return None, None
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
                return pick[field], (f"`{field}` {value!r} is not the "
                                     f"{'earliest' if least else 'latest'} by `{time}` of the "
                                     f"{len(named)} the user names ({pick[field]!r} is)")
            return pick[field], None
        return None, None

    def _report(self, task: str, seed: int, k: int, name: str, why: str, least: bool) -> None:
        span = self.where.answer(task, k) or self.where.task(task)
        asks = "first" if least else "last"
        hint = "pick the record the question asks for (`min_by` for the first, `max_by` for the " \
               "last; `<` vs `>`)"
        fix = self.wrong.fix(task, k)
        if fix is not None:
            span, why = fix[1], why + f"; `{fix[0]}` holds the record asked for on every seed"
            hint = f"did you mean to answer from `{fix[0]}`?"
        self.log.add(f"C157:{task}:{k}", "error", "C157",
                     f"task `{task}`: the user asks which is {asks}, but the answer `{name}` "
                     f"is the other end: {why} (seed {seed})", span, task=task, seed=seed,
                     hint=hint)


def _is_time(unit: str) -> bool:
    u = UNITS.get(unit)
    return u is not None and u.dim in _TIME_DIMS
