"""Loading τ²-bench domain data: tasks, train/test splits, policy and the initial database.

The data lives outside the package (τ²-bench is MIT-licensed but large): the user points at a
tau2-bench checkout's ``data/tau2/domains`` directory with ``--tau2-data DIR`` or the
``TRACEC_TAU2_DATA`` environment variable. Each domain is a sub-directory holding
``tasks.json``, ``split_tasks.json``, ``policy.md`` and ``db.json``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tracec import files

ENV_VAR = "TRACEC_TAU2_DATA"
DOMAINS = ("airline", "retail")
SPLITS = ("base", "train", "test")


class DataError(Exception):
    """The τ² data is missing or malformed (a user mistake, reported without a traceback)."""


class Action(BaseModel):
    """One gold tool call of a task."""

    model_config = ConfigDict(extra="allow")

    action_id: str = ""
    requestor: str = "assistant"
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    info: str | None = None
    compare_args: list[str] | None = None


class EvaluationCriteria(BaseModel):
    """What τ² checks at the end of an episode."""

    model_config = ConfigDict(extra="allow")

    actions: list[Action] | None = None
    env_assertions: list[dict] | None = None
    communicate_info: list[str] | None = None
    nl_assertions: list[str] | None = None
    reward_basis: list[str] = Field(default_factory=lambda: ["DB", "COMMUNICATE"])


class UserInstructions(BaseModel):
    """τ²'s structured instructions for the simulated user."""

    model_config = ConfigDict(extra="allow")

    domain: str = ""
    reason_for_call: str = ""
    known_info: str | None = None
    unknown_info: str | None = None
    task_instructions: str = ""

    def render(self) -> str:
        """The scenario text an LLM user is given (same sections as τ²)."""
        parts = [f"Domain: {self.domain}", f"Reason for call:\n{self.reason_for_call}"]
        if self.known_info:
            parts.append(f"Known info:\n{self.known_info}")
        if self.unknown_info:
            parts.append(f"Unknown info:\n{self.unknown_info}")
        parts.append(f"Task instructions:\n{self.task_instructions}")
        return "\n".join(parts)


class UserScenario(BaseModel):
    model_config = ConfigDict(extra="allow")

    persona: str | None = None
    instructions: UserInstructions | str


class Task(BaseModel):
    """A τ²-bench task (the fields tracec uses; others are kept)."""

    model_config = ConfigDict(extra="allow")

    id: str
    description: dict | None = None
    user_scenario: UserScenario
    initial_state: dict | None = None
    evaluation_criteria: EvaluationCriteria | None = None

    @property
    def gold_actions(self) -> list[Action]:
        ec = self.evaluation_criteria
        return list(ec.actions or []) if ec else []

    def instructions(self) -> UserInstructions:
        ins = self.user_scenario.instructions
        if isinstance(ins, str):
            return UserInstructions(task_instructions=ins)
        return ins


SAMPLE = "sample"  # --tau2-data sample: the subset shipped as package data
SAMPLE_DIR = Path(__file__).resolve().parent / "tau2_sample"
_NOTICED: list[bool] = []


def _sample_notice() -> None:
    if not _NOTICED:
        _NOTICED.append(True)
        print(f"note: --tau2-data {SAMPLE}: the small τ²-bench subset shipped with tracec "
              f"({SAMPLE_DIR}; MIT, see its NOTICE.md), not the full benchmark", file=sys.stderr)


def resolve_data_dir(path: str | os.PathLike | None = None) -> Path:
    """The ``domains`` directory from an option, else ``$TRACEC_TAU2_DATA``.

    Accepts the ``domains`` directory itself or a tau2-bench checkout root.
    """
    raw = path if path is not None else os.environ.get(ENV_VAR)
    if not raw:
        raise DataError(
            "no τ² data: pass --tau2-data DIR (a tau2-bench checkout's data/tau2/domains) "
            f"or set {ENV_VAR}; to try the commands, --tau2-data {SAMPLE} uses the few tasks "
            "shipped with tracec"
        )
    if str(raw) == SAMPLE:
        _sample_notice()
        return SAMPLE_DIR
    root = Path(raw).expanduser()
    for cand in (root, root / "data" / "tau2" / "domains"):
        if any((cand / d / "tasks.json").is_file() for d in DOMAINS):
            return cand
    raise DataError(
        f"{root}: not a τ² domains directory (expected {root}/airline/tasks.json or "
        f"{root}/retail/tasks.json)"
    )


def domain_dir(data_dir: Path, domain: str) -> Path:
    d = Path(data_dir) / domain
    if not (d / "tasks.json").is_file():
        raise DataError(f"{d}: no tasks.json for domain {domain!r}")
    return d


def _read_json(path: Path) -> Any:
    return files.read_json(path, "τ² data file", error=DataError)


def load_tasks(data_dir: Path, domain: str, tasks_file: str = "tasks.json") -> list[Task]:
    """All tasks of a domain, in file order."""
    path = domain_dir(data_dir, domain) / tasks_file
    raw = _read_json(path)
    if not isinstance(raw, list):
        raise DataError(f"{path}: expected a JSON list of tasks")
    tasks = []
    for i, item in enumerate(raw):
        try:
            tasks.append(Task.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            raise DataError(f"{path}: task #{i}: {loc}: {first['msg']}") from None
    return tasks


def load_split(data_dir: Path, domain: str, split: str) -> list[str] | None:
    """Task ids of a split (``None`` for ``base`` when no split file exists)."""
    path = domain_dir(data_dir, domain) / "split_tasks.json"
    if not path.is_file():
        if split == "base":
            return None
        raise DataError(f"{path}: no split file, so split {split!r} is unknown")
    splits = _read_json(path)
    if split not in splits:
        raise DataError(f"{path}: unknown split {split!r} (have: {', '.join(sorted(splits))})")
    return [str(x) for x in splits[split]]


def select_tasks(
    data_dir: Path,
    domain: str,
    split: str = "test",
    task_ids: list[str] | None = None,
    limit: int | None = None,
    tasks_file: str = "tasks.json",
) -> list[Task]:
    """Tasks of ``split`` (or the explicit ``task_ids``), at most ``limit`` of them."""
    tasks = load_tasks(data_dir, domain, tasks_file)
    by_id = {t.id: t for t in tasks}
    if task_ids:
        missing = [t for t in task_ids if t not in by_id]
        if missing:
            raise DataError(f"{domain}: unknown task id(s): {', '.join(missing)}")
        chosen = [by_id[t] for t in task_ids]
    else:
        ids = load_split(data_dir, domain, split)
        chosen = tasks if ids is None else [by_id[i] for i in ids if i in by_id]
    return chosen[:limit] if limit is not None else chosen


def load_policy(data_dir: Path, domain: str) -> str:
    path = domain_dir(data_dir, domain) / "policy.md"
    return files.read_text(path, "τ² policy", error=DataError)


def db_path(data_dir: Path, domain: str) -> Path:
    path = domain_dir(data_dir, domain) / "db.json"
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    return path
