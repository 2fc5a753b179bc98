"""The Lark side: one Transformer method per grammar name, spans in the spec's coordinates."""

from __future__ import annotations

import pytest

from tests.lang.cases import BASE, mutate
from tracec.core.diagnostics import SpecError
from tracec.lang import ast as A
from tracec.lang.parser import _parser, parse_expr, parse_source
from tracec.lang.to_ast import ToAst


def _tree_names() -> set[str]:
    """The names trees get: each rule's alias or name, except `?rule` alternatives that pass
    one child through and lark's internal rules."""
    names = set()
    for rule in _parser().rules:
        name = rule.alias or rule.origin.name
        if not isinstance(name, str) or name.startswith("_"):
            continue
        kept = [s for s in rule.expansion if not (s.is_term and s.filter_out)]
        if rule.options.expand1 and rule.alias is None and len(kept) == 1:
            continue  # inlined: the child's own node (`"(" expr ")"` too)
        names.add(name)
    return names


def _methods() -> set[str]:
    return {n for n in vars(ToAst) if not n.startswith("_") and callable(vars(ToAst)[n])}


def test_every_grammar_name_has_one_transformer_method_and_no_method_is_dead() -> None:
    names = _tree_names()
    assert {"capability", "task_let", "forbid_call", "forbid_tool", "rule_when", "int"} <= names
    assert names == _methods(), (names ^ _methods())


def _error(text: str) -> tuple[str, int, int]:
    with pytest.raises(SpecError) as err:
        parse_source(text)
    diag = err.value.diagnostics[0]
    return diag.message, diag.span.line, diag.span.column


def test_errors_inside_an_interpolation_are_located_in_the_spec() -> None:
    line = 'user "Hi, what did reservation {r.reservation_id} cost?"'
    at = BASE.splitlines().index("    " + line) + 1
    col = len("    " + line.split("{")[0]) + 2  # just inside the `{`
    assert _error(mutate("{r.reservation_id}", "{f(a=1, r)}")) == (
        "positional argument after keyword argument", at, col + len("f(a=1, "))
    assert _error(mutate("{r.reservation_id}", "{" + "4" * 50 + "}")) == (
        "number literal with 50 characters (at most 40)", at, col)
    two_lines = mutate('user "Hi, what did reservation {r.reservation_id} cost?"',
                       'user """Hi,\n  what {f(a=1,\n 2)} cost?"""')
    assert _error(two_lines) == ("positional argument after keyword argument", at + 2, 2)


def test_parse_expr_spans_start_where_it_is_told() -> None:
    node = parse_expr("a.b +\n c", 3, 7)
    assert isinstance(node, A.BinOp)
    assert (node.span.line, node.span.column, node.span.end_line, node.span.end_column) == (
        3, 7, 4, 3)
    assert (node.left.span.line, node.left.span.column) == (3, 7)
    assert (node.right.span.line, node.right.span.column) == (4, 2)  # later lines keep columns


def test_of_several_rejected_constructs_the_first_in_the_source_is_reported() -> None:
    dup_then_number = mutate("communicate total",
                             'communicate total\n    user "u"\n    let n = ' + "1" * 50)
    assert _error(dup_then_number)[0] == "duplicate `user` in task `look`"
    number_then_dup = mutate("let r = pick", 'let n = ' + "1" * 50 + '\n    user "u"\n    let r = pick')
    assert _error(number_then_dup)[0] == "number literal with 50 characters (at most 40)"
    # one node, two errors: the outer check wins (a too-long positional after a keyword)
    both = mutate("communicate total", "communicate f(a=1, " + "8" * 50 + ")")
    assert _error(both)[0] == "positional argument after keyword argument"


def test_a_task_let_and_a_field_block_let_are_one_node_kind() -> None:
    cap = parse_source(mutate("{ user_id = pick(users).user_id }",
                              "{ let u = pick(users); user_id = u.user_id }"))
    fields = cap.seed[1].fields or []
    assert [type(f).__name__ for f in fields] == ["Let", "FieldAssign"]
    assert [type(x).__name__ for x in cap.tasks[0].lets] == ["Let", "Let"]
