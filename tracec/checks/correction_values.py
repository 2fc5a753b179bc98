"""A correction's new value the user never gave (C165, error).

A gold write that passes a list of records (`passengers = fixed`) in place of the list the
record it names holds (the reservation's `passengers`) corrects some fields of some entries;
the new value of each changed field (a last name, a date of birth) can only come from the user.
A value in neither the user's first message nor a scripted reply (another passenger's date of
birth, the old reservation's name: the wrong variable copied) teaches the agent to invent it.
Entries are paired by position; a list that only reorders the old entries corrects nothing.
Judged on the first ``MAX_SEEDS`` seeds, reported when it happens on most of them (once is the
draw's), at the `let` the argument is built in (else the gold call); at the `user` text when a
`let` of the task makes the new value and neither the user's text nor a reply reads it (the
message gives the old name where it meant `{new_last}`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracec.checks.blame import names
from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.checks.locate import root
from tracec.lang import ast as A
from tracec.runtime.outcome import mentioned

MAX_SEEDS = 32


def _records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _named(db: Mapping, tables: list[str], args: Mapping) -> list[Mapping]:
    """The records an argument names by its id."""
    out = []
    for value in args.values():
        for table in tables if isinstance(value, str) else []:
            t = db.get(table)
            if isinstance(t, Mapping) and isinstance(t.get(value), Mapping):
                out.append(t[value])
    return out


def corrections(old: list, new: list) -> list[tuple[str, Any]]:
    """(field, new value) of every text field an entry of ``new`` changes from the entry of
    ``old`` at its position (none when ``new`` only reorders ``old``'s entries)."""
    if sorted(map(repr, old)) == sorted(map(repr, new)):
        return []
    return [(k, v) for o, n in zip(old, new) for k, v in n.items()
            if k in o and o[k] != v and isinstance(v, str)]


class CorrectionValues(Check):
    """C165 over the drawn instances; findings go to ``log``."""

    name = "corrections the user never gave"
    codes = ("C165",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        self.tables = [k.collection for k in self.cap.domain.entities.values()
                       if k.id_field and not k.singleton]
        self.roots: dict[tuple[str, str, int, str], str | None] = {}
        self.lets: dict[str, set[str]] = {}  # task -> its `let` names
        self.said: dict[str, set[str]] = {}  # task -> the names its user text and replies read
        for t in (self.where.ast.tasks if self.where.ast is not None else []):
            counts: dict[str, int] = {}
            for c in A.gold_calls(t.gold):
                nth = counts.get(c.name, 0)
                counts[c.name] = nth + 1
                for kw in c.args:
                    self.roots[(t.name, c.name, nth, kw.name)] = root(kw.value)
            self.lets[t.name] = {let.name for let in t.lets}
            self.said[t.name] = names(t.user) | {n for r in t.replies for n in names(r.text)} \
                if t.user is not None else set()
        # (task, tool, nth, arg) -> [judged, invented, first seed, field, value]
        self.counts: dict[tuple[str, str, int, str], list[Any]] = {}

    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        inst = env.instance
        if seed >= MAX_SEEDS:
            return
        known = inst.said
        counts: dict[str, int] = {}
        for call in inst.gold:
            nth = counts.get(call.name, 0)
            counts[call.name] = nth + 1
            if call.name not in env.toolbox.writes:
                continue
            args = call.args or {}
            for rec in _named(env.initial_db, self.tables, args):
                for arg, value in args.items():
                    if not _records(value) or not _records(rec.get(arg)) \
                            or len(rec[arg]) != len(value):
                        continue
                    changed = corrections(rec[arg], value)
                    if not changed:
                        continue
                    item = self.counts.setdefault((inst.task, call.name, nth, arg),
                                                  [0, 0, -1, "", ""])
                    item[0] += 1
                    bad = [(k, v) for k, v in changed if not mentioned(v, known)]
                    if bad:
                        item[1] += 1
                        if item[2] < 0:
                            item[2], item[3], item[4] = seed, bad[0][0], bad[0][1]
                            item.append(next((n for n, v in inst.values.items()
                                              if v == bad[0][1] and n in self.lets.get(inst.task, ())),
                                             None))

    def finish(self) -> None:
        """A new value the user never gave, on most seeds."""
        for (task, tool, nth, arg), (total, bad, seed, fld, value, *made) in self.counts.items():
            if bad * 2 <= total:
                continue
            name = self.roots.get((task, tool, nth, arg))
            span = (self.where.let(task, name) if name else None) or self.where.gold(task, tool, nth)
            ts = self.where.tasks.get(task)
            unsaid = made[0] if made and made[0] not in self.said.get(task, ()) else None
            why = ""
            if unsaid and ts is not None and ts.user is not None:
                # a `let` makes the new value and the user's words never say it: the message
                # left it out (it gives the old one?), not the gold
                span = ts.user
                why = f" (`let {unsaid}` makes it, and the `user` text never says `{{{unsaid}}}`)"
            self.log.add(f"C165:{task}:{tool}:{nth}:{arg}", "error", "C165",
                         f"task `{task}`: the gold call `{tool}` sets `{fld}` = {value!r} in "
                         f"`{arg}`, a value the user never gives (on {bad} of {total} seeds, "
                         f"first at seed {seed}): the gold teaches the agent to invent the "
                         f"correction{why}", span, task=task, seed=seed,
                         hint="pass the value the user's message gives (the wrong variable "
                              "copied?)")
