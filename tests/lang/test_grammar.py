"""Every construct of the language parses into the expected AST."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracec.compiler.codegen import ExprGen
from tracec.compiler.lower import lower_expr
from tracec.core.diagnostics import SpecError
from tracec.lang import ast as A
from tracec.lang.parser import decode_string, parse_expr, parse_source

SPEC = Path(__file__).parent / "specs" / "all_constructs.tracec"


def _nodes(node: object) -> list[object]:
    out = [node]
    if isinstance(node, A.Node):
        for name in type(node).model_fields:
            out += _nodes(getattr(node, name))
    elif isinstance(node, list):
        for item in node:
            out += _nodes(item)
    return out


def test_all_constructs_parse() -> None:
    cap = parse_source(SPEC.read_text())
    assert cap.name == "all_constructs" and cap.domain == "airline" and cap.max_turns == 9
    assert cap.hint is not None and "\n" in cap.hint.parts[0]
    assert [s.name for s in cap.seed] == ["users", "flights", "reservations", "cabins", "fares",
                                          "limit"]
    assert [f.name for f in cap.seed[2].fields or []] == ["user_id", "cabin"]
    total, lookup = cap.tasks
    assert total.weight == 3.0 and lookup.weight == 1.0
    assert [c.name for c in total.gold] == ["get_reservation_details", "cancel_reservation"]
    assert len(total.communicate) == 2
    assert total.forbid[0].tool == "send_certificate" and total.forbid[0].args is None
    assert total.forbid[1].args is not None and total.forbid[1].args[0].name == "reservation_id"
    assert total.replies[0].keywords == ["confirm", "proceed"] and total.replies[1].keywords == []
    assert isinstance(total.distractors[0].stmts[0], A.Clone)
    extra = cap.distractors[0]
    assert isinstance(extra.stmts[0], A.AddRecord) and isinstance(extra.stmts[1], A.Say)
    tools = {t.name: t for t in cap.tools}
    assert tools["count_passengers"].params[1].default is not None
    assert tools["mark_checked"].writes and tools["reservation_total"].python == "reservation_total"
    kinds = {type(s).__name__ for t in cap.tools for s in t.body or []}
    assert kinds == {"Let", "Require", "SetStmt", "Return"}
    assert cap.reward is not None and cap.reward.rules[-1].cond is None
    node_types = {type(n).__name__ for n in _nodes(cap)}
    for expected in ["Num", "Str", "Name", "Attr", "Index", "Call", "CallGen", "ListLit",
                     "ListComp", "DictLit", "DictComp", "Unary", "BinOp", "Compare", "BoolOp",
                     "IfElse", "Range", "Text", "NoneLit"]:
        assert expected in node_types, expected


def test_interpolation_parts_and_spans() -> None:
    cap = parse_source(SPEC.read_text())
    user = cap.tasks[0].user
    assert user is not None
    assert [p if isinstance(p, str) else type(p).__name__ for p in user.parts] == [
        "Hi ", "Attr", ", reservation ", "Attr", ": total? {literal braces} ", "Attr", " ", "Attr"]
    first = user.parts[1]
    line = SPEC.read_text().splitlines()[first.span.line - 1]
    assert line[first.span.column - 1:first.span.end_column - 1] == "owner.name.first_name"


@pytest.mark.parametrize("src", [
    "1 + 2 * 3 - -4", "(1 + 2) * 3", "10 // 3 % 2", "7 / 2", "2 - 3 - 4", "not 1 == 2",
    "1 < 2 and 3 > 4 or 5 >= 5", "1 if 2 > 3 else 4", "[x * 2 for x in [1, 2, 3] if x != 2]",
    "{k: 1 for k in [\"a\", \"b\"]}", "3 in [1, 2, 3]", "4 not in [1]", "\"ab\" + \"cd\"",
    "sum(x for x in [1, 2, 3])", "max([1, 5, 2])", "min(3, 1, 2)",
])
def test_expression_semantics_match_python(src: str) -> None:
    """Generated Python for an expression computes what the same Python text computes."""
    code = ExprGen("task").gen(lower_expr(parse_expr(src)))
    assert eval(code, {}) == eval(src, {})  # noqa: S307 - test-only, our own literals


def test_string_escapes() -> None:
    assert decode_string(r'"a\"b\\c\nd\te\u00e9"') == 'a"b\\c\nd\te\u00e9'
    assert decode_string('"""x\n"y"\n"""') == 'x\n"y"\n'


@pytest.mark.parametrize("bad", ["", "capability", "capability x {", "task t {}", "}{", "\x00",
                                 "capability x { seed { a = } }", "capability x { reward { 1 } }"])
def test_syntax_errors_are_diagnostics(bad: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_source(bad)
    assert err.value.diagnostics and err.value.diagnostics[0].span.line >= 1
