"""Compact tool schemas: the same call interface in fewer prompt tokens.

``compact_schema`` keeps every tool name, argument name, JSON type, ``required`` list, enum,
``items``/``$defs``/``$ref`` structure and constraint; it shortens the tool's description to its
first sentence (at most :data:`MAX_DESCRIPTION` characters) and drops the ``description`` and
``title`` annotations of the arguments. Validation of the agent's calls still uses the full
schema, so a call that is valid under one rendering is valid under the other.
"""

from __future__ import annotations

import re
from typing import Any

MAX_DESCRIPTION = 100
_ANNOTATIONS = frozenset({"description", "title", "examples"})
# a sentence ends at . ! or ? followed by whitespace, unless it is a usual abbreviation
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)[.!?](?=\s|$)")


def first_sentence(text: str, limit: int = MAX_DESCRIPTION) -> str:
    """The first sentence of ``text`` on one line, cut at a word boundary to ``limit`` chars."""
    flat = " ".join(text.split())
    m = _SENTENCE_END.search(flat)
    short = flat[:m.end()] if m else flat
    if len(short) > limit:
        cut = short[:limit - 3].rsplit(" ", 1)[0].rstrip(",;:")
        short = cut + "..."
    return short


def compact_parameters(schema: Any) -> Any:
    """A JSON Schema without argument annotations (types, required, enums kept)."""
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                # property *names* are arguments, never annotations: keep every one
                out[key] = {name: compact_parameters(v) for name, v in value.items()}
            elif key == "$defs" and isinstance(value, dict):
                out[key] = {name: compact_parameters(v) for name, v in value.items()}
            elif key in _ANNOTATIONS:
                continue
            else:
                out[key] = compact_parameters(value)
        return out
    if isinstance(schema, list):
        return [compact_parameters(v) for v in schema]
    return schema


def compact_schema(schema: dict) -> dict:
    """The compact form of one OpenAI function schema ``{"type": "function", "function": ...}``."""
    fn = schema.get("function", {})
    short = {
        "name": fn.get("name", ""),
        "description": first_sentence(str(fn.get("description", ""))),
        "parameters": compact_parameters(fn.get("parameters", {"type": "object", "properties": {}})),
    }
    return {"type": schema.get("type", "function"), "function": short}
