"""The gold against its own time tools' results (C161, error).

* A gold write's time argument (a unit of the `instant` dimension in the domain's contract,
  `reminder_timestamp`) that the gold computes in the spec while an earlier gold call computed a
  number (`shift_timestamp`): the agent is to use that result, so the argument must be in what
  it has seen (the user's words or an earlier gold output). `hours * 3600` where the tool was
  asked to shift minutes, or a day counted twice, gives a time no tool returned.
* A weekday answer ("Friday") when the gold's last call decodes a time (its output has an
  `isoweekday`): the answer must be that weekday (not the weekday of the time before a shift).

Judged on the first ``MAX_SEEDS`` seeds, from the gold calls' outputs the run already has.
Reported at the write call, and at the `let` the answer is read from (else the `communicate`),
or, when the answer is the weekday of the time a gold write passes and the last call decodes
another one, at that call (at the `let` it passes, if a plain variable).
"""

from __future__ import annotations

import json
import re
from functools import partial
from typing import Any

from tracec.checks.blame import WrongVariable, at_let, note
from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.checks.locate import nth_call
from tracec.checks.provenance import direct
from tracec.domains.units import is_instant, is_instant_arg
from tracec.lang import ast as A
from tracec.runtime.lib import fmt
from tracec.runtime.outcome import mentioned

MAX_SEEDS = 64
_CLOCK = re.compile(r"\b(\d{1,2}):(\d{2})\b")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def clock(t: float) -> tuple[int, int]:
    """(hour, minute) of a UTC epoch time."""
    return int(t % 86400 // 3600), int(t % 3600 // 60)


def stated_clocks(texts: list[str]) -> set[tuple[int, int]]:
    """Every clock time (`14:35`, `6:05`) the texts state."""
    return {(int(h), int(m)) for text in texts for h, m in _CLOCK.findall(text or "")}


def number_output(text: str) -> bool:
    """A tool output that is one number (`shift_timestamp`'s result)."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return False
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class TimeResults(Check):
    """C161 over the drawn instances; findings go to ``log``."""

    name = "gold vs its time tools"
    codes = ("C161",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        self.arg_units = getattr(self.cap.domain.schema, "arg_units", {}) or {}
        self.computed: dict[str, set[tuple[str, str]]] = {}  # task -> (tool, arg) computed
        for t in (self.where.ast.tasks if self.where.ast is not None else []):
            lets = {let.name: let.value for let in t.lets}
            self.computed[t.name] = {(c.name, kw.name) for c in A.gold_calls(t.gold)
                                     for kw in c.args if not direct(kw.value, lets)}
        self.wrong = WrongVariable(self.where)

    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        inst = env.instance
        if seed >= MAX_SEEDS or not inst.gold:
            return
        results = ctx.results
        self._writes(ctx, inst, results)
        self._weekday(ctx, inst, seed, results)

    def _writes(self, ctx: InstanceContext, inst: Any, results: list[str]) -> None:
        writes = ctx.env.toolbox.writes
        computed = self.computed.get(inst.task, set())
        known = inst.said
        counts: dict[str, int] = {}
        for n, call in enumerate(inst.gold):
            nth = counts.get(call.name, 0)
            counts[call.name] = nth + 1
            # an earlier gold call computed a number from its arguments (not a plain reading
            # such as get_current_timestamp)
            if call.name not in writes or not any(number_output(r) and c.args for r, c
                                                  in zip(results[:n], inst.gold)):
                continue
            for arg, value in (call.args or {}).items():
                key = f"{inst.task}:{call.name}:{arg}"
                if key in self.done or (call.name, arg) not in computed \
                        or not is_instant_arg(self.cap.domain.schema, call.name, arg) \
                        or not isinstance(value, (int, float)) \
                        or mentioned(value, known + list(results[:n])):
                    continue
                self.done.add(key)
                at = self.where.gold(inst.task, call.name, nth)
                shift = self._odd_shift(inst, results, n, value, known)
                if shift is not None:  # the write is at the clock time the user says
                    self.log.add(f"C161:{key}", "error", "C161",
                                 f"task `{inst.task}`: the gold call `{shift[0]}` returns "
                                 f"{shift[1]}, a time at another clock time than the "
                                 f"{clock(value)[0]}:{clock(value)[1]:02d} the user says and the "
                                 f"gold's `{call.name}` writes (`{arg}` = {fmt(value)!r}, seed "
                                 f"{ctx.seed}): the gold contradicts its own time tool, whose "
                                 "arguments are the odd one out", shift[2] or at,
                                 task=inst.task, seed=ctx.seed,
                                 hint="pass the shift the user's words give (check its units and "
                                      "digits), so that it returns the time the gold writes")
                    continue
                # a plain variable: where its value was built (blame.py), the call a note
                built = at_let(self.where, inst.task, call.name, nth, arg)
                self.log.add(f"C161:{key}", "error", "C161",
                             f"task `{inst.task}`: the gold call `{call.name}` passes `{arg}` = "
                             f"{fmt(value)!r}, a time no earlier gold call returned and the user "
                             f"did not give (seed {ctx.seed}): the gold contradicts its own time "
                             "tools" + (note(call.name, at, arg, built[0]) if built else ""),
                             built[1] if built else at,
                             task=inst.task, seed=ctx.seed,
                             hint="pass the time the gold's own tool computes (check the units "
                                  "and the shift's arguments)")

    def _odd_shift(self, inst: Any, results: list[str], n: int, value: float,
                   known: list[str]) -> tuple[str, str, Any] | None:
        """(tool, its result, its span) of the last earlier gold call that computed a number,
        when the write's clock time is one the user's words state and that number's is not:
        the write agrees with the user, the computing call is the odd one out."""
        said = stated_clocks(known)
        if clock(value) not in said:
            return None
        for j in range(n - 1, -1, -1):
            call = inst.gold[j]
            if not (number_output(results[j]) and call.args):
                continue
            out = json.loads(results[j])
            if clock(out) in said:
                return None
            nth = nth_call(inst.gold, j)
            return call.name, results[j], self.where.gold(inst.task, call.name, nth)
        return None

    def finish(self) -> None:
        self.wrong.release(self.log)

    def _weekday(self, ctx: InstanceContext, inst: Any, seed: int, results: list[str]) -> None:
        if not results:
            return
        try:
            last = json.loads(results[-1])
        except (TypeError, ValueError):
            return
        day = last.get("isoweekday") if isinstance(last, dict) else None
        if not isinstance(day, int) or not 1 <= day <= 7:
            return
        for k, (name, value) in enumerate(inst.communicate.items()):
            if not isinstance(value, str) or value.capitalize() not in WEEKDAYS:
                continue
            decoded = WEEKDAYS[day - 1]
            self.wrong.see(inst.task, k, inst.values, decoded if value[:1].isupper() else decoded.lower())
            if value.capitalize() == decoded or inst.task in self.done:
                continue
            self.done.add(inst.task)
            span, why = self.where.answer(inst.task, k), ""
            written = self._written(ctx, inst, value.capitalize())
            if written is not None:  # the answer is the write's weekday: the decode is wrong
                last = inst.gold[-1]
                nth = nth_call(inst.gold, len(inst.gold) - 1)
                at = self.where.gold(inst.task, last.name, nth)
                built = at_let(self.where, inst.task, last.name, nth, next(iter(last.args)))
                span = (built[1] if built else at) or span
                passed = f" at line {at.line} (`let {built[0]}`)" if built and at else ""
                why = (f"; the answer is the weekday of `{written}` the gold writes, the call"
                       f"{passed} decodes another time")
            report = self.log.add if written is not None else partial(self.wrong.hold, k)
            report(f"C161:{inst.task}:weekday", "error", "C161",
                   f"task `{inst.task}`: the answer `{name}` is {value!r}, but the gold's "
                   f"last call `{inst.gold[-1].name}` returns isoweekday {day} "
                   f"({WEEKDAYS[day - 1]}) at seed {seed}: the gold contradicts its own "
                   f"tool result{why}", span, task=inst.task, seed=seed,
                   hint="answer the weekday of the time the gold decodes (the shifted "
                        "one?)" if not why else "decode the time the gold writes")
            return

    def _written(self, ctx: InstanceContext, inst: Any, answer: str) -> str | None:
        """The time argument (`reminder_timestamp`) of an earlier gold write whose weekday is
        ``answer``, when the last call decodes another time: the call (or the `let` it passes)
        is the odd one out, not the answer."""
        last = inst.gold[-1]
        if len(last.args or {}) != 1:
            return None
        (arg, decoded), = last.args.items()
        box = ctx.env.toolbox
        for call in inst.gold[:-1]:
            units = self.arg_units.get(call.name) or {}
            for name, value in (call.args or {}).items() if call.name in box.writes else ():
                if not is_instant(units.get(name)) or not isinstance(value, (int, float)) \
                        or value == decoded:
                    continue
                out, ok, _ = box.run(ctx.env.initial_copy(), last.name, {arg: value})
                try:
                    day = json.loads(out).get("isoweekday") if ok else None
                except (TypeError, ValueError, AttributeError):
                    day = None
                if isinstance(day, int) and 1 <= day <= 7 and WEEKDAYS[day - 1] == answer:
                    return name
        return None
