"""`communicated()` counts a claim, not a list of alternatives nor a negation (issue 27)."""

from __future__ import annotations

import pytest

from benchmarks.learning.generated import flight_status_compact as m
from tracec.checks.probes import build_probes, run_turns
from tracec.harness.resolve import env_class
from tracec.runtime.outcome import Outcome, claimed
from tracec.runtime.rivals import Rivals

STATUS = ("available", "landed", "cancelled", "delayed", "flying", "on time")
ENUMS = {"flight_date": {"status": STATUS}}
WORLD = {"flights": {"HAT001": {"flight_number": "HAT001", "origin": "JFK"},
                     "HAT002": {"flight_number": "HAT002", "origin": "LAX"}},
         "users": {"u1": {"name": "Ada Lovelace", "membership": "no"}}}


def _rivals() -> Rivals:
    return Rivals(WORLD, ENUMS)


def _said(text: str, *told: str) -> bool:
    o = Outcome(texts=(text,), v={"_communicate": list(told)}, rivals=_rivals())
    return o.communicated(*told)


def test_rivals_are_the_enum_and_the_same_field_elsewhere() -> None:
    r = _rivals()
    assert r("landed") == frozenset(s for s in STATUS if s != "landed")
    assert r("JFK") == {"lax"}  # another record's value of the same field
    assert r("Ada Lovelace") == frozenset()  # the only value of its field
    assert r(12.5) == frozenset() and r(True) == frozenset()


@pytest.mark.parametrize("text", [
    "The flight is available, landed, delayed, on time, flying or cancelled.",
    "It could be landed or delayed.",
    "Status: landed / cancelled",
    "The flight has not landed.",
    "It isn't landed yet, it is flying",
    "Flight HAT001 departs from JFK or LAX and has landed.",
])
def test_a_shotgun_or_a_negation_does_not_say_the_value(text: str) -> None:
    told = ("JFK", "landed") if "JFK" in text else ("landed",)
    assert not _said(text, *told)


@pytest.mark.parametrize("text", [
    "Flight HAT001 has landed.",
    "Good news: it landed at 10:02 and is not delayed.",  # a negated rival is not claimed
    "Your flight landed, it was never cancelled.",
])
def test_a_claim_still_counts(text: str) -> None:
    assert _said(text, "landed")


def test_two_lookups_each_value_said_for_its_own_record() -> None:
    assert _said("Flight HAT001 is landed and HAT002 is delayed.", "landed", "delayed")
    assert _said("HAT001: on time. HAT002: cancelled.", "on time", "cancelled")
    # but the pair plus the rest of the enum is a shotgun
    assert not _said("They are landed, delayed, cancelled or flying.", "landed", "delayed")


def test_value_inside_a_longer_rival_and_negated_on_time() -> None:
    assert not _said("The flight is not on time.", "on time")
    assert _said("The flight is on time.", "on time")
    r = Rivals({}, {"x": {"s": ("delayed", "delayed_departure")}})
    o = Outcome(texts=("it is delayed_departure",), v={}, rivals=r)
    assert not o.communicated("delayed")


def test_without_rivals_the_raw_rule_is_a_mention() -> None:
    o = Outcome(texts=("available, landed, delayed or not cancelled",), v={})
    assert o.communicated("landed", "cancelled")  # `communicate raw`: τ²'s substring rule
    assert claimed("landed", ["It has landed."])
    assert not claimed("cancelled", ["It is not cancelled."])
    assert claimed(120, ["It costs $120, not 80."])  # numbers: a mention


def test_the_issue_shotgun_earns_only_the_calls_rung_in_the_learning_env() -> None:
    env = env_class(m)()
    shotgun = "The flight is available, landed, delayed, on time, flying or cancelled."
    seen = {"status_one": 0, "status_two": 0}
    for seed in range(12):
        env.reset(seed=seed)
        inst = env.instance
        calls = build_probes(inst, env.toolbox.writes, env.toolbox.ends)[2].turns[:-1]  # silent gold
        flights = [c.args["flight_number"] for c in inst.gold]
        report = " and ".join(f"flight {f} is {v}" for f, v in zip(flights, inst.communicate.values()))
        assert run_turns(env, calls + (shotgun,)).reward == 0.3
        env.restart()
        assert run_turns(env, calls + (f"Here is what I found: {report}.",)).reward == 1.0
        env.restart()
        seen[inst.task] += 1
    assert all(seen.values())  # both the one- and the two-lookup task were played


def test_an_outcome_answers_again_from_what_it_holds_now() -> None:
    told = ["landed"]
    o = Outcome(texts=("HAT001 has landed.",), v={"_communicate": told}, rivals=_rivals())
    assert o.communicated(*told) and o.communicated_all()  # the second answer is remembered
    o.texts = ("HAT001 is delayed or landed.",)  # other texts: judged again
    assert not o.communicated(*told) and not o.communicated_all()
    o.rivals = None  # `communicate raw`: a mention is enough
    assert o.communicated(*told)
    assert not Outcome(texts=("it has landed",), v={"_communicate": told}).communicated("delayed")


def test_own_words_judged_twice_gives_the_same_text() -> None:
    from tracec.runtime.outcome import own_words

    results = ['{"status": "landed"}', "landed"]
    for text in ("landed", 'It is {"status": "landed"} so: landed', "<tool_call>x</tool_call> ok"):
        first = own_words(text, results)
        assert own_words(text, list(results)) == first == own_words(text, tuple(results))
    assert own_words("landed", results) == "" and own_words("landed", ()) == "landed"
