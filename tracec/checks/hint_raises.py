"""A gold write that sets a field the hint says to raise (C184, error).

"Raise total_baggages and nonfree_baggages by the same number": the hint tells the agent to add
to the record's own count, so the gold's new value of each field it names (by its name, with the
underscore) must be computed from the record's value of that field (`r.nonfree_baggages +
extra`); a gold that passes the added number alone (`nonfree_baggages = extra`) drops what the
record held, against its own hint. Judged from the spec (the task's hint, else the capability's;
the raise/increase clause up to its end); at the gold call that passes the field.
"""

from __future__ import annotations

import re
from typing import Any

from tracec.checks.check import Check
from tracec.lang import ast as A

_RAISE = re.compile(r"\b(?:raise|raises|increase|increases|increment|add to)\b([^.;:]*)",
                    re.IGNORECASE)
_FIELD = re.compile(r"`?\b([a-z]+(?:_[a-z]+)+)\b`?")


def raised_fields(hint: str) -> set[str]:
    """The fields (names with an underscore) a raise/increase clause of the hint names."""
    return {f for m in _RAISE.finditer(hint) for f in _FIELD.findall(m.group(1))}


def _reads_field(expr: Any, lets: dict[str, Any], field: str, seen: frozenset[str] = frozenset()) -> bool:
    """The expression reads a record's ``field`` (`r.nonfree_baggages`), through its `let`s."""
    for node in A.walk(expr):
        if isinstance(node, A.Attr) and node.name == field:
            return True
        if isinstance(node, A.Name) and node.id in lets and node.id not in seen \
                and _reads_field(lets[node.id], lets, field, seen | {node.id}):
            return True
    return False


class HintRaises(Check):
    """C184 from the spec; findings go to ``log``."""

    name = "gold writes vs the counts the hint raises"
    codes = ("C184",)

    def start(self) -> None:
        cap = self.where.ast
        if cap is None:
            return
        base = cap.hint.plain() if cap.hint else ""
        for t in cap.tasks:
            ts = self.where.tasks.get(t.name)
            fields = raised_fields(ts.hint_literal if ts and ts.hint_literal else base)
            if not fields:
                continue
            lets = {let.name: let.value for let in t.lets}
            counts: dict[str, int] = {}
            for call in A.gold_calls(t.gold):
                nth = counts.get(call.name, 0)
                counts[call.name] = nth + 1
                for kw in call.args:
                    if kw.name not in fields or _reads_field(kw.value, lets, kw.name):
                        continue
                    self.log.add(f"C184:{t.name}:{kw.name}", "error", "C184",
                                 f"task `{t.name}`: the hint says to raise `{kw.name}`, but the "
                                 f"gold call `{call.name}` passes a new `{kw.name}` that does "
                                 "not read the record's own: it replaces the count instead of "
                                 "adding to it", self.where.gold(t.name, call.name, nth),
                                 task=t.name,
                                 hint=f"pass the record's `{kw.name}` plus the added number")
