"""The local chat model of ``tracec eval``: a causal LM (optionally with a LoRA adapter) that
answers chat batches as raw text, through the one generation engine (:mod:`tracec.llm.engine`)
and its prefix cache, kept for the model's lifetime: the system prompt and tool schemas every
episode starts with are prefilled once, and each later turn prefills only its new messages.

Loading lives in :mod:`tracec.llm.loading` (re-exported here), rendering in :mod:`tracec.llm.chat`.
"""

from __future__ import annotations

from typing import Any

from tracec.llm.chat import decode_completion, render_prompt, stop_token_ids
from tracec.llm.device import AS_SAVED, Placement
from tracec.llm.engine import KVEngine, generate_plain
from tracec.llm.kvcache import DEFAULT_MAX_BYTES, PrefixCache
from tracec.llm.loading import (
    DEFAULT_MODEL,
    KNOWN_MODELS,
    ModelNotPrepared,
    cache_root,
    load_model,
    load_tokenizer,
    model_dir,
    resolve_model,
)

__all__ = ["DEFAULT_MODEL", "KNOWN_MODELS", "LocalChatModel", "ModelNotPrepared", "cache_root",
           "decode_completion", "generate_ids", "load_tokenizer", "model_dir", "resolve_model",
           "stop_token_ids"]


class LocalChatModel:
    """A causal LM (optionally with a LoRA adapter) that answers chat batches as raw text.

    ``place``: where, in which dtype; ``max_rows``: conversations decoded together (more wait and take a row as one ends);
    ``cache_bytes``: the prefix cache's bound. The weights are frozen; the engine runs the lean
    fused-projection forward (:mod:`tracec.llm.lean`), a plain LoRA adapter included."""

    def __init__(self, model: str = DEFAULT_MODEL, adapter: str | None = None,
                 place: Placement = AS_SAVED, max_rows: int = 64,
                 cache_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.model, self.tokenizer, self.path = load_model(model, adapter, place)
        self.model.requires_grad_(False)  # inference only: the engine may run its lean forward
        self.device = next(self.model.parameters()).device
        self.stop_ids = stop_token_ids(self.tokenizer)
        self.prefix_cache = PrefixCache(max_bytes=cache_bytes)
        self.engine = KVEngine(self.model, self.tokenizer.pad_token_id, self.stop_ids, self.device,
                               max_rows=max_rows, prefix_cache=self.prefix_cache, retain=True)

    def render(self, messages: list[dict], tools: list[dict] | None) -> list[int]:
        """Prompt token ids for one conversation, ending with the assistant header."""
        return render_prompt(self.tokenizer, messages, tools)

    def generate_ids(self, prompts: list[list[int]], max_new_tokens: int = 256,
                     temperature: float = 0.0, seed: int | None = None) -> list[list[int]]:
        """Sample completions for token prompts; ids end at the stop token."""
        return self.engine.complete(prompts, max_new_tokens, temperature, seed)

    def generate(self, batch_messages: list[list[dict]], tools: list[dict] | None = None,
                 max_new_tokens: int = 256, temperature: float = 0.0,
                 seed: int | None = None) -> list[str]:
        """Raw assistant text (incl. ``<tool_call>`` blocks) for each conversation."""
        prompts = [self.render(m, tools) for m in batch_messages]
        outs = self.generate_ids(prompts, max_new_tokens, temperature, seed)
        return [decode_completion(self.tokenizer, ids, self.stop_ids) for ids in outs]


def generate_ids(model, tok, prompts: list[list[int]], stop_ids: list[int], max_new_tokens: int,
                 temperature: float, seed: int | None, device: Any = "cpu") -> list[list[int]]:
    """Plain ``transformers.generate`` (every prompt prefilled in full): the reference path,
    see :func:`tracec.llm.engine.generate_plain`."""
    return generate_plain(model, tok.pad_token_id, prompts, stop_ids, max_new_tokens, temperature,
                          seed, device)
