"""The GRPO LoRA training loop: rollouts → advantages → clipped surrogate → AdamW, with
checkpoints that resume bit-for-bit (adapter, optimiser, RNG states, seed cursor).

A compact loop on TRL's data contract (see docs/training.md for why not ``GRPOTrainer``). It runs
under ``accelerate launch``: each process plays its own groups (seeds offset by process index),
gradients are averaged by DDP and the token normaliser is summed across processes.
"""

from __future__ import annotations

import json
import random
import shutil
import time
import warnings
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from tracec.harness.resolve import EnvTarget
from tracec.llm.loading import load_model, stop_token_ids
from tracec.targets.seeds import HELDOUT_START
from tracec.train.config import SEED_STRIDE, TrainConfig
from tracec.train.grpo import batch_advantages, clipped_surrogate, set_checkpointing, token_logprobs
from tracec.train.memory import (
    MemoryBudgetError,
    MemoryPlan,
    heap_threshold_for,
    limit_heap_retention,
    memory_budget_bytes,
    plan_step,
)
from tracec.train.rollout import ChatRenderer, Episode, RolloutStats, run_episodes, start_group

__all__ = ["GRPOTrainer", "MemoryBudgetError", "PromptTooLong", "ResumeError"]

CHECKPOINTS = "checkpoints"
RESUME_MAY_CHANGE = frozenset({"steps", "checkpoint_every"})  # results do not depend on them


class ResumeError(RuntimeError):
    """A checkpoint that cannot continue this run."""


class PromptTooLong(ValueError):
    """The env's first prompt does not leave room to generate within max_total_tokens."""


@dataclass
class StepResult:
    metrics: dict[str, Any]
    episodes: list[Episode]


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def build_policy(config: TrainConfig):
    """Tokenizer and the base model wrapped with a fresh LoRA adapter (seeded init)."""
    from peft import LoraConfig, get_peft_model

    base, tokenizer, path = load_model(config.model, trainable=True)
    lora = LoraConfig(r=config.lora.rank, lora_alpha=config.lora.alpha,
                      lora_dropout=config.lora.dropout, target_modules=list(config.lora.targets),
                      task_type="CAUSAL_LM")
    _seed_everything(config.seed)
    with warnings.catch_warnings():  # transformers 5 deprecation noise from inside peft
        warnings.simplefilter("ignore", FutureWarning)
        model = get_peft_model(base, lora)
    return tokenizer, model, path


def kept_batch(episodes: list[Episode]) -> list[tuple[Episode, float]]:
    """(episode, advantage) for episodes whose group has reward variance; flat groups vanish."""
    adv = batch_advantages([e.reward for e in episodes], [e.group for e in episodes])
    return [(e, a) for e, a, k in zip(episodes, adv.advantages, adv.kept) if k]


class GRPOTrainer:
    """One capability's GRPO run. ``out_dir`` receives the adapter, metrics and checkpoints."""

    def __init__(self, config: TrainConfig, env: EnvTarget, out_dir: str | Path,
                 accelerator: Any | None = None) -> None:
        self.config = config
        self.env = env
        self.out = Path(out_dir)
        self.accelerator = accelerator
        if config.device == "cpu":
            limit_heap_retention()
        self.tokenizer, model, self.model_path = build_policy(config)
        self.sft_summary: dict[str, Any] | None = None
        if config.init_adapter:  # e.g. continue from an SFT-only run
            from tracec.train.sft import load_init_adapter

            self.sft_summary = load_init_adapter(model, config.init_adapter, config)
        self.optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                           lr=config.learning_rate,
                                           weight_decay=config.weight_decay)
        if accelerator is not None:
            model, self.optimizer = accelerator.prepare(model, self.optimizer)
        self.model = model
        self.device = str(accelerator.device) if accelerator is not None else config.device
        if accelerator is None:
            self.model.to(self.device)
        self.stop_ids = stop_token_ids(self.tokenizer)
        context = int(getattr(self.policy.config, "max_position_embeddings", 0) or 4096)
        self.max_total_tokens = config.max_total_tokens or context
        self.generator = None
        if config.vllm_server:
            from tracec.train.vllm_gen import VLLMGenerator

            main = accelerator is None or accelerator.is_main_process
            self.generator = VLLMGenerator(config.vllm_server, self.stop_ids, weight_sync=main,
                                           device=self.device)
        self.plan: MemoryPlan | None = None
        self._checkpointing = False
        self.step = 0
        self.seed_cursor = 0
        self.seeds_seen = (2**31, -1)
        self.metrics_path = self.out / "metrics.jsonl"

    # ------------------------------------------------------------------ helpers
    @property
    def policy(self):
        """The peft model itself (unwrapped from DDP)."""
        return self.accelerator.unwrap_model(self.model) if self.accelerator else self.model

    @property
    def _rank(self) -> tuple[int, int]:
        if self.accelerator is None:
            return 0, 1
        return self.accelerator.process_index, self.accelerator.num_processes

    def _next_seed(self) -> int:
        rank, world = self._rank
        start, stop = self.config.train_seeds  # training never reaches the held-out seeds
        seed = start + (self.config.seed * SEED_STRIDE + self.seed_cursor * world + rank) % (stop - start)
        self.seed_cursor += 1
        self.seeds_seen = (min(self.seeds_seen[0], seed), max(self.seeds_seen[1], seed))
        return seed

    # ------------------------------------------------------------------ rollouts
    def collect(self, n_groups: int, first_group: int, stats: RolloutStats) -> list[Episode]:
        """Play ``n_groups`` groups of G episodes (one new env seed each)."""
        cfg = self.config
        renderer = ChatRenderer(self.tokenizer)
        n_hint = round(cfg.hint_share * cfg.group_size)
        episodes, envs = [], []
        for g in range(n_groups):
            eps, es = start_group(self.env.factory, self._next_seed(), first_group + g,
                                  cfg.group_size, n_hint, renderer)
            episodes += eps
            envs += es
        longest = max(len(e.prompt_ids) for e in episodes)
        if longest + 8 > self.max_total_tokens:
            raise PromptTooLong(
                f"the env's first prompt is {longest} tokens, leaving no room under "
                f"max_total_tokens={self.max_total_tokens}; raise --max-total-tokens "
                f"(the model's context is {getattr(self.policy.config, 'max_position_embeddings', '?')})")
        turns = cfg.max_turns or 4
        guess = min(self.max_total_tokens, longest + 2 * turns * cfg.max_new_tokens)
        distinct = len({tuple(e.prompt_ids) for e in episodes})
        self.plan = self._plan(longest, guess, distinct, len(episodes))
        policy = self.policy
        policy.eval()
        self._sync_generator()
        run_episodes(policy, self.tokenizer, episodes, envs, stop_ids=self.stop_ids,
                     max_new_tokens=cfg.max_new_tokens, max_total_tokens=self.max_total_tokens,
                     max_turns=cfg.max_turns, temperature=cfg.temperature, gen_batch=cfg.gen_batch,
                     device=self.device, stats=stats, generator=self.generator,
                     engine=cfg.rollout_engine, kv_rows=self.plan.kv_rows)
        return episodes

    def _plan(self, prompt_tokens: int, episode_tokens: int, distinct: int, episodes: int) -> MemoryPlan:
        """The memory plan for this step (raises :class:`MemoryBudgetError` before the work)."""
        cfg = self.config
        params = list(self.policy.parameters())
        dtype_bytes = params[0].element_size() if params else 4
        budget = memory_budget_bytes(cfg.memory_gb) if self.device == "cpu" else float("inf")
        plan = plan_step(self.policy.config, sum(p.numel() for p in params),
                         sum(p.numel() for p in params if p.requires_grad),
                         prompt_tokens=prompt_tokens, episode_tokens=episode_tokens,
                         distinct_prompts=distinct if cfg.rollout_engine == "kv" else 0,
                         episodes=episodes if cfg.rollout_engine == "kv" else 0,
                         gen_batch=cfg.gen_batch, micro_batch=cfg.micro_batch,
                         grad_checkpointing=cfg.grad_checkpointing, budget=budget,
                         dtype_bytes=dtype_bytes)
        if self.device == "cpu":  # a roomy step reuses freed heap memory (no page faults)
            limit_heap_retention(heap_threshold_for(plan))
        return plan

    def tune_heap(self, prompt_tokens: int, tokens: int) -> None:
        """Set the heap's mmap threshold for work on rows of ``tokens`` tokens (the SFT warm
        start, which has no step plan of its own); a row that would not fit keeps 1 MiB."""
        try:
            self._plan(prompt_tokens, tokens, 0, 0)
        except MemoryBudgetError:
            limit_heap_retention()

    def _set_checkpointing(self, on: bool) -> None:
        if on == self._checkpointing:
            return
        set_checkpointing(self.policy, on)
        self._checkpointing = on

    def _sync_generator(self) -> None:
        """Push the policy to the vLLM server once per optimiser step (main process)."""
        if self.generator is None or getattr(self, "_synced_step", None) == self.step:
            return
        if self.accelerator is None or self.accelerator.is_main_process:
            with torch.no_grad():
                self.generator.sync(self.policy)
        if self.accelerator is not None:
            self.accelerator.wait_for_everyone()
        self._synced_step = self.step

    # ------------------------------------------------------------------ one step
    def train_step(self) -> StepResult:
        """Roll out, drop flat groups (optionally resample), take one optimiser step."""
        cfg = self.config
        t0 = time.perf_counter()
        _seed_everything(cfg.seed * SEED_STRIDE + 7919 * (self.step + 1))
        stats = RolloutStats()
        episodes = self.collect(cfg.groups_per_step, 0, stats)
        sampled = list(episodes)
        adv = batch_advantages([e.reward for e in episodes], [e.group for e in episodes])
        rounds = 0
        while (cfg.resample_dropped and adv.kept_groups // cfg.group_size < cfg.groups_per_step
               and rounds < cfg.max_resample_rounds):
            rounds += 1
            missing = cfg.groups_per_step - adv.kept_groups // cfg.group_size
            more = self.collect(missing, max(e.group for e in episodes) + 1, stats)
            sampled += more
            episodes = [e for e, k in zip(episodes, adv.kept) if k] + more
            adv = batch_advantages([e.reward for e in episodes], [e.group for e in episodes])
        kept = kept_batch(episodes)
        t_update = time.perf_counter()
        update = self.update(kept)
        update_s = time.perf_counter() - t_update
        self.step += 1
        rewards = [e.reward for e in sampled]
        n_groups = len({e.group for e in sampled})
        kept_groups = len({e.group for e, _ in kept})
        mean = sum(rewards) / len(rewards)
        elapsed = time.perf_counter() - t0
        metrics = {
            "step": self.step,
            "reward_mean": mean,
            "reward_std": (sum((r - mean) ** 2 for r in rewards) / len(rewards)) ** 0.5,
            "success_rate": sum(r >= 1.0 for r in rewards) / len(rewards),
            "groups": n_groups,
            "kept_groups": kept_groups,
            "dropped_groups": n_groups - kept_groups,
            "kept_share": kept_groups / n_groups,
            "resample_rounds": rounds,
            "episodes": len(sampled),
            "mean_turns": sum(e.turns for e in sampled) / len(sampled),
            "model_tokens": sum(e.model_tokens for e in sampled),
            "gen_tokens_per_s": stats.gen_tokens / stats.gen_seconds if stats.gen_seconds else 0.0,
            "gen_seconds": stats.gen_seconds,
            "prefill_tokens": stats.prefill_tokens,
            "decode_steps": stats.decode_steps,
            "decode_row_counts": {str(k): v for k, v in sorted(stats.decode_row_counts.items())},
            "update_seconds": update_s,
            "step_seconds": elapsed,
            **update,
        }
        return StepResult(metrics, sampled)

    def update(self, kept: list[tuple[Episode, float]]) -> dict[str, float]:
        """The policy-gradient step on kept episodes (hint-free prompts, env tokens masked)."""
        cfg = self.config
        rows = [(e.base_prompt_ids + e.completion_ids, [0] * len(e.base_prompt_ids) + e.env_mask, a)
                for e, a in kept]
        normaliser = float(sum(sum(m) for _, m, _ in rows))
        world = self.accelerator.num_processes if self.accelerator is not None else 1
        if world > 1:  # every process must take the same optimiser steps (DDP all-reduce)
            total = torch.tensor([normaliser], device=self.device)
            normaliser = float(self.accelerator.reduce(total, "sum").item()) / world
        if normaliser == 0:
            return {"loss": 0.0, "clip_frac": 0.0, "kl": 0.0, "trained_tokens": 0, "grad_norm": 0.0}
        if rows:  # the real lengths are known now: check the update fits before running it
            longest = max(len(r[0]) for r in rows)
            prompt = min(len(e.base_prompt_ids) for e, _ in kept)
            plan = self._plan(prompt, longest, 0, 0)
            self._set_checkpointing(plan.grad_checkpointing)
        batches = [rows[i: i + cfg.micro_batch] for i in range(0, len(rows), cfg.micro_batch)]
        if not batches:  # this process kept nothing, others did: contribute a zero gradient
            batches = [[([self.tokenizer.pad_token_id] * 2, [0, 0], 0.0)]]
        olds = [None] * len(batches)
        refs = [None] * len(batches)
        if cfg.updates_per_batch > 1 or cfg.beta > 0:
            with torch.no_grad():
                for b, rows_b in enumerate(batches):
                    ids, start, _, _ = self._pad(rows_b)
                    if cfg.updates_per_batch > 1:
                        olds[b] = token_logprobs(self.model, ids, None, start)
                    if cfg.beta > 0:
                        with self.policy.disable_adapter():
                            refs[b] = token_logprobs(self.model, ids, None, start)
        self.model.train()
        totals = {"loss": 0.0, "clip_frac": 0.0, "kl": 0.0}
        grad_norm = 0.0
        for _ in range(cfg.updates_per_batch):
            self.optimizer.zero_grad(set_to_none=True)
            for b, rows_b in enumerate(batches):
                ids, start, mask, advs = self._pad(rows_b)
                last = b == len(batches) - 1  # DDP: one gradient sync per process and pass
                sync = self.accelerator.no_sync(self.model) if (world > 1 and not last) else nullcontext()
                with sync:
                    logp = token_logprobs(self.model, ids, None, start)
                    old = olds[b] if olds[b] is not None else logp.detach()
                    loss, st = clipped_surrogate(logp, old, advs, mask, cfg.epsilon, cfg.epsilon_high,
                                                 refs[b], cfg.beta, normaliser)
                    if self.accelerator is not None:
                        self.accelerator.backward(loss)
                    else:
                        loss.backward()
                totals["loss"] += loss.item() / cfg.updates_per_batch
                w = st["tokens"] / max(normaliser, 1.0) / cfg.updates_per_batch
                totals["clip_frac"] += st["clip_frac"] * w
                totals["kl"] += st["kl"] * w
            params = [p for p in self.model.parameters() if p.requires_grad]
            grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm))
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return {**totals, "trained_tokens": int(normaliser), "grad_norm": grad_norm}

    def _pad(self, rows: list[tuple[list[int], list[int], float]]):
        """Right-padded ids, the first trained position of the batch, the loss mask, advantages."""
        width = max(len(r[0]) for r in rows)
        pad = self.tokenizer.pad_token_id
        ids = torch.tensor([r[0] + [pad] * (width - len(r[0])) for r in rows], device=self.device)
        trained = [r[1].index(1) for r in rows if 1 in r[1]]
        start = min(trained) if trained else width
        mask = torch.tensor([r[1] + [0] * (width - len(r[1])) for r in rows], device=self.device,
                            dtype=torch.float32)
        advs = torch.tensor([r[2] for r in rows], device=self.device, dtype=torch.float32)
        return ids, start, mask, advs

    # ------------------------------------------------------------------ checkpoints
    def _ckpt_dir(self) -> Path:
        return self.out / CHECKPOINTS / "last"

    def save_checkpoint(self) -> Path:
        """Adapter, optimiser, RNG states and the seed cursor; written atomically."""
        final = self._ckpt_dir()
        tmp = final.with_name("last.partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        self.policy.save_pretrained(tmp)
        torch.save(self.optimizer.state_dict(), tmp / "optimizer.pt")
        torch.save({"torch": torch.get_rng_state(), "python": random.getstate()}, tmp / "rng.pt")
        state = {"step": self.step, "seed_cursor": self.seed_cursor,
                 "config": self.config.model_dump(mode="json"), "sft": self.sft_summary}
        (tmp / "state.json").write_text(json.dumps(state, indent=1) + "\n")
        old = final.with_name("last.old")
        shutil.rmtree(old, ignore_errors=True)
        if final.exists():
            final.rename(old)
        tmp.rename(final)
        shutil.rmtree(old, ignore_errors=True)
        return final

    def load_checkpoint(self) -> bool:
        """Continue from the last checkpoint (False when there is none)."""
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        ckpt = self._ckpt_dir()
        if not (ckpt / "state.json").exists():
            return False
        state = json.loads((ckpt / "state.json").read_text())
        saved = {k: v for k, v in state["config"].items() if k not in RESUME_MAY_CHANGE}
        now = {k: v for k, v in self.config.model_dump(mode="json").items()
               if k not in RESUME_MAY_CHANGE}
        diff = sorted(k for k in set(saved) | set(now) if saved.get(k) != now.get(k))
        if diff:
            raise ResumeError(f"checkpoint in {ckpt} was made with different settings: "
                              f"{', '.join(diff)} (only {', '.join(sorted(RESUME_MAY_CHANGE))} "
                              "may change on --resume)")
        set_peft_model_state_dict(self.policy, load_file(str(ckpt / "adapter_model.safetensors")))
        self.optimizer.load_state_dict(torch.load(ckpt / "optimizer.pt", weights_only=False))
        rng = torch.load(ckpt / "rng.pt", weights_only=False)
        torch.set_rng_state(rng["torch"])
        random.setstate(rng["python"])
        self.step = int(state["step"])
        self.seed_cursor = int(state["seed_cursor"])
        self.sft_summary = state.get("sft")
        self._truncate_metrics(self.step)
        return True

    def _truncate_metrics(self, step: int) -> None:
        if not self.metrics_path.exists():
            return
        lines = [ln for ln in self.metrics_path.read_text().splitlines()
                 if ln.strip() and json.loads(ln).get("step", 0) <= step]
        self.metrics_path.write_text("".join(ln + "\n" for ln in lines))

    # ------------------------------------------------------------------ the run
    def fit(self, resume: bool = False,
            on_step: Callable[[dict[str, Any]], None] | None = None,
            on_sft_step: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
        """Warm start (``warmup_sft``) then GRPO to ``config.steps``; returns the last step's
        metrics. A resumed run continues GRPO from its checkpoint (the warm start is in it)."""
        self.out.mkdir(parents=True, exist_ok=True)
        resumed = self.load_checkpoint() if resume else False
        if not resume and self.metrics_path.exists():
            self.metrics_path.unlink()
        if self.config.warmup_sft and not resumed:
            from tracec.train.sft import warmup_sft

            self.sft_summary = warmup_sft(self, on_sft_step)
            if self.config.steps > 0 and (self.accelerator is None or self.accelerator.is_main_process):
                self.save_adapter({}, self.out / "sft")  # the warm start alone: an SFT-only arm
        last: dict[str, Any] = {}
        is_main = self.accelerator is None or self.accelerator.is_main_process
        while self.step < self.config.steps:
            last = self.train_step().metrics
            if is_main:
                with self.metrics_path.open("a") as fh:
                    fh.write(json.dumps(last) + "\n")
                if self.step % self.config.checkpoint_every == 0 or self.step == self.config.steps:
                    self.save_checkpoint()
            if on_step:
                on_step(last)
        if is_main:
            self.save_adapter(last)
        return last

    def save_adapter(self, final_metrics: dict[str, Any], out: Path | None = None) -> Path:
        """The stock peft folder plus ``tracec.json`` (in ``out``, default the run's folder)."""
        out = self.out if out is None else out
        self.policy.save_pretrained(out)
        meta = {
            "capability": self.env.capability,
            "description": getattr(getattr(self.env.cls, "capability", None), "description", None),
            "env": self.env.name,
            "base_model": self.config.model,
            "base_model_path": self.model_path,
            "config": self.config.model_dump(mode="json"),
            "steps_done": self.step,
            "metrics": final_metrics,
            "seeds": {"train": list(self.config.train_seeds),
                      "grpo_used": list(self.seeds_seen) if self.seeds_seen[1] >= 0 else None,
                      "heldout_from": HELDOUT_START},
            "sft": self.sft_summary,
        }
        (out / "tracec.json").write_text(json.dumps(meta, indent=1) + "\n")
        return out
