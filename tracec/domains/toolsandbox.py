"""A ToolSandbox-like phone domain (after Apple's ToolSandbox, arXiv 2408.04682).

The world is one phone: a ``settings`` singleton (cellular, wifi, location service, low battery
mode, the device's position and the world's fixed clock ``now``), ``contacts``, ``messages`` and
``reminders``. Tools carry ToolSandbox's names, arguments and semantics, re-implemented here,
including its state dependencies: low battery mode switches cellular, wifi and location service
off and keeps them from being switched on; sending a message needs cellular service; the current
location needs location service; holiday search (a web lookup) needs wifi.

Deliberate differences from ToolSandbox, for determinism and clarity:

- Time never moves: ``get_current_timestamp`` returns ``settings.now``, and records created by
  tools get that timestamp. All date/time tools work in **UTC** (ToolSandbox uses local time).
- Ids created by tools are derived from the database state and the new record (uuid-shaped), so
  replaying the same calls on the same world gives the same ids.
- Reminders with a location (latitude/longitude) need location service on (ToolSandbox does not
  check this; the brief asks for it).
- Phone numbers are normalised to ``+<digits>`` (spaces, dashes, dots and brackets dropped) and
  must start with ``+`` and a country code, like ``phonenumbers.parse`` without a region.
- Fuzzy matching (names, contents) is a small stdlib approximation of rapidfuzz's WRatio.
"""

from __future__ import annotations

import calendar
import difflib
import functools
import hashlib
import json
import math
import random
import re
import uuid
from collections.abc import Callable, Mapping
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from tracec.core.types import ANY, BOOL, FLOAT, STR
from tracec.domains.base import (
    Domain,
    EntityKind,
    Tool,
    ToolError,
    ToolFunc,
    new_id_in,
    tools_from_data,
)
from tracec.domains.jsoncopy import deep_copy
from tracec.domains.schema import Ref, Schema, refs
from tracec.domains.units import units

# --------------------------------------------------------------------------------------------
# Constants and world access
# --------------------------------------------------------------------------------------------

UTC = timezone.utc
DEFAULT_NOW = datetime(2024, 6, 7, 14, 30, 0, tzinfo=UTC).timestamp()
"""The world's clock when no ``settings`` record was generated (Friday 2024-06-07 14:30 UTC)."""
TS_MIN = 315532800.0  # 1980-01-01 UTC: smaller values are most likely a unit mistake
TS_MAX = 2524608000.0  # 2050-01-01 UTC: larger values are most likely ms/us/ns

SETTINGS = "settings"
CONTACTS = "contacts"
MESSAGES = "messages"
REMINDERS = "reminders"
BOOLEAN_SETTINGS = ("cellular", "wifi", "location_service", "low_battery_mode")
_SETTING_LABEL = {
    "cellular": "Cellular service",
    "wifi": "Wifi",
    "location_service": "Location service",
    "low_battery_mode": "Low battery mode",
}

_UNSET: Any = object()  # "argument not given" (None is a value for latitude/longitude)


def _default_settings() -> dict:
    return {
        "device_id": "00000000-0000-4000-8000-000000000000",
        "cellular": True,
        "wifi": True,
        "location_service": True,
        "low_battery_mode": False,
        "latitude": 37.334606,
        "longitude": -122.009102,
        "now": DEFAULT_NOW,
    }


def empty_db() -> dict:
    """The layout: default settings (everything on but low battery mode) and empty collections."""
    return {SETTINGS: _default_settings(), CONTACTS: {}, MESSAGES: {}, REMINDERS: {}}


def _settings(db: dict) -> dict:
    """The settings record, for reading (defaults when the world has none)."""
    return db.get(SETTINGS) or _default_settings()


def _settings_mut(db: dict) -> dict:
    """The settings record, for writing (created with defaults when missing)."""
    return db.setdefault(SETTINGS, _default_settings())


def world_now(db: dict) -> float:
    """The world's fixed current time (POSIX seconds, UTC)."""
    return float(db.get(SETTINGS, {}).get("now", DEFAULT_NOW))


def _coll(db: dict, name: str) -> dict:
    """A collection, for reading (empty when missing)."""
    return db.get(name) or {}


def _coll_mut(db: dict, name: str) -> dict:
    """A collection, for writing (created when missing)."""
    return db.setdefault(name, {})


def _uuid_from(data: bytes) -> str:
    return str(uuid.UUID(bytes=hashlib.sha256(data).digest()[:16], version=4))


def _derived_id(db: dict, collection: str, record: Mapping[str, Any]) -> str:
    """A fresh uuid-shaped id determined by the collection's ids and the new record."""
    existing = _coll(db, collection)
    salt = 0
    while True:
        blob = json.dumps([collection, sorted(existing), dict(record), salt], sort_keys=True)
        new = _uuid_from(blob.encode())
        if new not in existing:
            return new
        salt += 1


def _rng_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _new_id_in(collection: str) -> Callable[[random.Random, dict], str]:
    return new_id_in(collection, _rng_uuid)


# --------------------------------------------------------------------------------------------
# Argument validation (ToolSandbox's validators, as ToolErrors)
# --------------------------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _want_bool(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise ToolError(f"Parameter '{name}' must be a boolean (true or false), got {value!r}.")
    return value


def _want_str(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise ToolError(f"Parameter '{name}' must be a string, got {value!r}.")
    return value


def _want_int(value: Any, name: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ToolError(f"Parameter '{name}' must be an integer, got {value!r}.")
    return value


def _want_range(value: Any, name: str, lo: float, hi: float, what: str = "") -> float:
    if not _is_number(value):
        raise ToolError(f"Parameter '{name}' must be a number, got {value!r}.")
    if value < lo:
        raise ToolError(
            f"Parameter '{name}' is smaller than its valid range minimum of {lo}.{what}"
        )
    if value > hi:
        raise ToolError(f"Parameter '{name}' is larger than its valid range maximum of {hi}.{what}")
    return float(value)


def _want_timestamp(value: Any, name: str) -> float:
    hint = " Timestamps are POSIX seconds between 1980 and 2050."
    return _want_range(value, name, TS_MIN, TS_MAX, hint)


def _want_lat(value: Any, name: str = "latitude") -> float:
    return _want_range(value, name, -90.0, 90.0)


def _want_lon(value: Any, name: str = "longitude") -> float:
    return _want_range(value, name, -180.0, 180.0)


_PHONE_JUNK = re.compile(r"[\s\-().]")
_PHONE_OK = re.compile(r"^\+[1-9]\d{6,14}$")


def normalize_phone_number(value: Any, name: str = "phone_number") -> str:
    """``+1 (415) 555-0123`` -> ``+14155550123``; ToolError if it is not a phone number."""
    text = _want_str(value, name)
    digits = _PHONE_JUNK.sub("", text)
    if not _PHONE_OK.match(digits):
        raise ToolError(
            f"Invalid phone number {text!r} for '{name}': use international format with '+' and "
            "the country code, e.g. +14155550123."
        )
    return digits


# --------------------------------------------------------------------------------------------
# Matching (a stdlib stand-in for ToolSandbox's rapidfuzz filters)
# --------------------------------------------------------------------------------------------


def _norm_text(text: str) -> str:
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text.lower()).split())


def fuzzy_score(query: str, value: str) -> float:
    """Similarity 0..100 of ``query`` to ``value`` (containment and word overlap score high)."""
    if isinstance(query, str) and isinstance(value, str) and len(query) + len(value) <= 4096:
        return _fuzzy_score_cached(query, value)  # a pure function; searches repeat it a lot
    return _fuzzy_score(query, value)


@functools.lru_cache(maxsize=1 << 16)
def _fuzzy_score_cached(query: str, value: str) -> float:
    return _fuzzy_score(query, value)


def _fuzzy_score(query: str, value: str) -> float:
    q, v = _norm_text(query), _norm_text(value)
    if not q or not v:
        return 0.0
    if q == v:
        return 100.0
    if re.search(rf"\b{re.escape(q)}\b", v):
        return 95.0
    whole = difflib.SequenceMatcher(None, q, v).ratio() * 100
    v_words = v.split()
    q_words = q.split()
    return max(whole, sum(_word_score(w, v_words) for w in q_words) / len(q_words) * 100)


def _word_score(word: str, words: list[str]) -> float:
    """1 for an equal word, 0.95 for a prefix of one (``tom`` ~ ``tomas``), else a close ratio."""
    best = 0.0
    for other in words:
        if other == word:
            return 1.0
        if len(word) >= 2 and other.startswith(word):
            best = max(best, 0.95)
        ratio = difflib.SequenceMatcher(None, word, other).ratio()
        best = max(best, ratio if ratio >= 0.85 else 0.0)
    return best


def _filter(
    records: list[dict], criteria: list[tuple[str, Any, Callable[[Any, Any], bool]]]
) -> list[dict]:
    given = [(f, v, test) for f, v, test in criteria if v is not _UNSET]
    if not given:
        names = tuple(f for f, _, _ in criteria)
        raise ToolError(
            "No search criteria are given. At least one search criteria should be provided "
            f"among {names}"
        )
    return [deep_copy(r) for r in records if all(test(r.get(f), v) for f, v, test in given)]


def _exact(field_value: Any, wanted: Any) -> bool:
    return field_value == wanted


def _fuzzy(threshold: float) -> Callable[[Any, Any], bool]:
    def test(field_value: Any, wanted: Any) -> bool:
        return isinstance(field_value, str) and fuzzy_score(wanted, field_value) >= threshold

    return test


def _at_least(field_value: Any, bound: Any) -> bool:
    return field_value is not None and field_value >= bound


def _at_most(field_value: Any, bound: Any) -> bool:
    return field_value is not None and field_value <= bound


# --------------------------------------------------------------------------------------------
# Tools: settings
# --------------------------------------------------------------------------------------------


def _set_boolean(db: dict, setting: str, on: bool) -> None:
    settings = _settings_mut(db)
    if bool(settings.get(setting)) == on:
        raise ToolError(f"{setting} already {'enabled' if on else 'disabled'}")
    settings[setting] = on


def _refuse_in_low_battery(db: dict, setting: str, on: bool) -> None:
    if on and _settings(db).get("low_battery_mode"):
        raise ToolError(f"{_SETTING_LABEL[setting]} cannot be turned on in low battery mode")


def set_low_battery_mode_status(db: dict, on: Any) -> None:
    """Turning it on also switches cellular, wifi and location service off."""
    on = _want_bool(on, "on")
    _set_boolean(db, "low_battery_mode", on)
    if on:
        for dependent in ("cellular", "wifi", "location_service"):
            _settings_mut(db)[dependent] = False


def _make_setter(setting: str) -> Callable[..., None]:
    def setter(db: dict, on: Any) -> None:
        on = _want_bool(on, "on")
        _refuse_in_low_battery(db, setting, on)
        _set_boolean(db, setting, on)

    return setter


def _make_getter(setting: str) -> Callable[..., bool]:
    def getter(db: dict) -> bool:
        return bool(_settings(db).get(setting))

    return getter


def get_current_location(db: dict) -> dict:
    settings = _settings(db)
    if not settings.get("location_service"):
        raise ToolError("Location service is not enabled.")
    return {"latitude": settings["latitude"], "longitude": settings["longitude"]}


# --------------------------------------------------------------------------------------------
# Tools: contacts
# --------------------------------------------------------------------------------------------


def _self_contacts(db: dict) -> list[dict]:
    return [c for c in _coll(db, CONTACTS).values() if c.get("is_self")]


def add_contact(
    db: dict, name: Any, phone_number: Any, relationship: Any = None, is_self: Any = False
) -> str:
    name = _want_str(name, "name")
    phone = normalize_phone_number(phone_number)
    if relationship is not None:
        relationship = _want_str(relationship, "relationship")
    is_self = _want_bool(is_self, "is_self")
    if is_self and _self_contacts(db):
        raise ToolError("Self entry already exists. Cannot add another one.")
    record = {
        "name": name,
        "phone_number": phone,
        "relationship": relationship,
        "is_self": is_self,
    }
    person_id = _derived_id(db, CONTACTS, record)
    _coll_mut(db, CONTACTS)[person_id] = {"person_id": person_id, **record}
    return person_id


def _existing(db: dict, collection: str, id_field: str, record_id: Any) -> dict:
    record_id = _want_str(record_id, id_field)
    record = _coll(db, collection).get(record_id)
    if record is None:
        raise ToolError(f"No db entry matching {id_field}={record_id!r} found")
    return record


def modify_contact(
    db: dict,
    person_id: Any,
    name: Any = _UNSET,
    phone_number: Any = _UNSET,
    relationship: Any = _UNSET,
    is_self: Any = _UNSET,
) -> None:
    updates = {
        k: v
        for k, v in (
            ("name", name),
            ("phone_number", phone_number),
            ("relationship", relationship),
            ("is_self", is_self),
        )
        if v is not _UNSET
    }
    if not updates:
        raise ToolError(
            "No update information given. At least one new field should be provided among "
            "[name, phone_number, relationship, is_self] in order to modify contact"
        )
    if "name" in updates:
        _want_str(updates["name"], "name")
    if "phone_number" in updates:
        updates["phone_number"] = normalize_phone_number(updates["phone_number"])
    if updates.get("relationship") is not None:
        _want_str(updates["relationship"], "relationship")
    if "is_self" in updates:
        _want_bool(updates["is_self"], "is_self")
    record = _existing(db, CONTACTS, "person_id", person_id)
    others = [c for c in _self_contacts(db) if c["person_id"] != record["person_id"]]
    if updates.get("is_self") and others:
        raise ToolError("Self entry already exists. Cannot add another one.")
    record.update(updates)


def remove_contact(db: dict, person_id: Any) -> None:
    record = _existing(db, CONTACTS, "person_id", person_id)
    del _coll_mut(db, CONTACTS)[record["person_id"]]


def search_contacts(
    db: dict,
    person_id: Any = _UNSET,
    name: Any = _UNSET,
    phone_number: Any = _UNSET,
    relationship: Any = _UNSET,
    is_self: Any = _UNSET,
) -> list[dict]:
    if phone_number is not _UNSET:
        phone_number = normalize_phone_number(phone_number)
    for value, label in ((person_id, "person_id"), (name, "name"), (relationship, "relationship")):
        if value is not _UNSET:
            _want_str(value, label)
    if is_self is not _UNSET:
        _want_bool(is_self, "is_self")
    return _filter(
        list(_coll(db, CONTACTS).values()),
        [
            ("person_id", person_id, _exact),
            ("name", name, _fuzzy(90)),
            ("phone_number", phone_number, _exact),
            ("relationship", relationship, _fuzzy(90)),
            ("is_self", is_self, _exact),
        ],
    )


# --------------------------------------------------------------------------------------------
# Tools: messages
# --------------------------------------------------------------------------------------------


def _contact_by_phone(db: dict, phone: str) -> dict | None:
    return next((c for c in _coll(db, CONTACTS).values() if c.get("phone_number") == phone), None)


def send_message_with_phone_number(db: dict, phone_number: Any, content: Any) -> str:
    phone = normalize_phone_number(phone_number)
    content = _want_str(content, "content")
    if not _settings(db).get("cellular"):
        raise ToolError("Cellular service is not enabled")
    owners = _self_contacts(db)
    if len(owners) != 1:
        raise ToolError(
            "1 and only 1 self entry should exist in contacts database, instead found "
            f"{len(owners)}"
        )
    recipient = _contact_by_phone(db, phone)
    record = {
        "sender_person_id": owners[0]["person_id"],
        "sender_phone_number": owners[0]["phone_number"],
        "recipient_person_id": recipient["person_id"] if recipient else None,
        "recipient_phone_number": phone,
        "content": content,
        "creation_timestamp": world_now(db),
    }
    message_id = _derived_id(db, MESSAGES, record)
    _coll_mut(db, MESSAGES)[message_id] = {"message_id": message_id, **record}
    return message_id


def search_messages(
    db: dict,
    message_id: Any = _UNSET,
    sender_person_id: Any = _UNSET,
    sender_phone_number: Any = _UNSET,
    recipient_person_id: Any = _UNSET,
    recipient_phone_number: Any = _UNSET,
    content: Any = _UNSET,
    creation_timestamp_lowerbound: Any = _UNSET,
    creation_timestamp_upperbound: Any = _UNSET,
) -> list[dict]:
    if sender_phone_number is not _UNSET:
        sender_phone_number = normalize_phone_number(sender_phone_number, "sender_phone_number")
    if recipient_phone_number is not _UNSET:
        recipient_phone_number = normalize_phone_number(
            recipient_phone_number, "recipient_phone_number"
        )
    bounds = {
        "creation_timestamp_lowerbound": creation_timestamp_lowerbound,
        "creation_timestamp_upperbound": creation_timestamp_upperbound,
    }
    for key, value in bounds.items():
        if value is not _UNSET:
            _want_timestamp(value, key)
    if content is not _UNSET:
        _want_str(content, "content")
    return _filter(
        list(_coll(db, MESSAGES).values()),
        [
            ("message_id", message_id, _exact),
            ("sender_person_id", sender_person_id, _exact),
            ("sender_phone_number", sender_phone_number, _exact),
            ("recipient_person_id", recipient_person_id, _exact),
            ("recipient_phone_number", recipient_phone_number, _exact),
            ("content", content, _fuzzy(50)),
            ("creation_timestamp", creation_timestamp_lowerbound, _at_least),
            ("creation_timestamp", creation_timestamp_upperbound, _at_most),
        ],
    )


# --------------------------------------------------------------------------------------------
# Tools: reminders
# --------------------------------------------------------------------------------------------


def _check_location_args(db: dict, latitude: Any, longitude: Any) -> None:
    if latitude is not None:
        _want_lat(latitude)
    if longitude is not None:
        _want_lon(longitude)
    if (latitude is None) != (longitude is None):
        raise ToolError("Give both latitude and longitude for a location, or neither.")
    if latitude is not None and not _settings(db).get("location_service"):
        raise ToolError(
            "Location service is not enabled. A reminder with a location needs location service."
        )


def add_reminder(
    db: dict, content: Any, reminder_timestamp: Any, latitude: Any = None, longitude: Any = None
) -> str:
    content = _want_str(content, "content")
    when = _want_timestamp(reminder_timestamp, "reminder_timestamp")
    _check_location_args(db, latitude, longitude)
    record = {
        "content": content,
        "creation_timestamp": world_now(db),
        "reminder_timestamp": when,
        "latitude": None if latitude is None else float(latitude),
        "longitude": None if longitude is None else float(longitude),
    }
    reminder_id = _derived_id(db, REMINDERS, record)
    _coll_mut(db, REMINDERS)[reminder_id] = {"reminder_id": reminder_id, **record}
    return reminder_id


def modify_reminder(
    db: dict,
    reminder_id: Any,
    content: Any = _UNSET,
    reminder_timestamp: Any = _UNSET,
    latitude: Any = _UNSET,
    longitude: Any = _UNSET,
) -> None:
    """Creation timestamp is updated to now, as in ToolSandbox."""
    given = [x is not _UNSET for x in (content, reminder_timestamp, latitude, longitude)]
    if not any(given):
        raise ToolError(
            "No update information given. At least one new field should be provided among "
            "[content, reminder_timestamp, latitude, longitude] in order to modify reminder"
        )
    updates: dict[str, Any] = {}
    if content is not _UNSET:
        updates["content"] = _want_str(content, "content")
    if reminder_timestamp is not _UNSET:
        updates["reminder_timestamp"] = _want_timestamp(reminder_timestamp, "reminder_timestamp")
    record = _existing(db, REMINDERS, "reminder_id", reminder_id)
    new_lat = record.get("latitude") if latitude is _UNSET else latitude
    new_lon = record.get("longitude") if longitude is _UNSET else longitude
    if latitude is not _UNSET or longitude is not _UNSET:
        _check_location_args(db, new_lat, new_lon)
        updates["latitude"] = None if new_lat is None else float(new_lat)
        updates["longitude"] = None if new_lon is None else float(new_lon)
    updates["creation_timestamp"] = world_now(db)
    record.update(updates)


def remove_reminder(db: dict, reminder_id: Any) -> None:
    record = _existing(db, REMINDERS, "reminder_id", reminder_id)
    del _coll_mut(db, REMINDERS)[record["reminder_id"]]


def search_reminder(
    db: dict,
    reminder_id: Any = _UNSET,
    content: Any = _UNSET,
    creation_timestamp_lowerbound: Any = _UNSET,
    creation_timestamp_upperbound: Any = _UNSET,
    reminder_timestamp_lowerbound: Any = _UNSET,
    reminder_timestamp_upperbound: Any = _UNSET,
    latitude: Any = _UNSET,
    longitude: Any = _UNSET,
) -> list[dict]:
    bounds = {
        "creation_timestamp_lowerbound": creation_timestamp_lowerbound,
        "creation_timestamp_upperbound": creation_timestamp_upperbound,
        "reminder_timestamp_lowerbound": reminder_timestamp_lowerbound,
        "reminder_timestamp_upperbound": reminder_timestamp_upperbound,
    }
    for key, value in bounds.items():
        if value is not _UNSET:
            _want_timestamp(value, key)
    if latitude is not _UNSET:
        _want_lat(latitude)
    if longitude is not _UNSET:
        _want_lon(longitude)
    if content is not _UNSET:
        _want_str(content, "content")
    return _filter(
        list(_coll(db, REMINDERS).values()),
        [
            ("reminder_id", reminder_id, _exact),
            ("content", content, _fuzzy(50)),
            ("creation_timestamp", creation_timestamp_lowerbound, _at_least),
            ("creation_timestamp", creation_timestamp_upperbound, _at_most),
            ("reminder_timestamp", reminder_timestamp_lowerbound, _at_least),
            ("reminder_timestamp", reminder_timestamp_upperbound, _at_most),
            ("latitude", latitude, _exact),
            ("longitude", longitude, _exact),
        ],
    )


# --------------------------------------------------------------------------------------------
# Tools: date/time and other utilities (all UTC)
# --------------------------------------------------------------------------------------------


def _utc(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, tz=UTC)


def get_current_timestamp(db: dict) -> float:
    return world_now(db)


def timestamp_to_datetime_info(db: dict, timestamp: Any) -> dict:
    moment = _utc(_want_timestamp(timestamp, "timestamp"))
    return {
        "year": moment.year,
        "month": moment.month,
        "day": moment.day,
        "hour": moment.hour,
        "minute": moment.minute,
        "second": moment.second,
        "isoweekday": moment.isoweekday(),
    }


def datetime_info_to_timestamp(
    db: dict, year: Any, month: Any, day: Any, hour: Any, minute: Any, second: Any
) -> float:
    parts = {"year": year, "month": month, "day": day, "hour": hour, "minute": minute}
    values = {k: _want_int(v, k) for k, v in {**parts, "second": second}.items()}
    try:
        return datetime(**values, tzinfo=UTC).timestamp()
    except ValueError as exc:
        raise ToolError(f"Invalid date/time {values}: {exc}") from None


def shift_timestamp(
    db: dict,
    timestamp: Any,
    weeks: Any = 0,
    days: Any = 0,
    hours: Any = 0,
    minutes: Any = 0,
    seconds: Any = 0,
) -> float:
    start = _want_timestamp(timestamp, "timestamp")
    deltas = {"weeks": weeks, "days": days, "hours": hours, "minutes": minutes, "seconds": seconds}
    delta = timedelta(**{k: _want_int(v, k) for k, v in deltas.items()})
    return (_utc(start) + delta).timestamp()


def timestamp_diff(db: dict, timestamp_0: Any, timestamp_1: Any) -> dict:
    """``timestamp_1 - timestamp_0`` as Python's normalised (days, seconds)."""
    t0 = _want_timestamp(timestamp_0, "timestamp_0")
    t1 = _want_timestamp(timestamp_1, "timestamp_1")
    delta = _utc(t1) - _utc(t0)
    return {"days": delta.days, "seconds": delta.seconds}


def seconds_to_hours_minutes_seconds(db: dict, seconds: Any) -> dict:
    if not _is_number(seconds) or seconds < 0:
        raise ToolError(f"Parameter 'seconds' must be a non-negative number, got {seconds!r}.")
    whole = int(seconds) % 86400
    return {"hour": whole // 3600, "minute": whole % 3600 // 60, "second": whole % 60}


def calculate_lat_lon_distance(
    db: dict, latitude_0: Any, longitude_0: Any, latitude_1: Any, longitude_1: Any
) -> float:
    """Great-circle (haversine) distance in km (ToolSandbox uses geodesic; within ~0.5 %)."""
    lat0, lat1 = _want_lat(latitude_0, "latitude_0"), _want_lat(latitude_1, "latitude_1")
    lon0, lon1 = _want_lon(longitude_0, "longitude_0"), _want_lon(longitude_1, "longitude_1")
    p0, p1 = math.radians(lat0), math.radians(lat1)
    dp, dl = p1 - p0, math.radians(lon1 - lon0)
    a = math.sin(dp / 2) ** 2 + math.cos(p0) * math.cos(p1) * math.sin(dl / 2) ** 2
    return 2 * 6371.0088 * math.asin(min(1.0, math.sqrt(a)))


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    """The n-th (1-based; -1 = last) ``weekday`` (Mon=0) of a month."""
    days = [d for d in range(1, calendar.monthrange(year, month)[1] + 1)]
    matching = [d for d in days if date(year, month, d).weekday() == weekday]
    return date(year, month, matching[n - 1 if n > 0 else n])


def us_holidays(year: int) -> dict[str, date]:
    """US federal holidays of ``year`` (actual dates, not observed ones)."""
    holidays = {
        "New Year's Day": date(year, 1, 1),
        "Martin Luther King Jr. Day": _nth_weekday(year, 1, 0, 3),
        "Washington's Birthday": _nth_weekday(year, 2, 0, 3),
        "Memorial Day": _nth_weekday(year, 5, 0, -1),
        "Independence Day": date(year, 7, 4),
        "Labor Day": _nth_weekday(year, 9, 0, 1),
        "Columbus Day": _nth_weekday(year, 10, 0, 2),
        "Veterans Day": date(year, 11, 11),
        "Thanksgiving": _nth_weekday(year, 11, 3, 4),
        "Christmas Day": date(year, 12, 25),
    }
    if year >= 2021:
        holidays["Juneteenth National Independence Day"] = date(year, 6, 19)
    return holidays


def search_holiday(db: dict, holiday_name: Any, year: Any = None) -> float | None:
    """Midnight (UTC) of the best-matching US holiday, or None; needs wifi (a web lookup)."""
    name = _want_str(holiday_name, "holiday_name")
    if not _settings(db).get("wifi"):
        raise ToolError("Wifi is not enabled")
    year = _utc(world_now(db)).year if year is None else _want_int(year, "year")
    if not 1980 <= year <= 2049:
        raise ToolError(f"Parameter 'year' must be between 1980 and 2049, got {year}.")
    scored = sorted(
        ((fuzzy_score(name, title), title, day) for title, day in us_holidays(year).items()),
        key=lambda x: -x[0],
    )
    score, _, day = scored[0]
    if score < 90:
        return None
    return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()


def end_conversation(db: dict) -> str:
    return "Conversation ended."


# --------------------------------------------------------------------------------------------
# Tool table (names, descriptions and JSON schemas as the agent sees them)
# --------------------------------------------------------------------------------------------


# The tools' names, descriptions, JSON schemas and read/write kind are data, like airline's and
# retail's: data/toolsandbox_tools.json (OpenAI function form); here only their implementations.
TOOL_FUNCS: dict[str, ToolFunc] = {
    "set_low_battery_mode_status": set_low_battery_mode_status,
    "get_low_battery_mode_status": _make_getter("low_battery_mode"),
    "set_location_service_status": _make_setter("location_service"),
    "get_location_service_status": _make_getter("location_service"),
    "set_cellular_service_status": _make_setter("cellular"),
    "get_cellular_service_status": _make_getter("cellular"),
    "set_wifi_status": _make_setter("wifi"),
    "get_wifi_status": _make_getter("wifi"),
    "get_current_location": get_current_location,
    "add_contact": add_contact,
    "modify_contact": modify_contact,
    "remove_contact": remove_contact,
    "search_contacts": search_contacts,
    "send_message_with_phone_number": send_message_with_phone_number,
    "search_messages": search_messages,
    "add_reminder": add_reminder,
    "modify_reminder": modify_reminder,
    "search_reminder": search_reminder,
    "remove_reminder": remove_reminder,
    "get_current_timestamp": get_current_timestamp,
    "timestamp_to_datetime_info": timestamp_to_datetime_info,
    "datetime_info_to_timestamp": datetime_info_to_timestamp,
    "shift_timestamp": shift_timestamp,
    "timestamp_diff": timestamp_diff,
    "seconds_to_hours_minutes_seconds": seconds_to_hours_minutes_seconds,
    "calculate_lat_lon_distance": calculate_lat_lon_distance,
    "search_holiday": search_holiday,
    "end_conversation": end_conversation,
}

TOOLS: dict[str, Tool] = tools_from_data("toolsandbox", TOOL_FUNCS)


# --------------------------------------------------------------------------------------------
# Entity generators (deterministic given the rng)
# --------------------------------------------------------------------------------------------


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


FIRST_NAMES = _words(
    "Tomas Fredrik Homer Maria Aiko Liam Sofia Noah Priya Mateo Chloe Ethan Amara Lucas Hannah "
    "Ravi Elena Omar Grace Jonas Mei Diego Nora Kwame Isabel Yuki Samuel Leila Owen Zoe"
)
LAST_NAMES = _words(
    "Haake Thordendal Simpson Garcia Tanaka Walsh Rossi Kim Patel Lopez Dubois Nguyen Okafor "
    "Meyer Cohen Singh Novak Haddad Oliveira Andersen Chen Fischer Murphy Ivanova Mensah Sato"
)
RELATIONSHIPS = _words(
    "friend mother father sister brother wife husband son daughter coworker boss neighbor "
    "roommate cousin doctor"
)
AREA_CODES = _words("212 213 206 303 305 312 404 408 415 503 512 617 646 702 718 773 818 917")

PLACES = (  # (name, latitude, longitude)
    ("Apple Park, Cupertino", 37.334606, -122.009102),
    ("Golden Gate Park, San Francisco", 37.769421, -122.486214),
    ("Times Square, New York", 40.758896, -73.985130),
    ("Pike Place Market, Seattle", 47.609722, -122.342222),
    ("Millennium Park, Chicago", 41.882702, -87.619392),
    ("Zilker Park, Austin", 30.266962, -97.772859),
    ("Boston Common, Boston", 42.355136, -71.065500),
    ("Union Station, Denver", 39.752857, -105.000061),
    ("Balboa Park, San Diego", 32.734148, -117.144553),
    ("Ponce City Market, Atlanta", 33.772163, -84.365615),
)
MESSAGE_TEMPLATES = (
    "Hey {name}, are we still on for dinner tonight?",
    "Running 10 minutes late, sorry!",
    "Can you send me the photos from the weekend?",
    "Happy birthday {name}! Hope you have a great day.",
    "Don't forget to bring the charger.",
    "I'll pick up the groceries on my way home.",
    "Did you see the game last night?",
    "The meeting moved to 3pm.",
    "Thanks for your help today, {name}.",
    "Call me when you get a chance.",
    "Landed safely, see you soon.",
    "What time does the movie start?",
    "Can you feed the cat tomorrow morning?",
    "Let's grab coffee next week.",
    "The package arrived, thank you!",
    "Are you coming to the party on Saturday?",
)
REMINDER_CONTENTS = (
    "Buy milk",
    "Call the dentist",
    "Pay the electricity bill",
    "Pick up dry cleaning",
    "Water the plants",
    "Renew passport",
    "Submit expense report",
    "Book flight tickets",
    "Take out the trash",
    "Walk the dog",
    "Buy a birthday gift",
    "Return library books",
    "Schedule car service",
    "Cancel gym membership",
    "Send the invoice",
    "Refill prescription",
)


def _fresh_name(rng: random.Random, db: dict) -> str:
    """A full name no contact of the world has yet (duplicates only when names run out)."""
    used = {c.get("name") for c in (db.get(CONTACTS) or {}).values()}
    for _ in range(100):
        name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
        if name not in used:
            break
    return name


def _fresh_phone(rng: random.Random, db: dict) -> str:
    used = {c.get("phone_number") for c in (db.get(CONTACTS) or {}).values()}
    while True:
        phone = f"+1{rng.choice(AREA_CODES)}{rng.randint(200, 999)}{rng.randint(0, 9999):04d}"
        if phone not in used:
            return phone


def gen_settings(rng: random.Random, db: dict, overrides: Mapping[str, Any]) -> dict:
    """Random but consistent settings; low battery mode implies the radios are off.

    ``now`` is drawn (a whole minute between 2023 and 2026, 07:00-21:59 UTC) unless fixed;
    spawn settings before messages and reminders, whose times are drawn around ``now``.
    """
    low_battery = overrides.get("low_battery_mode", rng.random() < 0.15)
    radios = {k: rng.random() < 0.8 for k in ("cellular", "wifi", "location_service")}
    if low_battery:
        radios = dict.fromkeys(radios, False)
    _, lat, lon = rng.choice(PLACES)
    day = date(2023, 1, 1) + timedelta(days=rng.randint(0, 365 * 4 - 1))
    now = datetime(
        day.year, day.month, day.day, rng.randint(7, 21), rng.randint(0, 59), 0, tzinfo=UTC
    ).timestamp()
    record = {
        "device_id": _rng_uuid(rng),
        **radios,
        "low_battery_mode": bool(low_battery),
        "latitude": lat,
        "longitude": lon,
        "now": now,
    }
    record.update(overrides)
    return record


def gen_contact(rng: random.Random, db: dict, overrides: Mapping[str, Any]) -> dict:
    """A contact; the first contact of a world without an owner is the owner (``is_self``)."""
    has_self = any(c.get("is_self") for c in (db.get(CONTACTS) or {}).values())
    is_self = overrides.get("is_self", not has_self)
    if is_self and has_self:
        raise ValueError("the world already has an owner contact (is_self = true)")
    record = {
        "person_id": overrides.get("person_id") or _new_id_in(CONTACTS)(rng, db),
        "name": _fresh_name(rng, db),
        "phone_number": _fresh_phone(rng, db),
        "relationship": None if is_self else rng.choice(RELATIONSHIPS),
        "is_self": bool(is_self),
    }
    record.update(overrides)
    return record


def _party(db: dict, person_id: Any, phone: Any) -> tuple[Any, Any]:
    """Complete a (person_id, phone_number) pair from the contacts when one side is given."""
    contacts = db.get(CONTACTS) or {}
    if person_id is not None and phone is None and person_id in contacts:
        return person_id, contacts[person_id]["phone_number"]
    if phone is not None and person_id is None:
        match = _contact_by_phone(db, phone)
        return (match["person_id"] if match else None), phone
    return person_id, phone


def gen_message(rng: random.Random, db: dict, overrides: Mapping[str, Any]) -> dict:
    """A message between the owner and another contact (or an unknown number), before ``now``."""
    contacts = list((db.get(CONTACTS) or {}).values())
    owner = next((c for c in contacts if c.get("is_self")), None)
    if owner is None:
        raise ValueError("a message needs the phone owner's contact: spawn contacts first")
    others = [c for c in contacts if not c.get("is_self")]
    other = rng.choice(others) if others and rng.random() < 0.9 else None
    other_id = other["person_id"] if other else None
    other_phone = other["phone_number"] if other else _fresh_phone(rng, db)
    outgoing = rng.random() < 0.5
    sender = (owner["person_id"], owner["phone_number"]) if outgoing else (other_id, other_phone)
    recipient = (other_id, other_phone) if outgoing else (owner["person_id"], owner["phone_number"])
    fixed = {
        k: overrides.get(k)
        for k in (
            "sender_person_id",
            "sender_phone_number",
            "recipient_person_id",
            "recipient_phone_number",
        )
    }
    if fixed["sender_person_id"] is not None or fixed["sender_phone_number"] is not None:
        sender = _party(db, fixed["sender_person_id"], fixed["sender_phone_number"])
    if fixed["recipient_person_id"] is not None or fixed["recipient_phone_number"] is not None:
        recipient = _party(db, fixed["recipient_person_id"], fixed["recipient_phone_number"])
    name_of = (db.get(CONTACTS) or {}).get(recipient[0], {}).get("name", "there")
    record = {
        "message_id": overrides.get("message_id") or _new_id_in(MESSAGES)(rng, db),
        "sender_person_id": sender[0],
        "sender_phone_number": sender[1],
        "recipient_person_id": recipient[0],
        "recipient_phone_number": recipient[1],
        "content": rng.choice(MESSAGE_TEMPLATES).format(name=name_of.split()[0]),
        "creation_timestamp": float(world_now(db) - rng.randint(600, 30 * 86400)),
    }
    record.update(overrides)
    return record


def gen_reminder(rng: random.Random, db: dict, overrides: Mapping[str, Any]) -> dict:
    """A reminder created before ``now``, due between 3 days before and 14 days after ``now``."""
    now = world_now(db)
    created = float(now - rng.randint(3600, 14 * 86400))
    due = now + rng.randint(-3 * 288, 14 * 288) * 300  # 5-minute steps
    due = float(max(due, created + 300))
    if "reminder_timestamp" in overrides and "creation_timestamp" not in overrides:
        created = float(min(created, overrides["reminder_timestamp"] - 300))
    place = rng.choice(PLACES) if rng.random() < 0.25 else None
    record = {
        "reminder_id": overrides.get("reminder_id") or _new_id_in(REMINDERS)(rng, db),
        "content": rng.choice(REMINDER_CONTENTS),
        "creation_timestamp": created,
        "reminder_timestamp": due,
        "latitude": place[1] if place else None,
        "longitude": place[2] if place else None,
    }
    record.update(overrides)
    return record


ENTITIES: dict[str, EntityKind] = {
    "settings": EntityKind(
        name="settings",
        collection=SETTINGS,
        id_field="",
        fields={
            "device_id": STR,
            "cellular": BOOL,
            "wifi": BOOL,
            "location_service": BOOL,
            "low_battery_mode": BOOL,
            "latitude": FLOAT,
            "longitude": FLOAT,
            "now": FLOAT,
        },
        generate=gen_settings,
        singleton=True,
        description="The phone's settings and the world's fixed clock `now` (POSIX s, UTC).",
    ),
    "contact": EntityKind(
        name="contact",
        collection=CONTACTS,
        id_field="person_id",
        fields={
            "person_id": STR,
            "name": STR,
            "phone_number": STR,
            "relationship": ANY,  # str, or None (the owner; contacts added without one)
            "is_self": BOOL,
        },
        generate=gen_contact,
        new_id=_new_id_in(CONTACTS),
        description="A contact; exactly one (the first spawned, by default) is the owner.",
    ),
    "message": EntityKind(
        name="message",
        collection=MESSAGES,
        id_field="message_id",
        fields={
            "message_id": STR,
            "sender_person_id": ANY,  # str, or None for an unknown number
            "sender_phone_number": STR,
            "recipient_person_id": ANY,  # str, or None for an unknown number
            "recipient_phone_number": STR,
            "content": STR,
            "creation_timestamp": FLOAT,
        },
        generate=gen_message,
        new_id=_new_id_in(MESSAGES),
        description="A text message to or from the owner.",
    ),
    "reminder": EntityKind(
        name="reminder",
        collection=REMINDERS,
        id_field="reminder_id",
        fields={
            "reminder_id": STR,
            "content": STR,
            "creation_timestamp": FLOAT,
            "reminder_timestamp": FLOAT,
            "latitude": ANY,  # float, or None without a location
            "longitude": ANY,  # float, or None without a location
        },
        generate=gen_reminder,
        new_id=_new_id_in(REMINDERS),
        description="A reminder, optionally tied to a location.",
    ),
}

POLICY = (Path(__file__).parent / "data" / "toolsandbox_policy.md").read_text(encoding="utf-8")

DOMAIN = Domain(
    name="toolsandbox",
    description="A phone (after Apple's ToolSandbox): settings, contacts, messages, reminders, "
    "date/time utilities; stateful tools with setting dependencies.",
    policy=POLICY,
    tools=TOOLS,
    entities=ENTITIES,
    empty_db=empty_db,
    functions={},
    ends_episode=frozenset({"end_conversation"}),
    schema=Schema(
        refs=refs(
            ("message", Ref("sender", "sender_person_id", "contact", nullable=True)),
            ("message", Ref("recipient", "recipient_person_id", "contact", nullable=True)),
        ),
        units={
            "settings": units(now="timestamp"),
            "message": units(creation_timestamp="timestamp"),
            "reminder": units(creation_timestamp="timestamp", reminder_timestamp="timestamp"),
        },
        arg_units={
            "add_reminder": units(reminder_timestamp="timestamp"),
            "modify_reminder": units(reminder_timestamp="timestamp"),
            "search_messages": units(creation_timestamp_lowerbound="timestamp",
                                     creation_timestamp_upperbound="timestamp"),
            "search_reminder": units(creation_timestamp_lowerbound="timestamp",
                                     creation_timestamp_upperbound="timestamp",
                                     reminder_timestamp_lowerbound="timestamp",
                                     reminder_timestamp_upperbound="timestamp"),
            "timestamp_to_datetime_info": units(timestamp="timestamp"),
            "shift_timestamp": units(timestamp="timestamp", weeks="weeks", days="days",
                                     hours="hours", minutes="minutes", seconds="seconds"),
            "timestamp_diff": units(timestamp_0="timestamp", timestamp_1="timestamp"),
            "seconds_to_hours_minutes_seconds": units(seconds="seconds"),
        },
        generators={
            "settings": "Draws the radios (80% on each), low battery mode (15%; then the radios "
            "are off), a position and `now` (a whole minute, 2023-2026, 07:00-21:59 UTC). Spawn "
            "it before messages and reminders, whose times are drawn around `now`.",
            "contact": "Draws a fresh name and phone number; the first contact of a world is the "
            "owner (`is_self`, no relationship), the others get a relationship.",
            "message": "Needs the owner contact. Between the owner and another contact (10%: an "
            "unknown number, person id None), either direction, 10 minutes to 30 days before "
            "`now`; a fixed person id or phone number completes the other from the contacts.",
            "reminder": "Created before `now`, due 3 days before to 14 days after it (5-minute "
            "steps); 25% have a location.",
        },
    ),
)
