"""A refusal the policy does not back (C160, error): the task's gold makes no write and forbids
the write the user asks for, on a record the domain's written policy lets it make.

"Please cancel reservation X" with the gold only reading X and `forbid cancel_reservation(...
X)`: the task teaches refusing. When X was booked within 24 hours, or is in business class (a
`<` for `>=`, an `or` for `and`, a day off in the pick), every policy rule of the tool
(`tracec describe` lists them) and its domain preconditions hold: the refusal is wrong, and so
is the lesson. Judged on the first ``MAX_SEEDS`` seeds, only where the forbid names the record
(every rule of the tool finds it), the user's first message gives the record's id, and the
user's words ask for the tool's action (its verb, not negated) as the record's owner (its
`user_id`, when it has one). Reported at the `pick` that drew the record, else at the forbid;
when only the user's words let the policy allow it (a reason the insurance covers), at the `let`
that draws the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tracec.checks.blame import drawn_phrase
from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.checks.meaning import picked

MAX_SEEDS = 64
# the words a user asks for a tool's action with, by the tool name's first word
_VERBS = {
    "cancel": ("cancel",),
    "update": ("change", "move", "modify", "update", "switch", "rebook"),
    "modify": ("change", "move", "modify", "update", "switch"),
    "return": ("return",),
    "exchange": ("exchange", "swap"),
    "send": ("send", "issue"),
    "remove": ("remove", "delete"),
}
_NEGATION = re.compile(r"\b(not|never|don't|do not|no need|without|rather than|instead of)\b",
                       re.IGNORECASE)


def asks_for(tool: str, text: str) -> bool:
    """The user's words ask for the tool's action: one of its verbs in a sentence that does not
    negate it before the verb."""
    verbs = _VERBS.get(tool.split("_")[0], ())
    for sentence in re.split(r"(?<=[.!?;])\s+", text):
        for verb in verbs:
            m = re.search(rf"\b{verb}", sentence, re.IGNORECASE)
            if m and not _NEGATION.search(sentence[:m.start()]):
                return True
    return False


class Refusals(Check):
    """C160 over the drawn instances; findings go to ``log``."""

    name = "refusals vs the policy"
    codes = ("C160",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        cap = self.cap
        inline = getattr(cap, "policy", None) is not None  # its own policy: not the domain's rules
        self.rules = {} if inline else (getattr(cap.domain.schema, "rules", {}) or {})
        self.pre = getattr(cap.domain.schema, "preconditions", {}) or {}
        self.tables = {k.name: k.collection for k in cap.domain.entities.values()}

    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        inst, box = env.instance, env.toolbox
        if seed >= MAX_SEEDS or not inst.forbid or any(c.name in box.writes for c in inst.gold):
            return
        words = " ".join(inst.said)
        db = env.initial_db
        for k, call in enumerate(inst.forbid):
            rules = self.rules.get(call.name, ())
            key = (inst.task, k)
            if not rules or key in self.done or call.name not in box.writes:
                continue
            args = call.args or {}
            rid = self._record(db, rules, args)
            if rid is None or str(rid) not in (inst.user or "") or not asks_for(call.name, inst.user) \
                    or not self._owner(db, rules[0], rid, inst.user or ""):
                continue
            if any(rule.check(db, args, words) is not None for rule in rules):
                continue  # a rule forbids it: the refusal is the policy's
            if any((got := p.check(db, args)) is not None and not got[0]
                   for p in self.pre.get(call.name, ())):
                continue  # the API refuses it anyway
            self.done.add(key)
            rule = rules[0]
            let, span = picked(self.cap, self.where, inst, rule.kind, rule.arg, rid)
            span = span or self.where.forbid(inst.task, k)
            drawn = f"`let {let}` draws" if let else "the task draws"
            # the user's words are what allow it (a reason the insurance covers): at the `let`
            # that draws the reason, the record's `pick` named
            reason = drawn_phrase(self.where, inst) \
                if any(r.check(db, args, "") is not None for r in rules) else None
            if reason is not None:
                line = f" (line {span.line})" if span is not None and let else ""
                drawn = (f"with the reason the user gives (`let {reason[0]}`), {drawn[0].lower()}"
                         f"{drawn[1:].replace(' draws', line + ' draws', 1)}")
                span = reason[1]
            names = "; ".join(f"\"{r.section}\": {r.text}" for r in rules)
            self.log.add(f"C160:{inst.task}:{k}", "error", "C160",
                         f"task `{inst.task}`: the gold refuses the `{call.name}` the user asks "
                         f"for (it makes no write and forbids it), but {drawn} {rule.kind} "
                         f"{rid!r} at seed {seed}, on which the policy allows it ({names}): the "
                         "task teaches refusing what the policy allows", span,
                         task=inst.task, seed=seed,
                         hint="draw only records the policy forbids the call on (check the "
                              "comparison, `and`/`or`, and the threshold of the pick)")

    def _owner(self, db: Mapping, rule: Any, rid: Any, user: str) -> bool:
        """The user speaks as the record's owner (its `user_id` in their words), when it has one:
        a refusal to a stranger is not the policy rules' to judge."""
        rec = db[self.tables[rule.kind]][rid]
        owner = rec.get("user_id") if isinstance(rec, Mapping) else None
        return not isinstance(owner, str) or owner in user

    def _record(self, db: Mapping, rules: Any, args: Mapping) -> Any:
        """The id of the record every rule reads, when the forbid names one that exists."""
        rid = None
        for rule in rules:
            value = args.get(rule.arg)
            table = db.get(self.tables.get(rule.kind, ""))
            if not isinstance(value, str) or not isinstance(table, Mapping) or value not in table:
                return None
            if rid is not None and value != rid:
                return None
            rid = value
        return rid
