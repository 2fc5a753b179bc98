"""`tracec check SPEC --seeds N` speed per shipped spec: CPU and wall seconds of the checks.

Compiles each spec, then times ``run_checks`` (check_env, determinism, every probe on every
task and seed: what ``tracec check SPEC --seeds N`` runs after compiling). CPU seconds
(``process_time``, one core: the checks are single-threaded) are the figure to compare on a
shared machine; wall seconds depend on the load, printed with each row.

    OMP_NUM_THREADS=1 python benchmarks/check_speed.py --seeds 256
    OMP_NUM_THREADS=1 python benchmarks/check_speed.py --seeds 256 --json > speed.json

To compare with another checkout (e.g. ``git archive REV | tar -x -C /tmp/base``), run the same
command there with ``PYTHONPATH=/tmp/base``, spec by spec, alternating, so both see one load.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from tracec.checks import run_checks
from tracec.compiler.api import compile_file


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("specs", nargs="*", type=Path, help="specs (default: specs/*.tracec)")
    ap.add_argument("--seeds", type=int, default=256)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    specs = args.specs or sorted(Path("specs").glob("*.tracec"))
    rows = []
    for spec in specs:
        result = compile_file(spec)
        if not result.ok:
            raise SystemExit(result.rendered)
        cpu, wall = time.process_time(), time.perf_counter()
        report = run_checks(result.module, seeds=args.seeds)
        row = {"spec": str(spec), "seeds": args.seeds, "cpu_s": round(time.process_time() - cpu, 2),
               "wall_s": round(time.perf_counter() - wall, 2), "passed": report.passed,
               "load": round(os.getloadavg()[0], 1)}
        rows.append(row)
        if not args.json:
            print(f"{row['spec']:50s} {row['cpu_s']:6.2f} cpu s {row['wall_s']:7.2f} wall s "
                  f"load {row['load']:4.1f} {'pass' if row['passed'] else 'FAIL'}", flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
