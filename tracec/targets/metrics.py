"""Pass rate and τ²'s pass^k over episodes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from math import comb

from pydantic import BaseModel

from tracec.harness.results import Episode


class GroupMetrics(BaseModel):
    group: str
    tasks: int
    episodes: int
    avg_reward: float
    pass_rate: float  # share of successful episodes
    pass_hat_k: dict[int, float]  # τ²'s pass^k, k = 1..min trials per task


def pass_hat_k(successes_per_task: list[tuple[int, int]], k: int) -> float:
    """τ²'s pass^k: mean over tasks of C(c, k) / C(n, k) (n trials, c successes)."""
    vals = [comb(c, k) / comb(n, k) for n, c in successes_per_task if n >= k]
    return sum(vals) / len(vals) if vals else 0.0


def summarize(episodes: Iterable[Episode], group_of=lambda e: e.env) -> list[GroupMetrics]:
    """Per-group metrics plus an ``all`` row when there is more than one group."""
    groups: dict[str, list[Episode]] = defaultdict(list)
    for e in episodes:
        groups[group_of(e)].append(e)
    rows = [_metrics(name, eps) for name, eps in sorted(groups.items())]
    if len(rows) > 1:
        allmetrics = _metrics("all", [e for eps in groups.values() for e in eps], key=True)
        rows.append(allmetrics)
    return rows


def _metrics(name: str, eps: list[Episode], key: bool = False) -> GroupMetrics:
    per_task: dict[str, list[bool]] = defaultdict(list)
    for e in eps:
        per_task[(e.env + "/" if key else "") + e.task_id].append(e.success)
    counts = [(len(v), sum(v)) for v in per_task.values()]
    max_k = min((n for n, _ in counts), default=0)
    n = len(eps)
    return GroupMetrics(
        group=name,
        tasks=len(per_task),
        episodes=n,
        avg_reward=sum(e.reward for e in eps) / n if n else 0.0,
        pass_rate=sum(e.success for e in eps) / n if n else 0.0,
        pass_hat_k={k: pass_hat_k(counts, k) for k in range(1, max_k + 1)},
    )
