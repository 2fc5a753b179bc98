"""Simulated users: the scripted user's dialogue rules and the LLM user over a loopback server."""

from __future__ import annotations

from tests.support.openai_server import OpenAIServer
from tracec.llm.client import ChatClient
from tracec.targets.data import Task
from tracec.targets.users import LLMUser, ScriptedUser, first_person, flip_roles, make_user_factory


def task(reason="You want to cancel reservation ABC123.", known="You are Emma Kim.\nYour user id is emma_kim_1.",
         unknown="You do not remember your email."):
    return Task.model_validate({
        "id": "t", "user_scenario": {"instructions": {
            "domain": "airline", "reason_for_call": reason, "known_info": known,
            "unknown_info": unknown, "task_instructions": "Do not accept vouchers."}},
        "evaluation_criteria": {"actions": [], "reward_basis": ["DB"]},
    })


def say(user, text):
    return user.reply([{"role": "user", "content": "x"}, {"role": "assistant", "content": text}])


def test_first_person_rewrite():
    assert first_person("You are Emma Kim. Your user id is e_1.") == "I am Emma Kim. My user id is e_1."
    assert first_person("If the agent asks you, say no.") == "If the agent asks me, say no."


def test_scripted_user_opens_with_reason_and_known_info():
    first = ScriptedUser(task()).start()
    assert first.startswith("Hi!")
    assert "I want to cancel reservation ABC123." in first
    assert "My user id is emma_kim_1." in first
    assert "email" not in first  # unknown info is not volunteered


def test_scripted_user_answers_what_it_knows_and_only_that():
    u = ScriptedUser(task())
    assert say(u, "Could you give me your user id?") == "My user id is emma_kim_1."
    assert "Emma Kim" in say(u, "May I have your full name?")
    assert say(u, "What is your email address?") == "I'm sorry, I don't know that."


def test_scripted_user_confirms_and_stops_when_done_or_transferred():
    u = ScriptedUser(task())
    assert say(u, "I will cancel ABC123. Shall I proceed?") == "Yes, please go ahead."
    assert "###STOP###" in say(u, "Your reservation is cancelled.")
    assert say(ScriptedUser(task()), "I am transferring you to a human agent.") == "###TRANSFER###"


def test_scripted_user_gives_up_after_repeated_unknowns():
    u = ScriptedUser(task(), max_unknown=2)
    replies = [say(u, "What's your passport number?") for _ in range(3)]
    assert replies[:2] == ["I'm sorry, I don't know that."] * 2 and "###STOP###" in replies[2]


def test_flip_roles_hides_tools_and_swaps_speakers():
    msgs = [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "I want to cancel."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
        {"role": "tool", "tool_call_id": "1", "content": "{}"},
        {"role": "assistant", "content": "Done. Anything else?"},
    ]
    flipped = flip_roles(msgs)
    assert [m["role"] for m in flipped] == ["user", "assistant", "user"]
    assert flipped[1]["content"] == "I want to cancel." and flipped[2]["content"] == "Done. Anything else?"


def test_llm_user_talks_to_an_openai_compatible_endpoint():
    with OpenAIServer(["Hi, I need to cancel ABC123.", "Thanks, bye! ###STOP###"]) as srv:
        u = LLMUser(task(), ChatClient(srv.base_url, "user-model"))
        assert u.start() == "Hi, I need to cancel ABC123."
        reply = u.reply([{"role": "user", "content": "Hi, I need to cancel ABC123."},
                         {"role": "assistant", "content": "Done!"}])
        assert "###STOP###" in reply
        system = srv.requests[0]["messages"][0]["content"]
        assert "<scenario>" in system and "ABC123" in system and "###STOP###" in system
        assert "Do not accept vouchers." in system
        assert srv.requests[1]["messages"][-1] == {"role": "user", "content": "Done!"}


def test_make_user_factory_rejects_bad_specs():
    import pytest

    assert isinstance(make_user_factory("scripted")(task()), ScriptedUser)
    with pytest.raises(ValueError, match="llm:MODEL@"):
        make_user_factory("llm:nourl")
    with pytest.raises(ValueError, match="unknown user"):
        make_user_factory("robot")
