"""The configuration of a composed model: ``moe.json``'s schema, the adapters on disk (identity,
weight hashes, base model, what composes) and the versions recorded with it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from tracec import __version__ as tracec_version
from tracec import files
from tracec.compose.errors import ComposeError
from tracec.llm.adapters import check_adapter_dir

FORMAT = "tracec-moe/1"
NONE_SLOT = "<none>"
WEIGHT_FILES = ("adapter_model.safetensors", "adapter_model.bin")
Weighting = Literal["st", "prob"]
RouteWeighting = Literal["st", "prob", "dense"]
LbOver = Literal["experts", "all"]
GateInit = Literal["zeros", "normal"]


# ---------------------------------------------------------------------------------------------
# moe.json


class AdapterRef(BaseModel):
    """One expert: where it was loaded from and the sha256 of its weight file."""

    name: str
    path: str
    weights_file: str
    sha256: str
    config_sha256: str | None = None  # of adapter_config.json (None in folders written before it)
    capability: str | None = None
    description: str | None = None


class GateSpec(BaseModel):
    """Where the gates sit and what they read."""

    placement: Literal["decoder_block_input"] = "decoder_block_input"
    input: Literal["rms_normalised_detached_hidden_state"] = "rms_normalised_detached_hidden_state"
    layers: int
    hidden_size: int
    init: GateInit = "zeros"
    init_scale: float = 0.0


class ClassifierSpec(BaseModel):
    """Classifier routing (the paper's): base model as a zero-shot classifier, top-p, merge."""

    scoring: Literal["labels", "likelihood"] = "labels"
    top_p: float = Field(0.9, gt=0, le=1)
    max_task_chars: int = Field(2000, ge=100, description="task text shown to the classifier")


Routing = Literal["token", "trajectory", "classifier"]


class MoeConfig(BaseModel):
    """The contents of ``moe.json``."""

    format: str = FORMAT
    base_model: str
    adapters: list[AdapterRef]
    top_k: int = Field(1, ge=1)
    weighting: Weighting = "st"
    routing: Routing = "token"
    trajectory_router: Literal["gate", "describe"] = "gate"
    classifier: ClassifierSpec = ClassifierSpec()
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
    check_adapter_config(path)
    weights = adapter_weights_file(path)
    meta: dict[str, Any] = {}
    if (path / "tracec.json").is_file():
        meta = files.read_json(path / "tracec.json", "adapter metadata", error=ComposeError)
    capability = meta.get("capability") if isinstance(meta, dict) else None
    return AdapterRef(
        name=str(capability or path.name),
        path=str(path),
        weights_file=weights.name,
        sha256=sha256_file(weights),
        config_sha256=sha256_file(path / "adapter_config.json"),
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
    import peft  # noqa: PLC0415 - moe.json's schema is read without the training stack
    import torch  # noqa: PLC0415
    import transformers  # noqa: PLC0415

    return {"tracec": str(tracec_version), "torch": torch.__version__,
            "transformers": transformers.__version__, "peft": peft.__version__}


def check_adapter_config(path: Path) -> None:
    cfg = check_adapter_dir(path)  # LoRA config types, complete safetensors, tracec.json object
    if cfg.get("peft_type", "LORA") != "LORA":
        raise ComposeError(f"{path}: a {cfg.get('peft_type')} adapter; only LoRA adapters compose")
    if cfg.get("use_dora"):
        raise ComposeError(f"{path}: DoRA adapters are not supported")
    if cfg.get("modules_to_save"):
        raise ComposeError(f"{path}: adapters with modules_to_save are not supported")
