"""Warm-start behaviour cloning (``tracec train --warmup-sft N``) on oracle demonstrations.

A model that never emits a well-formed tool call gives GRPO groups with identical rewards, so
nothing is learned. The warm start shows it the oracle of ``tracec check`` (every gold call in
Hermes form, one per turn, then a report of every value to communicate) on *training* seeds and
takes ``N`` optimiser steps of cross-entropy on the assistant tokens only: the system prompt,
the user turns and the tool results are context, never targets. GRPO then runs as before.

Token layout matches the rollouts (:mod:`tracec.train.rollout`): the hint-free first prompt,
each assistant turn as its raw text followed by the template's end-of-turn marker (trained), and the environment's
reply rendered with the chat template as a separate segment (masked).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from peft import set_peft_model_state_dict
from safetensors.torch import load_file

from tracec.core.seeds import SeedRange
from tracec.llm.adapters import AdapterError, check_adapter_dir
from tracec.llm.chat import encode, end_of_turn, render_text
from tracec.llm.device import Placement
from tracec.runtime.oracle import run_oracle
from tracec.train.config import SEED_STRIDE, TrainConfig

SFT_SEED_OFFSET = 500_000_000  # demos come from the upper half of the run's training seeds
SFT_METRICS = "sft_metrics.jsonl"


class SFTError(ValueError):
    """The env cannot give oracle demonstrations, or the template cannot be masked."""


@dataclass
class Demo:
    """One oracle episode: chat messages whose assistant turns hold the raw turn text."""

    seed: int
    messages: list[dict]
    tools: list[dict] | None
    reward: float


def play_oracle(make_env: Callable[[], Any], seed: int) -> Demo:
    """The oracle's episode on ``seed`` (hint-free prompt)."""
    env = make_env()
    inner = getattr(env, "unwrapped", env)
    if getattr(inner, "capability", None) is None or not hasattr(inner, "instance"):
        raise SFTError(f"--warmup-sft needs a compiled capability env (oracle demonstrations); "
                       f"{type(inner).__name__} is not one")
    run = run_oracle(env, seed, options={"hint": False})
    tools = run.reset_info.get("tools") or None
    messages, reward, played = run.messages, run.reward, run.turns
    env.close()
    # the env stores parsed tool calls; train on the raw text the oracle (and a model) emits
    out, k = [], 0
    for m in messages:
        if m.get("role") == "assistant":
            out.append({"role": "assistant", "content": played[k]})
            k += 1
        else:
            out.append({k2: v for k2, v in m.items() if k2 in ("role", "content", "tool_call_id", "name")})
    while out and out[-1].get("role") != "assistant":  # nothing after the last turn is learned
        out.pop()
    return Demo(seed, out, tools, float(reward))


def tokenize_demo(tokenizer, messages: list[dict], tools: list[dict] | None) -> tuple[list[int], list[int]]:
    """``(input_ids, mask)``; ``mask`` is 1 exactly on each assistant turn's text and its
    end-of-turn marker (read from the template, :func:`tracec.llm.chat.end_of_turn`). Needs a prefix-stable template (every message renders to its own turn)."""

    marker = end_of_turn(tokenizer)

    def render(msgs: list[dict], gen: bool) -> str:
        return render_text(tokenizer, msgs, tools, gen)

    def ids(text: str) -> list[int]:
        return encode(tokenizer, text)

    input_ids: list[int] = []
    mask: list[int] = []
    done = ""  # text covered so far
    for i, m in enumerate(messages):
        if m.get("role") != "assistant":
            continue
        head = render(messages[:i], gen=True)
        full = render(messages[: i + 1], gen=False)
        if not head.startswith(done) or not full.startswith(head):
            raise SFTError("the chat template is not prefix-stable; cannot mask assistant turns")
        body = full[len(head):]
        cut = body.find(marker)
        if cut < 0:
            raise SFTError(f"the chat template does not end this assistant turn with {marker!r}")
        context = ids(head[len(done):])
        target = ids(body[: cut + len(marker)])
        input_ids += context + target
        mask += [0] * len(context) + [1] * len(target)
        done = head + body[: cut + len(marker)]
    return input_ids, mask


def masked_nll(model, rows: list[tuple[list[int], list[int]]], pad_id: int,
               device: str) -> tuple[torch.Tensor, int, int]:
    """Summed next-token NLL over masked positions, trained-token count, correct argmax count.
    Logits are kept only at trained positions (no full-vocabulary log-softmax elsewhere)."""
    width = max(len(r[0]) for r in rows)
    ids = torch.tensor([r[0] + [pad_id] * (width - len(r[0])) for r in rows], device=device)
    attn = torch.tensor([[1] * len(r[0]) + [0] * (width - len(r[0])) for r in rows], device=device)
    mask = torch.tensor([r[1] + [0] * (width - len(r[1])) for r in rows], device=device).bool()
    lm = model.get_base_model() if hasattr(model, "get_base_model") else model
    hidden = lm.get_decoder()(input_ids=ids, attention_mask=attn).last_hidden_state
    sel = mask[:, 1:]
    h = hidden[:, :-1][sel]
    targets = ids[:, 1:][sel]
    logits = lm.get_output_embeddings()(h).float()
    logp = torch.log_softmax(logits, dim=-1)
    nll = -logp.gather(-1, targets[:, None]).squeeze(-1)
    correct = int((logits.argmax(-1) == targets).sum())
    return nll.sum(), int(sel.sum()), correct


def demo_seed(train_seeds: SeedRange, run_seed: int, k: int, stride: int) -> int:
    """The ``k``-th demonstration seed of a run (inside its training range)."""
    return train_seeds.at(SFT_SEED_OFFSET + run_seed * stride + k)


@dataclass(frozen=True)
class SFTContext:
    """What the warm start needs from a run, and nothing more: its settings (``warmup_sft``,
    ``sft_batch``, ``sft_lr``, seeds, ``micro_batch``, optimiser settings), the policy whose LoRA
    weights it trains and its tokenizer, the env to play the oracle in, the token bound of a
    sequence, where the model runs, the output folder, the number of processes and, on CPU, the
    heap tuner for a step's lengths (``tune_heap(prompt_tokens, tokens)``)."""

    config: TrainConfig
    model: Any
    tokenizer: Any
    make_env: Callable[[], Any]
    max_total_tokens: int
    place: Placement
    out: Path
    processes: int = 1
    tune_heap: Callable[[int, int], None] | None = None


def warmup_sft(run: SFTContext, on_step: Callable[[dict[str, Any]], None] | None = None
               ) -> dict[str, Any]:
    """``config.warmup_sft`` optimiser steps of behaviour cloning on ``run.model``; returns a
    summary for ``tracec.json`` and writes one line per step to ``OUT/sft_metrics.jsonl``."""
    cfg = run.config
    if run.processes > 1:
        raise SFTError("--warmup-sft runs in a single process; start it without accelerate launch")
    train_seeds = SeedRange(start=cfg.train_seeds[0], stop=cfg.train_seeds[1])
    model = run.model
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.sft_lr, weight_decay=cfg.weight_decay)
    path = Path(run.out) / SFT_METRICS
    path.unlink(missing_ok=True)
    pad = run.tokenizer.pad_token_id
    k = skipped = 0
    seeds_used: list[int] = []
    last: dict[str, Any] = {}
    first_loss = first_acc = None
    for step in range(1, cfg.warmup_sft + 1):
        t0 = time.perf_counter()
        rows = []
        tries = 0
        while len(rows) < cfg.sft_batch:
            seed = demo_seed(train_seeds, cfg.seed, k, SEED_STRIDE)
            k += 1
            tries += 1
            if tries > 20 * cfg.sft_batch:
                raise SFTError("the oracle fails on almost every seed; no demonstrations to clone")
            demo = play_oracle(run.make_env, seed)
            if demo.reward < 1.0 - 1e-9:
                skipped += 1
                continue
            ids, mask = tokenize_demo(run.tokenizer, demo.messages, demo.tools)
            if len(ids) > run.max_total_tokens:
                skipped += 1
                continue
            rows.append((ids, mask))
            seeds_used.append(seed)
        if run.place.on_cpu and run.tune_heap is not None:
            run.tune_heap(min(m.index(1) if 1 in m else len(m) for _, m in rows),
                              max(len(ids) for ids, _ in rows))
        model.train()
        opt.zero_grad(set_to_none=True)
        total_tokens = sum(sum(m) for _, m in rows)
        loss_sum, correct = 0.0, 0
        for i in range(0, len(rows), cfg.micro_batch):
            nll, _, ok = masked_nll(model, rows[i: i + cfg.micro_batch], pad, run.place.target)
            (nll / total_tokens).backward()
            loss_sum += nll.item()
            correct += ok
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm))
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss = loss_sum / total_tokens
        first_loss = loss if first_loss is None else first_loss
        first_acc = correct / total_tokens if first_acc is None else first_acc
        last = {"sft_step": step, "sft_loss": loss, "sft_token_accuracy": correct / total_tokens,
                "sft_tokens": total_tokens, "sft_sequences": len(rows),
                "sft_seq_tokens": sum(len(r[0]) for r in rows), "grad_norm": grad_norm,
                "skipped_demos": skipped, "step_seconds": time.perf_counter() - t0}
        with path.open("a") as fh:
            fh.write(json.dumps(last) + "\n")
        if on_step:
            on_step(last)
    return {"steps": cfg.warmup_sft, "batch": cfg.sft_batch, "lr": cfg.sft_lr,
            "demos": len(seeds_used), "skipped_demos": skipped,
            "demo_seeds": [min(seeds_used), max(seeds_used)] if seeds_used else None,
            "loss_first": first_loss, "loss_last": last.get("sft_loss"),
            "token_accuracy_first": first_acc, "token_accuracy_last": last.get("sft_token_accuracy")}


def load_init_adapter(policy, adapter_dir: str | Path, config) -> dict[str, Any] | None:
    """Start from the weights of an earlier adapter (e.g. an SFT-only run) instead of a fresh
    LoRA; it must have the same shape. Returns that run's SFT summary (kept in ``tracec.json``)."""
    d = Path(adapter_dir)
    try:
        check_adapter_dir(d)  # a truncated or foreign folder: one line, before peft sees it
    except AdapterError as exc:
        raise SFTError(f"--init-adapter: {exc}") from None
    try:
        shape = json.loads((d / "adapter_config.json").read_text())
        weights = load_file(str(d / "adapter_model.safetensors"))
    except (OSError, json.JSONDecodeError) as exc:
        raise SFTError(f"--init-adapter {d}: not a peft adapter folder ({exc})") from None
    want = (config.lora.rank, config.lora.alpha, sorted(config.lora.targets))
    got = (shape.get("r"), shape.get("lora_alpha"), sorted(shape.get("target_modules") or []))
    if want != got:
        raise SFTError(f"--init-adapter {d} has LoRA rank/alpha/targets {got}, this run {want}; "
                       "pass the same --lora-rank, --lora-alpha and --lora-targets")
    set_peft_model_state_dict(policy, weights)
    try:
        meta = json.loads((d / "tracec.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {"init_adapter": str(d)}
    trained = (meta.get("seeds") or {}).get("train")
    if trained and list(trained) != list(config.train_seeds):
        raise SFTError(f"--init-adapter {d} was trained on seeds {trained}, this run on "
                       f"{list(config.train_seeds)}; use the same --train-seeds")
    return {**(meta.get("sft") or {}), "init_adapter": str(d)}
