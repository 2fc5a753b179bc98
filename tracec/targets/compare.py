"""Paired comparison of two evaluation runs (``tracec compare RUN_A RUN_B``).

Both runs must hold the same episodes: the same (env, task, trial) keys, e.g. the same
``--env``, ``--tasks``, ``--env-seeds`` and ``--trials``. The unit of resampling is a task
(``env``, ``task_id``): its trials are averaged first, so repeated trials of one task never count
as independent evidence. The interval is the percentile interval of a paired bootstrap over
tasks: ``resamples`` draws (default 10,000, seeded) of n tasks with replacement, each giving the
mean of the per-task differences B − A.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tracec.harness.identity import changes
from tracec.harness.results import Episode, ResultsError, read_episodes
from tracec.harness.runner import dedupe

DEFAULT_RESAMPLES = 10_000
TRAJECTORIES = "trajectories.jsonl"


class UnpairedRuns(ValueError):
    """The two runs do not hold the same episodes."""


class Interval(BaseModel):
    diff: float  # mean of B − A
    lo: float
    hi: float

    @property
    def excludes_zero(self) -> bool:
        return self.lo > 0 or self.hi < 0


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q``-quantile of sorted data by linear interpolation (numpy's default rule)."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def paired_bootstrap(a: Sequence[float], b: Sequence[float], resamples: int = DEFAULT_RESAMPLES,
                     seed: int = 0, confidence: float = 0.95) -> Interval:
    """Mean of ``b[i] − a[i]`` and its paired-bootstrap percentile interval.

    Each resample draws ``n`` indices uniformly with replacement (``random.Random(seed)``) and
    takes the mean difference over them; the interval is the ``(1−c)/2`` and ``(1+c)/2``
    quantiles of the ``resamples`` means."""
    if len(a) != len(b):
        raise ValueError(f"paired samples must have the same length ({len(a)} vs {len(b)})")
    if not a:
        raise ValueError("no paired samples")
    if resamples < 1 or not 0 < confidence < 1:
        raise ValueError("resamples must be >= 1 and confidence in (0, 1)")
    d = [y - x for x, y in zip(a, b)]
    n = len(d)
    rng = random.Random(seed)
    means = sorted(sum(d[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    tail = (1 - confidence) / 2
    return Interval(diff=sum(d) / n, lo=percentile(means, tail), hi=percentile(means, 1 - tail))


def load_run(path: str | Path) -> tuple[str, list[Episode]]:
    """``(label, episodes)`` of a ``tracec eval`` output dir or a trajectory JSONL file."""
    path = Path(path)
    file = path / TRAJECTORIES if path.is_dir() else path
    if not file.exists():
        raise ResultsError(f"{path}: no {TRAJECTORIES} (expected a `tracec eval --out` folder or a JSONL file)")
    episodes = dedupe(read_episodes(file))
    if not episodes:
        raise ResultsError(f"{file}: no episodes")
    agents = sorted({str(e.info.get("agent")) for e in episodes if e.info.get("agent")})
    # runs are named by their folder (two runs of one agent must stay apart), the agent after it
    return (f"{path} ({', '.join(agents)})" if agents else str(path)), episodes


def _per_task(episodes: list[Episode]) -> dict[tuple[str, str], tuple[float, float]]:
    """(env, task) -> (mean success, mean reward) over its trials."""
    acc: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for e in episodes:
        acc.setdefault((e.env, e.task_id), []).append((float(e.success), e.reward))
    return {k: (sum(s for s, _ in v) / len(v), sum(r for _, r in v) / len(v)) for k, v in acc.items()}


def _check_paired(a: list[Episode], b: list[Episode], name_a: str, name_b: str) -> None:
    ka = {(e.env, e.task_id, e.trial) for e in a}
    kb = {(e.env, e.task_id, e.trial) for e in b}
    if ka == kb:
        return
    only_a, only_b = sorted(ka - kb), sorted(kb - ka)

    def show(keys: list) -> str:
        return ", ".join(f"{env}/{task}/{trial}" for env, task, trial in keys[:3]) + (" …" if len(keys) > 3 else "")

    parts = []
    if only_a:
        parts.append(f"{len(only_a)} only in {name_a} ({show(only_a)})")
    if only_b:
        parts.append(f"{len(only_b)} only in {name_b} ({show(only_b)})")
    raise UnpairedRuns(f"runs are not paired: {'; '.join(parts)}. Evaluate both on the same "
                       "--env/--target, --tasks, --env-seeds and --trials")


def env_changes(a: list[Episode], b: list[Episode]) -> list[str]:
    """``env: key old → new`` for each env whose recorded version differs between the runs, or
    between two episodes of one run (a file that mixes two versions)."""
    def versions(eps: list[Episode]) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = {}
        for e in eps:
            v = e.info.get("env_version")
            if isinstance(v, dict) and v not in out.setdefault(e.env, []):
                out[e.env].append(v)
        return out

    va, vb = versions(a), versions(b)
    moved = [f"{env}: {c}" for env in sorted(va.keys() & vb.keys())
             for c in changes(va[env][0], vb[env][0])]
    for side, vs in (("A", va), ("B", vb)):
        moved += [f"{env} (within {side}): {c}" for env in sorted(vs) for v in vs[env][1:]
                  for c in changes(vs[env][0], v)]
    return moved


def _group(name: str, keys: list[tuple[str, str]], ta: dict, tb: dict, resamples: int,
           seed: int) -> dict[str, Any]:
    sa = [ta[k][0] for k in keys]
    sb = [tb[k][0] for k in keys]
    ra = [ta[k][1] for k in keys]
    rb = [tb[k][1] for k in keys]
    ps = paired_bootstrap(sa, sb, resamples, seed)
    pr = paired_bootstrap(ra, rb, resamples, seed)
    return {"group": name, "tasks": len(keys),
            "pass_rate_a": sum(sa) / len(sa), "pass_rate_b": sum(sb) / len(sb),
            "pass_diff": ps.diff, "pass_ci": [ps.lo, ps.hi], "pass_significant": ps.excludes_zero,
            "reward_a": sum(ra) / len(ra), "reward_b": sum(rb) / len(rb),
            "reward_diff": pr.diff, "reward_ci": [pr.lo, pr.hi], "reward_significant": pr.excludes_zero}


def compare_episodes(a: list[Episode], b: list[Episode], name_a: str = "A", name_b: str = "B",
                     resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                     common: bool = False, allow_env_change: bool = False) -> dict[str, Any]:
    """Per-env and overall differences B − A with paired-bootstrap 95 % intervals, and the tasks
    whose success flipped. Raises :class:`UnpairedRuns` unless both hold the same episodes of
    the same env versions (``allow_env_change``: compare anyway, listed in ``env_changes``);
    ``common=True`` compares only the episodes both hold (``dropped`` counts the others)."""
    moved = env_changes(a, b)
    if moved and not allow_env_change:
        raise UnpairedRuns(f"{name_a} and {name_b} ran different env versions ({'; '.join(moved[:3])}"
                           f"{' …' if len(moved) > 3 else ''}); rerun one of them, or pass "
                           "--allow-env-change to compare anyway")
    dropped = 0
    if common:
        ka = {(e.env, e.task_id, e.trial) for e in a}
        kb = {(e.env, e.task_id, e.trial) for e in b}
        dropped = len(ka ^ kb)
        a = [e for e in a if (e.env, e.task_id, e.trial) in kb]
        b = [e for e in b if (e.env, e.task_id, e.trial) in ka]
        if not a:
            raise UnpairedRuns(f"{name_a} and {name_b} share no episodes")
    _check_paired(a, b, name_a, name_b)
    ta, tb = _per_task(a), _per_task(b)
    keys = sorted(ta)
    envs = sorted({env for env, _ in keys})
    groups = [_group(env, [k for k in keys if k[0] == env], ta, tb, resamples, seed) for env in envs]
    overall = _group("all", keys, ta, tb, resamples, seed)
    gained = [f"{env}/{task}" for env, task in keys if tb[(env, task)][0] > ta[(env, task)][0]]
    lost = [f"{env}/{task}" for env, task in keys if tb[(env, task)][0] < ta[(env, task)][0]]
    return {"a": name_a, "b": name_b, "resamples": resamples, "seed": seed, "confidence": 0.95,
            "groups": groups, "overall": overall, "gained": gained, "lost": lost,
            "dropped_unpaired": dropped, "env_changes": moved}


def compare_runs(run_a: str | Path, run_b: str | Path, resamples: int = DEFAULT_RESAMPLES,
                 seed: int = 0, common: bool = False, allow_env_change: bool = False,
                 ) -> dict[str, Any]:
    """:func:`compare_episodes` on two ``tracec eval`` outputs."""
    name_a, a = load_run(run_a)
    name_b, b = load_run(run_b)
    out = compare_episodes(a, b, name_a, name_b, resamples, seed, common, allow_env_change)
    out["run_a"], out["run_b"] = str(run_a), str(run_b)
    return out


def verdict(group: dict[str, Any], metric: str = "pass") -> str:
    """One line in words: the difference and whether it is within noise."""
    lo, hi = group[f"{metric}_ci"]
    d = group[f"{metric}_diff"]
    where = "within noise (CI contains 0)" if lo <= 0 <= hi else ("B better" if lo > 0 else "B worse")
    if metric == "pass":
        return f"{d * 100:+.1f} points [{lo * 100:+.1f}, {hi * 100:+.1f}]: {where}"
    return f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]: {where}"
