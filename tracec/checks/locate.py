"""Where a `tracec check` finding is in the spec: the rule, task, pick, forbid or call concerned.

The spec behind a compiled env is found as run-time errors find it (``tracec.runtime.spans``:
the path the user typed, or the recorded spec next to the generated package, unchanged since
it was compiled), its `use` fragments expanded, and parsed again for its spans. A finding is
rendered in the compiler's format, ``path:line:col: error|warning: message``, the source line
with a caret and a hint. When the spec cannot be found (a hand-written module, an edited spec),
the finding is placed at the generated module's own line for the task or rule (the module's
``def task_...``, ``CAPABILITY``), so that no finding is ever unlocated.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from tracec.core.diagnostics import Diagnostic, Note, Span, SpecError
from tracec.lang import ast as A
from tracec.lang import fragments
from tracec.lang.parser import kept_tree, parse_source
from tracec.runtime.spans import spec_source

Severity = Literal["error", "warning"]

# the parsed spec by its (expanded) text: a spec and its variants' envs, each with its own
# SpecMap, parse it once; the trees are shared, read-only
_PARSED: dict[str, A.Capability] = {}
_PARSED_MAX = 16


class Finding(BaseModel):
    """One located finding of `tracec check` (``--json``: ``findings``)."""

    severity: Severity
    code: str
    path: str
    line: int
    column: int
    message: str
    hint: str | None = None
    seed: int | None = None
    task: str | None = None
    rendered: str = ""  # path:line:col: severity: message, the source line, a caret, the hint
    notes: list[dict[str, Any]] = []  # the other statements concerned: line, column, message


@dataclass
class TaskSpans:
    span: Span
    lets: dict[str, Span] = field(default_factory=dict)
    gold: list[tuple[str, Span]] = field(default_factory=list)  # (tool, span), source order
    forbids: list[tuple[str, Span]] = field(default_factory=list)
    communicate: list[Span] = field(default_factory=list)
    communicate_roots: list[str | None] = field(default_factory=list)  # the name each reads
    communicate_round: list[bool] = field(default_factory=list)  # the value is `round(...)`
    user: Span | None = None
    hint: Span | None = None
    hint_literal: str = ""  # the hint's text outside its `{...}` interpolations
    user_literal: str = ""  # the `user` text outside its `{...}` interpolations
    distractors: dict[str, Span] = field(default_factory=dict)
    replies: list[Span] = field(default_factory=list)
    weight: float = 1.0
    # a `communicate` value written as a constant (`communicate "24 hours"`): the same on purpose
    communicate_const: list[bool] = field(default_factory=list)


def _picks(expr: Any) -> bool:
    """The expression draws a record (`pick`, `sample`, `shuffle`)."""
    return any(isinstance(n, (A.Call, A.CallGen)) and n.func in {"pick", "sample", "shuffle"}
               for n in A.walk(expr))


def literal(expr: Any) -> bool:
    """A constant written in the spec (a number or a text without interpolation)."""
    if isinstance(expr, A.Text):
        return all(isinstance(p, str) for p in expr.parts)
    return isinstance(expr, (A.Num, A.Str))


def _parse_once(text: str) -> A.Capability:
    """``parse_source(text)``, parsed once per text (the tree is shared: read it only)."""
    cap = _PARSED.get(text)
    if cap is None:
        cap = kept_tree(text)  # the compiler's parse of this text, if `tracec check` kept it
        if cap is None:
            cap = parse_source(text)
        if len(_PARSED) >= _PARSED_MAX:
            del _PARSED[next(iter(_PARSED))]
        _PARSED[text] = cap
    return cap


def nth_call(calls: Any, n: int) -> int:
    """How many calls of the same tool come before ``calls[n]`` (``SpecMap.gold``'s ``nth``)."""
    return sum(1 for c in calls[:n] if c.name == calls[n].name)


def root(expr: Any) -> str | None:
    """The name a field read starts from (`r` of `r.flights[0].origin`), if it is one."""
    while isinstance(expr, (A.Attr, A.Index)):
        expr = expr.obj
    return expr.id if isinstance(expr, A.Name) else None


class SpecMap:
    """The spans of one capability's spec, or (spec unknown) its generated module's lines."""

    def __init__(self, cap: Any, module_file: str | None = None) -> None:
        self.cap = cap
        self.path, self.source = spec_source(cap)
        self.module_file = module_file
        self.ast: A.Capability | None = None  # shared by the SpecMaps of one spec: read only
        self.origins: list[fragments.Origin] | None = None
        self.tasks: dict[str, TaskSpans] = {}
        self.rules: list[Span] = []
        self.max_turns: Span | None = None
        self.communicate_raw: Span | None = None
        self.hint: Span | None = None  # the capability's own hint
        if self.source is not None:
            self._parse()

    # ------------------------------------------------------------ reading the spec

    def _parse(self) -> None:
        base = Path(self.path).parent if self.path not in ("", "<spec>") else None
        try:
            expanded = fragments.expand(self.source, base)
            if expanded.errors:
                return
            origins = expanded.origins if expanded.used else None
            cap = _parse_once(expanded.text if origins else self.source)
        except (SpecError, RecursionError, OSError, ValueError):
            return
        self.ast, self.origins = cap, origins
        place = self.place
        for t in cap.tasks:
            ts = TaskSpans(span=place(t.span))
            for let in t.lets:
                ts.lets.setdefault(let.name, place(let.span))
            for c in A.gold_calls(t.gold):
                ts.gold.append((c.name, place(c.span)))
            ts.forbids = [(f.tool, place(f.span)) for f in t.forbid]
            ts.communicate = [place(e.span) for e in t.communicate]
            ts.communicate_roots = [root(e) for e in t.communicate]
            ts.communicate_round = [isinstance(e, A.Call) and e.func == "round"
                                    for e in t.communicate]
            ts.user = place(t.user.span) if t.user is not None else None
            if isinstance(t.user, A.Text):
                ts.user_literal = t.user.plain()
            ts.hint = place(t.hint.span) if t.hint is not None else None
            if t.hint is not None:
                ts.hint_literal = t.hint.plain()
            ts.distractors = {d.name: place(d.span) for d in t.distractors}
            ts.replies = [place(r.span) for r in t.replies]
            ts.weight = t.weight
            consts = {let.name for let in t.lets if literal(let.value)}
            ts.communicate_const = [literal(e) or (isinstance(e, A.Name) and e.id in consts)
                                    for e in t.communicate]
            self.tasks[t.name] = ts
        if cap.reward is not None:
            self.rules = [place(r.span) for r in cap.reward.rules]
        self._header(cap)

    def _header(self, cap: A.Capability) -> None:
        """Spans of header statements the AST keeps no span for, found by their keyword."""
        header = True  # before the first task: the capability's own statements
        for n, text in enumerate(self.source.splitlines(), 1):
            stripped = text.strip()
            col = len(text) - len(text.lstrip()) + 1
            if stripped.startswith("max_turns") and self.max_turns is None:
                self.max_turns = Span.at(n, col, len(stripped.split("#")[0].rstrip()))
            header = header and not stripped.startswith("task ")
            if header and stripped.startswith('hint "') and self.hint is None:
                self.hint = Span.at(n, col, len(stripped))
            if stripped.startswith("communicate raw") and self.communicate_raw is None:
                self.communicate_raw = Span.at(n, col, len("communicate raw"))

    def place(self, span: Span) -> Span:
        """A span of the compiled text at its place in the source (a `use` fragment's own file)."""
        return fragments.map_span(span, self.origins) if self.origins else span

    # ------------------------------------------------------------ spans of things

    def task(self, name: str) -> Span | None:
        ts = self.tasks.get(name)
        return ts.span if ts else None

    def seed_span(self, stmt: A.SeedStmt) -> Span:
        """Where a seed statement of the parsed spec is."""
        return self.place(stmt.span)

    def rule(self, index: int | None) -> Span | None:
        if index is None or not 0 <= index < len(self.rules):
            return None
        return self.rules[index]

    def forbid(self, task: str, index: int) -> Span | None:
        ts = self.tasks.get(task)
        if ts is None or not 0 <= index < len(ts.forbids):
            return None
        return ts.forbids[index][1]

    def gold(self, task: str, tool: str, nth: int = 0) -> Span | None:
        """The ``nth`` gold call of ``tool`` in the task (the last one when a loop repeats it)."""
        ts = self.tasks.get(task)
        if ts is None:
            return None
        spans = [s for n, s in ts.gold if n == tool]
        return spans[min(nth, len(spans) - 1)] if spans else None

    def pick_lets(self, task: str) -> list[tuple[str, Span]]:
        """The task's `let`s that draw (`pick`, `sample`, `shuffle`), in order."""
        if self.ast is None:
            return []
        for t in self.ast.tasks:
            if t.name == task:
                return [(let.name, self.place(let.span)) for let in t.lets if _picks(let.value)]
        return []

    def let(self, task: str, name: str) -> Span | None:
        ts = self.tasks.get(task)
        return ts.lets.get(name) if ts else None

    def answer(self, task: str, k: int) -> Span | None:
        """Where the task's answer ``k`` comes from: the `let` its value reads, else its
        `communicate` value."""
        ts = self.tasks.get(task)
        if ts is None or not 0 <= k < len(ts.communicate):
            return None
        name = ts.communicate_roots[k]
        return (ts.lets.get(name) if name else None) or ts.communicate[k]

    # ------------------------------------------------------------ rendering

    def _module_line(self, task: str | None) -> tuple[str, int]:
        """Fallback position: the generated module's task function (or its capability)."""
        fn = None
        if task is not None:
            fn = next((t.fn for t in self.cap.tasks if t.name == task), None)
        fn = fn or getattr(self.cap, "build_world", None)
        try:
            path = inspect.getsourcefile(fn) or self.module_file or "<module>"
            line = inspect.getsourcelines(fn)[1]
        except (TypeError, OSError):
            path, line = self.module_file or "<module>", 1
        try:
            path = os.path.relpath(path)
        except ValueError:
            pass
        return path, line

    def finding(self, severity: Severity, code: str, message: str, span: Span | None = None,
                *, task: str | None = None, seed: int | None = None,
                hint: str | None = None,
                notes: list[tuple[Span | None, str]] | None = None) -> Finding:
        """A finding at ``span`` (else at the task, else at the capability's first line);
        ``notes``, (span, message) of the other statements concerned, shown at their lines."""
        if span is None and task is not None:
            span = self.task(task)
        path, source = self.path, self.source
        if span is None and self.source is not None:
            span = self._capability_span()
        if span is None or self.source is None:
            path, line = self._module_line(task)
            source = None
            span = span if span is not None and self.source is not None else Span.at(line, 1)
        shown = [Note(message=m, span=at) for at, m in notes or () if at is not None and
                 source is not None]
        diag = Diagnostic(severity=severity, message=message, span=span, hint=hint, code=code,
                          notes=shown)
        return Finding(severity=severity, code=code, path=path, line=span.line,
                       column=span.column, message=message, hint=hint, seed=seed, task=task,
                       rendered=diag.render(path, source),
                       notes=[{"line": n.span.line, "column": n.span.column,
                               "message": n.message} for n in shown])

    def _capability_span(self) -> Span:
        for n, text in enumerate(self.source.splitlines(), 1):
            if text.lstrip().startswith("capability"):
                col = len(text) - len(text.lstrip()) + 1
                return Span.at(n, col, len("capability"))
        return Span.at(1, 1)
