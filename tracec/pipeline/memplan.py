"""The train stage's memory plan, checked before stage one: a GPU config that cannot fit its
device fails in seconds, not after the stages before training have run."""

from __future__ import annotations

from collections.abc import Callable

from tracec.llm.loading import ModelNotPrepared, resolve_model
from tracec.pipeline.config import RunConfig
from tracec.train.config import TrainConfig


def train_settings(cfg: RunConfig) -> dict:
    """``train.settings`` as the train stage uses them: on a GPU, an unset ``memory_gb`` is the
    device's memory (TrainConfig's 8 GiB default is the CPU's)."""
    settings = {"seed": cfg.seed, **cfg.train.settings}
    if not cfg.placement.on_cpu:
        settings.setdefault("memory_gb", None)
    return settings


def check_train_memory(cfg: RunConfig, log: Callable[[str], None]) -> str | None:
    """The worst plan of the train stage on ``cfg.device``, described (None on CPU, where every
    step plans with its real lengths, and where the base's config.json cannot be read here).
    Raises :class:`~tracec.train.memory.MemoryBudgetError` when it cannot fit."""
    if cfg.placement.on_cpu:
        return None
    from transformers import AutoConfig

    from tracec.train.preplan import plan_config

    config = TrainConfig(model=cfg.model.base, env="plan", device=cfg.device, **train_settings(cfg))
    try:
        model_config = AutoConfig.from_pretrained(resolve_model(cfg.model.base))
    except (OSError, ValueError, ModelNotPrepared) as exc:
        log(f"memory plan not checked before stage one: cannot read {cfg.model.base}'s config "
            f"({' '.join(str(exc).split())[:160]})")
        return None
    return plan_config(config, model_config).describe()
