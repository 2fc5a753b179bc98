"""GRPO smoke run: a few `tracec train` steps of the real default model on a compiled env.

Not a CI test. Run from the repo root after `tracec model prepare`:

    OMP_NUM_THREADS=1 python benchmarks/grpo_smoke.py [ENV] [--steps 3]

ENV defaults to the first capability in generated_envs/ (else the toy env of tests/train).
Writes runs/grpo_smoke/ (adapter, metrics.jsonl), benchmarks/grpo_smoke_reward.png and prints a
JSON summary (step time, generation tokens/s, rewards).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from tracec.harness.resolve import list_capabilities, resolve_env
from tracec.train.config import TrainConfig
from tracec.train.plots import report_training
from tracec.train.trainer import GRPOTrainer

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("env", nargs="?", default=None)
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--groups-per-step", type=int, default=1)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--max-turns", type=int, default=3)
    ap.add_argument("--hint-share", type=float, default=0.5)
    ap.add_argument("--out", default=str(ROOT / "runs" / "grpo_smoke"))
    args = ap.parse_args()
    caps = list_capabilities(ROOT / "generated_envs")
    spec = args.env or (caps[0] if caps else str(ROOT / "tests/train/toy_env.py") + ":ToyToolEnv")
    env = resolve_env(spec, ROOT / "generated_envs")
    cfg = TrainConfig(model=args.model, env=env.name, steps=args.steps, group_size=args.group_size,
                      groups_per_step=args.groups_per_step, max_new_tokens=args.max_new_tokens,
                      max_turns=args.max_turns, hint_share=args.hint_share, micro_batch=2,
                      learning_rate=5e-5, checkpoint_every=args.steps)
    t0 = time.perf_counter()
    trainer = GRPOTrainer(cfg, env, args.out)
    load_s = time.perf_counter() - t0
    rows = []
    trainer.fit(on_step=lambda m: (rows.append(m), print(json.dumps(m), flush=True)))
    png = report_training(args.out, ROOT / "benchmarks" / "grpo_smoke_reward.png")
    step_s = [r["step_seconds"] for r in rows]
    summary = {
        "env": env.name, "model": args.model, "steps": len(rows), "load_seconds": round(load_s, 1),
        "step_seconds_mean": round(sum(step_s) / len(step_s), 1),
        "gen_tokens_per_s_mean": round(sum(r["gen_tokens_per_s"] for r in rows) / len(rows), 1),
        "model_tokens_per_step": round(sum(r["model_tokens"] for r in rows) / len(rows)),
        "trained_tokens_per_step": round(sum(r["trained_tokens"] for r in rows) / len(rows)),
        "reward_mean_by_step": [round(r["reward_mean"], 3) for r in rows],
        "kept_share_by_step": [r["kept_share"] for r in rows],
        "png": png["png"],
    }
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
