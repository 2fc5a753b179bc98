"""C185: a drawn record the gold writes that the user's words never identify."""

from __future__ import annotations

from tests.checks.mutation_set import Mutation
from tests.checks.mutation_set_eighth import EIGHTH
from tests.checks.mutation_set_fresh import findings_of, found_at_line

TCP = "specs/tool_calling_precision.tracec"
MSTC = "specs/multi_step_task_completion.tracec"


def test_a_variant_described_by_the_old_items_options_is_reported_at_the_user() -> None:
    f = found_at_line(next(m for m in EIGHTH if m.name == "target_options_copied_from_item"), "C185")
    assert "from `target`" in f["message"], f["message"]


def test_a_variant_never_described_in_another_phrasing() -> None:
    m = Mutation("variant_never_described", TCP, "to the one with {fmt(values(target.options))}",
                 "to a different variant", "C185")
    found_at_line(m, "C185")


def test_every_shipped_draw_is_named_by_the_user() -> None:
    for spec in (TCP, MSTC):
        assert not findings_of(spec, "C185", 2), spec
