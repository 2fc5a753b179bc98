"""One routing decision per trajectory, and weighted merges of adapters into one.

A per-trajectory decision picks one slot (an adapter, or none) from the prompt, so the chosen
adapter can be served by any engine that serves a single LoRA (vLLM ``--lora-modules``). Two
routers: ``gate`` (mean of the trained gates' probabilities over the prompt tokens and layers)
and ``describe`` (cosine similarity between the prompt and each capability's description under
the base model's mean-pooled last hidden state; needs no training).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any, Literal

import torch
from pydantic import BaseModel

from tracec import files
from tracec.compose.config import adapter_base_model, check_adapter_config, describe_adapter
from tracec.compose.errors import ComposeError
from tracec.compose.model import ComposedModel, expert_names, load_base
from tracec.llm.adapters import hub_id
from tracec.llm.loading import attach_adapters

Method = Literal["gate", "describe"]


class RouteDecision(BaseModel):
    """The slot chosen for one trajectory, with the router's scores over all slots."""

    slot: int
    name: str
    adapter_path: str | None
    scores: list[float]


def prompt_messages(messages: list[dict]) -> list[dict]:
    """The task prompt: every message before the first assistant turn."""
    out = []
    for m in messages:
        if m.get("role") == "assistant":
            break
        out.append(m)
    return out


@torch.no_grad()
def gate_scores(cm: ComposedModel, messages: list[dict], tools: list[dict] | None = None) -> list[float]:
    """Mean gate probability per slot over the prompt's tokens and all layers."""
    ids = torch.tensor([cm.render(prompt_messages(messages), tools)], device=_device(cm))
    with cm.collect_routing() as records:
        cm(ids, use_cache=False)
    probs = torch.stack([r.probs[0].mean(0) for r in records]).mean(0)
    return [float(p) for p in probs]


@torch.no_grad()
def _embed(cm: ComposedModel, text: str) -> torch.Tensor:
    tok = cm._require_tokenizer()
    ids = torch.tensor([tok(text, add_special_tokens=False)["input_ids"] or [tok.pad_token_id]],
                       device=_device(cm))
    with cm.forced(0):
        out = cm(ids, output_hidden_states=True, use_cache=False)
    return out.hidden_states[-1][0].float().mean(0)


@torch.no_grad()
def describe_scores(cm: ComposedModel, messages: list[dict]) -> list[float]:
    """Cosine similarity of the prompt to each capability description (slot 0 scores 0)."""
    text = "\n".join(str(m.get("content") or "") for m in prompt_messages(messages) if m.get("role") == "user")
    query = _embed(cm, text)
    scores = [0.0]
    for ref in cm.config.adapters:
        desc = ref.description or ref.capability or ref.name
        scores.append(float(torch.cosine_similarity(query, _embed(cm, desc), dim=0)))
    return scores


def decide(cm: ComposedModel, messages: list[dict], tools: list[dict] | None = None,
           method: Method = "gate", min_score: float | None = None) -> RouteDecision:
    """Route one trajectory; ``min_score``: fall back to "no adapter" below this top score."""
    scores = gate_scores(cm, messages, tools) if method == "gate" else describe_scores(cm, messages)
    first = 1 if method == "describe" else 0  # descriptions exist for adapters only
    slot = max(range(first, len(scores)), key=lambda i: (scores[i], -i))
    if min_score is not None and scores[slot] < min_score:
        slot = 0
    ref = cm.config.adapters[slot - 1] if slot > 0 else None
    return RouteDecision(slot=slot, name=cm.slots[slot], adapter_path=ref.path if ref else None,
                         scores=[round(s, 6) for s in scores])


def pick_slots(cm: ComposedModel, batch_messages: list[list[dict]], tools: list[dict] | None = None,
               method: Method = "gate") -> list[int]:
    """One slot per conversation, each picked from its prompt."""
    return [decide(cm, messages, tools, method).slot for messages in batch_messages]


def generate_per_trajectory(cm: ComposedModel, batch_messages: list[list[dict]],
                            tools: list[dict] | None = None, max_new_tokens: int = 256,
                            temperature: float = 0.0, seed: int | None = None,
                            method: Method = "gate") -> list[str]:
    """Like ``ComposedModel.generate``, but every conversation uses the one adapter its prompt picks."""
    groups: dict[int, list[int]] = {}
    for i, slot in enumerate(pick_slots(cm, batch_messages, tools, method)):
        groups.setdefault(slot, []).append(i)
    out = [""] * len(batch_messages)
    for slot, idx in sorted(groups.items()):
        with cm.forced(slot):
            texts = cm.generate_tokenwise([batch_messages[i] for i in idx], tools, max_new_tokens,
                                          temperature, seed)
        for i, t in zip(idx, texts):
            out[i] = t
    return out


def _device(cm: ComposedModel) -> torch.device:
    return next(cm.gates.parameters()).device


# ---------------------------------------------------------------------------------------------
# weighted merge


def merge_adapters(adapter_dirs: list[str | Path], weights: list[float], out_dir: str | Path,
                   base: str | None = None) -> Path:
    """Merge adapters into one peft LoRA folder: ΔW = Σ_i w_i · ΔW_i (peft ``cat``, exact)."""

    dirs = [Path(d).expanduser() for d in adapter_dirs]
    if len(weights) != len(dirs):
        raise ComposeError(f"{len(dirs)} adapters but {len(weights)} weights")
    if any(w < 0 for w in weights):
        raise ComposeError("merge weights must be non-negative")
    refs = [describe_adapter(d) for d in dirs]
    for d in dirs:
        check_adapter_config(d)
    if base is None:
        bases = {adapter_base_model(d) for d in dirs}
        if None in bases or len(bases) != 1:
            raise ComposeError("adapters name different or no base models; pass --base")
        base = bases.pop()
    model, _, _ = load_base(base)
    names = expert_names(len(dirs))
    peft_model = attach_adapters(model, dirs, names)
    peft_model.add_weighted_adapter(names, [float(w) for w in weights], "default", combination_type="cat")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "adapter e0 was active which is now deleted"
        for n in names:
            peft_model.delete_adapter(n)
    out = Path(out_dir)
    peft_model.save_pretrained(str(out), selected_adapters=["default"])
    cfg_path = out / "adapter_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["base_model_name_or_path"] = hub_id(base)
    cfg_path.write_text(json.dumps(cfg, indent=2) + "\n")
    meta: dict[str, Any] = {
        "capability": "+".join(r.name for r in refs),
        "description": "Weighted merge of " + ", ".join(f"{w:g}×{r.name}" for r, w in zip(refs, weights)),
        "base_model": base,
        "merged_from": [r.model_dump() for r in refs],
        "weights": [float(w) for w in weights],
        "combination_type": "cat",
    }
    (out / "tracec.json").write_text(json.dumps(meta, indent=2) + "\n")
    return out


def weights_from_routing(routing_json: str | Path) -> list[float]:
    """Merge weights from a composed model's ``routing.json``: each adapter's token share."""
    data = files.read_json(routing_json, "routing file", expect=dict, error=ComposeError)
    overall = data["overall"]
    return [float(x) for x in overall[1:]]
