"""Round 7's learning study under the own-words reward: SFT length sweep, and GRPO against SFT
at the same number of episodes (demos + rollouts), on ``flight_status_compact``.

Arms (SmolLM2-135M-Instruct, LoRA rank 8 / alpha 16, one CPU thread):

* ``sftN``  ``--warmup-sft N --sft-batch 4 --sft-lr 5e-4 --steps 0``: N steps of behaviour cloning on
  4 oracle demos each (4N demos). Constant learning rate, same seed: ``sft8`` is the first 8 steps
  of ``sft16`` and so on.
* ``sft16_grpo4``  GRPO from ``sft16``: 4 steps x 2 groups x G=8 (64 episodes, no resampling),
  T=0.7, a quarter of each group hinted, lr 1e-4, <=64 new tokens per turn. Its budget, 64 demos
  + 64 episodes, equals ``sft32``'s 128 demos.
* ``sft16_grpo4_t1h50``  the same at T=1.0 with half of each group hinted (more exploration of
  the second lookup).

Every arm is evaluated greedily on 40 training seeds (from 7*10^8; the best SFT is chosen
there) and on the same 100 held-out seeds (from 10^9). Every stage is a
``tracec`` command, printed before it runs, and skipped when its output exists (a killed run
resumes). ``--stages report`` writes ``own_words.json`` here and, through ``tracec report``,
``own_words_study.png`` / ``own_words_study.md``.

    OMP_NUM_THREADS=1 python benchmarks/learning/own_words.py --out runs/own_words
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from benchmarks.learning.run import ENV, LORA, mean_ci, tracec  # noqa: E402

SFT_STEPS = (8, 16, 32, 40)
SFT = ["--sft-batch", "4", "--sft-lr", "5e-4", "--steps", "0"]
GRPO_FROM = "sft16"
GRPO = ["--steps", "4", "-G", "8", "--groups-per-step", "2", "--lr", "1e-4",
        "--max-new-tokens", "64", "--micro-batch", "1", "--checkpoint-every", "1"]
GRPO_ARMS = {  # arm -> its sampling; each 4 steps x 2 groups x G=8 = 64 episodes from sft16
    f"{GRPO_FROM}_grpo4": ["--temperature", "0.7", "--hint-share", "0.25"],
    f"{GRPO_FROM}_grpo4_t1h50": ["--temperature", "1.0", "--hint-share", "0.5"],
}
BUDGET = {**{f"sft{n}": 4 * n for n in SFT_STEPS},
          **{arm: 4 * 16 + 64 for arm in GRPO_ARMS}}  # oracle demos + GRPO episodes
PAIRS = (*((GRPO_FROM, arm) for arm in GRPO_ARMS), *(("sft32", arm) for arm in GRPO_ARMS),
         ("sft16", "sft32"), ("sft32", "sft40"), ("sft8", "sft16"))


def train(out: Path, seed: int) -> dict[str, float]:
    """Train the arms that have no adapter yet; returns their wall seconds."""
    times = {}
    for n in SFT_STEPS:
        arm = f"sft{n}"
        if not (out / arm / "tracec.json").exists():
            times[arm] = tracec("train", ENV, "--model", "smollm2", "-o", str(out / arm),
                                "--warmup-sft", str(n), *SFT, *LORA, "--seed", str(seed), "--json",
                                log=out / f"{arm}.log")
    for arm, sampling in GRPO_ARMS.items():
        if not (out / arm / "tracec.json").exists():
            times[arm] = tracec("train", ENV, "--model", "smollm2", "-o", str(out / arm),
                                "--init-adapter", str(out / GRPO_FROM), *GRPO, *sampling, *LORA,
                                "--seed", str(seed), "--json", log=out / f"{arm}.log")
    return times


SELECT_SEEDS = 700_000_000  # training seeds the arms are chosen on (never held-out ones)


def evaluate(out: Path, arm: str, seeds: int, folder: str = "eval") -> None:
    """Greedy eval of ``arm`` on ``seeds`` held-out seeds (``folder="select"``: on training
    seeds from ``SELECT_SEEDS``, where the best SFT is chosen)."""
    where = out / folder / arm
    if (where / "summary.json").exists() and \
            json.loads((where / "summary.json").read_text())["episodes"] >= seeds:
        return
    agent = "oracle" if arm == "oracle" else f"local:smollm2+adapter:{out / arm}"
    (out / folder).mkdir(parents=True, exist_ok=True)
    extra = ["--env-seeds", str(SELECT_SEEDS), "--allow-train-seeds"] if folder == "select" else []
    tracec("eval", "--agent", agent, "--env", ENV, "--tasks", str(seeds), "--batch-size", "50",
           "--max-new-tokens", "64", *extra, "--out", str(where), "--json",
           log=out / folder / f"{arm}.log")


def _task(episode) -> str:
    return "status_two" if "and of flight" in episode.messages[1]["content"] else "status_one"


def report(out: Path) -> dict:
    from tracec.targets.compare import compare_runs, load_run

    res: dict = {"select": {}, "arms": {}, "pairs": {}}
    for arm in BUDGET:  # the choice of the best SFT: training seeds only
        where = out / "select" / arm
        if (where / "trajectories.jsonl").exists():
            _, eps = load_run(where)
            res["select"][arm] = {"episodes": len(eps), "first_seed": SELECT_SEEDS,
                                  "success": sum(e.success for e in eps) / len(eps)}
    for arm in [*BUDGET, "oracle"]:
        where = out / "eval" / arm
        if not (where / "trajectories.jsonl").exists():
            continue
        _, eps = load_run(where)
        m, lo, hi = mean_ci([float(e.success) for e in eps])
        per_task: dict[str, list[int]] = {}
        for e in eps:
            per_task.setdefault(_task(e), []).append(int(e.success))
        summary = json.loads((where / "summary.json").read_text())
        res["arms"][arm] = {"episodes": len(eps), "success": m, "success_ci": [lo, hi],
                            "budget": BUDGET.get(arm), "per_task": {
                                t: f"{sum(v)}/{len(v)}" for t, v in sorted(per_task.items())},
                            "instance_overlap": summary.get("instance_overlap", {}).get("repeated")}
    for a, b in PAIRS:
        pa, pb = out / "eval" / a, out / "eval" / b
        if (pa / "trajectories.jsonl").exists() and (pb / "trajectories.jsonl").exists():
            cmp = compare_runs(pa, pb)
            res["pairs"][f"{b} - {a}"] = {**cmp["overall"], "gained": cmp["gained"],
                                          "lost": cmp["lost"]}
    (HERE / "own_words.json").write_text(json.dumps(res, indent=1) + "\n")
    _plot(res)
    return res


# training CPU seconds of each arm as measured in round 7 (README "Round 7" table; one thread,
# load 1-3); a GRPO arm's figure includes its sft16 warm start (304 s)
TRAIN_CPU = {"sft8": 170, "sft16": 304, "sft32": 600, "sft40": 674,
             f"{GRPO_FROM}_grpo4": 304 + 218, f"{GRPO_FROM}_grpo4_t1h50": 304 + 380}


def _plot(res: dict) -> None:
    """``own_words_study.json`` from the figures, then ``tracec report`` draws
    ``own_words_study.png`` (success vs episodes and vs CPU seconds) and ``own_words_study.md``."""
    arms = []
    for arm, r in res["arms"].items():
        if r.get("budget") is None:
            continue
        grpo = "grpo" in arm
        arms.append({"name": arm, "method": "SFT16 + GRPO" if grpo else "SFT only",
                     "demos": 4 * 16 if grpo else r["budget"], "rollouts": 64 if grpo else 0,
                     "cpu_seconds": TRAIN_CPU.get(arm), "success": r["success"],
                     "ci": r["success_ci"], "n": r["episodes"]})
    pairs = [{"a": k.split(" - ")[1], "b": k.split(" - ")[0], "diff": v["pass_diff"],
              "ci": v["pass_ci"], "gained": len(v["gained"]), "lost": len(v["lost"])}
             for k, v in res["pairs"].items()]
    study = HERE / "own_words_study.json"
    study.write_text(json.dumps({"title": "flight_status_compact, own-words reward: 100 held-out "
                                          "seeds", "arms": arms, "pairs": pairs}, indent=1) + "\n")
    tracec("report", str(study), "-o", str(HERE / "own_words_study.png"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="runs/own_words", help="work folder (adapters, evals, logs)")
    ap.add_argument("--stages", default="train,select,eval,report")
    ap.add_argument("--select-seeds", type=int, default=40)
    ap.add_argument("--eval-seeds", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    stages = set(args.stages.split(","))
    t0 = time.perf_counter()
    if "train" in stages:
        print(json.dumps({"train_seconds": train(out, args.seed)}))
    if "select" in stages:
        for arm in BUDGET:
            evaluate(out, arm, args.select_seeds, folder="select")
    if "eval" in stages:
        for arm in [*BUDGET, "oracle"]:
            evaluate(out, arm, args.eval_seeds)
    if "report" in stages:
        print(json.dumps(report(out), indent=1))
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
