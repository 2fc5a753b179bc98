"""Compile and check timings for the shipped specs (figures go to benchmarks/README.md).

    OMP_NUM_THREADS=1 python benchmarks/bench_compile.py [--seeds 64] [--repeat 5]

Measures, in one process: cold compile of specs/ (grammar load + domain import + all specs),
warm compile (median of --repeat), and `run_checks` time per environment. A separate
`tracec compile specs/ --check` subprocess gives the end-to-end CLI time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--specs", type=Path, default=ROOT / "specs")
    args = ap.parse_args()

    t0 = time.perf_counter()
    from tracec.compiler.api import compile_file, find_specs  # noqa: E402

    paths = find_specs([args.specs])
    results = [compile_file(p) for p in paths]
    cold = time.perf_counter() - t0
    assert all(r.ok for r in results), "\n".join(r.rendered for r in results if not r.ok)
    warm = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        for p in paths:
            compile_file(p)
        warm.append(time.perf_counter() - t)

    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tracec.cli", "compile", str(args.specs),
                           "--check"], cwd=ROOT, capture_output=True, text=True)
    cli = time.perf_counter() - t

    from tracec.checks import run_checks  # noqa: E402

    checks = {}
    for r in results:
        t = time.perf_counter()
        report = run_checks(r.module.CAPABILITY, seeds=args.seeds)
        checks[r.ir.name] = {"seconds": round(time.perf_counter() - t, 2),
                             "passed": report.passed}
    out = {
        "specs": len(paths),
        "cold_compile_s": round(cold, 3),
        "warm_compile_s_median": round(statistics.median(warm), 4),
        "cli_compile_check_s": round(cli, 3),
        "cli_exit": proc.returncode,
        "check_seeds": args.seeds,
        "checks": checks,
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
