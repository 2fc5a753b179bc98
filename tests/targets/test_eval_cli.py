"""`tracec eval` / `tracec grade`: outputs, pass^k, resume after a kill, loopback endpoints."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tests.support.openai_server import OpenAIServer
from tracec.harness.agents import OracleAgent
from tracec.harness.results import load_tau2_results, read_episodes
from tracec.runtime.toolcall import hermes
from tracec.targets.cli import eval_cmd, grade_cmd
from tracec.targets.evaluate import EvalConfig, run_eval
from tracec.targets.metrics import pass_hat_k


def run(cmd, args):
    return CliRunner().invoke(cmd, args, catch_exceptions=False)


def test_eval_oracle_writes_trajectories_tau2_results_and_summary(tmp_path, data_dir):
    out = tmp_path / "run"
    r = run(eval_cmd, ["--agent", "oracle", "--target", "tau2:airline", "--target", "tau2:retail",
                       "--split", "base", "--trials", "2", "--tau2-data", str(data_dir),
                       "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.output)
    rows = {m["group"]: m for m in summary["metrics"]}
    assert set(rows) == {"tau2:airline", "tau2:retail", "all"}
    assert rows["all"]["episodes"] == 2 * 16 and rows["all"]["pass_rate"] == 1.0
    assert rows["all"]["pass_hat_k"] == {"1": 1.0, "2": 1.0} or rows["all"]["pass_hat_k"] == {1: 1.0, 2: 1.0}
    eps = read_episodes(out / "trajectories.jsonl")
    assert len(eps) == 32 and all(e.success for e in eps)
    e = eps[0]
    assert e.id == f"{e.env}/{e.task_id}/{e.trial}" and e.messages[0]["role"] == "system"
    res = load_tau2_results(out / "tau2_airline_results.json")
    assert res.domain == "airline" and len(res.simulations) == 16 and len(res.tasks) == 8
    sim = res.simulations[0]
    assert sim.reward_info["reward"] == 1.0 and sim.termination_reason in ("agent_stop", "user_stop")
    assert all(m["role"] != "system" for m in sim.messages)


def test_grade_regrades_tau2_results_and_agrees(tmp_path, data_dir):
    out = tmp_path / "run"
    run_eval(EvalConfig(agent="oracle", targets=["tau2:airline"], split="base",
                        tau2_data=str(data_dir), out_dir=str(out)), progress=False)
    path = out / "tau2_airline_results.json"
    raw = json.loads(path.read_text())
    # break one simulation: drop its write calls -> τ² would give 0
    sim = next(s for s in raw["simulations"] if s["task_id"] == "14")
    sim["messages"] = [m for m in sim["messages"] if m["role"] not in ("tool",) and not m.get("tool_calls")]
    path.write_text(json.dumps(raw))
    r = run(grade_cmd, [str(path), "--tau2-data", str(data_dir), "--json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    grades = {g["task_id"]: g for g in report["grades"]}
    assert grades["14"]["reward"] == 0.0 and grades["14"]["recorded_reward"] == 1.0
    assert report["agree"] == report["n"] - 1 == 7
    r = run(grade_cmd, [str(path), "--tau2-data", str(data_dir)])
    assert r.exit_code == 0 and "agrees with the recorded reward on 7/8" in r.output


def test_user_mistakes_are_clean_errors(tmp_path, data_dir):
    bad = tmp_path / "x.json"
    bad.write_text("{nope")
    r = CliRunner().invoke(grade_cmd, [str(bad), "--tau2-data", str(data_dir)])
    assert r.exit_code == 1 and "invalid JSON" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(eval_cmd, ["--agent", "oracle", "--target", "tau2:airline",
                                      "--tau2-data", str(tmp_path), "--out", str(tmp_path / "o")])
    assert r.exit_code == 1 and "not a τ² domains directory" in r.output
    r = CliRunner().invoke(eval_cmd, ["--agent", "gpt", "--target", "tau2:airline"])
    assert r.exit_code == 1 and "unknown agent" in r.output
    r = CliRunner().invoke(eval_cmd, ["--agent", "oracle"])
    assert r.exit_code == 1 and "nothing to evaluate" in r.output
    r = CliRunner().invoke(eval_cmd, ["--agent", "oracle", "--target", "tau2:airline",
                                      "--tau2-data", str(data_dir), "--task-ids", "999",
                                      "--out", str(tmp_path / "o")])
    assert r.exit_code == 1 and "unknown task id" in r.output


class Killed(OracleAgent):
    """An oracle that is killed (KeyboardInterrupt) after ``n`` acts."""

    def __init__(self, n):
        self.n = n

    def act(self, batch, tasks=None):
        self.n -= 1
        if self.n < 0:
            raise KeyboardInterrupt
        return super().act(batch, tasks)


def test_resume_after_a_kill_counts_nothing_twice(tmp_path, data_dir):
    cfg = EvalConfig(agent="oracle", targets=["tau2:retail"], split="base", trials=2,
                     tau2_data=str(data_dir), out_dir=str(tmp_path), batch_size=3)
    with pytest.raises(KeyboardInterrupt):
        run_eval(cfg, progress=False, agent=Killed(25))
    partial = read_episodes(tmp_path / "trajectories.jsonl")
    assert 0 < len(partial) < 16
    summary = run_eval(cfg, progress=False)
    assert summary["resumed"] == len(partial) and summary["episodes"] == 16
    eps = read_episodes(tmp_path / "trajectories.jsonl")
    assert len(eps) == 16 and len({(e.task_id, e.trial) for e in eps}) == 16
    # a third run has nothing left to do
    assert run_eval(cfg, progress=False)["resumed"] == 16
    assert len(read_episodes(tmp_path / "trajectories.jsonl")) == 16


def test_torn_last_line_is_rerun(tmp_path, data_dir):
    cfg = EvalConfig(agent="oracle", targets=["tau2:airline"], task_ids=["5", "13"],
                     tau2_data=str(data_dir), out_dir=str(tmp_path))
    run_eval(cfg, progress=False)
    path = tmp_path / "trajectories.jsonl"
    text = path.read_text()
    path.write_text(text[: len(text) - 40])  # the writer died mid-line
    assert len(read_episodes(path)) == 1
    assert run_eval(cfg, progress=False)["episodes"] == 2
    assert len(read_episodes(path)) == 2


def test_another_agent_in_the_same_out_dir_is_refused(tmp_path, data_dir):
    args = ["--target", "tau2:airline", "--task-ids", "5", "--tau2-data", str(data_dir), "--out", str(tmp_path)]
    assert run(eval_cmd, ["--agent", "oracle", "--json", *args]).exit_code == 0
    r = CliRunner().invoke(eval_cmd, ["--agent", "scripted", *args])
    assert r.exit_code == 1 and "another agent" in r.output
    assert run(eval_cmd, ["--agent", "scripted", "--fresh", "--json", *args]).exit_code == 0


def test_openai_agent_and_llm_user_over_loopback(tmp_path, data_dir, airline):
    """End to end: agent and user both answered by a scripted OpenAI-compatible server."""
    task = airline.tasks["5"]
    uid = task.gold_actions[0].arguments["user_id"]

    def answer(body):
        if body["model"] == "user-model":
            last = body["messages"][-1]["content"]
            return "Thanks, bye. ###STOP###" if "Regular" in last or "gold" in last.lower() else \
                f"Hi, my user id is {uid}. Am I a gold member?"
        if body["messages"][-1]["role"] == "tool":
            return "You are a Regular member, not Gold."
        return {"tool_calls": [{"name": "get_user_details", "arguments": {"user_id": uid}}]}

    with OpenAIServer(answer) as srv:
        r = run(eval_cmd, ["--agent", f"openai:agent-model@{srv.base_url}", "--user",
                           f"llm:user-model@{srv.base_url}", "--target", "tau2:airline",
                           "--task-ids", "5", "--tau2-data", str(data_dir), "--out", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    ep = read_episodes(tmp_path / "trajectories.jsonl")[0]
    roles = [m["role"] for m in ep.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert ep.info["termination_reason"] == "user_stop" and ep.reward == 1.0
    assert ep.messages[2]["tool_calls"][0]["function"]["name"] == "get_user_details"


def test_pass_hat_k_matches_tau2_definition():
    # one task 2/4 successes, one task 4/4: pass^1 = (0.5 + 1)/2, pass^2 = (1/6 + 1)/2
    assert pass_hat_k([(4, 2), (4, 4)], 1) == pytest.approx(0.75)
    assert pass_hat_k([(4, 2), (4, 4)], 2) == pytest.approx((1 / 6 + 1) / 2)
    assert pass_hat_k([(4, 2)], 5) == 0.0


def test_eval_on_a_compiled_env_module(tmp_path):
    """`--env FILE.py`: any module with one capability env class (a stand-in here)."""
    mod = tmp_path / "toy_env.py"
    mod.write_text(
        "import gymnasium as gym\n"
        "from tracec.runtime.spaces import UnicodeText\n"
        "class Cap:\n    name = 'toy'\n"
        "class ToyEnv(gym.Env):\n"
        "    capability = Cap()\n"
        "    observation_space = UnicodeText(); action_space = UnicodeText()\n"
        "    def reset(self, seed=None, options=None):\n"
        "        super().reset(seed=seed); self.m = [{'role': 'user', 'content': str(seed)}]\n"
        "        return str(seed), {'messages': list(self.m), 'tools': [], 'hint': '', 'task': 't'}\n"
        "    def step(self, a):\n"
        "        self.m.append({'role': 'assistant', 'content': a})\n"
        "        r = 1.0 if int(self.m[0]['content']) % 2 == 0 else 0.0\n"
        "        return '', r, True, False, {'messages': list(self.m), 'tools': [], 'hint': '', 'task': 't',\n"
        "                                   'reward_breakdown': {'reward': r, 'ended_by': 'agent_stop'}}\n"
    )
    r = run(eval_cmd, ["--agent", "scripted", "--env", str(mod), "--tasks", "4", "--out", str(tmp_path / "o"), "--json"])
    assert r.exit_code == 0, r.output
    row = json.loads(r.output)["metrics"][0]
    assert row["group"] == "tracec/toy-v0" and row["episodes"] == 4 and row["avg_reward"] == 0.5


def test_hermes_helper_roundtrip():
    assert "get_user_details" in hermes("get_user_details", {"user_id": "x"})


def test_eval_cmd_builds_one_eval_config_and_a_local_agent_gets_its_placement(tmp_path,
                                                                              monkeypatch):
    """`tracec eval` states the run once, as an EvalConfig; a local agent is built on that
    config's Placement (device and dtype as given on the command line)."""
    import tracec.targets.evaluate as evaluate
    from tracec.llm.device import Placement

    built = {}

    def fake_make_agent(spec, **opts):
        built.update(spec=spec, **opts)
        return OracleAgent()

    monkeypatch.setattr(evaluate, "make_agent", fake_make_agent)
    seen = []
    real = evaluate.run_eval
    monkeypatch.setattr(evaluate, "run_eval", lambda cfg, **kw: seen.append(cfg) or real(cfg, **kw))
    r = run(eval_cmd, ["--agent", "local:some-model", "--env", "tests/runtime/tiny_capability.py",
                       "--tasks", "1", "--device", "cpu:1", "--dtype", "bf16", "--max-new-tokens",
                       "7", "--out", str(tmp_path / "e"), "--json"])
    assert r.exit_code == 0, r.output
    [cfg] = seen
    assert isinstance(cfg, EvalConfig) and cfg.num_tasks == 1 and cfg.max_new_tokens == 7
    assert cfg.out_dir == str(tmp_path / "e") and cfg.placement == Placement("cpu:1", "bf16")
    assert built == {"spec": "local:some-model", "max_new_tokens": 7,
                     "place": Placement("cpu:1", "bf16")}
