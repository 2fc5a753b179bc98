"""A token-routed mixture of frozen LoRA experts (TRACE capability composition).

The base model and N capability adapters are loaded through peft and frozen. Every decoder block
gets a gate over its (detached, RMS-normalised) input hidden state with N+1 slots: slot 0 is
"no adapter", slot i>0 is adapter i-1. Gates are zero-initialised, so at start every token ties
and goes to slot 0 (the composed model equals the base model); gate training starts with a
short dense warm-up (or another measured option, see ``moe_train``) so the experts get a
gradient. Each LoRA linear layer of that block then outputs ``base(x) + Σ_i w_i · s_i · B_i A_i x`` over the selected experts, computed as
two matmuls over the concatenated ranks (the cost of one adapter of rank Σ r_i).

Top-k routing: k=1 uses straight-through weights (forward value 1, gradient of the gate
probability) or the raw probability (``weighting="prob"``); k>1 renormalises the top-k
probabilities. Routing is per token, so it works with the KV cache and batched generation.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file
from torch import nn
from torch.utils.checkpoint import checkpoint

from tracec.compose.config import (
    FORMAT,
    NONE_SLOT,
    AdapterRef,
    GateInit,
    GateSpec,
    MoeConfig,
    RouteWeighting,
    Weighting,
    check_adapter_config,
    describe_adapter,
    versions,
)
from tracec.compose.errors import ComposeError
from tracec.compose.layer import (
    Experts,
    Gate,
    RouterState,
    RoutingRecord,
    decoder_layers,
    lora_linears,
    route,
)
from tracec.llm.adapters import check_base_model
from tracec.llm.chat import decode_completion, render_prompt, stop_token_ids
from tracec.llm.device import AS_SAVED, Placement
from tracec.llm.engine import KVEngine
from tracec.llm.kvcache import PrefixCache
from tracec.llm.loading import attach_adapters, load_model, load_tokenizer, resolve_model

# ---------------------------------------------------------------------------------------------
# the composed model


def expert_names(n: int) -> list[str]:
    """The peft adapter names of ``n`` experts: ``e0``, ``e1``, …"""
    return [f"e{i}" for i in range(n)]


class ComposedModel(nn.Module):
    """Base model + frozen LoRA experts + trainable per-block gates."""

    def __init__(self, peft_model: nn.Module, config: MoeConfig, tokenizer: Any = None) -> None:
        super().__init__()
        self.model = peft_model
        self.config = config
        self.tokenizer = tokenizer
        self.stop_ids: list[int] = []
        # routing mode -> fn(model, conversations, tools, max_new_tokens, temperature, seed)
        self.routers: dict[str, Callable[..., list[str]]] = {}
        names = expert_names(len(config.adapters))
        layers = decoder_layers(peft_model)
        n_slots = len(names) + 1
        hidden = config.gate.hidden_size
        self.gates = nn.ModuleList(Gate(hidden, n_slots) for _ in layers)
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.model.eval()
        self._state = RouterState(weights=[None] * len(layers), rows=[{} for _ in layers])
        self._handles = []
        self._layers = list(layers)
        self._checkpointing = False
        self._merged: list[tuple[torch.Tensor, torch.Tensor]] | None = None
        self._merge_key: tuple[float, ...] | None = None
        self._merge_backups: dict[str, torch.Tensor] = {}  # the adapted weights while merged
        self._prefix_cache: Any = None  # shared-prompt KV of generate_tokenwise (fixed routings)
        layer_index = {id(m): i for i, m in enumerate(layers)}
        for li, layer in enumerate(layers):
            self._handles.append(layer.register_forward_pre_hook(self._make_gate_hook(li), with_kwargs=True))
            for _, m in layer.named_modules():
                layer_index.setdefault(id(m), li)
        self.experts = nn.ModuleDict()
        self._layer_experts: dict[int, dict[tuple, Experts]] = {}
        for name, module in lora_linears(peft_model):
            if not isinstance(module, nn.Module) or not hasattr(module, "lora_A"):
                continue
            if not any(n in module.lora_A for n in names):
                if any(n in getattr(module, "lora_embedding_A", {}) for n in names):
                    raise ComposeError(f"LoRA on embeddings ({name}) is not supported")
                continue
            if id(module) not in layer_index:
                raise ComposeError(f"LoRA module {name} lies outside the decoder blocks; not supported")
            if type(module).__name__ != "Linear":
                raise ComposeError(f"LoRA module {name} is a {type(module).__name__}; only Linear is supported")
            experts = Experts(module, names)
            experts.__dict__["target"] = module.base_layer  # the Linear a merge writes into (not a submodule)
            module.enable_adapters(False)  # peft runs the base layer only; our hook adds the delta
            self.experts[name.replace(".", "__")] = experts
            self._layer_experts.setdefault(layer_index[id(module)], {}).setdefault(experts.key, experts)
            self._handles.append(module.register_forward_hook(self._make_lora_hook(layer_index[id(module)], experts)))
        if not len(self.experts):
            raise ComposeError("the adapters have no LoRA linear layers")

    # -- hooks ---------------------------------------------------------------------------------
    def _make_gate_hook(self, li: int):
        def hook(module: nn.Module, args: tuple, kwargs: dict):
            hidden = args[0] if args else kwargs["hidden_states"]
            state = self._state
            if state.force is not None:
                s = len(self.config.slots)
                w = torch.zeros(s, dtype=torch.float32, device=hidden.device)
                if isinstance(state.force, int):
                    w[state.force] = 1.0
                else:
                    w = torch.tensor(state.force, dtype=torch.float32, device=hidden.device)
                state.weights[li] = w.expand(*hidden.shape[:-1], s)
                state.rows[li] = self._rows(li, state.weights[li])
                return
            logits = self.gates[li](hidden)
            top_k, weighting = state.mode or (self.config.top_k, self.config.weighting)
            probs, chosen, dense = route(logits, top_k, weighting)
            state.weights[li] = dense
            state.rows[li] = self._rows(li, dense)
            if state.records is not None:
                state.records.append(RoutingRecord(logits, probs, chosen))
            return

        return hook

    def _rows(self, li: int, weights: torch.Tensor) -> dict:
        """Per-rank-row weights of every distinct expert layout in block ``li``.

        Computed in the gate's pre-hook, outside a checkpointed block forward, so a recompute in
        backward saves exactly the tensors the first forward saved.
        """
        if self._state.force == 0:
            return {}
        return {key: ex.rows(weights) for key, ex in self._layer_experts.get(li, {}).items()}

    def _make_lora_hook(self, li: int, experts: Experts):
        def hook(module: nn.Module, args: tuple, output: torch.Tensor):
            weights = self._state.weights[li]
            if weights is None or self._state.force == 0:
                return output
            rows = self._state.rows[li][experts.key]
            return output + experts(args[0], rows).to(output.dtype)

        return hook

    # -- API -----------------------------------------------------------------------------------
    def train(self, mode: bool = True) -> ComposedModel:
        """Only the gates switch mode; the frozen model stays in eval (no dropout)."""
        self.training = mode
        self.gates.train(mode)
        self.model.eval()
        return self

    @property
    def slots(self) -> list[str]:
        return list(self.config.slots)

    def gate_parameters(self) -> list[nn.Parameter]:
        return list(self.gates.parameters())

    def init_gates(self, init: GateInit = "zeros", scale: float = 0.0, seed: int = 0) -> None:
        """Re-initialise every gate (``normal``: logits of std ``scale``; bias stays 0)."""
        gen = torch.Generator().manual_seed(seed)
        for gate in self.gates:
            gate.reset(init, scale, gen)
        gate_spec = self.config.gate.model_copy(update={"init": init, "init_scale": float(scale)})
        self.config = self.config.model_copy(update={"gate": gate_spec})

    @contextlib.contextmanager
    def routing_mode(self, top_k: int, weighting: RouteWeighting) -> Iterator[None]:
        """Route with another top-k / weighting (e.g. the dense warm-up) inside the block."""
        previous = self._state.mode
        self._state.mode = (top_k, weighting)
        try:
            yield
        finally:
            self._state.mode = previous

    def set_checkpointing(self, on: bool) -> None:
        """Activation checkpointing per decoder block (recomputed in backward; grad mode only).

        The gate runs in the block's pre-hook, outside the checkpointed forward, so it is computed
        once; the LoRA hooks inside reuse its weights when the block is recomputed.
        """

        for layer in self._layers:
            if on and "forward" not in vars(layer):
                inner = layer.forward

                def forward(*args: Any, _inner=inner, **kwargs: Any):
                    if torch.is_grad_enabled():
                        kwargs["use_cache"] = False
                        return checkpoint(_inner, *args, use_reentrant=False, **kwargs)
                    return _inner(*args, **kwargs)

                layer.forward = forward
            elif not on and "forward" in vars(layer):
                del layer.forward
        self._checkpointing = on

    @contextlib.contextmanager
    def merged(self, weights: list[float]) -> Iterator[None]:
        """Merge ``Σ_i w_i s_i B_i A_i`` into the base weights once, for the whole block.

        The paper's per-task composition: ``W' = W + Σ_c α_c B_c A_c`` on every adapted layer,
        then plain forward passes (no per-token routing). ``weights`` has one entry per slot
        (slot 0, "no adapter", is ignored). The adapted layers' original weights are copied on
        entry and restored on exit, so nothing drifts over many tasks.
        """
        if len(weights) != len(self.config.slots):
            raise ComposeError(f"{len(weights)} merge weights for {len(self.config.slots)} slots")
        if self._merged is not None:
            raise ComposeError("already merged; merges do not nest")
        w = torch.tensor([0.0] + [float(x) for x in weights[1:]])
        saved = []
        with torch.no_grad():
            for name, experts in self.experts.items():
                weight = experts.target.weight
                backup = self._merge_backups.get(name)  # reused: no fresh allocation per task
                if backup is None or backup.shape != weight.shape or backup.dtype != weight.dtype:
                    backup = self._merge_backups[name] = torch.empty_like(weight)
                backup.copy_(weight)
                saved.append((weight, backup))
                rows = experts.rows(w.to(experts.a.device))
                weight.add_(((experts.b * rows) @ experts.a).to(weight.dtype))
        self._merged, self._merge_key = saved, tuple(float(x) for x in weights[1:])
        try:
            with self.forced(0):
                yield
        finally:
            with torch.no_grad():
                for weight, original in saved:
                    weight.copy_(original)
            self._merged, self._merge_key = None, None

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **kwargs: Any):
        """The causal LM forward (returns the transformers output with ``.logits``)."""
        return self.model(input_ids=input_ids, attention_mask=attention_mask, **kwargs)

    @contextlib.contextmanager
    def collect_routing(self) -> Iterator[list[RoutingRecord]]:
        """Record every gate decision made inside the block (one record per layer per forward)."""
        records: list[RoutingRecord] = []
        previous = self._state.records
        self._state.records = records
        try:
            yield records
        finally:
            self._state.records = previous

    @contextlib.contextmanager
    def forced(self, slot: int | list[float] | None) -> Iterator[None]:
        """Route every token of every layer to one slot (int) or fixed slot weights (list)."""
        if isinstance(slot, int) and not 0 <= slot < len(self.config.slots):
            raise ComposeError(f"slot {slot} out of range 0..{len(self.config.slots) - 1}")
        previous = self._state.force
        self._state.force = slot
        try:
            yield
        finally:
            self._state.force = previous

    def generate(self, batch_messages: list[list[dict]], tools: list[dict] | None = None,
                 max_new_tokens: int = 256, temperature: float = 0.0,
                 seed: int | None = None) -> list[str]:
        """Raw assistant text per conversation (same contract as ``LocalChatModel.generate``).

        ``config.routing == "token"`` routes per token with the gates; any other mode runs the
        router its builder attached for it (``self.routers``, see :mod:`tracec.compose.api`):
        the model executes routing decisions, it does not make them.
        """
        if self._state.force is None and self.config.routing != "token":
            router = self.routers.get(self.config.routing)
            if router is None:
                raise ComposeError(f"routing {self.config.routing!r} has no router attached; build "
                                   "or load the model with tracec.compose.api")
            return router(self, batch_messages, tools, max_new_tokens, temperature, seed)
        return self.generate_tokenwise(batch_messages, tools, max_new_tokens, temperature, seed)

    def generate_tokenwise(self, batch_messages: list[list[dict]], tools: list[dict] | None = None,
                           max_new_tokens: int = 256, temperature: float = 0.0,
                           seed: int | None = None) -> list[str]:
        """Generation with the routing currently in force (per token, or ``forced``), through the
        one generation engine (:mod:`tracec.llm.engine`)."""
        tok = self._require_tokenizer()
        prompts = [self.render(m, tools) for m in batch_messages]
        device = next(self.gates.parameters()).device
        cache, key = self._prefix_cache_for_call()
        engine = KVEngine(self.model, tok.pad_token_id, self.stop_ids, device,
                          max_rows=max(1, len(prompts)), prefix_cache=cache, cache_key=key)
        outs = engine.complete(prompts, max_new_tokens, temperature, seed)
        return [decode_completion(tok, ids, self.stop_ids) for ids in outs]

    def _prefix_cache_for_call(self) -> tuple[PrefixCache, Any]:
        """``(prefix cache, key)`` for a generation. Under a routing fixed for the whole call
        (``forced`` or ``merged``: a prompt's keys/values then depend on its tokens and the key
        only) the model's own cache, kept across calls; under per-token gate routing, whose gates
        may be trained between calls, a fresh cache for this call alone."""
        force = self._state.force
        if force is None:
            return PrefixCache(), None
        if self._prefix_cache is None:
            self._prefix_cache = PrefixCache()
        return self._prefix_cache, (tuple(force) if isinstance(force, list) else force, self._merge_key)

    def render(self, messages: list[dict], tools: list[dict] | None = None) -> list[int]:
        """Prompt token ids for one conversation, ending with the assistant header."""
        return render_prompt(self._require_tokenizer(), messages, tools)

    def _require_tokenizer(self) -> Any:
        if self.tokenizer is None:
            raise ComposeError("this composed model was built without a tokenizer")
        return self.tokenizer

    def save(self, out_dir: str | Path) -> Path:
        """Write ``moe.json`` and ``gates.safetensors`` into ``out_dir``."""

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu().contiguous() for k, v in self.gates.state_dict().items()}
        save_file(state, str(out / "gates.safetensors"), metadata={"format": FORMAT})
        (out / "moe.json").write_text(self.config.model_dump_json(indent=2) + "\n")
        return out


def load_base(base: str, place: Placement = AS_SAVED):
    """Load a causal LM (short name, path or HF id) on ``place`` and its tokenizer (None if it
    has none)."""
    model, _, path = load_model(base, None, place, tokenizer=False)
    tokenizer = None
    try:
        tokenizer = load_tokenizer(path)
    except (OSError, ValueError, TypeError):
        tokenizer = None
    return model, tokenizer, path


def compose(base_model: nn.Module, adapter_dirs: list[str | Path], base_name: str,
            top_k: int = 1, weighting: Weighting = "st", tokenizer: Any = None,
            refs: list[AdapterRef] | None = None) -> ComposedModel:
    """Wrap a loaded base model with the given adapters (frozen) and fresh zero gates."""

    if not adapter_dirs:
        raise ComposeError("give at least one adapter")
    refs = refs or [describe_adapter(d) for d in adapter_dirs]
    if len({r.sha256 for r in refs}) != len(refs):
        raise ComposeError("the same adapter weights are given twice")
    try:
        base_path: str | None = resolve_model(base_name)
    except (RuntimeError, ValueError):
        base_path = None
    for d in adapter_dirs:
        check_adapter_config(Path(d))
        check_base_model(d, base_name, base_path)
    model = attach_adapters(base_model, adapter_dirs, expert_names(len(adapter_dirs)))
    cfg = base_model.config
    n_layers = len(decoder_layers(model))
    config = MoeConfig(
        base_model=base_name,
        adapters=refs,
        top_k=top_k,
        weighting=weighting,
        slots=[NONE_SLOT] + [r.name for r in refs],
        gate=GateSpec(layers=n_layers, hidden_size=int(cfg.hidden_size)),
        versions=versions(),
    )
    composed = ComposedModel(model, config, tokenizer)
    if tokenizer is not None:
        composed.stop_ids = stop_token_ids(tokenizer)
    device = next(base_model.parameters()).device
    return composed.to(device)
