"""C345: a weekday answer that is the weekday of the time before the gold's shift on most seeds."""

from __future__ import annotations

from tests.checks.mutation_set import Mutation
from tests.checks.mutation_set_fresh import findings_of, found_at_line
from tests.checks.mutation_set_seventh import SEVENTH

DR = "specs/datetime_reasoning.tracec"


def test_a_push_by_whole_weeks_is_reported_at_the_days_let() -> None:
    f = found_at_line(next(m for m in SEVENTH if m.name == "push_by_whole_weeks"), "C345")
    assert "skips the shift" in f["message"], f["message"]


def test_a_push_by_a_week_written_another_way() -> None:
    m = Mutation("push_one_week", DR, "let d      = randint(2..4)", "let d      = 7", "C345")
    found_at_line(m, "C345")


def test_pushes_that_move_the_weekday_are_not_reported() -> None:
    assert not findings_of(DR, "C345", 32)


def test_a_weekday_table_off_in_every_task_is_reported_at_the_table() -> None:
    from tests.checks.mutation_set_eighth import EIGHTH
    f = found_at_line(next(m for m in EIGHTH if m.name == "weekdays_listed_from_monday"), "C175")
    assert "reads the seed table `weekdays`" in f["message"], f["message"]


def test_one_task_off_stays_at_its_let() -> None:
    """Only push_reminder's index is off: the table is right, the `let` is the slip."""
    m = Mutation("push_index_off", DR, "let wd     = weekdays[int(due // 86400) % 7]",
                 "let wd     = weekdays[(int(due // 86400) + 1) % 7]", "C175")
    f = found_at_line(m, "C175")
    assert "seed table" not in f["message"], f["message"]


def test_full_days_counted_one_more_on_every_seed_is_reported_at_the_let() -> None:
    """C183: `// 86400 + 1` is one more than timestamp_diff's `days` on every seed."""
    from tests.checks.mutation_set_eighth import EIGHTH
    f = found_at_line(next(m for m in EIGHTH if m.name == "full_days_ago_counted_inclusive"), "C183")
    assert "one more than the gold's" in f["message"], f["message"]


def test_full_days_one_less_in_another_phrasing() -> None:
    m = Mutation("full_days_one_less", DR, "let ago   = (p.now - m.creation_timestamp) // 86400",
                 "let ago   = (p.now - m.creation_timestamp) // 86400 - 1", "C183")
    assert "one less than" in found_at_line(m, "C183")["message"]
