"""The compiler's intermediate representation: a checked, resolved capability, as JSON.

`tracec compile --emit-ir` writes it; `tracec schema` prints its JSON Schema. The lowering
(`tracec.compiler.lower`) builds it from the checked AST. It has its own expression, text and
statement nodes: no source spans, only the spec `line` (and `column`) of each statement the
generated code's line table and `# spec:LINE` comments need.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

IR_VERSION = 2


class IRModel(BaseModel):
    # schemas are built on first use (~50 recursive models)
    model_config = ConfigDict(extra="forbid", defer_build=True)


class FragmentAt(IRModel):
    """Where code from a shared fragment (`use "..."`) is in that fragment's file."""

    path: str  # relative to the spec's folder, as written in `use`
    line: int
    column: int = 0


# ------------------------------------------------------------------ expressions
# The same shapes as the AST's (`tracec.lang.ast`), without spans; `node` names the kind.


class Positioned(IRModel):
    """A node generated code maps back to: its spec position (0: none) and, for code from a
    shared fragment, its place in the fragment file."""

    line: int = 0
    column: int = 0
    fragment: FragmentAt | None = None


class Num(IRModel):
    node: Literal["num"] = "num"
    value: Union[int, float]


class Str(IRModel):
    node: Literal["str"] = "str"
    value: str


class Bool(IRModel):
    node: Literal["bool"] = "bool"
    value: bool


class NoneLit(IRModel):
    node: Literal["none"] = "none"


class Name(IRModel):
    node: Literal["name"] = "name"
    id: str


class Attr(IRModel):
    node: Literal["attr"] = "attr"
    obj: "Expr"
    name: str
    ref: tuple[str, str, bool] | None = None  # a domain reference: (collection, id field, nullable)


class Index(IRModel):
    node: Literal["index"] = "index"
    obj: "Expr"
    index: "Expr"


class KwArg(IRModel):
    name: str
    value: "Expr"


class Call(IRModel):
    node: Literal["call"] = "call"
    func: str
    args: list["Expr"] = []
    kwargs: list[KwArg] = []


class Comprehension(IRModel):
    var: str
    iter: "Expr"
    cond: "Expr | None" = None


class CallGen(IRModel):
    node: Literal["call_gen"] = "call_gen"
    func: str
    elt: "Expr"
    comp: Comprehension


class ListLit(IRModel):
    node: Literal["list"] = "list"
    items: list["Expr"] = []


class ListComp(IRModel):
    node: Literal["list_comp"] = "list_comp"
    elt: "Expr"
    comp: Comprehension


class Pair(IRModel):
    key: "Expr"
    value: "Expr"


class DictLit(IRModel):
    node: Literal["dict"] = "dict"
    pairs: list[Pair] = []


class DictComp(IRModel):
    node: Literal["dict_comp"] = "dict_comp"
    pair: Pair
    comp: Comprehension


class Unary(IRModel):
    node: Literal["unary"] = "unary"
    op: Literal["-", "not"]
    operand: "Expr"


class BinOp(IRModel):
    node: Literal["binop"] = "binop"
    op: Literal["+", "-", "*", "/", "//", "%"]
    left: "Expr"
    right: "Expr"


class Compare(IRModel):
    node: Literal["compare"] = "compare"
    op: Literal["==", "!=", "<", "<=", ">", ">=", "in", "not in"]
    left: "Expr"
    right: "Expr"


class BoolOp(IRModel):
    node: Literal["boolop"] = "boolop"
    op: Literal["and", "or"]
    left: "Expr"
    right: "Expr"


class IfElse(IRModel):
    node: Literal["ifelse"] = "ifelse"
    body: "Expr"
    test: "Expr"
    orelse: "Expr"


class Range(IRModel):
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


class Text(Positioned):
    """An interpolated text: literal strings and `{expr}` parts, in order."""

    parts: list[Union[str, Expr]] = []


# ------------------------------------------------------------------ statements
# `line`/`column`: the spec position the generated statement maps to (0: none); for code from a
# shared fragment, the spec's `use` line, with `fragment` its place in the fragment file.


class FieldIR(Positioned):
    """`name = value` in a field block."""

    kind: Literal["field"] = "field"
    name: str
    value: Expr


class LetIR(Positioned):
    """`let name = value` (tasks, field blocks, inline tool bodies)."""

    kind: Literal["let"] = "let"
    name: str
    value: Expr


class RequireIR(Positioned):
    kind: Literal["require"] = "require"
    cond: Expr
    message: str


class SetIR(Positioned):
    kind: Literal["set"] = "set"
    target: Expr
    value: Expr


class ReturnIR(Positioned):
    kind: Literal["return"] = "return"
    value: Expr


FieldItem = Annotated[Union[FieldIR, LetIR], Field(discriminator="kind")]
ToolStmt = Annotated[Union[LetIR, RequireIR, SetIR, ReturnIR], Field(discriminator="kind")]


class SeedSpawn(IRModel):
    """`name = kind[count] { field = expr }`: generate records with the domain's generator."""

    op: Literal["spawn"] = "spawn"
    name: str
    entity: str
    count: Expr
    fields: list[FieldItem] = []  # a `let`: a per-record value for later fields
    line: int
    fragment: FragmentAt | None = None


class SeedLet(IRModel):
    """`name = expr`: a plain value."""

    op: Literal["let"] = "let"
    name: str
    value: Expr
    line: int
    fragment: FragmentAt | None = None


SeedStep = Annotated[Union[SeedSpawn, SeedLet], Field(discriminator="op")]


class CallIR(Positioned):
    tool: str
    args: list[KwArg] = []
    writes: bool = False


class GoldForIR(Positioned):
    """`for var in iter { calls }` in `gold`."""

    kind: Literal["for"] = "for"
    var: str
    iter: Expr
    calls: list[CallIR] = []


class ForbidIR(Positioned):
    tool: str
    args: list[KwArg] | None = None


class CommunicateIR(Positioned):
    label: str  # the expression's source text
    value: Expr


class ReplyIR(Positioned):
    text: Text
    keywords: list[str] = []


class CloneOp(Positioned):
    op: Literal["clone"] = "clone"
    entity: str
    source: Expr
    fields: list[FieldIR] = []


class AddOp(Positioned):
    op: Literal["add"] = "add"
    entity: str
    fields: list[FieldIR] = []


class SayOp(Positioned):
    op: Literal["say"] = "say"
    text: Text


DistractorOp = Annotated[Union[CloneOp, AddOp, SayOp], Field(discriminator="op")]


class SetOp(Positioned):
    op: Literal["set"] = "set"
    target: Expr
    value: Expr


SetupStep = Annotated[Union[CloneOp, AddOp, SetOp], Field(discriminator="op")]


class SetupIR(IRModel):
    """Per-task world changes, run after the first `after_lets` lets."""

    after_lets: int
    ops: list[SetupStep] = []
    line: int
    fragment: FragmentAt | None = None


class DistractorIR(IRModel):
    name: str
    ops: list[DistractorOp] = []
    line: int
    fragment: FragmentAt | None = None


class TaskIR(IRModel):
    name: str
    weight: float
    line: int
    fragment: FragmentAt | None = None
    seed_vars_used: list[str] = []
    lets: list[LetIR] = []
    user: Text
    gold: list[Union[CallIR, GoldForIR]] = []
    communicate: list[CommunicateIR] = []
    forbid: list[ForbidIR] = []
    replies: list[ReplyIR] = []
    hint: Text | None = None
    distractors: list[DistractorIR] = []
    setup: list[SetupIR] = []


class RuleIR(IRModel):
    level: float  # the rule's reward, or its maximum for a fractional rule
    fractional: bool = False
    text: str  # source text of the rule
    value: Expr
    cond: Expr | None = None  # None: otherwise
    line: int
    column: int = 0  # of the condition, when it starts on the rule's line
    fragment: FragmentAt | None = None  # code from a fragment: its own position


class ToolIR(IRModel):
    """An inline tool: a small CRUD body, or a named Python function of the domain."""

    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema of the arguments
    param_names: list[str]
    defaults: dict[str, Any] = {}
    writes: bool
    collections: list[str] = []  # db collections the body reads
    singletons: list[str] = []
    body: list[ToolStmt] | None = None
    python: str | None = None
    line: int
    fragment: FragmentAt | None = None


class CapabilityIR(IRModel):
    ir_version: int = IR_VERSION
    name: str
    description: str
    domain: str
    max_turns: int
    hint: str
    spec_path: str
    spec_sha256: str
    seed: list[SeedStep] = []
    tasks: list[TaskIR] = []
    tools: list[ToolIR] = []
    rules: list[RuleIR] = []
    levels: list[float] = []
    distractors: list[str] = []
    # prompt budget: what the agent is shown (None: every domain tool, the full policy)
    shown_tools: list[str] | None = None  # domain tools of `tools [...]` (inline tools always)
    policy_sections: list[str] | None = None  # headings of `policy sections [...]`
    policy: str | None = None  # `policy "..."`
    compact_tools: bool = False
    communicate_raw: bool = False  # `communicate raw`


def ir_json_schema() -> dict[str, Any]:
    """The JSON Schema of the IR (what `tracec schema` prints)."""
    schema = CapabilityIR.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "tracec capability IR"
    return schema
