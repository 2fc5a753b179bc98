"""Parsing raw assistant turns into text and tool calls."""

from __future__ import annotations

import json

import pytest

from tracec.runtime.toolcall import ParsedCall, ToolCallParseError, hermes, parse_turn


def test_plain_message():
    turn = parse_turn("  Hello, how can I help?\n")
    assert turn.text == "Hello, how can I help?" and turn.calls == []


def test_single_block_with_whitespace_and_text_around():
    raw = 'Let me check.\n<tool_call>\n  {"name": "get_order", "arguments": {"id": "#1"}}\n</tool_call>\n'
    turn = parse_turn(raw)
    assert turn.calls == [ParsedCall("get_order", {"id": "#1"})]
    assert turn.text == "Let me check."


def test_multiple_blocks_in_order():
    raw = hermes("a", {"x": 1}) + hermes("b", {"y": [1, 2]}) + "\n" + hermes("c")
    assert [c.name for c in parse_turn(raw).calls] == ["a", "b", "c"]
    assert parse_turn(raw).calls[1].arguments == {"y": [1, 2]}


def test_arguments_as_json_string_and_parameters_alias():
    args = json.dumps({"user_id": "u1"})
    raw = '<tool_call>{"name": "f", "arguments": ' + json.dumps(args) + "}</tool_call>"
    assert parse_turn(raw).calls == [ParsedCall("f", {"user_id": "u1"})]
    assert parse_turn('<tool_call>{"name": "f", "parameters": {"k": 2}}</tool_call>').calls[0].arguments == {"k": 2}


def test_missing_closing_tag_at_end_is_tolerated():
    turn = parse_turn('<tool_call>{"name": "f", "arguments": {}}\n')
    assert turn.calls == [ParsedCall("f", {})]


def test_bare_json_object_is_a_call():
    assert parse_turn(' {"name": "f", "arguments": {"a": 1}} ').calls == [ParsedCall("f", {"a": 1})]


def test_json_without_name_is_a_message():
    turn = parse_turn('{"total": 3}')
    assert turn.calls == [] and turn.text == '{"total": 3}'


def test_think_block_is_dropped():
    turn = parse_turn("<think>the total is 5</think>It is 7.")
    assert turn.text == "It is 7."


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('<tool_call>{"name": "a"}</tool_call><tool_call>{"name": "b", </tool_call>', "tool call 2: invalid JSON"),
        ('<tool_call>{"arguments": {}}</tool_call>', 'tool call 1: missing "name"'),
        ('<tool_call>{"name": "a", "arguments": [1]}</tool_call>', '"arguments" must be a JSON object'),
        ('<tool_call>{"name": "a", "arguments": "{bad"}</tool_call>', '"arguments" is a string but not valid JSON'),
        ('<tool_call>{"name": "a"}<tool_call>{"name": "b"}</tool_call>', "tool call 1: missing </tool_call>"),
        ('{"name": "a"}</tool_call>', "without an opening <tool_call>"),
        ("<tool_call>   </tool_call>", "tool call 1: empty <tool_call> block"),
        ('<tool_call>[1, 2]</tool_call>', "expected a JSON object, got list"),
        ('{"name": "a", "arguments": {"x": }', "bare JSON tool call: invalid JSON"),
    ],
)
def test_malformed_turns_have_precise_errors(raw, message):
    with pytest.raises(ToolCallParseError, match=None) as err:
        parse_turn(raw)
    assert message in str(err.value)


def test_hermes_roundtrip():
    raw = hermes("cancel", {"order_id": "#9", "items": ["ü", 2.5]})
    assert parse_turn(raw).calls == [ParsedCall("cancel", {"order_id": "#9", "items": ["ü", 2.5]})]
