"""The one env resolver: what a user names (a generated module, a folder, a spec, a gym id, a
capability name, ``module:Class`` or ``file.py:Class``) becomes an env class and factory.

``tracec play``, ``check``, ``eval``, ``train`` and ``run`` all resolve through here, and every
failure is a :class:`LoadError` whose message is the one-line diagnostic.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym

from tracec.compiler.api import CompileFailed, build_modules
from tracec.core.blame import user_frame
from tracec.runtime.env import Capability, CapabilityEnv

EnvClass = type[CapabilityEnv]
DEFAULT_ENVS_DIR = "generated_envs"
_NOTED: set[tuple[str, str]] = set()


def _note(ref: str, envs_dir: str | Path, entry: str, registered: str) -> None:
    """Say once that ``envs_dir``'s env is used for ``ref`` although another is registered."""
    key = (ref, str(envs_dir))
    if key not in _NOTED:
        _NOTED.add(key)
        print(f"note: {ref}: using {entry} from {envs_dir} (it shadows {registered}; pass "
              "another --envs-dir to choose)", file=sys.stderr)


class LoadError(ValueError):
    """A user-facing problem finding or importing an environment (message is the diagnostic)."""


def import_user(name: str, what: str, root: Path | None = None) -> types.ModuleType:
    """Import the user's module ``name``; whatever its code raises, or a ``sys.exit()`` in it,
    is a :class:`LoadError` naming the user's file and line, never a tracec bug."""
    try:
        return importlib.import_module(name)
    except LoadError:
        raise
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise LoadError(f"cannot import {what}: {exc}") from None
        raise user_code_error(exc, what, root) from None  # a module the user's code imports
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's code may raise anything
        raise user_code_error(exc, what, root) from None


def user_code_error(exc: BaseException, what: str, root: Path | None) -> LoadError:
    """The one-line error for an exception (or ``sys.exit``) raised by the user's code."""
    if isinstance(exc, SystemExit):
        why = f"called sys.exit({exc.code!r})"
    else:
        why = " ".join(f"raised {type(exc).__name__}: {exc}".split())[:300]
    where = user_frame(exc, root)
    return LoadError(f"{where + ': ' if where else ''}importing {what} {why} (an error in that code, "
                     "not in tracec: fix it or recompile the envs)")


@dataclass(frozen=True)
class EnvTarget:
    """A resolved env: the name it was given, its capability name, its class and a
    zero-argument factory (``gym.make`` for gym ids, else the class)."""

    name: str
    capability: str
    factory: Callable[[], Any]
    cls: type | None = None

    @property
    def gym_id(self) -> str:
        """``tracec/<capability>-v0``: the env's name in trajectories."""
        return f"tracec/{self.capability}-v0"


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


def _need_file(path: Path) -> None:
    """A regular file, else one LoadError (a FIFO or device is refused, never opened)."""
    if not path.is_file():
        if path.exists():
            raise LoadError(f"{path}: not a regular file (tracec reads regular files only)")
        raise LoadError(f"{path}: no such file")


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


def _folder_package(path: Path) -> str:
    """A private package for the folder of ``path`` (its ``__init__`` not run), so that a
    module there imports its neighbours relatively, as a variant's module imports its base's
    (``from . import BASE as base``); one per folder, so a base is imported once."""
    folder = path.resolve().parent
    name = f"_tracec_envs_{zlib.crc32(str(folder).encode()):08x}"
    if name not in sys.modules:
        package = types.ModuleType(name)
        package.__path__ = [str(folder)]
        sys.modules[name] = package
    return name


def import_path(path: Path) -> types.ModuleType:
    """Import a Python file (as its package module when it lies in a package under cwd)."""
    _need_file(path)
    cwd = str(Path.cwd())
    if cwd not in sys.path and "" not in sys.path:  # like `python -m`: local packages importable
        sys.path.insert(0, cwd)
    dotted = _dotted_name(path)
    if dotted:
        return import_user(dotted, str(path), path.resolve().parent)
    try:
        name = f"{_folder_package(path)}.{path.stem}"
        loaded = sys.modules.get(name)
        if loaded is not None and getattr(loaded, "__file__", None) == str(path.resolve()):
            return loaded  # already imported (a variant's module imports its base's)
        spec = importlib.util.spec_from_file_location(name, path.resolve())
        if spec is None or spec.loader is None:
            raise LoadError(f"{path}: not an importable Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    except LoadError:
        raise
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's code may raise anything
        raise user_code_error(exc, str(path), path.resolve().parent) from None


def is_env_module(path: Path) -> bool:
    return path.suffix == ".py" and not path.name.startswith("_")


def compile_specs(paths: list[Path]) -> list[types.ModuleType]:
    """Compile .tracec specs into modules with the compiler (``LoadError`` with its diagnostics)."""
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
            _need_file(path)
            specs.append(path)
            continue
        elif path.suffix == ".py":
            _need_file(path)
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


def _load_entry(entry: str) -> type:
    module_name, _, attr = entry.partition(":")
    module = import_user(module_name, module_name)
    return _pick_class(module, attr or None, module_name)


def _pick_class(module: types.ModuleType, cls_name: str | None, label: str) -> type:
    """The env class ``cls_name`` of ``module``, else its capability env, else its one
    ``gymnasium.Env`` subclass."""
    if cls_name:
        if not hasattr(module, cls_name):
            raise LoadError(f"{label} has no class {cls_name!r}")
        value = getattr(module, cls_name)
        return env_class(value) if isinstance(value, Capability) else value
    try:
        return env_class(module)
    except LoadError:
        pass
    found = [v for v in vars(module).values()
             if isinstance(v, type) and issubclass(v, gym.Env) and v.__module__ == module.__name__]
    if len(found) != 1:
        raise LoadError(f"{label}: expected one gymnasium.Env class, found {len(found)}; "
                        "name it as MODULE:Class")
    return found[0]


def _capability_name(cls: type, fallback: str) -> str:
    cap = getattr(cls, "capability", None)
    return getattr(cap, "name", None) or getattr(cls, "capability_name", None) or fallback


def _target(name: str, cls: type) -> EnvTarget:
    return EnvTarget(name, _capability_name(cls, cls.__name__), cls, cls)


def import_registry(envs_dir: str | Path = "generated_envs") -> dict[str, str]:
    """Import the ``generated_envs``-style package at ``envs_dir`` (registers the gym ids) and
    return its ``ENVS`` map (capability -> ``module:Class``); ``{}`` when there is none."""
    path = Path(envs_dir)
    if not (path / "__init__.py").exists() and str(envs_dir) != DEFAULT_ENVS_DIR:
        if path.is_dir():  # a folder the user named, with no envs in it: none, never the packaged
            return {}
        raise LoadError(f"--envs-dir {envs_dir}: not a folder of compiled envs (no such folder); "
                        f"compile into it first: tracec compile specs/ -o {envs_dir}")
    if not (path / "__init__.py").exists():
        path = Path("generated_envs")
        if not (path / "__init__.py").exists():
            try:
                return dict(getattr(importlib.import_module("generated_envs"), "ENVS", {}) or {})
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
    module = import_user(name, f"--envs-dir {envs_dir}", path.resolve())
    return dict(getattr(module, "ENVS", {}) or {})


def list_capabilities(envs_dir: str | Path = "generated_envs") -> list[str]:
    """Capability names registered in ``envs_dir`` (for ``tracec train --all``)."""
    return sorted(import_registry(envs_dir))


def resolve_env(ref: str, envs_dir: str | Path = "generated_envs") -> EnvTarget:
    """Resolve ``ref``: a generated module or ``file.py:Class``, a ``.tracec`` spec, a gym id
    (``tracec/<name>-v0``), ``module:Class``, an importable module or a capability name listed in
    ``envs_dir``'s ``ENVS``. Raises :class:`LoadError`."""
    target, _, cls_name = ref.partition(":") if "/" not in ref.partition(":")[2] else (ref, "", "")
    path = Path(target)
    if path.suffix == ".py":
        return _target(ref, _pick_class(import_path(path), cls_name or None, str(path)))
    if path.suffix == ".tracec":
        _need_file(path)
        return _target(ref, env_class(compile_specs([path])[0]))
    envs = import_registry(envs_dir)
    bare = ref.removeprefix("tracec/").removesuffix("-v0")
    if ref != bare and bare in envs:  # the chosen folder's env, even where another has the id
        cls = _load_entry(envs[bare])
        registered = gym.registry.get(ref)
        entry = getattr(registered, "entry_point", None)
        if isinstance(entry, str) and entry != envs[bare]:
            _note(ref, envs_dir, envs[bare], entry)
        return EnvTarget(ref, _capability_name(cls, bare), cls, cls)
    if ref.startswith("tracec/") and str(envs_dir) != DEFAULT_ENVS_DIR:  # never the packaged one
        known = ", ".join(sorted(envs)) or "none"
        raise LoadError(f"{ref}: not in --envs-dir {envs_dir} (its capabilities: {known}); "
                        "compile the spec into it or drop --envs-dir for the packaged envs")
    if ref.startswith("tracec/") or ref.endswith("-v0"):
        try:
            spec = gym.spec(ref)
        except Exception as exc:  # noqa: BLE001 - gymnasium raises several kinds
            raise LoadError(f"unknown environment id {ref!r}: {exc} "
                            "(compile specs first: tracec compile specs/)") from None
        cls = _load_entry(spec.entry_point) if isinstance(spec.entry_point, str) else spec.entry_point
        return EnvTarget(ref, _capability_name(cls, ref), lambda: gym.make(ref, disable_env_checker=True),
                         cls)
    if ref in envs:  # the registry's key is the capability name
        cls = _load_entry(envs[ref])
        return EnvTarget(ref, ref, cls, cls)
    if cls_name or "." in target:
        module = import_user(target, repr(target))
        return _target(ref, _pick_class(module, cls_name or None, target))
    known = ", ".join(sorted(envs)) or "none (run `tracec compile specs/`)"
    raise LoadError(f"unknown env {ref!r}: unknown environment, not a file, spec, gym id or "
                    f"capability name (known capabilities in {envs_dir}: {known})")
