"""Multi-turn episodes of an agent on a compiled env through the eval runner."""

from __future__ import annotations

import json

from tests.runtime.tiny_capability import TinyOrdersEnv
from tracec.harness.runner import Job, run_jobs


class GoldThenReport:
    """Plays each episode's gold calls one per turn, then reports (reads the live env)."""

    def __init__(self, env: TinyOrdersEnv):
        self.env = env
        self.turn = 0

    def act(self, batch, tasks=None):
        out = []
        for messages, tools in batch:
            assert tools, "the tools from reset must reach the agent on every turn"
            gold = self.env.instance.gold
            if self.turn < len(gold):
                call = gold[self.turn]
                out.append("<tool_call>" + json.dumps({"name": call.name, "arguments": call.args})
                           + "</tool_call>")
            else:
                vals = " ".join(str(v) for v in self.env.instance.communicate.values())
                out.append(f"Done. {vals} ###STOP###")
            self.turn += 1
        return out


def test_multi_turn_episode_keeps_tools_and_scores() -> None:
    env = TinyOrdersEnv()
    agent = GoldThenReport(env)
    episodes = run_jobs([Job(env="tiny", task_id="t", trial=0, seed=3)], lambda _: env, agent)
    assert len(episodes) == 1
    ep = episodes[0]
    assert agent.turn >= 2
    assert ep.reward == max(r.level for r in env.capability.rules)
