"""Shared fixture helpers for the τ² domain tests (subsets in tests/fixtures/tau2, MIT)."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path

FIXTURES = Path(__file__).parents[1] / "fixtures" / "tau2"


@functools.lru_cache(maxsize=None)
def _raw(domain: str) -> dict:
    from tracec.domains import airline, retail

    loader = airline.load_db if domain == "airline" else retail.load_db
    return loader(FIXTURES / f"{domain}_db.json")


def fixture_db(domain: str) -> dict:
    """A fresh copy of the domain's fixture database (``model_dump()`` shape)."""
    return copy.deepcopy(_raw(domain))


def fixture_tasks(domain: str) -> list[dict]:
    return json.loads((FIXTURES / f"{domain}_tasks.json").read_text())


def expected(domain: str) -> dict:
    return json.loads((FIXTURES / f"{domain}_expected.json").read_text())
