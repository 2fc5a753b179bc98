"""Python code generation from the IR: one readable, deterministic module per capability.

Everything that comes from the spec text reaches the module through `repr()` of a str,
int, float or bool, or as an identifier the checker has validated, so spec text is data.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from pydantic import BaseModel

from tracec.compiler.docgen import class_doc
from tracec.compiler import ir as IR
from tracec.lang.builtins import BUILTINS

LINE = 100
_PREC = {"or": 1, "and": 2, "not": 3, "cmp": 4, "+": 6, "-": 6, "*": 7, "/": 7, "//": 7,
         "%": 7, "neg": 8, "atom": 10, "ifelse": 0}


def class_name(capability: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"_+", capability) if p) + "Env"


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
        return lit(e.value), _PREC["atom"]

    def g_str(self, e: IR.Str) -> tuple[str, int]:
        return pystr(e.value), _PREC["atom"]

    def g_bool(self, e: IR.Bool) -> tuple[str, int]:
        return repr(e.value), _PREC["atom"]

    def g_none(self, e: IR.NoneLit) -> tuple[str, int]:
        return "None", _PREC["atom"]

    def g_name(self, e: IR.Name) -> tuple[str, int]:
        if self.context == "reward":
            if e.id in ("state_matches", "progress", "forbidden_called"):
                return f"o.{e.id}", _PREC["atom"]
            if e.id not in self.locals:
                return f"o.v[{pystr(e.id)}]", _PREC["atom"]
        return e.id, _PREC["atom"]

    def g_attr(self, e: IR.Attr) -> tuple[str, int]:
        if e.ref is not None:  # domain reference: the record the id field names
            coll, id_field, nullable = e.ref
            key = f"{self.gen(e.obj, _PREC['atom'])}[{pystr(id_field)}]"
            extra = ", nullable=True" if nullable else ""
            return f"rt.ref(db, {pystr(coll)}, {key}{extra})", _PREC["atom"]
        return f"{self.gen(e.obj, _PREC['atom'])}[{pystr(e.name)}]", _PREC["atom"]

    def g_index(self, e: IR.Index) -> tuple[str, int]:
        return f"{self.gen(e.obj, _PREC['atom'])}[{self.gen(e.index)}]", _PREC["atom"]

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
        text = f"for {c.var} in {self.gen(c.iter, _PREC['or'])}"
        if c.cond is not None:
            text += f" if {inner.gen(c.cond, _PREC['or'])}"
        return text

    def with_var(self, var: str) -> "ExprGen":
        return ExprGen(self.context, self.locals | {var})

    def g_call(self, e: IR.Call) -> tuple[str, int]:
        if e.func == "communicated":
            vals = ", ".join(self.gen(a) for a in e.args)
            if not vals:  # every value the task lists under `communicate`
                return 'o.communicated(*o.v["_communicate"])', _PREC["atom"]
            return f"o.communicated({vals})", _PREC["atom"]
        if e.func == "called":
            tool = e.args[0].id  # type: ignore[union-attr]
            if not e.kwargs:
                return f"o.called({pystr(tool)})", _PREC["atom"]
            kw = ", ".join(f"{pystr(k.name)}: {self.gen(k.value)}" for k in e.kwargs)
            return f"o.called({pystr(tool)}, {{{kw}}})", _PREC["atom"]
        if e.func == "fraction":
            return f"rt.fraction({', '.join(self.gen(a) for a in e.args)})", _PREC["atom"]
        b = BUILTINS[e.func]
        args = self.args(e.args)
        if e.func == "first":
            return f"next(iter({args[0]}), None)", _PREC["atom"]
        if e.func == "count":
            return f"len({args[0]})", _PREC["atom"]
        if b.needs_rng:
            if e.func in ("randint", "money", "uniform") and len(args) == 1:
                args = [args[0], args[0]]
            if e.func == "date_between" and len(args) == 1:
                args = [args[0], args[0]]
            if e.func == "sample" and len(args) == 2:
                args = [args[0], args[1], args[1]]
            return f"{b.runtime}({', '.join(['rng'] + args)})", _PREC["atom"]
        return f"{b.runtime}({', '.join(args)})", _PREC["atom"]

    def g_call_gen(self, e: IR.CallGen) -> tuple[str, int]:
        inner = self.with_var(e.comp.var)
        elt = inner.gen(e.elt, _PREC["or"])
        comp = self.comp(e.comp)
        if e.func == "first":
            return f"next(({elt} {comp}), None)", _PREC["atom"]
        if e.func == "count":
            return f"sum(1 {comp})", _PREC["atom"]
        b = BUILTINS[e.func]
        if b.needs_rng:
            return f"{b.runtime}(rng, [{elt} {comp}])", _PREC["atom"]
        return f"{b.runtime}({elt} {comp})", _PREC["atom"]

    def g_list(self, e: IR.ListLit) -> tuple[str, int]:
        return "[" + ", ".join(self.gen(i) for i in e.items) + "]", _PREC["atom"]

    def g_list_comp(self, e: IR.ListComp) -> tuple[str, int]:
        inner = self.with_var(e.comp.var)
        return f"[{inner.gen(e.elt, _PREC['or'])} {self.comp(e.comp)}]", _PREC["atom"]

    def g_dict(self, e: IR.DictLit) -> tuple[str, int]:
        pairs = ", ".join(f"{self.gen(p.key)}: {self.gen(p.value)}" for p in e.pairs)
        return "{" + pairs + "}", _PREC["atom"]

    def g_dict_comp(self, e: IR.DictComp) -> tuple[str, int]:
        inner = self.with_var(e.comp.var)
        pair = f"{inner.gen(e.pair.key, _PREC['or'])}: {inner.gen(e.pair.value, _PREC['or'])}"
        return "{" + f"{pair} {self.comp(e.comp)}" + "}", _PREC["atom"]

    def g_unary(self, e: IR.Unary) -> tuple[str, int]:
        if e.op == "not":
            return f"not {self.gen(e.operand, _PREC['not'])}", _PREC["not"]
        return f"-{self.gen(e.operand, _PREC['neg'])}", _PREC["neg"]

    def g_binop(self, e: IR.BinOp) -> tuple[str, int]:
        p = _PREC[e.op]
        return f"{self.gen(e.left, p)} {e.op} {self.gen(e.right, p + 1)}", p

    def g_compare(self, e: IR.Compare) -> tuple[str, int]:
        p = _PREC["cmp"]
        op = e.op
        if isinstance(e.right, IR.NoneLit) and op in ("==", "!="):
            op = "is" if op == "==" else "is not"
        return f"{self.gen(e.left, p + 1)} {op} {self.gen(e.right, p + 1)}", p

    def g_boolop(self, e: IR.BoolOp) -> tuple[str, int]:
        p = _PREC[e.op]
        return f"{self.gen(e.left, p)} {e.op} {self.gen(e.right, p + 1)}", p

    def g_ifelse(self, e: IR.IfElse) -> tuple[str, int]:
        p = _PREC["ifelse"]
        return (f"{self.gen(e.body, p + 1)} if {self.gen(e.test, p + 1)} else "
                f"{self.gen(e.orelse, p)}"), p

    def g_range(self, e: IR.Range) -> tuple[str, int]:
        return f"({self.gen(e.lo)}, {self.gen(e.hi)})", _PREC["atom"]

    def text(self, t: IR.Text) -> str:
        parts = [pystr(p) if isinstance(p, str) else self.gen(p) for p in t.parts]
        if len(parts) == 1 and isinstance(t.parts[0], str):
            return parts[0]
        return f"rt.text({', '.join(parts)})" if parts else "''"


class Writer:
    """Lines of generated code, and the spec position each came from (the line table)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.at: tuple[int, int] | None = None  # spec (line, column) of what is written now
        self.marks: list[tuple[int, int, int]] = []  # (first module line, spec line, column)
        self._n = 0  # module lines written so far

    def __call__(self, line: str = "", indent: int = 0) -> None:
        if not line and len(self.lines) >= 2 and not self.lines[-1] and not self.lines[-2]:
            return  # at most two blank lines in a row (keeps the line table exact)
        at = self.at or (0, 0)
        if (self.marks[-1][1:] if self.marks else (0, 0)) != at:
            self.marks.append((self._n + 1, *at))
        self.lines.append(("    " * indent + line) if line else "")
        self._n += 1 + line.count("\n")

    def emit(self, prefix: str, lines: list[str], indent: int, suffix: str = "") -> None:
        """A possibly multi-line expression: prefix on its first line, suffix on its last."""
        if len(lines) == 1:
            self(f"{prefix}{lines[0]}{suffix}", indent)
            return
        self(f"{prefix}{lines[0]}", indent)
        for line in lines[1:-1]:
            self(line, indent)
        self(f"{lines[-1]}{suffix}", indent)

    def call_block(self, head: str, items: list[Any], indent: int, tail: str = ")") -> None:
        """`head(` items one per line `)` when long, else one line. An item may be a list of
        lines (an expression already broken over several lines)."""
        flat = [i if isinstance(i, str) else (i[0] if len(i) == 1 else None) for i in items]
        if all(f is not None for f in flat):
            one = f"{head}{', '.join(flat)}{tail}"  # type: ignore[arg-type]
            if len(one) + 4 * indent <= LINE:
                self(one, indent)
                return
        self(head, indent)
        for item in items:
            lines = [item] if isinstance(item, str) else item
            self.emit("", lines, indent + 1, ",")
        self(tail.lstrip(","), indent)

    def text(self) -> str:
        out = "\n".join(self.lines).rstrip() + "\n"
        return re.sub(r"\n{4,}", "\n\n\n", out)


def spec_at(node: Any) -> tuple[int, int]:
    """The spec (line, column) the lowering recorded on an IR statement."""
    return node.line, node.column


def _gen_line_table(w: Writer) -> None:
    """``SPEC_LINES``: (first module line, spec line, spec column) for each run of lines that
    came from one spec statement; the runtime maps a failure's line back to the spec."""
    marks = [m for m in w.marks]
    w.at = None
    w()
    w()
    w("# spec positions of the code above, for run-time errors: (module line, spec line, column)")
    w("SPEC_LINES = (")
    row = ""
    for m in marks:
        item = f"({m[0]}, {m[1]}, {m[2]}), "
        if len(row) + len(item) + 4 > LINE:
            w(row.rstrip(), 1)
            row = ""
        row += item
    if row:
        w(row.rstrip(), 1)
    w(")")


def _bool_chain(e: Any, op: str) -> list[Any]:
    if isinstance(e, IR.BoolOp) and e.op == op:
        return _bool_chain(e.left, op) + [e.right]
    return [e]


def wrap_expr(gen: "ExprGen", e: Any, indent: int, room: int) -> list[str]:
    """Lines for an expression: one line when it fits, else split at top-level and/or."""
    code = gen.gen(e)
    if len(code) + 4 * indent <= room or not (isinstance(e, IR.BoolOp)):
        return [code]
    parts = _bool_chain(e, e.op)
    lines = ["("]
    for i, part in enumerate(parts):
        text = gen.gen(part, _PREC[e.op] + (1 if i else 0))
        lead = "    " if i == 0 else f"    {e.op} "
        if len(text) + len(lead) + 4 * indent <= room:
            lines.append(lead + text)
            continue
        sub = pretty(gen, part, room - 8)
        if len(sub) > 1 and not sub[0].endswith(("(", "[", "{")):
            sub = ["("] + _indent(sub) + [")"]
        lines.append(lead + sub[0])
        lines += ["    " + line for line in sub[1:]]
    lines.append(")")
    return lines


def wrap_str(s: str, indent: int, extra: int = 14) -> list[str]:
    """A long string literal as implicit concatenation over several lines (``extra``: room
    taken on the first line by what precedes and follows the literal)."""
    room = max(LINE - 4 * indent - 4, 20)
    lit_ = pystr(s)
    if len(lit_) + 4 * indent + extra <= LINE:
        return [lit_]
    chunks, cur = [], ""
    for word in re.split(r"(?<= )", s):
        if cur and len(pystr(cur + word)) > room:
            chunks.append(cur)
            cur = ""
        cur += word
    if cur:
        chunks.append(cur)
    return ["("] + [f"    {pystr(c)}" for c in chunks] + [")"]


def _with_comma(lines: list[str]) -> list[str]:
    return lines[:-1] + [lines[-1] + ","]


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


def pretty(gen: "ExprGen", e: Any, room: int) -> list[str]:
    """An expression as lines that fit ``room`` columns where its shape allows breaking:
    list and dict literals one item per line, and/or chains and `+` chains one operand per line."""
    one = gen.gen(e)
    if len(one) <= room:
        return [one]
    if isinstance(e, IR.ListLit) and e.items:
        body = [line for item in e.items for line in _with_comma(pretty(gen, item, room - 4))]
        return ["["] + _indent(body) + ["]"]
    if isinstance(e, IR.DictLit) and e.pairs:
        return ["{"] + _indent(_pairs(gen, [(gen.gen(p.key), p.value) for p in e.pairs],
                                      room - 4)) + ["}"]
    if isinstance(e, IR.BoolOp):
        return wrap_expr(gen, e, 0, room)
    if isinstance(e, (IR.ListComp, IR.CallGen)) or (isinstance(e, IR.DictComp)):
        inner = gen.with_var(e.comp.var)
        if isinstance(e, IR.DictComp):
            head = [f"{inner.gen(e.pair.key, _PREC['or'])}: {inner.gen(e.pair.value, _PREC['or'])}"]
        else:
            head = pretty(inner, e.elt, room - 4)
        body = head + [f"for {e.comp.var} in {gen.gen(e.comp.iter, _PREC['or'])}"]
        if e.comp.cond is not None:
            cond = pretty(inner, e.comp.cond, room - 7)
            body += [f"if {cond[0]}"] + cond[1:]
        if isinstance(e, IR.ListComp):
            return ["["] + _indent(body) + ["]"]
        if isinstance(e, IR.DictComp):
            return ["{"] + _indent(body) + ["}"]
        b = BUILTINS.get(e.func)
        if e.func == "first":
            return ["next(", "    ("] + _indent(_indent(body)) + ["    ),", "    None,", ")"]
        if e.func == "count":
            return ["sum("] + _indent(["1"] + body[len(head):]) + [")"]
        if b is not None and b.needs_rng:
            return [f"{b.runtime}(", "    rng,", "    ["] + _indent(_indent(body)) + ["    ],", ")"]
        return [f"{b.runtime if b else e.func}("] + _indent(body) + [")"]
    if isinstance(e, IR.Call) and e.func in BUILTINS and e.func not in ("first", "count"):
        b = BUILTINS[e.func]
        code_args = [["rng"]] if b.needs_rng else []
        for a in e.args:
            if isinstance(a, IR.Range):
                code_args += [[gen.gen(a.lo)], [gen.gen(a.hi)]]
            else:
                code_args.append(pretty(gen, a, room - 4))
        if b.needs_rng and e.func in ("randint", "money", "uniform", "date_between", "sample") \
                and len(code_args) != (4 if e.func == "sample" else 3):
            return [one]  # argument shapes the one-line form normalises; keep it
        body = [line for arg in code_args for line in _with_comma(arg)]
        return [f"{b.runtime}("] + _indent(body) + [")"]
    if isinstance(e, IR.Compare):
        p = _PREC["cmp"] + 1
        left = pretty(gen, e.left, room - 12)
        op = e.op
        if isinstance(e.right, IR.NoneLit) and op in ("==", "!="):
            op = "is" if op == "==" else "is not"
        if len(left) > 1:
            return left[:-1] + [f"{left[-1]} {op} {gen.gen(e.right, p)}"]
        right = pretty(gen, e.right, room - 12)
        if len(right) > 1:
            return [f"{gen.gen(e.left, p)} {op} {right[0]}"] + right[1:]
        return [one]
    if isinstance(e, IR.Index) and isinstance(e.obj, (IR.ListComp, IR.ListLit, IR.Call, IR.CallGen)):
        obj = pretty(gen, e.obj, room - 6)
        return obj[:-1] + [f"{obj[-1]}[{gen.gen(e.index)}]"]
    if isinstance(e, IR.IfElse):
        body = pretty(gen, e.body, room - 4)
        test = pretty(gen, e.test, room - 7)
        orelse = pretty(gen, e.orelse, room - 9)
        lines = body + [f"if {test[0]}"] + test[1:] + [f"else {orelse[0]}"] + orelse[1:]
        return ["("] + _indent(lines) + [")"]
    if isinstance(e, IR.BinOp) and e.op in ("+", "-"):
        parts: list[tuple[str, Any]] = []
        node = e
        while isinstance(node, IR.BinOp) and node.op in ("+", "-"):
            parts.append((node.op, node.right))
            node = node.left
        parts.append(("", node))
        parts.reverse()
        lines = [gen.gen(parts[0][1], _PREC["+"])]
        for op, x in parts[1:]:
            lines.append(f"{op} {gen.gen(x, _PREC['+'] + 1)}")
        return ["("] + _indent(lines) + [")"]
    return [one]


def _pairs(gen: "ExprGen", pairs: list[tuple[str, Any]], room: int) -> list[str]:
    out: list[str] = []
    for key, value in pairs:
        lines = pretty(gen, value, room - len(key) - 2)
        lines[0] = f"{key}: {lines[0]}"
        out += _with_comma(lines)
    return out


def fields_lines(gen: "ExprGen", fields: list[IR.FieldIR], room: int) -> list[str]:
    """`{"field": value, ...}` as lines (one line when it fits)."""
    one = _fields_dict(gen, fields)
    if len(one) <= room or not fields:
        return [one]
    return ["{"] + _indent(_pairs(gen, [(pystr(f.name), f.value) for f in fields], room - 4)) + ["}"]


def _dict_block(w: Writer, head: str, value: dict, indent: int) -> None:
    """A dict literal over several lines, one key per line (nested when long)."""
    w(head + "{", indent)
    for k, v in value.items():
        one = f"{lit(k)}: {lit(v)},"
        if isinstance(v, dict) and len(one) + 4 * (indent + 1) > LINE:
            _dict_block(w, f"{lit(k)}: ", v, indent + 1)
        else:
            w(one, indent + 1)
    w("},", indent)


def _fields_dict(gen: ExprGen, fields: list[IR.FieldIR]) -> str:
    return "{" + ", ".join(f"{pystr(f.name)}: {gen.gen(f.value)}" for f in fields) + "}"


def _plain(t: IR.Text) -> bool:
    return all(isinstance(p, str) for p in t.parts)


def text_of(t: IR.Text) -> str:
    return "".join(p for p in t.parts if isinstance(p, str))


def _call_list(gen: ExprGen, calls: list[Any]) -> list[Any]:
    out = []
    for c in calls:
        args = "{" + ", ".join(f"{pystr(a.name)}: {gen.gen(a.value)}" for a in c.args) + "}"
        one = f"Call({pystr(c.tool)}, {args})"
        if len(one) + 16 <= LINE:
            out.append(one)
        else:
            pairs = _pairs(gen, [(pystr(a.name), a.value) for a in c.args], LINE - 20)
            out.append([f"Call({pystr(c.tool)}, {{"] + _indent(pairs) + ["})"])
    return out


def _tuple(items: list[str]) -> str:
    if len(items) == 1:
        return f"({pystr(items[0])},)"
    return "(" + ", ".join(pystr(i) for i in items) + ")"


def _doc_char(ch: str) -> str:
    if ch == "\n" or (ch.isprintable() and ch not in '"\\' and not "\ud800" <= ch <= "\udfff"):
        return ch
    if ch in '"\\':
        return "\\" + ch
    return ascii(ch)[1:-1]  # \x00, \u2028, \ud800: escaped, so the file is valid UTF-8


def _docstring(text: str) -> str:
    """A docstring for any text: quotes, backslashes and unprintable characters escaped."""
    return '"""' + "".join(_doc_char(ch) for ch in text) + '"""'


def generate_module(cap: IR.CapabilityIR) -> str:
    """The Python source of the env module for one capability."""
    w = Writer()
    w(_docstring(
        f"Capability environment `{cap.name}`, generated by tracec. Do not edit.\n\n"
        f"Source: {cap.spec_path}\nSpec sha256: {cap.spec_sha256}\n"
        f"Regenerate: tracec compile {cap.spec_path.rsplit('/', 1)[0] or '.'}/\n"
    ))
    w()
    w("from __future__ import annotations")
    w()
    shared = shared_distractors(cap)
    if any(params for _, params in shared.values()):
        w("from typing import Any")
        w()
    if cap.tools:
        w("from tracec.domains import Tool, get_domain")
    else:
        w("from tracec.domains import get_domain")
    w("from tracec.runtime import lib as rt")
    w("from tracec.runtime.env import (")
    for name in ("Call", "Capability", "CapabilityEnv", "Reply", "Rule", "TaskDef",
                 "TaskInstance"):
        w(f"{name},", 1)
    w(")")
    w()
    w(f"DOMAIN = get_domain({pystr(cap.domain)})")
    w()
    w()
    _gen_world(w, cap)
    for name, (dist, params) in shared.items():
        w()
        w()
        _gen_distractor_fn(w, dist, params)
    for task in cap.tasks:
        w()
        w()
        _gen_task(w, cap, task, shared)
    if cap.tools:
        for tool in cap.tools:
            if tool.body is not None:
                w()
                w()
                _gen_tool(w, tool)
    w()
    w()
    _gen_rules(w, cap)
    w()
    if cap.tools:
        w("TOOLS = (")
        for tool in cap.tools:
            func = (f"DOMAIN.functions[{pystr(tool.python)}]" if tool.python is not None
                    else f"tool_{tool.name}")
            w("Tool(", 1)
            w(f"name={pystr(tool.name)},", 2)
            w(f"description={pystr(tool.description)},", 2)
            w(f"parameters={lit(tool.parameters)},", 2) if len(lit(tool.parameters)) < 70 else \
                _dict_block(w, "parameters=", tool.parameters, 2)
            w(f"func={func},", 2)
            w(f"writes={tool.writes!r},", 2)
            w("),", 1)
        w(")")
        w()
    w("CAPABILITY = Capability(")
    w(f"name={pystr(cap.name)},", 1)
    w.emit("description=", wrap_str(cap.description, 1), 1, ",")
    w("domain=DOMAIN,", 1)
    w(f"max_turns={cap.max_turns!r},", 1)
    w("build_world=build_world,", 1)
    w("tasks=(", 1)
    for task in cap.tasks:
        w(f"TaskDef({pystr(task.name)}, {task.weight!r}, task_{task.name}),", 2)
    w("),", 1)
    w("rules=RULES,", 1)
    w(f"tools={'TOOLS' if cap.tools else '()'},", 1)
    w.emit("hint=", wrap_str(cap.hint, 1), 1, ",")
    w(f"spec_path={pystr(cap.spec_path)},", 1)
    w(f"spec_sha256={pystr(cap.spec_sha256)},", 1)
    _gen_prompt_budget(w, cap)
    w(")")
    w()
    w()
    w(f"class {class_name(cap.name)}(CapabilityEnv):")
    doc = _docstring(class_doc(cap)).split("\n")
    w(doc[0], 1)
    for line in doc[1:]:
        w(line, 1) if line else w()
    w()
    w("capability = CAPABILITY", 1)
    _gen_line_table(w)
    return w.text()


def _gen_prompt_budget(w: Writer, cap: IR.CapabilityIR) -> None:
    """The `tools`, `policy` and `compact_tools` statements, as literals (omitted when default)."""
    if cap.shown_tools is not None:
        w.emit("tool_names=", wrap_tuple(cap.shown_tools, 1), 1, ",")
    if cap.policy_sections is not None:
        w.emit("policy_sections=", wrap_tuple(cap.policy_sections, 1), 1, ",")
    if cap.policy is not None:
        w.emit("policy=", wrap_str(cap.policy, 1), 1, ",")
    if cap.compact_tools:
        w("compact_tools=True,", 1)


def wrap_tuple(items: list[str], indent: int, extra: int = 20) -> list[str]:
    """A tuple of string literals, on one line when it fits (``extra``: the columns the rest of
    that line takes), else one item per line."""
    one = _tuple(items)
    if 4 * indent + extra + len(one) <= LINE:
        return [one]
    return ["("] + [f"    {pystr(i)}," for i in items] + [")"]


def _gen_world(w: Writer, cap: IR.CapabilityIR) -> None:
    w("def build_world(rng: rt.Rng, db: dict) -> dict:")
    w('"""The `seed` block: generate the world; returns the seed variables."""', 1)
    gen = ExprGen("seed")
    names = []
    for step in cap.seed:
        w.at = (step.line, 0)
        if isinstance(step, IR.SeedSpawn):
            count = step.count
            if isinstance(count, IR.Range):
                count_code = f"rt.randint(rng, {gen.gen(count.lo)}, {gen.gen(count.hi)})"
            else:
                count_code = gen.gen(count)
            args = ["rng", "DOMAIN", "db", pystr(step.entity), count_code]
            if step.fields:
                fn = f"{step.name}_fields"
                if w.lines and w.lines[-1].strip() and not w.lines[-1].rstrip().endswith('"""'):
                    w()
                w(f"def {fn}() -> dict:", 1)
                if any(isinstance(f, IR.LetIR) for f in step.fields):
                    _gen_fields_with_lets(w, gen, step.fields)
                else:
                    w.emit("return ", fields_lines(gen, step.fields, LINE - 15), 2)
                w()
                args.append(fn)
            w.call_block(f"{step.name} = rt.spawn(", args, 1)
        else:
            w.emit(f"{step.name} = ", pretty(gen, step.value, LINE - 8 - len(step.name)), 1)
        names.append(step.name)
    w.at = None
    w.call_block("return {", [f"{pystr(n)}: {n}" for n in names], 1, tail="}")


def _names_used(node: Any) -> set[str]:
    """The free names an IR fragment reads (comprehension variables excluded)."""
    used: set[str] = set()
    bound: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, IR.Name):
            used.add(n.id)
        elif isinstance(n, IR.Comprehension):
            bound.add(n.var)
        if isinstance(n, BaseModel):
            stack.extend(getattr(n, f) for f in type(n).model_fields)
        elif isinstance(n, (list, tuple)):
            stack.extend(n)
    return used - bound


def shared_distractors(cap: IR.CapabilityIR) -> dict[str, tuple[IR.DistractorIR, list[str]]]:
    """Top-level distractors (the same one in every task): name -> (distractor, the task
    names it reads), generated once as functions."""
    if len(cap.tasks) < 2:
        return {}
    out: dict[str, tuple[IR.DistractorIR, list[str]]] = {}
    first = cap.tasks[0]
    for d in first.distractors:
        copies = [next((x for x in t.distractors if x.name == d.name and x.line == d.line), None)
                  for t in cap.tasks]
        if any(c is None for c in copies):
            continue
        codes = set()
        for c in copies:
            probe = Writer()
            _gen_distractor_ops(probe, ExprGen("task"), c)  # type: ignore[arg-type]
            codes.add(probe.text())
        if len(codes) != 1:  # typed differently per task: keep it inline
            continue
        known = set(first.seed_vars_used) | {let.name for t in cap.tasks for let in t.lets} \
            | {n for t in cap.tasks for n in t.seed_vars_used}
        out[d.name] = (d, sorted(_names_used(d.ops) & known))
    return out


def _gen_distractor_fn(w: Writer, d: IR.DistractorIR, params: list[str]) -> None:
    kw = "".join(f", {p}: Any" for p in params)
    star = ", *" if params else ""
    w(f"def distractor_{d.name}(rng: rt.Rng, db: dict, user_text: str{star}{kw}) -> str:")
    w(f'"""Distractor `{d.name}` (spec line {d.line}), in every task."""', 1)
    _gen_distractor_ops(w, ExprGen("task"), d)
    w.at = None
    w("return user_text", 1)


def _gen_distractor_ops(w: Writer, gen: "ExprGen", d: IR.DistractorIR) -> None:
    for op in d.ops:
        w.at = spec_at(op)
        if isinstance(op, IR.CloneOp):
            w.call_block("rt.clone(", ["rng", "DOMAIN", "db", pystr(op.entity),
                                       gen.gen(op.source),
                                       fields_lines(gen, op.fields, LINE - 12)], 1)
        elif isinstance(op, IR.AddOp):
            w.call_block("rt.add(", ["rng", "DOMAIN", "db", pystr(op.entity),
                                     fields_lines(gen, op.fields, LINE - 12)], 1)
        else:
            _assign_text(w, 'user_text += " " +', gen, op.text, 1, op="")


def _gen_task(w: Writer, cap: IR.CapabilityIR, task: IR.TaskIR,
              shared: dict[str, tuple[IR.DistractorIR, list[str]]] | None = None) -> None:
    w(f"def task_{task.name}(rng: rt.Rng, db: dict, v: dict) -> TaskInstance:")
    w(f'"""Task `{task.name}` (spec line {task.line})."""', 1)
    gen = ExprGen("task")
    for name in task.seed_vars_used:
        w(f"{name} = v[{pystr(name)}]", 1)
    for i in range(len(task.lets) + 1):
        for setup in task.setup:
            if setup.after_lets == i:
                _gen_setup(w, gen, setup)
        if i < len(task.lets):
            let = task.lets[i]
            w.at = spec_at(let)
            w.emit(f"{let.name} = ", pretty(gen, let.value, LINE - 8 - len(let.name)), 1)
    w.at = spec_at(task.user)
    _assign_text(w, "user_text", gen, task.user, 1)
    names = []
    for d in task.distractors:
        w.at = (d.line, 0)
        if shared and d.name in shared and shared[d.name][0].line == d.line:
            args = ["rng", "db", "user_text"] + [f"{p}={p}" for p in shared[d.name][1]]
            w.call_block(f"user_text = distractor_{d.name}(", args, 1)
        else:
            w(f"# distractor `{d.name}`", 1)
            _gen_distractor_ops(w, gen, d)
        names.append(d.name)
    hint = gen.text(task.hint) if task.hint is not None else pystr(cap.hint)
    w.at = (task.line, 0)
    looped = any(isinstance(c, IR.GoldForIR) for c in task.gold)
    if looped:
        _gen_gold_loops(w, gen, task.gold)
    w("return TaskInstance(", 1)
    w(f"task={pystr(task.name)},", 2)
    w("user=user_text,", 2)
    if looped:
        w("gold=_gold,", 2)
    else:
        w.call_block("gold=[", _call_list(gen, task.gold), 2, tail="],")
    comm = [f"{pystr(c.label)}: {gen.gen(c.value)}" for c in task.communicate]
    if comm:  # empty fields are left to TaskInstance's defaults
        w.call_block("communicate={", comm, 2, tail="},")
    forbid = []
    for f in task.forbid:
        if f.args is None:
            forbid.append(f"Call({pystr(f.tool)}, None)")
        else:
            forbid += _call_list(gen, [IR.CallIR(tool=f.tool, args=f.args)])
    if forbid:
        w.call_block("forbid=[", forbid, 2, tail="],")
    replies: list[Any] = []
    for r in task.replies:
        one = f"Reply({_tuple(r.keywords)}, {gen.text(r.text)})"
        if len(one) + 16 <= LINE:
            replies.append(one)
        else:
            text = gen.text(r.text)
            text_lines = wrap_str(text_of(r.text), 4) if _plain(r.text) else [text]
            kw_lines = _with_comma(wrap_tuple(r.keywords, 4, extra=1))
            replies.append(["Reply("] + _indent(kw_lines)
                           + _indent(_with_comma(text_lines)) + [")"])
    if replies:
        w.call_block("replies=[", replies, 2, tail="],")
    if task.hint is not None and _plain(task.hint):
        w.emit("hint=", wrap_str(text_of(task.hint), 2), 2, ",")
    elif task.hint is None:
        w.emit("hint=", wrap_str(cap.hint, 2), 2, ",")
    else:
        w(f"hint={hint},", 2)
    values = [f"{pystr(let.name)}: {let.name}" for let in task.lets]
    if values:  # the `let`s, for reward rules (`communicate` values are added by TaskInstance)
        w.call_block("values={", values, 2, tail="},")
    if names:
        w(f"distractors={_tuple(names)},", 2)
    w(")", 1)
    w.at = None


def _gen_fields_with_lets(w: Writer, gen: ExprGen, fields: list[Any]) -> None:
    """A field function whose block has `let`s: values in spec order, then the dict."""
    first = 0
    while first < len(fields) and not isinstance(fields[first], IR.LetIR):
        first += 1
    w.emit("_fields = ", fields_lines(gen, fields[:first], LINE - 15), 2)
    for f in fields[first:]:
        w.at = spec_at(f)
        if isinstance(f, IR.LetIR):
            w.emit(f"{f.name} = ", pretty(gen, f.value, LINE - 12 - len(f.name)), 2)
        else:
            head = f"_fields[{pystr(f.name)}] = "
            w.emit(head, pretty(gen, f.value, LINE - 8 - len(head)), 2)
    w("return _fields", 2)


def _gen_gold_loops(w: Writer, gen: ExprGen, gold: list[Any]) -> None:
    """`_gold`, built in order: runs of plain calls, and a loop per `for` in `gold`."""
    w("_gold = []", 1)
    run: list[Any] = []

    def flush() -> None:
        if run:
            w.call_block("_gold += [", _call_list(gen, run), 1, tail="]")
            run.clear()

    for item in gold:
        if isinstance(item, IR.GoldForIR):
            flush()
            w(f"for {item.var} in {gen.gen(item.iter, _PREC['or'])}:", 1)
            w.call_block("_gold += [", _call_list(gen.with_var(item.var), item.calls), 2,
                         tail="]")
        else:
            run.append(item)
    flush()


def _assign_text(w: Writer, name: str, gen: ExprGen, text: IR.Text, indent: int,
                 op: str = " =") -> None:
    code = gen.text(text)
    if len(code) + len(name) + 3 + 4 * indent <= LINE:
        w(f"{name}{op} {code}", indent)
        return
    if not code.startswith("rt.text("):
        w.emit(f"{name}{op} ", wrap_str(text_of(text), indent), indent)
        return
    parts: list[Any] = [wrap_str(p, indent + 1, 1) if isinstance(p, str) else gen.gen(p)
                        for p in text.parts]
    w.call_block(f"{name}{op} rt.text(", parts, indent)


def _gen_setup(w: Writer, gen: ExprGen, setup: IR.SetupIR) -> None:
    w.at = (setup.line, 0)
    w(f"# setup (spec line {setup.line})", 1)
    for op in setup.ops:
        w.at = spec_at(op)
        if isinstance(op, IR.SetOp):
            w(f"{gen.gen(op.target)} = {gen.gen(op.value)}", 1)
        elif isinstance(op, IR.CloneOp):
            w.call_block("rt.clone(", ["rng", "DOMAIN", "db", pystr(op.entity),
                                       gen.gen(op.source), fields_lines(gen, op.fields, LINE - 12)],
                         1)
        elif isinstance(op, IR.AddOp):
            w.call_block("rt.add(", ["rng", "DOMAIN", "db", pystr(op.entity),
                                     fields_lines(gen, op.fields, LINE - 12)], 1)


def _gen_tool(w: Writer, tool: IR.ToolIR) -> None:
    params = []
    props = tool.parameters.get("properties", {})
    pytypes = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
               "array": "list", "object": "dict"}
    for name in tool.param_names:
        ann = pytypes.get(props.get(name, {}).get("type", ""), "object")
        if name in tool.defaults:
            params.append(f"{name}: {ann} = {lit(tool.defaults[name])}")
        else:
            params.append(f"{name}: {ann}")
    w(f"def tool_{tool.name}({', '.join(['db: dict'] + params)}) -> object:")
    w(_docstring(f"Inline tool `{tool.name}` (spec line {tool.line}): {tool.description}"), 1)
    for coll in tool.collections:
        w(f"{coll} = list(db.get({pystr(coll)}, {{}}).values())", 1)
    for single in tool.singletons:
        w(f"{single} = db[{pystr(single)}]", 1)
    gen = ExprGen("tool")
    returned = False
    for st in tool.body or []:
        w.at = spec_at(st)
        if isinstance(st, IR.LetIR):
            w(f"{st.name} = {gen.gen(st.value)}", 1)
        elif isinstance(st, IR.RequireIR):
            w(f"rt.require({gen.gen(st.cond)}, {pystr(st.message)})", 1)
        elif isinstance(st, IR.SetIR):
            w(f"{gen.gen(st.target)} = {gen.gen(st.value)}", 1)
        elif isinstance(st, IR.ReturnIR):
            w(f"return {gen.gen(st.value)}", 1)
            returned = True
            break
    if not returned:
        w("return None", 1)
    w.at = None


def _gen_rules(w: Writer, cap: IR.CapabilityIR) -> None:
    gen = ExprGen("reward")
    w("RULES = (")
    for rule in cap.rules:
        w.at = spec_at(rule)
        cond = "True" if rule.cond is None else gen.gen(rule.cond)
        args = [repr(rule.level), pystr(rule.text), f"lambda o: {cond}"]
        if rule.fractional:
            args.append(f"value=lambda o: {gen.gen(rule.value)}")
        one = f"Rule({', '.join(args)}),"
        if len(one) + 4 <= LINE:
            w(one, 1)
            continue
        w("Rule(", 1)
        w(f"{rule.level!r},", 2)
        w.emit("", wrap_str(rule.text, 2), 2, ",")
        if rule.cond is None:
            w("lambda o: True,", 2)
        else:
            w.emit("lambda o: ", wrap_expr(gen, rule.cond, 2, LINE - 12), 2, ",")
        if rule.fractional:
            w(f"value=lambda o: {gen.gen(rule.value)},", 2)
        w("),", 1)
    w.at = None
    w(")")



def generate_package_init(package: str, modules: list[tuple[str, str]]) -> str:
    """`__init__.py` of the generated package: registers every env as tracec/<name>-v0."""
    w = Writer()
    w(_docstring("Compiled capability environments, generated by tracec. Do not edit.\n\n"
                 "Importing this package registers each as a Gymnasium env `tracec/<name>-v0`.\n"))
    w()
    w("from tracec.runtime.env import register_capability_envs")
    w()
    w("ENVS = {")
    for cap_name, module in modules:
        entry = pystr(f"{package}.{module}:{class_name(cap_name)}")
        line = f"{pystr(cap_name)}: {entry},"
        if len(line) + 4 <= LINE:
            w(line, 1)
        else:
            w(f"{pystr(cap_name)}: (", 1)
            w(entry, 2)
            w("),", 1)
    w("}")
    w()
    w("register_capability_envs(ENVS)")
    return w.text()


def ir_json(cap: IR.CapabilityIR) -> str:
    return json.dumps(cap.model_dump(mode="json"), indent=2, sort_keys=False) + "\n"
