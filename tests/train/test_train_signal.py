"""GRPO's no-signal warning: after 3 steps that kept no group, say why and what to try."""

from __future__ import annotations

import json

from click.testing import CliRunner
from train_helpers import TOY_ENV

from tracec.train.cli import train_cmd
from tracec.train.signal import no_signal_advice, silent_streak

NO_SIGNAL_ENV = TOY_ENV.replace(":ToyToolEnv", ":NoSignalToyEnv")


def _row(step: int, kept: int, reward: float) -> dict:
    return {"step": step, "kept_groups": kept, "reward_mean": reward}


def test_streak_counts_only_the_last_silent_steps():
    rows = [_row(1, 0, 0.0), _row(2, 1, 0.2), _row(3, 0, 0.0), _row(4, 0, 0.0)]
    assert silent_streak(rows) == 2
    assert silent_streak([]) == 0
    assert no_signal_advice(rows) is None  # 2 < 3: no warning yet


def test_advice_names_the_steps_and_the_knob_for_each_case():
    never = no_signal_advice([_row(1, 1, 0.1), _row(2, 0, 0.0), _row(3, 0, 0.0), _row(4, 0, 0.03)])
    assert never is not None and "steps 2–4" in never and "mean 0.01" in never
    assert "--warmup-sft" in never and "almost never succeeds" in never
    always = no_signal_advice([_row(s, 0, 1.0) for s in (1, 2, 3)])
    assert always is not None and "always succeeds" in always and "--warmup-sft" not in always
    partial = no_signal_advice([_row(s, 0, 0.3) for s in (1, 2, 3)])
    assert partial is not None and "partial reward" in partial and "--temperature" in partial


def test_train_warns_once_when_no_group_has_reward_variance(tiny_model_dir, tmp_path):
    """An env that pays nothing on any seed: every group is dropped, whatever the model samples."""
    args = [NO_SIGNAL_ENV, "--model", str(tiny_model_dir), "-o", str(tmp_path / "o"), "--steps", "4", "-G", "2",
            "--groups-per-step", "1", "--max-new-tokens", "4", "--lora-rank", "2", "--lora-targets", "q_proj",
            "--json"]
    result = CliRunner().invoke(train_cmd, args)
    assert result.exit_code == 0, result.output
    rows = [json.loads(x) for x in (tmp_path / "o" / "metrics.jsonl").read_text().splitlines()]
    assert [r["kept_groups"] for r in rows] == [0, 0, 0, 0]
    assert result.stderr.count("warning:") == 1 and "GRPO steps 1–3 kept no group" in result.stderr
    assert json.loads(result.stdout)["steps"] == 4  # stdout stays pure JSON
