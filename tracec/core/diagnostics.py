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


EXCERPT_CHARS = 160  # source characters shown around the caret of one diagnostic
TEXT_CHARS = 300  # a message or hint longer than this is cut (it may quote a huge token)
SHOWN = 20  # diagnostics rendered per file; the summary still counts them all


def clip(text: str, limit: int = TEXT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, the cut marked with ``...``."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def excerpt(text: str, column: int, end: int) -> tuple[str, int, int]:
    """A window of at most :data:`EXCERPT_CHARS` characters of a source line around 1-based
    columns [column, end): (shown text, caret column, caret width) within it."""
    width = max(1, min(end, len(text) + 1) - column)
    if len(text) <= EXCERPT_CHARS:
        return text, column, width
    start = max(0, min(column - 1 - EXCERPT_CHARS // 3, len(text) - EXCERPT_CHARS))
    shown = text[start: start + EXCERPT_CHARS]
    head = "..." if start else ""
    tail = "..." if start + EXCERPT_CHARS < len(text) else ""
    caret = column - start + len(head)
    width = max(1, min(width, EXCERPT_CHARS - (column - 1 - start)))
    return head + shown + tail, caret, width


class Note(BaseModel):
    """A secondary location of a diagnostic: the other statement the finding concerns (rustc's
    ``note: ... matches any value``), rendered ``path:line:col: note: message`` with its line."""

    message: str
    span: Span


def _excerpt_lines(span: Span, src_lines: list[str], mark: str, gutter_width: int) -> list[str]:
    """The source line of ``span`` with ``mark`` under it (none when the line is unknown)."""
    if not 1 <= span.line <= len(src_lines):
        return []
    end = span.end_column if span.end_line == span.line else len(src_lines[span.line - 1]) + 1
    text, col, width = excerpt(src_lines[span.line - 1].replace("\t", " "), span.column, end)
    gutter = str(span.line).rjust(gutter_width)
    pad = " " * gutter_width
    return [f"{pad} |", f"{gutter} | {text}", f"{pad} | {' ' * (col - 1)}{mark * width}"]


class Diagnostic(BaseModel):
    severity: Literal["error", "warning"] = "error"
    message: str
    span: Span
    hint: str | None = None
    code: str = "E"
    notes: list[Note] = []  # other statements concerned, each shown at its own line

    def render(self, path: str, source: str | None, lines: list[str] | None = None) -> str:
        """``path:line:col: severity: message``, one excerpt of the line with a caret, each note
        (``path:line:col: note: ...`` and its line underlined with ``-``), the hint; bounded
        whatever the line's or message's length (``lines``: ``source`` split once)."""
        sp = self.span
        out = [f"{path}:{sp.line}:{sp.column}: {self.severity}: {clip(self.message)}"]
        src_lines = lines if lines is not None else source.splitlines() if source is not None else []
        gutter = max(len(str(s.line)) for s in [sp] + [n.span for n in self.notes])
        out += _excerpt_lines(sp, src_lines, "^", gutter)
        for note in self.notes:
            out.append(f"{path}:{note.span.line}:{note.span.column}: note: {clip(note.message)}")
            out += _excerpt_lines(note.span, src_lines, "-", gutter)
        if self.hint:
            prefix = " " * (gutter + 1)
            out.append(f"{prefix}= hint: {clip(self.hint)}")
        return "\n".join(out)


class SpecError(Exception):
    """Raised with one or more diagnostics when a spec cannot be compiled."""

    def __init__(self, diagnostics: list[Diagnostic]):
        super().__init__(clip(diagnostics[0].message) if diagnostics else "spec error")
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
    """Every diagnostic of one file in line order, at most :data:`SHOWN` of them, and a count."""
    ordered = sorted(diags, key=lambda d: (d.span.line, d.span.column))
    lines = source.splitlines() if source is not None else []
    body = "\n\n".join(d.render(path, source, lines) for d in ordered[:SHOWN])
    if len(ordered) > SHOWN:
        body += f"\n\n({len(ordered) - SHOWN} more not shown: fix these and compile again)"
    n_err = sum(d.severity == "error" for d in diags)
    n_warn = len(diags) - n_err
    summary = []
    if n_err:
        summary.append(f"{n_err} error{'s' if n_err != 1 else ''}")
    if n_warn:
        summary.append(f"{n_warn} warning{'s' if n_warn != 1 else ''}")
    return body + (f"\n\n{path}: {', '.join(summary)}" if summary else "")
