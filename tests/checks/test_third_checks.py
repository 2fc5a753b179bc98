"""Issue 30, the third set: the mistakes of ``tests/checks/mutation_set_third.py`` that C164-C170
were added for are reported at the mutated line and say what is wrong; the helpers those checks
read the spec with."""

from __future__ import annotations

import pytest

from tests.checks.mutation_set_fresh import judge
from tests.checks.mutation_set_third import THIRD
from tracec.checks.bag_allowance import allowance_table
from tracec.checks.correction_values import corrections
from tracec.checks.declined_replies import declines
from tracec.checks.return_refund import returned_total
from tracec.checks.time_bases import names
from tracec.checks.written_weekday import weekday
from tracec.domains.airline import DOMAIN as AIRLINE
from tracec.lang.parser import parse_expr


def _head(name: str, code: str) -> str:
    m = next(m for m in THIRD if m.name == name)
    how, found = judge(m)
    assert how == "line", (name, [(f["code"], f["line"]) for f in found])
    f = next(f for f in found if f["code"] == code)
    assert f["line"] == m.line(m.text()), (f["line"], m.line(m.text()))
    return f["rendered"].split("\n", 1)[0]


@pytest.mark.parametrize(("name", "code", "says"), [
    ("write_after_user_declines", "C164", "the reply to the agent's confirmation question declines"),
    ("dob_from_wrong_passenger", "C165", "sets `dob` = "),
    ("holiday_one_week_late", "C166", "the gold call `shift_timestamp` starts from `timestamp` = "),
    ("reminder_weekday_of_message_day", "C167", "the user asks what day it will be"),
    ("second_bags_all_paid", "C168", "bag update 2 of the gold sets nonfree_baggages = "),
    ("variant_drops_bag_allowance", "C169", "does not show the agent"),
    ("refund_sums_all_order_items", "C170", "the user asks what they get back and the gold returns"),
    ("basic_economy_free_bag", "C168", ("gives a regular member 1 free checked bag(s) per "
                                        "basic_economy passenger; the policy's checked bag "
                                        "allowance gives 0")),
    # where the value was built, not where it is used (tracec/checks/blame.py)
    ("push_decodes_old_time", "C161", ("the answer is the weekday of `reminder_timestamp` the gold "
                                      "writes, the call decodes another time")),
    ("refuse_covered_insured", "C160", ("but with the reason the user gives (`let reason`), "
                                        "`let r` (line 68) draws reservation")),
    ("refundable_trips_economy", "C141", ("the seed's `refundable` fixes its cabin here and "
                                          "`let r` (line 34) draws from it: reservation")),
    ("cabin_always_economy", "C344", ("(the `communicate` at line 41 reads `r`, whose filter pins "
                                     "the field it reads)")),
])
def test_third_set_mistake_is_reported_at_its_line(name: str, code: str, says: str) -> None:
    head = _head(name, code)
    assert says in head, head


def test_declines_reads_a_refusal_not_a_yes_with_a_condition() -> None:
    assert declines("Hmm, wait, let me check my calendar first; don't change anything yet.")
    assert declines("No, leave it as it is.")
    assert not declines("Yes, but don't change my account address.")
    assert not declines("Turn on whatever the text needs, nothing else.")
    assert not declines("Yes, please make the change.")


def test_corrections_pair_entries_and_ignore_a_reordering() -> None:
    a = {"first_name": "Ann", "last_name": "Lee", "dob": "1980-01-02"}
    b = {"first_name": "Bo", "last_name": "Kim", "dob": "1990-03-04"}
    assert corrections([a, b], [b, a]) == []
    assert corrections([a, b], [a, {**b, "dob": "1980-01-02"}]) == [("dob", "1980-01-02")]


def test_the_allowance_table_is_read_from_the_policy() -> None:
    table = allowance_table(AIRLINE.policy)
    assert table["regular"] == {"basic_economy": 0, "economy": 1, "business": 2}
    assert table["gold"]["business"] == 4


def test_names_and_weekday() -> None:
    assert names(parse_expr("day * 86400 + hour * 3600")) == ["day", "hour"]
    assert weekday(0) == "Thursday" and weekday(4 * 86400) == "Monday"


def test_returned_total_counts_each_id_passed() -> None:
    order = {"items": [{"item_id": "a", "price": 10.5}, {"item_id": "b", "price": 2.25}]}
    assert returned_total(order, ["a"]) == 10.5
    assert returned_total(order, ["a", "b"]) == 12.75
    assert returned_total(order, ["c"]) is None
