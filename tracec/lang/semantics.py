"""The checker's driver: runs the passes over a parsed capability and hands on the checked AST
with its facts (`checked.py`), or diagnostics.

Each pass is an object of its own module over one shared :class:`~tracec.lang.checkbase.CheckState`
(the facts gathered so far, the diagnostics): name resolution (`names.NameResolution`), type
checking (`typecheck.TypeChecking`), statements (`statements.StatementChecks`: inline tools,
`seed`, tasks, distractors) and the reward ladder (`rewards.RewardAnalysis`), then the lint of
inert statements (`lint.py`). A pass calls the passes it builds on by name (`self.names`,
`self.types`). The checker collects as many diagnostics as it can in one walk, so a spec
author (or an LLM) fixes several mistakes per round. Lowering to the IR is the compiler's
(`tracec.compiler.lower`).
"""

from __future__ import annotations

from tracec.core.diagnostics import Diagnostic, Span
from tracec.core.types import T
from tracec.domains.base import Domain
from tracec.lang import ast as A
from tracec.lang.checkbase import (
    DEFAULT_MAX_TURNS,
    MAX_DIAGNOSTICS,
    MAX_MAX_TURNS,
    MAX_NAME_LEN,
    CheckState,
    TooManyDiagnostics,
)
from tracec.lang.checked import Checked, TaskFacts, ToolFacts
from tracec.lang.lint import lint
from tracec.lang.names import NameResolution
from tracec.lang.rewards import RewardAnalysis
from tracec.lang.statements import StatementChecks
from tracec.lang.typecheck import TypeChecking


class Checker:
    """The passes over one capability, in the order `run()` calls them; `run()` returns the
    checked capability or None."""

    def __init__(self, cap: A.Capability, source: str, path: str, domain: Domain | None):
        self.s = CheckState(cap, source, path, domain)
        self.names = NameResolution(self.s)
        self.types = TypeChecking(self.s, self.names)
        self.statements = StatementChecks(self.s, self.names, self.types)
        self.rewards = RewardAnalysis(self.s, self.types)

    def run(self) -> Checked | None:
        cap = self.s.cap
        self.names.check_binding(cap.name, cap.span, "capability")
        if cap.domain is None:
            self.s.error(f"capability `{cap.name}` names no domain", cap.span,
                       "add `domain airline` (or retail, toolsandbox)", code="E220")
        max_turns = cap.max_turns if cap.max_turns is not None else DEFAULT_MAX_TURNS
        if not (1 <= max_turns <= MAX_MAX_TURNS):
            self.s.error(f"max_turns must be between 1 and {MAX_MAX_TURNS}, got {max_turns}",
                       cap.span, code="E221")
        if cap.description is None:
            self.s.warn(f"capability `{cap.name}` has no description", cap.span, code="W220")
        for text in (cap.description, cap.hint):
            if text is not None and any(not isinstance(p, str) for p in text.parts):
                self.s.error("capability-level text cannot interpolate values", text.span,
                           "use `{{` for a literal brace; interpolate inside a task", code="E222")
        # inline tools first, so tasks may use them
        tools: list[ToolFacts] = []
        names: dict[str, int] = {}
        for d in cap.tools:
            if d.name in names:
                self.s.error(f"tool `{d.name}` is declared twice", d.span,
                           f"first declared on line {names[d.name]}", code="E171")
                continue
            names[d.name] = d.span.line
            writes = d.writes or any(isinstance(s, A.SetStmt) for s in d.body or [])
            self.s.tools[d.name] = {"parameters": {}, "writes": writes}
        for d in cap.tools:
            facts = self.statements.tool_decl(d)
            if d.name in self.s.tools:
                self.s.tools[d.name] = {"parameters": facts.parameters, "writes": facts.writes}
                tools.append(facts)
        shown_tools, policy_sections, policy_text = self.names.prompt_budget()
        seed_steps, seed_scope = self.statements.seed()
        if not cap.tasks:
            self.s.error(f"capability `{cap.name}` has no tasks", cap.span,
                       "add at least one `task NAME { ... }`", code="E230")
        seen_tasks: dict[str, int] = {}
        tasks: list[TaskFacts] = []
        task_scopes: list[dict[str, T]] = []
        top_names: set[str] | None = None
        for named, what in [(t, "task") for t in cap.tasks] + [
                (d, "distractor") for d in _unique(cap.distractors + [
                    d for t in cap.tasks for d in t.distractors])]:
            if len(named.name) > MAX_NAME_LEN:
                self.s.error(f"{what} name is {len(named.name)} characters long (at most "
                           f"{MAX_NAME_LEN})", named.span, "choose a shorter name", code="E102")
        for t in cap.tasks:
            if t.name in seen_tasks:
                self.s.error(f"task `{t.name}` is declared twice", t.span,
                           f"first declared on line {seen_tasks[t.name]}", code="E231")
            seen_tasks[t.name] = t.span.line
            lets = {let.name for let in t.lets}
            top_names = lets if top_names is None else top_names & lets
        seen_d: dict[str, int] = {}
        for d in _unique(cap.distractors + [d for t in cap.tasks for d in t.distractors]):
            if d.name in seen_d:
                self.s.error(f"distractor `{d.name}` is declared twice", d.span,
                           f"first declared on line {seen_d[d.name]}", code="E232")
            seen_d[d.name] = d.span.line
        for t in cap.tasks:
            facts_t = self.statements.task(t, seed_scope, cap.distractors)
            tasks.append(facts_t)
            task_scopes.append(facts_t.let_types)
        rules = self.rewards.reward(task_scopes)
        if any(d.severity == "error" for d in self.s.diags) or cap.domain is None:
            return None
        return Checked(
            cap=cap, source=self.s.source, path=self.s.path, max_turns=max_turns, tools=tools,
            seed=seed_steps, tasks=tasks, rules=rules, distractors=list(seen_d),
            tool_writes={n: self.names.tool_writes(n) for n in self.names.known_tools()},
            shown_tools=shown_tools, policy_sections=policy_sections, policy=policy_text,
        )


def _unique(nodes: list[A.Distractor]) -> list[A.Distractor]:
    """Each distractor once: the tasks of a parameterised `task` share its distractors."""
    seen: set[int] = set()
    return [d for d in nodes if not (id(d) in seen or seen.add(id(d)))]


def check(cap: A.Capability, source: str, path: str, domain: Domain | None
          ) -> tuple[Checked | None, list[Diagnostic]]:
    """Check a parsed capability against its domain: the checked capability (None on errors)
    and the diagnostics."""
    checker = Checker(cap, source, path, domain)
    try:
        result = checker.run()
        extra = lint(cap, checker.s.text_of)
    except TooManyDiagnostics:
        first: Span = checker.s.diags[0].span  # sorts first: the note is seen
        result, extra = None, [Diagnostic(
            message=f"stopped checking after {MAX_DIAGNOSTICS} problems", span=first, code="E007",
            hint="the spec repeats a mistake; fix these and compile again")]
    if any(d.severity == "error" for d in extra):
        result = None
    # the tasks of a parameterised `task` share their statements: report each place once
    seen: set[tuple] = set()
    diags = []
    for d in checker.s.diags + extra:
        key = (d.severity, d.code, d.span.line, d.span.column)
        if key not in seen:
            seen.add(key)
            diags.append(d)
    return result, diags
