"""The shipped specs compile, and generated_envs/ is exactly what they compile to."""

from __future__ import annotations

import ast
from pathlib import Path

from tracec.compiler import build

ROOT = Path(__file__).resolve().parents[2]


def test_generated_envs_are_up_to_date_and_readable() -> None:
    plan = build.plan([ROOT / "specs"], ROOT / "generated_envs")
    assert plan.ok, "\n".join(r.rendered for r in plan.results if not r.ok)
    assert len(plan.results) >= 6
    assert build.differences(plan, ROOT / "generated_envs") == [], "run: tracec compile specs/"
    for name, code in plan.files.items():
        ast.parse(code)
        long = [i for i, line in enumerate(code.splitlines(), 1) if len(line) > 100]
        assert not long, f"{name}: lines over 100 columns: {long[:5]}"
