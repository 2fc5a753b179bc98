"""Where a classifier-routed composed model's eval time goes: first-turn generation, per call.

    OMP_NUM_THREADS=1 python benchmarks/compose_classifier_speed.py COMPOSED_DIR --env ENV.py [--adapter DIR] \
        [--tasks 10] [--env-seeds 1000000000] [--reps 3] [--max-new-tokens 64]

On the first prompts of ``--tasks`` seeds of ``--env`` (one batch, greedy), times, alternating
the variants within each repetition (the box is shared; read the ratios, not the seconds):

* ``classify``: the router's decision for every task of the batch (once per task in an eval);
* ``merge``: entering and leaving one merge (``W + Σ w B A`` and the restore), per merge group;
* ``composed_cached``: ``ComposedModel.generate`` as ``tracec eval`` runs it (decisions cached,
  one merge per group, the shared prompt prefix's KV cache kept per merge);
* ``composed_uncached``: the same merges and generation without the prefix cache (before it);
* ``single``: ``--adapter`` on its own, as ``local:MODEL+adapter:DIR`` runs it (peft, prefix cache).

Every variant is warmed up once first, so cached variants are timed as later turns see them.
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path


def first_prompts(env_path: Path, start: int, n: int) -> tuple[list[list[dict]], list[dict] | None]:
    from tracec.harness.resolve import env_class, import_path

    env_cls = env_class(import_path(env_path))
    batch, tools = [], None
    for seed in range(start, start + n):
        env = env_cls()
        _, info = env.reset(seed=seed, options={"hint": False})
        batch.append(list(info["messages"]))
        tools = info.get("tools") or tools
        env.close()
    return batch, tools


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("composed", type=Path)
    ap.add_argument("--env", type=Path, required=True)
    ap.add_argument("--adapter", type=Path, default=None, help="a single adapter to time beside it")
    ap.add_argument("--tasks", type=int, default=10)
    ap.add_argument("--env-seeds", type=int, default=10**9)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    args = ap.parse_args()

    import torch

    from tracec.compose.api import load_composed
    from tracec.compose.classify import classify, generate_classified
    from tracec.llm.local import LocalChatModel, decode_completion, generate_ids

    torch.manual_seed(0)
    batch, tools = first_prompts(args.env, args.env_seeds, args.tasks)
    cm = load_composed(args.composed)
    spec = cm.config.classifier
    n_new = args.max_new_tokens

    def do_classify() -> list:
        return [classify(cm, m, spec) for m in batch]

    decisions = do_classify()
    groups: dict[tuple[float, ...], list[int]] = {}
    for i, d in enumerate(decisions):
        groups.setdefault(tuple(d.weights), []).append(i)

    def do_merge() -> None:
        for w in groups:
            if any(w[1:]):
                with cm.merged(list(w)):
                    pass

    def composed_cached() -> list[str]:
        return generate_classified(cm, batch, tools, n_new, 0.0, None, spec)

    def composed_uncached() -> list[str]:
        out = [""] * len(batch)
        for w, idx in groups.items():
            sub = [batch[i] for i in idx]
            ctx = cm.merged(list(w)) if any(w[1:]) else cm.forced(0)
            with ctx:  # generate_ids without a prefix cache: every prompt prefilled in full
                ids = generate_ids(cm.model, cm.tokenizer, [cm.render(m, tools) for m in sub], cm.stop_ids,
                                   n_new, 0.0, None)
                for i, one in zip(idx, ids):
                    out[i] = decode_completion(cm.tokenizer, one, cm.stop_ids)
        return out

    variants = {"classify": do_classify, "merge": do_merge, "composed_cached": composed_cached,
                "composed_uncached": composed_uncached}
    if args.adapter:
        single = LocalChatModel("smollm2", adapter=str(args.adapter))
        variants["single"] = lambda: single.generate(batch, tools, n_new, 0.0, None)
    outputs = {name: fn() for name, fn in variants.items()}  # warm-up (fills the prefix caches)
    same = outputs["composed_cached"] == outputs["composed_uncached"]
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.reps):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    report = {
        "tasks": args.tasks, "env": str(args.env), "max_new_tokens": n_new, "reps": args.reps,
        "groups": {",".join(f"{x:g}" for x in w): len(idx) for w, idx in groups.items()},
        "prompt_tokens": [len(cm.render(m, tools)) for m in batch[:1]],
        "seconds_median": {k: round(v, 3) for k, v in med.items()},
        "seconds_all": {k: [round(x, 3) for x in v] for k, v in times.items()},
        "uncached_over_cached": round(med["composed_uncached"] / med["composed_cached"], 2),
        "cached_and_uncached_outputs_equal": same,
    }
    if "single" in med:
        report["composed_cached_over_single"] = round(med["composed_cached"] / med["single"], 2)
        report["composed_uncached_over_single"] = round(med["composed_uncached"] / med["single"], 2)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
