#!/usr/bin/env bash
# The GPU check: tracec train single-GPU bf16 2 steps + tracec eval on a random Qwen3-0.6B-shaped
# model, rollout tokens/s vs measured prefill/decode limits, the device's own limits (memory
# bandwidth, matmul throughput), peak GPU memory; a 2-process NCCL step (2+ GPUs) and a served
# step (vllm installed). No downloads. Needs: torch with CUDA, transformers, peft, accelerate,
# this repo; optional: the SmolLM2 tokenizer (`tracec model prepare`, or --tokenizer DIR).
# Usage (repo root): bash benchmarks/gpu/check.sh [OUT] [check.py options, e.g. --dry], in any
# order (`check.sh --dry OUT` works). Budget: ≤ 8 min on one GPU (cut at 8 min by `timeout`).
# A failure prints the end of OUT/stderr.log and exits non-zero.
set -uo pipefail
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY="${PYTHON:-python}"
if ! where="$("$PY" benchmarks/gpu/check.py --print-out "$@")"; then
  echo "check.sh: bad options (see above)" >&2
  exit 2
fi
OUT="${where%%$'\t'*}"
DRY="${where##*$'\t'}"
mkdir -p "$OUT"
if [[ "$DRY" != 1 ]]; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
fi
timeout 480 "$PY" benchmarks/gpu/check.py "$@" 2>"$OUT/stderr.log"
rc=$?
if [[ $rc -ne 0 ]]; then
  [[ $rc -eq 124 ]] && echo "check.sh: cut at 8 min (timeout 480)" >&2
  echo "check.sh: failed (exit $rc); the end of $OUT/stderr.log:" >&2
  tail -n 40 "$OUT/stderr.log" >&2
  exit "$rc"
fi
echo "wrote $OUT/check.json (tracec's own output: $OUT/train.json, $OUT/eval.json, $OUT/stderr.log)" >&2
