"""World helpers: create records through the domain contract, copy and hash databases."""

from __future__ import annotations

import hashlib
import json
import marshal
import math
import pickle
import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tracec.domains.base import Domain, EntityKind, ToolError

FieldsFn = Callable[[], Mapping[str, Any]]


def copy_json(x: Any) -> Any:
    """A deep copy of JSON-like data (dicts, lists, scalars) that keeps shared references, like
    ``deepcopy`` but much faster: ``marshal`` (pickle for what marshal cannot store)."""
    try:
        return marshal.loads(marshal.dumps(x))
    except ValueError:
        return pickle.loads(pickle.dumps(x, pickle.HIGHEST_PROTOCOL))


class Frozen:
    """A JSON-like value kept as bytes: :meth:`copy` gives a fresh deep copy each time (half the
    cost of :func:`copy_json`, which also has to serialise)."""

    __slots__ = ("_blob", "_value")

    def __init__(self, value: Any):
        try:
            self._blob: bytes | None = marshal.dumps(value)
            self._value = None
        except ValueError:
            self._blob, self._value = None, copy_json(value)

    def copy(self) -> Any:
        if self._blob is not None:
            return marshal.loads(self._blob)
        return copy_json(self._value)


def same_json(a: Any, b: Any) -> bool:
    """Deep equality of JSON-like data where numbers compare with a 1e-6 tolerance.

    Equal subtrees are compared at C speed (``==``); only differing ones are walked.
    """
    if a == b:
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)
    return False


def _entity(domain: Domain, kind: str) -> EntityKind:
    try:
        return domain.entities[kind]
    except KeyError:
        known = ", ".join(sorted(domain.entities))
        raise KeyError(f"domain {domain.name!r} has no entity kind {kind!r} (known: {known})") from None


def _fresh_id(rng: random.Random, kind: EntityKind, db: dict) -> str:
    if kind.new_id is not None:
        return kind.new_id(rng, db)
    taken = db.get(kind.collection) or {}
    prefix = kind.name[:3].lower() + "_"
    while True:
        candidate = prefix + "".join(str(rng.randrange(10)) for _ in range(6))
        if candidate not in taken:
            return candidate


def add(rng: random.Random, domain: Domain, db: dict, kind: str, fields: Mapping[str, Any] | None = None) -> dict:
    """Generate one ``kind`` record consistent with ``fields``, insert it, and return it."""
    ek = _entity(domain, kind)
    overrides = dict(fields or {})
    record = ek.generate(rng, db, overrides)
    record.update(overrides)
    ek.add(db, record)
    return record


MAX_SPAWN = 1000


def spawn(
    rng: random.Random,
    domain: Domain,
    db: dict,
    kind: str,
    count: int,
    fields_fn: FieldsFn | None = None,
) -> list[dict]:
    """``count`` new records of ``kind`` (at most :data:`MAX_SPAWN`); ``fields_fn()`` gives
    each one's fixed fields."""
    if not 0 <= int(count) <= MAX_SPAWN:
        raise ValueError(f"spawn of {count} {kind} records (0 to {MAX_SPAWN} allowed)")
    return [add(rng, domain, db, kind, fields_fn() if fields_fn else None) for _ in range(int(count))]


def clone(
    rng: random.Random,
    domain: Domain,
    db: dict,
    kind: str,
    record: Mapping[str, Any],
    fields: Mapping[str, Any] | None = None,
) -> dict:
    """A copy of ``record`` with ``fields`` changed and a fresh id unless ``fields`` gives one."""
    ek = _entity(domain, kind)
    new = copy_json(dict(record))
    new.update(fields or {})
    if ek.id_field and ek.id_field not in (fields or {}):
        new[ek.id_field] = _fresh_id(rng, ek, db)
    ek.add(db, new)
    return new


def state_hash(db: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of ``db``: sorted keys, floats rounded to 6 decimals and
    integral floats written as ints (so ``100.0`` and ``100``, ``0.1 + 0.2`` and ``0.3`` hash alike)."""
    data = json.dumps(_canon(db), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def _canon(x: Any) -> Any:
    """Floats rounded to 6 decimals, integral ones as ints (what :func:`state_hash` hashes)."""
    if isinstance(x, float):
        if x != x or x in (math.inf, -math.inf):
            return x
        y = round(x, 6)
        return int(y) if y.is_integer() else y
    if isinstance(x, dict):
        return {k: _canon(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_canon(v) for v in x]
    return x


def require(cond: Any, msg: str) -> None:
    """Inline-tool precondition: raise ``ToolError(msg)`` unless ``cond`` holds."""
    if not cond:
        raise ToolError(msg)


def find(records: Iterable[Any] | Mapping[str, Any], pred: Callable[[Any], Any], msg: str) -> Any:
    """The first record satisfying ``pred`` (``ToolError(msg)`` when none does)."""
    items = records.values() if isinstance(records, Mapping) else records
    for r in items:
        if pred(r):
            return r
    raise ToolError(msg)
