"""Ladder ties (C190, C191): a rung that does not teach a difference the ladder itself draws.

C150 fails when a worse behaviour earns *more* than a better one. A tie is not always wrong (a
ladder that never looks at the forbidden call pays it like anything else), but it is when the
ladder's own rungs say the two differ:

* C190 (warning): the ladder excludes the forbidden call on some paying rung
  (`... and not forbidden_called`), yet another rung pays a behaviour with the forbidden call
  exactly as much as the same behaviour without it: the right answer said after the forbidden
  call alone against the answer alone, or the gold calls up to their first write plus the
  forbidden call against those calls alone (on the first ``MAX_SEEDS`` seeds). At the rung
  that pays the worse one.
* C191 (warning): a rung scaled by progress (`k * progress when progress > 0`) pays an
  unfinished job up to ``k`` as progress nears 1, more than a constant rung that needs the job
  finished (`L when ... progress == 1`, L < k): on the ladder's own terms a job left undone
  earns more than the finished one that rung pays, whatever the gold's length. At the scaled
  rung.
"""

from __future__ import annotations

import re

from tracec.checks.behaviours import Judged, judged
from tracec.checks.check import Check, InstanceContext, fmt_rule
from tracec.checks.meaning import is_answer
from tracec.checks.probes import forbid_call
from tracec.runtime.oracle import report_text

MAX_SEEDS = 32
TOL = 1e-6
_EXCLUDES = re.compile(r"\bnot\s+forbidden_called\b")
_FINISHED = re.compile(r"\bprogress\s*==\s*1(\.0*)?\b")


class LadderTies(Check):
    """Flags ties the ladder's own rungs say are differences; findings go to ``log``."""

    name = "ladder ties"
    codes = ("C190", "C191")

    def _excludes(self) -> list[int]:
        """Paying rungs whose condition needs `not forbidden_called`."""
        return [i for i, r in enumerate(self.cap.rules) if r.level > TOL and _EXCLUDES.search(r.text)]

    def start(self) -> None:
        rules = self.cap.rules
        finished = [(i, r) for i, r in enumerate(rules)
                    if r.value is None and r.level > TOL and _FINISHED.search(r.text)]
        for i, r in enumerate(rules):
            if r.value is None or "progress" not in r.text or _FINISHED.search(r.text):
                continue
            below = [(j, f) for j, f in finished if f.level < r.level - TOL]
            if not below:
                continue
            j, f = min(below, key=lambda p: p[1].level)
            self.log.add(f"C191:{i}", "warning", "C191",
                         f"{fmt_rule(self.cap, i)} pays an unfinished job up to {r.level:.2f} as "
                         f"progress nears 1, more than the {f.level:.2f} that "
                         f"{fmt_rule(self.cap, j)} pays for the finished job: a job left undone "
                         "earns more than the finished one",
                         self.where.rule(i),
                         hint=f"keep the progress rung's factor at most {f.level:.2f}, or make "
                              "the finished rung pay more")

    def _tie(self, kind: str, task: str, seed: int, worse: str, w: Judged, better: str, b: Judged,
             excl: list[int]) -> None:
        if b.reward <= TOL or abs(w.reward - b.reward) > TOL or w.rule is None or w.rule in excl:
            return
        if "forbidden_called" in self.cap.rules[w.rule].text:
            return
        self.log.add(f"C190:{task}:{kind}", "warning", "C190",
                     f"task `{task}`: {worse} earns {w.reward:.2f} ({fmt_rule(self.cap, w.rule)}), "
                     f"the same as {better}, first at seed {seed}, while "
                     f"{fmt_rule(self.cap, excl[0])} excludes the forbidden call: this rung does "
                     "not teach the difference",
                     self.where.rule(w.rule), task=task, seed=seed,
                     hint="add `and not forbidden_called` to the rung, as the others have")

    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        if seed >= MAX_SEEDS or not self.cap.rules:
            return
        excl = self._excludes()
        inst = env.instance
        if not excl or not inst.forbid:
            return
        task, box, gold = inst.task, env.toolbox, tuple(inst.gold)
        report = report_text(inst)
        said = any(is_answer(v) for v in inst.communicate.values())
        writes = [i for i, c in enumerate(gold) if c.name in box.writes]
        for f in inst.forbid[:3]:
            call = forbid_call(f, gold, box.tools)
            if call is None:
                continue
            if said:
                self._tie("forbidden-said", task, seed,
                          f"the forbidden call `{call.name}` and the right answer said",
                          judged(env, (call,), report), "the right answer alone",
                          judged(env, (), report), excl)
            if writes:
                first = gold[:writes[0] + 1]
                self._tie("forbidden-added", task, seed,
                          f"the gold calls up to their first write plus the forbidden call "
                          f"`{call.name}`", judged(env, first + (call,), report),
                          "those calls alone", judged(env, first, report), excl)
