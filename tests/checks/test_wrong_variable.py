"""An answer that reads the wrong variable (C157, C161, C167 at the `communicate`): another
`let` holds the expected value on every seed checked and the answer's own `let` has a use of its
own; when the answer's `let` is the one computed wrong, the finding stays at that `let`."""

from __future__ import annotations

import pytest

from tests.checks.mutation_set import Mutation, _findings
from tests.checks.mutation_set_fifth import FIFTH
from tests.checks.mutation_set_fresh import FRESH, found_at_line
from tests.checks.mutation_set_sixth import SIXTH

DR = "specs/datetime_reasoning.tracec"


@pytest.mark.parametrize("name,code,let", [("old_weekday_after_the_push", "C161", "wd"),
                                           ("old_weekday_after_the_push", "C167", "wd"),
                                           ("first_listed_not_first_due", "C157", "early")])
def test_the_answer_reading_the_wrong_let_is_reported_at_the_communicate(name: str, code: str,
                                                                        let: str) -> None:
    f = found_at_line(next(m for m in SIXTH if m.name == name), code)
    assert f"did you mean to answer from `{let}`?" in f["hint"], f


def test_the_other_listed_reminder_in_another_phrasing() -> None:
    m = Mutation("answers_b", DR, "communicate early.content, gap", "communicate b.content, gap",
                 "C157")
    assert "`early`" in found_at_line(m, "C157")["hint"]


def test_a_let_computed_wrong_stays_at_the_let() -> None:
    """`let early = ... else a`: `b` is right only where the answer is wrong, not on every seed."""
    m = next(m for m in FRESH if m.name == "due_first_always_the_first_named")
    f = found_at_line(m, "C157")
    assert "did you mean" not in f["hint"], f


def test_an_answer_let_with_no_other_use_stays_at_the_let() -> None:
    """`let set_wd` read by nothing but the answer: its computation is the slip."""
    m = Mutation("old_weekday_own_let", DR, "communicate wd\n    forbid modify_reminder",
                 "communicate set_wd\n    forbid modify_reminder", "C161",
                 line_of="let set_wd")
    text = m.text().replace("w != set_wd and w != wd", "w != wd")
    found = _findings(text, m.spec, False, 16)
    assert not isinstance(found, str)
    line = next(n for n, s in enumerate(text.splitlines(), 1) if "let set_wd" in s)
    assert ("C161", line) in [(f["code"], f["line"]) for f in found], found


def test_a_let_reading_the_owner_while_the_drawn_host_is_unused() -> None:
    """C162 at `let a = owner.address`: `host`, a user record, is drawn and never used."""
    found_at_line(next(m for m in SIXTH if m.name == "sister_is_the_owner"), "C162")


def test_a_draw_that_may_draw_the_owner_stays_at_the_draw() -> None:
    """`let host = pick(...)` without `!= owner`: the draw is the slip, nothing is unused."""
    m = next(m for m in FIFTH if m.name == "sister_may_be_the_owner")
    found_at_line(m, "C162")
