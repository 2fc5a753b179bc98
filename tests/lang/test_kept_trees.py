"""`keeping_trees`: the tree `tracec check` reuses for its spans is the tree as parsed, not the
compiler's copy (which the type checker annotates in place)."""

from __future__ import annotations

from pathlib import Path

from tracec.compiler import api
from tracec.lang import ast as A
from tracec.lang.fragments import expand
from tracec.lang.parser import keeping_trees, kept_tree, parse_source

SPEC = Path(__file__).resolve().parents[2] / "specs" / "tool_calling_precision.tracec"


def _attrs(node: object) -> list[A.Attr]:
    if isinstance(node, A.Attr):
        return [node, *_attrs(node.__dict__)]
    if isinstance(node, A.Node):
        return _attrs(node.__dict__)
    if isinstance(node, dict):
        return [f for v in node.values() for f in _attrs(v)]
    if isinstance(node, list):
        return [f for v in node for f in _attrs(v)]
    return []


def test_kept_tree_is_the_parse_before_the_compiler_annotates_it(monkeypatch) -> None:
    compiled: list[A.Capability] = []

    def parse(src: str) -> A.Capability:
        compiled.append(parse_source(src))
        return compiled[-1]

    monkeypatch.setattr(api, "parse_source", parse)
    text = SPEC.read_text(encoding="utf-8")
    source = expand(text, SPEC.parent).text
    with keeping_trees():
        result = api.compile_text(text, str(SPEC), base_dir=SPEC.parent)
    assert result.code and not [d for d in result.diagnostics if d.severity == "error"]
    kept = kept_tree(source)
    fresh = parse_source(source)
    assert kept == fresh
    assert not any(a.ref for a in _attrs(kept))
    assert any(a.ref for a in _attrs(compiled[0]))  # the compiler's own tree: annotated
    assert kept_tree(source) is None  # handed out once


def test_nothing_is_kept_outside_keeping_trees() -> None:
    source = expand(SPEC.read_text(encoding="utf-8"), SPEC.parent).text
    parse_source(source)
    assert kept_tree(source) is None
