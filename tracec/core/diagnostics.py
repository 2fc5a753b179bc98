"""Diagnostics: `path:line:col: error: message`, the source line with a caret, and a hint."""

from __future__ import annotations

import difflib
from typing import Iterable, Literal

from pydantic import BaseModel


class Span(BaseModel):
    """A 1-based source range (end column exclusive)."""

    line: int = 1
    column: int = 1
    end_line: int = 1
    end_column: int = 2

    @classmethod
    def at(cls, line: int, column: int, length: int = 1) -> "Span":
        return cls(line=line, column=column, end_line=line, end_column=column + max(length, 1))


class Diagnostic(BaseModel):
    severity: Literal["error", "warning"] = "error"
    message: str
    span: Span
    hint: str | None = None
    code: str = "E"

    def render(self, path: str, source: str | None) -> str:
        sp = self.span
        lines = [f"{path}:{sp.line}:{sp.column}: {self.severity}: {self.message}"]
        src_lines = source.splitlines() if source is not None else []
        if 1 <= sp.line <= len(src_lines):
            text = src_lines[sp.line - 1].replace("\t", " ")
            gutter = str(sp.line)
            pad = " " * len(gutter)
            end = sp.end_column if sp.end_line == sp.line else len(text) + 1
            width = max(1, min(end, len(text) + 1) - sp.column)
            lines.append(f"{pad} |")
            lines.append(f"{gutter} | {text}")
            lines.append(f"{pad} | {' ' * (sp.column - 1)}{'^' * width}")
        if self.hint:
            prefix = " " * (len(str(sp.line)) + 1)
            lines.append(f"{prefix}= hint: {self.hint}")
        return "\n".join(lines)


class SpecError(Exception):
    """Raised with one or more diagnostics when a spec cannot be compiled."""

    def __init__(self, diagnostics: list[Diagnostic]):
        super().__init__(diagnostics[0].message if diagnostics else "spec error")
        self.diagnostics = diagnostics


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """A `did you mean` hint for a misspelt name, or None."""
    pool = sorted(set(candidates))
    close = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
    if not close:
        lowered = {c.lower(): c for c in pool}
        if name.lower() in lowered:
            close = [lowered[name.lower()]]
    return f"did you mean `{close[0]}`?" if close else None


def render_all(diags: list[Diagnostic], path: str, source: str | None) -> str:
    ordered = sorted(diags, key=lambda d: (d.span.line, d.span.column))
    body = "\n\n".join(d.render(path, source) for d in ordered)
    n_err = sum(d.severity == "error" for d in diags)
    n_warn = len(diags) - n_err
    summary = []
    if n_err:
        summary.append(f"{n_err} error{'s' if n_err != 1 else ''}")
    if n_warn:
        summary.append(f"{n_warn} warning{'s' if n_warn != 1 else ''}")
    return body + (f"\n\n{path}: {', '.join(summary)}" if summary else "")
