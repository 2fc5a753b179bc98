"""A token-routed mixture of frozen LoRA experts (TRACE capability composition).

The base model and N capability adapters are loaded through peft and frozen. Every decoder block
gets a gate over its (detached, RMS-normalised) input hidden state with N+1 slots: slot 0 is
"no adapter", slot i>0 is adapter i-1. Gates are zero-initialised, so at start every token ties
and goes to slot 0 (the composed model equals the base model). Each LoRA linear layer of that
block then outputs ``base(x) + Σ_i w_i · s_i · B_i A_i x`` over the selected experts, computed as
two matmuls over the concatenated ranks (the cost of one adapter of rank Σ r_i).

Top-k routing: k=1 uses straight-through weights (forward value 1, gradient of the gate
probability) or the raw probability (``weighting="prob"``); k>1 renormalises the top-k
probabilities. Routing is per token, so it works with the KV cache and batched generation.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
from pydantic import BaseModel, Field
from torch import nn

FORMAT = "tracec-moe/1"
NONE_SLOT = "<none>"
WEIGHT_FILES = ("adapter_model.safetensors", "adapter_model.bin")
Weighting = Literal["st", "prob"]


class ComposeError(ValueError):
    """A user-facing problem with adapters or a composed-model folder."""


# ---------------------------------------------------------------------------------------------
# moe.json


class AdapterRef(BaseModel):
    """One expert: where it was loaded from and the sha256 of its weight file."""

    name: str
    path: str
    weights_file: str
    sha256: str
    capability: str | None = None
    description: str | None = None


class GateSpec(BaseModel):
    """Where the gates sit and what they read."""

    placement: Literal["decoder_block_input"] = "decoder_block_input"
    input: Literal["rms_normalised_detached_hidden_state"] = "rms_normalised_detached_hidden_state"
    layers: int
    hidden_size: int
    init: Literal["zeros"] = "zeros"


class MoeConfig(BaseModel):
    """The contents of ``moe.json``."""

    format: str = FORMAT
    base_model: str
    adapters: list[AdapterRef]
    top_k: int = Field(1, ge=1)
    weighting: Weighting = "st"
    routing: Literal["token", "trajectory"] = "token"
    trajectory_router: Literal["gate", "describe"] = "gate"
    slots: list[str]
    base_slot: int = 0
    gate: GateSpec
    versions: dict[str, str] = {}
    training: dict[str, Any] = {}


# ---------------------------------------------------------------------------------------------
# adapters on disk


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def adapter_weights_file(adapter_dir: Path) -> Path:
    """The weight file of a peft adapter folder (clear error when it is not one)."""
    if not (adapter_dir / "adapter_config.json").is_file():
        raise ComposeError(f"{adapter_dir}: not a LoRA adapter folder (no adapter_config.json)")
    for name in WEIGHT_FILES:
        if (adapter_dir / name).is_file():
            return adapter_dir / name
    raise ComposeError(f"{adapter_dir}: no adapter weights ({' or '.join(WEIGHT_FILES)})")


def describe_adapter(adapter_dir: str | Path) -> AdapterRef:
    """Read an adapter folder's identity: name, capability (tracec.json) and weight hash."""
    path = Path(adapter_dir).expanduser().resolve()
    weights = adapter_weights_file(path)
    meta: dict[str, Any] = {}
    if (path / "tracec.json").is_file():
        try:
            meta = json.loads((path / "tracec.json").read_text())
        except json.JSONDecodeError as exc:
            raise ComposeError(f"{path / 'tracec.json'}: invalid JSON ({exc})") from None
    capability = meta.get("capability") if isinstance(meta, dict) else None
    return AdapterRef(
        name=str(capability or path.name),
        path=str(path),
        weights_file=weights.name,
        sha256=sha256_file(weights),
        capability=capability,
        description=meta.get("description") if isinstance(meta, dict) else None,
    )


def adapter_base_model(adapter_dir: str | Path) -> str | None:
    """The base model an adapter was trained on (tracec.json, else adapter_config.json)."""
    path = Path(adapter_dir)
    for name, key in (("tracec.json", "base_model"), ("adapter_config.json", "base_model_name_or_path")):
        file = path / name
        if file.is_file():
            try:
                value = json.loads(file.read_text()).get(key)
            except (json.JSONDecodeError, AttributeError):
                continue
            if value:
                return str(value)
    return None


def versions() -> dict[str, str]:
    """Library versions recorded in moe.json."""
    import peft
    import transformers

    from tracec import __version__ as tracec_version

    return {"tracec": str(tracec_version), "torch": torch.__version__,
            "transformers": transformers.__version__, "peft": peft.__version__}


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

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        h = hidden.detach().to(self.proj.weight.dtype)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.proj(h)


def route(logits: torch.Tensor, top_k: int, weighting: Weighting = "st"
          ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Top-k routing: ``(probs, chosen slot indices [..., k], dense slot weights [..., S])``.

    Ties go to the lowest slot (so a zero-initialised gate picks slot 0, "no adapter").
    """
    probs = torch.softmax(logits.float(), dim=-1)
    k = min(top_k, probs.shape[-1])
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
class _RouterState:
    weights: list[torch.Tensor | None]
    rows: list[dict] = field(default_factory=list)
    records: list[RoutingRecord] | None = None
    force: int | list[float] | None = None
    layer_of: dict[int, int] = field(default_factory=dict)


def load_balancing_loss(records: list[RoutingRecord], mask: torch.Tensor | None = None) -> torch.Tensor:
    """Switch-Transformer load balancing, averaged over layers: ``S · Σ_i f_i · P_i``.

    ``f_i``: share of routed (token, choice) pairs that went to slot i; ``P_i``: mean gate
    probability of slot i; both over the tokens where ``mask`` is true. 1.0 when balanced.
    """
    losses = []
    for rec in records:
        n_slots = rec.probs.shape[-1]
        m = _mask_like(rec.probs, mask)
        dispatch = torch.zeros_like(rec.probs).scatter(-1, rec.chosen, 1.0)
        tokens = m.sum().clamp_min(1.0)
        f = (dispatch * m).sum((0, 1)) / (tokens * rec.chosen.shape[-1])
        p = (rec.probs * m).sum((0, 1)) / tokens
        losses.append(n_slots * (f * p).sum())
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


class _Experts(nn.Module):
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


def _lora_linears(model: nn.Module) -> Iterator[tuple[str, nn.Module]]:
    from peft.tuners.lora import LoraLayer

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


# ---------------------------------------------------------------------------------------------
# the composed model


class ComposedModel(nn.Module):
    """Base model + frozen LoRA experts + trainable per-block gates."""

    def __init__(self, peft_model: nn.Module, config: MoeConfig, tokenizer: Any = None) -> None:
        super().__init__()
        self.model = peft_model
        self.config = config
        self.tokenizer = tokenizer
        self.stop_ids: list[int] = []
        # (model, conversations, tools) -> one slot per conversation; None: route per token
        self.slot_picker: Callable[[ComposedModel, list[list[dict]], list[dict] | None], list[int]] | None = None
        names = [f"e{i}" for i in range(len(config.adapters))]
        layers = decoder_layers(peft_model)
        n_slots = len(names) + 1
        hidden = config.gate.hidden_size
        self.gates = nn.ModuleList(Gate(hidden, n_slots) for _ in layers)
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.model.eval()
        self._state = _RouterState(weights=[None] * len(layers), rows=[{} for _ in layers])
        self._handles = []
        layer_index = {id(m): i for i, m in enumerate(layers)}
        for li, layer in enumerate(layers):
            self._handles.append(layer.register_forward_pre_hook(self._make_gate_hook(li), with_kwargs=True))
            for _, m in layer.named_modules():
                layer_index.setdefault(id(m), li)
        self.experts = nn.ModuleDict()
        for name, module in _lora_linears(peft_model):
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
            experts = _Experts(module, names)
            module.enable_adapters(False)  # peft runs the base layer only; our hook adds the delta
            self.experts[name.replace(".", "__")] = experts
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
                state.rows[li] = {}
                return
            logits = self.gates[li](hidden)
            probs, chosen, dense = route(logits, self.config.top_k, self.config.weighting)
            state.weights[li] = dense
            state.rows[li] = {}
            if state.records is not None:
                state.records.append(RoutingRecord(logits, probs, chosen))
            return

        return hook

    def _make_lora_hook(self, li: int, experts: _Experts):
        def hook(module: nn.Module, args: tuple, output: torch.Tensor):
            weights = self._state.weights[li]
            if weights is None:
                return output
            cache = self._state.rows[li]
            rows = cache.get(experts.key)
            if rows is None:
                rows = cache[experts.key] = experts.rows(weights)
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

        With a ``slot_picker`` (set by the caller, e.g. :func:`tracec.compose.api.load_composed`
        for ``routing == "trajectory"``) each conversation uses the one slot it picks.
        """
        if self.slot_picker is not None and self._state.force is None:
            slots = self.slot_picker(self, batch_messages, tools)
            return self.generate_slots(batch_messages, slots, tools, max_new_tokens, temperature, seed)
        return self.generate_tokenwise(batch_messages, tools, max_new_tokens, temperature, seed)

    def generate_slots(self, batch_messages: list[list[dict]], slots: list[int],
                       tools: list[dict] | None = None, max_new_tokens: int = 256,
                       temperature: float = 0.0, seed: int | None = None) -> list[str]:
        """Generation where conversation ``i`` uses slot ``slots[i]`` alone (decided by the caller)."""
        groups: dict[int, list[int]] = {}
        for i, slot in enumerate(slots):
            groups.setdefault(slot, []).append(i)
        out = [""] * len(batch_messages)
        for slot, idx in sorted(groups.items()):
            with self.forced(slot):
                texts = self.generate_tokenwise([batch_messages[i] for i in idx], tools,
                                                max_new_tokens, temperature, seed)
            for i, t in zip(idx, texts):
                out[i] = t
        return out

    def generate_tokenwise(self, batch_messages: list[list[dict]], tools: list[dict] | None = None,
                           max_new_tokens: int = 256, temperature: float = 0.0,
                           seed: int | None = None) -> list[str]:
        """Generation with the routing currently in force (per token, or ``forced``)."""
        from tracec.llm.local import decode_completion, generate_ids

        tok = self._require_tokenizer()
        prompts = [self.render(m, tools) for m in batch_messages]
        device = str(next(self.gates.parameters()).device)
        outs = generate_ids(self.model, tok, prompts, self.stop_ids, max_new_tokens, temperature,
                            seed, device)
        return [decode_completion(tok, ids, self.stop_ids) for ids in outs]

    def render(self, messages: list[dict], tools: list[dict] | None = None) -> list[int]:
        """Prompt token ids for one conversation, ending with the assistant header."""
        tok = self._require_tokenizer()
        text = tok.apply_chat_template(messages, tools=tools or None, tokenize=False,
                                       add_generation_prompt=True)
        return tok(text, add_special_tokens=False)["input_ids"]

    def _require_tokenizer(self) -> Any:
        if self.tokenizer is None:
            raise ComposeError("this composed model was built without a tokenizer")
        return self.tokenizer

    def save(self, out_dir: str | Path) -> Path:
        """Write ``moe.json`` and ``gates.safetensors`` into ``out_dir``."""
        from safetensors.torch import save_file

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu().contiguous() for k, v in self.gates.state_dict().items()}
        save_file(state, str(out / "gates.safetensors"), metadata={"format": FORMAT})
        (out / "moe.json").write_text(self.config.model_dump_json(indent=2) + "\n")
        return out


def _place(model: nn.Module, device: str, dtype: torch.dtype | None) -> nn.Module:
    return model.to(device=device, dtype=dtype) if dtype is not None else model.to(device)


def load_base(base: str, device: str = "cpu", dtype: torch.dtype | None = None):
    """Load a causal LM (short name, path or HF id) and its tokenizer (None if it has none)."""
    from transformers import AutoModelForCausalLM

    from tracec.llm.local import resolve_model

    path = resolve_model(base)
    kwargs = {"dtype": dtype} if dtype is not None else {}
    model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    tokenizer = None
    try:
        from tracec.llm.local import load_tokenizer

        tokenizer = load_tokenizer(path)
    except (OSError, ValueError, TypeError):
        tokenizer = None
    return _place(model, device, None), tokenizer, path


def compose(base_model: nn.Module, adapter_dirs: list[str | Path], base_name: str,
            top_k: int = 1, weighting: Weighting = "st", tokenizer: Any = None,
            refs: list[AdapterRef] | None = None) -> ComposedModel:
    """Wrap a loaded base model with the given adapters (frozen) and fresh zero gates."""
    from peft import PeftModel

    if not adapter_dirs:
        raise ComposeError("give at least one adapter")
    refs = refs or [describe_adapter(d) for d in adapter_dirs]
    if len({r.sha256 for r in refs}) != len(refs):
        raise ComposeError("the same adapter weights are given twice")
    for d in adapter_dirs:
        _check_adapter_config(Path(d))
    model = PeftModel.from_pretrained(base_model, str(adapter_dirs[0]), adapter_name="e0",
                                      is_trainable=False)
    for i, d in enumerate(adapter_dirs[1:], start=1):
        model.load_adapter(str(d), adapter_name=f"e{i}", is_trainable=False)
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
        from tracec.llm.local import stop_token_ids

        composed.stop_ids = stop_token_ids(tokenizer)
    device = next(base_model.parameters()).device
    return composed.to(device)


def _check_adapter_config(path: Path) -> None:
    try:
        cfg = json.loads((path / "adapter_config.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ComposeError(f"{path}/adapter_config.json: {exc}") from None
    if cfg.get("peft_type", "LORA") != "LORA":
        raise ComposeError(f"{path}: a {cfg.get('peft_type')} adapter; only LoRA adapters compose")
    if cfg.get("use_dora"):
        raise ComposeError(f"{path}: DoRA adapters are not supported")
    if cfg.get("modules_to_save"):
        raise ComposeError(f"{path}: adapters with modules_to_save are not supported")


def build_composed(adapter_dirs: list[str | Path], base: str | None = None, top_k: int = 1,
                   weighting: Weighting = "st", device: str = "cpu",
                   dtype: torch.dtype | None = None) -> ComposedModel:
    """Load the base model named by the adapters (or ``base``) and compose the adapters."""
    dirs = [Path(d).expanduser() for d in adapter_dirs]
    for d in dirs:
        adapter_weights_file(d)
    if base is None:
        bases = {adapter_base_model(d) for d in dirs}
        if None in bases or len(bases) != 1:
            found = ", ".join(sorted(str(b) for b in bases))
            raise ComposeError(f"adapters name different or no base models ({found}); pass --base")
        base = bases.pop()
    model, tokenizer, _ = load_base(base, device, dtype)
    return compose(model, dirs, base, top_k, weighting, tokenizer)


_SAFE = re.compile(r"[^A-Za-z0-9_-]+")


def safe_name(text: str) -> str:
    """A file-/module-safe version of an adapter name."""
    return _SAFE.sub("_", text).strip("_") or "adapter"
