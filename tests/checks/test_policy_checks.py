"""Policy rules (C141) and policy sections per variant (C154) apply the domain's written
policy; a spec whose own inline policy replaces it (the cpu-demo `cancel_on_request_compact`:
"every reservation may be cancelled") is not held to the domain's rules."""

from __future__ import annotations

from pathlib import Path

from tracec.checks import run_checks
from tracec.compiler.api import compile_text

DEMO = Path("configs/cpu-demo-specs/cancel_on_request_compact.tracec")


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
