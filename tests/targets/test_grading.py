"""τ²-compatible grading on trajectories built from the fixture subset.

The expected rewards are τ²'s rules applied by hand: DB = final databases equal, COMMUNICATE =
substring check, product over the task's reward basis, 0 unless the agent or user ended it.
(benchmarks/tau2_grading_agreement.py checks the same kinds of trajectory against τ²'s own
evaluator on the full data.)
"""

from __future__ import annotations

import json

import pytest

from tracec.core.messages import openai_tool_call
from tracec.targets.data import Action
from tracec.targets.grading import action_matches, communicated, grade
from tracec.targets.world import CowTable, db_delta


def convo(world, calls, say=None, stop=True):
    """OpenAI-format conversation running ``calls`` with the world's tools."""
    db = world.fresh_db()
    msgs = [{"role": "system", "content": "policy"}, {"role": "user", "content": "hi"}]
    for i, (name, args) in enumerate(calls):
        text, error = world.call(db, name, args)
        msgs.append({"role": "assistant", "content": None,
                     "tool_calls": [openai_tool_call(f"c{i}", name, args)]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "name": name, "content": text})
    if say is not None:
        msgs.append({"role": "assistant", "content": say})
    if stop:
        msgs.append({"role": "user", "content": "bye ###STOP###"})
    return msgs, db


def gold(world, tid):
    return [(a.name, a.arguments) for a in world.tasks[tid].gold_actions]


def test_gold_replays_score_one_on_every_fixture_task(airline, retail):
    for world in (airline, retail):
        for tid, task in world.tasks.items():
            info = (task.evaluation_criteria.communicate_info or [])
            msgs, _ = convo(world, gold(world, tid), say="Summary: " + ", ".join(info))
            g = grade(world, task, msgs, "user_stop")
            assert g.reward == 1.0, (world.domain_name, tid, g)
            assert g.db_match and g.db_hash == g.gold_db_hash


def test_dropping_a_write_fails_the_db_check(airline):
    calls = gold(airline, "14")  # cancel_reservation, book_reservation
    msgs, _ = convo(airline, calls[:-1], say="327 1000 1786")
    g = grade(airline, airline.tasks["14"], msgs, "agent_stop")
    assert g.db_match is False and g.reward == 0.0
    assert g.reward_breakdown == {"DB": 0.0, "COMMUNICATE": 1.0}


def test_changing_a_write_argument_fails_the_db_check(retail):
    calls = gold(retail, "33")
    name, args = calls[-1]
    assert name == "modify_user_address"
    changed = calls[:-1] + [(name, {**args, "zip": "99999"})]
    msgs, _ = convo(retail, changed)
    g = grade(retail, retail.tasks["33"], msgs, "user_stop")
    assert g.reward == 0.0 and g.reward_breakdown == {"DB": 0.0}


def test_an_argument_that_does_not_reach_the_db_does_not_matter(airline):
    # τ² compares databases, not calls: a different cancel reason... is stored, so it matters;
    # but an extra read call or reordering independent reads does not.
    calls = gold(airline, "7")
    reads_first = sorted(calls, key=lambda c: 0 if c[0].startswith("get_") else 1)
    extra = [("get_user_details", {"user_id": "nobody"})] + reads_first
    msgs, _ = convo(airline, extra, say="The refund is 1628.")
    assert grade(airline, airline.tasks["7"], msgs, "user_stop").reward == 1.0


def test_a_forbidden_write_fails_the_db_check(airline):
    # task 1 is a refusal: no writes allowed; cancelling the user's reservation changes the DB
    task = airline.tasks["1"]
    user = task.gold_actions[0].arguments["user_id"]
    res = airline.pristine["users"][user]["reservations"][0]
    msgs, _ = convo(airline, gold(airline, "1") + [("cancel_reservation", {"reservation_id": res})])
    g = grade(airline, task, msgs, "user_stop")
    assert g.reward == 0.0 and not g.db_match


def test_a_failing_write_changes_nothing(airline):
    msgs, _ = convo(airline, gold(airline, "1") + [("cancel_reservation", {"reservation_id": "NOPE00"})])
    assert json.loads(json.dumps(msgs))[-2]["content"].startswith("Error:")
    assert grade(airline, airline.tasks["1"], msgs, "user_stop").reward == 1.0


def test_communicate_info_is_checked_case_insensitively_without_commas(airline):
    calls = gold(airline, "14")
    ok, _ = convo(airline, calls, say="Refunds: $327, then 1,000 and finally 1,786 dollars.")
    assert grade(airline, airline.tasks["14"], ok, "user_stop").reward == 1.0
    missing, _ = convo(airline, calls, say="Refunds: 327 and 1000.")
    g = grade(airline, airline.tasks["14"], missing, "user_stop")
    assert g.reward_breakdown == {"DB": 1.0, "COMMUNICATE": 0.0} and g.reward == 0.0
    assert [c.met for c in g.communicate_checks] == [True, True, False]
    assert communicated([{"role": "assistant", "content": "TOTAL 1,628"}], "1628")
    assert not communicated([{"role": "user", "content": "1628"}], "1628")


def test_communicate_outside_the_reward_basis_does_not_count(retail):
    task = retail.tasks["47"]  # communicate_info given, basis is DB + NL_ASSERTION
    msgs, _ = convo(retail, gold(retail, "47"), say="done")
    g = grade(retail, task, msgs, "user_stop")
    assert g.reward == 1.0 and "COMMUNICATE" not in g.reward_breakdown
    assert g.nl_judged is False and "not judged" in g.note


@pytest.mark.parametrize("reason", ["max_steps", "too_many_errors", "agent_error"])
def test_an_episode_not_ended_by_agent_or_user_scores_zero(airline, reason):
    msgs, _ = convo(airline, gold(airline, "5"), stop=False)
    g = grade(airline, airline.tasks["5"], msgs, reason)
    assert g.reward == 0.0 and reason in g.note


def test_final_db_shortcut_agrees_with_replay(retail):
    calls = gold(retail, "20")
    msgs, db = convo(retail, calls)
    a = grade(retail, retail.tasks["20"], msgs, "user_stop")
    b = grade(retail, retail.tasks["20"], msgs, "user_stop", final_db=db)
    assert a.reward == b.reward == 1.0 and a.db_hash == b.db_hash


def test_tau2_message_format_is_read_too(airline):
    calls = gold(airline, "14")
    msgs, _ = convo(airline, calls, say="327 1000 1786")
    from tracec.harness.results import from_tau2_messages, to_tau2_messages

    tau2 = to_tau2_messages(msgs)
    assert tau2[1]["tool_calls"][0]["arguments"] == calls[0][1]
    assert grade(airline, airline.tasks["14"], tau2, "user_stop").reward == 1.0
    assert grade(airline, airline.tasks["14"], from_tau2_messages(tau2), "user_stop").reward == 1.0


def test_action_matching_follows_tau2():
    a = Action(name="f", arguments={"x": 1, "y": 2})
    assert action_matches(a, "f", {"x": 1, "y": 2})
    assert action_matches(a, "f", {"x": 1})  # compare_args None: the call's own keys
    assert not action_matches(a, "f", {"x": 2})
    assert not action_matches(a, "g", {"x": 1, "y": 2})
    b = Action(name="f", arguments={"x": 1, "note": "a"}, compare_args=["x"])
    assert action_matches(b, "f", {"x": 1, "note": "b"})


def test_copy_on_access_never_touches_the_pristine_db(airline, retail):
    for world in (airline, retail):  # every gold call: reads run on views, writes on copies
        before = json.dumps(world.pristine, sort_keys=True)
        for tid in world.tasks:
            db = world.fresh_db()
            for name, args in gold(world, tid):
                world.call(db, name, args)
        assert json.dumps(world.pristine, sort_keys=True) == before
    db = airline.fresh_db()
    for name, args in gold(airline, "23"):
        airline.call(db, name, args)
    delta = db_delta(airline.pristine, db)
    assert set(delta) >= {"reservations", "users"}
    plain = json.loads(json.dumps(db))  # a CowTable serialises like a dict
    assert db_delta(airline.pristine, plain) == delta


def test_cow_table_behaves_like_a_dict():
    base = {"a": {"v": 1}, "b": {"v": 2}}
    t = CowTable(base)
    t["a"]["v"] = 10
    t["c"] = {"v": 3}
    del t["b"]
    assert base == {"a": {"v": 1}, "b": {"v": 2}}
    assert dict(t.items()) == {"a": {"v": 10}, "c": {"v": 3}}
    assert t.get("b") is None and "b" not in t and len(t) == 2
    assert t.pop("c") == {"v": 3} and t.setdefault("d", {"v": 4}) == {"v": 4}
    assert db_delta({"x": base}, {"x": t}) == {"x": {"a": {"v": 10}, "b": "__deleted__", "d": {"v": 4}}}


def test_nl_assertions_are_judged_when_a_judge_is_given(retail):
    from tests.support.openai_server import OpenAIServer
    from tracec.llm.client import ChatClient

    task = retail.tasks["47"]
    assert task.evaluation_criteria.nl_assertions
    n = len(task.evaluation_criteria.nl_assertions)
    msgs, _ = convo(retail, gold(retail, "47"), say="Exchanged.")
    verdicts = [json.dumps({"results": [{"expectedOutcome": "x", "reasoning": "ok", "metExpectation": True}] * n}),
                "Sure! " + json.dumps({"results": [{"reasoning": "no", "metExpectation": False}] * n}),
                "I cannot grade this."]
    with OpenAIServer(verdicts) as srv:
        judge = ChatClient(srv.base_url, "judge")
        yes = grade(retail, task, msgs, "user_stop", judge=judge)
        no = grade(retail, task, msgs, "user_stop", judge=judge)
        junk = grade(retail, task, msgs, "user_stop", judge=judge)
        prompt = srv.requests[0]["messages"][1]["content"]
    assert yes.nl_judged and yes.reward == 1.0 and yes.reward_breakdown["NL_ASSERTION"] == 1.0
    assert no.reward == 0.0 and no.reward_breakdown == {"DB": 1.0, "NL_ASSERTION": 0.0}
    assert junk.reward == 0.0  # an unreadable verdict counts as not met
    assert task.evaluation_criteria.nl_assertions[0] in prompt and "Exchanged." in prompt
