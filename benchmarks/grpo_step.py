"""One GRPO step, A/B: the kv rollout engine + completion-only loss vs the naive engine (+ the
full-vocabulary loss of before, with ``--legacy``). Not a CI test. Run from the repo root after
``tracec model prepare``:

    OMP_NUM_THREADS=1 python benchmarks/grpo_step.py multi_step_task_completion --engine kv \
        --groups 4 -G 8 --turns 2 --new-tokens 64 --limits --json-out runs/bench/kv_full.json

Prints (and writes) a JSON record: rollout wall time, unique prefill tokens, decode steps, update
wall time, the step's wall time; with ``--limits`` also the model's measured prefill rate and
decode-step time at the step's batch and context (for the rollout-efficiency bound); with
``--update-rows N`` the update of N episodes is also timed as if their group had reward variance
(advantages ±1), since a step whose groups are all flat skips the update.
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import torch
from record import emit

from tracec.harness.resolve import resolve_env
from tracec.llm import executor as executor_mod
from tracec.llm.executor import cache_kwarg as _cache_kwarg
from tracec.llm.kvbuffer import buffer_cache as _buffer_cache
from tracec.train import loss_forward as loss_forward_mod
from tracec.train import trainer as trainer_mod
from tracec.train.config import TrainConfig
from tracec.train.rollout import ChatRenderer, start_group

ROOT = Path(__file__).resolve().parent.parent


def legacy_token_logprobs(model, input_ids, attention_mask=None, start=1):
    """The loss pass before issue 11: fp32 log-softmax over the full vocabulary at every position."""
    logits = model(input_ids=input_ids).logits[:, :-1].float()
    logp = torch.log_softmax(logits, dim=-1).gather(-1, input_ids[:, 1:, None]).squeeze(-1)
    return torch.cat([torch.zeros_like(logp[:, :1]), logp], dim=1)


def naive_prefill_tokens(ep) -> int:
    """Tokens the naive engine prefills for this episode: its whole sequence before every turn."""
    total, seen_model = len(ep.prompt_ids), False
    for j, m in enumerate(ep.env_mask):
        if m and not seen_model and j > 0:
            total += len(ep.prompt_ids) + j
        seen_model = bool(m)
    return total


def measure_limits(model, prompt: list[int], rows: int, steps: int = 8) -> dict:
    """Prefill tokens/s (batch 1, 1024-token chunks) and one decode step's time at ``rows`` rows
    over this context, with plain transformers forwards (no rollout engine involved)."""
    kw = _cache_kwarg(model)
    from transformers.cache_utils import DynamicCache

    cache = DynamicCache()
    t0 = time.perf_counter()
    with torch.no_grad():
        for s in range(0, len(prompt), 1024):
            part = prompt[s: s + 1024]
            model(input_ids=torch.tensor([part]), position_ids=torch.arange(s, s + len(part))[None],
                  use_cache=True, logits_to_keep=1, **{kw: cache})
    prefill_s = time.perf_counter() - t0
    n = len(prompt)
    keys = [torch.zeros(rows, la.keys.shape[1], n + steps, la.keys.shape[3]) for la in cache.layers]
    values = [torch.zeros_like(k) for k in keys]
    for k, v, la in zip(keys, values, cache.layers):
        k[:, :, :n] = la.keys
        v[:, :, :n] = la.values
    del cache
    big = _buffer_cache(keys, values, n)
    tok = torch.full((rows, 1), prompt[-1])
    with torch.no_grad():
        model(input_ids=tok, position_ids=torch.full((rows, 1), n), use_cache=True,
              logits_to_keep=1, **{kw: big})  # warm-up step
        t0 = time.perf_counter()
        for i in range(1, steps):
            model(input_ids=tok, position_ids=torch.full((rows, 1), n + i), use_cache=True,
                  logits_to_keep=1, **{kw: big})
        decode_s = (time.perf_counter() - t0) / (steps - 1)
    return {"prefill_tokens_per_s": n / prefill_s, "prefill_probe_tokens": n,
            "decode_step_seconds": decode_s, "decode_probe_rows": rows, "decode_probe_context": n}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("env")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--engine", choices=["kv", "naive"], default="kv")
    ap.add_argument("--legacy", action="store_true",
                    help="today's step: naive engine + full-vocabulary loss, no memory plan")
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("-G", "--group-size", type=int, default=8)
    ap.add_argument("--turns", type=int, default=2)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--loss-forward", choices=["shared", "rows"], default="shared")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limits", action="store_true", help="also measure prefill rate and decode step")
    ap.add_argument("--update-rows", type=int, default=0,
                    help="also time an update of the first N episodes as if kept (advantages ±1)")
    ap.add_argument("--no-lean", action="store_true",
                    help="roll out through transformers' forward (peft's LoRA layers), not the lean "
                         "fused forward with LoRA (tracec.llm.lean): the A/B of round 9")
    ap.add_argument("--memory-gb", type=float, default=8.0)
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args()
    env = resolve_env(args.env, ROOT / "generated_envs")
    engine = "naive" if args.legacy else args.engine
    cfg = TrainConfig(model=args.model, env=env.name, group_size=args.group_size,
                      groups_per_step=args.groups, steps=1, max_turns=args.turns,
                      max_new_tokens=args.new_tokens, temperature=1.0, micro_batch=args.micro_batch,
                      rollout_engine=engine, seed=args.seed,
                      memory_gb=None if args.legacy else args.memory_gb,
                      grad_checkpointing=False if args.legacy else None,
                      loss_forward="rows" if args.legacy else args.loss_forward)
    if args.no_lean:
        executor_mod.eligible = lambda _model: False
    if args.legacy:
        loss_forward_mod.token_logprobs = legacy_token_logprobs
        trainer_mod.limit_heap_retention = lambda *_: False
    t0 = time.perf_counter()
    tr = trainer_mod.GRPOTrainer(cfg, env, ROOT / "runs" / "bench_grpo_step")
    record: dict = {"env": env.name, "engine": engine, "legacy_loss": args.legacy,
                    "groups": args.groups, "G": args.group_size, "turns": args.turns,
                    "new_tokens": args.new_tokens, "seed": args.seed,
                    "load_seconds": time.perf_counter() - t0}
    t0, c0 = time.perf_counter(), time.process_time()
    result = tr.train_step()
    record["step_wall_seconds"] = time.perf_counter() - t0
    record["step_cpu_seconds"] = time.process_time() - c0
    record["lean_rollouts"] = not args.no_lean
    m = result.metrics
    record.update({k: m[k] for k in ("gen_seconds", "prefill_tokens", "decode_steps",
                                     "decode_row_counts", "update_seconds",
                                     "kept_groups", "model_tokens", "trained_tokens", "reward_mean")})
    record["naive_prefill_tokens"] = sum(naive_prefill_tokens(e) for e in result.episodes)
    record["first_prompt_tokens"] = max(len(e.prompt_ids) for e in result.episodes)
    record["episode_tokens_max"] = max(e.length for e in result.episodes)
    record["plan"] = tr.plan.describe() if tr.plan else None
    if args.update_rows:
        eps = result.episodes[: args.update_rows]
        kept = [(e, 1.0 if i % 2 == 0 else -1.0) for i, e in enumerate(eps)]
        t0 = time.perf_counter()
        up = tr.update(kept)
        record["update_rows_seconds"] = time.perf_counter() - t0
        record["update_rows"] = len(kept)
        record["update_rows_tokens"] = sum(e.length for e in eps)
        record["update_rows_loss"] = up["loss"]
    if args.limits:
        renderer = ChatRenderer(tr.tokenizer)
        eps, _ = start_group(env.factory, 12345, 0, 1, 0, renderer)
        tr.policy.eval()
        counts = {int(k): v for k, v in m["decode_row_counts"].items()} or {1: 0}
        probes = {rows: measure_limits(tr.policy, eps[0].prompt_ids, rows) for rows in counts}
        first = next(iter(probes.values()))
        bound = (m["prefill_tokens"] / first["prefill_tokens_per_s"]
                 + sum(n * probes[r]["decode_step_seconds"] for r, n in counts.items()))
        record["limits"] = {"prefill_tokens_per_s": first["prefill_tokens_per_s"],
                            "prefill_probe_tokens": first["prefill_probe_tokens"],
                            "decode_step_seconds_by_rows": {str(r): p["decode_step_seconds"]
                                                            for r, p in probes.items()},
                            "bound_seconds": bound, "efficiency_ratio": m["gen_seconds"] / bound}
    record["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2
    emit(record, args.json_out)


if __name__ == "__main__":
    main()
