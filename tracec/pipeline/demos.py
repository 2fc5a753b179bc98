"""Oracle demonstrations in capability envs: the gate-training data of the compose stage.

The oracle probe of ``tracec check`` (gold calls, then a report of every value to communicate) is
played in each env for a few seeds; successful episodes are written as trajectory JSONL rows
(``id, env, messages, reward, success, info.tools``), the format ``tracec compose --data`` reads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tracec.runtime.oracle import run_oracle


def oracle_episode(env_cls: type, seed: int) -> dict:
    """Play the oracle on ``env_cls`` at ``seed``; returns one trajectory row."""
    env = env_cls()
    run = run_oracle(env, seed)
    bd = run.info.get("reward_breakdown") or {}
    return {"id": f"{env.capability.name}/{seed}", "task_id": str(seed),
            "env": f"tracec/{env.capability.name}-v0", "messages": run.messages,
            "reward": run.reward, "success": run.reward >= 1.0,
            "info": {"tools": run.reset_info.get("tools") or [], "task": env.instance.task,
                     "reward_breakdown": bd}}


def write_demos(env_classes: dict[str, Any], episodes: int, seed: int, path: Path) -> dict:
    """Oracle rows for every env (``episodes`` seeds each) into ``path``; returns counts."""
    rows = [oracle_episode(cls, seed + i) for cls in env_classes.values() for i in range(episodes)]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, default=str) + "\n" for r in rows)
    return {"episodes": len(rows), "successful": sum(r["success"] for r in rows),
            "trajectories": str(path)}
