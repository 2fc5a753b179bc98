"""The other possible values of a communicated value, so that a list of alternatives does not
count as saying the right one (see :meth:`tracec.runtime.outcome.Outcome.communicated`).

The rivals of a text value are the other values of every domain enum that holds it ("landed":
"delayed", "cancelled", ... of `flight_date.status`), and the other values that the same
field holds anywhere in the task's world (a free value: another record's name, city, flight
number). Numbers and booleans have none. Short common words ("yes", "no") are never rivals:
they turn up in every sentence.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

# never rivals: too short, or words any sentence may hold
_COMMON = frozenset({"yes", "no", "none", "true", "false", "all", "any", "one", "other", "n/a"})
MAX_LEN = 60  # longer texts (descriptions, addresses) are not values one lists


def _usable(x: Any) -> bool:
    return isinstance(x, str) and 3 <= len(x.strip()) <= MAX_LEN and x.strip().lower() not in _COMMON


_TEXT = r'"((?:[^"\\]|\\.)*)"'  # a JSON string's body


def _pairs_text(world: Any) -> str:
    """The world as JSON text (C speed), searched for ``"field": "value"`` pairs."""
    try:
        return json.dumps(world, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return ""


class Rivals:
    """``rivals(value)``: the lower-cased other possible values of ``value`` in one task's world
    and its domain's enums (an empty set for numbers, booleans and unknown values). Each value's
    rivals are looked up on first use: the fields that hold it, then their other values."""

    def __init__(self, world: Any, enums: Mapping[str, Mapping[str, tuple[str, ...]]] | None = None):
        self._world = world
        self._enums = enums or {}
        self._cache: dict[str, frozenset[str]] = {}
        self._text: str | None = None

    def _find(self, key: str) -> set[str]:
        out: set[str] = set()
        for fields in self._enums.values():
            for values in fields.values():
                if any(v.lower() == key for v in values):
                    out.update(v.lower() for v in values if _usable(v))
        if self._text is None:
            self._text = _pairs_text(self._world)
        text = self._text
        holders: set[str] = set()
        said = re.escape(": " + json.dumps(key, ensure_ascii=False))
        for m in re.finditer(said, text, re.IGNORECASE):
            end = m.start() - 1  # the closing quote of the field's name
            if end > 0 and text[end] == '"':
                holders.add(text[text.rfind('"', 0, end) + 1:end])
        for k in holders:
            for m in re.finditer('"' + re.escape(k) + '": ' + _TEXT, self._text):
                v = json.loads(f'"{m.group(1)}"')
                if _usable(v):
                    out.add(v.strip().lower())
        out.discard(key)
        return out

    def __call__(self, value: Any) -> frozenset[str]:
        if not isinstance(value, str) or not value.strip():
            return frozenset()
        key = value.strip().lower()
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = frozenset(self._find(key))
        return hit


NO_RIVALS = Rivals(None)
