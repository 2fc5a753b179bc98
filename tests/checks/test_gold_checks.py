"""Issue 30: checks that the gold is right. Each realistic author mistake of
``tests/checks/mutation_set.py`` is reported at the mutated line with its code, and the shipped
specs stay clean of the new codes."""

from __future__ import annotations

import pytest

from tests.checks.mutation_set import MUTATIONS, Mutation, run
from tracec.checks.behaviours import wrong_report
from tracec.checks.provenance import direct
from tracec.lang import ast as A
from tracec.runtime.outcome import mentioned


@pytest.mark.parametrize("m", [pytest.param(m, id=m.name, marks=[pytest.mark.xfail(reason=m.gap)]
                                            if m.gap else []) for m in MUTATIONS])
def test_mutation_is_reported_at_the_mutated_line(m: Mutation) -> None:
    how, found = run(m)
    assert how == "line", (m.name, [(f["code"], f["line"], f["message"]) for f in found])


def _rendered(name: str, code: str) -> str:
    m = next(m for m in MUTATIONS if m.name == name)
    _, found = run(m)
    return next(f["rendered"] for f in found if f["code"] == code)


def test_ladder_order_says_what_is_paid_more_than_what() -> None:
    text = _rendered("forbidden_rung_without_progress", "C150")
    head = text.split("\n", 1)[0]
    assert head.startswith("specs/multi_step_task_completion.tracec:146:5: error: task `")
    assert "alone earns 0.50 (rule 1 `0.5 when forbidden_called`), more than" in head
    assert "= hint: order the rungs" in text
    stray = _rendered("progress_rung_above_silent_gold", "C150").split("\n", 1)[0]
    assert "plus a stray write update_reservation_" in stray
    assert "earns 0.80 (rule 4 `0.8 * progress when progress > 0`), more than the exact silent " \
           "gold calls (0.70, rule 3 `0.7 when state_matches and progress == 1`)" in stray


def test_provenance_names_the_value_and_where_it_is_missing() -> None:
    head = _rendered("gold_without_the_read_that_shows_an_id", "C152").split("\n", 1)[0]
    assert "the gold call `modify_pending_order_items` passes `payment_method_id` = '" in head
    assert "not in the user's words, the policy or any gold call's output before that call" in head
    record = _rendered("answer_from_the_wrong_variable", "C152").split("\n", 1)[0]
    assert "the answer `other.destination` is read from `other`, the record '" in record


def test_wrong_report_says_no_answer_right() -> None:
    answers = {"fee": 150, "city": "Paris", "ids": ["a1", "b2"], "rate": 12.5}
    text = wrong_report(answers)
    assert not any(mentioned(v, [text]) for v in answers.values()), text


def test_direct_values_are_reads_not_computations() -> None:
    r = A.Name(id="r")
    lets = {"r": A.Call(func="pick", args=[A.Name(id="reservations")]),
            "total": A.CallGen(func="sum", elt=A.Attr(obj=A.Name(id="f"), name="price"),
                               comp=A.Comprehension(var="f", iter=A.Attr(obj=r, name="flights")))}
    assert direct(A.Attr(obj=r, name="destination"), lets)
    assert direct(A.Str(value="24 hours"), lets)
    assert not direct(A.Name(id="total"), lets)
