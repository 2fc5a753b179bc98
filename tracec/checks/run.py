"""``run_checks``: offline checks of one capability environment (no model needed)."""

from __future__ import annotations

import math
import re
import time
import warnings
from collections.abc import Callable
from typing import Any

from gymnasium.utils.env_checker import check_env as gym_check_env

from tracec.checks.fidelity import fidelity
from tracec.checks.probes import build_probes, expected, run_turns
from tracec.checks.report import CheckReport, ProblemLog
from tracec.core.gcpause import old_objects_frozen
from tracec.harness.resolve import env_class
from tracec.runtime.env import Capability, CapabilityEnv, SpecRuntimeError
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
                probe = build_probes(env.instance, env._box.writes, env._box.ends)[0]
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


def run_checks(
    capability: Any,
    seeds: int = 64,
    check_env: bool = True,
    progress: Progress | None = None,
    min_variance_share: float = MIN_VARIANCE_SHARE,
) -> CheckReport:
    """Check one env: check_env, determinism, probes on every task and seed, reward variance."""
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
    problems = ProblemLog()
    notes: list[str] = []
    report = CheckReport(env=cap.name, module=cls.__module__, tasks=[t.name for t in cap.tasks],
                         seeds=seeds, levels_total=len(cap.rules))
    if not cap.tasks:
        report.problems = ["the capability declares no task"]
        return report
    if check_env:
        report.check_env = _check_env(cls, problems, notes)
    report.determinism = _check_determinism(cls, list(range(min(seeds, 3))), problems)

    levels = cap.levels
    top, bottom = max(levels), min(levels)
    rule_hits = [0] * len(cap.rules)
    all_rewards: list[float] = []
    by_probe: dict[str, list[float]] = {}
    seeds_with_variance = 0
    probes_ok = True
    env = cls()
    hint_leaks: dict[str, str] = {}
    for seed in range(seeds):
        seed_rewards: set[float] = set()
        for tdef in cap.tasks:
            where = f"task `{tdef.name}`"
            try:
                env.reset(seed=seed, options={"task": tdef.name})
            except SpecRuntimeError as exc:
                problems.add(f"spec:{tdef.name}", str(exc))
                probes_ok = False
                continue
            inst = env.instance
            if tdef.name not in hint_leaks:
                leak = hint_leak(inst)
                if leak:
                    hint_leaks[tdef.name] = f"task `{tdef.name}`: {leak} (seed {seed})"
            for name in inst.distractors:
                report.distractors[name] = report.distractors.get(name, 0) + 1
            probes = build_probes(inst, env._box.writes, env._box.ends, env._box.tools, rotate=seed)
            for f in inst.forbid:
                hit = next((g for g in inst.gold if g.name == f.name and args_match(f.args, g.args or {})), None)
                if hit is not None:
                    probes_ok = False
                    problems.add(f"forbid-gold:{tdef.name}:{f.name}",
                                 f"{where}: `forbid {f.name}` matches the gold call "
                                 f"{hit.name}({', '.join(f'{k}={v!r}' for k, v in (hit.args or {}).items())}), "
                                 f"first at seed {seed}: the expert would be punished")
            promised = [expected(env, probe) for probe in probes]
            for k, (probe, (want, want_rule)) in enumerate(zip(probes, promised)):
                if k:
                    env.restart()
                ep = run_turns(env, probe.turns)
                report.probe_runs += 1
                all_rewards.append(ep.reward)
                seed_rewards.add(round(ep.reward, 6))
                by_probe.setdefault(probe.name, []).append(ep.reward)
                if ep.rule is not None:
                    rule_hits[ep.rule] += 1
                for bug in ep.tool_bugs:
                    problems.add(f"bug:{bug}", f"domain bug in {where}, probe {probe.name}: {bug}")
                if abs(ep.reward - want) > TOL:
                    probes_ok = False
                    why = " (episode truncated at max_turns)" if ep.ended_by == "max_turns" else ""
                    problems.add(
                        f"mismatch:{tdef.name}:{probe.name}",
                        f"{where}, probe {probe.name}: the rules promise {want:.2f} ({_fmt_rule(cap, want_rule)}) "
                        f"but the env gave {ep.reward:.2f} ({_fmt_rule(cap, ep.rule)}){why}, first at seed {seed}",
                    )
                if probe.name.startswith("forbidden") and ep.reward >= top - TOL \
                        and probe.calls[-1] in env.calls:
                    probes_ok = False
                    problems.add(f"forbid-inert:{tdef.name}:{probe.name}",
                                 f"{where}, probe {probe.name}: the gold actions plus the forbidden "
                                 f"call {probe.calls[-1].name} still get the top level {top:.2f}; "
                                 f"the forbid does not lower the reward, first at seed {seed}")
                if probe.name == "oracle" and abs(ep.reward - top) > TOL:
                    probes_ok = False
                    problems.add(f"oracle:{tdef.name}",
                                 f"{where}: the oracle (gold actions + report) gets {ep.reward:.2f}, "
                                 f"not the top level {top:.2f}, first at seed {seed}")
                if probe.name == "noop" and abs(ep.reward - bottom) > TOL:
                    probes_ok = False
                    problems.add(f"noop:{tdef.name}",
                                 f"{where}: doing nothing gets {ep.reward:.2f} ({_fmt_rule(cap, ep.rule)}), "
                                 f"not the bottom level {bottom:.2f}, first at seed {seed}")
        if len(seed_rewards) >= 2:
            seeds_with_variance += 1
        if progress:
            progress(1)

    report.probes = probes_ok
    report.rule_hits = rule_hits
    report.levels_reached = sum(1 for h in rule_hits if h)
    report.probe_means = {k: round(sum(v) / len(v), 4) for k, v in by_probe.items()}
    if all_rewards:
        mean = sum(all_rewards) / len(all_rewards)
        report.reward_mean = mean
        report.reward_std = math.sqrt(sum((r - mean) ** 2 for r in all_rewards) / len(all_rewards))
    report.variance_share = seeds_with_variance / seeds if seeds else 0.0
    if all_rewards and report.reward_std <= TOL:
        problems.add("variance", f"no reward variance: every probe gets {all_rewards[0]:.2f}; "
                                 "the spec cannot tell good from bad behaviour")
    elif all_rewards and report.variance_share < min_variance_share:
        problems.add("variance-share", f"only {report.variance_share:.0%} of seeds give >= 2 distinct "
                                       f"rewards (need {min_variance_share:.0%})")
    for i, hits in enumerate(rule_hits):
        if not hits and all_rewards:
            problems.add(f"level:{i}", f"level {cap.rules[i].level:g} ({_fmt_rule(cap, i)}) is never "
                                       "reached by any probe")
    report.problems = problems.messages()
    report.warnings = notes + [f"hint leak: {w}" for w in hint_leaks.values()]
    report.fidelity = fidelity(env).model_dump()
    report.seconds = round(time.perf_counter() - start, 3)
    return report
