"""Candidate capabilities (the discovery phase's output, TRACE's candidate_capabilities.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError, field_validator

from tracec import files
from tracec.analysis.errors import AnalysisError

NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


class ExampleTrajectory(BaseModel):
    task_id: str
    reward: float | None = None
    note: str = ""


class Candidate(BaseModel):
    """A proposed capability: snake_case name, 2–3 sentence description, example trajectories."""

    name: str
    description: str
    example_trajectories: list[ExampleTrajectory] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _snake(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError(f"capability name {v!r} is not snake_case")
        return v


class CandidateSet(BaseModel):
    candidates: list[Candidate]


def load_candidates(path: Path) -> list[Candidate]:
    """Read ``{"candidates": [...]}`` (or a bare list) with a clear error on bad input."""
    data = files.read_json(path, "candidates file", error=AnalysisError)
    if isinstance(data, list):
        data = {"candidates": data}
    try:
        return CandidateSet.model_validate(data).candidates
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise AnalysisError(f"{path}: bad candidates file at {loc}: {first['msg']}") from None


def write_candidates(candidates: list[Candidate], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = CandidateSet(candidates=candidates).model_dump()
    path.write_text(json.dumps(payload, indent=2) + "\n")
