"""A many-process step's metrics are the whole step's: sums, all episodes, the global loss."""

from __future__ import annotations

import pytest

from tracec.train.trainer import step_metrics


def _part(rewards, kept, loss, tokens, seeds, gen_seconds, rows):
    return {"rewards": rewards, "episodes": len(rewards), "groups": 2, "kept_groups": kept,
            "resample_rounds": kept % 2, "turns": 2 * len(rewards), "model_tokens": 10 * len(rewards),
            "gen_tokens": 100, "gen_seconds": gen_seconds, "prefill_tokens": 50, "decode_steps": 7,
            "decode_row_counts": rows, "seeds": seeds,
            "update": {"loss": loss, "clip_frac": 0.1 * kept, "kl": 0.0, "trained_tokens": tokens,
                       "grad_norm": 0.5}}


def test_metrics_of_two_processes_describe_the_whole_step():
    a = _part([1.0, 0.0, 0.3, 0.3], 1, -0.4, 30, [0, 2], 2.0, {"4": 5, "2": 1})
    b = _part([0.0, 0.0, 0.0, 0.0], 0, 0.0, 30, [1, 3], 1.0, {"4": 7, "10": 1})
    m = step_metrics([a, b], 3.0, 1.0)
    every = a["rewards"] + b["rewards"]
    mean = sum(every) / 8
    assert m["episodes"] == 8 and m["groups"] == 4 and m["kept_groups"] == 1
    assert m["kept_share"] == 0.25 and m["dropped_groups"] == 3
    assert m["reward_mean"] == pytest.approx(mean)
    assert m["reward_std"] == pytest.approx((sum((r - mean) ** 2 for r in every) / 8) ** 0.5)
    assert m["success_rate"] == 1 / 8 and m["model_tokens"] == 80 and m["prefill_tokens"] == 100
    # each process's loss is its tokens over the global normaliser / N: the mean is the global loss
    assert m["loss"] == pytest.approx(-0.2) and m["clip_frac"] == pytest.approx(0.05)
    assert m["trained_tokens"] == 30 and m["grad_norm"] == 0.5  # global already (after all-reduce)
    assert m["gen_seconds"] == 2.0 and m["gen_tokens_per_s"] == 100.0  # 200 tokens, slowest 2 s
    assert m["decode_row_counts"] == {"2": 1, "4": 12, "10": 1}
    assert m["resample_rounds"] == 1
    assert m["processes"] == 2 and m["seeds_per_rank"] == [[0, 2], [1, 3]]


def test_one_process_has_no_process_fields():
    m = step_metrics([_part([1.0, 0.0], 1, -0.1, 5, [4], 1.0, {"2": 3})], 1.0, 0.5)
    assert "processes" not in m and "seeds_per_rank" not in m
    assert m["loss"] == -0.1 and m["reward_mean"] == 0.5
