"""Split one raw assistant turn into text and tool calls.

A thin adapter over ``tracec.runtime.toolcall.parse_turn`` (the parser compiled envs use), so
that both kinds of env read a model's output the same way.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from tracec.runtime.toolcall import ToolCallParseError
from tracec.runtime.toolcall import parse_turn as runtime_parse


class Turn(NamedTuple):
    content: str  # the text outside tool-call blocks
    calls: list[tuple[str, dict]]  # (name, arguments)
    errors: list[str]  # malformed calls, as messages for the agent


_BLOCK = re.compile(r"<tool_call>(.*?)(</tool_call>|$)", re.DOTALL)


def parse_turn(text: str) -> Turn:
    """``Turn(content, calls, errors)`` for one raw assistant turn."""
    try:
        parsed = runtime_parse(text or "")
    except ToolCallParseError as exc:
        return Turn(_BLOCK.sub("", text or "").strip(), [], [str(exc)])
    return Turn(parsed.text, [(c.name, dict(c.arguments)) for c in parsed.calls], [])
