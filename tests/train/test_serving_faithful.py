"""The serving client against a fake server that behaves like vLLM/SGLang where it matters:
pinned sampling and per-request seeds, the server's logprobs against the trainer's, max_model_len,
runtime LoRA routes, LoRA ranks, SGLang's error shape, adapters left behind by a crashed run."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from fake_server import GENERATION_DEFAULTS, PLAIN, FakeServer
from train_helpers import TOY_ENV, small_config

from tracec.llm.serving import (
    VLLM_LORA_RANKS,
    ServingEngine,
    ServingError,
    check_lora_rank,
    request_seed,
    sampling_params,
)
from tracec.train.cli import train_cmd
from tracec.train.trainer import GRPOTrainer

LORA8 = {"rank": 8, "alpha": 16, "targets": ["q_proj", "v_proj"]}
PINNED = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty", "presence_penalty",
          "frequency_penalty")


@pytest.fixture()
def server(tiny_model_dir):
    srv = FakeServer(tiny_model_dir)
    yield srv
    srv.close()


def _engine(srv, tmp_path, **kw) -> ServingEngine:
    return ServingEngine(srv.url, [0], adapter_dir=tmp_path / "ad", prefix="p", **kw)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_every_sampling_field_is_pinned_and_each_request_has_its_own_seed(engine, tiny_model_dir,
                                                                          tmp_path):
    srv = FakeServer(tiny_model_dir, engine=engine)
    try:
        eng = _engine(srv, tmp_path, engine=engine)
        eng.set_seed(1234)
        eng.generate([0, 1], [[5, 9, 30], [5, 9, 30]], [4, 4], 0.7)
    finally:
        srv.close()
    if engine == "vllm":  # one request per conversation, each body fully pinned
        bodies = [b for _, b, _ in srv.requests]
        assert len(bodies) == 2
        for b in bodies:
            assert {k: b[k] for k in PINNED} == {**PLAIN, "temperature": 0.7}
            assert b["logprobs"] == 0 and b["min_tokens"] == 0
        seeds = sorted(b["seed"] for b in bodies)
    else:  # one batched /generate, per-prompt sampling params
        ((_, body, _),) = srv.requests
        assert body["return_logprob"] is True
        for sp in body["sampling_params"]:
            assert {k: sp[k] for k in PINNED} == {**PLAIN, "temperature": 0.7}
        seeds = sorted(sp["sampling_seed"] for sp in body["sampling_params"])
    assert seeds == sorted([request_seed(1234, 0, 0), request_seed(1234, 1, 0)])
    assert seeds[0] != seeds[1]  # two rollouts of one prompt must not sample the same tokens
    for _, _, sampling in srv.requests:  # what the server actually applied: plain softmax(l/T)
        assert all(sp == {**PLAIN, "temperature": 0.7} for sp in sampling)


def test_the_fake_applies_generation_config_defaults_to_unpinned_fields(server):
    """Why pinning matters: a body with only a temperature samples with top_k 20, top_p 0.95."""
    import urllib.request

    req = urllib.request.Request(server.url + "/v1/completions", method="POST",
                                 data=json.dumps({"model": "tiny-base", "prompt": [[5, 9]],
                                                  "max_tokens": 2, "temperature": 1.0}).encode(),
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=30).read()
    ((_, _, (applied,)),) = server.requests
    assert applied["top_k"] == GENERATION_DEFAULTS["top_k"] == 20 and applied["top_p"] == 0.95


def test_seeded_rollouts_repeat_on_the_same_server(server, tmp_path):
    eng = _engine(server, tmp_path)
    prompts = [[5, 9, 30, 41], [7, 12, 3], [5, 9, 30, 41]]

    def run(base):
        eng.set_seed(base)
        for k, p in enumerate(prompts):
            eng.start(k, p)
        return eng.generate([0, 1, 2], prompts, [8, 8, 8], 1.0)

    first, again, other = run(7), run(7), run(8)
    assert first == again  # reproducible where the server is
    assert first != other  # another step's seed samples other tokens
    assert all(lp is not None and len(lp) == len(ids) and all(x <= 0 for x in lp)
               for ids, lp in zip(again, eng.last_logprobs))


def test_a_served_run_reports_the_sampler_gap_and_records_its_sampling(server, tiny_model_dir,
                                                                      toy_env, tmp_path):
    config = small_config(tiny_model_dir, steps=1, server=server.url, lora=LORA8)
    trainer = GRPOTrainer(config, toy_env, tmp_path / "g")
    last = trainer.fit()
    assert last["sampler_logprob_gap"] < 1e-4  # the fake serves the policy exactly (fp32)
    assert abs(last["sampler_ratio_mean"] - 1.0) < 1e-4 and last["sampler_ratio_max"] < 1.001
    meta = json.loads((tmp_path / "g" / "tracec.json").read_text())
    assert meta["sampling"]["params"] == {**sampling_params("vllm", 1.0)}
    assert meta["sampling"]["max_model_len"] == server.max_model_len
    assert "per request" in meta["sampling"]["seed"]


def test_local_runs_record_their_sampling_too(tiny_model_dir, toy_env, tmp_path):
    trainer = GRPOTrainer(small_config(tiny_model_dir, steps=1), toy_env, tmp_path / "l")
    last = trainer.fit()
    assert "sampler_logprob_gap" not in last  # nothing to compare against
    sampling = json.loads((tmp_path / "l" / "tracec.json").read_text())["sampling"]
    assert sampling["params"]["temperature"] == 1.0 and sampling["params"]["top_p"] == 1.0


def test_max_model_len_from_v1_models_bounds_the_episodes(tiny_model_dir, toy_env, tmp_path):
    srv = FakeServer(tiny_model_dir, max_model_len=300)
    try:
        trainer = GRPOTrainer(small_config(tiny_model_dir, server=srv.url, lora=LORA8), toy_env,
                              tmp_path / "m")
        assert trainer.serving.max_model_len == 300 and trainer.max_total_tokens == 300
        with pytest.raises(ServingError, match="--max-total-tokens 1000 is more than the server's "
                                               "max_model_len 300"):
            GRPOTrainer(small_config(tiny_model_dir, server=srv.url, lora=LORA8,
                                     max_total_tokens=1000), toy_env, tmp_path / "m2")
        eng = _engine(srv, tmp_path)
        with pytest.raises(ServingError, match=r"maximum context length is 300 .*max_model_len is 300"):
            eng.generate([0], [[5] * 290], [20], 1.0)
    finally:
        srv.close()


def test_runtime_lora_routes_missing_name_the_env_variable(tiny_model_dir, tmp_path):
    srv = FakeServer(tiny_model_dir, runtime_lora=False)
    try:
        result = CliRunner().invoke(train_cmd, [
            TOY_ENV, "--model", str(tiny_model_dir), "-o", str(tmp_path / "o"), "--steps", "1",
            "-G", "2", "--groups-per-step", "1", "--max-new-tokens", "4", "--lora-rank", "8",
            "--lora-targets", "q_proj", "--server", srv.url])
    finally:
        srv.close()
    assert result.exit_code == 1
    (line,) = [ln for ln in result.output.splitlines() if ln.startswith("Error:")]
    assert "HTTP 404" in line and "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True" in line


def test_a_rank_vllm_does_not_serve_is_refused_before_the_model_loads(tmp_path):
    result = CliRunner().invoke(train_cmd, [
        TOY_ENV, "--model", str(tmp_path / "no_model"), "-o", str(tmp_path / "o"),
        "--lora-rank", "12", "--server", "http://127.0.0.1:9"])
    assert result.exit_code == 1
    (line,) = [ln for ln in result.output.splitlines() if ln.startswith("Error:")]
    assert "--lora-rank 12 is not a rank vLLM serves" in line and "--lora-rank 8 or 16" in line
    for rank in VLLM_LORA_RANKS:
        check_lora_rank("vllm", rank)
    check_lora_rank("sglang", 12)  # SGLang takes any rank up to its --max-lora-rank


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_rank_above_max_lora_rank_is_the_servers_one_line(engine, tiny_model_dir, toy_env, tmp_path):
    srv = FakeServer(tiny_model_dir, max_lora_rank=16, engine=engine)
    try:
        lora = {"rank": 32, "alpha": 64, "targets": ["q_proj"]}
        trainer = GRPOTrainer(small_config(tiny_model_dir, server=srv.url, serving_engine=engine,
                                           lora=lora), toy_env, tmp_path / "r")
        with pytest.raises(ServingError) as err:
            trainer.serving.update_policy(trainer.policy, 0)
    finally:
        srv.close()
    msg = str(err.value)  # SGLang's {"success": false, "error_message": ...} is read too
    assert "LoRA rank 32 is greater than max_lora_rank 16" in msg and "\n" not in msg
    assert "--max-lora-rank" in msg


def test_adapters_left_by_a_crashed_run_are_unloaded_and_a_failing_run_unloads_its_own(
        server, tiny_model_dir, toy_env, tmp_path):
    config = small_config(tiny_model_dir, steps=3, server=server.url, lora=LORA8)
    trainer = GRPOTrainer(config, toy_env, tmp_path / "c")
    calls = []

    def crash():
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # e.g. Ctrl-C during the second step
        return real()

    real, trainer.train_step = trainer.train_step, crash
    with pytest.raises(KeyboardInterrupt):
        trainer.fit()
    assert server.adapters == {} and server.unloads  # the run's adapter left with it
    # a run killed outright (no finally) leaves its adapter: the next run of this -o unloads it
    trainer.policy.save_pretrained(tmp_path / "stale")
    server.load(trainer.serving.prefix + "-step7", str(tmp_path / "stale"))
    assert trainer.serving.prefix + "-step7" in server.adapters
    again = GRPOTrainer(config, toy_env, tmp_path / "c")
    assert again.serving.prefix + "-step7" not in server.adapters


def test_a_bf16_server_shows_its_gap_to_an_fp32_trainer(tiny_model_dir, toy_env, tmp_path):
    """"Served logits equal to 1e-5" held for an fp32 fake; a bf16 server samples from a slightly
    different policy, and the run says by how much."""
    import torch

    srv = FakeServer(tiny_model_dir, dtype=torch.bfloat16)
    try:
        config = small_config(tiny_model_dir, steps=1, server=srv.url, lora=LORA8)
        last = GRPOTrainer(config, toy_env, tmp_path / "b").fit()
    finally:
        srv.close()
    print(f"bf16 server: sampler_logprob_gap {last['sampler_logprob_gap']:.2e}, "
          f"ratio max {last['sampler_ratio_max']:.4f}")
    assert 1e-4 < last["sampler_logprob_gap"] < 0.5
    assert last["sampler_ratio_max"] > 1.0


def test_the_nccl_route_streams_one_merged_tensor_at_a_time(server, tiny_model_dir, toy_env,
                                                            tmp_path):
    """The metadata is announced first, then each merged tensor is computed as TRL's client
    asks for it: never a second copy of the model."""
    import inspect

    from tracec.llm.serving import merged_metadata

    class Probe:
        def update_named_params(self, metadata, named):
            assert inspect.isgenerator(named)  # not a materialised list
            self.meta = metadata
            self.shapes = [(n, list(t.shape)) for n, t in named]

        def reset_prefix_cache(self):
            pass

    trainer = GRPOTrainer(small_config(tiny_model_dir), toy_env, tmp_path / "n")
    probe = Probe()
    eng = ServingEngine(server.url, trainer.stop_ids, weight_sync="nccl", nccl_client=probe)
    eng.update_policy(trainer.policy, 0)
    assert [(n, s) for n, _, s in probe.meta] == probe.shapes  # announced = streamed, in order
    assert probe.meta == merged_metadata(trainer.policy)
    assert {n for n, _ in probe.shapes} == {n for n, _ in server.base.named_parameters()}
