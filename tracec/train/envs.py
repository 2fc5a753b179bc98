"""Resolve what `tracec train ENV` names into an env factory.

ENV is a gym id (``tracec/<name>-v0``), a capability name listed in ``generated_envs.ENVS``,
a generated module path (``generated_envs/foo.py``), or ``module:Class`` / ``file.py:Class``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class EnvNotFound(ValueError):
    """ENV names nothing we can build."""


@dataclass(frozen=True)
class EnvTarget:
    """A resolved env: a display name, the capability name and a zero-argument factory."""

    name: str
    capability: str
    factory: Callable[[], Any]


def _module_from_file(path: Path):
    name = f"_tracec_env_{path.stem}_{abs(hash(str(path.resolve())))}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise EnvNotFound(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _env_class(module, cls_name: str | None, label: str):
    if cls_name:
        if not hasattr(module, cls_name):
            raise EnvNotFound(f"{label} has no class {cls_name!r}")
        return getattr(module, cls_name)
    import gymnasium as gym

    found = [v for v in vars(module).values()
             if isinstance(v, type) and issubclass(v, gym.Env) and v.__module__ == module.__name__]
    if len(found) != 1:
        raise EnvNotFound(f"{label}: expected one gymnasium.Env class, found {len(found)}; "
                          "name it as MODULE:Class")
    return found[0]


def _capability_name(cls, fallback: str) -> str:
    cap = getattr(cls, "capability", None)
    return getattr(cap, "name", None) or getattr(cls, "capability_name", None) or fallback


def _from_class(cls, label: str) -> EnvTarget:
    cap = _capability_name(cls, cls.__name__)
    return EnvTarget(label, cap, cls)


def resolve_env(spec: str, envs_dir: str | Path = "generated_envs") -> EnvTarget:
    """Turn ENV into an :class:`EnvTarget`; raises :class:`EnvNotFound` with a helpful message."""
    import gymnasium as gym

    target, _, cls_name = spec.partition(":") if not spec.startswith("tracec/") else (spec, "", "")
    if spec.startswith("tracec/"):
        _import_registry(envs_dir)
        if spec not in gym.registry:
            raise EnvNotFound(f"no gym env {spec!r} is registered (compile specs first: "
                              "tracec compile specs/)")
        cap = spec.removeprefix("tracec/").rsplit("-v", 1)[0]
        return EnvTarget(spec, cap, lambda: gym.make(spec, disable_env_checker=True))
    path = Path(target)
    if path.suffix == ".py":
        if not path.exists():
            raise EnvNotFound(f"no such file: {path}")
        return _from_class(_env_class(_module_from_file(path), cls_name or None, str(path)), spec)
    if cls_name:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise EnvNotFound(f"cannot import {target!r}: {exc}") from None
        return _from_class(_env_class(module, cls_name, target), spec)
    registry = _import_registry(envs_dir)
    if spec in registry:
        mod, _, cls = registry[spec].partition(":")
        module = importlib.import_module(mod)
        return EnvTarget(spec, spec, _env_class(module, cls or None, mod))
    known = ", ".join(sorted(registry)) or "none"
    raise EnvNotFound(f"unknown env {spec!r}: not a gym id, file or capability "
                      f"(capabilities in {envs_dir}: {known})")


def _import_registry(envs_dir: str | Path) -> dict[str, str]:
    """Import the ``generated_envs``-style package at ``envs_dir`` (registers gym ids) and return
    its ``ENVS`` map; ``{}`` when there is none."""
    path = Path(envs_dir)
    if not (path / "__init__.py").exists():
        path = Path("generated_envs")
        if not (path / "__init__.py").exists():
            try:
                return dict(getattr(importlib.import_module("generated_envs"), "ENVS", {}))
            except ImportError:
                return {}
    name, parent = path.resolve().name, str(path.resolve().parent)
    loaded = sys.modules.get(name)
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() != \
            (path / "__init__.py").resolve():
        for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
            del sys.modules[key]  # a different dir of the same name was imported before
    if parent not in sys.path:
        sys.path.insert(0, parent)
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise EnvNotFound(f"cannot import {path}: {exc}") from None
    return dict(getattr(module, "ENVS", {}))


def list_capabilities(envs_dir: str | Path) -> list[str]:
    """Capability names registered in ``envs_dir`` (for ``tracec train --all``)."""
    return sorted(_import_registry(envs_dir))
