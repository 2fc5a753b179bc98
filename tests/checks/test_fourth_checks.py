"""Issue 30, the fourth set: the mistakes of ``tests/checks/mutation_set_fourth.py`` (and of its
late part) that were silent before C171-C179 (and the C150/C341 probes they led to) are
reported at the mutated line and say what is wrong; the same kinds of mistake written another
way, in another spec, are caught too; the helpers the checks read the spec with."""

from __future__ import annotations

import pytest

from tests.checks.mutation_set import Mutation
from tests.checks.mutation_set_fourth import FOURTH, LATE4
from tests.checks.mutation_set_fresh import found_at_line, judge
from tracec.checks.hint_operands import counted_words, value_reads
from tracec.checks.ordinal_entry import changed_positions
from tracec.checks.payment_kind import directed
from tracec.lang.parser import parse_expr

RLC = "specs/reservation_lookup_compact.tracec"
SDR = "specs/structured_data_reasoning.tracec"
DR = "specs/datetime_reasoning.tracec"
PER = "specs/permission_error_recovery.tracec"
TCP = "specs/tool_calling_precision.tracec"
MSTC = "specs/multi_step_task_completion.tracec"

# the same kinds of mistake, written apart from the fourth set's (other specs, other words)
OTHERS = [
    # the total fare multiplied by the number of flights, where the hint counts passengers
    Mutation("sdr_total_times_flights", SDR,
             "let total    = sum(f.price for f in r.flights) * len(r.passengers)",
             "let total    = sum(f.price for f in r.flights) * len(r.flights)", "C171"),
    # the user asks to pay with their PayPal account, the gold switches to any other method
    Mutation("tcp_switch_to_paypal", TCP, "Also charge that order to {pm} instead.",
             "Also charge that order to my PayPal account instead.", "C172",
             line_of='user """Hi, my email is {owner.email}. I\'m staying with my sister'),
    # the gold looks the owner up where the user names the sender
    Mutation("dr_search_owner_by_name", DR, "search_contacts(name = s.name)\n      search_messages(sender_person_id = s.person_id)\n      timestamp_to_datetime_info(timestamp = ts)",
             "search_contacts(name = owner.name)\n      search_messages(sender_person_id = s.person_id)\n      timestamp_to_datetime_info(timestamp = ts)",
             "C174"),
    # the forbid turns cellular off where it is off all along
    Mutation("per_forbid_cellular_off", PER, "forbid set_cellular_service_status(on = True)\n    reply \"Yes, turn on what the reminder",
             "forbid set_cellular_service_status(on = False)\n    reply \"Yes, turn on what the reminder", "C176"),
    # the fare difference kept signed: a cheaper date gives a negative answer
    Mutation("pv_diff_signed", "specs/precondition_verification.tracec",
             "let diff  = abs(fl.dates[day].prices[r.cabin] - leg.price) * len(r.passengers)",
             "let diff  = (fl.dates[day].prices[r.cabin] - leg.price) * len(r.passengers)", "C178"),
    # the user names the second passenger, the gold corrects the last one
    Mutation("mstc_second_passenger", MSTC,
             "On reservation {r2.reservation_id}, {last2.first_name} {last2.last_name}'s date of birth should be {newdob}.",
             "On reservation {r2.reservation_id}, the second passenger's date of birth should be {newdob}.",
             "C177"),
    # ... and, rightly, the last one (no finding: the first passenger of the sentence before is
    # another reservation's)
    Mutation("mstc_last_passenger", MSTC,
             "On reservation {r2.reservation_id}, {last2.first_name} {last2.last_name}'s date of birth should be {newdob}.",
             "On reservation {r2.reservation_id}, the last passenger's date of birth should be {newdob}.",
             "-"),
    # the cancellation refusal forbids a flight change instead
    Mutation("pv_cancel_refusal_forbids_change", "specs/precondition_verification.tracec",
             "forbid cancel_reservation(reservation_id = r.reservation_id)\n    reply \"Are you sure?",
             "forbid update_reservation_flights(reservation_id = r.reservation_id)\n    reply \"Are you sure?",
             "C179"),
    # an origin read one level deep where the hint names `destination` (C156's, not C173's)
    Mutation("rlc_cabin_hint_nested", RLC, "communicate r.destination",
             "communicate r.flights[0].origin", "C173", line_of="communicate r.flights[0].origin"),
]


def _late(name: str) -> Mutation:
    return next(m for m in LATE4 if m.name == name)


@pytest.mark.parametrize(("name", "code", "says"), [
    ("same_words_distractor_same_time", "C341", "reading the wrong record gives the right answer"),
    ("forbidden_rung_any_progress", "C150", "plus the forbidden call"),
    ("total_fare_one_passenger", "C171", "the hint counts `r.passengers`"),
    ("fare_diff_one_passenger", "C171", "the hint counts `r.passengers`"),
    ("user_asks_gift_card_gold_original", "C172", "the user asks for their gift card"),
    ("destination_of_last_leg", "C173", "the hint names `r`'s own `destination`"),
])
def test_fourth_set_mistake_is_reported_at_its_line(name: str, code: str, says: str) -> None:
    f = found_at_line(next(m for m in FOURTH if m.name == name), code)
    assert says in f["message"], f["message"]


@pytest.mark.parametrize(("name", "code", "says"), [
    ("address1_from_order", "C174", "the user says address1 "),
    ("weekday_offset_three", "C175", "the weekday answer is "),
    ("forbid_wifi_off", "C176", "the forbidden call changes nothing"),
    ("user_says_first_gold_fixes_last", "C177", "the user names the first entry of `passengers`"),
    ("diff_signed", "C178", "the answer is negative on "),
    ("basic_refusal_forbids_cancel", "C179", "but the task forbids only `cancel_reservation`"),
])
def test_late_mistake_is_reported_at_its_line(name: str, code: str, says: str) -> None:
    f = found_at_line(_late(name), code)
    assert says in f["message"], f["message"]


def test_counted_words_and_value_reads() -> None:
    assert counted_words("Add the prices and multiply by the number of passengers.") == {"passenger"}
    assert counted_words("free bags per passenger, 50 dollars per bag") == {"passenger", "bag"}
    assert counted_words("Add up the amounts in the payment_history.") == set()
    lets = {"day": parse_expr("pick(d for d in keys(fl.dates) if fl.dates[d].seats >= len(r.passengers))"),
            "diff": parse_expr("abs(fl.dates[day].prices[r.cabin] - leg.price)")}
    reads = value_reads(lets["diff"], lets)
    assert ("r", "passengers") not in reads  # a pick's condition is no part of the value
    assert {("fl", "dates"), ("r", "cabin"), ("leg", "price")} <= reads


def test_fourth_set_kinds_written_another_way() -> None:
    """C171 for a total counted over the wrong list, C172 for a card kind the user names in
    another spec, C174 for another argument the user states, C176 for another setting, C177
    for another place, C178 for another signed
    difference, C179 for the other refusal."""
    for m in OTHERS:
        if m.code.startswith("C") and m.code != "C173":
            found_at_line(m, m.code)


def test_c177_reads_the_place_in_the_sentence_that_names_the_record() -> None:
    _how, found = judge(next(m for m in OTHERS if m.name == "mstc_last_passenger"))
    assert not any(f["code"] == "C177" for f in found)


def test_directed_reads_where_the_money_goes_not_a_mention() -> None:
    assert directed("gift_card", "please put the refund on my gift card.")
    assert directed("paypal", "charge that order to my paypal account instead.")
    assert not directed("gift_card", "i have a gift card too, if that matters.")
    assert not directed("credit_card", "refund it to the method i paid with.")


def test_changed_positions() -> None:
    assert changed_positions([1, 2, 3], [1, 5, 3]) == [1]
    assert changed_positions([1, 2], [1, 2]) == []


def test_c173_is_not_given_without_a_hint_naming_the_field() -> None:
    # the hint names `destination`, not `origin`: a nested origin is C156's business, not C173's
    _how, found = judge(next(m for m in OTHERS if m.code == "C173"))
    assert not any(f["code"] == "C173" for f in found)
