"""The typed part of a domain contract: references between records and enumerated values.

Declared once per domain (next to its entity layouts) and used by the spec checker and by
``tracec describe``:

* a :class:`Ref` says that a record type's id field points at another entity kind, and gives
  the navigation name a spec uses: ``item.product`` for ``item.product_id``, ``leg.flight``
  for ``leg.flight_number``;
* ``enums`` list the values a string field can take (statuses, cabins, payment sources...),
  and ``keys`` the keys a map field can have (a flight date's ``prices`` per cabin).

Types are named as in :mod:`tracec.lang.types`: an entity kind (``order``) or a nested
record's ``ObjT`` name (``order_item``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping


@dataclass(frozen=True)
class Ref:
    """``<type>.<name>`` is the ``target`` record whose id is ``<type>.<field>``."""

    name: str  # the navigation name: product
    field: str  # the id field on the source record: product_id
    target: str  # the entity kind pointed at: product
    nullable: bool = False  # the id may be None (then navigation gives None)


@dataclass(frozen=True)
class Schema:
    """References and enums of one domain, keyed by type name."""

    refs: Mapping[str, Mapping[str, Ref]] = field(default_factory=dict)
    enums: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    keys: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    # entity kind -> what its generator does with fixed fields and what it adds to the world
    generators: Mapping[str, str] = field(default_factory=dict)

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
