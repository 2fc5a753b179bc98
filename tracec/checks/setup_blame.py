"""Where a gold action that fails at reset because of the world went wrong: the task's
distractor that sets the field the error names.

A task's distractor may set up the world the gold must repair (`add settings { ...; cellular =
False }`): when the gold's call fails and its error names no argument but names a field that one
distractor of the task writes (`cellular already enabled`), the author's mistake is that field's
value in the distractor, not the call.
"""

from __future__ import annotations

from collections.abc import Callable

from tracec.checks.blame import NO_WORD, task_ast, words
from tracec.checks.locate import SpecMap
from tracec.core.diagnostics import Span
from tracec.lang import ast as A


def field_words(name: str) -> set[str]:
    """The words (4 letters or more, not `id`) of a field's name an error would say."""
    return {w for w in words(name.replace("_", " ")) if len(w) >= 4} - NO_WORD


def setting_distractor(where: SpecMap, task: str, error: str,
                       fields_of: Callable[[str], list[str]] | None = None
                       ) -> tuple[str, str, Span, bool] | None:
    """(distractor, field, span, whether it sets it) of the one task distractor that writes a
    field whose name's words (:func:`field_words`) the error says; else (with ``fields_of``: a
    kind -> its fields) of the one that adds a record of a kind with such a field and does not
    set it; None when none or two."""
    t = task_ast(where, task)
    spans = where.tasks[task].distractors if task in where.tasks else {}
    if t is None:
        return None
    said = words(error)
    hits = []
    for d in t.distractors:
        for stmt in d.stmts:
            if not isinstance(stmt, (A.AddRecord, A.Clone)):
                continue
            for f in stmt.fields:
                parts = field_words(f.name)
                if parts and parts <= said and d.name in spans:
                    # the field's own line when the parser gave it one, else the distractor's
                    at = where.place(f.span) if "span" in f.model_fields_set else spans[d.name]
                    hits.append((d.name, f.name, at, True))
    if hits or fields_of is None:
        return hits[0] if len(hits) == 1 else None
    # none writes it: the one distractor that adds a record of a kind that has that field (it
    # sets the record's other fields up and left the one the error names as it was)
    for d in t.distractors:
        for stmt in d.stmts:
            if not isinstance(stmt, A.AddRecord) or d.name not in spans:
                continue
            named = [f for f in fields_of(stmt.kind) if (parts := field_words(f))
                     and parts <= said and f not in {x.name for x in stmt.fields}]
            if named:
                at = where.place(stmt.span) if "span" in stmt.model_fields_set else spans[d.name]
                hits.append((d.name, named[0], at, False))
    return hits[0] if len(hits) == 1 else None
