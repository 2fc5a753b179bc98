"""Shared fixtures for tracec.llm tests: one tiny random model per session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    from tracec.llm.tiny import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)


TOY_ENV = str(__import__("pathlib").Path(__file__).with_name("toy_env.py")) + ":ToyToolEnv"


@pytest.fixture()
def toy_env():
    from tracec.train.envs import resolve_env

    return resolve_env(TOY_ENV)


def small_config(model_dir, **over):
    """A config that trains the tiny model on the toy env in about a second per step."""
    from tracec.train.config import TrainConfig

    base = dict(model=str(model_dir), env=TOY_ENV, group_size=4, groups_per_step=2, steps=1,
                max_new_tokens=12, temperature=1.0, checkpoint_every=1, learning_rate=1e-2,
                lora={"rank": 4, "alpha": 8, "targets": ["q_proj", "v_proj"]})
    base.update(over)
    return TrainConfig(**base)
