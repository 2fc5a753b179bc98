"""TRACE's headline at CPU scale (issue 28): capability-targeted training, then composition,
against training on the target itself with the same budget.

The target, ``cpu_target``, needs two capabilities in every task: look a reservation up and
report the exact amount paid (in the agent's own words) AND cancel it. Stages, each a ``tracec``
command printed before it runs and skipped when its output exists (a killed run resumes):

* ``baseline``  the base model on 20 training seeds of the target (from 7*10^8);
* ``analyze``   ``tracec analyze`` (offline labeler) on those trajectories: the capabilities the
  failures lack, mapped to the capability specs in ``specs/`` (``CAPABILITIES``);
* ``train``     one adapter per capability env, GRPO on the target, one multi-capability
  adapter (the union env ``multi_capability``): each arm an SFT warm start on oracle demos and
  GRPO from it, the recipe of benchmarks/learning (Round 7);
* ``compose``   the token-routed MoE over the frozen capability adapters (gates trained on
  oracle demos of the capability envs, counted in TRACE's budget) and the paper's classifier
  routing (no training);
* ``eval``      every arm greedily on the same 100 held-out target seeds (from 10^9);
* ``report``    ``results.json`` (arms, budgets, CPU seconds, paired CIs) and, through
  ``tracec report STUDY``, ``study.png`` and ``study.md``.

Fairness rule: every trained arm gets the same total of oracle demos and the same total of
GRPO episodes on the training seeds (< 10^9) of the env(s) it trains on. TRACE's total is split
evenly over its capability adapters and includes the router's demos.

    OMP_NUM_THREADS=1 python benchmarks/trace_cpu/run.py --out runs/trace_cpu
"""

from __future__ import annotations

import argparse
import json
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
GEN = "benchmarks/trace_cpu/generated"
TARGET = f"{GEN}/cpu_target.py"
# offline labeler capability -> the capability env that trains it
CAPABILITIES = {"grounded_numbers": "grounded_amount", "executes_required_actions": "cancel_request"}
LORA = ["--lora-rank", "8", "--lora-alpha", "16"]
SFT = ["--sft-batch", "4", "--sft-lr", "5e-4", "--steps", "0"]
GRPO = ["-G", "8", "--groups-per-step", "2", "--lr", "1e-4", "--temperature", "0.7",
        "--hint-share", "0.25", "--max-new-tokens", "64", "--micro-batch", "1",
        "--checkpoint-every", "1"]
# SFT steps (x 4 oracle demos) per capability adapter: the one-call cancellation gets a quarter
# of the demos of the lookup-and-report skill. Sized to the CPU this round had (a shared box at
# load 4-8, ~100 s a step), chosen before any eval.
CAP_SFT_STEPS = {"grounded_amount": 16, "cancel_request": 4}
# GRPO steps per capability adapter (x 2 groups x G=8 episodes). 0 this round: at that load
# a GRPO step costs ~4 min of wall time, and Round 7 measured that 4 steps from an SFT start
# move no held-out seed; every arm is then an SFT warm start alone, at equal demos.
CAP_GRPO_STEPS = 0
ROUTER_DEMOS = 4  # oracle demos per capability env for the token router's gates
N_CAPS = len(CAPABILITIES)
# the single-adapter arms trained on one env get TRACE's whole budget:
# 4 x (16 + 4) + 2 x 4 = 88 oracle demos and 2 x 16 x CAP_GRPO_STEPS GRPO episodes
SOLO_SFT_STEPS = sum(CAP_SFT_STEPS.values()) + N_CAPS * ROUTER_DEMOS // 4  # 22 steps, 88 demos
SOLO_GRPO_STEPS = N_CAPS * CAP_GRPO_STEPS
BASELINE_SEEDS, ROUTER_SEEDS = 700_000_000, 800_000_000  # training seeds (< 10^9)


class Clock:
    """CPU seconds (user + sys of the children) and wall seconds per arm."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.spent: dict = json.loads(path.read_text()) if path.exists() else {}
        for key in list(self.spent):  # an SFT measured outside this script (from /proc)
            rec = self.spent[key]
            if "--warmup-sft" in " ".join(rec["commands"]) and not key.endswith("_sft") \
                    and f"{key}_sft" not in self.spent and len(rec["commands"]) == 1:
                self.spent[f"{key}_sft"] = self.spent.pop(key)

    def tracec(self, arm: str, *args: str, log: Path) -> None:
        cmd = [sys.executable, "-m", "tracec.cli", *args]
        print("$ tracec " + " ".join(shlex.quote(a) for a in args), flush=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        with open(log, "w") as fh:
            subprocess.run(cmd, cwd=ROOT, check=True, stdout=fh, stderr=subprocess.STDOUT)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        rec = self.spent.setdefault(arm, {"cpu_s": 0.0, "wall_s": 0.0, "commands": []})
        rec["cpu_s"] = round(rec["cpu_s"] + cpu, 1)
        rec["wall_s"] = round((rec["wall_s"] or 0.0) + time.perf_counter() - t0, 1)
        rec["commands"].append("tracec " + " ".join(shlex.quote(a) for a in args))
        self.path.write_text(json.dumps(self.spent, indent=1) + "\n")


def done(path: Path) -> bool:
    return path.exists()


def env_of(name: str) -> str:
    return f"{GEN}/{name}.py"


def train_arm(clock: Clock, out: Path, arm: str, env: str, sft_steps: int, grpo_steps: int,
              seed: int) -> None:
    """SFT warm start (``arm``_sft) then GRPO from it (``arm``); both adapters kept."""
    sft = out / "adapters" / f"{arm}_sft"
    if not done(sft / "tracec.json"):
        clock.tracec(f"{arm}_sft", "train", env, "--envs-dir", GEN, "--model", "smollm2", "-o", str(sft),
                     "--warmup-sft", str(sft_steps), *SFT, *LORA, "--seed", str(seed), "--json",
                     log=out / "logs" / f"{arm}_sft.log")
    final = out / "adapters" / arm
    if grpo_steps > 0 and not done(final / "tracec.json"):
        clock.tracec(arm, "train", env, "--envs-dir", GEN, "--model", "smollm2", "-o", str(final),
                     "--init-adapter", str(sft), "--steps", str(grpo_steps), *GRPO, *LORA,
                     "--seed", str(seed), "--json", log=out / "logs" / f"{arm}.log")


def adapter_dir(out: Path, arm: str) -> Path:
    """An arm's final adapter: its GRPO run, or its SFT warm start when GRPO has 0 steps."""
    return out / "adapters" / (arm if CAP_GRPO_STEPS > 0 or arm.endswith("_sft") else f"{arm}_sft")


def selected(out: Path) -> list[str]:
    """The capability envs of the capabilities ``analyze`` selected (in CAPABILITIES order)."""
    caps = json.loads((out / "analyze" / "capabilities.json").read_text())
    names = {c["skill"] for c in caps}
    return [env for cap, env in CAPABILITIES.items() if cap in names]


def stage_baseline(clock: Clock, out: Path) -> None:
    if not done(out / "baseline" / "summary.json"):
        clock.tracec("baseline", "eval", "--agent", "local:smollm2", "--env", TARGET, "--envs-dir", GEN,
                     "--tasks", "20", "--env-seeds", str(BASELINE_SEEDS), "--batch-size", "20",
                     "--max-new-tokens", "64", "--out", str(out / "baseline"), "--json",
                     log=out / "logs" / "baseline.log")


def stage_analyze(clock: Clock, out: Path) -> None:
    if not done(out / "analyze" / "capabilities.json"):
        clock.tracec("analyze", "analyze", str(out / "baseline" / "trajectories.jsonl"),
                     "-o", str(out / "analyze"), "--json", log=out / "logs" / "analyze.log")


def stage_train(clock: Clock, out: Path, seed: int, arms: tuple[str, ...]) -> None:
    """Train ``arms`` (``capabilities``: one adapter per selected capability env;
    ``grpo_target``; ``multi_capability``) in that order."""
    for arm in arms:
        if arm == "capabilities":
            for cap in selected(out):
                train_arm(clock, out, cap, env_of(cap), CAP_SFT_STEPS[cap], CAP_GRPO_STEPS, seed)
        else:
            env = TARGET if arm == "grpo_target" else env_of(arm)
            train_arm(clock, out, arm, env, SOLO_SFT_STEPS, SOLO_GRPO_STEPS, seed)


def router_demos(clock: Clock, cap: str, where: Path) -> None:
    """``ROUTER_DEMOS`` oracle episodes of ``cap``'s env on training seeds (the pipeline's own
    ``write_demos``, as ``tracec run``'s compose stage makes them)."""
    import importlib.util

    sys.path.insert(0, str(ROOT))
    from tracec.harness.resolve import env_class
    from tracec.pipeline.demos import write_demos

    print(f"# oracle demos: {cap} x {ROUTER_DEMOS} from seed {ROUTER_SEEDS} -> {where}", flush=True)
    spec = importlib.util.spec_from_file_location(f"trace_cpu_{cap}", ROOT / env_of(cap))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    t0 = time.process_time()
    write_demos({cap: env_class(module)}, ROUTER_DEMOS, ROUTER_SEEDS, where)
    rec = clock.spent.setdefault("composed_token", {"cpu_s": 0.0, "wall_s": 0.0, "commands": []})
    rec["cpu_s"] = round(rec["cpu_s"] + time.process_time() - t0, 1)
    rec["commands"].append(f"write_demos({cap}, {ROUTER_DEMOS}, {ROUTER_SEEDS})")
    clock.path.write_text(json.dumps(clock.spent, indent=1) + "\n")


def stage_compose(clock: Clock, out: Path) -> None:
    caps = selected(out)
    adapters = [str(adapter_dir(out, c)) for c in caps]
    data = []
    for cap in caps:  # oracle demos with the env's tools in info.tools (what compose reads)
        where = out / "router_demos" / f"{cap}.jsonl"
        data += ["--data", str(where)]
        if not done(where):
            router_demos(clock, cap, where)
    if not done(out / "composed" / "token" / "moe.json"):
        clock.tracec("composed_token", "compose", *adapters, *data, "-o", str(out / "composed" / "token"),
                     "--epochs", "2", "--json", log=out / "logs" / "compose_token.log")
    if not done(out / "composed" / "classifier" / "moe.json"):
        clock.tracec("composed_classifier", "compose", *adapters, "--routing", "classifier",
                     "-o", str(out / "composed" / "classifier"), "--json",
                     log=out / "logs" / "compose_classifier.log")


def agents(out: Path) -> dict[str, str]:
    """Evaluated arm -> its ``--agent``."""
    res = {"base": "local:smollm2", "oracle": "oracle"}
    for arm in [*selected(out), "grpo_target", "multi_capability"]:
        for name in (f"{arm}_sft", arm) if CAP_GRPO_STEPS > 0 else (arm,):
            res[name] = f"local:smollm2+adapter:{adapter_dir(out, name)}"
    res["composed_token"] = f"composed:{out / 'composed' / 'token'}"
    res["composed_classifier"] = f"composed:{out / 'composed' / 'classifier'}"
    return res


# the headline comparison first; the rest as CPU time allows
EVAL_FIRST = ("composed_token", "grpo_target", "base", "grounded_amount", "cancel_request",
              "composed_classifier")
EVAL_LATER = ("multi_capability", "grpo_target_sft", "grounded_amount_sft", "cancel_request_sft",
              "multi_capability_sft", "oracle")


def stage_eval(clock: Clock, out: Path, seeds: int, arms: tuple[str, ...] | list[str]) -> None:
    table = agents(out)
    for arm in arms:
        where = out / "eval" / arm
        if done(where / "summary.json") or arm not in table or (
                arm not in ("base", "oracle") and not done(Path(table[arm].split(":", 2)[-1]))):
            continue
        clock.tracec(f"eval:{arm}", "eval", "--agent", table[arm], "--env", TARGET, "--envs-dir", GEN,
                     "--tasks", str(seeds), "--batch-size", "100", "--max-new-tokens", "64",
                     "--out", str(where), "--json", log=out / "logs" / f"eval_{arm}.log")


# arm -> (method, oracle demos, GRPO episodes, the arms whose training CPU it includes)
def budgets(caps: list[str]) -> dict[str, tuple[str, int, int, list[str]]]:
    demos = {c: 4 * CAP_SFT_STEPS[c] for c in caps}
    eps = 2 * 8 * CAP_GRPO_STEPS
    router = N_CAPS * ROUTER_DEMOS
    solo = (4 * SOLO_SFT_STEPS, 2 * 8 * SOLO_GRPO_STEPS)
    res = {"base": ("base model", 0, 0, [])}
    for c in caps:
        if eps:
            res[f"{c}_sft"] = ("one capability adapter", demos[c], 0, [f"{c}_sft"])
        res[c] = ("one capability adapter", demos[c], eps, [f"{c}_sft", c])
    trained = [x for c in caps for x in (f"{c}_sft", c)]
    res["composed_token"] = ("TRACE: token-routed MoE", sum(demos.values()) + router,
                             eps * len(caps), [*trained, "composed_token"])
    res["composed_classifier"] = ("TRACE: classifier routing", sum(demos.values()),
                                  eps * len(caps), [*trained, "composed_classifier"])
    for arm, method in (("grpo_target", "training on the target" + ("" if eps else " (SFT)")),
                        ("multi_capability", "multi-capability (union env)")):
        if eps:
            res[f"{arm}_sft"] = (method, solo[0], 0, [f"{arm}_sft"])
        res[arm] = (method, *solo, [f"{arm}_sft", arm])
    return res


PAIRS = [("grpo_target", "composed_token"), ("base", "composed_token"),
         ("grounded_amount", "composed_token"), ("cancel_request", "composed_token"),
         ("multi_capability", "composed_token"), ("composed_classifier", "composed_token"),
         ("grpo_target", "composed_classifier"), ("base", "grpo_target"),
         ("grpo_target_sft", "grpo_target"), ("grounded_amount_sft", "grounded_amount"),
         ("cancel_request_sft", "cancel_request")]


def write_results(clock: Clock, out: Path) -> None:
    """``results.json`` (a ``tracec report`` study file, plus provenance), then the figure."""
    sys.path.insert(0, str(ROOT))
    from tracec.targets.compare import compare_runs, load_run, paired_bootstrap

    caps = selected(out)
    spent = clock.spent
    arms = []
    for arm, (method, demos, eps, paid) in budgets(caps).items():
        where = out / "eval" / arm
        if not done(where / "trajectories.jsonl"):
            continue
        _, episodes = load_run(where)
        s = [float(e.success) for e in episodes]
        ci = paired_bootstrap([0.0] * len(s), s)
        summary = json.loads((where / "summary.json").read_text())
        cpu = sum(spent.get(p, {}).get("cpu_s", 0.0) for p in paid)
        arms.append({
            "name": arm, "method": method, "demos": demos, "rollouts": eps,
            "cpu_seconds": round(cpu, 1) if paid else 0.0, "success": round(ci.diff, 4),
            "ci": [round(ci.lo, 4), round(ci.hi, 4)], "n": len(s),
            "mean_reward": round(sum(e.reward for e in episodes) / len(episodes), 4),
            "instance_overlap": summary.get("instance_overlap", {}).get("repeated"),
            "eval_cpu_seconds": spent.get(f"eval:{arm}", {}).get("cpu_s"),
            "eval_command": (spent.get(f"eval:{arm}", {}).get("commands") or [None])[-1]})
    names = {a["name"] for a in arms}
    pairs = []
    for a, b in PAIRS:
        if a in names and b in names:
            cmp = compare_runs(out / "eval" / a, out / "eval" / b)
            o = cmp["overall"]
            pairs.append({"a": a, "b": b, "diff": round(o["pass_diff"], 4),
                          "ci": [round(x, 4) for x in o["pass_ci"]],
                          "gained": len(cmp["gained"]), "lost": len(cmp["lost"])})
    analysis = json.loads((out / "analyze" / "capabilities.json").read_text())
    res = {
        "title": "cpu_target: 100 held-out seeds, SmolLM2-135M-Instruct, LoRA r8, one CPU thread",
        "fairness": "every trained arm: the same total of oracle demos and of GRPO episodes on "
                    "training seeds (< 10^9) of its own env(s); TRACE's total is split over its "
                    "capability adapters and includes the token router's demos",
        "recipe": {"capability_sft_steps": CAP_SFT_STEPS, "sft": SFT, "grpo": GRPO,
                   "capability_grpo_steps": CAP_GRPO_STEPS, "router_demos_per_env": ROUTER_DEMOS,
                   "solo_sft_steps": SOLO_SFT_STEPS, "solo_grpo_steps": SOLO_GRPO_STEPS, "lora": LORA},
        "analyze": [{k: c[k] for k in ("skill", "mean_cov", "mean_delta")} for c in analysis],
        "capability_envs": dict(CAPABILITIES),
        "arms": arms, "pairs": pairs,
        "cpu_seconds": {k: v["cpu_s"] for k, v in spent.items()},
        "cpu_hours_total": round(sum(v["cpu_s"] for v in spent.values()) / 3600, 3),
        "commands": {k: v["commands"] for k, v in spent.items()},
    }
    (HERE / "results.json").write_text(json.dumps(res, indent=1) + "\n")
    subprocess.run([sys.executable, "-m", "tracec.cli", "report", str(HERE / "results.json"),
                    "-o", str(HERE / "study.png")], cwd=ROOT, check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="runs/trace_cpu", help="work folder (adapters, evals, logs)")
    ap.add_argument("--stages", default="baseline,analyze,train,compose,eval,report")
    ap.add_argument("--eval-seeds", type=int, default=100)
    ap.add_argument("--arms", default="", help="comma-separated arms to evaluate (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out = Path(args.out).resolve()
    (out / "logs").mkdir(parents=True, exist_ok=True)
    clock = Clock(out / "cpu_seconds.json")
    stages = args.stages.split(",")
    if "baseline" in stages:
        stage_baseline(clock, out)
    if "analyze" in stages:
        stage_analyze(clock, out)
    only = [a for a in args.arms.split(",") if a]
    # the headline arms first (capabilities, composition, GRPO on the target and their evals),
    # then the multi-capability baseline and the remaining evals
    if "train" in stages:
        stage_train(clock, out, args.seed, ("capabilities",))
    if "compose" in stages:
        stage_compose(clock, out)
    if "train" in stages:
        stage_train(clock, out, args.seed, ("grpo_target",))
    if "eval" in stages:
        stage_eval(clock, out, args.eval_seeds, only or EVAL_FIRST)
    if "train" in stages:
        stage_train(clock, out, args.seed, ("multi_capability",))
    if "eval" in stages:
        stage_eval(clock, out, args.eval_seeds, only or EVAL_LATER)
    if "report" in stages:
        write_results(clock, out)


if __name__ == "__main__":
    main()
