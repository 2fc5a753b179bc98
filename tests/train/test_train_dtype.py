"""--dtype auto on GPUs without native bf16 (V100, T4) is fp16, and fp16 training scales its loss;
weights load shard by shard (straight onto a GPU), not as one CPU copy per process first."""

from __future__ import annotations

import math

import torch
from train_helpers import small_config

from tracec.llm import device as devmod
from tracec.llm.device import Placement
from tracec.llm.loading import direct_load
from tracec.train.trainer import GRPOTrainer


def test_auto_is_fp16_on_a_gpu_that_only_emulates_bf16(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)  # torch says yes
    for capability, want in (((7, 0), torch.float16), ((7, 5), torch.float16),
                             ((8, 0), torch.bfloat16), ((9, 0), torch.bfloat16)):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index=None, c=capability: c)
        assert devmod.resolve_dtype("auto", "cuda:0") == want, capability
    assert devmod.resolve_dtype("auto", "cpu") == torch.float32


def test_fp16_training_scales_its_loss_and_other_dtypes_do_not(tiny_model_dir, toy_env, tmp_path):
    fp16 = GRPOTrainer(small_config(tiny_model_dir, dtype="fp16"), toy_env, tmp_path / "h")
    assert fp16.scaler.is_enabled() and fp16.scaler.get_scale() > 1
    last = fp16.fit()
    assert math.isfinite(last["loss"]) and fp16.step == 1
    fp32 = GRPOTrainer(small_config(tiny_model_dir), toy_env, tmp_path / "f")
    assert not fp32.scaler.is_enabled()


def test_weights_load_without_a_cpu_copy_per_process():
    assert direct_load(Placement("cpu")) == {"low_cpu_mem_usage": True}
    assert direct_load(Placement("cpu:1")) == {"low_cpu_mem_usage": True}
    assert direct_load(Placement("cuda:3")) == {"low_cpu_mem_usage": True,
                                                "device_map": {"": "cuda:3"}}
