"""tracec train under many processes, on CPU stand-ins: a real 2-process gloo DDP run of the tiny
model (``ACCELERATE_USE_CPU=true accelerate launch --multi_gpu --num_processes 2``) against a
one-process replay of the union of its episodes; a rank that keeps no group; resume; launches
that do not form one process group."""

from __future__ import annotations

import json

import pytest
import torch
from ddp_helpers import FLAT_ENV, SMALL_ARGS, launch, replay
from safetensors.torch import load_file
from train_helpers import small_config

from tracec.train.trainer import GRPOTrainer, sampling_seed

pytestmark = pytest.mark.slow  # each launch starts 2 Python processes with torch (~15 s idle)
TIMINGS = ("gen_tokens_per_s", "gen_seconds", "step_seconds", "update_seconds")


def _lora(path):
    return load_file(str(path / "adapter_model.safetensors"))


def _metrics(path):
    return [json.loads(line) for line in (path / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def ddp_run(tiny_model_dir, tmp_path_factory):
    """Two uninterrupted GRPO steps in 2 processes on the flat-seeds env."""
    out = tmp_path_factory.mktemp("ddp") / "full"
    proc, wall = launch([FLAT_ENV, "--model", str(tiny_model_dir), "-o", str(out), "--steps", "2",
                         "--json", *SMALL_ARGS])
    assert proc.returncode == 0, proc.stderr[-3000:]
    print(f"2-process launch, 2 steps: {wall:.1f} s wall")
    return out


def test_ddp_equals_a_one_process_replay_of_the_union(ddp_run, tiny_model_dir, tmp_path):
    from tracec.harness.resolve import resolve_env

    meta = json.loads((ddp_run / "tracec.json").read_text())
    assert meta["processes"] == {"count": 2, "weights_max_abs_diff": 0.0, "weights_compared": "every value"}
    cfg = small_config(tiny_model_dir, env=FLAT_ENV, steps=2)
    saved = {k: v for k, v in meta["config"].items() if k != "env"}
    assert saved == {k: v for k, v in cfg.model_dump(mode="json").items() if k != "env"}

    trainer = GRPOTrainer(cfg, resolve_env(FLAT_ENV), tmp_path / "replay")
    played = replay(trainer, steps=2, world=2)
    ours = {k.replace(".default", ""): v.detach() for k, v in trainer.policy.named_parameters()
            if v.requires_grad}
    theirs = {k.replace(".default", ""): v for k, v in _lora(ddp_run).items()}
    assert ours.keys() == theirs.keys()
    diff = max(float((ours[k] - theirs[k]).abs().max()) for k in ours)
    moved = max(float(theirs[k].abs().max()) for k in theirs if "lora_B" in k)
    print(f"max |DDP - one-process replay| = {diff:.3g} (largest lora_B value {moved:.3g})")
    assert moved > 0 and diff < 1e-6

    rows = _metrics(ddp_run)
    step1 = played[0]
    # rank 1 played seeds 1 and 3 (flat): it kept no group while rank 0 kept some
    assert rows[0]["seeds_per_rank"] == [[e.seed for e in eps[::4]] for eps in step1] == [[0, 2], [1, 3]]
    assert all(e.reward == 0.0 for e in step1[1])
    assert 0 < rows[0]["kept_groups"] <= 2
    # the metrics describe the whole step: every episode of both ranks, the global token count
    for row, by_rank in zip(rows, played):
        every = [e for eps in by_rank for e in eps]
        assert row["episodes"] == len(every) == 16 and row["processes"] == 2
        assert row["reward_mean"] == pytest.approx(sum(e.reward for e in every) / 16)
        assert row["model_tokens"] == sum(e.model_tokens for e in every)
    assert rows[1]["trained_tokens"] == trainer.last_update["trained_tokens"]
    assert rows[1]["loss"] == pytest.approx(trainer.last_update["loss"], abs=1e-6)
    assert meta["seeds"]["grpo_used"] == [0, 7] and meta["seeds"]["grpo_used_per_rank"] == [[0, 6], [1, 7]]


def test_ranks_sample_from_their_own_streams(tiny_model_dir, toy_env, tmp_path):
    """Same env seed, rank 0's and rank 1's sampling streams: different episodes (one stream:
    the same episodes again)."""
    from tracec.train.rollout import RolloutStats
    from tracec.train.trainer import _seed_everything

    trainer = GRPOTrainer(small_config(tiny_model_dir), toy_env, tmp_path / "s")
    trainer._next_seed = lambda: 5
    texts = []
    for rank in (0, 1, 0):
        _seed_everything(sampling_seed(0, 0, rank))
        texts.append([tuple(e.completion_ids) for e in trainer.collect(1, 0, RolloutStats())])
    assert texts[0] == texts[2] and texts[0] != texts[1]
    assert sampling_seed(0, 3, 0) == 7919 * 4  # one process: the stream it always had


def test_ddp_resume_gives_the_uninterrupted_weights(ddp_run, tiny_model_dir, tmp_path):
    out = tmp_path / "cut"
    args = [FLAT_ENV, "--model", str(tiny_model_dir), "-o", str(out), *SMALL_ARGS]
    first, _ = launch([*args, "--steps", "1"])
    assert first.returncode == 0, first.stderr[-3000:]
    state = json.loads((out / "checkpoints" / "last" / "state.json").read_text())
    assert state["processes"] == 2 and [r["seed_cursor"] for r in state["ranks"]] == [2, 2]
    second, wall = launch([*args, "--steps", "2", "--resume"])
    assert second.returncode == 0, second.stderr[-3000:]
    print(f"2-process resume launch (1 more step): {wall:.1f} s wall")
    a, b = _lora(ddp_run), _lora(out)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    strip = [{k: v for k, v in r.items() if k not in TIMINGS} for r in _metrics(ddp_run)]
    assert strip == [{k: v for k, v in r.items() if k not in TIMINGS} for r in _metrics(out)]
    meta = json.loads((out / "tracec.json").read_text())
    assert meta["seeds"]["grpo_used_per_rank"] == [[0, 6], [1, 7]]  # seeds before the resume too


def test_a_launch_without_a_process_group_is_refused(tiny_model_dir, tmp_path):
    """--multi_gpu on a machine without GPUs and without ACCELERATE_USE_CPU=true starts 2
    unrelated processes: refused before the model loads, nothing written."""
    out = tmp_path / "bad"
    proc, _ = launch([FLAT_ENV, "--model", str(tiny_model_dir), "-o", str(out), "--steps", "1",
                      *SMALL_ARGS], cpu=False, extra_env={"CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode != 0
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("Error:")]
    assert errors and all("joined no process group" in ln and "ACCELERATE_USE_CPU=true" in ln
                          for ln in errors)
    assert "Traceback" not in "\n".join(ln for ln in proc.stderr.splitlines() if "tracec" in ln)
    assert not (out / "metrics.jsonl").exists()
