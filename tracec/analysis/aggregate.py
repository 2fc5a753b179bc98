"""Aggregate labeling runs into the capability selection (design.md, "File formats → Selection").

Per run r and capability c: Cov = LF/total_failed, ER⁻ = LF/(LF+PF), ER⁺ = LP/(LP+PP)
(0 on a zero denominator), Δ = ER⁻ − ER⁺; r passes c when Cov ≥ ρ and Δ ≥ δ; c is selected
when it passes in ≥ K runs. Means and population stds over runs (numpy, float-equal to the
TRACE reference).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from tracec import files
from tracec.analysis.errors import AnalysisError
from tracec.analysis.runs import CapabilityLabels, LabelRun

N_EXAMPLES = 8


class Selection(BaseModel):
    """One entry of ``capabilities.json``."""

    skill: str
    description: str
    mean_cov: float
    std_cov: float
    mean_delta: float
    std_delta: float
    n_runs_passed: int
    n_runs_total: int
    passes_consistency: bool
    example_failed_cases: list[str]


class Thresholds(BaseModel):
    rho: float = 0.10
    delta: float = 0.20
    k: int = 8


def _ratio(num: int, den: int) -> float:
    return num / den if den else 0.0


def run_metrics(cl: CapabilityLabels, total_failed: int) -> tuple[float, float]:
    """(Cov, Δ) of one capability in one run."""
    lf, pf = len(cl.lacking_failed), len(cl.present_failed)
    lp, pp = len(cl.lacking_passed), len(cl.present_passed)
    cov = _ratio(lf, total_failed)
    delta = _ratio(lf, lf + pf) - _ratio(lp, lp + pp)
    return cov, delta


def aggregate(
    runs: list[LabelRun],
    descriptions: dict[str, str] | None = None,
    thresholds: Thresholds | None = None,
    include_all: bool = False,
) -> list[Selection]:
    """Selected capabilities (all of them with ``include_all``), sorted by mean Δ descending.

    A capability missing from a run counts as all-NA there (Cov = Δ = 0).
    """
    if not runs:
        raise AnalysisError("no labeling runs to aggregate")
    th = thresholds or Thresholds(k=min(Thresholds().k, len(runs)))
    if not 1 <= th.k <= len(runs):
        raise AnalysisError(f"--k {th.k}: the runs that must pass is between 1 and the number "
                            f"of runs ({len(runs)})")
    descriptions = descriptions or {}
    names: list[str] = []
    for run in runs:
        names += [n for n in run.labels if n not in names]
    out: list[Selection] = []
    for name in names:
        covs, deltas, passed, lacking = [], [], 0, set()
        for run in runs:
            cl = run.labels.get(name, CapabilityLabels())
            cov, delta = run_metrics(cl, run.totals.total_failed)
            covs.append(cov)
            deltas.append(delta)
            passed += int(cov >= th.rho and delta >= th.delta)
            lacking |= set(cl.lacking_failed)
        entry = Selection(
            skill=name,
            description=descriptions.get(name, ""),
            mean_cov=float(np.mean(covs)),
            std_cov=float(np.std(covs)),
            mean_delta=float(np.mean(deltas)),
            std_delta=float(np.std(deltas)),
            n_runs_passed=passed,
            n_runs_total=len(runs),
            passes_consistency=passed >= th.k,
            example_failed_cases=sorted(lacking)[:N_EXAMPLES],
        )
        if include_all or entry.passes_consistency:
            out.append(entry)
    out.sort(key=lambda e: e.mean_delta, reverse=True)
    return out


def write_selection(entries: list[Selection], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([e.model_dump() for e in entries], indent=2) + "\n")


def load_selection(path: Path) -> list[Selection]:
    """Read a ``capabilities.json`` (extra keys such as ``status`` are ignored)."""
    data = files.read_json(path, "capabilities file", error=AnalysisError)
    if not isinstance(data, list):
        raise AnalysisError(f"{path}: capabilities.json must hold a list of capabilities")
    out = []
    for i, item in enumerate(data):
        try:
            out.append(Selection.model_validate(item))
        except Exception as exc:  # pydantic ValidationError
            raise AnalysisError(f"{path}: entry {i}: {str(exc).splitlines()[0]}") from None
    return out
