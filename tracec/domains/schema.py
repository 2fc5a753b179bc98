"""The typed part of a domain contract: references between records and enumerated values.

Declared once per domain (next to its entity layouts) and used by the spec checker and by
``tracec describe``:

* a :class:`Ref` says that a record type's id field points at another entity kind, and gives
  the navigation name a spec uses: ``item.product`` for ``item.product_id``, ``leg.flight``
  for ``leg.flight_number``;
* ``enums`` list the values a string field can take (statuses, cabins, payment sources...),
  and ``keys`` the keys a map field can have (a flight date's ``prices`` per cabin);
* ``preconditions`` say, per tool, what the record an id argument names must be like before the
  call (a reservation that is not cancelled, an order that is pending): a gold call that breaks
  one is a spec bug `tracec check` locates at the `pick` that drew the record.

Types are named as in :mod:`tracec.core.types`: an entity kind (``order``) or a nested
record's ``ObjT`` name (``order_item``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Ref:
    """``<type>.<name>`` is the ``target`` record whose id is ``<type>.<field>``."""

    name: str  # the navigation name: product
    field: str  # the id field on the source record: product_id
    target: str  # the entity kind pointed at: product
    nullable: bool = False  # the id may be None (then navigation gives None)


@dataclass(frozen=True)
class Precondition:
    """Before the tool runs, the record its ``arg`` names in ``collection`` has ``field`` equal
    to one of ``values`` (``negate``: none of them), or, with ``contains``, containing one."""

    arg: str  # the tool argument holding the record's id: reservation_id
    collection: str  # the world collection: reservations
    kind: str  # the entity kind: reservation
    field: str  # status
    values: tuple[str | None, ...]
    negate: bool = False
    contains: bool = False  # a value matches when it is a substring of the field ("pending")
    text: str = ""  # in words: "the reservation is not cancelled"

    def condition(self) -> str:
        """The condition in spec syntax: ``reservation.status != "cancelled"``."""
        vals = [f'"{v}"' if v is not None else "None" for v in self.values]
        what = f"{self.kind}.{self.field}"
        if self.contains:
            return " or ".join(f"{v} in {what}" for v in vals)
        if len(vals) == 1:
            return f"{what} {'!=' if self.negate else '=='} {vals[0]}"
        return f"{what} {'not in' if self.negate else 'in'} ({', '.join(vals)})"

    def check(self, db: Mapping, args: Mapping) -> tuple[bool, object] | None:
        """(holds, the field's value), or None when the call names no such record."""
        rid = args.get(self.arg)
        table = db.get(self.collection)
        try:
            record = table.get(rid) if isinstance(table, Mapping) and isinstance(rid, str) else None
        except TypeError:
            return None
        if not isinstance(record, Mapping):
            return None
        value = record.get(self.field)
        if self.contains:
            hit = isinstance(value, str) and any(v is not None and v in value for v in self.values)
        else:
            hit = value in self.values
        return (hit != self.negate), value


def preconditions(*items: tuple[tuple[str, ...], Precondition]) -> dict[str, tuple[Precondition, ...]]:
    """``preconditions((("cancel_x", "update_x"), Precondition(...)), ...)`` per tool name."""
    out: dict[str, tuple[Precondition, ...]] = {}
    for tools, pre in items:
        for tool in tools:
            out[tool] = out.get(tool, ()) + (pre,)
    return out


@dataclass(frozen=True)
class Schema:
    """References and enums of one domain, keyed by type name."""

    refs: Mapping[str, Mapping[str, Ref]] = field(default_factory=dict)
    enums: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    keys: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    # entity kind -> what its generator does with fixed fields and what it adds to the world
    generators: Mapping[str, str] = field(default_factory=dict)
    # tool name -> what the records its arguments name must be like before the call
    preconditions: Mapping[str, tuple[Precondition, ...]] = field(default_factory=dict)
    # type name -> field -> unit name (`units.UNITS`: dollars, hours, timestamp, date...); a
    # map or list field's unit is its values'
    units: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # tool name -> argument -> unit name
    arg_units: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # tool name -> the policy rules (beyond status) a gold call of it must keep
    rules: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    # tool name -> the policy sections its preconditions come from (beyond its rules')
    sections: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # the domain's fixed clock (ISO `2024-05-15T15:00:00`), when it has one: the "now" of its
    # policy rules and of what a spec may state as the current time
    now: str = ""
    # the tools that authenticate the user, when the policy demands it before any write
    # ("authenticate the user identity ... even when the user already provides the user id")
    auth_tools: tuple[str, ...] = ()

    def unit(self, type_name: str, field_name: str) -> str | None:
        return self.units.get(type_name, {}).get(field_name)

    def ref(self, type_name: str, name: str) -> Ref | None:
        return self.refs.get(type_name, {}).get(name)

    def enum(self, type_name: str, field_name: str) -> tuple[str, ...] | None:
        return self.enums.get(type_name, {}).get(field_name)

    def key_enum(self, type_name: str, field_name: str) -> tuple[str, ...] | None:
        return self.keys.get(type_name, {}).get(field_name)


def refs(*items: tuple[str, Ref]) -> dict[str, dict[str, Ref]]:
    """``refs(("order", Ref("user", "user_id", "user")), ...)`` as the nested mapping."""
    out: dict[str, dict[str, Ref]] = {}
    for type_name, ref in items:
        out.setdefault(type_name, {})[ref.name] = ref
    return out
