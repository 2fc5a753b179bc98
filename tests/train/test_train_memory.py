"""The memory plan: checkpointing only when needed, a clear error before a step that cannot fit."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from train_helpers import TOY_ENV

from tracec.train.cli import train_cmd
from tracec.train.memory import GIB, MemoryBudgetError, plan_step, update_bytes


class SmolConfig:  # SmolLM2-135M's shape
    hidden_size, num_hidden_layers, intermediate_size = 576, 30, 1536
    num_attention_heads, num_key_value_heads, head_dim, vocab_size = 9, 3, 64, 49152


def _plan(budget_gb, ckpt=None, micro_batch=4, episode_tokens=5600):
    return plan_step(SmolConfig(), 135_000_000, 5_000_000, prompt_tokens=5400,
                     episode_tokens=episode_tokens, distinct_prompts=4, episodes=32, gen_batch=32,
                     micro_batch=micro_batch, grad_checkpointing=ckpt, budget=budget_gb * GIB)


def test_checkpointing_turns_on_only_when_needed_and_fits_8gb():
    big = _plan(1000)
    assert not big.grad_checkpointing and big.kv_rows == 32
    plan = _plan(8)
    assert plan.grad_checkpointing and plan.total <= 8 * GIB and 1 <= plan.kv_rows < 32
    assert update_bytes(SmolConfig(), 4, 5600, 200, False) > 8 * GIB  # why it had to turn on


def test_a_setting_that_cannot_fit_is_a_clear_error():
    with pytest.raises(MemoryBudgetError, match=r"needs about .* GiB .*try .*--micro-batch 2"):
        _plan(8, ckpt=False)
    with pytest.raises(MemoryBudgetError, match="memory-gb"):
        _plan(1)


def test_train_cli_refuses_before_the_step(tiny_model_dir, tmp_path):
    args = [TOY_ENV, "--model", str(tiny_model_dir), "-o", str(tmp_path / "a"), "--steps", "1",
            "-G", "2", "--groups-per-step", "1", "--max-new-tokens", "4", "--memory-gb", "0.1"]
    result = CliRunner().invoke(train_cmd, args)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "a GRPO step on" in result.output and "--memory-gb" in result.output
    assert not (tmp_path / "a" / "metrics.jsonl").exists() or not (tmp_path / "a" / "metrics.jsonl").read_text()


def test_train_cli_naive_engine_and_checkpointing(tiny_model_dir, tmp_path):
    out = tmp_path / "n"
    args = [TOY_ENV, "--model", str(tiny_model_dir), "-o", str(out), "--steps", "1", "-G", "3",
            "--groups-per-step", "1", "--max-new-tokens", "6", "--rollout-engine", "naive",
            "--grad-checkpointing", "--json"]
    result = CliRunner().invoke(train_cmd, args)
    assert result.exit_code == 0, result.output
    cfg = json.loads((out / "tracec.json").read_text())["config"]
    assert cfg["rollout_engine"] == "naive" and cfg["grad_checkpointing"] is True
    bad = CliRunner().invoke(train_cmd, args[:-1] + ["--rollout-engine", "fast"])
    assert bad.exit_code == 2 and "fast" in bad.output


def test_heap_threshold_follows_the_plans_headroom():
    """A step that needs at most half its budget keeps freed memory for reuse (32 MiB mmap
    threshold: no page faults per forward); a tight or unbounded plan returns it at once."""
    from tracec.train.memory import (
        GIB,
        MMAP_THRESHOLD,
        ROOMY_MMAP_THRESHOLD,
        MemoryPlan,
        heap_threshold_for,
    )

    def plan(update_gib: float, budget: float) -> MemoryPlan:
        return MemoryPlan(weights=1.0 * GIB, rollout=0.1 * GIB, update=update_gib * GIB, kv_rows=4,
                          grad_checkpointing=False, budget=budget)

    assert heap_threshold_for(plan(0.5, 8 * GIB)) == ROOMY_MMAP_THRESHOLD  # 2.1 of 8 GiB
    assert heap_threshold_for(plan(4.0, 8 * GIB)) == MMAP_THRESHOLD  # 5.6 of 8 GiB
    assert heap_threshold_for(plan(0.5, float("inf"))) == MMAP_THRESHOLD
    assert MMAP_THRESHOLD == 1 << 20 and ROOMY_MMAP_THRESHOLD == 32 << 20


def test_rows_that_share_their_prompt_budget_only_their_own_tokens():
    """A 5.4k-token prompt, 200 completion tokens: with one copy of the prompt per group a row
    needs ~1/28 of the KV, so a tight budget decodes more rows; a serving engine needs none."""
    def plan(**kw):
        return plan_step(SmolConfig(), 135_000_000, 5_000_000, prompt_tokens=5400,
                         episode_tokens=5600, distinct_prompts=4, episodes=32, gen_batch=32,
                         micro_batch=1, grad_checkpointing=True, budget=6 * GIB, **kw)

    copies, shared = plan(), plan(shared_decode=True)
    assert shared.kv_rows == 32 and copies.kv_rows < 16
    assert shared.rollout < copies.rollout
    served = plan(local_rollout=False)
    assert served.rollout == 0.0 and served.kv_rows == 32
