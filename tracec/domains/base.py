"""The contract every domain offers: entity kinds (schemas + generators) and tools.

A *domain* is the target's world: its database layout, its tools with the target's exact
names and JSON schemas, and its policy. Compiled capability environments generate a world
in the domain's layout and let the agent act on it through the domain's tools, so that
what is learned transfers to the target.

Databases are plain JSON-like dicts. A collection is ``db[collection][record_id] = record``
(or ``db[collection] = record`` for a singleton kind such as phone settings).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Callable, Mapping

from tracec.core.types import T
from tracec.domains.jsoncopy import deep_copy
from tracec.domains.schema import Schema


class ToolError(Exception):
    """Raised by a tool for a user-visible failure; the agent sees ``Error: <message>``."""


ToolFunc = Callable[..., Any]
"""func(db, **arguments) -> JSON-serialisable result. Tools may return live records of the db
(no defensive copy, for speed; a write tool the record it changed): callers serialise a result
before the db changes again, or use :meth:`Domain.call`, which returns a copy."""
Generator = Callable[[random.Random, dict, Mapping[str, Any]], dict]
"""generate(rng, db, overrides) -> a new, consistent record (not yet inserted).

``overrides`` are the field values the spec fixed; the generator must build the other fields
consistently with them (e.g. payment history from the fixed user's payment methods)."""


@dataclass(frozen=True)
class Tool:
    """One tool of a domain, named and typed exactly as the target names and types it."""

    name: str
    description: str
    parameters: dict  # JSON Schema: {"type": "object", "properties": {...}, "required": [...]}
    func: ToolFunc
    writes: bool  # mutates the database

    def openai_schema(self) -> dict:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


def _default_insert(kind: "EntityKind", db: dict, record: dict) -> None:
    if kind.singleton:
        db[kind.collection] = record
    else:
        db.setdefault(kind.collection, {})[record[kind.id_field]] = record


@dataclass(frozen=True)
class EntityKind:
    """A kind of record in the domain's database (user, flight, reservation, order...)."""

    name: str  # the name used in specs: user[3..5]
    collection: str  # key in the db: "users"
    id_field: str  # "user_id" ("" for singletons)
    fields: Mapping[str, T]  # static schema for the spec checker
    generate: Generator
    new_id: Callable[[random.Random, dict], str] | None = None  # fresh unused id
    insert: Callable[["EntityKind", dict, dict], None] = _default_insert  # keeps back-links
    singleton: bool = False
    description: str = ""

    def add(self, db: dict, record: dict) -> None:
        self.insert(self, db, record)

    def records(self, db: dict) -> list[dict]:
        coll = db.get(self.collection)
        if coll is None:
            return []
        return [coll] if self.singleton else list(coll.values())


@dataclass(frozen=True)
class Domain:
    """A target world: entity kinds, tools, policy, and named Python functions for specs."""

    name: str
    description: str
    policy: str
    tools: Mapping[str, Tool]
    entities: Mapping[str, EntityKind]
    empty_db: Callable[[], dict]
    functions: Mapping[str, ToolFunc] = field(default_factory=dict)  # spec escape hatch
    ends_episode: frozenset[str] = frozenset()  # tools that end the conversation
    schema: Schema = field(default_factory=Schema)  # references between records, enums
    # tables most episodes only read: episodes copy them on first use (a speed hint only;
    # writes to them are as safe as to any table)
    read_mostly: frozenset[str] = frozenset()
    # tables of records that tools reach one by one, by id: episodes copy each record on first
    # use (a speed hint only, like read_mostly)
    record_tables: frozenset[str] = frozenset()

    def tool_schemas(self) -> list[dict]:
        return [t.openai_schema() for t in self.tools.values()]

    def call(self, db: dict, name: str, arguments: Mapping[str, Any]) -> Any:
        """Run a tool and return a copy of its result, which later calls do not change (raises
        ToolError on a tool-level failure, KeyError if unknown)."""
        return deep_copy(self.tools[name].func(db, **arguments))


def fresh_id(rng: random.Random, taken: Any, make: Callable[[random.Random], str]) -> str:
    """``make(rng)`` drawn until it is not in ``taken`` (a collection or a set of ids)."""
    while True:
        candidate = make(rng)
        if candidate not in taken:
            return candidate


def new_id_in(collection: str, make: Callable[[random.Random], str]) -> Callable[[random.Random, dict], str]:
    """An ``EntityKind.new_id``: ``make(rng)`` unused in ``db[collection]``."""
    return lambda rng, db: fresh_id(rng, db.get(collection) or {}, make)


def scan(table: Mapping[str, Any]) -> Any:
    """``table.items()`` for a search that only reads the records and returns none of them
    (an id, a JSON text): on an episode's lazy copy of a table (``tracec.runtime.world``'s
    ``LazyWorld``, a dict) the records no code has read yet are its shared originals, read here
    without a copy each; never write what it yields, nor hand it out."""
    return dict.items(table) if isinstance(table, dict) else table.items()


def lookup(db: Mapping[str, Any], collection: str, key: Any, missing: str) -> dict:
    """``db[collection][key]``; ``ValueError(missing)`` when there is none (the target's wording)."""
    records = db[collection]
    if key not in records:
        raise ValueError(missing)
    return records[key]


# --------------------------------------------------------------------------- tools from data

DATA = resources.files("tracec.domains") / "data"


def read_data(name: str) -> str:
    """Text of a file in ``tracec/domains/data``."""
    return (DATA / name).read_text(encoding="utf-8")


def tools_from_data(domain: str, funcs: Mapping[str, ToolFunc],
                    wrap: Callable[[ToolFunc], ToolFunc] | None = None) -> dict[str, Tool]:
    """The domain's tools, in the order and with the names, descriptions, JSON schemas and
    read/write kind of ``data/<domain>_tools.json`` (``[{"schema": {"type": "function",
    "function": {...}}, "type": "read"|"write"}]``); ``funcs`` implements exactly those names,
    ``wrap`` adapts each implementation (e.g. the target's error semantics)."""
    specs = json.loads(read_data(f"{domain}_tools.json"))
    names = [s["schema"]["function"]["name"] for s in specs]
    if set(names) != set(funcs):
        raise RuntimeError(f"{domain}: tools {sorted(set(names) ^ set(funcs))} mismatch the declared list")
    tools = {}
    for spec in specs:
        fn = spec["schema"]["function"]
        func = funcs[fn["name"]]
        tools[fn["name"]] = Tool(name=fn["name"], description=fn["description"],
                                 parameters=fn["parameters"],
                                 func=wrap(func) if wrap is not None else func,
                                 writes=spec["type"] == "write")
    return tools
