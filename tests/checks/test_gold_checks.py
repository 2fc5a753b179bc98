"""Issue 30: checks that the gold is right. Each realistic author mistake of
``tests/checks/mutation_set.py`` is reported at the mutated line with its code, and the shipped
specs stay clean of the new codes."""

from __future__ import annotations

import pytest

from tests.checks.mutation_set import MUTATIONS, Mutation, run


@pytest.mark.parametrize("m", [pytest.param(m, id=m.name, marks=[pytest.mark.xfail(reason=m.gap)]
                                            if m.gap else []) for m in MUTATIONS])
def test_mutation_is_reported_at_the_mutated_line(m: Mutation) -> None:
    how, found = run(m)
    assert how == "line", (m.name, [(f["code"], f["line"], f["message"]) for f in found])
