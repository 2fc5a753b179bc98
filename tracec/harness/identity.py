"""What a result was measured on: an env's version and the settings that define a run.

Every episode records ``info["env_version"]`` (the env id, the spec's sha256 and the generated
module's sha256 for a compiled env, of a variant's module and its base's together; the task
data's sha256 for a τ² target) and
``info["run"]`` (the agent and the settings that change what an episode is). A resume and
``tracec compare`` use :func:`changes` to refuse results of a different env or run.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any


def _sha256_file(path: str | Path | None) -> str:
    if not path:
        return ""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""


def _module_files(cls: Any) -> list[str]:
    """The files of the modules that define ``cls`` and the env classes it extends, its own
    first: a variant's module and its base's (what the variant's episodes run)."""
    out: list[str] = []
    for klass in getattr(cls, "__mro__", (cls,)):
        if getattr(klass, "capability", None) is None:
            continue
        module = sys.modules.get(getattr(klass, "__module__", "") or "")
        path = getattr(module, "__file__", None)
        if path and path not in out:
            out.append(path)
    return out


def modules_sha256(cls: Any) -> str:
    """sha256 of the module file of an env class; for a variant (a subclass of its base's env,
    in a module of its own) of its module's bytes followed by its base module's; ``""`` when
    a file cannot be read."""
    paths = _module_files(cls)
    if len(paths) == 1:
        return _sha256_file(paths[0])
    digest = hashlib.sha256()
    for path in paths:
        try:
            digest.update(Path(path).read_bytes())
        except OSError:
            return ""
    return digest.hexdigest() if paths else ""


def compiled_env_version(env_id: str, cls: Any) -> dict[str, str]:
    """``{env_id, spec_sha256, module_sha256}`` of a compiled env class (empty digests where
    the class has no spec or module file; a variant's covers its base's module too)."""
    cap = getattr(cls, "capability", None)
    return {"env_id": env_id, "spec_sha256": str(getattr(cap, "spec_sha256", "") or ""),
            "module_sha256": modules_sha256(cls)}


def tau2_version(env_id: str, tasks: list[dict], policy: str) -> dict[str, str]:
    """``{env_id, data_sha256}`` of a τ² target: its selected tasks and its policy."""
    blob = json.dumps({"tasks": tasks, "policy": policy}, sort_keys=True, default=str)
    return {"env_id": env_id, "data_sha256": hashlib.sha256(blob.encode()).hexdigest()}


def _short(value: Any) -> str:
    text = str(value)
    return text[:12] + "…" if len(text) == 64 and all(c in "0123456789abcdef" for c in text) \
        else text[:60]


def changes(old: dict | None, new: dict) -> list[str]:
    """``key old → new`` for each key of ``new`` whose recorded value differs (keys the old
    record lacks are not compared: a result from before they were recorded)."""
    if not old:
        return []
    return [f"{k} {_short(old[k])} → {_short(v)}" for k, v in new.items()
            if k in old and old[k] != v]
