"""Policy rules beyond status (C141, error): a gold call that breaks a rule of the domain's
written policy which its API does not enforce (`tracec describe` lists them per tool:
cancellation only within 24 hours, for business, an airline-cancelled flight or insurance with
a covered reason; no flight change in basic economy; bags only added; ...).

The gold is replayed on a copy of the initial world of each drawn instance (the first
``MAX_SEEDS`` seeds); before each call, every rule of its tool is read against the world, the
call's arguments and the user's words (first message and scripted replies). A spec with its
own inline policy text replaces the domain's, and its rules with it. A break is reported
at the `pick` that drew the record when the record breaks it, at the gold call when its
arguments do (bags removed, another product; the message names the `let` the argument is),
once per task and rule.
"""

from __future__ import annotations

from typing import Any

from tracec.checks.blame import drawn_from, drawn_phrase, seed_constant
from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.checks.locate import nth_call
from tracec.checks.meaning import arg_let, picked
from tracec.checks.odd_phrase import odd_element
from tracec.lang import ast as A

MAX_SEEDS = 64


class PolicyRules(Check):
    """C141 over the drawn instances; findings go to ``log``."""

    name = "policy rules"
    codes = ("C141",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        cap = self.cap
        # a spec with its own inline policy (`policy """..."""`) replaces the domain's rules
        inline = getattr(cap, "policy", None) is not None
        self.rules = {} if inline else (getattr(cap.domain.schema, "rules", {}) or {})

    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        inst = env.instance
        if seed >= MAX_SEEDS or not any(c.name in self.rules for c in inst.gold):
            return
        words = " ".join(inst.said)
        db = env.initial_copy()
        box = env.toolbox
        for n, call in enumerate(inst.gold):
            for rule in self.rules.get(call.name, ()):
                key = (inst.task, call.name, rule.name)
                if key in self.done:
                    continue
                why = rule.check(db, call.args or {}, words)
                if why is None:
                    continue
                self.done.add(key)
                said = bool(rule.words) and rule.check(db, call.args or {},
                                                       f"{words} {rule.words}") is None
                self._report(inst, seed, n, call, rule, why, said, (db, words))
            box.run(db, call.name, call.arguments, observe=False)

    def _report(self, inst: Any, seed: int, n: int, call: Any, rule: Any, why: str,
                said: bool = False, seen: tuple[Any, str] | None = None) -> None:
        """Log the break (``seen``: the world before the call and the user's words)."""
        rid = (call.args or {}).get(rule.arg)
        nth = nth_call(inst.gold, n)
        let, span = picked(self.cap, self.where, inst, rule.kind, rule.arg, rid,
                           arg_let(self.where, inst.task, call.name, nth, rule.arg))
        made = ""
        reason = drawn_phrase(self.where, inst) if said else None
        if reason is not None:  # the user's words break it: at the `let` that draws the reason
            made = f" (the reason is `let {reason[0]}`, at line {reason[1].line})"
            span = reason[1]
            odd = self._odd(inst, call, rule, reason[0], seen)
            if odd is not None:  # ... or at the one seed list element that breaks it
                made = (f" (the reason {inst.values[reason[0]]!r}, drawn by `let {reason[0]}` "
                        f"at line {reason[1].line}, is the one text of its seed list that "
                        "breaks the rule)")
                span = odd
        drawn = f"`let {let}` draws" if let else "the task draws"
        if reason is None and let is not None and span is not None and rule.at != "call" \
                and seen is not None:
            drawn, span = self._made(inst, call, rule, let, rid, seen, drawn, span)
        if rule.at == "call" or span is None:  # the call's arguments break it: at the call
            span = self.where.gold(inst.task, call.name, nth) or span
            maker = self._maker(inst.task, call.name, nth, rule.reads)
            made = f" (`{rule.reads} = {maker[0]}`, the `let` at line {maker[1].line})" \
                if maker and maker[1] else ""
        self.log.add(f"C141:{inst.task}:{call.name}:{rule.name}", "error", "C141",
                     f"task `{inst.task}`: {drawn} {rule.kind} {rid!r} at seed {seed}, but the "
                     f"gold call `{call.name}` breaks the policy (\"{rule.section}\": "
                     f"{rule.text}): {why}{made}", span, task=inst.task, seed=seed,
                     hint="draw only records the policy allows the call on, or make the gold "
                          "refuse (and the task test the refusal)")

    def _odd(self, inst: Any, call: Any, rule: Any, let: str,
             seen: tuple[Any, str] | None) -> Any:
        """The span of the drawn reason in its seed list when every other text of that list
        keeps the rule in its place (:mod:`tracec.checks.odd_phrase`)."""
        phrase = inst.values.get(let)
        if seen is None or not isinstance(phrase, str):
            return None
        db, words = seen
        return odd_element(self.where, phrase, lambda other: rule.check(
            db, call.args or {}, words.replace(phrase, other)) is None)

    def _made(self, inst: Any, call: Any, rule: Any, let: str, rid: Any, seen: tuple[Any, str],
              drawn: str, span: Any) -> tuple[str, Any]:
        """(what draws the record, span): the seed block's constant that makes every record of
        the collection the pick draws from break the rule (`let trip_cabin = "economy"`), if
        one, else as given."""
        collection = drawn_from(self.where, inst.task, let)
        kind = self.cap.domain.entities.get(rule.kind)
        db, words = seen
        table = db.get(kind.collection) if kind is not None else None
        record = table.get(rid) if isinstance(table, dict) and isinstance(rid, str) else None
        if collection is None or not isinstance(record, dict):
            return drawn, span
        args = call.args or {}

        def holds(rec: Any) -> bool:
            world = {**db, kind.collection: {**table, rid: rec}}
            return rule.check(world, args, words) is None

        found = seed_constant(self.where, self.cap.domain.schema, rule.kind, collection, record,
                              holds)
        if found is None:
            return drawn, span
        return (f"the seed's `{collection}` fixes its {found[0]} here and `let {let}` (line "
                f"{span.line}) draws from it:"), found[1]

    def _maker(self, task: str, tool: str, nth: int, arg: str) -> Any:
        """(name, span) of the task `let` the ``nth`` gold call of ``tool`` passes as ``arg``."""
        ast = self.where.ast
        t = next((t for t in (ast.tasks if ast is not None else []) if t.name == task), None)
        calls = [c for c in A.gold_calls(t.gold) if c.name == tool] if t is not None and arg else []
        if not calls:
            return None
        value = next((kw.value for kw in calls[min(nth, len(calls) - 1)].args if kw.name == arg), None)
        return (value.id, self.where.let(task, value.id)) if isinstance(value, A.Name) else None
