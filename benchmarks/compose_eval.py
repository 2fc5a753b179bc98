"""Composed model vs each single adapter vs base, on the union of the adapters' held-out seeds.

    OMP_NUM_THREADS=1 python benchmarks/compose_eval.py ADAPTER_DIR... --composed DIR \
        [--tasks 100] [--env-seeds heldout|START] [--max-new-tokens 256] [--batch-size 25] \
        [--out runs/compose_eval] [--base smollm2] [--classifier-scoring likelihood --top-p 0.7]

Every model is evaluated with ``tracec eval`` on the same compiled envs (each adapter's
``tracec.json`` names its training env; the union of them, or ``--env`` to choose) and the same
held-out seeds (``--env-seeds heldout``: the range training never draws from, from 10^9; or
``--env-seeds START`` for fresh seeds from START, e.g. 2000000000), then every pair
is compared with ``tracec compare``'s paired bootstrap (95 % CI of the difference, per env and
over the union). ``--composed`` may be given several times (e.g. token routing and classifier
routing); without it the script composes the adapters with classifier routing (no training;
``--classifier-scoring`` and ``--top-p`` choose its setting).

Targets (issue 12): the composed model ≥ the best single adapter on the union (difference ≥ 0;
say when the CI contains 0), and no worse than base on any env beyond its CI (upper end ≥ 0).
Writes ``OUT/report.md`` and ``OUT/report.json``; reruns resume finished evaluations.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path


def adapter_env(adapter: Path) -> str | None:
    """The env an adapter was trained on (``tracec.json``'s ``env``)."""
    meta = adapter / "tracec.json"
    if not meta.is_file():
        return None
    env = json.loads(meta.read_text()).get("env")
    return str(env) if env else None


def eval_command(agent: str, envs: list[str], tasks: int, max_new_tokens: int, out: Path,
                 batch_size: int = 25, env_seeds: str = "heldout") -> list[str]:
    """The ``tracec eval`` command line of one model (``env_seeds``: ``heldout`` or a start seed)."""
    cmd = [sys.executable, "-m", "tracec.cli", "eval", "--agent", agent, "--tasks", str(tasks),
           "--env-seeds", str(env_seeds), "--max-new-tokens", str(max_new_tokens), "--out", str(out),
           "--batch-size", str(batch_size), "--json"]
    for env in envs:
        cmd += ["--env", env]
    return cmd


def run_eval(agent: str, envs: list[str], tasks: int, max_new_tokens: int, out: Path,
             batch_size: int = 25, env_seeds: str = "heldout") -> Path:
    if (out / "summary.json").is_file():
        return out
    cmd = eval_command(agent, envs, tasks, max_new_tokens, out, batch_size, env_seeds)
    print("$", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return out


def compose_classifier(adapters: list[Path], out: Path, scoring: str = "labels",
                       top_p: float = 0.9) -> Path:
    if not (out / "moe.json").is_file():
        cmd = [sys.executable, "-m", "tracec.cli", "compose", *map(str, adapters),
               "--routing", "classifier", "--classifier-scoring", scoring, "--top-p", str(top_p),
               "-o", str(out), "--json"]
        print("$", " ".join(cmd), file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("adapters", nargs="+", type=Path)
    ap.add_argument("--composed", action="append", type=Path, default=[])
    ap.add_argument("--env", action="append", default=[], help="envs to evaluate (default: the "
                    "adapters' training envs)")
    ap.add_argument("--base", default=None, help="base model (default: the adapters' base_model)")
    ap.add_argument("--tasks", type=int, default=100, help="held-out seeds per env")
    ap.add_argument("--env-seeds", default="heldout", help="first held-out seed (task i uses it + i): "
                    "`heldout` = 10^9, or e.g. 2000000000 for seeds no earlier run has seen")
    ap.add_argument("--classifier-scoring", choices=["labels", "likelihood"], default="labels",
                    help="scoring of the default classifier-routed composition (without --composed)")
    ap.add_argument("--top-p", type=float, default=0.9,
                    help="top-p of the default classifier-routed composition (without --composed)")
    ap.add_argument("--max-new-tokens", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=25, help="episodes in flight per eval")
    ap.add_argument("--out", type=Path, default=Path("runs/compose_eval"))
    args = ap.parse_args()
    try:
        from tracec.targets.compare import compare_runs
    except ImportError:
        sys.exit("needs `tracec compare` (tracec.targets.compare: held-out eval with paired CIs)")
    from tracec.compose.config import adapter_base_model

    envs = args.env or sorted({e for e in map(adapter_env, args.adapters) if e})
    if not envs:
        sys.exit("no env: the adapters' tracec.json name none; pass --env")
    base = args.base or adapter_base_model(args.adapters[0])
    if not base:
        sys.exit("no base model: pass --base")
    if args.env_seeds != "heldout":
        try:
            start = int(args.env_seeds.replace("_", ""))
        except ValueError:
            sys.exit(f"--env-seeds {args.env_seeds!r}: expected `heldout` or an integer start seed")
        from tracec.core.seeds import HELDOUT_START, SEED_LIMIT
        if not HELDOUT_START <= start <= SEED_LIMIT - args.tasks:
            sys.exit(f"--env-seeds {start}: held-out seeds lie in [{HELDOUT_START}, {SEED_LIMIT})")
    composed = args.composed or [compose_classifier(args.adapters, args.out / "composed_classifier",
                                                    args.classifier_scoring, args.top_p)]
    models = {"base": f"local:{base}"}
    for a in args.adapters:
        models[f"adapter {a.name}"] = f"local:{base}+adapter:{a}"
    for c in composed:
        routing = json.loads((c / "moe.json").read_text()).get("routing", "token")
        models[f"composed {c.name} ({routing})"] = f"composed:{c}"
    runs = {name: run_eval(agent, envs, args.tasks, args.max_new_tokens,
                           args.out / name.replace(" ", "_").replace("(", "").replace(")", ""),
                           args.batch_size, args.env_seeds)
            for name, agent in models.items()}
    names = list(runs)
    pairs = {}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            pairs[f"{b} − {a}"] = compare_runs(runs[a], runs[b])
    singles = [n for n in names if n.startswith("adapter ")]
    first = pairs[f"{names[1]} − {names[0]}"]
    groups = [g["group"] for g in first["groups"]]  # the env ids the runs recorded
    seeds = "from 10^9" if args.env_seeds == "heldout" else f"from {args.env_seeds}"
    lines = [f"# Composition benchmark ({args.tasks} held-out seeds per env, {seeds}: {', '.join(envs)})", "",
             "| model | " + " | ".join(groups) + " | union |", "|---|" + "---:|" * (len(groups) + 1)]
    rates = {names[0]: {g["group"]: g["pass_rate_a"] for g in first["groups"]} | {
        "all": first["overall"]["pass_rate_a"]}}
    for n in names[1:]:
        cmp = pairs[f"{n} − {names[0]}"]
        rates[n] = {g["group"]: g["pass_rate_b"] for g in cmp["groups"]} | {"all": cmp["overall"]["pass_rate_b"]}
    for n in names:
        lines.append(f"| {n} | " + " | ".join(f"{rates[n][g]:.2f}" for g in groups)
                     + f" | {rates[n]['all']:.2f} |")
    lines += ["", "| comparison (B − A) | pass-rate difference on the union | 95 % CI | within noise |",
              "|---|---:|---|---|"]
    for key, cmp in pairs.items():
        o = cmp["overall"]
        lines.append(f"| {key} | {o['pass_diff']:+.3f} | [{o['pass_ci'][0]:+.3f}, {o['pass_ci'][1]:+.3f}] | "
                     f"{'no' if o['pass_significant'] else 'yes'} |")
    verdicts = []
    for c in [n for n in names if n.startswith("composed ")]:
        best = max(singles, key=lambda s: rates[s]["all"]) if singles else None
        if best:
            cmp = pairs.get(f"{c} − {best}")
            o = cmp["overall"]
            verdicts.append(f"- {c} vs best single adapter ({best}) on the union: {o['pass_diff']:+.3f} "
                            f"[{o['pass_ci'][0]:+.3f}, {o['pass_ci'][1]:+.3f}] — target ≥ 0: "
                            f"{'met' if o['pass_diff'] >= 0 else 'missed'}"
                            f"{' (within noise)' if not o['pass_significant'] else ''}")
        cmp = pairs[f"{c} − base"]
        worse = [g["group"] for g in cmp["groups"] if g["pass_ci"][1] < 0]
        verdicts.append(f"- {c} vs base per env: " + ("no env significantly worse — target met" if not worse
                        else f"significantly worse on {', '.join(worse)} — target missed"))
    lines += ["", *verdicts, ""]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "report.md").write_text("\n".join(lines))
    (args.out / "report.json").write_text(json.dumps({"envs": envs, "tasks": args.tasks, "env_seeds": args.env_seeds,
                                                      "models": models,
                                                      "rates": rates, "pairs": pairs}, indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
