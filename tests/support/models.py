"""Test models: the tiny random model with weights large enough that outputs depend on the
context (the stock init repeats one token, so greedy equality would prove nothing)."""

from __future__ import annotations


def peaky_model(model_dir, frozen: bool = False):
    """The tiny model at ``model_dir``, eval mode, non-norm weights redrawn from N(0, 0.3²)
    under seed 1; ``frozen``: no parameter requires grad (the engine then runs its lean
    forward, :mod:`tracec.llm.lean`)."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" not in name:
                p.normal_(0.0, 0.3)
    return model.requires_grad_(False) if frozen else model
