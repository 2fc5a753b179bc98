"""C347: an answer that is always the same one of the options the user names."""

from __future__ import annotations

from tests.checks.mutation_set import DR, Mutation
from tests.checks.mutation_set_fresh import findings_of, found_at_line
from tests.checks.mutation_set_ninth import NINTH


def test_the_first_named_reminder_always_due_first_is_reported_at_the_pick() -> None:
    f = found_at_line(next(m for m in NINTH if m.name == "second_always_later"), "C347")
    assert "names first on 16 of 16 seeds" in f["message"], f["message"]


def test_the_second_named_always_due_first_in_another_phrasing() -> None:
    m = Mutation("second_always_earlier", DR,
                 "x.content != a.content and x.reminder_timestamp != a.reminder_timestamp",
                 "x.content != a.content and x.reminder_timestamp < a.reminder_timestamp", "C347")
    assert "in place 2" in found_at_line(m, "C347")["message"]


def test_options_drawn_in_either_order_are_not_reported() -> None:
    assert not findings_of(DR, "C347", 32)
