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
    assert "`let target` draws what has `available`" in f["message"], f["message"]


def test_the_draw_that_tells_failing_seeds_from_passing_ones() -> None:
    """The contrast alone (an error that names no field): `available` is False on every seed
    the call fails on, True on those it passes."""
    from pathlib import Path

    from tracec.checks.draw_contrast import DrawContrast
    from tracec.checks.locate import SpecMap
    from tracec.compiler.api import compile_text
    from tracec.harness.resolve import env_class

    spec = "specs/tool_calling_precision.tracec"
    result = compile_text(Path(spec).read_text(), spec, base_dir=Path(spec).parent,
                          display_dir="specs")
    contrast = DrawContrast(SpecMap(env_class(result.module).capability, None))
    for i, ok in enumerate([False, False, True, True]):
        values = {"target": {"item_id": str(i), "available": ok}}
        (contrast.ok("modify_variant", values) if ok
         else contrast.fail("modify_variant", values, "modify_pending_order_items", 0))
    name, span, field, value = contrast.cause("modify_variant")
    assert (name, field, value) == ("target", "available", False) and span is not None


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


@pytest.mark.parametrize("m", [next(m for m in FIFTH if m.name == "change_ignores_seats"),
                               next(m for m in SEVENTH if m.name == "new_day_may_be_full")],
                         ids=lambda m: m.name)
def test_a_day_drawn_without_seats_is_reported_at_its_pick(m: Mutation) -> None:
    """`Not enough seats`: the entry the drawn day names has `available_seats`."""
    f = found_at_line(m, "C102")
    assert "`let day` draws what has `available_seats" in f["message"], f["message"]


def test_a_setup_distractor_that_leaves_the_field_the_error_names_is_reported_there() -> None:
    """`cellular already enabled`: the distractor adds the settings without `cellular = False`."""
    from tests.checks.mutation_set_eighth import EIGHTH
    f = found_at_line(next(m for m in EIGHTH if m.name == "setup_keeps_cellular_on"), "C102")
    assert "adds the record without setting `cellular`" in f["message"], f["message"]


def test_the_location_setup_left_on_in_another_task() -> None:
    m = Mutation("setup_keeps_location_on", "specs/permission_error_recovery.tracec",
                 "low_battery_mode = False; location_service = False; cellular = False }",
                 "low_battery_mode = False; cellular = False }", "C102")
    assert "without setting `location_service`" in found_at_line(m, "C102")["message"]
