"""C198: the current time a spec's text states against the domain's clock."""

from __future__ import annotations

from tests.checks.mutation_set import Mutation
from tests.checks.mutation_set_fresh import findings_of, found_at_line
from tests.checks.mutation_set_seventh import SEVENTH
from tracec.checks.stated_now import stated

PV = "specs/precondition_verification.tracec"


def test_a_hint_a_day_late_is_reported_at_the_hint() -> None:
    f = found_at_line(next(m for m in SEVENTH if m.name == "hint_states_the_wrong_now"), "C198")
    assert "2024-05-16 15:00" in f["message"] and "2024-05-15 15:00" in f["message"], f["message"]


def test_an_hour_off_in_another_phrasing() -> None:
    m = Mutation("hint_an_hour_off", PV, "Now is 2024-05-15 15:00 EST.",
                 "The current time is 2024-05-15 16:00 EST.", "C198")
    found_at_line(m, "C198")


def test_the_shipped_clock_is_not_reported() -> None:
    assert not findings_of(PV, "C198", 4)


def test_stated() -> None:
    assert stated("Now is 2024-05-15 15:00 EST.") == [("2024-05-15", "15:00")]
    assert stated("today is 2024-05-15, and the flight left 2024-05-01 9:30") == [("2024-05-15", None)]
    assert stated("booked on 2024-05-14 15:00") == []


def test_isoweekday_numbered_from_zero_is_reported_at_the_hint() -> None:
    from tests.checks.mutation_set_eighth import EIGHTH
    f = found_at_line(next(m for m in EIGHTH if m.name == "hint_isoweekday_zero_based"), "C187")
    assert "0 = Monday" in f["message"], f["message"]


def test_misnumbered() -> None:
    from tracec.checks.stated_now import misnumbered
    assert misnumbered("read it (isoweekday 1 = Monday ... 7 = Sunday)") is None
    assert misnumbered("the result (isoweekday 0 = Monday).") == "0 = Monday"
    assert misnumbered("weekday 0 = Monday in Python") is None  # not an isoweekday statement


def test_a_hint_naming_a_helper_the_agent_cannot_see_is_reported_at_the_hint() -> None:
    """C186: `days_between` is a function of the spec language, no tool of the env."""
    from tests.checks.mutation_set_ninth import NINTH
    f = found_at_line(next(m for m in NINTH if m.name == "hint_names_days_between"), "C186")
    assert "`days_between`" in f["message"], f["message"]


def test_hints_naming_fields_and_tools_are_not_reported() -> None:
    for spec in ("specs/tool_calling_precision.tracec", "specs/structured_data_reasoning.tracec",
                 "specs/datetime_reasoning.tracec"):
        assert not findings_of(spec, "C186", 4), spec
