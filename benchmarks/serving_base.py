"""The trainer's base under a serving engine: bit-exact, measured on the tiny model (CPU).

1. Ten policy pushes on the NCCL route: peft's in-place ``merge_adapter``/``unmerge_adapter``
   (tracec's route before) against the out-of-place merge ``W + scale·B@A`` now sent
   (``tracec.llm.serving.merged_named_params``), in fp32 and bf16: base values changed.
2. ``tracec``'s GRPO loop for STEPS steps with rollouts on the in-process fake vLLM server
   (``tests/train/fake_server.py``) and the LoRA hot-loaded each step: the base's max abs diff,
   adapter loads and the adapter names rollouts asked for.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/serving_base.py [--steps 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "train"))

from fake_server import FakeServer
from train_helpers import TOY_ENV, small_config

from tracec.harness.resolve import resolve_env
from tracec.llm.serving import merged_named_params
from tracec.llm.tiny import make_tiny_model
from tracec.train.trainer import GRPOTrainer

ALL = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _base(policy) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in policy.named_parameters() if "lora_" not in n}


def _diff(before, policy) -> tuple[int, int, float]:
    now = dict(policy.named_parameters())
    changed = sum(int((now[n] != t).sum()) for n, t in before.items())
    top = max(float((now[n].float() - t.float()).abs().max()) for n, t in before.items())
    return changed, sum(t.numel() for t in before.values()), top


def drift(model_dir: Path, work: Path) -> None:
    for dtype in (torch.float32, torch.bfloat16):
        for route in ("in-place merge/unmerge", "out-of-place merge"):
            cfg = small_config(model_dir, lora={"rank": 8, "alpha": 16, "targets": ALL})
            policy = GRPOTrainer(cfg, resolve_env(TOY_ENV), work / "drift").policy.to(dtype)
            with torch.no_grad():
                for n, p in policy.named_parameters():
                    if "lora_B" in n:
                        p.normal_(0, 0.5)
                before = _base(policy)
                for _ in range(10):
                    if route.startswith("in-place"):
                        policy.merge_adapter()
                        list(merged_named_params(policy))
                        policy.unmerge_adapter()
                    else:
                        list(merged_named_params(policy))
            changed, total, top = _diff(before, policy)
            print(f"{str(dtype).removeprefix('torch.'):9s} {route:23s} x10: {changed:6d} of {total} "
                  f"base values changed, max abs diff {top:.3g}")


def served_run(model_dir: Path, work: Path, steps: int) -> None:
    server = FakeServer(model_dir)
    try:
        cfg = small_config(model_dir, steps=steps, serving_engine="vllm", server=server.url)
        trainer = GRPOTrainer(cfg, resolve_env(TOY_ENV), work / "served")
        before = _base(trainer.policy)
        rows: list[dict] = []
        trainer.fit(on_step=rows.append)
        changed, total, top = _diff(before, trainer.policy)
        print(f"{steps} GRPO steps on the fake vLLM server: base max abs diff {top} over "
              f"{len(before)} tensors ({total} values, {changed} changed); adapter loads "
              f"{len(server.loads)}, unloads {len(server.unloads)} (the last at the end); rollout requests by model: "
              f"{sorted({m for m, _ in server.generations})}; trained tokens per step "
              f"{[r['trained_tokens'] for r in rows]}")
    finally:
        server.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model_dir = make_tiny_model(work / "tiny", seed=0)
        drift(model_dir, work)
        served_run(model_dir, work, args.steps)


if __name__ == "__main__":
    main()
