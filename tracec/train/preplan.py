"""The memory plan of a training config, checked before any model loads (``tracec run`` before its
first stage): the model's shape from its ``config.json`` alone (weights on the meta device, no
memory), the device's budget (``memory_gb``, else what the device has), and the plan of
:func:`tracec.train.memory.plan_step` at the longest episodes the settings allow.

A prompt's length is not known before the envs exist, so the plan is checked at several
(:data:`PROMPT_SHARES` of ``max_total_tokens``): it must fit at each."""

from __future__ import annotations

from typing import Any

import torch
from transformers import AutoModelForCausalLM

from tracec.train.config import TrainConfig
from tracec.train.memory import MemoryPlan, memory_budget_bytes, plan_step

PROMPT_SHARES = (0.05, 0.25, 0.5)


def shape_of(model_config: Any, targets: list[str], rank: int) -> tuple[int, int, int]:
    """``(parameters, LoRA parameters, the largest tensor's elements)`` of a causal LM built on
    the meta device from ``model_config`` (nothing is allocated)."""
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(model_config)
    n_params = largest = lora = 0
    for _, p in model.named_parameters():
        n_params += p.numel()
        largest = max(largest, p.numel())
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear) and name.rsplit(".", 1)[-1] in targets:
            lora += rank * (mod.in_features + mod.out_features)
    return n_params, lora, largest


def plan_config(config: TrainConfig, model_config: Any, budget: float | None = None) -> MemoryPlan:
    """The largest plan of ``config`` on its device (or ``budget`` bytes); raises
    :class:`~tracec.train.memory.MemoryBudgetError` naming what to change when it cannot fit."""
    place = config.placement
    dtype_bytes = place.dtype_bytes
    n_params, n_lora, largest = shape_of(model_config, config.lora.targets, config.lora.rank)
    on_cpu = place.on_cpu
    if budget is None:
        budget = memory_budget_bytes(config.memory_gb, place)
    context = int(getattr(model_config, "max_position_embeddings", 0) or 4096)
    total = config.max_total_tokens or context
    served = config.server is not None
    worst: MemoryPlan | None = None
    for share in PROMPT_SHARES:
        prompt = max(1, int(total * share))
        plan = plan_step(model_config, n_params, n_lora, prompt_tokens=prompt, episode_tokens=total,
                         distinct_prompts=0 if served else config.groups_per_step,
                         episodes=0 if served else config.group_size * config.groups_per_step,
                         gen_batch=config.gen_batch, micro_batch=config.micro_batch,
                         grad_checkpointing=config.grad_checkpointing, budget=budget,
                         dtype_bytes=dtype_bytes, weight_copies=2 if on_cpu else 1,
                         shared_group=config.group_size if config.loss_forward == "shared" else 0,
                         shared_decode=not served and config.rollout_engine == "kv" and config.group_size > 1,
                         local_rollout=not served,
                         stream_bytes=largest * dtype_bytes if config.weight_sync == "nccl" and served else 0)
        if worst is None or plan.total > worst.total:
            worst = plan
    assert worst is not None
    return worst
