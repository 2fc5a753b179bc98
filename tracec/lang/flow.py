"""What a value is known to hold beyond its type, followed through names: the string literals
it may be and the enumerated field it comes from, for the value and for a list's elements.

`let c = "buisness"` then `x.cabin == c`, a task parameter, `pick(["economy", "buisness"])`,
a comprehension over a seed list: the checker sees the literal wherever the value flows and
reports it at the literal itself; `r.cabin == u.membership` (two enums with no value in
common) is always False."""

from __future__ import annotations

from dataclasses import dataclass

from tracec.lang import ast as A
from tracec.lang.domain_types import EnumUse


@dataclass(frozen=True)
class Flow:
    """String literals a value may be, the enum it holds, and the same for its elements."""

    lits: tuple[A.Str, ...] = ()
    enum: EnumUse | None = None
    elem: Flow | None = None

    def merge(self, other: Flow) -> Flow:
        """Either of two values (the branches of `a if c else b`, the items of a list)."""
        enum = self.enum if self.enum == other.enum else None
        if self.elem is None or other.elem is None:
            elem = self.elem or other.elem
        else:
            elem = self.elem.merge(other.elem)
        return Flow(self.lits + other.lits, enum, elem)

    @property
    def items(self) -> Flow:
        return self.elem if self.elem is not None else NOTHING


NOTHING = Flow()

# built-ins whose result is one element of their first argument, or a list of its elements
ONE_OF = {"pick", "first", "min", "max", "min_by", "max_by"}
SOME_OF = {"sample", "shuffle", "sorted"}


def disjoint(a: EnumUse, b: EnumUse) -> bool:
    """Two enums no value of which is the other's (comparing them is always False)."""
    return a.where != b.where and not set(a.values) & set(b.values)
