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


def test_compiled_env_episode_carries_gold_for_the_offline_labeler() -> None:
    """`tracec analyze` labels eval trajectories of a compiled env without a tasks file: each
    episode records the drawn gold calls and the values to communicate."""
    from tracec.analysis.importers import from_jsonl_record
    from tracec.analysis.offline import label_trajectory

    env = TinyOrdersEnv()
    ep = run_jobs([Job(env="tiny", task_id="t", trial=0, seed=3)], lambda _: env, GoldThenReport(env))[0]
    inst = env.instance
    assert ep.info["gold_actions"] == [{"name": c.name, "arguments": c.arguments} for c in inst.gold]
    assert ep.info["communicate_info"] == [str(v) for v in inst.communicate.values()]
    traj = from_jsonl_record(json.loads(ep.model_dump_json()), "test", "x", None)
    assert traj.gold_actions() is not None
    labels = label_trajectory(traj)
    assert any(v != "NA" for v in labels.values())
