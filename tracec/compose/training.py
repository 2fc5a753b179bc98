"""Train the gates of a composed model on successful trajectories.

Loss = next-token cross-entropy on assistant tokens + α · Switch load balancing over the N
experts (+ β · z-loss). Only gate parameters train; the base model and the experts stay frozen
(asserted). Zero gates route every token to "no adapter", where the cross-entropy has no gradient
for the gates, so training starts with a warm-up (default: dense routing — every slot weighted
by its probability — for the first steps; measured against top-2 and random init in
docs/composition.md). Memory: logits only at the trained (assistant) positions, and activation
checkpointing per decoder block; a batch that would not fit stops with a clear error first.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
from pydantic import BaseModel, Field

from tracec.compose.config import GateInit, LbOver
from tracec.compose.errors import ComposeError
from tracec.compose.layer import load_balancing_loss, z_loss
from tracec.compose.model import ComposedModel
from tracec.core.messages import plain_messages
from tracec.llm.chat import render_text
from tracec.llm.footprint import (
    ACT_FLOATS_PER_TOKEN_LAYER_HIDDEN,
    ACT_FLOATS_PER_TOKEN_LAYER_INTER,
    LOGIT_COPIES,
)

Warmup = Literal["dense", "top2", "none"]


class ComposeTrainConfig(BaseModel):
    """Gate-training options (saved in moe.json under ``training``)."""

    epochs: int = Field(1, ge=1)
    max_steps: int | None = Field(None, ge=1)
    batch_size: int = Field(4, ge=1)
    lr: float = Field(5e-3, gt=0)
    alpha: float = Field(1e-2, ge=0, description="load-balancing loss weight")
    z_coef: float = Field(0.0, ge=0, description="router z-loss weight")
    max_length: int = Field(1024, ge=8)
    seed: int = 0
    min_reward: float | None = None
    warmup: Warmup = Field("dense", description="routing for the first warmup_steps steps")
    warmup_steps: int = Field(8, ge=0)
    gate_init: GateInit = "zeros"
    gate_init_scale: float = Field(0.0, ge=0, description="std of the initial gate logits (normal)")
    lb_over: LbOver = "experts"
    checkpointing: bool = Field(True, description="activation checkpointing per decoder block")
    max_memory_gib: float | None = Field(None, gt=0, description="refuse batches estimated above "
                                         "this (default: the RAM available at start)")


@dataclass
class Example:
    """One rendered trajectory: token ids and which of them are assistant tokens (trained)."""

    id: str
    env: str
    ids: list[int]
    train: list[bool]


# ---------------------------------------------------------------------------------------------
# data


def read_trajectories(paths: Iterable[str | Path]) -> list[dict]:
    """JSONL trajectories; a bad line is a :class:`ComposeError` naming file and line."""
    out: list[dict] = []
    for path in paths:
        p = Path(path)
        try:
            lines = p.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ComposeError(f"{p}: cannot read ({exc.strerror or exc})") from None
        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ComposeError(f"{p}:{n}: invalid JSON ({exc.msg})") from None
            if not isinstance(row, dict) or not isinstance(row.get("messages"), list):
                raise ComposeError(f"{p}:{n}: expected an object with a `messages` list")
            out.append(row)
    return out


def select_successful(rows: list[dict], min_reward: float | None = None) -> list[dict]:
    """Trajectories to imitate: ``success`` true (or reward ≥ ``min_reward`` when given)."""
    if min_reward is not None:
        return [r for r in rows if float(r.get("reward") or 0.0) >= min_reward]
    return [r for r in rows if r.get("success") is True]


def _plain(messages: list[dict]) -> list[dict]:
    return plain_messages(messages, args_as_dict=True)


def encode(tokenizer: Any, row: dict, max_length: int) -> Example | None:
    """Render with the chat template; mark assistant turns' tokens. None when nothing to train."""
    messages = _plain(row["messages"])
    tools = (row.get("info") or {}).get("tools") or None

    def text(msgs: list[dict], gen: bool) -> str:
        return render_text(tokenizer, msgs, tools, gen)

    full = text(messages, False)
    spans = []
    for i, m in enumerate(messages):
        if m.get("role") != "assistant":
            continue
        start, end = text(messages[:i], True), text(messages[: i + 1], False)
        if not full.startswith(end) or not end.startswith(start):
            return None  # the template is not prefix-stable for this conversation
        spans.append((len(start), len(end)))
    if not spans:
        return None
    enc = tokenizer(full, add_special_tokens=False, return_offsets_mapping=True)
    ids = enc["input_ids"][:max_length]
    train = [any(s <= a < e for s, e in spans) for a, _ in enc["offset_mapping"][: len(ids)]]
    if not any(train[1:]):
        return None
    return Example(str(row.get("id", "")), str(row.get("env", "")), ids, train)


def encode_all(tokenizer: Any, rows: list[dict], max_length: int) -> tuple[list[Example], int]:
    """Encode rows; returns ``(examples, skipped)``."""
    examples = [encode(tokenizer, r, max_length) for r in rows]
    kept = [e for e in examples if e is not None]
    return kept, len(examples) - len(kept)


def batches(examples: list[Example], batch_size: int, pad_id: int, rng: random.Random | None = None
            ) -> list[dict[str, torch.Tensor]]:
    """Right-padded batches of similar lengths (shuffled batch order when ``rng`` is given)."""
    order = sorted(range(len(examples)), key=lambda i: len(examples[i].ids))
    groups = [order[i: i + batch_size] for i in range(0, len(order), batch_size)]
    if rng is not None:
        rng.shuffle(groups)
    out = []
    for g in groups:
        width = max(len(examples[i].ids) for i in g)
        ids = torch.full((len(g), width), pad_id, dtype=torch.long)
        attn = torch.zeros((len(g), width), dtype=torch.long)
        train = torch.zeros((len(g), width), dtype=torch.bool)
        for row, i in enumerate(g):
            e = examples[i]
            n = len(e.ids)
            ids[row, :n] = torch.tensor(e.ids)
            attn[row, :n] = 1
            train[row, :n] = torch.tensor(e.train)
        out.append({"input_ids": ids, "attention_mask": attn, "train_mask": train})
    return out


# ---------------------------------------------------------------------------------------------
# losses and statistics


def token_ce(logits: torch.Tensor, input_ids: torch.Tensor, train_mask: torch.Tensor
             ) -> tuple[torch.Tensor, int]:
    """Mean next-token cross-entropy over trained positions from full ``[B, T, V]`` logits."""
    target = input_ids[:, 1:]
    mask = train_mask[:, 1:]
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    nll = -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    n = int(mask.sum())
    return (nll * mask).sum() / max(n, 1), n


def predicting_positions(train_mask: torch.Tensor) -> torch.Tensor:
    """``[B, T]`` bool: positions whose next token is trained (the only logits the loss needs)."""
    keep = torch.zeros_like(train_mask, dtype=torch.bool)
    keep[:, :-1] = train_mask[:, 1:].bool()
    return keep


def _forward_mask(mask: torch.Tensor) -> torch.Tensor | None:
    """None for right-padded rows (1…1 0…0): causal attention never looks ahead at the pads, so
    the real positions' logits are the same without a mask, and attention can take the fused
    causal path (no T×T score matrix per head). Any other mask is passed through."""
    lengths = mask.sum(-1, keepdim=True)
    right = torch.arange(mask.shape[-1], device=mask.device).unsqueeze(0) < lengths
    return None if bool((right == mask.bool()).all()) else mask


def assistant_ce(cm: ComposedModel, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, int]:
    """Mean next-token CE over the trained tokens, with logits only at the predicting positions.

    No ``[B, T, V]`` tensor is built: the LM head runs on the K kept hidden states (transformers'
    ``logits_to_keep`` with a boolean mask), so prompt tokens cost no vocabulary-sized memory.
    Equal to :func:`token_ce` on the full logits (tested).
    """
    keep = predicting_positions(batch["train_mask"])
    target = batch["input_ids"][:, 1:][batch["train_mask"][:, 1:].bool()]
    n = int(target.numel())
    out = cm(batch["input_ids"], attention_mask=_forward_mask(batch["attention_mask"]),
             use_cache=False, logits_to_keep=keep)
    logits = out.logits
    if logits.dim() != 2 or logits.shape[0] != n:  # a model without boolean logits_to_keep
        logits = logits[keep] if logits.dim() == 3 and logits.shape[:2] == keep.shape else None
        if logits is None:
            raise ComposeError("this model does not support logits_to_keep; cannot select positions")
    if n == 0:
        return logits.float().sum() * 0.0, 0
    ce = torch.nn.functional.cross_entropy(logits.float(), target, reduction="mean")
    return ce, n


@dataclass
class RoutingStats:
    """Tokens per slot per layer (non-padding tokens)."""

    slots: list[str]
    counts: list[list[int]] = field(default_factory=list)

    def add(self, records: list, mask: torch.Tensor) -> None:
        if not self.counts:
            self.counts = [[0] * len(self.slots) for _ in records]
        m = mask.bool()
        for li, rec in enumerate(records):
            chosen = rec.chosen[m]  # [n, k]
            binc = torch.bincount(chosen.flatten(), minlength=len(self.slots)).tolist()
            self.counts[li] = [a + b for a, b in zip(self.counts[li], binc)]

    def shares(self) -> list[list[float]]:
        return [[c / max(sum(row), 1) for c in row] for row in self.counts]

    def overall(self) -> list[float]:
        tot = [sum(row[s] for row in self.counts) for s in range(len(self.slots))]
        return [t / max(sum(tot), 1) for t in tot]

    def to_json(self) -> dict:
        return {"slots": self.slots, "counts": self.counts, "shares": self.shares(),
                "overall": self.overall()}


def assert_only_gates_train(cm: ComposedModel) -> None:
    """Fail loudly if anything other than the gate parameters would train."""
    gate_ids = {id(p) for p in cm.gate_parameters()}
    wrong = [n for n, p in cm.named_parameters() if p.requires_grad and id(p) not in gate_ids]
    if wrong:
        raise AssertionError(f"non-gate parameters are trainable: {wrong[:5]}")
    leaked = [n for n, p in cm.named_parameters() if id(p) not in gate_ids and p.grad is not None]
    if leaked:
        raise AssertionError(f"non-gate parameters received gradients: {leaked[:5]}")


# ---------------------------------------------------------------------------------------------
# training and evaluation


def _device(cm: ComposedModel) -> torch.device:
    return next(cm.gates.parameters()).device


def train_gates(cm: ComposedModel, examples: list[Example], cfg: ComposeTrainConfig, pad_id: int,
                on_step: Callable[[dict], None] | None = None) -> tuple[list[dict], RoutingStats]:
    """AdamW on the gates; returns per-step metrics and the routing statistics of training."""
    if not examples:
        raise ComposeError("no trainable trajectories (need successful ones with assistant turns)")
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    device = _device(cm)
    if cfg.gate_init != "zeros":
        cm.init_gates(cfg.gate_init, cfg.gate_init_scale, cfg.seed)
    check_memory(cm, examples, cfg)
    cm.set_checkpointing(cfg.checkpointing)
    assert_only_gates_train(cm)
    opt = torch.optim.AdamW(cm.gate_parameters(), lr=cfg.lr, weight_decay=0.0)
    per_epoch = math.ceil(len(examples) / cfg.batch_size)
    total = cfg.max_steps or per_epoch * cfg.epochs
    # the warm-up covers at most half the run, so the routing used at inference trains too
    warm_steps = 0 if cfg.warmup == "none" else min(cfg.warmup_steps, max(1, total // 2))
    stats = RoutingStats(cm.slots)
    metrics: list[dict] = []
    step = 0
    cm.train()
    t0 = time.perf_counter()
    while step < total:
        for batch in batches(examples, cfg.batch_size, pad_id, rng):
            if step >= total:
                break
            batch = {k: v.to(device) for k, v in batch.items()}
            warm = step < warm_steps
            mode = ((cm.config.top_k, "dense") if cfg.warmup == "dense"
                    else (max(2, cm.config.top_k), cm.config.weighting))
            with (cm.routing_mode(*mode) if warm else contextlib.nullcontext()), \
                    cm.collect_routing() as records:
                ce, n_tok = assistant_ce(cm, batch)
            lb = load_balancing_loss(records, batch["attention_mask"], cfg.lb_over)
            zl = z_loss(records, batch["attention_mask"]) if cfg.z_coef > 0 else torch.zeros(())
            loss = ce + cfg.alpha * lb + cfg.z_coef * zl
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if step == 0:
                assert_only_gates_train(cm)
            opt.step()
            stats.add(records, batch["attention_mask"])
            step += 1
            row = {"step": step, "epoch": (step - 1) // per_epoch + 1, "warmup": warm,
                   "loss": float(loss.detach()),
                   "ce": float(ce.detach()), "lb": float(lb.detach()), "z": float(zl.detach()), "tokens": n_tok,
                   "share": _share(records, batch["attention_mask"], len(cm.slots)),
                   "seconds": round(time.perf_counter() - t0, 3)}
            metrics.append(row)
            if on_step:
                on_step(row)
    cm.set_checkpointing(False)
    cm.eval()
    return metrics, stats


def _share(records: list, mask: torch.Tensor, n_slots: int) -> list[float]:
    m = mask.bool()
    chosen = torch.cat([r.chosen[m].flatten() for r in records])
    counts = torch.bincount(chosen, minlength=n_slots).float()
    return [round(float(c), 4) for c in counts / counts.sum().clamp_min(1)]


@torch.no_grad()
def evaluate_ce(cm: ComposedModel, examples: list[Example], pad_id: int, batch_size: int = 4,
                force: int | None = None) -> float:
    """Token-mean assistant cross-entropy (``force``: route everything to one slot)."""
    device = _device(cm)
    total, count = 0.0, 0
    for batch in batches(examples, batch_size, pad_id):
        batch = {k: v.to(device) for k, v in batch.items()}
        with cm.forced(force) if force is not None else contextlib.nullcontext():
            ce, n = assistant_ce(cm, batch)
        total += float(ce) * n
        count += n
    return total / max(count, 1)


def available_memory_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (None where there is none)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def estimate_step_bytes(cm: ComposedModel, batch_size: int, length: int, kept: int,
                        checkpointing: bool) -> int:
    """An estimate of one gate step's memory beyond the loaded model (activations + logits).

    Per token and decoder block autograd keeps ~(16·d + 5·d_ff) floats (the constants of
    ``tracec.llm.footprint``, measured on SmolLM2-135M), plus 2·heads·T for the score matrix of
    eager attention (SDPA's fused causal path, which right-padded batches take, keeps none).
    Checkpointing keeps one hidden state per block and, measured, about five blocks' worth while
    one is recomputed and differentiated. Kept logits cost 3 × K × V floats.
    """
    cfg = cm.model.get_base_model().config if hasattr(cm.model, "get_base_model") else cm.model.config
    d = int(getattr(cfg, "hidden_size", cm.config.gate.hidden_size))
    d_ff = int(getattr(cfg, "intermediate_size", 4 * d) or 4 * d)
    heads = int(getattr(cfg, "num_attention_heads", 1) or 1)
    vocab = int(getattr(cfg, "vocab_size", 0) or 0)
    layers = cm.config.gate.layers
    tokens = batch_size * length
    eager = getattr(cfg, "_attn_implementation", "sdpa") == "eager"
    per_block = tokens * (ACT_FLOATS_PER_TOKEN_LAYER_HIDDEN * d + ACT_FLOATS_PER_TOKEN_LAYER_INTER * d_ff
                          + (2 * heads * length if eager else 0))
    saved = tokens * (d + 3 * len(cm.config.slots)) * layers
    acts = (saved + 5 * per_block) if checkpointing else layers * per_block
    return 4 * (acts + LOGIT_COPIES * kept * vocab)


def check_memory(cm: ComposedModel, examples: list[Example], cfg: ComposeTrainConfig) -> int:
    """Stop with a clear error when the largest batch's estimate exceeds the memory budget."""
    if not examples:
        return 0
    order = sorted(examples, key=lambda e: len(e.ids), reverse=True)[: cfg.batch_size]
    length = len(order[0].ids)
    kept = sum(sum(e.train[1:]) for e in order)
    need = estimate_step_bytes(cm, len(order), length, kept, cfg.checkpointing)
    budget = cfg.max_memory_gib * 2**30 if cfg.max_memory_gib else available_memory_bytes()
    if budget is not None and need > budget:
        raise ComposeError(
            f"a gate step on {len(order)}×{length} tokens needs ~{need / 2**30:.1f} GiB beyond the "
            f"model, {budget / 2**30:.1f} GiB available; lower --batch-size or --max-length"
            + ("" if cfg.checkpointing else ", or drop --no-checkpointing")
            + " (or raise --max-memory if the estimate is too cautious)")
    return need


def split(examples: list[Example], holdout: float, seed: int) -> tuple[list[Example], list[Example]]:
    """``(train, held-out)``; no hold-out below 10 examples."""
    if holdout <= 0 or len(examples) < 10:
        return examples, []
    order = list(range(len(examples)))
    random.Random(seed).shuffle(order)
    n = max(1, round(len(examples) * holdout))
    held = set(order[:n])
    return ([e for i, e in enumerate(examples) if i not in held],
            [e for i, e in enumerate(examples) if i in held])
