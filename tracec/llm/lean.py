"""A lean forward of a frozen Llama-family model for the engine: the same arithmetic as
transformers' ``LlamaForCausalLM`` with less around it.

* **Fused projections.** Each layer's q/k/v weights are one ``[(H + 2 Hkv) D, hidden]`` matrix
  and gate/up one ``[2 I, hidden]``, concatenated once (:func:`fuse`): a decode step streams each
  layer's weights in 3 matrix-vector products instead of 7. The model's own ``q_proj.weight`` …
  become views of the fused storage, so the model keeps working unchanged and no weight is held
  twice.
* **A static KV cache.** Keys/values are written into the engine's preallocated per-layer
  buffers; no cache object, no ``torch.cat``.
* **The last position only** goes through the final norm and the lm_head.
* **Less Python per layer**: plain tensor ops, no module calls (but the input embedding's, so
  its hooks run), hooks or mask construction;
  attention is :func:`tracec.llm.split_attention.attend` over the forward's
  :class:`~tracec.llm.split_attention.SplitState` (rows' masks, shared prefixes).

* **LoRA adapters** (a peft model, e.g. the GRPO policy during its rollouts): each adapted
  projection adds ``lora_B(lora_A(x)) * scaling`` of its active adapters to its slice of the
  fused output, as peft's ``lora.Linear`` adds it to the base layer's; the adapter weights are
  read at every forward, so an optimiser step or ``set_adapter`` shows at the next one, and
  ``disable_adapter()`` or a merged adapter adds nothing, as in peft.

Used only where it computes what the model computes (:func:`eligible`): a plain
``LlamaForCausalLM``, alone or under peft with plain LoRA (no DoRA or other variant, no LoRA
bias) on the seven projections only; no projection biases, SiLU MLP, every base parameter
frozen, no module with a forward hook or a forward of its own. A model in training mode with
LoRA dropout, or one that gets a hook later (a composed model's router), takes transformers'
forward. The rotary embedding is the model's own module, so any RoPE scaling
carries over.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from transformers.models.llama.modeling_llama import rotate_half

from tracec.llm.split_attention import SplitState, attend

PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass
class _Lora:
    """A LoRA-wrapped projection and the columns ``[lo, hi)`` of the fused output it feeds."""

    module: Any  # peft's lora.Linear
    lo: int
    hi: int


@dataclass
class _Layer:
    norm_in: torch.Tensor
    qkv: torch.Tensor  # [(H + 2 Hkv) D, hidden]
    o: torch.Tensor
    norm_post: torch.Tensor
    gate_up: torch.Tensor  # [2 I, hidden]
    down: torch.Tensor
    eps: float
    lora_qkv: list[_Lora]
    lora_o: list[_Lora]
    lora_gate_up: list[_Lora]
    lora_down: list[_Lora]


def base_model(model: Any) -> Any:
    """The transformers model under a peft wrapper (the model itself without one)."""
    return model.get_base_model() if hasattr(model, "peft_config") else model


def _is_lora(module: Any) -> bool:
    return hasattr(module, "lora_A") and hasattr(module, "base_layer")


def _plain_lora(module: Any) -> bool:
    """A peft ``lora.Linear`` whose every adapter is vanilla LoRA without a bias."""
    if type(module).__name__ != "Linear" or not _is_lora(module):
        return False
    if getattr(module, "lora_variant", None) or any(getattr(module, "use_dora", {}).values()):
        return False
    if any(getattr(module, "lora_bias", {}).values()):
        return False
    return type(module.base_layer).__name__ == "Linear"


def intercepted(modules: list[Any]) -> bool:
    """Whether any of ``modules`` has a forward hook or a forward of its own (a composed
    model's router, accelerate's offload hooks): the lean forward would skip them."""
    return any(m._forward_hooks or m._forward_pre_hooks or "forward" in vars(m) for m in modules)


def skipped_modules(model: Any) -> list[Any]:
    """The modules whose forward the lean forward does not call: all but the input embedding
    (which it calls, hooks and all: gradient checkpointing leaves one there)."""
    embed = base_model(model).model.embed_tokens
    return [m for m in model.modules() if m is not embed]


def eligible(model: Any) -> bool:
    """Whether :class:`LeanLlama` computes what ``model`` computes (see the module doc)."""
    base = base_model(model)
    if type(base).__name__ != "LlamaForCausalLM" or intercepted(skipped_modules(model)):
        return False
    cfg = base.config
    if getattr(cfg, "attention_bias", False) or getattr(cfg, "mlp_bias", False):
        return False
    if getattr(cfg, "hidden_act", "silu") != "silu" or getattr(cfg, "pretraining_tp", 1) != 1:
        return False
    for name, module in base.named_modules():
        adapted = _is_lora(module) or hasattr(module, "modules_to_save")
        if adapted and not (name.rsplit(".", 1)[-1] in PROJECTIONS and _plain_lora(module)):
            return False  # an adapter elsewhere (embeddings, lm_head, a saved copy) or of a variant
    return not any(p.requires_grad for n, p in base.named_parameters()
                   if ".lora_A." not in n and ".lora_B." not in n)


def _weight_module(module: Any) -> Any:
    """The linear layer that holds a projection's weight (a LoRA wrapper's base layer)."""
    return module.base_layer if _is_lora(module) else module


def fuse(modules: list[Any]) -> torch.Tensor:
    """One ``[Σ out, in]`` weight of linear ``modules`` (a LoRA wrapper: its base layer); each
    module's weight becomes a view of its rows (same values, one copy in memory)."""
    layers = [_weight_module(m) for m in modules]
    fused = torch.cat([m.weight.detach() for m in layers], dim=0)
    lo = 0
    for m in layers:
        n = m.weight.shape[0]
        m.weight = torch.nn.Parameter(fused[lo: lo + n], requires_grad=False)
        lo += n
    return fused


def _loras(modules: list[Any]) -> list[_Lora]:
    """The LoRA-wrapped ``modules`` with their columns of the fused output."""
    out, lo = [], 0
    for m in modules:
        n = _weight_module(m).weight.shape[0]
        if _is_lora(m):
            out.append(_Lora(m, lo, lo + n))
        lo += n
    return out


def _add_lora(y: torch.Tensor, x: torch.Tensor, loras: list[_Lora]) -> torch.Tensor:
    """``y`` (a fused projection of ``x``) plus each active adapter's ``B(A(x)) * scaling`` on
    its columns, in peft's order (dropout is the identity: see :meth:`LeanLlama.applies`)."""
    for lora in loras:
        m = lora.module
        if m.disable_adapters or m.merged:
            continue
        for name in m.active_adapters:
            if name not in m.lora_A:
                continue
            a, b = m.lora_A[name].weight, m.lora_B[name].weight
            delta = F.linear(F.linear(x.to(a.dtype), a), b) * m.scaling[name]
            if lora.lo == 0 and lora.hi == y.shape[-1]:
                y = y + delta
            else:
                y[..., lora.lo: lora.hi] = y[..., lora.lo: lora.hi] + delta
    return y


def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """``LlamaRMSNorm`` op for op."""
    dtype = x.dtype
    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return weight * h.to(dtype)


_BUILT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> its LeanLlama


def lean_forward(model: Any) -> LeanLlama:
    """The model's :class:`LeanLlama`, built (and its projections fused) once: every engine over
    the same model shares it, so a second engine does not re-fuse the weights under the first."""
    got = _BUILT.get(model)
    if got is None or not got.current():
        got = _BUILT[model] = LeanLlama(model)
    return got


class LeanLlama:
    """The forward of a frozen ``LlamaForCausalLM`` over per-layer KV buffers (see the module
    doc). Building it fuses the model's projections in place (values unchanged); engines get it
    through :func:`lean_forward`."""

    def __init__(self, model: Any) -> None:
        self.model = model
        model = base_model(model)
        cfg = model.config
        inner = model.model
        self.heads = cfg.num_attention_heads
        self.kv_heads = cfg.num_key_value_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // self.heads
        self.scale = inner.layers[0].self_attn.scaling
        self.embed = inner.embed_tokens.weight
        self.embed_tokens = inner.embed_tokens
        self.rotary = inner.rotary_emb
        self.layers = []
        for block in inner.layers:
            att, mlp = block.self_attn, block.mlp
            qkv, gate_up = [att.q_proj, att.k_proj, att.v_proj], [mlp.gate_proj, mlp.up_proj]
            self.layers.append(_Layer(
                block.input_layernorm.weight, fuse(qkv), _weight_module(att.o_proj).weight,
                block.post_attention_layernorm.weight, fuse(gate_up),
                _weight_module(mlp.down_proj).weight, block.input_layernorm.variance_epsilon,
                _loras(qkv), _loras([att.o_proj]), _loras(gate_up), _loras([mlp.down_proj])))
        self._modules = skipped_modules(self.model)  # where a hook added later would be skipped
        self.dropout = any(isinstance(d, torch.nn.Dropout) and d.p > 0
                           for lora in self._all_loras() for d in lora.module.lora_dropout.values())
        self.norm, self.norm_eps = inner.norm.weight, inner.norm.variance_epsilon
        self.head = model.lm_head.weight
        self._qk = (self.heads + self.kv_heads) * self.head_dim  # q and k columns of qkv

    def _all_loras(self) -> list[_Lora]:
        return [lo for layer in self.layers
                for lo in layer.lora_qkv + layer.lora_o + layer.lora_gate_up + layer.lora_down]

    def current(self) -> bool:
        """Whether the model still uses the fused weights (a rebound parameter would not)."""
        att = base_model(self.model).model.layers[0].self_attn
        return _weight_module(att.q_proj).weight.data_ptr() == self.layers[0].qkv.data_ptr()

    def applies(self) -> bool:
        """Whether this forward computes the model's now: not while LoRA dropout is active
        (a model in training mode with dropout > 0 draws random masks), nor once a module has
        a hook or a forward of its own (~0.5 ms to look over a LoRA-wrapped 135M model)."""
        return not (self.dropout and self.model.training) and not intercepted(self._modules)

    def kv_layout(self) -> tuple[int, int, int, torch.dtype]:
        """``(layers, kv heads, head dim, dtype)`` of the KV buffers."""
        return len(self.layers), self.kv_heads, self.head_dim, self.embed.dtype

    def forward(self, ids: torch.Tensor, pos: torch.Tensor, keys: list[torch.Tensor],
                values: list[torch.Tensor], cached: int, state: SplitState) -> torch.Tensor:
        """Next-token logits ``[B, V]`` after ``ids`` ``[B, q]`` at RoPE positions ``pos``; row
        ``b``'s keys/values are written into ``keys[i][b, :, cached: cached + q]`` and attention
        reads columns ``[0, cached + q)`` as ``state`` allows."""
        b, q = ids.shape
        x = self.embed_tokens(ids)
        cos, sin = self.rotary(x, pos)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        h_, kv_, d = self.heads, self.kv_heads, self.head_dim
        end = cached + q
        for i, layer in enumerate(self.layers):
            normed = _rms(x, layer.norm_in, layer.eps)
            qkv = F.linear(normed, layer.qkv)
            if layer.lora_qkv:
                qkv = _add_lora(qkv, normed, layer.lora_qkv)
            # RoPE on the queries and keys at once: apply_rotary_pos_emb's ops, element for element
            qk = qkv[..., :self._qk].view(b, q, h_ + kv_, d).transpose(1, 2)
            qk = qk * cos + rotate_half(qk) * sin
            keys[i][:, :, cached:end] = qk[:, h_:]
            values[i][:, :, cached:end] = qkv[..., self._qk:].view(b, q, kv_, d).transpose(1, 2)
            out = attend(state, i, qk[:, :h_], keys[i][:, :, :end], values[i][:, :, :end], self.scale)
            out = out.reshape(b, q, h_ * d)
            o = F.linear(out, layer.o)
            x = x + (_add_lora(o, out, layer.lora_o) if layer.lora_o else o)
            normed = _rms(x, layer.norm_post, layer.eps)
            gate_up = F.linear(normed, layer.gate_up)
            if layer.lora_gate_up:
                gate_up = _add_lora(gate_up, normed, layer.lora_gate_up)
            gate, up = gate_up.chunk(2, -1)
            act = F.silu(gate) * up
            down = F.linear(act, layer.down)
            x = x + (_add_lora(down, act, layer.lora_down) if layer.lora_down else down)
        return F.linear(_rms(x[:, -1], self.norm, self.norm_eps), self.head)
