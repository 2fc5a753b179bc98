"""The checks of each drawn instance against the probes: hint leaks (C301), forbids that match
the gold (C113), and every probe's episode judged against the rules (C103, C110-C114, the paid
echo and shotgun C120/C121, C320/C321)."""

from __future__ import annotations

import re
from typing import Any

from tracec.checks.blame import forbid_filter
from tracec.checks.check import (
    TOL,
    Check,
    InstanceContext,
    Play,
    RunContext,
    fmt_rule,
    reads_forbidden,
)
from tracec.checks.own_words import paid_finding, shotgun_paid
from tracec.runtime.lib import fmt
from tracec.runtime.outcome import args_match


def call_text(c: Any) -> str:
    """``name(arg='value', ...)`` as findings quote a call (lists and dicts as ``...``)."""
    args = ", ".join(f"{k}={fmt(v)!r}" if not isinstance(v, (list, dict)) else f"{k}=..."
                     for k, v in (c.args or {}).items())
    return f"{c.name}({args})"


def hint_leak(inst: Any) -> str | None:
    """How the task's hint gives away a gold call (its tool name and an argument value), if it
    does: the model would learn to copy hints, and the target shows none."""
    hint = inst.hint or ""
    if not hint:
        return None
    for call in inst.gold:
        if not re.search(rf"\b{re.escape(call.name)}\b", hint):
            continue
        for name, value in (call.args or {}).items():
            text = fmt(value) if not isinstance(value, (list, dict)) else ""
            if len(text) >= 3 and text in hint:
                return f"the hint names `{call.name}` and its `{name}` ({text!r})"
    return None


class HintLeak(Check):
    """C301: a task's hint names a gold tool and one of its argument values (once per task)."""

    name = "hint leak"
    codes = ("C301",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        self.leaked: set[str] = set()

    def instance(self, ctx: InstanceContext) -> None:
        task, seed = ctx.task, ctx.seed
        if task in self.leaked:
            return
        leak = hint_leak(ctx.inst)
        if leak:
            self.leaked.add(task)
            ts = self.where.tasks.get(task)
            self.log.add(f"hint-leak:{task}", "warning", "C301",
                         f"hint leak: task `{task}`: {leak} (seed {seed})",
                         ts.hint if ts else None, task=task, seed=seed,
                         hint="GRPO shows hints to a share of each group: the model would learn "
                              "to copy them; describe the step, not its arguments")


class ForbidGold(Check):
    """C113: a task's forbid matches one of its gold calls (the expert would be punished)."""

    name = "forbid vs gold"
    codes = ("C113",)

    def instance(self, ctx: InstanceContext) -> None:
        inst, task, seed = ctx.inst, ctx.task, ctx.seed
        for i, f in enumerate(inst.forbid):
            at = next((n for n, g in enumerate(inst.gold)
                       if g.name == f.name and args_match(f.args, g.args or {})), None)
            if at is not None:
                hit = inst.gold[at]
                nth = sum(1 for g in inst.gold[:at] if g.name == hit.name)
                self.run.probes_ok = False
                # the texts differ (the compiler's E301 catches a copy): the forbid's arguments
                # compute the gold's values, so the finding is at the forbid, the call a note;
                # at the filter that drew the forbid's record when the gold reads another one
                drawn = forbid_filter(self.where, task, i, hit.name, nth)
                why = (f"; `let {drawn[0]}`'s filter lets it draw the gold's own record"
                       if drawn else "")
                notes = [(self.where.gold(task, hit.name, nth), "the gold call it matches")]
                if drawn:
                    notes.append((self.where.forbid(task, i), "the forbid"))
                self.log.add(f"forbid-gold:{task}:{f.name}", "error", "C113",
                             f"task `{task}`: `forbid {f.name}` matches the gold call "
                             f"{call_text(hit)} at seed {seed}: the expert would be punished{why}",
                             drawn[1] if drawn else self.where.forbid(task, i), task=task,
                             seed=seed, notes=notes,
                             hint="name the arguments that make the call wrong, so that the "
                                  "gold call never matches")


def _refusal(ep: Any, probe: Any) -> tuple[int, str] | None:
    """(index of the call, its error) for the first call of ``probe`` the env refused."""
    for k, _ in enumerate(probe.calls):
        if k < len(ep.observations) and ep.observations[k].startswith("Error"):
            return k, ep.observations[k]
    return None


class ProbeJudge(Check):
    """Every probe's episode against the rules: a paid shotgun or echo, tool bugs, a reward
    off the promised one, an inert forbid, an oracle below the top, a paid no-op; notes why a
    forbidden call did nothing (for C115)."""

    name = "probes"
    codes = ("C103", "C110", "C111", "C112", "C114", "C120", "C121", "C320", "C321")

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        levels = self.cap.levels
        self.top, self.bottom = max(levels), min(levels)

    def instance(self, ctx: InstanceContext) -> None:
        silent_reward = None
        for play in ctx.plays:
            probe = play.probe
            if play.ep is None:
                self.run.forbid_why.setdefault((ctx.task, probe.forbid),
                                               f"{probe.why_not} (seed {ctx.seed})")
                continue
            if probe.name == "silent_gold":
                silent_reward = play.ep.reward
            self._judge(ctx.task, ctx.seed, play, silent_reward)

    def _judge(self, task: str, seed: int, play: Play, silent_reward: float | None) -> None:
        """The findings one probe run gives."""
        log, where_map, cap, top = self.log, self.where, self.cap, self.top
        probe, ep = play.probe, play.ep
        rule = fmt_rule(cap, ep.rule)
        if probe.name == "shotgun" and silent_reward is not None and ep.reward > silent_reward + TOL:
            shotgun_paid(log, where_map, cap, task, ep, silent_reward, rule, seed)
        for bug in ep.tool_bugs:
            tool = re.search(r"tool `(\w+)`", bug)
            span = where_map.gold(task, tool.group(1)) if tool else None
            log.add(f"bug:{bug}", "error", "C103",
                    f"domain bug in task `{task}`, probe {probe.name}: {bug}", span, task=task,
                    seed=seed)
        refused = _refusal(ep, probe)
        self._forbid_refused(task, seed, probe, refused)
        if abs(ep.reward - play.want) > TOL:
            self.run.probes_ok = False
            self._mismatch(task, seed, play, refused)
        if probe.forbidden is not None and ep.reward >= top - TOL and probe.forbidden in play.calls:
            self.run.probes_ok = False
            how = "instead of its last write" if "instead" in probe.name else "after them"
            if reads_forbidden(cap, ep.rule):  # the rung pays the forbidden call: it is there
                log.add(f"forbid-paid:{ep.rule}", "error", "C114",
                        f"{rule} pays a forbidden call the top level {top:.2f}: in task "
                        f"`{task}`, probe {probe.name}, the gold actions with the forbidden call "
                        f"{call_text(probe.forbidden)} {how} get it, first at seed {seed}",
                        where_map.rule(ep.rule), task=task, seed=seed,
                        notes=[(where_map.forbid(task, probe.forbid), "the forbid it pays")],
                        hint="a rung that reads `forbidden_called` must pay less than the "
                             "clean gold: lower its level under the top")
            else:
                log.add(f"forbid-inert:{task}:{probe.name}", "error", "C114",
                        f"task `{task}`, probe {probe.name}: the gold actions with the forbidden "
                        f"call {call_text(probe.forbidden)} {how} still get the top level "
                        f"{top:.2f} ({rule}); the forbid does not lower the reward, first at seed {seed}",
                        where_map.forbid(task, probe.forbid), task=task, seed=seed,
                        hint="put `0.0 when forbidden_called` first, or add `and not "
                             "forbidden_called` to the top rule")
        if probe.name.startswith("echo") and silent_reward is not None \
                and ep.reward > silent_reward + TOL:
            self._echo_paid(task, seed, probe, ep, silent_reward)
        if probe.name == "oracle" and abs(ep.reward - top) > TOL:
            self.run.probes_ok = False
            span, why = self._oracle_why(task, probe, ep, refused)
            log.add(f"oracle:{task}", "error", "C111",
                    f"task `{task}`: the oracle (gold actions + report) gets {ep.reward:.2f} "
                    f"({rule}), not the top level {top:.2f}, first at seed {seed}{why}", span,
                    task=task, seed=seed)
        if probe.name == "noop" and abs(ep.reward - self.bottom) > TOL:
            self.run.probes_ok = False
            log.add(f"noop:{task}", "error", "C112",
                    f"task `{task}`: doing nothing gets {ep.reward:.2f} ({rule}), "
                    f"not the bottom level {self.bottom:.2f}, first at seed {seed}",
                    where_map.rule(ep.rule), task=task, seed=seed,
                    hint="a do-nothing agent must not be paid: make this rule need "
                         "`progress`, a `called(...)` or `communicated()`")

    def _forbid_refused(self, task: str, seed: int, probe: Any,
                        refused: tuple[int, str] | None) -> None:
        """Note (for C115) that the env refused the probe's forbidden call."""
        if probe.forbid is None or probe.forbidden is None or refused is None:
            return
        if refused[0] == probe.calls.index(probe.forbidden):
            self.run.forbid_refused.add((task, probe.forbid))
            self.run.forbid_why.setdefault(
                (task, probe.forbid),
                f"the probe's call {call_text(probe.forbidden)} was refused at seed "
                f"{seed}: {refused[1]}")

    def _mismatch(self, task: str, seed: int, play: Play, refused: tuple[int, str] | None) -> None:
        cap, where_map, probe, ep = self.cap, self.where, play.probe, play.ep
        span = where_map.rule(play.want_rule)
        why = ""
        if ep.ended_by == "max_turns":
            why = (f" (episode truncated at max_turns: the probe needs {len(probe.turns)} turns, "
                   f"max_turns is {cap.max_turns})")
            span = where_map.max_turns or span
        elif refused is not None:
            call = probe.calls[refused[0]]
            why = f" (its call {call_text(call)} was refused: {refused[1]})"
            span = where_map.gold(task, call.name) or span
        self.log.add(f"mismatch:{task}:{probe.name}", "error", "C110",
                     f"task `{task}`, probe {probe.name}: the rules promise {play.want:.2f} "
                     f"({fmt_rule(cap, play.want_rule)}) but the env gave {ep.reward:.2f} "
                     f"({fmt_rule(cap, ep.rule)}){why}, first at seed {seed}", span, task=task,
                     seed=seed)

    def _oracle_why(self, task: str, probe: Any, ep: Any,
                    refused: tuple[int, str] | None) -> tuple[Any, str]:
        where_map = self.where
        if ep.ended_by == "max_turns":
            why = (f": truncated at max_turns ({len(probe.turns)} turns needed, max_turns is "
                   f"{self.cap.max_turns})")
            return where_map.max_turns or where_map.task(task), why
        if refused is not None:
            call = probe.calls[refused[0]]
            return (where_map.gold(task, call.name) or where_map.task(task),
                    f": its call {call_text(call)} was refused: {refused[1]}")
        return where_map.rule(0) or where_map.task(task), ": the top rule's condition does not hold"

    def _echo_paid(self, task: str, seed: int, probe: Any, ep: Any, silent: float) -> None:
        pasted = "the raw tool outputs in <tool_response> markup" if probe.name == "echo" \
            else "the raw tool outputs"
        paid = (f"task `{task}`, probe {probe.name}: pasting {pasted} back gets {ep.reward:.2f} "
                f"({fmt_rule(self.cap, ep.rule)}), more than the silent gold calls ({silent:.2f}), "
                f"first at seed {seed}: ")
        paid_finding(self.log, f"echo:{task}:{probe.name}", self.cap.communicate_raw,
                     self.where.rule(ep.rule), paid, task, seed, raw_code="C320",
                     raw_why="`communicate raw` pays an agent for echoing tool output",
                     code="C120", why="the rule pays for an echo",
                     hint="a rule reached by an echo must need what the agent says in its own words")
