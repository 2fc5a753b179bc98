"""Extract a JSON object from an LLM reply (fenced or surrounded by prose)."""

from __future__ import annotations

import json
import re

FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


class ReplyError(ValueError):
    """The reply is not usable; the message is fed back to the model."""


def parse_json_object(text: str) -> dict:
    """The JSON object in ``text``; raises :class:`ReplyError` with the parse error."""
    m = FENCE.search(text)
    body = m.group(1) if m else text
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end <= start:
        raise ReplyError("no JSON object found in the reply")
    try:
        value = json.loads(body[start : end + 1])
    except json.JSONDecodeError as exc:
        raise ReplyError(f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(value, dict):
        raise ReplyError("the reply must be a JSON object")
    return value
