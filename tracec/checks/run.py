"""``run_checks``: offline checks of one capability environment (no model needed)."""

from __future__ import annotations

import math
import re
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

from gymnasium.utils.env_checker import check_env as gym_check_env

from tracec.checks.fidelity import fidelity
from tracec.checks.gold_checks import gold_checks
from tracec.checks.locate import SpecMap
from tracec.checks.meaning import MeaningChecks
from tracec.checks.own_words import paid_finding, rungs, shotgun_paid, shotgun_probe
from tracec.checks.probes import build_probes, expected, gold_results, run_turns
from tracec.checks.repeats import repeat_findings
from tracec.checks.report import CheckReport, FindingLog, ProblemLog
from tracec.core.gcpause import old_objects_frozen
from tracec.harness.resolve import env_class
from tracec.runtime.env import Capability, CapabilityEnv, SpecRuntimeError
from tracec.runtime.instances import Drawn
from tracec.runtime.lib import fmt
from tracec.runtime.outcome import args_match

Progress = Callable[[int], None]  # called with the number of (seed, task) units just done
EnvClass = type[CapabilityEnv]

MIN_VARIANCE_SHARE = 0.5
TOL = 1e-6


def _check_env(cls: EnvClass, problems: ProblemLog, notes: list[str]) -> bool:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            gym_check_env(cls(), skip_render_check=True)
        except Exception as exc:  # noqa: BLE001 - report whatever the checker raised
            problems.add("check_env", f"check_env: {type(exc).__name__}: {exc}")
            return False
    notes.extend(f"check_env: {w.message}" for w in caught)
    return True


def _trace(cls: EnvClass, seed: int, unseeded: int) -> list[tuple]:
    env = cls()
    out = []
    for i in range(unseeded + 1):
        obs, info = env.reset(seed=seed if i == 0 else None)
        # the worlds themselves (compared with ==, at C speed), not their hashes
        out.append((obs, info["task"], env.initial_db, env.gold_db))
    return out


def _check_determinism(cls: EnvClass, seeds: list[int], problems: ProblemLog) -> bool:
    ok = True
    for seed in seeds:
        try:
            if _trace(cls, seed, 3) != _trace(cls, seed, 3):
                problems.add("det-reset", f"determinism: reset(seed={seed}) followed by unseeded resets "
                                          "gives different tasks or worlds in two envs")
                ok = False
            runs = []
            for _ in range(2):
                env = cls()
                env.reset(seed=seed)
                probe = build_probes(env.instance, env.toolbox.writes, env.toolbox.ends)[0]
                ep = run_turns(env, probe.turns, hash_state=True)
                runs.append((ep.observations, ep.rewards, ep.final_hash))
            if runs[0] != runs[1]:
                problems.add("det-step", f"determinism: seed {seed}: the same actions gave different "
                                         "observations, rewards or final state")
                ok = False
        except SpecRuntimeError:
            continue  # reported by the probes
    return ok


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


def _fmt_rule(cap: Capability, index: int | None) -> str:
    if index is None:
        return "no rule"
    return f"rule {index + 1} `{cap.rules[index].text}`"


_LOCATED = re.compile(r"^\S.*?:\d+:\d+: (?:error|warning): ", re.DOTALL)


def _refusal(ep: Any, probe: Any) -> tuple[int, str] | None:
    """(index of the call, its error) for the first call of ``probe`` the env refused."""
    for k, _ in enumerate(probe.calls):
        if k < len(ep.observations) and ep.observations[k].startswith("Error"):
            return k, ep.observations[k]
    return None


def _call_text(c: Any) -> str:
    args = ", ".join(f"{k}={fmt(v)!r}" if not isinstance(v, (list, dict)) else f"{k}=..."
                     for k, v in (c.args or {}).items())
    return f"{c.name}({args})"


def run_checks(
    capability: Any,
    seeds: int = 64,
    check_env: bool = True,
    progress: Progress | None = None,
    min_variance_share: float = MIN_VARIANCE_SHARE,
) -> CheckReport:
    """Check one env: check_env, determinism, probes on every task and seed, reward variance,
    meaning checks; every finding located in the spec (``report.findings``)."""
    with old_objects_frozen():  # thousands of short-lived worlds: keep the collector cheap
        return _run_checks(capability, seeds, check_env, progress, min_variance_share)


def _run_checks(
    capability: Any,
    seeds: int,
    check_env: bool,
    progress: Progress | None,
    min_variance_share: float,
) -> CheckReport:
    start = time.perf_counter()
    cls = env_class(capability)
    cap = cls.capability
    where_map = SpecMap(cap, getattr(sys.modules.get(cls.__module__), "__file__", None))
    log = FindingLog(where_map)
    problems = ProblemLog()
    notes: list[str] = []
    report = CheckReport(env=cap.name, module=cls.__module__, tasks=[t.name for t in cap.tasks],
                         seeds=seeds, levels_total=len(cap.rules))
    if not cap.tasks:
        log.add("no-task", "error", "C100", f"{cap.name}: the capability declares no task",
                hint="add a `task NAME { ... }`")
        return _finish(report, log, problems, notes, start)
    if check_env:
        report.check_env = _check_env(cls, problems, notes)
    report.determinism = _check_determinism(cls, list(range(min(seeds, 3))), problems)
    for key, (message, _) in problems.items():  # check_env and determinism: at the capability
        log.add(key, "error", "C101", message)
    checks = _ProbeChecks(cls, where_map, log, report)
    for seed in range(seeds):
        checks.seed(seed)
        if progress:
            progress(1)
    checks.finish(seeds, min_variance_share)
    report.warnings = list(notes)
    report.fidelity = fidelity(checks.env).model_dump()
    return _finish(report, log, problems, notes, start)


class _ProbeChecks:
    """The per-instance passes of one env's check: every (seed, task) instance is reset, checked
    (hint leak, meaning, gold checks, forbid vs gold), then probed; :meth:`finish` runs the
    passes over the whole run (meaning, repeats, variance, unreached levels)."""

    def __init__(self, cls: EnvClass, where_map: SpecMap, log: FindingLog,
                 report: CheckReport) -> None:
        self.cls, self.cap, self.where_map, self.log, self.report = (
            cls, cls.capability, where_map, log, report)
        levels = self.cap.levels
        self.top, self.bottom = max(levels), min(levels)
        self.rule_hits = [0] * len(self.cap.rules)
        self.all_rewards: list[float] = []
        self.by_probe: dict[str, list[float]] = {}
        self.seeds_with_variance = 0
        self.probes_ok = True
        self.env = cls()
        self.hint_leaks: set[str] = set()
        self.forbid_why: dict[tuple[str, int], str] = {}  # (task, forbid) -> why its call did nothing
        self.meaning = MeaningChecks(self.cap, where_map, log)
        self.drawn = Drawn()  # each seed's instance digest, for C340
        self.extra = gold_checks(self.cap, where_map, log)

    # --- per instance ---------------------------------------------------------------------

    def seed(self, seed: int) -> None:
        """Every task at ``seed``; the seed counts for variance when it gave >= 2 rewards."""
        seed_rewards: set[float] = set()
        for tdef in self.cap.tasks:
            self._instance(seed, tdef.name, seed_rewards)
        if len(seed_rewards) >= 2:
            self.seeds_with_variance += 1

    def _reset(self, seed: int, task: str) -> bool:
        try:
            self.env.reset(seed=seed, options={"task": task})
        except SpecRuntimeError as exc:
            text = str(exc)
            if _LOCATED.match(text):
                self.log.add_rendered(f"spec:{task}", text, seed=seed, task=task)
            else:
                gold = re.search(r"gold action (\w+)\(", text)
                span = self.where_map.gold(task, gold.group(1)) if gold else None
                self.log.add(f"spec:{task}", "error", "C102", text, span, task=task, seed=seed)
            self.probes_ok = False
            return False
        return True

    def _instance(self, seed: int, task: str, seed_rewards: set[float]) -> None:
        if not self._reset(seed, task):
            return
        env, inst = self.env, self.env.instance
        self.drawn.add(env, world=False)
        self._hint_leak(inst, task, seed)
        results = gold_results(env)
        self.meaning.instance(env, seed, results)
        for check in self.extra:
            check.instance(env, seed, results)
        for name in inst.distractors:
            self.report.distractors[name] = self.report.distractors.get(name, 0) + 1
        probes = build_probes(inst, env.toolbox.writes, env.toolbox.ends, env.toolbox.tools,
                              rotate=seed, results=results)
        shotgun = shotgun_probe(env)
        if shotgun is not None:
            probes.append(shotgun)
        self._forbid_gold(inst, task, seed)
        silent_reward = None
        for probe in probes:
            if probe.why_not:
                self.forbid_why.setdefault((task, probe.forbid), f"{probe.why_not} (seed {seed})")
                continue
            ep, want, want_rule = self._play(probe, seed_rewards)
            if probe.name == "silent_gold":
                silent_reward = ep.reward
            self._judge(task, seed, probe, ep, want, want_rule, silent_reward)

    def _hint_leak(self, inst: Any, task: str, seed: int) -> None:
        if task in self.hint_leaks:
            return
        leak = hint_leak(inst)
        if leak:
            self.hint_leaks.add(task)
            ts = self.where_map.tasks.get(task)
            self.log.add(f"hint-leak:{task}", "warning", "C301",
                         f"hint leak: task `{task}`: {leak} (seed {seed})",
                         ts.hint if ts else None, task=task, seed=seed,
                         hint="GRPO shows hints to a share of each group: the model would learn "
                              "to copy them; describe the step, not its arguments")

    def _forbid_gold(self, inst: Any, task: str, seed: int) -> None:
        for i, f in enumerate(inst.forbid):
            hit = next((g for g in inst.gold if g.name == f.name and args_match(f.args, g.args or {})), None)
            if hit is not None:
                self.probes_ok = False
                self.log.add(f"forbid-gold:{task}:{f.name}", "error", "C113",
                             f"task `{task}`: `forbid {f.name}` matches the gold call "
                             f"{_call_text(hit)} at seed {seed}: the expert would be punished",
                             self.where_map.forbid(task, i), task=task, seed=seed,
                             hint="name the arguments that make the call wrong, so that the "
                                  "gold call never matches")

    def _play(self, probe: Any, seed_rewards: set[float]) -> tuple[Any, float, int | None]:
        """Run ``probe`` on the restarted env and count its reward and rule."""
        want, want_rule = expected(self.env, probe)
        self.env.restart()
        ep = run_turns(self.env, probe.turns)
        self.report.probe_runs += 1
        self.all_rewards.append(ep.reward)
        seed_rewards.add(round(ep.reward, 6))
        self.by_probe.setdefault(probe.name, []).append(ep.reward)
        if ep.rule is not None:
            self.rule_hits[ep.rule] += 1
        rungs(self.report.probe_rungs, probe.name, _fmt_rule(self.cap, ep.rule))
        return ep, want, want_rule

    def _judge(self, task: str, seed: int, probe: Any, ep: Any, want: float, want_rule: int | None,
               silent_reward: float | None) -> None:
        """The findings one probe run gives: paid shotgun/echo, tool bugs, a reward off the
        expected one, an inert forbid, an oracle below the top, a paid no-op."""
        log, where_map, cap, top = self.log, self.where_map, self.cap, self.top
        where = f"task `{task}`"
        rule = _fmt_rule(cap, ep.rule)
        if probe.name == "shotgun" and silent_reward is not None and ep.reward > silent_reward + TOL:
            shotgun_paid(log, where_map, cap, task, ep, silent_reward, rule, seed)
        for bug in ep.tool_bugs:
            tool = re.search(r"tool `(\w+)`", bug)
            span = where_map.gold(task, tool.group(1)) if tool else None
            log.add(f"bug:{bug}", "error", "C103",
                    f"domain bug in {where}, probe {probe.name}: {bug}", span, task=task, seed=seed)
        refused = _refusal(ep, probe)
        if probe.forbid is not None and probe.forbidden is not None:
            k = probe.calls.index(probe.forbidden)
            if refused is not None and refused[0] == k:
                self.forbid_why.setdefault(
                    (task, probe.forbid),
                    f"the probe's call {_call_text(probe.forbidden)} was refused at seed "
                    f"{seed}: {refused[1]}")
        if abs(ep.reward - want) > TOL:
            self.probes_ok = False
            _mismatch(log, where_map, cap, task, probe, ep, want, want_rule, seed, refused)
        if probe.forbidden is not None and ep.reward >= top - TOL and probe.forbidden in self.env.calls:
            self.probes_ok = False
            how = "instead of its last write" if "instead" in probe.name else "after them"
            log.add(f"forbid-inert:{task}:{probe.name}", "error", "C114",
                    f"{where}, probe {probe.name}: the gold actions with the forbidden "
                    f"call {_call_text(probe.forbidden)} {how} still get the top level "
                    f"{top:.2f} ({rule}); the forbid does not lower the reward, first at seed {seed}",
                    where_map.forbid(task, probe.forbid), task=task, seed=seed,
                    hint="put `0.0 when forbidden_called` first, or add `and not "
                         "forbidden_called` to the top rule")
        if probe.name.startswith("echo") and silent_reward is not None \
                and ep.reward > silent_reward + TOL:
            _echo_paid(log, where_map, cap, task, probe, ep, silent_reward, top, seed)
        if probe.name == "oracle" and abs(ep.reward - top) > TOL:
            self.probes_ok = False
            span, why = _oracle_why(where_map, cap, task, probe, ep, refused)
            log.add(f"oracle:{task}", "error", "C111",
                    f"{where}: the oracle (gold actions + report) gets {ep.reward:.2f} "
                    f"({rule}), not the top level {top:.2f}, first at seed {seed}{why}", span,
                    task=task, seed=seed)
        if probe.name == "noop" and abs(ep.reward - self.bottom) > TOL:
            self.probes_ok = False
            log.add(f"noop:{task}", "error", "C112",
                    f"{where}: doing nothing gets {ep.reward:.2f} ({rule}), "
                    f"not the bottom level {self.bottom:.2f}, first at seed {seed}",
                    where_map.rule(ep.rule), task=task, seed=seed,
                    hint="a do-nothing agent must not be paid: make this rule need "
                         "`progress`, a `called(...)` or `communicated()`")

    # --- over the whole run ---------------------------------------------------------------

    def finish(self, seeds: int, min_variance_share: float) -> None:
        """The run-wide passes: meaning and gold checks, instance repeats, the report's figures,
        reward variance and the levels no probe reached."""
        report, log, rule_hits, all_rewards = self.report, self.log, self.rule_hits, self.all_rewards
        self.meaning.finish()
        report.instance_repeats = repeat_findings(self.cls, self.drawn, log, self.where_map)
        for check in self.extra:
            check.finish()
        report.probes = self.probes_ok
        report.rule_hits = rule_hits
        report.levels_reached = sum(1 for h in rule_hits if h)
        report.probe_means = {k: round(sum(v) / len(v), 4) for k, v in self.by_probe.items()}
        if all_rewards:
            mean = sum(all_rewards) / len(all_rewards)
            report.reward_mean = mean
            report.reward_std = math.sqrt(sum((r - mean) ** 2 for r in all_rewards) / len(all_rewards))
        report.variance_share = self.seeds_with_variance / seeds if seeds else 0.0
        self._variance(min_variance_share)
        for i, hits in enumerate(rule_hits):
            if not hits and all_rewards:
                why, hint = _never_why(self.cap, i, self.forbid_why, rule_hits, seeds)
                log.add(f"level:{i}", "error", "C115",
                        f"level {self.cap.rules[i].level:g} ({_fmt_rule(self.cap, i)}) is never "
                        f"reached by any probe: {why}", self.where_map.rule(i), hint=hint)

    def _variance(self, min_variance_share: float) -> None:
        report, all_rewards = self.report, self.all_rewards
        first_rule = self.where_map.rule(0)
        if all_rewards and report.reward_std <= TOL:
            self.log.add("variance", "error", "C116", f"no reward variance: every probe gets "
                         f"{all_rewards[0]:.2f}; the spec cannot tell good from bad behaviour",
                         first_rule,
                         hint="give the ladder rungs that the oracle and a do-nothing agent reach apart")
        elif all_rewards and report.variance_share < min_variance_share:
            self.log.add("variance-share", "error", "C117",
                         f"only {report.variance_share:.0%} of seeds give >= 2 distinct rewards (need "
                         f"{min_variance_share:.0%})", first_rule)


def _finish(report: CheckReport, log: FindingLog, problems: ProblemLog, notes: list[str],
            start: float) -> CheckReport:
    findings = log.findings()
    report.findings = [f.model_dump() for f in findings]
    report.problems = [f.rendered for f in findings if f.severity == "error"]
    report.warnings = list(notes) + [f.rendered for f in findings if f.severity == "warning"]
    report.seconds = round(time.perf_counter() - start, 3)
    return report


def _mismatch(log: FindingLog, where_map: SpecMap, cap: Capability, task: str, probe: Any,
              ep: Any, want: float, want_rule: int | None, seed: int,
              refused: tuple[int, str] | None) -> None:
    span = where_map.rule(want_rule)
    why = ""
    if ep.ended_by == "max_turns":
        why = (f" (episode truncated at max_turns: the probe needs {len(probe.turns)} turns, "
               f"max_turns is {cap.max_turns})")
        span = where_map.max_turns or span
    elif refused is not None:
        call = probe.calls[refused[0]]
        why = f" (its call {_call_text(call)} was refused: {refused[1]})"
        span = where_map.gold(task, call.name) or span
    log.add(f"mismatch:{task}:{probe.name}", "error", "C110",
            f"task `{task}`, probe {probe.name}: the rules promise {want:.2f} "
            f"({_fmt_rule(cap, want_rule)}) but the env gave {ep.reward:.2f} "
            f"({_fmt_rule(cap, ep.rule)}){why}, first at seed {seed}", span, task=task, seed=seed)


def _oracle_why(where_map: SpecMap, cap: Capability, task: str, probe: Any, ep: Any,
                refused: tuple[int, str] | None) -> tuple[Any, str]:
    if ep.ended_by == "max_turns":
        why = (f": truncated at max_turns ({len(probe.turns)} turns needed, max_turns is "
               f"{cap.max_turns})")
        return where_map.max_turns or where_map.task(task), why
    if refused is not None:
        call = probe.calls[refused[0]]
        return (where_map.gold(task, call.name) or where_map.task(task),
                f": its call {_call_text(call)} was refused: {refused[1]}")
    return where_map.rule(0) or where_map.task(task), ": the top rule's condition does not hold"


def _echo_paid(log: FindingLog, where_map: SpecMap, cap: Capability, task: str, probe: Any,
               ep: Any, silent: float, top: float, seed: int) -> None:
    pasted = "the raw tool outputs in <tool_response> markup" if probe.name == "echo" \
        else "the raw tool outputs"
    paid = (f"task `{task}`, probe {probe.name}: pasting {pasted} back gets {ep.reward:.2f} "
            f"({_fmt_rule(cap, ep.rule)}), more than the silent gold calls ({silent:.2f}), "
            f"first at seed {seed}: ")
    paid_finding(log, f"echo:{task}:{probe.name}", cap.communicate_raw, where_map.rule(ep.rule),
                 paid, task, seed, raw_code="C320",
                 raw_why="`communicate raw` pays an agent for echoing tool output",
                 code="C120", why="the rule pays for an echo",
                 hint="a rule reached by an echo must need what the agent says in its own words")


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
