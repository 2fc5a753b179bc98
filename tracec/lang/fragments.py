"""Shared fragments: `use "common/x.tracec-frag"` on a line of its own includes that file's lines.

A fragment is a piece of spec text (seed statements, field-block items, tasks, ...) kept once
and used by several specs. Specs are untrusted, so inclusion is bounded: the path is relative to
the including spec's folder and may not leave it (no absolute paths, no `..`, no symlink out),
it ends in ``.tracec-frag``, a fragment is at most 64 KiB, fragments may `use` others to a depth
of 4, and a spec includes at most 32 fragments. The expanded text is what the compiler parses;
a line map takes every position back to the file and line it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracec import files
from tracec.core.diagnostics import Diagnostic, Span

FRAGMENT_SUFFIX = ".tracec-frag"
MAX_FRAGMENT_BYTES = 64 * 1024
MAX_DEPTH = 4
MAX_USES = 32
USE_LINE = re.compile(r'^(?P<indent>[ \t]*)use[ \t]+"(?P<path>[^"\\\n]*)"[ \t]*(?:#[^\n]*)?$')


@dataclass(frozen=True)
class Origin:
    """Where an expanded line came from: the spec's own ``line``, or a fragment's line, with
    the `use` line of the spec that (transitively) included it."""

    line: int  # line in the spec (for fragment lines: the spec's `use` line)
    column: int = 0  # for fragment lines: the column of the spec's `use`
    fragment: str | None = None  # display path of the fragment
    fragment_line: int = 0
    path: str | None = None  # the fragment's path relative to the spec's folder (as in `use`)


@dataclass
class Expanded:
    text: str
    origins: list[Origin] = field(default_factory=list)  # index: expanded line - 1
    fragments: dict[str, str] = field(default_factory=dict)  # display path -> text
    errors: list[Diagnostic] = field(default_factory=list)

    @property
    def used(self) -> bool:
        return bool(self.fragments)


_LONE_CR = re.compile(r"\r(?!\n)")


def lf_lines(text: str) -> str:
    """``text`` with each lone CR (an old Mac line end) made LF; CRLF stays as it is (the
    parser counts lines by LF and skips CR as space)."""
    return _LONE_CR.sub("\n", text) if "\r" in text else text


def code_line_starts(text: str) -> list[bool]:
    """For each line of ``text`` (split on ``\n``), whether it starts in code, not inside a
    triple-quoted string: a scan with the grammar's own tokens (`#` comments to the end of the
    line, one-line strings with escapes, triple-quoted strings over lines), so triple quotes in
    a comment or a string open nothing."""
    starts: list[bool] = []
    in_long = False
    i, n = 0, len(text)
    starts.append(True)
    while i < n:
        c = text[i]
        if in_long:
            if c == "\\":
                if i + 1 < n and text[i + 1] == "\n":
                    starts.append(False)
                i += 2
                continue
            if text.startswith('"""', i):
                in_long = False
                i += 3
                continue
            if c == "\n":
                starts.append(False)
            i += 1
            continue
        if c == "\n":
            starts.append(True)
            i += 1
        elif c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith('"""', i):
            in_long = True
            i += 3
        elif c == '"':
            i += 1
            while i < n and text[i] not in '"\n':
                i += 2 if text[i] == "\\" else 1
            if i < n and text[i] == '"':
                i += 1
        else:
            i += 1
    return starts


def use_lines(text: str) -> dict[int, re.Match[str]]:
    """The `use "..."` lines of ``text``: 0-based line index -> the match (only lines that
    start in code; see `code_line_starts`)."""
    starts = code_line_starts(text)
    out: dict[int, re.Match[str]] = {}
    for index, line in enumerate(text.split("\n")):
        if index < len(starts) and starts[index]:
            m = USE_LINE.match(line)
            if m is not None:
                out[index] = m
    return out


def _resolve(raw: str, root: Path) -> tuple[Path | None, str | None]:
    """The fragment file for a `use` path, or an error message."""
    if not raw:
        return None, "`use` needs a path"
    if raw.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", raw) or "\\" in raw:
        return None, f"`use` path `{raw}` must be relative to the spec's folder, with `/`"
    if any(part in ("..", "") for part in raw.split("/")):
        return None, f"`use` path `{raw}` may not contain `..` or empty parts"
    if not raw.endswith(FRAGMENT_SUFFIX):
        return None, f"a fragment's name ends in `{FRAGMENT_SUFFIX}` (got `{raw}`)"
    target = root / raw
    try:
        resolved = target.resolve(strict=True)
    except (OSError, RuntimeError):
        return None, f"no fragment `{raw}` next to the spec ({target})"
    if not resolved.is_relative_to(root.resolve()):
        return None, f"`use` path `{raw}` leads outside the spec's folder"
    if not resolved.is_file():
        return None, f"`{raw}` is not a file"
    return resolved, None


def expand(source: str, base_dir: Path | None, display_dir: str = "") -> Expanded:
    """Expand the `use` lines of a spec. ``base_dir``: the spec's folder (None: `use` is an
    error, e.g. for text that is not a file); ``display_dir``: that folder as the user typed
    it, for openable diagnostic paths."""
    out = Expanded(text="")
    lines: list[str] = []
    counter = [0]

    def include(text: str, depth: int, origin_of: Any) -> None:
        uses = use_lines(text)
        for number, line in enumerate(text.split("\n"), start=1):
            m = uses.get(number - 1)
            if m is None:
                lines.append(line)
                out.origins.append(origin_of(number))
                continue
            at = origin_of(number)
            col = len(m.group("indent")) + 1
            span = Span.at(at.line, at.column or col, 3 if at.fragment is None else 1)
            where = "" if at.fragment is None else f"{at.fragment}:{number}: "
            lines.append("")  # the `use` line itself is blank in the expanded text
            out.origins.append(at)
            raw = m.group("path")
            if base_dir is None:
                out.errors.append(Diagnostic(
                    message=f"{where}`use` works in a spec file (no folder to look in)",
                    span=span, code="E260"))
                continue
            if depth >= MAX_DEPTH:
                out.errors.append(Diagnostic(
                    message=f"{where}fragments nest deeper than {MAX_DEPTH} (a `use` cycle?)",
                    span=span, code="E261"))
                continue
            counter[0] += 1
            if counter[0] > MAX_USES:
                out.errors.append(Diagnostic(
                    message=f"{where}more than {MAX_USES} `use`s in one spec", span=span,
                    code="E262"))
                continue
            path, error = _resolve(raw, base_dir)
            if error is None and path is not None and path.stat().st_size > MAX_FRAGMENT_BYTES:
                error = f"fragment `{raw}` is larger than {MAX_FRAGMENT_BYTES // 1024} KiB"
            body = ""
            if error is None and path is not None:
                try:
                    raw_bytes = files.read_bytes(path, "fragment", limit=MAX_FRAGMENT_BYTES)
                    body = lf_lines(raw_bytes.decode("utf-8").removeprefix("\ufeff"))
                except (files.InputError, UnicodeDecodeError) as exc:
                    error = f"cannot read fragment `{raw}`: {exc}"
            if error is not None:
                out.errors.append(Diagnostic(message=where + error, span=span, code="E263",
                                             hint=f"fragments live under the spec's folder, "
                                                  f"e.g. `use \"common/x{FRAGMENT_SUFFIX}\"`"))
                continue
            shown = f"{display_dir}/{raw}" if display_dir else raw
            out.fragments[shown] = body
            spec_line, spec_col = (at.line, col) if at.fragment is None else (at.line, at.column)
            include(body.rstrip("\n"), depth + 1,
                    lambda n, s=shown, sl=spec_line, sc=spec_col, r=raw: Origin(sl, sc, s, n, r))

    include(source, 0, lambda n: Origin(n))
    out.text = "\n".join(lines)
    return out


def map_span(span: Span, origins: list[Origin]) -> Span:
    """A span of the expanded text in spec coordinates (fragment code: the `use` line)."""
    def at(line: int) -> Origin | None:
        return origins[line - 1] if 1 <= line <= len(origins) else None

    start, end = at(span.line), at(span.end_line)
    if start is None:
        return span
    if start.fragment is not None:
        return Span.at(start.line, max(start.column, 1), 3)
    if end is None or end.fragment is not None:
        return Span(line=start.line, column=span.column, end_line=start.line,
                    end_column=span.column + 1)
    return Span(line=start.line, column=span.column, end_line=end.line,
                end_column=span.end_column)


def map_diagnostic(diag: Diagnostic, origins: list[Origin]) -> Diagnostic:
    """A diagnostic in expanded coordinates, placed in the spec; one inside a fragment names
    the fragment's `path:line:col` and sits on the spec's `use` line."""
    line = diag.span.line
    origin = origins[line - 1] if 1 <= line <= len(origins) else None
    update: dict[str, Any] = {"span": map_span(diag.span, origins)}
    if diag.notes:
        update["notes"] = [n.model_copy(update={"span": map_span(n.span, origins)})
                           for n in diag.notes]
    if origin is not None and origin.fragment is not None:
        update["message"] = (f"{origin.fragment}:{origin.fragment_line}:{diag.span.column}: "
                             f"{diag.message}")
    return diag.model_copy(update=update)
