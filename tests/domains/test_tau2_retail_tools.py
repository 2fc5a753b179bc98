"""Every retail tool on the τ² fixture subset: happy path and each τ² error message."""

from __future__ import annotations

import json

import pytest
from tests.domains.tau2_fixture_data import fixture_db

from tracec.domains import ToolError, get_domain

D = get_domain("retail")
ADDR = {"address1": "1 Main St", "address2": "", "city": "Austin", "state": "TX", "country": "USA",
        "zip": "78701"}


def call(db, name, **args):
    return D.call(db, name, args)


def fails(db, name, message, **args):
    with pytest.raises(ToolError) as e:
        call(db, name, **args)
    assert str(e.value) == message


def _order(db, status, source=None):
    for oid, o in db["orders"].items():
        pm = o["payment_history"][0]["payment_method_id"] if o["payment_history"] else ""
        if o["status"] == status and (source is None or pm.startswith(source)):
            return oid, o
    raise AssertionError((status, source))


def _swap(db, order, available=True):
    """An item of the order and another variant of the same product."""
    for it in order["items"]:
        for vid, v in db["products"][it["product_id"]]["variants"].items():
            if vid != it["item_id"] and v["available"] == available:
                return it, v
    raise AssertionError("no swap")


def test_lookups():
    db = fixture_db("retail")
    uid, u = next(iter(db["users"].items()))
    assert call(db, "get_user_details", user_id=uid) == u
    fails(db, "get_user_details", "User not found", user_id="nobody")
    assert call(db, "find_user_id_by_email", email=u["email"].upper()) == uid
    fails(db, "find_user_id_by_email", "User not found", email="x@y.z")
    assert call(db, "find_user_id_by_name_zip", first_name=u["name"]["first_name"].lower(),
                last_name=u["name"]["last_name"].upper(), zip=u["address"]["zip"]) == uid
    fails(db, "find_user_id_by_name_zip", "User not found", first_name="A", last_name="B", zip="0")
    oid, o = next(iter(db["orders"].items()))
    assert call(db, "get_order_details", order_id=oid) == o
    fails(db, "get_order_details", "Order not found", order_id=oid.lstrip("#"))
    pid, p = next(iter(db["products"].items()))
    assert call(db, "get_product_details", product_id=pid) == p
    fails(db, "get_product_details", "Product not found", product_id="0")
    vid, v = next(iter(p["variants"].items()))
    assert call(db, "get_item_details", item_id=vid) == v
    fails(db, "get_item_details", "Item not found", item_id=pid)
    listing = json.loads(call(db, "list_all_product_types"))
    assert listing == {x["name"]: x["product_id"] for x in db["products"].values()}
    assert list(listing) == sorted(listing)


def test_cancel_pending_order():
    db = fixture_db("retail")
    oid, o = _order(db, "pending", "gift_card")
    gift = o["payment_history"][0]["payment_method_id"]
    user = db["users"][o["user_id"]]
    balance, amount = user["payment_methods"][gift]["balance"], o["payment_history"][0]["amount"]
    fails(db, "cancel_pending_order", "Invalid reason", order_id=oid, reason="changed my mind")
    out = call(db, "cancel_pending_order", order_id=oid, reason="no longer needed")
    assert out["status"] == "cancelled" and out["cancel_reason"] == "no longer needed"
    assert out["payment_history"][-1] == {"transaction_type": "refund", "amount": amount, "payment_method_id": gift}
    assert user["payment_methods"][gift]["balance"] == round(balance + amount, 2)
    fails(db, "cancel_pending_order", "Non-pending order cannot be cancelled", order_id=oid, reason="no longer needed")
    fails(db, "cancel_pending_order", "Order not found", order_id="#W0", reason="no longer needed")


def test_modify_pending_order_items():
    db = fixture_db("retail")
    oid, o = _order(db, "pending")
    it, v = _swap(db, o)
    pm = o["payment_history"][0]["payment_method_id"]
    fails(db, "modify_pending_order_items", "The new item id should be different from the old item id",
          order_id=oid, item_ids=[it["item_id"]], new_item_ids=[it["item_id"]], payment_method_id=pm)
    fails(db, "modify_pending_order_items", "0 not found", order_id=oid, item_ids=["0"], new_item_ids=["1"],
          payment_method_id=pm)
    fails(db, "modify_pending_order_items", "The number of items to be exchanged should match",
          order_id=oid, item_ids=[it["item_id"]], new_item_ids=[], payment_method_id=pm)
    fails(db, "modify_pending_order_items", "Variant not found", order_id=oid, item_ids=[it["item_id"]],
          new_item_ids=["0"], payment_method_id=pm)
    fails(db, "modify_pending_order_items", "Payment method not found", order_id=oid,
          item_ids=[it["item_id"]], new_item_ids=[v["item_id"]], payment_method_id="paypal_0")
    old_price = it["price"]
    out = call(db, "modify_pending_order_items", order_id=oid, item_ids=[it["item_id"]],
               new_item_ids=[v["item_id"]], payment_method_id=pm)
    diff = v["price"] - old_price
    assert out["status"] == "pending (item modified)"
    assert out["payment_history"][-1] == {"transaction_type": "payment" if diff > 0 else "refund",
                                          "amount": abs(diff), "payment_method_id": pm}
    assert any(x["item_id"] == v["item_id"] and x["price"] == v["price"] for x in out["items"])
    fails(db, "modify_pending_order_items", "Non-pending order cannot be modified", order_id=oid,
          item_ids=[v["item_id"]], new_item_ids=[it["item_id"]], payment_method_id=pm)


def test_modify_pending_order_address_and_payment():
    db = fixture_db("retail")
    oid, o = _order(db, "pending")
    assert call(db, "modify_pending_order_address", order_id=oid, **ADDR)["address"] == {
        k: ADDR[k] for k in ("address1", "address2", "city", "country", "state", "zip")}
    with pytest.raises(ToolError, match=r"^1 validation error for UserAddress\nzip\n"):
        call(db, "modify_pending_order_address", order_id=oid, **ADDR | {"zip": 78701})
    user = db["users"][o["user_id"]]
    old = o["payment_history"][0]["payment_method_id"]
    fails(db, "modify_pending_order_payment", "The new payment method should be different from the current one",
          order_id=oid, payment_method_id=old)
    others = [p for p in user["payment_methods"] if p != old]
    if others:
        amount = o["payment_history"][0]["amount"]
        target = others[0]
        if user["payment_methods"][target]["source"] == "gift_card" and \
                user["payment_methods"][target]["balance"] < amount:
            fails(db, "modify_pending_order_payment", "Insufficient gift card balance to pay for the order",
                  order_id=oid, payment_method_id=target)
        else:
            out = call(db, "modify_pending_order_payment", order_id=oid, payment_method_id=target)
            assert [p["transaction_type"] for p in out["payment_history"]] == ["payment", "payment", "refund"]
            fails(db, "modify_pending_order_payment", "There should be exactly one payment for a pending order",
                  order_id=oid, payment_method_id=old)
    doid, _ = _order(db, "delivered")
    fails(db, "modify_pending_order_address", "Non-pending order cannot be modified", order_id=doid, **ADDR)
    fails(db, "modify_pending_order_payment", "Non-pending order cannot be modified", order_id=doid,
          payment_method_id=old)


def test_modify_user_address():
    db = fixture_db("retail")
    uid = next(iter(db["users"]))
    assert call(db, "modify_user_address", user_id=uid, **ADDR)["address"]["zip"] == "78701"
    fails(db, "modify_user_address", "User not found", user_id="nobody", **ADDR)


def test_exchange_and_return_delivered():
    db = fixture_db("retail")
    oid, o = _order(db, "delivered")
    it, v = _swap(db, o)
    pm = o["payment_history"][0]["payment_method_id"]
    fails(db, "exchange_delivered_order_items", "Number of 0 not found.", order_id=oid, item_ids=["0"],
          new_item_ids=["1"], payment_method_id=pm)
    fails(db, "exchange_delivered_order_items", "The number of items to be exchanged should match.",
          order_id=oid, item_ids=[it["item_id"]], new_item_ids=[], payment_method_id=pm)
    try:
        _, unavailable = _swap(db, o, available=False)
        fails(db, "exchange_delivered_order_items", f"New item {unavailable['item_id']} not found or available",
              order_id=oid, item_ids=[it["item_id"]], new_item_ids=[unavailable["item_id"]], payment_method_id=pm)
    except AssertionError:
        pass
    out = call(db, "exchange_delivered_order_items", order_id=oid, item_ids=[it["item_id"]],
               new_item_ids=[v["item_id"]], payment_method_id=pm)
    assert out["status"] == "exchange requested"
    assert out["exchange_price_difference"] == round(v["price"] - it["price"], 2)
    assert (out["exchange_items"], out["exchange_new_items"]) == ([it["item_id"]], [v["item_id"]])
    fails(db, "exchange_delivered_order_items", "Non-delivered order cannot be exchanged", order_id=oid,
          item_ids=[it["item_id"]], new_item_ids=[v["item_id"]], payment_method_id=pm)

    oid2, o2 = _order(db, "delivered")
    pm2 = o2["payment_history"][0]["payment_method_id"]
    ids = sorted(i["item_id"] for i in o2["items"])
    other = next((p for p, m in db["users"][o2["user_id"]]["payment_methods"].items()
                  if p != pm2 and m["source"] != "gift_card"), None)
    if other:
        fails(db, "return_delivered_order_items", "Payment method should be the original payment method",
              order_id=oid2, item_ids=ids, payment_method_id=other)
    fails(db, "return_delivered_order_items", "Some item not found", order_id=oid2, item_ids=ids + ids,
          payment_method_id=pm2)
    out = call(db, "return_delivered_order_items", order_id=oid2, item_ids=ids, payment_method_id=pm2)
    assert out["status"] == "return requested" and out["return_items"] == ids
    assert out["return_payment_method_id"] == pm2
    fails(db, "return_delivered_order_items", "Non-delivered order cannot be returned", order_id=oid2,
          item_ids=ids, payment_method_id=pm2)
