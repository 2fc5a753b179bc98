"""Per-stage manifests (``RUN_DIR/<stage>/manifest.json``) and input hashing."""

from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from tracec.outputs import write_atomic

MANIFEST = "manifest.json"
CONFIG_COPY = "run_config.json"  # RUN_DIR/run_config.json: the validated config of the run
Status = Literal["running", "done", "failed", "skipped"]


class StageManifest(BaseModel):
    """What one stage did: status, the hash of its inputs, outputs, timings and any error."""

    stage: str
    status: Status
    inputs_hash: str
    outputs: dict[str, Any] = Field(default_factory=dict)
    started: str = ""
    finished: str = ""
    seconds: float = 0.0
    cpu_seconds: float | None = None  # this process and its children, user + system
    load_start: float | None = None  # 1-min load average when the stage started / finished
    load_end: float | None = None
    attempts: int = 0
    error: str | None = None
    note: str | None = None


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def cpu_now() -> float:
    """CPU seconds used so far by this process and its waited-for children (user + system)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def load_now() -> float | None:
    """The 1-min load average, or None where the OS has none."""
    try:
        return round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):
        return None


def hash_inputs(*parts: Any) -> str:
    """sha256 over JSON-serialised parts (order matters)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode())
        h.update(b"\0")
    return h.hexdigest()


def hash_files(paths: list[Path]) -> str:
    """sha256 over the names and contents of files (sorted by name)."""
    h = hashlib.sha256()
    for p in sorted(paths, key=lambda p: p.name):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def manifest_path(run_dir: Path, stage: str) -> Path:
    return run_dir / stage / MANIFEST


def read_manifest(run_dir: Path, stage: str) -> StageManifest | None:
    path = manifest_path(run_dir, stage)
    if not path.is_file():
        return None
    try:
        return StageManifest.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError:
        return None  # a torn or foreign file: the stage is treated as not run


def write_manifest(run_dir: Path, m: StageManifest) -> Path:
    path = manifest_path(run_dir, m.stage)
    return write_atomic(path, m.model_dump_json(indent=2) + "\n")
