"""Shared fixtures: a small subset of τ²-bench airline/retail (MIT, see fixtures/tau2/targets/LICENSE)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracec.targets.world import Tau2World, load_world

DATA = Path(__file__).resolve().parents[1] / "fixtures" / "tau2" / "targets"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@pytest.fixture(scope="session")
def airline() -> Tau2World:
    return load_world("airline", DATA)


@pytest.fixture(scope="session")
def retail() -> Tau2World:
    return load_world("retail", DATA)
