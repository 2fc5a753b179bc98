"""Run outputs: tracec trajectory JSONL (append-only, resumable) and τ²-bench Results JSON.

Trajectory line: ``{id, task_id, env, messages, reward, success, info}`` (OpenAI messages;
``info`` has ``trial``, ``termination_reason``, ``reward_breakdown``, ...).

τ² Results JSON (``tau2.data_model.simulation.Results``): ``{timestamp, info, tasks,
simulations}``, a simulation being ``{id, task_id, trial, termination_reason, reward_info,
messages, start_time, end_time, duration, ...}`` with τ²-format messages.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tracec import files
from tracec.core.messages import openai_tool_call, tool_calls_of
from tracec.outputs import open_append, write_atomic


class ResultsError(Exception):
    """A results or trajectory file that cannot be read."""


class Episode(BaseModel):
    """One line of the trajectory JSONL."""

    model_config = ConfigDict(extra="allow")

    id: str
    task_id: str
    env: str
    messages: list[dict]
    reward: float = Field(allow_inf_nan=False)  # a NaN or infinite reward is not a result
    success: bool
    info: dict = Field(default_factory=dict)

    @property
    def trial(self) -> int:
        return int(self.info.get("trial", 0))


def now() -> str:
    return datetime.now(timezone.utc).isoformat()


# --- trajectory JSONL ---------------------------------------------------------------------

def read_episodes(path: str | Path) -> list[Episode]:
    """Episodes of a JSONL file; a torn last line (killed writer: no newline, not an episode)
    is ignored."""
    path = Path(path)
    if not path.exists():
        return []
    out = []
    try:
        text = files.read_text(path, "trajectory file")
    except files.InputError as exc:
        raise ResultsError(str(exc)) from None
    lines = text.splitlines()
    torn = not text.endswith("\n")  # only a last line without its newline can be torn
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(Episode.model_validate_json(line))
        except ValidationError as exc:
            if n == len(lines) and torn:  # the writer died mid-line: that episode reruns
                break
            raise ResultsError(f"{path}:{n}: not a trajectory line: {exc.errors()[0]['msg']}") from None
    return out


class EpisodeWriter:
    """Appends episodes durably (flush + fsync per line); never through a symbolic link."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open_append(self.path)
        self._repair_tail()

    def _repair_tail(self) -> None:
        """End the file on a line break: a complete last episode that lacks its newline gets
        one (it counts as done, so it must stay); a torn one (killed writer) is cut off, as
        :func:`read_episodes` ignores it."""
        size = os.fstat(self._fh.fileno()).st_size
        if size == 0:
            return
        self._fh.seek(0)
        data = self._fh.read()
        if data.endswith(b"\n"):
            return
        cut = data.rfind(b"\n") + 1
        try:
            Episode.model_validate_json(data[cut:])
        except ValidationError:
            self._fh.truncate(cut)
            return
        self._fh.write(b"\n")
        self._fh.flush()

    def write(self, episode: Episode) -> None:
        self._fh.write((episode.model_dump_json() + "\n").encode("utf-8"))
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> EpisodeWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- message formats ----------------------------------------------------------------------

def to_tau2_messages(messages: list[dict]) -> list[dict]:
    """OpenAI chat messages → τ² messages (the system prompt is not part of τ²'s trajectory)."""
    out = []
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "system":
            continue
        if role == "tool":
            out.append({"role": "tool", "id": m.get("tool_call_id") or m.get("id", ""),
                        "content": m.get("content"), "requestor": "assistant",
                        "error": bool(m.get("error", False)), "turn_idx": i})
            continue
        calls = tool_calls_of(m)
        out.append({
            "role": role,
            "content": m.get("content"),
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments,
                            "requestor": c.requestor} for c in calls] or None,
            "turn_idx": i,
        })
    return out


def from_tau2_messages(messages: list[dict]) -> list[dict]:
    """τ² messages → OpenAI chat messages (multi-tool messages are flattened)."""
    out: list[dict] = []
    names: dict[str, str] = {}
    flat: list[dict] = []
    for m in messages:
        if m.get("role") == "tool" and "tool_messages" in m:
            flat.extend(m["tool_messages"])
        else:
            flat.append(m)
    for m in flat:
        role = m.get("role")
        if role == "tool":
            cid = m.get("id") or m.get("tool_call_id") or ""
            out.append({"role": "tool", "tool_call_id": cid, "name": names.get(cid, ""),
                        "content": m.get("content"), "error": bool(m.get("error", False))})
            continue
        msg: dict[str, Any] = {"role": role, "content": m.get("content")}
        calls = tool_calls_of(m)
        if calls:
            msg["tool_calls"] = [openai_tool_call(c.id, c.name, c.arguments) for c in calls]
            if any(c.requestor != "assistant" for c in calls):
                for tc, c in zip(msg["tool_calls"], calls):
                    tc["requestor"] = c.requestor
            names.update({c.id: c.name for c in calls})
        out.append(msg)
    return out


# --- τ² Results JSON ----------------------------------------------------------------------

class Tau2Simulation(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    task_id: str
    messages: list[dict]
    termination_reason: str
    reward_info: dict | None = None
    trial: int | None = None
    seed: int | None = None


class Tau2Results(BaseModel):
    model_config = ConfigDict(extra="allow")

    timestamp: str | None = None
    info: dict = Field(default_factory=dict)
    tasks: list[dict] = Field(default_factory=list)
    simulations: list[Tau2Simulation]

    @property
    def domain(self) -> str | None:
        env = self.info.get("environment_info") or {}
        return env.get("domain_name")


def load_tau2_results(path: str | Path) -> Tau2Results:
    """Read a τ² Results JSON file (clear errors for a wrong file)."""
    path = Path(path)
    try:
        raw = files.read_json(path, "results file")
    except files.InputError as exc:
        raise ResultsError(str(exc)) from None
    if not isinstance(raw, dict) or "simulations" not in raw:
        raise ResultsError(f"{path}: not τ² Results JSON (no `simulations` list)")
    try:
        return Tau2Results.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise ResultsError(f"{path}: {loc}: {err['msg']}") from None


def episode_to_simulation(ep: Episode) -> dict:
    """One of our episodes as a τ² ``SimulationRun``."""
    info = ep.info
    return {
        "id": ep.id,
        "task_id": ep.task_id,
        "timestamp": info.get("end_time") or now(),
        "start_time": info.get("start_time") or "",
        "end_time": info.get("end_time") or "",
        "duration": float(info.get("duration", 0.0)),
        "termination_reason": info.get("termination_reason", ""),
        "agent_cost": None,
        "user_cost": None,
        "reward_info": info.get("reward_info") or {"reward": ep.reward},
        "messages": to_tau2_messages(ep.messages),
        "trial": ep.trial,
        "seed": info.get("seed"),
    }


def build_tau2_results(
    episodes: Iterable[Episode],
    tasks: list[dict],
    domain: str,
    policy: str,
    agent: str,
    user: str,
    num_trials: int,
    max_steps: int,
    max_errors: int,
    seed: int | None,
) -> dict:
    """τ² Results JSON for a run (``tau2`` can load it with ``Results.load``)."""
    return {
        "timestamp": now(),
        "info": {
            "git_commit": "tracec",
            "num_trials": num_trials,
            "max_steps": max_steps,
            "max_errors": max_errors,
            "user_info": {"implementation": f"tracec:{user}", "llm": None, "llm_args": None},
            "agent_info": {"implementation": "tracec", "llm": agent, "llm_args": None},
            "environment_info": {"domain_name": domain, "policy": policy, "tool_defs": None},
            "seed": seed,
        },
        "tasks": tasks,
        "simulations": [episode_to_simulation(e) for e in episodes],
    }


def write_json_atomic(path: str | Path, payload: Any) -> None:
    """Write JSON through a temporary file and ``os.replace`` (never through a link)."""
    write_atomic(path, json.dumps(payload, indent=2, default=str))
