"""The training memory plan before any model loads (``tracec run`` checks it before stage one):
configs/gpu.toml fits one emulated 80 GB GPU by the plan's own figures; the old settings did not;
the NCCL weight sync's stream is counted; a GPU run's memory_gb comes from the device."""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers import Qwen3Config

import tracec
from tracec.pipeline import memplan
from tracec.pipeline.config import load_config
from tracec.pipeline.runner import RunError, run_pipeline
from tracec.train import preplan
from tracec.train.config import TrainConfig
from tracec.train.memory import GIB, MemoryBudgetError

GPU_TOML = Path(tracec.__file__).resolve().parents[1] / "configs" / "gpu.toml"
H100 = 80e9 * 0.98  # what an 80 GB card has free with nothing else on it
QWEN3_8B = Qwen3Config(vocab_size=151936, hidden_size=4096, intermediate_size=12288,
                       num_hidden_layers=36, num_attention_heads=32, num_key_value_heads=8,
                       head_dim=128, max_position_embeddings=40960, tie_word_embeddings=False)


@pytest.fixture()
def gpu_80gb(monkeypatch):
    """An emulated 80 GB CUDA device: the budget the plan reads, and Qwen3-8B's config.json."""
    seen = []

    def budget(memory_gb, place):
        seen.append((memory_gb, place.device))
        return H100 if memory_gb is None else min(memory_gb * GIB, H100)

    monkeypatch.setattr(preplan, "memory_budget_bytes", budget)
    monkeypatch.setattr(memplan, "resolve_model", lambda name: name)
    monkeypatch.setattr("transformers.AutoConfig.from_pretrained", lambda path: QWEN3_8B)
    return seen


def test_gpu_toml_fits_one_80gb_gpu_by_the_plans_figures(gpu_80gb):
    cfg = load_config(GPU_TOML)
    described = memplan.check_train_memory(cfg, print)
    assert described and "of 73.02 GiB" in described  # the whole device, not the CPU's 8 GiB
    assert gpu_80gb == [(None, "cuda")]
    settings = memplan.train_settings(cfg)
    plan = preplan.plan_config(TrainConfig(model="q", env="e", device="cuda", **settings), QWEN3_8B)
    assert plan.total < H100 and plan.rollout == 0.0  # rollouts on the server
    assert settings["memory_gb"] is None  # what the train stage builds its TrainConfig from


def test_the_old_gpu_settings_are_refused_before_stage_one(gpu_80gb, tmp_path):
    cfg = load_config(GPU_TOML)
    old = {k: v for k, v in cfg.train.settings.items() if k not in ("server", "serving_engine")}
    cfg = cfg.model_copy(update={"train": cfg.train.model_copy(update={"settings": {**old, "micro_batch": 4}})})
    with pytest.raises(RunError, match=r"the train stage cannot fit on cuda: a GRPO step on 16384-token "
                                       r"episodes needs about \d+\.\d GiB"):
        run_pipeline(cfg, tmp_path / "run", log=lambda s: None)
    assert not (tmp_path / "run" / "specs").exists()  # no stage ran


def test_the_nccl_weight_stream_is_counted():
    base = dict(model="q", env="e", device="cuda", memory_gb=None, server="http://x:1",
                micro_batch=1, max_total_tokens=4096)
    lora = preplan.plan_config(TrainConfig(**base), QWEN3_8B, budget=H100)
    nccl = preplan.plan_config(TrainConfig(**base, weight_sync="nccl"), QWEN3_8B, budget=H100)
    largest = 151936 * 4096 * 2  # one bf16 embedding matrix in flight, not a merged model copy
    assert nccl.weights - lora.weights == largest


def test_a_plan_that_cannot_fit_names_the_fix():
    cfg = TrainConfig(model="q", env="e", device="cuda", memory_gb=None, max_total_tokens=16384,
                      micro_batch=4, server="http://x:1")
    with pytest.raises(MemoryBudgetError, match="--micro-batch 2"):
        preplan.plan_config(cfg, QWEN3_8B, budget=H100)
