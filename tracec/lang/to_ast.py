"""The Lark parse tree to the AST (`tracec.lang.ast`): one `Transformer` method per named node.

Every alternative of the grammar (`tracec.lark`) that builds something has a name (its rule's,
or an alias `-> name`), and the method of that name builds it from its already transformed
children, bottom-up, as in Lark's own examples. A block's statements (the items of
`capability { ... }` and `task NAME { ... }`) become `_Once`/`_Many` parts that say which
fields they fill, so the block needs no case analysis of what it holds.

Spans: a node's span is its tree's `meta` (or the token that names it), moved by
(`line_offset`, `column_offset`) for an expression parsed out of a `{...}` interpolation, so
every span is in the spec's coordinates.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lark import Token, Transformer, v_args
from lark.tree import Meta

from tracec.core.diagnostics import Span, SpecError
from tracec.lang import ast as A
from tracec.lang.strings import Segment, decode_string, rejected, text_parts

MAX_NUMBER_CHARS = 40  # digits of a number literal (ints to 10**40; floats stay finite)
MAX_TASK_INSTANCES = 64  # tasks one parameterised `task` may expand to


def span_of(pos: Token | Meta) -> Span:
    """The source range of a token or of a tree's `meta` (a default span when it has none)."""
    if isinstance(pos, Token):
        return Span(
            line=pos.line or 1,
            column=pos.column or 1,
            end_line=pos.end_line or pos.line or 1,
            end_column=pos.end_column or (pos.column or 1) + len(pos),
        )
    if not getattr(pos, "empty", True):
        return Span(line=pos.line, column=pos.column, end_line=pos.end_line,
                    end_column=pos.end_column)
    return Span()


# ------------------------------------------------------------------ block parts


@dataclass
class _Once:
    """A statement a block takes at most once (`user`, `domain`, ...): the fields it sets."""

    label: str
    span: Span
    fields: dict[str, Any]

    def fill(self, node: A.Node, seen: dict[str, Span], where: str) -> SpecError | None:
        if self.label in seen:
            return rejected(f"duplicate `{self.label}` in {where}", self.span,
                            f"`{self.label}` was already given on line {seen[self.label].line}")
        seen[self.label] = self.span
        for name, value in self.fields.items():
            setattr(node, name, value)
        return None


@dataclass
class _Many:
    """A statement a block may repeat (`let`, `task`, ...): items for one of its list fields."""

    field: str
    items: list[Any] = field(default_factory=list)

    def fill(self, node: A.Node, seen: dict[str, Span], where: str) -> SpecError | None:
        getattr(node, self.field).extend(self.items)
        return None


@dataclass
class _SetupPart(_Many):
    """`setup { ... }`: runs after the `let`s before it, so it records how many there are."""

    def fill(self, node: A.Node, seen: dict[str, Span], where: str) -> SpecError | None:
        for setup in self.items:
            setup.after_lets = len(node.lets)  # type: ignore[attr-defined]
        return super().fill(node, seen, where)


def _fill(node: A.Node, parts: list[Any], where: str) -> list[SpecError]:
    """Put a block's parts into its node, in order; the duplicates' errors."""
    seen: dict[str, Span] = {}
    return [err for part in parts if (err := part.fill(node, seen, where)) is not None]


_KINDS = {A.Num: "a number", A.Str: "a string", A.Bool: "a boolean", A.NoneLit: "None"}


@dataclass
class _TaskParams:
    names: list[Token]
    rows: list[tuple[list[Any], Span]]  # (values, span of the tuple)


# ------------------------------------------------------------------ the transformer


@v_args(inline=True, meta=True)
class ToAst(Transformer):
    """Builds AST nodes; `interpolate` parses the `{...}` segments of texts (same grammar).

    Text that parses but is rejected (bounds, duplicates, brace misuse) does not stop the
    transform: each is recorded, and `first_error` is the one that starts first in the source
    (the caller raises it)."""

    def __init__(self, interpolate: Callable[[Segment], Any], line_offset: int = 0,
                 column_offset: int = 0):
        super().__init__(visit_tokens=False)
        self._interpolate = interpolate
        self._dline = line_offset
        self._dcol = column_offset
        self._errors: list[SpecError] = []

    @property
    def first_error(self) -> SpecError | None:
        """The recorded error that starts first in the source; of two at one place, the outer
        (recorded later, bottom-up). A property: not a grammar node."""
        if not self._errors:
            return None
        _, error = min(enumerate(self._errors), key=lambda ie: (
            ie[1].diagnostics[0].span.line, ie[1].diagnostics[0].span.column, -ie[0]))
        return error

    # -- helpers (names start with `_`: not grammar nodes)
    def _reject(self, message: str, span: Span, hint: str | None = None) -> None:
        self._errors.append(rejected(message, span, hint))

    def _span(self, pos: Token | Meta) -> Span:
        sp = span_of(pos)
        if not (self._dline or self._dcol):
            return sp
        return Span(line=sp.line + self._dline,
                    column=sp.column + (self._dcol if sp.line == 1 else 0),
                    end_line=sp.end_line + self._dline,
                    end_column=sp.end_column + (self._dcol if sp.end_line == 1 else 0))

    def _number(self, tok: Token, kind: type) -> int | float:
        """A number literal's value; literals longer than MAX_NUMBER_CHARS are errors."""
        if len(tok) > MAX_NUMBER_CHARS:
            self._reject(f"number literal with {len(tok)} characters (at most "
                         f"{MAX_NUMBER_CHARS})", self._span(tok))
            return kind(0)
        return kind(tok)

    # -- top level
    def start(self, meta: Meta, cap: A.Capability) -> A.Capability:
        return cap

    def capability(self, meta: Meta, name: Token, *parts: Any) -> A.Capability:
        cap = A.Capability.model_construct(name=str(name), span=self._span(name))
        self._errors += _fill(cap, list(parts), "capability")
        return cap

    def description(self, meta: Meta, text: A.Text) -> _Once:
        return _Once("description", self._span(meta), {"description": text})

    def domain_decl(self, meta: Meta, name: Token) -> _Once:
        return _Once("domain", self._span(meta),
                     {"domain": str(name), "domain_span": self._span(name)})

    def max_turns(self, meta: Meta, tok: Token) -> _Once:
        return _Once("max_turns", self._span(meta), {"max_turns": int(self._number(tok, int))})

    def hint_stmt(self, meta: Meta, text: A.Text) -> _Once:
        return _Once("hint", self._span(meta), {"hint": text})

    def seed(self, meta: Meta, *stmts: A.SeedStmt) -> _Once:
        return _Once("seed", self._span(meta), {"seed": list(stmts)})

    def reward(self, meta: Meta, *rules: A.Rule) -> _Once:
        reward = A.Reward.model_construct(rules=list(rules), span=self._span(meta))
        return _Once("reward", self._span(meta), {"reward": reward})

    def tools_decl(self, meta: Meta, *names: A.NameRef | None) -> _Once:
        return _Once("tools", self._span(meta), {
            "shown_tools": [n for n in names if n is not None],
            "shown_tools_span": self._span(meta)})

    def tool_name(self, meta: Meta, name: Token) -> A.NameRef:
        return A.NameRef.model_construct(name=str(name), span=self._span(name))

    def policy_sections(self, meta: Meta, *sections: Token | None) -> _Once:
        toks = [t for t in sections if t is not None]
        policy = A.PolicyDecl.model_construct(
            sections=[decode_string(t) for t in toks], section_spans=[self._span(t) for t in toks],
            text=None, span=self._span(meta))
        return _Once("policy", self._span(meta), {"policy": policy})

    def policy_text(self, meta: Meta, text: A.Text) -> _Once:
        if any(not isinstance(p, str) for p in text.parts):
            self._reject("a policy text cannot interpolate values", text.span,
                         "use `{{` and `}}` for literal braces")
        policy = A.PolicyDecl.model_construct(
            sections=None, section_spans=[], text="".join(p for p in text.parts if isinstance(p, str)),
            span=self._span(meta))
        return _Once("policy", self._span(meta), {"policy": policy})

    def variant_decl(self, meta: Meta, name: Token, *parts: _Once) -> _Many:
        variant = A.Variant.model_construct(name=str(name), span=self._span(name))
        self._errors += _fill(variant, list(parts), f"variant `{variant.name}`")
        return _Many("variants", [variant])

    def compact_decl(self, meta: Meta) -> _Once:
        return _Once("compact_tools", self._span(meta), {"compact_tools": True})

    def communicate_raw(self, meta: Meta) -> _Once:
        return _Once("communicate raw", self._span(meta), {"communicate_raw": True})

    def text(self, meta: Meta, tok: Token) -> A.Text:
        parts: list[Any] = []
        try:  # the text's first error ends it
            parts.extend(self._interpolate(p) if isinstance(p, Segment) else p
                         for p in text_parts(tok))
        except SpecError as err:
            self._errors.append(err)
        return A.Text.model_construct(parts=parts, span=self._span(tok))

    # -- seed
    def seed_stmt(self, meta: Meta, name: Token, value: Any, fields: list | None) -> A.SeedStmt:
        return A.SeedStmt.model_construct(name=str(name), value=value, fields=fields,
                                          span=self._span(name))

    def field_block(self, meta: Meta, *items: A.FieldAssign | A.Let) -> list[Any]:
        return list(items)

    def field_assign(self, meta: Meta, name: Token, value: Any) -> A.FieldAssign:
        return A.FieldAssign.model_construct(name=str(name), value=value, span=self._span(name))

    def let_stmt(self, meta: Meta, name: Token, value: Any) -> A.Let:
        return A.Let.model_construct(name=str(name), value=value, span=self._span(name))

    # -- tasks
    def task(self, meta: Meta, name: Token, params: _TaskParams | None, weight: float | None,
             *parts: Any) -> _Many:
        """A task, or one task per parameter tuple of `task NAME(p, q) for (a, b), ...`."""
        task = A.Task.model_construct(name=str(name), span=self._span(name))
        if weight is not None:
            task.weight = weight
        self._errors += _fill(task, list(parts), f"task `{task.name}`")
        return _Many("tasks", [task] if params is None else self._instances(task, params))

    def _instances(self, task: A.Task, params: _TaskParams) -> list[A.Task]:
        names, rows = params.names, params.rows
        if len(rows) > MAX_TASK_INSTANCES:
            self._reject(f"task `{task.name}` has {len(rows)} parameter tuples (at most "
                         f"{MAX_TASK_INSTANCES})", rows[MAX_TASK_INSTANCES][1],
                         "split it into several tasks, or draw the values with pick(...)")
            return [task]
        good: list[tuple[list[Any], Span]] = []
        first_kind: dict[int, tuple[str, Span]] = {}
        seen: dict[tuple, Span] = {}
        for values, row_span in rows:
            if len(values) != len(names):
                self._reject(f"task `{task.name}` has {len(names)} parameter"
                             f"{'s' if len(names) != 1 else ''}, this tuple {len(values)} value"
                             f"{'s' if len(values) != 1 else ''}", row_span,
                             f"give one value per parameter: ({', '.join(map(str, names))})")
                continue
            ok = True
            for j, v in enumerate(values):
                kind = _KINDS.get(type(v), "value")
                if j not in first_kind:
                    first_kind[j] = (kind, v.span)
                elif first_kind[j][0] != kind:
                    self._reject(f"parameter `{names[j]}` of task `{task.name}` is {first_kind[j][0]} "
                                 f"on line {first_kind[j][1].line} and {kind} here", v.span,
                                 "give each parameter values of one kind in every tuple")
                    ok = False
            key = tuple((type(v).__name__, getattr(v, "value", None)) for v in values)
            if key in seen:
                self._reject(f"task `{task.name}` has this parameter tuple twice", row_span,
                             f"it is first given on line {seen[key].line}, column "
                             f"{seen[key].column}; each tuple makes one task (drop the repeat, "
                             "or raise the task's weight)")
                ok = False
            seen.setdefault(key, row_span)
            if ok:
                good.append((values, row_span))
        # named from the values when every tuple makes a name and no two the same; else numbered
        parts = [[re.sub(r"[^0-9A-Za-z]+", "_", str(getattr(v, "value", ""))).strip("_").lower()
                  for v in values] for values, _ in good]
        made = ["_".join(p) for p in parts]
        if all(all(p) for p in parts) and len(set(made)) == len(made):
            inst_names = [f"{task.name}_{m}" for m in made]
        else:
            inst_names = [f"{task.name}_{i + 1}" for i in range(len(good))]
        out: list[A.Task] = []
        for inst_name, (values, _) in zip(inst_names, good):
            lets = [A.Let.model_construct(name=str(n), value=v, span=self._span(n))
                    for n, v in zip(names, values)]
            setup = [st.model_copy(update={"after_lets": st.after_lets + len(lets)})
                     for st in task.setup]  # their positions count the parameters' lets too
            out.append(task.model_copy(update={"name": inst_name, "lets": lets + list(task.lets),
                                               "setup": setup}))
        return out

    def task_params(self, meta: Meta, *items: Any) -> _TaskParams:
        return _TaskParams(names=[t for t in items if isinstance(t, Token)],
                           rows=[r for r in items if isinstance(r, tuple)])

    def param_values(self, meta: Meta, *values: Any) -> tuple[list[Any], Span]:
        return list(values), self._span(meta)

    def weight(self, meta: Meta, number: A.Num) -> float:
        return float(number.value)

    def task_let(self, meta: Meta, let: A.Let) -> _Many:
        return _Many("lets", [let])

    def user_stmt(self, meta: Meta, text: A.Text) -> _Once:
        return _Once("user", self._span(meta), {"user": text})

    def gold_stmt(self, meta: Meta, *items: A.ToolCallAst | A.GoldFor) -> _Once:
        return _Once("gold", self._span(meta), {"gold": list(items), "gold_span": self._span(meta)})

    def gold_for(self, meta: Meta, var: Token, iter_: Any, *calls: Any) -> A.GoldFor:
        return A.GoldFor.model_construct(var=str(var), iter=iter_, span=self._span(var),
                                         calls=list(calls))

    def communicate_stmt(self, meta: Meta, *values: Any) -> _Many:
        return _Many("communicate", list(values))

    def forbid_call(self, meta: Meta, call: A.ToolCallAst) -> _Many:
        return _Many("forbid", [A.Forbid.model_construct(tool=call.name, args=call.args,
                                                         span=call.span)])

    def forbid_tool(self, meta: Meta, name: Token) -> _Many:
        return _Many("forbid", [A.Forbid.model_construct(tool=str(name), span=self._span(name))])

    def reply_stmt(self, meta: Meta, text: A.Text, *keywords: Token | None) -> _Many:
        reply = A.ReplyStmt.model_construct(
            text=text, keywords=[decode_string(k) for k in keywords if k is not None],
            span=self._span(meta))
        return _Many("replies", [reply])

    def setup_stmt(self, meta: Meta, *ops: Any) -> _SetupPart:
        setup = A.Setup.model_construct(after_lets=0, ops=list(ops), span=self._span(meta))
        return _SetupPart("setup", [setup])

    def tool_call(self, meta: Meta, name: Token, *args: A.KwArg | None) -> A.ToolCallAst:
        return A.ToolCallAst.model_construct(name=str(name), args=[a for a in args if a is not None],
                                             span=self._span(name))

    def kwarg(self, meta: Meta, name: Token, value: Any) -> A.KwArg:
        return A.KwArg.model_construct(name=str(name), value=value, span=self._span(name))

    # -- distractors
    def distractor(self, meta: Meta, name: Token, *stmts: Any) -> _Many:
        out = A.Distractor.model_construct(name=str(name), span=self._span(name),
                                           stmts=list(stmts))
        return _Many("distractors", [out])

    def clone_stmt(self, meta: Meta, source: Any, *fields: A.FieldAssign) -> A.Clone:
        return A.Clone.model_construct(source=source, fields=list(fields), span=self._span(meta))

    def add_stmt(self, meta: Meta, kind: Token, fields: list | None) -> A.AddRecord:
        return A.AddRecord.model_construct(kind=str(kind), fields=fields if fields is not None else [],
                                           span=self._span(kind))

    def say_stmt(self, meta: Meta, text: A.Text) -> A.Say:
        return A.Say.model_construct(text=text, span=self._span(meta))

    # -- reward
    def rule_when(self, meta: Meta, value: Any, cond: Any) -> A.Rule:
        return A.Rule.model_construct(value=value, cond=cond, span=self._span(meta))

    def rule_otherwise(self, meta: Meta, value: Any) -> A.Rule:
        return A.Rule.model_construct(value=value, cond=None, span=self._span(meta))

    # -- inline tools
    def tool_decl(self, meta: Meta, name: Token, *rest: Any) -> _Many:
        *params, writes, description, body = rest
        decl = A.ToolDecl.model_construct(
            name=str(name), params=[p for p in params if p is not None], writes=writes is not None,
            description=decode_string(description) if description is not None else "",
            span=self._span(name), **body)
        return _Many("tools", [decl])

    def tool_flags(self, meta: Meta) -> bool:
        return True

    def tool_block(self, meta: Meta, *stmts: Any) -> dict[str, Any]:
        return {"body": list(stmts)}

    def tool_python(self, meta: Meta, name: Token) -> dict[str, Any]:
        return {"python": str(name)}

    def param(self, meta: Meta, name: Token, type_: A.TypeRef, default: Any) -> A.Param:
        return A.Param.model_construct(name=str(name), type=type_, default=default,
                                       span=self._span(name))

    def type_ref(self, meta: Meta, name: Token, arg: A.TypeRef | None) -> A.TypeRef:
        return A.TypeRef.model_construct(name=str(name), arg=arg, span=self._span(name))

    def require_stmt(self, meta: Meta, cond: Any, message: Token) -> A.Require:
        return A.Require.model_construct(cond=cond, message=decode_string(message),
                                         span=self._span(meta))

    def set_stmt(self, meta: Meta, target: Any, value: Any) -> A.SetStmt:
        return A.SetStmt.model_construct(target=target, value=value, span=self._span(meta))

    def return_stmt(self, meta: Meta, value: Any) -> A.Return:
        return A.Return.model_construct(value=value, span=self._span(meta))

    # -- expressions
    def int(self, meta: Meta, tok: Token) -> A.Num:
        return A.Num.model_construct(value=self._number(tok, int), span=self._span(meta))

    def float(self, meta: Meta, tok: Token) -> A.Num:
        return A.Num.model_construct(value=self._number(tok, float), span=self._span(meta))

    def string(self, meta: Meta, tok: Token) -> A.Str:
        value = decode_string(tok).replace("\\{", "{").replace("\\}", "}")
        return A.Str.model_construct(value=value, span=self._span(meta))

    def true(self, meta: Meta) -> A.Bool:
        return A.Bool.model_construct(value=True, span=self._span(meta))

    def false(self, meta: Meta) -> A.Bool:
        return A.Bool.model_construct(value=False, span=self._span(meta))

    def none(self, meta: Meta) -> A.NoneLit:
        return A.NoneLit.model_construct(span=self._span(meta))

    def name(self, meta: Meta, tok: Token) -> A.Name:
        return A.Name.model_construct(id=str(tok), span=self._span(meta))

    def attr(self, meta: Meta, obj: Any, name: Token) -> A.Attr:
        return A.Attr.model_construct(obj=obj, name=str(name), span=self._span(meta))

    def index(self, meta: Meta, obj: Any, index: Any) -> A.Index:
        return A.Index.model_construct(obj=obj, index=index, span=self._span(meta))

    def call(self, meta: Meta, func: Token, *args: Any) -> A.Call:
        call = A.Call.model_construct(func=str(func), span=self._span(meta))
        for arg in args:
            if isinstance(arg, A.KwArg):
                call.kwargs.append(arg)
            elif arg is not None:
                if call.kwargs:
                    self._reject("positional argument after keyword argument", arg.span)
                call.args.append(arg)
        return call

    def comp_for(self, meta: Meta, var: Token, iter_: Any, cond: Any) -> A.Comprehension:
        return A.Comprehension.model_construct(var=str(var), iter=iter_, cond=cond,
                                               span=self._span(meta))

    def call_gen(self, meta: Meta, func: Token, elt: Any, comp: A.Comprehension) -> A.CallGen:
        return A.CallGen.model_construct(func=str(func), elt=elt, comp=comp, span=self._span(meta))

    def list(self, meta: Meta, *items: Any) -> A.ListLit:
        return A.ListLit.model_construct(items=[i for i in items if i is not None],
                                         span=self._span(meta))

    def list_comp(self, meta: Meta, elt: Any, comp: A.Comprehension) -> A.ListComp:
        return A.ListComp.model_construct(elt=elt, comp=comp, span=self._span(meta))

    def pair(self, meta: Meta, key: Any, value: Any) -> A.Pair:
        return A.Pair.model_construct(key=key, value=value, span=self._span(meta))

    def dict(self, meta: Meta, *pairs: A.Pair | None) -> A.DictLit:
        return A.DictLit.model_construct(pairs=[p for p in pairs if p is not None],
                                         span=self._span(meta))

    def dict_comp(self, meta: Meta, pair: A.Pair, comp: A.Comprehension) -> A.DictComp:
        return A.DictComp.model_construct(pair=pair, comp=comp, span=self._span(meta))

    def neg(self, meta: Meta, operand: Any) -> A.Unary:
        return A.Unary.model_construct(op="-", operand=operand, span=self._span(meta))

    def not_(self, meta: Meta, operand: Any) -> A.Unary:
        return A.Unary.model_construct(op="not", operand=operand, span=self._span(meta))

    def add_op(self, meta: Meta, op: Token) -> str:
        return str(op)

    def mul_op(self, meta: Meta, op: Token) -> str:
        return str(op)

    def comp_op(self, meta: Meta, *words: Token) -> str:
        return " ".join(words)  # `not in` is two tokens

    def binop(self, meta: Meta, left: Any, op: str, right: Any) -> A.BinOp:
        return A.BinOp.model_construct(op=op, left=left, right=right, span=self._span(meta))

    def compare(self, meta: Meta, left: Any, op: str, right: Any) -> A.Compare:
        return A.Compare.model_construct(op=op, left=left, right=right, span=self._span(meta))

    def and_(self, meta: Meta, left: Any, right: Any) -> A.BoolOp:
        return A.BoolOp.model_construct(op="and", left=left, right=right, span=self._span(meta))

    def or_(self, meta: Meta, left: Any, right: Any) -> A.BoolOp:
        return A.BoolOp.model_construct(op="or", left=left, right=right, span=self._span(meta))

    def ifelse(self, meta: Meta, body: Any, test: Any, orelse: Any) -> A.IfElse:
        return A.IfElse.model_construct(body=body, test=test, orelse=orelse, span=self._span(meta))

    def range(self, meta: Meta, lo: Any, hi: Any) -> A.Range:
        return A.Range.model_construct(lo=lo, hi=hi, span=self._span(meta))
