"""A refused record's twin that the policy refuses just the same (C193, warning).

A refusal task (the gold makes no write and forbids the write the user asks for, on a record a
domain policy rule forbids it on; see :mod:`tracec.checks.refusals`) with a `clone` distractor
of that record: the twin is there so that an agent must read the right record, so the policy
must let the forbidden call through on the twin (a recent booking beside the old one). When
the rules forbid the call on the twin too, on most of the first ``MAX_SEEDS`` seeds, an agent
that reads the wrong record refuses just as rightly: the distractor is inert (C341 judges the
field an answer reads; this is its refusal twin). At the `distractor`.
"""

from __future__ import annotations

from collections.abc import Mapping

from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.lang import ast as A

MAX_SEEDS = 32
MIN_SEEDS = 4


def _differ(a: Mapping, b: Mapping) -> int:
    return sum(1 for k in a.keys() | b.keys() if a.get(k) != b.get(k))


class RefusedTwins(Check):
    """C193 over the drawn instances; findings go to ``log`` in :meth:`finish`."""

    name = "refused twins"
    codes = ("C193",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        cap = self.cap
        inline = getattr(cap, "policy", None) is not None
        self.rules = {} if inline else (getattr(cap.domain.schema, "rules", {}) or {})
        self.tables = {k.name: k.collection for k in cap.domain.entities.values()}
        self.clones: dict[str, list[tuple[str, int]]] = {}  # task -> (distractor, fields set)
        for t in (self.where.ast.tasks if self.where.ast is not None else []):
            self.clones[t.name] = [(d.name, len(s.fields)) for d in t.distractors for s in d.stmts
                                   if isinstance(s, A.Clone)]
        self.tally: dict[tuple[str, str], list[int]] = {}  # (task, distractor) -> [seen, same, seed]

    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        inst, box = env.instance, env.toolbox
        clones = self.clones.get(inst.task)
        if seed >= MAX_SEEDS or not clones or not inst.forbid \
                or any(c.name in box.writes for c in inst.gold):
            return
        db = env.initial_db
        words = " ".join(inst.said)
        for call in inst.forbid:
            rules = self.rules.get(call.name, ())
            args = dict(call.args or {})
            if not rules or call.name not in box.writes:
                continue
            arg, table = rules[0].arg, db.get(self.tables.get(rules[0].kind, ""))
            rid = args.get(arg)
            if not isinstance(table, Mapping) or not isinstance(rid, str) or rid not in table \
                    or any(r.arg != arg for r in rules) \
                    or not any(r.check(db, args, words) is not None for r in rules):
                continue  # not a refusal the rules make on one record
            rec = table[rid]
            if not isinstance(rec, Mapping):
                continue
            for name, nfields in clones:
                # the twin: the other record closest to the refused one (its id and the clone's
                # fields apart)
                near = sorted((_differ(rec, o), k) for k, o in table.items()
                              if k != rid and isinstance(o, Mapping))
                if not near or near[0][0] > nfields + 1:
                    continue
                twin = near[0][1]
                t = self.tally.setdefault((inst.task, name), [0, 0, seed])
                t[0] += 1
                if any(r.check(db, {**args, arg: twin}, words) is not None for r in rules):
                    t[1] += 1
            return

    def finish(self) -> None:
        for (task, name), (seen, same, seed) in self.tally.items():
            if seen < MIN_SEEDS or same * 2 <= seen:
                continue
            ts = self.where.tasks.get(task)
            self.log.add(f"C193:{task}:{name}", "warning", "C193",
                         f"task `{task}`: the distractor `{name}` clones the record the gold "
                         f"refuses, but the policy refuses the forbidden call on the twin too on "
                         f"{same} of {seen} seeds: an agent that reads the wrong record refuses "
                         "as rightly, the twin teaches nothing",
                         ts.distractors.get(name) if ts else None, task=task, seed=seed,
                         hint="give the twin a value of the field the rule reads that the policy "
                              "allows (a recent `created_at`, a covered reason)")
