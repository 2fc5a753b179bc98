"""C155: a numeric answer is judged against the amounts the gold's own writes append; C156:
the fields a hint names."""

from __future__ import annotations

from tracec.checks.answer_writes import _new_amounts, explained
from tracec.checks.hint_answer import named_fields


def test_new_amounts_are_the_appended_records_of_each_list() -> None:
    old = {"payment_history": [{"amount": 300}, {"amount": 504}], "status": None}
    new = {"payment_history": [{"amount": 300}, {"amount": 504}, {"amount": -300},
                               {"amount": -504}], "status": "cancelled"}
    assert _new_amounts(old, new) == [[-300.0, -504.0]]
    assert _new_amounts(old, old) == []


def test_an_answer_is_explained_by_an_amount_a_total_or_the_payments_or_refunds() -> None:
    lists = [[-300.0, -504.0], [50.0], [100.0]]
    assert explained(804, lists)  # the refund: one record's total
    assert explained(150, lists)  # the fees of two records: all payments
    assert explained(50, lists)  # one amount
    assert not explained(268, lists)  # the flights' prices
    assert explained(45.06, [[45.06]]) and not explained(230.51, [[45.06]])


def test_the_hint_names_fields_in_backticks_or_with_an_underscore() -> None:
    fields = ["origin", "destination", "cabin", "created_at", "status"]
    hint = "The destination is the reservation's `destination` field; see created_at, status."
    assert named_fields(hint, fields) == {"destination", "created_at"}
