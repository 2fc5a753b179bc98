"""Generated code a reviewer reads: the class docstring, no empty or duplicated payloads,
shared distractors generated once."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.lang.cases import BASE
from tracec.compiler.api import compile_file, compile_text

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted((ROOT / "specs").glob("*.tracec"))


@pytest.fixture(scope="module", params=SPECS, ids=[p.name for p in SPECS])
def compiled(request):
    res = compile_file(request.param)
    assert res.ok, res.rendered
    return res


def _class_doc(code: str) -> str:
    tree = ast.parse(code)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    return ast.get_docstring(cls) or ""


def test_class_docstring_lists_tasks_tools_rewards_and_episode_end(compiled) -> None:
    doc = _class_doc(compiled.code)
    ir = compiled.ir
    for section in ("## Tasks", "## Action Space", "## Observation Space", "## Rewards",
                    "## Episode End"):
        assert section in doc
    flat = " ".join(doc.split())
    for task in ir.tasks:
        assert f"`{task.name}`: weight {task.weight:g}" in flat
    for rule in ir.rules:
        assert f"`{' '.join(rule.text.split())}`" in flat
    assert f"truncated after {ir.max_turns} turns" in flat
    if ir.shown_tools is not None:
        assert all(f"`{t}`" in flat for t in ir.shown_tools)


def test_no_empty_fields_and_no_communicate_duplicate(compiled) -> None:
    code = compiled.code
    for empty in ("forbid=[]", "replies=[]", "distractors=()", "values={}", "communicate={}"):
        assert empty not in code
    assert "_communicate" not in code.split("RULES")[0]  # only the rules read it


def test_top_level_distractors_are_functions_called_by_every_task() -> None:
    res = compile_file(ROOT / "specs" / "multi_step_task_completion.tracec")
    assert res.ok
    assert res.code.count("def distractor_stranger(") == 1
    assert "# distractor `stranger`" not in res.code
    assert res.code.count("user_text = distractor_stranger(") == len(res.ir.tasks)



def test_header_names_what_to_regenerate_with() -> None:
    """`Regenerate:` gives the spec's folder, or for a spec without one, the spec itself."""
    assert "Regenerate: tracec compile specs/\n" in compile_text(BASE, "specs/demo.tracec").code
    assert "Regenerate: tracec compile demo.tracec\n" in compile_text(BASE, "demo.tracec").code
