"""World helpers: create records through the domain contract, copy and hash databases."""

from __future__ import annotations

import gc
import hashlib
import itertools
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
    shares = False  # each copy is whole: it shares nothing with another (as FrozenWorld.shares)

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


_CONTAINERS = frozenset({dict, list, tuple, set, frozenset})
_is_container = _CONTAINERS.__contains__
_CONTAINER_BASES = tuple(_CONTAINERS)


def _containers(value: Any) -> set[int]:
    """ids of the containers reachable from ``value`` (itself included); the walk runs at C
    speed level by level (``gc.get_referents``, filtered by type without a Python loop)."""
    seen = {id(value)}
    frontier = [value]
    while frontier:
        refs = gc.get_referents(*frontier)
        frontier = list(itertools.compress(refs, map(_is_container, map(type, refs))))
        seen.update(map(id, frontier))
    return seen


def _tree(world: dict) -> bool:
    """No container is reachable from ``world`` twice (one walk, level by level at C speed):
    then no table or record shares one with another. False (walk part by part) for a table
    of a container subclass, which the part-by-part walks enter and this one would not."""
    if any(isinstance(v, _CONTAINER_BASES) and not _is_container(type(v)) for v in world.values()):
        return False
    seen = {id(world)}
    frontier = [world]
    while frontier:
        refs = gc.get_referents(*frontier)
        frontier = list(itertools.compress(refs, map(_is_container, map(type, refs))))
        before = len(seen)
        seen.update(map(id, frontier))
        if len(seen) != before + len(frontier):  # one reached twice (or again)
            return False
    return True


def _apart_tables(world: dict, names: list[str], tables: list[str]) -> tuple[list[str], list[str]]:
    """The lazy tables (``names``) and record tables (``tables``) that can be copied on their
    own: no dict or list of such a table (of any one record of a record table) is reachable
    from another table or record. A table that shares one goes back to the rest of the world,
    copied at once with what it shares (keeping the link)."""
    if _tree(world):  # the usual world: nothing shared, every table apart
        return list(names), list(tables)
    owner: list[str] = []
    sets: list[set[int]] = []
    for k in names:
        owner.append(k)
        sets.append(_containers(world[k]))
    for k in tables:
        for r in world[k].values():
            owner.append(k)
            sets.append(_containers(r))
    rest = [v for k, v in world.items() if k not in names and k not in tables]
    owner.append("")
    sets.append(_containers(rest) - {id(rest)})
    shared: set[str] = set()
    for order in (range(len(sets)), range(len(sets) - 1, -1, -1)):  # overlap with earlier/later parts
        seen: set[int] = set()
        for i in order:
            if not seen.isdisjoint(sets[i]):
                shared.add(owner[i])
            seen |= sets[i]
    return [k for k in names if k not in shared], [k for k in tables if k not in shared]


# the read-only originals of recent table and record blobs: the next task of the same seed
# (the same world, its flights and most records untouched) shares them instead of
# deserialising its own; nothing ever writes an original (see LazyWorld)
_PRISTINE: dict[bytes, Any] = {}
_PRISTINE_BYTES = [0]  # the blobs' total size
_PRISTINE_MAX = 1 << 18  # forgotten all at once past 256 kB of blobs (a few worlds)


def _pristine(blob: bytes) -> Any:
    """The shared read-only original of ``blob``."""
    value = _PRISTINE.get(blob)
    if value is None:
        if _PRISTINE_BYTES[0] > _PRISTINE_MAX:
            _PRISTINE.clear()
            _PRISTINE_BYTES[0] = 0
        value = _PRISTINE[blob] = marshal.loads(blob)
        _PRISTINE_BYTES[0] += len(blob)
    return value


class FrozenWorld:
    """A task's initial world (``{table: records}``), kept for the many copies an episode makes
    (the gold replay, each episode, each probe's replay).

    ``lazy`` names the tables most episodes only read (the domain's ``read_mostly``, e.g. the
    airline's flights, 80 % of its world). Each of those is serialised on its own and a
    :meth:`copy` (a :class:`LazyWorld`) starts out sharing one read-only deserialised original
    of it, deserialising its own copy the first time code reads the table. ``records`` names
    tables of records (``{id: {...}}``, the domain's ``record_tables``) that tools reach one
    record at a time: each copy has its own such table, a :class:`LazyWorld` whose records
    are the shared originals until code reads one (an episode reads a few reservations and
    users, not all of them). The other tables are copied at once, as one. Comparing two copies
    compares the untouched tables and records by identity. A lazy table or a record table that
    shares a dict or list with another table or record is copied with the rest (keeping the
    link); without any table left to share (or when marshal cannot store the world) the world
    is copied whole, as by :class:`Frozen`.
    """

    __slots__ = ("_blobs", "_keys", "_pristine", "_record_blobs", "_record_pristine", "_rest",
                 "_whole")

    def __init__(self, world: Any, lazy: Iterable[str] = (), records: Iterable[str] = (),
                 originals: bool = False):
        """``originals``: ``world``'s own lazy tables and records are the copies' shared
        originals (instead of deserialised ones): for a world no code writes to once frozen
        (a reset's initial world)."""
        self._whole: Frozen | None = None
        self._blobs: dict[str, bytes] = {}
        self._pristine: dict[str, Any] = {}
        self._record_blobs: dict[str, dict[Any, bytes]] = {}
        self._record_pristine: dict[str, dict[Any, Any]] = {}
        self._rest = b""
        self._keys: tuple = ()
        plain = type(world) is dict
        names = [k for k in lazy if plain and k in world]
        tables = [k for k in records if plain and k in world and k not in names
                  and type(world[k]) is dict and world[k] and all(type(r) is dict for r in world[k].values())]
        try:
            if not names and not tables:
                raise ValueError("no table to share")
            names, tables = _apart_tables(world, names, tables)
            if not names and not tables:
                raise ValueError("tables share a container")
            rest = {k: v for k, v in world.items() if k not in names and k not in tables}
            dumps = marshal.dumps
            self._blobs = {k: dumps(world[k]) for k in names}
            self._record_blobs = {k: {i: dumps(r) for i, r in world[k].items()} for k in tables}
            self._rest = dumps(rest)
        except ValueError:
            self._blobs, self._record_blobs, self._whole = {}, {}, Frozen(world)
            return
        if originals:
            self._pristine = {k: world[k] for k in self._blobs}
            self._record_pristine = {k: dict(world[k]) for k in self._record_blobs}
        else:
            self._pristine = {k: _pristine(b) for k, b in self._blobs.items()}
            self._record_pristine = {k: {i: _pristine(b) for i, b in blobs.items()}
                                     for k, blobs in self._record_blobs.items()}
        self._keys = tuple(world)

    @property
    def shares(self) -> bool:
        """Whether copies share tables or records until first read (a :class:`LazyWorld`)."""
        return self._whole is None

    def copy(self) -> Any:
        """A fresh world equal to the frozen one; nothing done to it reaches any other copy."""
        if self._whole is not None:
            return self._whole.copy()
        rest = marshal.loads(self._rest)
        pristine, records, blobs = self._pristine, self._record_pristine, self._record_blobs
        out = {}
        for k in self._keys:
            if k in pristine:
                out[k] = pristine[k]
            elif k in records:
                out[k] = LazyWorld(records[k], blobs[k])
            else:
                out[k] = rest[k]
        return LazyWorld(out, self._blobs)


class LazyWorld(dict):
    """A world (or table) dict whose tables (records) are deserialised on first use (see
    :class:`FrozenWorld`).

    Until then a table's entry is the shared original, which only C-level reads see (``==``,
    ``len``); every Python-level way to reach a table's value (indexing, ``get``, ``values``,
    ``items``, iteration into ``dict(...)``/``{**...}``, ``copy``, pickling) first replaces it
    with the world's own copy, so the originals are never handed out and never written.
    """

    __slots__ = ("_blobs", "_pending")

    def __init__(self, tables: Mapping[str, Any], blobs: Mapping[str, bytes]):
        """``tables``: the world, its ``blobs`` tables still the shared originals."""
        super().__init__(tables)
        self._blobs = blobs
        self._pending = set(blobs)

    def _own(self, key: Any) -> None:
        if key in self._pending:
            self._pending.discard(key)
            dict.__setitem__(self, key, marshal.loads(self._blobs[key]))

    def _own_all(self) -> None:
        if self._pending:
            for key in list(self._pending):
                self._own(key)

    def __getitem__(self, key: Any) -> Any:
        if key in self._pending:
            self._own(key)
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        if key in self._pending:
            self._own(key)
        return dict.get(self, key, default)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        self._own(key)
        return dict.setdefault(self, key, default)

    def pop(self, key: Any, *default: Any) -> Any:
        self._own(key)
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[Any, Any]:
        self._own_all()
        return dict.popitem(self)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._pending.discard(key)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: Any) -> None:
        self._pending.discard(key)
        dict.__delitem__(self, key)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __ior__(self, other: Any) -> LazyWorld:
        self.update(other)
        return self

    def clear(self) -> None:
        self._pending.clear()
        dict.clear(self)

    def values(self) -> Any:
        self._own_all()
        return dict.values(self)

    def items(self) -> Any:
        self._own_all()
        return dict.items(self)

    def __iter__(self) -> Any:
        # overriding __iter__ also keeps dict(self) / {**self} off the raw-storage fast path:
        # they go through keys() and __getitem__
        return iter(dict.keys(self))

    def __reversed__(self) -> Any:
        return reversed(dict.keys(self))

    def copy(self) -> dict:
        return dict(self.items())

    def __or__(self, other: Any) -> dict:
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other: Any) -> dict:
        out = dict(other)
        out.update(self.items())
        return out

    def __reduce__(self) -> tuple:
        # deepcopy / pickle see a plain dict of the world's own tables
        return (dict, (dict(self.items()),))

    def __repr__(self) -> str:
        return repr(self.copy())


def peek(table: Mapping, key: Any, default: Any = None) -> Any:
    """``table.get(key, default)`` without copying: a :class:`LazyWorld` gives the shared
    original of an unread entry, to read and never to write (``json.dumps``, ``in``, ``==``)."""
    return dict.get(table, key, default) if isinstance(table, dict) else table.get(key, default)


def untouched(table: Any, key: Any) -> bool:
    """``table[key]`` is still its :class:`LazyWorld`'s shared original: no code has read it
    (so none has changed it) since the copy was made."""
    return type(table) is LazyWorld and key in table._pending


def fork(world: Any, *also: Any) -> tuple[Any, ...] | None:
    """A copy of an episode's world that nothing done to it or to ``world`` reaches, equal to
    ``world`` value for value, with the same sharing between its values, and copies of
    ``also`` (what else may share a value with the world: the episode's call arguments), made
    together so that what they share with the world they share with the copy: ``(world,
    *also)``; None when it cannot be made (a value marshal cannot store). A
    :class:`LazyWorld` copies only what code has read (in one ``marshal`` round trip); its
    unread tables and records stay the shared originals."""
    if type(world) is dict:
        try:
            return tuple(marshal.loads(marshal.dumps((world, *also))))
        except ValueError:
            return None
    if type(world) is not LazyWorld:
        return None
    owned: list[Any] = []
    seen: set[int] = set()

    def plan(lazy: LazyWorld) -> tuple[LazyWorld, list[tuple[Any, int, Any]]]:
        # each entry: (key, 0, the shared original) | (key, 1, a nested plan) | (key, 2, the
        # index of its value in ``owned``)
        if id(lazy) in seen:  # one nested table reached twice: its link cannot be kept here
            raise ValueError("a lazy table reached twice")
        seen.add(id(lazy))
        entries: list[tuple[Any, int, Any]] = []
        pending = lazy._pending
        for key, value in dict.items(lazy):
            if key in pending:
                entries.append((key, 0, value))
            elif type(value) is LazyWorld:
                entries.append((key, 1, plan(value)))
            else:
                entries.append((key, 2, len(owned)))
                owned.append(value)
        return lazy, entries

    def build(lazy: LazyWorld, entries: list[tuple[Any, int, Any]], values: list[Any]) -> LazyWorld:
        tables = {key: (value if kind == 0 else build(*value, values) if kind == 1 else values[value])
                  for key, kind, value in entries}
        out = LazyWorld(tables, lazy._blobs)
        out._pending = set(lazy._pending)
        return out

    try:
        root = plan(world)
        values = marshal.loads(marshal.dumps((owned, also)))
    except ValueError:
        return None
    return (build(*root, values[0]), *values[1])


def same_json(a: Any, b: Any) -> bool:
    """Deep equality of JSON-like data where numbers compare with a 1e-6 tolerance.

    Equal subtrees are compared at C speed (``==``); only differing ones are walked.
    """
    return a == b or _same_unequal(a, b)


def _same_unequal(a: Any, b: Any) -> bool:
    """:func:`same_json` of two values that are not ``==``."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return False
        # dict.items: read the stored values as they are (a LazyWorld need not copy its tables)
        get = dict.__getitem__
        for k, v in dict.items(a):
            w = get(b, k)
            if not (v == w or _same_unequal(v, w)):
                return False
        return True
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return False
        for x, y in zip(a, b):
            if not (x == y or _same_unequal(x, y)):
                return False
        return True
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


_WRITES = [0]  # records inserted by add and clone (the only writes spec code makes to a world)


def writes() -> int:
    """How many records :func:`add` and :func:`clone` (``spawn`` too) have inserted so far: a
    task function that leaves it unchanged left its world as it was drawn."""
    return _WRITES[0]


def add(rng: random.Random, domain: Domain, db: dict, kind: str, fields: Mapping[str, Any] | None = None) -> dict:
    """Generate one ``kind`` record consistent with ``fields``, insert it, and return it."""
    _WRITES[0] += 1
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
    _WRITES[0] += 1
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
        return {k: _canon(v) for k, v in dict.items(x)}  # read only (a LazyWorld is not copied)
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
