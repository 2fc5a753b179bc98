"""`tracec check SPEC --seeds N` speed per shipped spec: CPU and wall seconds of the checks.

Compiles each spec, then times ``run_checks`` (check_env, determinism, every probe on every
task and seed: what ``tracec check SPEC --seeds N`` runs after compiling). CPU seconds
(``process_time``, one core: the checks are single-threaded) are the figure to compare on a
shared machine; wall seconds depend on the load, printed with each row.

    OMP_NUM_THREADS=1 python benchmarks/check_speed.py --seeds 256
    OMP_NUM_THREADS=1 python benchmarks/check_speed.py --seeds 256 --json > speed.json

``--compare DIR`` measures another checkout (e.g. ``git archive REV | tar -x -C /tmp/base``)
against this one in one run: each spec runs in a fresh process per tree (that tree's
``benchmarks/check_speed.py`` on that tree's spec, with ``PYTHONPATH`` set to the tree),
alternating the order round by round so both see the same load; it prints the minimum and
median CPU seconds of each and the ratio of the minima.

    OMP_NUM_THREADS=1 python benchmarks/check_speed.py --seeds 256 --compare /tmp/base --rounds 3

With ``--cli`` each run is the whole command instead, ``python -m tracec.cli check SPEC --seeds
N`` (imports, compiling, every env of the spec with its variants, the prompt sizes), and the
figure is its user CPU seconds (what ``/usr/bin/time -f %U`` prints):

    OMP_NUM_THREADS=1 python benchmarks/check_speed.py --seeds 256 --compare /tmp/base --rounds 3 --cli

``--ablate ROUNDS`` measures, in one process and alternating round by round (so every variant
sees the same load), the checks as shipped against the checks without each of the speed-ups
of issue 14 item 9 that can be switched off: records copied on first read
(``FrozenWorld``'s ``records``: the domain's ``record_tables``), lazy copies at all (``FrozenWorld``: read-mostly tables and
records), the frozen old objects for the garbage collector (``old_objects_frozen``), the
per-state world cache; and without the last three. It prints the minimum CPU seconds of each.

    OMP_NUM_THREADS=1 python benchmarks/check_speed.py --seeds 128 --ablate 3
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from tracec.checks import run_checks
from tracec.compiler.api import compile_file


def _variants() -> dict[str, Callable[[], contextlib.AbstractContextManager]]:
    import tracec.checks.run as checks_run
    import tracec.runtime.env as env_mod
    from tracec.runtime.world import Frozen, FrozenWorld

    @contextlib.contextmanager
    def patched(copies: bool = True, gc_block: bool = True, cache: bool = True,
                records: bool = True) -> Iterator[None]:
        saved = env_mod.FrozenWorld, checks_run.old_objects_frozen, env_mod.WORLD_CACHE
        if not copies:
            env_mod.FrozenWorld = lambda world, lazy=(), records=(), originals=False: Frozen(world)
        elif not records:
            env_mod.FrozenWorld = (lambda world, lazy=(), records=(), originals=False:
                                   FrozenWorld(world, lazy, originals=originals))
        if not gc_block:
            checks_run.old_objects_frozen = contextlib.nullcontext
        if not cache:
            env_mod.WORLD_CACHE = 1  # the last world only
        try:
            yield
        finally:
            env_mod.FrozenWorld, checks_run.old_objects_frozen, env_mod.WORLD_CACHE = saved

    return {
        "shipped": patched,
        "no lazy records": lambda: patched(records=False),
        "no lazy copies": lambda: patched(copies=False),
        "no gc freeze": lambda: patched(gc_block=False),
        "no world cache": lambda: patched(cache=False),
        "none of them": lambda: patched(False, False, False),
    }


def ablate(specs: list[Path], seeds: int, rounds: int) -> None:
    variants = _variants()
    print(f"{'spec':42s}" + "".join(f"{name:>16s}" for name in variants) + "  (min CPU s)")
    for spec in specs:
        result = compile_file(spec)
        if not result.ok:
            raise SystemExit(result.rendered)
        best = {name: float("inf") for name in variants}
        for r in range(rounds):
            order = list(variants) if r % 2 == 0 else list(reversed(variants))
            for name in order:
                with variants[name]():
                    cpu = time.process_time()
                    run_checks(result.module, seeds=seeds)
                    best[name] = min(best[name], time.process_time() - cpu)
        print(f"{spec.stem:42s}" + "".join(f"{best[n]:16.2f}" for n in variants)
              + f"  before/after {best['none of them'] / best['shipped']:.2f}x, load "
              f"{os.getloadavg()[0]:.1f}", flush=True)


def _one(tree: Path, spec: Path, seeds: int, cli: bool = False) -> dict:
    """CPU and wall seconds of ``spec`` in a fresh process running ``tree``'s code (``cli``:
    the whole ``tracec check`` command, its user CPU seconds)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    if cli:
        before, wall = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime, time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "tracec.cli", "check", f"specs/{spec.name}",
                               "--seeds", str(seeds)], cwd=tree, env=env, capture_output=True)
        return {"cpu_s": resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before,
                "wall_s": time.perf_counter() - wall, "passed": done.returncode == 0,
                "load": round(os.getloadavg()[0], 1)}
    out = subprocess.run([sys.executable, str(tree / "benchmarks" / "check_speed.py"), "--seeds",
                          str(seeds), "--json", str(tree / "specs" / spec.name)],
                         cwd=tree, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)[0]


def compare(specs: list[Path], seeds: int, base: Path, rounds: int, cli: bool = False) -> None:
    here = Path(__file__).resolve().parents[1]
    trees = {"before": base.resolve(), "after": here}
    print(f"{'spec':38s} {'before min':>10s} {'after min':>10s} {'ratio':>6s} "
          f"{'before med':>10s} {'after med':>10s}  load", flush=True)
    for spec in specs:
        if not (trees["before"] / "specs" / spec.name).exists():
            print(f"{spec.stem:38s} (not in {base})")
            continue
        cpu: dict[str, list[float]] = {k: [] for k in trees}
        loads = []
        for r in range(rounds):
            for name in (list(trees) if r % 2 == 0 else list(reversed(trees))):
                row = _one(trees[name], spec, seeds, cli)
                if not row["passed"]:
                    print(f"  {name}: {spec.stem} did not pass")
                cpu[name].append(row["cpu_s"])
                loads.append(row["load"])
        b, a = min(cpu["before"]), min(cpu["after"])
        print(f"{spec.stem:38s} {b:10.2f} {a:10.2f} {b / a:5.2f}x {statistics.median(cpu['before']):10.2f} "
              f"{statistics.median(cpu['after']):10.2f}  {min(loads):.1f}-{max(loads):.1f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("specs", nargs="*", type=Path, help="specs (default: specs/*.tracec)")
    ap.add_argument("--seeds", type=int, default=256)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--ablate", type=int, metavar="ROUNDS", default=0,
                    help="compare the shipped checks with each speed-up turned off, in process")
    ap.add_argument("--compare", type=Path, metavar="DIR",
                    help="also run another checkout's code, alternating, and print both")
    ap.add_argument("--rounds", type=int, default=2, help="runs per tree and spec with --compare")
    ap.add_argument("--cli", action="store_true",
                    help="with --compare: time the whole `tracec check` command (user CPU s)")
    args = ap.parse_args()
    specs = args.specs or sorted(Path("specs").glob("*.tracec"))
    if args.compare:
        compare(specs, args.seeds, args.compare, args.rounds, args.cli)
        return
    if args.ablate:
        ablate(specs, args.seeds, args.ablate)
        return
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
