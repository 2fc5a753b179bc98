"""Issue 23 item 6: the papercuts, each with its test."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracec.cli import cli
from tracec.harness.cli import mistyped_call_hint
from tracec.pipeline.report import render_report
from tracec.pipeline.runner import STAGE_NAMES
from tracec.runtime.toolcall import ToolCallParseError, hermes, parse_turn
from tracec.train.plots import report_training

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("cut", ["</tool_call", "</tool_", "</", "<", "\n</tool_call"])
def test_tool_call_whose_closing_tag_the_token_limit_cut(cut):
    call = hermes("get_user_details", {"user_id": "u1"})
    assert call.endswith("</tool_call>")
    turn = parse_turn(call[: -len("</tool_call>")] + cut)
    assert [(c.name, c.arguments) for c in turn.calls] == [("get_user_details", {"user_id": "u1"})]


def test_tool_call_really_broken_still_refused():
    with pytest.raises(ToolCallParseError, match="invalid JSON"):
        parse_turn('<tool_call>{"name": "x", "arguments": {}}} extra</tool_call')


ENV = "tracec/structured_data_reasoning-v0"


def _eval(out: Path, agent: str = "oracle", tasks: int = 3) -> Path:
    res = CliRunner().invoke(cli, ["eval", "--agent", agent, "--env", ENV, "--tasks", str(tasks),
                                   "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    return out


def test_compare_names_runs_by_folder_and_tables_are_not_cut(tmp_path):
    a = _eval(tmp_path / "run_one")
    b = _eval(tmp_path / "run_two", tasks=2)
    res = CliRunner().invoke(cli, ["compare", str(a), str(b)])
    assert res.exit_code != 0
    assert f"only in {a} (oracle)" in res.output and str(b) not in res.output.split("only in")[1]
    b = _eval(tmp_path / "run_three")
    res = CliRunner().invoke(cli, ["compare", str(a), str(b), "--json"])
    report = json.loads(res.output)
    assert (report["a"], report["b"]) == (f"{a} (oracle)", f"{b} (oracle)")
    res = CliRunner().invoke(cli, ["compare", str(a), str(b)])  # CliRunner: not a terminal
    assert res.exit_code == 0, res.output
    rows = [ln for ln in res.output.splitlines() if ln.startswith("│")]
    assert rows and max(map(len, rows)) > 80  # the table keeps its width in a pipe
    assert "Δ reward [95% CI]" in res.output and "pass: in noise?" in res.output


def test_propose_without_endpoint_names_propose(tmp_path):
    caps = tmp_path / "capabilities.json"
    caps.write_text("[]")
    res = CliRunner().invoke(cli, ["propose", str(caps), "-o", str(tmp_path / "s")])
    assert res.exit_code == 2
    assert "`tracec propose` (an LLM writes the specs" in res.output
    assert "labeler" not in res.output and "--template NAME" in res.output


def test_run_help_lists_every_stage_and_the_demo_time():
    res = CliRunner().invoke(cli, ["run", "--help"])
    assert res.exit_code == 0
    for name in STAGE_NAMES:
        assert name in res.output, name
    assert "34.5 min measured" in res.output


@pytest.mark.parametrize("line, says", [
    ("get_user_detail user_id=u1", "get_user_details(key=value"),
    ("tool_call get_user_details", "<tool_call>"),
    ("Hello, how can I help?", None),
    ('get_user_details(user_id="u1")', None),
])
def test_play_hints_a_mistyped_tool_call(line, says):
    hint = mistyped_call_hint(line, ["get_user_details", "get_reservation_details"])
    assert (hint is None) if says is None else (says in hint)


def test_play_prints_the_hint(tmp_path):
    res = CliRunner().invoke(cli, ["play", ENV], input="get_reservation_detail R1\n:quit\n")
    assert res.exit_code == 0, res.output
    assert "hint: that went to the user as a message" in res.output


TAU2 = str(ROOT / "tests/fixtures/tau2/targets")


@pytest.fixture(scope="module")
def tau2_eval(tmp_path_factory):
    out = tmp_path_factory.mktemp("tau2eval") / "ev"
    res = CliRunner().invoke(cli, ["eval", "--agent", "scripted", "--target", "tau2:airline",
                                   "--tau2-data", TAU2, "--tasks", "3", "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    return out


@pytest.mark.parametrize("which", ["folder", "jsonl"])
def test_analyze_reads_tasks_from_tracecs_own_tau2_output(tau2_eval, tmp_path, which):
    src = tau2_eval if which == "folder" else tau2_eval / "trajectories.jsonl"
    res = CliRunner().invoke(cli, ["analyze", str(src), "-o", str(tmp_path / "a"), "--json"])
    assert res.exit_code == 0, res.output
    assert "carry no gold actions" not in res.output
    selected = {e["skill"] for e in json.loads(res.output[res.output.index("["):])
                if e["passes_consistency"]}
    assert "executes_required_actions" in selected, res.output


def test_analyze_failure_leaves_no_partial_output(tmp_path):
    traj = tmp_path / "t.jsonl"  # no gold anywhere: every label NA, the analysis fails
    traj.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}], "reward": 0.0})
                    + "\n" + json.dumps({"messages": [{"role": "user", "content": "x"}],
                                         "reward": 1.0}) + "\n")
    res = CliRunner().invoke(cli, ["analyze", str(traj), "-o", str(tmp_path / "a")])
    assert res.exit_code == 1 and "nothing to select" in res.output
    assert not (tmp_path / "a" / "trajectories.jsonl").exists()


def test_report_after_until_compile_names_the_pending_heldout_eval(tmp_path):
    (tmp_path / "run_config.json").write_text(json.dumps({"final_eval": {"env_tasks": 20}}))
    text = render_report(tmp_path)
    assert "not run yet: the config asks for 20 held-out seeds" in text
    assert "set `final_eval.env_tasks`" not in text
    (tmp_path / "run_config.json").write_text(json.dumps({"final_eval": {"env_tasks": 0}}))
    assert "set `final_eval.env_tasks`" in render_report(tmp_path)


@pytest.mark.slow
def test_standalone_classifier_routed_eval_records_the_adapters_chosen(tmp_path):
    pytest.importorskip("peft")
    from tests.compose.compose_helpers import make_world

    base, adapters = make_world(tmp_path / "world")
    composed = tmp_path / "composed"
    res = CliRunner().invoke(cli, ["compose", *map(str, adapters), "--routing", "classifier",
                                   "--base", str(base), "-o", str(composed)])
    assert res.exit_code == 0, res.output
    out = tmp_path / "e"
    res = CliRunner().invoke(cli, ["eval", "--agent", f"composed:{composed}", "--env", ENV,
                                   "--tasks", "2", "--max-new-tokens", "4", "--allow-train-seeds",
                                   "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(ln) for ln in (out / "trajectories.jsonl").read_text().splitlines()]
    slots = {"<none>", "alpha_skill", "beta_skill"}
    for r in rows:
        assert r["info"]["routing"] == "classifier"
        assert set(r["info"]["adapters_chosen"]) <= slots and r["info"]["adapters_chosen"]
        assert set(r["info"]["merge_weights"]) <= slots
    summary = json.loads((out / "summary.json").read_text())
    assert sum(summary["adapters_chosen"][ENV].values()) == 2


@pytest.mark.slow
def test_transformers_noise_stays_out_of_user_output(tmp_path):
    pytest.importorskip("transformers")
    from tracec.llm.tiny import make_tiny_model

    model = make_tiny_model(tmp_path / "tiny", seed=0)
    env = {k: v for k, v in os.environ.items() if k not in (
        "TRACEC_DEBUG", "HF_HUB_DISABLE_PROGRESS_BARS", "TRANSFORMERS_VERBOSITY")}
    res = subprocess.run([sys.executable, "-m", "tracec.cli", "eval", "--agent", f"local:{model}",
                          "--env", ENV, "--tasks", "1", "--max-new-tokens", "4",
                          "--out", str(tmp_path / "e")], capture_output=True, text=True,
                         timeout=300, cwd=ROOT, check=False, env={**env, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 0, res.stderr[-800:]
    both = res.stdout + res.stderr
    for noise in ("Loading weights", "past_key_values", "is_gradient_checkpointing",
                  "[transformers]"):
        assert noise not in both, (noise, both[-800:])
    assert "episodes" in both


@pytest.mark.parametrize("parts", [("sft",), ("grpo",), ("sft", "grpo")])
def test_training_curves_have_sft_and_grpo_panels(tmp_path, parts):
    pytest.importorskip("matplotlib")
    if "sft" in parts:
        (tmp_path / "sft_metrics.jsonl").write_text("".join(json.dumps(
            {"sft_step": i, "sft_loss": 3.0 / i, "sft_token_accuracy": 0.2 * i}) + "\n"
            for i in range(1, 4)))
    if "grpo" in parts:
        (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(
            {"step": i, "reward_mean": 0.1 * i, "reward_std": 0.05, "kept_share": 0.5}) + "\n"
            for i in range(1, 4)))
    summary = report_training(tmp_path)
    png = tmp_path / "training_curves.png"
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert summary["sft_steps"] == (3 if "sft" in parts else 0)
    assert summary["steps"] == (3 if "grpo" in parts else 0)
    if "sft" in parts:
        assert summary["sft_loss_first"] == 3.0 and summary["sft_loss_last"] == 1.0
    height = struct.unpack(">I", png.read_bytes()[20:24])[0]  # the PNG header's height
    assert height == 100 * 3 * len(["x"] * (1 if parts == ("sft",) else 2 if parts == ("grpo",)
                                            else 3))


def test_run_until_compile_report_says_the_heldout_eval_is_pending(tmp_path):
    cfg = tmp_path / "t.toml"
    cfg.write_text(f'[target]\ndata_dir = "sample"\ntrain_tasks = 4\n[model]\nagent = "oracle"\n'
                   f'[specs]\ndir = "{ROOT}/configs/cpu-demo-specs"\ntrain_all_specs = true\n'
                   "check_seeds = 2\n[final_eval]\nenv_tasks = 20\n")
    res = CliRunner().invoke(cli, ["run", str(cfg), "-o", str(tmp_path / "out"), "--until",
                                   "compile", "-q"])
    assert res.exit_code == 0, res.output
    report = (tmp_path / "out" / "report.md").read_text()
    held = report.split("## Held-out env seeds")[1].split("##")[0]
    assert "not run yet: the config asks for 20 held-out seeds" in held
    assert "set `final_eval.env_tasks`" not in held
