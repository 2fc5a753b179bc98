"""Render trajectories as compact text for LLM prompts."""

from __future__ import annotations

from tracec.analysis.trajectory import Trajectory

MAX_TOOL_CHARS = 1200
MAX_TEXT_CHARS = 2000


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" …[{len(text) - limit} chars cut]"


def render_trajectory(t: Trajectory) -> str:
    """``### Trajectory <id>`` followed by its turns (system prompt left out)."""
    outcome = "SUCCESS" if t.success else "FAILURE"
    lines = [f"### Trajectory {t.id} (task {t.task_id}, outcome: {outcome}, reward {t.reward:g})"]
    for m in t.messages:
        if m.role == "system":
            continue
        if m.content:
            limit = MAX_TOOL_CHARS if m.role == "tool" else MAX_TEXT_CHARS
            lines.append(f"[{m.role}] {_clip(m.content, limit)}")
        for c in m.tool_calls or []:
            lines.append(f"[{m.role} calls] {c.function.name}({_clip(c.function.arguments, 600)})")
    return "\n".join(lines)


def render_many(trajectories: list[Trajectory]) -> str:
    return "\n\n".join(render_trajectory(t) for t in trajectories)
