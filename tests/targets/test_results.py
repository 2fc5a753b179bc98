"""Result formats: τ² message conversion and the append-only trajectory file."""

from __future__ import annotations

from tracec.core.messages import hermes_text, tool_calls_of
from tracec.harness.results import (
    Episode,
    EpisodeWriter,
    from_tau2_messages,
    read_episodes,
    to_tau2_messages,
)
from tracec.runtime.toolcall import parse_turn

OPENAI = [
    {"role": "system", "content": "policy"},
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "Looking.", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
    {"role": "tool", "tool_call_id": "c1", "name": "f", "content": "ok", "error": False},
    {"role": "assistant", "content": "Done."},
]


def test_openai_tau2_roundtrip():
    tau2 = to_tau2_messages(OPENAI)
    assert [m["role"] for m in tau2] == ["user", "assistant", "tool", "assistant"]
    assert tau2[1]["tool_calls"] == [{"id": "c1", "name": "f", "arguments": {"x": 1}, "requestor": "assistant"}]
    assert tau2[2]["id"] == "c1" and tau2[3]["tool_calls"] is None
    back = from_tau2_messages(tau2)
    assert back == OPENAI[1:]
    assert [c.arguments for c in tool_calls_of(back[1])] == [{"x": 1}]


def test_multi_tool_messages_are_flattened():
    tau2 = [{"role": "assistant", "content": None, "tool_calls": [
                {"id": "a", "name": "f", "arguments": {}}, {"id": "b", "name": "g", "arguments": {}}]},
            {"role": "tool", "tool_messages": [{"role": "tool", "id": "a", "content": "1"},
                                               {"role": "tool", "id": "b", "content": "2"}]}]
    out = from_tau2_messages(tau2)
    assert [(m["role"], m.get("name")) for m in out] == [("assistant", None), ("tool", "f"), ("tool", "g")]


def test_hermes_text_parses_back():
    text = hermes_text("Sure.", [("f", {"x": 1}), ("g", {})])
    turn = parse_turn(text)
    assert turn.text == "Sure." and [(c.name, c.arguments) for c in turn.calls] == [("f", {"x": 1}), ("g", {})]


def test_writer_appends_and_reader_skips_torn_tail(tmp_path):
    path = tmp_path / "t.jsonl"
    ep = Episode(id="e/1/0", task_id="1", env="e", messages=[], reward=1.0, success=True, info={"trial": 0})
    with EpisodeWriter(path) as w:
        w.write(ep)
    with open(path, "a") as fh:
        fh.write('{"id": "e/2/0", "task_')  # killed mid-write
    assert [e.id for e in read_episodes(path)] == ["e/1/0"]
    with EpisodeWriter(path) as w:  # reopening drops the torn line
        w.write(ep.model_copy(update={"id": "e/3/0", "task_id": "3"}))
    assert [e.id for e in read_episodes(path)] == ["e/1/0", "e/3/0"]
