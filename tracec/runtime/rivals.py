"""The other possible values of a communicated value, so that a list of alternatives does not
count as saying the right one (see :meth:`tracec.runtime.outcome.Outcome.communicated`).

The rivals of a text value are the other values of every domain enum that holds it ("landed":
"delayed", "cancelled", ... of `flight_date.status`), and the other values that the same
field holds anywhere in the task's world (a free value: another record's name, city, flight
number). Numbers and booleans have none. Short common words ("yes", "no") are never rivals:
they turn up in every sentence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# never rivals: too short, or words any sentence may hold
_COMMON = frozenset({"yes", "no", "none", "true", "false", "all", "any", "one", "other", "n/a"})
MAX_LEN = 60  # longer texts (descriptions, addresses) are not values one lists


def _usable(x: Any) -> bool:
    return isinstance(x, str) and 3 <= len(x.strip()) <= MAX_LEN and x.strip().lower() not in _COMMON


class Rivals:
    """``rivals(value)``: the lower-cased other possible values of ``value`` in one task's world
    and its domain's enums (an empty set for numbers, booleans and unknown values). The world
    is indexed on first use, once per task."""

    def __init__(self, world: Any, enums: Mapping[str, Mapping[str, tuple[str, ...]]] | None = None):
        self._world = world
        self._enums = enums or {}
        self._by_field: dict[str, set[str]] | None = None
        self._cache: dict[str, frozenset[str]] = {}

    def _index(self) -> dict[str, set[str]]:
        if self._by_field is None:
            by_field: dict[str, set[str]] = {}
            for fields in self._enums.values():
                for name, values in fields.items():
                    by_field.setdefault(f"enum:{name}", set()).update(
                        v.lower() for v in values if _usable(v))
            stack = [self._world]
            while stack:
                node = stack.pop()
                if isinstance(node, Mapping):
                    for k, v in node.items():
                        if isinstance(v, str):
                            if _usable(v):
                                by_field.setdefault(str(k), set()).add(v.strip().lower())
                        elif isinstance(v, (Mapping, list, tuple)):
                            stack.append(v)
                elif isinstance(node, (list, tuple)):
                    stack.extend(x for x in node if isinstance(x, (Mapping, list, tuple)))
            self._by_field = by_field
        return self._by_field

    def __call__(self, value: Any) -> frozenset[str]:
        if not isinstance(value, str) or not value.strip():
            return frozenset()
        key = value.strip().lower()
        hit = self._cache.get(key)
        if hit is None:
            out: set[str] = set()
            for values in self._index().values():
                if key in values:
                    out.update(values)
            out.discard(key)
            hit = self._cache[key] = frozenset(out)
        return hit


NO_RIVALS = Rivals(None)
