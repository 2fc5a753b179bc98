"""Static types of the spec language (also used by domains to describe entity fields)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class T:
    """Base of all types."""

    def __str__(self) -> str:  # pragma: no cover - overridden
        return "?"


@dataclass(frozen=True)
class Prim(T):
    name: str  # "str" | "int" | "float" | "bool" | "any" | "none"

    def __str__(self) -> str:
        return self.name


STR = Prim("str")
INT = Prim("int")
FLOAT = Prim("float")
BOOL = Prim("bool")
ANY = Prim("any")
NONE = Prim("none")


@dataclass(frozen=True)
class ListT(T):
    elem: T = ANY

    def __str__(self) -> str:
        return f"list[{self.elem}]"


@dataclass(frozen=True)
class MapT(T):
    """A JSON object keyed by strings with values of one type (e.g. prices per cabin)."""

    value: T = ANY

    def __str__(self) -> str:
        return f"map[{self.value}]"


@dataclass(frozen=True)
class ObjT(T):
    """A JSON object with known fields (a nested record)."""

    fields: tuple[tuple[str, T], ...] = field(default_factory=tuple)
    name: str = "object"

    def field_map(self) -> dict[str, T]:
        return dict(self.fields)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class EntityT(T):
    """A record of a domain entity kind (fields come from the domain)."""

    kind: str

    def __str__(self) -> str:
        return self.kind


@dataclass(frozen=True)
class RangeT(T):
    """`a..b` (inclusive), used by generators and counts."""

    elem: T = INT

    def __str__(self) -> str:
        return f"range[{self.elem}]"


def obj(name: str = "object", /, **fields: T) -> ObjT:
    """Build an ObjT from keyword fields: ``obj("address", city=STR, zip=STR)``."""
    return ObjT(tuple(fields.items()), name)


def is_numeric(t: T) -> bool:
    return t in (INT, FLOAT, ANY)


def assignable(src: T, dst: T) -> bool:
    """Whether a value of type ``src`` may stand where ``dst`` is expected."""
    if src == dst or ANY in (src, dst):
        return True
    if dst == FLOAT and src == INT:
        return True
    if isinstance(src, ListT) and isinstance(dst, ListT):
        return assignable(src.elem, dst.elem)
    if isinstance(src, MapT) and isinstance(dst, MapT):
        return assignable(src.value, dst.value)
    if isinstance(dst, MapT) and isinstance(src, (ObjT, EntityT)):
        return True
    if isinstance(src, MapT) and isinstance(dst, (ObjT, EntityT)):
        return True
    if isinstance(src, (ObjT, EntityT)) and isinstance(dst, (ObjT, EntityT)):
        return True
    return False


def json_type_ok(t: T, json_type: str | list[str] | None) -> bool:
    """Whether values of type ``t`` fit a JSON-Schema ``type`` (for tool arguments)."""
    if json_type is None or t == ANY:
        return True
    types = [json_type] if isinstance(json_type, str) else list(json_type)
    ok = {
        "string": t == STR,
        "integer": t == INT,
        "number": t in (INT, FLOAT),
        "boolean": t == BOOL,
        "array": isinstance(t, ListT),
        "object": isinstance(t, (MapT, ObjT, EntityT)),
        "null": t == NONE,
    }
    return any(ok.get(j, True) for j in types)
