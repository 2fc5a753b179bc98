"""Issue 30, the sets' last misses: C180-C182 (a hint's words for a forbidden switch, a gold
time already past, entries the user's words do not tell apart) and the findings located where
the value was made (C102 at a distractor's field or at the `let` of the value its error names,
C344 at the written constant, C141 at the one seed-list reason that breaks the rule, C161 at
the `let` of a written time, C152 at the user text that never names the drawn choice) and
C183 (an answer one off its own tool's result); each with the same kind written another way,
and a negative."""

from __future__ import annotations

import pytest

from tests.checks.mutation_set import Mutation
from tests.checks.mutation_set_fourth import FOURTH, LATE4
from tests.checks.mutation_set_fresh import FRESH, found_at_line, judge
from tracec.checks.alike_entries import alike
from tracec.checks.blame import named_arg
from tracec.checks.hint_words import says_switch, thing_words
from tracec.checks.tool_agreement import numbers

PER = "specs/permission_error_recovery.tracec"
TCP = "specs/tool_calling_precision.tracec"


def _named(name: str) -> Mutation:
    return next(m for m in FOURTH + LATE4 + FRESH if m.name == name)


@pytest.mark.parametrize(("name", "code", "says"), [
    ("hint_says_wifi", "C180", "switch wifi on"),
    ("return_names_without_options", "C182", "names only by words that fit"),
    ("change_paid_by_any_method", "C102", "Certificate cannot be used"),
    ("cellular_setup_leaves_cellular_on", "C102", "the distractor `setup_cellular_off` sets `cellular`"),
    ("always_one_bag", "C344", "computed from that constant"),
    ("bereavement_counted_covered", "C141", "is the one text of its seed list that breaks"),
    ("due_from_message_time", "C161", "(`reminder_timestamp` = `due`, passed to the gold call"),
    ("bags_card_never_given", "C152", "(drawn by `let card`, which the user's message never names)"),
    ("user_gives_no_reservation_id", "C152", "(drawn by `let r`, which the user's message never"),
    ("days_ago_rounded", "C183", "the answer is the gold's `timestamp_diff.days` on "),
])
def test_mistake_is_reported_at_its_line(name: str, code: str, says: str) -> None:
    f = found_at_line(_named(name), code)
    assert says in f["message"], f["message"]


def test_c181_a_reminder_set_in_the_past_is_reported_at_the_year_the_user_states() -> None:
    f = found_at_line(_named("holiday_this_year"), "C181")
    assert "days before the world's current time" in f["message"]
    assert "its time computed from `hy`, which the user states" in f["message"]


def test_kinds_written_another_way() -> None:
    # the holiday task's hint sends the agent to cellular, which that task forbids
    found_at_line(Mutation("holiday_hint_says_cellular", PER, "then wifi on, search again",
                 "then cellular on, search again", "C180"), "C180")
    # "full days ago" counted as calendar days (midnight to midnight)
    found_at_line(Mutation("days_ago_calendar_days", "specs/datetime_reasoning.tracec",
                 "let ago   = (p.now - m.creation_timestamp) // 86400",
                 "let ago   = int(p.now // 86400) - int(m.creation_timestamp // 86400)", "C183"),
        "C183")
    # a reminder due in some hours, subtracted from the clock's time (at the gold call)
    found_at_line(Mutation("reminder_in_hours_subtracted", PER,
                 "reminder_timestamp = p.now + hours * 3600, latitude",
                 "reminder_timestamp = p.now - hours * 3600, latitude", "C181"), "C181")


def test_negatives() -> None:
    # a hint that names the forbidden setting only to leave it alone: no C180
    _how, found = judge(Mutation("hint_leaves_wifi", PER, "Leave wifi and location service alone.",
                                 "Keep wifi off.", ""))
    assert not any(f["code"] == "C180" for f in found), found
    assert not says_switch("Leave wifi alone and turn cellular service on.", ["wifi"], True)
    assert says_switch("then turn on the wifi", ["wifi"], True)
    assert not says_switch("then wifi on", ["wifi"], False)
    assert thing_words("set_cellular_service_status") == ["cellular service status",
                                                          "cellular service", "cellular"]
    assert thing_words("send_message_with_phone_number") == []
    # entries told apart by a stated option: no C182
    shirt = {"item_id": "1", "name": "T-Shirt", "options": {"color": "blue", "size": "M"}}
    other = {"item_id": "2", "name": "T-Shirt", "options": {"color": "red", "size": "M"}}
    assert alike([shirt, other], {"1"}, "return my T-Shirt (blue, M)") is None
    assert alike([shirt, other], {"1"}, "return my T-Shirt")[1] is other
    assert alike([shirt, other], {"1", "2"}, "return my T-Shirt") is None
    # a reason drawn from a list of uncovered ones stays at the draw (the first set's
    # insurance_for_a_reason_it_does_not_cover)
    m = Mutation("any_reason", "specs/precondition_verification.tracec",
                 "let reason  = pick(covered + plain) if by_rule else pick(covered)",
                 "let reason  = pick(covered + plain)", "C141")
    found_at_line(m, "C141")
    # a value read from a record that is not drawn stays at the call (the clock's time)
    m = next(m for m in LATE4 if m.name == "days_ago_without_clock")
    clock = "timestamp_diff(timestamp_0 = m.creation_timestamp, timestamp_1 = p.now)"
    f = found_at_line(Mutation(m.name, m.spec, m.old, m.new, "C152", line_of=clock), "C152")
    assert "never names" not in f["message"]
    # C183 reads fields outside lists only
    assert list(numbers({"days": 3, "seconds": 5.0, "items": [{"price": 1}], "ok": True})) == [
        (".days", 3.0), (".seconds", 5.0)]
    # an error that names the value, not the argument: that argument
    args = {"reservation_id": "ABC123", "payment_id": "certificate_1"}
    assert named_arg(args, "Certificate cannot be used to update reservation") == "payment_id"
    assert named_arg(args, "Reservation not found") == "reservation_id"
