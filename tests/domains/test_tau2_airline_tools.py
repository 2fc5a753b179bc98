"""Every airline tool on the τ² fixture subset: happy path and each τ² error message."""

from __future__ import annotations

import pytest
from tests.domains.tau2_fixture_data import fixture_db

from tracec.domains import ToolError, get_domain

D = get_domain("airline")


def call(db, name, **args):
    return D.call(db, name, args)


def fails(db, name, message, **args):
    with pytest.raises(ToolError) as e:
        call(db, name, **args)
    assert str(e.value) == message
    return e


def _available(db, cabin="economy", seats=1):
    for f in db["flights"].values():
        for date, inst in sorted(f["dates"].items()):
            if inst["status"] == "available" and inst["available_seats"][cabin] >= seats:
                return f, date
    raise AssertionError("no available flight in fixture")


def _user_with(db, source):
    for u in db["users"].values():
        for pid, m in u["payment_methods"].items():
            if m["source"] == source:
                return u, pid
    raise AssertionError(source)


def test_lookups():
    db = fixture_db("airline")
    uid, rid = next(iter(db["users"])), next(iter(db["reservations"]))
    assert call(db, "get_user_details", user_id=uid) == db["users"][uid]
    assert call(db, "get_reservation_details", reservation_id=rid) == db["reservations"][rid]
    fails(db, "get_user_details", "User nobody not found", user_id="nobody")
    fails(db, "get_reservation_details", "Reservation XXXXXX not found", reservation_id="XXXXXX")
    airports = call(db, "list_all_airports")
    assert len(airports) == 20 and {"iata": "SFO", "city": "San Francisco"} in airports
    f = next(iter(db["flights"].values()))
    date = sorted(f["dates"])[0]
    assert call(db, "get_flight_status", flight_number=f["flight_number"], date=date) == f["dates"][date]["status"]
    fails(db, "get_flight_status", "Flight HAT999 not found", flight_number="HAT999", date=date)
    fails(db, "get_flight_status", f"Flight {f['flight_number']} not found on date 2024-06-01",
          flight_number=f["flight_number"], date="2024-06-01")


def test_search_direct_and_onestop():
    db = fixture_db("airline")
    f, date = _available(db)
    found = call(db, "search_direct_flight", origin=f["origin"], destination=f["destination"], date=date)
    assert f["flight_number"] in [x["flight_number"] for x in found]
    for x in found:
        assert x["date"] is None and x["status"] == "available"
        assert x["prices"] == db["flights"][x["flight_number"]]["dates"][date]["prices"]
    assert call(db, "search_direct_flight", origin="XXX", destination="YYY", date=date) == []
    # every one-stop pair connects, the second leg leaves after the first arrives
    pairs = []
    for dest in {g["destination"] for g in db["flights"].values()}:
        pairs += call(db, "search_onestop_flight", origin=f["origin"], destination=dest, date=date)
    assert pairs, "fixture has a one-stop connection"
    for a, b in pairs:
        assert a["origin"] == f["origin"] and a["destination"] == b["origin"]
        assert b["scheduled_departure_time_est"] >= a["scheduled_arrival_time_est"]
        assert a["date"] == date


def test_book_reservation_and_errors():
    db = fixture_db("airline")
    user, gift = _user_with(db, "gift_card")
    credit = next(p for p, m in user["payment_methods"].items() if m["source"] == "credit_card")
    f, date = _available(db, "economy", 2)
    price = f["dates"][date]["prices"]["economy"]
    seats = f["dates"][date]["available_seats"]["economy"]
    pax = [{"first_name": "A", "last_name": "B", "dob": "1990-01-01"}] * 2
    total = price * 2 + 30 * 2 + 50
    args = dict(user_id=user["user_id"], origin=f["origin"], destination=f["destination"],
                flight_type="one_way", cabin="economy",
                flights=[{"flight_number": f["flight_number"], "date": date}], passengers=pax,
                payment_methods=[{"payment_id": credit, "amount": total}], total_baggages=2,
                nonfree_baggages=1, insurance="yes")
    fails(db, "book_reservation", f"Payment amount does not add up, total price is {total}, but paid {total - 1}",
          **args | {"payment_methods": [{"payment_id": credit, "amount": total - 1}]})
    fails(db, "book_reservation", "Payment method credit_card_0 not found",
          **args | {"payment_methods": [{"payment_id": "credit_card_0", "amount": total}]})
    balance = user["payment_methods"][gift]["amount"]
    fails(db, "book_reservation", f"Not enough balance in payment method {gift}",
          **args | {"payment_methods": [{"payment_id": gift, "amount": int(balance) + 1}]})
    fails(db, "book_reservation", "User nobody not found", **args | {"user_id": "nobody"})
    fails(db, "book_reservation", "Flight HAT999 not found",
          **args | {"flights": [{"flight_number": "HAT999", "date": date}]})
    with pytest.raises(ToolError, match=r"1 validation error for Reservation\ncabin\n  Input should be"):
        call(db, "book_reservation", **args | {"cabin": "first"})
    assert "HATHAT" not in db["reservations"]  # failures change nothing

    out = call(db, "book_reservation", **args)
    assert out["reservation_id"] == "HATHAT" and out["created_at"] == "2024-05-15T15:00:00"
    assert out["flights"] == [{"flight_number": f["flight_number"], "origin": f["origin"],
                               "destination": f["destination"], "date": date, "price": price}]
    assert out["status"] is None and out["payment_history"] == [{"payment_id": credit, "amount": total}]
    assert db["users"][user["user_id"]]["reservations"][-1] == "HATHAT"
    assert f["dates"][date]["available_seats"]["economy"] == seats - 2
    assert call(db, "book_reservation", **args)["reservation_id"] == "HATHAU"
    assert call(db, "book_reservation", **args)["reservation_id"] == "HATHAV"
    fails(db, "book_reservation", "Too many reservations", **args)


def test_book_with_certificate_removes_it_and_gift_card_is_charged():
    db = fixture_db("airline")
    user, cert = _user_with(db, "certificate")
    f, date = _available(db, "basic_economy")
    price = f["dates"][date]["prices"]["basic_economy"]
    amount = int(user["payment_methods"][cert]["amount"])
    if amount > price:
        amount = price
    pay = [{"payment_id": cert, "amount": amount}]
    if amount < price:
        credit = next((p for p, m in user["payment_methods"].items() if m["source"] != "certificate"), None)
        if credit is None:
            pytest.skip("fixture user has only certificates")
        pay.append({"payment_id": credit, "amount": price - amount})
    call(db, "book_reservation", user_id=user["user_id"], origin="A", destination="B",
         flight_type="one_way", cabin="basic_economy",
         flights=[{"flight_number": f["flight_number"], "date": date}],
         passengers=[{"first_name": "A", "last_name": "B", "dob": "1990-01-01"}],
         payment_methods=pay, total_baggages=0, nonfree_baggages=0, insurance="no")
    assert cert not in db["users"][user["user_id"]]["payment_methods"]


def test_cancel_reservation():
    db = fixture_db("airline")
    rid, r = next(iter(db["reservations"].items()))
    paid = [p["amount"] for p in r["payment_history"]]
    out = call(db, "cancel_reservation", reservation_id=rid)
    assert out["status"] == "cancelled"
    assert [p["amount"] for p in out["payment_history"]] == paid + [-a for a in paid]
    fails(db, "cancel_reservation", "Reservation NOPE00 not found", reservation_id="NOPE00")


def test_send_certificate():
    db = fixture_db("airline")
    uid = next(iter(db["users"]))
    msg = call(db, "send_certificate", user_id=uid, amount=150)
    assert msg == f"Certificate certificate_3221322 added to user {uid} with amount 150."
    assert db["users"][uid]["payment_methods"]["certificate_3221322"] == {
        "source": "certificate", "id": "certificate_3221322", "amount": 150.0}
    call(db, "send_certificate", user_id=uid, amount=1)
    call(db, "send_certificate", user_id=uid, amount=1)
    fails(db, "send_certificate", "Too many certificates", user_id=uid, amount=1)
    fails(db, "send_certificate", "User nobody not found", user_id="nobody", amount=1)


def _reservation_paid_by(db, source):
    for rid, r in db["reservations"].items():
        u = db["users"][r["user_id"]]
        for pid, m in u["payment_methods"].items():
            if m["source"] == source:
                return rid, r, u, pid
    raise AssertionError(source)


def test_update_baggages():
    db = fixture_db("airline")
    rid, r, user, credit = _reservation_paid_by(db, "credit_card")
    before = list(r["payment_history"])
    out = call(db, "update_reservation_baggages", reservation_id=rid, total_baggages=r["total_baggages"] + 2,
               nonfree_baggages=r["nonfree_baggages"] + 2, payment_id=credit)
    assert out["payment_history"] == before + [{"payment_id": credit, "amount": 100}]
    fails(db, "update_reservation_baggages", "Payment method not found", reservation_id=rid,
          total_baggages=1, nonfree_baggages=9, payment_id="credit_card_0")
    rid2, r2, u2, cert = _reservation_paid_by(db, "certificate")
    fails(db, "update_reservation_baggages", "Certificate cannot be used to update reservation",
          reservation_id=rid2, total_baggages=1, nonfree_baggages=r2["nonfree_baggages"] + 1, payment_id=cert)
    rid3, r3, u3, gift = _reservation_paid_by(db, "gift_card")
    n = int(u3["payment_methods"][gift]["amount"] // 50) + 1 + r3["nonfree_baggages"]
    fails(db, "update_reservation_baggages", "Gift card balance is not enough", reservation_id=rid3,
          total_baggages=n, nonfree_baggages=n, payment_id=gift)


def test_update_flights_and_passengers():
    db = fixture_db("airline")
    rid, r, user, credit = _reservation_paid_by(db, "credit_card")
    legs = [{"flight_number": f["flight_number"], "date": f["date"]} for f in r["flights"]]
    same = call(db, "update_reservation_flights", reservation_id=rid, cabin=r["cabin"], flights=legs,
                payment_id=credit)
    assert same["flights"] == r["flights"] and len(same["payment_history"]) == len(r["payment_history"])
    f, date = _available(db, "business", len(r["passengers"]))
    new = call(db, "update_reservation_flights", reservation_id=rid, cabin="business",
               flights=[{"flight_number": f["flight_number"], "date": date}], payment_id=credit)
    n = len(r["passengers"])
    diff = f["dates"][date]["prices"]["business"] * n - sum(x["price"] for x in same["flights"]) * n
    assert new["cabin"] == "business" and new["payment_history"][-1] == {"payment_id": credit, "amount": diff}
    fails(db, "update_reservation_flights", "Flight HAT999 not found", reservation_id=rid, cabin="economy",
          flights=[{"flight_number": "HAT999", "date": date}], payment_id=credit)
    landed = next((g, d) for g in db["flights"].values() for d, i in g["dates"].items() if i["status"] == "landed")
    fails(db, "update_reservation_flights",
          f"Flight {landed[0]['flight_number']} not available on date {landed[1]}", reservation_id=rid,
          cabin="economy", flights=[{"flight_number": landed[0]["flight_number"], "date": landed[1]}],
          payment_id=credit)

    pax = [{"first_name": "X", "last_name": "Y", "dob": "2000-01-01"}] * n
    assert call(db, "update_reservation_passengers", reservation_id=rid, passengers=pax)["passengers"] == pax
    fails(db, "update_reservation_passengers", "Number of passengers does not match", reservation_id=rid,
          passengers=pax + pax[:1])
    with pytest.raises(ToolError, match=r"^2 validation errors for Passenger\nlast_name\n  Field required"):
        call(db, "update_reservation_passengers", reservation_id=rid, passengers=[{"first_name": "X"}] * n)
