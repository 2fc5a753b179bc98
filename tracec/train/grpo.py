"""GRPO maths: group advantages, dropped groups, the clipped surrogate and its token normaliser.

Pure functions over tensors/lists so that tests can check them against a hand computation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

STD_FLOOR = 1e-3
SAME_REWARD_TOL = 1e-9


@dataclass(frozen=True)
class GroupAdvantages:
    """Per-episode advantages and which groups survive (non-identical rewards)."""

    advantages: list[float]
    kept: list[bool]  # per episode: its group has reward variance

    @property
    def kept_groups(self) -> int:
        return sum(1 for k in self.kept if k)


def group_advantages(rewards: list[float]) -> tuple[list[float], bool]:
    """``(r - mean) / max(std, 1e-3)`` with the centred (population) std; ``kept`` is False when
    every reward is the same, so the group carries no learning signal and is dropped."""
    n = len(rewards)
    mean = sum(rewards) / n
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / n)
    if max(rewards) - min(rewards) <= SAME_REWARD_TOL:
        return [0.0] * n, False
    return [(r - mean) / max(std, STD_FLOOR) for r in rewards], True


def batch_advantages(rewards: list[float], groups: list[int]) -> GroupAdvantages:
    """Advantages for a batch whose episodes carry a group id."""
    advantages = [0.0] * len(rewards)
    kept = [False] * len(rewards)
    for g in sorted(set(groups)):
        idx = [i for i, gi in enumerate(groups) if gi == g]
        adv, keep = group_advantages([rewards[i] for i in idx])
        for i, a in zip(idx, adv):
            advantages[i] = a
            kept[i] = keep
    return GroupAdvantages(advantages, kept)


def set_checkpointing(model, on: bool) -> None:
    """Turn activation (gradient) checkpointing on/off, non-reentrant, across transformers versions."""
    target = model.get_base_model() if hasattr(model, "get_base_model") else model
    if on:
        if hasattr(target, "activation_checkpointing_enable"):
            target.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
        else:
            target.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    elif hasattr(target, "activation_checkpointing_disable"):
        target.activation_checkpointing_disable()
    else:
        target.gradient_checkpointing_disable()


def selective_log_softmax(logits: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``log_softmax(logits)[..., index]`` row by row as ``logit - logsumexp``, in fp32, without a
    full-vocabulary log-probability tensor; ``logits`` ``[B, K, V]``, ``index`` ``[B, K]``."""
    rows = []
    for lg, ix in zip(logits, index):
        lg = lg.float()
        rows.append(lg.gather(-1, ix[:, None]).squeeze(-1) - torch.logsumexp(lg, dim=-1))
    return torch.stack(rows)


def token_logprobs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                   start: int = 1) -> torch.Tensor:
    """Log-probability of each token given its prefix; shape ``[B, T]``, 0 before ``start``.

    Only positions ``start-1 … T-2`` go through the LM head (``logits_to_keep``): pass the first
    completion position of the batch as ``start`` and prompt positions cost no logits at all.
    Rows are right-padded, so ``attention_mask`` may be None (causal attention never looks at
    the padding after a row's last token)."""
    width = input_ids.shape[1]
    start = max(1, min(int(start), width))
    if start == width:
        return torch.zeros(input_ids.shape, dtype=torch.float32, device=input_ids.device)
    out = model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=width - start + 1)
    logp = selective_log_softmax(out.logits[:, :-1], input_ids[:, start:])
    return torch.cat([torch.zeros_like(logp[:, :1]).expand(-1, start), logp], dim=1)


def clipped_surrogate(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor,
                      mask: torch.Tensor, epsilon: float, epsilon_high: float,
                      ref_logp: torch.Tensor | None = None, beta: float = 0.0,
                      normaliser: float | None = None) -> tuple[torch.Tensor, dict[str, float]]:
    """Token-level GRPO/DAPO loss.

    ``logp``/``old_logp``/``mask``: ``[B, T]``; ``advantages``: ``[B]``. Per token
    ``-min(ρA, clip(ρ, 1-ε, 1+ε_high)A) + β·KL`` (k3 estimator to ``ref_logp``), summed over
    masked tokens and divided by ``normaliser`` (the kept model tokens of the whole optimiser
    batch, so that micro-batches add up; defaults to this batch's mask sum).
    """
    mask = mask.to(logp.dtype)
    ratio = torch.exp(logp - old_logp)
    adv = advantages[:, None].to(logp.dtype)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - epsilon, 1.0 + epsilon_high) * adv
    per_token = -torch.minimum(unclipped, clipped)
    kl = torch.zeros_like(per_token)
    if ref_logp is not None and beta > 0:
        d = ref_logp - logp
        kl = torch.exp(d) - d - 1.0
        per_token = per_token + beta * kl
    denom = float(normaliser) if normaliser is not None else float(mask.sum().item())
    denom = max(denom, 1.0)
    loss = (per_token * mask).sum() / denom
    with torch.no_grad():
        n = max(float(mask.sum().item()), 1.0)
        is_clipped = ((ratio < 1.0 - epsilon) & (adv < 0)) | ((ratio > 1.0 + epsilon_high) & (adv > 0))
        stats = {"clip_frac": float((is_clipped.to(mask.dtype) * mask).sum().item() / n),
                 "kl": float((kl * mask).sum().item() / n),
                 "tokens": float(mask.sum().item())}
    return loss, stats
