"""Split one raw assistant turn into text and tool calls.

Uses ``tracec.runtime.toolcall.parse_action`` (the parser compiled envs use) when it is
available, so that both kinds of env read a model's output the same way; a small fallback keeps
the target usable on its own.
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple


class Turn(NamedTuple):
    content: str  # the text outside tool-call blocks
    calls: list[tuple[str, dict]]  # (name, arguments)
    errors: list[str]  # malformed calls, as messages for the agent


_BLOCK = re.compile(r"<tool_call>(.*?)(</tool_call>|$)", re.DOTALL)


def _fallback(text: str) -> Turn:
    text = text or ""
    calls: list[tuple[str, dict]] = []
    errors: list[str] = []
    blocks = list(_BLOCK.finditer(text))
    if not blocks:
        stripped = text.strip()
        if stripped.startswith("{") and stripped.endswith("}"):
            try:
                obj = json.loads(stripped)
            except json.JSONDecodeError:
                obj = None
            if isinstance(obj, dict) and "name" in obj and set(obj) <= {"name", "arguments"}:
                return _one(obj, "", calls, errors)
        return Turn(text.strip(), [], [])
    content = _BLOCK.sub("", text).strip()
    for b in blocks:
        try:
            obj = json.loads(b.group(1).strip())
        except json.JSONDecodeError as exc:
            errors.append(f"invalid JSON in <tool_call>: {exc.msg}")
            continue
        _one(obj, content, calls, errors)
    return Turn(content, calls, errors)


def _one(obj: Any, content: str, calls: list, errors: list) -> Turn:
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        errors.append('a tool call must be {"name": ..., "arguments": {...}}')
    else:
        args = obj.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                args = None
        if not isinstance(args, dict):
            errors.append(f"arguments of {obj['name']} must be a JSON object")
        else:
            calls.append((obj["name"], args))
    return Turn(content, calls, errors)


def parse_turn(text: str) -> Turn:
    """``Turn(content, calls, errors)`` for one raw assistant turn."""
    try:
        from tracec.runtime.toolcall import ToolCallParseError
        from tracec.runtime.toolcall import parse_turn as runtime_parse
    except ImportError:  # pragma: no cover - the runtime ships with tracec
        return _fallback(text)
    try:
        parsed = runtime_parse(text or "")
    except ToolCallParseError as exc:
        return Turn(_BLOCK.sub("", text or "").strip(), [], [str(exc)])
    return Turn(parsed.text, [(c.name, dict(c.arguments)) for c in parsed.calls], [])
