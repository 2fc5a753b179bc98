"""No inert statements: forbids that change nothing or punish the gold are errors; unused
lets, punctuation-only reply keywords and unreachable code are warnings (exit 0, --werror)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from tests.lang.cases import BASE, mutate
from tracec.checks import run_checks
from tracec.checks.probes import build_probes
from tracec.cli import cli
from tracec.compiler.api import compile_text

FORBID_RULES = BASE.replace("  reward {\n", "  reward {\n    0.0 when forbidden_called\n")


def _diags(text: str):
    result = compile_text(text, "specs/demo.tracec")
    return result, result.rendered


def test_forbid_without_forbidden_called_rule_is_an_error() -> None:
    result, text = _diags(mutate("communicate total", "communicate total\n    forbid cancel_reservation"))
    assert not result.ok
    assert "specs/demo.tracec:14:12: error: `forbid cancel_reservation` changes nothing" in text
    assert "0.0 when forbidden_called" in text


def test_forbid_with_forbidden_called_rule_compiles() -> None:
    spec = FORBID_RULES.replace("communicate total", "communicate total\n    forbid cancel_reservation")
    result, text = _diags(spec)
    assert result.ok, text


def test_forbidding_a_gold_call_is_an_error() -> None:
    bare = FORBID_RULES.replace("communicate total",
                                "communicate total\n    forbid get_reservation_details")
    result, text = _diags(bare)
    assert not result.ok and "forbids a call the task's own gold makes" in text
    same = FORBID_RULES.replace(
        "communicate total",
        "communicate total\n    forbid get_reservation_details(reservation_id = r.reservation_id)")
    result, text = _diags(same)
    assert not result.ok
    # the error is at the gold call (line 12), the forbid it matches a note (line 14)
    assert ("specs/demo.tracec:12:12: error: this gold call matches "
            "`forbid get_reservation_details(reservation_id = r.reservation_id)`") in text
    assert "specs/demo.tracec:14:12: note: the forbid it matches" in text


def test_warnings_are_located_and_do_not_fail() -> None:
    spec = mutate("let total = sum", "let spare = len(users)\n    let total = sum").replace(
        "communicate total", 'communicate total\n    reply "Yes." when "confirm", "?"')
    spec = spec.replace("  reward {", "  tool noop(x: str) \"Echo.\" {\n    return x\n    let y = x\n  }\n  reward {")
    result, text = _diags(spec)
    assert result.ok, text
    assert "specs/demo.tracec:10:9: warning: `spare` is never used in task `look`" in text
    assert "warning: reply keyword '?' is only punctuation" in text
    assert "warning: unreachable: tool `noop` has already returned (line" in text
    codes = sorted(d.code for d in result.diagnostics if d.severity == "warning")
    assert codes == ["W300", "W301", "W302"]


def test_lets_used_only_by_reward_rules_or_distractors_are_used() -> None:
    result, text = _diags(BASE)
    assert "never used" not in text


def test_werror_fails_compile_on_warnings(tmp_path: Path) -> None:
    spec = tmp_path / "specs" / "demo.tracec"
    spec.parent.mkdir()
    spec.write_text(mutate("let total = sum", "let spare = len(users)\n    let total = sum"))
    out = tmp_path / "envs"
    runner = CliRunner()
    ok = runner.invoke(cli, ["compile", str(spec.parent), "-o", str(out)])
    assert ok.exit_code == 0, ok.output
    assert "warning: `spare` is never used" in ok.output
    strict = runner.invoke(cli, ["compile", str(spec.parent), "-o", str(tmp_path / "e2"), "--werror"])
    assert strict.exit_code == 1
    assert "have warnings (--werror)" in strict.output
    assert not (tmp_path / "e2").exists()


BARE = FORBID_RULES.replace(
    "communicate total", "communicate total\n    forbid cancel_reservation")


def test_bare_forbid_is_probed_with_gold_arguments() -> None:
    result = compile_text(BARE, "specs/demo.tracec")
    assert result.ok, result.rendered
    env = result.module.CAPABILITY
    from tracec.harness.resolve import env_class

    e = env_class(env)()
    e.reset(seed=1)
    probes = {p.name: p for p in build_probes(e.instance, e.toolbox.writes, e.toolbox.ends, e.toolbox.tools)}
    call = probes["forbidden"].calls[-1]
    gold = e.instance.gold[0]
    assert call.name == "cancel_reservation"
    assert call.args == {"reservation_id": gold.args["reservation_id"]}
    report = run_checks(result.module, seeds=8, check_env=False)
    assert report.passed, report.problems
    assert report.probe_means["forbidden"] == 0.0


def test_check_reports_a_forbid_that_does_not_lower_the_reward() -> None:
    # the forbidden call is made, but the top rule ignores it
    spec = BARE.replace("    0.0 when forbidden_called\n", "").replace(
        "    0.0 otherwise", "    0.5 when forbidden_called\n    0.0 otherwise")
    result = compile_text(spec, "specs/demo.tracec")
    assert result.ok, result.rendered
    report = run_checks(result.module, seeds=4, check_env=False)
    assert not report.passed
    assert any("the forbid does not lower the reward" in p for p in report.problems), report.problems
