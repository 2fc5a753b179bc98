"""C184: a gold write that replaces a count its hint says to raise."""

from __future__ import annotations

from tests.checks.mutation_set import Mutation
from tests.checks.mutation_set_fresh import findings_of, found_at_line
from tests.checks.mutation_set_seventh import SEVENTH
from tracec.checks.hint_raises import raised_fields

SDR = "specs/structured_data_reasoning.tracec"


def test_nonfree_set_to_the_added_bags_is_reported_at_the_call() -> None:
    f = found_at_line(next(m for m in SEVENTH if m.name == "nonfree_reset_to_extra"), "C184")
    assert "`nonfree_baggages`" in f["message"], f["message"]


def test_the_total_replaced_too() -> None:
    m = Mutation("total_reset_to_extra", SDR, "total_baggages = r.total_baggages + extra",
                 "total_baggages = extra", "C184")
    assert "`total_baggages`" in found_at_line(m, "C184")["message"]


def test_the_shipped_raise_is_not_reported() -> None:
    assert not findings_of(SDR, "C184", 4)


def test_raised_fields() -> None:
    assert raised_fields("Raise total_baggages and nonfree_baggages by the same number.") == \
        {"total_baggages", "nonfree_baggages"}
    assert raised_fields("Read total_baggages. Then raise the fee.") == set()
