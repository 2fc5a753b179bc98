"""GRPO maths against hand computations."""

from __future__ import annotations

import math

import pytest
import torch

from tracec.train.grpo import batch_advantages, clipped_surrogate, group_advantages


def test_advantages_use_centred_population_std():
    rewards = [1.0, 0.3, 0.0, 0.0]
    mean = 1.3 / 4
    std = math.sqrt(((1 - mean) ** 2 + (0.3 - mean) ** 2 + 2 * mean**2) / 4)
    adv, kept = group_advantages(rewards)
    assert kept
    assert adv == pytest.approx([(r - mean) / std for r in rewards])
    assert sum(adv) == pytest.approx(0.0, abs=1e-12)


def test_identical_rewards_drop_the_group():
    assert group_advantages([0.3, 0.3, 0.3]) == ([0.0, 0.0, 0.0], False)


def test_std_floor_applies_to_tiny_spreads():
    adv, kept = group_advantages([0.0, 1e-4])
    assert kept
    assert adv == pytest.approx([-0.5e-4 / 1e-3, 0.5e-4 / 1e-3])


def test_batch_advantages_per_group():
    res = batch_advantages([1, 0, 0.5, 0.5, 0, 1], [0, 0, 1, 1, 2, 2])
    assert res.kept == [True, True, False, False, True, True]
    assert res.advantages == pytest.approx([1, -1, 0, 0, -1, 1])


def _hand_loss(logp, old, adv, mask, eps, eps_high, denom):
    total = 0.0
    for b in range(len(logp)):
        for t in range(len(logp[b])):
            if not mask[b][t]:
                continue
            ratio = math.exp(logp[b][t] - old[b][t])
            clipped = min(max(ratio, 1 - eps), 1 + eps_high)
            total += -min(ratio * adv[b], clipped * adv[b])
    return total / denom


def test_clipped_surrogate_matches_hand_computation():
    logp = [[-1.0, -0.5, -2.0, -0.1], [-0.3, -3.0, -0.7, -1.2]]
    old = [[-1.5, -0.5, -1.0, -0.1], [-0.1, -2.0, -1.4, -1.2]]  # ratios beyond both clip edges
    mask = [[0, 1, 1, 1], [1, 1, 1, 0]]
    adv = [1.5, -0.8]
    loss, stats = clipped_surrogate(torch.tensor(logp), torch.tensor(old), torch.tensor(adv),
                                    torch.tensor(mask), 0.2, 0.28)
    assert loss.item() == pytest.approx(_hand_loss(logp, old, adv, mask, 0.2, 0.28, 6), rel=1e-6)
    assert stats["tokens"] == 6
    assert 0 < stats["clip_frac"] < 1


def test_normaliser_is_the_whole_batch_so_micro_batches_add_up():
    torch.manual_seed(0)
    logp, old = torch.randn(4, 5), torch.randn(4, 5)
    mask = (torch.rand(4, 5) > 0.3).float()
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5])
    full, _ = clipped_surrogate(logp, old, adv, mask, 0.2, 0.28)
    n = mask.sum().item()
    parts = [clipped_surrogate(logp[i:i + 2], old[i:i + 2], adv[i:i + 2], mask[i:i + 2], 0.2, 0.28,
                               normaliser=n)[0] for i in (0, 2)]
    assert (parts[0] + parts[1]).item() == pytest.approx(full.item(), rel=1e-6)


def test_masked_tokens_get_no_gradient():
    logp = torch.randn(2, 6, requires_grad=True)
    mask = torch.tensor([[0, 1, 1, 0, 0, 1], [1, 0, 0, 1, 1, 0]])
    loss, _ = clipped_surrogate(logp, logp.detach(), torch.tensor([1.0, -2.0]), mask, 0.2, 0.28)
    loss.backward()
    assert (logp.grad[mask == 0] == 0).all()
    assert (logp.grad[mask == 1] != 0).all()


def test_kl_term_is_k3_estimator():
    logp = torch.tensor([[-1.0, -2.0]])
    ref = torch.tensor([[-1.5, -1.0]])
    loss, stats = clipped_surrogate(logp, logp, torch.tensor([0.0]), torch.ones(1, 2), 0.2, 0.28,
                                    ref_logp=ref, beta=0.1)
    k3 = [math.exp(d) - d - 1 for d in (-0.5, 1.0)]
    assert loss.item() == pytest.approx(0.1 * sum(k3) / 2, rel=1e-6)
    assert stats["kl"] == pytest.approx(sum(k3) / 2, rel=1e-6)
