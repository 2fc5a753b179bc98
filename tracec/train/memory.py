"""A RAM plan for one GRPO step, checked before the work that would run out of memory.

The estimate is per tensor family, in the model's dtype (``--dtype``):

* weights: every parameter twice on CPU (the CPU kernels keep a packed copy after the first
  forward), once on GPU, plus fp32 gradient and two AdamW moments for the trainable ones;
* rollout (``kv`` engine): one KV copy per distinct prompt, each episode's own turns, and the
  batch rows being decoded (``KV bytes/token × rows × tokens``, where a row's tokens are its own
  completion when the rows of a group attend to one copy of their prompt, the whole episode
  when each row holds its own copy); nothing when rollouts run on a serving engine;
* update, per micro-batch of ``rows × T`` tokens: the activations autograd keeps
  (:data:`ACT_FLOATS_PER_TOKEN_LAYER` floats per token and layer, all layers; with gradient
  checkpointing one hidden state per layer plus one layer's worth being recomputed) and the
  completion-only logits (3 copies: logits, their softmax in backward, the gradient).

The budget is the device's: RAM on CPU (``cpu`` and ``cpu:N`` alike), free plus torch-held
memory on CUDA (``torch.cuda.mem_get_info``), capped by ``--memory-gb``. It is always finite.

The constants were measured on SmolLM2-135M with torch 2.13 on CPU (benchmarks/README.md); they
are deliberately a little high.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
from dataclasses import asdict, dataclass

from tracec.llm.device import CPU, Placement
from tracec.llm.footprint import (
    ACT_FLOATS_PER_TOKEN_LAYER_HIDDEN,
    ACT_FLOATS_PER_TOKEN_LAYER_INTER,
    GIB,
    LOGIT_COPIES,
    kv_bytes_per_token,
    text_config,
)

OVERHEAD = 0.6 * GIB  # interpreter, torch, tokenizer, env
MMAP_THRESHOLD = 1 << 20
ROOMY_MMAP_THRESHOLD = 32 << 20  # glibc's own ceiling for its dynamic threshold (64-bit)
ROOMY_SHARE = 0.5  # a plan using at most this share of its budget keeps freed memory for reuse


def limit_heap_retention(threshold: int = MMAP_THRESHOLD) -> bool:
    """Serve allocations above ``threshold`` (1 MiB) with mmap (glibc), so freed activations go
    back to the OS.

    glibc raises its mmap threshold after large frees, after which big tensors come from the
    heap and freed ones are kept: peak RSS then tracks the largest transient, not live memory
    (measured: a checkpointed 1k-token backward of SmolLM2 peaked 1.6 GB above the model
    without this, 0.16 GB with it). Returns False where mallopt is unavailable."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(-3, threshold))  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        return False


def heap_threshold_for(plan: MemoryPlan) -> int:
    """The mmap threshold a step runs with: 1 MiB (freed memory returned at once) when its plan
    is tight; glibc's 32 MiB ceiling when it needs at most half its budget, so activations are
    reused from the heap instead of being mapped and page-faulted afresh on every forward
    (measured: ~15-20 % of the CPU time of a 900-token LoRA forward + backward of SmolLM2)."""
    roomy = math.isfinite(plan.budget) and plan.total <= ROOMY_SHARE * plan.budget
    return ROOMY_MMAP_THRESHOLD if roomy else MMAP_THRESHOLD


class MemoryBudgetError(RuntimeError):
    """A setting whose step cannot fit the memory budget."""


FALLBACK_BUDGET = 8 * GIB  # when the OS says nothing about free memory


def memory_budget_bytes(memory_gb: float | None, place: Placement = CPU) -> float:
    """The budget on ``place``'s device: ``memory_gb`` (default: what the device has free now)
    capped by what it has free. CPU devices (``cpu``, ``cpu:N``) read the RAM; CUDA devices read
    ``torch.cuda.mem_get_info`` plus what torch already holds there (the loaded weights, which
    the plan counts). Always a finite number of bytes."""
    available = _cuda_bytes(place.device) if place.kind == "cuda" else _available_bytes()
    if not math.isfinite(available) or available <= 0:
        available = FALLBACK_BUDGET if memory_gb is None else memory_gb * GIB
    if memory_gb is None:
        return float(available)
    return float(min(memory_gb * GIB, available))


def _cuda_bytes(device: str) -> float:
    import torch  # only on CUDA: the plan itself is torch-free

    dev = torch.device(device)
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    free, _total = torch.cuda.mem_get_info(index)
    return float(free + torch.cuda.memory_reserved(index))


def _available_bytes() -> float:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return float("nan")  # memory_budget_bytes falls back to a finite budget


@dataclass
class MemoryPlan:
    weights: float
    rollout: float
    update: float
    kv_rows: int
    grad_checkpointing: bool
    budget: float

    @property
    def total(self) -> float:
        return OVERHEAD + self.weights + max(self.rollout, self.update)

    def describe(self) -> str:
        gb = {k: round(v / GIB, 2) for k, v in asdict(self).items() if isinstance(v, float)}
        return (f"weights {gb['weights']} GiB, rollout {gb['rollout']} GiB ({self.kv_rows} rows), "
                f"update {gb['update']} GiB (checkpointing {'on' if self.grad_checkpointing else 'off'}), "
                f"total {self.total / GIB:.2f} GiB of {gb['budget']} GiB")


def update_bytes(model_config, rows: int, tokens: int, completion: int, checkpointing: bool,
                 dtype_bytes: int = 4) -> float:
    """Peak bytes of one micro-batch's forward + backward (see the module doc)."""
    cfg = text_config(model_config)
    hidden, layers = cfg.hidden_size, cfg.num_hidden_layers
    inter = getattr(cfg, "intermediate_size", 4 * hidden)
    per_layer = (ACT_FLOATS_PER_TOKEN_LAYER_HIDDEN * hidden
                 + ACT_FLOATS_PER_TOKEN_LAYER_INTER * inter) * dtype_bytes
    n = rows * tokens
    acts = n * (layers * hidden * dtype_bytes + per_layer) if checkpointing else n * layers * per_layer
    logits = rows * completion * cfg.vocab_size * 4 * LOGIT_COPIES
    return float(acts + logits)


def shared_update_bytes(model_config, rows: int, prompt: int, completion: int, checkpointing: bool,
                        dtype_bytes: int = 4, prompts: int = 1) -> float:
    """Peak bytes of one micro-batch of the shared-prefix loss pass (train/loss_forward.py): one
    sequence of ``prompts`` prompts and ``rows`` completions, logits at the completions only, and
    the ``L × L`` block attention mask (bool, its construction temporaries and the kernel's float
    copy: 8 bytes a cell)."""
    tokens = prompts * prompt + rows * completion
    acts = update_bytes(model_config, 1, tokens, 0, checkpointing, dtype_bytes)
    logits = rows * completion * text_config(model_config).vocab_size * 4 * LOGIT_COPIES
    return float(acts + logits + 8 * tokens * tokens)


def plan_step(model_config, n_params: int, n_trainable: int, *, prompt_tokens: int,
              episode_tokens: int, distinct_prompts: int, episodes: int, gen_batch: int,
              micro_batch: int, grad_checkpointing: bool | None, budget: float,
              dtype_bytes: int = 4, weight_copies: int = 2, shared_group: int = 0,
              shared_decode: bool = False, local_rollout: bool = True,
              stream_bytes: float = 0.0) -> MemoryPlan:
    """Choose KV rows and checkpointing for the budget, or raise :class:`MemoryBudgetError`.

    ``grad_checkpointing=None`` turns it on only when the update would not fit without it.
    ``weight_copies``: 2 on CPU (the kernels' packed copies), 1 on GPU. ``shared_group`` > 0: the
    update runs the shared-prefix pass on groups of that many rows (:func:`shared_update_bytes`;
    a micro-batch of consecutive rows may straddle groups). ``shared_decode``: decode rows hold
    only their own tokens, the prompt's keys/values once per distinct prompt (the local engine's
    shared-prefix decode); ``local_rollout=False``: rollouts run on a server, no local KV.
    ``stream_bytes``: the NCCL weight sync's one merged tensor in flight (counted with the weights)."""
    if not math.isfinite(budget) or budget <= 0:
        raise ValueError(f"memory budget must be a positive finite number of bytes, not {budget}")
    kv = kv_bytes_per_token(model_config, dtype_bytes)
    weights = float(weight_copies * n_params * dtype_bytes + n_trainable * 4 * 3 + stream_bytes)
    completion = max(1, episode_tokens - prompt_tokens)
    fixed_kv = kv * (distinct_prompts * prompt_tokens + episodes * completion)
    ckpt_options = [grad_checkpointing] if grad_checkpointing is not None else [False, True]
    update = 0.0
    chosen = ckpt_options[-1]
    for ckpt in ckpt_options:
        if shared_group > 0:
            prompts = min(micro_batch, -(-(micro_batch - 1) // shared_group) + 1)
            update = shared_update_bytes(model_config, micro_batch, prompt_tokens, completion, ckpt,
                                         dtype_bytes, prompts)
        else:
            update = update_bytes(model_config, micro_batch, episode_tokens, completion, ckpt, dtype_bytes)
        chosen = ckpt
        if OVERHEAD + weights + update <= budget:
            break
    row_tokens = completion if shared_decode else episode_tokens
    free = 0.9 * budget - OVERHEAD - weights - fixed_kv  # 10 % margin for what is not modelled
    rows = max(1, min(gen_batch, int(free // max(1, kv * row_tokens * 1.25))))  # + workspace
    rollout = fixed_kv + rows * kv * row_tokens * 1.25
    if not local_rollout:
        rows, rollout = gen_batch, 0.0
    plan = MemoryPlan(weights, float(rollout), update, rows, chosen, float(budget))
    if plan.total > budget:
        hints = []
        if update > rollout:
            hints += [f"--micro-batch {max(1, micro_batch // 2)}" if micro_batch > 1 else "",
                      "" if chosen else "--grad-checkpointing"]
        else:
            hints += ["a smaller --group-size / --groups-per-step", "--hint-share 0"]
        hints += ["a lower --max-new-tokens", "a compact env (fewer tool schemas)",
                  "--dtype bf16" if dtype_bytes > 2 else "",
                  "a larger --memory-gb if the machine has it"]
        raise MemoryBudgetError(
            f"a GRPO step on {episode_tokens}-token episodes needs about {plan.total / GIB:.1f} GiB "
            f"({plan.describe()}); try {', '.join(h for h in hints if h)}")
    return plan
