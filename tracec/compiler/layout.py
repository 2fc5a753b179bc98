"""Line layout of generated code: the `Writer` (lines and the spec line table), wrapping of
long expressions, strings and tuples at 100 columns, and docstrings."""

from __future__ import annotations

import re
from typing import Any

from tracec.compiler import ir as IR
from tracec.compiler.emit_expr import PREC, ExprGen, lit, pystr
from tracec.lang.builtins import BUILTINS

LINE = 100


class Writer:
    """Lines of generated code, and the spec position each came from (the line table)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        # spec (line, column) of what is written now; code from a fragment adds (fragment
        # path, line, column) in that file
        self.at: tuple[Any, ...] | None = None
        self.marks: list[tuple[Any, ...]] = []  # (first module line, *at)
        self._n = 0  # module lines written so far
        self._noted: set[Any] = set()  # places named by a comment in this block

    def __call__(self, line: str = "", indent: int = 0) -> None:
        """One line (``indent`` levels deep). The first line of a block (a run of lines with a
        spec position) written for a spec line gets a `# spec:LINE` comment (code from a
        fragment: `# PATH:LINE` of the fragment file), so a reviewer can jump to what it came
        from: trailing, or on its own line above when the line is full."""
        if not line and len(self.lines) >= 2 and not self.lines[-1] and not self.lines[-2]:
            return  # at most two blank lines in a row (keeps the line table exact)
        at = self.at or (0, 0)
        if (self.marks[-1][1:] if self.marks else (0, 0)) != at:
            self.marks.append((self._n + 1, *at))
        text = ("    " * indent + line) if line else ""
        if at[0] <= 0:
            self._noted = set()
        elif line and (at[2:4] or at[0]) not in self._noted and "\n" not in line:
            self._noted.add(at[2:4] or at[0])
            note = f"# {at[2]}:{at[3]}" if len(at) > 2 else f"# spec:{at[0]}"
            if line.startswith("# "):  # a comment of its own: `# spec:LINE what`
                text = "    " * indent + note + line[1:]
            elif len(text) + 2 + len(note) <= LINE:
                text += "  " + note
            else:
                self.lines.append("    " * indent + note)
                self._n += 1
        self.lines.append(text)
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

    def call_block(self, head: str, items: list[Any], indent: int, tail: str = ")",
                   ats: list[tuple[int, int]] | None = None) -> None:
        """`head(` items one per line `)` when long, else one line. An item may be a list of
        lines (an expression already broken over several lines); ``ats``: each item's spec
        position, used when the items are on lines of their own."""
        flat = [i if isinstance(i, str) else (i[0] if len(i) == 1 else None) for i in items]
        if all(f is not None for f in flat):
            one = f"{head}{', '.join(flat)}{tail}"  # type: ignore[arg-type]
            if len(one) + 4 * indent <= LINE:
                self(one, indent)
                return
        self(head, indent)
        head_at = self.at
        for i, item in enumerate(items):
            if ats is not None:
                self.at = ats[i] if ats[i][0] > 0 else head_at
            lines = [item] if isinstance(item, str) else item
            self.emit("", lines, indent + 1, ",")
        self.at = head_at
        self(tail.lstrip(","), indent)

    def text(self) -> str:
        out = "\n".join(self.lines).rstrip() + "\n"
        return re.sub(r"\n{4,}", "\n\n\n", out)


def line_table(w: Writer) -> None:
    """``SPEC_LINES``: (first module line, spec line, spec column) for each run of lines that
    came from one spec statement; the runtime maps a failure's line back to the spec. A run
    from a shared fragment adds (index into ``SPEC_FRAGMENTS``, its line, its column)."""
    marks = [m for m in w.marks]
    paths = list(dict.fromkeys(m[3] for m in marks if len(m) > 3))
    w.at = None
    w()
    w()
    w("# spec positions of the code above, for run-time errors: (module line, spec line, column)")
    if paths:
        w("# code from a shared fragment adds (SPEC_FRAGMENTS index, fragment line, column)")
        w.emit("SPEC_FRAGMENTS = ", wrap_tuple(paths, 0, extra=17), 0)
    w("SPEC_LINES = (")
    row = ""
    for m in marks:
        numbers = list(m[:3]) + ([paths.index(m[3]), m[4], m[5]] if len(m) > 3 else [])
        item = "(" + ", ".join(map(str, numbers)) + "), "
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
        text = gen.gen(part, PREC[e.op] + (1 if i else 0))
        lead = "    " if i == 0 else f"    {e.op} "
        if len(text) + len(lead) + 4 * indent <= room:
            lines.append(lead + text)
            continue
        sub = pretty(gen, part, room - 8)
        if len(sub) > 1 and not sub[0].endswith(("(", "[", "{")):
            sub = ["("] + indented(sub) + [")"]
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


def wrap_tuple(items: list[str], indent: int, extra: int = 20) -> list[str]:
    """A tuple of string literals, on one line when it fits (``extra``: the columns the rest of
    that line takes), else one item per line."""
    one = str_tuple(items)
    if 4 * indent + extra + len(one) <= LINE:
        return [one]
    return ["("] + [f"    {pystr(i)}," for i in items] + [")"]


def with_comma(lines: list[str]) -> list[str]:
    return lines[:-1] + [lines[-1] + ","]


def indented(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


def pretty(gen: "ExprGen", e: Any, room: int) -> list[str]:
    """An expression as lines that fit ``room`` columns where its shape allows breaking:
    list and dict literals one item per line, and/or chains and `+` chains one operand per line."""
    one = gen.gen(e)
    if len(one) <= room:
        return [one]
    if isinstance(e, IR.ListLit) and e.items:
        body = [line for item in e.items for line in with_comma(pretty(gen, item, room - 4))]
        return ["["] + indented(body) + ["]"]
    if isinstance(e, IR.DictLit) and e.pairs:
        return ["{"] + indented(pairs_lines(gen, [(gen.gen(p.key), p.value) for p in e.pairs],
                                      room - 4)) + ["}"]
    if isinstance(e, IR.BoolOp):
        return wrap_expr(gen, e, 0, room)
    if isinstance(e, (IR.ListComp, IR.CallGen, IR.DictComp)):
        inner = gen.with_var(e.comp.var)
        if isinstance(e, IR.DictComp):
            head = [f"{inner.gen(e.pair.key, PREC['or'])}: {inner.gen(e.pair.value, PREC['or'])}"]
        else:
            head = pretty(inner, e.elt, room - 4)
        body = head + [f"for {e.comp.var} in {gen.gen(e.comp.iter, PREC['or'])}"]
        if e.comp.cond is not None:
            cond = pretty(inner, e.comp.cond, room - 7)
            body += [f"if {cond[0]}"] + cond[1:]
        if isinstance(e, IR.ListComp):
            return ["["] + indented(body) + ["]"]
        if isinstance(e, IR.DictComp):
            return ["{"] + indented(body) + ["}"]
        b = BUILTINS.get(e.func)
        if e.func == "first":
            return ["next(", "    ("] + indented(indented(body)) + ["    ),", "    None,", ")"]
        if e.func == "count":
            return ["sum("] + indented(["1"] + body[len(head):]) + [")"]
        if b is not None and b.needs_rng:
            return ([f"{b.runtime}(", "    rng,", "    ["] + indented(indented(body))
                    + ["    ],", ")"])
        return [f"{b.runtime if b else e.func}("] + indented(body) + [")"]
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
        body = [line for arg in code_args for line in with_comma(arg)]
        return [f"{b.runtime}("] + indented(body) + [")"]
    if isinstance(e, IR.Compare):
        p = PREC["cmp"] + 1
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
    if isinstance(e, IR.Index) and isinstance(e.obj, (IR.ListComp, IR.ListLit, IR.Call,
                                                      IR.CallGen)):
        obj = pretty(gen, e.obj, room - 6)
        return obj[:-1] + [f"{obj[-1]}[{gen.gen(e.index)}]"]
    if isinstance(e, IR.IfElse):
        body = pretty(gen, e.body, room - 4)
        test = pretty(gen, e.test, room - 7)
        orelse = pretty(gen, e.orelse, room - 9)
        lines = body + [f"if {test[0]}"] + test[1:] + [f"else {orelse[0]}"] + orelse[1:]
        return ["("] + indented(lines) + [")"]
    if isinstance(e, IR.BinOp) and e.op in ("+", "-"):
        parts: list[tuple[str, Any]] = []
        node = e
        while isinstance(node, IR.BinOp) and node.op in ("+", "-"):
            parts.append((node.op, node.right))
            node = node.left
        parts.append(("", node))
        parts.reverse()
        lines = [gen.gen(parts[0][1], PREC["+"])]
        for op, x in parts[1:]:
            lines.append(f"{op} {gen.gen(x, PREC['+'] + 1)}")
        return ["("] + indented(lines) + [")"]
    return [one]


def pairs_lines(gen: "ExprGen", pairs: list[tuple[str, Any]], room: int) -> list[str]:
    out: list[str] = []
    for key, value in pairs:
        lines = pretty(gen, value, room - len(key) - 2)
        lines[0] = f"{key}: {lines[0]}"
        out += with_comma(lines)
    return out


def fields_lines(gen: "ExprGen", fields: list[IR.FieldIR], room: int) -> list[str]:
    """`{"field": value, ...}` as lines (one line when it fits)."""
    one = fields_dict(gen, fields)
    if len(one) <= room or not fields:
        return [one]
    pairs = pairs_lines(gen, [(pystr(f.name), f.value) for f in fields], room - 4)
    return ["{"] + indented(pairs) + ["}"]


def fields_dict(gen: ExprGen, fields: list[IR.FieldIR]) -> str:
    return "{" + ", ".join(f"{pystr(f.name)}: {gen.gen(f.value)}" for f in fields) + "}"


def dict_block(w: Writer, head: str, value: dict, indent: int) -> None:
    """A dict literal over several lines, one key per line (nested when long)."""
    w(head + "{", indent)
    for k, v in value.items():
        one = f"{lit(k)}: {lit(v)},"
        if isinstance(v, dict) and len(one) + 4 * (indent + 1) > LINE:
            dict_block(w, f"{lit(k)}: ", v, indent + 1)
        else:
            w(one, indent + 1)
    w("},", indent)


def str_tuple(items: list[str]) -> str:
    if len(items) == 1:
        return f"({pystr(items[0])},)"
    return "(" + ", ".join(pystr(i) for i in items) + ")"


def _doc_char(ch: str) -> str:
    if ch == "\n" or (ch.isprintable() and ch not in '"\\' and not "\ud800" <= ch <= "\udfff"):
        return ch
    if ch in '"\\':
        return "\\" + ch
    return ascii(ch)[1:-1]  # \x00, \u2028, \ud800: escaped, so the file is valid UTF-8


def docstring(text: str) -> str:
    """A docstring for any text: quotes, backslashes and unprintable characters escaped."""
    return '"""' + "".join(_doc_char(ch) for ch in text) + '"""'
