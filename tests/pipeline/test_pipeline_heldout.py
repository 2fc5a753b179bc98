"""The demo's loop on the tiny model: SFT warm start, classifier routing, held-out env seeds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.pipeline.helpers import tiny_run_config
from tracec.core.seeds import HELDOUT_START
from tracec.pipeline.config import parse_config
from tracec.pipeline.manifest import read_manifest
from tracec.pipeline.report import write_report
from tracec.pipeline.runner import run_pipeline

ENVS = ["datetime_reasoning", "permission_error_recovery"]


@pytest.fixture(scope="module")
def heldout_run(tmp_path_factory) -> Path:
    from tracec.llm.tiny import make_tiny_model

    model = make_tiny_model(tmp_path_factory.mktemp("model") / "tiny", layers=1)
    raw = tiny_run_config(model, compose={"routing": "classifier", "demo_episodes": 1},
                          final_eval={"env_tasks": 1, "env_batch_size": 2})
    raw["train"]["settings"].update({"warmup_sft": 1, "sft_batch": 1})
    run_dir = tmp_path_factory.mktemp("runs") / "run"
    run_pipeline(parse_config(raw), run_dir, quiet=True, log=lambda m: None)
    return run_dir


def _seeds(path: str) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for ln in Path(path).read_text().splitlines():
        e = json.loads(ln)
        out.setdefault(e["env"], []).append(int(e["task_id"]))
    return {k: sorted(v) for k, v in out.items()}


def test_warm_start_moves_the_adapters_and_is_reported(heldout_run):
    adapters = read_manifest(heldout_run, "train").outputs["adapters"]
    for a in adapters.values():
        assert a["sft"]["steps"] == 1 and a["sft"]["demos"] == 1
        assert a["update"]["delta_w_norm"] > 0  # SFT took a gradient step: not the base model
        assert a["grpo"]["steps"] == 1 and a["grpo"]["groups"] >= 1
        assert 0 <= a["grpo"]["kept_groups"] <= a["grpo"]["groups"]
        assert a["update"]["grpo_param_change"] >= 0
        meta = json.loads((Path(a["dir"]) / "tracec.json").read_text())
        assert meta["description"]  # the classifier reads it


def test_classifier_routing_needs_no_gates_and_records_its_choices(heldout_run):
    out = read_manifest(heldout_run, "compose").outputs
    assert out["routing"] == "classifier" and out["steps"] == 0
    moe = json.loads((Path(out["dir"]) / "moe.json").read_text())
    assert moe["routing"] == "classifier" and len(moe["adapters"]) == 2
    assert sum(n for c in out["classifier_choices"].values() for n in c.values()) == out["demos"] == 2
    assert 0 <= out["classifier_right"] <= 2


def test_every_model_is_evaluated_on_the_same_heldout_seeds(heldout_run):
    env = read_manifest(heldout_run, "heldout_eval").outputs["env_results"]
    assert sorted(env) == ["adapter-" + n for n in ENVS] + ["base", "composed"]
    want = [HELDOUT_START]
    for label in ("base", "composed"):
        seeds = _seeds(env[label]["trajectories"])
        assert sorted(seeds) == [f"tracec/{n}-v0" for n in ENVS]
        assert all(v == want for v in seeds.values())
    for n in ENVS:  # an adapter on its own env only (final_eval.env_cross = false)
        assert _seeds(env[f"adapter-{n}"]["trajectories"]) == {f"tracec/{n}-v0": want}


def test_report_pairs_the_heldout_runs_with_cis_and_says_what_is_noise(heldout_run):
    text = write_report(heldout_run).read_text()
    block = text[text.index("## Held-out env seeds"):text.index("## Pass rates")]
    assert "success [95 % CI]" in block and f"from {HELDOUT_START}" in block
    rows = [ln for ln in block.splitlines() if ln.startswith("| ") and " − " in ln]
    # base/composed span both envs (a row per env and one overall); an adapter pairs on its env
    assert any(ln.startswith("| composed − base | all | 2 |") for ln in rows)
    assert any(ln.startswith("| adapter-datetime_reasoning − base | datetime_reasoning | 1 |")
               for ln in rows)
    assert not any("adapter-permission_error_recovery − adapter-datetime_reasoning" in ln for ln in rows)
    assert all("within noise" in ln or "B better" in ln or "B worse" in ln for ln in rows)
    assert "In words:" in block
    # every model's eval states how many evaluated instances repeat a training one
    assert "repeat a training instance" in block
    assert sum(1 for ln in block.splitlines() if ln.startswith("| ") and " in range)" in ln) == 4
    for r in read_manifest(heldout_run, "heldout_eval").outputs["env_results"].values():
        assert r["instance_overlap"]["train_sample"] >= 256
    train = text[text.index("## Training"):text.index("## Routing")]
    assert "SFT warm start" in train and "1 steps, 1 demos" in train and "kept groups" in train
    assert "Classifier routing" in text
