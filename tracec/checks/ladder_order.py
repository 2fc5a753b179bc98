"""Ladder order (C150, C151): a behaviour strictly worse than another must not earn more.

On each drawn instance (the first ``MAX_SEEDS`` seeds) the rules judge (without an episode,
see :mod:`tracec.checks.behaviours`) the gold and behaviours strictly worse than it:

| worse | better |
|---|---|
| the gold calls plus a stray wrong write (silent) | the exact silent gold calls |
| the gold calls minus their last write (silent) | the silent gold calls |
| the forbidden call alone | doing nothing; the gold calls up to their first write |
| the gold calls up to their first write, plus the forbidden call | those calls alone |
| the gold calls and a wrong value said | the silent gold calls |
| the gold's reads and the report, without any write | the silent gold calls |

C150 (error): the worse earns more than the better, at the rung that pays the worse.
C151 (error): the gold plus a stray write and the report, the gold minus its last write and
the report, the gold and a wrong value said, or (a read-only task whose answer is a constant
the spec writes) the report without any of the gold's reads, earns the top level the oracle earns (the ladder cannot tell it from the
expert), at that rung.
"""

from __future__ import annotations

from tracec.checks.behaviours import Judged, judged, stray_write, wrong_report
from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.checks.meaning import is_answer
from tracec.checks.probes import NOOP_TEXT, SILENT_TEXT, forbid_call
from tracec.runtime.lib import fmt
from tracec.runtime.oracle import report_text
from tracec.runtime.outcome import Call

MAX_SEEDS = 48
TOL = 1e-6
SHOW_ARGS = 40  # a stray call's arguments as quoted in a message


def _show(c: Call) -> str:
    """``name(args)``, the arguments cut to ``SHOW_ARGS`` characters (messages stay bounded)."""
    args = ", ".join(f"{k}={fmt(v)!r}" for k, v in (c.args or {}).items()
                     if not isinstance(v, (list, dict)))
    if len(args) > SHOW_ARGS:
        args = args[:SHOW_ARGS - 1] + "…"
    return f"{c.name}({args})"


class LadderOrder(Check):
    """Compares the rewards of ordered behaviours on every instance; findings go to ``log``."""

    name = "ladder order"
    codes = ("C150", "C151")

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        self.top = max(self.cap.levels) if self.cap.rules else 0.0

    def _rule(self, j: Judged) -> str:
        if j.rule is None:
            return "no rule"
        return f"rule {j.rule + 1} `{self.cap.rules[j.rule].text}`"

    def _worse(self, kind: str, task: str, seed: int, worse: str, w: Judged, better: str, b: Judged) -> None:
        if w.reward <= b.reward + TOL:
            return
        self.log.add(f"C150:{task}:{kind}", "error", "C150",
                     f"task `{task}`: {worse} earns {w.reward:.2f} ({self._rule(w)}), more than "
                     f"{better} ({b.reward:.2f}, {self._rule(b)}), first at seed {seed}: the "
                     "ladder pays a worse behaviour more than a better one",
                     self.where.rule(w.rule), task=task, seed=seed,
                     hint="order the rungs so that each one needs what the rungs below need "
                          "(`progress == 1`, `state_matches`, `not forbidden_called`)")

    def _top(self, kind: str, task: str, seed: int, what: str, w: Judged) -> None:
        if w.reward < self.top - TOL:
            return
        self.log.add(f"C151:{task}:{kind}", "error", "C151",
                     f"task `{task}`: {what} earns the top level {self.top:.2f} "
                     f"({self._rule(w)}), as the expert does, first at seed {seed}",
                     self.where.rule(w.rule), task=task, seed=seed,
                     hint="the top rung must need the exact final state (`state_matches`) and, "
                          "when the task communicates, `communicated()`")

    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        if seed >= MAX_SEEDS or not self.cap.rules:
            return
        inst = env.instance
        task, box = inst.task, env.toolbox
        gold = tuple(inst.gold)
        report = report_text(inst)
        silent = judged(env, gold, SILENT_TEXT)
        oracle = judged(env, gold, report)
        if not oracle.matches or oracle.reward < self.top - TOL:
            return  # the gold itself is off: the probes report that (C111, C102)
        stray = stray_write(env)
        if stray is not None:
            with_stray = gold + (stray,)
            what = f"the gold calls plus a stray write {_show(stray)}"
            self._worse("stray", task, seed, what, judged(env, with_stray, SILENT_TEXT),
                        "the exact silent gold calls", silent)
            self._top("stray", task, seed, what + " and the report", judged(env, with_stray, report))
        writes = [i for i, c in enumerate(gold) if c.name in box.writes]
        if writes:
            minus = gold[:writes[-1]] + gold[writes[-1] + 1:]
            what = f"the gold calls without their last write `{gold[writes[-1]].name}`"
            self._worse("minus", task, seed, what, judged(env, minus, SILENT_TEXT),
                        "the silent gold calls", silent)
            self._top("minus", task, seed, what + " and the report", judged(env, minus, report))
        for f in inst.forbid[:3]:
            call = forbid_call(f, gold, box.tools)
            if call is None:
                continue
            alone = judged(env, (call,), SILENT_TEXT)
            what = f"the forbidden call {_show(call)} alone"
            self._worse("forbidden-noop", task, seed, what, alone, "doing nothing", judged(env, (), NOOP_TEXT))
            if writes:
                first = gold[:writes[0] + 1]
                partial = judged(env, first, SILENT_TEXT)
                self._worse("forbidden-partial", task, seed, what, alone,
                            "the gold calls up to their first write", partial)
                # a forbidden call never makes real progress worth more (`forbidden_called and
                # progress > 0` above `0.4 * progress`)
                self._worse("forbidden-added", task, seed,
                            f"the gold calls up to their first write plus the forbidden call "
                            f"{_show(call)}", judged(env, first + (call,), SILENT_TEXT),
                            "those calls alone", partial)
        if writes and any(is_answer(v) for v in inst.communicate.values()):
            # reading and reporting without acting is worse than acting without reporting: the
            # capability's writes are its work (`0.3 when communicated()` over the silent gold)
            reads = tuple(c for c in gold if c.name not in box.writes)
            self._worse("reads", task, seed, "the gold's reads and the report, without any write",
                        judged(env, reads, report), "the silent gold calls", silent)
        ts = self.where.tasks.get(task)
        if gold and not writes and ts is not None and any(ts.communicate_const):
            # a read-only task whose answer the spec writes as a constant (`let rule = 24`):
            # said without looking, it is a memorised phrase, not the work
            self._top("blind", task, seed, "the report alone (a constant the spec writes), "
                      "without any of the gold's reads", judged(env, (), report))
        if any(is_answer(v) for v in inst.communicate.values()):
            wrong = judged(env, gold, wrong_report(inst.communicate))
            what = "the gold calls and a wrong answer said"
            self._worse("wrong", task, seed, what, wrong, "the silent gold calls", silent)
            self._top("wrong", task, seed, what, wrong)

    def finish(self) -> None:
        """Nothing to fold: every finding is logged as it is found."""
