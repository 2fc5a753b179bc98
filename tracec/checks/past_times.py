"""A gold write that sets a time already past (C181, error): a gold write passes a time (an
argument of the contract's `instant` dimension: `add_reminder(reminder_timestamp = ...)`) that is
before the world's clock (a record field `now` of that dimension, `settings.now`), on one of the
first ``MAX_SEEDS`` seeds: a reminder for a holiday of this year that has already gone by, a day
counted back instead of forward. The user asks for something ahead; the gold schedules it in
the past, and an agent that picks the next occurrence is scored wrong.

Reported once per task at the `let` the user's words state (interpolate) that the time's
base is computed from (a time read as such, `p.now`, else the term of the largest factor:
`day * 86400` of `day * 86400 + hour * 3600`, `day` from the year the user names: `let hy =
year`), when exactly one; else at the gold call.
"""

from __future__ import annotations

from typing import Any

from tracec.checks.blame import call_arg, cone, names, task_ast
from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.core.diagnostics import Span
from tracec.domains.units import is_instant, is_instant_arg
from tracec.lang import ast as A
from tracec.runtime.lib import fmt

MAX_SEEDS = 32


def _terms(expr: Any) -> list[Any]:
    """The terms of a sum (`a * 86400 + b * 3600 - c`: three)."""
    if isinstance(expr, A.BinOp) and expr.op in "+-":
        return _terms(expr.left) + _terms(expr.right)
    return [expr]


def _scale(term: Any) -> float:
    """The product of a term's numeric factors (`day * 86400`: 86400)."""
    if isinstance(term, A.BinOp) and term.op == "*":
        return _scale(term.left) * _scale(term.right)
    return float(term.value) if isinstance(term, A.Num) else 1.0


def stated_base(task: A.Task, expr: Any) -> str | None:
    """The one `let` the user's text interpolates that the base of ``expr`` is computed from:
    its one term that is a time read as such (`p.now`), else its term of the largest factor
    (`day * 86400`); None when there is no one base or the user states none or two."""
    terms = _terms(expr)
    # a time read as such (`p.now - hours * 3600`) is the base; else the term of days
    bare = [t for t in terms if isinstance(t, (A.Name, A.Attr))]
    terms = bare if bare else sorted(terms, key=_scale, reverse=True)
    if not terms or (len(terms) > 1 and (bare or _scale(terms[0]) == _scale(terms[1]))) \
            or task.user is None:
        return None
    said = [n for n in cone(task, terms[0]) if n in names(task.user)]
    return said[0] if len(said) == 1 else None


class PastTimes(Check):
    """C181 over the first seeds; findings go to ``log``."""

    name = "gold writes of past times"
    codes = ("C181",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        schema = self.cap.domain.schema
        # the record kinds whose `now` field is the world's clock
        self.clocks = [t for t, fields in (getattr(schema, "units", {}) or {}).items()
                       if is_instant(fields.get("now"))]

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
                 if is_instant_arg(self.cap.domain.schema, c.name, a)
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
            span, where = self._cause(inst.task, c.name, nth, a)
            self.log.add(f"C181:{inst.task}", "error", "C181",
                         f"task `{inst.task}`: the gold's `{c.name}`{where} sets `{a}` to "
                         f"{fmt(v)}, {days:.1f} days before the world's current time {fmt(now)} "
                         f"(seed {seed}): the user asks for something ahead, the gold schedules "
                         "it in the past", span,
                         task=inst.task, seed=seed,
                         hint="draw the date ahead of the clock (the next occurrence: this year's "
                              "if it is still to come, else next year's)")
            return

    def _cause(self, task: str, tool: str, nth: int, arg: str) -> tuple[Span | None, str]:
        """(span, note) of the `let` the time is drawn from, else of the gold call."""
        call = self.where.gold(task, tool, nth)
        t = task_ast(self.where, task)
        expr = call_arg(self.where, task, tool, nth, arg)
        base = stated_base(t, expr) if t is not None and expr is not None else None
        span = self.where.let(task, base) if base is not None else None
        if span is None:
            return call, ""
        line = f" at line {call.line}" if call is not None else ""
        return span, f"{line} (its time computed from `{base}`, which the user states)"
