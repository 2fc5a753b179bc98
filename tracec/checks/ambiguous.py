"""A question with two answers (C163, error): the user's words fit another record as well as
the one the answer is read from, and that record gives another answer.

The user names the record the answer reads (`m` of `communicate wd`, `wd` read from
`m.creation_timestamp`; a record a `pick` draws from a table) by some of its values: a text field quoted (`"{m.content}"`), or a
reference whose record the user names (`{s.name}` for `m.sender_person_id`). When the user does
not give its id and another record of the same table holds the same values in every field so
named while a field the answer reads differs (the sender sent the quoted message twice, on two
days), the question is ambiguous on that seed: the gold picks one, an agent that picks the
other is marked wrong. Judged on every seed checked; reported at the `let` that draws the record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.checks.variance import field_reads
from tracec.lang import ast as A
from tracec.runtime.outcome import mentioned


def _said(value: Any, user: str) -> bool:
    """A value the user's words state: a text of 3 characters or more."""
    return isinstance(value, str) and len(value) >= 3 and mentioned(value, [user])


def _drawn(expr: Any) -> bool:
    """A record drawn from a table by a `pick` (`pick(x for x in chats if ...)`), not one
    reached from another (`item.product`, which the record it is read from tells apart)."""
    if isinstance(expr, A.CallGen) and expr.func == "pick":
        return isinstance(expr.comp.iter, A.Name)
    return isinstance(expr, A.Call) and expr.func == "pick" and len(expr.args) == 1 \
        and isinstance(expr.args[0], A.Name)


class Ambiguous(Check):
    """C163 over the drawn instances; findings go to ``log``."""

    name = "questions with two answers"
    codes = ("C163",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        self.reads: dict[str, dict[str, set[str]]] = {}  # task -> let -> fields its answers read
        for t in (self.where.ast.tasks if self.where.ast is not None else []):
            lets = {let.name: let.value for let in t.lets}
            for n, f in {r for e in t.communicate for r in field_reads(e, lets)}:
                if n in lets and _drawn(lets[n]):
                    self.reads.setdefault(t.name, {}).setdefault(n, set()).add(f)
        self.kinds = [k for k in self.cap.domain.entities.values()
                      if k.id_field and not k.singleton]
        self.refs = getattr(self.cap.domain.schema, "refs", {}) or {}
        self.found: dict[tuple[str, str], list] = {}  # (task, let) -> [seeds, first seed, rid, other]

    def instance(self, ctx: InstanceContext) -> None:
        env, inst = ctx.env, ctx.env.instance
        db, user = env.initial_db, inst.user
        for name, fields in self.reads.get(inst.task, {}).items():
            target = inst.values.get(name)
            if not isinstance(target, Mapping):
                continue
            for kind in self.kinds:
                table = db.get(kind.collection)
                rid = target.get(kind.id_field)
                if not isinstance(table, Mapping) or not isinstance(rid, (str, int)) \
                        or rid not in table or table[rid] != target:
                    continue
                other = self._rival(kind, db, table, target, fields, user)
                if other is not None:
                    item = self.found.setdefault((inst.task, name), [0, ctx.seed, rid, other])
                    item[0] += 1
                break

    def _rival(self, kind: Any, db: Mapping, table: Mapping, target: Mapping, fields: set[str],
               user: str) -> str | None:
        """Another record the user's words fit whose read fields differ, if one."""
        if mentioned(target[kind.id_field], [user]):
            return None
        named = [f for f, v in target.items() if f != kind.id_field and _said(v, user)]
        for ref in self.refs.get(kind.name, {}).values():
            to = self.cap.domain.entities.get(ref.target)
            key = target.get(ref.field)
            rec = (db.get(to.collection) or {}).get(key) \
                if to and isinstance(key, (str, int)) else None
            if isinstance(rec, Mapping) and any(_said(v, user) for v in rec.values()):
                named.append(ref.field)
        if not named:
            return None
        for oid, other in table.items():
            if oid == target[kind.id_field] or not isinstance(other, Mapping):
                continue
            if all(other.get(f) == target[f] for f in named) and \
                    any(other.get(f) != target.get(f) for f in fields if f in target):
                return str(oid)
        return None

    def finish(self) -> None:
        for (task, name), (count, seed, rid, other) in self.found.items():
            self.log.add(f"C163:{task}:{name}", "error", "C163",
                         f"task `{task}`: the user's words fit {other!r} as well as `{name}` "
                         f"({rid!r}) on {count} seeds (first at seed {seed}), and it gives "
                         "another answer: the question has two answers",
                         self.where.let(task, name), task=task, seed=seed,
                         hint="draw a record the user's words tell apart (`count(y for y in ... "
                              "if y.content == x.content) == 1`), or let the user name its id")
