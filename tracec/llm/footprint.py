"""Measured memory constants of a decoder step under autograd, shared by GRPO training and gate
training (measured on SmolLM2-135M with torch 2.13 on CPU, benchmarks/README.md; deliberately a
little high)."""

GIB = 1024 ** 3
ACT_FLOATS_PER_TOKEN_LAYER_HIDDEN = 12  # × hidden size (norms, q/k/v/o, RoPE, residuals, LoRA)
ACT_FLOATS_PER_TOKEN_LAYER_INTER = 4  # × intermediate size (gate, up, act, product)
LOGIT_COPIES = 3  # logits, their softmax in backward, the gradient
