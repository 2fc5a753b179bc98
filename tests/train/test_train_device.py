"""--device and --dtype: cpu:N trains exactly as cpu, bf16 on CPU, a finite memory budget on
every device, one Error line naming the option for a device or dtype that is not there."""

from __future__ import annotations

import json
import math

import pytest
import torch
from click.testing import CliRunner
from train_helpers import TOY_ENV, small_config

from tracec.llm.device import Placement
from tracec.train.cli import train_cmd
from tracec.train.memory import GIB, memory_budget_bytes, plan_step
from tracec.train.trainer import GRPOTrainer


def _lora(path):
    from safetensors.torch import load_file

    return load_file(str(path / "adapter_model.safetensors"))


def test_cpu_0_trains_the_same_adapter_as_cpu(tiny_model_dir, tmp_path):
    """`--device cpu:0` used to stop at the first rollout (an infinite budget: NaN rows)."""
    args = [TOY_ENV, "--model", str(tiny_model_dir), "--steps", "1", "-G", "3", "--groups-per-step",
            "1", "--max-new-tokens", "6", "--lr", "1e-2", "--json"]
    outs = {}
    for device in ("cpu", "cpu:0"):
        result = CliRunner().invoke(train_cmd, [*args, "-o", str(tmp_path / device), "--device", device])
        assert result.exit_code == 0, result.output
        outs[device] = _lora(tmp_path / device)
    meta = json.loads((tmp_path / "cpu:0" / "tracec.json").read_text())
    assert meta["config"]["device"] == "cpu:0" and meta["config"]["memory_gb"] == 8.0
    a, b = outs["cpu"], outs["cpu:0"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_bf16_on_cpu_trains_and_the_adapter_loads(tiny_model_dir, toy_env, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    trainer = GRPOTrainer(small_config(tiny_model_dir, dtype="bf16"), toy_env, tmp_path / "b")
    base = trainer.policy.get_base_model()
    assert next(base.parameters()).dtype == torch.bfloat16
    lora = {k: v for k, v in trainer.policy.named_parameters() if v.requires_grad}
    assert lora and all(v.dtype == torch.float32 for v in lora.values())  # peft keeps LoRA in fp32
    before = {k: v.detach().clone() for k, v in lora.items()}
    final = trainer.fit()
    assert math.isfinite(final["loss"]) and final["episodes"] == 8
    if final["kept_groups"]:
        assert any(not torch.equal(before[k], v) for k, v in lora.items())
    assert trainer.plan is not None and trainer.plan.budget <= 8 * GIB
    loaded = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model_dir),
                                       str(tmp_path / "b"))
    assert any("lora_" in k for k, _ in loaded.named_parameters())
    assert json.loads((tmp_path / "b" / "tracec.json").read_text())["config"]["dtype"] == "bf16"


def test_memory_budget_is_finite_on_every_device(monkeypatch):
    for device in ("cpu", "cpu:0", "cpu:3"):
        budget = memory_budget_bytes(None, Placement.parse(device))
        assert math.isfinite(budget) and budget > 0
        assert memory_budget_bytes(2.0, Placement.parse(device)) <= 2 * GIB
    # CUDA: what the device has free plus what torch holds there, capped by --memory-gb
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda i=None: (30 * GIB, 80 * GIB))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda i=None: 2 * GIB)
    assert memory_budget_bytes(None, Placement("cuda:1")) == 32 * GIB
    assert memory_budget_bytes(8.0, Placement("cuda:1")) == 8 * GIB
    monkeypatch.setattr("tracec.train.memory._available_bytes", lambda: float("nan"))
    assert math.isfinite(memory_budget_bytes(None, Placement("cpu:0")))  # /proc silent: a finite fallback
    with pytest.raises(ValueError, match="finite"):
        plan_step(None, 1, 1, prompt_tokens=1, episode_tokens=2, distinct_prompts=0, episodes=0,
                  gen_batch=1, micro_batch=1, grad_checkpointing=None, budget=float("inf"))


def test_checkpointing_switches_on_by_itself_on_a_gpu_budget():
    class Qwen06B:  # Qwen3-0.6B's shape
        hidden_size, num_hidden_layers, intermediate_size = 1024, 28, 3072
        num_attention_heads, num_key_value_heads, head_dim, vocab_size = 16, 8, 128, 151936

    def plan(gib):
        return plan_step(Qwen06B(), 600_000_000, 10_000_000, prompt_tokens=3000,
                         episode_tokens=4000, distinct_prompts=8, episodes=64, gen_batch=64,
                         micro_batch=8, grad_checkpointing=None, budget=gib * GIB, dtype_bytes=2,
                         weight_copies=1)

    assert not plan(140).grad_checkpointing
    assert plan(24).grad_checkpointing


@pytest.mark.parametrize("args, needle", [
    (["--device", "gpu"], "Invalid value for '--device': unknown device 'gpu'"),
    (["--device", "cuda"], "Invalid value for '--device': device 'cuda': no CUDA device here"),
    (["--dtype", "fp8"], "Invalid value for '--dtype': unknown dtype 'fp8'"),
])
def test_a_device_or_dtype_that_is_not_here_is_one_error_line(args, needle, tmp_path):
    if "cuda" in args and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    from tracec.checks.cli import check_cmd
    from tracec.compose.cli import compose_cmd
    from tracec.targets.cli import eval_cmd

    for cmd, base in ((train_cmd, [TOY_ENV, "-o", str(tmp_path / "t")]),
                      (eval_cmd, ["--agent", "local:x", "--env", TOY_ENV, "--out", str(tmp_path / "e")]),
                      (compose_cmd, [str(tmp_path)]),
                      (check_cmd, [str(tmp_path), "--model", "local:x"])):
        result = CliRunner().invoke(cmd, [*base, *args])
        errors = [ln for ln in result.output.splitlines() if ln.startswith("Error:")]
        assert result.exit_code == 2 and len(errors) == 1 and needle in errors[0], (cmd.name, result.output)
        assert "Traceback" not in result.output
    assert not (tmp_path / "t").exists() and not (tmp_path / "e").exists()


def test_eval_runs_a_local_model_on_cpu_0_in_bf16(tiny_model_dir, tmp_path):
    from tracec.targets.cli import eval_cmd

    out = tmp_path / "e"
    result = CliRunner().invoke(eval_cmd, [
        "--agent", f"local:{tiny_model_dir}", "--env", TOY_ENV, "--tasks", "2", "--max-new-tokens", "4",
        "--device", "cpu:0", "--dtype", "bf16", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert sum(1 for _ in (out / "trajectories.jsonl").open()) == 2


def test_resume_with_another_number_of_processes_is_refused(tiny_model_dir, toy_env, tmp_path):
    from tracec.train.trainer import ResumeError

    out = tmp_path / "r"
    GRPOTrainer(small_config(tiny_model_dir, steps=1, group_size=2, groups_per_step=1), toy_env, out).fit()
    state_path = out / "checkpoints" / "last" / "state.json"
    state = json.loads(state_path.read_text())
    assert state["processes"] == 1 and state["ranks"][0]["seed_cursor"] == 1
    state_path.write_text(json.dumps({**state, "processes": 2}))
    again = GRPOTrainer(small_config(tiny_model_dir, steps=2, group_size=2, groups_per_step=1), toy_env, out)
    with pytest.raises(ResumeError, match="made by 2 process"):
        again.fit(resume=True)


def test_compose_and_eval_a_composed_model_on_cpu_0_in_bf16(tiny_model_dir, toy_env, tmp_path):
    from tracec.compose.cli import compose_cmd
    from tracec.targets.cli import eval_cmd

    adapter = tmp_path / "a"
    GRPOTrainer(small_config(tiny_model_dir, steps=0), toy_env, adapter).fit()  # a fresh LoRA
    composed = tmp_path / "c"
    made = CliRunner().invoke(compose_cmd, [str(adapter), "--routing", "classifier", "-o", str(composed),
                                            "--device", "cpu:0", "--dtype", "bf16"])
    assert made.exit_code == 0, made.output
    result = CliRunner().invoke(eval_cmd, [
        "--agent", f"composed:{composed}", "--env", TOY_ENV, "--tasks", "1", "--max-new-tokens", "4",
        "--device", "cpu:0", "--dtype", "bf16", "--out", str(tmp_path / "e"), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["episodes"] == 1


def test_world_size_without_a_launcher_and_a_busy_folder_are_refused(tiny_model_dir, tmp_path,
                                                                      monkeypatch):
    import fcntl

    base = [TOY_ENV, "--model", str(tiny_model_dir), "--steps", "1", "-G", "2", "--groups-per-step",
            "1", "--max-new-tokens", "4"]
    monkeypatch.setenv("WORLD_SIZE", "2")
    off = CliRunner().invoke(train_cmd, [*base, "-o", str(tmp_path / "a"), "--accelerate", "off"])
    assert off.exit_code == 1 and "Error: WORLD_SIZE=2 but --accelerate off" in off.output
    monkeypatch.delenv("WORLD_SIZE")
    # a second run on a folder another run is writing (here: its lock held) stops at once
    busy = tmp_path / "busy"
    busy.mkdir()
    with open(busy / ".lock", "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        second = CliRunner().invoke(train_cmd, [*base, "-o", str(busy)])
    assert second.exit_code == 1 and "in use by another tracec process" in second.output
    assert not (busy / "metrics.jsonl").exists()


def test_a_launch_places_each_process_on_its_own_device_of_the_configured_kind(tiny_model_dir):
    """The trainer resolves its Placement once: the config's, or accelerate's local device of the
    same kind in the config's dtype; another kind is one LaunchError naming both."""
    from types import SimpleNamespace

    from tracec.train.trainer import LaunchError

    config = small_config(tiny_model_dir, device="cuda", dtype="bf16")
    placed = GRPOTrainer._placement(config, SimpleNamespace(device=torch.device("cuda", 2)))
    assert placed == Placement("cuda:2", "bf16") and placed.target == "cuda:2"
    assert GRPOTrainer._placement(small_config(tiny_model_dir, device="cpu:1"), None).on_cpu
    with pytest.raises(LaunchError, match="--device cuda but accelerate placed this process on "
                                          "cpu: pass --device cpu"):
        GRPOTrainer._placement(config, SimpleNamespace(device=torch.device("cpu")))
