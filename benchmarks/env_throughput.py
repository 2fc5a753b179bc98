"""Environment throughput: steps/s of a lookup tool call, tool-call parsing, resets/s.

Usage (one core):
    OMP_NUM_THREADS=1 python benchmarks/env_throughput.py [--env ENV] [--steps N] [--json]

ENV is anything `tracec play` accepts (capability name, gym id, generated module path);
default: the first env in generated_envs/, else the tiny test fixture. The lookup call is the
first read-only gold call of the drawn task. Times are CPU time of this process (robust to other load). Step time excludes resets (episodes restart from
their initial world with `env.restart()` when they end).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tracec.harness.resolve import resolve_env
from tracec.runtime.toolcall import hermes, parse_turn


def _default_env() -> str:
    try:
        import generated_envs

        if generated_envs.ENVS:
            return next(iter(generated_envs.ENVS))
    except ImportError:
        pass
    return str(ROOT / "tests/runtime/tiny_capability.py")


def bench_steps(env, steps: int) -> tuple[float, str]:
    """Lookup-call steps per CPU second; restarts are timed separately and subtracted."""
    env.reset(seed=0)
    writes = env.toolbox.writes
    call = next(c for c in env.instance.gold if c.name not in writes)
    action = hermes(call.name, call.arguments)
    clock = time.process_time  # CPU time: robust to other load on the machine
    restarts = 0
    done = 0
    t0 = clock()
    while done < steps:
        env.restart()
        restarts += 1
        for _ in range(env.capability.max_turns):
            _, _, term, trunc, _ = env.step(action)
            done += 1
            if term or trunc:
                break
    total = clock() - t0
    t1 = clock()
    for _ in range(restarts):
        env.restart()
    restart_cost = clock() - t1
    return done / max(total - restart_cost, 1e-9), call.name


def bench_parse(n: int) -> float:
    raw = 'Let me check.\n<tool_call>\n{"name": "get_reservation_details", "arguments": {"reservation_id": "ABC123"}}\n</tool_call>'
    t0 = time.process_time()
    for _ in range(n):
        parse_turn(raw)
    return n / (time.process_time() - t0)


def bench_resets(env, n: int) -> float:
    t0 = time.process_time()
    for seed in range(n):
        env.reset(seed=seed)
    return n / (time.process_time() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", default=None)
    ap.add_argument("--steps", type=int, default=50_000)
    ap.add_argument("--resets", type=int, default=50)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    ref = args.env or _default_env()
    env = resolve_env(ref).cls()
    steps_per_s, tool = bench_steps(env, args.steps)
    result = {
        "env": env.capability.name,
        "lookup_tool": tool,
        "steps_per_s": round(steps_per_s),
        "parse_per_s": round(bench_parse(args.steps)),
        "resets_per_s": round(bench_resets(env, args.resets), 1),
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:14} {v}")


if __name__ == "__main__":
    main()
