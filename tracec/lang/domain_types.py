"""What the checker knows from a domain's typed contract (:mod:`tracec.domains.schema`).

* reference navigation: ``item.product`` is the product whose id is ``item.product_id``;
* enum checks: a literal compared with (or assigned to) an enumerated field must be one of
  its values, and a literal key of an enumerated map must be one of its keys;
* record-in-text checks: a whole record (or a list of records) interpolated into text or
  communicated reaches the user as a Python dict, which is never what a spec means.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracec.core.diagnostics import did_you_mean
from tracec.core.types import EntityT, ListT, MapT, ObjT, T
from tracec.domains.base import Domain
from tracec.domains.schema import Ref, Schema
from tracec.lang import ast as A


def type_name(t: T) -> str | None:
    """The schema name of a record type (entity kind or nested record name)."""
    if isinstance(t, EntityT):
        return t.kind
    if isinstance(t, ObjT):
        return t.name
    return None


def is_record(t: T) -> bool:
    """A record, a map, or a list of them: values that have no text form for a user."""
    if isinstance(t, (EntityT, ObjT, MapT)):
        return True
    return isinstance(t, ListT) and is_record(t.elem)


def record_hint(t: T, schema_fields: list[str]) -> str:
    """How to say a part of a record instead of the record itself."""
    base = t.elem if isinstance(t, ListT) else t
    example = next((f for f in schema_fields if f.endswith("_id")), schema_fields[0]
                   if schema_fields else "field")
    if isinstance(t, ListT):
        return (f"use one field of each, e.g. `[x.{example} for x in ...]`, or a count: `len(...)`"
                if isinstance(base, (EntityT, ObjT)) else "use one value of it")
    if isinstance(t, MapT):
        return "use one value: `m[key]`, or its keys: `keys(m)`"
    return f"use a field, e.g. `.{example}`"


@dataclass(frozen=True)
class EnumUse:
    """An expression known to hold a value of an enumerated field."""

    values: tuple[str, ...]
    where: str  # "order.status"
    what: str = "value"  # or "key" (the keys of a map field)


class DomainTypes:
    """Schema look-ups for one domain (empty when the domain failed to load)."""

    def __init__(self, domain: Domain | None):
        self.domain = domain
        self.schema: Schema = getattr(domain, "schema", None) or Schema()

    def fields_of(self, t: T) -> dict[str, T]:
        if isinstance(t, ObjT):
            return t.field_map()
        if isinstance(t, EntityT) and self.domain is not None and t.kind in self.domain.entities:
            return dict(self.domain.entities[t.kind].fields)
        return {}

    def ref(self, base: T, name: str) -> Ref | None:
        tn = type_name(base)
        return self.schema.ref(tn, name) if tn else None

    def ref_names(self, base: T) -> list[str]:
        tn = type_name(base)
        return list(self.schema.refs.get(tn, {})) if tn else []

    def collection(self, kind: str) -> str:
        assert self.domain is not None
        return self.domain.entities[kind].collection

    def enum(self, base: T, field: str) -> EnumUse | None:
        tn = type_name(base)
        values = self.schema.enum(tn, field) if tn else None
        return EnumUse(values, f"{tn}.{field}") if values else None

    def key_enum(self, base: T, field: str) -> EnumUse | None:
        tn = type_name(base)
        values = self.schema.key_enum(tn, field) if tn else None
        return EnumUse(values, f"{tn}.{field}", "key") if values else None

    def entity_enum(self, kind: str, field: str) -> EnumUse | None:
        values = self.schema.enum(kind, field)
        return EnumUse(values, f"{kind}.{field}") if values else None


def literal_strings(e: Any) -> list[A.Str]:
    """String literals ``e`` evaluates to: itself, the branches of ``a if c else b``, and the
    items of a list literal given to ``pick``/``sample``/``shuffle``."""
    if isinstance(e, A.Str):
        return [e]
    if isinstance(e, A.IfElse):
        return literal_strings(e.body) + literal_strings(e.orelse)
    if isinstance(e, A.Call) and e.func in ("pick", "shuffle", "sample") and e.args \
            and isinstance(e.args[0], A.ListLit):
        return [i for i in e.args[0].items if isinstance(i, A.Str)]
    return []


def list_strings(e: Any) -> list[A.Str]:
    """String literals of a list literal (the right side of `in`)."""
    if isinstance(e, A.ListLit):
        return [i for i in e.items if isinstance(i, A.Str)]
    return []


def enum_error(value: str, enum: EnumUse) -> tuple[str, str]:
    """Message and hint for a literal outside an enum."""
    hint = did_you_mean(value, enum.values)
    listed = ", ".join(f'"{v}"' for v in enum.values)
    whose = f"the {enum.what}s of {enum.where} are" if enum.what == "key" \
        else f"{enum.where} is one of"
    return (f'"{value}" is not a {enum.what} of {enum.where}',
            (hint + f" ({whose} {listed})") if hint else f"{whose} {listed}")
