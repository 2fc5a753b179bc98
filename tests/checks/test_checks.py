"""Offline checks (`run_checks`, `tracec check`) on the tiny fixture and deliberately broken variants."""

from __future__ import annotations

import dataclasses
import json

import pytest
from click.testing import CliRunner

from tests.runtime import tiny_capability as tc
from tracec.checks.cli import check_cmd
from tracec.checks.run import run_checks
from tracec.runtime.env import Call, Rule, TaskDef, TaskInstance

FIXTURE = "tests/runtime/tiny_capability.py"


def variant(**changes):
    return dataclasses.replace(tc.CAPABILITY, **changes)


def test_fixture_passes_with_expected_statistics():
    report = run_checks(tc.TinyOrdersEnv, seeds=6)
    assert report.passed, report.problems
    assert report.check_env and report.determinism and report.probes
    assert report.probe_means["oracle"] == 1.0 and report.probe_means["noop"] == 0.0
    assert report.probe_means["forbidden"] == 0.0  # the refund is forbidden in `cancel`
    assert report.levels_reached == report.levels_total == 3 and all(report.rule_hits)
    assert report.variance_share == 1.0 and report.reward_std > 0.3
    assert report.distractors == {"twin": 6}  # only order_total declares it, once per seed
    # 2 tasks x 6 seeds; order_total has 6 probes (4 + the two echoes; no forbid), cancel 8
    # (+ forbidden after the gold calls and in place of the last gold write)
    assert report.probe_runs == 6 * (6 + 8)
    assert report.probe_means["forbidden_instead"] == 0.0


def test_rewarding_doing_nothing_is_reported():
    rules = (Rule(1.0, "communicated(must)", lambda o: o.state_matches and o.communicated(*o.v["must"])),
             Rule(0.3, "state_matches", lambda o: o.state_matches),
             Rule(0.0, "otherwise", lambda o: True))
    report = run_checks(variant(rules=rules), seeds=3, check_env=False)
    assert not report.passed
    assert any("task `order_total`: doing nothing gets 0.30" in p for p in report.problems)


def test_unreachable_level_is_reported():
    rules = (tc.RULES[0], Rule(0.7, "called(note)", lambda o: o.called("note")), *tc.RULES[1:])
    report = run_checks(variant(rules=rules), seeds=3, check_env=False)
    assert report.levels_reached == 3 and report.levels_total == 4
    assert any("level 0.7" in p and "never reached" in p for p in report.problems)


def test_no_variance_is_reported():
    report = run_checks(variant(rules=(Rule(1.0, "otherwise", lambda o: True),)), seeds=3, check_env=False)
    assert report.reward_std == 0.0
    assert any("no reward variance" in p for p in report.problems)


def test_failing_gold_action_is_reported():
    def bad(rng, db, v):
        return TaskInstance("bad", "hi", gold=[Call("cancel_order", {"order_id": "nope", "reason": "no longer needed"})])
    cap = variant(tasks=(*tc.CAPABILITY.tasks, TaskDef("bad", 1.0, bad)))
    report = run_checks(cap, seeds=2, check_env=False)
    assert any("task `bad`" in p and "gold action cancel_order" in p and "Order not found" in p
               for p in report.problems)


def test_too_few_turns_show_as_a_probe_mismatch():
    report = run_checks(variant(max_turns=1), seeds=2, check_env=False)
    assert not report.probes
    assert any("probe oracle" in p and "truncated at max_turns" in p for p in report.problems)


def test_cli_json_on_fixture_module():
    result = CliRunner().invoke(check_cmd, [FIXTURE, "--seeds", "3", "--json"])
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.stdout)
    assert report["env"] == "tiny_orders" and report["passed"] and report["levels_reached"] == 3


def test_cli_table_and_failure_exit(tmp_path):
    broken = tmp_path / "broken_env.py"
    broken.write_text(
        "import dataclasses\n"
        "from tests.runtime import tiny_capability as tc\n"
        "from tracec.runtime.env import CapabilityEnv, Rule\n"
        "CAPABILITY = dataclasses.replace(tc.CAPABILITY, name='broken', "
        "rules=(Rule(1.0, 'otherwise', lambda o: True),))\n"
        "class BrokenEnv(CapabilityEnv):\n    capability = CAPABILITY\n"
    )
    result = CliRunner().invoke(check_cmd, [FIXTURE, str(broken), "--seeds", "2", "--no-env-checker"])
    assert result.exit_code == 1
    assert "tiny_orders" in result.output and "broken" in result.output
    assert "no reward variance" in result.output and "1 of 2 environments failed" in result.output


def test_cli_bad_paths_are_clean_errors(tmp_path):
    result = CliRunner().invoke(check_cmd, [str(tmp_path / "missing.py")])
    assert result.exit_code == 1 and "no such file" in result.output
    (tmp_path / "notes.txt").write_text("x")
    result = CliRunner().invoke(check_cmd, [str(tmp_path / "notes.txt")])
    assert result.exit_code == 1 and "expected a generated .py module" in result.output
    assert "Traceback" not in result.output


def test_cli_spec_compile_failure_prints_diagnostics(tmp_path):
    spec = tmp_path / "x.tracec"
    spec.write_text("capability x {}")
    result = CliRunner().invoke(check_cmd, [str(spec)])
    assert result.exit_code == 1 and "x.tracec:1:12: error: capability `x` names no domain" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("seeds", [1])
def test_seeded_determinism_failure_is_detected(seeds):
    counter = {"n": 0}

    def flaky(rng, db, v):  # uses state outside the rng: not reproducible
        counter["n"] += 1
        inst = tc.task_order_total(rng, db, v)
        return dataclasses.replace(inst, user=inst.user + f" ({counter['n']})")
    report = run_checks(variant(tasks=(TaskDef("order_total", 1.0, flaky),)), seeds=seeds, check_env=False)
    assert not report.determinism
    assert any("determinism" in p for p in report.problems)
