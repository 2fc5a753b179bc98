"""The ToolSandbox-like phone domain: tools, permission gating, time utilities, generators."""

from __future__ import annotations

import copy
import inspect
import json
import os
import random
import time
import uuid
from datetime import datetime, timedelta, timezone

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracec.core.types import ANY, BOOL, FLOAT, INT, STR, T
from tracec.domains import ToolError, get_domain
from tracec.domains import toolsandbox as ts

D = get_domain("toolsandbox")
UTC = timezone.utc
NOW = ts.DEFAULT_NOW  # 2024-06-07 14:30:00 UTC
OWNER_PHONE = "+14155550100"
ALICE_PHONE = "+12125550199"


@pytest.fixture(autouse=True, scope="module")
def _local_time_is_not_utc():
    """Run under a non-UTC local zone, so a tool that used local time would fail."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "America/Los_Angeles"
    time.tzset()
    yield
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()


def call(db: dict, tool: str, /, **args):
    return D.call(db, tool, args)


@pytest.fixture()
def db() -> dict:
    """Default settings, the owner and one friend."""
    world = D.empty_db()
    call(world, "add_contact", name="Tomas Haake", phone_number=OWNER_PHONE, is_self=True)
    call(world, "add_contact", name="Alice Walsh", phone_number=ALICE_PHONE, relationship="friend")
    return world


def contact_id(db: dict, name: str) -> str:
    return call(db, "search_contacts", name=name)[0]["person_id"]


# ---------------------------------------------------------------------------------------------
# contract
# ---------------------------------------------------------------------------------------------


def test_domain_contract():
    assert D.name == "toolsandbox"
    assert D.ends_episode == {"end_conversation"}
    assert all(name == tool.name for name, tool in D.tools.items())
    assert "UTC" in D.policy and "cellular" in D.policy
    layout = D.empty_db()
    assert set(layout) == {"settings", "contacts", "messages", "reminders"}
    assert layout["settings"]["now"] == NOW
    assert D.entities["settings"].singleton
    assert datetime.fromtimestamp(NOW, UTC) == datetime(2024, 6, 7, 14, 30, tzinfo=UTC)


@pytest.mark.parametrize("name", sorted(D.tools))
def test_schema_is_valid_json_schema_and_matches_function(name):
    tool = D.tools[name]
    params = tool.parameters
    jsonschema.Draft202012Validator.check_schema(params)
    assert params["type"] == "object"
    assert set(params["required"]) <= set(params["properties"])
    assert tool.description
    for prop in params["properties"].values():
        assert prop["type"] in {"string", "number", "integer", "boolean"} and prop["description"]
    sig = inspect.signature(tool.func)
    args = [p for p in sig.parameters.values()][1:]  # first is the db
    assert [a.name for a in args] == list(params["properties"])
    no_default = {a.name for a in args if a.default is inspect.Parameter.empty}
    assert no_default == set(params["required"])
    json.dumps(tool.openai_schema())


def test_writes_flags_match_behaviour(db):
    """Read-only tools never change the world; every writing tool changes it on a valid call."""
    alice = contact_id(db, "Alice")
    rid = call(db, "add_reminder", content="Buy milk", reminder_timestamp=NOW + 3600)
    valid = {
        "set_low_battery_mode_status": {"on": True},
        "set_cellular_service_status": {"on": False},
        "set_wifi_status": {"on": False},
        "set_location_service_status": {"on": False},
        "add_contact": {"name": "Bo Chen", "phone_number": "+13035550123"},
        "modify_contact": {"person_id": alice, "relationship": "coworker"},
        "remove_contact": {"person_id": alice},
        "send_message_with_phone_number": {"phone_number": ALICE_PHONE, "content": "hi"},
        "add_reminder": {"content": "Call mom", "reminder_timestamp": NOW + 60},
        "modify_reminder": {"reminder_id": rid, "content": "Buy oat milk"},
        "remove_reminder": {"reminder_id": rid},
        "search_contacts": {"name": "Alice"},
        "search_messages": {"content": "hi"},
        "search_reminder": {"content": "milk"},
        "timestamp_to_datetime_info": {"timestamp": NOW},
        "datetime_info_to_timestamp": {
            "year": 2024,
            "month": 1,
            "day": 2,
            "hour": 3,
            "minute": 4,
            "second": 5,
        },
        "shift_timestamp": {"timestamp": NOW, "days": 1},
        "timestamp_diff": {"timestamp_0": NOW, "timestamp_1": NOW + 5},
        "seconds_to_hours_minutes_seconds": {"seconds": 3661},
        "calculate_lat_lon_distance": {
            "latitude_0": 0,
            "longitude_0": 0,
            "latitude_1": 1,
            "longitude_1": 1,
        },
        "search_holiday": {"holiday_name": "Christmas"},
    }
    for name, tool in D.tools.items():
        world = copy.deepcopy(db)
        before = copy.deepcopy(world)
        call(world, name, **valid.get(name, {}))
        assert (world != before) == tool.writes, name


# ---------------------------------------------------------------------------------------------
# settings and permission gating
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "noun", ["cellular_service", "wifi", "location_service", "low_battery_mode"]
)
def test_setting_toggle_and_already_state_errors(db, noun):
    initial = call(db, f"get_{noun}_status")
    assert initial is (noun != "low_battery_mode")
    with pytest.raises(ToolError, match="already enabled" if initial else "already disabled"):
        call(db, f"set_{noun}_status", on=initial)
    call(db, f"set_{noun}_status", on=not initial)
    assert call(db, f"get_{noun}_status") is (not initial)
    with pytest.raises(ToolError, match="boolean"):
        call(db, f"set_{noun}_status", on="yes")


def test_send_message_needs_cellular_chain(db):
    call(db, "set_cellular_service_status", on=False)
    with pytest.raises(ToolError, match="Cellular service is not enabled"):
        call(db, "send_message_with_phone_number", phone_number=ALICE_PHONE, content="hi")
    assert db["messages"] == {}
    assert call(db, "get_cellular_service_status") is False
    call(db, "set_cellular_service_status", on=True)
    mid = call(db, "send_message_with_phone_number", phone_number=ALICE_PHONE, content="hi")
    assert db["messages"][mid]["recipient_phone_number"] == ALICE_PHONE


def test_low_battery_mode_turns_radios_off_and_blocks_them(db):
    call(db, "set_low_battery_mode_status", on=True)
    for noun in ("cellular_service", "wifi", "location_service"):
        assert call(db, f"get_{noun}_status") is False
    for noun, label in (
        ("cellular_service", "Cellular service"),
        ("wifi", "Wifi"),
        ("location_service", "Location service"),
    ):
        with pytest.raises(ToolError, match=f"{label} cannot be turned on in low battery mode"):
            call(db, f"set_{noun}_status", on=True)
    with pytest.raises(ToolError, match="Cellular service is not enabled"):
        call(db, "send_message_with_phone_number", phone_number=ALICE_PHONE, content="hi")
    # the fix: low battery mode off, then cellular on, then send
    call(db, "set_low_battery_mode_status", on=False)
    assert call(db, "get_cellular_service_status") is False  # not switched back on by itself
    call(db, "set_cellular_service_status", on=True)
    assert call(db, "send_message_with_phone_number", phone_number=ALICE_PHONE, content="ok")


def test_location_features_need_location_service(db):
    assert call(db, "get_current_location") == {"latitude": 37.334606, "longitude": -122.009102}
    call(db, "set_location_service_status", on=False)
    with pytest.raises(ToolError, match="Location service is not enabled"):
        call(db, "get_current_location")
    with pytest.raises(ToolError, match="Location service is not enabled"):
        call(
            db,
            "add_reminder",
            content="Buy milk",
            reminder_timestamp=NOW + 60,
            latitude=40.0,
            longitude=-73.0,
        )
    plain = call(db, "add_reminder", content="Buy milk", reminder_timestamp=NOW + 60)
    with pytest.raises(ToolError, match="Location service is not enabled"):
        call(db, "modify_reminder", reminder_id=plain, latitude=40.0, longitude=-73.0)
    call(db, "set_location_service_status", on=True)
    rid = call(
        db,
        "add_reminder",
        content="Buy milk",
        reminder_timestamp=NOW + 60,
        latitude=40.0,
        longitude=-73.0,
    )
    assert (db["reminders"][rid]["latitude"], db["reminders"][rid]["longitude"]) == (40.0, -73.0)


def test_search_holiday_needs_wifi_and_finds_dates(db):
    thanksgiving = call(db, "search_holiday", holiday_name="thanksgiving")
    assert datetime.fromtimestamp(thanksgiving, UTC) == datetime(2024, 11, 28, tzinfo=UTC)
    xmas = call(db, "search_holiday", holiday_name="Christmas", year=2025)
    assert datetime.fromtimestamp(xmas, UTC).date().isoformat() == "2025-12-25"
    memorial = call(db, "search_holiday", holiday_name="Memorial Day", year=2023)
    assert datetime.fromtimestamp(memorial, UTC).date().isoformat() == "2023-05-29"
    assert call(db, "search_holiday", holiday_name="Festivus") is None
    call(db, "set_wifi_status", on=False)
    with pytest.raises(ToolError, match="Wifi is not enabled"):
        call(db, "search_holiday", holiday_name="thanksgiving")


# ---------------------------------------------------------------------------------------------
# contacts
# ---------------------------------------------------------------------------------------------


def test_contacts_crud(db):
    pid = call(db, "add_contact", name="Bo Chen", phone_number="+1 (303) 555-0123")
    assert uuid.UUID(pid).version == 4
    record = db["contacts"][pid]
    assert record == {
        "person_id": pid,
        "name": "Bo Chen",
        "phone_number": "+13035550123",
        "relationship": None,
        "is_self": False,
    }
    assert call(db, "search_contacts", phone_number="+13035550123") == [record]
    assert [c["name"] for c in call(db, "search_contacts", name="bo")] == ["Bo Chen"]
    assert [c["name"] for c in call(db, "search_contacts", relationship="Friend")] == [
        "Alice Walsh"
    ]
    assert [c["name"] for c in call(db, "search_contacts", is_self=True)] == ["Tomas Haake"]
    assert call(db, "search_contacts", name="Zed Nobody") == []
    call(db, "modify_contact", person_id=pid, relationship="coworker", phone_number="+13035550124")
    assert db["contacts"][pid]["relationship"] == "coworker"
    assert db["contacts"][pid]["phone_number"] == "+13035550124"
    call(db, "remove_contact", person_id=pid)
    assert pid not in db["contacts"]
    results = call(db, "search_contacts", name="Alice")
    results[0]["name"] = "mutated"
    assert contact_id(db, "Alice") and db["contacts"][contact_id(db, "Alice")]["name"] != "mutated"


def test_contact_errors(db):
    alice = contact_id(db, "Alice")
    with pytest.raises(ToolError, match="Self entry already exists"):
        call(db, "add_contact", name="Me Again", phone_number="+14155550111", is_self=True)
    with pytest.raises(ToolError, match="Self entry already exists"):
        call(db, "modify_contact", person_id=alice, is_self=True)
    with pytest.raises(ToolError, match="international format"):
        call(db, "add_contact", name="Bo", phone_number="555-0123")
    with pytest.raises(ToolError, match="No update information"):
        call(db, "modify_contact", person_id=alice)
    with pytest.raises(ToolError, match="No db entry matching person_id='nope'"):
        call(db, "modify_contact", person_id="nope", name="X")
    with pytest.raises(ToolError, match="No db entry matching"):
        call(db, "remove_contact", person_id="nope")
    with pytest.raises(ToolError, match="No search criteria"):
        call(db, "search_contacts")
    with pytest.raises(ToolError, match="international format"):
        call(db, "search_contacts", phone_number="12")
    call(db, "modify_contact", person_id=contact_id(db, "Tomas"), is_self=True)  # self stays self


# ---------------------------------------------------------------------------------------------
# messages
# ---------------------------------------------------------------------------------------------


def test_send_and_search_messages(db):
    owner, alice = contact_id(db, "Tomas"), contact_id(db, "Alice")
    mid = call(
        db, "send_message_with_phone_number", phone_number="+1 212 555 0199", content="Dinner at 7?"
    )
    assert db["messages"][mid] == {
        "message_id": mid,
        "sender_person_id": owner,
        "sender_phone_number": OWNER_PHONE,
        "recipient_person_id": alice,
        "recipient_phone_number": ALICE_PHONE,
        "content": "Dinner at 7?",
        "creation_timestamp": NOW,
    }
    unknown = call(
        db, "send_message_with_phone_number", phone_number="+447700900123", content="Who is this?"
    )
    assert db["messages"][unknown]["recipient_person_id"] is None
    assert [m["message_id"] for m in call(db, "search_messages", recipient_person_id=alice)] == [
        mid
    ]
    assert [m["message_id"] for m in call(db, "search_messages", content="dinner")] == [mid]
    assert len(call(db, "search_messages", sender_phone_number=OWNER_PHONE)) == 2
    assert call(db, "search_messages", creation_timestamp_lowerbound=NOW + 1) == []
    assert len(call(db, "search_messages", creation_timestamp_upperbound=NOW)) == 2
    with pytest.raises(ToolError, match="No search criteria"):
        call(db, "search_messages")
    with pytest.raises(ToolError, match="creation_timestamp_lowerbound"):
        call(db, "search_messages", creation_timestamp_lowerbound=NOW * 1000)


def test_send_message_without_single_owner_fails():
    world = D.empty_db()
    with pytest.raises(ToolError, match="1 and only 1 self entry"):
        call(world, "send_message_with_phone_number", phone_number=ALICE_PHONE, content="hi")


def test_tool_ids_are_deterministic_replays(db):
    """Same calls on the same world give the same ids (gold replays match agent calls)."""

    def script(world: dict) -> list[str]:
        return [
            call(world, "add_contact", name="Bo Chen", phone_number="+13035550123"),
            call(world, "send_message_with_phone_number", phone_number=ALICE_PHONE, content="hi"),
            call(world, "send_message_with_phone_number", phone_number=ALICE_PHONE, content="hi"),
            call(world, "add_reminder", content="x", reminder_timestamp=NOW),
        ]

    a, b = copy.deepcopy(db), copy.deepcopy(db)
    ids_a, ids_b = script(a), script(b)
    assert ids_a == ids_b and a == b
    assert len(set(ids_a)) == 4  # identical messages still get distinct ids


# ---------------------------------------------------------------------------------------------
# reminders
# ---------------------------------------------------------------------------------------------


def test_reminders_crud(db):
    rid = call(db, "add_reminder", content="Buy milk", reminder_timestamp=NOW + 86400)
    assert db["reminders"][rid] == {
        "reminder_id": rid,
        "content": "Buy milk",
        "creation_timestamp": NOW,
        "reminder_timestamp": NOW + 86400,
        "latitude": None,
        "longitude": None,
    }
    other = call(
        db,
        "add_reminder",
        content="Walk the dog",
        reminder_timestamp=NOW + 60,
        latitude=37.77,
        longitude=-122.48,
    )
    assert [r["reminder_id"] for r in call(db, "search_reminder", content="milk")] == [rid]
    found = call(db, "search_reminder", reminder_timestamp_lowerbound=NOW + 3600)
    assert [r["reminder_id"] for r in found] == [rid]
    found = call(db, "search_reminder", reminder_timestamp_upperbound=NOW + 3600)
    assert [r["reminder_id"] for r in found] == [other]
    assert [r["reminder_id"] for r in call(db, "search_reminder", latitude=37.77)] == [other]
    assert len(call(db, "search_reminder", creation_timestamp_lowerbound=NOW)) == 2
    db["settings"]["now"] = NOW + 10  # time passes between calls in some worlds
    call(db, "modify_reminder", reminder_id=rid, reminder_timestamp=NOW + 7200)
    assert db["reminders"][rid]["reminder_timestamp"] == NOW + 7200
    assert db["reminders"][rid]["creation_timestamp"] == NOW + 10
    call(db, "modify_reminder", reminder_id=other, latitude=None, longitude=None)
    assert db["reminders"][other]["latitude"] is None
    call(db, "remove_reminder", reminder_id=rid)
    assert list(db["reminders"]) == [other]


def test_reminder_errors(db):
    with pytest.raises(ToolError, match="larger than its valid range.*POSIX seconds"):
        call(db, "add_reminder", content="x", reminder_timestamp=NOW * 1000)
    with pytest.raises(ToolError, match="must be a number"):
        call(db, "add_reminder", content="x", reminder_timestamp="tomorrow")
    with pytest.raises(ToolError, match="both latitude and longitude"):
        call(db, "add_reminder", content="x", reminder_timestamp=NOW, latitude=1.0)
    with pytest.raises(ToolError, match="'latitude' is larger"):
        call(db, "add_reminder", content="x", reminder_timestamp=NOW, latitude=91, longitude=0)
    with pytest.raises(ToolError, match="No update information"):
        call(db, "modify_reminder", reminder_id="r")
    with pytest.raises(ToolError, match="No db entry matching reminder_id='r'"):
        call(db, "modify_reminder", reminder_id="r", content="y")
    with pytest.raises(ToolError, match="No db entry matching"):
        call(db, "remove_reminder", reminder_id="r")
    with pytest.raises(ToolError, match="No search criteria"):
        call(db, "search_reminder")


# ---------------------------------------------------------------------------------------------
# date/time utilities (UTC)
# ---------------------------------------------------------------------------------------------


def test_known_conversions(db):
    assert call(db, "get_current_timestamp") == NOW
    assert call(db, "timestamp_to_datetime_info", timestamp=NOW) == {
        "year": 2024,
        "month": 6,
        "day": 7,
        "hour": 14,
        "minute": 30,
        "second": 0,
        "isoweekday": 5,
    }
    assert (
        call(
            db,
            "datetime_info_to_timestamp",
            year=2024,
            month=6,
            day=7,
            hour=14,
            minute=30,
            second=0,
        )
        == NOW
    )
    assert (
        call(
            db, "shift_timestamp", timestamp=NOW, weeks=1, days=-1, hours=2, minutes=-30, seconds=15
        )
        == NOW + 6 * 86400 + 5400 + 15
    )
    assert call(db, "timestamp_diff", timestamp_0=NOW, timestamp_1=NOW + 90061) == {
        "days": 1,
        "seconds": 3661,
    }
    assert call(db, "timestamp_diff", timestamp_0=NOW + 60, timestamp_1=NOW) == {
        "days": -1,
        "seconds": 86340,
    }
    assert call(db, "seconds_to_hours_minutes_seconds", seconds=45296) == {
        "hour": 12,
        "minute": 34,
        "second": 56,
    }
    sf_ny = call(
        db,
        "calculate_lat_lon_distance",
        latitude_0=37.7749,
        longitude_0=-122.4194,
        latitude_1=40.7128,
        longitude_1=-74.0060,
    )
    assert 4120 < sf_ny < 4140
    assert call(db, "end_conversation")


def test_time_errors(db):
    with pytest.raises(ToolError, match="day is out of range"):
        call(
            db, "datetime_info_to_timestamp", year=2023, month=2, day=29, hour=0, minute=0, second=0
        )
    with pytest.raises(ToolError, match="'month' must be an integer"):
        call(
            db,
            "datetime_info_to_timestamp",
            year=2023,
            month="May",
            day=1,
            hour=0,
            minute=0,
            second=0,
        )
    with pytest.raises(ToolError, match="'timestamp' is smaller"):
        call(db, "timestamp_to_datetime_info", timestamp=1000)
    with pytest.raises(ToolError, match="'days' must be an integer"):
        call(db, "shift_timestamp", timestamp=NOW, days=1.5)
    with pytest.raises(ToolError, match="non-negative"):
        call(db, "seconds_to_hours_minutes_seconds", seconds=-1)


TIMESTAMPS = st.integers(min_value=int(ts.TS_MIN), max_value=int(ts.TS_MAX) - 400 * 86400)


@settings(max_examples=150, deadline=None)
@given(TIMESTAMPS)
def test_round_trip_info_timestamp(stamp):
    world = D.empty_db()
    info = call(world, "timestamp_to_datetime_info", timestamp=float(stamp))
    expected = datetime.fromtimestamp(stamp, UTC)
    assert info["isoweekday"] == expected.isoweekday()
    del info["isoweekday"]
    assert call(world, "datetime_info_to_timestamp", **info) == float(stamp)


@settings(max_examples=150, deadline=None)
@given(TIMESTAMPS, st.integers(-50, 50), st.integers(-300, 300), st.integers(-(10**5), 10**5))
def test_shift_and_diff_agree(stamp, weeks, days, seconds):
    world = D.empty_db()
    shifted = call(
        world, "shift_timestamp", timestamp=float(stamp), weeks=weeks, days=days, seconds=seconds
    )
    delta = timedelta(weeks=weeks, days=days, seconds=seconds)
    assert shifted == stamp + delta.total_seconds()
    if ts.TS_MIN <= shifted <= ts.TS_MAX:
        diff = call(world, "timestamp_diff", timestamp_0=float(stamp), timestamp_1=shifted)
        assert diff == {"days": delta.days, "seconds": delta.seconds}


# ---------------------------------------------------------------------------------------------
# entity kinds and generators
# ---------------------------------------------------------------------------------------------


def conforms(value, t: T) -> bool:
    if t == ANY:
        return True
    if t == STR:
        return isinstance(value, str)
    if t == BOOL:
        return isinstance(value, bool)
    if t == INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if t == FLOAT:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    raise AssertionError(f"unexpected field type {t}")


def build_world(seed: int, n_contacts: int = 12, n_messages: int = 8, n_reminders: int = 6):
    rng = random.Random(seed)
    world = D.empty_db()
    kinds = D.entities
    kinds["settings"].add(world, kinds["settings"].generate(rng, world, {}))
    for kind, count in (
        ("contact", n_contacts),
        ("message", n_messages),
        ("reminder", n_reminders),
    ):
        for _ in range(count):
            kinds[kind].add(world, kinds[kind].generate(rng, world, {}))
    return world


def test_generators_are_deterministic():
    assert build_world(7) == build_world(7)
    assert build_world(7) != build_world(8)


@pytest.mark.parametrize("seed", range(25))
def test_generated_records_validate_and_are_consistent(seed):
    world = build_world(seed)
    for kind in D.entities.values():
        records = kind.records(world)
        assert records, kind.name
        for record in records:
            assert set(record) == set(kind.fields), kind.name
            for field, t in kind.fields.items():
                assert conforms(record[field], t), (kind.name, field, record[field])
            if not kind.singleton:
                assert world[kind.collection][record[kind.id_field]] is record
                assert uuid.UUID(record[kind.id_field]).version == 4
    s = world["settings"]
    if s["low_battery_mode"]:
        assert not (s["cellular"] or s["wifi"] or s["location_service"])
    contacts = world["contacts"]
    assert sum(c["is_self"] for c in contacts.values()) == 1
    phones = [c["phone_number"] for c in contacts.values()]
    assert len(set(phones)) == len(phones)
    names = [c["name"] for c in contacts.values()]
    assert len(set(names)) == len(names)
    for phone in phones:
        assert ts.normalize_phone_number(phone) == phone
    owner = next(c for c in contacts.values() if c["is_self"])
    for m in world["messages"].values():
        assert owner["person_id"] in (m["sender_person_id"], m["recipient_person_id"])
        for side in ("sender", "recipient"):
            pid, phone = m[f"{side}_person_id"], m[f"{side}_phone_number"]
            assert (pid is None and phone not in phones) or contacts[pid]["phone_number"] == phone
        assert m["creation_timestamp"] < s["now"]
    for r in world["reminders"].values():
        assert (
            r["creation_timestamp"] < s["now"] and r["creation_timestamp"] < r["reminder_timestamp"]
        )
        assert (r["latitude"] is None) == (r["longitude"] is None)


def test_overrides_are_respected_and_kept_consistent():
    rng = random.Random(3)
    world = D.empty_db()
    kinds = D.entities
    settings_ = kinds["settings"].generate(rng, world, {"low_battery_mode": True, "now": NOW})
    assert settings_["low_battery_mode"] and not settings_["cellular"] and settings_["now"] == NOW
    kinds["settings"].add(world, settings_)
    owner = kinds["contact"].generate(rng, world, {"name": "Homer Simpson"})
    assert owner["is_self"] and owner["name"] == "Homer Simpson" and owner["relationship"] is None
    kinds["contact"].add(world, owner)
    friend = kinds["contact"].generate(rng, world, {"relationship": "boss"})
    assert not friend["is_self"] and friend["relationship"] == "boss"
    kinds["contact"].add(world, friend)
    msg = kinds["message"].generate(
        rng, world, {"sender_person_id": friend["person_id"], "content": "See me"}
    )
    assert msg["sender_phone_number"] == friend["phone_number"] and msg["content"] == "See me"
    msg = kinds["message"].generate(rng, world, {"recipient_phone_number": friend["phone_number"]})
    assert msg["recipient_person_id"] == friend["person_id"]
    rem = kinds["reminder"].generate(
        rng, world, {"reminder_id": "r-1", "latitude": None, "longitude": None}
    )
    assert rem["reminder_id"] == "r-1" and rem["latitude"] is None
    kinds["reminder"].add(world, rem)
    assert world["reminders"]["r-1"] is rem


def test_message_generator_needs_an_owner():
    with pytest.raises(ValueError, match="spawn contacts first"):
        D.entities["message"].generate(random.Random(0), D.empty_db(), {})


def test_new_id_is_fresh_and_deterministic():
    kind = D.entities["contact"]
    world = build_world(1)
    ids = [kind.new_id(random.Random(5), world) for _ in range(2)]
    assert ids[0] == ids[1] and ids[0] not in world["contacts"]
    assert uuid.UUID(ids[0]).version == 4


def test_generated_world_is_usable_by_tools():
    """A generated world supports the tools end to end (owner found, messages searchable)."""
    world = build_world(11)
    world["settings"].update(cellular=True, low_battery_mode=False)
    friend = next(c for c in world["contacts"].values() if not c["is_self"])
    mid = call(
        world,
        "send_message_with_phone_number",
        phone_number=friend["phone_number"],
        content="hello there",
    )
    found = call(world, "search_messages", recipient_person_id=friend["person_id"])
    assert mid in [m["message_id"] for m in found]
    assert call(world, "get_current_timestamp") == world["settings"]["now"]


def test_reader_tools_do_not_mutate_a_bare_world():
    world: dict = {}
    assert call(world, "get_wifi_status") is True  # default settings
    assert call(world, "search_contacts", name="x") == []
    assert call(world, "get_current_timestamp") == NOW
    assert world == {}
    call(world, "set_wifi_status", on=False)
    assert world["settings"]["wifi"] is False


def test_generator_override_edge_cases():
    rng = random.Random(0)
    world = D.empty_db()
    kinds = D.entities
    early = NOW - 30 * 86400
    rem = kinds["reminder"].generate(rng, world, {"reminder_timestamp": early})
    assert rem["creation_timestamp"] < rem["reminder_timestamp"] == early
    kinds["contact"].add(world, kinds["contact"].generate(rng, world, {}))
    with pytest.raises(ValueError, match="already has an owner"):
        kinds["contact"].generate(rng, world, {"is_self": True})


# ---------------------------------------------------------------------------------------------
# integration with the runtime (a hand-written capability in the shape tracec generates)
# ---------------------------------------------------------------------------------------------


def _runtime_env():
    from tracec.runtime import lib as rt
    from tracec.runtime.env import Call, Capability, CapabilityEnv, Rule, TaskDef, TaskInstance

    def build_world(rng, db):
        s = rt.add(rng, D, db, "settings", {"cellular": False, "low_battery_mode": False})
        contacts = rt.spawn(rng, D, db, "contact", rt.randint(rng, 3, 5))
        rt.spawn(rng, D, db, "message", 4)
        rt.spawn(rng, D, db, "reminder", 3)
        return {"s": s, "contacts": contacts}

    def task_send(rng, db, v):
        c = rt.pick(rng, [c for c in v["contacts"] if not c["is_self"]])
        send = {"phone_number": c["phone_number"], "content": "Running late."}
        return TaskInstance(
            task="send",
            user=rt.text("Text ", c["name"], ": Running late."),
            gold=[
                Call("set_cellular_service_status", {"on": True}),
                Call("send_message_with_phone_number", send),
            ],
            communicate={}, forbid=[], replies=[], hint="", values={"send": send},
        )  # fmt: skip

    def task_remind(rng, db, v):
        days = rt.randint(rng, 1, 5)
        due = v["s"]["now"] + days * 86400
        return TaskInstance(
            task="remind",
            user=rt.text("Remind me to buy milk in ", days, " days at this time."),
            gold=[Call("add_reminder", {"content": "Buy milk", "reminder_timestamp": due})],
            communicate={}, forbid=[], replies=[], hint="", values={"days": days},
        )  # fmt: skip

    cap = Capability(
        name="phone_demo", description="demo", domain=D, max_turns=8, build_world=build_world,
        tasks=(TaskDef("send", 1.0, task_send), TaskDef("remind", 1.0, task_remind)),
        rules=(Rule(1.0, "state_matches", lambda o: o.state_matches),
               Rule(0.0, "otherwise", lambda o: True)),
        tools=(), hint="", spec_path="-", spec_sha256="0" * 64,
    )  # fmt: skip
    return type("PhoneDemoEnv", (CapabilityEnv,), {"capability": cap})()


def _act(env, name: str, **args) -> str:
    payload = json.dumps({"name": name, "arguments": args})
    return env.step(f"<tool_call>{payload}</tool_call>")


def test_runtime_episode_oracle_and_gating():
    from gymnasium.utils.env_checker import check_env

    env = _runtime_env()
    check_env(env, skip_render_check=True)
    for seed in range(4):
        env.reset(seed=seed, options={"task": "remind"})
        now = json.loads(_act(env, "get_current_timestamp")[0])
        due = json.loads(
            _act(env, "shift_timestamp", timestamp=now, days=env.instance.values["days"])[0]
        )
        _act(env, "add_reminder", content="Buy milk", reminder_timestamp=due)
        assert _act(env, "end_conversation")[1] == 1.0
    env.reset(seed=9, options={"task": "send"})
    send = env.instance.values["send"]
    assert _act(env, "send_message_with_phone_number", **send)[0] == (
        "Error: Cellular service is not enabled"
    )
    assert _act(env, "get_cellular_service_status")[0] == "false"
    _act(env, "set_cellular_service_status", on=True)
    _act(env, "send_message_with_phone_number", **send)
    assert _act(env, "end_conversation")[1] == 1.0
    env.reset(seed=9, options={"task": "send"})
    _act(env, "set_cellular_service_status", on=True)
    _act(env, "send_message_with_phone_number", **{**send, "content": "late!"})
    assert _act(env, "end_conversation")[1] == 0.0  # different content: state differs
