"""tracec/checks/blame.py: which argument an API error is about, and what a write leaves as it was."""

from __future__ import annotations

from tracec.checks.blame import covers, named_arg

ARGS = {"order_id": "#W1", "item_ids": ["1"], "new_item_ids": ["2"], "payment_method_id": "pm"}


def test_named_arg_reads_the_argument_names_words() -> None:
    assert named_arg(ARGS, "Error: Some item not found") == "item_ids"
    assert named_arg(ARGS, "Error: The new item id should be different from the old item id") \
        == "new_item_ids"
    assert named_arg(ARGS, "Error: The new payment method should be different from the current "
                           "one") == "payment_method_id"
    assert named_arg({"reservation_id": "R", "passengers": []},
                     "Error: Number of passengers does not match") == "passengers"


def test_named_arg_gives_none_when_no_argument_or_two_alike() -> None:
    assert named_arg(ARGS, "Error: internal error") is None
    assert named_arg({"timestamp_0": 1, "timestamp_1": 2}, "Error: bad timestamp") is None


def test_covers_is_equal_or_a_part_in_order() -> None:
    old = [{"flight_number": "HAT1", "date": "2024-05-20", "price": 100}]
    assert covers(old, [{"flight_number": "HAT1", "date": "2024-05-20"}])
    assert not covers(old, [{"flight_number": "HAT1", "date": "2024-05-21"}])
    assert not covers(old, old + old)
    assert covers("business", "business") and not covers("business", "economy")
