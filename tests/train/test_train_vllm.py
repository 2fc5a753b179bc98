"""The vLLM generation path, against a fake `trl vllm-serve` client backed by a local model."""

from __future__ import annotations

import torch
from train_helpers import small_config

from tracec.llm.local import generate_ids, load_tokenizer
from tracec.train.trainer import GRPOTrainer
from tracec.train.vllm_gen import VLLMGenerator


class FakeClient:
    """Implements the VLLMClient calls tracec uses, on a plain transformers model."""

    def __init__(self, model_dir):
        from transformers import AutoModelForCausalLM

        self.model = AutoModelForCausalLM.from_pretrained(model_dir)
        self.tok = load_tokenizer(str(model_dir))
        self.pushed: list[str] = []
        self.generate_calls = 0
        self.resets = 0

    def update_named_params(self, metadata, named_params):
        state = self.model.state_dict()
        for (name, dtype, shape), (name2, tensor) in zip(metadata, named_params):
            assert name == name2 and list(tensor.shape) == shape and name in state, name
            state[name].copy_(tensor)
            self.pushed.append(name)

    def reset_prefix_cache(self):
        self.resets += 1

    def generate(self, prompts, n, temperature, max_tokens, generation_kwargs):
        self.generate_calls += 1
        stops = generation_kwargs["stop_token_ids"]
        outs = generate_ids(self.model, self.tok, prompts, stops, max_tokens, temperature, None)
        return {"completion_ids": outs}


def test_sync_pushes_merged_weights_under_base_names(tiny_model_dir, toy_env, tmp_path):
    trainer = GRPOTrainer(small_config(tiny_model_dir), toy_env, tmp_path / "v")
    with torch.no_grad():
        for name, p in trainer.policy.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)  # make the adapter matter
    fake = FakeClient(tiny_model_dir)
    gen = VLLMGenerator("http://unused", trainer.stop_ids, client=fake)
    sent = gen.sync(trainer.policy)
    base_names = [n for n, _ in fake.model.named_parameters()]
    assert sent == len(base_names) and sorted(fake.pushed) == sorted(base_names)
    assert fake.resets == 1
    assert not any(getattr(m, "merged", False) for m in trainer.policy.modules())  # unmerged again
    ids = torch.tensor([[5, 9, 30, 41, 7]])
    with torch.no_grad():
        ours = trainer.policy(input_ids=ids).logits
        theirs = fake.model(input_ids=ids).logits
    assert torch.allclose(ours, theirs, atol=1e-5)


def test_training_step_generates_on_the_server(tiny_model_dir, toy_env, tmp_path):
    trainer = GRPOTrainer(small_config(tiny_model_dir, steps=2), toy_env, tmp_path / "w")
    fake = FakeClient(tiny_model_dir)
    trainer.generator = VLLMGenerator("http://unused", trainer.stop_ids, client=fake)
    m = trainer.fit()
    assert m["episodes"] == 8 and fake.generate_calls >= 2
    assert fake.resets == 2  # one weight sync per optimiser step
