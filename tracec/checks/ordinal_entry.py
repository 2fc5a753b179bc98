"""The entry the user names by its place against the one the gold changes (C177, error): the
user's words name an entry of a record's list by its position ("the first passenger's date of
birth should be ..."), and the gold's write passes that list back (`passengers = fixed`, as
long as the record's) with exactly one entry changed, at another position (the last
passenger's): the agent that changes the entry the user names is scored wrong.

Positions are read from the user's message, in the sentences that name the record (its id):
"first", "second", "third" or "last" before a word that names the list (singular or plural:
"passenger" for `passengers`); only tasks whose `user` text says such a place in its literal
words are judged. Judged on the first ``MAX_SEEDS`` seeds, reported once per task at the `user`
statement.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.checks.hint_operands import stem

MAX_SEEDS = 32
_PLACE = {"first": 0, "second": 1, "third": 2, "last": -1}
_ORDINAL = re.compile(r"\b(first|second|third|last)\s+([a-z][a-z_]*)", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.?!;])\s+")


def changed_positions(old: list, new: list) -> list[int]:
    """The positions where two lists of the same length differ."""
    return [i for i, (a, b) in enumerate(zip(old, new)) if a != b]


class OrdinalEntry(Check):
    """C177 over the first seeds; findings go to ``log``."""

    name = "the entry the user names by its place"
    codes = ("C177",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        # the tasks whose user text's literal words name an entry by its place
        self.tasks = {name for name, ts in self.where.tasks.items()
                      if _ORDINAL.search(ts.user_literal)}

    @staticmethod
    def _record(db: Mapping, ids: list[str], field: str, n: int) -> tuple[str, Mapping] | None:
        for table in db.values():
            if not isinstance(table, Mapping):
                continue
            for rid in ids:
                rec = table.get(rid)
                if isinstance(rec, Mapping) and isinstance(rec.get(field), list) \
                        and len(rec[field]) == n:
                    return rid, rec
        return None

    def instance(self, ctx: InstanceContext) -> None:
        inst, seed = ctx.inst, ctx.seed
        if inst.task not in self.tasks or seed >= MAX_SEEDS or inst.task in self.done:
            return
        sentences = _SENTENCE.split(inst.user or "")
        for call in inst.gold:
            if call.name not in ctx.env.toolbox.writes:
                continue
            args: dict[str, Any] = call.arguments
            ids = [v for v in args.values() if isinstance(v, str)]
            for field, new in args.items():
                if not isinstance(new, list) or len(new) < 2:
                    continue
                found = self._record(ctx.env.initial_db, ids, field, len(new))
                if found is None:
                    continue
                rid, rec = found
                # the places named in the sentences that name this record
                named = [_PLACE[o.lower()] for text in sentences if rid in text
                         for o, w in _ORDINAL.findall(text) if stem(w) == stem(field)]
                if not named:
                    continue
                changed = changed_positions(rec[field], new)
                if len(changed) != 1 or any(p % len(new) == changed[0] for p in named):
                    continue
                self.done.add(inst.task)
                ts = self.where.tasks.get(inst.task)
                self.log.add(f"C177:{inst.task}", "error", "C177",
                             f"task `{inst.task}`: the user names the {self._word(named[0])} "
                             f"entry of `{field}`, but the gold's `{call.name}` changes entry "
                             f"{changed[0] + 1} of {len(new)} (seed {seed}): the agent that "
                             "changes the one the user names is scored wrong",
                             ts.user if ts is not None and ts.user is not None else None,
                             task=inst.task, seed=seed,
                             hint="change the entry the user's words name, or name the one the "
                                  "gold changes (by name, not by place)")
                return

    @staticmethod
    def _word(place: int) -> str:
        return next(w for w, p in _PLACE.items() if p == place)
