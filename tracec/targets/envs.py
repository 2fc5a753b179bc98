"""Resolve ``--env`` values to env constructors: registered ids or generated modules."""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym


class EnvSpecError(ValueError):
    """An ``--env`` value that names no environment."""


def _env_class(module: Any, origin: str) -> type:
    classes = [
        v for v in vars(module).values()
        if isinstance(v, type) and issubclass(v, gym.Env) and getattr(v, "capability", None) is not None
        and v.__module__ == module.__name__
    ]
    if len(classes) != 1:
        raise EnvSpecError(f"{origin}: expected exactly one capability env class, found {len(classes)}")
    return classes[0]


def _from_file(path: Path) -> type:
    if not path.is_file():
        raise EnvSpecError(f"{path}: file not found")
    name = "_tracec_env_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise EnvSpecError(f"{path}: cannot import")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # a broken generated module is a user-facing problem
        raise EnvSpecError(f"{path}: import failed: {type(exc).__name__}: {exc}") from None
    return _env_class(module, str(path))


def resolve_env(spec: str) -> tuple[str, Callable[[], Any]]:
    """``(name recorded in trajectories, constructor)`` for ``tracec/<name>-v0``, a file or a module."""
    if spec.endswith(".py") or "/" in spec and Path(spec).exists():
        cls = _from_file(Path(spec))
        return f"tracec/{cls.capability.name}-v0", cls
    if spec.startswith("tracec/"):
        try:
            importlib.import_module("generated_envs")  # registers tracec/<name>-v0 ids
        except ImportError:
            pass
        if spec not in gym.registry:
            raise EnvSpecError(
                f"unknown env {spec!r}: not registered (run `tracec compile specs/` to generate "
                "generated_envs/, or pass the module file)"
            )
        return spec, lambda: gym.make(spec, disable_env_checker=True)
    try:
        module = importlib.import_module(spec)
    except ImportError as exc:
        try:  # a capability name of generated_envs/ (what `tracec play` accepts)
            from tracec.harness.resolve import resolve_env as resolve_capability

            cls = resolve_capability(spec)
            return f"tracec/{cls.capability.name}-v0", cls
        except Exception:  # noqa: BLE001 - report the original lookup failure
            pass
        raise EnvSpecError(f"unknown env {spec!r}: {exc}") from None
    cls = _env_class(module, spec)
    return f"tracec/{cls.capability.name}-v0", cls
