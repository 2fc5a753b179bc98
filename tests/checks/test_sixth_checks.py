"""The C150 probe the sixth held-out set's silent ladder mistakes led to: the gold's reads and
the report, without any write, must not earn more than the silent gold calls (a rung that pays
the answer alone above the work done silently)."""

from __future__ import annotations

import pytest

from tests.checks.mutation_set import Mutation, _findings
from tests.checks.mutation_set_fresh import found_at_line
from tests.checks.mutation_set_sixth import SIXTH

DR = "specs/datetime_reasoning.tracec"

OTHERS = [
    # the report-only rung raised above the silent gold's 0.5 in another spec
    Mutation("dr_report_rung_over_silent_gold", DR, "0.25 when communicated() and not forbidden_called",
             "0.6 when communicated() and not forbidden_called", "C150"),
]


@pytest.mark.parametrize("name", ["partial_rung_pays_the_report", "second_rung_pays_the_report"])
def test_sixth_set_report_rung_is_reported_at_its_line(name: str) -> None:
    f = found_at_line(next(m for m in SIXTH if m.name == name), "C150")
    assert "the gold's reads and the report, without any write" in f["message"], f["message"]


def test_report_rung_written_another_way() -> None:
    for m in OTHERS:
        f = found_at_line(m, m.code)
        assert "without any write" in f["message"], f["message"]


def test_shipped_report_rung_under_the_silent_gold_is_not_reported() -> None:
    """datetime_reasoning pays the report alone 0.25, under the silent gold's 0.5: no C150."""
    m = Mutation("unchanged", DR, "0.25 when communicated()", "0.25 when communicated()", "C150")
    found = _findings(m.text(), m.spec, m.variant, 16)
    assert not isinstance(found, str)
    assert not [f for f in found if f["code"] == "C150"]
