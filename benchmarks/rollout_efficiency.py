"""Rollout efficiency of the generation engine: wall ÷ (unique prefill tokens ÷ prefill rate +
Σ decode steps × one decode step's time at that batch). Not a CI test. Run from the repo root
after ``tracec model prepare``:

    OMP_NUM_THREADS=1 python benchmarks/rollout_efficiency.py reservation_lookup_compact \
        --adapter benchmarks/learning/adapters/sft8 --groups 4 -G 8 --turns 2 --new-tokens 64

One GRPO step's rollout (``groups`` seeds × G samples, temperature 1, at most ``turns`` turns)
through :class:`tracec.llm.engine.KVEngine`, then the limits measured with plain transformers
forwards in the same process: the prefill rate (batch 1, 1024-token chunks, the env's first
prompt) and a decode step's time at 1, 2, 4, … rows over a context of the mean decode context
(each row its own copy of the KV, as ``generate()`` holds it); step times at other row counts
are interpolated linearly. The ratio is given in wall time and in CPU time (the process's own,
which a loaded shared machine disturbs less). Prints a JSON record (``--json-out`` also writes it).
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import time
from pathlib import Path

import torch
from record import emit
from transformers.cache_utils import DynamicCache

from tracec.harness.resolve import resolve_env
from tracec.llm.chat import ChatRenderer
from tracec.llm.engine import KVEngine
from tracec.llm.executor import cache_kwarg
from tracec.llm.kvbuffer import buffer_cache
from tracec.llm.loading import load_model, stop_token_ids
from tracec.train.rollout import RolloutStats, run_episodes, start_group

ROOT = Path(__file__).resolve().parent.parent


def prefill_rate(model, prompt: list[int]) -> tuple[float, float]:
    """Tokens per wall second and per CPU second of a batch-1 prefill of ``prompt`` (1024-token
    chunks, keys/values kept)."""
    kw = cache_kwarg(model)
    cache = DynamicCache()
    t0, c0 = time.perf_counter(), time.process_time()
    with torch.no_grad():
        for s in range(0, len(prompt), 1024):
            part = prompt[s: s + 1024]
            model(input_ids=torch.tensor([part]), position_ids=torch.arange(s, s + len(part))[None],
                  use_cache=True, logits_to_keep=1, **{kw: cache})
    return len(prompt) / (time.perf_counter() - t0), len(prompt) / (time.process_time() - c0)


def decode_step(model, prompt: list[int], context: int, rows: int, steps: int = 6
                ) -> tuple[float, float]:
    """Wall and CPU seconds of one decode step at ``rows`` rows over ``context`` cached positions."""
    kw = cache_kwarg(model)
    ids = (prompt * (context // len(prompt) + 1))[:context]
    cache = DynamicCache()
    with torch.no_grad():
        model(input_ids=torch.tensor([ids]), use_cache=True, logits_to_keep=1, **{kw: cache})
    keys = [torch.zeros(rows, la.keys.shape[1], context + steps, la.keys.shape[3]) for la in cache.layers]
    values = [torch.zeros_like(k) for k in keys]
    for k, v, la in zip(keys, values, cache.layers):
        k[:, :, :context] = la.keys
        v[:, :, :context] = la.values
    del cache
    big = buffer_cache(keys, values, context)
    tok = torch.full((rows, 1), prompt[-1])
    mask = torch.ones(rows, context + steps, dtype=torch.long)
    with torch.no_grad():
        model(input_ids=tok, attention_mask=mask[:, : context + 1],
              position_ids=torch.full((rows, 1), context), use_cache=True, logits_to_keep=1,
              **{kw: big})  # warm-up
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(1, steps):
            model(input_ids=tok, attention_mask=mask[:, : context + i + 1],
                  position_ids=torch.full((rows, 1), context + i), use_cache=True,
                  logits_to_keep=1, **{kw: big})
    return (time.perf_counter() - t0) / (steps - 1), (time.process_time() - c0) / (steps - 1)


def interpolate(points: dict[int, float], rows: int) -> float:
    xs = sorted(points)
    if rows <= xs[0]:
        return points[xs[0]]
    for a, b in itertools.pairwise(xs):
        if rows <= b:
            return points[a] + (points[b] - points[a]) * (rows - a) / (b - a)
    return points[xs[-1]] * rows / xs[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("env")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--adapter", default=None)
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("-G", "--group-size", type=int, default=8)
    ap.add_argument("--turns", type=int, default=2)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--rows", type=int, default=32, help="engine rows decoded together")
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args()
    env = resolve_env(args.env, ROOT / "generated_envs")
    record: dict = {"env": env.name, "adapter": args.adapter, "groups": args.groups,
                    "G": args.group_size, "turns": args.turns, "new_tokens": args.new_tokens,
                    "rows": args.rows, "threads": torch.get_num_threads(),
                    "loadavg_start": os.getloadavg()}
    model, tok, _ = load_model(args.model, args.adapter)
    stops = stop_token_ids(tok)
    renderer = ChatRenderer(tok)
    episodes, envs = [], []
    for g in range(args.groups):
        eps, es = start_group(env.factory, 7_000_000 + 101 * g + args.seed, g, args.group_size, 0,
                              renderer)
        episodes += eps
        envs += es
    engine = KVEngine(model, tok.pad_token_id, stops, max_rows=args.rows)
    stats = RolloutStats()
    torch.manual_seed(args.seed)
    t0, c0 = time.perf_counter(), time.process_time()
    run_episodes(model, tok, episodes, envs, stop_ids=stops, max_new_tokens=args.new_tokens,
                 max_total_tokens=8192, max_turns=args.turns, temperature=args.temperature,
                 gen_batch=args.rows, stats=stats, engine=engine)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    counts = stats.decode_row_counts
    contexts = [e.length for e in episodes]
    context = int(sum(len(e.prompt_ids) for e in episodes) / len(episodes)
                  + (sum(contexts) / len(contexts) - sum(len(e.prompt_ids) for e in episodes) / len(episodes)) / 2)
    record.update({"rollout_wall_seconds": wall, "rollout_cpu_seconds": cpu, "gen_seconds": stats.gen_seconds,
                   "prefill_tokens": stats.prefill_tokens, "decode_steps": stats.decode_steps,
                   "decode_row_counts": {str(k): v for k, v in sorted(counts.items())},
                   "generated_tokens": stats.gen_tokens,
                   "engine_prefill_seconds": engine.stats.prefill_seconds,
                   "engine_decode_seconds": engine.stats.decode_seconds,
                   "turns_per_episode": sum(e.turns for e in episodes) / len(episodes),
                   "first_prompt_tokens": len(episodes[0].prompt_ids),
                   "naive_prefill_tokens_lower_bound": sum(len(e.prompt_ids) for e in episodes),
                   "mean_decode_context": context,
                   "reward_mean": sum(e.reward for e in episodes) / len(episodes)})
    rate, rate_cpu = prefill_rate(model, episodes[0].prompt_ids)
    probe_rows = sorted({r for r in (1, 2, 4, 8, 16, 32, 64) if r <= max(counts)} | {max(counts)})
    probes = {r: decode_step(model, episodes[0].prompt_ids, context, r) for r in probe_rows}
    steps = {r: w for r, (w, _) in probes.items()}
    steps_cpu = {r: c for r, (_, c) in probes.items()}
    decode_bound = sum(n * interpolate(steps, r) for r, n in counts.items())
    decode_bound_cpu = sum(n * interpolate(steps_cpu, r) for r, n in counts.items())
    bound = stats.prefill_tokens / rate + decode_bound
    bound_cpu = stats.prefill_tokens / rate_cpu + decode_bound_cpu
    record["limits"] = {"prefill_tokens_per_s": rate, "prefill_tokens_per_cpu_s": rate_cpu,
                        "decode_step_seconds_by_rows": {str(r): s for r, s in steps.items()},
                        "decode_step_cpu_seconds_by_rows": {str(r): s for r, s in steps_cpu.items()},
                        "prefill_bound_seconds": stats.prefill_tokens / rate,
                        "decode_bound_seconds": decode_bound, "bound_seconds": bound,
                        "bound_cpu_seconds": bound_cpu}
    record["efficiency_ratio"] = wall / bound
    record["efficiency_ratio_cpu"] = cpu / bound_cpu
    record["loadavg_end"] = os.getloadavg()
    record["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2
    emit(record, args.json_out)


if __name__ == "__main__":
    main()
