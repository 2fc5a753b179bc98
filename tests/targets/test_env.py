"""The τ² target env: contract, tool calls, user turns, termination and reward."""

from __future__ import annotations

import json

import pytest

from tracec.harness.agents import OracleAgent
from tracec.runtime.toolcall import hermes
from tracec.targets.tau2 import Tau2Env, make_tau2_env


@pytest.fixture()
def env(airline):
    return Tau2Env(world=airline, max_turns=6, max_errors=3)


def test_reset_returns_first_user_message_and_contract_info(env, airline):
    obs, info = env.reset(seed=1, options={"task_id": "14"})
    assert set(info) >= {"messages", "tools", "hint", "task"}
    assert [m["role"] for m in info["messages"]] == ["system", "user"]
    assert info["messages"][1]["content"] == obs
    assert airline.policy.strip()[:40] in info["messages"][0]["content"]
    assert info["task"]["id"] == "14"
    names = {t["function"]["name"] for t in info["tools"]}
    assert {"book_reservation", "cancel_reservation", "get_user_details"} <= names
    # the scripted user opens with the reason for calling and what it knows, in first person
    assert "I" in obs and "user id" in obs.lower()


def test_reset_is_deterministic_in_the_seed(env):
    a = env.reset(seed=3)[1]["task"]["id"]
    b = env.reset(seed=3)[1]["task"]["id"]
    assert a == b


def test_tool_calls_run_on_the_episode_db_and_are_recorded(env, airline):
    _, info = env.reset(options={"task_id": "5"})
    uid = airline.tasks["5"].gold_actions[0].arguments["user_id"]
    obs, reward, term, trunc, info = env.step("Let me look.\n" + hermes("get_user_details", {"user_id": uid}))
    assert json.loads(obs)["user_id"] == uid
    assert (reward, term, trunc) == (0.0, False, False)
    call_msg, tool_msg = info["messages"][-2:]
    assert call_msg["role"] == "assistant" and call_msg["content"] == "Let me look."
    assert call_msg["tool_calls"][0]["function"]["name"] == "get_user_details"
    assert tool_msg["role"] == "tool" and tool_msg["tool_call_id"] == call_msg["tool_calls"][0]["id"]


def test_bad_calls_get_error_observations_and_count_as_errors(env):
    env.reset(options={"task_id": "5"})
    obs, *_ = env.step(hermes("no_such_tool", {}))
    assert obs.startswith("Error:") and "not found" in obs
    obs, *_ = env.step('<tool_call>{"name": "get_user_details", "arguments": {oops}}</tool_call>')
    assert obs.startswith("Error:") and "JSON" in obs
    obs, reward, term, trunc, info = env.step(hermes("get_user_details", {"user_id": "nobody"}))
    assert obs.startswith("Error:")
    assert trunc and not term and reward == 0.0
    assert info["termination_reason"] == "too_many_errors"
    with pytest.raises(RuntimeError):
        env.step("hello")


def test_text_goes_to_the_user_and_max_turns_truncates_with_zero(airline):
    env = Tau2Env(world=airline, max_turns=2)
    env.reset(options={"task_id": "14"})
    obs, reward, term, trunc, info = env.step("Could you tell me your email address?")
    assert info["messages"][-1]["role"] == "user" and "know" in obs.lower()
    obs, reward, term, trunc, info = env.step("And what is your favourite colour?")
    assert trunc and reward == 0.0 and info["reward_breakdown"]["ended_by"] == "max_steps"


def test_agent_stop_ends_and_grades(env):
    env.reset(options={"task_id": "1"})  # a refusal task: doing nothing is right
    obs, reward, term, trunc, info = env.step("I cannot do that. ###STOP###")
    assert term and not trunc and reward == 1.0
    bd = info["reward_breakdown"]
    assert bd["ended_by"] == "agent_stop" and bd["db_match"] is True
    assert info["messages"][-1]["content"] == "I cannot do that."


def test_user_stop_when_the_agent_is_done(env):
    env.reset(options={"task_id": "1"})
    obs, reward, term, trunc, info = env.step("Your reservation cannot be changed, sorry.")
    assert term and "###STOP###" in obs and info["termination_reason"] == "user_stop"


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_oracle_scores_one_on_every_fixture_task(domain, data_dir):
    env = make_tau2_env(f"tau2:{domain}", data_dir=str(data_dir), split="base")
    agent = OracleAgent()
    for tid in env.task_ids:
        _, info = env.reset(options={"task_id": tid})
        done = False
        while not done:
            action = agent.act([(info["messages"], info["tools"])], tasks=[info["task"]])[0]
            _, reward, term, trunc, info = env.step(action)
            done = term or trunc
        assert reward == 1.0, (domain, tid, info["reward_breakdown"])


def test_split_selects_tasks(data_dir):
    env = Tau2Env(domain="retail", data_dir=str(data_dir), split="test")
    split = json.loads((data_dir / "retail" / "split_tasks.json").read_text())
    assert env.task_ids == split["test"]


def test_passes_gymnasium_env_checker(airline):
    from gymnasium.utils.env_checker import check_env

    check_env(Tau2Env(world=airline, max_turns=3), skip_render_check=True)


def test_an_info_changed_by_the_caller_changes_neither_the_episode_nor_later_infos(env, airline):
    _, first = env.reset(options={"task_id": "5"})
    uid = airline.tasks["5"].gold_actions[0].arguments["user_id"]
    first["messages"][1]["content"] = "tampered"
    first["tools"].clear()
    first["task"]["id"] = "tampered"
    _, _, _, _, info = env.step(hermes("get_user_details", {"user_id": uid}))
    assert info["messages"][1]["content"] != "tampered"
    assert env.messages[1]["content"] != "tampered"
    assert info["tools"] and info["task"]["id"] == "5"
    info["messages"].append({"role": "user", "content": "extra"})
    _, _, _, _, after = env.step(hermes("get_user_details", {"user_id": uid}))
    assert [m["content"] for m in after["messages"]].count("extra") == 0


def test_reads_see_the_episodes_own_writes_and_the_pristine_db_stays_untouched(airline):
    from tracec.targets.world import read_view

    db = airline.fresh_db()
    rid, record = next(iter(airline.pristine["reservations"].items()))
    assert read_view(db)["reservations"] is airline.pristine["reservations"]  # nothing copied
    before = record["status"] if "status" in record else None
    db["reservations"][rid]["status"] = "cancelled"  # a write tool's change
    view = read_view(db)["reservations"]
    assert view[rid]["status"] == "cancelled"
    assert read_view(db)["reservations"] is view  # reused until the table changes again
    assert airline.pristine["reservations"][rid].get("status") == before
    db["reservations"]["NEW1"] = {"reservation_id": "NEW1"}
    assert "NEW1" in read_view(db)["reservations"] and "NEW1" not in airline.pristine["reservations"]
