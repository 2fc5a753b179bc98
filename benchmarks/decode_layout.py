"""Decode step time with the checkpoint's weight layout vs column-major frozen projections
(:func:`pack_for_decode`), at several batch sizes, alternating the two layouts in one process.
An experiment, not shipped: the CPU BLAS reads one projection of a single row 1.5× faster from a
column-major weight, but in the whole model the step gained ≤ 10 % and the logits moved by up to
5e-5 (benchmarks/README.md, round 6). Not a CI test. Run from the repo root after ``tracec model prepare``:

    OMP_NUM_THREADS=1 python benchmarks/decode_layout.py --context 800 --rows 1,4,16,50

Both models are the same checkpoint; the step is one token per row over ``--context`` cached
positions (a buffer cache, as the engine holds it). Reports the median step seconds of each
layout, their ratio, and the largest difference between the two layouts' logits.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from record import emit
from transformers.cache_utils import DynamicCache

from tracec.llm.executor import cache_kwarg
from tracec.llm.loading import load_model


def pack_for_decode(model) -> int:
    """Give every frozen, row-major ``nn.Linear`` weight of ``model`` on CPU a column-major
    layout (in place; values and shapes unchanged). Weights shared with another module (a tied
    embedding, whose row lookups want rows) and trainable ones are left as they are. Returns the
    number of weights re-laid."""
    tied = {id(p) for m in model.modules() if isinstance(m, torch.nn.Embedding) for p in m.parameters()}
    done = 0
    with torch.no_grad():
        for module in model.modules():
            if not isinstance(module, torch.nn.Linear):
                continue
            w = module.weight
            if (w.requires_grad or id(w) in tied or w.device.type != "cpu" or w.dim() != 2
                    or not w.is_contiguous() or min(w.shape) < 2):
                continue
            w.data = w.data.t().contiguous().t()
            done += 1
    return done


def _cache(model, ids: torch.Tensor, rows: int):
    kw = cache_kwarg(model)
    probe = DynamicCache()
    with torch.no_grad():
        model(input_ids=ids, use_cache=True, logits_to_keep=1, **{kw: probe})
    keys = [la.keys.expand(rows, -1, -1, -1).contiguous() for la in probe.layers]
    values = [la.values.expand(rows, -1, -1, -1).contiguous() for la in probe.layers]
    return keys, values


def step(model, keys, values, context: int, rows: int) -> tuple[float, torch.Tensor]:
    """Seconds of one decode step, and its logits (the cache is rolled back after)."""
    cache = DynamicCache()
    for i, (k, v) in enumerate(zip(keys, values)):
        cache.update(k, v, i)
    tok = torch.full((rows, 1), 1234)
    pos = torch.full((rows, 1), context)
    t0 = time.perf_counter()
    with torch.no_grad():
        logits = model(input_ids=tok, position_ids=pos, use_cache=True, logits_to_keep=1,
                       **{cache_kwarg(model): cache}).logits
    return time.perf_counter() - t0, logits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--context", type=int, default=800)
    ap.add_argument("--rows", default="1,4,16,50")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args()
    plain, _, _ = load_model(args.model, tokenizer=False)
    packed, _, _ = load_model(args.model, tokenizer=False)
    relaid = pack_for_decode(packed.requires_grad_(False))
    ids = torch.randint(100, plain.config.vocab_size - 100, (1, args.context),
                        generator=torch.Generator().manual_seed(0))
    record: dict = {"model": args.model, "context": args.context, "relaid_weights": relaid,
                    "threads": torch.get_num_threads(), "loadavg_start": os.getloadavg()[0], "rows": {}}
    for rows in (int(r) for r in args.rows.split(",")):
        kv = _cache(plain, ids, rows)
        times: dict[str, list[float]] = {"plain": [], "packed": []}
        diff = 0.0
        for _ in range(args.repeats):
            t_plain, a = step(plain, *kv, args.context, rows)
            t_packed, b = step(packed, *kv, args.context, rows)
            times["plain"].append(t_plain)
            times["packed"].append(t_packed)
            diff = max(diff, float((a - b).abs().max()))
        med = {k: statistics.median(v) for k, v in times.items()}
        record["rows"][str(rows)] = {"plain_seconds": med["plain"], "packed_seconds": med["packed"],
                                     "speedup": med["plain"] / med["packed"], "max_logit_diff": diff}
        print(rows, record["rows"][str(rows)], flush=True)
    record["loadavg_end"] = os.getloadavg()[0]
    emit(record, args.json_out)


if __name__ == "__main__":
    main()
