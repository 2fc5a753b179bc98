"""Spec-like text of IR nodes (expressions, gold calls, forbids, texts), for reviewers.

The text is normalised (one space around operators, parentheses only where needed), so two
versions of a spec that differ only in layout print the same.
"""

from __future__ import annotations

import json
from typing import Any

from tracec.compiler import ir as IR

_PREC = {
    "or": 1,
    "and": 2,
    "not": 3,
    "cmp": 4,
    "+": 6,
    "-": 6,
    "*": 7,
    "/": 7,
    "//": 7,
    "%": 7,
    "neg": 8,
    "atom": 10,
    "ifelse": 0,
}


def _lit(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def _comp(c: IR.Comprehension) -> str:
    cond = f" if {expr_text(c.cond)}" if c.cond is not None else ""
    return f"for {c.var} in {expr_text(c.iter)}{cond}"


def _kw(args: list[IR.KwArg]) -> str:
    return ", ".join(f"{a.name} = {expr_text(a.value)}" for a in args)


def _gen(e: Any) -> tuple[str, int]:
    node = e.node
    atom = _PREC["atom"]
    if node in {"num", "str", "bool"}:
        return _lit(e.value), atom
    if node == "none":
        return "None", atom
    if node == "name":
        return e.id, atom
    if node == "attr":
        return f"{_wrap(e.obj, atom)}.{e.name}", atom
    if node == "index":
        return f"{_wrap(e.obj, atom)}[{expr_text(e.index)}]", atom
    if node == "call":
        args = [expr_text(a) for a in e.args] + [
            f"{k.name} = {expr_text(k.value)}" for k in e.kwargs
        ]
        return f"{e.func}({', '.join(args)})", atom
    if node == "call_gen":
        return f"{e.func}({expr_text(e.elt)} {_comp(e.comp)})", atom
    if node == "list":
        return "[" + ", ".join(expr_text(i) for i in e.items) + "]", atom
    if node == "list_comp":
        return f"[{expr_text(e.elt)} {_comp(e.comp)}]", atom
    if node == "dict":
        return "{" + ", ".join(
            f"{expr_text(p.key)}: {expr_text(p.value)}" for p in e.pairs
        ) + "}", atom
    if node == "dict_comp":
        return (
            "{" + f"{expr_text(e.pair.key)}: {expr_text(e.pair.value)} {_comp(e.comp)}" + "}",
            atom,
        )
    if node == "unary":
        if e.op == "not":
            return f"not {_wrap(e.operand, _PREC['not'])}", _PREC["not"]
        return f"-{_wrap(e.operand, _PREC['neg'])}", _PREC["neg"]
    if node == "binop":
        p = _PREC[e.op]
        return f"{_wrap(e.left, p)} {e.op} {_wrap(e.right, p + 1)}", p
    if node == "compare":
        p = _PREC["cmp"]
        return f"{_wrap(e.left, p + 1)} {e.op} {_wrap(e.right, p + 1)}", p
    if node == "boolop":
        p = _PREC[e.op]
        return f"{_wrap(e.left, p)} {e.op} {_wrap(e.right, p + 1)}", p
    if node == "ifelse":
        return f"{_wrap(e.body, 1)} if {_wrap(e.test, 1)} else {_wrap(e.orelse, 0)}", 0
    if node == "range":
        return f"{_wrap(e.lo, _PREC['+'])}..{_wrap(e.hi, _PREC['+'])}", atom
    return f"<{node}>", atom  # pragma: no cover - every IR node kind is handled above


def _wrap(e: Any, outer: int) -> str:
    code, prec = _gen(e)
    return f"({code})" if prec < outer else code


def expr_text(e: Any) -> str:
    """An IR expression as spec text."""
    return _wrap(e, 0)


def call_text(c: IR.CallIR) -> str:
    """A gold call: ``tool(name = expr, ...)``."""
    return f"{c.tool}({_kw(c.args)})"


def gold_texts(gold: list[IR.CallIR | IR.GoldForIR]) -> list[str]:
    """A task's gold block, one string per call (a `for` loop as one string)."""
    out = []
    for g in gold:
        if isinstance(g, IR.GoldForIR):
            body = "; ".join(call_text(c) for c in g.calls)
            out.append(f"for {g.var} in {expr_text(g.iter)} {{ {body} }}")
        else:
            out.append(call_text(g))
    return out


def forbid_text(f: IR.ForbidIR) -> str:
    """A forbid: ``tool`` or ``tool(name = expr, ...)``."""
    return f.tool if f.args is None else f"{f.tool}({_kw(f.args)})"


def text_text(t: IR.Text | None) -> str:
    """An interpolated text as the spec writes it (``"... {expr} ..."``)."""
    if t is None:
        return ""
    parts = [p if isinstance(p, str) else "{" + expr_text(p) + "}" for p in t.parts]
    return json.dumps("".join(parts), ensure_ascii=False)
