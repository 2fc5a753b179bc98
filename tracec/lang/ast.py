"""The spec language's syntax tree (pydantic models with source spans).

The checker (`tracec.lang.semantics`) reads it; the compiler's lowering
(`tracec.compiler.lower`) turns it into the IR's own nodes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from tracec.core.diagnostics import Span


class Node(BaseModel):
    # schemas are built on first use: building ~40 recursive models eagerly took seconds
    model_config = ConfigDict(extra="forbid", defer_build=True)
    span: Span = Span()


# ------------------------------------------------------------------ expressions


class Num(Node):
    node: Literal["num"] = "num"
    value: Union[int, float]


class Str(Node):
    node: Literal["str"] = "str"
    value: str


class Bool(Node):
    node: Literal["bool"] = "bool"
    value: bool


class NoneLit(Node):
    node: Literal["none"] = "none"


class Name(Node):
    node: Literal["name"] = "name"
    id: str


class Attr(Node):
    node: Literal["attr"] = "attr"
    obj: "Expr"
    name: str
    # set by the checker when `name` navigates a domain reference (`item.product`):
    # (collection, id field, nullable)
    ref: tuple[str, str, bool] | None = None


class Index(Node):
    node: Literal["index"] = "index"
    obj: "Expr"
    index: "Expr"


class KwArg(Node):
    name: str
    value: "Expr"


class Call(Node):
    node: Literal["call"] = "call"
    func: str
    args: list["Expr"] = []
    kwargs: list[KwArg] = []


class Comprehension(Node):
    """`for VAR in ITER if COND` (shared by generator calls, list and dict comprehensions)."""

    var: str
    iter: "Expr"
    cond: "Expr | None" = None


class CallGen(Node):
    """`sum(f.price for f in r.flights)`"""

    node: Literal["call_gen"] = "call_gen"
    func: str
    elt: "Expr"
    comp: Comprehension


class ListLit(Node):
    node: Literal["list"] = "list"
    items: list["Expr"] = []


class ListComp(Node):
    node: Literal["list_comp"] = "list_comp"
    elt: "Expr"
    comp: Comprehension


class Pair(Node):
    key: "Expr"
    value: "Expr"


class DictLit(Node):
    node: Literal["dict"] = "dict"
    pairs: list[Pair] = []


class DictComp(Node):
    node: Literal["dict_comp"] = "dict_comp"
    pair: Pair
    comp: Comprehension


class Unary(Node):
    node: Literal["unary"] = "unary"
    op: Literal["-", "not"]
    operand: "Expr"


class BinOp(Node):
    node: Literal["binop"] = "binop"
    op: Literal["+", "-", "*", "/", "//", "%"]
    left: "Expr"
    right: "Expr"


class Compare(Node):
    node: Literal["compare"] = "compare"
    op: Literal["==", "!=", "<", "<=", ">", ">=", "in", "not in"]
    left: "Expr"
    right: "Expr"


class BoolOp(Node):
    node: Literal["boolop"] = "boolop"
    op: Literal["and", "or"]
    left: "Expr"
    right: "Expr"


class IfElse(Node):
    node: Literal["ifelse"] = "ifelse"
    body: "Expr"
    test: "Expr"
    orelse: "Expr"


class Range(Node):
    node: Literal["range"] = "range"
    lo: "Expr"
    hi: "Expr"


Expr = Annotated[
    Union[
        Num, Str, Bool, NoneLit, Name, Attr, Index, Call, CallGen, ListLit, ListComp, DictLit,
        DictComp, Unary, BinOp, Compare, BoolOp, IfElse, Range,
    ],
    Field(discriminator="node"),
]


class Text(Node):
    """An interpolated text: literal strings and `{expr}` parts, in order."""

    parts: list[Union[str, Expr]] = []

    def literal(self) -> str:
        return "".join(p if isinstance(p, str) else "{...}" for p in self.parts)

    def plain(self) -> str:
        """The text's own words, outside its `{...}`, the pieces joined by a space."""
        return " ".join(p for p in self.parts if isinstance(p, str))


# ------------------------------------------------------------------ statements


class FieldAssign(Node):
    name: str
    value: Expr


class SeedStmt(Node):
    """`name = expr { field = expr ... }`; a spawn when expr is `kind[count]`."""

    name: str
    value: Expr
    fields: list[Union[FieldAssign, "Let"]] | None = None  # `let`s: per-record values


class ToolCallAst(Node):
    name: str
    args: list[KwArg] = []


def gold_calls(gold: list) -> list["ToolCallAst"]:
    """The tool calls of a `gold` block, those inside `for` loops included (source order)."""
    out: list[ToolCallAst] = []
    for item in gold:
        out.extend(item.calls if isinstance(item, GoldFor) else [item])
    return out



def walk(tree: Any) -> Iterator[Node]:
    """Every node of ``tree`` (a node or a list of them), each before its children, in source
    order."""
    if isinstance(tree, list):
        for v in tree:
            yield from walk(v)
    elif isinstance(tree, Node):
        yield tree
        for v in tree.__dict__.values():
            if isinstance(v, (Node, list)):
                yield from walk(v)

class GoldFor(Node):
    """`for VAR in ITER { calls }` inside `gold`: the calls once per element, in order."""

    kind: Literal["for"] = "for"
    var: str
    iter: Expr
    calls: list[ToolCallAst] = []


class Let(Node):
    kind: Literal["let"] = "let"
    name: str
    value: Expr


class Forbid(Node):
    tool: str
    args: list[KwArg] | None = None  # None: any call of the tool


class ReplyStmt(Node):
    text: Text
    keywords: list[str] = []


class Clone(Node):
    op: Literal["clone"] = "clone"
    source: Expr
    fields: list[FieldAssign] = []


class AddRecord(Node):
    op: Literal["add"] = "add"
    kind: str
    fields: list[FieldAssign] = []


class Say(Node):
    op: Literal["say"] = "say"
    text: Text


DistractorStmt = Annotated[Union[Clone, AddRecord, Say], Field(discriminator="op")]


SetupOp = Annotated[Union[Clone, AddRecord, "SetStmt"], Field(discriminator="op")]


class Setup(Node):
    """`setup { ... }`: world changes for one task, run after the `let`s before it."""

    after_lets: int = 0
    ops: list[SetupOp] = []


class Distractor(Node):
    name: str
    stmts: list[DistractorStmt] = []


class Task(Node):
    name: str
    weight: float = 1.0
    lets: list[Let] = []
    user: Text | None = None
    gold: list[Union[ToolCallAst, GoldFor]] = []
    gold_span: Span | None = None
    communicate: list[Expr] = []
    forbid: list[Forbid] = []
    replies: list[ReplyStmt] = []
    hint: Text | None = None
    distractors: list[Distractor] = []
    setup: list[Setup] = []


class Rule(Node):
    value: Expr
    cond: Expr | None = None  # None: `otherwise`


class Reward(Node):
    rules: list[Rule] = []


class TypeRef(Node):
    name: str
    arg: "TypeRef | None" = None

    def __str__(self) -> str:
        return f"{self.name}[{self.arg}]" if self.arg else self.name


class Param(Node):
    name: str
    type: TypeRef
    default: Expr | None = None


class Require(Node):
    kind: Literal["require"] = "require"
    cond: Expr
    message: str


class SetStmt(Node):
    kind: Literal["set"] = "set"
    op: Literal["set"] = "set"
    target: Expr
    value: Expr


class Return(Node):
    kind: Literal["return"] = "return"
    value: Expr


ToolStmt = Annotated[Union[Let, Require, SetStmt, Return], Field(discriminator="kind")]


class ToolDecl(Node):
    name: str
    params: list[Param] = []
    writes: bool = False
    description: str = ""
    body: list[ToolStmt] | None = None
    python: str | None = None  # named function of the domain module


class NameRef(Node):
    """A name with its own span (an entry of `tools [...]`)."""

    name: str


class PolicyDecl(Node):
    """`policy sections ["Heading", ...]` (sections) or `policy "text"` (text)."""

    sections: list[str] | None = None
    section_spans: list[Span] = []
    text: str | None = None


class Variant(Node):
    """`variant NAME { tools [...] policy ... compact_tools }`: the same capability with another
    prompt budget, compiled to a second env `<capability>_<NAME>`; what it does not give is the
    capability's own."""

    name: str
    shown_tools: list[NameRef] | None = None
    shown_tools_span: Span | None = None
    policy: PolicyDecl | None = None
    compact_tools: bool | None = None


class Capability(Node):
    name: str
    description: Text | None = None
    domain: str | None = None
    domain_span: Span | None = None
    max_turns: int | None = None
    hint: Text | None = None
    seed: list[SeedStmt] = []
    tasks: list[Task] = []
    distractors: list[Distractor] = []
    reward: Reward | None = None
    tools: list[ToolDecl] = []
    shown_tools: list[NameRef] | None = None  # `tools [...]`; None: every tool
    shown_tools_span: Span | None = None
    policy: PolicyDecl | None = None
    compact_tools: bool = False
    variants: list[Variant] = []
    variant_of: str | None = None  # set on the capability a `variant` compiles to: its name
    communicate_raw: bool = False  # `communicate raw`: communicated() reads pasted tool markup too
