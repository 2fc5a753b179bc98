"""Hint-leak lint (compile warning and check warning) and the target-fidelity report."""

from __future__ import annotations

from tests.lang.cases import BASE, mutate
from tracec.checks import run_checks
from tracec.checks.fidelity import fidelity, schema_changes
from tracec.compiler.api import compile_text
from tracec.harness.resolve import env_class

LEAKY = mutate(
    "communicate total",
    'communicate total\n    hint "Call get_reservation_details with {r.reservation_id}."')


def test_hint_naming_the_gold_call_and_its_argument_warns() -> None:
    result = compile_text(LEAKY, "specs/demo.tracec")
    assert result.ok, result.rendered
    assert ("specs/demo.tracec:14:10: warning: the hint gives away the gold call "
            "`get_reservation_details` with its `reservation_id`") in result.rendered
    report = run_checks(result.module, seeds=2, check_env=False)
    assert any(w.startswith("specs/demo.tracec:14:10: warning: hint leak: task `look`: the hint "
                            "names `get_reservation_details`")
               for w in report.warnings), report.warnings


def test_hint_that_explains_without_values_is_fine() -> None:
    ok = mutate("communicate total",
                'communicate total\n    hint "Read the reservation with get_reservation_details first."')
    result = compile_text(ok, "specs/demo.tracec")
    assert result.ok and "gives away" not in result.rendered
    assert not any("hint leak" in w for w in run_checks(result.module, seeds=2, check_env=False).warnings)


def test_fidelity_same_tools() -> None:
    result = compile_text(BASE, "specs/demo.tracec")
    fid = fidelity(env_class(result.module))
    assert fid.same and fid.summary() == "identical to airline's"


def test_fidelity_added_removed_changed() -> None:
    spec = BASE.replace('  domain airline\n', '  domain airline\n  tools [get_reservation_details, cancel_reservation]\n  compact_tools\n')
    spec = spec.replace("  reward {", '  tool echo(x: str) "Echo." {\n    return x\n  }\n  reward {')
    result = compile_text(spec, "specs/demo.tracec")
    assert result.ok, result.rendered
    fid = fidelity(env_class(result.module))
    assert fid.added == ["echo"]
    assert "book_reservation" in fid.removed and "get_reservation_details" not in fid.removed
    assert {c.name for c in fid.changed} <= {"get_reservation_details", "cancel_reservation"}
    report = run_checks(result.module, seeds=2, check_env=False)
    assert report.fidelity["added"] == ["echo"]


def test_schema_changes_names_each_difference() -> None:
    target = {"name": "t", "description": "Long text. More.", "parameters": {
        "type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
        "required": ["a"]}}
    shown = {"name": "t", "description": "Long text.", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer"}, "c": {"type": "string"}},
        "required": ["a", "c"]}}
    assert schema_changes(target, shown) == [
        "argument `a` type string -> integer", "argument `b` removed", "argument `c` added",
        "required arguments changed", "description shortened"]
