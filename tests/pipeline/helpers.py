"""Shared settings of the pipeline tests: the whole loop on the tiny model in CI time."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TAU2 = ROOT / "tests" / "fixtures" / "tau2" / "targets"
SPECS = ROOT / "tests" / "fixtures" / "pipeline" / "specs"


def tiny_run_config(model_dir: Path, **over) -> dict:
    """A run config dict: 1 train + 1 test task, 1 GRPO step per adapter, 1 gate step."""
    cfg = {
        "name": "tiny",
        "target": {"domain": "airline", "data_dir": str(TAU2), "train_tasks": 1, "test_tasks": 1,
                   "max_turns": 2, "batch_size": 2},
        "model": {"base": str(model_dir), "max_new_tokens": 4},
        # the fixture specs are toolsandbox envs (short prompts); the target is τ² airline
        "specs": {"dir": str(SPECS), "train_all_specs": True, "match_domain": False,
                  "check_seeds": 2},
        "train": {"settings": {"steps": 1, "group_size": 2, "groups_per_step": 1,
                               "max_new_tokens": 4, "max_turns": 1, "max_total_tokens": 12000,
                               "lora": {"rank": 2, "alpha": 4, "targets": ["q_proj", "v_proj"]}}},
        "compose": {"demo_episodes": 1, "max_steps": 1, "batch_size": 1, "max_length": 12000},
    }
    for key, value in over.items():
        cfg[key] = {**cfg.get(key, {}), **value} if isinstance(value, dict) else value
    return cfg


def to_toml(data: dict, prefix: str = "") -> str:
    """A small TOML writer for run-config dicts (tables, scalars, lists, inline tables)."""

    def value(v) -> str:
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        return json.dumps(v)

    scalars = [f"{k} = {value(v)}" for k, v in data.items()
               if not isinstance(v, dict) or (prefix and k == "lora")]
    lines = ([f"[{prefix}]"] if prefix else []) + scalars
    for k, v in data.items():
        if isinstance(v, dict) and not (prefix and k == "lora"):
            lines.append(to_toml(v, f"{prefix}.{k}" if prefix else k))
    return "\n".join(lines) + "\n"
