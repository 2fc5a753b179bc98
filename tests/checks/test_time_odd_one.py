"""C161's odd one out: when the gold's write is at the clock time the user's words state and
the shift tool's result is not, the shift call's arguments are the slip (reported there); when
the write is the odd one, the write (or the `let` it passes) is."""

from __future__ import annotations

import pytest

from tests.checks.mutation_set import Mutation
from tests.checks.mutation_set_fifth import FIFTH
from tests.checks.mutation_set_fourth import LATE4
from tests.checks.mutation_set_fresh import FRESH, found_at_line
from tests.checks.mutation_set_sixth import SIXTH
from tracec.checks.time_results import clock, stated_clocks

PER = "specs/permission_error_recovery.tracec"


@pytest.mark.parametrize("m", [next(m for m in FIFTH if m.name == "holiday_minute_digits_swapped"),
                               next(m for m in SIXTH if m.name == "shift_minutes_tens_plus_units"),
                               next(m for m in SIXTH if m.name == "shift_keeps_the_message_clock")],
                         ids=lambda m: m.name)
def test_a_shift_at_another_clock_time_than_the_user_says_is_reported_at_the_shift(m: Mutation) -> None:
    f = found_at_line(m, "C161")
    assert "odd one out" in f["message"] and "shift_timestamp" in f["message"], f["message"]


def test_hours_written_as_the_shift_says_another_way() -> None:
    """The shift's hour and minutes swapped: the write keeps the user's clock time."""
    m = Mutation("shift_hour_minutes_swapped", PER, "hours = hour, minutes = tens * 10 + units)",
                 "hours = tens * 10 + units, minutes = hour)", "C161")
    assert "odd one out" in found_at_line(m, "C161")["message"]


@pytest.mark.parametrize("m", [next(m for m in FRESH if m.name == "minutes_as_hours"),
                               next(m for m in LATE4 if m.name == "due_from_message_time")],
                         ids=lambda m: m.name)
def test_a_write_at_another_clock_time_stays_at_the_write(m: Mutation) -> None:
    f = found_at_line(m, "C161")
    assert "odd one out" not in f["message"], f["message"]


def test_clocks() -> None:
    assert clock(86400 * 3 + 14 * 3600 + 35 * 60 + 7) == (14, 35)
    assert stated_clocks(["set it for 6:05 and 14:35, not 145"]) == {(6, 5), (14, 35)}
