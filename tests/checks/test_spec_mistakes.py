"""Issue 30: the mistakes the fresh checks found in the shipped specs, kept as small specs.

Each unfixed form (a rename to a `last_name()` that may draw the name the passenger has, a
distractor that only shuffles the flights a sum reads, a quoted message the sender sent twice)
is reported at its line; the fixed form the shipped specs now use is not.
"""

from __future__ import annotations

from random import Random

import pytest

from tracec.checks import run_checks
from tracec.compiler.api import compile_text
from tracec.runtime.lib import first_name, last_name

PATH = "specs/demo.tracec"

AIRLINE = '''capability demo {{
  description "Rename a passenger and report the fare."
  domain airline
  max_turns 8

  seed {{
    users        = user[3..4]
    flights      = flight[10..12]
    reservations = reservation[6..8] {{ user_id = pick(users).user_id }}
  }}

  task passenger_total {{
    let r        = pick(x for x in reservations if len(x.flights) >= 2)
    let total    = sum(f.price for f in r.flights) * len(r.passengers)
    let lead     = r.passengers[0]
    let new_last = {new_last}
    let fixed    = [{{"first_name": lead.first_name, "last_name": new_last, "dob": lead.dob}}] + [p for p in r.passengers if p != lead]
    user "Hi, I'm {{r.user_id}}. On reservation {{r.reservation_id}} the first passenger's last name should be {{new_last}}, please fix it. Also, what was the total fare of the booking for all passengers?"
    gold {{
      get_reservation_details(reservation_id = r.reservation_id)
      update_reservation_passengers(reservation_id = r.reservation_id, passengers = fixed)
    }}
    communicate total
    distractor twin {{ {twin} }}
  }}

  reward {{
    1.0 when state_matches and communicated()
    0.0 otherwise
  }}
}}
'''
SHUFFLED = "clone r with flights = shuffle(r.flights)"
REPRICED = ('clone r with flights = [{"flight_number": f.flight_number, "origin": f.origin, '
            '"destination": f.destination, "date": f.date, "price": f.price + randint(20..90)} '
            "for f in r.flights]")

PHONE = '''capability demo {{
  description "Read a message's weekday."
  domain toolsandbox
  max_turns 8

  seed {{
    phone    = settings[1] {{ low_battery_mode = False; cellular = True; wifi = True; location_service = True }}
    people   = contact[5..8]
    chats    = message[10..16]
    weekdays = ["Thursday", "Friday", "Saturday", "Sunday", "Monday", "Tuesday", "Wednesday"]
  }}

  task message_weekday {{
    let p     = phone[0]
    let owner = first(x for x in people if x.is_self)
    let m     = pick(x for x in chats if x.sender_person_id != None and x.sender_person_id != owner.person_id{unique})
    let s     = m.sender
    let wd    = weekdays[int(m.creation_timestamp // 86400) % 7]
    user "On what day of the week did {{s.name}} send me \\"{{m.content}}\\"?"
    gold {{
      search_contacts(name = s.name)
      search_messages(sender_person_id = s.person_id)
      timestamp_to_datetime_info(timestamp = m.creation_timestamp)
    }}
    communicate wd
  }}

  reward {{
    1.0 when communicated()
    0.0 otherwise
  }}
}}
'''
UNIQUE = (" and count(y for y in chats if y.sender_person_id == x.sender_person_id "
          "and y.content == x.content) == 1")


def _findings(spec: str, seeds: int) -> list[dict]:
    result = compile_text(spec, PATH)
    assert result.ok, result.rendered
    return run_checks(result.module, seeds=seeds, check_env=False).findings


def _line(spec: str, text: str) -> int:
    return next(n for n, line in enumerate(spec.splitlines(), 1) if text in line)


def _codes(found: list[dict], code: str) -> list[dict]:
    return [f for f in found if f["code"] == code]


@pytest.fixture(scope="module")
def unfixed_airline() -> tuple[str, list[dict]]:
    spec = AIRLINE.format(new_last="last_name()", twin=SHUFFLED)
    return spec, _findings(spec, 64)


def test_a_rename_to_a_name_drawn_again_changes_nothing(unfixed_airline) -> None:
    spec, found = unfixed_airline
    hits = _codes(found, "C162")
    assert len(hits) == 1 and hits[0]["severity"] == "error", hits
    # at the draw that gives the old name again, not at the call that passes it (named in the
    # message)
    assert hits[0]["line"] == _line(spec, "let new_last")
    assert "task `passenger_total`: the gold call `update_reservation_passengers` leaves the " \
           "record it names as it was on" in hits[0]["message"]
    assert f"(`let new_last` builds what it passes at line " \
           f"{_line(spec, 'update_reservation_passengers(')})" in hits[0]["message"]


def test_a_shuffled_twin_gives_the_same_sum(unfixed_airline) -> None:
    spec, found = unfixed_airline
    hits = _codes(found, "C341")
    assert len(hits) == 1 and hits[0]["line"] == _line(spec, "distractor twin"), hits
    assert "reading the wrong record gives the right answer" in hits[0]["message"]


def test_the_fixed_rename_and_twin_are_clean() -> None:
    spec = AIRLINE.format(new_last="last_name(lead.last_name)", twin=REPRICED)
    found = _findings(spec, 64)
    assert not _codes(found, "C162") and not _codes(found, "C341"), \
        [(f["code"], f["message"]) for f in found]


def test_a_quoted_message_sent_twice_has_two_answers() -> None:
    spec = PHONE.format(unique="")
    hits = _codes(_findings(spec, 64), "C163")
    assert len(hits) == 1 and hits[0]["severity"] == "error", hits
    assert hits[0]["line"] == _line(spec, "let m     = pick(")
    assert "task `message_weekday`: the user's words fit" in hits[0]["message"]
    assert "the question has two answers" in hits[0]["message"]


def test_a_quoted_message_the_sender_sent_once_is_clean() -> None:
    found = _findings(PHONE.format(unique=UNIQUE), 64)
    assert not _codes(found, "C163"), [(f["code"], f["message"]) for f in found]


def test_a_name_drawn_other_than_the_one_given() -> None:
    rng = Random(7)
    assert all(last_name(rng, "Smith") != "Smith" for _ in range(500))
    assert all(first_name(rng, "Mia") != "Mia" for _ in range(500))
    assert {last_name(Random(s)) for s in range(200)} >= {"Smith"}  # the plain draw keeps it
    bad = compile_text(AIRLINE.format(new_last="last_name(3)", twin=REPRICED), PATH)
    assert not bad.ok and "`last_name` needs strings" in bad.rendered
