"""``run_checks``: offline checks of one capability environment (no model needed).

The runner resets the env on every (seed, task) instance and runs the checks of
:data:`tracec.checks.registry.CHECKS` over them (see :mod:`tracec.checks.check` for the
interface); it reports itself only what stops a check from starting: no task (C100) and a
reset that fails (C102, or R100 for a located run-time error).
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.checks.draw_contrast import DrawContrast
from tracec.checks.fidelity import fidelity
from tracec.checks.locate import SpecMap, nth_call
from tracec.checks.registry import CHECKS
from tracec.checks.report import CheckReport, FindingLog
from tracec.checks.reset_cause import reset_cause
from tracec.core.gcpause import old_objects_frozen
from tracec.harness.resolve import env_class
from tracec.runtime.env import GoldActionError, SpecRuntimeError

Progress = Callable[[int], None]  # called with the number of (seed, task) units just done

MIN_VARIANCE_SHARE = 0.5

_LOCATED = re.compile(r"^\S.*?:\d+:\d+: (?:error|warning): ", re.DOTALL)


def run_checks(
    capability: Any,
    seeds: int = 64,
    check_env: bool = True,
    progress: Progress | None = None,
    min_variance_share: float = MIN_VARIANCE_SHARE,
    checks: Sequence[type[Check]] = CHECKS,
) -> CheckReport:
    """Check one env: every check of ``checks`` (default: all, see
    :mod:`tracec.checks.registry`) over every task at seeds ``0..seeds-1``; every finding
    located in the spec (``report.findings``)."""
    with old_objects_frozen():  # thousands of short-lived worlds: keep the collector cheap
        return _run_checks(capability, seeds, check_env, progress, min_variance_share, checks)


def _run_checks(capability: Any, seeds: int, check_env: bool, progress: Progress | None,
                min_variance_share: float, checks: Sequence[type[Check]]) -> CheckReport:
    start = time.perf_counter()
    cls = env_class(capability)
    cap = cls.capability
    where = SpecMap(cap, getattr(sys.modules.get(cls.__module__), "__file__", None))
    log = FindingLog(where)
    report = CheckReport(env=cap.name, module=cls.__module__, tasks=[t.name for t in cap.tasks],
                         seeds=seeds, levels_total=len(cap.rules))
    if not cap.tasks:
        log.add("no-task", "error", "C100", f"{cap.name}: the capability declares no task",
                hint="add a `task NAME { ... }`")
        return _finish(report, log, [], start)
    run = RunContext(cls, where, log, report, seeds, min_variance_share, check_env, cls())
    active = [c(run) for c in checks]
    for check in active:
        check.start()
    per_instance = [c for c in active if type(c).instance is not Check.instance]
    draws = DrawContrast(where)
    for seed in range(seeds):
        _seed(run, per_instance, seed, draws)
        if progress:
            progress(1)
    _blame_draws(run, draws)
    report.probes = run.probes_ok
    report.probe_tools = sorted(run.probe_tools)
    report.probe_runs = run.stats.runs
    run.stats.fill(report, seeds)
    for check in active:
        check.finish()
    report.fidelity = fidelity(run.env).model_dump()
    return _finish(report, log, run.notes, start)


def _seed(run: RunContext, active: list[Check], seed: int, draws: DrawContrast) -> None:
    """Every task at ``seed`` through the ``active`` checks (those with an ``instance`` step);
    the seed counts for variance when it gave >= 2 rewards."""
    seed_rewards: set[float] = set()
    distractors = run.report.distractors
    for tdef in run.cap.tasks:
        if not _reset(run, seed, tdef.name, draws):
            continue
        ctx = InstanceContext(run, seed, seed_rewards)
        draws.ok(tdef.name, ctx.inst.values)
        run.probe_tools.update(c.name for c in (*ctx.inst.gold, *ctx.inst.forbid))
        for name in ctx.inst.distractors:
            distractors[name] = distractors.get(name, 0) + 1
        for check in active:
            check.instance(ctx)
        ctx.plays  # noqa: B018 - the probes play for the reward figures even if no check asked
    if len(seed_rewards) >= 2:
        run.stats.seeds_with_variance += 1


def _reset(run: RunContext, seed: int, task: str, draws: DrawContrast) -> bool:
    """Reset the run's env on (seed, task); a failure is a located finding (C102 or R100)."""
    try:
        run.env.reset(seed=seed, options={"task": task})
    except SpecRuntimeError as exc:
        text = str(exc)
        if _LOCATED.match(text):
            run.log.add_rendered(f"spec:{task}", text, seed=seed, task=task)
        else:
            span, cause, hint = (reset_cause(run.cap, run.where, exc)
                                 if isinstance(exc, GoldActionError) else (None, "", None))
            gold = re.search(r"gold action (\w+)\(", text)
            if span is None and isinstance(exc, GoldActionError) \
                    and 0 <= exc.index < len(exc.instance.gold):
                draws.fail(task, exc.instance.values, exc.instance.gold[exc.index].name,
                           nth_call(exc.instance.gold, exc.index))
            span = span or (run.where.gold(task, gold.group(1)) if gold else None)
            run.log.add(f"spec:{task}", "error", "C102", text + cause, span, task=task, seed=seed,
                        hint=hint)
        run.probes_ok = False
        return False
    return True


def _blame_draws(run: RunContext, draws: DrawContrast) -> None:
    """A C102 left at its gold call, failing on some seeds only: at the `pick` whose drawn
    record tells the failing seeds from the passing ones (:mod:`tracec.checks.draw_contrast`)."""
    for task in draws.failed:
        found = draws.cause(task)
        if found is None:
            continue
        name, span, field, value = found
        run.log.amend(f"spec:{task}", span,
                      f" (`let {name}` draws a record with {field} = {value!r} on every seed "
                      f"the call fails on, and never on those it passes)",
                      f"pick only records the call accepts: add `x.{field} != {value!r}` (or "
                      f"the condition behind it) to the filter of `let {name}`")


def _finish(report: CheckReport, log: FindingLog, notes: list[str], start: float) -> CheckReport:
    findings = log.findings()
    report.findings = [f.model_dump() for f in findings]
    report.problems = [f.rendered for f in findings if f.severity == "error"]
    report.warnings = list(notes) + [f.rendered for f in findings if f.severity == "warning"]
    report.seconds = round(time.perf_counter() - start, 3)
    return report
