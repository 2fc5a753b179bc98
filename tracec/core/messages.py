"""Chat-message helpers shared by the τ² target, grading and the results format.

tracec keeps conversations in OpenAI chat format: assistant tool calls are
``{"id", "type": "function", "function": {"name", "arguments": "<json>"}}`` and tool results are
``{"role": "tool", "tool_call_id", "name", "content"}``. τ²-bench stores tool calls as
``{"id", "name", "arguments": {...}, "requestor"}`` and tool results as ``{"role": "tool", "id",
"content", "error"}``; the helpers here read both.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, NamedTuple

STOP = "###STOP###"
TRANSFER = "###TRANSFER###"
OUT_OF_SCOPE = "###OUT-OF-SCOPE###"
USER_STOP_TOKENS = (STOP, TRANSFER, OUT_OF_SCOPE)


class ToolCall(NamedTuple):
    id: str
    name: str
    arguments: dict
    requestor: str = "assistant"


def _args(raw: Any) -> dict:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def tool_calls_of(message: dict) -> list[ToolCall]:
    """The tool calls of one message, in OpenAI or τ² form."""
    out = []
    for i, tc in enumerate(message.get("tool_calls") or []):
        fn = tc.get("function")
        if isinstance(fn, dict):
            name, args = fn.get("name", ""), _args(fn.get("arguments"))
        else:
            name, args = tc.get("name", ""), _args(tc.get("arguments"))
        out.append(
            ToolCall(str(tc.get("id") or f"call_{i}"), str(name), args,
                     tc.get("requestor", "assistant"))
        )
    return out


def all_tool_calls(messages: Iterable[dict], requestor: str = "assistant") -> list[ToolCall]:
    """Every tool call made by ``requestor`` in a conversation, in order."""
    calls: list[ToolCall] = []
    for m in messages:
        if m.get("role") in ("assistant", "user"):
            calls.extend(tc for tc in tool_calls_of(m) if tc.requestor == requestor)
    return calls


def assistant_texts(messages: Iterable[dict]) -> list[str]:
    """The non-empty text contents of assistant messages."""
    out = []
    for m in messages:
        if m.get("role") == "assistant" and isinstance(m.get("content"), str):
            if m["content"].strip():
                out.append(m["content"])
    return out


def openai_tool_call(call_id: str, name: str, arguments: dict) -> dict:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
    }


def hermes_text(content: str | None, calls: Iterable[tuple[str, dict]]) -> str:
    """Raw assistant text in Hermes form: the content, then one ``<tool_call>`` block per call."""
    parts = [content.strip()] if content and content.strip() else []
    for name, arguments in calls:
        body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
        parts.append(f"<tool_call>\n{body}\n</tool_call>")
    return "\n".join(parts)


def has_user_stop(text: str | None) -> str | None:
    """The stop token in a simulated user's message, if any."""
    if not text:
        return None
    for tok in USER_STOP_TOKENS:
        if tok in text:
            return tok
    return None


def plain_messages(messages: list[dict], args_as_dict: bool) -> list[dict]:
    """Messages trimmed to what chat APIs and chat templates accept."""
    out = []
    for m in messages:
        msg = {k: v for k, v in m.items() if k in ("role", "content", "tool_calls", "tool_call_id", "name")}
        if msg.get("role") != "tool":
            msg.pop("name", None)
        if msg.get("content") is None:
            msg["content"] = ""
        if args_as_dict and msg.get("tool_calls"):
            calls = []
            for tc in msg["tool_calls"]:
                fn = dict(tc.get("function") or {})
                if isinstance(fn.get("arguments"), str):
                    try:
                        fn["arguments"] = json.loads(fn["arguments"])
                    except json.JSONDecodeError:
                        pass
                calls.append({**tc, "function": fn})
            msg["tool_calls"] = calls
        out.append(msg)
    return out
