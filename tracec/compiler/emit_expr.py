"""The expression emitter: Python source for IR expressions and texts, and inert literals.

Everything that comes from the spec text reaches the module through `repr()` of a str, int,
float or bool, or as an identifier the checker has validated, so spec text is data.
"""

from __future__ import annotations

import math
from typing import Any

from tracec.compiler import ir as IR
from tracec.lang.builtins import BUILTINS

PREC = {"or": 1, "and": 2, "not": 3, "cmp": 4, "+": 6, "-": 6, "*": 7, "/": 7, "//": 7,
         "%": 7, "neg": 8, "atom": 10, "ifelse": 0}


def pystr(s: str) -> str:
    """A double-quoted Python literal for ``s`` (repr() with the quote style swapped)."""
    r = repr(s)
    if r[0] == "'" and '"' not in s:
        return '"' + r[1:-1] + '"'
    return r


def lit(value: Any) -> str:
    """A Python literal for a JSON-like value (inert: repr of primitives only)."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, str):
        return pystr(value)
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({pystr(repr(value))})"  # never a bare `inf`/`nan` name
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(lit(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{lit(k)}: {lit(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"not a literal: {type(value).__name__}")


class ExprGen:
    """Expression code in one of the contexts: seed/task (locals), reward (o.v), tool (locals)."""

    def __init__(self, context: str, locals_: set[str] | None = None):
        self.context = context
        self.locals = set(locals_ or ())

    def gen(self, e: Any, outer: int = 0) -> str:
        code, prec = getattr(self, f"g_{e.node}")(e)
        return f"({code})" if prec < outer else code

    # atoms
    def g_num(self, e: IR.Num) -> tuple[str, int]:
        return lit(e.value), PREC["atom"]

    def g_str(self, e: IR.Str) -> tuple[str, int]:
        return pystr(e.value), PREC["atom"]

    def g_bool(self, e: IR.Bool) -> tuple[str, int]:
        return repr(e.value), PREC["atom"]

    def g_none(self, e: IR.NoneLit) -> tuple[str, int]:
        return "None", PREC["atom"]

    def g_name(self, e: IR.Name) -> tuple[str, int]:
        if self.context == "reward":
            if e.id in ("state_matches", "progress", "forbidden_called"):
                return f"o.{e.id}", PREC["atom"]
            if e.id not in self.locals:
                return f"o.v[{pystr(e.id)}]", PREC["atom"]
        return e.id, PREC["atom"]

    def g_attr(self, e: IR.Attr) -> tuple[str, int]:
        if e.ref is not None:  # domain reference: the record the id field names
            coll, id_field, nullable = e.ref
            key = f"{self.gen(e.obj, PREC['atom'])}[{pystr(id_field)}]"
            extra = ", nullable=True" if nullable else ""
            return f"rt.ref(db, {pystr(coll)}, {key}{extra})", PREC["atom"]
        return f"{self.gen(e.obj, PREC['atom'])}[{pystr(e.name)}]", PREC["atom"]

    def g_index(self, e: IR.Index) -> tuple[str, int]:
        return f"{self.gen(e.obj, PREC['atom'])}[{self.gen(e.index)}]", PREC["atom"]

    def args(self, args: list[Any]) -> list[str]:
        out = []
        for a in args:
            if isinstance(a, IR.Range):
                out += [self.gen(a.lo), self.gen(a.hi)]
            else:
                out.append(self.gen(a))
        return out

    def comp(self, c: IR.Comprehension) -> str:
        inner = ExprGen(self.context, self.locals | {c.var})
        text = f"for {c.var} in {self.gen(c.iter, PREC['or'])}"
        if c.cond is not None:
            text += f" if {inner.gen(c.cond, PREC['or'])}"
        return text

    def with_var(self, var: str) -> "ExprGen":
        return ExprGen(self.context, self.locals | {var})

    def g_call(self, e: IR.Call) -> tuple[str, int]:
        if e.func == "communicated":
            vals = ", ".join(self.gen(a) for a in e.args)
            if not vals:  # every value the task lists under `communicate`
                return "o.communicated_all()", PREC["atom"]
            return f"o.communicated({vals})", PREC["atom"]
        if e.func == "called":
            tool = e.args[0].id  # type: ignore[union-attr]
            if not e.kwargs:
                return f"o.called({pystr(tool)})", PREC["atom"]
            kw = ", ".join(f"{pystr(k.name)}: {self.gen(k.value)}" for k in e.kwargs)
            return f"o.called({pystr(tool)}, {{{kw}}})", PREC["atom"]
        if e.func == "fraction":
            return f"rt.fraction({', '.join(self.gen(a) for a in e.args)})", PREC["atom"]
        b = BUILTINS[e.func]
        args = self.args(e.args)
        if e.func == "first":
            return f"next(iter({args[0]}), None)", PREC["atom"]
        if e.func == "count":
            return f"len({args[0]})", PREC["atom"]
        if b.needs_rng:
            if e.func in ("randint", "money", "uniform") and len(args) == 1:
                args = [args[0], args[0]]
            if e.func == "date_between" and len(args) == 1:
                args = [args[0], args[0]]
            if e.func == "sample" and len(args) == 2:
                args = [args[0], args[1], args[1]]
            return f"{b.runtime}({', '.join(['rng'] + args)})", PREC["atom"]
        return f"{b.runtime}({', '.join(args)})", PREC["atom"]

    def g_call_gen(self, e: IR.CallGen) -> tuple[str, int]:
        inner = self.with_var(e.comp.var)
        elt = inner.gen(e.elt, PREC["or"])
        comp = self.comp(e.comp)
        if e.func == "first":
            return f"next(({elt} {comp}), None)", PREC["atom"]
        if e.func == "count":
            return f"sum(1 {comp})", PREC["atom"]
        if e.func in ("min_by", "max_by"):  # (key, element) pairs
            return f"rt.{e.func}([({elt}, {e.comp.var}) {comp}])", PREC["atom"]
        b = BUILTINS[e.func]
        if b.needs_rng:
            return f"{b.runtime}(rng, [{elt} {comp}])", PREC["atom"]
        return f"{b.runtime}({elt} {comp})", PREC["atom"]

    def g_list(self, e: IR.ListLit) -> tuple[str, int]:
        return "[" + ", ".join(self.gen(i) for i in e.items) + "]", PREC["atom"]

    def g_list_comp(self, e: IR.ListComp) -> tuple[str, int]:
        inner = self.with_var(e.comp.var)
        return f"[{inner.gen(e.elt, PREC['or'])} {self.comp(e.comp)}]", PREC["atom"]

    def g_dict(self, e: IR.DictLit) -> tuple[str, int]:
        pairs = ", ".join(f"{self.gen(p.key)}: {self.gen(p.value)}" for p in e.pairs)
        return "{" + pairs + "}", PREC["atom"]

    def g_dict_comp(self, e: IR.DictComp) -> tuple[str, int]:
        inner = self.with_var(e.comp.var)
        pair = f"{inner.gen(e.pair.key, PREC['or'])}: {inner.gen(e.pair.value, PREC['or'])}"
        return "{" + f"{pair} {self.comp(e.comp)}" + "}", PREC["atom"]

    def g_unary(self, e: IR.Unary) -> tuple[str, int]:
        if e.op == "not":
            return f"not {self.gen(e.operand, PREC['not'])}", PREC["not"]
        return f"-{self.gen(e.operand, PREC['neg'])}", PREC["neg"]

    def g_binop(self, e: IR.BinOp) -> tuple[str, int]:
        p = PREC[e.op]
        return f"{self.gen(e.left, p)} {e.op} {self.gen(e.right, p + 1)}", p

    def g_compare(self, e: IR.Compare) -> tuple[str, int]:
        p = PREC["cmp"]
        op = e.op
        if isinstance(e.right, IR.NoneLit) and op in ("==", "!="):
            op = "is" if op == "==" else "is not"
        return f"{self.gen(e.left, p + 1)} {op} {self.gen(e.right, p + 1)}", p

    def g_boolop(self, e: IR.BoolOp) -> tuple[str, int]:
        p = PREC[e.op]
        return f"{self.gen(e.left, p)} {e.op} {self.gen(e.right, p + 1)}", p

    def g_ifelse(self, e: IR.IfElse) -> tuple[str, int]:
        p = PREC["ifelse"]
        return (f"{self.gen(e.body, p + 1)} if {self.gen(e.test, p + 1)} else "
                f"{self.gen(e.orelse, p)}"), p

    def g_range(self, e: IR.Range) -> tuple[str, int]:
        return f"({self.gen(e.lo)}, {self.gen(e.hi)})", PREC["atom"]

    def text(self, t: IR.Text) -> str:
        parts = [pystr(p) if isinstance(p, str) else self.gen(p) for p in t.parts]
        if len(parts) == 1 and isinstance(t.parts[0], str):
            return parts[0]
        return f"rt.text({', '.join(parts)})" if parts else "''"


def plain(t: IR.Text) -> bool:
    return all(isinstance(p, str) for p in t.parts)


def text_of(t: IR.Text) -> str:
    return "".join(p for p in t.parts if isinstance(p, str))
