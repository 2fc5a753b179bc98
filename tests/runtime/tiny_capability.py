"""Capability environment `tiny_orders`, hand-written in the shape tracec generates (test fixture)."""

from __future__ import annotations

from tests.runtime.tiny_domain import DOMAIN
from tracec.domains import Tool
from tracec.runtime import lib as rt
from tracec.runtime.env import Call, Capability, CapabilityEnv, Reply, Rule, TaskDef, TaskInstance


def build_world(rng: rt.Rng, db: dict) -> dict:
    """The `seed` block; returns the seed variables."""
    users = rt.spawn(rng, DOMAIN, db, "user", rt.randint(rng, 2, 3))

    def order_fields() -> dict:
        return {"user_id": rt.pick(rng, users)["user_id"]}

    orders = rt.spawn(rng, DOMAIN, db, "order", rt.randint(rng, 3, 5), order_fields)
    return {"users": users, "orders": orders}


def task_order_total(rng: rt.Rng, db: dict, v: dict) -> TaskInstance:
    """Task `order_total`."""
    orders = v["orders"]
    o = rt.pick(rng, [o for o in orders if rt.len(o["items"]) >= 2])
    total = rt.sum_(i["price"] for i in o["items"])
    rt.clone(rng, DOMAIN, db, "order", o, {"items": rt.shuffle(rng, o["items"])})
    return TaskInstance(
        task="order_total",
        user=rt.text("Hi! What is the total of order ", o["order_id"], "?"),
        gold=[Call("get_order_details", {"order_id": o["order_id"]})],
        communicate={"total": total},
        forbid=[],
        replies=[],
        hint="Add up every item's price.",
        values={"o": o, "total": total, "must": [total]},
        distractors=("twin",),
    )


def task_cancel(rng: rt.Rng, db: dict, v: dict) -> TaskInstance:
    """Task `cancel`."""
    orders = v["orders"]
    o = rt.pick(rng, [o for o in orders if o["status"] == "pending"])
    return TaskInstance(
        task="cancel",
        user=rt.text("Please cancel order ", o["order_id"], ", I no longer need it."),
        gold=[
            Call("get_order_details", {"order_id": o["order_id"]}),
            Call("cancel_order", {"order_id": o["order_id"], "reason": "no longer needed"}),
        ],
        communicate={},
        forbid=[Call("refund", {"order_id": o["order_id"]})],
        replies=[Reply(("confirm",), "Yes, I confirm.")],
        hint="",
        values={"o": o, "must": []},
    )


def note(db: dict, text: str) -> str:
    """Inline tool `note`: records a note (writes)."""
    rt.require(text.strip(), "empty note")
    db.setdefault("notes", []).append(text)
    return "noted"


RULES = (
    Rule(1.0, "state_matches and communicated(must) and not forbidden_called",
         lambda o: o.state_matches and o.communicated(*o.v["must"]) and not o.forbidden_called),
    Rule(0.5, "0.5 * progress when progress > 0 and not forbidden_called",
         lambda o: o.progress > 0 and not o.forbidden_called, lambda o: 0.5 * o.progress),
    Rule(0.0, "otherwise", lambda o: True),
)

CAPABILITY = Capability(
    name="tiny_orders",
    description="Read orders and cancel pending ones.",
    domain=DOMAIN,
    max_turns=6,
    build_world=build_world,
    tasks=(TaskDef("order_total", 2.0, task_order_total), TaskDef("cancel", 1.0, task_cancel)),
    rules=RULES,
    tools=(Tool("note", "Write a note.", {"type": "object", "properties": {"text": {"type": "string"}},
                                          "required": ["text"]}, note, True),),
    hint="Look the order up first.",
    spec_path="tests/runtime/tiny_capability.py",
    spec_sha256="0" * 64,
)


class TinyOrdersEnv(CapabilityEnv):
    capability = CAPABILITY
