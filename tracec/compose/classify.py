"""The TRACE paper's inference routing: the base model as a zero-shot classifier over capabilities.

Per task, from its first prompt only: the base model (adapters off) reads the task and the
capability descriptions (each with a label ``A``, ``B``, …, plus one label for "none: the base
model as is") and its next-token probabilities over the label tokens are the router's scores
(``scoring="labels"``, the paper's). ``scoring="likelihood"`` scores each option instead by how much
the task raises its description's log-likelihood (no label tokens; for models that cannot answer
a multiple-choice prompt). If "none" scores highest the task runs on the base model;
otherwise the capabilities' probabilities are renormalised, the smallest set whose cumulative
probability reaches ``top_p`` is kept and renormalised (nucleus filtering), and those weights are
merged into the base weights once for the task: ``W' = W + Σ_c α_c s_c B_c A_c``
(:meth:`ComposedModel.merged`, exact, equal to peft's ``add_weighted_adapter(..., "cat")``).

Not implemented from the paper: the retrieval step (top-k similar training trajectories narrowing
the candidates and shown next to each description); with a handful of adapters every capability
is a candidate.
"""

from __future__ import annotations

import hashlib
import json

import torch
from pydantic import BaseModel

from tracec.compose.config import ClassifierSpec
from tracec.compose.errors import ComposeError
from tracec.compose.model import ComposedModel

NONE_DESCRIPTION = "None of these: the task needs no special capability."
LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class ClassifierDecision(BaseModel):
    """Scores over [none, adapters…] and the merge weights chosen for one task."""

    scores: list[float]  # probabilities, slot order (0 = none)
    weights: list[float]  # merge weights, slot order (slot 0 is 0; all 0 = base model)
    chosen: list[str]

    @property
    def base_only(self) -> bool:
        return not any(self.weights[1:])


def task_text(messages: list[dict], limit: int) -> str:
    """The task as the classifier sees it: the first prompt's user text (not the long system prompt)."""
    parts = []
    for m in messages:
        if m.get("role") == "assistant":
            break
        if m.get("role") == "user":
            parts.append(str(m.get("content") or ""))
    text = "\n".join(parts).strip() or "(empty)"
    return text[:limit]


def descriptions(cm: ComposedModel) -> list[str]:
    """One description per slot: slot 0 is "none", then each adapter's (or its capability name)."""
    out = [NONE_DESCRIPTION]
    for ref in cm.config.adapters:
        out.append((ref.description or (ref.capability or ref.name).replace("_", " ")).strip())
    return out


def label_prompt(task: str, options: list[str]) -> list[dict]:
    """The multiple-choice prompt; options are [none, adapter 1, …], shown adapters first."""
    lines = [f"{LABELS[i]}. {options[slot]}" for i, slot in enumerate(label_order(len(options)))]
    text = ("Which capability does this customer-service task need most?\n\n"
            f"Task:\n{task}\n\nOptions:\n" + "\n".join(lines)
            + "\n\nAnswer with the letter of one option.")
    return [{"role": "system", "content": "You route tasks to the skill they need."},
            {"role": "user", "content": text}]


def label_order(n_slots: int) -> list[int]:
    """Slot shown under each label (adapters A, B, …; "none" last)."""
    return list(range(1, n_slots)) + [0]


def _label_ids(tok, n: int) -> list[int]:
    ids = []
    for letter in LABELS[:n]:
        enc = tok(letter, add_special_tokens=False)["input_ids"]
        if not enc:
            raise ComposeError(f"the tokenizer cannot encode label {letter!r}")
        ids.append(enc[0])
    if len(set(ids)) != len(ids):
        raise ComposeError("the tokenizer maps two option labels to the same token")
    return ids


@torch.no_grad()
def label_scores(cm: ComposedModel, task: str) -> list[float]:
    """Next-token probabilities of the option labels (renormalised over them), in slot order."""
    tok = cm._require_tokenizer()
    options = descriptions(cm)
    if len(options) > len(LABELS):
        raise ComposeError(f"at most {len(LABELS) - 1} adapters for label scoring")
    prompt = cm.render(label_prompt(task, options))
    device = next(cm.gates.parameters()).device
    with cm.forced(0):
        logits = cm(torch.tensor([prompt], device=device), use_cache=False, logits_to_keep=1).logits
    ids = _label_ids(tok, len(options))
    probs = torch.softmax(logits[0, -1].float()[ids], -1).tolist()
    scores = [0.0] * len(options)
    for label, slot in enumerate(label_order(len(options))):
        scores[slot] = probs[label]
    return scores


@torch.no_grad()
def _mean_logprob(cm: ComposedModel, prefix: list[int], cont: list[int]) -> torch.Tensor:
    device = next(cm.gates.parameters()).device
    ids = torch.tensor([prefix + cont], device=device)
    with cm.forced(0):
        logits = cm(ids, use_cache=False).logits[0, len(prefix) - 1: -1].float()
    return torch.log_softmax(logits, -1).gather(-1, ids[0, len(prefix):, None]).squeeze(-1).mean()


@torch.no_grad()
def likelihood_scores(cm: ComposedModel, task: str) -> list[float]:
    """Softmax over options of how much the task raises each description's likelihood.

    Score = mean over the description's tokens of ``log p(token | task prompt) − log p(token |
    task-free prompt)`` (domain-conditional PMI), so descriptions made of frequent tokens do not
    win merely for being likely anywhere.
    """
    tok = cm._require_tokenizer()
    with_task = tok(f"Task: {task}\nCapability needed:", add_special_tokens=False)["input_ids"]
    without = tok("Capability needed:", add_special_tokens=False)["input_ids"]
    # the task-free term depends on the description only: computed once per model, not per task
    prior: dict[tuple[int, ...], torch.Tensor] = cm.__dict__.setdefault("_classifier_prior", {})
    scores = []
    for desc in descriptions(cm):
        cont = tok(" " + desc, add_special_tokens=False)["input_ids"]
        if not cont:
            raise ComposeError(f"empty description {desc!r}")
        key = tuple(cont)  # the task-free prompt is the same for every description
        if key not in prior:
            prior[key] = _mean_logprob(cm, without, cont)
        scores.append(_mean_logprob(cm, with_task, cont) - prior[key])
    return torch.softmax(torch.stack(scores), -1).tolist()


def select(scores: list[float], top_p: float) -> list[float]:
    """Merge weights from slot probabilities: "none" on top → all zero; else top-p over adapters.

    Adapters are sorted by probability (ties: lower slot first); the smallest prefix whose
    renormalised cumulative probability reaches ``top_p`` is kept and renormalised to sum 1.
    """
    if len(scores) < 2:
        raise ComposeError("need at least one adapter")
    weights = [0.0] * len(scores)
    if scores[0] >= max(scores[1:]):
        return weights
    total = sum(scores[1:])
    order = sorted(range(1, len(scores)), key=lambda i: (-scores[i], i))
    kept, cum = [], 0.0
    for i in order:
        kept.append(i)
        cum += scores[i] / total
        if cum >= top_p - 1e-9:
            break
    mass = sum(scores[i] for i in kept)
    for i in kept:
        weights[i] = scores[i] / mass
    return weights


def classify(cm: ComposedModel, messages: list[dict], spec: ClassifierSpec | None = None
             ) -> ClassifierDecision:
    """Score the capabilities for one task and choose its merge weights."""
    spec = spec or ClassifierSpec()
    task = task_text(messages, spec.max_task_chars)
    scores = label_scores(cm, task) if spec.scoring == "labels" else likelihood_scores(cm, task)
    weights = select(scores, spec.top_p)
    chosen = [cm.slots[i] for i, w in enumerate(weights) if w > 0] or [cm.slots[0]]
    return ClassifierDecision(scores=[round(s, 6) for s in scores],
                              weights=[round(w, 6) for w in weights], chosen=chosen)


def cached_classification(cm: ComposedModel, messages: list[dict],
                          spec: ClassifierSpec | None = None):
    """:func:`classify` of the conversation's task, once per task prompt (cached on ``cm``)."""
    cache = cm.__dict__.setdefault("_classifier_cache", {})
    key = hashlib.sha256(json.dumps([task_text(messages, 10**6), (spec or ClassifierSpec()).model_dump()],
                                    ensure_ascii=False).encode()).hexdigest()
    if key not in cache:
        if len(cache) > 4096:
            cache.clear()
        cache[key] = classify(cm, messages, spec)
    return cache[key]


def generate_classified(cm: ComposedModel, batch_messages: list[list[dict]],
                        tools: list[dict] | None = None, max_new_tokens: int = 256,
                        temperature: float = 0.0, seed: int | None = None,
                        spec: ClassifierSpec | None = None) -> list[str]:
    """Like ``ComposedModel.generate``: each conversation runs on the adapters its task picks.

    Decisions are cached per task prompt (the router runs once per task, not per turn);
    conversations with the same weights generate together under one merge, and the composed
    model keeps the KV cache of the prompt prefix they share per merge (the system prompt and
    tools), so later turns and batches do not prefill it again.
    """
    groups: dict[tuple[float, ...], list[int]] = {}
    for i, messages in enumerate(batch_messages):
        groups.setdefault(tuple(cached_classification(cm, messages, spec).weights), []).append(i)
    out = [""] * len(batch_messages)
    for weights, idx in groups.items():
        batch = [batch_messages[i] for i in idx]
        if any(weights[1:]):
            with cm.merged(list(weights)):
                texts = cm.generate_tokenwise(batch, tools, max_new_tokens, temperature, seed)
        else:
            with cm.forced(0):
                texts = cm.generate_tokenwise(batch, tools, max_new_tokens, temperature, seed)
        for i, t in zip(idx, texts):
            out[i] = t
    return out
