"""Findings about a constant at the line that writes it: C152 for an answer that is a constant
the spec types (`let rule = 48`), C344 for an answer read from a field the seed writes as one
constant (`cabin = "economy"` in every reservation)."""

from __future__ import annotations

import pytest

from tests.checks.mutation_set import Mutation, _findings
from tests.checks.mutation_set_fresh import found_at_line
from tests.checks.mutation_set_seventh import SEVENTH
from tests.checks.mutation_set_sixth import SIXTH

RLC = "specs/reservation_lookup_compact.tracec"
SEED = "reservations = reservation[4..6] { user_id = pick(users).user_id }"


@pytest.mark.parametrize("m", [next(m for m in SIXTH if m.name == "basic_refusal_states_the_window"),
                               next(m for m in SEVENTH if m.name == "refusal_cites_48_hours")],
                         ids=lambda m: m.name)
def test_an_answer_the_spec_types_wrong_is_reported_at_its_let(m: Mutation) -> None:
    assert "a constant the spec writes" in found_at_line(m, "C152")["message"]


def test_an_answer_from_a_field_the_seed_fixes_is_reported_at_the_seed() -> None:
    f = found_at_line(next(m for m in SEVENTH if m.name == "every_booking_economy"), "C344")
    assert "the seed writes as one constant" in f["message"], f["message"]


def test_the_destination_fixed_by_the_seed_in_another_task() -> None:
    m = Mutation("every_destination_jfk", RLC, SEED, SEED[:-2] + '; destination = "JFK" }', "C344")
    assert "the seed writes" in found_at_line(m, "C344")["message"]


def test_a_seed_constant_the_answer_does_not_read_is_not_reported() -> None:
    """Every reservation one way: the cabin and destination answers still vary."""
    m = Mutation("all_one_way", RLC, SEED, SEED[:-2] + '; flight_type = "one_way" }', "C344")
    found = _findings(m.text(), m.spec, False, 16)
    assert not isinstance(found, str)
    assert not [f for f in found if f["code"] == "C344" and "seed" in f["message"]], found


def test_a_constant_answer_paid_without_the_reads_is_reported_at_the_rung() -> None:
    from tests.checks.mutation_set_eighth import EIGHTH
    f = found_at_line(next(m for m in EIGHTH if m.name == "top_rung_without_the_read"), "C151")
    assert "without any of the gold's reads" in f["message"], f["message"]


def test_computed_answers_paid_on_the_answer_alone_are_not_blind_guesses() -> None:
    """datetime_reasoning pays `state_matches and communicated()` 1.0: its answers are computed."""
    m = Mutation("unchanged", "specs/datetime_reasoning.tracec", "task ", "task ", "C151")
    found = _findings(m.text(), m.spec, False, 8)
    assert not isinstance(found, str)
    assert not [f for f in found if "without any of the gold's reads" in f["message"]]
