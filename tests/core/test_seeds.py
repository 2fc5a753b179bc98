"""Training and held-out seed ranges never meet; eval refuses an adapter's own training seeds."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tracec.core.seeds import (
    HELDOUT_SEEDS,
    HELDOUT_START,
    TRAIN_SEEDS,
    SeedRange,
    SeedRangeError,
    adapter_training_range,
    check_eval_seeds,
    check_training_range,
    parse_range,
)


def test_default_ranges_are_disjoint_and_adjacent():
    assert not TRAIN_SEEDS.overlaps(HELDOUT_SEEDS)
    assert TRAIN_SEEDS.stop == HELDOUT_SEEDS.start == HELDOUT_START
    assert TRAIN_SEEDS.at(HELDOUT_START + 5) == 5  # wraps inside its own range


def test_parse_and_check_training_range():
    assert parse_range("10:20") == SeedRange(start=10, stop=20)
    assert parse_range("7") == SeedRange(start=7, stop=HELDOUT_START)
    assert check_training_range(parse_range("0:1000")).size == 1000
    with pytest.raises(SeedRangeError, match="overlap the held-out"):
        check_training_range(parse_range("999999000:1000000001"))
    for bad in ("a:b", "20:10", "-1:5"):
        with pytest.raises(SeedRangeError, match="bad seed range"):
            parse_range(bad)


def _adapter(tmp_path, train):
    d = tmp_path / "adapter"
    d.mkdir()
    (d / "tracec.json").write_text(json.dumps({"config": {"seed": 0}, "seeds": {"train": train}}))
    return d


def test_eval_refuses_an_adapters_training_seeds(tmp_path):
    d = _adapter(tmp_path, [0, 5000])
    assert adapter_training_range(d) == SeedRange(start=0, stop=5000)
    check_eval_seeds(SeedRange(start=HELDOUT_START, stop=HELDOUT_START + 100), d)
    with pytest.raises(SeedRangeError, match="overlap the training seeds"):
        check_eval_seeds(SeedRange(start=4990, stop=5010), d)


def test_train_config_refuses_heldout_seeds():
    from pydantic import ValidationError

    pytest.importorskip("torch")
    from tracec.train.config import TrainConfig

    assert TrainConfig(train_seeds=(0, 100)).train_seeds == (0, 100)
    with pytest.raises(ValidationError, match="held-out"):
        TrainConfig(train_seeds=(0, HELDOUT_START + 1))


def test_train_cli_refuses_heldout_seeds_before_loading_anything(tmp_path):
    pytest.importorskip("torch")
    from tracec.cli import cli

    res = CliRunner().invoke(cli, ["train", "tests/runtime/tiny_capability.py", "--model",
                                   str(tmp_path / "none"), "--train-seeds", "1000000000:1000000100",
                                   "-o", str(tmp_path / "o")])
    assert res.exit_code != 0 and "overlap the held-out evaluation seeds" in res.output
    assert "Traceback" not in res.output


def test_eval_cli_uses_heldout_seeds_and_refuses_training_ones(tmp_path):
    from tracec.cli import cli

    env = "tests/runtime/tiny_capability.py"
    res = CliRunner().invoke(cli, ["eval", "--agent", "oracle", "--env", env, "--tasks", "3",
                                   "--out", str(tmp_path / "o"), "--json"])
    assert res.exit_code == 0, res.output
    lines = (tmp_path / "o" / "trajectories.jsonl").read_text().splitlines()
    seeds = sorted(json.loads(line)["info"]["seed"] for line in lines)
    assert seeds == [HELDOUT_START, HELDOUT_START + 1, HELDOUT_START + 2]
    d = _adapter(tmp_path, [0, HELDOUT_START])
    res = CliRunner().invoke(cli, ["eval", "--agent", f"local:{tmp_path / 'm'}+adapter:{d}", "--env", env,
                                   "--env-seeds", "100", "--tasks", "3", "--out", str(tmp_path / "p")])
    assert res.exit_code != 0 and "overlap the training seeds" in res.output


def _composed(tmp_path, adapter):
    c = tmp_path / "composed"
    c.mkdir()
    # one relative and one absolute path: both are resolved like load_composed resolves them
    refs = [{"name": "a", "path": "../adapter"}, {"name": "b", "path": str(adapter)}]
    (c / "moe.json").write_text(json.dumps({"adapters": refs}))
    return c


def test_composed_agents_name_their_adapters(tmp_path):
    from tracec.core.seeds import composed_adapter_dirs
    from tracec.targets.evaluate import spec_adapter_dirs

    d = _adapter(tmp_path, [0, 5000])
    c = _composed(tmp_path, d)
    assert [p.resolve() for p in composed_adapter_dirs(c)] == [d.resolve(), d.resolve()]
    assert composed_adapter_dirs(tmp_path / "nothing") == []
    assert spec_adapter_dirs(f"local:m+adapter:{d}") == [str(d)]
    assert spec_adapter_dirs("local:m") == [] and spec_adapter_dirs("oracle") == []
    assert len(spec_adapter_dirs(f"composed:{c}")) == 2
    assert spec_adapter_dirs("not an agent", strict=False) == []


@pytest.mark.parametrize("prebuilt", [False, True])
def test_eval_refuses_a_composed_models_training_seeds(tmp_path, prebuilt):
    from tracec.targets.evaluate import EvalConfig, run_eval

    c = _composed(tmp_path, _adapter(tmp_path, [0, 5000]))
    cfg = EvalConfig(agent=f"composed:{c}", envs=["tests/runtime/tiny_capability.py"], num_tasks=3,
                     env_seeds=4999, out_dir=str(tmp_path / "o"))
    # refused before any model is loaded, also when the caller passes a built agent (tracec run)
    with pytest.raises(SeedRangeError, match="overlap the training seeds"):
        run_eval(cfg, progress=False, agent=object() if prebuilt else None)
    assert not (tmp_path / "o" / "trajectories.jsonl").exists()


def test_eval_cli_refuses_a_composed_models_training_seeds(tmp_path):
    from tracec.cli import cli

    c = _composed(tmp_path, _adapter(tmp_path, [0, HELDOUT_START]))
    res = CliRunner().invoke(cli, ["eval", "--agent", f"composed:{c}", "--env",
                                   "tests/runtime/tiny_capability.py", "--env-seeds", "100",
                                   "--tasks", "3", "--out", str(tmp_path / "p")])
    assert res.exit_code != 0 and "overlap the training seeds" in res.output
    assert "Traceback" not in res.output


def test_eval_range_stops_at_the_maximum_seed():
    from tracec.core.seeds import SEED_LIMIT, eval_range

    assert eval_range(SEED_LIMIT - 3, 3) == SeedRange(start=SEED_LIMIT - 3, stop=SEED_LIMIT)
    with pytest.raises(SeedRangeError, match=rf"--env-seeds 2147483600 .* {SEED_LIMIT - 1}.*"
                                             rf"at most at {SEED_LIMIT - 100}"):
        eval_range(2147483600, 100)
    with pytest.raises(SeedRangeError, match="seeds start at 0"):
        eval_range(-1, 3)


@pytest.mark.parametrize("kind", ["oracle", "local", "adapter", "composed"])
def test_every_agent_kind_refuses_seeds_past_the_limit_before_any_work(tmp_path, kind):
    """Base and adapter runs on one range must pair up: none runs past 2^31, all say so alike."""
    from tracec.cli import cli

    adapter = _adapter(tmp_path, [0, 5000])
    agent = {"oracle": "oracle", "local": f"local:{tmp_path / 'm'}",
             "adapter": f"local:{tmp_path / 'm'}+adapter:{adapter}",
             "composed": f"composed:{_composed(tmp_path, adapter)}"}[kind]
    res = CliRunner().invoke(cli, ["eval", "--agent", agent, "--env", "tests/runtime/tiny_capability.py",
                                   "--env-seeds", "2147483600", "--tasks", "100",
                                   "--out", str(tmp_path / "o")])
    assert res.exit_code != 0
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: --env-seeds 2147483600"), res.output
    assert "2147483647" in lines[0] and "validation error" not in lines[0]
    assert not (tmp_path / "o").exists()  # refused before the lock, the model or any episode


def test_run_eval_refuses_seeds_past_the_limit_with_a_prebuilt_agent(tmp_path):
    from tracec.targets.evaluate import EvalConfig, run_eval

    cfg = EvalConfig(agent="oracle", envs=["tests/runtime/tiny_capability.py"], num_tasks=100,
                     env_seeds=2147483600, out_dir=str(tmp_path / "o"))
    with pytest.raises(SeedRangeError, match="past the maximum seed"):
        run_eval(cfg, progress=False, agent=object())
    assert not (tmp_path / "o").exists()


def test_run_config_refuses_heldout_seeds_past_the_limit():
    from tracec.pipeline.config import ConfigError, parse_config

    with pytest.raises(ConfigError, match="final_eval.env_first_seed 2147483600 with 100 tasks"):
        parse_config({"final_eval": {"env_tasks": 100, "env_first_seed": 2147483600}})
