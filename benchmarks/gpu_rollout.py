"""Rollout throughput of the kv engine on a GPU against the model's measured limits.

No download: the model is a random-initialised Qwen3-0.6B (config written here), the workload is
synthetic token ids shaped like a GRPO step (``--groups`` prompts of ``--prompt`` tokens, G
samples each, ``--turns`` turns of ``--new-tokens`` tokens, ``--env-tokens`` environment tokens
between turns; no stop token, so every turn runs its full budget). Measures

* prefill limit: tokens/s of one prompt forward (batch 1),
* decode limit: seconds per decode step at the step's batch and context,
* the kv engine's rollout: wall time, generated tokens/s, unique prefill tokens, decode steps,
  and the efficiency ratio wall / (prefill tokens ÷ prefill rate + decode steps × step time),
* optionally (``--naive``) ``transformers.generate`` re-prefilling every conversation per turn.

    python benchmarks/gpu_rollout.py --json-out gpu_rollout.json
"""

from __future__ import annotations

import argparse
import json
import time

import torch

QWEN3_0_6B = {"vocab_size": 151936, "hidden_size": 1024, "intermediate_size": 3072,
              "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
              "head_dim": 128, "max_position_embeddings": 40960, "rope_theta": 1_000_000.0,
              "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "hidden_act": "silu",
              "attention_bias": False}


def build_model(device: str, dtype: torch.dtype):
    from transformers import AutoModelForCausalLM, Qwen3Config

    torch.manual_seed(0)
    cfg = Qwen3Config(**QWEN3_0_6B)
    cfg._attn_implementation = "sdpa"
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
    return model.eval()


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def limits(model, device: str, prompt: int, rows: int, steps: int = 16) -> dict:
    from tracec.llm.executor import cache_kwarg as _cache_kwarg
    from tracec.llm.kvbuffer import buffer_cache as _buffer_cache

    kw = _cache_kwarg(model)
    ids = torch.randint(0, 150000, (1, prompt), device=device)
    with torch.no_grad():
        model(input_ids=ids[:, :256], use_cache=False, logits_to_keep=1)  # warm-up
        sync(device)
        t0 = time.perf_counter()
        from transformers.cache_utils import DynamicCache

        cache = DynamicCache()
        model(input_ids=ids, use_cache=True, logits_to_keep=1, **{kw: cache})
        sync(device)
        prefill_s = time.perf_counter() - t0
        keys = [torch.zeros(rows, la.keys.shape[1], prompt + steps + 1, la.keys.shape[3],
                            dtype=la.keys.dtype, device=device) for la in cache.layers]
        values = [torch.zeros_like(k) for k in keys]
        for k, v, la in zip(keys, values, cache.layers):
            k[:, :, :prompt] = la.keys
            v[:, :, :prompt] = la.values
        del cache
        big = _buffer_cache(keys, values, prompt)
        tok = torch.zeros((rows, 1), dtype=torch.long, device=device)
        model(input_ids=tok, position_ids=torch.full((rows, 1), prompt, device=device), use_cache=True,
              logits_to_keep=1, **{kw: big})
        sync(device)
        t0 = time.perf_counter()
        for i in range(1, steps):
            model(input_ids=tok, position_ids=torch.full((rows, 1), prompt + i, device=device),
                  use_cache=True, logits_to_keep=1, **{kw: big})
        sync(device)
        step_s = (time.perf_counter() - t0) / (steps - 1)
    return {"prefill_tokens_per_s": prompt / prefill_s, "decode_step_seconds": step_s,
            "decode_rows": rows, "context": prompt}


def kv_rollout(model, device: str, args) -> dict:
    from tracec.llm.engine import KVEngine

    g = torch.Generator().manual_seed(1)
    engine = KVEngine(model, 0, [], device=device, max_rows=args.rows)
    shared = torch.randint(0, 150000, (args.shared,), generator=g).tolist()
    seqs = {}
    sync(device)
    t0 = time.perf_counter()
    key = 0
    for _ in range(args.groups):
        own = torch.randint(0, 150000, (args.prompt - args.shared,), generator=g).tolist()
        for _ in range(args.G):
            seqs[key] = shared + own
            engine.start(key, seqs[key])
            key += 1
    generated = 0
    for turn in range(args.turns):
        keys = list(seqs)
        outs = engine.generate(keys, [seqs[k] for k in keys], [args.new_tokens] * len(keys), 1.0)
        for k, out in zip(keys, outs):
            generated += len(out)
            seqs[k] = seqs[k] + out
            if turn + 1 < args.turns:
                seqs[k] += torch.randint(0, 150000, (args.env_tokens,), generator=g).tolist()
    sync(device)
    wall = time.perf_counter() - t0
    st = engine.stats
    return {"wall_seconds": wall, "generated_tokens": generated, "tokens_per_s": generated / wall,
            "prefill_tokens": st.prefill_tokens, "decode_steps": st.decode_steps,
            "decode_mean_rows": sum(st.decode_rows) / max(1, len(st.decode_rows))}


def naive_rollout(model, device: str, args) -> dict:
    g = torch.Generator().manual_seed(1)
    shared = torch.randint(0, 150000, (args.shared,), generator=g).tolist()
    seqs = []
    for _ in range(args.groups):
        own = torch.randint(0, 150000, (args.prompt - args.shared,), generator=g).tolist()
        seqs += [shared + own for _ in range(args.G)]
    sync(device)
    t0 = time.perf_counter()
    generated = 0
    for turn in range(args.turns):
        new = []
        for s in range(0, len(seqs), args.rows):
            chunk = seqs[s: s + args.rows]
            width = max(len(x) for x in chunk)
            ids = torch.tensor([[0] * (width - len(x)) + x for x in chunk], device=device)
            mask = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in chunk], device=device)
            with torch.no_grad():
                out = model.generate(input_ids=ids, attention_mask=mask, do_sample=True, top_k=0,
                                     top_p=1.0, temperature=1.0, max_new_tokens=args.new_tokens,
                                     min_new_tokens=args.new_tokens, pad_token_id=0)
            new += [x + row for x, row in zip(chunk, out[:, width:].tolist())]
            generated += out[:, width:].numel()
        seqs = [x + torch.randint(0, 150000, (args.env_tokens,), generator=g).tolist()
                if turn + 1 < args.turns else x for x in new]
    sync(device)
    wall = time.perf_counter() - t0
    return {"wall_seconds": wall, "generated_tokens": generated, "tokens_per_s": generated / wall}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("-G", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=5400, help="first-prompt tokens")
    ap.add_argument("--shared", type=int, default=4500, help="tokens all prompts share (tools)")
    ap.add_argument("--turns", type=int, default=2)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--env-tokens", type=int, default=120)
    ap.add_argument("--rows", type=int, default=32, help="batch rows per forward")
    ap.add_argument("--naive", action="store_true", help="also time transformers.generate")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args()
    model = build_model(args.device, getattr(torch, args.dtype))
    rows = min(args.rows, args.groups * args.G)
    record = {"model": "Qwen3-0.6B config, random init", "device": args.device, "dtype": args.dtype,
              "gpu": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else None,
              "workload": {k: getattr(args, k) for k in ("groups", "G", "prompt", "shared", "turns",
                                                          "new_tokens", "env_tokens", "rows")}}
    record["limits"] = limits(model, args.device, args.prompt, rows)
    kv_rollout(model, args.device, args)  # warm-up (kernels, allocator)
    record["kv"] = kv = kv_rollout(model, args.device, args)
    lim = record["limits"]
    bound = kv["prefill_tokens"] / lim["prefill_tokens_per_s"] + kv["decode_steps"] * lim["decode_step_seconds"]
    kv["bound_seconds"] = bound
    kv["efficiency_ratio"] = kv["wall_seconds"] / bound
    if args.naive:
        record["naive"] = naive_rollout(model, args.device, args)
        record["speedup_vs_naive"] = record["naive"]["wall_seconds"] / kv["wall_seconds"]
    if args.device.startswith("cuda"):
        record["peak_gpu_gb"] = torch.cuda.max_memory_allocated() / 1024 ** 3
    text = json.dumps(record, indent=1)
    print(text, flush=True)
    if args.json_out:
        with open(args.json_out, "w") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
