"""The layers of a composed model: per-block gates, top-k routing and its auxiliary losses, and
the routed LoRA delta over peft's LoRA linear layers (frozen experts as concatenated buffers)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from tracec.compose.config import GateInit, LbOver, RouteWeighting
from tracec.compose.errors import ComposeError

# ---------------------------------------------------------------------------------------------
# gates and routing


class Gate(nn.Module):
    """A zero-initialised linear router over the RMS-normalised, detached hidden state."""

    def __init__(self, hidden_size: int, n_slots: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.proj = nn.Linear(hidden_size, n_slots)
        nn.init.zeros_(self.proj.weight)
        nn.init.zeros_(self.proj.bias)
        self.eps = eps

    def reset(self, init: GateInit = "zeros", scale: float = 0.0,
              generator: torch.Generator | None = None) -> None:
        """Zero weights, or normal weights giving logits of std ``scale`` on unit-RMS inputs."""
        with torch.no_grad():
            self.proj.bias.zero_()
            if init == "zeros" or scale == 0:
                self.proj.weight.zero_()
            else:
                std = scale / self.proj.in_features ** 0.5
                w = torch.randn(self.proj.weight.shape, generator=generator) * std
                self.proj.weight.copy_(w.to(self.proj.weight))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        h = hidden.detach().to(self.proj.weight.dtype)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.proj(h)


def route(logits: torch.Tensor, top_k: int, weighting: RouteWeighting = "st"
          ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Top-k routing: ``(probs, chosen slot indices [..., k], dense slot weights [..., S])``.

    Ties go to the lowest slot (so a zero-initialised gate picks slot 0, "no adapter").
    ``weighting="dense"`` (the warm-up): every slot weighs its probability; ``chosen`` is still
    the top-k (for statistics and load balancing).
    """
    probs = torch.softmax(logits.float(), dim=-1)
    k = min(top_k, probs.shape[-1])
    if weighting == "dense":
        idx = torch.sort(probs, dim=-1, descending=True, stable=True).indices[..., :k]
        return probs, idx, probs
    if k == 1:
        idx = torch.argmax(probs, dim=-1, keepdim=True)
        p = probs.gather(-1, idx)
        w = p if weighting == "prob" else p - p.detach() + 1.0
    else:
        idx = torch.sort(probs, dim=-1, descending=True, stable=True).indices[..., :k]
        p = probs.gather(-1, idx)
        w = p / p.sum(-1, keepdim=True)
    dense = torch.zeros_like(probs).scatter(-1, idx, w)
    return probs, idx, dense


@dataclass
class RoutingRecord:
    """What one gate did in one forward pass (kept for the auxiliary losses and statistics)."""

    logits: torch.Tensor  # [B, T, S]
    probs: torch.Tensor  # [B, T, S]
    chosen: torch.Tensor  # [B, T, k]


@dataclass
class RouterState:
    weights: list[torch.Tensor | None]
    rows: list[dict] = field(default_factory=list)
    records: list[RoutingRecord] | None = None
    force: int | list[float] | None = None
    mode: tuple[int, RouteWeighting] | None = None  # (top_k, weighting) overriding the config


def load_balancing_loss(records: list[RoutingRecord], mask: torch.Tensor | None = None,
                        over: LbOver = "experts") -> torch.Tensor:
    """Switch-Transformer load balancing, averaged over layers: ``N · Σ_i f_i · P_i``.

    ``over="experts"`` (the design): the N experts only. ``f_i``: share of the (token, choice)
    pairs routed to *an expert* that went to expert i; ``P_i``: mean of expert i's probability
    renormalised over the experts (``p_i / Σ_j p_j``, j ≥ 1). It balances the experts against
    each other and leaves "no adapter" vs "an adapter" to the cross-entropy; with no token on an
    expert it is 0 (and has no gradient). ``over="all"``: the N+1 slots, "no adapter" included
    (the earlier behaviour; it pushes tokens off the base slot towards a uniform 1/(N+1) share).
    Both over the tokens where ``mask`` is true; 1.0 when balanced.
    """
    losses = []
    for rec in records:
        m = _mask_like(rec.probs, mask)
        dispatch = torch.zeros_like(rec.probs).scatter(-1, rec.chosen, 1.0) * m
        probs = rec.probs
        tokens = m.sum().clamp_min(1.0)
        if over == "experts":
            dispatch, probs = dispatch[..., 1:], probs[..., 1:]
            probs = probs / probs.sum(-1, keepdim=True).clamp_min(1e-12)
            f = dispatch.sum((0, 1)) / dispatch.sum().clamp_min(1.0)
        else:
            f = dispatch.sum((0, 1)) / (tokens * rec.chosen.shape[-1])
        p = (probs * m).sum((0, 1)) / tokens
        losses.append(probs.shape[-1] * (f * p).sum())
    return torch.stack(losses).mean()


def z_loss(records: list[RoutingRecord], mask: torch.Tensor | None = None) -> torch.Tensor:
    """Router z-loss (ST-MoE): mean squared log-partition of the gate logits, over layers."""
    losses = []
    for rec in records:
        m = _mask_like(rec.probs, mask)[..., 0]
        z = torch.logsumexp(rec.logits.float(), dim=-1) ** 2
        losses.append((z * m).sum() / m.sum().clamp_min(1.0))
    return torch.stack(losses).mean()


def _mask_like(probs: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    if mask is None:
        return torch.ones_like(probs[..., :1])
    return mask.to(probs.dtype).unsqueeze(-1)


# ---------------------------------------------------------------------------------------------
# the routed LoRA delta on peft's LoRA linear layers


class Experts(nn.Module):
    """The concatenated, frozen A/B matrices of one LoRA linear layer (buffers, not parameters)."""

    def __init__(self, layer: Any, names: list[str]) -> None:
        super().__init__()
        a_rows, b_cols, slot, scale = [], [], [], []
        for i, name in enumerate(names):
            if name not in layer.lora_A:
                continue
            if name in getattr(layer, "lora_variant", {}):
                raise ComposeError(f"adapter {name}: LoRA variants (DoRA, …) are not supported")
            a = layer.lora_A[name].weight.detach()
            b = layer.lora_B[name].weight.detach()
            a_rows.append(a)
            b_cols.append(b)
            slot += [i + 1] * a.shape[0]
            scale += [float(layer.scaling[name])] * a.shape[0]
        a_cat = torch.cat(a_rows, 0)
        self.register_buffer("a", a_cat, persistent=False)  # [R, d_in]
        self.register_buffer("b", torch.cat(b_cols, 1), persistent=False)  # [d_out, R]
        self.register_buffer("slot", torch.tensor(slot, device=a_cat.device), persistent=False)
        self.register_buffer("scale", torch.tensor(scale, dtype=a_cat.dtype, device=a_cat.device),
                             persistent=False)
        self.key = (tuple(slot), tuple(scale))  # layers with equal keys share their row weights

    def rows(self, weights: torch.Tensor) -> torch.Tensor:
        """Per-rank-row weights ``w_slot(row) · s_row`` from slot weights ``[..., S]``."""
        return weights.to(self.a.dtype).index_select(-1, self.slot) * self.scale

    def forward(self, x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """``Σ_i w_i s_i B_i A_i x`` given :meth:`rows` (broadcast over ``x``)."""
        return ((x.to(self.a.dtype) @ self.a.T) * rows) @ self.b.T


def lora_linears(model: nn.Module) -> Iterator[tuple[str, nn.Module]]:
    from peft.tuners.lora import LoraLayer  # noqa: PLC0415 - peft loads only with a composed model

    for name, module in model.named_modules():
        if isinstance(module, LoraLayer):
            yield name, module


def decoder_layers(model: nn.Module) -> nn.ModuleList:
    """The decoder blocks of a (peft-wrapped) causal LM."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    for path in ("model.layers", "transformer.h", "gpt_neox.layers", "model.decoder.layers"):
        obj: Any = base
        for part in path.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if isinstance(obj, nn.ModuleList):
            return obj
    raise ComposeError(f"cannot find the decoder blocks of {type(base).__name__}")
