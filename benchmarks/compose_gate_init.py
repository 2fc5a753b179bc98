"""Which gate start gives the router a useful gradient? (tiny model, 2 adapters, CPU, ~2 min)

    OMP_NUM_THREADS=1 python benchmarks/compose_gate_init.py [--steps 16] [--seeds 3] [--json]

Data: two prompt families; answers to flight questions are sampled from expert 1
(alpha_skill), answers to order questions by expert 2 (beta_skill), so the best router sends each
family to its writer. Train/held-out split by conversation. For every option and seed: the
gate-gradient norm the cross-entropy alone gives at step 0, and after training the held-out
assistant-token CE under the inference routing (top-1), as the share of the gap closed between the
base model (0 %) and the oracle that forces each conversation's writer (100 %), plus the share of
held-out tokens routed to the writer. Prints a Markdown table (mean ± sd over seeds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OPTIONS = {  # name -> ComposeTrainConfig overrides
    "zeros, LB over N+1 (before)": {"warmup": "none", "lb_over": "all"},
    "zeros, LB over N": {"warmup": "none"},
    "zeros + dense warm-up 8 steps, LB over N (default)": {"warmup": "dense", "warmup_steps": 8},
    "zeros + dense warm-up ¼ of steps, LB over N": {"warmup": "dense", "warmup_frac": 0.25},
    "zeros + dense warm-up ½ of steps, LB over N": {"warmup": "dense", "warmup_frac": 0.5},
    "zeros + top-2 warm-up ½ of steps, LB over N": {"warmup": "top2", "warmup_frac": 0.5},
    "zeros + dense warm-up ½ of steps, LB over N+1": {"warmup": "dense", "warmup_frac": 0.5,
                                                      "lb_over": "all"},
    "normal init (logit std 0.5), LB over N": {"warmup": "none", "gate_init": "normal",
                                               "gate_init_scale": 0.5},
    "normal init (logit std 0.5), LB over N+1": {"warmup": "none", "gate_init": "normal",
                                                 "gate_init_scale": 0.5, "lb_over": "all"},
    "normal init (logit std 2), LB over N": {"warmup": "none", "gate_init": "normal",
                                             "gate_init_scale": 2.0},
}


def gate_grad_norm_from_ce(cm, examples, cfg, pad) -> float:
    """‖∇_gates CE‖ on the first batch, under the routing the option uses at step 0."""
    from tracec.compose.training import assistant_ce, batches

    if cfg.gate_init != "zeros":
        cm.init_gates(cfg.gate_init, cfg.gate_init_scale, cfg.seed)
    batch = batches(examples, cfg.batch_size, pad)[0]
    warm = cfg.warmup != "none" and cfg.warmup_steps > 0
    mode = (cm.config.top_k, "dense") if cfg.warmup == "dense" else (2, cm.config.weighting)
    for p in cm.gate_parameters():
        p.grad = None
    if warm:
        with cm.routing_mode(*mode):
            ce, _ = assistant_ce(cm, batch)
    else:
        ce, _ = assistant_ce(cm, batch)
    ce.backward()
    norm = sum(float(p.grad.pow(2).sum()) for p in cm.gate_parameters()) ** 0.5
    for p in cm.gate_parameters():
        p.grad = None
    return norm


@torch.no_grad()
def writer_share(cm, examples, writers) -> float:
    """Share of held-out (non-padding) tokens whose top-1 slot is the conversation's writer."""
    hit = tot = 0
    for ex, w in zip(examples, writers):
        with cm.collect_routing() as records:
            cm(torch.tensor([ex.ids]), use_cache=False)
        chosen = torch.stack([r.chosen[0, :, 0] for r in records])
        hit += int((chosen == w).sum())
        tot += chosen.numel()
    return hit / max(tot, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--n", type=int, default=24, help="conversations (half held out)")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--lora-scale", type=float, default=1.0,
                    help="std of the random LoRA A/B entries (larger: experts differ more)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from tests.compose.compose_helpers import ADAPTER_SPECS, make_adapter, writer_examples
    from tracec.compose.api import build_composed
    from tracec.compose.training import ComposeTrainConfig, evaluate_ce, train_gates
    from tracec.llm.tiny import make_tiny_model

    with tempfile.TemporaryDirectory() as tmp:
        base = make_tiny_model(Path(tmp) / "base", seed=0)
        adapters = [make_adapter(base, Path(tmp) / name, name, spec["r"], spec["targets"], spec["seed"],
                                 scale=args.lora_scale) for name, spec in ADAPTER_SPECS.items()]
        cm = build_composed(adapters)
        pad = cm.tokenizer.pad_token_id
        writers = [1 if i % 2 == 0 else 2 for i in range(args.n)]
        encoded = list(zip(writer_examples(cm, writers), writers))
        train = [e for i, (e, _) in enumerate(encoded) if i % 4 < 2]
        held = [(e, w) for i, (e, w) in enumerate(encoded) if i % 4 >= 2]
        held_ex, held_w = [e for e, _ in held], [w for _, w in held]
        ce_base = evaluate_ce(cm, held_ex, pad, force=0)
        ce_oracle = sum(evaluate_ce(cm, [e], pad, force=w) * sum(e.train[1:]) for e, w in held)
        ce_oracle /= sum(sum(e.train[1:]) for e in held_ex)
        results = []
        for name, over in OPTIONS.items():
            runs = []
            for seed in range(args.seeds):
                over = dict(over)
                if "warmup_frac" in over:
                    over["warmup_steps"] = round(over.pop("warmup_frac") * args.steps)
                cfg = ComposeTrainConfig(lr=args.lr, max_steps=args.steps, batch_size=4, seed=seed,
                                         **over)
                cm.init_gates("zeros")
                grad = gate_grad_norm_from_ce(cm, train, cfg, pad)
                cm.init_gates("zeros")
                train_gates(cm, train, cfg, pad)
                ce = evaluate_ce(cm, held_ex, pad)
                runs.append({"grad0": grad, "ce": ce,
                             "gap_closed": (ce_base - ce) / (ce_base - ce_oracle),
                             "writer_share": writer_share(cm, held_ex, held_w)})
            results.append({"option": name, "runs": runs})
    summary = {"ce_base": ce_base, "ce_oracle": ce_oracle, "steps": args.steps, "seeds": args.seeds,
               "results": results}
    if args.json:
        print(json.dumps(summary))
    print(f"held-out CE: base {ce_base:.3f}, oracle writer {ce_oracle:.3f}; {args.steps} steps, "
          f"lr {args.lr}, {args.seeds} seeds\n")
    print("| start | ‖∇ gates CE‖ at step 0 | held-out CE | gap closed | tokens to writer |")
    print("|---|---:|---:|---:|---:|")

    def ms(key: str, runs: list[dict], fmt: str) -> str:
        xs = [r[key] for r in runs]
        sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
        return f"{format(statistics.mean(xs), fmt)} ± {format(sd, fmt)}"

    for r in results:
        print(f"| {r['option']} | {ms('grad0', r['runs'], '.3g')} | {ms('ce', r['runs'], '.3f')} | "
              f"{ms('gap_closed', r['runs'], '.0%')} | {ms('writer_share', r['runs'], '.0%')} |")


if __name__ == "__main__":
    main()
