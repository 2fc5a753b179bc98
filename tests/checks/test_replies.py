"""What scripted replies say: C199 (a reply that asks for the forbidden call, or names the
fix the task teaches) and C164's change of mind ("Actually, keep that first reservation")."""

from __future__ import annotations

import pytest

from tests.checks.mutation_set import Mutation
from tests.checks.mutation_set_fresh import findings_of, found_at_line
from tests.checks.mutation_set_seventh import SEVENTH
from tracec.checks.declined_replies import declines
from tracec.checks.reply_words import call_words, names_call
from tracec.runtime.outcome import Call

PER = "specs/permission_error_recovery.tracec"
DR = "specs/datetime_reasoning.tracec"


@pytest.mark.parametrize("name,what", [("reply_asks_for_wifi", "forbidden call"),
                                       ("reply_spells_out_the_fix", "the fix the task")])
def test_the_seventh_sets_replies_are_reported_at_the_reply(name: str, what: str) -> None:
    f = found_at_line(next(m for m in SEVENTH if m.name == name), "C199")
    assert what in f["message"], f["message"]


def test_a_reply_asking_for_the_forbidden_call_in_another_task() -> None:
    m = Mutation("reply_asks_for_cellular", PER, 'reply "Yes, change what the search needs, nothing else."',
                 'reply "Yes, and switch cellular on as well."', "C199")
    text = m.text()
    assert "forbid set_cellular_service_status(on = True)" in text
    found_at_line(m, "C199")


def test_shipped_replies_ask_for_nothing_they_should_not() -> None:
    for spec in (PER, DR):
        assert not findings_of(spec, "C199", 4), spec


def test_the_seventh_sets_change_of_mind_is_declining() -> None:
    found_at_line(next(m for m in SEVENTH if m.name == "reply_withdraws_the_cancel"), "C164")
    assert declines("Actually, keep that first reservation; just do the bags.")
    assert not declines("Yes, keep my account address as it is and ship it there.")


def test_names_call() -> None:
    wifi = Call("set_wifi_status", {"on": True})
    assert call_words("send_message_with_phone_number") == {"send", "message"}
    assert names_call("Sure, and turn the wifi on too.", wifi)
    assert not names_call("Leave the wifi on as it is.", wifi)
    assert not names_call("Turn the wifi off.", wifi)
