"""The checker's passes are objects over one shared state, named by the driver, not a mixin
chain: each reports into the same diagnostics list."""

from __future__ import annotations

from tests.lang.cases import BASE, mutate
from tracec.compiler.api import compile_text
from tracec.lang.checkbase import CheckState
from tracec.lang.names import NameResolution
from tracec.lang.parser import parse_source
from tracec.lang.rewards import RewardAnalysis
from tracec.lang.semantics import Checker
from tracec.lang.statements import StatementChecks
from tracec.lang.typecheck import TypeChecking

PASSES = {"names": NameResolution, "types": TypeChecking, "statements": StatementChecks,
          "rewards": RewardAnalysis}


def test_each_pass_is_its_own_object_over_one_state() -> None:
    checker = Checker(parse_source(BASE), BASE, "specs/demo.tracec", None)
    assert isinstance(checker.s, CheckState)
    for attr, cls in PASSES.items():
        assert cls.__bases__ == (object,)  # no mixin chain: a pass inherits nothing
        assert type(getattr(checker, attr)) is cls and getattr(checker, attr).s is checker.s
    assert checker.types.names is checker.names and checker.rewards.types is checker.types
    assert checker.statements.names is checker.names and checker.statements.types is checker.types


def test_every_pass_reports_into_the_one_list() -> None:
    """A mistake for each pass (a bad binding name, an unknown name, a type mismatch, a rule
    after `otherwise`) in one spec: all four come back from one check."""
    text = mutate("let total =", "let _total = 1\n    let total =")
    text = text.replace("communicate total", "communicate totl\n    let n = 1 + \"a\"", 1)
    text = text.replace("0.0 otherwise", "0.0 otherwise\n    0.5 when progress == 1", 1)
    codes = {d.code for d in compile_text(text, "specs/demo.tracec").diagnostics}
    # statements (the binding, via names), types, names (the bare name), rewards
    assert {"E101", "E141", "E123", "E211"} <= codes
