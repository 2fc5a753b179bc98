"""Composition: a token router over frozen LoRA adapters (TRACE capability composition).

The public entry point, shaped like a peft tuner's::

    from tracec.compose import build_composed, load_composed, MoeConfig, ComposeError

Names resolve on first use (PEP 562), so ``import tracec.compose`` and the torch-free names
(``ComposeError``, ``MoeConfig`` and the rest of ``moe.json``'s schema, adapter inspection) load
neither torch nor peft; the model, training and routing names load the training stack when
first touched. Submodules: ``config`` (moe.json, adapters on disk), ``errors``, ``layer`` (gates,
expert mixing), ``model`` (ComposedModel), ``training``, ``routing``, ``classify``, ``api``.
"""

from __future__ import annotations

import importlib
from typing import Any

from tracec.compose.errors import ComposeError

# public name -> the submodule that defines it
_WHERE: dict[str, str] = {
    **dict.fromkeys(["FORMAT", "NONE_SLOT", "AdapterRef", "ClassifierSpec", "GateSpec",
                     "MoeConfig", "Routing", "adapter_base_model", "describe_adapter"], "config"),
    **dict.fromkeys(["ComposedModel", "compose", "load_base"], "model"),
    **dict.fromkeys(["ComposeResult", "build_composed", "load_composed", "train_composed",
                     "with_routers"], "api"),
    **dict.fromkeys(["ComposeTrainConfig", "read_trajectories"], "training"),
    **dict.fromkeys(["RouteDecision", "decide", "merge_adapters", "weights_from_routing"],
                    "routing"),
}

__all__ = [  # noqa: RUF022 - grouped by submodule, as in _WHERE
    "ComposeError",
    "FORMAT", "NONE_SLOT", "AdapterRef", "ClassifierSpec", "GateSpec", "MoeConfig", "Routing",
    "adapter_base_model", "describe_adapter",
    "ComposedModel", "compose", "load_base",
    "ComposeResult", "build_composed", "load_composed", "train_composed", "with_routers",
    "ComposeTrainConfig", "read_trajectories",
    "RouteDecision", "decide", "merge_adapters", "weights_from_routing",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
