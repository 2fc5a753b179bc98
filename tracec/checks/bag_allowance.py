"""The free-bag allowance of a bag update (C168, C169, error).

The airline policy's "Checked bag allowance" gives each passenger free checked bags by the
booking user's membership and the cabin (regular: 0 / 1 / 2 for basic economy / economy /
business, ...), parsed here from the policy text; bags beyond the free ones still unused are
non-free. τ²'s `update_reservation_baggages` takes `nonfree_baggages` as given, so a gold that
models the allowance (on some seed it adds bags without raising `nonfree_baggages` as much) has
to model it right on every seed:

* C168: a bag update whose new `nonfree_baggages` is not the old one plus the added bags beyond
  the free ones still unused (every added bag charged while free ones remain, a free bag in
  basic economy for a regular member), at the `let` the argument is computed in when it passes
  a variable (else the call: `r.nonfree_baggages` read inline);
  also a copy of the allowance table in the seed (`allow = {"regular": {"basic_economy": 0,
  ...}}`) whose numbers differ from the policy's, at that seed line;
* C169: an env (a `variant`) whose policy excerpt drops the allowance table that such a gold
  follows, at its `policy sections` line.

A gold that charges every added bag on every seed does not model the allowance (a task that
says so in its hint); it is not judged. Judged on the first ``MAX_SEEDS`` seeds, the gold
replayed on a copy of the world.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.checks.policy_sections import sections_line
from tracec.lang import ast as A

MAX_SEEDS = 32
_MEMBER = re.compile(r"if the booking user is an? (\w+) member", re.IGNORECASE)
_FREE = re.compile(r"(\d+) free checked bags? for each ([\w ]+?) passenger", re.IGNORECASE)


def allowance_table(policy: str) -> dict[str, dict[str, int]]:
    """membership -> cabin (`basic_economy`) -> free checked bags per passenger."""
    out: dict[str, dict[str, int]] = {}
    member = None
    for line in policy.splitlines():
        m = _MEMBER.search(line)
        if m:
            member = m.group(1).lower()
            continue
        f = _FREE.search(line)
        if f and member is not None:
            out.setdefault(member, {})[f.group(2).strip().lower().replace(" ", "_")] = int(f.group(1))
    return out


def _table_differs(expr: object, table: dict[str, dict[str, int]]
                   ) -> tuple[str, str, int, int] | None:
    """(membership, cabin, the spec's number, the policy's) of the first entry where a dict
    literal keyed by the policy's memberships gives another number of free bags."""
    if not isinstance(expr, A.DictLit) or not expr.pairs:
        return None
    rows = {p.key.value: p.value for p in expr.pairs if isinstance(p.key, A.Str)}
    if len(rows) != len(expr.pairs) or not set(rows) <= set(table):
        return None
    for member, row in rows.items():
        if not isinstance(row, A.DictLit):
            return None
        for p in row.pairs:
            if isinstance(p.key, A.Str) and isinstance(p.value, A.Num) \
                    and p.key.value in table[member] and p.value.value != table[member][p.key.value]:
                return member, p.key.value, int(p.value.value), table[member][p.key.value]
    return None


def _bags(args: Mapping) -> bool:
    return "total_baggages" in args and "nonfree_baggages" in args and "reservation_id" in args


class BagAllowance(Check):
    """C168/C169 over the drawn instances; findings go to ``log``."""

    name = "free-bag allowance"
    codes = ("C168", "C169")

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        self.table = allowance_table(self.cap.domain.policy or "")
        self.roots: dict[tuple[str, int], str | None] = {}
        for t in (self.where.ast.tasks if self.where.ast is not None else []):
            nth = 0
            for c in A.gold_calls(t.gold):
                kw = next((k for k in c.args if k.name == "nonfree_baggages"), None)
                if kw is not None:
                    # a plain variable: its `let`; a field read inline (`r.nonfree_baggages`)
                    # or a computation: the call
                    self.roots[(t.name, nth)] = kw.value.id if isinstance(kw.value, A.Name) else None
                    nth += 1
        self.models: set[str] = set()  # tasks whose gold leaves some added bag free
        self.wrong: dict[tuple[str, int], tuple[int, int, int, str]] = {}  # first mismatch
        self.shown: bool | None = None
        self.tool = ""

    def start(self) -> None:
        """A seed value that copies the allowance table with other numbers than the policy's."""
        for stmt in (self.where.ast.seed if self.where.ast is not None and self.table else []):
            wrong = _table_differs(stmt.value, self.table)
            if wrong is None:
                continue
            member, cabin, got, want = wrong
            self.log.add(f"C168:seed:{stmt.name}", "error", "C168",
                         f"seed `{stmt.name}` gives a {member} member {got} free checked bag(s) per "
                         f"{cabin} passenger; the policy's checked bag allowance gives {want}",
                         self.where.seed_span(stmt), hint="copy the policy's allowance table")

    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        inst = env.instance
        if not self.table or seed >= MAX_SEEDS or not any(_bags(c.args or {}) for c in inst.gold):
            return
        if self.shown is None:
            self.shown = bool(_FREE.search(env.toolbox.policy or ""))
        db, box, nth = env.initial_copy(), env.toolbox, 0
        for call in inst.gold:
            args = call.args or {}
            if _bags(args) and call.name in box.writes:
                self._judge(db, inst.task, nth, args, seed)
                self.tool, nth = call.name, nth + 1
            box.run(db, call.name, call.arguments, observe=False)

    def _judge(self, db: Mapping, task: str, nth: int, args: Mapping, seed: int) -> None:
        rec = (db.get("reservations") or {}).get(args["reservation_id"])
        user = (db.get("users") or {}).get(rec.get("user_id")) if isinstance(rec, Mapping) else None
        if not isinstance(user, Mapping):
            return
        per = (self.table.get(str(user.get("membership", "")).lower()) or {}).get(rec.get("cabin"))
        total, nonfree = args["total_baggages"], args["nonfree_baggages"]
        if per is None or not all(isinstance(v, int) for v in (total, nonfree)):
            return
        added = total - rec["total_baggages"]
        if added <= 0:
            return
        left = max(0, per * len(rec.get("passengers") or []) - rec["total_baggages"]
                   + rec["nonfree_baggages"])
        want = rec["nonfree_baggages"] + max(0, added - left)
        if nonfree - rec["nonfree_baggages"] < added:
            self.models.add(task)
        if nonfree != want and (task, nth) not in self.wrong:
            why = (f"{user.get('membership')} member, {rec.get('cabin')}, "
                   f"{len(rec.get('passengers') or [])} passenger(s), {left} free bag(s) unused, "
                   f"{added} added")
            self.wrong[(task, nth)] = (seed, nonfree, want, why)

    def finish(self) -> None:
        """Report the tasks whose gold models the allowance, and models it wrong or unshown."""
        for (task, nth), (seed, got, want, why) in self.wrong.items():
            if task not in self.models:
                continue
            name = self.roots.get((task, nth))
            span = (self.where.let(task, name) if name else None) or self.where.gold(task, self.tool, nth)
            self.log.add(f"C168:{task}:{nth}", "error", "C168",
                         f"task `{task}`: bag update {nth + 1} of the gold sets nonfree_baggages = "
                         f"{got}, the policy's allowance gives {want} ({why}; seed {seed}): the "
                         "gold charges bags the policy makes free, or frees bags it charges",
                         span, task=task, seed=seed,
                         hint="count only the added bags beyond the free ones still unused "
                              "(membership and cabin, per passenger)")
        if self.models and self.shown is False:
            task = min(self.models)
            self.log.add(f"C169:{task}", "error", "C169",
                         f"task `{task}`'s gold leaves added bags free by the policy's checked "
                         f"bag allowance, which env `{self.cap.name}` does not show the agent",
                         sections_line(self.where, self.cap) or self.where.task(task), task=task,
                         hint="add the section with the checked bag allowance (\"Book flight\") "
                              "to `policy sections [...]`")
