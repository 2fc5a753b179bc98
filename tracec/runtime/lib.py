"""Builtins that generated environment modules call (the "Runtime API").

Random builtins take the episode's ``random.Random`` first and use nothing else, so a world is
a pure function of the seed: no ``hash()`` of strings, no set iteration, no global RNG.
"""

from __future__ import annotations

import builtins
import datetime as _dt
import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from tracec.domains.base import ToolError
from tracec.runtime.world import add, clone, find, require, spawn, state_hash

__all__ = [
    "weekday",
    "date_of",
    "hour_of",
    "timestamp_of",
    "Rng",
    "ToolError",
    "Unsatisfiable",
    "abs",
    "add",
    "add_days",
    "chance",
    "clone",
    "date_between",
    "days_between",
    "find",
    "first_name",
    "fmt",
    "fraction",
    "fresh_id",
    "keys",
    "last_name",
    "len",
    "lower",
    "max_",
    "min_",
    "money",
    "pick",
    "randint",
    "ref",
    "require",
    "round_",
    "sample",
    "shuffle",
    "sorted_",
    "spawn",
    "state_hash",
    "sum_",
    "text",
    "uniform",
    "upper",
    "values",
]

Rng = random.Random
len = builtins.len
abs = builtins.abs


class Unsatisfiable(Exception):
    """A ``pick``/``sample`` found too few candidates; the env redraws the world."""


# ---------------------------------------------------------------- random builtins


def pick(rng: Rng, xs: Iterable[Any]) -> Any:
    """One element of ``xs``, uniformly (``Unsatisfiable`` when empty)."""
    seq = xs if isinstance(xs, list) else list(xs)
    if not seq:
        raise Unsatisfiable("pick from an empty list")
    return seq[rng.randrange(builtins.len(seq))]


def sample(rng: Rng, xs: Iterable[Any], lo: int, hi: int | None = None) -> list[Any]:
    """Between ``lo`` and ``hi`` distinct elements of ``xs`` (in drawn order)."""
    seq = list(xs)
    hi = lo if hi is None else hi
    if builtins.len(seq) < lo or lo > hi:
        raise Unsatisfiable(f"sample of {lo}..{hi} from {builtins.len(seq)} elements")
    k = rng.randint(lo, builtins.min(hi, builtins.len(seq)))
    return rng.sample(seq, k)


def shuffle(rng: Rng, xs: Iterable[Any]) -> list[Any]:
    """A shuffled copy of ``xs``."""
    seq = list(xs)
    rng.shuffle(seq)
    return seq


def randint(rng: Rng, lo: int, hi: int) -> int:
    """An integer in ``lo..hi`` (inclusive)."""
    return rng.randint(int(lo), int(hi))


def money(rng: Rng, lo: float, hi: float) -> float | int:
    """An amount in ``lo..hi`` with 2 decimals (drawn in whole cents)."""
    cents = rng.randint(round(lo * 100), round(hi * 100))
    return cents / 100


def uniform(rng: Rng, lo: float, hi: float) -> float:
    """A float in ``[lo, hi]``."""
    return rng.uniform(lo, hi)


def chance(rng: Rng, p: float) -> bool:
    """True with probability ``p``."""
    return rng.random() < p


def _to_date(x: Any) -> _dt.date:
    if isinstance(x, _dt.datetime):
        return x.date()
    if isinstance(x, _dt.date):
        return x
    if isinstance(x, str):
        try:
            return _dt.date.fromisoformat(x[:10])
        except ValueError:
            raise ValueError(f"not an ISO date (YYYY-MM-DD): {x!r}") from None
    raise TypeError(f"not a date: {x!r}")


def date_between(rng: Rng, lo: Any, hi: Any) -> str:
    """An ISO date (``YYYY-MM-DD``) between ``lo`` and ``hi`` inclusive."""
    a, b = _to_date(lo), _to_date(hi)
    if b < a:
        raise ValueError(f"date_between: {b} is before {a}")
    return (a + _dt.timedelta(days=rng.randint(0, (b - a).days))).isoformat()


_FIRST = (
    "Aarav", "Amelia", "Anya", "Chen", "Daiki", "Elena", "Emma", "Fatima", "Hiro", "Isabella",
    "Ivan", "James", "Juan", "Lei", "Liam", "Lucas", "Mei", "Mia", "Mohamed", "Noah", "Olivia",
    "Omar", "Priya", "Raj", "Sofia", "Sophia", "Yara", "Yusuf", "Zoe", "Ethan",
)
_LAST = (
    "Ahmed", "Brown", "Chen", "Garcia", "Gonzalez", "Hernandez", "Ito", "Johnson", "Kim",
    "Kovacs", "Lee", "Li", "Lopez", "Martin", "Moore", "Nguyen", "Patel", "Rossi", "Santos",
    "Schmidt", "Silva", "Smith", "Sullivan", "Taylor", "Thomas", "Wilson", "Yamamoto", "Khan",
)


def _name(rng: Rng, names: tuple[str, ...], other_than: str | None) -> str:
    pool = [n for n in names if n != other_than] if other_than is not None else names
    return pool[rng.randrange(builtins.len(pool))]


def first_name(rng: Rng, other_than: str | None = None) -> str:
    """A first name from a fixed list (not ``other_than``: a rename that changes something)."""
    return _name(rng, _FIRST, other_than)


def last_name(rng: Rng, other_than: str | None = None) -> str:
    """A last name from a fixed list (not ``other_than``: a rename that changes something)."""
    return _name(rng, _LAST, other_than)


def fresh_id(rng: Rng, prefix: str = "", digits: int = 6) -> str:
    """``prefix`` followed by ``digits`` random digits (at most 32)."""
    if not 0 <= digits <= 32:
        raise ValueError(f"fresh_id needs 0 to 32 digits, got {digits}")
    return prefix + "".join(str(rng.randrange(10)) for _ in range(digits))


# ---------------------------------------------------------------- pure builtins


def _clean(x: float) -> float:
    """Remove float noise (0.1 + 0.2 -> 0.3) without changing real precision."""
    return round(x, 9)


def sum_(xs: Iterable[Any], start: Any = 0) -> Any:
    """The sum of ``xs``; float sums are exact-ish (fsum) and cleaned of float noise."""
    seq = list(xs)
    if any(isinstance(x, float) for x in seq) or isinstance(start, float):
        return _clean(math.fsum(seq) + start)
    return builtins.sum(seq, start)


def _many(args: tuple) -> Sequence[Any]:
    return list(args[0]) if builtins.len(args) == 1 else list(args)


def min_(*args: Any, key: Callable | None = None) -> Any:
    """``min`` of an iterable or of several values."""
    seq = _many(args)
    if not seq:
        raise Unsatisfiable("min of an empty list")
    return builtins.min(seq, key=key) if key else builtins.min(seq)


def max_(*args: Any, key: Callable | None = None) -> Any:
    """``max`` of an iterable or of several values."""
    seq = _many(args)
    if not seq:
        raise Unsatisfiable("max of an empty list")
    return builtins.max(seq, key=key) if key else builtins.max(seq)


def round_(x: float, ndigits: int | None = None) -> float | int:
    """``round`` (an int when ``ndigits`` is omitted)."""
    return builtins.round(x) if ndigits is None else builtins.round(x, ndigits)


def sorted_(xs: Iterable[Any], key: Callable | None = None, reverse: bool = False) -> list[Any]:
    """A sorted list (stable)."""
    return builtins.sorted(xs, key=key, reverse=reverse)


def keys(m: Mapping[str, Any]) -> list[str]:
    """The keys of a mapping, in insertion order."""
    return list(m.keys())


def values(m: Mapping[str, Any]) -> list[Any]:
    """The values of a mapping, in insertion order."""
    return list(m.values())


def upper(s: str) -> str:
    return str(s).upper()


def lower(s: str) -> str:
    return str(s).lower()


def add_days(date: Any, n: int) -> str:
    """The ISO date ``n`` days after ``date``."""
    return (_to_date(date) + _dt.timedelta(days=int(n))).isoformat()


def days_between(a: Any, b: Any) -> int:
    """Days from ``a`` to ``b`` (negative when ``b`` is earlier)."""
    return (_to_date(b) - _to_date(a)).days


_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _utc(ts: Any) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(float(ts), tz=_dt.timezone.utc)


def weekday(x: Any) -> str:
    """The English weekday of an ISO date or a POSIX timestamp (UTC)."""
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return _WEEKDAYS[_utc(x).weekday()]
    return _WEEKDAYS[_to_date(x).weekday()]


def date_of(ts: Any) -> str:
    """The ISO date (UTC) of a POSIX timestamp."""
    return _utc(ts).date().isoformat()


def hour_of(ts: Any) -> int:
    """The hour (UTC, 0-23) of a POSIX timestamp."""
    return _utc(ts).hour


def timestamp_of(date: Any, hour: int = 0, minute: int = 0) -> float:
    """The POSIX timestamp of an ISO date at hour:minute UTC."""
    d = _to_date(date)
    moment = _dt.datetime(d.year, d.month, d.day, int(hour), int(minute), tzinfo=_dt.timezone.utc)
    return moment.timestamp()


def fmt(x: Any) -> str:
    """How a value reads in user text and reports.

    Ints as ints, integral floats as ints, other floats with 2 decimals, lists joined with
    ``", "``, ``None`` as ``"none"``; everything else ``str``.
    """
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if math.isfinite(x) and x == int(x):
            return str(int(x))
        return f"{x:.2f}"
    if isinstance(x, (list, tuple)):
        return ", ".join(fmt(e) for e in x)
    if x is None:
        return "none"
    return str(x)


def join(xs: Iterable[Any], sep: str = ", ") -> str:
    """The elements as text (each as `fmt` says it), separated by ``sep``."""
    return str(sep).join(fmt(x) for x in xs)


def min_by(pairs: Iterable[tuple[Any, Any]]) -> Any:
    """Of (key, element) pairs, the element with the least key (the first on a tie; None when
    there is none): `min_by(f.price for f in flights)`."""
    best: tuple[Any, Any] | None = None
    for key, x in pairs:
        if best is None or key < best[0]:
            best = (key, x)
    return None if best is None else best[1]


def max_by(pairs: Iterable[tuple[Any, Any]]) -> Any:
    """Of (key, element) pairs, the element with the greatest key (the first on a tie)."""
    best: tuple[Any, Any] | None = None
    for key, x in pairs:
        if best is None or key > best[0]:
            best = (key, x)
    return None if best is None else best[1]


def ref(db: Mapping[str, Any], collection: str, record_id: Any, nullable: bool = False) -> Any:
    """The record of ``db[collection]`` whose id is ``record_id`` (a domain reference such as
    ``item.product``); ``None`` for a ``None`` id of a nullable reference."""
    if record_id is None and nullable:
        return None
    records = db.get(collection) or {}
    if record_id not in records:
        raise LookupError(f"no record with id {record_id!r} in {collection}")
    return records[record_id]


def text(*parts: Any) -> str:
    """Interpolation: strings as they are, other values through :func:`fmt`."""
    return "".join(p if isinstance(p, str) else fmt(p) for p in parts)


def fraction(*conds: Any) -> float:
    """The share of truthy conditions (one iterable argument or several arguments)."""
    if builtins.len(conds) == 1 and not isinstance(conds[0], (bool, int, float, str)):
        conds = tuple(conds[0])
    if not conds:
        return 0.0
    return builtins.sum(1 for c in conds if c) / builtins.len(conds)
