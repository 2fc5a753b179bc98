"""The acceptance bands of calibration with a model (``tracec check --model``), in a module of
their own: `tracec check` reads their defaults for its options without importing the agents
and runners that calibration needs (:mod:`tracec.checks.calibrate`)."""

from __future__ import annotations

from pydantic import BaseModel


class Bands(BaseModel):
    """Acceptance bands (defaults: the TRACE reference's)."""

    mean_reward: tuple[float, float] = (0.2, 0.6)
    success_rate: tuple[float, float] = (0.2, 0.6)
    min_std: float = 0.05
    max_all_success: float = 0.2
    max_all_zero: float = 0.2
    max_constant: float = 0.5
    min_informative: float = 0.5
