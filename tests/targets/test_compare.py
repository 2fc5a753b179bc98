"""Paired bootstrap (against hand computations) and `tracec compare`."""

from __future__ import annotations

import itertools
import json
import math

import pytest
from click.testing import CliRunner

from tracec.harness.results import Episode
from tracec.targets.compare import UnpairedRuns, compare_episodes, paired_bootstrap, percentile


def test_percentile_interpolates_like_numpy():
    assert percentile([0.0, 1.0, 2.0, 3.0], 0.5) == 1.5
    assert percentile([0.0, 10.0], 0.025) == pytest.approx(0.25)
    assert percentile([4.0], 0.9) == 4.0


def test_constant_differences_give_a_point_interval():
    ci = paired_bootstrap([0, 0, 1, 1], [1, 1, 2, 2], resamples=200, seed=3)
    assert (ci.diff, ci.lo, ci.hi) == (1.0, 1.0, 1.0) and ci.excludes_zero


def test_three_pairs_match_the_exact_bootstrap_distribution():
    # by hand: differences d = (0, 1, 1); a resample of 3 draws has mean k/3 where k ~ Bin(3, 2/3):
    # P(0) = 1/27, P(1/3) = 6/27, P(2/3) = 12/27, P(1) = 8/27; the 2.5 % quantile is 0 (1/27 > 2.5 %)
    # and the 97.5 % quantile is 1 (8/27 > 2.5 %), so the interval is [0, 1] around 2/3
    a, b = [1.0, 0.0, 0.0], [1.0, 1.0, 1.0]
    ci = paired_bootstrap(a, b, resamples=20_000, seed=0)
    assert ci.diff == pytest.approx(2 / 3)
    assert (ci.lo, ci.hi) == (0.0, 1.0) and not ci.excludes_zero
    exact = sorted(sum(c) / 3 for c in itertools.product([0, 1, 1], repeat=3))  # all 27 resamples
    assert exact.count(0.0) == 1 and exact.count(1.0) == 8


def test_fifty_fifty_matches_the_normal_approximation():
    # 100 pairs, B − A = 1 on half of them and 0 on the others: mean 0.5, bootstrap SE of the mean
    # = sqrt(0.25 / 100) = 0.05, so the 95 % interval is about 0.5 ± 1.96 × 0.05 = [0.402, 0.598]
    a = [0.0] * 100
    b = [1.0] * 50 + [0.0] * 50
    ci = paired_bootstrap(a, b, resamples=10_000, seed=1)
    assert ci.diff == 0.5
    assert ci.lo == pytest.approx(0.402, abs=0.015) and ci.hi == pytest.approx(0.598, abs=0.015)


def test_seeded_and_paired():
    a, b = [0.1, 0.5, 0.2, 0.9], [0.3, 0.4, 0.8, 0.9]
    assert paired_bootstrap(a, b, seed=7) == paired_bootstrap(a, b, seed=7)
    with pytest.raises(ValueError, match="same length"):
        paired_bootstrap([1.0], [1.0, 2.0])


def _ep(env: str, task: str, reward: float, trial: int = 0, agent: str = "x") -> Episode:
    return Episode(id=f"{env}/{task}/{trial}", task_id=task, env=env, messages=[], reward=reward,
                   success=reward >= 1.0, info={"trial": trial, "agent": agent})


def test_compare_per_env_overall_and_flips():
    a = [_ep("e1", "1", 1.0), _ep("e1", "2", 0.0), _ep("e2", "1", 0.3), _ep("e2", "2", 1.0)]
    b = [_ep("e1", "1", 1.0), _ep("e1", "2", 1.0), _ep("e2", "1", 1.0), _ep("e2", "2", 0.0)]
    rep = compare_episodes(a, b, "A", "B", resamples=500)
    e1, e2 = rep["groups"]
    assert (e1["group"], e1["pass_rate_a"], e1["pass_rate_b"], e1["pass_diff"]) == ("e1", 0.5, 1.0, 0.5)
    assert e2["reward_diff"] == pytest.approx((0.7 - 1.0) / 2)
    assert rep["overall"]["tasks"] == 4 and rep["overall"]["pass_diff"] == pytest.approx(0.25)
    assert rep["gained"] == ["e1/2", "e2/1"] and rep["lost"] == ["e2/2"]


def test_trials_are_averaged_per_task():
    a = [_ep("e", "1", 0.0, 0), _ep("e", "1", 0.0, 1)]
    b = [_ep("e", "1", 1.0, 0), _ep("e", "1", 0.0, 1)]
    rep = compare_episodes(a, b, resamples=100)
    assert rep["overall"]["tasks"] == 1 and rep["overall"]["pass_diff"] == 0.5


def test_unpaired_runs_are_refused():
    a = [_ep("e", "1", 1.0), _ep("e", "2", 1.0)]
    b = [_ep("e", "1", 1.0), _ep("e", "3", 1.0)]
    with pytest.raises(UnpairedRuns, match="1 only in A .*e/2/0.*1 only in B .*e/3/0"):
        compare_episodes(a, b, "A", "B")
    rep = compare_episodes(a, b, "A", "B", resamples=100, common=True)  # explicit opt-in
    assert rep["overall"]["tasks"] == 1 and rep["dropped_unpaired"] == 2


def _write(path, episodes):
    path.mkdir()
    (path / "trajectories.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in episodes))


def test_compare_cli_json_and_refusal(tmp_path):
    from tracec.cli import cli

    _write(tmp_path / "a", [_ep("e", str(i), float(i % 2), agent="base") for i in range(10)])
    _write(tmp_path / "b", [_ep("e", str(i), 1.0, agent="tuned") for i in range(10)])
    _write(tmp_path / "c", [_ep("e", str(i), 1.0) for i in range(9)])
    res = CliRunner().invoke(cli, ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json",
                                   "--resamples", "1000"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    assert rep["a"] == f"{tmp_path / 'a'} (base)" and rep["b"] == f"{tmp_path / 'b'} (tuned)"
    assert rep["resamples"] == 1000  # runs are named by their folder, then their agent
    assert rep["overall"]["pass_diff"] == 0.5 and len(rep["gained"]) == 5 and rep["lost"] == []
    lo, hi = rep["overall"]["pass_ci"]
    assert 0 < lo < 0.5 < hi <= 1 and not math.isnan(lo)
    res = CliRunner().invoke(cli, ["compare", str(tmp_path / "a"), str(tmp_path / "c")])
    assert res.exit_code != 0 and "not paired" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(cli, ["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    assert res.exit_code == 0 and "B passes, A fails: 5" in res.output
