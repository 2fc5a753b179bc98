"""One bounded JSON decoder (`tracec.files.decode_json`) with the limits as parameters; user
files and tool calls keep their own limits and messages."""

from __future__ import annotations

import json

import pytest

from tracec.files import InputError, JSONLimitError, decode_json, parse_json
from tracec.runtime import toolcall


@pytest.mark.parametrize(("text", "kwargs", "kind"), [
    ("[" * 5 + "]" * 5, {"max_depth": 4, "max_int_digits": 10}, "depth"),
    ("[[1]]", {"max_depth": 1, "max_int_digits": 10}, "depth"),
    ("1" * 11, {"max_depth": 4, "max_int_digits": 10}, "int"),
    ("[NaN]", {"max_depth": 4, "max_int_digits": 10}, "constant"),
    ("[1e999]", {"max_depth": 4, "max_int_digits": 10, "finite": True}, "overflow"),
    ('{"a": ', {"max_depth": 4, "max_int_digits": 10}, "syntax"),
    ("[" * 100_000, {"max_depth": 4, "max_int_digits": 10}, "recursion"),
])
def test_decode_json_limits_are_parameters(text: str, kwargs: dict, kind: str) -> None:
    with pytest.raises(JSONLimitError) as err:
        decode_json(text, **kwargs)
    assert err.value.kind in ({kind, "syntax"} if kind == "recursion" else {kind})


def test_within_the_limits_it_is_json() -> None:
    text = '{"a": [1, 2.5, null, true, "ü"], "b": {"c": 12345}}'
    assert decode_json(text, max_depth=3, max_int_digits=5) == json.loads(text)
    assert decode_json("[1e999]", max_depth=2, max_int_digits=5) == [float("inf")]  # not finite=


def test_each_caller_keeps_its_limits_and_words() -> None:
    deep = "[" * 100 + "]" * 100  # deeper than a tool call may be, fine for a file
    assert parse_json(deep, "f.json") is not None
    with pytest.raises(toolcall.ToolCallParseError, match="nested deeper than 64 levels"):
        toolcall.parse_turn(f'<tool_call>{{"name": "a", "arguments": {{"x": {deep}}}}}</tool_call>')
    with pytest.raises(InputError, match=r"^f\.json: JSON nested deeper than 200 levels$"):
        parse_json("[" * 201 + "]" * 201, "f.json")
    big = "9" * 1001
    with pytest.raises(toolcall.ToolCallParseError,
                       match=r"integer with 1001 digits \(at most 1000\)"):
        toolcall.parse_turn(f'<tool_call>{{"name": "a", "arguments": {{"x": {big}}}}}</tool_call>')
    assert parse_json(f"[{big}]", "f.json") == [int(big)]
    with pytest.raises(InputError, match=r"f\.json: invalid JSON: an integer with 4001 digits"):
        parse_json("9" * 4001, "f.json")
    with pytest.raises(InputError, match=r"^f\.json: invalid JSON: NaN is not valid JSON$"):
        parse_json("[NaN]", "f.json")
    with pytest.raises(toolcall.ToolCallParseError, match="NaN is not a valid JSON number"):
        toolcall.parse_turn('<tool_call>{"name": "a", "arguments": {"x": NaN}}</tool_call>')
    with pytest.raises(InputError, match=r"^f\.json:1:6: invalid JSON: Expecting value$"):
        parse_json('{"a":', "f.json")
    with pytest.raises(InputError, match=r"^f\.json:3:6: invalid JSON: Expecting value$"):
        parse_json('{"a":', "f.json", line=3)  # one line of a JSONL file
