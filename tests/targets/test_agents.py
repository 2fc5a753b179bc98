"""Agents: spec parsing, OpenAI-compatible agent over a loopback server, local-model batching."""

from __future__ import annotations

import json

import pytest

from tests.support.openai_server import OpenAIServer
from tracec.llm.agents import (
    AgentSpecError,
    LocalAgent,
    OpenAIAgent,
    OracleAgent,
    ScriptedAgent,
    make_agent,
    parse_agent_spec,
)
from tracec.runtime.toolcall import parse_turn


def test_parse_agent_specs():
    assert parse_agent_spec("openai:gpt-4.1@http://h:8000/v1") == (
        "openai", {"model": "gpt-4.1", "base_url": "http://h:8000/v1"})
    assert parse_agent_spec("openai:org/m@x@https://h/v1")[1]["model"] == "org/m@x"
    assert parse_agent_spec("local:smollm2") == ("local", {"model": "smollm2", "adapter": None})
    assert parse_agent_spec("local:/m/q+adapter:/a/b") == ("local", {"model": "/m/q", "adapter": "/a/b"})
    assert parse_agent_spec("composed:runs/moe") == ("composed", {"directory": "runs/moe"})
    assert parse_agent_spec("oracle") == ("oracle", {})
    for bad in ["openai:model", "openai:@http://x", "local:", "local:m+adapter:", "composed:", "gpt"]:
        with pytest.raises(AgentSpecError):
            parse_agent_spec(bad)


def test_openai_agent_turns_native_tool_calls_into_hermes_text():
    replies = [{"content": "Checking.", "tool_calls": [{"name": "get_user_details", "arguments": {"user_id": "u1"}}]},
               "All set."]
    with OpenAIServer(replies) as srv:
        agent = make_agent(f"openai:test-model@{srv.base_url}")
        tools = [{"type": "function", "function": {"name": "get_user_details", "parameters": {}}}]
        msgs = [{"role": "system", "content": "p"}, {"role": "user", "content": "hi"}]
        out = agent.act([(msgs, tools)])[0]
        turn = parse_turn(out)
        assert turn.text == "Checking." and turn.calls[0].name == "get_user_details"
        assert turn.calls[0].arguments == {"user_id": "u1"}
        history = msgs + [
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
             "function": {"name": "get_user_details", "arguments": "{\"user_id\": \"u1\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "name": "get_user_details", "content": "{}", "error": False},
        ]
        assert agent.act([(history, tools)]) == ["All set."]
        sent = srv.requests[1]
        assert sent["tools"] == tools and sent["model"] == "test-model"
        assert "error" not in sent["messages"][-1]  # extra keys are not sent to the API


def test_openai_agent_runs_a_batch_concurrently_in_order():
    def answer(body):
        return "echo " + body["messages"][-1]["content"]

    with OpenAIServer(answer) as srv:
        agent = OpenAIAgent("m", srv.base_url, concurrency=4)
        batch = [([{"role": "user", "content": str(i)}], []) for i in range(6)]
        assert agent.act(batch) == [f"echo {i}" for i in range(6)]


class FakeChat:
    def __init__(self):
        self.calls = []

    def generate(self, batch_messages, tools=None, max_new_tokens=256, temperature=0.0, seed=None):
        self.calls.append((len(batch_messages), tools))
        for msgs in batch_messages:
            for m in msgs:
                for tc in m.get("tool_calls") or []:
                    assert isinstance(tc["function"]["arguments"], dict)  # templates want dicts
        return [f"n={len(m)}" for m in batch_messages]


def test_local_agent_batches_by_tool_list():
    chat = FakeChat()
    agent = LocalAgent("x", chat_model=chat)
    t1, t2 = [{"function": {"name": "a"}}], [{"function": {"name": "b"}}]
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "1", "type": "function", "function": {"name": "a", "arguments": json.dumps({"k": 1})}}]}
    batch = [([{"role": "user", "content": "q"}], t1), ([{"role": "user", "content": "q"}, call], t2),
             ([{"role": "user", "content": "q"}] * 3, t1)]
    assert agent.act(batch) == ["n=1", "n=2", "n=3"]
    assert sorted(n for n, _ in chat.calls) == [1, 2]


def test_oracle_and_scripted_agents():
    task = {"evaluation_criteria": {"actions": [{"name": "f", "arguments": {"x": 1}}],
                                    "communicate_info": ["42"]}}
    oracle = OracleAgent()
    first = oracle.act([([{"role": "user", "content": "hi"}], [])], tasks=[task])[0]
    assert parse_turn(first).calls[0].arguments == {"x": 1}
    done = oracle.act([([{"role": "assistant", "content": first}], [])], tasks=[task])[0]
    assert "42" in done and "###STOP###" in done
    with pytest.raises(AgentSpecError):
        oracle.act([([], [])])
    agent = ScriptedAgent(["one", "two"])
    assert agent.act([([], []), ([{"role": "assistant"}], [])]) == ["one", "two"]


def test_scripted_agent_from_file(tmp_path):
    path = tmp_path / "turns.json"
    path.write_text(json.dumps(["hello"]))
    assert make_agent(f"scripted:{path}").act([([], [])]) == ["hello"]
    path.write_text("{not json")
    with pytest.raises(AgentSpecError, match="invalid JSON"):
        make_agent(f"scripted:{path}")
