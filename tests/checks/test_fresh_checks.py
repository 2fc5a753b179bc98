"""Issue 30, the fresh set: each mistake of ``tests/checks/mutation_set_fresh.py`` that the checks
catch is reported at the mutated line (the gaps are expected to fail), and the findings of the
codes added for it (C158-C161) say what is wrong, at that line."""

from __future__ import annotations

import re

import pytest

from tests.checks.mutation_set_fresh import FRESH, LATE, Mutation, judge
from tracec.checks.gold_args import values_of
from tracec.checks.hint_tools import HintTools, sentences
from tracec.checks.provenance import built_text
from tracec.checks.refusals import asks_for
from tracec.checks.variance import field_reads
from tracec.domains.policy_rules import airline_rules
from tracec.lang import ast as A


@pytest.mark.parametrize("m", [pytest.param(m, id=m.name, marks=[pytest.mark.xfail(reason=m.gap)]
                                            if m.gap else []) for m in FRESH + LATE])
def test_fresh_mutation_is_reported_at_the_mutated_line(m: Mutation) -> None:
    how, found = judge(m)
    assert how == "line", (m.name, [(f["code"], f["line"], f["message"]) for f in found])


def _head(name: str, code: str) -> str:
    m = next(m for m in FRESH + LATE if m.name == name)
    _, found = judge(m)
    line = m.line(m.text())
    f = next(f for f in found if f["code"] == code)
    assert f["line"] == line, (f["line"], line)
    return f["rendered"].split("\n", 1)[0]


def test_swapped_arguments_name_the_field_read_and_the_right_one() -> None:
    head = _head("city_and_state_swapped", "C158")
    assert "error: task `ship_to_other_address`: the gold call `modify_pending_order_address` " \
           "passes `city = a.state`" in head
    assert "but that record's own `city` is" in head


def test_a_hint_against_its_gold_says_which_tool_and_why() -> None:
    order = _head("hint_wrong_tool_order", "C159")
    assert "says `get_current_location` and then `set_location_service_status`, but the gold " \
           "calls `set_location_service_status` before every `get_current_location`" in order
    forbidden = _head("hint_calls_the_forbidden_tool", "C159")
    assert "tells the agent to call `update_reservation_flights`, which the task forbids" in forbidden


def test_a_refusal_the_policy_does_not_back_is_at_the_pick() -> None:
    head = _head("refusal_pick_or_for_and", "C160")
    assert "task `cancel_refused`: the gold refuses the `cancel_reservation` the user asks for" in head
    assert "`let r` draws reservation" in head and "on which the policy allows it" in head
    economy = _head("basic_refusal_of_economy", "C160")
    assert "the `update_reservation_flights` the user asks for" in economy


def test_the_gold_against_its_time_tools() -> None:
    weekday = _head("weekday_of_the_old_time", "C161")
    assert "the gold's last call `timestamp_to_datetime_info` returns isoweekday" in weekday
    minutes = _head("minutes_as_hours", "C161")
    assert "the gold call `add_reminder` passes `reminder_timestamp` =" in minutes
    assert "a time no earlier gold call returned" in minutes


def test_a_write_that_changes_nothing() -> None:
    head = _head("move_to_the_old_date", "C162")
    assert "task `change_allowed`: the gold call `update_reservation_flights` leaves the record it " \
           "names as it was on" in head
    twice = _head("diff_of_a_reminder_with_itself", "C158")
    assert "passes `a.reminder_timestamp` as both `timestamp_0` and `timestamp_1`" in twice
    stray = _head("hint_says_cancel_in_a_lookup", "C159")
    assert "tells the agent to call `cancel_reservation`, a write the gold never makes" in stray


@pytest.mark.parametrize(("name", "code", "says"), [
    ("product_ids_for_item_ids", "C102", ("(`item_ids` = `ids`, passed to the gold call "
                                         "`return_delivered_order_items` at line 39)")),
    ("return_from_an_undelivered_order", "C102", "(`let ord` draws order '"),
    ("payment_switch_to_the_same_method", "C102", ("(`payment_method_id` = `pm`, passed to the gold "
                                                  "call `modify_pending_order_payment` at line 88)")),
    ("dob_fix_keeps_the_old_date", "C162", "(`let fixed2` builds what it passes at line 133)"),
    ("always_the_first_date", "C344", ("(the `communicate` at line 32 reads `d`, which is already "
                                      "the same on those seeds)")),
    ("change_downgrades_the_cabin", "C155", ("the gold call `update_reservation_flights` passes "
                                            "`cabin` as a constant where the record's is '")),
])
def test_a_finding_is_where_the_value_was_built(name: str, code: str, says: str) -> None:
    """A finding caused by an argument's value is at the `let`/`pick` that built it (or the
    constant at the call), the call named in the message (tracec/checks/blame.py)."""
    m = next(m for m in FRESH + LATE if m.name == name)
    _, found = judge(m)
    f = next(f for f in found if f["code"] == code)
    assert f["line"] == m.line(m.text()), (f["line"], m.line(m.text()))
    assert says in f["message"], f["message"]


def test_asks_for_reads_the_verb_and_its_negation() -> None:
    assert asks_for("cancel_reservation", "Please cancel my reservation ABC123.")
    assert asks_for("update_reservation_flights", "I need to move flight HAT001 to May 20.")
    assert not asks_for("cancel_reservation", "What would I get back? Do not cancel it yet.")
    assert not asks_for("cancel_reservation", "How much did I pay for ABC123?")


def test_hint_sentences_split_at_stops_and_colons() -> None:
    assert sentences("Read it: then act. Done!") == ["Read it:", "then act.", "Done!"]


def test_built_texts_and_field_reads() -> None:
    c = A.Name(id="c")
    lets = {"body": A.Call(func="pick", args=[A.Name(id="texts")]),
            "greet": A.BinOp(op="+", left=A.Str(value="Hi "), right=A.Attr(obj=c, name="name"))}
    assert built_text(A.Name(id="greet"), lets)
    assert not built_text(A.Name(id="body"), lets)
    r = A.Name(id="r")
    lets = {"refund": A.CallGen(func="sum", elt=A.Attr(obj=A.Name(id="p"), name="amount"),
                                comp=A.Comprehension(var="p", iter=A.Attr(obj=r, name="payment_history")))}
    assert ("r", "payment_history") in field_reads(A.Name(id="refund"), lets)


def test_values_of_reads_nested_records() -> None:
    world = {"reservations": {"R1": {"origin": "JFK", "destination": "LAX"}},
             "users": {"u": {"address": {"city": "Austin", "state": "TX"}}}}
    assert values_of(world, "origin") == {"JFK"}
    assert values_of(world, "city") == {"Austin"}  # "TX", a state, is no city


def test_paid_bags_made_free_break_the_bags_rule() -> None:
    rule = next(r for r in airline_rules("2024-05-15T15:00:00")["update_reservation_baggages"]
                if r.name == "bags-only-added")
    db = {"reservations": {"R1": {"total_baggages": 2, "nonfree_baggages": 2}}}
    dropped = {"reservation_id": "R1", "total_baggages": 3, "nonfree_baggages": 1}
    assert "drops non-free bags already paid for (2 -> 1)" in (rule.check(db, dropped, "") or "")
    added = {"reservation_id": "R1", "total_baggages": 3, "nonfree_baggages": 3}
    assert rule.check(db, added, "") is None


def test_a_hint_that_negates_or_conditions_a_tool_does_not_call_it() -> None:
    check = HintTools.__new__(HintTools)
    check.pattern = re.compile(r"\b(modify_user_address)\b")
    tools = {"modify_user_address"}
    assert check._forbidden("Call modify_user_address with her address.", tools, "x")
    for hint in ("The account's address (modify_user_address) must stay.",
                 "Do not call modify_user_address.", "Use modify_user_address only if asked."):
        assert check._forbidden(hint, tools, "x") is None, hint
