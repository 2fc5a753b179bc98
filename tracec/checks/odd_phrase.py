"""Where a drawn phrase that breaks a policy rule was written: the seed list it is one of.

When the user's words break a rule (C141: a reason the insurance does not cover) and the
phrase they give was drawn from a list written in the seed block (`covered = [...]`) whose every
other element keeps the rule in its place, the list is right and that one element is the slip
(a bereavement written among the covered reasons): the finding goes to that element's line.
When the others break the rule too, the draw is what is wrong (`pick(covered + plain)`), and the
finding stays at the `let` that draws it.
"""

from __future__ import annotations

from collections.abc import Callable

from tracec.checks.locate import SpecMap
from tracec.core.diagnostics import Span
from tracec.lang import ast as A


def odd_element(where: SpecMap, phrase: str, keeps: Callable[[str], bool]) -> Span | None:
    """The span of ``phrase`` in the one seed list of two or more texts that holds it, when
    ``keeps`` holds for each of its other texts; None otherwise."""
    lists = [(s, s.value) for s in (where.ast.seed if where.ast is not None else [])
             if isinstance(s.value, A.ListLit)
             and any(isinstance(i, A.Str) and i.value == phrase for i in s.value.items)]
    if len(lists) != 1:
        return None
    stmt, lit = lists[0]
    others = [i.value for i in lit.items if isinstance(i, A.Str) and i.value != phrase]
    if len(others) < 2 or len(others) + 1 != len(lit.items) or not all(keeps(o) for o in others):
        return None
    item = next(i for i in lit.items if isinstance(i, A.Str) and i.value == phrase)
    return where.place(item.span) if "span" in item.model_fields_set else where.seed_span(stmt)
