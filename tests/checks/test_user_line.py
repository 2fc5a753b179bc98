"""Findings at the `user` text when the message is what left a value out: C152 for a field of a
record whose other fields the user lists (`{a.address1}, {a.city}` without `{a.address2}`),
C165 for a correction a `let` makes and the user's words never say."""

from __future__ import annotations

import pytest

from tests.checks.mutation_set import Mutation
from tests.checks.mutation_set_eighth import EIGHTH
from tests.checks.mutation_set_fifth import FIFTH
from tests.checks.mutation_set_fresh import found_at_line
from tests.checks.mutation_set_seventh import SEVENTH
from tests.checks.mutation_set_third import THIRD

TCP = "specs/tool_calling_precision.tracec"


@pytest.mark.parametrize("m", [next(m for m in FIFTH if m.name == "ship_city_never_said"),
                               next(m for m in EIGHTH if m.name == "address2_never_given")],
                         ids=lambda m: m.name)
def test_an_address_field_the_user_leaves_out_is_reported_at_the_user(m: Mutation) -> None:
    found_at_line(m, "C152")


def test_the_zip_left_out_in_another_phrasing() -> None:
    m = Mutation("zip_never_said", TCP, "{a.state} {a.zip}, {a.country}", "{a.state}, {a.country}",
                 "C152")
    found_at_line(m, "C152")


@pytest.mark.parametrize("m", [next(m for m in SEVENTH if m.name == "user_gives_the_old_last_name")],
                         ids=lambda m: m.name)
def test_a_correction_the_user_never_says_is_reported_at_the_user(m: Mutation) -> None:
    f = found_at_line(m, "C165")
    assert "never says `{new_last}`" in f["message"], f["message"]


def test_a_correction_copied_from_the_wrong_record_stays_at_its_let() -> None:
    """Another passenger's date of birth: no `let` of the task makes it, the `let` is the slip."""
    m = next(m for m in THIRD if m.name == "dob_from_wrong_passenger")
    f = found_at_line(m, "C165")
    assert "never says" not in f["message"], f["message"]


def test_a_user_text_that_interpolates_the_answer_is_reported_at_the_user() -> None:
    f = found_at_line(next(m for m in EIGHTH if m.name == "push_request_names_the_weekday"), "C130")
    assert "interpolates `{wd}`" in f["message"], f["message"]
