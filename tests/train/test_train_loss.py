"""The completion-only loss pass gives the full-logits pass's loss and gradients (1e-5)."""

from __future__ import annotations

import pytest
import torch
from train_helpers import small_config

from tracec.train.grpo import (
    clipped_surrogate,
    selective_log_softmax,
    set_checkpointing,
    token_logprobs,
)
from tracec.train.trainer import build_policy


def full_vocab_logprobs(model, input_ids, attention_mask):
    """The loss pass as it was before completion-only logits (reference)."""
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1].float()
    logp = torch.log_softmax(logits, dim=-1).gather(-1, input_ids[:, 1:, None]).squeeze(-1)
    return torch.cat([torch.zeros_like(logp[:, :1]), logp], dim=1)


def _batch(vocab: int, pad: int):
    """Three right-padded rows: prompts of 40/40/37 tokens, completions of 9/14/5 model+env tokens."""
    g = torch.Generator().manual_seed(3)
    rows = []
    for prompt, completion in ((40, 9), (40, 14), (37, 5)):
        ids = torch.randint(5, vocab, (prompt + completion,), generator=g).tolist()
        mask = [0] * prompt + [int(x) for x in torch.randint(0, 2, (completion,), generator=g)]
        mask[prompt] = 1
        rows.append((ids, mask))
    width = max(len(r[0]) for r in rows)
    ids = torch.tensor([r[0] + [pad] * (width - len(r[0])) for r in rows])
    attn = torch.tensor([[1] * len(r[0]) + [0] * (width - len(r[0])) for r in rows])
    mask = torch.tensor([r[1] + [0] * (width - len(r[1])) for r in rows], dtype=torch.float32)
    start = min(r[1].index(1) for r in rows)
    return ids, attn, mask, start


def _loss_and_grads(model, fn, mask):
    model.zero_grad(set_to_none=True)
    logp = fn()
    old = logp.detach() - 0.05  # ratio != 1 so that clipping and both branches matter
    adv = torch.tensor([1.0, -0.5, 0.7])
    loss, _ = clipped_surrogate(logp, old, adv, mask, 0.2, 0.28, normaliser=11.0)
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    return loss.item(), grads, logp.detach()


@pytest.mark.parametrize("checkpointing", [False, True])
def test_completion_only_loss_and_grads_equal_full_logits(tiny_model_dir, checkpointing):
    tok, model, _ = build_policy(small_config(tiny_model_dir))
    model.train()
    ids, attn, mask, start = _batch(model.config.vocab_size, tok.pad_token_id)
    ref_loss, ref_grads, ref_logp = _loss_and_grads(model, lambda: full_vocab_logprobs(model, ids, attn), mask)
    if checkpointing:
        set_checkpointing(model, True)
    loss, grads, logp = _loss_and_grads(model, lambda: token_logprobs(model, ids, None, start), mask)
    assert start > 30 and abs(loss - ref_loss) <= 1e-5
    torch.testing.assert_close(logp * mask, ref_logp * mask, atol=1e-5, rtol=0)
    assert grads.keys() == ref_grads.keys() and any(g.abs().sum() > 0 for g in grads.values())
    for name in grads:
        torch.testing.assert_close(grads[name], ref_grads[name], atol=1e-5, rtol=1e-4)


def test_selective_log_softmax_is_log_softmax_gather():
    logits = torch.randn(2, 5, 11, dtype=torch.float64)
    idx = torch.randint(0, 11, (2, 5))
    ref = torch.log_softmax(logits, -1).gather(-1, idx[..., None]).squeeze(-1)
    torch.testing.assert_close(selective_log_softmax(logits, idx), ref.float())


def test_start_at_the_end_gives_zeros(tiny_model_dir):
    _, model, _ = build_policy(small_config(tiny_model_dir))
    ids = torch.tensor([[5, 6, 7]])
    assert token_logprobs(model, ids, None, 3).abs().sum() == 0
