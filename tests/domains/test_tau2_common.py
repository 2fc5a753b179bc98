"""Tool lists, schemas, layouts and generators of the τ² airline and retail domains."""

from __future__ import annotations

import copy
import json
import random

import jsonschema
import pytest

from tracec.domains import ToolError, get_domain
from tracec.domains import tau2_common as common
from tracec.domains.airline import LAYOUT as AIRLINE_LAYOUT
from tracec.domains.airline import RECORD_TYPES as AIRLINE_TYPES
from tracec.domains.retail import LAYOUT as RETAIL_LAYOUT
from tracec.domains.retail import RECORD_TYPES as RETAIL_TYPES

from tests.domains.tau2_fixture_data import expected, fixture_db, fixture_tasks

# τ²-bench (sierra-research/tau2-bench a2c0247) AirlineTools / RetailTools, in class order
TAU2_AIRLINE = [
    "book_reservation", "calculate", "cancel_reservation", "get_reservation_details",
    "get_user_details", "list_all_airports", "search_direct_flight", "search_onestop_flight",
    "send_certificate", "transfer_to_human_agents", "update_reservation_baggages",
    "update_reservation_flights", "update_reservation_passengers", "get_flight_status",
]
TAU2_RETAIL = [
    "calculate", "cancel_pending_order", "exchange_delivered_order_items",
    "find_user_id_by_name_zip", "find_user_id_by_email", "get_order_details",
    "get_product_details", "get_item_details", "get_user_details", "list_all_product_types",
    "modify_pending_order_address", "modify_pending_order_items", "modify_pending_order_payment",
    "modify_user_address", "return_delivered_order_items", "transfer_to_human_agents",
]
WRITES = {
    "airline": {"book_reservation", "cancel_reservation", "send_certificate",
                "update_reservation_baggages", "update_reservation_flights",
                "update_reservation_passengers"},
    "retail": {"cancel_pending_order", "exchange_delivered_order_items",
               "modify_pending_order_address", "modify_pending_order_items",
               "modify_pending_order_payment", "modify_user_address",
               "return_delivered_order_items"},
}
TYPES = {"airline": (AIRLINE_TYPES, AIRLINE_LAYOUT), "retail": (RETAIL_TYPES, RETAIL_LAYOUT)}


def test_tool_names_and_order_match_tau2():
    assert list(get_domain("airline").tools) == TAU2_AIRLINE
    assert list(get_domain("retail").tools) == TAU2_RETAIL


@pytest.mark.parametrize("name", ["airline", "retail"])
def test_writes_and_ends_episode(name):
    d = get_domain(name)
    assert {t.name for t in d.tools.values() if t.writes} == WRITES[name]
    assert d.ends_episode == frozenset({"transfer_to_human_agents"})
    assert "transfer_to_human_agents" in d.tools
    assert len(d.policy) > 1000 and "policy" in d.policy.lower()


@pytest.mark.parametrize("name", ["airline", "retail"])
def test_schemas_are_valid_json_schema(name):
    for schema in get_domain(name).tool_schemas():
        fn = schema["function"]
        params = fn["parameters"]
        jsonschema.Draft202012Validator.check_schema(params)
        assert params["type"] == "object" and fn["description"]
        assert set(params.get("required", [])) <= set(params["properties"])


def test_schema_accepts_gold_arguments():
    for name in ("airline", "retail"):
        d = get_domain(name)
        for task in fixture_tasks(name):
            for a in task["actions"]:
                jsonschema.validate(a["arguments"], d.tools[a["name"]].parameters)


@pytest.mark.parametrize("name", ["airline", "retail"])
def test_gold_actions_reach_tau2_state(name):
    """Replaying gold actions gives exactly the db hash τ²-bench's own code computed."""
    d, exp = get_domain(name), expected(name)
    assert common.db_hash(fixture_db(name)) == exp["initial"]
    for task in fixture_tasks(name):
        db = fixture_db(name)
        errors = []
        for a in task["actions"]:
            try:
                d.call(db, a["name"], a["arguments"])
            except ToolError as e:
                errors.append(f"Error: {e}")
        assert errors == exp["after_gold"][task["id"]]["errors"], task["id"]
        assert common.db_hash(db) == exp["after_gold"][task["id"]]["hash"], task["id"]


@pytest.mark.parametrize("name", ["airline", "retail"])
def test_fixture_records_validate(name):
    types, layout = TYPES[name]
    db = fixture_db(name)
    for coll, t in types.items():
        for rec in db[coll].values():
            assert common.check(rec, t, layout) == []


def test_check_reports_problems():
    t, layout = AIRLINE_TYPES["reservations"], AIRLINE_LAYOUT
    rec = next(iter(fixture_db("airline")["reservations"].values()))
    bad = copy.deepcopy(rec) | {"total_baggages": "2", "extra": 1}
    del bad["cabin"]
    problems = common.check(bad, t, layout)
    assert any("total_baggages" in p for p in problems)
    assert any("extra" in p for p in problems)
    assert any("cabin: missing" in p for p in problems)


def test_argument_errors_read_like_tau2():
    d = get_domain("airline")
    with pytest.raises(ToolError, match=r"^AirlineTools.get_user_details\(\) missing 1 required"):
        d.call({}, "get_user_details", {})
    with pytest.raises(ToolError, match="unexpected keyword argument 'x'"):
        d.call(fixture_db("airline"), "get_user_details", {"user_id": "a", "x": 1})
    r = get_domain("retail")
    with pytest.raises(ToolError, match=r"^RetailTools.calculate\(\)"):
        r.call({}, "calculate", {})


def test_calculate_and_transfer():
    d = get_domain("retail")
    assert d.call({}, "calculate", {"expression": "(2 + 3) * 4 / 3"}) == "6.67"
    with pytest.raises(ToolError, match="^Invalid characters in expression$"):
        d.call({}, "calculate", {"expression": "__import__('os')"})
    with pytest.raises(ToolError, match="division by zero"):
        d.call({}, "calculate", {"expression": "1/0"})
    assert d.call({}, "transfer_to_human_agents", {"summary": "x"}) == "Transfer successful"


# ----------------------------------------------------------------------------- generators


def _world(name: str, seed: int, n: int = 4) -> dict:
    d = get_domain(name)
    rng = random.Random(seed)
    db = d.empty_db()
    for kind in d.entities.values():
        for _ in range(n):
            kind.add(db, kind.generate(rng, db, {}))
    return db


@pytest.mark.parametrize("name", ["airline", "retail"])
def test_generation_is_deterministic_per_seed(name):
    a, b, c = _world(name, 7), _world(name, 7), _world(name, 8)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert common.db_hash(a) != common.db_hash(c)


@pytest.mark.parametrize("name", ["airline", "retail"])
@pytest.mark.parametrize("seed", range(5))
def test_generated_records_validate(name, seed):
    types, layout = TYPES[name]
    db = _world(name, seed)
    d = get_domain(name)
    for kind in d.entities.values():
        t = types[kind.collection]
        assert [k for k, _ in t.fields] == list(kind.fields)
        for rec_id, rec in db[kind.collection].items():
            assert rec[kind.id_field] == rec_id
            assert common.check(rec, t, layout) == [], rec_id


def test_airline_references_are_consistent():
    for seed in range(5):
        db = _world("airline", seed)
        for rid, r in db["reservations"].items():
            user = db["users"][r["user_id"]]
            assert rid in user["reservations"]
            assert len(rid) == 6 and rid.isalnum() and rid.isupper()
            for f in r["flights"]:
                flight = db["flights"][f["flight_number"]]
                assert (f["origin"], f["destination"]) == (flight["origin"], flight["destination"])
                inst = flight["dates"][f["date"]]
                if inst["status"] == "available":
                    assert f["price"] == inst["prices"][r["cabin"]]
            for p in r["payment_history"]:
                assert p["payment_id"] in user["payment_methods"]
            n = len(r["passengers"])
            total = sum(f["price"] for f in r["flights"]) * n + (30 * n if r["insurance"] == "yes" else 0)
            assert sum(p["amount"] for p in r["payment_history"]) == total
            if r["flight_type"] == "round_trip":
                assert r["flights"][-1]["destination"] == r["origin"]
        for u in db["users"].values():
            assert all(x in db["reservations"] for x in u["reservations"])
        for f in db["flights"].values():
            assert f["flight_number"].startswith("HAT") and len(f["dates"]) == 30


def test_retail_references_are_consistent():
    for seed in range(5):
        db = _world("retail", seed)
        for oid, o in db["orders"].items():
            assert oid.startswith("#W") and len(oid) == 9
            user = db["users"][o["user_id"]]
            assert oid in user["orders"]
            for it in o["items"]:
                v = db["products"][it["product_id"]]["variants"][it["item_id"]]
                assert (it["price"], it["options"]) == (v["price"], v["options"])
            assert o["payment_history"][0]["payment_method_id"] in user["payment_methods"]
            assert o["payment_history"][0]["amount"] == round(sum(i["price"] for i in o["items"]), 2)
            assert bool(o["fulfillments"]) == (o["status"] in ("processed", "delivered"))


def test_overrides_are_honoured():
    d = get_domain("airline")
    rng = random.Random(3)
    db = d.empty_db()
    user = d.entities["user"].generate(rng, db, {"membership": "gold"})
    d.entities["user"].add(db, user)
    assert user["membership"] == "gold"
    res = d.entities["reservation"].generate(rng, db, {"user_id": user["user_id"], "cabin": "business",
                                                       "insurance": "no"})
    d.entities["reservation"].add(db, res)
    assert res["cabin"] == "business" and res["user_id"] == user["user_id"]
    assert res["payment_history"][0]["payment_id"] in user["payment_methods"]
    assert db["users"][user["user_id"]]["reservations"] == [res["reservation_id"]]
    # a reservation for an unknown user creates that user; flights are created when missing
    db2 = d.empty_db()
    r2 = d.entities["reservation"].generate(rng, db2, {"user_id": "new_person_1234"})
    assert "new_person_1234" in db2["users"] and db2["flights"]
    assert r2["user_id"] == "new_person_1234"

    rd = get_domain("retail")
    db3 = rd.empty_db()
    order = rd.entities["order"].generate(rng, db3, {"status": "delivered"})
    rd.entities["order"].add(db3, order)
    assert order["status"] == "delivered" and order["fulfillments"]
    assert db3["products"] and order["order_id"] in db3["users"][order["user_id"]]["orders"]


@pytest.mark.parametrize("name", ["airline", "retail"])
def test_new_ids_are_fresh(name):
    d = get_domain(name)
    db = _world(name, 1)
    rng = random.Random(0)
    for kind in d.entities.values():
        ids = {kind.new_id(rng, db) for _ in range(20)}
        assert not ids & set(db[kind.collection])
    if name == "airline":  # ids τ²'s book_reservation hands out are never generated
        assert not {"HATHAT", "HATHAU", "HATHAV"} & {
            d.entities["reservation"].new_id(rng, db) for _ in range(50)
        }


@pytest.mark.parametrize("name", ["airline", "retail"])
def test_tools_work_on_generated_worlds(name):
    d = get_domain(name)
    db = _world(name, 2)
    if name == "airline":
        r = next(iter(db["reservations"].values()))
        assert d.call(db, "get_reservation_details", {"reservation_id": r["reservation_id"]}) == r
        out = d.call(db, "cancel_reservation", {"reservation_id": r["reservation_id"]})
        assert out["status"] == "cancelled"
    else:
        o = next(iter(db["orders"].values()))
        assert d.call(db, "get_order_details", {"order_id": o["order_id"]}) == o
        user_id = d.call(db, "find_user_id_by_email", {"email": db["users"][o["user_id"]]["email"]})
        assert user_id == o["user_id"]
