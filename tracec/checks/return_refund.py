"""A return's refund that is not the returned items' prices (C170, error).

τ²'s retail return (`return_delivered_order_items(order_id, item_ids, ...)`) refunds the
prices of the items it names and records no amount, so C155 has no write to compare the answer
with. When the user asks what they get back ("refund", "get back") and the gold returns items,
a numeric answer must be the sum of the returned items' prices in the order (each id counted
as often as it is passed); the whole order's total, or the items kept, teaches a wrong sum.
Judged on the first ``MAX_SEEDS`` seeds (the first seed that shows it is reported), at the `let`
the answer is read from (else the `communicate`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tracec.checks.check import Check, InstanceContext

MAX_SEEDS = 32
_ASKS = re.compile(r"\b(refund(ed)?|get back|money back)\b", re.IGNORECASE)


def returned_total(order: Mapping, item_ids: list) -> float | None:
    """The sum of the prices of the order's items ``item_ids`` names (None if one is missing)."""
    prices = {i.get("item_id"): i.get("price") for i in order.get("items") or []
              if isinstance(i, Mapping)}
    if not all(isinstance(prices.get(k), (int, float)) for k in item_ids):
        return None
    return round(sum(prices[k] for k in item_ids), 2)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class ReturnRefund(Check):
    """C170 over the drawn instances; findings go to ``log``."""

    name = "a return's refund"
    codes = ("C170",)


    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        inst = env.instance
        if seed >= MAX_SEEDS or inst.task in self.done or not _ASKS.search(inst.user or ""):
            return
        answers = [(k, n, v) for k, (n, v) in enumerate(inst.communicate.items()) if _number(v)]
        orders = env.initial_db.get("orders") if isinstance(env.initial_db, Mapping) else None
        if not answers or not isinstance(orders, Mapping):
            return
        for call in inst.gold:
            args = call.args or {}
            ids, order = args.get("item_ids"), orders.get(args.get("order_id"))
            if "return" not in call.name or call.name not in env.toolbox.writes \
                    or not isinstance(ids, list) or not isinstance(order, Mapping):
                continue
            want = returned_total(order, ids)
            if want is None or any(abs(v - want) < 0.005 for _, _, v in answers):
                return
            k, name, value = answers[0]
            self.done.add(inst.task)
            span = self.where.answer(inst.task, k)
            self.log.add(f"C170:{inst.task}", "error", "C170",
                         f"task `{inst.task}`: the user asks what they get back and the gold "
                         f"returns {len(ids)} item(s) priced {want} in total, but the answer "
                         f"`{name}` is {value} (seed {seed}): the refund is the returned items' "
                         "prices", span, task=inst.task, seed=seed,
                         hint="sum the prices of the items returned, not of the whole order")
            return
