"""A variant's check shares its base's (`tracec check` of a base env and its variants).

A spec's `variant NAME { ... }` compiles to a subclass of the base's env whose `Capability`
differs only in its name and prompt budget (the tools shown, the policy, the schemas' form):
the same world generation, tasks and rules. What a check of the base found on those holds
for the variant too, so only what the budget can change is checked again:

* what the agent is shown: gymnasium's ``check_env`` on the variant's class, target fidelity
  of its tools, the prompt size (C302, by the CLI), hints that name a tool it hides (C153) and
  policy sections its tasks rely on that it drops (C154): the checks of :data:`OWN_CHECKS`;
* the probes (and determinism, meaning, gold checks, repeats) are the base's when every tool
  the base's probes called (its gold and forbidden calls, ``CheckReport.probe_tools``) is the
  same tool in the variant: the episodes are then the same, step for step.

Otherwise (a hidden forbidden tool, a hand-written subclass that changes behaviour, another
seed count, a base that failed at reset) the variant is checked in full. Shared findings
keep their spec lines: they are the base's spec lines, where the variant's code comes from.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any

from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.checks.env_checks import EnvChecker
from tracec.checks.fidelity import fidelity
from tracec.checks.locate import SpecMap
from tracec.checks.policy_sections import PolicySections
from tracec.checks.prompt_complete import PromptComplete
from tracec.checks.report import CheckReport, FindingLog
from tracec.checks.run import Progress, run_checks
from tracec.harness.resolve import env_class
from tracec.runtime.env import CapabilityEnv

# `Capability` fields a variant sets (its name and prompt budget)
BUDGET = frozenset({"name", "tool_names", "policy_sections", "policy", "compact_tools"})
# the checks of what the env shows (hints that name a hidden tool, policy sections the tasks
# rely on): run again on the variant, on each task's first instance
OWN_CHECKS: tuple[type[Check], ...] = (PromptComplete, PolicySections)
# findings that depend on what the env shows: never shared, the variant's own are made
OWN_CODES = frozenset({"C302"}.union(*(c.codes for c in OWN_CHECKS)))
# findings of a base that failed at reset: its probes are incomplete, share nothing
RESET_CODES = frozenset({"C102", "R100"})
# what a class that only sets its capability has in its namespace
_PLAIN = frozenset({"capability", "__module__", "__doc__", "__qualname__", "__firstlineno__",
                    "__parameters__", "__static_attributes__"})

# the prompt-size fields (measured per env by the CLI): not the base's
_NO_PROMPT = {"prompt_tokens": None, "prompt_tool_tokens": None, "prompt_tokens_full": None,
              "prompt_tokens_compact": None, "prompt_tools": None, "prompt_method": "",
              "prompt_budget": None}

Checked = list[tuple[type[CapabilityEnv], CheckReport]]


def budget_variant(cls: type, base: type) -> bool:
    """``cls`` is ``base``'s env with another name and prompt budget, and nothing else."""
    if not isinstance(cls, type) or cls.__mro__[1:2] != (base,):  # a direct subclass
        return False
    if set(vars(cls)) - _PLAIN:  # overrides more than its capability
        return False
    cap, base_cap = cls.capability, base.capability
    return all(getattr(cap, f.name) == getattr(base_cap, f.name)
               for f in dataclasses.fields(cap) if f.name not in BUDGET)


def why_not_shared(cls: type, base: type, report: CheckReport, seeds: int) -> str | None:
    """Why ``cls`` cannot share the check ``report`` of ``base`` (None: it can)."""
    if not budget_variant(cls, base):
        return "not a prompt-budget variant of it"
    if report.seeds != seeds:
        return f"checked on {report.seeds} seeds, not {seeds}"
    if any(f["code"] in RESET_CODES for f in report.findings):
        return "it failed at reset"
    shown, base_shown = cls.capability.all_tools(), base.capability.all_tools()
    for name in report.probe_tools:
        if name not in shown or shown[name] is not base_shown.get(name):
            return f"the probes call `{name}`, which it does not show alike"
    return None


def check_sharing(module: Any, checked: Checked, seeds: int, check_env: bool,
                  progress: Progress | None = None) -> CheckReport:
    """``run_checks`` of ``module``, or for a variant of an env in ``checked`` (the envs
    checked so far, with their reports) only what its prompt budget changes; adds it to
    ``checked``."""
    cls = env_class(module)
    for base, report in checked:
        if why_not_shared(cls, base, report, seeds) is None:
            out = variant_report(cls, report, check_env)
            if progress:
                progress(seeds)
            break
    else:
        out = run_checks(module, seeds=seeds, check_env=check_env, progress=progress)
    checked.append((cls, out))
    return out


def _own(finding: dict) -> bool:
    """A finding about what the base env shows (its prompt, hints, ``check_env``)."""
    return finding["code"] in OWN_CODES or (finding["code"] == "C101"
                                            and finding["message"].startswith("check_env"))


def variant_report(cls: type[CapabilityEnv], base: CheckReport, check_env: bool) -> CheckReport:
    """The report of variant ``cls``: ``base``'s shared findings and figures, with its own
    ``check_env``, fidelity and :data:`OWN_CHECKS` (what the agent is shown)."""
    start = time.perf_counter()
    cap = cls.capability
    where = SpecMap(cap, getattr(sys.modules.get(cls.__module__), "__file__", None))
    log = FindingLog(where)
    report = base.model_copy(deep=True, update={"env": cap.name, "module": cls.__module__,
                                                "shared_with": base.env, "check_env": None,
                                                **_NO_PROMPT})
    run = RunContext(cls, where, log, report, report.seeds, 0.0, check_env, cls())
    EnvChecker(run).start()  # sets report.check_env when it runs
    own = [c(run) for c in OWN_CHECKS]
    for task in report.tasks:  # the first instance of each task, as the base's check saw it
        run.env.reset(seed=0, options={"task": task})
        ctx = InstanceContext(run, 0, set())
        for check in own:
            check.instance(ctx)
    report.fidelity = fidelity(run.env).model_dump()
    notes = run.notes
    shared = [f for f in base.findings if not _own(f)]
    report.findings = shared + [f.model_dump() for f in log.findings()]
    report.problems = [f["rendered"] for f in report.findings if f["severity"] == "error"]
    report.warnings = notes + [f["rendered"] for f in report.findings
                               if f["severity"] == "warning"]
    report.seconds = round(time.perf_counter() - start, 3)
    return report
