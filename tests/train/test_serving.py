"""Rollouts on a serving engine (tracec.llm.serving) against an in-process fake vLLM/SGLang server:
LoRA hot-loading by name, the out-of-place NCCL route, the base kept bit-exact, one-line errors."""

from __future__ import annotations

import importlib.util
import json
import socket

import pytest
import torch
from click.testing import CliRunner
from fake_server import BASE_NAME, FakeServer
from train_helpers import TOY_ENV, small_config

from tracec.llm.chat import cut_at_stop
from tracec.llm.local import generate_ids
from tracec.llm.serving import ServingEngine, ServingError, merged_named_params
from tracec.train.cli import train_cmd
from tracec.train.trainer import GRPOTrainer

SERVED_LORA = {"rank": 8, "alpha": 16, "targets": ["q_proj", "v_proj"]}  # a rank vLLM serves


@pytest.fixture()
def server(tiny_model_dir):
    srv = FakeServer(tiny_model_dir)
    yield srv
    srv.close()


def _base_state(policy) -> dict[str, torch.Tensor]:
    """The frozen base's tensors (everything that is not LoRA), cloned."""
    return {n: p.detach().clone() for n, p in policy.named_parameters() if "lora_" not in n}


def _max_diff(before: dict[str, torch.Tensor], policy) -> float:
    now = dict(policy.named_parameters())
    return max(float((now[n].detach() - t).abs().max()) for n, t in before.items())


def _randomise_lora(policy) -> None:
    with torch.no_grad():
        for name, p in policy.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)  # make the adapter matter


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _train_args(model_dir, out, *extra: str) -> list[str]:
    return [TOY_ENV, "--model", str(model_dir), "-o", str(out), "--steps", "2", "-G", "3",
            "--groups-per-step", "1", "--max-new-tokens", "6", "--lora-rank", "8",
            "--lora-targets", "q_proj", "--json", *extra]


def test_cut_at_stop_keeps_the_stop_and_restores_a_dropped_one():
    assert cut_at_stop([5, 7, 2, 9], {2}) == [5, 7, 2]
    assert cut_at_stop([5, 7], {2}, finished_by=2) == [5, 7, 2]  # server left the stop id out
    assert cut_at_stop([5, 7], {2}, finished_by=None) == [5, 7]  # ran out of budget
    assert cut_at_stop([5, 7], {2}, finished_by="</s>") == [5, 7]  # a stop string, not an id


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_lora_hot_load_by_name_serves_the_policy_exactly(engine, server, tiny_model_dir, toy_env,
                                                         tmp_path):
    trainer = GRPOTrainer(small_config(tiny_model_dir), toy_env, tmp_path / "t")
    policy = trainer.policy
    _randomise_lora(policy)
    before = _base_state(policy)
    eng = ServingEngine(server.url, trainer.stop_ids, engine=engine, adapter_dir=tmp_path / "ad",
                        prefix="run")
    eng.update_policy(policy, 0)
    eng.update_policy(policy, 0)  # a resample round in the same step: no second load
    assert [n for n, _ in server.loads] == ["run-step0"]
    ids = torch.tensor([[5, 9, 30, 41, 7, 12]])
    with torch.no_grad():
        ours = policy(input_ids=ids).logits
        theirs = server.adapters["run-step0"](input_ids=ids).logits
    assert float((ours - theirs).abs().max()) < 1e-5  # the server samples from the policy
    prompts = [[5, 9, 30, 41], [7, 12, 3]]
    outs = eng.generate([0, 1], prompts, [6, 6], temperature=0.0)
    with torch.no_grad():
        local = generate_ids(policy, trainer.tokenizer, prompts, trainer.stop_ids, 6, 0.0, None)
    assert outs == local  # greedy tokens equal the trainer's own
    assert server.generations[-1][0] == "run-step0"
    eng.update_policy(policy, 1)
    assert [n for n, _ in server.loads] == ["run-step0", "run-step1"]
    assert server.unloads == ["run-step0"] and not (tmp_path / "ad" / "run-step0").exists()
    assert _max_diff(before, policy) == 0.0


def test_other_processes_wait_and_name_the_main_process_adapter(server, tiny_model_dir, toy_env,
                                                                tmp_path):
    trainer = GRPOTrainer(small_config(tiny_model_dir), toy_env, tmp_path / "t")
    waits = []
    main = ServingEngine(server.url, trainer.stop_ids, adapter_dir=tmp_path / "ad", prefix="r",
                         barrier=lambda: waits.append("main"))
    other = ServingEngine(server.url, trainer.stop_ids, adapter_dir=tmp_path / "ad", prefix="r",
                          is_main=False, barrier=lambda: waits.append("other"))
    main.update_policy(trainer.policy, 3)
    other.update_policy(trainer.policy, 3)
    assert len(server.loads) == 1 and waits == ["main", "other"]
    other.generate([0], [[5, 9, 30]], [4], 1.0)
    assert server.generations[-1][0] == "r-step3"


class FakeNCCLClient:
    """TRL's VLLMClient weight-transfer calls, writing into the fake server's base model."""

    def __init__(self, model) -> None:
        self.model = model
        self.pushed: list[str] = []
        self.resets = 0

    def update_named_params(self, metadata, named_params):
        state = self.model.state_dict()
        for (name, _, shape), (name2, tensor) in zip(metadata, named_params):
            assert name == name2 and list(tensor.shape) == shape and name in state, name
            state[name].copy_(tensor)
            self.pushed.append(name)

    def reset_prefix_cache(self):
        self.resets += 1


def test_nccl_route_streams_out_of_place_merges_and_leaves_the_base_exact(server, tiny_model_dir,
                                                                           toy_env, tmp_path):
    trainer = GRPOTrainer(small_config(tiny_model_dir), toy_env, tmp_path / "n")
    policy = trainer.policy
    _randomise_lora(policy)
    before = _base_state(policy)
    client = FakeNCCLClient(server.base)
    eng = ServingEngine(server.url, trainer.stop_ids, weight_sync="nccl", nccl_client=client)
    for step in range(10):  # the old merge/unmerge-in-place route drifted here
        eng.update_policy(policy, step)
    assert _max_diff(before, policy) == 0.0
    assert not any(getattr(m, "merged", False) for m in policy.modules())
    base_names = [n for n, _ in server.base.named_parameters()]
    assert sorted(client.pushed[: len(base_names)]) == sorted(base_names) and client.resets == 10
    ids = torch.tensor([[5, 9, 30, 41, 7]])
    with torch.no_grad():
        assert torch.allclose(policy(input_ids=ids).logits, server.base(input_ids=ids).logits,
                              atol=1e-5)
    eng.generate([0], [[5, 9, 30]], [4], 0.0)
    assert server.generations[-1][0] == BASE_NAME  # nccl mode samples from the served base
    assert len(list(merged_named_params(policy))) == len(base_names)
    with torch.no_grad():  # the check catches the old route: in-place merge + unmerge drifts
        for _ in range(10):
            policy.merge_adapter()
            policy.unmerge_adapter()
    assert _max_diff(before, policy) > 0.0


def test_two_training_steps_on_the_server_keep_the_base_bit_exact(server, tiny_model_dir, toy_env,
                                                                  tmp_path):
    config = small_config(tiny_model_dir, steps=2, serving_engine="vllm", server=server.url,
                          lora=SERVED_LORA)
    trainer = GRPOTrainer(config, toy_env, tmp_path / "s")
    before = _base_state(trainer.policy)
    lora0 = {n: p.detach().clone() for n, p in trainer.policy.named_parameters() if "lora_" in n}
    rows = []
    final = trainer.fit(on_step=rows.append)
    assert final["episodes"] == 8 and trainer.step == 2
    assert _max_diff(before, trainer.policy) == 0.0  # bit for bit, over every base tensor
    names = [n for n, _ in server.loads]
    assert len(names) == 2 and names[0].endswith("-step0") and names[1].endswith("-step1")
    assert {m for m, _ in server.generations} == set(names)  # every rollout named an adapter
    assert server.unloads == names and not (tmp_path / "s" / "serving").exists()  # closed at the end
    now = dict(trainer.policy.named_parameters())
    moved = max(float((now[n].detach() - t).abs().max()) for n, t in lora0.items())
    assert (moved > 0) == any(r["trained_tokens"] > 0 for r in rows)  # trained where it could


def test_tracec_train_against_the_fake_server(server, tiny_model_dir, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    out = tmp_path / "adapter"
    result = CliRunner().invoke(train_cmd, _train_args(tiny_model_dir, out, "--serving-engine", "vllm",
                                                       "--server", server.url))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["steps"] == 2 and not (out / "serving").exists()
    assert len(server.loads) == 2 and {m for m, _ in server.generations} == {n for n, _ in server.loads}
    PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model_dir), str(out))
    saved = json.loads((out / "tracec.json").read_text())["config"]
    assert (saved["serving_engine"], saved["weight_sync"], saved["server"]) == ("vllm", "lora", server.url)


def test_deprecated_vllm_server_alias_still_works(server, tiny_model_dir, tmp_path):
    result = CliRunner().invoke(train_cmd, _train_args(tiny_model_dir, tmp_path / "a", "--steps", "1",
                                                       "--vllm-server", server.url))
    assert result.exit_code == 0, result.output
    assert "--vllm-server is deprecated" in result.stderr and len(server.loads) == 1


def _error_lines(output: str) -> list[str]:
    return [ln for ln in output.splitlines() if ln.startswith("Error:")]


def test_unreachable_server_waits_then_one_line_error(tiny_model_dir, tmp_path):
    url = f"http://127.0.0.1:{_free_port()}"
    result = CliRunner().invoke(train_cmd, _train_args(tiny_model_dir, tmp_path / "u", "--server", url,
                                                       "--server-timeout", "1.5"))
    assert result.exit_code == 1
    assert f"waiting for the vllm server at {url}" in result.output
    (line,) = _error_lines(result.output)
    assert f"the vllm server at {url} did not answer within --server-timeout 1.5 s" in line
    assert "Traceback" not in result.output


def test_refused_adapter_load_is_one_line(tiny_model_dir, tmp_path):
    srv = FakeServer(tiny_model_dir, refuse_loads=True)
    try:
        result = CliRunner().invoke(train_cmd, _train_args(tiny_model_dir, tmp_path / "r",
                                                           "--server", srv.url))
    finally:
        srv.close()
    assert result.exit_code == 1
    (line,) = _error_lines(result.output)
    assert "refused to load adapter" in line
    assert "HTTP 400: LoRA rank 4 is greater than max_lora_rank 2;" in line and "--enable-lora" in line


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_missing_client_is_refused_before_any_model_loads(tmp_path):
    args = _train_args(tmp_path / "no_such_model", tmp_path / "m", "--server", "http://127.0.0.1:9",
                       "--weight-sync", "nccl")
    result = CliRunner().invoke(train_cmd, args)
    assert result.exit_code == 1
    (line,) = _error_lines(result.output)
    assert "--weight-sync nccl needs vllm" in line and "--weight-sync lora" in line
    assert "cannot load model" not in result.output  # refused before the model was looked at


@pytest.mark.parametrize(("extra", "message"), [
    (["--serving-engine", "vllm"], "needs the server's URL (--server URL)"),
    (["--serving-engine", "sglang", "--server", "http://x:1", "--weight-sync", "nccl"],
     "implemented for vLLM only"),
    (["--server", "localhost:8000"], "is not an http:// or https:// URL"),
])
def test_bad_serving_options_are_one_line(extra, message, tiny_model_dir, tmp_path):
    result = CliRunner().invoke(train_cmd, _train_args(tiny_model_dir, tmp_path / "b", *extra))
    assert result.exit_code == 1
    (line,) = _error_lines(result.output)
    assert message in line


def test_server_errors_during_generation_are_serving_errors(server, tiny_model_dir, tmp_path):
    eng = ServingEngine(server.url, [0], adapter_dir=tmp_path / "ad", prefix="g")
    eng.adapter = "never-loaded"
    with pytest.raises(ServingError, match="HTTP 404: The model `never-loaded` does not exist"):
        eng.generate([0], [[5, 9]], [3], 1.0)


def test_resume_on_another_server_and_from_a_checkpoint_older_than_these_settings(
        server, tiny_model_dir, toy_env, tmp_path):
    out = tmp_path / "res"
    first = small_config(tiny_model_dir, steps=1, server="http://127.0.0.1:1",  # unreachable
                         lora=SERVED_LORA)
    GRPOTrainer(first.model_copy(update={"server": server.url}), toy_env, out).fit()
    other = FakeServer(tiny_model_dir)  # the server came back at another address
    try:
        again = GRPOTrainer(first.model_copy(update={"server": other.url, "steps": 2}), toy_env, out)
        assert again.fit(resume=True)["step"] == 2
        assert [n.rsplit("-", 1)[1] for n, _ in other.loads] == ["step1"]
    finally:
        other.close()
    local = tmp_path / "old"
    GRPOTrainer(small_config(tiny_model_dir, steps=1), toy_env, local).fit()
    state_path = local / "checkpoints" / "last" / "state.json"
    state = json.loads(state_path.read_text())
    for key in ("serving_engine", "server", "server_timeout", "weight_sync"):
        del state["config"][key]  # as written before these settings existed
    state_path.write_text(json.dumps(state))
    resumed = GRPOTrainer(small_config(tiny_model_dir, steps=2), toy_env, local)
    assert resumed.fit(resume=True)["step"] == 2
