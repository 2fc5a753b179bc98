from __future__ import annotations

import os

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def world(tmp_path_factory):
    """(base model dir, [adapter dirs]) shared by the whole compose test session."""
    from tests.compose.compose_helpers import make_world

    return make_world(tmp_path_factory.mktemp("compose_world"))
