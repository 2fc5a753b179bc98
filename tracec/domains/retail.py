"""τ²-bench's retail domain: its 16 tools (same names, schemas, semantics, error texts) over a
plain-dict database in τ²'s ``db.json`` layout, and generators for users, products and orders.

Semantics follow ``tau2/domains/retail/tools.py`` (sierra-research/tau2-bench at a2c0247, MIT),
quirks included (``modify_pending_order_items`` prices every changed item with the *last* new
variant; unrounded price differences), so that world states hash like τ²-bench's.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tracec.core.types import BOOL, FLOAT, STR, ListT, MapT, ObjT, obj
from tracec.domains import fastrand
from tracec.domains import tau2_common as common
from tracec.domains.base import Domain, EntityKind, fresh_id, lookup, scan
from tracec.domains.jsoncopy import deep_copy
from tracec.domains.policy_rules import retail_rules
from tracec.domains.schema import Precondition, Ref, Schema, preconditions, refs
from tracec.domains.units import units

TOOLKIT = "RetailTools"

# ----------------------------------------------------------------------------- layout

NAME = obj("retail_name", first_name=STR, last_name=STR)
ADDRESS = obj(
    "retail_address", address1=STR, address2=STR, city=STR, country=STR, state=STR, zip=STR
)
PAYMENT_METHOD = obj(
    "retail_payment_method", source=STR, id=STR, brand=STR, last_four=STR, balance=FLOAT
)
VARIANT = obj("variant", item_id=STR, options=MapT(STR), available=BOOL, price=FLOAT)
ORDER_ITEM = ObjT(
    (("name", STR), ("product_id", STR), ("item_id", STR), ("price", FLOAT), ("options", MapT(STR))),
    "order_item",
)
FULFILLMENT = obj("fulfillment", tracking_id=ListT(STR), item_ids=ListT(STR))
ORDER_PAYMENT = obj("order_payment", transaction_type=STR, amount=FLOAT, payment_method_id=STR)

USER_FIELDS = {
    "user_id": STR,
    "name": NAME,
    "address": ADDRESS,
    "email": STR,
    "payment_methods": MapT(PAYMENT_METHOD),
    "orders": ListT(STR),
}
PRODUCT_FIELDS = {"name": STR, "product_id": STR, "variants": MapT(VARIANT)}
ORDER_FIELDS = {
    "order_id": STR,
    "user_id": STR,
    "address": ADDRESS,
    "items": ListT(ORDER_ITEM),
    "status": STR,
    "fulfillments": ListT(FULFILLMENT),
    "payment_history": ListT(ORDER_PAYMENT),
    "cancel_reason": STR,
    "exchange_items": ListT(STR),
    "exchange_new_items": ListT(STR),
    "exchange_payment_method_id": STR,
    "exchange_price_difference": FLOAT,
    "return_items": ListT(STR),
    "return_payment_method_id": STR,
}
ORDER_OPTIONAL = frozenset(list(ORDER_FIELDS)[7:])
LAYOUT = common.Layout(
    nullable={"order": ORDER_OPTIONAL},
    optional={"retail_payment_method": frozenset({"brand", "last_four", "balance"})},
)
RECORD_TYPES = {
    "products": ObjT(tuple(PRODUCT_FIELDS.items()), "product"),
    "users": ObjT(tuple(USER_FIELDS.items()), "user"),
    "orders": ObjT(tuple(ORDER_FIELDS.items()), "order"),
}
ORDER_STATUSES = ("pending", "processed", "delivered", "cancelled")
# every status an order can reach: generated ones, then the ones the tools set
ORDER_STATUSES_ALL = ORDER_STATUSES + (
    "exchange requested", "return requested", "pending (item modified)",
)
CANCEL_REASONS = ("no longer needed", "ordered by mistake")
PAYMENT_SOURCES = ("credit_card", "paypal", "gift_card")
SCHEMA = Schema(
    refs=refs(
        ("order", Ref("user", "user_id", "user")),
        ("order_item", Ref("product", "product_id", "product")),
    ),
    enums={
        "order": {"status": ORDER_STATUSES_ALL, "cancel_reason": CANCEL_REASONS},
        "retail_payment_method": {"source": PAYMENT_SOURCES},
        "order_payment": {"transaction_type": ("payment", "refund")},
    },
    rules=retail_rules(),
    auth_tools=("find_user_id_by_email", "find_user_id_by_name_zip"),
    sections={"cancel_pending_order": ("Cancel pending order",),
              "modify_pending_order_address": ("Modify pending order",),
              "modify_pending_order_payment": ("Modify payment",),
              "modify_pending_order_items": ("Modify items",),
              "return_delivered_order_items": ("Return delivered order",),
              "exchange_delivered_order_items": ("Exchange delivered order",)},
    units={"variant": units(price="dollars"), "order_payment": units(amount="dollars"),
           "retail_payment_method": units(balance="dollars")},
    preconditions=preconditions(
        (("cancel_pending_order", "modify_pending_order_items"),
         Precondition("order_id", "orders", "order", "status", ("pending",),
                      text="the order is pending")),
        (("modify_pending_order_address", "modify_pending_order_payment"),
         Precondition("order_id", "orders", "order", "status", ("pending",), contains=True,
                      text="the order is pending (or pending with items modified)")),
        (("return_delivered_order_items", "exchange_delivered_order_items"),
         Precondition("order_id", "orders", "order", "status", ("delivered",),
                      text="the order is delivered")),
    ),
    generators={
        "user": "Draws name, address, email and 1-3 payment methods (credit card, paypal, gift "
        "card with a 0-200 balance); `orders` fills as orders for the user are added.",
        "product": "A catalog product not used yet (12 kinds) with 3-10 variants, about 65% "
        "available, priced in the product's range.",
        "order": "Fixed `user_id`: that user (created when new); otherwise a random existing "
        "user. Without `items`: 1-5 items of existing products (adds products until there are "
        "2). Status pending/delivered (40% each), processed or cancelled unless fixed; "
        "fulfillments follow the status; `payment_history` pays the items' total with one of "
        "the user's methods (plus a refund when cancelled). Adds the id to the user's `orders`.",
    },
)


def empty_db() -> dict:
    return {"products": {}, "users": {}, "orders": {}}


def conform_db(db: Mapping[str, Any]) -> dict:
    """``db`` in the exact shape of τ²'s ``RetailDB.model_dump()``."""
    return common.conform_db(db, ("products", "users", "orders"), RECORD_TYPES, LAYOUT)


def load_db(path: str | Path) -> dict:
    """A τ² retail ``db.json`` as a plain dict in ``model_dump()`` shape."""
    return conform_db(common.load_db(path, "retail"))


class UserAddress(BaseModel):
    """τ² validates new addresses with this model (same name, same messages)."""

    address1: str
    address2: str
    city: str
    country: str
    state: str
    zip: str


# ----------------------------------------------------------------------------- lookups


def _order(db: dict, order_id: str) -> dict:
    return lookup(db, "orders", order_id, "Order not found")


def _user(db: dict, user_id: str) -> dict:
    return lookup(db, "users", user_id, "User not found")


def _product(db: dict, product_id: str) -> dict:
    return lookup(db, "products", product_id, "Product not found")


def _variant(db: dict, product_id: str, variant_id: str) -> dict:
    product = _product(db, product_id)
    if variant_id not in product["variants"]:
        raise ValueError("Variant not found")
    return product["variants"][variant_id]


def _payment_method(db: dict, user_id: str, payment_method_id: str) -> dict:
    user = _user(db, user_id)
    if payment_method_id not in user["payment_methods"]:
        raise ValueError("Payment method not found")
    return user["payment_methods"][payment_method_id]


def _gift(method: dict) -> bool:
    return method["source"] == "gift_card"


def _check_items(order: dict, item_ids: list, message) -> None:
    all_ids = [item["item_id"] for item in order["items"]]
    for item_id in item_ids:
        if item_ids.count(item_id) > all_ids.count(item_id):
            raise ValueError(message(item_id))


def _address(**fields: Any) -> dict:
    return UserAddress(**fields).model_dump()


# ----------------------------------------------------------------------------- tools


def cancel_pending_order(db: dict, order_id: str, reason: str) -> dict:
    order = _order(db, order_id)
    if order["status"] != "pending":
        raise ValueError("Non-pending order cannot be cancelled")
    if reason not in {"no longer needed", "ordered by mistake"}:
        raise ValueError("Invalid reason")
    refunds = []
    for payment in order["payment_history"]:
        pid = payment["payment_method_id"]
        refunds.append(
            {"transaction_type": "refund", "amount": payment["amount"], "payment_method_id": pid}
        )
        user = _user(db, order["user_id"])
        method = _payment_method(db, user["user_id"], pid)
        if _gift(method):
            method["balance"] = round(method["balance"] + payment["amount"], 2)
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    order["payment_history"].extend(refunds)
    return order  # live: callers serialise it (see ToolFunc)


def exchange_delivered_order_items(
    db: dict, order_id: str, item_ids: list, new_item_ids: list, payment_method_id: str
) -> dict:
    order = _order(db, order_id)
    if order["status"] != "delivered":
        raise ValueError("Non-delivered order cannot be exchanged")
    _check_items(order, item_ids, lambda i: f"Number of {i} not found.")
    if len(item_ids) != len(new_item_ids):
        raise ValueError("The number of items to be exchanged should match.")
    diff_price = 0
    for item_id, new_item_id in zip(item_ids, new_item_ids):
        item = next((it for it in order["items"] if it["item_id"] == item_id), None)
        if item is None:
            raise ValueError(f"Item {item_id} not found")
        variant = _variant(db, item["product_id"], new_item_id)
        if not variant["available"]:
            raise ValueError(f"New item {new_item_id} not found or available")
        diff_price += variant["price"] - item["price"]
    diff_price = round(diff_price, 2)
    method = _payment_method(db, order["user_id"], payment_method_id)
    if _gift(method) and method["balance"] < diff_price:
        raise ValueError("Insufficient gift card balance to pay for the price difference")
    order["status"] = "exchange requested"
    order["exchange_items"] = sorted(item_ids)
    order["exchange_new_items"] = sorted(new_item_ids)
    order["exchange_payment_method_id"] = payment_method_id
    order["exchange_price_difference"] = diff_price
    return order  # live: callers serialise it (see ToolFunc)


def find_user_id_by_name_zip(db: dict, first_name: str, last_name: str, zip: str) -> str:  # noqa: A002
    for user_id, user in scan(db["users"]):  # read only: the users are not copied
        if (
            user["name"]["first_name"].lower() == first_name.lower()
            and user["name"]["last_name"].lower() == last_name.lower()
            and user["address"]["zip"] == zip
        ):
            return user_id
    raise ValueError("User not found")


def find_user_id_by_email(db: dict, email: str) -> str:
    for user_id, user in scan(db["users"]):  # read only: the users are not copied
        if user["email"].lower() == email.lower():
            return user_id
    raise ValueError("User not found")


def get_order_details(db: dict, order_id: str) -> dict:
    return _order(db, order_id)


def get_product_details(db: dict, product_id: str) -> dict:
    return _product(db, product_id)


def get_item_details(db: dict, item_id: str) -> dict:
    for product in db["products"].values():
        if item_id in product["variants"]:
            return product["variants"][item_id]
    raise ValueError("Item not found")


def get_user_details(db: dict, user_id: str) -> dict:
    return _user(db, user_id)


def list_all_product_types(db: dict) -> str:
    return json.dumps({p["name"]: p["product_id"] for _, p in scan(db["products"])}, sort_keys=True)


def modify_pending_order_address(
    db: dict, order_id: str, address1: str, address2: str, city: str, state: str, country: str,
    zip: str,  # noqa: A002
) -> dict:
    order = _order(db, order_id)
    if "pending" not in order["status"]:
        raise ValueError("Non-pending order cannot be modified")
    order["address"] = _address(
        address1=address1, address2=address2, city=city, state=state, country=country, zip=zip
    )
    return order  # live: callers serialise it (see ToolFunc)


def modify_pending_order_items(
    db: dict, order_id: str, item_ids: list, new_item_ids: list, payment_method_id: str
) -> dict:
    order = _order(db, order_id)
    if order["status"] != "pending":
        raise ValueError("Non-pending order cannot be modified")
    _check_items(order, item_ids, lambda i: f"{i} not found")
    if len(item_ids) != len(new_item_ids):
        raise ValueError("The number of items to be exchanged should match")
    diff_price = 0
    variant = None
    for item_id, new_item_id in zip(item_ids, new_item_ids):
        if item_id == new_item_id:
            raise ValueError("The new item id should be different from the old item id")
        item = next((it for it in order["items"] if it["item_id"] == item_id), None)
        if item is None:
            raise ValueError(f"Item {item_id} not found")
        variant = _variant(db, item["product_id"], new_item_id)
        if not variant["available"]:
            raise ValueError(f"New item {new_item_id} not found or available")
        diff_price += variant["price"] - item["price"]
    method = _payment_method(db, order["user_id"], payment_method_id)
    if _gift(method) and method["balance"] < diff_price:
        raise ValueError("Insufficient gift card balance to pay for the new item")
    order["payment_history"].append(
        {
            "transaction_type": "payment" if diff_price > 0 else "refund",
            "amount": float(abs(diff_price)),
            "payment_method_id": payment_method_id,
        }
    )
    if _gift(method):
        method["balance"] = round(method["balance"] - diff_price, 2)
    for item_id, new_item_id in zip(item_ids, new_item_ids):
        item = next((it for it in order["items"] if it["item_id"] == item_id), None)
        if item is None:
            raise ValueError(f"Item {item_id} not found")
        item["item_id"] = new_item_id
        # τ² quirk: every changed item takes the price and options of the last new variant
        item["price"] = variant["price"]
        item["options"] = deep_copy(variant["options"])
    order["status"] = "pending (item modified)"
    return order  # live: callers serialise it (see ToolFunc)


def modify_pending_order_payment(db: dict, order_id: str, payment_method_id: str) -> dict:
    order = _order(db, order_id)
    if "pending" not in order["status"]:
        raise ValueError("Non-pending order cannot be modified")
    method = _payment_method(db, order["user_id"], payment_method_id)
    history = order["payment_history"]
    if len(history) != 1 or history[0]["transaction_type"] != "payment":
        raise ValueError("There should be exactly one payment for a pending order")
    if history[0]["payment_method_id"] == payment_method_id:
        raise ValueError("The new payment method should be different from the current one")
    amount = history[0]["amount"]
    if _gift(method) and method["balance"] < amount:
        raise ValueError("Insufficient gift card balance to pay for the order")
    old_id = history[0]["payment_method_id"]
    history.extend(
        [
            {"transaction_type": "payment", "amount": amount, "payment_method_id": payment_method_id},
            {"transaction_type": "refund", "amount": amount, "payment_method_id": old_id},
        ]
    )
    if _gift(method):
        method["balance"] = round(method["balance"] - amount, 2)
    old = _payment_method(db, order["user_id"], old_id)
    if _gift(old):
        old["balance"] = round(old["balance"] + amount, 2)
    return order  # live: callers serialise it (see ToolFunc)


def modify_user_address(
    db: dict, user_id: str, address1: str, address2: str, city: str, state: str, country: str,
    zip: str,  # noqa: A002
) -> dict:
    user = _user(db, user_id)
    user["address"] = _address(
        address1=address1, address2=address2, city=city, state=state, country=country, zip=zip
    )
    return user  # live: callers serialise it (see ToolFunc)


def return_delivered_order_items(
    db: dict, order_id: str, item_ids: list, payment_method_id: str
) -> dict:
    order = _order(db, order_id)
    if order["status"] != "delivered":
        raise ValueError("Non-delivered order cannot be returned")
    user = _user(db, order["user_id"])
    method = _payment_method(db, user["user_id"], payment_method_id)
    if not _gift(method) and payment_method_id != order["payment_history"][0]["payment_method_id"]:
        raise ValueError("Payment method should be the original payment method")
    _check_items(order, item_ids, lambda i: "Some item not found")
    order["status"] = "return requested"
    order["return_items"] = sorted(item_ids)
    order["return_payment_method_id"] = payment_method_id
    return order  # live: callers serialise it (see ToolFunc)


TOOL_FUNCS = {
    f.__name__: f
    for f in (
        common.calculate,
        cancel_pending_order,
        exchange_delivered_order_items,
        find_user_id_by_name_zip,
        find_user_id_by_email,
        get_order_details,
        get_product_details,
        get_item_details,
        get_user_details,
        list_all_product_types,
        modify_pending_order_address,
        modify_pending_order_items,
        modify_pending_order_payment,
        modify_user_address,
        return_delivered_order_items,
        common.transfer_to_human_agents,
    )
}


# ----------------------------------------------------------------------------- generators

# product name -> (option name -> values, price range)
CATALOG: dict[str, tuple[dict[str, tuple[str, ...]], tuple[float, float]]] = {
    "T-Shirt": ({"color": ("black", "blue", "red", "white"), "size": ("S", "M", "L", "XL"),
                 "material": ("cotton", "polyester")}, (40, 60)),
    "Laptop": ({"screen size": ("13-inch", "15-inch"), "processor": ("i5", "i7", "i9"),
                "ram": ("8GB", "16GB", "32GB"), "color": ("black", "silver")}, (1800, 2800)),
    "Running Shoes": ({"size": ("8", "9", "10", "11"), "color": ("black", "white", "red"),
                       "material": ("mesh", "synthetic")}, (140, 170)),
    "Water Bottle": ({"capacity": ("500ml", "750ml", "1000ml"),
                      "material": ("glass", "plastic", "stainless steel"),
                      "color": ("black", "blue", "green")}, (40, 60)),
    "Desk Lamp": ({"color": ("black", "silver", "white"), "brightness": ("low", "medium", "high"),
                   "power source": ("USB", "AC adapter", "battery")}, (120, 170)),
    "Backpack": ({"color": ("black", "grey", "navy"), "size": ("small", "medium", "large"),
                  "material": ("nylon", "leather")}, (170, 230)),
    "Coffee Maker": ({"color": ("black", "white"), "capacity": ("1 cup", "4 cups", "8 cups"),
                      "type": ("drip", "espresso")}, (200, 300)),
    "Headphones": ({"type": ("in-ear", "on-ear", "over-ear"), "connectivity": ("wired", "wireless"),
                    "color": ("black", "red", "white")}, (100, 400)),
    "Yoga Mat": ({"thickness": ("4mm", "5mm", "6mm"), "material": ("PVC", "TPE"),
                  "color": ("blue", "green", "pink")}, (90, 110)),
    "Smart Watch": ({"color": ("black", "gold", "silver"), "band material": ("leather", "silicone"),
                     "display": ("AMOLED", "LCD")}, (300, 400)),
    "Office Chair": ({"material": ("fabric", "leather", "mesh"), "color": ("black", "gray"),
                      "armrest": ("fixed", "adjustable")}, (400, 550)),
    "Notebook": ({"size": ("A4", "A5", "A6"), "cover type": ("hard cover", "soft cover")}, (25, 35)),
}


# The generators build their records in τ²'s shape (declared key order, floats, the order's
# null fields): what `conform` would make of them, without a second copy of every record. A
# part taken from another record (a user's address, a variant's price) is conformed as such;
# tests/domains/test_fast_generation.py checks the records against `conform_plain`.
_ADDRESS = common.plan(ADDRESS, LAYOUT)
_float = common.plan(FLOAT, LAYOUT)
_ORDER_NULLS = dict.fromkeys(list(ORDER_FIELDS)[7:])  # in declared order


def _digits(rng: random.Random, n: int) -> str:
    """``str(rng.randint(10 ** (n - 1), 10**n - 1))``, drawn as ``randint`` draws (fastrand)."""
    lo = 10 ** (n - 1)
    if not fastrand.fast(rng):
        return str(rng.randint(lo, 10**n - 1))
    width = 10**n - lo
    k = width.bit_length()
    getbits = rng.getrandbits
    r = getbits(k)
    while r >= width:
        r = getbits(k)
    return str(lo + r)


def _digits_draw(rng: random.Random, n: int) -> Callable[[], str]:
    """``lambda: _digits(rng, n)``, its constants computed once."""
    lo = 10 ** (n - 1)
    if not fastrand.fast(rng):
        return lambda: str(rng.randint(lo, 10**n - 1))
    width = 10**n - lo
    k = width.bit_length()
    getbits = rng.getrandbits

    def draw() -> str:
        r = getbits(k)
        while r >= width:
            r = getbits(k)
        return str(lo + r)

    return draw


def _all_item_ids(db: dict) -> set[str]:
    return {i for p in db.get("products", {}).values() for i in p["variants"]}


def new_product_id(rng: random.Random, db: dict) -> str:
    taken = set(db.get("products", {})) | _all_item_ids(db)
    return fresh_id(rng, taken, lambda r: _digits(r, 10))


def new_order_id(rng: random.Random, db: dict) -> str:
    return fresh_id(rng, db.get("orders", {}), lambda r: f"#W{_digits(r, 7)}")


def new_user_id(rng: random.Random, db: dict) -> str:
    first, last = common.person_name(rng)
    return common.user_id_for(rng, first, last, db.get("users", {}))


def _payment_methods(rng: random.Random, db: dict) -> dict:
    taken = {pid for u in db.get("users", {}).values() for pid in u["payment_methods"]}
    sources = rng.sample(("credit_card", "paypal", "gift_card"), rng.choice((1, 1, 2, 2, 3)))
    methods = {}
    for source in sources:
        pid = common.fresh_payment_id(rng, source, taken)
        m: dict[str, Any] = {"source": source, "id": pid}
        if source == "credit_card":
            m |= {"brand": rng.choice(("visa", "mastercard")), "last_four": f"{rng.randint(0, 9999):04d}"}
        elif source == "gift_card":
            m["balance"] = float(rng.randint(0, 200))
        methods[pid] = m
    return methods


def generate_user(rng: random.Random, db: dict, overrides: Mapping[str, Any]) -> dict:
    name = overrides.get("name")
    if name is None:
        first, last = common.person_name(rng)
        name = {"first_name": first, "last_name": last}
    first, last = name["first_name"], name["last_name"]
    user = {
        "user_id": overrides.get("user_id")
        or common.user_id_for(rng, first, last, db.get("users", {})),
        "name": dict(name),
        "address": common.address(rng),
        "email": common.email_for(rng, first, last),
        "payment_methods": _payment_methods(rng, db),
        "orders": [],
    }
    user.update(overrides)  # built in τ²'s shape (conform_plain would change nothing it drew)
    return user


_CATALOG_NAMES = sorted(CATALOG)
_CATALOG_KINDS = tuple(CATALOG.values())


def generate_product(rng: random.Random, db: dict, overrides: Mapping[str, Any]) -> dict:
    products = db.get("products", {})
    used = {p["name"] for p in products.values()}
    pick = fastrand.choice(rng)  # == rng.choice, draw for draw
    name = overrides.get("name") or pick(sorted(set(CATALOG) - used) or _CATALOG_NAMES)
    options, (lo, hi) = CATALOG.get(name, pick(_CATALOG_KINDS))
    combos: dict[tuple, dict] = {}
    items = list(options.items())
    for _ in range(fastrand.randint(rng)(3, 10)):
        combo = tuple([(k, pick(v)) for k, v in items])
        combos.setdefault(combo, dict(combo))
    taken = set(products) | _all_item_ids(db)  # what new_product_id excludes too
    ten_digits = _digits_draw(rng, 10)
    rand, uniform = rng.random, rng.uniform
    variants = {}
    for opts in combos.values():
        while (item_id := ten_digits()) in taken or item_id in variants:
            pass
        variants[item_id] = {
            "item_id": item_id,
            "options": opts,
            "available": rand() < 0.65,
            "price": round(uniform(lo, hi), 2),
        }
    product = {
        "name": name,
        "product_id": overrides.get("product_id") or fresh_id(rng, taken, lambda r: ten_digits()),
        "variants": variants,
    }
    product.update(overrides)  # built in τ²'s shape (conform_plain would change nothing it drew)
    return product


def _ensure_user(rng: random.Random, db: dict, user_id: str | None) -> dict:
    users = db.setdefault("users", {})
    if user_id is not None and user_id in users:
        return users[user_id]
    if user_id is None and users:
        return users[rng.choice(sorted(users))]
    user = generate_user(rng, db, {"user_id": user_id} if user_id else {})
    USER.add(db, user)
    return user


def _items(rng: random.Random, db: dict) -> list[dict]:
    products = db.setdefault("products", {})
    while len(products) < 2:
        PRODUCT.add(db, generate_product(rng, db, {}))
    items = []
    pick = fastrand.choice(rng)  # == rng.choice, draw for draw
    ids = sorted(products)
    for _ in range(fastrand.randint(rng)(1, 5)):
        product = products[pick(ids)]
        variant = product["variants"][pick(sorted(product["variants"]))]
        items.append(
            {
                "name": product["name"],
                "product_id": product["product_id"],
                "item_id": variant["item_id"],
                "price": _float(variant["price"]),
                "options": dict(variant["options"]),
            }
        )
    return items


_STATUS_DRAW = ("pending",) * 4 + ("delivered",) * 4 + ("processed", "cancelled")


def generate_order(rng: random.Random, db: dict, overrides: Mapping[str, Any]) -> dict:
    user = _ensure_user(rng, db, overrides.get("user_id"))
    items = overrides.get("items") or _items(rng, db)
    status = overrides.get("status") or rng.choice(_STATUS_DRAW)
    fulfillments = (
        []
        if status.startswith("pending") or status == "cancelled"
        else [{"tracking_id": [_digits(rng, 12)], "item_ids": [i["item_id"] for i in items]}]
    )
    method = rng.choice(sorted(user["payment_methods"]) or ["credit_card_0000000"])
    amount = _float(round(sum(i["price"] for i in items), 2))
    history = [{"transaction_type": "payment", "amount": amount, "payment_method_id": method}]
    if status == "cancelled":
        history.append({"transaction_type": "refund", "amount": amount, "payment_method_id": method})
    order = {
        "order_id": overrides.get("order_id") or new_order_id(rng, db),
        "user_id": user["user_id"],
        "address": _ADDRESS(dict(user["address"])) if rng.random() < 0.8 else common.address(rng),
        "items": items,
        "status": status,
        "fulfillments": fulfillments,
        "payment_history": history,
        **_ORDER_NULLS,
    }
    order.update(overrides)  # built in τ²'s shape (conform_plain would change nothing it drew)
    return order


insert_order = common.insert_with_backlink("order_id", "orders")


USER = EntityKind(
    name="user",
    collection="users",
    id_field="user_id",
    fields=USER_FIELDS,
    generate=generate_user,
    new_id=new_user_id,
    description="A customer: name, default address, email, payment methods, order ids.",
)
PRODUCT = EntityKind(
    name="product",
    collection="products",
    id_field="product_id",
    fields=PRODUCT_FIELDS,
    generate=generate_product,
    new_id=new_product_id,
    description="A product type with variants (item ids) keyed by item id: options, stock, price.",
)
ORDER = EntityKind(
    name="order",
    collection="orders",
    id_field="order_id",
    fields=ORDER_FIELDS,
    generate=generate_order,
    new_id=new_order_id,
    insert=insert_order,
    description="An order ('#W1234567'): items, status, fulfillments, payments, exchange/return.",
)


def order_total(order: Mapping[str, Any]) -> float:
    """Sum of the order's item prices (2 decimals)."""
    return round(sum(i["price"] for i in order["items"]), 2)


DOMAIN = Domain(
    name="retail",
    description="τ²-bench retail customer service: orders, returns, exchanges, addresses.",
    policy=common.read_data("retail_policy.md"),
    tools=common.build_tools("retail", TOOLKIT, TOOL_FUNCS),
    entities={"user": USER, "product": PRODUCT, "order": ORDER},
    empty_db=empty_db,
    functions={"order_total": order_total, "db_hash": common.db_hash},
    ends_episode=frozenset({"transfer_to_human_agents"}),
    schema=SCHEMA,
    record_tables=frozenset({"orders", "users", "products"}),  # tools read them by id
)
