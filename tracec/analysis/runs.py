"""Labeling run files (the TRACE reference format): model, tolerant parsing, writing.

A run: ``{"attempt": n, "totals": {"total_failed", "total_passed"},
"labels": {capability: {"lacking_failed", "present_failed", "na_failed",
"lacking_passed", "present_passed", "na_passed"}}}`` (lists of trajectory ids).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tracec import files
from tracec.analysis.errors import AnalysisError

LABEL_KEYS = (
    "lacking_failed",
    "present_failed",
    "na_failed",
    "lacking_passed",
    "present_passed",
    "na_passed",
)
LABELS = ("NA", "PRESENT", "LACKING")


class CapabilityLabels(BaseModel):
    """One capability's trajectory ids split by label (NA/PRESENT/LACKING) and outcome."""

    lacking_failed: list[str] = Field(default_factory=list)
    present_failed: list[str] = Field(default_factory=list)
    na_failed: list[str] = Field(default_factory=list)
    lacking_passed: list[str] = Field(default_factory=list)
    present_passed: list[str] = Field(default_factory=list)
    na_passed: list[str] = Field(default_factory=list)

    def add(self, traj_id: str, label: str, success: bool) -> None:
        key = f"{label.lower()}_{'passed' if success else 'failed'}"
        getattr(self, key).append(traj_id)


class Totals(BaseModel):
    total_failed: int
    total_passed: int


class LabelRun(BaseModel):
    """One labeling run over all (trajectory, capability) pairs."""

    attempt: int
    totals: Totals
    labels: dict[str, CapabilityLabels]


def build_run(
    attempt: int, outcomes: dict[str, bool], labels: dict[str, dict[str, str]]
) -> LabelRun:
    """A run from ``outcomes`` (id → success) and ``labels`` (capability → id → label)."""
    caps: dict[str, CapabilityLabels] = {}
    for cap, per_traj in labels.items():
        cl = CapabilityLabels()
        for traj_id in sorted(outcomes, key=_natural_key):
            cl.add(traj_id, per_traj.get(traj_id, "NA"), outcomes[traj_id])
        caps[cap] = cl
    n_pass = sum(1 for ok in outcomes.values() if ok)
    return LabelRun(
        attempt=attempt,
        totals=Totals(total_failed=len(outcomes) - n_pass, total_passed=n_pass),
        labels=caps,
    )


def _natural_key(s: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", s))


def write_run(run: LabelRun, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(run.model_dump(), indent=2) + "\n")


# -- tolerant parsing --------------------------------------------------------------------------

_CAP_NAME_KEYS = ("capability", "skill", "name")


def _labels_dict(raw: Any, where: str) -> dict[str, Any]:
    """``labels`` as a mapping; also accepts a list of ``{capability|skill|name: ..., ...}``."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, list):
        out: dict[str, Any] = {}
        for i, item in enumerate(raw):
            name = next((item.get(k) for k in _CAP_NAME_KEYS if isinstance(item, dict)
                         and isinstance(item.get(k), str)), None)
            if name is None:
                raise AnalysisError(f"{where}: labels[{i}] has no capability name")
            out[name] = {k: v for k, v in item.items() if k not in _CAP_NAME_KEYS}
        return out
    raise AnalysisError(f"{where}: 'labels' must be an object of capabilities")


def parse_run(data: Any, where: str, default_attempt: int = 0) -> LabelRun:
    """Validate one run's JSON; ``where`` names the file in error messages."""
    if not isinstance(data, dict):
        raise AnalysisError(f"{where}: a run file must hold a JSON object, not {type(data).__name__}")
    if "labels" not in data:
        raise AnalysisError(f"{where}: missing 'labels' (not a labeling run file?)")
    labels = _labels_dict(data["labels"], where)
    caps: dict[str, CapabilityLabels] = {}
    for cap, lists in labels.items():
        if not isinstance(lists, dict):
            raise AnalysisError(f"{where}: labels[{cap!r}] must be an object of id lists")
        unknown = set(lists) - set(LABEL_KEYS)
        if unknown:
            raise AnalysisError(f"{where}: labels[{cap!r}] has unknown keys {sorted(unknown)}")
        for key in LABEL_KEYS:
            ids = lists.get(key, [])
            if not isinstance(ids, list) or not all(isinstance(x, (str, int)) for x in ids):
                raise AnalysisError(f"{where}: labels[{cap!r}][{key!r}] must be a list of ids")
        caps[cap] = CapabilityLabels(**{k: [str(x) for x in lists.get(k, [])] for k in LABEL_KEYS})
    totals = data.get("totals")
    if totals is None:
        totals = _derive_totals(caps, where)
    if not isinstance(totals, dict) or not all(
        isinstance(totals.get(k), int) and totals[k] >= 0 for k in ("total_failed", "total_passed")
    ):
        raise AnalysisError(f"{where}: 'totals' needs integer total_failed and total_passed")
    attempt = data.get("attempt", default_attempt)
    if not isinstance(attempt, int):
        raise AnalysisError(f"{where}: 'attempt' must be an integer")
    _check_consistent(caps, totals, where)
    return LabelRun(attempt=attempt, totals=Totals(**totals), labels=caps)


def _derive_totals(caps: dict[str, CapabilityLabels], where: str) -> dict[str, int]:
    failed: set[str] = set()
    passed: set[str] = set()
    for cl in caps.values():
        failed |= set(cl.lacking_failed + cl.present_failed + cl.na_failed)
        passed |= set(cl.lacking_passed + cl.present_passed + cl.na_passed)
    if not failed and not passed:
        raise AnalysisError(f"{where}: no 'totals' and no labelled trajectories")
    return {"total_failed": len(failed), "total_passed": len(passed)}


def _check_consistent(caps: dict[str, CapabilityLabels], totals: dict, where: str) -> None:
    for cap, cl in caps.items():
        n_failed = len(cl.lacking_failed) + len(cl.present_failed) + len(cl.na_failed)
        n_passed = len(cl.lacking_passed) + len(cl.present_passed) + len(cl.na_passed)
        if n_failed > totals["total_failed"] or n_passed > totals["total_passed"]:
            raise AnalysisError(
                f"{where}: capability {cap!r} labels {n_failed} failed / {n_passed} passed "
                f"trajectories, more than the totals ({totals['total_failed']} / "
                f"{totals['total_passed']})"
            )


def load_run(path: Path) -> LabelRun:
    """Read and validate one run file."""
    data = files.read_json(path, "run file", error=AnalysisError)
    return parse_run(data, str(path))
