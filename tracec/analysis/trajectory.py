"""The trajectory model every importer produces (one JSON object per JSONL line).

``{id, task_id, env, messages, reward, success, info}``; ``messages`` are OpenAI chat
messages (assistant ``tool_calls`` as ``{id, type: "function", function: {name, arguments}}``
with ``arguments`` a JSON string, tool results as ``{role: "tool", tool_call_id, content}``).
``info`` may carry ``gold_actions`` (``[{name, arguments}]``) and ``communicate_info``
(strings the agent had to say), which the offline labeler uses.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "tracec.trajectory/1"


class FunctionCall(BaseModel):
    name: str
    arguments: str = "{}"  # JSON text, as OpenAI sends it


class ToolCall(BaseModel):
    id: str = ""
    type: Literal["function"] = "function"
    function: FunctionCall

    def parsed_arguments(self) -> dict:
        """Arguments as a dict (``{}`` when they are not a JSON object)."""
        try:
            value = json.loads(self.function.arguments or "{}")
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class GoldAction(BaseModel):
    name: str
    arguments: dict = Field(default_factory=dict)


class Trajectory(BaseModel):
    """One agent run on one task, with its outcome."""

    id: str = Field(description="Unique trajectory id, e.g. 'airline:12' or 'airline:12:3'.")
    task_id: str
    env: str = Field(description="Environment or domain name, e.g. 'airline'.")
    messages: list[Message]
    reward: float
    success: bool
    info: dict[str, Any] = Field(default_factory=dict)

    def gold_actions(self) -> list[GoldAction] | None:
        """The task's gold actions when the trajectory carries them, else None."""
        raw = self.info.get("gold_actions")
        if raw is None:
            return None
        return [GoldAction.model_validate(a) for a in raw]

    def tool_calls(self) -> list[tuple[int, str, dict]]:
        """(message index, tool name, arguments) of every assistant tool call, in order."""
        out = []
        for i, m in enumerate(self.messages):
            if m.role == "assistant" and m.tool_calls:
                out += [(i, c.function.name, c.parsed_arguments()) for c in m.tool_calls]
        return out


def trajectory_json_schema() -> dict:
    """The JSON Schema of one trajectory record (published as docs/trajectory.schema.json)."""
    schema = Trajectory.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_VERSION
    return schema


def make_tool_call(name: str, arguments: Any, call_id: str = "") -> ToolCall:
    """A ToolCall from a name and arguments given as dict or JSON text."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments if arguments is not None else {})
    return ToolCall(id=call_id, function=FunctionCall(name=name, arguments=args))
