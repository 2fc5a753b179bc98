"""The compiler's intermediate representation: a checked, resolved capability, as JSON.

`tracec compile --emit-ir` writes it; `tracec schema` prints its JSON Schema. Expressions keep
the AST's node shapes (with source spans), so the IR points back into the spec.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from tracec.lang.ast import Expr, FieldAssign, KwArg, Let, Text, ToolStmt

IR_VERSION = 1


class IRModel(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class SeedSpawn(IRModel):
    """`name = kind[count] { field = expr }`: generate records with the domain's generator."""

    op: Literal["spawn"] = "spawn"
    name: str
    entity: str
    count: Expr
    fields: list[Union[FieldAssign, Let]] = []  # a `let`: a per-record value for later fields
    line: int


class SeedLet(IRModel):
    """`name = expr`: a plain value."""

    op: Literal["let"] = "let"
    name: str
    value: Expr
    line: int


SeedStep = Annotated[Union[SeedSpawn, SeedLet], Field(discriminator="op")]


class CallIR(IRModel):
    tool: str
    args: list[KwArg] = []
    writes: bool = False


class GoldForIR(IRModel):
    """`for var in iter { calls }` in `gold`."""

    kind: Literal["for"] = "for"
    var: str
    iter: Expr
    calls: list[CallIR] = []


class ForbidIR(IRModel):
    tool: str
    args: list[KwArg] | None = None


class CommunicateIR(IRModel):
    label: str  # the expression's source text
    value: Expr


class ReplyIR(IRModel):
    text: Text
    keywords: list[str] = []


class CloneOp(IRModel):
    op: Literal["clone"] = "clone"
    entity: str
    source: Expr
    fields: list[FieldAssign] = []


class AddOp(IRModel):
    op: Literal["add"] = "add"
    entity: str
    fields: list[FieldAssign] = []


class SayOp(IRModel):
    op: Literal["say"] = "say"
    text: Text


DistractorOp = Annotated[Union[CloneOp, AddOp, SayOp], Field(discriminator="op")]


class SetOp(IRModel):
    op: Literal["set"] = "set"
    target: Expr
    value: Expr


SetupStep = Annotated[Union[CloneOp, AddOp, SetOp], Field(discriminator="op")]


class SetupIR(IRModel):
    """Per-task world changes, run after the first `after_lets` lets."""

    after_lets: int
    ops: list[SetupStep] = []
    line: int


class DistractorIR(IRModel):
    name: str
    ops: list[DistractorOp] = []
    line: int


class TaskIR(IRModel):
    name: str
    weight: float
    line: int
    seed_vars_used: list[str] = []
    lets: list[Let] = []
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


def ir_json_schema() -> dict[str, Any]:
    """The JSON Schema of the IR (what `tracec schema` prints)."""
    schema = CapabilityIR.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "tracec capability IR"
    return schema
