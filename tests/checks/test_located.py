"""`tracec check` findings: located at the spec line concerned, explained, one per code.

Each test is a golden: a small spec with one author mistake, and the finding `tracec check`
must print for it (`path:line:col: severity: ...`, code, seed).
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.lang.cases import mutate
from tracec.checks import run_checks
from tracec.checks.cli import check_cmd
from tracec.checks.probes import build_probes
from tracec.compiler.api import compile_text
from tracec.domains import get_domain
from tracec.domains.describe import describe, describe_text
from tracec.runtime.env import Call, TaskInstance
from tracec.runtime.outcome import mentioned, own_words, spoken

PATH = "specs/demo.tracec"
LOCATED = re.compile(r"^\S[^\n]*?:\d+:\d+: (error|warning): ")


def check(spec: str, seeds: int = 3):
    result = compile_text(spec, PATH)
    assert result.ok, result.rendered
    return run_checks(result.module, seeds=seeds, check_env=False)


def finding(report, code: str) -> dict:
    hits = [f for f in report.findings if f["code"] == code]
    assert hits, [(f["code"], f["message"]) for f in report.findings]
    return hits[0]


def line_of(spec: str, text: str) -> int:
    return next(n for n, line in enumerate(spec.splitlines(), 1) if text in line)


# ---------------------------------------------------------------- the agent's own words


def test_own_words_drop_tool_markup_and_pasted_results() -> None:
    assert own_words("<tool_response>\nlanded\n</tool_response>", ["landed"]).strip() == ""
    assert own_words("landed", ["landed"]) == ""  # the bare tool result pasted back
    assert own_words("Landed.\nscheduled", ["landed", "scheduled"]) == ""
    assert own_words('{"a": 1}', ['{"a": 1}']).strip() == ""
    assert own_words('Here: {"a": 1} so it landed', ['{"a": 1}']).split() == ["Here:", "so", "it", "landed"]
    assert "landed" in own_words("Your flight has landed.", ["landed"])
    assert own_words('<tool_call>{"name": "x"}</tool_call> it landed', []).strip() == "it landed"
    assert own_words("<tool_response>landed", []).strip() == ""  # unclosed: to the end
    texts = ["<tool_response>\nlanded\n</tool_response>"]
    assert not mentioned("landed", spoken(texts, ["landed"]))
    assert mentioned("landed", spoken(texts, ["landed"], raw=True))  # `communicate raw`


def test_numbers_are_read_to_two_decimals() -> None:
    assert mentioned(13.044125, ["It is 13.04."]) and mentioned(13.044125, ["13.044 dollars"])
    assert not mentioned(13.044125, ["13.05"]) and not mentioned(5, ["on 2024-05-05"])
    assert mentioned(1234, ["$1,234.00"]) and not mentioned(100, ["100.4"])
    assert not mentioned(56, ["reservation 56B3FV"]) and mentioned(56, ["56 dollars, 56."])
    assert mentioned(-5, ["-5 dollars"]) and mentioned(5, ["(5)"])
    assert not mentioned(22, ["on 2024-05-22"]) and not mentioned(5, ["on 2024-05-22"])


# ---------------------------------------------------------------- echo probe (C320, C120)

FLIGHT = '''capability fs {
  description "Flight status."
  domain airline
  max_turns 4
  tools [get_flight_status]
  seed {
    flights = flight[3..4]
  }
  task status {
    let f = pick(flights)
    let d = pick(keys(f.dates))
    let status = f.dates[d].status
    user "What is the status of flight {f.flight_number} on {d}?"
    gold { get_flight_status(flight_number = f.flight_number, date = d) }
    communicate status
  }
  reward {
    1.0 when progress == 1 and communicated()
    0.3 when progress == 1
    0.0 otherwise
  }
}
'''


def test_echo_of_tool_output_is_not_telling_the_user() -> None:
    report = check(FLIGHT)
    assert report.passed, report.problems
    assert report.probe_means["echo"] == report.probe_means["echo_bare"] == 0.3
    assert report.probe_means["silent_gold"] == 0.3 and report.probe_means["oracle"] == 1.0


def test_communicate_raw_pays_echoes_and_check_says_where() -> None:
    spec = FLIGHT.replace("  max_turns 4\n", "  max_turns 4\n  communicate raw\n")
    report = check(spec)
    f = finding(report, "C320")
    assert f["severity"] == "warning" and f["line"] == line_of(spec, "1.0 when progress")
    assert "pasting the raw tool outputs in <tool_response> markup back gets 1.00" in f["message"]
    assert report.probe_means["echo"] == 1.0


# ---------------------------------------------------------------- forbids (C115, instead)

FORBID = mutate("communicate total", 'communicate total\n    forbid send_certificate(amount = 100)')
FORBID = FORBID.replace("    1.0 when progress == 1", "    0.0 when forbidden_called\n    1.0 when progress == 1")


def test_unplayable_forbid_is_located_at_its_rule_with_the_reason() -> None:
    report = check(FORBID)
    f = finding(report, "C115")
    assert f["line"] == line_of(FORBID, "0.0 when forbidden_called") and f["column"] == 5
    assert "it reads `forbidden_called`, but in task `look` `send_certificate` needs `user_id`" \
        in f["message"]
    assert f["rendered"].startswith(f"{PATH}:{f['line']}:5: error: level 0 (rule 1 ")


def test_refused_forbidden_call_is_the_reason_a_rung_is_never_reached() -> None:
    spec = FORBID.replace("forbid send_certificate(amount = 100)",
                          'forbid cancel_reservation(reservation_id = "NOPE00")')
    f = finding(check(spec), "C115")
    # the forbid's wrong argument is why: the finding is at it, the rung no probe reaches a note
    assert f["line"] == line_of(spec, 'forbid cancel_reservation(reservation_id = "NOPE00")')
    assert [n["line"] for n in f["notes"]] == [line_of(spec, "0.0 when forbidden_called")]
    assert ("the probe's call cancel_reservation(reservation_id='NOPE00') was refused at seed 0: "
            "Error: Reservation NOPE00 not found") in f["message"]


def test_rung_that_pays_a_forbidden_call_the_top_is_where_c114_is() -> None:
    spec = mutate("communicate total", "communicate total\n    forbid get_user_details(user_id = r.user_id)")
    spec = spec.replace("    1.0 when progress == 1",
                        "    1.0 when forbidden_called and progress == 1\n    1.0 when progress == 1")
    f = finding(check(spec), "C114")
    # the rung reads `forbidden_called` and pays it the top: it is the mistake, the forbid a note
    assert f["line"] == line_of(spec, "1.0 when forbidden_called and progress == 1")
    assert [n["line"] for n in f["notes"]] == [line_of(spec, "forbid get_user_details")]
    assert "pays a forbidden call the top level 1.00" in f["message"]
    assert f"{PATH}:{f['notes'][0]['line']}:12: note: the forbid it pays" in f["rendered"]


def test_forbid_is_played_with_the_gold_calls_other_arguments() -> None:
    spec = FORBID.replace("gold { get_reservation_details(reservation_id = r.reservation_id) }",
                          "gold {\n      get_reservation_details(reservation_id = r.reservation_id)\n"
                          "      get_user_details(user_id = r.user_id)\n    }").replace(
        "1.0 when progress == 1", "1.0 when state_matches and progress == 1")  # no stray write paid
    report = check(spec)
    assert report.passed, report.problems
    assert report.probe_means["forbidden"] == 0.0  # played with user_id from the gold call


def test_forbidden_alternative_is_played_in_place_of_the_last_write() -> None:
    gold = [Call("get_order", {"id": "1"}), Call("exchange", {"id": "1", "x": 2})]
    inst = TaskInstance("t", "hi", gold=gold, forbid=[Call("return_items", {"id": "1"})])
    probes = {p.name: p for p in build_probes(inst, frozenset({"exchange", "return_items"}),
                                              frozenset())}
    assert [c.name for c in probes["forbidden"].calls] == ["get_order", "exchange", "return_items"]
    assert [c.name for c in probes["forbidden_instead"].calls] == ["get_order", "return_items"]


# ---------------------------------------------------------------- meaning checks


def test_answer_in_the_user_text_on_every_seed_is_an_error() -> None:
    spec = mutate("communicate total", "communicate r.reservation_id")
    f = finding(check(spec), "C130")
    assert f["severity"] == "error" and f["line"] == line_of(spec, "communicate r.reservation_id")
    assert "already in the user's first message on all 3 seeds" in f["message"]


def test_answer_in_the_user_texts_own_words_is_at_the_user_line() -> None:
    spec = mutate("let total = sum(f.price for f in r.flights)",
                  'let total = 24\n    let chat = pick(["Thanks.", "Cheers."])').replace(
        'cost?"', 'cost? I know about the 24 hours rule."').replace(
        "communicate total", 'communicate total\n    distractor chat { say "{chat}" }')
    f = finding(check(spec), "C130")
    # the user's own words (outside `{...}`) state it; the `say` that only adds a value does not
    assert f["line"] == line_of(spec, "I know about the 24 hours rule")
    assert "the `user` text's own words state `total`" in f["message"]


def test_answer_a_say_distractor_states_is_at_the_distractor() -> None:
    spec = mutate("communicate total",
                  'communicate total\n    distractor guess { say "I think it was {total} dollars." }')
    f = finding(check(spec), "C130")
    assert f["line"] == line_of(spec, "distractor guess")
    assert "`distractor guess` says `total`" in f["message"]


def test_hint_interpolating_the_answer_warns() -> None:
    spec = mutate("communicate total", 'communicate total\n    hint "It cost {total} dollars."')
    f = finding(check(spec), "C331")
    assert f["severity"] == "warning" and f["line"] == line_of(spec, "hint \"It cost")


def test_float_answer_without_rounding_warns_and_round_is_enough() -> None:
    spec = mutate("let total = sum(f.price for f in r.flights)",
                  "let total = sum(f.price for f in r.flights) * 1.0137")
    f = finding(check(spec), "C332")
    assert f["severity"] == "warning" and f["line"] == line_of(spec, "communicate total")
    rounded = spec.replace("communicate total", "communicate round(total, 2)").replace(
        "communicated(total)", "communicated()")
    assert not any(x["code"] == "C332" for x in check(rounded).findings)


def test_max_turns_shorter_than_the_gold_is_an_error_at_max_turns() -> None:
    spec = mutate('domain airline', 'domain airline\n  max_turns 1')
    report = check(spec)
    f = finding(report, "C133")
    assert f["line"] == line_of(spec, "max_turns 1") and "needs 2 turns" in f["message"]
    assert all(LOCATED.match(p) for p in report.problems)


def test_pick_breaking_a_domain_precondition_is_located_at_the_pick() -> None:
    spec = mutate("{ user_id = pick(users).user_id }",
                  '{ user_id = pick(users).user_id; status = "cancelled" }').replace(
        "gold { get_reservation_details(reservation_id = r.reservation_id) }",
        "gold { cancel_reservation(reservation_id = r.reservation_id) }")
    f = finding(check(spec), "C140")
    assert f["line"] == line_of(spec, "let r = pick(reservations)") and f["column"] == 9
    assert "requires the reservation is not cancelled (`reservation.status != \"cancelled\"`)" \
        in f["message"]


def test_distractor_the_user_cannot_tell_apart_warns() -> None:
    spec = mutate('user "Hi, what did reservation {r.reservation_id} cost?"',
                  'user "Hi, I am {r.user_id}. What did my trip cost?"').replace(
        "    communicate total\n",
        '    communicate total\n    distractor twin { clone r with insurance = "yes" if r.insurance == "no" else "no" }\n')
    f = finding(check(spec), "C334")
    assert f["severity"] == "warning" and f["line"] == line_of(spec, "distractor twin")


def test_werror_fails_on_warnings(tmp_path: Path) -> None:
    spec = tmp_path / "demo.tracec"
    spec.write_text(mutate("communicate total", 'communicate total\n    hint "It cost {total}."')
                    .replace("1.0 when progress", "1.0 when state_matches and progress"))
    ok = CliRunner().invoke(check_cmd, [str(spec), "--seeds", "2", "--no-env-checker"])
    assert ok.exit_code == 0, ok.output
    assert f"{spec}:14:10: warning: task `look`: the hint interpolates the answer" in ok.output
    bad = CliRunner().invoke(check_cmd, [str(spec), "--seeds", "2", "--no-env-checker", "--werror"])
    assert bad.exit_code == 1


# ---------------------------------------------------------------- every finding located


@pytest.mark.parametrize("name", sorted(p.stem for p in Path("generated_envs").glob("*.py")
                                        if p.stem != "__init__"))
def test_shipped_envs_have_only_located_findings(name: str) -> None:
    report = run_checks(importlib.import_module(f"generated_envs.{name}"), seeds=2, check_env=False)
    assert report.passed, report.problems
    for text in report.problems + report.warnings:
        assert LOCATED.match(text), text
        head = text.split("\n", 1)[0]
        message = head.split(": ", 2)[-1]
        words = message.split(": ")
        assert len(words) < 2 or words[0] != words[1], head  # no "x: x: ..."


NOOP_PAID = mutate("    0.0 otherwise", "    0.2 when progress == 0\n    0.0 otherwise")


def test_a_rung_a_do_nothing_agent_reaches_is_located_at_the_rule() -> None:
    f = finding(check(NOOP_PAID), "C112")
    assert f["line"] == line_of(NOOP_PAID, "0.2 when progress == 0")
    assert "doing nothing gets 0.20 (rule 2 `0.2 when progress == 0`)" in f["message"]


@pytest.mark.parametrize("spec", [FORBID, mutate('domain airline', 'domain airline\n  max_turns 1'),
                                  NOOP_PAID])
def test_bad_cases_have_only_located_findings(spec: str) -> None:
    report = check(spec, seeds=2)
    assert report.problems
    for text in report.problems + report.warnings:
        assert LOCATED.match(text), text


def test_describe_shows_preconditions() -> None:
    airline = describe(get_domain("airline"))
    cancel = next(t for t in airline["tools"] if t["name"] == "cancel_reservation")
    assert cancel["preconditions"] == [{
        "argument": "reservation_id", "kind": "reservation", "field": "status",
        "condition": 'reservation.status != "cancelled"', "text": "the reservation is not cancelled"}]
    text = describe_text(get_domain("retail"))
    assert 'requires the order is delivered: `order.status == "delivered"` for the `order_id`' in text
