"""A gold write that changes nothing (C162, error): the record it names is the same before and
after the call (a passenger list rebuilt with the old date of birth, a flight "moved" to the date
it has, the old item for the new one).

The user asked for a change; a gold whose write leaves its record as it was teaches a call that
does nothing, and `state_matches` pays an agent that makes no change at all. The gold is
replayed on a copy of the initial world of each drawn instance whose writes name a record; a
write call is judged only when an argument names a record of a table (its id), by that record's
content before and after, and reported when it changes nothing on any seed checked: a write
that does nothing by chance (a `last_name()` that draws the name the passenger has) is an
instance that teaches the same no-op (draw `last_name(p.last_name)`). Reported at the `let` that
built what the write passes unchanged (:func:`tracec.checks.blame.unchanged_cause`), else at the
gold call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tracec.checks.blame import unchanged_cause
from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.core.diagnostics import Span
from tracec.runtime.world import peek, untouched


def _named(db: Mapping, tables: list[str], args: Mapping) -> list[tuple[str, str]]:
    """(table, id) of every record an argument names by its id."""
    out = []
    for value in args.values():
        if not isinstance(value, str):
            continue
        for table in tables:
            t = peek(db, table)  # a membership test: an unread table's original will do
            if isinstance(t, Mapping) and value in t:
                out.append((table, value))
    return out


def _dump(record: Any) -> str:
    return json.dumps(record, sort_keys=True, default=str)


def _before(db: Mapping, named: list[tuple[str, str]]) -> list[tuple[Any, Any, str | None]]:
    """Each named record before the call, read without copying: (its table, the record, its
    dump; None while the record is its table's unread original, dumped only if the call reads
    it: an original is never written)."""
    out = []
    for t, rid in named:
        table = dict.__getitem__(db, t) if isinstance(db, dict) else db[t]
        record = peek(table, rid)
        out.append((table, record, None if untouched(table, rid) else _dump(record)))
    return out


def _unchanged(db: Mapping, named: list[tuple[str, str]],
               before: list[tuple[Any, Any, str | None]]) -> bool:
    """Every named record dumps after the call as it did before (one still its table's unread
    original is unchanged without a dump)."""
    for (t, rid), (table, record, dump) in zip(named, before):
        now = dict.__getitem__(db, t) if isinstance(db, dict) else db[t]
        if dump is None and now is table and untouched(now, rid):
            continue
        if _dump(peek(now, rid)) != (_dump(record) if dump is None else dump):
            return False
    return True


class NoopWrites(Check):
    """C162 over the drawn instances; findings go to ``log``."""

    name = "gold writes that change nothing"
    codes = ("C162",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        self.tables = [k.collection for k in self.cap.domain.entities.values()
                       if k.id_field and not k.singleton]
        # (task, tool, nth) -> [instances judged, writes that changed nothing, first such seed]
        self.counts: dict[tuple[str, str, int], list[int]] = {}
        # (task, tool, nth) -> the `let` that built what the write passes unchanged, if one
        self.causes: dict[tuple[str, str, int], tuple[str, Span] | None] = {}

    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        inst, box = env.instance, env.toolbox
        if not any(c.name in box.writes and _named(env.initial_db, self.tables, c.args or {})
                   for c in inst.gold):
            return  # no write names a record: nothing to replay
        db = env.initial_copy()
        counts: dict[str, int] = {}
        for call in inst.gold:
            nth = counts.get(call.name, 0)
            counts[call.name] = nth + 1
            named = _named(db, self.tables, call.args or {}) if call.name in box.writes else []
            before = _before(db, named)
            _, ok, _ = box.run(db, call.name, call.arguments, observe=False)
            if named and ok:
                item = self.counts.setdefault((inst.task, call.name, nth), [0, 0, -1])
                item[0] += 1
                if _unchanged(db, named, before):
                    item[1] += 1
                    item[2] = seed if item[2] < 0 else item[2]
                    key = (inst.task, call.name, nth)
                    if key not in self.causes:
                        self.causes[key] = unchanged_cause(
                            self.where, inst.task, call.name, nth, call.args or {},
                            [json.loads(_dump(rec)) for _, rec, _ in before], {rid for _, rid in named},
                            inst.values)

    def finish(self) -> None:
        """A write that changes nothing on any seed."""
        for (task, tool, nth), (total, same, seed) in self.counts.items():
            if not same:
                continue
            at = self.where.gold(task, tool, nth)
            cause = self.causes.get((task, tool, nth))
            built = "" if cause is None else \
                f" (`let {cause[0]}` builds what it passes{f' at line {at.line}' if at else ''})"
            self.log.add(f"C162:{task}:{tool}:{nth}", "error", "C162",
                         f"task `{task}`: the gold call `{tool}` leaves the record it names as it "
                         f"was on {same} of {total} seeds (first at seed {seed}): the write "
                         "changes nothing (the old value passed for the new one, or drawn "
                         f"again?){built}",
                         cause[1] if cause else at, task=task, seed=seed,
                         hint="pass the value the user asks for, not the record's own, and draw it other "
                              "than the record's (`last_name(p.last_name)`)")
