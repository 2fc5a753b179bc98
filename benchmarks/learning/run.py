"""The learning benchmark: does training make SmolLM2-135M-Instruct better on held-out seeds?

Arms, all LoRA rank 8 on SmolLM2-135M-Instruct (CPU), trained on training seeds (< 10^9) of
``flight_status_compact`` and evaluated greedily on the same held-out seeds (from 10^9):

* ``base``      the model as shipped;
* ``sft``       ``--warmup-sft`` behaviour cloning on oracle demonstrations, no GRPO;
* ``sft_grpo``  GRPO started from the ``sft`` adapter (``--init-adapter``);
* ``sft_grpo_t07`` the same GRPO, sampling at temperature 0.7;
* ``sft_grpo_long`` GRPO from ``sft`` for 10 steps at T=0.7 with G=8, DAPO resampling of dropped
  groups and a quarter of each group shown the hint (each task's own hint);
* ``grpo``      GRPO from a fresh adapter;
* ``sft8``      a lighter warm start: the first 8 of ``sft``'s 12 steps (same demos, same order);
* ``sft8_grpo`` the ``sft_grpo_long`` recipe started from ``sft8``;
* ``oracle``    the env's oracle (gold calls, then the report): the ceiling.

Every stage is a ``tracec`` command (printed before it runs) and is skipped when its output
exists, so a killed run resumes. ``--stages`` picks stages; figures land in
``benchmarks/learning/`` (``results.json``, ``learning_curve.png``, ``heldout_success.png``).

    OMP_NUM_THREADS=1 python benchmarks/learning/run.py --out runs/learning
    OMP_NUM_THREADS=1 python benchmarks/learning/run.py --stages report   # figures only
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

ENV = "benchmarks/learning/generated/flight_status_compact.py"
TRANSFER = {  # sibling specs of the same domain, never trained on
    "reservation_cabin_compact": "benchmarks/learning/generated/reservation_cabin_compact.py",
    "structured_data_reasoning_compact": "generated_envs/structured_data_reasoning_compact.py",
}
LORA = ["--lora-rank", "8", "--lora-alpha", "16"]
GRPO = ["-G", "4", "--groups-per-step", "2", "--max-new-tokens", "64", "--lr", "1e-4",
        "--micro-batch", "1", "--checkpoint-every", "1"]
LONG = ["--steps", "10", "--temperature", "0.7", "-G", "8", "--hint-share", "0.25", "--resample"]
ARMS = ("base", "sft", "sft_grpo", "sft_grpo_t07", "sft_grpo_long", "grpo", "sft8", "sft8_grpo")
TRAINED = ("sft", "sft_grpo", "sft_grpo_t07", "sft_grpo_long", "grpo", "sft8", "sft8_grpo")
PAIRS = (("sft", "sft_grpo"), ("sft", "sft_grpo_t07"), ("sft", "sft_grpo_long"),
         ("sft_grpo_t07", "sft_grpo_long"), ("base", "sft"), ("base", "sft_grpo"),
         ("base", "grpo"), ("grpo", "sft_grpo"), ("sft8", "sft8_grpo"), ("base", "sft8"),
         ("sft", "sft8_grpo"))
LIGHT_SFT = 8  # the lighter warm start: the first 8 of the 12 SFT steps (same demos, same order)


def tracec(*args: str, log: Path | None = None) -> float:
    """Run ``python -m tracec.cli ARGS`` from the repo root; returns its wall seconds."""
    cmd = [sys.executable, "-m", "tracec.cli", *args]
    print("$ tracec " + " ".join(shlex.quote(a) for a in args), flush=True)
    t0 = time.perf_counter()
    with open(log, "w") if log else open("/dev/null", "w") as fh:
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=fh, stderr=subprocess.STDOUT)
    return time.perf_counter() - t0


def agent(arm: str, out: Path) -> str:
    if arm == "base":
        return "local:smollm2"
    if arm == "oracle":
        return "oracle"
    return f"local:smollm2+adapter:{out / arm}"


def train(out: Path, sft_steps: int, grpo_steps: int, seed: int) -> dict[str, float]:
    times = {}
    if not (out / "sft" / "tracec.json").exists():
        times["sft"] = tracec("train", ENV, "--model", "smollm2", "-o", str(out / "sft"), "--steps", "0",
                              "--warmup-sft", str(sft_steps), "--sft-batch", "4", *LORA, *GRPO,
                              "--seed", str(seed), "--json", log=out / "sft.log")
    if not (out / "sft_grpo" / "tracec.json").exists():
        times["sft_grpo"] = tracec("train", ENV, "--model", "smollm2", "-o", str(out / "sft_grpo"),
                                   "--init-adapter", str(out / "sft"), "--steps", str(grpo_steps), *LORA,
                                   *GRPO, "--seed", str(seed), "--json", log=out / "sft_grpo.log")
    if not (out / "sft_grpo_t07" / "tracec.json").exists():  # the same, sampling at T=0.7
        times["sft_grpo_t07"] = tracec("train", ENV, "--model", "smollm2", "-o", str(out / "sft_grpo_t07"),
                                       "--init-adapter", str(out / "sft"), "--steps", str(grpo_steps),
                                       "--temperature", "0.7", *LORA, *GRPO, "--seed", str(seed), "--json",
                                       log=out / "sft_grpo_t07.log")
    if not (out / "sft_grpo_long" / "tracec.json").exists():  # 10 steps, T=0.7, G=8, hints, DAPO
        times["sft_grpo_long"] = tracec("train", ENV, "--model", "smollm2", "-o", str(out / "sft_grpo_long"),
                                        "--init-adapter", str(out / "sft"), *LORA, *GRPO, *LONG,
                                        "--seed", str(seed), "--json", log=out / "sft_grpo_long.log")
    if not (out / "sft8" / "tracec.json").exists():  # a lighter warm start that leaves variance
        times["sft8"] = tracec("train", ENV, "--model", "smollm2", "-o", str(out / "sft8"), "--steps", "0",
                               "--warmup-sft", str(LIGHT_SFT), "--sft-batch", "4", *LORA, *GRPO,
                               "--seed", str(seed), "--json", log=out / "sft8.log")
    if not (out / "sft8_grpo" / "tracec.json").exists():  # the long GRPO recipe from sft8
        times["sft8_grpo"] = tracec("train", ENV, "--model", "smollm2", "-o", str(out / "sft8_grpo"),
                                    "--init-adapter", str(out / "sft8"), *LORA, *GRPO, *LONG,
                                    "--seed", str(seed), "--json", log=out / "sft8_grpo.log")
    if not (out / "grpo" / "tracec.json").exists():
        times["grpo"] = tracec("train", ENV, "--model", "smollm2", "-o", str(out / "grpo"), "--steps",
                               str(grpo_steps), *LORA, *GRPO, "--seed", str(seed), "--json",
                               log=out / "grpo.log")
    return times


def evaluate(out: Path, arm: str, env: str, name: str, seeds: int) -> Path:
    where = out / "eval" / name / arm
    if not (where / "summary.json").exists() or \
            json.loads((where / "summary.json").read_text())["episodes"] < seeds:
        where.parent.mkdir(parents=True, exist_ok=True)
        tracec("eval", "--agent", agent(arm, out), "--env", env, "--tasks", str(seeds),
               "--batch-size", "25", "--max-new-tokens", "64", "--out", str(where), "--json",
               log=where.parent / f"{arm}.log")
    return where


def mean_ci(values: list[float]) -> tuple[float, float, float]:
    from tracec.targets.compare import paired_bootstrap

    ci = paired_bootstrap([0.0] * len(values), values, resamples=10_000, seed=0)
    return ci.diff, ci.lo, ci.hi


def report(out: Path, arms: list[str], envs: list[str]) -> dict:
    from tracec.targets.compare import compare_runs, load_run

    res: dict = {"arms": {}, "pairs": {}, "training": {}}
    for name in envs:
        for arm in arms + ["oracle"]:
            where = out / "eval" / name / arm
            if not (where / "trajectories.jsonl").exists():
                continue
            _, eps = load_run(where)
            m, lo, hi = mean_ci([float(e.success) for e in eps])
            r, _, _ = mean_ci([e.reward for e in eps])
            res["arms"].setdefault(name, {})[arm] = {"episodes": len(eps), "success": m,
                                                     "success_ci": [lo, hi], "reward": r}
        for a, b in PAIRS:
            pa, pb = out / "eval" / name / a, out / "eval" / name / b
            if (pa / "trajectories.jsonl").exists() and (pb / "trajectories.jsonl").exists():
                try:
                    cmp = compare_runs(pa, pb, common=True)  # an unfinished arm: its common seeds
                    res["pairs"].setdefault(name, {})[f"{b} - {a}"] = {
                        **cmp["overall"], "dropped_unpaired": cmp["dropped_unpaired"],
                        "gained": cmp["gained"], "lost": cmp["lost"]}
                except ValueError as exc:
                    res["pairs"].setdefault(name, {})[f"{b} - {a}"] = {"error": str(exc)}
    for arm in TRAINED:
        meta = out / arm / "tracec.json"
        if meta.exists():
            m = json.loads(meta.read_text())
            res["training"][arm] = {"steps": m.get("steps_done"), "sft": m.get("sft"),
                                    "seeds": m.get("seeds"), "final": m.get("metrics"),
                                    "lora_b_all_zero": _all_b_zero(out / arm)}
    (HERE / "results.json").write_text(json.dumps(res, indent=1) + "\n")
    plots(out, res)
    return res


def plots(out: Path, res: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    sft = out / "sft" / "sft_metrics.jsonl"
    if sft.exists():
        rows = [json.loads(x) for x in sft.read_text().splitlines() if x.strip()]
        axes[0].plot([r["sft_step"] for r in rows], [r["sft_loss"] for r in rows], "o-", label="SFT loss")
        axes[0].plot([r["sft_step"] for r in rows], [r["sft_token_accuracy"] for r in rows], "s--",
                     label="SFT token accuracy")
        axes[0].axvline(LIGHT_SFT, color="gray", ls=":", lw=1, label=f"sft8 stops (step {LIGHT_SFT})")
    axes[0].set_xlabel("SFT step")
    axes[0].set_title("warm start (assistant tokens only)")
    axes[0].legend(fontsize=8)
    for arm, style in (("sft_grpo", "o-"), ("sft_grpo_t07", "^-"), ("sft_grpo_long", "d-"),
                       ("grpo", "s--"), ("sft8_grpo", "v-")):
        path = out / arm / "metrics.jsonl"
        if path.exists():
            rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
            axes[1].plot([r["step"] for r in rows], [r["reward_mean"] for r in rows], style,
                         label=f"{arm}: rollout reward")
    axes[1].set_xlabel("GRPO step")
    axes[1].set_ylim(-0.05, 1.05)
    axes[1].set_title("GRPO rollout reward (training seeds; T=1; _t07, _long, sft8_grpo T=0.7)", fontsize=9)
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(HERE / "learning_curve.png", dpi=100)
    plt.close(fig)

    names = list(res["arms"])
    fig, axes = plt.subplots(1, max(1, len(names)), figsize=(4.2 * max(1, len(names)), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names):
        arms = res["arms"][name]
        labels = list(arms)
        vals = [arms[a]["success"] for a in labels]
        err = [[v - arms[a]["success_ci"][0] for a, v in zip(labels, vals)],
               [arms[a]["success_ci"][1] - v for a, v in zip(labels, vals)]]
        ax.bar(range(len(labels)), vals, yerr=err, capsize=4, color="tab:blue")
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels([f"{a}\nn={arms[a]['episodes']}" for a in labels], fontsize=7, rotation=30,
                           ha="right")
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{name}\nheld-out success (n seeds each), 95% CI", fontsize=9)
    fig.tight_layout()
    fig.savefig(HERE / "heldout_success.png", dpi=100)
    plt.close(fig)


def _all_b_zero(adapter: Path) -> bool:
    """Whether every LoRA B matrix is zero (the adapter computes exactly the base model)."""
    from safetensors.torch import load_file

    w = load_file(str(adapter / "adapter_model.safetensors"))
    return all(float(v.abs().max()) == 0.0 for k, v in w.items() if "lora_B" in k)


def ship_adapters(out: Path) -> None:
    """Copy the small LoRA adapters (+ tracec.json, metrics) into benchmarks/learning/adapters/."""
    for arm in TRAINED:
        src = out / arm
        if not (src / "tracec.json").exists():
            continue
        dst = HERE / "adapters" / arm
        dst.mkdir(parents=True, exist_ok=True)
        files = ["tracec.json", "metrics.jsonl", "sft_metrics.jsonl"]
        if not _all_b_zero(src):  # an adapter that never updated equals the base: no weights
            files += ["adapter_config.json", "adapter_model.safetensors"]
        for f in files:
            if (src / f).exists():
                shutil.copy(src / f, dst / f)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="runs/learning", help="work folder (adapters, evals, logs)")
    ap.add_argument("--stages", default="train,eval,transfer,report")
    ap.add_argument("--sft-steps", type=int, default=12)
    ap.add_argument("--grpo-steps", type=int, default=2)
    ap.add_argument("--eval-seeds", type=int, default=100)
    ap.add_argument("--transfer-seeds", type=int, default=30)
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out = (ROOT / args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    stages = set(args.stages.split(","))
    arms = [a for a in args.arms.split(",") if a]
    if "train" in stages:
        print(json.dumps(train(out, args.sft_steps, args.grpo_steps, args.seed)))
    if "eval" in stages:
        for arm in arms + ["oracle"]:
            evaluate(out, arm, ENV, "flight_status_compact", args.eval_seeds)
    if "transfer" in stages:
        for name, env in TRANSFER.items():
            for arm in ("base", "sft", "sft_grpo", "sft8_grpo", "oracle"):
                if arm in arms or arm == "oracle":
                    evaluate(out, arm, env, name, args.transfer_seeds)
    if "report" in stages:
        ship_adapters(out)
        res = report(out, arms, ["flight_status_compact", *TRANSFER])
        print(json.dumps(res["pairs"], indent=1))


if __name__ == "__main__":
    main()
