"""Lowering: the IR is the compiler's own (no AST node, no span) and carries everything the
code generator needs (generating from the IR read back from JSON gives the same module)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from pydantic import BaseModel

from tracec.compiler import codegen
from tracec.compiler import ir as IR
from tracec.compiler.api import compile_file
from tracec.core.diagnostics import Span

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted((ROOT / "specs").glob("*.tracec")) + [
    Path(__file__).parent / "specs" / "all_constructs.tracec"]


def _walk(node: object):
    yield node
    if isinstance(node, BaseModel):
        for name in type(node).model_fields:
            yield from _walk(getattr(node, name))
    elif isinstance(node, (list, tuple)):
        for item in node:
            yield from _walk(item)
    elif isinstance(node, dict):
        for item in node.values():
            yield from _walk(item)


@pytest.mark.parametrize("path", SPECS, ids=[p.name for p in SPECS])
def test_ir_has_only_ir_nodes_and_round_trips_through_json(path: Path) -> None:
    res = compile_file(path)
    assert res.ok, res.rendered
    models = [n for n in _walk(res.ir) if isinstance(n, BaseModel)]
    kinds = {type(n).__name__ for n in models}
    assert {"TaskIR", "RuleIR", "Text"} <= kinds
    assert all(type(n).__module__ == "tracec.compiler.ir" for n in models), \
        sorted({type(n).__module__ + "." + type(n).__name__ for n in models})
    assert not any(isinstance(n, Span) for n in _walk(res.ir))
    again = IR.CapabilityIR.model_validate_json(codegen.ir_json(res.ir))
    assert codegen.generate_module(again) == res.code


def test_statement_positions_are_spec_lines() -> None:
    path = Path(__file__).parent / "specs" / "all_constructs.tracec"
    lines = path.read_text().splitlines()
    res = compile_file(path)
    assert res.ok
    for task in res.ir.tasks:
        assert lines[task.line - 1].lstrip().startswith("task ")
        for let in task.lets:
            line = lines[let.line - 1]
            assert line[let.column - 1:].startswith(let.name) and "let " in line
    for rule in res.ir.rules:
        assert " ".join(rule.text.split()).split()[0] in lines[rule.line - 1]


def test_ir_module_does_not_import_the_front_end() -> None:
    tree = ast.parse((ROOT / "tracec" / "compiler" / "ir.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not any(m and m.startswith("tracec") for m in imported), imported
