"""LoRA adapter folders on disk, checked before peft touches them (torch-free).

* :func:`check_adapter_dir`: ``adapter_config.json`` is a LoRA config with sane types, the
  weights are a regular, complete safetensors file (header and offsets), ``tracec.json`` (when
  present) is a JSON object: each problem is one :class:`AdapterError` naming the file and fix;
* :func:`check_base_model`: the adapter was trained on the model about to be used (both names);
* :func:`hub_id` / :func:`record_hub_id`: adapters name the model's hub id in
  ``adapter_config.json`` (stock ``AutoPeftModelForCausalLM`` loads them anywhere), the local
  path stays in ``tracec.json``.
"""

from __future__ import annotations

import json
import math
import os
import struct
from pathlib import Path
from typing import Any

from tracec import files

__all__ = [
    "HUB_IDS",
    "AdapterError",
    "check_adapter_dir",
    "check_base_model",
    "hub_id",
    "record_hub_id",
]

HUB_IDS: dict[str, str] = {"smollm2": "HuggingFaceTB/SmolLM2-135M-Instruct"}
WEIGHT_FILES = ("adapter_model.safetensors", "adapter_model.bin")
MAX_HEADER = 100 * files.MiB
FIX = "train or save the adapter again (tracec train / tracec compose)"


class AdapterError(files.InputError):
    """An adapter folder tracec cannot use; the message names the file and the fix."""


def _safetensors_ok(path: Path) -> None:
    st = files.require_regular(path, "adapter weights", AdapterError, limit=1 << 40)
    size = st.st_size
    bad = f"{path}: not a complete safetensors file ({{}}); {FIX}"
    if size < 8:
        raise AdapterError(bad.format(f"{size} bytes"))
    with open(path, "rb") as fh:
        (n,) = struct.unpack("<Q", fh.read(8))
        if n > min(size - 8, MAX_HEADER):
            raise AdapterError(bad.format("its header runs past the end: truncated or not "
                                          "safetensors"))
        raw = fh.read(n)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise AdapterError(bad.format("its header is not JSON")) from None
    if not isinstance(header, dict):
        raise AdapterError(bad.format("its header is not a JSON object"))
    data = size - 8 - n
    end = 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        offsets = info.get("data_offsets") if isinstance(info, dict) else None
        if (not isinstance(offsets, list) or len(offsets) != 2
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in offsets)
                or not 0 <= offsets[0] <= offsets[1]):
            raise AdapterError(bad.format(f"tensor {name!r} has no valid data_offsets"))
        end = max(end, offsets[1])
    if end > data:
        raise AdapterError(bad.format(f"its tensors need {end} bytes of data, the file holds "
                                      f"{data}: truncated"))


def _check_config(path: Path, cfg: dict[str, Any]) -> None:
    where = path / "adapter_config.json"
    peft_type = cfg.get("peft_type", "LORA")
    if not isinstance(peft_type, str) or peft_type.upper() != "LORA":
        raise AdapterError(f"{where}: peft_type is {json.dumps(peft_type)}; tracec loads LoRA "
                           f"adapters (peft_type \"LORA\"); {FIX}")
    for key, kinds, what in (("r", (int,), "a positive integer"),
                             ("lora_alpha", (int, float), "a positive number")):
        if key in cfg:
            value = cfg[key]
            if isinstance(value, bool) or not isinstance(value, kinds) or not value > 0 \
                    or (isinstance(value, float) and math.isnan(value)):
                raise AdapterError(f"{where}: {key} is {json.dumps(value)}; it must be {what}")
    if "lora_dropout" in cfg and (isinstance(cfg["lora_dropout"], bool) or not isinstance(
            cfg["lora_dropout"], (int, float)) or not 0 <= cfg["lora_dropout"] < 1):
        raise AdapterError(f"{where}: lora_dropout is {json.dumps(cfg['lora_dropout'])}; it must "
                           "be a number in [0, 1)")
    targets = cfg.get("target_modules")
    if targets is not None and not isinstance(targets, str) and not (
            isinstance(targets, list) and all(isinstance(t, str) for t in targets)):
        raise AdapterError(f"{where}: target_modules must be a string or a list of strings")
    base = cfg.get("base_model_name_or_path")
    if base is not None and not isinstance(base, str):
        raise AdapterError(f"{where}: base_model_name_or_path must be a string")


def check_adapter_dir(adapter_dir: str | Path) -> dict[str, Any]:
    """The ``adapter_config.json`` of a usable LoRA folder, else one :class:`AdapterError`."""
    path = Path(adapter_dir).expanduser()
    if not path.is_dir():
        raise AdapterError(f"{path}: no such adapter folder" if not path.exists()
                           else f"{path}: not an adapter folder (a LoRA folder holds "
                                "adapter_config.json and adapter_model.safetensors)")
    cfg_file = path / "adapter_config.json"
    if not cfg_file.exists():
        raise AdapterError(f"{path}: not a LoRA adapter folder (no adapter_config.json)")
    cfg = files.read_json(cfg_file, "adapter config", expect=dict, error=AdapterError,
                          limit=files.META_BYTES)
    _check_config(path, cfg)
    weights = [path / n for n in WEIGHT_FILES if os.path.lexists(path / n)]
    if not weights:
        raise AdapterError(f"{path}: no adapter weights ({' or '.join(WEIGHT_FILES)}); {FIX}")
    if weights[0].name.endswith(".safetensors"):
        _safetensors_ok(weights[0])
    else:
        files.require_regular(weights[0], "adapter weights", AdapterError, limit=1 << 40)
    meta = path / "tracec.json"
    if os.path.lexists(meta):
        files.read_json(meta, "adapter metadata", expect=dict, error=AdapterError,
                        limit=files.META_BYTES)
    return cfg


def read_meta(adapter_dir: str | Path) -> dict[str, Any] | None:
    """``tracec.json`` of an adapter when it is a readable JSON object, else None."""
    try:
        meta = files.read_json(Path(adapter_dir) / "tracec.json", "adapter metadata",
                               expect=dict, limit=files.META_BYTES)
    except files.InputError:
        return None
    return meta


def hub_id(name: str, path: str | Path | None = None) -> str:
    """The name stock peft should look the base model up by: the hub id of a known short name
    or of a prepared folder (``tracec_model.json``), a hub id as given, else the name given."""
    if name in HUB_IDS:
        return HUB_IDS[name]
    folder = Path(path or name).expanduser()
    marker = folder / "tracec_model.json"
    if marker.is_file():
        try:
            kind = files.read_json(marker, "model marker", expect=dict).get("kind")
        except files.InputError:
            kind = None
        if kind in HUB_IDS:
            return HUB_IDS[kind]
    return name


def record_hub_id(adapter_dir: str | Path, model: str, model_path: str | Path | None) -> None:
    """Point ``adapter_config.json``'s ``base_model_name_or_path`` at the hub id of ``model``."""
    cfg_path = Path(adapter_dir) / "adapter_config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    cfg["base_model_name_or_path"] = hub_id(model, model_path)
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _identities(*names: Any) -> set[str]:
    out: set[str] = set()
    for n in names:
        if not isinstance(n, str) or not n:
            continue
        out.add(n)
        out.add(hub_id(n))
        p = Path(n).expanduser()
        if p.exists():
            out.add(str(p.resolve()))
            out.add(hub_id(n, p))
    return out


def check_base_model(adapter_dir: str | Path, model: str, model_path: str | Path | None) -> None:
    """Refuse an adapter whose records name another base model than ``model`` (both named)."""
    meta = read_meta(adapter_dir) or {}
    try:
        cfg = files.read_json(Path(adapter_dir) / "adapter_config.json", "adapter config",
                              expect=dict, limit=files.META_BYTES)
    except files.InputError:
        cfg = {}
    recorded = [meta.get("base_model"), meta.get("base_model_path"),
                cfg.get("base_model_name_or_path")]
    mine = _identities(model, str(model_path) if model_path else None)
    theirs = _identities(*recorded)
    if theirs and not theirs & mine:
        named = next(r for r in recorded if isinstance(r, str) and r)
        raise AdapterError(f"{adapter_dir}: the adapter was trained on {named!r}, not on "
                           f"{model!r}; load it on its own base model (e.g. "
                           f"local:{named}+adapter:{adapter_dir})")
