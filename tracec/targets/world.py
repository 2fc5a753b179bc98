"""A loaded τ² domain: tracec's domain tools over the real ``db.json``, the policy, the tasks.

Tool calls run like τ²-bench runs them: the tool function is called with the arguments as
given; any exception becomes the observation ``Error: <message>``; results are serialised to
JSON text (strings stay as they are).

Episodes share the pristine database: :func:`cow_db` gives each one tables that copy a record
the first time it is handed out (:class:`CowTable`). Database comparison works on *deltas*: the
records that differ from the pristine database. Comparing deltas with ``==`` gives the same
verdict as τ²'s hash of the whole database (untouched records are equal on both sides) and
costs a fraction of it.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import json
import marshal
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from tracec.domains import DOMAIN_MODULES, get_domain
from tracec.domains.base import Domain
from tracec.targets import data as tdata

_DELETED = "__deleted__"


def serialize_result(result: Any) -> str:
    """A tool result as the observation text τ² shows the agent."""
    if isinstance(result, str):
        return result
    if hasattr(result, "model_dump"):
        result = result.model_dump()
    return json.dumps(result, default=str)


def clone(value: Any) -> Any:
    """A deep copy of a JSON-like value (marshal is ~5x faster than ``copy.deepcopy``)."""
    try:
        return marshal.loads(marshal.dumps(value))
    except ValueError:  # not a plain JSON-like value
        return copy.deepcopy(value)


class CowTable(dict):
    """A table that shares the pristine records until one is touched (copy on access).

    Every path that hands out a record (``[k]``, ``get``, ``values``, ``items``, ``pop``...)
    first replaces it by a private copy, so the pristine database is never mutated; the dict
    storage always holds the table's current state. ``owned`` and ``deleted`` tell
    :func:`db_delta` which records can differ from the pristine ones.
    """

    __slots__ = ("_all", "_view", "base", "deleted", "owned")

    def __init__(self, base: dict) -> None:
        dict.__init__(self, base)
        self.base = base
        self.owned: set = set()
        self.deleted: set = set()
        self._all = False
        self._view: dict | None = base  # what read tools see; None: rebuild on the next read

    def read_only(self) -> dict:
        """The current records as a plain dict, without copy-on-access (for read-only tools).

        The pristine table itself while nothing was touched; otherwise a shallow copy of the
        current storage, kept until the table changes again."""
        if self._view is None:
            self._view = dict(self)
        return self._view

    def _own(self, key: Any) -> None:
        if key not in self.owned and dict.__contains__(self, key):
            dict.__setitem__(self, key, clone(dict.__getitem__(self, key)))
            self.owned.add(key)
            self._view = None

    def _own_all(self) -> None:
        if not self._all:
            for key in list(dict.keys(self)):
                self._own(key)
            self._all = True

    def __getitem__(self, key: Any) -> Any:
        self._own(key)
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if dict.__contains__(self, key) else default

    def __setitem__(self, key: Any, value: Any) -> None:
        dict.__setitem__(self, key, value)
        self.owned.add(key)
        self.deleted.discard(key)
        self._view = None

    def __delitem__(self, key: Any) -> None:
        dict.__delitem__(self, key)
        self.owned.discard(key)
        self.deleted.add(key)
        self._view = None

    def pop(self, key: Any, *default: Any) -> Any:
        if dict.__contains__(self, key):
            value = self[key]
            del self[key]
            return value
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple:
        key = next(reversed(dict.keys(self)))
        return key, self.pop(key)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if not dict.__contains__(self, key):
            self[key] = default
        return self[key]

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def clear(self) -> None:
        self.deleted |= set(dict.keys(self))
        self.owned.clear()
        dict.clear(self)
        self._view = None

    def values(self):  # type: ignore[override]
        self._own_all()
        return dict.values(self)

    def items(self):  # type: ignore[override]
        self._own_all()
        return dict.items(self)

    def copy(self) -> dict:
        return {k: clone(v) for k, v in dict.items(self)}

    def __deepcopy__(self, memo: dict) -> dict:
        return self.copy()

    def __reduce__(self):
        return (dict, (self.copy(),))

    def __or__(self, other: Any) -> dict:
        return {**self.copy(), **other}

    def __ior__(self, other: Any) -> CowTable:
        self.update(other)
        return self


def read_view(db: dict) -> dict:
    """The current state without copy-on-access, for read-only tools (scans cost nothing).

    Read tools must not mutate what they read (τ²'s READ tools do not); results are serialised
    before anything else runs. A table's view is reused until the table changes
    (:meth:`CowTable.read_only`), so a read costs nothing per record.
    """
    return {k: v.read_only() if isinstance(v, CowTable) else v for k, v in db.items()}


def cow_db(pristine: dict) -> dict:
    """A private view of ``pristine``: tables copy their records on first access."""
    return {
        coll: CowTable(table) if _is_table(table, table) else clone(table)
        for coll, table in pristine.items()
    }


def db_delta(pristine: dict, db: dict) -> dict:
    """``{collection: {record_id: record | "__deleted__"}}`` for records that differ."""
    delta: dict[str, Any] = {}
    for coll in set(pristine) | set(db):
        before, after = pristine.get(coll, _DELETED), db.get(coll, _DELETED)
        if before is after:
            continue
        if isinstance(after, CowTable) and after.base is before:
            changed = {k: dict.__getitem__(after, k) for k in after.owned
                       if dict.__getitem__(after, k) != before.get(k, _DELETED)}
            changed.update({k: _DELETED for k in after.deleted if k in before})
            if changed:
                delta[coll] = changed
            continue
        if isinstance(before, dict) and isinstance(after, dict) and _is_table(before, after):
            changed = {}
            for rid in set(before) | set(after):
                a = after.get(rid, _DELETED)
                if before.get(rid, _DELETED) != a:
                    changed[rid] = a
            if changed:
                delta[coll] = changed
        elif before != after:
            delta[coll] = after
    return delta


def _is_table(before: Any, after: Any) -> bool:
    if not isinstance(before, dict) or not isinstance(after, dict):
        return False
    sample = next(iter(before.values()), None) if before else next(iter(after.values()), None)
    return isinstance(sample, dict)


def delta_hash(delta: dict) -> str:
    """A short stable hash of a delta (equal deltas ⇔ equal databases)."""
    text = json.dumps(delta, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class Tau2World:
    """One τ² domain, loaded once and shared by envs, graders and the oracle."""

    domain_name: str
    domain: Domain
    policy: str
    tasks: dict[str, tdata.Task]
    pristine: dict
    _gold_cache: dict[str, dict] = field(repr=False, default_factory=dict)

    def fresh_db(self) -> dict:
        """A private, copy-on-access view of the initial database (the pristine one is shared)."""
        return cow_db(self.pristine)

    def call(self, db: dict, name: str, arguments: dict) -> tuple[str, bool]:
        """Run one tool call on ``db``: ``(observation text, error?)``."""
        tool = self.domain.tools.get(name)
        if tool is None:
            return f"Error: Tool '{name}' not found.", True
        if not tool.writes:
            db = read_view(db)
        try:
            return serialize_result(tool.func(db, **arguments)), False
        except Exception as exc:  # τ² turns every tool exception into an observation
            return f"Error: {exc}", True

    def is_write(self, name: str) -> bool:
        tool = self.domain.tools.get(name)
        return tool is not None and tool.writes

    def gold_delta(self, task: tdata.Task) -> dict:
        """The delta after replaying the task's gold actions on a fresh database (cached)."""
        key = task.id + "\x00" + json.dumps(
            [(a.name, a.arguments) for a in task.gold_actions], sort_keys=True, default=str
        )
        if key not in self._gold_cache:
            db = self.fresh_db()
            for action in task.gold_actions:
                if action.requestor == "assistant":
                    self.call(db, action.name, action.arguments)
            self._gold_cache[key] = db_delta(self.pristine, db)
        return self._gold_cache[key]

    def replay_delta(self, calls: list[tuple[str, dict]]) -> dict:
        """The delta after replaying the write calls among ``calls`` on a fresh database."""
        db = self.fresh_db()
        for name, args in calls:
            if self.is_write(name):
                self.call(db, name, args)
        return db_delta(self.pristine, db)


def load_world(
    domain_name: str,
    data_dir: str | Path | None = None,
    tasks_file: str = "tasks.json",
) -> Tau2World:
    """Load a τ² domain from the data directory (see :func:`tracec.targets.data.resolve_data_dir`)."""
    return _load_world(domain_name, str(tdata.resolve_data_dir(data_dir)), tasks_file)


@lru_cache(maxsize=4)
def _load_world(domain_name: str, data_dir: str, tasks_file: str) -> Tau2World:
    if domain_name not in tdata.DOMAINS:
        raise tdata.DataError(
            f"unknown τ² domain {domain_name!r} (have: {', '.join(tdata.DOMAINS)})"
        )
    module = _domain_module(domain_name)
    domain = get_domain(domain_name)
    root = Path(data_dir)
    db = module.load_db(tdata.db_path(root, domain_name))
    tasks = {t.id: t for t in tdata.load_tasks(root, domain_name, tasks_file)}
    policy = tdata.load_policy(root, domain_name)
    return Tau2World(domain_name, domain, policy, tasks, db)


def _domain_module(domain_name: str):
    try:
        return importlib.import_module(DOMAIN_MODULES[domain_name])
    except ModuleNotFoundError as exc:
        raise tdata.DataError(f"domain {domain_name!r} is not available: {exc}") from None
