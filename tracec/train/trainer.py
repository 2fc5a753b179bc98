"""The GRPO LoRA training loop: rollouts → advantages → clipped surrogate → AdamW, with
checkpoints that resume bit-for-bit (adapter, optimiser, RNG states, seed cursor).

A compact loop on TRL's data contract (see docs/training.md for why not ``GRPOTrainer``). It runs
under ``accelerate launch``/``torchrun``: each process plays its own groups (env seeds offset by
process index, its own sampling stream), gradients are averaged by DDP and the token normaliser
is summed across processes, so a step equals one process training on the union of the episodes.
A process that keeps no group still takes part in every collective (a zero-weighted forward).
Metrics and ``tracec.json`` describe the whole step; only the main process writes files.
"""

from __future__ import annotations

import json
import math
import random
import re
import shutil
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from accelerate.utils import gather_object
from peft import LoraConfig, get_peft_model, set_peft_model_state_dict
from safetensors.torch import load_file

from tracec.core.seeds import HELDOUT_START
from tracec.files import exclusive_lock
from tracec.harness.resolve import EnvTarget
from tracec.llm.adapters import record_hub_id
from tracec.llm.device import AS_SAVED, Placement
from tracec.llm.loading import load_model, stop_token_ids
from tracec.llm.serving import HTTP, ServingEngine, run_adapter_prefix, served_limit, wait_until_up
from tracec.llm.split_attention import supported as split_supported
from tracec.train.config import SEED_STRIDE, TrainConfig
from tracec.train.grpo import batch_advantages, clipped_surrogate, set_checkpointing
from tracec.train.loss_forward import loss_logprobs
from tracec.train.memory import (
    MemoryBudgetError,
    MemoryPlan,
    heap_threshold_for,
    limit_heap_retention,
    memory_budget_bytes,
    plan_step,
)
from tracec.train.rollout import ChatRenderer, Rollout, RolloutStats, run_episodes, start_group
from tracec.train.sft import SFTContext, load_init_adapter, warmup_sft

__all__ = ["GRPOTrainer", "LaunchError", "MemoryBudgetError", "PromptTooLong", "ResumeError"]

CHECKPOINTS = "checkpoints"
LOCK = ".lock"  # held by the writing process while a run trains into its folder
RANK_STRIDE = 104_729  # a prime: process r's sampling stream is offset by r times this
FULL_WEIGHT_CHECK = 1 << 22  # trainable values up to which ranks compare every value at the end
# settings results do not depend on (a serving engine may come back at another address;
# loss_forward changes results only to float rounding)
RESUME_MAY_CHANGE = frozenset({"steps", "checkpoint_every", "server", "server_timeout",
                               "loss_forward", "collective_timeout", "rollout_timeout"})


class ResumeError(RuntimeError):
    """A checkpoint that cannot continue this run."""


class PromptTooLong(ValueError):
    """The env's first prompt does not leave room to generate within max_total_tokens."""


class PeerLost(RuntimeError):
    """Another process stopped or hung (or this one waited past a bound); one line naming the
    rank that reports it and the cause."""


class LaunchError(RuntimeError):
    """A process layout that does not match the launch (device kind, process group)."""


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def meeting_group(timeout_s: float):
    """A gloo group (CPU, also beside NCCL) for the processes' after-rollout meeting."""
    return dist.new_group(backend="gloo", timeout=timedelta(seconds=timeout_s))


def peer_cause(exc: BaseException) -> str:
    """The useful part of a gloo/NCCL failure, on one line: which ranks missed, or what broke."""
    text = " ".join(str(exc).split())
    found = re.search(r"Ranks? ([\d, ]+) failed to pass monitoredBarrier", text)
    if found:
        ranks = [r for r in re.split(r"[, ]+", found.group(1)) if r]
        return f"rank{'s' if len(ranks) > 1 else ''} {', '.join(ranks)} did not arrive"
    for mark in ("Connection closed by peer", "Connection reset by peer", "Timed out", "timed out",
                 "Watchdog caught collective operation timeout"):
        if mark in text:
            return mark[0].lower() + mark[1:]
    return text[:160]


def collective_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is a gloo/NCCL collective that failed (a peer gone or a timeout)."""
    if isinstance(exc, getattr(dist, "DistError", ())):
        return True
    text = str(exc)
    return any(m in text for m in ("gloo", "Gloo", "NCCL", "Connection closed by peer",
                                   "Connection reset by peer", "monitoredBarrier", "ProcessGroup"))


def sampling_seed(seed: int, step: int, rank: int = 0) -> int:
    """The torch/python RNG seed of GRPO step ``step``'s rollouts on process ``rank`` (rank 0 is
    what one process uses, so a 1-process run is unchanged; other ranks get their own stream)."""
    return seed * SEED_STRIDE + 7919 * (step + 1) + RANK_STRIDE * rank


@dataclass
class StepResult:
    metrics: dict[str, Any]
    episodes: list[Rollout]


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def build_policy(config: TrainConfig, place: Placement = AS_SAVED):
    """Tokenizer and the base model (on ``place``, default: the CPU in the file's dtype; loaded
    straight onto the device, see :func:`tracec.llm.loading.direct_load`) wrapped with a fresh
    LoRA adapter (seeded init; peft keeps the adapter itself in fp32)."""
    base, tokenizer, path = load_model(config.model, None, place, trainable=True)
    lora = LoraConfig(r=config.lora.rank, lora_alpha=config.lora.alpha,
                      lora_dropout=config.lora.dropout, target_modules=list(config.lora.targets),
                      task_type="CAUSAL_LM")
    _seed_everything(config.seed)
    with warnings.catch_warnings():  # transformers 5 deprecation noise from inside peft
        warnings.simplefilter("ignore", FutureWarning)
        model = get_peft_model(base, lora)
    return tokenizer, model, path


def step_sums(sampled: list[Rollout], kept: list[tuple[Rollout, float]], stats: RolloutStats,
              rounds: int, update: dict[str, Any], seeds: list[int]) -> dict[str, Any]:
    """One process's share of a step, as sums that add up across processes."""
    return {
        "rewards": [e.reward for e in sampled], "episodes": len(sampled),
        "groups": len({e.group for e in sampled}), "kept_groups": len({e.group for e, _ in kept}),
        "resample_rounds": rounds, "turns": sum(e.turns for e in sampled),
        "model_tokens": sum(e.model_tokens for e in sampled), "gen_tokens": stats.gen_tokens,
        "gen_seconds": stats.gen_seconds, "prefill_tokens": stats.prefill_tokens,
        "decode_steps": stats.decode_steps,
        "decode_row_counts": {str(k): v for k, v in sorted(stats.decode_row_counts.items())},
        "update": dict(update), "seeds": list(seeds),
    }


def step_metrics(parts: list[dict[str, Any]], step_seconds: float, update_seconds: float) -> dict[str, Any]:
    """The step's metrics from every process's :func:`step_sums` (one part: one process).

    Counts and token totals are sums over processes; reward statistics are over all episodes;
    ``loss``/``clip_frac``/``kl`` are the whole batch's (each process's share is its tokens over
    the global normaliser, so the mean over processes is the global value); ``gen_tokens_per_s``
    is all processes' tokens over the slowest one's generation time; ``trained_tokens`` and
    ``grad_norm`` are global already. ``processes`` and ``seeds_per_rank`` appear with >1 process."""
    n = len(parts)
    tot = {k: sum(p[k] for p in parts) for k in (
        "episodes", "groups", "kept_groups", "turns", "model_tokens", "gen_tokens",
        "prefill_tokens", "decode_steps")}
    rewards = [r for p in parts for r in p["rewards"]]
    episodes = max(len(rewards), 1)
    mean = sum(rewards) / episodes
    gen_seconds = max(p["gen_seconds"] for p in parts)
    rows: dict[str, int] = {}
    for p in parts:
        for k, v in p["decode_row_counts"].items():
            rows[k] = rows.get(k, 0) + v
    update = dict(parts[0]["update"])
    for key in ("loss", "clip_frac", "kl"):
        update[key] = sum(p["update"][key] for p in parts) / n
    for key in SAMPLER_KEYS:  # only processes whose server returned logprobs
        vals = [p["update"][key] for p in parts if key in p["update"]]
        if vals:
            update[key] = max(vals) if key.endswith("_max") else sum(vals) / len(vals)
    metrics = {
        "reward_mean": mean,
        "reward_std": (sum((r - mean) ** 2 for r in rewards) / episodes) ** 0.5,
        "success_rate": sum(r >= 1.0 for r in rewards) / episodes,
        "groups": tot["groups"],
        "kept_groups": tot["kept_groups"],
        "dropped_groups": tot["groups"] - tot["kept_groups"],
        "kept_share": tot["kept_groups"] / max(tot["groups"], 1),
        "resample_rounds": max(p["resample_rounds"] for p in parts),
        "episodes": tot["episodes"],
        "mean_turns": tot["turns"] / episodes,
        "model_tokens": tot["model_tokens"],
        "gen_tokens_per_s": tot["gen_tokens"] / gen_seconds if gen_seconds else 0.0,
        "gen_seconds": gen_seconds,
        "prefill_tokens": tot["prefill_tokens"],
        "decode_steps": tot["decode_steps"],
        "decode_row_counts": dict(sorted(rows.items(), key=lambda kv: int(kv[0]))),
        "update_seconds": update_seconds,
        "step_seconds": step_seconds,
        **update,
    }
    if n > 1:
        metrics["processes"] = n
        metrics["seeds_per_rank"] = [p["seeds"] for p in parts]
    return metrics


SAMPLER_KEYS = ("sampler_logprob_gap", "sampler_ratio_mean", "sampler_ratio_max")


def sampler_gap(logp: torch.Tensor, rows: list[tuple[list[int], list[int], float]],
                episodes: list[Rollout]) -> tuple[float, float, float, int] | None:
    """The trainer's log-probabilities of the sampled tokens against the server's (the
    importance ratio of the rollouts, as TRL reports it): sums of ``|Δ|`` and ``exp(Δ)``, the
    largest ``exp(Δ)`` and the token count, over tokens the server returned a logprob for."""
    gap = ratio = 0.0
    top, n = 0.0, 0
    for r, ((_, mask, _), ep) in enumerate(zip(rows, episodes)):
        served = ep.sampler_logprobs
        if not served:
            continue
        where = [j for j, m in enumerate(mask) if m]
        ours = logp[r, where[: len(served)]].tolist()
        for a, b in zip(ours, served):
            if b is not None:
                d = a - b
                gap += abs(d)
                ratio += math.exp(d)
                top = max(top, math.exp(d))
                n += 1
    return (gap, ratio, top, n) if n else None


def kept_batch(episodes: list[Rollout]) -> list[tuple[Rollout, float]]:
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
        self.rank, self.world = ((accelerator.process_index, accelerator.num_processes)
                                 if accelerator is not None else (0, 1))
        self.place = self._placement(config, accelerator)
        self.device = self.place.target  # where tensors go
        self.dtype = self.place.torch_dtype
        if self.place.on_cpu:
            limit_heap_retention()
        if config.server:  # reachable (within --server-timeout in all) before the model loads
            wait_until_up(HTTP(config.server), config.serving_engine or "vllm", config.server_timeout,
                          _stderr if self.is_main else (lambda s: None))
        self.tokenizer, model, self.model_path = build_policy(config, self.place)
        self.sft_summary: dict[str, Any] | None = None
        if config.init_adapter:  # e.g. continue from an SFT-only run

            self.sft_summary = load_init_adapter(model, config.init_adapter, config)
        # fp16 (--dtype fp16, or auto on a GPU without native bf16) scales the loss so small
        # gradients through fp16 activations do not flush to zero; other dtypes: a no-op
        self.scaler = torch.amp.GradScaler(self.place.kind,
                                           enabled=self.dtype == torch.float16)
        self.optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                           lr=config.learning_rate,
                                           weight_decay=config.weight_decay)
        if accelerator is not None:
            model, self.optimizer = accelerator.prepare(model, self.optimizer)
        self.model = model
        if accelerator is None:
            self.model.to(self.device)
        self.stop_ids = stop_token_ids(self.tokenizer)
        context = int(getattr(self.policy.config, "max_position_embeddings", 0) or 4096)
        self.max_total_tokens = config.max_total_tokens or context
        self.serving: ServingEngine | None = None  # rollouts on a vLLM/SGLang server
        if config.server:
            self.serving = ServingEngine(
                config.server, self.stop_ids, engine=config.serving_engine or "vllm",
                weight_sync=config.weight_sync, adapter_dir=self.out / "serving",
                prefix=run_adapter_prefix(self.out), timeout=config.server_timeout,
                is_main=accelerator is None or accelerator.is_main_process,
                barrier=accelerator.wait_for_everyone if accelerator is not None else None,
                device=self.device, lora_rank=config.lora.rank,
                request_timeout=config.rollout_timeout)  # a hung server ends within the bound
            self.max_total_tokens = served_limit(self.max_total_tokens, config.max_total_tokens,
                                                 self.serving.max_model_len)
        self._meet_group = meeting_group(config.rollout_timeout) if self.world > 1 else None
        self.plan: MemoryPlan | None = None
        self._checkpointing = False
        self.step = 0
        self.seed_cursor = 0
        self.seeds_seen = (2**31, -1)
        self.step_seeds: list[int] = []  # this process's env seeds in the current step
        self.metrics_path = self.out / "metrics.jsonl"
        self.processes: dict[str, Any] | None = None  # tracec.json's view of a many-process run
        self._idle_row = [self.tokenizer.pad_token_id or 0] * 2  # replaced by a real row per step

    # ------------------------------------------------------------------ helpers
    @property
    def policy(self):
        """The peft model itself (unwrapped from DDP)."""
        return self.accelerator.unwrap_model(self.model) if self.accelerator else self.model

    @property
    def _rank(self) -> tuple[int, int]:
        return self.rank, self.world

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @staticmethod
    def _placement(config: TrainConfig, accelerator: Any) -> Placement:
        """This process's placement: the config's (checked to exist here), or accelerate's local
        device of that kind, in the config's dtype."""
        want = config.placement
        if accelerator is None:
            return want.check()
        placed = Placement.parse(str(accelerator.device), config.dtype)
        if placed.kind != want.kind:
            hint = ("ACCELERATE_USE_CPU=true accelerate launch --multi_gpu --num_processes N"
                    if want.on_cpu else "a launch where every process sees a GPU")
            raise LaunchError(f"--device {want.device} but accelerate placed this process on "
                              f"{placed.device}: pass --device {placed.kind} or use {hint}")
        return placed

    def _gather(self, value: Any) -> list[Any]:
        """``value`` of every process, in rank order (one process: ``[value]``)."""
        if self.world == 1:
            return [value]

        return list(gather_object([value]))

    @contextmanager
    def _together(self, collective: bool = True) -> Iterator[None]:
        """Run a check every process makes (a step's memory plan, its prompt length); with >1
        process its error is raised on every process at once, so that none is left waiting in a
        collective for one that stopped."""
        error: Exception | None = None
        try:
            yield
        except (PromptTooLong, MemoryBudgetError) as exc:
            error = exc
        if collective and self.world > 1:
            errors = self._gather(None if error is None else (type(error).__name__, str(error)))
            first = next((e for e in errors if e), None)
            if first and error is None:
                kinds = {"PromptTooLong": PromptTooLong, "MemoryBudgetError": MemoryBudgetError}
                error = kinds[first[0]](first[1])
        if error is not None:
            raise error

    def _meet(self) -> None:
        """Wait (at most ``rollout_timeout``) until every process finished its rollouts; a
        process that did not come is named (gloo's monitored barrier, on its own CPU group)."""
        if self._meet_group is None:
            return
        try:
            dist.monitored_barrier(group=self._meet_group, wait_all_ranks=True,
                                   timeout=timedelta(seconds=self.config.rollout_timeout))
        except RuntimeError as exc:
            raise PeerLost(f"rank {self.rank}: the processes did not all finish step {self.step + 1}'s "
                           f"rollouts within --rollout-timeout {self.config.rollout_timeout:g} s "
                           f"({peer_cause(exc)}): a hung env step or serving request, or a stopped "
                           "process") from None

    def _next_seed(self) -> int:
        rank, world = self._rank
        start, stop = self.config.train_seeds  # training never reaches the held-out seeds
        seed = start + (self.config.seed * SEED_STRIDE + self.seed_cursor * world + rank) % (stop - start)
        self.seed_cursor += 1
        self.seeds_seen = (min(self.seeds_seen[0], seed), max(self.seeds_seen[1], seed))
        self.step_seeds.append(seed)
        return seed

    # ------------------------------------------------------------------ rollouts
    def collect(self, n_groups: int, first_group: int, stats: RolloutStats) -> list[Rollout]:
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
        with self._together(first_group == 0):  # a step's first rollouts: every process calls
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
                     device=self.device, stats=stats,
                     engine=self.serving or cfg.rollout_engine, kv_rows=self.plan.kv_rows)
        return episodes

    def _plan(self, prompt_tokens: int, episode_tokens: int, distinct: int, episodes: int) -> MemoryPlan:
        """The memory plan for this step (raises :class:`MemoryBudgetError` before the work)."""
        cfg = self.config
        params = list(self.policy.parameters())
        dtype_bytes = torch.empty((), dtype=self.dtype).element_size()
        on_cpu = self.place.on_cpu
        budget = memory_budget_bytes(cfg.memory_gb, self.place)
        plan = plan_step(self.policy.config, sum(p.numel() for p in params),
                         sum(p.numel() for p in params if p.requires_grad),
                         prompt_tokens=prompt_tokens, episode_tokens=episode_tokens,
                         distinct_prompts=distinct if cfg.rollout_engine == "kv" else 0,
                         episodes=episodes if cfg.rollout_engine == "kv" else 0,
                         gen_batch=cfg.gen_batch, micro_batch=cfg.micro_batch,
                         grad_checkpointing=cfg.grad_checkpointing, budget=budget,
                         dtype_bytes=dtype_bytes, weight_copies=2 if on_cpu else 1,
                         shared_group=cfg.group_size if cfg.loss_forward == "shared" else 0,
                         shared_decode=(cfg.rollout_engine == "kv" and cfg.group_size > 1
                                        and split_supported(self.policy)),
                         local_rollout=self.serving is None,
                         stream_bytes=self._stream_bytes(dtype_bytes))
        if on_cpu:  # a roomy step reuses freed heap memory (no page faults)
            limit_heap_retention(heap_threshold_for(plan))
        return plan

    def _stream_bytes(self, dtype_bytes: int) -> float:
        """The NCCL weight sync's one merged tensor in flight (0 in every other mode)."""
        if self.serving is None or self.serving.weight_sync != "nccl":
            return 0.0
        return float(max(p.numel() for p in self.policy.parameters()) * dtype_bytes)

    def sft_context(self) -> SFTContext:
        """What the SFT warm start needs from this run (:class:`~tracec.train.sft.SFTContext`)."""
        return SFTContext(self.config, self.policy, self.tokenizer, self.env.factory,
                          self.max_total_tokens, self.place, self.out, self.world, self.tune_heap)

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
        """Push the policy to the serving engine once per optimiser step (every process calls;
        the main one saves and loads the adapter, the others wait)."""
        if self.serving is not None:
            self.serving.update_policy(self.policy, self.step)

    # ------------------------------------------------------------------ one step
    def train_step(self) -> StepResult:
        """Roll out, drop flat groups (optionally resample), take one optimiser step."""
        cfg = self.config
        t0 = time.perf_counter()
        _seed_everything(sampling_seed(cfg.seed, self.step, self.rank))
        if self.serving is not None:  # the server's requests are seeded from the same stream
            self.serving.set_seed(sampling_seed(cfg.seed, self.step, self.rank))
        self.step_seeds = []
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
        self._meet()  # every process has its rollouts: the update's collectives never wait on them
        kept = kept_batch(episodes)
        self._idle_row = (sampled[0].base_prompt_ids + sampled[0].completion_ids)[:32]
        t_update = time.perf_counter()
        update = self.update(kept)
        update_s = time.perf_counter() - t_update
        self.step += 1
        local = step_sums(sampled, kept, stats, rounds, update, self.step_seeds)
        metrics = {"step": self.step,
                   **step_metrics(self._gather(local), time.perf_counter() - t0, update_s)}
        return StepResult(metrics, sampled)

    def update(self, kept: list[tuple[Rollout, float]]) -> dict[str, float]:
        """The policy-gradient step on kept episodes (hint-free prompts, env tokens masked)."""
        cfg = self.config
        rows = [(e.base_prompt_ids + e.completion_ids, [0] * len(e.base_prompt_ids) + e.env_mask, a)
                for e, a in kept]
        normaliser = float(sum(sum(m) for _, m, _ in rows))
        world = self.world
        global_tokens = normaliser
        if world > 1:  # every process must take the same optimiser steps (DDP all-reduce)
            total = torch.tensor([normaliser], device=self.device, dtype=torch.float64)
            global_tokens = float(self.accelerator.reduce(total, "sum").item())
            normaliser = global_tokens / world  # DDP averages gradients: ÷ world undoes it
        if normaliser == 0:
            return {"loss": 0.0, "clip_frac": 0.0, "kl": 0.0, "trained_tokens": 0, "grad_norm": 0.0}
        with self._together():
            if rows:  # the real lengths are known now: check the update fits before running it
                longest = max(len(r[0]) for r in rows)
                prompt = min(len(e.base_prompt_ids) for e, _ in kept)
                plan = self._plan(prompt, longest, 0, 0)
                self._set_checkpointing(plan.grad_checkpointing)
        batches = [rows[i: i + cfg.micro_batch] for i in range(0, len(rows), cfg.micro_batch)]
        kept_eps = [e for e, _ in kept]
        gaps: list[tuple[float, float, float, int]] = []
        if not batches:  # this process kept nothing, others did: a zero-weighted forward of a real
            # row (every LoRA weight in the graph, gradient exactly 0) joins DDP's all-reduce
            batches = [[(list(self._idle_row), [0] * len(self._idle_row), 0.0)]]
        olds = [None] * len(batches)
        refs = [None] * len(batches)
        if cfg.updates_per_batch > 1 or cfg.beta > 0:
            with torch.no_grad():
                for b, rows_b in enumerate(batches):
                    if cfg.updates_per_batch > 1:
                        olds[b] = self._logprobs(rows_b)[0]
                    if cfg.beta > 0:
                        with self.policy.disable_adapter():
                            refs[b] = self._logprobs(rows_b)[0]
        self.model.train()
        totals = {"loss": 0.0, "clip_frac": 0.0, "kl": 0.0}
        grad_norm = 0.0
        for _ in range(cfg.updates_per_batch):
            self.optimizer.zero_grad(set_to_none=True)
            for b, rows_b in enumerate(batches):
                last = b == len(batches) - 1  # DDP: one gradient sync per process and pass
                sync = self.accelerator.no_sync(self.model) if (world > 1 and not last) else nullcontext()
                with sync:
                    logp, mask, advs = self._logprobs(rows_b)
                    old = olds[b] if olds[b] is not None else logp.detach()
                    if len(gaps) < len(batches):  # the first pass: before any update
                        found = sampler_gap(old, rows_b, kept_eps[b * cfg.micro_batch:])
                        gaps.append(found or (0.0, 0.0, 0.0, 0))
                    loss, st = clipped_surrogate(logp, old, advs, mask, cfg.epsilon, cfg.epsilon_high,
                                                 refs[b], cfg.beta, normaliser)
                    scaled = self.scaler.scale(loss)  # fp16: loss scaling; else the loss itself
                    if self.accelerator is not None:
                        self.accelerator.backward(scaled)
                    else:
                        scaled.backward()
                totals["loss"] += loss.item() / cfg.updates_per_batch
                w = st["tokens"] / max(normaliser, 1.0) / cfg.updates_per_batch
                totals["clip_frac"] += st["clip_frac"] * w
                totals["kl"] += st["kl"] * w
            params = [p for p in self.model.parameters() if p.requires_grad]
            self.scaler.unscale_(self.optimizer)
            grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm))
            self.scaler.step(self.optimizer)  # fp16: skipped (and the scale lowered) on inf/nan
            self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        out = {**totals, "trained_tokens": round(global_tokens), "grad_norm": grad_norm}
        counted = sum(g[3] for g in gaps)
        if counted:
            out.update({"sampler_logprob_gap": sum(g[0] for g in gaps) / counted,
                        "sampler_ratio_mean": sum(g[1] for g in gaps) / counted,
                        "sampler_ratio_max": max(g[2] for g in gaps)})
        return out

    def _logprobs(self, rows: list[tuple[list[int], list[int], float]]):
        """``(logp, mask, advantages)`` of a micro-batch by the configured loss forward."""
        return loss_logprobs(self.model, rows, self.tokenizer.pad_token_id, self.device,
                             self.config.loss_forward)

    # ------------------------------------------------------------------ checkpoints
    def _ckpt_dir(self) -> Path:
        return self.out / CHECKPOINTS / "last"

    def _rank_state(self) -> dict[str, Any]:
        return {"seed_cursor": self.seed_cursor, "seeds_seen": list(self.seeds_seen)}

    def save_checkpoint(self, ranks: list[dict[str, Any]] | None = None) -> Path:
        """Adapter, optimiser, RNG states and every process's seed cursor (``ranks``, from
        :meth:`_rank_state` of each; default this process's); written atomically."""
        final = self._ckpt_dir()
        tmp = final.with_name("last.partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        self.policy.save_pretrained(tmp)
        torch.save(self.optimizer.state_dict(), tmp / "optimizer.pt")
        torch.save({"torch": torch.get_rng_state(), "python": random.getstate()}, tmp / "rng.pt")
        state = {"step": self.step, "seed_cursor": self.seed_cursor,
                 "config": self.config.model_dump(mode="json"), "sft": self.sft_summary,
                 "processes": self.world, "ranks": ranks or [self._rank_state()]}
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

        ckpt = self._ckpt_dir()
        if not (ckpt / "state.json").exists():
            return False
        state = json.loads((ckpt / "state.json").read_text())
        made_by = int(state.get("processes", 1))
        if made_by != self.world:
            raise ResumeError(f"checkpoint in {ckpt} was made by {made_by} process(es), this run has "
                              f"{self.world}: resume with the same number of processes")
        defaults = TrainConfig().model_dump(mode="json")  # fields added since the checkpoint
        saved = {k: v for k, v in {**defaults, **state["config"]}.items() if k not in RESUME_MAY_CHANGE}
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
        mine = (state.get("ranks") or [{}])[self.rank]
        self.seed_cursor = int(mine.get("seed_cursor", state["seed_cursor"]))
        if mine.get("seeds_seen"):
            self.seeds_seen = tuple(mine["seeds_seen"])
        self.sft_summary = state.get("sft")
        if self.is_main:
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
        is_main = self.is_main
        if is_main:
            self.out.mkdir(parents=True, exist_ok=True)
        # one writer per folder: a second run on this -o (e.g. N unrelated processes) stops here
        with exclusive_lock(self.out / LOCK, f"{self.out}/") if is_main else nullcontext():
            try:
                return self._fit(resume, on_step, on_sft_step)
            finally:  # a failed or interrupted run does not leave its adapter on the server
                if self.serving is not None:
                    self.serving.close()

    def _fit(self, resume: bool, on_step: Callable[[dict[str, Any]], None] | None,
             on_sft_step: Callable[[dict[str, Any]], None] | None) -> dict[str, Any]:
        is_main = self.is_main
        resumed = self.load_checkpoint() if resume else False
        if not resume and is_main and self.metrics_path.exists():
            self.metrics_path.unlink()
        if self.config.warmup_sft and not resumed:
            self.sft_summary = warmup_sft(self.sft_context(), on_sft_step)
            if self.config.steps > 0 and is_main:
                self.save_adapter({}, self.out / "sft")  # the warm start alone: an SFT-only arm
        last: dict[str, Any] = {}
        while self.step < self.config.steps:
            last = self.train_step().metrics
            if is_main:
                with self.metrics_path.open("a") as fh:
                    fh.write(json.dumps(last) + "\n")
            if self.step % self.config.checkpoint_every == 0 or self.step == self.config.steps:
                ranks = self._gather(self._rank_state())  # every process joins the gather
                if is_main:
                    self.save_checkpoint(ranks)
            if on_step:
                on_step(last)
        if self.serving is not None:  # the server forgets this run's adapter
            self.serving.close()
        self.processes = self._processes_summary()
        if is_main:
            self.save_adapter(last)
        return last

    def _processes_summary(self) -> dict[str, Any] | None:
        """With >1 process: each rank's seed range and how far the ranks' adapters differ (0.0:
        bit-identical, as DDP keeps them; every value compared up to :data:`FULL_WEIGHT_CHECK`
        trainable values, else per-tensor sums). A collective: every process calls it."""
        if self.world == 1:
            return None
        ranks = self._gather(self._rank_state())
        params = [p.detach().float().reshape(-1) for p in self.policy.parameters() if p.requires_grad]
        flat = torch.cat(params)
        exact = flat.numel() <= FULL_WEIGHT_CHECK
        probe = flat if exact else torch.stack([p.sum() for p in params] + [p.abs().sum() for p in params])
        every = self.accelerator.gather(probe.to(self.device)[None])
        diff = float((every - every[0]).abs().max().item())
        if diff > 0:
            warnings.warn(f"the processes' adapters differ by up to {diff:.3g} after training "
                          "(DDP should keep them identical)", stacklevel=2)
        return {"count": self.world, "weights_max_abs_diff": diff,
                "weights_compared": "every value" if exact else "per-tensor sums",
                "seeds_per_rank": [r["seeds_seen"] if r["seeds_seen"][1] >= 0 else None for r in ranks]}

    def _seeds_used(self) -> list[int] | None:
        """The env seeds GRPO drew, [min, max], over every process."""
        ranges = [r for r in (self.processes or {}).get("seeds_per_rank", []) if r]
        if not ranges:
            return list(self.seeds_seen) if self.seeds_seen[1] >= 0 else None
        return [min(r[0] for r in ranges), max(r[1] for r in ranges)]

    def save_adapter(self, final_metrics: dict[str, Any], out: Path | None = None) -> Path:
        """The stock peft folder plus ``tracec.json`` (in ``out``, default the run's folder)."""
        out = self.out if out is None else out
        self.policy.save_pretrained(out)
        record_hub_id(out, self.config.model, self.model_path)  # stock peft loads it anywhere
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
                      "grpo_used": self._seeds_used(),
                      "heldout_from": HELDOUT_START},
            "sft": self.sft_summary,
            "sampling": (self.serving.sampling_record(self.config.temperature)
                         if self.serving is not None else
                         {"engine": self.config.rollout_engine,
                          "params": {"temperature": self.config.temperature, "top_p": 1.0,
                                     "top_k": -1, "min_p": 0.0, "repetition_penalty": 1.0},
                          "seed": "torch RNG seeded per step and rank (sampling_seed)"}),
        }
        if self.processes:
            meta["seeds"]["grpo_used_per_rank"] = self.processes["seeds_per_rank"]
            meta["processes"] = {k: v for k, v in self.processes.items() if k != "seeds_per_rank"}
        (out / "tracec.json").write_text(json.dumps(meta, indent=1) + "\n")
        return out
