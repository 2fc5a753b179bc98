"""Helpers shared by the τ²-bench airline and retail domains.

- tool metadata (names, descriptions, JSON schemas, read/write kind) exactly as τ²-bench shows
  them, stored in ``data/<domain>_tools.json`` (generated from τ²'s own ``Tool.openai_schema``);
- :func:`tau2_tool`, which makes a plain function fail the way a τ² tool fails (any exception
  becomes a :class:`ToolError` with τ²'s message text);
- :func:`conform` / :func:`check`, which bring a record into τ²'s ``model_dump()`` layout and
  validate it against a domain's declared field types;
- :func:`db_hash`, τ²'s database hash; small deterministic generators of names and addresses.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import random
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from tracec import files
from tracec.core.types import ANY, BOOL, FLOAT, INT, NONE, STR, ListT, MapT, ObjT, Prim, T
from tracec.domains.base import (
    Tool,
    ToolError,
    ToolFunc,
    fresh_id,
    read_data,  # noqa: F401 - the domains read their data via common
    tools_from_data,
)

# --------------------------------------------------------------------------- databases


def conform_db(db: Mapping[str, Any], collections: tuple[str, ...], record_types: Mapping[str, T],
               layout: Layout) -> dict:
    """``db`` in the exact shape of τ²'s ``<Domain>DB.model_dump()``: every record of
    ``collections`` (in τ²'s order) conformed to its record type."""
    return {coll: {k: conform(r, record_types[coll], layout) for k, r in db.get(coll, {}).items()}
            for coll in collections}


def load_db(path: str | Path, domain: str) -> dict:
    """A τ² ``db.json`` (a JSON object) as a plain dict, before conforming."""
    return files.read_json(path, f"τ² {domain} db file", expect=dict)


# --------------------------------------------------------------------------- tools


def tau2_tool(toolkit: str, func: ToolFunc) -> ToolFunc:
    """Wrap ``func(db, **args)`` so that it fails like τ²'s ``Environment.get_response``.

    τ² turns every exception raised by a tool into ``Error: {exception}``; we raise
    :class:`ToolError` with the same text. Argument mismatches read like τ²'s bound methods
    (``AirlineTools.get_user_details() missing 1 required positional argument: 'user_id'``).
    """
    func = types.FunctionType(
        func.__code__, func.__globals__, func.__name__, func.__defaults__, func.__closure__
    )  # a copy: shared helpers (calculate, ...) get each toolkit's qualname
    func.__qualname__ = f"{toolkit}.{func.__name__}"

    @functools.wraps(func)
    def run(db: dict, **arguments: Any) -> Any:
        try:
            return func(db, **arguments)
        except ToolError:
            raise
        except Exception as exc:  # noqa: BLE001 - τ² reports every failure to the agent
            raise ToolError(str(exc)) from exc

    return run


def build_tools(domain: str, toolkit: str, funcs: Mapping[str, ToolFunc]) -> dict[str, Tool]:
    """Tools in τ²'s order with τ²'s schemas (``data/<domain>_tools.json``), failing like τ²."""
    return tools_from_data(domain, funcs, wrap=lambda func: tau2_tool(toolkit, func))


MAX_EXPRESSION = 1000  # characters; τ²'s expressions are short, and the bound keeps ints small

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b,
    ast.Pow: lambda a, b: float(a) ** float(b),  # in floats: 9**9**9 overflows, never hangs
}


def _arith(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _arith(node.operand)
        return -value if isinstance(node.op, ast.USub) else +value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_arith(node.left), _arith(node.right))
    raise ValueError("Invalid expression")


def calculate(db: dict, expression: str) -> str:
    """τ²'s ``calculate``: arithmetic on digits, operators, parentheses and spaces (τ² uses
    ``eval``; this walks the parsed expression instead, so ``9**9**9`` or deep parentheses
    fail fast instead of hanging)."""
    if not all(char in "0123456789+-*/(). " for char in expression):
        raise ValueError("Invalid characters in expression")
    if len(expression) > MAX_EXPRESSION:
        raise ValueError(f"Expression longer than {MAX_EXPRESSION} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (RecursionError, MemoryError):
        raise ValueError("Expression nested too deeply") from None
    return str(round(float(_arith(tree.body)), 2))


def transfer_to_human_agents(db: dict, summary: str) -> str:
    """τ²'s ``transfer_to_human_agents``: ends the conversation."""
    return "Transfer successful"


def db_hash(db: Mapping[str, Any]) -> str:
    """τ²'s ``get_dict_hash(db.model_dump())`` (the DB check compares these)."""
    return hashlib.sha256(json.dumps(db, sort_keys=True, default=str).encode()).hexdigest()


# --------------------------------------------------------------------------- layout


@dataclass(frozen=True)
class Layout:
    """What :class:`ObjT` alone cannot say about τ²'s pydantic models.

    ``nullable[obj]``: fields that default to ``None`` (present in ``model_dump()`` as null).
    ``optional[obj]``: fields that only some members of a union carry (absent otherwise).
    """

    nullable: Mapping[str, frozenset[str]] = field(default_factory=dict)
    optional: Mapping[str, frozenset[str]] = field(default_factory=dict)


def conform(value: Any, t: T, layout: Layout) -> Any:
    """``value`` in τ²'s ``model_dump()`` shape: declared key order, floats, null defaults.

    Runs a plan compiled once per (type, layout) (world generation conforms every record);
    :func:`conform_plain` is the reference it must equal."""
    return _plan(t, layout)(value)


def conform_plain(value: Any, t: T, layout: Layout) -> Any:
    """The straightforward recursive form of :func:`conform`."""
    if not isinstance(value, (dict, list)):  # a leaf: only an int where a float belongs changes
        if isinstance(value, int) and not isinstance(value, bool) and t == FLOAT:
            return float(value)
        return value
    if isinstance(t, ObjT) and isinstance(value, dict):
        nullable = layout.nullable.get(t.name, frozenset())
        out = {}
        for name, ft in t.fields:
            if name in value:
                v = value[name]
                out[name] = None if v is None and name in nullable else conform_plain(v, ft, layout)
            elif name in nullable:
                out[name] = None
        out.update({k: v for k, v in value.items() if k not in out})
        return out
    if isinstance(t, MapT) and isinstance(value, dict):
        return {k: conform_plain(v, t.value, layout) for k, v in value.items()}
    if isinstance(t, ListT) and isinstance(value, list):
        return [conform_plain(v, t.elem, layout) for v in value]
    return value


_PLANS: dict[tuple[int, int], tuple[T, Layout, Callable[[Any], Any]]] = {}


def _identity(value: Any) -> Any:
    return value


def _to_float(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def plan(t: T, layout: Layout) -> Callable[[Any], Any]:
    """``conform`` of a value of type ``t`` as a function of the value alone."""
    return _plan(t, layout)


def _plan(t: T, layout: Layout) -> Callable[[Any], Any]:
    entry = _PLANS.get((id(t), id(layout)))
    if entry is not None and entry[0] is t and entry[1] is layout:
        return entry[2]
    plan = _build_plan(t, layout)
    _PLANS[(id(t), id(layout))] = (t, layout, plan)
    return plan


def _build_plan(t: T, layout: Layout) -> Callable[[Any], Any]:
    if isinstance(t, ObjT):
        if not t.fields and not layout.nullable.get(t.name):
            return _generic(t, layout)
        return _obj_plan(t, layout)
    if isinstance(t, MapT):
        sub = _plan(t.value, layout)
        if sub is _identity:  # a copy of the mapping, at C speed

            def mapping_copy(value: Any) -> Any:
                return dict(value.items()) if isinstance(value, dict) else value

            return mapping_copy

        def mapping(value: Any) -> Any:
            if isinstance(value, dict):
                return {k: sub(v) for k, v in value.items()}
            return value

        return mapping
    if isinstance(t, ListT):
        sub = _plan(t.elem, layout)
        if sub is _identity:

            def seq_copy(value: Any) -> Any:
                return list(value) if isinstance(value, list) else value

            return seq_copy

        def seq(value: Any) -> Any:
            if isinstance(value, list):
                return [sub(v) for v in value]
            return value

        return seq
    return _to_float if t == FLOAT else _identity


def _obj_plan(t: ObjT, layout: Layout) -> Callable[[Any], Any]:
    """The plan of an object type as one generated function: each declared field in order
    (a leaf that stays as it is copied without a call), null defaults, then the undeclared
    keys; what :func:`conform_plain` does, without its per-field calls (world generation
    conforms every record)."""
    nullable = layout.nullable.get(t.name, frozenset())
    names: dict[str, Any] = {}
    body = ["def obj(value):", "    if not isinstance(value, dict):", "        return value",
            "    out = {}", "    found = 0"]
    for i, (name, ft) in enumerate(t.fields):
        sub, key, null = _plan(ft, layout), repr(name), name in nullable
        body += [f"    if {key} in value:", "        found += 1"]
        if sub is _identity:  # None stays None, a null default or not
            body.append(f"        out[{key}] = value[{key}]")
        else:
            names[f"sub{i}"] = sub
            body += [f"        v = value[{key}]",
                     f"        out[{key}] = None if v is None else sub{i}(v)" if null
                     else f"        out[{key}] = sub{i}(v)"]
        if null:
            body += ["    else:", f"        out[{key}] = None"]
    body += ["    if found < len(value):",
             "        out.update({k: v for k, v in value.items() if k not in out})",
             "    return out"]
    exec("\n".join(body), names)  # code built here from the field names, each repr()
    return names["obj"]


def _generic(t: T, layout: Layout) -> Callable[[Any], Any]:
    return lambda value: conform_plain(value, t, layout)


_PRIM_OK: dict[Prim, Callable[[Any], bool]] = {
    STR: lambda v: isinstance(v, str),
    INT: lambda v: isinstance(v, int) and not isinstance(v, bool),
    FLOAT: lambda v: isinstance(v, float),
    BOOL: lambda v: isinstance(v, bool),
    NONE: lambda v: v is None,
    ANY: lambda v: True,
}


def check(value: Any, t: T, layout: Layout, path: str = "$") -> list[str]:
    """Problems of ``value`` against the declared type (empty when it conforms)."""
    if isinstance(t, Prim):
        return [] if _PRIM_OK[t](value) else [f"{path}: expected {t}, got {value!r}"]
    if isinstance(t, ListT):
        if not isinstance(value, list):
            return [f"{path}: expected a list, got {value!r}"]
        return [p for i, v in enumerate(value) for p in check(v, t.elem, layout, f"{path}[{i}]")]
    if isinstance(t, MapT):
        if not isinstance(value, dict):
            return [f"{path}: expected an object, got {value!r}"]
        return [p for k, v in value.items() for p in check(v, t.value, layout, f"{path}.{k}")]
    if isinstance(t, ObjT):
        if not isinstance(value, dict):
            return [f"{path}: expected {t.name}, got {value!r}"]
        fields = t.field_map()
        nullable = layout.nullable.get(t.name, frozenset())
        optional = layout.optional.get(t.name, frozenset())
        problems = [f"{path}.{k}: not a field of {t.name}" for k in value if k not in fields]
        for name, ft in t.fields:
            if name not in value:
                if name not in optional:
                    problems.append(f"{path}.{name}: missing")
            elif not (value[name] is None and name in nullable):
                problems.extend(check(value[name], ft, layout, f"{path}.{name}"))
        return problems
    return []


# --------------------------------------------------------------------------- people

FIRST_NAMES = (
    "Aarav Ava Amelia Anya Chen Daiki Emma Ethan Evelyn Fatima Harper Isabella Ivan James Juan "
    "Lei Liam Lucas Mason Mei Mia Mohamed Noah Olivia Omar Raj Sofia Sophia Yara Yusuf Aisha "
    "Anna Arjun Chloe Emily Ethan Hiroshi Ingrid Ji-woo Kai Lina Mateo Nadia Priya Sara Tomas "
    "Yuki Zoe Camila Diego Elena Hana Jonas Leila Marco Nia Oscar Rosa Sven Tariq Valentina"
).split()
LAST_NAMES = (
    "Ahmed Anderson Brown Davis Garcia Gonzalez Hernandez Ito Jackson Johnson Kim Kovacs Lee Li "
    "Lopez Martin Martinez Moore Muller Nguyen Patel Rossi Sanchez Santos Silva Smith Sullivan "
    "Taylor Thomas Wilson Wright Yang Khan Jensen Novak Rahman Costa Dubois Fischer Kowalski "
    "Nakamura Okafor Petrov Romero Schmidt Tanaka Volkov Zhang"
).split()
STREETS = (
    "Sunset Drive", "Park Avenue", "Laurel Lane", "River Road", "Main Street", "Elm Street",
    "Oak Street", "Maple Drive", "Cedar Avenue", "Hillcrest Drive", "Lakeview Drive",
    "Willow Lane", "Pine Lane", "Spruce Street", "Highland Avenue", "Chestnut Street",
)
# city, state, zip prefix (3 digits)
CITIES = (
    ("Austin", "TX", "787"), ("Dallas", "TX", "752"), ("Houston", "TX", "770"),
    ("Denver", "CO", "802"), ("New York", "NY", "100"), ("Philadelphia", "PA", "191"),
    ("Los Angeles", "CA", "900"), ("San Francisco", "CA", "941"), ("San Diego", "CA", "921"),
    ("Seattle", "WA", "981"), ("Chicago", "IL", "606"), ("Boston", "MA", "021"),
    ("Phoenix", "AZ", "850"), ("Charlotte", "NC", "282"), ("Columbus", "OH", "432"),
    ("Jacksonville", "FL", "322"), ("Fort Worth", "TX", "761"), ("Indianapolis", "IN", "462"),
    ("San Antonio", "TX", "782"), ("Portland", "OR", "972"), ("Detroit", "MI", "482"),
)


def person_name(rng: random.Random) -> tuple[str, str]:
    return rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)


def user_id_for(rng: random.Random, first: str, last: str, taken: Mapping[str, Any]) -> str:
    """τ²-style user id ``mia_li_3668`` (lowercase, 4 digits), unused in ``taken``."""
    base = f"{first}_{last}".lower().replace("-", "").replace(" ", "")
    return fresh_id(rng, taken, lambda r: f"{base}_{r.randint(1000, 9999)}")


def email_for(rng: random.Random, first: str, last: str) -> str:
    return f"{first.lower()}.{last.lower()}{rng.randint(1000, 9999)}@example.com".replace(" ", "")


def address(rng: random.Random) -> dict:
    """A US address in τ²'s layout (``address2`` is a suite)."""
    city, state, prefix = rng.choice(CITIES)
    return {
        "address1": f"{rng.randint(100, 999)} {rng.choice(STREETS)}",
        "address2": f"Suite {rng.randint(100, 999)}",
        "city": city,
        "country": "USA",
        "state": state,
        "zip": f"{prefix}{rng.randint(0, 99):02d}",
    }


def dob(rng: random.Random, lo_year: int = 1950, hi_year: int = 2005) -> str:
    return f"{rng.randint(lo_year, hi_year)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def fresh_payment_id(rng: random.Random, source: str, taken: set[str]) -> str:
    """``credit_card_4421486``-style id (7 digits) not in ``taken``."""
    return fresh_id(rng, taken, lambda r: f"{source}_{r.randint(1000000, 9999999)}")


def insert_with_backlink(id_field: str, link_field: str):
    """An ``EntityKind.insert`` that stores the record and appends its id to its user's
    ``link_field`` list (τ²'s back-links: ``user.reservations``, ``user.orders``)."""

    def insert(kind, db: dict, record: dict) -> None:
        db.setdefault(kind.collection, {})[record[id_field]] = record
        user = db.get("users", {}).get(record["user_id"])
        if user is not None and record[id_field] not in user[link_field]:
            user[link_field].append(record[id_field])

    return insert
