"""The gold's payment method against the kind the user names (C172, error): the user's own
words direct the money to or from one kind of payment method ("put the refund on my gift
card", "charge it to my credit card"; not "I have a gift card too"), the user holds one of that
kind, and a gold argument passes a method of another
kind (the original credit card), which the user's words do not name by its id.

A payment method is a value of a record's map of methods whose entries have a ``source``
(τ²'s `payment_methods`: `credit_card`, `gift_card`, `paypal`, `certificate`); its kind is said
as the source's words (``gift card``). The words read are the literal text of the task's `user`
statement (not its interpolations, nor a `say` distractor appended to it). Judged on the first
``MAX_SEEDS`` seeds, reported once per task at the `user` statement.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tracec.checks.behaviours import world_records
from tracec.checks.check import Check, InstanceContext, RunContext

MAX_SEEDS = 32
SCANS = 8  # after reading this many worlds, a task whose words name no kind seen is skipped


def _methods(db: Mapping) -> dict[str, tuple[Mapping, Mapping]]:
    """method id -> (the method, its holder's map of methods), over every record of the world
    with a map of methods that have a ``source``."""
    out: dict[str, tuple[Mapping, Mapping]] = {}
    for rec in world_records(db):
        for value in rec.values():
            if isinstance(value, Mapping) and value and all(
                    isinstance(m, Mapping) and isinstance(m.get("source"), str)
                    for m in value.values()):
                for mid, m in value.items():
                    out[mid] = (m, value)
        # records without such a map cost one pass over their fields
    return out


def _words(source: str) -> str:
    return source.replace("_", " ").lower()


def directed(source: str, text: str) -> bool:
    """The text directs money to or from the user's method of that kind ("on my gift card",
    "charge it to my PayPal", "pay with my credit card"), not only mentions one ("I have a gift
    card too")."""
    return re.search(rf"\b(?:to|on|onto|into|with|via|using|from|by) (?:my|the|a|that) "
                     rf"{re.escape(_words(source))}\b", text) is not None


class PaymentKind(Check):
    """C172 over the first seeds; findings go to ``log``."""

    name = "payment method vs the kind the user names"
    codes = ("C172",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        # task -> its user text outside `{...}`, lower case
        self.literal = {name: ts.user_literal.lower() for name, ts in self.where.tasks.items()}
        self.kinds: set[str] = set()  # the kinds of the methods of the worlds read
        self.scans = 0  # worlds read for their methods

    def instance(self, ctx: InstanceContext) -> None:
        inst, seed = ctx.inst, ctx.seed
        literal = self.literal.get(inst.task, "")
        if seed >= MAX_SEEDS or inst.task in self.done or not literal:
            return
        args = [(c, k, v) for c in inst.gold for k, v in (c.args or {}).items() if isinstance(v, str)]
        if not args:
            return
        methods: dict[str, tuple[Mapping, Mapping]] | None = None
        if self.scans >= SCANS and not any(directed(k, literal) for k in self.kinds):
            self.done.add(inst.task)  # the user's words name no kind of method: nothing to judge
            return
        for call, arg, value in args:
            if methods is None:
                methods = _methods(ctx.env.initial_db)
                self.scans += 1
                self.kinds |= {str(m.get("source")) for m, _ in methods.values()}
                if not methods:
                    return
            if value not in methods or value.lower() in inst.user.lower():
                continue
            method, held = methods[value]
            kinds = {str(m.get("source")) for m in held.values() if isinstance(m, Mapping)}
            named = {k for k in kinds if directed(k, literal)}
            if len(named) != 1 or method.get("source") in named:
                continue
            self.done.add(inst.task)
            said = _words(next(iter(named)))
            self._report(inst.task, seed, call.name, arg, value, said, _words(str(method.get("source"))))
            return

    def _report(self, task: str, seed: int, tool: str, arg: str, value: Any, said: str, kind: str) -> None:
        ts = self.where.tasks.get(task)
        self.log.add(f"C172:{task}", "error", "C172",
                     f"task `{task}`: the user asks for their {said}, but the gold's `{tool}` "
                     f"passes {arg} = {value!r}, a {kind} (first at seed {seed}): the agent that "
                     "does what the user says is scored wrong",
                     ts.user if ts is not None and ts.user is not None else self.where.task(task),
                     task=task, seed=seed,
                     hint=f"pass the user's {said} in the gold, or let the user's words name the "
                          f"{kind}")
