"""Find capability environments: from generated modules, folders, specs, gym ids or names."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
import zlib
from pathlib import Path
from typing import Any

from tracec.runtime.env import Capability, CapabilityEnv

EnvClass = type[CapabilityEnv]


class LoadError(Exception):
    """A user-facing problem finding or importing an environment (message is the diagnostic)."""


def env_class(target: Any) -> EnvClass:
    """The env class of a Capability, a CapabilityEnv subclass, or a generated module."""
    if isinstance(target, type) and issubclass(target, CapabilityEnv):
        return target
    if isinstance(target, Capability):
        return type(f"{target.name}_Env", (CapabilityEnv,), {"capability": target})
    if isinstance(target, types.ModuleType):
        for value in vars(target).values():
            if (isinstance(value, type) and issubclass(value, CapabilityEnv) and value is not CapabilityEnv
                    and getattr(value, "capability", None) is not None
                    and value.__module__ == target.__name__):
                return value
        cap = getattr(target, "CAPABILITY", None)
        if isinstance(cap, Capability):
            return env_class(cap)
        raise LoadError(f"module {target.__name__} defines no CapabilityEnv subclass or CAPABILITY")
    raise TypeError(f"cannot use {target!r}: expected a Capability, env class or module")


def _dotted_name(path: Path) -> str | None:
    """``a.b.c`` when ``path`` is inside packages reachable from the current directory."""
    try:
        rel = path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return None
    parts = rel.with_suffix("").parts
    for i in range(1, len(parts)):
        if not (Path.cwd() / Path(*parts[:i]) / "__init__.py").exists():
            return None
    return ".".join(parts)


def import_path(path: Path) -> types.ModuleType:
    """Import a Python file (as its package module when it lies in a package under cwd)."""
    if not path.is_file():
        raise LoadError(f"{path}: no such file")
    cwd = str(Path.cwd())
    if cwd not in sys.path and "" not in sys.path:  # like `python -m`: local packages importable
        sys.path.insert(0, cwd)
    dotted = _dotted_name(path)
    try:
        if dotted:
            return importlib.import_module(dotted)
        name = f"_tracec_env_{path.stem}_{zlib.crc32(str(path.resolve()).encode()):08x}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise LoadError(f"{path}: not an importable Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    except LoadError:
        raise
    except Exception as exc:
        raise LoadError(f"{path}: import failed: {type(exc).__name__}: {exc}") from exc


def is_env_module(path: Path) -> bool:
    return path.suffix == ".py" and not path.name.startswith("_")


def compile_specs(paths: list[Path]) -> list[types.ModuleType]:
    """Compile .tracec specs into modules with the compiler (``LoadError`` with its diagnostics)."""
    try:
        from tracec.compiler.api import CompileFailed, build_modules
    except ImportError as exc:
        raise LoadError(f"cannot compile specs: the compiler is unavailable ({exc})") from exc
    try:
        return list(build_modules([Path(p) for p in paths]))
    except CompileFailed as exc:
        raise LoadError(str(exc)) from exc
    except Exception as exc:
        raise LoadError(f"compiling {', '.join(map(str, paths))} failed: {type(exc).__name__}: {exc}") from exc


def load_paths(paths: list[Path]) -> list[tuple[str, Any]]:
    """(label, module-or-LoadError) for every env module or spec in ``paths`` (files or folders)."""
    out: list[tuple[str, Any]] = []
    specs: list[Path] = []
    for path in paths:
        if path.is_dir():
            specs.extend(sorted(path.glob("*.tracec")))
            files = sorted(p for p in path.glob("*.py") if is_env_module(p))
        elif path.suffix == ".tracec":
            if not path.is_file():
                raise LoadError(f"{path}: no such file")
            specs.append(path)
            continue
        elif path.suffix == ".py":
            if not path.is_file():
                raise LoadError(f"{path}: no such file")
            files = [path]
        elif not path.exists():
            raise LoadError(f"{path}: no such file or folder")
        else:
            raise LoadError(f"{path}: expected a generated .py module, a .tracec spec or a folder")
        for f in files:
            try:
                out.append((str(f), import_path(f)))
            except LoadError as exc:
                out.append((str(f), exc))
    if specs:
        for module in compile_specs(specs):
            out.append((getattr(module, "__file__", None) or module.__name__, module))
    return out


def _load_entry(entry: str) -> EnvClass:
    module_name, _, attr = entry.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise LoadError(f"cannot import {module_name}: {type(exc).__name__}: {exc}") from exc
    return env_class(getattr(module, attr)) if attr else env_class(module)


def _registered() -> dict[str, str]:
    """``generated_envs.ENVS`` (importing it registers the gym ids); looks in cwd too."""
    cwd = str(Path.cwd())
    if (Path.cwd() / "generated_envs" / "__init__.py").is_file() and cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        pkg = importlib.import_module("generated_envs")
    except ModuleNotFoundError:
        return {}
    return dict(getattr(pkg, "ENVS", {}) or {})


def resolve_env(ref: str) -> EnvClass:
    """An env class from a generated module path, a spec path, a gym id or a capability name."""
    path = Path(ref)
    if ref.endswith(".py"):
        return env_class(import_path(path))
    if ref.endswith(".tracec"):
        if not path.is_file():
            raise LoadError(f"{path}: no such file")
        return env_class(compile_specs([path])[0])
    envs = _registered()
    if "/" in ref or ref.endswith("-v0"):
        import gymnasium as gym

        try:
            spec = gym.spec(ref)
        except Exception as exc:  # noqa: BLE001 - gymnasium raises several kinds
            raise LoadError(f"unknown environment id {ref!r}: {exc}") from None
        if isinstance(spec.entry_point, str):
            return _load_entry(spec.entry_point)
        return env_class(spec.entry_point)
    if ref in envs:
        return _load_entry(envs[ref])
    known = ", ".join(sorted(envs)) or "none (run `tracec compile specs/`)"
    raise LoadError(f"unknown environment {ref!r}; known capabilities: {known}")
