"""What the checker hands on: the capability's AST, known to be valid, and the facts about it
that took analysis to find (tool schemas, spawned kinds, reward levels, ...). The compiler's
lowering (`tracec.compiler.lower`) turns the two into the IR."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tracec.core.types import T
from tracec.lang import ast as A
from tracec.lang.checkbase import source_slice


@dataclass
class ToolFacts:
    """An inline tool: its JSON Schema and what its body touches."""

    decl: A.ToolDecl
    description: str
    parameters: dict[str, Any]  # JSON Schema of the arguments
    defaults: dict[str, Any]
    writes: bool
    collections: list[str]  # db collections the body reads
    singletons: list[str]


@dataclass
class SeedFacts:
    """A `seed` statement: a spawn of ``entity`` records (``count``), or a plain value."""

    stmt: A.SeedStmt
    entity: str | None = None
    count: Any = None  # the count expression of a spawn


@dataclass
class TaskFacts:
    task: A.Task
    seed_vars_used: list[str]  # seed variables the task reads, in seed order
    let_types: dict[str, T]
    clone_kinds: dict[int, str] = field(default_factory=dict)  # id(Clone) -> entity kind


@dataclass
class RuleFacts:
    rule: A.Rule
    level: float  # the rule's reward, or its maximum for a fractional rule
    fractional: bool


@dataclass
class Checked:
    """A capability that passed the checks."""

    cap: A.Capability
    source: str  # the text the AST's spans point into (fragments expanded)
    path: str  # the spec path written into the generated module
    max_turns: int
    tools: list[ToolFacts]
    seed: list[SeedFacts]
    tasks: list[TaskFacts]
    rules: list[RuleFacts]
    distractors: list[str]  # every distractor name, in declaration order
    tool_writes: dict[str, bool]  # every tool the spec may call -> whether it writes
    shown_tools: list[str] | None  # `tools [...]` (domain tools), None: every tool
    policy_sections: list[str] | None
    policy: str | None

    def text_of(self, node: A.Node) -> str:
        """The source text of a node."""
        return source_slice(self.source, node.span)
