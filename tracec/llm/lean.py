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
* **Less Python per layer**: plain tensor ops, no module calls, hooks or mask construction;
  attention is :func:`tracec.llm.split_attention.attend` over the forward's
  :class:`~tracec.llm.split_attention.SplitState` (rows' masks, shared prefixes).

Used only where it computes what the model computes: a plain ``LlamaForCausalLM`` (no
adapter: a peft model, whose LoRA layers sit between these weights, takes transformers'
forward), no projection biases, SiLU MLP, every parameter frozen. The rotary embedding is the
model's own module, so any RoPE scaling carries over.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from transformers.models.llama.modeling_llama import rotate_half

from tracec.llm.split_attention import SplitState, attend


@dataclass
class _Layer:
    norm_in: torch.Tensor
    qkv: torch.Tensor  # [(H + 2 Hkv) D, hidden]
    o: torch.Tensor
    norm_post: torch.Tensor
    gate_up: torch.Tensor  # [2 I, hidden]
    down: torch.Tensor
    eps: float


def eligible(model: Any) -> bool:
    """Whether :class:`LeanLlama` computes what ``model`` computes (see the module doc)."""
    if type(model).__name__ != "LlamaForCausalLM" or hasattr(model, "peft_config"):
        return False
    cfg = model.config
    if getattr(cfg, "attention_bias", False) or getattr(cfg, "mlp_bias", False):
        return False
    if getattr(cfg, "hidden_act", "silu") != "silu" or getattr(cfg, "pretraining_tp", 1) != 1:
        return False
    return not any(p.requires_grad for p in model.parameters())


def fuse(modules: list[Any]) -> torch.Tensor:
    """One ``[Σ out, in]`` weight of linear ``modules``; each module's weight becomes a view of
    its rows (same values, one copy in memory)."""
    fused = torch.cat([m.weight.detach() for m in modules], dim=0)
    lo = 0
    for m in modules:
        n = m.weight.shape[0]
        m.weight = torch.nn.Parameter(fused[lo: lo + n], requires_grad=False)
        lo += n
    return fused


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
        cfg = model.config
        inner = model.model
        self.model = model
        self.heads = cfg.num_attention_heads
        self.kv_heads = cfg.num_key_value_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // self.heads
        self.scale = inner.layers[0].self_attn.scaling
        self.embed = inner.embed_tokens.weight
        self.rotary = inner.rotary_emb
        self.layers = []
        for block in inner.layers:
            att, mlp = block.self_attn, block.mlp
            self.layers.append(_Layer(
                block.input_layernorm.weight, fuse([att.q_proj, att.k_proj, att.v_proj]),
                att.o_proj.weight, block.post_attention_layernorm.weight,
                fuse([mlp.gate_proj, mlp.up_proj]), mlp.down_proj.weight,
                block.input_layernorm.variance_epsilon))
        self.norm, self.norm_eps = inner.norm.weight, inner.norm.variance_epsilon
        self.head = model.lm_head.weight
        self._qk = (self.heads + self.kv_heads) * self.head_dim  # q and k columns of qkv

    def current(self) -> bool:
        """Whether the model still uses the fused weights (a rebound parameter would not)."""
        att = self.model.model.layers[0].self_attn
        return att.q_proj.weight.data_ptr() == self.layers[0].qkv.data_ptr()

    def kv_layout(self) -> tuple[int, int, int, torch.dtype]:
        """``(layers, kv heads, head dim, dtype)`` of the KV buffers."""
        return len(self.layers), self.kv_heads, self.head_dim, self.embed.dtype

    def forward(self, ids: torch.Tensor, pos: torch.Tensor, keys: list[torch.Tensor],
                values: list[torch.Tensor], cached: int, state: SplitState) -> torch.Tensor:
        """Next-token logits ``[B, V]`` after ``ids`` ``[B, q]`` at RoPE positions ``pos``; row
        ``b``'s keys/values are written into ``keys[i][b, :, cached: cached + q]`` and attention
        reads columns ``[0, cached + q)`` as ``state`` allows."""
        b, q = ids.shape
        x = F.embedding(ids, self.embed)
        cos, sin = self.rotary(x, pos)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        h_, kv_, d = self.heads, self.kv_heads, self.head_dim
        end = cached + q
        for i, layer in enumerate(self.layers):
            qkv = F.linear(_rms(x, layer.norm_in, layer.eps), layer.qkv)
            # RoPE on the queries and keys at once: apply_rotary_pos_emb's ops, element for element
            qk = qkv[..., :self._qk].view(b, q, h_ + kv_, d).transpose(1, 2)
            qk = qk * cos + rotate_half(qk) * sin
            keys[i][:, :, cached:end] = qk[:, h_:]
            values[i][:, :, cached:end] = qkv[..., self._qk:].view(b, q, kv_, d).transpose(1, 2)
            out = attend(state, i, qk[:, :h_], keys[i][:, :, :end], values[i][:, :, :end], self.scale)
            x = x + F.linear(out.reshape(b, q, h_ * d), layer.o)
            gate, up = F.linear(_rms(x, layer.norm_post, layer.eps), layer.gate_up).chunk(2, -1)
            x = x + F.linear(F.silu(gate) * up, layer.down)
        return F.linear(_rms(x[:, -1], self.norm, self.norm_eps), self.head)
