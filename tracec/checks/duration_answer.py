"""A counted answer against the duration the gold's own tool returns (C192, warning).

A gold call whose output is a duration (a JSON object of numbers named by time units:
`days`, `seconds`, ...; `timestamp_diff`) gives the agent the span it is to report. A numeric
answer that is that span on most seeds (in any of the units, whole or exact, signed or not;
at least ``MIN_AGREE`` and half of them) is of that kind; when on any other seed it is none of
them, the gold contradicts its own tool: an agent that uses the tool's result, as the hint
says, is marked wrong there (calendar days counted where the tool counts full days, or a diff of the wrong
pair of times).

Judged on the first ``MAX_SEEDS`` seeds. Reported at the `let` the answer is read from (else
its `communicate`); when, on the seeds it disagrees, the call diffs a time with itself (its two
time arguments are equal: a zero span), at that gold call instead.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from tracec.checks.check import Check, InstanceContext

MAX_SEEDS = 64
MIN_AGREE = 4
TOL = 1e-6
SCALES = {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400, "weeks": 604800}


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def span_of(output: str) -> float | None:
    """The total seconds of a duration output (`{"days": 2, "seconds": 300}`), else None."""
    try:
        value = json.loads(output)
    except (TypeError, ValueError):
        return None
    if not isinstance(value, dict) or not value:
        return None
    keys = [k for k in value if k in SCALES]
    if not keys or len(keys) != len(value) or not all(_num(value[k]) for k in keys):
        return None
    return float(sum(value[k] * SCALES[k] for k in keys))


def readings(total: float) -> list[float]:
    """Every way an answer may state the span ``total`` (seconds): in each unit, exact, floored
    or rounded, signed or not."""
    out = []
    for scale in SCALES.values():
        for t in (total, abs(total)):
            x = t / scale
            out += [x, float(math.floor(x)), float(round(x)), float(math.trunc(x))]
    return out


@dataclass
class _Tally:
    agree: int = 0
    disagree: int = 0
    seen: int = 0
    self_diff: int = 0  # disagreeing seeds where the call diffs a time with itself
    first: tuple[int, Any, float, str, int] | None = None  # seed, answer, span, tool, nth
    name: str = ""


class DurationAnswer(Check):
    """C192 over the drawn instances; findings go to ``log`` in :meth:`finish`."""

    name = "answer vs the gold's duration"
    codes = ("C192",)

    def start(self) -> None:
        self.tally: dict[tuple[str, int], _Tally] = {}

    def instance(self, ctx: InstanceContext) -> None:
        inst = ctx.env.instance
        if ctx.seed >= MAX_SEEDS or not inst.gold or not inst.communicate:
            return
        answers = [(k, n, v) for k, (n, v) in enumerate(inst.communicate.items()) if _num(v)]
        if not answers:
            return
        spans = []
        counts: dict[str, int] = {}
        for call, out in zip(inst.gold, ctx.results):
            nth = counts.get(call.name, 0)
            counts[call.name] = nth + 1
            total = span_of(out)
            if total is not None:
                spans.append((total, call, nth))
        if not spans:
            return
        for k, n, v in answers:
            t = self.tally.setdefault((inst.task, k), _Tally(name=n))
            t.seen += 1
            if any(abs(r - v) <= TOL for total, _, _ in spans for r in readings(total)):
                t.agree += 1
                continue
            t.disagree += 1
            total, call, nth = spans[0]
            times = [a for a in (call.args or {}).values() if _num(a)]
            if total == 0 and len(times) >= 2 and len(set(times)) == 1:
                t.self_diff += 1
            if t.first is None:
                t.first = (ctx.seed, v, total, call.name, nth)

    def finish(self) -> None:
        for (task, k), t in self.tally.items():
            if t.first is None or t.agree < max(MIN_AGREE, t.seen / 2):
                continue
            seed, v, total, tool, nth = t.first
            name = t.name
            at = None
            why = ""
            if t.self_diff == t.disagree:
                at = self.where.gold(task, tool, nth)
                why = f"; there `{tool}` diffs a time with itself"
            at = at or self.where.answer(task, k)
            self.log.add(f"C192:{task}:{k}", "warning", "C192",
                         f"task `{task}`: the answer{f' `{name}`' if name else ''} agrees with "
                         f"the span the gold's `{tool}` returns on {t.agree} of {t.seen} seeds "
                         f"but not on {t.disagree} (seed {seed}: {v!r} against {total:g} "
                         f"seconds){why}: the gold contradicts its own tool result",
                         at, task=task, seed=seed,
                         hint="compute the answer as the tool does (full days, the same pair of "
                              "times), or diff the times the answer is about")
