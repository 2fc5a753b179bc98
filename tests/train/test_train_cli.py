"""`tracec train` / `tracec report` command behaviour."""

from __future__ import annotations

import json

from click.testing import CliRunner
from train_helpers import TOY_ENV

from tracec.pipeline.cli import report_cmd
from tracec.train.cli import train_cmd


def test_train_then_report(tiny_model_dir, tmp_path):
    out = tmp_path / "adapters" / "toy"
    args = [TOY_ENV, "--model", str(tiny_model_dir), "-o", str(out), "--steps", "2", "-G", "3",
            "--groups-per-step", "1", "--max-new-tokens", "8", "--lora-rank", "2",
            "--lora-targets", "q_proj", "--checkpoint-every", "1", "--json"]
    result = CliRunner().invoke(train_cmd, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["steps"] == 2 and summary["capability"] == "toy_lookup"
    assert (out / "adapter_config.json").exists() and (out / "tracec.json").exists()
    assert json.loads((out / "adapter_config.json").read_text())["r"] == 2
    assert summary["curves"] == str(out / "training_curves.png")  # drawn by train itself
    assert (out / "training_curves.png").read_bytes()[:4] == b"\x89PNG"
    rep = CliRunner().invoke(report_cmd, [str(out), "--json"])
    assert rep.exit_code == 0, rep.output
    info = json.loads(rep.output)
    assert info["steps"] == 2
    assert (out / "training_curves.png").read_bytes()[:4] == b"\x89PNG"


def test_unknown_env_is_a_clear_error(tiny_model_dir, tmp_path):
    result = CliRunner().invoke(train_cmd, ["no_such_capability", "--model", str(tiny_model_dir),
                                            "--envs-dir", str(tmp_path)])
    assert result.exit_code == 1
    assert "unknown env 'no_such_capability'" in result.output


def test_bad_settings_and_missing_env_are_clear_errors(tiny_model_dir):
    bad = CliRunner().invoke(train_cmd, [TOY_ENV, "--model", str(tiny_model_dir), "-G", "1"])
    assert bad.exit_code == 1 and "group_size" in bad.output
    none = CliRunner().invoke(train_cmd, [])
    assert none.exit_code == 1 and "missing ENV" in none.output


def test_report_without_metrics_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(report_cmd, [str(tmp_path)])
    assert result.exit_code == 1 and "no metrics.jsonl" in result.output


def test_train_all_trains_every_registered_capability(tiny_model_dir, tmp_path):
    import shutil
    from pathlib import Path

    pkg = tmp_path / "my_envs"
    pkg.mkdir()
    shutil.copy(Path(__file__).with_name("toy_env.py"), pkg / "toy.py")
    (pkg / "__init__.py").write_text(
        'ENVS = {"toy_a": "my_envs.toy:ToyToolEnv", "toy_b": "my_envs.toy:ToyToolEnv"}\n')
    args = ["--all", str(pkg), "--model", str(tiny_model_dir), "-o", str(tmp_path / "out"),
            "--steps", "1", "-G", "2", "--groups-per-step", "1", "--max-new-tokens", "4",
            "--lora-rank", "2", "--lora-targets", "q_proj", "--json"]
    result = CliRunner().invoke(train_cmd, args)
    assert result.exit_code == 0, result.output
    runs = json.loads(result.stdout)
    assert [r["capability"] for r in runs] == ["toy_a", "toy_b"]
    for cap in ("toy_a", "toy_b"):
        assert json.loads((tmp_path / "out" / cap / "tracec.json").read_text())["capability"] == cap


def test_prompt_longer_than_the_token_budget_is_a_clear_error(tiny_model_dir, tmp_path):
    args = [TOY_ENV, "--model", str(tiny_model_dir), "-o", str(tmp_path / "o"), "--steps", "1",
            "-G", "2", "--groups-per-step", "1", "--max-total-tokens", "32"]
    result = CliRunner().invoke(train_cmd, args)
    assert result.exit_code == 1 and "raise --max-total-tokens" in result.output
