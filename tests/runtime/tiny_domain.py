"""A tiny shop domain for runtime tests: users, orders, four tools (follows tracec/domains/base.py)."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from tracec.core.types import FLOAT, INT, STR, ListT
from tracec.domains.base import Domain, EntityKind, Tool, ToolError

ITEMS = (("mug", 12.5), ("lamp", 40.0), ("book", 18.25), ("pen", 3.1), ("chair", 99.99), ("rug", 120.0))


def _user_id(rng: random.Random, db: dict) -> str:
    while True:
        uid = f"u{rng.randrange(1000, 9999)}"
        if uid not in db.get("users", {}):
            return uid


def _order_id(rng: random.Random, db: dict) -> str:
    while True:
        oid = f"#O{rng.randrange(10000, 99999)}"
        if oid not in db.get("orders", {}):
            return oid


def gen_user(rng: random.Random, db: dict, overrides: Mapping[str, Any]) -> dict:
    return {
        "user_id": overrides.get("user_id") or _user_id(rng, db),
        "name": rng.choice(["Ann", "Bo", "Cy", "Di"]),
        "orders": [],
    }


def gen_order(rng: random.Random, db: dict, overrides: Mapping[str, Any]) -> dict:
    n = rng.randint(1, 3)
    items = [{"name": name, "price": price} for name, price in rng.sample(ITEMS, n)]
    return {
        "order_id": overrides.get("order_id") or _order_id(rng, db),
        "user_id": overrides.get("user_id", ""),
        "items": items,
        "status": rng.choice(["pending", "pending", "delivered"]),
        "refunded": 0,
    }


def _insert_order(kind: EntityKind, db: dict, record: dict) -> None:
    db.setdefault("orders", {})[record["order_id"]] = record
    user = db.get("users", {}).get(record.get("user_id"))
    if user is not None:
        user["orders"].append(record["order_id"])


def _order(db: dict, order_id: str) -> dict:
    order = db["orders"].get(order_id)
    if order is None:
        raise ToolError("Order not found")
    return order


def get_user_details(db: dict, user_id: str) -> dict:
    user = db["users"].get(user_id)
    if user is None:
        raise ToolError("User not found")
    return user


def get_order_details(db: dict, order_id: str) -> dict:
    return _order(db, order_id)


def cancel_order(db: dict, order_id: str, reason: str) -> dict:
    order = _order(db, order_id)
    if order["status"] != "pending":
        raise ToolError("Non-pending order cannot be cancelled")
    order["status"] = "cancelled"
    return order


def refund(db: dict, order_id: str, amount: float = 1.0) -> str:
    _order(db, order_id)["refunded"] += amount
    return "refunded"


def transfer_to_human_agents(db: dict, summary: str) -> str:
    return "Transfer successful"


def broken_tool(db: dict) -> str:
    return str(1 / 0)


def _schema(props: dict, required: list[str]) -> dict:
    return {"type": "object", "properties": props, "required": required}


TOOLS = {
    t.name: t
    for t in (
        Tool("get_user_details", "Get a user.", _schema({"user_id": {"type": "string"}}, ["user_id"]),
             get_user_details, False),
        Tool("get_order_details", "Get an order.", _schema({"order_id": {"type": "string"}}, ["order_id"]),
             get_order_details, False),
        Tool("cancel_order", "Cancel a pending order.",
             _schema({"order_id": {"type": "string"},
                      "reason": {"type": "string", "enum": ["no longer needed", "ordered by mistake"]}},
                     ["order_id", "reason"]),
             cancel_order, True),
        Tool("refund", "Refund an order.",
             _schema({"order_id": {"type": "string"}, "amount": {"type": "number"}}, ["order_id"]),
             refund, True),
        Tool("transfer_to_human_agents", "Transfer to a human.",
             _schema({"summary": {"type": "string"}}, ["summary"]), transfer_to_human_agents, False),
        Tool("broken_tool", "Always fails (a domain bug).", _schema({}, []), broken_tool, False),
    )
}

DOMAIN = Domain(
    name="tinyshop",
    description="A tiny shop for tests.",
    policy="You are a shop agent. Cancel only pending orders.",
    tools=TOOLS,
    entities={
        "user": EntityKind("user", "users", "user_id", {"user_id": STR, "name": STR, "orders": ListT(STR)},
                           gen_user, _user_id),
        "order": EntityKind("order", "orders", "order_id",
                            {"order_id": STR, "user_id": STR, "items": ListT(), "status": STR, "refunded": FLOAT,
                             "n": INT},
                            gen_order, _order_id, _insert_order),
    },
    empty_db=lambda: {"users": {}, "orders": {}},
    ends_episode=frozenset({"transfer_to_human_agents"}),
)
