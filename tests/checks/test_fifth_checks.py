"""Issue 30, the fifth set: the mistakes of ``tests/checks/mutation_set_fifth.py`` that C190-C194,
the C343 outlier rule and C113 at a forbid's filter now report at the mutated line, what they
say, and the ladders, answers and forbids they must leave alone."""

from __future__ import annotations

import pytest

from tests.checks.mutation_set import Mutation
from tests.checks.mutation_set_fifth import DR, FIFTH, MSTC, PER, PV
from tests.checks.mutation_set_fresh import found_at_line, judge
from tracec.checks.duration_answer import readings, span_of


@pytest.mark.parametrize(("name", "code", "says"), [
    ("answer_rung_pays_forbidden", "C190", "the same as the right answer alone"),
    ("progress_over_forbidden_rung", "C191", "pays an unfinished job up to 0.60"),
    ("diff_against_early", "C192", "diffs a time with itself"),
    ("ago_counts_calendar_days", "C192", "the answer `ago` agrees with the span"),
    ("bags_on_two_weight_typo", "C343", "`bags_on_two_then_cancel` is drawn on 4%"),
    ("sister_may_be_the_owner", "C162", "`let host` builds what it passes"),
    ("bags_nonfree_not_raised", "C168", "bag update 1 of the gold sets nonfree_baggages"),
    ("refused_twin_not_recent", "C193", "the policy refuses the forbidden call on the twin too"),
    ("compact_hides_membership_tool", "C194", "reads `owner.membership` of a user record"),
    ("forbid_may_hit_target", "C113", "`let near`'s filter lets it draw the gold's own record"),
])
def test_fifth_set_mistake_is_reported_at_its_line(name: str, code: str, says: str) -> None:
    f = found_at_line(next(m for m in FIFTH if m.name == name), code)
    assert says in f["message"], f["message"]


def _codes(m: Mutation) -> set[str]:
    return {f["code"] for f in judge(m)[1]}


def test_c190_not_given_when_no_rung_excludes_the_forbidden_call() -> None:
    # the ladder never looks at the forbidden call: a tie is what it says, not a slip
    m = Mutation("dr_no_forbid_rungs", DR,
                 "1.0 when state_matches and communicated() and not forbidden_called\n"
                 "    0.5 when state_matches and progress == 1 and not forbidden_called\n"
                 "    0.25 when communicated() and not forbidden_called",
                 "1.0 when state_matches and communicated()\n"
                 "    0.5 when state_matches and progress == 1\n"
                 "    0.25 when communicated()", "")
    assert "C190" not in _codes(m)


def test_c191_not_given_when_the_factor_stays_at_the_finished_rung() -> None:
    m = Mutation("per_progress_half", PER, "0.4 * progress when progress > 0",
                 "0.5 * progress when progress > 0", "")
    assert "C191" not in _codes(m)


def test_c343_still_blames_the_big_weight_when_it_is_the_outlier() -> None:
    m = Mutation("mstc_big_weight", MSTC, "task cancel_bags_rename weight 3",
                 "task cancel_bags_rename weight 40", "C343")
    f = found_at_line(m, "C343")
    assert "takes" in f["message"], f["message"]


def test_c113_stays_at_the_forbid_that_reads_the_gold_record() -> None:
    # the forbid and the gold read the same `let r`: its filter is not the slip
    m = Mutation("push_forbid_same", DR,
                 "reminder_timestamp = r.reminder_timestamp - d * 86400 - hrs * 3600)",
                 "reminder_timestamp = r.reminder_timestamp + d * 86400 + hrs * 3600)", "C113")
    f = found_at_line(m, "C113")
    assert "filter" not in f["message"], f["message"]


def test_e167_at_the_tools_line_when_several_golds_need_the_tool() -> None:
    # the compile error (judged at its line, as the issue measures) is at `tools [...]`
    assert judge(next(m for m in FIFTH if m.name == "lookup_tool_left_out"))[0] == "line"


def test_c193_not_given_when_the_twin_is_recent_another_way() -> None:
    # the twin booked at another recent time: the policy lets its cancellation through
    m = Mutation("twin_other_recent_time", PV,
                 'clone r with created_at = "2024-05-15T10:41:07", cabin = "economy"',
                 'clone r with created_at = "2024-05-15T06:12:00", cabin = "economy"', "")
    assert "C193" not in _codes(m)


def test_c194_not_given_when_the_variant_keeps_a_user_tool() -> None:
    # the compact variant drops a write tool only: the membership stays visible
    m = Mutation("compact_drops_rename", MSTC,
                 "tools [get_reservation_details, get_user_details, cancel_reservation, update_reservation_baggages, update_reservation_passengers]",
                 "tools [get_reservation_details, get_user_details, cancel_reservation, update_reservation_baggages]",
                 "", variant=True)
    assert "C194" not in _codes(m)


def test_span_of_and_readings() -> None:
    assert span_of('{"days": 2, "seconds": 3600}') == 2 * 86400 + 3600
    assert span_of('{"days": 2, "name": "x"}') is None  # not a duration
    assert span_of('{"price": 2}') is None
    assert span_of("12") is None
    r = readings(-(2 * 86400 + 7200))
    assert 50.0 in r and 2.0 in r and -2.0 in r
