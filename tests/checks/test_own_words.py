"""`tracec check`'s own-words probes: the shotgun (every possible value listed) and the echo
reach no more than the silent gold calls; C121/C321 when the rules pay them (issue 27)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from tests.checks.test_located import FLIGHT, check, finding, line_of
from tracec.checks.cli import check_cmd
from tracec.checks.own_words import shotgun_text
from tracec.runtime.outcome import Outcome, mentioned
from tracec.runtime.rivals import Rivals


def test_shotgun_text_lists_each_value_with_its_rivals() -> None:
    r = Rivals({}, {"d": {"status": ("landed", "delayed", "on time")}})
    text = shotgun_text(["landed"], r)
    assert text == "It is one of these: landed, delayed, on time."
    assert shotgun_text([12.5], r) is None  # nothing to list beside a number


def test_shotgun_and_echo_reach_only_the_calls_rung() -> None:
    report = check(FLIGHT)
    assert report.passed, report.problems
    assert report.probe_means["shotgun"] == 0.3 == report.probe_means["silent_gold"]
    calls_rung = "rule 2 `0.3 when progress == 1`"
    for probe in ("shotgun", "echo", "echo_bare"):
        assert set(report.probe_rungs[probe]) == {calls_rung}, report.probe_rungs


def test_communicate_raw_pays_the_shotgun_and_check_says_where() -> None:
    spec = FLIGHT.replace("  max_turns 4\n", "  max_turns 4\n  communicate raw\n")
    f = finding(check(spec), "C321")
    assert f["severity"] == "warning" and f["line"] == line_of(spec, "1.0 when progress")
    assert "listing every possible value gets 1.00" in f["message"]


def test_a_rule_that_a_shotgun_games_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # the pre-issue-27 rule: a mention anywhere is enough
    monkeypatch.setattr(Outcome, "communicated",
                        lambda self, *vals: all(mentioned(v, self.texts) for v in vals))
    report = check(FLIGHT)
    f = finding(report, "C121")
    assert f["severity"] == "error" and f["line"] == line_of(FLIGHT, "1.0 when progress")
    assert "the rule pays for a list of guesses" in f["message"] and not report.passed


def test_check_prints_where_the_own_words_probes_land() -> None:
    res = CliRunner().invoke(check_cmd, ["benchmarks/learning/generated/flight_status_compact.py",
                                         "--seeds", "4"])
    assert res.exit_code == 0, res.output
    line = next(ln for ln in res.output.splitlines() if "own words:" in ln)
    assert "shotgun -> rule 2 `0.3 when progress == 1` (8)" in line
    assert "echo -> rule 2 `0.3 when progress == 1` (8)" in line
