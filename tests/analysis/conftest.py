from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "analysis"


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


def call(name: str, args: dict, i: int = 0) -> dict:
    return {"id": f"c{i}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}


def make_traj(tid: str, calls: list[tuple[str, dict, str]], final: str = "Done.",
              success: bool = False, gold: list[dict] | None = None, **info) -> dict:
    """A tracec trajectory record: each call is (tool, args, tool result)."""
    messages = [{"role": "system", "content": "policy"}, {"role": "user", "content": "help me"}]
    for i, (name, args, result) in enumerate(calls):
        messages.append({"role": "assistant", "content": None, "tool_calls": [call(name, args, i)]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "name": name, "content": result})
    messages.append({"role": "assistant", "content": final})
    if gold is not None:
        info["gold_actions"] = gold
    return {"id": tid, "task_id": tid, "env": "airline", "messages": messages,
            "reward": 1.0 if success else 0.0, "success": success, "info": info}
