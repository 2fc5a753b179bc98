"""Fixtures for tracec.train tests: one tiny random model per session, the toy env."""

from __future__ import annotations

import pytest
from train_helpers import TOY_ENV


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    from tracec.llm.tiny import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)


@pytest.fixture()
def toy_env():
    from tracec.harness.resolve import resolve_env

    return resolve_env(TOY_ENV)
