"""`tracec check` as a list of check objects: the interface, the shared per-instance context,
the registry against docs/checks.md, and the size of the functions in tracec/checks."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import ClassVar

from tests.runtime import tiny_capability as tc
from tracec.checks import CHECKS, Check, InstanceContext, RunContext, run_checks
from tracec.checks.registry import RUNNER_CODES

ROOT = Path(__file__).resolve().parents[2]
SEEDS = 3


class Counting(Check):
    """A check that counts its steps and reports one warning per task (a contributor's check)."""

    name = "counting"
    codes = ("C999",)
    made: ClassVar[list[Counting]] = []

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        self.steps: list[str] = []
        self.played: list[int] = []  # probes played on each instance
        Counting.made.append(self)

    def start(self) -> None:
        self.steps.append("start")

    def instance(self, ctx: InstanceContext) -> None:
        assert ctx.env.instance is ctx.inst and ctx.inst.task == ctx.task
        self.steps.append(f"{ctx.seed}:{ctx.task}")
        assert ctx.results is ctx.results and ctx.plays is ctx.plays  # computed once
        self.played.append(len(ctx.plays))
        self.log.add(f"C999:{ctx.task}", "warning", "C999", f"task `{ctx.task}` seen",
                     self.where.task(ctx.task), task=ctx.task, seed=ctx.seed)

    def finish(self) -> None:
        self.steps.append("finish")


def test_a_listed_check_sees_every_instance_once_and_reports_last() -> None:
    Counting.made.clear()
    plain = run_checks(tc.TinyOrdersEnv, seeds=SEEDS, check_env=False)
    report = run_checks(tc.TinyOrdersEnv, seeds=SEEDS, check_env=False,
                        checks=(*CHECKS, Counting, Counting))
    first, second = Counting.made
    tasks = [t.name for t in tc.CAPABILITY.tasks]
    assert first.steps == ["start", *(f"{s}:{t}" for s in range(SEEDS) for t in tasks), "finish"]
    assert first.steps == second.steps
    # the probes played once per instance, shared by both checks and the runner's figures
    assert report.probe_runs == plain.probe_runs == sum(first.played)
    assert report.probe_means == plain.probe_means and report.rule_hits == plain.rule_hits
    # its findings come after the listed checks' ones, folded over seeds (two checks, one key)
    assert report.findings[:len(plain.findings)] == plain.findings
    extra = report.findings[len(plain.findings):]
    assert [(f["code"], f["task"]) for f in extra] == [("C999", t) for t in tasks]
    assert extra[0]["message"] == f"task `{tasks[0]}` seen ({2 * SEEDS} times)"


def test_without_checks_the_probes_still_give_the_reward_figures() -> None:
    full = run_checks(tc.TinyOrdersEnv, seeds=SEEDS, check_env=False)
    bare = run_checks(tc.TinyOrdersEnv, seeds=SEEDS, check_env=False, checks=())
    assert bare.findings == [] and bare.check_env is None and not bare.determinism
    assert (bare.probe_runs, bare.probe_means, bare.rule_hits, bare.variance_share) == (
        full.probe_runs, full.probe_means, full.rule_hits, full.variance_share)
    assert bare.probe_runs > 0


def test_every_check_is_named_and_claims_its_codes() -> None:
    assert all(issubclass(c, Check) and c.name and c.codes for c in CHECKS)
    assert len({c.name for c in CHECKS}) == len(CHECKS)
    assert all(re.fullmatch(r"[CR]\d{3}", code) for c in CHECKS for code in c.codes)


def test_the_documented_codes_are_the_checks_codes() -> None:
    """docs/checks.md's table of codes lists exactly what the checks, the runner and the
    first-prompt budget of the CLI (C302) report."""
    text = (ROOT / "docs/checks.md").read_text(encoding="utf-8")
    documented = {code for row in re.findall(r"^\| ([CR]\d{3}(?:, [CR]\d{3})*) \|", text, re.MULTILINE)
                  for code in row.split(", ")}
    claimed = {code for c in CHECKS for code in c.codes} | set(RUNNER_CODES) | {"C302"}
    assert documented == claimed


def test_no_function_in_checks_is_over_80_lines() -> None:
    long = []
    for path in sorted((ROOT / "tracec/checks").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > 80:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert long == []
