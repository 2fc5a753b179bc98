"""Policy excerpts: pick sections of a domain's markdown policy by heading.

A policy is markdown whose sections start with ``#`` headings (τ²'s ``airline_policy.md``:
``## Book flight``, ``## Cancel flight``, ...). An excerpt keeps the preamble (the title and the
general rules before the first section) and the chosen sections, each with its subsections,
in the document's order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")


@dataclass(frozen=True)
class Section:
    """One heading of a policy: its level (number of ``#``), text and line range [start, end)."""

    level: int
    heading: str
    start: int
    end: int


def sections(policy: str) -> list[Section]:
    """Every heading of ``policy`` after the first (the title), with the lines it spans."""
    lines = policy.splitlines()
    heads: list[tuple[int, int, str]] = []
    fence = False
    for i, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fence = not fence
        m = None if fence else _HEADING.match(line)
        if m:
            heads.append((i, len(m.group(1)), m.group(2).strip()))
    out: list[Section] = []
    for k, (i, level, text) in enumerate(heads):
        if k == 0 and level == 1:
            continue  # the document's title belongs to the preamble
        end = len(lines)
        for j, lvl, _ in heads[k + 1:]:
            if lvl <= level:
                end = j
                break
        out.append(Section(level, text, i, end))
    return out


def headings(policy: str) -> list[str]:
    """The section headings a spec may name, in document order (duplicates once)."""
    return list(dict.fromkeys(s.heading for s in sections(policy)))


def _norm(heading: str) -> str:
    return " ".join(heading.split()).casefold()


def index(policy: str) -> dict[str, list[Section]]:
    """Sections by normalised heading (case and spacing ignored), parsed once."""
    out: dict[str, list[Section]] = {}
    for s in sections(policy):
        out.setdefault(_norm(s.heading), []).append(s)
    return out


def find(policy: str, heading: str, idx: dict[str, list[Section]] | None = None) -> list[Section]:
    """The sections titled ``heading`` (case and surrounding space ignored)."""
    return (idx if idx is not None else index(policy)).get(_norm(heading), [])


def excerpt(policy: str, chosen: Sequence[str]) -> str:
    """The preamble plus the sections titled ``chosen`` (unknown headings are ignored)."""
    lines = policy.splitlines()
    secs = sections(policy)
    idx = index(policy)
    first = secs[0].start if secs else len(lines)
    keep = set(range(first))
    for heading in dict.fromkeys(chosen):
        for s in idx.get(_norm(heading), []):
            keep.update(range(s.start, s.end))
    text = "\n".join(lines[i] for i in sorted(keep))
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"
