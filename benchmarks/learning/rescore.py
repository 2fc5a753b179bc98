"""Re-score a `tracec eval` run under the env's current reward code, by replaying its turns.

Every episode's assistant turns (tool calls in Hermes form, texts as written) are played again
on ``reset(seed=...)`` of the env the run used; the env is deterministic and its user scripted,
so the replay is the episode, scored by today's rules. With ``--raw`` the env scores as a spec
with `communicate raw` would (the agent's messages as written, tool markup included), which
must give every recorded reward back (a check of the replay itself).

    python benchmarks/learning/rescore.py runs/x benchmarks/learning/generated/flight_status_compact.py \
        --out runs/x_rescored
    tracec compare runs/x runs/x_rescored
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from tracec.harness.resolve import env_class, load_paths
from tracec.harness.results import EpisodeWriter, read_episodes
from tracec.runtime.toolcall import hermes


def agent_turns(messages: list[dict]) -> list[str]:
    """The raw assistant turns of an OpenAI-format conversation."""
    turns = []
    for m in messages:
        if m.get("role") != "assistant":
            continue
        text = m.get("content") or ""
        calls = [hermes(c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
                 for c in m.get("tool_calls") or []]
        turns.append("\n".join([text] + calls if text else calls) if calls else text)
    return turns


def rescore(run: Path, env_path: Path, out: Path, raw: bool = False) -> dict:
    (_, module), = load_paths([env_path])
    cls = env_class(module)
    if raw:
        cap = dataclasses.replace(cls.capability, communicate_raw=True)
        cls = type(cls.__name__, (cls,), {"capability": cap})
    episodes = read_episodes(run / "trajectories.jsonl")
    out.mkdir(parents=True, exist_ok=True)
    path = out / "trajectories.jsonl"
    path.unlink(missing_ok=True)
    env = cls()
    changed = same = 0
    with EpisodeWriter(path) as writer:
        for ep in episodes:
            env.reset(seed=int(ep.info["seed"]))
            info: dict = {}
            reward = 0.0
            for turn in agent_turns(ep.messages):
                _, reward, term, trunc, info = env.step(turn)
                if term or trunc:
                    break
            else:  # the run ended the episode (e.g. the user's ###STOP###): end it here too
                while not env._done:
                    _, reward, term, trunc, info = env.step("###STOP###")
            bd = info.get("reward_breakdown", {})
            top = max(cls.capability.levels)
            new = ep.model_copy(update={
                "reward": float(reward), "success": reward >= top - 1e-9,
                "info": {**ep.info, "reward_breakdown": bd, "rescored_from": ep.reward}})
            writer.write(new)
            changed += abs(new.reward - ep.reward) > 1e-9
            same += abs(new.reward - ep.reward) <= 1e-9
    return {"episodes": len(episodes), "reward_changed": changed, "reward_same": same,
            "success_before": sum(e.success for e in episodes),
            "success_after": sum(e.success for e in read_episodes(path)), "out": str(out)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a `tracec eval --out` folder")
    ap.add_argument("env", type=Path, help="the env module (or spec) the run used")
    ap.add_argument("--out", type=Path, required=True, help="folder for the re-scored run")
    ap.add_argument("--raw", action="store_true", help="score as `communicate raw` would")
    args = ap.parse_args()
    print(json.dumps(rescore(args.run, args.env, args.out, args.raw), indent=2))


if __name__ == "__main__":
    main()
