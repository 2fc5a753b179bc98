"""C102 at the `pick` whose drawn record tells the seeds a gold call fails on from those it
passes on (a variant drawn out of stock), not at the call."""

from __future__ import annotations

import pytest

from tests.checks.mutation_set import Mutation
from tests.checks.mutation_set_fifth import FIFTH
from tests.checks.mutation_set_fresh import found_at_line
from tests.checks.mutation_set_seventh import SEVENTH


@pytest.mark.parametrize("m", [next(m for m in FIFTH if m.name == "variant_target_may_be_unavailable"),
                               next(m for m in SEVENTH if m.name == "target_may_be_sold_out")],
                         ids=lambda m: m.name)
def test_a_draw_that_may_be_out_of_stock_is_reported_at_its_pick(m: Mutation) -> None:
    f = found_at_line(m, "C102")
    assert "available = False on every seed the call fails on" in f["message"], f["message"]
    assert "x.available != False" in f["hint"], f["hint"]


def test_a_call_that_fails_on_every_seed_stays_at_its_cause() -> None:
    """No passing seed to tell the draw by: the error's own cause (the `let` it names)."""
    from tracec.checks.draw_contrast import DrawContrast

    class Where:
        ast = None

        def pick_lets(self, task: str) -> list:
            return []

    contrast = DrawContrast(Where())  # type: ignore[arg-type]
    contrast.fail("t", {"x": {"available": False}}, "modify", 0)
    contrast.fail("t", {"x": {"available": False}}, "modify", 0)
    assert contrast.cause("t") is None
