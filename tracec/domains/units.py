"""Units and kinds of a domain's values (issue 30 item 2): money in dollars or cents,
durations with their unit, instants (POSIX timestamps) and dates held as ISO text.

A domain declares the unit of each field that has one (``Schema.units``: type name -> field ->
unit name) and of each tool argument that has one (``Schema.arg_units``: tool -> argument ->
unit name); the spec checker follows units through expressions (``tracec.lang.units``) and
``tracec describe`` shows them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Unit:
    """A unit: its ``dim`` (money, duration, instant, date, datetime) and its size in the
    dimension's base unit (cents, seconds; 0 for the text kinds)."""

    name: str
    dim: str
    scale: int = 0
    text: str = ""  # in words, for messages and `tracec describe`

    @property
    def is_text(self) -> bool:
        """A kind held as text (a date, a date and time): ordered as text."""
        return self.dim in ("date", "datetime")


UNITS: dict[str, Unit] = {u.name: u for u in (
    Unit("dollars", "money", 100, "dollars"),
    Unit("cents", "money", 1, "cents"),
    Unit("seconds", "duration", 1, "seconds"),
    Unit("minutes", "duration", 60, "minutes"),
    Unit("hours", "duration", 3600, "hours"),
    Unit("days", "duration", 86400, "days"),
    Unit("weeks", "duration", 604800, "weeks"),
    Unit("timestamp", "instant", 1, "a POSIX timestamp (seconds since 1970-01-01 UTC)"),
    Unit("date", "date", 0, 'a date as text, "YYYY-MM-DD"'),
    Unit("datetime", "datetime", 0, 'a date and time as text, "YYYY-MM-DDTHH:MM:SS"'),
)}

# the words a user's text puts after a number to give its unit: "{n} hours", "{x} dollars"
WORDS: dict[str, str] = {
    "dollar": "dollars", "dollars": "dollars", "usd": "dollars",
    "cent": "cents", "cents": "cents",
    "second": "seconds", "seconds": "seconds", "sec": "seconds", "secs": "seconds",
    "minute": "minutes", "minutes": "minutes", "min": "minutes", "mins": "minutes",
    "hour": "hours", "hours": "hours", "hr": "hours", "hrs": "hours",
    "day": "days", "days": "days", "week": "weeks", "weeks": "weeks",
}

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$")


def text_kind(text: str) -> str | None:
    """``date`` or ``datetime`` for an ISO literal, else None (text)."""
    if _DATE.match(text):
        return "date"
    if _DATETIME.match(text):
        return "datetime"
    return None


def is_instant(name: str | None) -> bool:
    """Whether the unit named ``name`` (None: no unit) is an instant."""
    u = UNITS.get(name or "")
    return u is not None and u.dim == "instant"


def is_instant_arg(schema: object, tool: str, arg: str) -> bool:
    """Whether ``tool``'s argument ``arg`` is an instant (``Schema.arg_units``; none: no)."""
    units = getattr(schema, "arg_units", None) or {}
    return is_instant((units.get(tool) or {}).get(arg))


def by_scale(dim: str, scale: float) -> Unit | None:
    """The unit of ``dim`` whose size is ``scale`` base units (None: no such unit)."""
    return next((u for u in UNITS.values() if u.dim == dim and u.scale == scale), None)


def units(**fields: str) -> dict[str, str]:
    """``units(price="dollars", created_at="datetime")``, each name checked."""
    for name, unit in fields.items():
        if unit not in UNITS:
            raise ValueError(f"unknown unit {unit!r} for {name}")
    return dict(fields)
