"""Tokens/s of a composed model (k=1) vs the base model, one merged adapter and one peft adapter.

Run (CPU, one thread, all ratios measured in the same process):

    OMP_NUM_THREADS=1 python benchmarks/compose_speed.py [--model smollm2] [--experts 2] [--rank 16]

Uses SmolLM2-135M-Instruct when prepared (``tracec model prepare smollm2``), else a random Llama with
SmolLM2-135M's shape. Adapters are random LoRAs (rank r on all linear layers of every block); gates
are random so that tokens really spread over the experts. Prints a Markdown table and a JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def base_path(name: str, tmp: Path) -> tuple[str, str]:
    """``(path, description)``: the prepared model, else a random SmolLM2-shaped Llama."""
    from tracec.llm.local import ModelNotPrepared, resolve_model

    if name != "random":
        try:
            return resolve_model(name), f"{name} (prepared weights)"
        except ModelNotPrepared:
            pass
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                      num_attention_heads=9, num_key_value_heads=3, tie_word_embeddings=True)
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(tmp / "base")
    return str(tmp / "base"), "random Llama with SmolLM2-135M's shape (30 layers, d=576)"


def make_adapters(base: str, n: int, rank: int, tmp: Path) -> list[Path]:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    out = []
    for i in range(n):
        model = get_peft_model(AutoModelForCausalLM.from_pretrained(base),
                               LoraConfig(r=rank, lora_alpha=2 * rank, target_modules=TARGETS))
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "lora_B" in name:
                    p.normal_(0, 0.01)
        path = tmp / f"adapter{i}"
        model.save_pretrained(path)
        out.append(path)
    return out


@torch.no_grad()
def decode_once(model, ids: torch.Tensor, new_tokens: int) -> float:
    """Seconds for greedy, fixed-length generation with the KV cache."""
    t = time.perf_counter()
    model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                   min_new_tokens=new_tokens, do_sample=False, pad_token_id=0, eos_token_id=None)
    return time.perf_counter() - t


@torch.no_grad()
def prefill_once(model, ids: torch.Tensor) -> float:
    """Seconds for one forward pass without cache."""
    t = time.perf_counter()
    model(ids, use_cache=False)
    return time.perf_counter() - t


def measure(models: dict, prompt_len: int, new_tokens: int, batch: int, repeats: int) -> dict:
    """Median tok/s per model; repeats are interleaved round-robin so load noise hits all alike."""
    torch.manual_seed(0)
    dec_ids = torch.randint(10, 1000, (batch, prompt_len))
    pre_ids = torch.randint(10, 1000, (4, prompt_len))
    times: dict = {n: {"decode": [], "prefill": []} for n in models}
    for n, m in models.items():  # warm-up
        decode_once(m, dec_ids, 2)
        prefill_once(m, pre_ids)
    for _ in range(repeats):
        for n, m in models.items():
            times[n]["decode"].append(decode_once(m, dec_ids, new_tokens))
            times[n]["prefill"].append(prefill_once(m, pre_ids))
    return {n: {"decode_tok_s": batch * new_tokens / statistics.median(t["decode"]),
                "prefill_tok_s": pre_ids.numel() / statistics.median(t["prefill"])}
            for n, t in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2", help="prepared short name, path, or 'random'")
    ap.add_argument("--experts", type=int, default=2)
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)

    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from tracec.compose.model import compose

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        base, described = base_path(args.model, tmp)
        adapters = make_adapters(base, args.experts, args.rank, tmp)
        models = {
            "base": AutoModelForCausalLM.from_pretrained(base).eval(),
            "merged adapter": PeftModel.from_pretrained(
                AutoModelForCausalLM.from_pretrained(base), str(adapters[0])).merge_and_unload().eval(),
            "peft adapter (unmerged)": PeftModel.from_pretrained(
                AutoModelForCausalLM.from_pretrained(base), str(adapters[0])).eval(),
        }
        cm = compose(AutoModelForCausalLM.from_pretrained(base), adapters, base, top_k=1)
        torch.manual_seed(1)
        with torch.no_grad():
            for p in cm.gate_parameters():
                p.normal_(0, 1.0)
        models[f"composed k=1 ({args.experts} experts)"] = cm.model
        results = measure(models, args.prompt_len, args.new_tokens, args.batch, args.repeats)
    ref = results["peft adapter (unmerged)"]
    print(f"model: {described}; LoRA rank {args.rank} on {', '.join(TARGETS)}; batch {args.batch}, "
          f"prompt {args.prompt_len}, {args.new_tokens} new tokens; OMP_NUM_THREADS=1\n")
    print("| model | decode tok/s | prefill tok/s | decode cost vs peft adapter | prefill cost vs peft adapter |")
    print("|---|---:|---:|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {r['decode_tok_s']:.1f} | {r['prefill_tok_s']:.0f} | "
              f"{ref['decode_tok_s'] / r['decode_tok_s']:.2f}× | {ref['prefill_tok_s'] / r['prefill_tok_s']:.2f}× |")
    print(json.dumps({"model": described, "args": vars(args), "results": results}))


if __name__ == "__main__":
    main()
