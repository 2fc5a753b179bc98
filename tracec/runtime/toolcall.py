"""Parse one raw assistant turn into text and tool calls.

Accepted tool-call forms:

* Hermes/Qwen blocks ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (any number,
  whitespace/newlines tolerated, ``arguments`` may be a JSON-encoded string, ``parameters`` is
  an alias, the closing tag of the last block may be missing);
* the whole turn being one bare JSON object ``{"name": ..., "arguments": {...}}``.

Anything else is a plain message. ``<think>...</think>`` reasoning is dropped from the text.

Hostile JSON is a :class:`ToolCallParseError`, never another exception: nesting deeper than
:data:`MAX_DEPTH`, integers longer than :data:`MAX_INT_DIGITS` digits, ``NaN``/``Infinity`` and
numbers that overflow to infinity.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from tracec.files import JSONLimitError, decode_json

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)

MAX_DEPTH = 64  # nesting of arrays/objects in one tool call
MAX_INT_DIGITS = 1000


def _decode(src: str) -> Any:
    """``json`` decoding that fails only with :class:`json.JSONDecodeError` (message says why)."""
    try:
        return decode_json(src, MAX_DEPTH, MAX_INT_DIGITS, finite=True)
    except JSONLimitError as exc:
        if exc.kind == "syntax":
            raise json.JSONDecodeError(exc.msg, src, exc.pos) from None
        why = {
            "int": f"integer with {exc.digits} digits (at most {exc.limit})",
            "constant": f"{exc.text} is not a valid JSON number",
            "overflow": f"number {exc.text[:40]} is out of range",
            "recursion": f"nested deeper than {MAX_DEPTH} levels",
            "depth": f"nested deeper than {MAX_DEPTH} levels",
        }.get(exc.kind, exc.msg)
        raise json.JSONDecodeError(why, src, 0) from None


class ToolCallParseError(ValueError):
    """A turn that tries to call a tool but is malformed (message says which block and why)."""


@dataclass(frozen=True)
class ParsedCall:
    name: str
    arguments: dict


@dataclass(frozen=True)
class ParsedTurn:
    """The text of a turn (outside tool-call blocks, stripped) and its tool calls in order."""

    text: str
    calls: list[ParsedCall] = field(default_factory=list)


def _call_from_obj(obj: Any, where: str) -> ParsedCall:
    if not isinstance(obj, dict):
        raise ToolCallParseError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    name = obj.get("name")
    if name is None and isinstance(obj.get("function"), dict):  # OpenAI-shaped
        obj = obj["function"]
        name = obj.get("name")
    if not isinstance(name, str) or not name:
        raise ToolCallParseError(f'{where}: missing "name" (a non-empty string)')
    if "arguments" in obj:
        args = obj["arguments"]
    else:
        args = obj.get("parameters", {})
    if isinstance(args, str):
        try:
            args = _decode(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            raise ToolCallParseError(f'{where}: "arguments" is a string but not valid JSON: {exc}') from None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ToolCallParseError(f'{where}: "arguments" must be a JSON object, got {type(args).__name__}')
    return ParsedCall(name, args)


def _parse_block(body: str, index: int) -> ParsedCall:
    where = f"tool call {index}"
    src = body.strip()
    if not src:
        raise ToolCallParseError(f"{where}: empty <tool_call> block")
    try:
        obj = _decode(src)
    except json.JSONDecodeError as exc:
        raise ToolCallParseError(f"{where}: invalid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})") from None
    return _call_from_obj(obj, where)


def _cut_close(body: str) -> str:
    """``body`` without a trailing, cut-off start of ``</tool_call>`` (``…}}\n</tool_call``)."""
    stripped = body.rstrip()
    for k in range(len(CLOSE) - 1, 0, -1):
        if stripped.endswith(CLOSE[:k]):
            return stripped[:-k]
    return body


def _strip_think(text: str) -> str:
    return _THINK.sub("", text) if "<think>" in text else text


def parse_turn(raw: str) -> ParsedTurn:
    """Split ``raw`` into text and tool calls (``ToolCallParseError`` when malformed)."""
    text = _strip_think(raw)
    start = text.find(OPEN)
    if start >= 0 and text.count(OPEN) == 1:  # fast path: one block
        body_start = start + len(OPEN)
        end = text.find(CLOSE, body_start)
        if end >= 0 and text.find(CLOSE, end + len(CLOSE)) < 0 and CLOSE not in text[:start]:
            call = _parse_block(text[body_start:end], 1)
            outside = (text[:start] + text[end + len(CLOSE):]).strip()
            return ParsedTurn(outside, [call])
    if OPEN not in text:
        if CLOSE in text:
            raise ToolCallParseError("found </tool_call> without an opening <tool_call>")
        stripped = text.strip()
        if stripped.startswith("{") and stripped.endswith("}"):
            return _parse_bare(stripped)
        return ParsedTurn(stripped)
    outside: list[str] = []
    calls: list[ParsedCall] = []
    pos = 0
    index = 0
    while True:
        start = text.find(OPEN, pos)
        if start < 0:
            rest = text[pos:]
            if CLOSE in rest:
                raise ToolCallParseError(f"found </tool_call> after tool call {index} without an opening <tool_call>")
            outside.append(rest)
            break
        before = text[pos:start]
        if CLOSE in before:
            raise ToolCallParseError(f"found </tool_call> before tool call {index + 1} without an opening <tool_call>")
        outside.append(before)
        index += 1
        body_start = start + len(OPEN)
        end = text.find(CLOSE, body_start)
        nxt = text.find(OPEN, body_start)
        if nxt >= 0 and (end < 0 or nxt < end):
            raise ToolCallParseError(f"tool call {index}: missing </tool_call> before the next <tool_call>")
        if end < 0:  # tolerated: unterminated last block (the token limit cut `</tool_call>`)
            calls.append(_parse_block(_cut_close(text[body_start:]), index))
            break
        calls.append(_parse_block(text[body_start:end], index))
        pos = end + len(CLOSE)
    return ParsedTurn("".join(outside).strip(), calls)


def _parse_bare(src: str) -> ParsedTurn:
    try:
        obj = _decode(src)
    except json.JSONDecodeError as exc:
        if '"name"' in src:
            raise ToolCallParseError(
                f"bare JSON tool call: invalid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})"
            ) from None
        return ParsedTurn(src)
    if isinstance(obj, dict) and ("name" in obj or "function" in obj):
        return ParsedTurn("", [_call_from_obj(obj, "bare JSON tool call")])
    return ParsedTurn(src)


_HERMES_JSON = json.JSONEncoder(ensure_ascii=False).encode  # json.dumps(..., ensure_ascii=False)


def hermes(name: str, arguments: dict | None = None) -> str:
    """Render a tool call in Hermes/Qwen form."""
    payload = _HERMES_JSON({"name": name, "arguments": arguments or {}})
    return f"{OPEN}\n{payload}\n{CLOSE}"
