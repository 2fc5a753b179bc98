#!/usr/bin/env bash
# The GPU check (issue 20 item 5): tracec train single-GPU bf16 2 steps + tracec eval on a random
# Qwen3-0.6B-shaped model, rollout tokens/s vs measured prefill/decode limits, peak GPU memory.
# No downloads. Needs: torch with CUDA, transformers, peft, accelerate, this repo; optional: the
# SmolLM2 tokenizer (`tracec model prepare`, or --tokenizer DIR), else a local BPE is built.
# Usage (repo root): bash benchmarks/gpu/check.sh [OUT] [extra check.py options, e.g. --dry]
# Budget: ≤ 8 min on one H200-class GPU (the whole script is cut at 8 min by `timeout`).
set -euo pipefail
OUT="${1:-runs/gpu_check}"
shift || true
mkdir -p "$OUT"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if [[ " $* " != *" --dry "* ]]; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
fi
timeout 480 python benchmarks/gpu/check.py --out "$OUT" "$@" 2>"$OUT/stderr.log"
echo "wrote $OUT/check.json (tracec's own output: $OUT/train.json, $OUT/eval.json, $OUT/stderr.log)" >&2
