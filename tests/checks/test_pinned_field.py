"""C346: a field the answer reads that the seed writes as one constant of several the domain
gives it (every user a gold member: the membership column of the bag rule never used)."""

from __future__ import annotations

from tests.checks.mutation_set import Mutation
from tests.checks.mutation_set_fresh import findings_of, found_at_line
from tests.checks.mutation_set_seventh import SEVENTH

MSTC = "specs/multi_step_task_completion.tracec"
ME = 'me      = user[1] { membership = pick(["regular", "regular", "silver", "silver", "gold"]) }'


def test_every_user_gold_is_reported_at_the_seed() -> None:
    f = found_at_line(next(m for m in SEVENTH if m.name == "every_user_is_gold"), "C346")
    assert "`owner.membership`" in f["message"] and "'gold'" in f["message"], f["message"]


def test_every_user_regular_in_another_phrasing() -> None:
    m = Mutation("every_user_regular", MSTC, ME, 'me      = user[1] { membership = "regular" }', "C346")
    assert "'regular'" in found_at_line(m, "C346")["message"]


def test_a_drawn_membership_is_not_reported() -> None:
    assert not findings_of(MSTC, "C346", 16)


def test_a_sibling_at_the_same_time_is_inert() -> None:
    """C341: the sibling reminder differs only in its content, which the user's words give; the
    times the answer is computed from are the same: reading it gives the same answer."""
    from tests.checks.mutation_set_eighth import EIGHTH
    found_at_line(next(m for m in EIGHTH if m.name == "sibling_note_at_the_same_time"), "C341")


def test_the_shipped_sibling_an_hour_off_is_not_inert() -> None:
    assert not findings_of("specs/datetime_reasoning.tracec", "C341", 32)
