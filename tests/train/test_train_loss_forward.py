"""The shared-prefix loss forward gives the per-row pass's log-probs, loss and gradients (1e-5)."""

from __future__ import annotations

import pytest
import torch
from train_helpers import small_config

from tracec.train.grpo import clipped_surrogate
from tracec.train.loss_forward import block_mask, loss_logprobs, pack_rows, shares_prefix
from tracec.train.memory import shared_update_bytes, update_bytes
from tracec.train.rollout import Rollout
from tracec.train.trainer import GRPOTrainer, build_policy


def _rows(vocab: int, seed: int = 3):
    """Two groups (prompts of 33 and 21 tokens) of 3 and 2 rows, completions of unequal length
    with env tokens (mask 0) inside, and one row with no trained token at all."""
    g = torch.Generator().manual_seed(seed)

    def toks(n):
        return torch.randint(5, vocab, (n,), generator=g).tolist()

    rows = []
    for prompt_len, comps in ((33, (9, 14, 1)), (21, (6, 11))):
        prompt = toks(prompt_len)
        for c in comps:
            mask = [1] + [int(x) for x in torch.randint(0, 2, (c - 1,), generator=g)]
            rows.append((prompt + toks(c), [0] * prompt_len + mask, float(torch.randn(1, generator=g))))
    rows.append((toks(12), [0] * 12, 0.0))
    return rows


def _perturb_lora(model, seed: int = 1) -> None:
    """LoRA B starts at zero (no gradient reaches A); give both a value so every grad matters."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_" in name:
                p.copy_(0.05 * torch.randn(p.shape, generator=g))


def _loss_grads(model, rows, pad, how):
    model.zero_grad(set_to_none=True)
    logp, mask, advs = loss_logprobs(model, rows, pad, "cpu", how)
    old = logp.detach() - 0.05 * mask  # ratio != 1 so that clipping matters
    loss, _ = clipped_surrogate(logp, old, advs, mask, 0.2, 0.28, normaliser=17.0)
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    return loss.item(), grads, (logp * mask).detach()


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_shared_logprobs_loss_and_grads_equal_rows(tiny_model_dir, attn):
    tok, model, _ = build_policy(small_config(tiny_model_dir))
    model.config._attn_implementation = attn
    model.train()
    _perturb_lora(model)
    rows = _rows(model.config.vocab_size)
    assert shares_prefix(rows)
    ref_loss, ref_grads, ref_logp = _loss_grads(model, rows, tok.pad_token_id, "rows")
    loss, grads, logp = _loss_grads(model, rows, tok.pad_token_id, "shared")
    assert abs(loss - ref_loss) <= 1e-5 and ref_loss != 0
    torch.testing.assert_close(logp, ref_logp, atol=1e-5, rtol=0)
    assert any(g.abs().sum() > 0 for n, g in grads.items() if "lora_A" in n)
    for name in ref_grads:
        torch.testing.assert_close(grads[name], ref_grads[name], atol=1e-5, rtol=1e-4)


def test_pack_layout_and_block_mask():
    # prompt [1 2 3]; rows [1 2 3 | 4 5] (trains 4, 5) and [1 2 3 | 6 7 8] (trains 6 and 8)
    rows = [([1, 2, 3, 4, 5], [0, 0, 0, 1, 1], 1.0), ([1, 2, 3, 6, 7, 8], [0, 0, 0, 1, 0, 1], -1.0)]
    p = pack_rows(rows)
    assert p.ids == [1, 2, 3, 4, 6, 7] and p.positions == [0, 1, 2, 3, 3, 4]
    assert p.keep == [2, 3, 2, 5] and p.targets == [4, 5, 6, 8]
    assert p.rows == [0, 0, 1, 1] and p.cols == [3, 4, 3, 5]
    m = block_mask(p, "cpu")[0, 0]
    # token 6 (packed 4) sees the prompt and itself, not row 0's token 4
    assert m[4].tolist() == [True, True, True, False, True, False]
    assert m[5].tolist() == [True, True, True, False, True, True]
    assert m[1].tolist() == [True, True, False, False, False, False]
    add = block_mask(p, "cpu", torch.float32)[0, 0]
    assert add[4, 3] == torch.finfo(torch.float32).min and add[4, 0] == 0


def test_no_shared_prefix_takes_the_rows_path():
    rows = [([1, 2, 3, 4], [0, 0, 1, 1], 1.0), ([1, 9, 3, 4], [0, 0, 1, 1], 1.0), ([5, 6], [0, 0], 0.0)]
    assert not shares_prefix(rows)
    assert shares_prefix(rows + [([1, 2, 3, 7, 7], [0, 0, 1, 0, 1], 0.5)])


def _episodes(vocab: int):
    """Two groups of 4 episodes on 30- and 26-token prompts; rewards with variance."""
    g = torch.Generator().manual_seed(7)
    eps = []
    for group, plen in ((0, 30), (1, 26)):
        prompt = torch.randint(5, vocab, (plen,), generator=g).tolist()
        for i in range(4):
            n = 4 + 3 * i
            mask = [1] + [int(x) for x in torch.randint(0, 2, (n - 1,), generator=g)]
            eps.append(Rollout(seed=group, group=group, hinted=False, prompt_ids=prompt,
                               base_prompt_ids=prompt, messages=[], tools=None,
                               completion_ids=torch.randint(5, vocab, (n,), generator=g).tolist(),
                               env_mask=mask, reward=float(i % 3), done=True))
    return eps


def _run_update(tiny_model_dir, toy_env, out, how, **over):
    from tracec.train.trainer import kept_batch

    cfg = small_config(tiny_model_dir, loss_forward=how, learning_rate=1e-3, **over)
    trainer = GRPOTrainer(cfg, toy_env, out)
    _perturb_lora(trainer.policy)
    grads = []
    step = trainer.optimizer.step

    def recording_step(*a, **k):
        grads.append({n: p.grad.detach().clone() for n, p in trainer.policy.named_parameters()
                      if p.requires_grad})
        return step(*a, **k)

    trainer.optimizer.step = recording_step
    kept = kept_batch(_episodes(trainer.policy.config.vocab_size))
    assert len(kept) == 8
    metrics = trainer.update(kept)
    params = {n: p.detach().clone() for n, p in trainer.policy.named_parameters() if p.requires_grad}
    return metrics, grads, params, trainer._checkpointing


@pytest.mark.parametrize("over", [
    {"micro_batch": 8},
    {"micro_batch": 3, "beta": 0.1},  # micro-batches straddle the two groups
    {"micro_batch": 4, "updates_per_batch": 2, "beta": 0.05},
    {"micro_batch": 5, "grad_checkpointing": True, "updates_per_batch": 2},
], ids=["one-batch", "micro-beta", "two-passes", "checkpointing"])
def test_trainer_update_shared_equals_rows(tiny_model_dir, toy_env, tmp_path, monkeypatch, over):
    from tracec.train import loss_forward

    packed = []
    shared = loss_forward.shared_logprobs
    monkeypatch.setattr(loss_forward, "shared_logprobs", lambda *a: packed.append(1) or shared(*a))
    ref = _run_update(tiny_model_dir, toy_env, tmp_path / "rows", "rows", **over)
    assert not packed
    got = _run_update(tiny_model_dir, toy_env, tmp_path / "shared", "shared", **over)
    assert packed  # the shared pass really ran
    assert got[3] == ref[3] == bool(over.get("grad_checkpointing"))
    for key in ("loss", "clip_frac", "kl", "grad_norm"):
        assert got[0][key] == pytest.approx(ref[0][key], abs=1e-5), key
    assert got[0]["trained_tokens"] == ref[0]["trained_tokens"] > 0
    if over.get("beta"):
        assert ref[0]["kl"] > 0
    assert len(got[1]) == len(ref[1]) == over.get("updates_per_batch", 1)
    for g_got, g_ref in zip(got[1], ref[1]):
        for name in g_ref:
            torch.testing.assert_close(g_got[name], g_ref[name], atol=1e-5, rtol=1e-4)
    for name in ref[2]:
        torch.testing.assert_close(got[2][name], ref[2][name], atol=1e-5, rtol=1e-4)


def test_shared_update_estimate_is_below_rows(tiny_model_dir):
    from transformers import AutoConfig

    cfg = AutoConfig.from_pretrained(str(tiny_model_dir))
    rows = update_bytes(cfg, 8, 774, 32, False)
    shared = shared_update_bytes(cfg, 8, 742, 32, False)
    assert 0 < shared < rows / 3
    assert shared_update_bytes(cfg, 8, 742, 32, False, prompts=2) > shared
