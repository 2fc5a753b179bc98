"""Policy rules (C141) and policy sections per variant (C154) apply the domain's written
policy; a spec whose own inline policy replaces it (the cpu-demo `cancel_on_request_compact`:
"every reservation may be cancelled") is not held to the domain's rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracec.checks import run_checks
from tracec.compiler.api import compile_text

DEMO = Path("configs/cpu-demo-specs/cancel_on_request_compact.tracec")
NEW = {"C141", "C154", "C155", "C156", "C157", "C158", "C159", "C160", "C161", "C162"}  # issue 30


def _codes(text: str) -> set[str]:
    result = compile_text(text, str(DEMO), base_dir=DEMO.parent)
    assert result.ok, result.rendered
    return {f["code"] for f in run_checks(result.module, seeds=16, check_env=False).findings}


def test_an_inline_policy_replaces_the_domains_rules() -> None:
    assert not _codes(DEMO.read_text()) & {"C141", "C154"}


def test_without_it_the_domains_rules_apply() -> None:
    text = DEMO.read_text()
    start, end = text.index('  policy """'), text.index('"""\n  hint') + 4
    codes = _codes(text[:start] + '  policy sections ["Book flight"]\n' + text[end:])
    assert {"C141", "C154"} <= codes


@pytest.mark.parametrize("spec", sorted(Path("specs").glob("*.tracec")), ids=lambda p: p.stem)
def test_shipped_specs_are_clean_of_the_new_codes(spec: Path) -> None:
    result = compile_text(spec.read_text(), str(spec), base_dir=spec.parent)
    assert result.ok, result.rendered
    for mod in [result.module] + [v.module for v in result.variants]:
        found = run_checks(mod, seeds=16, check_env=False).findings
        assert not [f["rendered"] for f in found if f["code"] in NEW], spec
