"""The checks over every probe reward of the run: reward variance (C116, C117) and the levels
no probe reached (C115)."""

from __future__ import annotations

from tracec.checks.check import TOL, Check, fmt_rule, reads_forbidden
from tracec.runtime.env import Capability


class RewardVariance(Check):
    """C116: every probe gets the same reward; C117: too few seeds give two distinct rewards
    (under ``min_variance_share``)."""

    name = "reward variance"
    codes = ("C116", "C117")

    def finish(self) -> None:
        report, rewards, share = self.run.report, self.run.stats.rewards, self.run.min_variance_share
        first_rule = self.where.rule(0)
        if rewards and report.reward_std <= TOL:
            self.log.add("variance", "error", "C116", f"no reward variance: every probe gets "
                         f"{rewards[0]:.2f}; the spec cannot tell good from bad behaviour",
                         first_rule,
                         hint="give the ladder rungs that the oracle and a do-nothing agent reach apart")
        elif rewards and report.variance_share < share:
            self.log.add("variance-share", "error", "C117",
                         f"only {report.variance_share:.0%} of seeds give >= 2 distinct rewards (need "
                         f"{share:.0%})", first_rule)


class UnreachedLevels(Check):
    """C115: a rung of the ladder that no probe reached on any seed, and why."""

    name = "unreached levels"
    codes = ("C115",)

    def finish(self) -> None:
        stats, cap = self.run.stats, self.cap
        if not stats.rewards:
            return
        for i, hits in enumerate(stats.rule_hits):
            if not hits:
                refused = next((k for k in self.run.forbid_why if k in self.run.forbid_refused),
                               None) if reads_forbidden(cap, i) else None
                if refused is not None:  # the forbid's wrong arguments are why: it is there
                    task, n = refused
                    self.log.add(f"level:{i}", "error", "C115",
                                 f"the forbidden call of task `{task}` never succeeds, so level "
                                 f"{cap.rules[i].level:g} ({fmt_rule(cap, i)}) is never reached "
                                 f"by any probe: {self.run.forbid_why[refused]}",
                                 self.where.forbid(task, n), task=task,
                                 notes=[(self.where.rule(i), "the rung no probe reaches")],
                                 hint="a forbid names a call an agent can make and must not: "
                                      "fix its arguments so that the call can succeed")
                    continue
                why, hint = _never_why(cap, i, self.run.forbid_why, stats.rule_hits, self.run.seeds)
                self.log.add(f"level:{i}", "error", "C115",
                             f"level {cap.rules[i].level:g} ({fmt_rule(cap, i)}) is never "
                             f"reached by any probe: {why}", self.where.rule(i), hint=hint)


def _never_why(cap: Capability, index: int, forbid_why: dict, rule_hits: list[int],
               seeds: int) -> tuple[str, str]:
    text = cap.rules[index].text
    reached = ", ".join(str(i + 1) for i, h in enumerate(rule_hits) if h) or "none"
    if "forbidden_called" in text and "not forbidden_called" not in text:
        if forbid_why:
            (task, _), why = next(iter(forbid_why.items()))
            return (f"it reads `forbidden_called`, but in task `{task}` {why}",
                    "fix the forbid's arguments so that the call it names can succeed")
        return ("it reads `forbidden_called`, but no task's forbidden call succeeded on any seed",
                "check the forbids: a forbidden call the env refuses never counts")
    why = (f"no probe (oracle, noop, silent_gold, gold_minus_one, forbidden, echo) meets its "
           f"condition on any of {seeds} seeds (the probes reached rule(s) {reached})")
    return why, "an unreachable rung teaches nothing: loosen its condition or remove it"
