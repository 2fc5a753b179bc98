"""Shared builders for the composition tests: a tiny random chat model and two tiny adapters."""

from __future__ import annotations

import json
from pathlib import Path

import torch

ADAPTER_SPECS = {
    "alpha_skill": {"r": 4, "targets": ["q_proj", "v_proj", "up_proj", "down_proj"], "seed": 1},
    "beta_skill": {"r": 2, "targets": ["q_proj", "o_proj", "gate_proj"], "seed": 2},
}


def make_adapter(base_dir: Path, out_dir: Path, name: str, r: int, targets: list[str], seed: int,
                 scale: float = 0.3) -> Path:
    """A peft LoRA adapter on the tiny model with random, non-zero A and B."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(base_dir)
    peft_model = get_peft_model(model, LoraConfig(r=r, lora_alpha=2 * r, target_modules=targets,
                                                  lora_dropout=0.0))
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for pname, p in peft_model.named_parameters():
            if "lora_" in pname:
                p.copy_(torch.randn(p.shape, generator=gen) * scale)
    peft_model.save_pretrained(out_dir)
    (out_dir / "tracec.json").write_text(json.dumps({
        "capability": name, "description": f"The {name.replace('_', ' ')} capability.",
        "base_model": str(base_dir)}))
    return out_dir


def make_world(root: Path) -> tuple[Path, list[Path]]:
    """The tiny base model folder and the two adapter folders under ``root``."""
    from tracec.llm.tiny import make_tiny_model

    base = make_tiny_model(root / "base", seed=0)
    adapters = [make_adapter(base, root / name, name, spec["r"], spec["targets"], spec["seed"])
                for name, spec in ADAPTER_SPECS.items()]
    return base, adapters


def make_trajectories(path: Path, n: int = 12) -> Path:
    """Synthetic trajectory JSONL (two envs, tool calls, some failures) in the tracec format."""
    tools = [{"type": "function", "function": {
        "name": "get_reservation_details", "description": "Look up a reservation.",
        "parameters": {"type": "object", "properties": {"reservation_id": {"type": "string"}},
                       "required": ["reservation_id"]}}}]
    rows = []
    for i in range(n):
        env = "tracec/alpha_skill-v0" if i % 2 else "tracec/beta_skill-v0"
        rid = f"R{1000 + 37 * i}"
        messages = [
            {"role": "system", "content": "You are an airline agent."},
            {"role": "user", "content": f"Hi, what did I pay for reservation {rid}?"},
            {"role": "assistant", "content": "", "tool_calls": [{
                "id": f"c{i}", "type": "function",
                "function": {"name": "get_reservation_details",
                             "arguments": json.dumps({"reservation_id": rid})}}]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": json.dumps({"total": 100 + i})},
            {"role": "assistant", "content": f"The total is {100 + i} dollars."},
        ]
        rows.append({"id": f"t{i}", "task_id": f"task{i % 3}", "env": env, "messages": messages,
                     "reward": 0.0 if i % 5 == 4 else 1.0, "success": i % 5 != 4,
                     "info": {"tools": tools}})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def writer_examples(cm, writers: list[int], new_tokens: int = 24, seed: int = 1234) -> list:
    """One Example per writer slot: a prompt and ``new_tokens`` sampled (T=1) from that slot.

    Flight prompts for odd slots, order prompts for even ones. The answer stays token ids (no
    decode and re-tokenise, which would blur whose text it is).
    """
    from tracec.train.moe_train import Example

    out = []
    gen = torch.Generator().manual_seed(seed)
    for i, writer in enumerate(writers):
        user = (f"Hi, what did I pay for reservation R{1000 + 37 * i}?" if writer % 2
                else f"Please cancel order W{5000 + 53 * i} and refund the payment.")
        prompt = cm.render([{"role": "user", "content": user}])
        ids = list(prompt)
        with torch.no_grad(), cm.forced(writer):
            for _ in range(new_tokens):
                logits = cm(torch.tensor([ids]), use_cache=False).logits[0, -1]
                ids.append(int(torch.multinomial(torch.softmax(logits, -1), 1, generator=gen)))
        out.append(Example(f"c{i}", "", ids, [False] * len(prompt) + [True] * new_tokens))
    return out
