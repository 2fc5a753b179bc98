"""C197: a gold write that a policy rule guards, on a record no earlier gold call read; and the
policy's own-reservation rule (a write on another user's booking) locating a failed gold call
at the `pick` that drew the booking (C102)."""

from __future__ import annotations

from tests.checks.mutation_set import Mutation
from tests.checks.mutation_set_fresh import findings_of, found_at_line
from tests.checks.mutation_set_seventh import SEVENTH
from tests.checks.mutation_set_sixth import SIXTH
from tracec.domains.policy_rules import owned

PV = "specs/precondition_verification.tracec"
SDR = "specs/structured_data_reasoning.tracec"
CANCEL = "cancel_request.tracec"


def test_a_cancel_without_reading_the_booking_is_reported_at_the_cancel() -> None:
    f = found_at_line(next(m for m in SEVENTH if m.name == "cancel_without_reading"), "C197")
    assert "no earlier gold call reads" in f["message"], f["message"]


def test_bags_added_without_reading_in_another_spec() -> None:
    m = Mutation("bags_without_reading", SDR,
                 "      get_reservation_details(reservation_id = r.reservation_id)\n"
                 "      update_reservation_baggages(",
                 "      update_reservation_baggages(", "C197")
    found_at_line(m, "C197")


def test_a_cancel_after_the_read_is_not_reported() -> None:
    assert not findings_of(PV, "C197", 8)


def test_an_inline_policy_replaces_the_rules() -> None:
    """benchmarks/trace_cpu's cancel task writes first, under its own inline policy."""
    spec = "benchmarks/trace_cpu/specs/" + CANCEL
    assert not findings_of(spec, "C197", 8)


def test_a_stranger_s_booking_is_blamed_on_its_pick() -> None:
    f = found_at_line(next(m for m in SIXTH if m.name == "bags_on_a_strangers_booking"), "C102")
    assert "the reservation is the user's own" in f["message"], f["message"]


def test_owned_reads_the_first_user_id_the_words_give() -> None:
    db = {"users": {"ann_lee_1": {}, "bo_wu_2": {}},
          "reservations": {"R1": {"user_id": "ann_lee_1"}, "R2": {"user_id": "bo_wu_2"}}}
    rule = owned("reservations", "reservation_id")
    words = "Hi, I'm ann_lee_1. My colleague bo_wu_2 has trips too; leave them alone."
    assert rule(db, {"reservation_id": "R1"}, words) is None
    assert "bo_wu_2" in (rule(db, {"reservation_id": "R2"}, words) or "")
    assert rule(db, {"reservation_id": "R2"}, "Please cancel R2.") is None  # no id said


def test_a_retail_write_before_authenticating_is_reported_at_the_gold_s_first_call() -> None:
    """C188: the retail policy has the agent authenticate first, even given the user id."""
    from tests.checks.mutation_set_ninth import NINTH
    f = found_at_line(next(m for m in NINTH if m.name == "return_without_authentication"), "C188")
    assert "authenticates the user" in f["message"], f["message"]


def test_authenticated_retail_tasks_and_airline_tasks_are_not_reported() -> None:
    for spec in ("specs/tool_calling_precision.tracec", PV):
        assert not findings_of(spec, "C188", 4), spec
