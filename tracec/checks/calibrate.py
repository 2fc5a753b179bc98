"""Calibration with a model (the TRACE reference's check): S seeds x G samples per env.

Every seed is one group: G episodes that all start from ``reset(seed=s)`` and differ only in
the model's sampling. The statistics (pure functions below) say whether the env is neither too
easy nor too hard for the model and whether its groups carry a GRPO learning signal:

* mean reward and success rate (success: reward >= the env's top level, or a threshold);
* reward std over all episodes, centred population formula ``sqrt(mean((r - mean)^2))``;
* group shares: all-success (every sample succeeds), all-zero (every reward is 0), constant
  (every reward equal: no GRPO advantage), informative (successes and failures mixed);
* pass@k, the unbiased estimator ``1 - C(n-c, k) / C(n, k)`` averaged over groups.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from tracec.checks.bands import Bands
from tracec.harness.agents import make_agent, parse_agent_spec
from tracec.harness.resolve import env_class
from tracec.harness.runner import Job, run_jobs
from tracec.llm.device import Placement

TOL = 1e-9
PASS_KS = (1, 4, 8, 16)
Progress = Callable[[int], None]  # called with the number of episodes just finished


# -- statistics (pure) -------------------------------------------------------------------------

def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples with ``c`` successes (Chen et al. 2021), ``k <= n``."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def population_std(values: Sequence[float]) -> float:
    """Centred population standard deviation (0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


class GroupKind(BaseModel):
    """How one group of samples (one seed) looks to GRPO."""

    all_success: bool
    all_zero: bool
    constant: bool
    informative: bool


def classify_group(rewards: Sequence[float], threshold: float) -> GroupKind:
    """Classify one group's rewards (success: reward >= ``threshold``)."""
    if not rewards:
        raise ValueError("an empty group")
    wins = sum(1 for r in rewards if r >= threshold - TOL)
    return GroupKind(
        all_success=wins == len(rewards),
        all_zero=all(abs(r) <= TOL for r in rewards),
        constant=max(rewards) - min(rewards) <= TOL,
        informative=0 < wins < len(rewards),
    )


class CalibrationStats(BaseModel):
    """What S groups of G samples gave."""

    groups: int
    samples: int  # per group (the smallest group when they differ)
    episodes: int
    threshold: float
    mean_reward: float
    success_rate: float
    reward_std: float
    all_success: float  # shares of groups
    all_zero: float
    constant: float
    informative: float
    pass_at: dict[int, float] = Field(default_factory=dict)  # k -> pass@k, for k <= samples


def summarize(groups: Sequence[Sequence[float]], threshold: float, ks: Sequence[int] = PASS_KS
              ) -> CalibrationStats:
    """The calibration statistics of reward groups (one list of rewards per seed)."""
    groups = [list(g) for g in groups if g]
    if not groups:
        raise ValueError("no episodes to summarize")
    rewards = [r for g in groups for r in g]
    kinds = [classify_group(g, threshold) for g in groups]
    n_min = min(len(g) for g in groups)
    wins = [sum(1 for r in g if r >= threshold - TOL) for g in groups]

    def share(flag: str) -> float:
        return sum(1 for k in kinds if getattr(k, flag)) / len(kinds)

    return CalibrationStats(
        groups=len(groups),
        samples=n_min,
        episodes=len(rewards),
        threshold=threshold,
        mean_reward=sum(rewards) / len(rewards),
        success_rate=sum(wins) / len(rewards),
        reward_std=population_std(rewards),
        all_success=share("all_success"),
        all_zero=share("all_zero"),
        constant=share("constant"),
        informative=share("informative"),
        pass_at={k: sum(pass_at_k(len(g), c, k) for g, c in zip(groups, wins)) / len(groups)
                 for k in ks if k <= n_min},
    )


class BandResult(BaseModel):
    """One band: the measured value, its bounds (None: open) and whether it lies inside."""

    name: str
    value: float
    lo: float | None = None
    hi: float | None = None
    passed: bool

    @property
    def bounds(self) -> str:
        if self.lo is not None and self.hi is not None:
            return f"{self.lo:g}-{self.hi:g}"
        return f">= {self.lo:g}" if self.lo is not None else f"<= {self.hi:g}"


def judge_bands(stats: CalibrationStats, bands: Bands) -> list[BandResult]:
    """Check every band against the statistics."""
    spec: list[tuple[str, float, float | None, float | None]] = [
        ("mean_reward", stats.mean_reward, *bands.mean_reward),
        ("success_rate", stats.success_rate, *bands.success_rate),
        ("reward_std", stats.reward_std, bands.min_std, None),
        ("all_success", stats.all_success, None, bands.max_all_success),
        ("all_zero", stats.all_zero, None, bands.max_all_zero),
        ("constant", stats.constant, None, bands.max_constant),
        ("informative", stats.informative, bands.min_informative, None),
    ]
    out = []
    for name, value, lo, hi in spec:
        ok = (lo is None or value >= lo - TOL) and (hi is None or value <= hi + TOL)
        out.append(BandResult(name=name, value=value, lo=lo, hi=hi, passed=ok))
    return out


# -- the runner --------------------------------------------------------------------------------

class CalibrationReport(BaseModel):
    """Calibration of one env with one model; ``passed`` when every band holds."""

    env: str
    model: str = ""
    seeds: int = 0
    samples: int = 0
    temperature: float | None = None
    stats: CalibrationStats | None = None
    bands: list[BandResult] = Field(default_factory=list)
    rewards: list[list[float]] = Field(default_factory=list)  # per seed, in sample order
    seconds: float = 0.0
    skipped: str = ""  # why it did not run
    error: str = ""

    @property
    def passed(self) -> bool:
        return self.stats is not None and not self.error and all(b.passed for b in self.bands)

    def to_dict(self) -> dict:
        return {**self.model_dump(mode="json"), "passed": self.passed}


def calibrate(
    capability: Any,
    agent: Any,
    seeds: int = 100,
    samples: int = 16,
    success: float | None = None,
    bands: Bands | None = None,
    batch_size: int | None = None,
    first_seed: int = 0,
    progress: Progress | None = None,
    temperature: float | None = None,
) -> CalibrationReport:
    """Run ``agent`` for ``samples`` episodes on each of ``seeds`` seeds and judge the bands.

    Episodes run through :func:`tracec.harness.runner.run_jobs`, ``batch_size`` (default
    ``samples``) in flight. ``success`` defaults to the env's top reward level.
    """
    start = time.perf_counter()
    cls = env_class(capability)
    cap = cls.capability
    bands = bands or Bands()
    threshold = max(cap.levels) if success is None else success
    name = f"tracec/{cap.name}-v0"
    report = CalibrationReport(env=cap.name, model=getattr(agent, "name", ""), seeds=seeds,
                               samples=samples, temperature=temperature)
    jobs = [Job(name, str(s), g, s) for s in range(first_seed, first_seed + seeds) for g in range(samples)]
    episodes = run_jobs(jobs, lambda _: cls(), agent, batch_size=batch_size or samples,
                        on_episode=(lambda _: progress(1)) if progress else None)
    by_seed: dict[str, dict[int, float]] = {}
    for ep in episodes:
        by_seed.setdefault(ep.task_id, {})[ep.trial] = ep.reward
    report.rewards = [[by_seed[str(s)][g] for g in range(samples)]
                      for s in range(first_seed, first_seed + seeds)]
    report.stats = summarize(report.rewards, threshold)
    report.bands = judge_bands(report.stats, bands)
    report.seconds = round(time.perf_counter() - start, 3)
    return report


def build_agent(spec: str, temperature: float = 0.7, max_new_tokens: int = 512,
                concurrency: int = 16, seed: int = 0, device: str = "cpu", dtype: str = "auto") -> Any:
    """An agent for calibration from a ``--model`` spec (see :mod:`tracec.harness.agents`).

    Raises ``AgentSpecError`` for a malformed spec; loading errors propagate.
    """
    kind, _ = parse_agent_spec(spec)
    if kind == "openai":
        opts: dict[str, Any] = {"temperature": temperature, "max_tokens": max_new_tokens,
                                "concurrency": concurrency}
    elif kind in ("local", "composed"):
        opts = {"temperature": temperature, "max_new_tokens": max_new_tokens, "seed": seed,
                "place": Placement.parse(device, dtype)}
    else:  # oracle / scripted: deterministic test agents
        opts = {}
    return make_agent(spec, **opts)
