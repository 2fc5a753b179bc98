#!/usr/bin/env bash
# Rollout tokens/s of the kv engine vs the model's prefill/decode limits on one CUDA GPU.
# No network needed: a random-initialised Qwen3-0.6B built from an inline config.
# Usage (repo root, torch with CUDA + transformers installed): bash benchmarks/gpu_rollout.sh [OUT_DIR]
set -euo pipefail
OUT="${1:-${OUT:-runs/gpu_rollout}}"
mkdir -p "$OUT"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONPATH="${PYTHONPATH:-}:$PWD"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
# the GRPO step of the CPU benchmark (4 groups x G=8, 2 turns, 64 tokens, 5.4k-token prompts)
python benchmarks/gpu_rollout.py --naive --json-out "$OUT/step_5k.json"
# a larger batch: 16 groups x G=16 (256 rows in batches of 64)
python benchmarks/gpu_rollout.py --groups 16 -G 16 --rows 64 --new-tokens 256 --json-out "$OUT/big.json"
