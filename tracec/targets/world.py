"""A loaded τ² domain: tracec's domain tools over the real ``db.json``, the policy, the tasks.

Tool calls run like τ²-bench runs them: the tool function is called with the arguments as
given; any exception becomes the observation ``Error: <message>``; results are serialised to
JSON text (strings stay as they are).

Database comparison works on *deltas*: the records that differ from the pristine database.
Comparing deltas with ``==`` gives the same verdict as τ²'s hash of the whole database (the
untouched records are equal on both sides) and costs a fraction of it.
"""

from __future__ import annotations

import hashlib
import json
import pickle
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

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


def db_delta(pristine: dict, db: dict) -> dict:
    """``{collection: {record_id: record | "__deleted__"}}`` for records that differ."""
    delta: dict[str, Any] = {}
    for coll in set(pristine) | set(db):
        before, after = pristine.get(coll, _DELETED), db.get(coll, _DELETED)
        if before is after:
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


def _is_table(before: dict, after: dict) -> bool:
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
    _frozen: bytes = field(repr=False, default=b"")
    _gold_cache: dict[str, dict] = field(repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._frozen = pickle.dumps(self.pristine, protocol=pickle.HIGHEST_PROTOCOL)

    def fresh_db(self) -> dict:
        """A private copy of the initial database."""
        return pickle.loads(self._frozen)

    def call(self, db: dict, name: str, arguments: dict) -> tuple[str, bool]:
        """Run one tool call on ``db``: ``(observation text, error?)``."""
        tool = self.domain.tools.get(name)
        if tool is None:
            return f"Error: Tool '{name}' not found.", True
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
    from tracec.domains import get_domain

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
    import importlib

    from tracec.domains import DOMAIN_MODULES

    try:
        return importlib.import_module(DOMAIN_MODULES[domain_name])
    except ModuleNotFoundError as exc:
        raise tdata.DataError(f"domain {domain_name!r} is not available: {exc}") from None
