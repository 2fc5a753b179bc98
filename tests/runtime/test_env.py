"""CapabilityEnv episode semantics on the hand-written tiny_orders capability."""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from tests.runtime import tiny_capability as tc
from tracec.runtime import lib as rt
from tracec.runtime.env import (
    Call,
    Capability,
    CapabilityEnv,
    Outcome,
    Rule,
    SpecRuntimeError,
    TaskDef,
    TaskInstance,
    register_capability_envs,
)
from tracec.runtime.toolcall import hermes
from tracec.runtime.user import DEFAULT_YES, STOP


def make(task: str, seed: int = 3, **opts) -> tc.TinyOrdersEnv:
    env = tc.TinyOrdersEnv()
    env.reset(seed=seed, options={"task": task, **opts})
    return env


def gold_turn(call: Call) -> str:
    return hermes(call.name, call.arguments)


def test_check_env_passes():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(tc.TinyOrdersEnv(), skip_render_check=True)
    assert not [str(w.message) for w in caught]


def test_reset_info_and_messages():
    env = tc.TinyOrdersEnv()
    obs, info = env.reset(seed=5, options={"task": "cancel", "hint": True})
    assert set(info) == {"messages", "tools", "hint", "task"}
    assert info["task"] == "cancel" and obs.startswith("Please cancel order")
    assert [m["role"] for m in info["messages"]] == ["system", "user"]
    assert "Cancel only pending orders." in info["messages"][0]["content"]
    assert tc.CAPABILITY.hint in info["messages"][0]["content"]  # task has no hint -> capability hint
    assert {t["function"]["name"] for t in info["tools"]} >= {"cancel_order", "note"}
    _, plain = env.reset(seed=5, options={"task": "cancel"})
    assert tc.CAPABILITY.hint not in plain["messages"][0]["content"]


def test_same_seed_same_episode_and_unseeded_resets_reproducible():
    def trace():
        env = tc.TinyOrdersEnv()
        out = [env.reset(seed=11)[0]]
        out += [env.reset()[0] for _ in range(4)]
        return out, env.gold_hash
    assert trace() == trace()
    assert len(set(trace()[0])) > 1


def test_oracle_gets_top_reward_and_messages_follow_openai_format():
    env = make("order_total")
    inst = env.instance
    obs, r, term, trunc, info = env.step(gold_turn(inst.gold[0]))
    assert not term and r == 0.0 and '"items"' in obs
    assistant, tool = info["messages"][-2:]
    call_id = assistant["tool_calls"][0]["id"]
    assert assistant["tool_calls"][0]["function"]["name"] == "get_order_details"
    assert tool == {"role": "tool", "tool_call_id": call_id, "name": "get_order_details", "content": obs}
    total = inst.communicate["total"]
    obs, r, term, trunc, info = env.step(f"The total is ${total:,.2f}.")
    assert term and not trunc and r == 1.0 and obs == STOP
    bd = info["reward_breakdown"]
    assert bd["rule"] == 0 and bd["communicated"] and bd["state_matches"] and bd["ended_by"] == "user"


def test_fractional_rule_and_write_progress():
    env = make("cancel")
    inst = env.instance
    env.step(gold_turn(inst.gold[0]))  # the read only: progress counts writes
    _, r, term, _, info = env.step("Done.")
    assert term and r == 0.0 and info["reward_breakdown"]["progress"] == 0.0
    env = make("cancel")
    env.step(gold_turn(env.instance.gold[1]))  # the write without the read
    _, r, _, _, info = env.step("Cancelled.")
    assert r == 1.0  # state matches, nothing to communicate
    env = make("order_total")
    env.step(gold_turn(env.instance.gold[0]))
    _, r, _, _, info = env.step("I looked it up.")
    assert r == 0.5 and info["reward_breakdown"]["rule"] == 1


def test_forbidden_call_sinks_the_reward():
    env = make("cancel")
    for call in env.instance.gold:
        env.step(gold_turn(call))
    env.step(hermes("refund", {"order_id": env.instance.gold[0].args["order_id"]}))
    _, r, _, _, info = env.step("Done.")
    assert info["reward_breakdown"]["forbidden_called"] and r == 0.0


def test_truncation_at_max_turns_gives_zero():
    env = make("order_total")
    call = gold_turn(env.instance.gold[0])
    for i in range(tc.CAPABILITY.max_turns):
        _, r, term, trunc, info = env.step(call)
    assert trunc and not term and r == 0.0
    assert info["reward_breakdown"]["ended_by"] == "max_turns"
    with pytest.raises(RuntimeError, match="reset"):
        env.step("hello")


@pytest.mark.parametrize(
    ("action", "error"),
    [
        (hermes("nope", {}), "Error: unknown tool `nope`"),
        (hermes("get_order_details", {"order_id": 5}), "Error: argument 'order_id' must be string, got integer"),
        (hermes("get_order_details", {}), "Error: missing required argument 'order_id'"),
        (hermes("get_order_details", {"order_id": "x", "z": 1}), "Error: unknown argument 'z'"),
        (hermes("cancel_order", {"order_id": "x", "reason": "bored"}), "must be one of"),
        (hermes("get_order_details", {"order_id": "missing"}), "Error: Order not found"),
        (hermes("broken_tool", {}), "Error: internal error in tool `broken_tool` raised ZeroDivisionError"),
        (hermes("note", {"text": " "}), "Error: empty note"),
        ('<tool_call>{"name": "x", </tool_call>', "Error: tool call 1: invalid JSON"),
    ],
)
def test_error_observations_do_not_end_the_episode(action, error):
    env = make("order_total")
    obs, r, term, trunc, _ = env.step(action)
    assert obs.startswith(error) or error in obs
    assert not term and not trunc and r == 0.0
    assert env.calls == []
    assert bool(env.tool_bugs) == ("broken_tool" in action)


def test_scripted_user_replies_then_yes_then_stops():
    env = make("cancel")
    assert env.step("Can you confirm the order id?")[0] == "Yes, I confirm."
    assert env.step("Shall I proceed?")[0] == DEFAULT_YES
    obs, _, term, _, _ = env.step("Shall I really?")
    assert obs == STOP and term


def test_agent_stop_and_ending_tool_terminate():
    env = make("cancel")
    _, _, term, _, info = env.step("Bye ###STOP###")
    assert term and info["reward_breakdown"]["ended_by"] == "agent"
    env = make("cancel")
    _, _, term, _, info = env.step(hermes("transfer_to_human_agents", {"summary": "s"}))
    assert term and info["reward_breakdown"]["ended_by"] == "tool"


def test_outcome_communicated_rendering():
    o = Outcome(texts=["Your total is $1,234.00 and the refund: 12.5.", "Status: Cancelled"])
    assert o.communicated(1234) and o.communicated(1234.0) and o.communicated(12.50)
    assert o.communicated("cancelled") and o.communicated([1234, "CANCELLED"])
    assert not o.communicated(123) and not o.communicated(12.55) and not o.communicated(34)
    assert not Outcome(texts=["12.51"]).communicated(12.5)


def test_outcome_called_matches_subset_and_numbers():
    o = Outcome(calls=[Call("refund", {"order_id": "#1", "amount": 10})])
    assert o.called("refund") and o.called("refund", {"amount": 10.0})
    assert not o.called("refund", {"order_id": "#2"}) and not o.called("cancel_order")


def test_outcome_from_calls_progress_is_a_multiset():
    gold = [Call("get_order_details", {"order_id": "a"}), Call("note", {"text": "x"}), Call("note", {"text": "x"})]
    o = Outcome.from_calls(state_matches=False, gold=gold, calls=[Call("note", {"text": "x"})],
                           forbid=[Call("refund")], writes=frozenset({"note"}), texts=[], v={})
    assert o.progress == 0.5 and not o.forbidden_called
    o2 = Outcome.from_calls(state_matches=False, gold=gold, calls=[Call("refund", {"order_id": "q"})],
                            forbid=[Call("refund")], writes=frozenset({"note"}), texts=[], v={})
    assert o2.forbidden_called and o2.progress == 0.0


def _cap(task_fn, name="broken") -> type[CapabilityEnv]:
    cap = Capability(name=name, description="", domain=tc.DOMAIN, max_turns=3, build_world=tc.build_world,
                     tasks=(TaskDef("t", 1.0, task_fn),), rules=(Rule(0.0, "otherwise", lambda o: True),))
    return type("BrokenEnv", (CapabilityEnv,), {"capability": cap})


def test_spec_bug_in_task_raises_spec_runtime_error_naming_task_and_seed():
    def task(rng, db, v):
        return v["no_such_var"]
    with pytest.raises(SpecRuntimeError, match=r"task `t` failed at seed 4: KeyError"):
        _cap(task)().reset(seed=4)


def test_unsatisfiable_task_redraws_then_fails():
    calls = []

    def task(rng, db, v):
        calls.append(1)
        return TaskInstance("t", rt.text("x", rt.pick(rng, [])))
    with pytest.raises(SpecRuntimeError, match="unsatisfiable"):
        _cap(task)().reset(seed=0)
    assert len(calls) == 50


def test_failing_gold_action_is_a_spec_error():
    def task(rng, db, v):
        return TaskInstance("t", "hi", gold=[Call("get_order_details", {"order_id": "nope"})])
    with pytest.raises(SpecRuntimeError, match="gold action get_order_details.*Order not found"):
        _cap(task)().reset(seed=1)


def test_register_capability_envs_is_idempotent_and_makes_envs():
    entry = {"tiny_orders": "tests.runtime.tiny_capability:TinyOrdersEnv"}
    assert register_capability_envs(entry) == ["tracec/tiny_orders-v0"]
    assert register_capability_envs(entry) == ["tracec/tiny_orders-v0"]
    env = gym.make("tracec/tiny_orders-v0")
    obs, info = env.reset(seed=0)
    assert isinstance(obs, str) and info["task"] in {"order_total", "cancel"}
