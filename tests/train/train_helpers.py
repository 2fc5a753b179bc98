"""Helpers shared by the trainer tests (kept out of conftest so imports stay unambiguous)."""

from __future__ import annotations

from pathlib import Path

TOY_ENV = str(Path(__file__).with_name("toy_env.py")) + ":ToyToolEnv"


def small_config(model_dir, **over):
    """A config that trains the tiny model on the toy env in about a second per step."""
    from tracec.train.config import TrainConfig

    base = {"model": str(model_dir), "env": TOY_ENV, "group_size": 4, "groups_per_step": 2, "steps": 1,
                "max_new_tokens": 12, "temperature": 1.0, "checkpoint_every": 1, "learning_rate": 1e-2,
                "lora": {"rank": 4, "alpha": 8, "targets": ["q_proj", "v_proj"]}}
    base.update(over)
    return TrainConfig(**base)
