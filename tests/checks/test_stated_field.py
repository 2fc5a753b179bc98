"""C196: a value the user names by its field ("last name is {newlast}") written into another
field of the dict the task builds (`"first_name": newlast`)."""

from __future__ import annotations

from tests.checks.mutation_set import Mutation
from tests.checks.mutation_set_fresh import findings_of, found_at_line
from tests.checks.mutation_set_sixth import SIXTH
from tracec.checks.user_values import named_fields
from tracec.lang.parser import parse_source

MSTC = "specs/multi_step_task_completion.tracec"


def test_the_sixth_sets_last_name_as_first_name_is_reported_at_the_let() -> None:
    f = found_at_line(next(m for m in SIXTH if m.name == "new_last_name_as_first_name"), "C196")
    assert "as the last name" in f["message"] and "`first_name`" in f["message"], f["message"]


def test_the_other_task_written_another_way() -> None:
    m = Mutation("first_name_in_list_comp", MSTC,
                 '{"first_name": p.first_name, "last_name": newlast, "dob": p.dob} if p == who',
                 '{"first_name": newlast, "last_name": p.last_name, "dob": p.dob} if p == who', "C196")
    assert "`first_name`" in found_at_line(m, "C196")["message"]


def test_the_shipped_spec_puts_each_value_where_the_user_says() -> None:
    assert not findings_of(MSTC, "C196", 4)


SPEC = """capability c {
  domain airline
  task t {
    let x = "Smith"
    let y = [{"first_name": x, "last_name": x}]
    user "Hi. The first passenger's last name is {x}, thanks."
  }
}
"""


def test_named_fields_takes_the_nearest_field_words() -> None:
    """"the first passenger's last name is {x}": `last_name`, not `first_name`."""
    assert named_fields(parse_source(SPEC).tasks[0]) == [("x", "last_name")]
