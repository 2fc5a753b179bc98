"""`tracec check` of the shipped bases and their variants: each checked in full vs a variant
sharing its base's check (issue 32, tracec/checks/variants.py).

In one process, alternating round by round so both see the same load: ``full`` runs
``run_checks`` on every env of generated_envs/ (what `tracec check generated_envs/` did
before), ``shared`` runs ``check_sharing`` over the same modules in the same order (what it
does now: each variant shares its base's check). Prints the CPU seconds (``process_time``; the checks use one core) of
each, the minimum over the rounds, and the ratio; also the line counts of each variant's module
against its base's.

    OMP_NUM_THREADS=1 python benchmarks/check_variants.py --seeds 64 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from tracec.checks.run import run_checks
from tracec.checks.variants import check_sharing
from tracec.harness.resolve import load_paths

ROOT = Path(__file__).resolve().parents[1]


def _modules() -> list[tuple[str, object]]:
    """(label, module) of every env of generated_envs/, in `tracec check`'s order (a base
    before its variants)."""
    return [(label, m) for label, m in load_paths([ROOT / "generated_envs"])
            if not isinstance(m, Exception)]


def _lines() -> dict[str, tuple[int, int]]:
    out = {}
    for variant in sorted((ROOT / "generated_envs").glob("*.py")):
        text = variant.read_text()
        if "from . import " not in text:
            continue
        base = text.split("from . import ", 1)[1].split(" ", 1)[0]
        out[variant.stem] = (len(text.splitlines()),
                             len((ROOT / "generated_envs" / f"{base}.py").read_text().splitlines()))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    modules = _modules()
    times: dict[str, list[float]] = {"full": [], "shared": []}
    for r in range(args.rounds):
        order = ["full", "shared"] if r % 2 == 0 else ["shared", "full"]
        for how in order:
            start = time.process_time()
            if how == "full":
                for _, m in modules:
                    run_checks(m, seeds=args.seeds, check_env=True)
            else:
                checked: list = []
                for _, m in modules:
                    check_sharing(m, checked, args.seeds, True)
            times[how].append(time.process_time() - start)
    best = {k: min(v) for k, v in times.items()}
    out = {"envs": [Path(label).stem for label, _ in modules], "seeds": args.seeds,
           "cpu_s": {k: [round(x, 2) for x in v] for k, v in times.items()},
           "min_cpu_s": {k: round(v, 2) for k, v in best.items()},
           "shared_over_full": round(best["shared"] / best["full"], 3),
           "variant_lines": _lines()}
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{len(modules)} envs, {args.seeds} seeds, {args.rounds} rounds")
    for k in ("full", "shared"):
        print(f"{k:>6}: min {best[k]:.2f} CPU s  (rounds: {', '.join(f'{x:.2f}' for x in times[k])})")
    print(f"shared / full: {out['shared_over_full']:.3f}")
    for name, (n, base) in out["variant_lines"].items():
        print(f"{name}: {n} lines, its base {base} ({n / base:.1%})")


if __name__ == "__main__":
    main()
