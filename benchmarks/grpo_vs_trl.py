"""One GRPO step with an update on all rows: tracec's trainer vs TRL's ``GRPOTrainer``.

Same prompt (the hint-free first prompt of ``reservation_lookup_compact``, seed 0), same model
(SmolLM2-135M fp32, ``tracec model prepare``), G completions of at most ``--new-tokens`` tokens at
temperature 1, LoRA of rank ``--rank`` on all attention and MLP projections, token-level clipped
surrogate (ε 0.2 / 0.28, β 0), one optimiser step. Rewards alternate 1, 0 over the group, so
every row has advantage ±1 and both trainers update all G rows. Not a CI test. Run from the repo
root:

    OMP_NUM_THREADS=1 python benchmarks/grpo_vs_trl.py --steps 2 --json-out runs/bench/grpo_vs_trl.json

Each side runs in its own process (peak RSS is per process), one after another (``--parallel``:
side by side); sides: ``tracec`` (shared-prefix loss forward, the default), ``tracec-rows`` (the
per-row loss forward), ``trl`` (its defaults, gradient checkpointing on) and ``trl-nogc``
(checkpointing off, like tracec's memory plan here). Per step: rollout wall (generation, rewards,
for TRL the rest of ``_generate_and_score_completions``), update wall (loss forward + backward +
optimiser step), step wall, CPU seconds; per process: peak RSS. The first step of a fresh process
includes the CPU kernels' one-off weight packing, so the last step is the headline.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from record import emit

from tracec.harness.resolve import resolve_env
from tracec.llm.local import resolve_model
from tracec.train.config import TrainConfig
from tracec.train.grpo import group_advantages
from tracec.train.rollout import ChatRenderer, RolloutStats, start_group
from tracec.train.trainer import GRPOTrainer

ROOT = Path(__file__).resolve().parent.parent
ENV = "reservation_lookup_compact"
SIDES = ("tracec", "tracec-rows", "trl", "trl-nogc")
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _times() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(t: tuple[float, float]) -> tuple[float, float]:
    return time.perf_counter() - t[0], time.process_time() - t[1]


def alternating(n: int) -> list[float]:
    return [float(i % 2 == 0) for i in range(n)]


def first_prompt(tokenizer, seed: int) -> tuple[str, list[int]]:
    """The env's hint-free first prompt as text and as tracec's token ids."""
    env = resolve_env(ENV, ROOT / "generated_envs")
    eps, _ = start_group(env.factory, seed, 0, 1, 0, ChatRenderer(tokenizer))
    text = ChatRenderer(tokenizer).text(eps[0].messages, eps[0].tools, gen=True)
    return text, eps[0].base_prompt_ids


def run_tracec(args, loss_forward: str) -> dict:
    env = resolve_env(ENV, ROOT / "generated_envs")
    cfg = TrainConfig(model=args.model, env=env.name, group_size=args.G, groups_per_step=1,
                      steps=args.steps, max_turns=1, max_new_tokens=args.new_tokens, temperature=1.0,
                      micro_batch=args.G, lora={"rank": args.rank, "alpha": 2 * args.rank,
                                                "targets": TARGETS},
                      loss_forward=loss_forward, seed=args.seed)
    out = Path(tempfile.mkdtemp(prefix="bench_tracec_"))
    tr = GRPOTrainer(cfg, env, out)
    tr._next_seed = lambda: args.env_seed  # the same prompt every step, as on the TRL side
    steps = []
    while len(steps) < args.steps or (args.until and not Path(args.until).exists()):
        torch.manual_seed(args.seed + len(steps))
        t = _times()
        eps = tr.collect(1, 0, RolloutStats())
        rollout = _since(t)
        adv, _ = group_advantages(alternating(len(eps)))
        t = _times()
        up = tr.update(list(zip(eps, adv)))
        update = _since(t)
        tr.step += 1
        steps.append({"rollout_s": rollout[0], "rollout_cpu_s": rollout[1], "update_s": update[0],
                      "update_cpu_s": update[1], "step_s": rollout[0] + update[0],
                      "step_cpu_s": rollout[1] + update[1],
                      "completion_tokens": [len(e.completion_ids) for e in eps],
                      "prompt_tokens": len(eps[0].base_prompt_ids), "loss": up["loss"],
                      "checkpointing": tr._checkpointing})
    return {"steps": steps}


def run_trl(args, checkpointing: bool) -> dict:
    from datasets import Dataset  # noqa: PLC0415 (pyarrow; only the TRL side needs it)
    from peft import LoraConfig
    from transformers import AutoTokenizer, TrainerCallback
    from trl import GRPOConfig
    from trl import GRPOTrainer as TRLGRPOTrainer

    path = resolve_model(args.model)
    tok = AutoTokenizer.from_pretrained(path)
    text, ids = first_prompt(tok, args.env_seed)
    if tok(text)["input_ids"] != ids:
        raise SystemExit("TRL would tokenize the prompt differently from tracec")
    seen: list[list[int]] = []

    def reward(completions, **kw):
        seen.append([len(c) for c in kw.get("completion_ids") or []])
        return alternating(len(completions))

    config = GRPOConfig(output_dir=tempfile.mkdtemp(prefix="bench_trl_"), use_cpu=True,
                        per_device_train_batch_size=args.G, num_generations=args.G,
                        max_completion_length=args.new_tokens, temperature=1.0, max_steps=args.steps,
                        learning_rate=2e-5, beta=0.0, epsilon=0.2, epsilon_high=0.28,
                        loss_type="dapo", gradient_checkpointing=checkpointing, report_to=[],
                        save_strategy="no", logging_steps=1, seed=args.seed, bf16=False,
                        model_init_kwargs={"dtype": torch.float32}, dataloader_num_workers=0,
                        disable_tqdm=True)
    lora = LoraConfig(r=args.rank, lora_alpha=2 * args.rank, target_modules=TARGETS,
                      task_type="CAUSAL_LM")
    data = Dataset.from_list([{"prompt": text}] * args.steps)
    trainer = TRLGRPOTrainer(model=path, reward_funcs=reward, args=config, train_dataset=data,
                          processing_class=tok, peft_config=lora)
    rollouts: list[tuple[float, float]] = []
    generate = trainer._generate_and_score_completions

    def timed(*a, **k):
        t = _times()
        res = generate(*a, **k)
        rollouts.append(_since(t))
        return res

    trainer._generate_and_score_completions = timed
    steps: list[dict] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, *_a, **_k):
            self.t = _times()

        def on_step_end(self, *_a, **_k):
            wall, cpu = _since(self.t)
            steps.append({"step_s": wall, "step_cpu_s": cpu})

    trainer.add_callback(Clock())
    trainer.train()
    for s, r, n in zip(steps, rollouts, seen):
        s.update({"rollout_s": r[0], "rollout_cpu_s": r[1], "update_s": s["step_s"] - r[0],
                  "update_cpu_s": s["step_cpu_s"] - r[1], "completion_tokens": n,
                  "prompt_tokens": len(ids), "checkpointing": checkpointing})
    return {"steps": steps}


def run_side(args) -> None:
    t0 = time.perf_counter()
    load = os.getloadavg()
    if args.side.startswith("trl"):
        rec = run_trl(args, checkpointing=args.side == "trl")
    else:
        rec = run_tracec(args, "rows" if args.side == "tracec-rows" else "shared")
    rec.update({"side": args.side, "wall_s": time.perf_counter() - t0, "load_start": load,
                "load_end": os.getloadavg(),
                "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2})
    Path(args.json_out).write_text(json.dumps(rec, indent=1) + "\n")


def summary(records: dict[str, dict], which: int) -> dict:
    """Per side step ``which`` (0: the first, cold step; -1: the last), and TRL ÷ tracec ratios."""
    last = {k: r["steps"][which if which < len(r["steps"]) else -1] for k, r in records.items()}
    out: dict = {"step": {k: {m: round(v[m], 2) for m in ("rollout_s", "update_s", "step_s",
                                                                "step_cpu_s")}
                               | {"peak_rss_gb": round(records[k]["peak_rss_gb"], 2),
                                  "mean_completion_tokens": sum(v["completion_tokens"])
                                  / max(1, len(v["completion_tokens"]))}
                               for k, v in last.items()}}
    for trl in ("trl", "trl-nogc"):
        for ours in ("tracec", "tracec-rows"):
            if trl in last and ours in last:
                a, b = last[trl], last[ours]
                out[f"{trl} / {ours}"] = {
                    m: round(a[m] / b[m], 2) for m in ("step_s", "step_cpu_s", "rollout_s", "update_s")
                } | {"peak_rss": round(records[ours]["peak_rss_gb"] / records[trl]["peak_rss_gb"], 3)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--side", choices=SIDES, default=None, help="run one side in this process")
    ap.add_argument("--sides", default="tracec,tracec-rows,trl-nogc,trl")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("-G", dest="G", type=int, default=8)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--env-seed", type=int, default=0)
    ap.add_argument("--parallel", action="store_true",
                    help="run the sides side by side; tracec sides keep stepping until the first "
                         "TRL side is done, so both run under the same load throughout")
    ap.add_argument("--until", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args()
    if args.side:
        run_side(args)
        return
    sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    tmp = Path(tempfile.mkdtemp(prefix="grpo_vs_trl_"))
    common = ["--model", args.model, "-G", str(args.G), "--new-tokens", str(args.new_tokens),
              "--rank", str(args.rank), "--steps", str(args.steps), "--seed", str(args.seed),
              "--env-seed", str(args.env_seed)]
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    procs = []
    t0 = time.perf_counter()
    load = os.getloadavg()
    trl = next((s for s in sides if s.startswith("trl")), None)
    for s in sides:
        cmd = [sys.executable, __file__, "--side", s, "--json-out", str(tmp / f"{s}.json"), *common]
        if args.parallel and trl and not s.startswith("trl"):
            cmd += ["--until", str(tmp / f"{trl}.json")]
        p = subprocess.Popen(cmd, env=env)
        if args.parallel:
            procs.append((s, p))
        elif p.wait() != 0:
            raise SystemExit(f"side {s} failed")
    for s, p in procs:
        if p.wait() != 0:
            raise SystemExit(f"side {s} failed")
    records = {s: json.loads((tmp / f"{s}.json").read_text()) for s in sides}
    result = {"config": vars(args), "load_start": load, "load_end": os.getloadavg(),
              "wall_s": time.perf_counter() - t0, "first_step": summary(records, 0),
              "step_at_steps": summary(records, args.steps - 1), "sides": records}
    emit(result, args.json_out)


if __name__ == "__main__":
    main()
