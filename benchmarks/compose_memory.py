"""Peak RSS of ``tracec compose`` (gate training) on a full-size airline demonstration.

Run (CPU, one thread; 1-2 gate steps are enough for the peak):

    OMP_NUM_THREADS=1 python benchmarks/compose_memory.py [--env multi_step_task_completion]
        [--max-steps 1] [--max-length 8192] [-- EXTRA tracec compose OPTIONS]

Builds one oracle demonstration of a shipped airline env (default ``precondition_verification``:
full policy and all 14 tool schemas, first prompt 5.3k tokens, whole trajectory 5.7k), two random rank-8 LoRA adapters on SmolLM2-135M-Instruct (``tracec model prepare``),
then runs ``tracec compose`` in a child process and reports the child's peak RSS
(``getrusage(RUSAGE_CHILDREN).ru_maxrss``) with the prompt length. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import importlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


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
        (path / "tracec.json").write_text(json.dumps({"capability": f"cap{i}", "base_model": base}))
        out.append(path)
        del model
    return out


def demo_row(env_name: str, seed: int) -> dict:
    from tracec.pipeline.demos import oracle_episode

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    module = importlib.import_module(f"generated_envs.{env_name}")
    env_cls = next(v for k, v in vars(module).items() if isinstance(v, type) and k.endswith("Env")
                   and v.__module__ == module.__name__)
    row = oracle_episode(env_cls, seed)
    row["success"] = True  # the memory peak does not depend on the reward
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--env", default="precondition_verification")
    ap.add_argument("--tools", type=int, help="keep only the first N tool schemas (a shorter prompt)")
    ap.add_argument("--limit-gib", type=float, help="address-space limit of the child (RLIMIT_AS), "
                    "so a run that would exhaust the machine fails instead")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--max-steps", type=int, default=1)
    ap.add_argument("--max-length", type=int, default=8192)
    ap.add_argument("extra", nargs="*", help="extra `tracec compose` options (after --)")
    args = ap.parse_args()
    from tracec.llm.local import load_tokenizer, resolve_model

    base = resolve_model(args.model)
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        row = demo_row(args.env, args.seed)
        if args.tools is not None:
            row["info"]["tools"] = row["info"]["tools"][: args.tools]
        (tmp / "demo.jsonl").write_text(json.dumps(row, default=str) + "\n")
        tok = load_tokenizer(base)
        text = tok.apply_chat_template(row["messages"], tools=row["info"]["tools"], tokenize=False)
        n_tokens = len(tok(text, add_special_tokens=False)["input_ids"])
        adapters = make_adapters(base, 2, 8, tmp)
        cmd = [sys.executable, "-m", "tracec.cli", "compose", *map(str, adapters), "--data",
               str(tmp / "demo.jsonl"), "-o", str(tmp / "composed"), "--max-steps", str(args.max_steps),
               "--max-length", str(args.max_length), "--batch-size", "1", "--json", *args.extra]
        t0 = time.perf_counter()
        limit = int(args.limit_gib * 2**30) if args.limit_gib else None
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, preexec_fn=(
            (lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))) if limit else None))
        seconds = time.perf_counter() - t0
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result = {"env": args.env, "tokens": n_tokens, "tools": len(row["info"]["tools"]), "max_steps": args.max_steps, "extra": args.extra,
              "rc": proc.returncode, "peak_rss_gib": round(peak_kib / 2**20, 2),
              "seconds": round(seconds, 1), "limit_gib": args.limit_gib, "stderr_tail": proc.stderr[-400:] if proc.returncode else ""}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
