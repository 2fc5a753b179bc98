"""Category 1: nothing a model sends raises out of ``env.step()``; rule failures surface at reset."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.robustness.hostile import SPEC_CASES, env_class, step_inputs
from tracec.compiler.api import compile_text
from tracec.runtime.env import MAX_CALLS_PER_TURN, SpecRuntimeError
from tracec.runtime.toolcall import ToolCallParseError, hermes, parse_turn

ENVS = ["structured_data_reasoning", "tool_calling_precision", "datetime_reasoning"]
INPUTS = step_inputs()


@pytest.fixture(scope="module")
def envs():
    import importlib

    import generated_envs

    out = {}
    for name in ENVS:
        mod, cls = generated_envs.ENVS[name].split(":")
        out[name] = getattr(importlib.import_module(mod), cls)()
    return out


def _step(env, action: str):
    env.reset(seed=3)
    obs, reward, term, trunc, info = env.step(action)
    assert isinstance(obs, str) and isinstance(reward, float) and math.isfinite(reward)
    json.dumps(info["messages"], default=str)  # the transcript stays serialisable
    return obs


def test_every_hostile_turn_is_an_observation(envs):
    errors = 0
    for env in envs.values():
        for action in INPUTS:
            obs = _step(env, action)
            errors += obs.startswith("Error:")
    assert errors > len(INPUTS)  # most are malformed: the agent is told why


@pytest.mark.parametrize("action, says", [
    ('<tool_call>{"name": "x", "arguments": ' + "[" * 2000 + "]" * 2000 + "}</tool_call>",
     "nested deeper than 64"),
    ('{"name": "get_user_details", "arguments": {"user_id": ' + "9" * 5000 + "}}", "digits"),
    ('<tool_call>{"name": "get_user_details", "arguments": {"user_id": NaN}}</tool_call>',
     "NaN is not a valid JSON number"),
    ('<tool_call>{"name": "calculate", "arguments": {"expression": Infinity}}</tool_call>',
     "Infinity is not a valid JSON number"),
    ('<tool_call>{"name": "calculate", "arguments": {"expression": 1e400}}</tool_call>',
     "out of range"),
    ("".join(hermes("get_user_details", {"user_id": "u"}) for _ in range(MAX_CALLS_PER_TURN + 1)),
     f"at most {MAX_CALLS_PER_TURN}"),
    ("x" * ((1 << 20) + 1), "characters (at most"),
])
def test_hostile_turns_are_explained(envs, action, says):
    obs = _step(envs["structured_data_reasoning"], action)
    assert obs.startswith("Error:") and says in obs


def test_several_calls_in_one_turn_run_in_order(envs):
    env = envs["structured_data_reasoning"]
    env.reset(seed=1)
    uid = next(iter(env.db["users"]))
    obs, *_ = env.step(hermes("get_user_details", {"user_id": uid})
                       + hermes("get_user_details", {"user_id": "nobody"}))
    first, second = obs.split("\n", 1)[0], obs.rsplit("\n", 1)[-1]
    assert uid in first and second.startswith("Error")


def test_parser_raises_only_its_own_error():
    for action in INPUTS:
        try:
            parse_turn(action)
        except ToolCallParseError:
            pass


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=30,
)
TOOLS = st.sampled_from(["get_user_details", "get_reservation_details", "book_reservation",
                         "cancel_reservation", "calculate", "search_direct_flight", "nope", ""])
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                        HealthCheck.data_too_large])


@FUZZ
@given(name=TOOLS, args=JSON, wrap=st.sampled_from(["hermes", "bare", "string_args", "junk"]),
       noise=st.text(max_size=30))
def test_fuzzed_tool_calls_never_raise(envs, name, args, wrap, noise):
    payload = {"name": name, "arguments": json.dumps(args) if wrap == "string_args" else args}
    body = json.dumps(payload)
    action = {"hermes": f"{noise}<tool_call>{body}</tool_call>", "bare": body,
              "string_args": f"<tool_call>{body}</tool_call>",
              "junk": f"<tool_call>{body[: len(body) // 2]}{noise}"}[wrap]
    for env in envs.values():
        _step(env, action)


@FUZZ
@given(st.text(max_size=400))
def test_fuzzed_text_never_raises(envs, text):
    _step(envs["tool_calling_precision"], text)


def test_reward_rule_failing_at_run_time_is_a_located_reset_error():
    text, _ = SPEC_CASES["rule_divides_by_runtime_zero"]
    result = compile_text(text, "x.tracec")
    assert result.ok, result.rendered
    env = env_class(result.module)()
    with pytest.raises(SpecRuntimeError) as err:
        env.reset(seed=0)
    message = str(err.value)
    assert "task `look`" in message and "reward rule 1" in message and "seed 0" in message
    assert "ZeroDivisionError" in message and "x.tracec:" in message  # located in the spec


def test_reward_rule_failing_only_at_episode_end_does_not_raise_from_step():
    from dataclasses import replace

    from tests.runtime.tiny_capability import CAPABILITY, TinyOrdersEnv
    from tracec.runtime.env import Rule

    def boom(o):
        if o.texts and "boom" in o.texts[-1]:
            raise ZeroDivisionError("division by zero")
        return False

    cap = replace(CAPABILITY, rules=(Rule(1.0, "boom", boom), *CAPABILITY.rules))

    class Env(TinyOrdersEnv):
        capability = cap

    env = Env()
    env.reset(seed=0)  # the probes at reset see no "boom"
    obs, reward, term, trunc, info = env.step("boom ###STOP###")
    assert term and reward == 0.0
    assert "reward rule failed: ZeroDivisionError" in info["reward_breakdown"]["rule_text"]
    assert env.tool_bugs and "ZeroDivisionError" in env.tool_bugs[-1]
