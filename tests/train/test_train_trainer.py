"""The GRPO loop on the tiny model: one step, hand-checked loss, resume, adapter reload."""

from __future__ import annotations

import json

import pytest
import torch
from train_helpers import small_config

from tracec.train.rollout import Rollout
from tracec.train.trainer import GRPOTrainer, ResumeError, kept_batch


def _adapter_tensors(path):
    from safetensors.torch import load_file

    return load_file(str(path / "adapter_model.safetensors"))


def test_one_step_end_to_end_and_adapter_reloads(tiny_model_dir, toy_env, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    trainer = GRPOTrainer(small_config(tiny_model_dir, hint_share=0.5), toy_env, tmp_path / "a")
    before = {k: v.clone() for k, v in trainer.policy.named_parameters() if v.requires_grad}
    final = trainer.fit()
    lines = (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0]) == final
    assert final["episodes"] == 8 and final["groups"] == 2
    assert final["kept_groups"] + final["dropped_groups"] == 2
    if final["kept_groups"]:
        after = dict(trainer.policy.named_parameters())
        assert any(not torch.equal(before[k], after[k]) for k in before)
    meta = json.loads((tmp_path / "a" / "tracec.json").read_text())
    assert meta["capability"] == "toy_lookup" and meta["config"]["group_size"] == 4
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    loaded = PeftModel.from_pretrained(base, str(tmp_path / "a"))
    ours = {k.replace(".default", ""): v for k, v in trainer.policy.named_parameters() if "lora_" in k}
    theirs = {k.replace(".default", ""): v for k, v in loaded.named_parameters() if "lora_" in k}
    assert ours.keys() == theirs.keys()
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)


def _episode(group, reward, n_model, prompt=(5, 6, 7)):
    mask = ([1] * n_model) + [0, 0] + [1]
    ids = [10 + (i % 50) for i in range(len(mask))]
    return Rollout(seed=group, group=group, hinted=False, prompt_ids=list(prompt),
                   base_prompt_ids=list(prompt), messages=[], tools=None, completion_ids=ids,
                   env_mask=mask, reward=reward, done=True)


def test_update_loss_is_hand_computed_and_flat_groups_do_not_dilute(tiny_model_dir, toy_env, tmp_path):
    learning = [_episode(0, 1.0, 3), _episode(0, 0.0, 6)]
    flat = [_episode(1, 0.3, 9), _episode(1, 0.3, 2)]
    # advantages of group 0: (1-0.5)/0.5 = +1, -1; model tokens 3+1 and 6+1
    expected = -(1.0 * 4 + -1.0 * 7) / (4 + 7)
    results = []
    for batch in (learning + flat, learning):
        trainer = GRPOTrainer(small_config(tiny_model_dir), toy_env, tmp_path / f"u{len(batch)}")
        kept = kept_batch(batch)
        assert [a for _, a in kept] == pytest.approx([1.0, -1.0])
        out = trainer.update(kept)
        assert out["loss"] == pytest.approx(expected, rel=1e-5)
        assert out["trained_tokens"] == 11
        results.append({k: v.detach().clone() for k, v in trainer.policy.named_parameters()
                        if v.requires_grad})
    assert all(torch.equal(results[0][k], results[1][k]) for k in results[0])


def test_resume_matches_uninterrupted_run(tiny_model_dir, toy_env, tmp_path):
    GRPOTrainer(small_config(tiny_model_dir, steps=3), toy_env, tmp_path / "full").fit()
    GRPOTrainer(small_config(tiny_model_dir, steps=2), toy_env, tmp_path / "cut").fit()  # "killed"
    resumed = GRPOTrainer(small_config(tiny_model_dir, steps=3), toy_env, tmp_path / "cut")
    resumed.fit(resume=True)
    a, b = _adapter_tensors(tmp_path / "full"), _adapter_tensors(tmp_path / "cut")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    strip = ("gen_tokens_per_s", "gen_seconds", "step_seconds", "update_seconds")

    def rows(d):
        return [{k: v for k, v in json.loads(ln).items() if k not in strip}
                for ln in (tmp_path / d / "metrics.jsonl").read_text().splitlines()]

    assert rows("full") == rows("cut")
    assert any(r["kept_groups"] for r in rows("full"))


def test_resume_refuses_changed_settings(tiny_model_dir, toy_env, tmp_path):
    GRPOTrainer(small_config(tiny_model_dir), toy_env, tmp_path / "r").fit()
    other = GRPOTrainer(small_config(tiny_model_dir, steps=2, group_size=6), toy_env, tmp_path / "r")
    with pytest.raises(ResumeError, match="group_size"):
        other.fit(resume=True)


class _FlatEnv:
    """Wraps the toy env so every episode earns the same reward."""

    def __init__(self, factory):
        self.env = factory()

    def reset(self, **kw):
        return self.env.reset(**kw)

    def step(self, action):
        obs, _, _term, trunc, info = self.env.step(action)
        return obs, 0.5, True, trunc, info

    def close(self):
        pass


def test_flat_groups_are_dropped_counted_and_resampled(tiny_model_dir, toy_env, tmp_path):
    from dataclasses import replace

    flat = replace(toy_env, factory=lambda: _FlatEnv(toy_env.factory))
    cfg = small_config(tiny_model_dir, resample_dropped=True, max_resample_rounds=1)
    trainer = GRPOTrainer(cfg, flat, tmp_path / "f")
    before = {k: v.clone() for k, v in trainer.policy.named_parameters() if v.requires_grad}
    m = trainer.fit()
    assert (m["groups"], m["kept_groups"], m["dropped_groups"], m["resample_rounds"]) == (4, 0, 4, 1)
    assert m["kept_share"] == 0.0 and m["loss"] == 0.0 and m["trained_tokens"] == 0
    assert all(torch.equal(before[k], v) for k, v in trainer.policy.named_parameters() if v.requires_grad)


def test_accelerate_single_process_matches_plain_loop(tiny_model_dir, toy_env, tmp_path):
    from accelerate import Accelerator

    cfg = small_config(tiny_model_dir, micro_batch=3)
    GRPOTrainer(cfg, toy_env, tmp_path / "plain").fit()
    m = GRPOTrainer(cfg, toy_env, tmp_path / "acc", accelerator=Accelerator(cpu=True)).fit()
    assert m["kept_groups"] > 0
    a, b = _adapter_tensors(tmp_path / "plain"), _adapter_tensors(tmp_path / "acc")
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
