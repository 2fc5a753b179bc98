"""The lean Llama forward: fused projections that share the model's storage, logits equal to
transformers' forward to float32 rounding (within 1e-4 on logits of size ~5: the attention
kernel sums in another order than SDPA's; greedy tokens equal ``generate``,
tests/llm/test_engine.py), used only for a frozen plain Llama model, alone or with plain LoRA adapters (peft)."""

from __future__ import annotations

import pytest
import torch
from transformers.cache_utils import DynamicCache

from tests.support.models import peaky_model
from tracec.llm.engine import KVEngine
from tracec.llm.executor import cache_kwarg
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


def _lean_vs_reference(lean_model, ref_model, prompt_len=25, seed=3, steps=6):
    """The lean forward of ``lean_model`` against ``ref_model``'s own forward (same weights),
    logits within 1e-4 at the prefill and at each of ``steps`` greedy decode steps."""
    g = torch.Generator().manual_seed(seed)
    prompt = torch.randint(5, ref_model.config.vocab_size, (1, prompt_len), generator=g)
    lean = LeanLlama(lean_model)
    layers, heads, dim, _ = lean.kv_layout()
    cap = prompt_len + steps + 1
    keys = [torch.zeros(1, heads, cap, dim) for _ in range(layers)]
    values = [torch.zeros(1, heads, cap, dim) for _ in range(layers)]
    mask = torch.ones(1, cap, dtype=torch.long)
    kw = {cache_kwarg(ref_model): DynamicCache()}
    with torch.no_grad():
        n = prompt_len
        got = lean.forward(prompt, torch.arange(n)[None], keys, values, 0, SplitState(mask[:, :n], []))
        want = ref_model(input_ids=prompt, use_cache=True, **kw).logits[:, -1]
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
        for _ in range(steps):
            tok = want.argmax(-1, keepdim=True)
            got = lean.forward(tok, torch.tensor([[n]]), keys, values, n, SplitState(mask[:, :n + 1], []))
            want = ref_model(input_ids=tok, use_cache=True, **kw).logits[:, -1]
            torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
            n += 1


def test_lean_logits_equal_transformers_to_rounding_at_prefill_and_decode(frozen):
    ref = peaky_model(frozen.config._name_or_path)  # the same weights, unfused, transformers' forward
    _lean_vs_reference(frozen, ref, prompt_len=30, seed=1, steps=5)


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


ALL = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _adapted(model_dir, targets=ALL, dropout=0.0, name="default", into=None, **extra):
    """peft LoRA on ``targets`` with lora_B drawn at random (peft starts it at 0, which would
    make every adapter a no-op and the test vacuous)."""
    from peft import LoraConfig, get_peft_model

    cfg = LoraConfig(r=4, lora_alpha=8, target_modules=targets, lora_dropout=dropout, **extra)
    torch.manual_seed(len(name))  # lora_A's init: the same for a model and its reference
    model = into if into is not None else get_peft_model(peaky_model(model_dir), cfg, adapter_name=name)
    if into is not None:
        model.add_adapter(name, cfg)
    torch.manual_seed(len(name) + 1)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if f"lora_B.{name}." in n:
                p.normal_(0.0, 0.2)
    return model.eval()


def test_which_lora_models_take_the_lean_forward(tiny_model_dir):
    assert eligible(_adapted(tiny_model_dir))  # LoRA weights trainable, the base frozen: the GRPO policy
    assert eligible(_adapted(tiny_model_dir, targets=["q_proj", "down_proj"]))
    assert not eligible(_adapted(tiny_model_dir, targets=["q_proj", "lm_head"]))
    assert not eligible(_adapted(tiny_model_dir, targets=["q_proj"], use_dora=True))
    assert not eligible(_adapted(tiny_model_dir, targets=["q_proj"], modules_to_save=["lm_head"]))
    unfrozen = _adapted(tiny_model_dir, targets=["q_proj"])
    unfrozen.get_base_model().model.norm.weight.requires_grad_(True)
    assert not eligible(unfrozen)


def test_lean_lora_logits_equal_peft_and_follow_the_adapters_state(tiny_model_dir):
    """Each adapted projection adds B(A(x))·scaling to its slice of the fused output, read at
    every forward: an optimiser step, another active adapter, ``disable_adapter`` all show."""
    model = _adapted(tiny_model_dir)
    ref = _adapted(tiny_model_dir)  # the same weights, unfused, peft's forward
    with torch.no_grad():
        adapted_logits = ref(input_ids=torch.tensor([[5, 6, 7]])).logits
        with ref.disable_adapter():
            base_logits = ref(input_ids=torch.tensor([[5, 6, 7]])).logits
    assert not torch.allclose(base_logits, adapted_logits, atol=1e-3)  # the adapter matters
    _lean_vs_reference(model, ref)
    with torch.no_grad():  # an optimiser step on both
        for m in (model, ref):
            for n, p in m.named_parameters():
                if "lora_A" in n:
                    p.mul_(1.5)
    _lean_vs_reference(model, ref)
    with model.disable_adapter(), ref.disable_adapter():
        _lean_vs_reference(model, ref)
    for m in (model, ref):
        _adapted(tiny_model_dir, targets=["v_proj", "up_proj"], name="second", into=m)
        m.set_adapter("second")
    _lean_vs_reference(model, ref)


def test_engine_greedy_tokens_with_lora_equal_transformers_forward(tiny_model_dir):
    model = _adapted(tiny_model_dir)
    prompt = list(range(5, 40))
    fast = KVEngine(model, 0, [])
    assert fast.executor.forward.lean is not None
    assert fast.complete([prompt], 12, 0.0, 0) == KVEngine(model, 0, [], lean=False).complete([prompt], 12, 0.0, 0)


def test_lora_dropout_in_training_mode_takes_transformers_forward(tiny_model_dir):
    model = _adapted(tiny_model_dir, dropout=0.1)
    forward = KVEngine(model, 0, []).executor.forward
    assert forward._lean() is not None  # eval mode: dropout is the identity
    model.train()
    assert forward._lean() is None


def test_a_hooked_model_takes_transformers_forward(tiny_model_dir):
    """A composed model routes through hooks on the LoRA layers: the lean forward would skip
    them, so neither a hooked model nor one hooked after its engine was built uses it."""
    model = _adapted(tiny_model_dir)
    forward = KVEngine(model, 0, []).executor.forward
    layer = model.get_base_model().model.layers[0].self_attn.q_proj
    handle = layer.register_forward_hook(lambda _m, _a, out: out * 2)
    assert forward._lean() is None and not eligible(model)
    handle.remove()
    assert forward._lean() is not None and eligible(model)


def test_gradient_checkpointing_leaves_the_lean_forward_on(tiny_model_dir):
    """Turning checkpointing on for an update leaves a hook on the input embedding (transformers'
    ``enable_input_require_grads``); the lean forward calls that module, so the GRPO policy's
    rollouts keep it, with the same logits."""
    from tracec.train.grpo import set_checkpointing

    model, ref = _adapted(tiny_model_dir), _adapted(tiny_model_dir)
    set_checkpointing(model, True)
    set_checkpointing(model, False)
    assert model.get_base_model().model.embed_tokens._forward_hooks  # the hook stays
    assert eligible(model)
    _lean_vs_reference(model, ref)
