"""τ²-bench's airline domain: its 14 tools (same names, schemas, semantics, error texts) over a
plain-dict database in τ²'s ``db.json`` layout, and generators for users, flights and
reservations.

The tool semantics follow ``tau2/domains/airline/tools.py`` (sierra-research/tau2-bench, MIT),
quirks included (no seat release on cancel, ``2024-05-{day+1}`` for overnight connections,
fixed new ids ``HATHAT``/``HATHAU``/``HATHAV`` and ``certificate_3221322``...), so that a
world state reached here hashes like the one τ²-bench reaches.
"""

from __future__ import annotations

import datetime
import functools
import random
import string
from pathlib import Path
from typing import Any, Literal, Mapping, Optional

from pydantic import BaseModel

from tracec.core.types import FLOAT, INT, STR, ListT, MapT, ObjT, obj
from tracec.domains import fastrand
from tracec.domains import tau2_common as common
from tracec.domains.base import Domain, EntityKind, fresh_id, lookup
from tracec.domains.jsoncopy import deep_copy
from tracec.domains.policy_rules import airline_rules
from tracec.domains.schema import Precondition, Ref, Schema, preconditions, refs
from tracec.domains.units import units

TOOLKIT = "AirlineTools"
NOW = "2024-05-15T15:00:00"  # τ²'s _get_datetime()
TODAY = "2024-05-15"
DATES = tuple(f"2024-05-{d:02d}" for d in range(1, 31))  # the flight calendar of τ²'s db
CABINS = ("basic_economy", "economy", "business")
PRICE_RANGE = {"basic_economy": (50, 100), "economy": (100, 200), "business": (200, 500)}
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
NEW_PAYMENT_NUMBERS = (3221322, 3221323, 3221324)
AIRPORTS = (
    ("SFO", "San Francisco"), ("JFK", "New York"), ("LAX", "Los Angeles"), ("ORD", "Chicago"),
    ("DFW", "Dallas"), ("DEN", "Denver"), ("SEA", "Seattle"), ("ATL", "Atlanta"),
    ("MIA", "Miami"), ("BOS", "Boston"), ("PHX", "Phoenix"), ("IAH", "Houston"),
    ("LAS", "Las Vegas"), ("MCO", "Orlando"), ("EWR", "Newark"), ("CLT", "Charlotte"),
    ("MSP", "Minneapolis"), ("DTW", "Detroit"), ("PHL", "Philadelphia"), ("LGA", "LaGuardia"),
)

# ----------------------------------------------------------------------------- layout

NAME = obj("airline_name", first_name=STR, last_name=STR)
ADDRESS = obj(
    "airline_address", address1=STR, address2=STR, city=STR, country=STR, state=STR, zip=STR
)
PAYMENT_METHOD = obj(
    "airline_payment_method", source=STR, id=STR, brand=STR, last_four=STR, amount=FLOAT
)
PASSENGER = obj("passenger", first_name=STR, last_name=STR, dob=STR)
PAYMENT = obj("payment", payment_id=STR, amount=INT)
FLIGHT_DATE = obj(
    "flight_date",
    status=STR,
    available_seats=MapT(INT),
    prices=MapT(INT),
    actual_departure_time_est=STR,
    estimated_departure_time_est=STR,
    actual_arrival_time_est=STR,
    estimated_arrival_time_est=STR,
)
RESERVATION_FLIGHT = obj(
    "reservation_flight", flight_number=STR, origin=STR, destination=STR, date=STR, price=INT
)

USER_FIELDS = {
    "user_id": STR,
    "name": NAME,
    "address": ADDRESS,
    "email": STR,
    "dob": STR,
    "payment_methods": MapT(PAYMENT_METHOD),
    "saved_passengers": ListT(PASSENGER),
    "membership": STR,
    "reservations": ListT(STR),
}
FLIGHT_FIELDS = {
    "flight_number": STR,
    "origin": STR,
    "destination": STR,
    "scheduled_departure_time_est": STR,
    "scheduled_arrival_time_est": STR,
    "dates": MapT(FLIGHT_DATE),
}
RESERVATION_FIELDS = {
    "reservation_id": STR,
    "user_id": STR,
    "origin": STR,
    "destination": STR,
    "flight_type": STR,
    "cabin": STR,
    "flights": ListT(RESERVATION_FLIGHT),
    "passengers": ListT(PASSENGER),
    "payment_history": ListT(PAYMENT),
    "created_at": STR,
    "total_baggages": INT,
    "nonfree_baggages": INT,
    "insurance": STR,
    "status": STR,
}
FLIGHT_STATUSES = ("available", "landed", "cancelled", "delayed", "flying", "on time")
SCHEMA = Schema(
    refs=refs(
        ("reservation", Ref("user", "user_id", "user")),
        ("reservation_flight", Ref("flight", "flight_number", "flight")),
    ),
    enums={
        "reservation": {
            "cabin": CABINS,
            "flight_type": ("one_way", "round_trip"),
            "insurance": ("yes", "no"),
            "status": ("cancelled",),
        },
        "user": {"membership": ("regular", "silver", "gold")},
        "airline_payment_method": {"source": ("credit_card", "gift_card", "certificate")},
        "flight_date": {"status": FLIGHT_STATUSES},
    },
    keys={"flight_date": {"prices": CABINS, "available_seats": CABINS}},
    rules=airline_rules(NOW),
    now=NOW,
    units={
        "flight_date": units(prices="dollars", actual_departure_time_est="datetime",
                             estimated_departure_time_est="datetime",
                             actual_arrival_time_est="datetime",
                             estimated_arrival_time_est="datetime"),
        "reservation_flight": units(date="date", price="dollars"),
        "payment": units(amount="dollars"),
        "airline_payment_method": units(amount="dollars"),
        "passenger": units(dob="date"),
        "user": units(dob="date"),
        "reservation": units(created_at="datetime"),
    },
    arg_units={
        "search_direct_flight": units(date="date"),
        "search_onestop_flight": units(date="date"),
        "get_flight_status": units(date="date"),
        "send_certificate": units(amount="dollars"),
    },
    preconditions=preconditions(
        (("cancel_reservation", "update_reservation_baggages", "update_reservation_flights",
          "update_reservation_passengers"),
         Precondition("reservation_id", "reservations", "reservation", "status", ("cancelled",),
                      negate=True, text="the reservation is not cancelled")),
    ),
    generators={
        "user": "Draws name, address, email, dob, a credit card plus maybe gift cards and "
        "certificates, 0-2 saved passengers and a membership; `reservations` fills as "
        "reservations for the user are added.",
        "flight": "Draws a route (two distinct airports; a fixed origin or destination keeps the "
        "other distinct), a schedule, and `dates` for 2024-05-01..30: landed (9% cancelled) "
        "before 2024-05-15, landed/delayed/flying/on time on it, available with seats and "
        "`prices` per cabin after it.",
        "reservation": "Fixed `user_id`: that user (created when new); otherwise a random "
        "existing user. Without `flights`: an itinerary on existing flights for `flight_type` "
        "(adds a flight when there is none, or no return flight). Draws passengers (the user, "
        "saved passengers, others), insurance, baggage (`nonfree_baggages` 0 unless fixed) and "
        "`created_at` (2024-04-30..05-14); `payment_history` is one payment of the total from a "
        "non-certificate method of the user, consistent with fixed fields. Adds the id to the "
        "user's `reservations`.",
    },
)
LAYOUT = common.Layout(
    nullable={"airline_address": frozenset({"address2"}), "reservation": frozenset({"status"})},
    optional={
        "airline_payment_method": frozenset({"brand", "last_four", "amount"}),
        "flight_date": frozenset(
            {
                "available_seats",
                "prices",
                "actual_departure_time_est",
                "estimated_departure_time_est",
                "actual_arrival_time_est",
                "estimated_arrival_time_est",
            }
        ),
    },
)
RECORD_TYPES = {
    "users": ObjT(tuple(USER_FIELDS.items()), "user"),
    "flights": ObjT(tuple(FLIGHT_FIELDS.items()), "flight"),
    "reservations": ObjT(tuple(RESERVATION_FIELDS.items()), "reservation"),
}


def empty_db() -> dict:
    return {"flights": {}, "users": {}, "reservations": {}}


def conform_db(db: Mapping[str, Any]) -> dict:
    """``db`` in the exact shape of τ²'s ``FlightDB.model_dump()``."""
    return common.conform_db(db, ("flights", "users", "reservations"), RECORD_TYPES, LAYOUT)


def load_db(path: str | Path) -> dict:
    """A τ² airline ``db.json`` as a plain dict in ``model_dump()`` shape."""
    return conform_db(common.load_db(path, "airline"))


# ----------------------------------------------------------------------------- argument models
# τ² builds these pydantic models from the agent's arguments; we validate the same way so that
# bad arguments fail with the same messages.

CabinClass = Literal["business", "economy", "basic_economy"]


class FlightInfo(BaseModel):
    flight_number: str
    date: str


class Passenger(BaseModel):
    first_name: str
    last_name: str
    dob: str


class Payment(BaseModel):
    payment_id: str
    amount: int


class Certificate(BaseModel):
    source: Literal["certificate"]
    id: str
    amount: float


class Reservation(BaseModel):
    reservation_id: str
    user_id: str
    origin: str
    destination: str
    flight_type: Literal["round_trip", "one_way"]
    cabin: CabinClass
    flights: list[dict]
    passengers: list[Passenger]
    payment_history: list[Payment]
    created_at: str
    total_baggages: int
    nonfree_baggages: int
    insurance: Literal["yes", "no"]
    status: Optional[Literal["cancelled"]] = None


def _models(items: Any, model: type[BaseModel]) -> Any:
    """τ²'s ``if all(isinstance(x, dict) ...): [Model(**x) ...]`` conversion."""
    if all(isinstance(x, dict) for x in items):
        return [model(**x) for x in items]
    return items


# ----------------------------------------------------------------------------- lookups


def _user(db: dict, user_id: str) -> dict:
    return lookup(db, "users", user_id, f"User {user_id} not found")


def _reservation(db: dict, reservation_id: str) -> dict:
    return lookup(db, "reservations", reservation_id, f"Reservation {reservation_id} not found")


def _flight(db: dict, flight_number: str) -> dict:
    return lookup(db, "flights", flight_number, f"Flight {flight_number} not found")


def _flight_instance(db: dict, flight_number: str, date: str) -> dict:
    flight = _flight(db, flight_number)
    if date not in flight["dates"]:
        raise ValueError(f"Flight {flight_number} not found on date {date}")
    return flight["dates"][date]


def _direct_flight(flight: dict, date: str, on: str | None) -> dict:
    """τ²'s ``DirectFlight(...).model_dump()`` (``date`` is None for direct searches)."""
    inst = flight["dates"][date]
    return {
        "flight_number": flight["flight_number"],
        "origin": flight["origin"],
        "destination": flight["destination"],
        "status": "available",
        "scheduled_departure_time_est": flight["scheduled_departure_time_est"],
        "scheduled_arrival_time_est": flight["scheduled_arrival_time_est"],
        "date": on,
        "available_seats": deep_copy(inst["available_seats"]),
        "prices": deep_copy(inst["prices"]),
    }


def _search(
    db: dict,
    date: str,
    origin: str | None = None,
    destination: str | None = None,
    leave_after: str | None = None,
) -> list[dict]:
    return [
        flight
        for flight in db["flights"].values()
        if (origin is None or flight["origin"] == origin)
        and (destination is None or flight["destination"] == destination)
        and date in flight["dates"]
        and flight["dates"][date]["status"] == "available"
        and (leave_after is None or flight["scheduled_departure_time_est"] >= leave_after)
    ]


def _payment_for_update(user: dict, payment_id: str, total_price: int) -> dict | None:
    if payment_id not in user["payment_methods"]:
        raise ValueError("Payment method not found")
    method = user["payment_methods"][payment_id]
    if method["source"] == "certificate":
        raise ValueError("Certificate cannot be used to update reservation")
    if method["source"] == "gift_card" and method["amount"] < total_price:
        raise ValueError("Gift card balance is not enough")
    if method["source"] == "gift_card":
        method["amount"] -= total_price
    if total_price != 0:
        return Payment(payment_id=payment_id, amount=total_price).model_dump()
    return None


# ----------------------------------------------------------------------------- tools


def book_reservation(
    db: dict,
    user_id: str,
    origin: str,
    destination: str,
    flight_type: str,
    cabin: str,
    flights: list,
    passengers: list,
    payment_methods: list,
    total_baggages: int,
    nonfree_baggages: int,
    insurance: str,
) -> dict:
    flights = _models(flights, FlightInfo)
    passengers = _models(passengers, Passenger)
    payment_methods = _models(payment_methods, Payment)
    user = _user(db, user_id)
    reservation_id = next((r for r in NEW_RESERVATION_IDS if r not in db["reservations"]), None)
    if reservation_id is None:
        raise ValueError("Too many reservations")
    reservation = Reservation(
        reservation_id=reservation_id,
        user_id=user_id,
        origin=origin,
        destination=destination,
        flight_type=flight_type,
        cabin=cabin,
        flights=[],
        passengers=deep_copy(passengers),
        payment_history=deep_copy(payment_methods),
        created_at=NOW,
        total_baggages=total_baggages,
        nonfree_baggages=nonfree_baggages,
        insurance=insurance,
    ).model_dump()

    total_price = 0
    instances = []
    for info in flights:
        flight_number = info.flight_number
        flight = _flight(db, flight_number)
        inst = _flight_instance(db, flight_number, info.date)
        if inst["status"] != "available":
            raise ValueError(f"Flight {flight_number} not available on date {info.date}")
        if inst["available_seats"][cabin] < len(passengers):
            raise ValueError(f"Not enough seats on flight {flight_number}")
        price = inst["prices"][cabin]
        reservation["flights"].append(
            {
                "flight_number": flight_number,
                "origin": flight["origin"],
                "destination": flight["destination"],
                "date": info.date,
                "price": price,
            }
        )
        instances.append(inst)
        total_price += price * len(passengers)
    if insurance == "yes":
        total_price += 30 * len(passengers)
    total_price += 50 * nonfree_baggages

    for pm in payment_methods:
        if pm.payment_id not in user["payment_methods"]:
            raise ValueError(f"Payment method {pm.payment_id} not found")
        method = user["payment_methods"][pm.payment_id]
        if method["source"] in {"gift_card", "certificate"} and method["amount"] < pm.amount:
            raise ValueError(f"Not enough balance in payment method {pm.payment_id}")
    total_payment = sum(pm.amount for pm in payment_methods)
    if total_payment != total_price:
        raise ValueError(
            f"Payment amount does not add up, total price is {total_price}, but paid {total_payment}"
        )
    for pm in payment_methods:
        method = user["payment_methods"][pm.payment_id]
        if method["source"] == "gift_card":
            method["amount"] -= pm.amount
        elif method["source"] == "certificate":
            user["payment_methods"].pop(pm.payment_id)

    for inst in instances:
        inst["available_seats"][cabin] -= len(passengers)
    db["reservations"][reservation_id] = reservation
    db["users"][user_id]["reservations"].append(reservation_id)
    return reservation  # live: callers serialise it (see ToolFunc)


def cancel_reservation(db: dict, reservation_id: str) -> dict:
    reservation = _reservation(db, reservation_id)
    refunds = [
        Payment(payment_id=p["payment_id"], amount=-p["amount"]).model_dump()
        for p in reservation["payment_history"]
    ]
    reservation["payment_history"].extend(refunds)
    reservation["status"] = "cancelled"
    return reservation  # live: callers serialise it (see ToolFunc)


def get_reservation_details(db: dict, reservation_id: str) -> dict:
    return _reservation(db, reservation_id)


def get_user_details(db: dict, user_id: str) -> dict:
    return _user(db, user_id)


def list_all_airports(db: dict) -> list[dict]:
    return [{"iata": iata, "city": city} for iata, city in AIRPORTS]


def search_direct_flight(db: dict, origin: str, destination: str, date: str) -> list[dict]:
    return [_direct_flight(f, date, None) for f in _search(db, date, origin, destination)]


def search_onestop_flight(db: dict, origin: str, destination: str, date: str) -> list[list[dict]]:
    results = []
    for first in _search(db, date, origin, None):
        # τ²: the next day is written without zero padding ("2024-05-6" matches no flight)
        date2 = (
            f"2024-05-{int(date[-2:]) + 1}"
            if "+1" in first["scheduled_arrival_time_est"]
            else date
        )
        for second in _search(
            db, date2, first["destination"], destination, first["scheduled_arrival_time_est"]
        ):
            results.append([_direct_flight(first, date, date), _direct_flight(second, date2, date2)])
    return results


def send_certificate(db: dict, user_id: str, amount: int) -> str:
    user = _user(db, user_id)
    for payment_id in (f"certificate_{n}" for n in NEW_PAYMENT_NUMBERS):
        if payment_id not in user["payment_methods"]:
            cert = Certificate(id=payment_id, amount=amount, source="certificate")
            user["payment_methods"][payment_id] = cert.model_dump()
            return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
    raise ValueError("Too many certificates")


def update_reservation_baggages(
    db: dict, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str
) -> dict:
    reservation = _reservation(db, reservation_id)
    user = _user(db, reservation["user_id"])
    total_price = 50 * max(0, nonfree_baggages - reservation["nonfree_baggages"])
    payment = _payment_for_update(user, payment_id, total_price)
    if payment is not None:
        reservation["payment_history"].append(payment)
    reservation["total_baggages"] = total_baggages
    reservation["nonfree_baggages"] = nonfree_baggages
    return reservation  # live: callers serialise it (see ToolFunc)


def update_reservation_flights(
    db: dict, reservation_id: str, cabin: str, flights: list, payment_id: str
) -> dict:
    flights = _models(flights, FlightInfo)
    reservation = _reservation(db, reservation_id)
    user = _user(db, reservation["user_id"])
    n = len(reservation["passengers"])
    total_price = 0
    new_flights = []
    for info in flights:
        kept = next(
            (
                rf
                for rf in reservation["flights"]
                if rf["flight_number"] == info.flight_number
                and rf["date"] == info.date
                and cabin == reservation["cabin"]
            ),
            None,
        )
        if kept is not None:
            total_price += kept["price"] * n
            new_flights.append(kept)
            continue
        flight = _flight(db, info.flight_number)
        inst = _flight_instance(db, info.flight_number, info.date)
        if inst["status"] != "available":
            raise ValueError(f"Flight {info.flight_number} not available on date {info.date}")
        if inst["available_seats"][cabin] < n:
            raise ValueError(f"Not enough seats on flight {info.flight_number}")
        rf = {
            "flight_number": info.flight_number,
            "origin": flight["origin"],
            "destination": flight["destination"],
            "date": info.date,
            "price": inst["prices"][cabin],
        }
        total_price += rf["price"] * n
        new_flights.append(rf)
    total_price -= sum(f["price"] for f in reservation["flights"]) * n
    payment = _payment_for_update(user, payment_id, total_price)
    if payment is not None:
        reservation["payment_history"].append(payment)
    reservation["flights"] = new_flights
    reservation["cabin"] = cabin
    return reservation  # live: callers serialise it (see ToolFunc)


def update_reservation_passengers(db: dict, reservation_id: str, passengers: list) -> dict:
    passengers = _models(passengers, Passenger)
    reservation = _reservation(db, reservation_id)
    if len(passengers) != len(reservation["passengers"]):
        raise ValueError("Number of passengers does not match")
    reservation["passengers"] = [
        p.model_dump() if isinstance(p, BaseModel) else deep_copy(p) for p in passengers
    ]
    return reservation  # live: callers serialise it (see ToolFunc)


def get_flight_status(db: dict, flight_number: str, date: str) -> str:
    return _flight_instance(db, flight_number, date)["status"]


TOOL_FUNCS = {
    f.__name__: f
    for f in (
        book_reservation,
        common.calculate,
        cancel_reservation,
        get_reservation_details,
        get_user_details,
        list_all_airports,
        search_direct_flight,
        search_onestop_flight,
        send_certificate,
        common.transfer_to_human_agents,
        update_reservation_baggages,
        update_reservation_flights,
        update_reservation_passengers,
        get_flight_status,
    )
}


# ----------------------------------------------------------------------------- generators


def new_user_id(rng: random.Random, db: dict) -> str:
    first, last = common.person_name(rng)
    return common.user_id_for(rng, first, last, db.get("users", {}))


def new_flight_number(rng: random.Random, db: dict) -> str:
    return fresh_id(rng, db.get("flights", {}), lambda r: f"HAT{r.randint(1, 999):03d}")


def new_reservation_id(rng: random.Random, db: dict) -> str:
    """6 upper-case letters/digits, never one of the ids τ²'s ``book_reservation`` hands out."""
    alphabet = string.ascii_uppercase + string.digits
    taken = {**db.get("reservations", {}), **dict.fromkeys(NEW_RESERVATION_IDS)}
    return fresh_id(rng, taken, lambda r: "".join(r.choice(alphabet) for _ in range(6)))


def _payment_methods(rng: random.Random, db: dict) -> dict:
    taken = {pid for u in db.get("users", {}).values() for pid in u["payment_methods"]}
    methods: dict[str, dict] = {}
    sources = ["credit_card"] + [
        rng.choice(("credit_card", "gift_card", "certificate")) for _ in range(rng.randint(0, 3))
    ]
    for source in sources:
        pid = common.fresh_payment_id(rng, source, taken | set(methods))
        if source == "credit_card":
            m = {"source": source, "id": pid, "brand": rng.choice(("visa", "mastercard")),
                 "last_four": f"{rng.randint(0, 9999):04d}"}
        elif source == "gift_card":
            m = {"source": source, "id": pid, "amount": float(rng.randint(0, 300))}
        else:
            m = {"source": source, "id": pid, "amount": float(rng.choice((100, 150, 250, 500)))}
        methods[pid] = m
    return methods


def _person(rng: random.Random) -> dict:
    first, last = common.person_name(rng)
    return {"first_name": first, "last_name": last, "dob": common.dob(rng)}


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
        "dob": common.dob(rng),
        "payment_methods": _payment_methods(rng, db),
        "saved_passengers": [_person(rng) for _ in range(rng.randint(0, 2))],
        "membership": rng.choice(("regular", "silver", "gold")),
        "reservations": [],
    }
    user.update(overrides)
    return common.conform(user, RECORD_TYPES["users"], LAYOUT)


def _clock(rng: random.Random) -> tuple[str, str]:
    """Scheduled departure and arrival (``+1`` when it lands the next day)."""
    dep = rng.randint(0, 47) * 30
    arr = dep + rng.randint(2, 12) * 30
    hhmm = lambda m: f"{m // 60 % 24:02d}:{m % 60:02d}:00"  # noqa: E731
    return hhmm(dep), hhmm(arr) + ("+1" if arr >= 24 * 60 else "")


@functools.lru_cache(maxsize=4096)
def _moment(date: str, clock: str) -> datetime.datetime:
    day_shift = 1 if clock.endswith("+1") else 0
    return datetime.datetime.fromisoformat(f"{date}T{clock[:8]}") + datetime.timedelta(days=day_shift)


def _timestamp(date: str, clock: str, shift_min: int) -> str:
    """``date`` + ``clock`` (``HH:MM:SS[+1]``) shifted by minutes, as ``YYYY-MM-DDTHH:MM:SS``."""
    return (_moment(date, clock) + datetime.timedelta(minutes=shift_min)).isoformat()


_EPOCH = datetime.datetime(2024, 1, 1)
_DAYS = tuple((_EPOCH + datetime.timedelta(days=i)).date().isoformat() for i in range(400))


_TODAY_STATUSES = ("landed", "landed", "delayed", "flying", "on time")
_DATE_INDEX = {d: (datetime.date.fromisoformat(d) - _EPOCH.date()).days for d in DATES}


def _clock_seconds(clock: str) -> int:
    """``HH:MM:SS[+1]`` as seconds after the date's midnight (``+1``: the next day)."""
    h, m, sec = int(clock[0:2]), int(clock[3:5]), int(clock[6:8])
    return h * 3600 + m * 60 + sec + (86400 if clock.endswith("+1") else 0)


_HOUR_MINUTE = tuple(f"T{m // 60:02d}:{m % 60:02d}:" for m in range(1440))
_SECOND = tuple(f"{s:02d}" for s in range(60))


def _flight_dates(rng: random.Random, dep: str, arr: str) -> dict:
    """The flight's calendar: draws exactly what the plain loop over ``DATES`` with
    ``rng.randint``/``rng.choice`` draws (see fastrand), with timestamps by integer arithmetic
    (the same text as :func:`_timestamp`); world generation spends most of its time here."""
    if not fastrand.fast(rng):
        return _flight_dates_plain(rng, dep, arr)
    try:
        dep_s, arr_s = _clock_seconds(dep), _clock_seconds(arr)
    except ValueError:  # a clock the spec fixed in another shape
        return _flight_dates_plain(rng, dep, arr)
    gb = rng.getrandbits
    rand = rng.random
    days = _DAYS

    hm, sec = _HOUR_MINUTE, _SECOND

    def stamp(day: int, base: int, shift_min: int) -> str:
        d, rem = divmod(day * 86400 + base + 60 * shift_min, 86400)
        return days[d] + hm[rem // 60] + sec[rem % 60]  # f"{day}T{hh:02d}:{mm:02d}:{ss:02d}"

    def shift(lo: int, n: int, k: int) -> int:  # == rng.randint(lo, lo + n - 1)
        r = gb(k)
        while r >= n:
            r = gb(k)
        return lo + r

    dates = {}
    for date in DATES:
        day = _DATE_INDEX[date]
        if date < TODAY:
            if rand() < 0.09:
                dates[date] = {"status": "cancelled"}
            else:
                dates[date] = {
                    "status": "landed",
                    "actual_departure_time_est": stamp(day, dep_s, shift(-30, 61, 6)),
                    "actual_arrival_time_est": stamp(day, arr_s, shift(-30, 61, 6)),
                }
        elif date == TODAY:
            r = gb(3)
            while r >= 5:
                r = gb(3)
            status = _TODAY_STATUSES[r]
            if status == "landed":
                dates[date] = {
                    "status": status,
                    "actual_departure_time_est": stamp(day, dep_s, shift(-30, 61, 6)),
                    "actual_arrival_time_est": stamp(day, arr_s, shift(-30, 61, 6)),
                }
            elif status == "flying":
                dates[date] = {
                    "status": status,
                    "actual_departure_time_est": stamp(day, dep_s, shift(-15, 46, 6)),
                    "estimated_arrival_time_est": stamp(day, arr_s, shift(-15, 46, 6)),
                }
            else:
                delay = shift(60, 241, 8) if status == "delayed" else shift(-10, 21, 5)
                dates[date] = {
                    "status": status,
                    "estimated_departure_time_est": stamp(day, dep_s, delay),
                    "estimated_arrival_time_est": stamp(day, arr_s, delay),
                }
        else:
            # seats 0..20 per cabin, then prices in PRICE_RANGE per cabin (CABINS order)
            s1 = gb(5)
            while s1 >= 21:
                s1 = gb(5)
            s2 = gb(5)
            while s2 >= 21:
                s2 = gb(5)
            s3 = gb(5)
            while s3 >= 21:
                s3 = gb(5)
            p1 = gb(6)
            while p1 >= 51:
                p1 = gb(6)
            p2 = gb(7)
            while p2 >= 101:
                p2 = gb(7)
            p3 = gb(9)
            while p3 >= 301:
                p3 = gb(9)
            dates[date] = {
                "status": "available",
                "available_seats": {"basic_economy": s1, "economy": s2, "business": s3},
                "prices": {"basic_economy": 50 + p1, "economy": 100 + p2, "business": 200 + p3},
            }
    return dates


def _flight_dates_plain(rng: random.Random, dep: str, arr: str) -> dict:
    """The reference form of :func:`_flight_dates` (any ``Random``, any clock text)."""
    dates = {}
    for date in DATES:
        if date < TODAY:
            if rng.random() < 0.09:
                dates[date] = {"status": "cancelled"}
            else:
                dates[date] = {
                    "status": "landed",
                    "actual_departure_time_est": _timestamp(date, dep, rng.randint(-30, 30)),
                    "actual_arrival_time_est": _timestamp(date, arr, rng.randint(-30, 30)),
                }
        elif date == TODAY:
            status = rng.choice(_TODAY_STATUSES)
            if status == "landed":
                dates[date] = {
                    "status": status,
                    "actual_departure_time_est": _timestamp(date, dep, rng.randint(-30, 30)),
                    "actual_arrival_time_est": _timestamp(date, arr, rng.randint(-30, 30)),
                }
            elif status == "flying":
                dates[date] = {
                    "status": status,
                    "actual_departure_time_est": _timestamp(date, dep, rng.randint(-15, 30)),
                    "estimated_arrival_time_est": _timestamp(date, arr, rng.randint(-15, 30)),
                }
            else:
                delay = rng.randint(60, 300) if status == "delayed" else rng.randint(-10, 10)
                dates[date] = {
                    "status": status,
                    "estimated_departure_time_est": _timestamp(date, dep, delay),
                    "estimated_arrival_time_est": _timestamp(date, arr, delay),
                }
        else:
            dates[date] = {
                "status": "available",
                "available_seats": {c: rng.randint(0, 20) for c in CABINS},
                "prices": {c: rng.randint(*PRICE_RANGE[c]) for c in CABINS},
            }
    return dates


def generate_flight(rng: random.Random, db: dict, overrides: Mapping[str, Any]) -> dict:
    codes = [a for a, _ in AIRPORTS]
    origin = overrides.get("origin") or rng.choice(
        [c for c in codes if c != overrides.get("destination")]
    )
    destination = overrides.get("destination") or rng.choice([c for c in codes if c != origin])
    dep, arr = _clock(rng)
    dep = overrides.get("scheduled_departure_time_est", dep)
    arr = overrides.get("scheduled_arrival_time_est", arr)
    flight = {
        "flight_number": overrides.get("flight_number") or new_flight_number(rng, db),
        "origin": origin,
        "destination": destination,
        "scheduled_departure_time_est": dep,
        "scheduled_arrival_time_est": arr,
        "dates": _flight_dates(rng, dep, arr),
    }
    flight.update(overrides)
    if "dates" in overrides:
        return common.conform(flight, RECORD_TYPES["flights"], LAYOUT)
    # the generated dates are built in τ²'s layout already; conforming 30 of them per flight
    # dominated world generation
    dates = flight.pop("dates")
    flight = common.conform(flight, RECORD_TYPES["flights"], LAYOUT)
    flight["dates"] = dates
    return flight


def _ensure_user(rng: random.Random, db: dict, user_id: str | None) -> dict:
    users = db.setdefault("users", {})
    if user_id is not None and user_id in users:
        return users[user_id]
    if user_id is None and users:
        return users[rng.choice(sorted(users))]
    user = generate_user(rng, db, {"user_id": user_id} if user_id else {})
    USER.add(db, user)
    return user


def _ensure_flight(rng: random.Random, db: dict, origin: str | None, destination: str | None) -> dict:
    """A flight of db matching the route (any when unconstrained), created when missing."""
    flights = db.setdefault("flights", {})
    matches = [
        f
        for k, f in sorted(flights.items())
        if (origin is None or f["origin"] == origin)
        and (destination is None or f["destination"] == destination)
    ]
    if matches:
        return rng.choice(matches)
    fields = {k: v for k, v in (("origin", origin), ("destination", destination)) if v}
    flight = generate_flight(rng, db, fields)
    FLIGHT.add(db, flight)
    return flight


def _price(rng: random.Random, flight: dict, date: str, cabin: str) -> int:
    inst = flight["dates"].get(date, {})
    if inst.get("status") == "available":
        return inst["prices"][cabin]
    return rng.randint(*PRICE_RANGE[cabin])


def _itinerary(rng: random.Random, db: dict, flight_type: str, cabin: str) -> list[dict]:
    out = _ensure_flight(rng, db, None, None)
    date = rng.choice(DATES[:-3])
    legs = [(out, date)]
    if flight_type == "round_trip":
        back = _ensure_flight(rng, db, out["destination"], out["origin"])
        later = [d for d in DATES if d > date]
        legs.append((back, rng.choice(later[:7])))
    return [
        {
            "flight_number": f["flight_number"],
            "origin": f["origin"],
            "destination": f["destination"],
            "date": d,
            "price": _price(rng, f, d, cabin),
        }
        for f, d in legs
    ]


def generate_reservation(rng: random.Random, db: dict, overrides: Mapping[str, Any]) -> dict:
    user = _ensure_user(rng, db, overrides.get("user_id"))
    cabin = overrides.get("cabin") or rng.choice(CABINS)
    flight_type = overrides.get("flight_type") or rng.choice(("one_way", "round_trip"))
    flights = overrides.get("flights")
    if flights is None:
        flights = _itinerary(rng, db, flight_type, cabin)
    if "passengers" in overrides:
        passengers = overrides["passengers"]
    else:
        me = {"first_name": user["name"]["first_name"], "last_name": user["name"]["last_name"],
              "dob": user["dob"]}
        others = list(user["saved_passengers"])
        passengers = [me] + rng.sample(others, rng.randint(0, len(others)))
        passengers += [_person(rng) for _ in range(rng.choice((0, 0, 0, 1, 2)))]
    insurance = overrides.get("insurance") or rng.choice(("yes", "no"))
    nonfree = overrides.get("nonfree_baggages", 0)
    total = sum(f["price"] for f in flights) * len(passengers)
    total += (30 * len(passengers) if insurance == "yes" else 0) + 50 * nonfree
    usable = [pid for pid, m in user["payment_methods"].items() if m["source"] != "certificate"]
    payment_id = rng.choice(usable or sorted(user["payment_methods"]) or ["credit_card_0000000"])
    day = rng.choice(("2024-04-30",) + DATES[:14])
    reservation = {
        "reservation_id": overrides.get("reservation_id") or new_reservation_id(rng, db),
        "user_id": user["user_id"],
        "origin": flights[0]["origin"],
        "destination": flights[0]["destination"],
        "flight_type": flight_type,
        "cabin": cabin,
        "flights": flights,
        "passengers": passengers,
        "payment_history": [{"payment_id": payment_id, "amount": total}],
        "created_at": f"{day}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}",
        "total_baggages": rng.randint(nonfree, nonfree + 3),
        "nonfree_baggages": nonfree,
        "insurance": insurance,
        "status": None,
    }
    reservation.update(overrides)
    return common.conform(reservation, RECORD_TYPES["reservations"], LAYOUT)


insert_reservation = common.insert_with_backlink("reservation_id", "reservations")


USER = EntityKind(
    name="user",
    collection="users",
    id_field="user_id",
    fields=USER_FIELDS,
    generate=generate_user,
    new_id=new_user_id,
    description="A customer: name, address, payment methods, saved passengers, reservation ids.",
)
FLIGHT = EntityKind(
    name="flight",
    collection="flights",
    id_field="flight_number",
    fields=FLIGHT_FIELDS,
    generate=generate_flight,
    new_id=new_flight_number,
    description="A scheduled flight with per-date status, seats and prices (2024-05-01..30).",
)
RESERVATION = EntityKind(
    name="reservation",
    collection="reservations",
    id_field="reservation_id",
    fields=RESERVATION_FIELDS,
    generate=generate_reservation,
    new_id=new_reservation_id,
    insert=insert_reservation,
    description="A booking: flights with prices paid, passengers, payments, baggage, insurance.",
)


def reservation_total(reservation: Mapping[str, Any]) -> int:
    """What the reservation cost at booking: flights × passengers + insurance + paid bags."""
    n = len(reservation["passengers"])
    total = sum(f["price"] for f in reservation["flights"]) * n
    return total + (30 * n if reservation["insurance"] == "yes" else 0) + 50 * reservation["nonfree_baggages"]


DOMAIN = Domain(
    name="airline",
    description="τ²-bench airline customer service: search, book, change and cancel flights.",
    policy=common.read_data("airline_policy.md"),
    tools=common.build_tools("airline", TOOLKIT, TOOL_FUNCS),
    entities={"user": USER, "flight": FLIGHT, "reservation": RESERVATION},
    empty_db=empty_db,
    functions={"reservation_total": reservation_total, "db_hash": common.db_hash},
    ends_episode=frozenset({"transfer_to_human_agents"}),
    schema=SCHEMA,
    read_mostly=frozenset({"flights"}),  # 80 % of a world; only book_reservation writes them
    record_tables=frozenset({"users", "reservations"}),  # an episode reads a few of each
)
