"""Entries the user names by words that fit another (C182, error): a gold write passes the id of
an entry (`item_ids = ids`) that a gold read shows in a list of like entries (an order's items),
the user's message names that entry by its text fields (its `name`) but not by its id, and
another entry of the same list, not passed, holds the same values in every field the user
names and differs only in values the user's message never states (two variants of one product,
named without their options). The agent cannot tell which entry the user means: the gold takes
one, an agent that takes the other is scored wrong.

Judged on the first ``MAX_SEEDS`` seeds, once per task. Reported at the task's `let` that the
user text interpolates and that reads the named fields (`let names = [i.name for i in back]`),
else at the `user` statement.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from tracec.checks.blame import attrs, leaves, names, task_ast
from tracec.checks.check import Check, InstanceContext
from tracec.runtime.lib import fmt
from tracec.runtime.outcome import mentioned

MAX_SEEDS = 32


def _lists(value: Any) -> Iterator[list[dict]]:
    """Every list (or map) of two or more dicts inside a parsed tool output."""
    if isinstance(value, dict):
        entries = list(value.values())
        if len(entries) >= 2 and all(isinstance(v, dict) for v in entries):
            yield entries
        for v in entries:
            yield from _lists(v)
    elif isinstance(value, list):
        if len(value) >= 2 and all(isinstance(v, dict) for v in value):
            yield value
        for v in value:
            yield from _lists(v)


def _states(value: Any, user: str) -> bool:
    """Whether the user's words state ``value`` (a word or number standing alone)."""
    text = fmt(value).strip()
    if not text or isinstance(value, bool):
        return False
    return re.search(r"(?<!\w)" + re.escape(text) + r"(?!\w)", user, re.IGNORECASE) is not None


def _named(entry: dict, user: str) -> dict[str, str]:
    """The entry's text fields (3 characters or more) the user's words state."""
    return {k: v for k, v in entry.items()
            if isinstance(v, str) and len(v) >= 3 and mentioned(v, [user])}


def alike(entries: list[dict], ids: set, user: str) -> tuple[dict, dict, str, set[str]] | None:
    """(entry, rival, id field, the fields named): an entry whose id is passed, named by the user's words only
    by fields that a rival entry, not passed, shares."""
    for entry in entries:
        key = next((k for k, v in entry.items() if isinstance(v, (str, int)) and
                    not isinstance(v, bool) and v in ids), None)
        if key is None or mentioned(entry[key], [user]):
            continue
        said = _named(entry, user)
        if not said:
            continue
        for rival in entries:
            other = rival.get(key)
            if rival is entry or other is None or other in ids or other == entry[key]:
                continue
            if any(rival.get(k) != v for k, v in said.items()):
                continue
            mine = {k: v for k, v in entry.items() if k != key and rival.get(k) != v}
            if mine and not any(_states(x, user) for v in mine.values() for x in leaves(v)):
                return entry, rival, key, set(said)
    return None


class AlikeEntries(Check):
    """C182 over the first seeds; findings go to ``log``."""

    name = "entries the user's words do not tell apart"
    codes = ("C182",)


    def instance(self, ctx: InstanceContext) -> None:
        inst, seed = ctx.inst, ctx.seed
        if seed >= MAX_SEEDS or inst.task in self.done:
            return
        writes = ctx.env.toolbox.writes
        ids = {x for c in inst.gold if c.name in writes for v in (c.args or {}).values()
               for x in (v if isinstance(v, list) else [v])
               if isinstance(x, (str, int)) and not isinstance(x, bool)}
        if not ids:
            return
        keys = [str(x) for x in ids]
        for out in ctx.results:
            if not out or not any(k in out for k in keys):
                continue  # no entry passed is in it
            try:
                parsed = json.loads(out) if out and out[:1] in "[{" else None
            except ValueError:
                continue
            for entries in _lists(parsed):
                found = alike(entries, ids, inst.user)
                if found is not None:
                    self.done.add(inst.task)
                    self._report(inst.task, seed, *found)
                    return

    def _report(self, task: str, seed: int, entry: dict, rival: dict, key: str,
                said: set[str]) -> None:
        t = task_ast(self.where, task)
        lets = {let.name: let.value for let in t.lets} if t is not None else {}
        used = sorted(n for n in names(t.user) if n in lets and attrs(lets[n]) & said) \
            if t is not None and t.user is not None else []
        span = self.where.let(task, used[0]) if len(used) == 1 else None
        ts = self.where.tasks.get(task)
        span = span or (ts.user if ts is not None else None)
        self.log.add(f"C182:{task}", "error", "C182",
                     f"task `{task}`: the gold passes `{key}` {fmt(entry[key])!r}, an entry the "
                     f"user's message names only by words that fit {fmt(rival[key])!r} as well "
                     f"(the same list, the same named fields; seed {seed}): the agent cannot "
                     "tell which one the user means", span, task=task, seed=seed,
                     hint="make the user's words name what tells the entry apart (its options, "
                          "its id)")
