"""What every checking pass shares: the spec's limits, the :class:`CheckState` (the facts
gathered so far and the diagnostics), source slices and two tree queries. The passes
(`names`, `typecheck`, `rewards`, `statements`) are objects over one state, built and run by
the `Checker` (`semantics.py`)."""

from __future__ import annotations

from typing import Any

from tracec.core.diagnostics import Diagnostic, Note, Span
from tracec.core.types import T
from tracec.domains.base import Domain
from tracec.lang import ast as A
from tracec.lang.domain_types import DomainTypes, EnumUse

DEFAULT_MAX_TURNS = 12
MAX_MAX_TURNS = 200
MAX_NAME_LEN = 64  # names become module, file and function names
MAX_SPAWN = 1000  # records one `kind[count]` may generate
MAX_WORLD_RECORDS = 5000  # records all `seed` spawns together may generate
MAX_ID_DIGITS = 32  # digits of fresh_id(prefix, digits)
MAX_DIAGNOSTICS = 100  # distinct diagnostics before the checker stops (a spec of repeats)
MAX_GOLD_CALLS = 200  # gold calls one task may make (`for` loops counted at their bound)


def source_slice(source: str, span: Span) -> str:
    """The source text under ``span`` (lines of a multi-line span joined by one space)."""
    lines = source.splitlines()
    if not (1 <= span.line <= len(lines)):
        return ""
    if span.line == span.end_line:
        return lines[span.line - 1][span.column - 1:span.end_column - 1]
    parts = [lines[span.line - 1][span.column - 1:]]
    parts += lines[span.line:span.end_line - 1]
    parts.append(lines[span.end_line - 1][:span.end_column - 1])
    return " ".join(p.strip() for p in parts)


def mentions(node: Any, name: str) -> bool:
    """Whether the name ``name`` occurs anywhere under ``node``."""
    if isinstance(node, A.Name):
        return node.id == name
    if isinstance(node, A.Node):
        return any(mentions(getattr(node, f), name) for f in type(node).model_fields)
    if isinstance(node, list):
        return any(mentions(i, name) for i in node)
    return False


def has_call(node: Any, func: str) -> bool:
    """Whether a call of ``func`` occurs anywhere under ``node``."""
    if isinstance(node, (A.Call, A.CallGen)) and node.func == func:
        return True
    if isinstance(node, A.Node):
        return any(has_call(getattr(node, f), func) for f in type(node).model_fields)
    if isinstance(node, list):
        return any(has_call(i, func) for i in node)
    return False


class TooManyDiagnostics(Exception):
    """The checker found :data:`MAX_DIAGNOSTICS` problems and stopped walking the spec."""


class CheckState:
    """The state the passes share while they walk one capability, and where they report."""

    def __init__(self, cap: A.Capability, source: str, path: str, domain: Domain | None):
        self.cap = cap
        self.source = source
        self.path = path
        self.domain = domain
        self.diags: list[Diagnostic] = []
        self.places: set[tuple] = set()  # distinct (severity, code, line, column) recorded
        self.tools: dict[str, dict[str, Any]] = {}  # name -> {"parameters", "writes"}
        self.seed_types: dict[str, T] = {}
        self.used_seed: set[str] = set()
        self.partial_names: dict[str, list[str]] = {}  # let names some tasks lack -> those tasks
        self.shown: dict[str, int] | None = None  # `tools [...]`: name -> line; None: all tools
        self.shown_unknown = False  # `tools [...]` has an unknown entry (already reported)
        self.unshown: set[str] = set()  # tools a variant's `tools [...]` lacks (reported once)
        self.dtypes = DomainTypes(domain)
        self.enums: dict[int, EnumUse] = {}  # id(expression node) -> the enum it holds
        self.key_enums: dict[int, EnumUse] = {}  # id(map expression node) -> its key enum
        self.zero_lets: set[str] = set()  # let names some task binds to the literal 0
        self.clone_kinds: dict[int, str] = {}  # id(Clone node) -> entity kind, in this task
        self.task_flows: list[dict[str, Any]] = []  # per task: let name -> `flow.Flow`

    def error(self, message: str, span: Span, hint: str | None = None, code: str = "E100",
              notes: list[Note] | None = None) -> None:
        self._add(Diagnostic(message=message, span=span, hint=hint, code=code, notes=notes or []))

    def warn(self, message: str, span: Span, hint: str | None = None, code: str = "W100") -> None:
        self._add(Diagnostic(severity="warning", message=message, span=span, hint=hint, code=code))

    def _add(self, diag: Diagnostic) -> None:
        """Record ``diag``; stop the walk (:class:`TooManyDiagnostics`) at the limit, so a spec
        repeating one mistake thousands of times costs no more than a hundred of them."""
        self.diags.append(diag)
        self.places.add((diag.severity, diag.code, diag.span.line, diag.span.column))
        if len(self.places) >= MAX_DIAGNOSTICS:
            raise TooManyDiagnostics

    def text_of(self, node: A.Node) -> str:
        return source_slice(self.source, node.span)
