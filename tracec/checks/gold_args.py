"""A gold argument read from a field of another name (C158, error): `city = a.state`, where the
record `a` has a `city` field of its own that holds something else (a swapped pair, a field
copied from the line above).

For each gold call keyword `k = x.f` (or `x.y.f`) with `f` not `k`, read on the drawn instances
(the first ``MAX_SEEDS`` seeds): when the record `x` (or `x.y`) has a field named `k` too and its
value differs from `x.f`, the gold passes the wrong field, unless `x.f`'s value is one that field
`k` holds somewhere in the world (`origin = r.destination` for the way back is a value of
`origin`; a state is no city). One field read passed as two arguments of a call
(`timestamp_0 = a.t, timestamp_1 = a.t`) is one too. Reported at the gold call, once per task
and argument.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.lang import ast as A
from tracec.runtime.lib import fmt

MAX_SEEDS = 64


def _path(expr: Any) -> tuple[str, tuple[str, ...]] | None:
    """(`x`, (`y`, ...)) of a read `x.y.f` without its last field, if it is one."""
    names: list[str] = []
    while isinstance(expr, A.Attr):
        names.append(expr.name)
        expr = expr.obj
    return (expr.id, tuple(reversed(names))) if isinstance(expr, A.Name) and names else None


def values_of(world: Any, key: str, depth: int = 6) -> set:
    """Every hashable value ``key`` holds in a record anywhere in the world (nested ones too)."""
    out: set = set()
    stack = [(world, 0)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, Mapping):
            value = node.get(key)
            if isinstance(value, (str, int, float)):
                out.add(value)
            items = node.values()
        elif isinstance(node, list):
            items = node
        else:
            continue
        if d < depth:
            stack.extend((v, d + 1) for v in items if isinstance(v, (Mapping, list)))
    return out


def _text(expr: Any) -> str:
    """`a.b.c` of a field read."""
    path = _path(expr)
    return ".".join((path[0],) + path[1]) if path else ""


class GoldArgs(Check):
    """C158 over the drawn instances; findings go to ``log``."""

    name = "gold arguments vs the fields they read"
    codes = ("C158",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        # task -> (tool, nth call of it, keyword, the record's let, the path to it, field read)
        self.reads: dict[str, list[tuple[str, int, str, str, tuple[str, ...], str]]] = {}
        for t in (self.where.ast.tasks if self.where.ast is not None else []):
            counts: dict[str, int] = {}
            items = []
            for call in A.gold_calls(t.gold):
                nth = counts.get(call.name, 0)
                counts[call.name] = nth + 1
                for kw in call.args:
                    path = _path(kw.value)
                    if path is not None and path[1][-1] != kw.name:
                        items.append((call.name, nth, kw.name, path[0], path[1][:-1], path[1][-1]))
            self.reads[t.name] = items
        # task -> (tool, nth, the two keywords, the read): one field read passed twice
        self.twice: dict[str, list[tuple[str, int, str, str, str]]] = {}
        for t in (self.where.ast.tasks if self.where.ast is not None else []):
            counts = {}
            for call in A.gold_calls(t.gold):
                nth = counts.get(call.name, 0)
                counts[call.name] = nth + 1
                reads = [(kw.name, _text(kw.value)) for kw in call.args if _path(kw.value)]
                seen: dict[str, str] = {}
                for name, read in reads:
                    if read in seen:
                        self.twice.setdefault(t.name, []).append(
                            (call.name, nth, seen[read], name, read))
                    seen.setdefault(read, name)

    def start(self) -> None:
        """`timestamp_0 = a.t, timestamp_1 = a.t`: one field read passed as two arguments."""
        for task, items in self.twice.items():
            for tool, nth, first, second, read in items:
                self.log.add(f"C158:{task}:{tool}:{second}", "error", "C158",
                             f"task `{task}`: the gold call `{tool}` passes `{read}` as both "
                             f"`{first}` and `{second}`: one of them reads the wrong record or "
                             "field (copied from the other?)", self.where.gold(task, tool, nth),
                             task=task, hint=f"pass what `{second}` is for")

    def instance(self, ctx: InstanceContext) -> None:
        inst, seed = ctx.env.instance, ctx.seed
        if seed >= MAX_SEEDS:
            return
        for tool, nth, arg, let, path, field in self.reads.get(inst.task, []):
            key = (inst.task, tool, arg)
            rec = inst.values.get(let)
            for step in path:
                rec = rec.get(step) if isinstance(rec, Mapping) else None
            if key in self.done or not isinstance(rec, Mapping) or arg not in rec \
                    or field not in rec or rec[arg] == rec[field] \
                    or rec[field] in values_of(ctx.env.initial_db, arg):
                continue  # the value is one the field takes (`origin = r.destination` for the way back)
            self.done.add(key)
            read = ".".join((let,) + path + (field,))
            self.log.add(f"C158:{inst.task}:{tool}:{arg}", "error", "C158",
                         f"task `{inst.task}`: the gold call `{tool}` passes `{arg} = {read}` "
                         f"({fmt(rec[field])!r}), but that record's own `{arg}` is "
                         f"{fmt(rec[arg])!r} at seed {seed}: the wrong field (a swapped pair?)",
                         self.where.gold(inst.task, tool, nth), task=inst.task, seed=seed,
                         hint=f"pass `{arg} = {'.'.join((let,) + path + (arg,))}`")
