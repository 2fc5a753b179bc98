"""The lean Llama forward: fused projections that share the model's storage, logits equal to
transformers' forward to float32 rounding (within 1e-4 on logits of size ~5: the attention
kernel sums in another order than SDPA's; greedy tokens equal ``generate``,
tests/llm/test_engine.py), used only for a frozen plain Llama model."""

from __future__ import annotations

import pytest
import torch
from transformers.cache_utils import DynamicCache

from tests.support.models import peaky_model
from tracec.llm.engine import KVEngine
from tracec.llm.lean import LeanLlama, eligible
from tracec.llm.split_attention import SplitState


@pytest.fixture()
def frozen(tiny_model_dir):
    return peaky_model(tiny_model_dir, frozen=True)


def test_fusing_keeps_one_copy_of_the_weights_and_the_models_outputs(frozen):
    ids = torch.randint(5, frozen.config.vocab_size, (2, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        before = frozen(input_ids=ids).logits
        lean = LeanLlama(frozen)
        after = frozen(input_ids=ids).logits
    assert torch.equal(before, after)
    att = frozen.model.layers[0].self_attn
    assert att.k_proj.weight.untyped_storage().data_ptr() == lean.layers[0].qkv.untyped_storage().data_ptr()
    assert lean.current()


def test_lean_logits_equal_transformers_to_rounding_at_prefill_and_decode(frozen):
    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(5, frozen.config.vocab_size, (1, 30), generator=g)
    ref = peaky_model(frozen.config._name_or_path)  # the same weights, unfused, transformers' forward
    lean = LeanLlama(frozen)
    layers, heads, dim, _ = lean.kv_layout()
    keys = [torch.zeros(1, heads, 40, dim) for _ in range(layers)]
    values = [torch.zeros(1, heads, 40, dim) for _ in range(layers)]
    mask = torch.ones(1, 40, dtype=torch.long)
    cache = DynamicCache()
    with torch.no_grad():
        got = lean.forward(prompt, torch.arange(30)[None], keys, values, 0, SplitState(mask[:, :30], []))
        want = ref(input_ids=prompt, cache=cache, use_cache=True).logits[:, -1]
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
        n = 30
        for _ in range(5):
            tok = want.argmax(-1, keepdim=True)
            got = lean.forward(tok, torch.tensor([[n]]), keys, values, n, SplitState(mask[:, :n + 1], []))
            want = ref(input_ids=tok, cache=cache, use_cache=True).logits[:, -1]
            torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
            n += 1


def test_engines_over_one_model_share_its_fused_weights(frozen):
    """A second engine (eval's greedy check, a classifier) must not re-fuse the weights under
    the first one, which would then fall back to transformers' forward."""
    one, two = KVEngine(frozen, 0, [3]), KVEngine(frozen, 0, [3])
    assert one.executor.forward.lean is two.executor.forward.lean
    assert one.executor.forward.lean.current()


def test_only_a_frozen_plain_llama_takes_the_lean_forward(tiny_model_dir, frozen):
    trainable = peaky_model(tiny_model_dir)
    assert not eligible(trainable) and eligible(frozen)
    assert KVEngine(trainable, 0, [3]).executor.forward.lean is None
    assert KVEngine(frozen, 0, [3]).executor.forward.lean is not None
    assert KVEngine(frozen, 0, [3], lean=False).executor.forward.lean is None
    from peft import LoraConfig, get_peft_model

    adapted = get_peft_model(peaky_model(tiny_model_dir), LoraConfig(r=2, target_modules=["q_proj"]))
    adapted.requires_grad_(False)
    assert not eligible(adapted)
