"""Parse spec text into the AST (`tracec.lang.ast`), with precise syntax diagnostics."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from tracec.core.diagnostics import Diagnostic, Span, SpecError
from tracec.lang import ast as A

GRAMMAR_PATH = Path(__file__).resolve().parent / "tracec.lark"  # package data (the only copy)
MAX_SOURCE_BYTES = 1_000_000
MAX_NESTING = 60  # levels of nested expressions, types and literals
MAX_NUMBER_CHARS = 40  # digits of a number literal (ints to 10**40; floats stay finite)

# Friendly names for terminals in "expected ..." messages.
_TOKEN_NAMES = {
    "NAME": "a name", "INT": "an integer", "FLOAT": "a number", "STRING": "a string",
    "LONG_STRING": "a string", "LBRACE": "`{`", "RBRACE": "`}`", "LPAR": "`(`", "RPAR": "`)`",
    "LSQB": "`[`", "RSQB": "`]`", "COMMA": "`,`", "EQUAL": "`=`", "COLON": "`:`", "DOT": "`.`",
    "$END": "end of file", "SEMICOLON": "`;`", "_SEP": "`;`", "MINUS": "`-`", "PLUS": "`+`",
    "STAR": "`*`", "SLASH": "`/`", "PERCENT": "`%`", "MORETHAN": "`>`", "LESSTHAN": "`<`",
}

_STATEMENT_HINTS = {
    "capability": "a spec starts with `capability NAME {`",
    "task": "a task holds: let, user, gold { ... }, communicate, forbid, reply, hint, distractor",
    "seed": "a seed block holds assignments such as `users = user[3..5]`",
    "reward": "a reward block holds rules such as `1.0 when state_matches` and `0.0 otherwise`",
}


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = GRAMMAR_PATH.read_text(encoding="utf-8")
    return Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        start=["start", "expr"],
        propagate_positions=True,
        maybe_placeholders=True,
        cache=True,  # lark caches the LALR tables in the temp dir, keyed by grammar hash
    )


def _span_of(item: Any) -> Span:
    if isinstance(item, Token):
        return Span(
            line=item.line or 1,
            column=item.column or 1,
            end_line=item.end_line or item.line or 1,
            end_column=item.end_column or (item.column or 1) + len(item),
        )
    meta = getattr(item, "meta", None)
    if meta is not None and not getattr(meta, "empty", True):
        return Span(line=meta.line, column=meta.column, end_line=meta.end_line,
                    end_column=meta.end_column)
    return Span()


def _describe_expected(expected: set[str]) -> str:
    names = sorted({_TOKEN_NAMES.get(e, f"`{e.lower()}`" if e.isupper() else f"`{e}`")
                    for e in expected if not e.startswith("__")})
    anon = [e for e in expected if e.startswith("__")]
    if anon:
        names.append("an operator")
    if len(names) > 8:
        names = names[:8] + ["..."]
    return ", ".join(names)


def _syntax_diagnostic(err: UnexpectedInput, source: str) -> Diagnostic:
    line, col = err.line or 1, err.column or 1
    if line < 1:
        lines = source.splitlines() or [""]
        line, col = len(lines), len(lines[-1]) + 1
    if isinstance(err, UnexpectedCharacters):
        ch = source[err.pos_in_stream] if err.pos_in_stream < len(source) else "?"
        hint = None
        if ch in "'":
            hint = "strings use double quotes: \"...\""
        elif ch == '"':
            hint = "this string is not closed on its line; use \"\"\"...\"\"\" for text over several lines"
        return Diagnostic(message=f"unexpected character {ch!r}", span=Span.at(line, col), hint=hint,
                          code="E001")
    if isinstance(err, UnexpectedEOF):
        return Diagnostic(message="unexpected end of file",
                          span=Span.at(line, col),
                          hint=f"expected {_describe_expected(set(err.expected))}; is a `}}` missing?",
                          code="E002")
    assert isinstance(err, UnexpectedToken)
    tok = err.token
    if tok.type == "$END":
        return Diagnostic(message="unexpected end of file", span=Span.at(line, col),
                          hint=f"expected {_describe_expected(set(err.expected))}; is a `}}` missing?",
                          code="E002")
    shown = str(tok).replace("\n", "\\n")
    if len(shown) > 30:
        shown = shown[:27] + "..."
    hint = f"expected {_describe_expected(set(err.expected))}"
    keyword = str(tok)
    if keyword in _STATEMENT_HINTS:
        hint += f"; {_STATEMENT_HINTS[keyword]}"
    return Diagnostic(message=f"unexpected `{shown}`", span=_span_of(tok), hint=hint, code="E003")


def _check_depth(cap: A.Capability) -> None:
    """Expressions, types and literals nested deeper than MAX_NESTING are an error (the
    generated module must stay within Python's own parser limits)."""
    stack: list[tuple[Any, int]] = [(cap, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, list):
            stack.extend((x, depth) for x in node)
            continue
        if not isinstance(node, A.Node):
            continue
        if depth > MAX_NESTING:
            raise SpecError([Diagnostic(
                message=f"nested more than {MAX_NESTING} levels deep", span=node.span,
                hint="split the expression with `let`", code="E005")])
        for value in vars(node).values():
            if isinstance(value, (A.Node, list)):
                stack.append((value, depth + 1))


def parse_source(source: str) -> A.Capability:
    """Parse a whole spec. Raises SpecError with diagnostics on a syntax error."""
    if len(source.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        raise SpecError([Diagnostic(message="spec is larger than 1 MB", span=Span(), code="E004")])
    try:
        tree = _parser().parse(source, start="start")
        cap = _Builder(source).capability(tree.children[0])
        _check_depth(cap)
        return cap
    except UnexpectedInput as err:
        raise SpecError([_syntax_diagnostic(err, source)]) from None
    except RecursionError:
        raise SpecError([Diagnostic(message="spec is nested too deeply", span=Span(),
                                    code="E005")]) from None


def parse_expr(source: str, line: int = 1, column: int = 1) -> A.Expr:
    """Parse one expression (used for `{...}` interpolation), spans shifted to (line, column)."""
    tree = _parser().parse(source, start="expr")
    expr = _Builder(source).expr(tree)
    return _shift(expr, line - 1, column - 1)


def _shift(node: Any, dline: int, dcol: int) -> Any:
    """Move every span in an expression parsed on its own to where it sits in the file."""
    if isinstance(node, A.Node):
        sp = node.span
        node.span = Span(
            line=sp.line + dline,
            column=sp.column + (dcol if sp.line == 1 else 0),
            end_line=sp.end_line + dline,
            end_column=sp.end_column + (dcol if sp.end_line == 1 else 0),
        )
        for name in type(node).model_fields:
            _shift(getattr(node, name), dline, dcol)
    elif isinstance(node, list):
        for item in node:
            _shift(item, dline, dcol)
    return node


def decode_string(raw: str) -> str:
    """The value of a STRING / LONG_STRING token (escapes: \\\\ \\" \\n \\t \\r \\uXXXX)."""
    body = raw[3:-3] if raw.startswith('"""') else raw[1:-1]
    out: list[str] = []
    i = 0
    simple = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "0": "\0", "{": "\\{",
              "}": "\\}"}
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt == "u" and i + 5 < len(body) + 0 and all(c in "0123456789abcdefABCDEF"
                                                            for c in body[i + 2:i + 6]) \
                    and len(body[i + 2:i + 6]) == 4:
                out.append(chr(int(body[i + 2:i + 6], 16)))
                i += 6
                continue
            out.append(simple.get(nxt, "\\" + nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


MAX_TASK_INSTANCES = 64  # tasks one parameterised `task` may expand to


class _Builder:
    """Turns Lark trees into AST nodes."""

    def __init__(self, source: str):
        self.source = source

    # -- helpers
    def err(self, message: str, span: Span, hint: str | None = None) -> SpecError:
        return SpecError([Diagnostic(message=message, span=span, hint=hint, code="E006")])

    def text(self, tree: Tree) -> A.Text:
        tok: Token = tree.children[0]
        return self.interpolate(tok)

    def interpolate(self, tok: Token) -> A.Text:
        """Split a string token into literal parts and `{expr}` parts."""
        raw = str(tok)
        quote = 3 if raw.startswith('"""') else 1
        value = decode_string(raw)
        parts: list[Any] = []
        buf: list[str] = []
        i = 0
        # position bookkeeping is on the raw text; escapes inside {...} are not allowed
        body_raw = raw[quote:-quote]
        raw_index = 0
        line, col = tok.line, tok.column + quote

        def advance(upto: int) -> None:
            nonlocal raw_index, line, col
            while raw_index < upto:
                if body_raw[raw_index] == "\n":
                    line += 1
                    col = 1
                else:
                    col += 1
                raw_index += 1

        while i < len(value):
            ch = value[i]
            if value.startswith("\\{", i) or value.startswith("\\}", i):
                buf.append(value[i + 1])
                i += 2
                continue
            if value.startswith("{{", i) or value.startswith("}}", i):
                buf.append(ch)
                i += 2
                continue
            if ch == "}":
                pos = body_raw.find("}", raw_index)
                advance(max(pos, raw_index))
                raise self.err("single `}` in text", Span.at(line, col),
                               "write `}}` for a literal brace")
            if ch == "{":
                end = value.find("}", i)
                if end < 0:
                    pos = body_raw.find("{", raw_index)
                    advance(max(pos, raw_index))
                    raise self.err("unclosed `{` in text", Span.at(line, col),
                                   "close the interpolation with `}`, or write `{{` for a brace")
                inner = value[i + 1:end]
                pos = body_raw.find("{" + inner + "}", raw_index)
                if pos >= 0:
                    advance(pos + 1)
                if buf:
                    parts.append("".join(buf))
                    buf = []
                if not inner.strip():
                    raise self.err("empty `{}` in text", Span.at(line, col),
                                   "put an expression inside, e.g. {r.reservation_id}")
                try:
                    expr = parse_expr(inner, line, col)
                except UnexpectedInput as exc:
                    diag = _syntax_diagnostic(exc, inner)
                    diag.span = Span.at(line, col + max(diag.span.column - 1, 0))
                    diag.message += " in interpolation"
                    raise SpecError([diag]) from None
                parts.append(expr)
                i = end + 1
                continue
            buf.append(ch)
            i += 1
        if buf:
            parts.append("".join(buf))
        return A.Text.model_construct(parts=parts, span=_span_of(tok))

    def string(self, tok: Token) -> str:
        return decode_string(str(tok))

    # -- top level
    def capability(self, tree: Tree) -> A.Capability:
        name_tok = tree.children[0]
        cap = A.Capability.model_construct(name=str(name_tok), span=_span_of(name_tok))
        seen: dict[str, Span] = {}
        for item in tree.children[1:]:
            kind = item.data
            if kind in {"description", "domain_decl", "max_turns", "hint_stmt", "seed", "reward",
                        "tools_decl", "policy_sections", "policy_text", "compact_decl"}:
                key = "policy" if kind.startswith("policy") else kind
                if key in seen:
                    label = {"domain_decl": "domain", "hint_stmt": "hint", "tools_decl": "tools",
                             "compact_decl": "compact_tools"}.get(key, key)
                    raise self.err(f"duplicate `{label}` in capability", _span_of(item),
                                   f"`{label}` was already given on line {seen[key].line}")
                seen[key] = _span_of(item)
            if kind == "description":
                cap.description = self.text(item.children[0])
            elif kind == "domain_decl":
                cap.domain = str(item.children[0])
                cap.domain_span = _span_of(item.children[0])
            elif kind == "max_turns":
                cap.max_turns = int(self.number(item.children[0], int))
            elif kind == "hint_stmt":
                cap.hint = self.text(item.children[0])
            elif kind == "seed":
                cap.seed = [self.seed_stmt(s) for s in item.children]
            elif kind == "task":
                cap.tasks.extend(self.tasks(item))
            elif kind == "distractor":
                cap.distractors.append(self.distractor(item))
            elif kind == "reward":
                cap.reward = A.Reward.model_construct(rules=[self.rule(r) for r in item.children],
                                      span=_span_of(item))
            elif kind == "tool_decl":
                cap.tools.append(self.tool_decl(item))
            elif kind == "tools_decl":
                cap.shown_tools = [
                    A.NameRef.model_construct(name=str(t.children[0]), span=_span_of(t.children[0]))
                    for t in item.children if t is not None
                ]
                cap.shown_tools_span = _span_of(item)
            elif kind == "policy_sections":
                toks = [t for t in item.children if t is not None]
                cap.policy = A.PolicyDecl.model_construct(
                    sections=[self.string(t) for t in toks],
                    section_spans=[_span_of(t) for t in toks], text=None, span=_span_of(item))
            elif kind == "policy_text":
                text = self.text(item.children[0])
                if any(not isinstance(p, str) for p in text.parts):
                    raise self.err("a policy text cannot interpolate values", text.span,
                                   "use `{{` and `}}` for literal braces")
                cap.policy = A.PolicyDecl.model_construct(
                    sections=None, section_spans=[], text="".join(text.parts), span=_span_of(item))
            elif kind == "compact_decl":
                cap.compact_tools = True
        return cap

    def seed_stmt(self, tree: Tree) -> A.SeedStmt:
        name, value, fields = tree.children
        return A.SeedStmt.model_construct(
            name=str(name), value=self.expr(value),
            fields=self.field_block(fields) if fields is not None else None,
            span=_span_of(name),
        )

    def field_block(self, tree: Tree) -> list[Any]:
        return [self.let(c) if c.data == "let_stmt" else self.field_assign(c)
                for c in tree.children if isinstance(c, Tree)]

    def field_assign(self, tree: Tree) -> A.FieldAssign:
        name, value = tree.children
        return A.FieldAssign.model_construct(name=str(name), value=self.expr(value), span=_span_of(name))

    def tasks(self, tree: Tree) -> list[A.Task]:
        """A task, or one task per parameter tuple of `task NAME(p, q) for (a, b), ...`."""
        name_tok, params, weight, *stmts = tree.children
        task = self.task(name_tok, weight, stmts)
        if params is None:
            return [task]
        names = [c for c in params.children if isinstance(c, Token) and c.type == "NAME"]
        rows = [c for c in params.children if isinstance(c, Tree) and c.data == "param_values"]
        if len(rows) > MAX_TASK_INSTANCES:
            raise self.err(f"task `{task.name}` has {len(rows)} parameter tuples (at most "
                           f"{MAX_TASK_INSTANCES})", _span_of(rows[MAX_TASK_INSTANCES]),
                           "split it into several tasks, or draw the values with pick(...)")
        out: list[A.Task] = []
        used: set[str] = set()
        for i, row in enumerate(rows):
            values = [self.expr(v) for v in row.children]
            if len(values) != len(names):
                raise self.err(f"task `{task.name}` has {len(names)} parameter"
                               f"{'s' if len(names) != 1 else ''}, this tuple {len(values)} value"
                               f"{'s' if len(values) != 1 else ''}", _span_of(row),
                               f"give one value per parameter: ({', '.join(map(str, names))})")
            suffix = "_".join(re.sub(r"[^0-9A-Za-z]+", "_", str(getattr(v, "value", ""))).strip("_")
                              for v in values).lower()
            inst_name = f"{task.name}_{suffix}" if suffix and re.fullmatch(r"\w+", suffix) else ""
            if not inst_name or inst_name in used:
                inst_name = f"{task.name}_{i + 1}"
            used.add(inst_name)
            lets = [A.Let.model_construct(name=str(n), value=v, span=_span_of(n))
                    for n, v in zip(names, values)]
            setup = [st.model_copy(update={"after_lets": st.after_lets + len(lets)})
                     for st in task.setup]  # their positions count the parameters' lets too
            out.append(task.model_copy(update={"name": inst_name, "lets": lets + list(task.lets),
                                               "setup": setup}))
        return out

    def task(self, name_tok: Token, weight: Any, stmts: list) -> A.Task:
        task = A.Task.model_construct(name=str(name_tok), span=_span_of(name_tok))
        if weight is not None:
            task.weight = float(self.expr(weight.children[0]).value)  # type: ignore[union-attr]
        once: dict[str, Span] = {}
        for st in stmts:
            kind = st.data
            if kind in {"user_stmt", "gold_stmt", "hint_stmt"}:
                if kind in once:
                    label = kind.removesuffix("_stmt")
                    raise self.err(f"duplicate `{label}` in task `{task.name}`", _span_of(st),
                                   f"`{label}` was already given on line {once[kind].line}")
                once[kind] = _span_of(st)
            if kind == "let_stmt":
                task.lets.append(self.let(st))
            elif kind == "user_stmt":
                task.user = self.text(st.children[0])
            elif kind == "gold_stmt":
                task.gold = [self.gold_for(c) if c.data == "gold_for" else self.tool_call(c)
                             for c in st.children if isinstance(c, Tree)]
                task.gold_span = _span_of(st)
            elif kind == "communicate_stmt":
                task.communicate.extend(self.expr(c) for c in st.children)
            elif kind == "forbid_stmt":
                target = st.children[0]
                if isinstance(target, Token):
                    task.forbid.append(A.Forbid.model_construct(tool=str(target), span=_span_of(target)))
                else:
                    call = self.tool_call(target)
                    task.forbid.append(A.Forbid.model_construct(tool=call.name, args=call.args, span=call.span))
            elif kind == "reply_stmt":
                text_tree, *keywords = st.children
                task.replies.append(A.ReplyStmt.model_construct(
                    text=self.text(text_tree),
                    keywords=[self.string(k) for k in keywords if k is not None],
                    span=_span_of(st),
                ))
            elif kind == "hint_stmt":
                task.hint = self.text(st.children[0])
            elif kind == "distractor":
                task.distractors.append(self.distractor(st))
            elif kind == "setup_stmt":
                task.setup.append(A.Setup.model_construct(after_lets=len(task.lets),
                                          ops=[self.setup_op(o) for o in st.children],
                                          span=_span_of(st)))
        return task

    def setup_op(self, tree: Tree) -> Any:
        if tree.data == "set_stmt":
            return self.tool_stmt(tree)
        return self.distractor_op(tree)

    def let(self, tree: Tree) -> A.Let:
        name, value = tree.children
        return A.Let.model_construct(name=str(name), value=self.expr(value), span=_span_of(name))

    def gold_for(self, tree: Tree) -> A.GoldFor:
        var, iter_, *calls = tree.children
        return A.GoldFor.model_construct(
            var=str(var), iter=self.expr(iter_), span=_span_of(var),
            calls=[self.tool_call(c) for c in calls if isinstance(c, Tree)])

    def tool_call(self, tree: Tree) -> A.ToolCallAst:
        name, *args = tree.children
        kwargs = [self.kwarg(a) for a in args if a is not None]
        return A.ToolCallAst.model_construct(name=str(name), args=kwargs, span=_span_of(name))

    def kwarg(self, tree: Tree) -> A.KwArg:
        name, value = tree.children
        return A.KwArg.model_construct(name=str(name), value=self.expr(value), span=_span_of(name))

    def distractor(self, tree: Tree) -> A.Distractor:
        name, *stmts = tree.children
        out = A.Distractor.model_construct(name=str(name), span=_span_of(name))
        out.stmts = [self.distractor_op(st) for st in stmts]
        return out

    def distractor_op(self, st: Tree) -> Any:
        if st.data == "clone_stmt":
            src, *fields = st.children
            return A.Clone.model_construct(source=self.expr(src),
                           fields=[self.field_assign(f) for f in fields if f is not None],
                           span=_span_of(st))
        if st.data == "add_stmt":
            kind, fields = st.children
            return A.AddRecord.model_construct(kind=str(kind),
                               fields=self.field_block(fields) if fields is not None else [],
                               span=_span_of(kind))
        return A.Say.model_construct(text=self.text(st.children[0]), span=_span_of(st))

    def rule(self, tree: Tree) -> A.Rule:
        if tree.data == "rule_when":
            value, cond = tree.children
            return A.Rule.model_construct(value=self.expr(value), cond=self.expr(cond), span=_span_of(tree))
        return A.Rule.model_construct(value=self.expr(tree.children[0]), cond=None, span=_span_of(tree))

    def tool_decl(self, tree: Tree) -> A.ToolDecl:
        name, *rest = tree.children
        body = rest[-1]
        desc_tok = rest[-2]
        flags = rest[-3]
        params = [self.param(p) for p in rest[:-3] if p is not None]
        decl = A.ToolDecl.model_construct(
            name=str(name), params=params, writes=flags is not None,
            description=self.string(desc_tok) if desc_tok is not None else "",
            span=_span_of(name),
        )
        if body.data == "tool_python":
            decl.python = str(body.children[0])
        else:
            decl.body = [self.tool_stmt(s) for s in body.children]
        return decl

    def param(self, tree: Tree) -> A.Param:
        name, type_ref, default = tree.children
        return A.Param.model_construct(
            name=str(name), type=self.type_ref(type_ref),
            default=self.expr(default) if default is not None else None,
            span=_span_of(name),
        )

    def type_ref(self, tree: Tree) -> A.TypeRef:
        name, arg = tree.children
        return A.TypeRef.model_construct(name=str(name), arg=self.type_ref(arg) if arg is not None else None,
                         span=_span_of(name))

    def tool_stmt(self, tree: Tree) -> Any:
        kind = tree.data
        if kind == "let_stmt":
            return self.let(tree)
        if kind == "require_stmt":
            cond, msg = tree.children
            return A.Require.model_construct(cond=self.expr(cond), message=self.string(msg), span=_span_of(tree))
        if kind == "set_stmt":
            target, value = tree.children
            return A.SetStmt.model_construct(target=self.expr(target), value=self.expr(value), span=_span_of(tree))
        return A.Return.model_construct(value=self.expr(tree.children[0]), span=_span_of(tree))

    # -- expressions
    def expr(self, item: Any) -> Any:
        if isinstance(item, Token):
            raise self.err(f"unexpected token `{item}`", _span_of(item))
        method = getattr(self, f"x_{item.data}", None)
        if method is None:  # pragma: no cover - grammar and builder out of sync
            raise self.err(f"unsupported construct `{item.data}`", _span_of(item))
        node = method(item, *item.children)
        node.span = _span_of(item)
        return node

    def number(self, tok: Token, kind: type) -> int | float:
        """A number literal's value; literals longer than MAX_NUMBER_CHARS are errors."""
        if len(tok) > MAX_NUMBER_CHARS:
            raise self.err(f"number literal with {len(tok)} characters (at most "
                           f"{MAX_NUMBER_CHARS})", _span_of(tok))
        return kind(tok)

    def x_int(self, tree: Tree, tok: Token) -> A.Num:
        return A.Num.model_construct(value=self.number(tok, int))

    def x_float(self, tree: Tree, tok: Token) -> A.Num:
        return A.Num.model_construct(value=self.number(tok, float))

    def x_string(self, tree: Tree, tok: Token) -> A.Str:
        return A.Str.model_construct(value=self.string(tok).replace("\\{", "{").replace("\\}", "}"))

    def x_true(self, tree: Tree) -> A.Bool:
        return A.Bool.model_construct(value=True)

    def x_false(self, tree: Tree) -> A.Bool:
        return A.Bool.model_construct(value=False)

    def x_none(self, tree: Tree) -> A.NoneLit:
        return A.NoneLit.model_construct()

    def x_name(self, tree: Tree, tok: Token) -> A.Name:
        return A.Name.model_construct(id=str(tok))

    def x_attr(self, tree: Tree, obj: Tree, name: Token) -> A.Attr:
        return A.Attr.model_construct(obj=self.expr(obj), name=str(name))

    def x_index(self, tree: Tree, obj: Tree, index: Tree) -> A.Index:
        return A.Index.model_construct(obj=self.expr(obj), index=self.expr(index))

    def x_call(self, tree: Tree, func: Token, *args: Any) -> A.Call:
        call = A.Call.model_construct(func=str(func))
        for a in args:
            if a is None:
                continue
            if isinstance(a, Tree) and a.data == "kwarg":
                call.kwargs.append(self.kwarg(a))
            else:
                if call.kwargs:
                    raise self.err("positional argument after keyword argument", _span_of(a))
                call.args.append(self.expr(a))
        return call

    def comp(self, tree: Tree) -> A.Comprehension:
        var, it, cond = tree.children
        return A.Comprehension.model_construct(var=str(var), iter=self.expr(it),
                               cond=self.expr(cond) if cond is not None else None,
                               span=_span_of(tree))

    def x_call_gen(self, tree: Tree, func: Token, elt: Tree, comp: Tree) -> A.CallGen:
        return A.CallGen.model_construct(func=str(func), elt=self.expr(elt), comp=self.comp(comp))

    def x_list(self, tree: Tree, *items: Any) -> A.ListLit:
        return A.ListLit.model_construct(items=[self.expr(i) for i in items if i is not None])

    def x_list_comp(self, tree: Tree, elt: Tree, comp: Tree) -> A.ListComp:
        return A.ListComp.model_construct(elt=self.expr(elt), comp=self.comp(comp))

    def pair(self, tree: Tree) -> A.Pair:
        k, v = tree.children
        return A.Pair.model_construct(key=self.expr(k), value=self.expr(v), span=_span_of(tree))

    def x_dict(self, tree: Tree, *pairs: Any) -> A.DictLit:
        return A.DictLit.model_construct(pairs=[self.pair(p) for p in pairs if p is not None])

    def x_dict_comp(self, tree: Tree, pair: Tree, comp: Tree) -> A.DictComp:
        return A.DictComp.model_construct(pair=self.pair(pair), comp=self.comp(comp))

    def x_neg(self, tree: Tree, operand: Tree) -> A.Unary:
        return A.Unary.model_construct(op="-", operand=self.expr(operand))

    def x_not_(self, tree: Tree, operand: Tree) -> A.Unary:
        return A.Unary.model_construct(op="not", operand=self.expr(operand))

    def x_binop(self, tree: Tree, left: Tree, op: Tree, right: Tree) -> A.BinOp:
        return A.BinOp.model_construct(op=str(op.children[0]), left=self.expr(left), right=self.expr(right))

    def x_compare(self, tree: Tree, left: Tree, op: Tree, right: Tree) -> A.Compare:
        op_text = " ".join(str(t) for t in op.children)
        return A.Compare.model_construct(op=op_text, left=self.expr(left), right=self.expr(right))

    def x_and_(self, tree: Tree, left: Tree, right: Tree) -> A.BoolOp:
        return A.BoolOp.model_construct(op="and", left=self.expr(left), right=self.expr(right))

    def x_or_(self, tree: Tree, left: Tree, right: Tree) -> A.BoolOp:
        return A.BoolOp.model_construct(op="or", left=self.expr(left), right=self.expr(right))

    def x_ifelse(self, tree: Tree, body: Tree, test: Tree, orelse: Tree) -> A.IfElse:
        return A.IfElse.model_construct(body=self.expr(body), test=self.expr(test), orelse=self.expr(orelse))

    def x_range(self, tree: Tree, lo: Tree, hi: Tree) -> A.Range:
        return A.Range.model_construct(lo=self.expr(lo), hi=self.expr(hi))
