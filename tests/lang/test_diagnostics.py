"""Golden diagnostics for a suite of broken specs: precise, located, with hints; never a crash."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.lang.cases import BASE, BROKEN
from tracec.compiler.api import compile_text

GOLDEN = Path(__file__).parent / "golden" / "diagnostics"
UPDATE = os.environ.get("TRACEC_UPDATE_GOLDEN") == "1"


def test_base_spec_compiles() -> None:
    result = compile_text(BASE, "specs/demo.tracec")
    assert result.ok, result.rendered
    assert result.code is not None


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_spec_golden(name: str) -> None:
    result = compile_text(BROKEN[name], "specs/demo.tracec")
    assert not result.ok
    assert any(d.severity == "error" for d in result.diagnostics)
    text = result.rendered
    # every error names the file, line and column and shows the source line with a caret
    assert text.startswith("specs/demo.tracec:")
    assert "^" in text
    golden = GOLDEN / f"{name}.txt"
    if UPDATE or not golden.exists():
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text + "\n", encoding="utf-8")
    assert text + "\n" == golden.read_text(encoding="utf-8")


def test_several_errors_reported_in_one_run() -> None:
    result = compile_text(BROKEN["several_errors"], "specs/demo.tracec")
    errors = [d for d in result.diagnostics if d.severity == "error"]
    assert len(errors) >= 3
    messages = " | ".join(d.message for d in errors)
    assert "prize" in messages and "get_reservation" in messages and "totall" in messages


def test_did_you_mean_hints() -> None:
    result = compile_text(BROKEN["unknown_field"], "x.tracec")
    assert any(d.hint == "did you mean `flights`?" for d in result.diagnostics)
    result = compile_text(BROKEN["unknown_tool"], "x.tracec")
    assert any(d.hint == "did you mean `get_reservation_details`?" for d in result.diagnostics)
