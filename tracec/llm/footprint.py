"""Measured memory constants of a decoder step under autograd, shared by GRPO training and gate
training (measured on SmolLM2-135M with torch 2.13 on CPU, benchmarks/README.md; deliberately a
little high), and the model-shape arithmetic the memory plans use: torch-free, so a plan reads a
model's ``config.json`` without loading torch."""

from __future__ import annotations

from typing import Any

GIB = 1024 ** 3
ACT_FLOATS_PER_TOKEN_LAYER_HIDDEN = 12  # × hidden size (norms, q/k/v/o, RoPE, residuals, LoRA)
ACT_FLOATS_PER_TOKEN_LAYER_INTER = 4  # × intermediate size (gate, up, act, product)
LOGIT_COPIES = 3  # logits, their softmax in backward, the gradient


def text_config(model_config: Any) -> Any:
    """The language model's part of a (possibly multimodal) transformers config."""
    return model_config.get_text_config() if hasattr(model_config, "get_text_config") else model_config


def kv_bytes_per_token(model_config: Any, dtype_bytes: int = 4) -> int:
    """Bytes of keys + values one token occupies over all layers."""
    cfg = text_config(model_config)
    heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    return 2 * cfg.num_hidden_layers * heads * head_dim * dtype_bytes
