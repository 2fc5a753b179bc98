"""Calibration with a model: the statistics on hand-computed groups, and the runner end to end."""

from __future__ import annotations

import json
import math
import threading

import pytest
from click.testing import CliRunner

from tests.runtime import tiny_capability as tc
from tests.support.openai_server import OpenAIServer
from tracec.checks.calibrate import (
    Bands,
    build_agent,
    calibrate,
    classify_group,
    judge_bands,
    pass_at_k,
    population_std,
    summarize,
)
from tracec.checks.cli import check_cmd
from tracec.checks.probes import report_text
from tracec.harness.agents import ScriptedAgent

FIXTURE = "tests/runtime/tiny_capability.py"
WRONG = "I'm sorry, I cannot help with that."


# -- statistics ---------------------------------------------------------------------------------

def _pass_at_k_by_counting(n: int, c: int, k: int) -> float:
    """pass@k as 1 - C(n-c, k) / C(n, k), with exact binomials (the definition)."""
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


@pytest.mark.parametrize("n", [1, 4, 16])
def test_pass_at_k_matches_the_binomial_definition(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(_pass_at_k_by_counting(n, c, k), abs=1e-12)


def test_pass_at_k_hand_values_and_domain():
    assert pass_at_k(4, 2, 1) == pytest.approx(0.5)  # pass@1 is the success rate
    assert pass_at_k(4, 2, 2) == pytest.approx(1 - 1 / 6)  # only {fail, fail} of 6 pairs misses
    assert pass_at_k(4, 0, 4) == 0.0 and pass_at_k(4, 1, 4) == 1.0
    for bad in [(4, 5, 1), (4, 1, 5), (4, 1, 0)]:
        with pytest.raises(ValueError):
            pass_at_k(*bad)


def test_population_std_is_centred():
    assert population_std([0.3, 0.3, 0.3]) == 0.0  # a constant tier is no variance
    assert population_std([0.0, 1.0]) == pytest.approx(0.5)
    assert population_std([1.0]) == 0.0


@pytest.mark.parametrize("rewards, kinds", [
    ([1.0, 1.0, 1.0], {"all_success", "constant"}),
    ([0.0, 0.0], {"all_zero", "constant"}),
    ([0.3, 0.3], {"constant"}),
    ([0.0, 0.3], set()),  # varies, but nobody succeeds: not informative
    ([1.0, 0.0, 0.3], {"informative"}),
])
def test_group_classification(rewards, kinds):
    kind = classify_group(rewards, threshold=1.0)
    assert {k for k, v in kind.model_dump().items() if v} == kinds


def test_summary_of_hand_computed_groups():
    groups = [[1, 1, 1, 1], [0, 0, 0, 0], [1, 1, 0, 0], [0.5, 0, 0, 0]]
    s = summarize(groups, threshold=1.0)
    assert (s.groups, s.samples, s.episodes) == (4, 4, 16)
    assert s.mean_reward == pytest.approx(6.5 / 16)
    assert s.success_rate == pytest.approx(6 / 16)
    mean = 6.5 / 16
    flat = [r for g in groups for r in g]
    assert s.reward_std == pytest.approx(math.sqrt(sum((r - mean) ** 2 for r in flat) / 16))
    assert (s.all_success, s.all_zero, s.constant, s.informative) == (0.25, 0.25, 0.5, 0.25)
    assert s.pass_at[1] == pytest.approx((1 + 0 + 0.5 + 0) / 4)
    assert s.pass_at[4] == pytest.approx((1 + 0 + 1 + 0) / 4)
    assert set(s.pass_at) == {1, 4}  # k > n is not estimable
    assert summarize(groups, threshold=0.5).success_rate == pytest.approx(7 / 16)


def test_bands_judge_each_measure_with_inclusive_bounds():
    s = summarize([[1, 0], [1, 0], [0.5, 0]], threshold=1.0)
    verdict = {b.name: b.passed for b in judge_bands(s, Bands())}
    # mean 2.5/6, success 2/6, std > 0.05, no all-success / all-zero / constant groups
    assert verdict == {"mean_reward": True, "success_rate": True, "reward_std": True, "all_success": True,
                       "all_zero": True, "constant": True, "informative": True}
    edge = summarize([[1, 1], [1, 0], [1, 0], [1, 0], [1, 0]], threshold=1.0)  # all-success share 0.2
    results = {b.name: b for b in judge_bands(edge, Bands())}
    assert results["all_success"].value == pytest.approx(0.2) and results["all_success"].passed
    assert results["success_rate"].value == pytest.approx(0.6) and results["success_rate"].passed
    assert results["success_rate"].bounds == "0.2-0.6" and results["reward_std"].bounds == ">= 0.05"
    strict = {b.name: b.passed for b in judge_bands(edge, Bands(max_all_success=0.1, success_rate=(0.2, 0.5)))}
    assert not strict["all_success"] and not strict["success_rate"] and strict["mean_reward"]


def test_a_calibrated_local_agent_samples_from_the_seed_it_is_given(tmp_path):
    """No reseeding wrapper: ``build_agent`` hands ``--seed`` to the local agent, whose every call
    draws its own streams; the same seed repeats a calibration's samples."""
    from tracec.llm.tiny import make_tiny_model

    model = make_tiny_model(tmp_path / "model", seed=0)

    def samples(seed: int) -> list[str]:
        agent = build_agent(f"local:{model}", temperature=1.0, max_new_tokens=8, seed=seed)
        assert agent.seed == seed
        convo = [([{"role": "user", "content": "What is the status of my order?"}], [])]
        return [agent.act(convo)[0] for _ in range(3)]

    first = samples(7)
    assert len(set(first)) > 1  # successive calls (turns, groups) are not one replayed stream
    assert samples(7) == first
    assert samples(8) != first


# -- the runner, with an OpenAI-compatible loopback server ---------------------------------------

def _instances(seeds):
    """First user text -> the drawn task instance, for each seed (what the server answers to)."""
    out = {}
    for s in seeds:
        env = tc.TinyOrdersEnv()
        obs, _ = env.reset(seed=s)
        out[obs] = env.instance
    assert len(out) == len(seeds), "seeds must draw distinct first messages"
    return out


def _server_policy(instances, correct_per_seed):
    """Reply with the gold calls + report for the first ``correct_per_seed[i]`` samples of seed i."""
    order = list(instances)
    started: dict[str, int] = {}
    lock = threading.Lock()

    def reply(body):
        msgs = body["messages"]
        user = next(m["content"] for m in msgs if m["role"] == "user")
        inst = instances[user]
        turn = sum(1 for m in msgs if m["role"] == "assistant")
        if turn == 0:
            with lock:
                rank = started[user] = started.get(user, 0) + 1
            if rank > correct_per_seed[order.index(user)]:
                return WRONG  # ends the episode: the user has no reply to it
        gold = list(inst.gold)
        if turn < len(gold):
            return {"tool_calls": [{"name": gold[turn].name, "arguments": gold[turn].arguments}]}
        return report_text(inst)

    return reply


def test_calibrate_end_to_end_with_mixed_groups():
    instances = _instances(range(3))
    with OpenAIServer(_server_policy(instances, [4, 0, 2])) as srv:
        agent = build_agent(f"openai:test-model@{srv.base_url}", temperature=0.7, max_new_tokens=64,
                            concurrency=4)
        ticks: list[int] = []
        report = calibrate(tc.TinyOrdersEnv, agent, seeds=3, samples=4, progress=ticks.append,
                           temperature=0.7)
        assert all(r["temperature"] == 0.7 and r["max_tokens"] == 64 for r in srv.requests)
    assert sum(ticks) == 12
    assert [sorted(g) for g in report.rewards] == [[1.0] * 4, [0.0] * 4, [0.0, 0.0, 1.0, 1.0]]
    s = report.stats
    assert s.threshold == 1.0  # the fixture's top level
    assert (s.mean_reward, s.success_rate, s.reward_std) == (0.5, 0.5, 0.5)
    assert s.all_success == s.all_zero == s.informative == pytest.approx(1 / 3)
    assert s.constant == pytest.approx(2 / 3)
    assert s.pass_at == {1: pytest.approx(0.5), 4: pytest.approx(2 / 3)}
    failed = {b.name for b in report.bands if not b.passed}
    assert failed == {"all_success", "all_zero", "constant", "informative"}
    assert not report.passed


def _cli(args):
    return CliRunner().invoke(check_cmd, [FIXTURE, "--seeds", "2", "--no-env-checker", *args])


def test_cli_calibration_table_json_and_band_options():
    instances = _instances(range(3))
    with OpenAIServer(_server_policy(instances, [4, 0, 2])) as srv:
        model = ["--model", f"openai:m@{srv.base_url}", "--calib-seeds", "3", "--samples", "4"]
        table = _cli(model)
        assert table.exit_code == 1, table.output
        assert "calibration tiny_orders" in table.output and "pass@4" in table.output
        assert "1 of 1 environments failed calibration" in table.output

    with OpenAIServer(_server_policy(instances, [4, 0, 2])) as srv:
        loose = ["--max-all-success", "0.4", "--max-all-zero", "0.4", "--max-constant", "0.7",
                 "--min-informative", "0.3", "--mean-band", "0.4,0.6"]
        result = _cli(["--model", f"openai:m@{srv.base_url}", "--calib-seeds", "3", "--samples", "4",
                       "--json", *loose])
    assert result.exit_code == 0, result.output
    [item] = json.loads(result.output)
    assert item["passed"] and item["calibration"]["passed"]  # offline and calibration verdicts apart
    cal = item["calibration"]
    assert cal["stats"]["pass_at"] == {"1": 0.5, "4": pytest.approx(2 / 3)}
    assert {b["name"]: b["passed"] for b in cal["bands"]} == dict.fromkeys(
        ["mean_reward", "success_rate", "reward_std", "all_success", "all_zero", "constant", "informative"], True)


def test_cli_without_model_keeps_the_offline_json():
    result = _cli(["--json"])
    assert result.exit_code == 0, result.output
    assert "calibration" not in json.loads(result.output)[0]


@pytest.mark.parametrize("args, message", [
    (["--model", "nonsense:x"], "unknown agent"),
    (["--model", "openai:m@http://127.0.0.1:9/v1", "--mean-band", "0.6,0.2"], "LO must not exceed HI"),
    (["--model", "openai:m@http://127.0.0.1:9/v1", "--max-constant", "2"], "0<=x<=1"),
])
def test_cli_bad_calibration_options_are_clean_errors(args, message):
    result = _cli(args)
    assert result.exit_code != 0 and message in result.output
    assert "Traceback" not in result.output


def test_cli_unreachable_endpoint_is_a_clean_error():
    result = _cli(["--model", "openai:m@http://127.0.0.1:9/v1", "--calib-seeds", "1", "--samples", "1"])
    assert result.exit_code == 1 and "cannot reach the chat endpoint" in result.output


def test_cli_skips_calibration_of_envs_that_fail_offline(tmp_path):
    broken = tmp_path / "broken_env.py"
    broken.write_text(
        "import dataclasses\n"
        "from tests.runtime import tiny_capability as tc\n"
        "from tracec.runtime.env import CapabilityEnv, Rule\n"
        "CAPABILITY = dataclasses.replace(tc.CAPABILITY, name='broken', "
        "rules=(Rule(1.0, 'otherwise', lambda o: True),))\n"
        "class BrokenEnv(CapabilityEnv):\n    capability = CAPABILITY\n"
    )
    result = CliRunner().invoke(check_cmd, [str(broken), "--seeds", "2", "--no-env-checker", "--json",
                                            "--model", "scripted", "--calib-seeds", "2", "--samples", "2"])
    assert result.exit_code == 1
    [item] = json.loads(result.output)
    assert not item["passed"] and item["calibration"]["skipped"] == "the offline checks failed"
    assert item["calibration"]["stats"] is None and not item["calibration"]["passed"]
