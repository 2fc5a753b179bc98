"""Shared-prefix ("cascade") attention: the rows of a group attend to one copy of their shared
prompt's keys/values, not one copy per row.

Each batch row's cache holds only the row's own tokens (those after the shared prefix). Per
layer, attention is computed in two parts and combined exactly (up to float rounding) by their
log-sum-exp: over the group's prefix — one matrix product per group, every row's queries stacked
against the single prefix copy — and over each row's own tokens (masked: holes, causal order).

Two callers: the engine's lean Llama forward (:mod:`tracec.llm.lean`) calls :func:`attend`
with the forward's :class:`SplitState`; other models run it as a transformers attention
implementation (``tracec_split``), switched on only around the engine's forwards
(:func:`split_forward`), the state passed as the forward's ``split_state`` keyword. No module
global holds a forward's state. On CPU
in float32 both parts run torch's fused attention kernel, which returns the log-sum-exp too;
elsewhere, eager float32 ops.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward

NAME = "tracec_split"


@dataclass
class SplitState:
    """What one forward's attention needs besides its queries and the rows' own keys/values.

    ``mask``: ``[B, L]`` which own-buffer columns (after this forward's tokens are written) each
    row may attend to; ``groups``: ``(row indices, per-layer prefix keys, per-layer prefix
    values, visible)``, prefixes ``[1, Hkv, P, D]``, ``visible`` ``[rows, P]`` bool (None: all)
    for rows that use only the first positions of their prefix; rows in no group have none."""

    mask: torch.Tensor
    groups: list[tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor], torch.Tensor | None]]
    _masks: dict[tuple, torch.Tensor | None] = field(default_factory=dict)

    def own_mask(self, q: int, length: int, rep: int = 1) -> torch.Tensor:
        """``[B, 1, rep*q, L]`` bool: the row's visible own columns, causal among the ``q`` new
        ones (each query row repeated ``rep`` times, the layout of :func:`split_attention`);
        the same for every layer of a forward, so computed once."""
        key = ("own", q, length, rep)
        got = self._masks.get(key)
        if got is None:
            cols = torch.arange(length, device=self.mask.device)
            rows = torch.arange(q, device=self.mask.device) + (length - q)
            causal = cols[None, :] <= rows[:, None]  # [q, L]
            got = (self.mask[:, None, None, :length].bool() & causal[None, None]).repeat(1, 1, rep, 1)
            self._masks[key] = got
        return got

    def prefix_mask(self, group: int, q: int, rep: int) -> torch.Tensor | None:
        """``[1, 1, n*rep*q, P]`` bool for group ``group``'s rows that see only the first
        positions of their prefix (None: every row sees all of it), rows in stacking order."""
        key = ("prefix", group, q, rep)
        if key not in self._masks:
            visible = self.groups[group][3]
            got = None
            if visible is not None:
                n, p = visible.shape
                got = visible[:, None, :].expand(n, rep * q, p).reshape(1, 1, -1, p)
            self._masks[key] = got
        return self._masks[key]

    def additive(self, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(0/-inf float mask, rows that see nothing)`` of a bool mask, computed once."""
        key = ("additive", id(mask))
        got = self._masks.get(key)
        if got is None:
            bias = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device)
            got = (bias.masked_fill_(~mask, float("-inf")), ~mask.any(-1))
            self._masks[key] = got
        return got


# torch's fused CPU attention that also returns the log-sum-exp (5x the eager ops at prefill)
_FUSED = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)


def _attend(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None,
            scaling: float, state: SplitState | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(output, log-sum-exp)`` of attention in float32; rows that see nothing give 0, -inf.
    Float32 CPU tensors go through torch's fused kernel (``state`` caches the float mask)."""
    if (_FUSED is not None and state is not None and query.device.type == "cpu"
            and query.dtype == key.dtype == value.dtype == torch.float32):
        bias, blind = state.additive(mask) if mask is not None else (None, None)
        out, lse = _FUSED(query.contiguous(), key, value, 0.0, False, attn_mask=bias, scale=scaling)
        return out, lse if blind is None else lse.masked_fill(blind, float("-inf"))
    scores = torch.matmul(query.float(), key.float().transpose(-1, -2)) * scaling
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    probs = torch.exp(scores - lse.unsqueeze(-1)).nan_to_num_(0.0)
    return torch.matmul(probs, value.float()), lse


def split_attention(module, query, key, value, attention_mask, dropout: float = 0.0,
                    scaling: float | None = None, **kwargs):
    """The attention function (transformers' signature): ``query [B, H, q, D]``, the rows' own
    ``key``/``value`` ``[B, Hkv, L, D]``; returns ``([B, q, H, D], None)``. The forward's
    :class:`SplitState` comes as the model call's ``split_state`` keyword (transformers hands
    its keywords down to the attention); a forward without one runs torch's SDPA."""
    state = kwargs.pop("split_state", None)
    if state is None:  # a forward outside the engine: the model's own implementation
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, **kwargs)
    return attend(state, module.layer_idx, query, key, value, scaling), None


def attend(state: SplitState, layer: int, query: torch.Tensor, key: torch.Tensor,
           value: torch.Tensor, scaling: float | None = None) -> torch.Tensor:
    """Attention of ``query [B, H, q, D]`` over the rows' own ``key``/``value``
    ``[B, Hkv, L, D]`` (``state.mask``) and their groups' shared prefixes at layer ``layer``:
    ``[B, q, H, D]``."""
    b, h, q, d = query.shape
    hkv, length = key.shape[1], key.shape[2]
    rep = h // hkv
    scale = scaling if scaling is not None else d ** -0.5
    qv = query.reshape(b, hkv, rep * q, d)  # head kv*rep + r serves kv head kv (repeat_kv order)
    mask = state.own_mask(q, length, rep)  # [B, 1, rep*q, L]
    out, lse = _attend(qv, key, value, mask, scale, state)
    for g, (rows, pkeys, pvalues, _) in enumerate(state.groups):
        n = len(rows)
        qg = qv[rows].transpose(0, 1).reshape(1, hkv, n * rep * q, d)  # every row's queries stacked
        po, plse = _attend(qg, pkeys[layer], pvalues[layer], state.prefix_mask(g, q, rep), scale, state)
        po = po.reshape(hkv, n, rep * q, d).transpose(0, 1)
        plse = plse.reshape(hkv, n, rep * q).transpose(0, 1)
        olse = lse[rows]
        total = torch.logaddexp(olse, plse)
        w_own = torch.exp(olse - total).nan_to_num_(0.0).unsqueeze(-1)
        w_pre = torch.exp(plse - total).nan_to_num_(0.0).unsqueeze(-1)
        out[rows] = w_own * out[rows] + w_pre * po
    return out.to(query.dtype).reshape(b, h, q, d).transpose(1, 2).contiguous()


def supported(model) -> bool:
    """Whether the model's attention runs through transformers' attention interface."""
    cfg = getattr(model, "config", None)
    impl = getattr(cfg, "_attn_implementation", None)
    return impl in ("sdpa", "eager", NAME)


@contextlib.contextmanager
def split_forward(model) -> Iterator[None]:
    """Run the transformers forwards inside through :func:`split_attention` (each forward then
    passes its :class:`SplitState` as ``split_state=``), switched with transformers' public
    ``set_attn_implementation`` and switched back after."""
    AttentionInterface.register(NAME, split_attention)  # idempotent
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    previous = base.config._attn_implementation
    base.set_attn_implementation(NAME)
    try:
        yield
    finally:
        base.set_attn_implementation(previous)
