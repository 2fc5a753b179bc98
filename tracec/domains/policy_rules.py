"""Policy rules beyond status (issue 30 item 3): what a domain's written policy demands of a
write call that its API does not enforce (τ²: "The API does not check these for the agent").

Each :class:`PolicyRule` belongs to a tool and to the policy section it comes from; ``check``
reads the world before the call, the call's arguments and the user's words (their text and
scripted replies) and says why the call breaks the rule (None: it keeps it). A gold call that
breaks one is a spec bug `tracec check` reports (C141) at the `pick` that drew the record, and
``tracec describe`` lists them per tool.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Check = Callable[[Mapping, Mapping, str], "str | None"]


@dataclass(frozen=True)
class PolicyRule:
    """One rule a call of a tool must keep, from the policy section ``section``."""

    name: str  # a short id: cancel-allowed
    section: str  # the policy heading it comes from: "Cancel flight"
    text: str  # in words
    arg: str  # the argument naming the record it reads (to locate a break at its `pick`)
    kind: str  # that record's entity kind
    check: Check
    at: str = "pick"  # where a break is located: the `pick` of the record, or the gold "call"
    reads: str = ""  # for "call": the argument that breaks it (its `let`, if one, is named)
    # words the rule accepts as the user's reason: a break these words mend is the user's words'
    # (located at the `let` that draws the reason the user gives)
    words: str = ""


def by_tool(*items: tuple[tuple[str, ...], PolicyRule]) -> dict[str, tuple[PolicyRule, ...]]:
    """``by_tool((("cancel_x",), PolicyRule(...)), ...)`` per tool name."""
    out: dict[str, tuple[PolicyRule, ...]] = {}
    for tools, rule in items:
        for tool in tools:
            out[tool] = out.get(tool, ()) + (rule,)
    return out


def _record(db: Mapping, table: str, rid: Any) -> Mapping | None:
    t = db.get(table)
    rec = t.get(rid) if isinstance(t, Mapping) and isinstance(rid, str) else None
    return rec if isinstance(rec, Mapping) else None


# ----------------------------------------------------------------------------- airline

# the user's words asking for a compensation ("Do not proactively offer a compensation unless the
# user explicitly asks for one")
_ASKS_COMPENSATION = re.compile(r"\b(compensat\w*|certificates?|vouchers?|gesture|make (it|this|that) "
                                r"up|complain\w*|reimburs\w*)\b", re.IGNORECASE)
_COVERED = re.compile(r"\b(health|sick\w*|ill|illness|flu|fever|covid|medical|hospital\w*|"
                      r"doctor|surgery|injur\w*|broke|broken|accident|weather|\w*storms?|"
                      r"hurricane|tornado|flood\w*|snow\w*|blizzard)\b", re.IGNORECASE)


def _flight_statuses(db: Mapping, res: Mapping) -> list[str]:
    out = []
    for f in res.get("flights") or []:
        flight = _record(db, "flights", f.get("flight_number"))
        dates = flight.get("dates") if flight else None
        inst = dates.get(f.get("date")) if isinstance(dates, Mapping) else None
        out.append(inst.get("status") if isinstance(inst, Mapping) else "")
    return out


def airline_rules(now: str) -> dict[str, tuple[PolicyRule, ...]]:
    """The airline policy's rules for a world whose clock reads ``now`` (ISO date and time)."""
    day_before = _minus_day(now)

    def flown(db: Mapping, args: Mapping, words: str) -> str | None:
        res = _record(db, "reservations", args.get("reservation_id"))
        if res is None:
            return None
        done = [s for s in _flight_statuses(db, res) if s in ("landed", "flying")]
        return f"a flight of it is already {done[0]}" if done else None

    def cancellable(db: Mapping, args: Mapping, words: str) -> str | None:
        res = _record(db, "reservations", args.get("reservation_id"))
        if res is None:
            return None
        if str(res.get("created_at", "")) >= day_before or res.get("cabin") == "business":
            return None
        if "cancelled" in _flight_statuses(db, res):
            return None
        if res.get("insurance") == "yes":
            if _COVERED.search(words):
                return None
            return ("only its travel insurance could allow it, and the user's words give no "
                    "reason the insurance covers (health or weather)")
        return (f"it was booked at {res.get('created_at')} (not within 24 hours of {now}), in "
                f"{res.get('cabin')}, without travel insurance, and no flight of it is cancelled")

    def basic_economy(db: Mapping, args: Mapping, words: str) -> str | None:
        res = _record(db, "reservations", args.get("reservation_id"))
        if res is None or res.get("cabin") != "basic_economy":
            return None
        old = [(f.get("flight_number"), f.get("date")) for f in res.get("flights") or []]
        new = [(f.get("flight_number"), f.get("date")) for f in args.get("flights") or []
               if isinstance(f, Mapping)]
        return "it is basic economy and the call changes its flights" if new != old else None

    def bags(db: Mapping, args: Mapping, words: str) -> str | None:
        res = _record(db, "reservations", args.get("reservation_id"))
        total = args.get("total_baggages")
        if res is None or not isinstance(total, int):
            return None
        had = res.get("total_baggages") or 0
        if total < had:
            return f"it removes checked bags ({had} -> {total})"
        paid, nonfree = res.get("nonfree_baggages") or 0, args.get("nonfree_baggages")
        if isinstance(nonfree, int) and nonfree < paid:  # a paid bag made free is one removed
            return f"it drops non-free bags already paid for ({paid} -> {nonfree})"
        return None

    def passengers(db: Mapping, args: Mapping, words: str) -> str | None:
        res = _record(db, "reservations", args.get("reservation_id"))
        new = args.get("passengers")
        if res is None or not isinstance(new, list):
            return None
        had = len(res.get("passengers") or [])
        return f"it changes the number of passengers ({had} -> {len(new)})" if len(new) != had else None

    def cabin_flown(db: Mapping, args: Mapping, words: str) -> str | None:
        res = _record(db, "reservations", args.get("reservation_id"))
        if res is None or args.get("cabin") in (None, res.get("cabin")):
            return None
        done = [s for s in _flight_statuses(db, res) if s in ("landed", "flying")]
        return f"it changes the cabin, and a flight of it is already {done[0]}" if done else None

    def asked(db: Mapping, args: Mapping, words: str) -> str | None:
        return None if _ASKS_COMPENSATION.search(words) else \
            "the user never asks for a compensation"

    rid, kind = "reservation_id", "reservation"
    mine = owned("reservations", rid)
    text = "the reservation is the user's own (the user gives their user id)"
    return by_tool(
        (("cancel_reservation",), PolicyRule("own-reservation", "Cancel flight", text, rid, kind, mine)),
        (("send_certificate",), PolicyRule(
            "compensation-asked", "Refunds and Compensation", "a compensation only when the "
            "user explicitly asks for one", "user_id", "user", asked, at="call", reads="amount")),
        (("update_reservation_flights", "update_reservation_baggages",
          "update_reservation_passengers"), PolicyRule("own-reservation", "Modify flight", text,
                                                       rid, kind, mine)),
        (("cancel_reservation",), PolicyRule(
            "not-flown", "Cancel flight", "no flight of the reservation has been flown", rid,
            kind, flown)),
        (("cancel_reservation",), PolicyRule(
            "cancel-allowed", "Cancel flight", "booked within the last 24 hours, a flight "
            "cancelled by the airline, business class, or travel insurance and a reason it "
            "covers (health or weather)", rid, kind, cancellable, words="health or weather")),
        (("update_reservation_flights",), PolicyRule(
            "basic-economy", "Modify flight", "basic economy flights cannot be changed (only "
            "their cabin)", rid, kind, basic_economy)),
        (("update_reservation_flights",), PolicyRule(
            "cabin-not-flown", "Modify flight", "the cabin cannot change once a flight has "
            "been flown", rid, kind, cabin_flown)),
        (("update_reservation_baggages",), PolicyRule(
            "bags-only-added", "Modify flight", "checked bags can be added, not removed", rid,
            kind, bags, at="call", reads="total_baggages")),
        (("update_reservation_passengers",), PolicyRule(
            "same-passenger-count", "Modify flight", "the number of passengers cannot change",
            rid, kind, passengers, at="call", reads="passengers")),
    )


def owned(table: str, arg: str) -> Check:
    """The rule that the record ``arg`` names belongs to the user the user's words say they are:
    the first user id of the world their words give (`Hi, I'm mia_li_3668`), when they give one."""

    def check(db: Mapping, args: Mapping, words: str) -> str | None:
        rec = _record(db, table, args.get(arg))
        uid, users = (rec or {}).get("user_id"), db.get("users")
        if not isinstance(uid, str) or not isinstance(users, Mapping):
            return None
        said = [(m.start(), u) for u in users if isinstance(u, str) and u in words
                for m in [re.search(rf"(?<![\w-]){re.escape(u)}(?![\w-])", words)] if m]
        me = min(said)[1] if said else uid
        return None if me == uid else f"it belongs to user {uid!r}, not to {me!r}, who the user " \
            "says they are"

    return check


def _minus_day(now: str) -> str:
    return (datetime.datetime.fromisoformat(now) - datetime.timedelta(days=1)).isoformat()


# ----------------------------------------------------------------------------- retail


def retail_rules() -> dict[str, tuple[PolicyRule, ...]]:
    """The retail policy's rules: an item is exchanged or modified for one of the same product."""

    def same_product(db: Mapping, args: Mapping, words: str) -> str | None:
        order = _record(db, "orders", args.get("order_id"))
        old, new = args.get("item_ids"), args.get("new_item_ids")
        if order is None or not isinstance(old, list) or not isinstance(new, list):
            return None
        product_of = {i.get("item_id"): i.get("product_id") for i in order.get("items") or []}
        products = db.get("products") or {}
        for a, b in zip(old, new):
            owner = next((pid for pid, p in products.items()
                          if b in ((p.get("variants") or {}) if isinstance(p, Mapping) else {})), None)
            if product_of.get(a) is not None and owner is not None and owner != product_of[a]:
                return f"item {b!r} is not a variant of the product of {a!r}"
        return None

    text = "each new item is a variant of the same product as the item it replaces"
    return by_tool(
        (("modify_pending_order_items",), PolicyRule(
            "same-product", "Modify items", text, "order_id", "order", same_product, at="call",
            reads="new_item_ids")),
        (("exchange_delivered_order_items",), PolicyRule(
            "same-product", "Exchange delivered order", text, "order_id", "order", same_product, at="call",
            reads="new_item_ids")),
    )
