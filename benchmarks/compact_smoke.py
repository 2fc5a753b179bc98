"""Does SmolLM2-135M still call tools with compact schemas? Full vs compact on the same envs.

    tracec model prepare smollm2 && OMP_NUM_THREADS=1 python benchmarks/compact_smoke.py --seeds 16

For each env and schema rendering, the untrained model plays seeds 0..N-1 greedily (same seeds,
same prompts except the tool schemas). Reported per rendering: the share of first turns that are a
well-formed call of a shown tool with valid arguments, the mean reward of whole episodes (capped
at --turns agent turns; an unfinished episode scores 0), and the first-prompt tokens.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from tracec.llm.agents import LocalAgent
from tracec.runtime.loader import env_class, load_paths


def play(cls, compact: bool, agent: LocalAgent, seeds: int, turns: int, batch: int,
         hint: bool) -> dict:
    valid_first, rewards, prompt_tokens = 0, [], []
    for start in range(0, seeds, batch):
        envs = []
        for seed in range(start, min(start + batch, seeds)):
            env = cls(compact_tools=compact)
            env.reset(seed=seed, options={"hint": hint})
            envs.append(env)
        live = list(range(len(envs)))
        done_reward = [0.0] * len(envs)
        for turn in range(turns):
            if not live:
                break
            items = [(envs[i].messages, envs[i].tools) for i in live]
            if turn == 0:
                for m, t in items:
                    prompt_tokens.append(len(agent.chat_model.render(m, t)))
            actions = agent.act(items)
            still = []
            for i, action in zip(live, actions):
                n_calls = len(envs[i].calls)
                _, reward, term, trunc, _ = envs[i].step(action)
                if turn == 0 and len(envs[i].calls) > n_calls:
                    valid_first += 1
                if term or trunc:
                    done_reward[i] = reward
                else:
                    still.append(i)
            live = still
        rewards.extend(done_reward)
    return {"valid_first_call": valid_first / seeds, "mean_reward": sum(rewards) / seeds,
            "success": sum(r >= 1.0 for r in rewards) / seeds,
            "prompt_tokens_max": max(prompt_tokens)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--seeds", type=int, default=16)
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--hint", action="store_true", help="show the expert hint")
    ap.add_argument("--envs", nargs="+", default=["generated_envs/reservation_lookup_compact.py",
                                                  "generated_envs/structured_data_reasoning_compact.py"])
    args = ap.parse_args()
    agent = LocalAgent(args.model, max_new_tokens=args.max_new_tokens,
                       temperature=args.temperature)
    rows = []
    for label, module in load_paths([Path(p) for p in args.envs]):
        cls = env_class(module)
        for compact in (False, True):
            t0 = time.perf_counter()
            res = play(cls, compact, agent, args.seeds, args.turns, args.batch, args.hint)
            res.update(env=cls.capability.name, schemas="compact" if compact else "full",
                       temperature=args.temperature, hint=args.hint,
                       seconds=round(time.perf_counter() - t0, 1))
            rows.append(res)
            print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
