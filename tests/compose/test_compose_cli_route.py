"""`tracec compose` end to end, per-trajectory routing, and weighted merges."""

from __future__ import annotations

import json

import pytest
import torch
from click.testing import CliRunner

from tracec.train.moe import build_composed, load_composed
from tracec.train.moe_cli import compose_cmd
from tracec.train.moe_route import decide, generate_per_trajectory, merge_adapters

IDS = torch.tensor([[5, 17, 42, 99, 3, 64, 120, 7]])


@pytest.fixture(scope="module")
def trajectories(world, tmp_path_factory):
    from tests.compose.compose_helpers import make_trajectories

    return make_trajectories(tmp_path_factory.mktemp("traj") / "t.jsonl", n=12)


@pytest.fixture(scope="module")
def composed_dir(world, trajectories, tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "composed"
    _, adapters = world
    result = CliRunner().invoke(compose_cmd, [*map(str, adapters), "--data", str(trajectories),
                                              "-o", str(out), "--max-steps", "3", "--lr", "0.05",
                                              "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["steps"] == 3 and set(summary["ce"]) == {"composed", "<none>", "alpha_skill", "beta_skill"}
    return out


def test_cli_writes_a_loadable_composed_model(composed_dir):
    for name in ("moe.json", "gates.safetensors", "routing.json", "metrics.jsonl", "summary.json"):
        assert (composed_dir / name).is_file(), name
    metrics = [json.loads(line) for line in (composed_dir / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2, 3]
    routing = json.loads((composed_dir / "routing.json").read_text())
    assert len(routing["shares"]) == 2 and sum(routing["overall"]) == pytest.approx(1.0)
    meta = json.loads((composed_dir / "moe.json").read_text())
    assert meta["training"]["steps"] == 3 and meta["routing"] == "token"
    cm = load_composed(composed_dir)
    assert any(float(p.abs().sum()) > 0 for p in cm.gate_parameters())  # trained, not zero
    out = cm.generate([[{"role": "user", "content": "Hi"}]], max_new_tokens=4)
    assert isinstance(out, list) and len(out) == 1 and isinstance(out[0], str)


@pytest.mark.parametrize("args, message", [
    (["--data", "x.jsonl", "-o", "o"], "give one or more adapter folders"),
    (["{a}", "--data", "{missing}", "-o", "o"], "cannot read"),
    (["{nofolder}", "--data", "{traj}", "-o", "o"], "not a LoRA adapter folder"),
    (["{a}", "--merge", "--weights", "1,2,3", "-o", "o"], "3 numbers for 1 adapters"),
])
def test_cli_errors_are_messages_not_tracebacks(world, trajectories, tmp_path, args, message):
    _, adapters = world
    fill = {"a": str(adapters[0]), "missing": str(tmp_path / "missing.jsonl"),
            "nofolder": str(tmp_path), "traj": str(trajectories)}
    result = CliRunner().invoke(compose_cmd, [a.format(**fill) for a in args])
    assert result.exit_code != 0
    assert message in result.output and "Traceback" not in result.output


def test_cli_no_successful_trajectories(world, tmp_path):
    rows = [{"id": "x", "messages": [{"role": "user", "content": "hi"}], "success": False}]
    data = tmp_path / "fail.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = CliRunner().invoke(compose_cmd, [str(world[1][0]), "--data", str(data), "-o", str(tmp_path / "o")])
    assert result.exit_code == 1 and "none of the 1 trajectories is successful" in result.output


def test_per_trajectory_routing_uses_one_adapter(world, trajectories):
    cm = build_composed(world[1])
    with torch.no_grad():
        for gate in cm.gates:
            gate.proj.bias[2] = 4.0  # every prompt prefers beta_skill
    rows = [json.loads(line) for line in trajectories.read_text().splitlines()][:3]
    decision = decide(cm, rows[0]["messages"], rows[0]["info"]["tools"])
    assert decision.slot == 2 and decision.name == "beta_skill"
    assert decision.adapter_path == str(world[1][1].resolve())
    assert sum(decision.scores) == pytest.approx(1.0)
    prompts = [r["messages"][:2] for r in rows]
    routed = generate_per_trajectory(cm, prompts, max_new_tokens=6)
    with cm.forced(2):
        expected = cm.generate(prompts, max_new_tokens=6)
    assert routed == expected
    described = decide(cm, rows[0]["messages"], method="describe")
    assert described.slot in (1, 2) and described.scores[0] == 0.0


def test_trajectory_routing_mode_through_load_composed(composed_dir, world):
    cm = load_composed(composed_dir, routing="trajectory")
    assert cm.config.routing == "trajectory"
    conv = [{"role": "user", "content": "Hi, what did I pay for reservation R1000?"}]
    slot = decide(cm, conv).slot
    with cm.forced(slot):
        expected = cm.generate_tokenwise([conv], max_new_tokens=5)
    assert cm.generate([conv], max_new_tokens=5) == expected


def test_merge_equals_the_weighted_mixture(world, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base_dir, adapters = world
    out = merge_adapters(adapters, [0.25, 0.75], tmp_path / "merged")
    assert (out / "adapter_config.json").is_file() and (out / "adapter_model.safetensors").is_file()
    meta = json.loads((out / "tracec.json").read_text())
    assert meta["weights"] == [0.25, 0.75] and len(meta["merged_from"]) == 2
    merged = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base_dir), str(out))
    cm = build_composed(adapters, top_k=2)
    with torch.no_grad(), cm.forced([0.0, 0.25, 0.75]):
        expected = cm(IDS).logits
    with torch.no_grad():
        got = merged(IDS).logits
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_cli_merge_with_weights_from_routing(world, composed_dir, tmp_path):
    result = CliRunner().invoke(compose_cmd, [*map(str, world[1]), "--merge", "--weights-from",
                                              str(composed_dir), "-o", str(tmp_path / "m"), "--json"])
    assert result.exit_code == 0, result.output
    shares = json.loads((composed_dir / "routing.json").read_text())["overall"]
    assert json.loads(result.stdout.strip().splitlines()[-1])["weights"] == pytest.approx(shares[1:])


def test_cli_route_json(composed_dir, trajectories):
    result = CliRunner().invoke(compose_cmd, ["--route", str(composed_dir), "--data", str(trajectories), "--json"])
    assert result.exit_code == 0, result.output
    decisions = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(decisions) == 12
    assert all(d["name"] in ("<none>", "alpha_skill", "beta_skill") for d in decisions)


def test_cli_classifier_routing_needs_no_training(world, trajectories, tmp_path):
    from tracec.train.moe_classify import classify

    _, adapters = world
    out = tmp_path / "clf"
    result = CliRunner().invoke(compose_cmd, [*map(str, adapters), "--routing", "classifier",
                                              "--top-p", "0.6", "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    cm = load_composed(out)
    assert cm.config.routing == "classifier" and cm.config.classifier.top_p == 0.6
    assert not (out / "routing.json").exists()  # no gate training happened
    result = CliRunner().invoke(compose_cmd, ["--route", str(out), "--data", str(trajectories),
                                              "--method", "classifier", "--json"])
    assert result.exit_code == 0, result.output
    decisions = json.loads(result.stdout.strip().splitlines()[-1])
    rows = [json.loads(line) for line in trajectories.read_text().splitlines()]
    assert len(decisions) == len(rows)
    for d, row in zip(decisions, rows):
        expected = classify(cm, row["messages"], cm.config.classifier)
        assert d["weights"] == expected.weights and sum(d["scores"]) == pytest.approx(1.0, abs=1e-5)
        assert sum(d["weights"]) == pytest.approx(1.0) or not any(d["weights"])
    texts = cm.generate([rows[0]["messages"][:2]], max_new_tokens=4)
    assert len(texts) == 1 and isinstance(texts[0], str)
