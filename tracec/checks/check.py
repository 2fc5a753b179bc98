"""The one interface of `tracec check`'s checks and the contexts they share.

A check is a :class:`Check` subclass listed in :data:`tracec.checks.registry.CHECKS`. For one
env, :func:`tracec.checks.run.run_checks` builds each listed check once with the run's
:class:`RunContext`, then calls, every check in list order at each step:

* :meth:`Check.start` once, before the first instance (capability-wide checks);
* :meth:`Check.instance` on every drawn (seed, task) instance, with an :class:`InstanceContext`:
  the env just reset on it, and what several checks read, computed once on first use (the gold
  calls' tool outputs, the probes, the probes' episodes);
* :meth:`Check.finish` once, after the last instance (what needs every seed).

A check reports through ``run.log`` (:class:`tracec.checks.report.FindingLog`: a repeat of one
key is folded into a count on its first example, and findings keep the order of their first
report, so the list order is the order of the report).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

from tracec.checks.fork import GoldFork
from tracec.checks.locate import SpecMap
from tracec.checks.own_words import rungs, shotgun_probe
from tracec.checks.probes import Probe, build_probes, expected
from tracec.checks.report import CheckReport, FindingLog
from tracec.runtime.env import Capability, CapabilityEnv, TaskInstance

TOL = 1e-6


def fmt_rule(cap: Capability, index: int | None) -> str:
    """``rule N `text``` for a rule index, ``no rule`` for None (as findings quote a rung)."""
    if index is None:
        return "no rule"
    return f"rule {index + 1} `{cap.rules[index].text}`"


def reads_forbidden(cap: Capability, index: int | None) -> bool:
    """Rule ``index`` pays a forbidden call: its condition reads `forbidden_called`, not negated
    (`0.5 when forbidden_called and progress == 1`)."""
    if index is None or not 0 <= index < len(cap.rules):
        return False
    return re.search(r"(?<!\bnot )\bforbidden_called\b", cap.rules[index].text) is not None


@dataclass
class ProbeStats:
    """The probes' rewards over the run, as :attr:`InstanceContext.plays` records them."""

    rule_hits: list[int]  # per rule: probe episodes it decided
    rewards: list[float] = field(default_factory=list)
    by_probe: dict[str, list[float]] = field(default_factory=dict)
    seeds_with_variance: int = 0  # seeds whose probes gave >= 2 distinct rewards
    runs: int = 0

    def fill(self, report: CheckReport, seeds: int) -> None:
        """The report's reward figures: rule hits, levels reached, means, std, variance share."""
        rewards = self.rewards
        report.rule_hits = self.rule_hits
        report.levels_reached = sum(1 for h in self.rule_hits if h)
        report.probe_means = {k: round(sum(v) / len(v), 4) for k, v in self.by_probe.items()}
        if rewards:
            mean = sum(rewards) / len(rewards)
            report.reward_mean = mean
            report.reward_std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / len(rewards))
        report.variance_share = self.seeds_with_variance / seeds if seeds else 0.0


@dataclass
class RunContext:
    """What every check of one env's run shares."""

    cls: type[CapabilityEnv]
    where: SpecMap
    log: FindingLog
    report: CheckReport
    seeds: int
    min_variance_share: float
    check_env: bool  # run gymnasium's check_env
    env: CapabilityEnv  # the env every instance is reset on
    notes: list[str] = field(default_factory=list)  # check_env's warnings, for the report
    probes_ok: bool = True  # every probe landed where the rules promise (``report.probes``)
    # (task, forbid index) -> why its forbidden call did nothing, the first reason seen
    forbid_why: dict[tuple[str, int], str] = field(default_factory=dict)
    # the keys of ``forbid_why`` whose forbidden call the env refused (its arguments are wrong)
    forbid_refused: set[tuple[str, int]] = field(default_factory=set)
    # the tools the probes call (gold and forbidden calls): a variant that shows them alike
    # shares this check (``report.probe_tools``, tracec.checks.variants)
    probe_tools: set[str] = field(default_factory=set)
    stats: ProbeStats = field(init=False)

    def __post_init__(self) -> None:
        self.stats = ProbeStats([0] * len(self.cap.rules))

    @property
    def cap(self) -> Capability:
        return self.cls.capability


@dataclass
class Play:
    """One probe on one instance: the episode (None when the probe could not be built, see
    ``probe.why_not``), the reward and rule the rules promise it, and the calls it made."""

    probe: Probe
    ep: Any = None
    want: float = 0.0
    want_rule: int | None = None
    calls: list = field(default_factory=list)


class InstanceContext:
    """One drawn (seed, task) instance, the run's env just reset on it. ``results``,
    ``probes`` and ``plays`` are computed once, on first use; ``results`` and ``plays`` step
    the env (the gold calls' turns are played once, in :attr:`fork`, and the probes that start
    with them resume from there), so a check that reads the env's episode state must come
    before the first that reads them (the runner reads ``plays`` after the last check, for the
    reward figures)."""

    def __init__(self, run: RunContext, seed: int, seed_rewards: set[float]) -> None:
        self.run, self.seed, self.env = run, seed, run.env
        self.inst: TaskInstance = run.env.instance
        self.task: str = self.inst.task
        self._seed_rewards = seed_rewards  # every reward of this seed, over its tasks

    @cached_property
    def fork(self) -> GoldFork:
        """The gold calls' turns, played once for this instance and shared by the probes."""
        return GoldFork(self.env)

    @cached_property
    def results(self) -> list[str]:
        """The gold calls' tool outputs, from the shared gold turns (else a replay on a copy
        of the initial world)."""
        return self.fork.gold_results()

    @cached_property
    def probes(self) -> list[Probe]:
        """The probes of this instance (:mod:`tracec.checks.probes`, the shotgun last)."""
        box = self.env.toolbox
        results = self.results  # the gold turns, played first: their rendering is shared
        probes = build_probes(self.inst, box.writes, box.ends, box.tools, rotate=self.seed,
                              results=results, rendered=self.fork.rendered)
        shotgun = shotgun_probe(self.env)
        if shotgun is not None:
            probes.append(shotgun)
        return probes

    @cached_property
    def plays(self) -> list[Play]:
        """Every probe played on the restarted env, in order, its reward counted in the run's
        :class:`ProbeStats` and rungs."""
        env, run, stats, results = self.env, self.run, self.run.stats, self.results
        out = []
        probes = self.probes
        for i, probe in enumerate(probes):
            if probe.why_not:
                out.append(Play(probe))
                continue
            want, want_rule = expected(env, probe, results)
            ep = self.fork.play(probe, probes[i + 1:])  # from the shared gold turns when it can
            stats.runs += 1
            stats.rewards.append(ep.reward)
            self._seed_rewards.add(round(ep.reward, 6))
            stats.by_probe.setdefault(probe.name, []).append(ep.reward)
            if ep.rule is not None:
                stats.rule_hits[ep.rule] += 1
            rungs(run.report.probe_rungs, probe.name, fmt_rule(run.cap, ep.rule))
            out.append(Play(probe, ep, want, want_rule, env.calls))
        return out


class Check:
    """One check of `tracec check`: subclass it, set :attr:`name` and :attr:`codes`, override
    any of :meth:`start`, :meth:`instance` and :meth:`finish`, and list the class in
    :data:`tracec.checks.registry.CHECKS`."""

    name: ClassVar[str] = ""  # what the check looks at, in a few words
    codes: ClassVar[tuple[str, ...]] = ()  # every finding code it can report

    def __init__(self, run: RunContext) -> None:
        self.run, self.cap, self.where, self.log = run, run.cap, run.where, run.log
        # what the check is done with: the tasks (or task and tool, ...) it has judged or
        # reported, so that each is judged or reported once
        self.done: set[Any] = set()

    def first_of_task(self, task: str) -> bool:
        """Whether this is the first instance of ``task`` the check sees (and mark it done): a
        check judged once per task starts with ``if not self.first_of_task(inst.task): return``."""
        if task in self.done:
            return False
        self.done.add(task)
        return True

    def start(self) -> None:
        """Before the first instance: what the capability alone shows."""

    def instance(self, ctx: InstanceContext) -> None:
        """One drawn instance (the env just reset on it)."""

    def finish(self) -> None:
        """After the last instance: what needs every seed."""
