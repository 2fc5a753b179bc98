"""Digest of what env modules generate: per seed, a sha256 of the world (`env.db`), the task
instance (task, user text, gold calls, values) and the first observation and info.

Compare two compiles of the same specs (e.g. before and after a compiler change, or a spec and
its variant), seed for seed:

    git show REV:generated_envs/x.py > /tmp/old/x.py
    python benchmarks/world_digest.py /tmp/old.json /tmp/old/*.py
    python benchmarks/world_digest.py /tmp/new.json generated_envs/x.py
    python benchmarks/world_digest.py --compare /tmp/old.json /tmp/new.json

After a change to world generation or caching (not to the compiler), digest the same generated
modules under each tree, with every task forced in turn as ``tracec check`` resets them:

    (cd OLD_TREE && PYTHONPATH=. python benchmarks/world_digest.py --forced --seeds 256 /tmp/old.json generated_envs/*.py)
    (cd NEW_TREE && PYTHONPATH=. python benchmarks/world_digest.py --forced --seeds 256 /tmp/new.json generated_envs/*.py)
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import sys
from pathlib import Path

from tracec.harness.resolve import env_class


def _load(path: Path):
    if (path.parent / "__init__.py").exists():  # a package's module (a variant imports its base)
        sys.path.insert(0, str(path.parent.resolve().parent))
        return importlib.import_module(f"{path.parent.name}.{path.stem}")
    spec = importlib.util.spec_from_file_location(f"digest_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _forced_row(env, seed: int) -> str:
    """Each task of ``seed`` forced in turn on one env (as ``tracec check`` resets them), then
    the seeded reset: initial and gold worlds, instance and first messages, key order kept."""
    parts = []
    for task in [t.name for t in env.capability.tasks] + [None]:
        obs, info = env.reset(seed=seed, options={"task": task} if task else None)
        inst = env.instance
        parts.append(json.dumps({
            "initial": env.initial_db, "db": env.db, "gold_db": env.gold_db, "task": inst.task,
            "user": inst.user, "gold": [(c.name, c.args) for c in inst.gold],
            "forbid": [(c.name, c.args) for c in inst.forbid], "values": inst.values,
            "communicate": inst.communicate, "obs": obs, "messages": info["messages"]},
            default=repr))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def digest(path: Path, seeds: int, forced: bool = False) -> dict:
    env = env_class(_load(path))()
    rows = []
    for seed in range(seeds):
        if forced:
            rows.append(_forced_row(env, seed))
            continue
        obs, info = env.reset(seed=seed)
        inst = env.instance
        blob = json.dumps({"db": env.db, "task": inst.task, "user": inst.user,
                           "gold": [(c.name, c.args) for c in inst.gold], "values": inst.values,
                           "obs": obs, "info": info}, default=str, sort_keys=True)
        rows.append(hashlib.sha256(blob.encode()).hexdigest())
    cap = env.capability
    return {"name": cap.name, "tasks": [t.name for t in cap.tasks], "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="JSON file to write (with --compare: the first digest)")
    ap.add_argument("modules", nargs="+", type=Path,
                    help="env modules (with --compare: the second digest)")
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--compare", action="store_true", help="compare two digest files")
    ap.add_argument("--forced", action="store_true",
                    help="per seed: every task forced in turn on one env, then the seeded reset, "
                         "with key order and the gold world (what a change to world caching or "
                         "generation must keep)")
    args = ap.parse_args()
    if args.compare:
        a = json.loads(args.out.read_text())
        b = json.loads(args.modules[0].read_text())
        for name in sorted(set(a) | set(b)):
            if name not in a or name not in b:
                print(f"{name}: only in {'the second' if name in b else 'the first'}")
                continue
            same = sum(x == y for x, y in zip(a[name]["rows"], b[name]["rows"]))
            print(f"{name}: {same}/{len(a[name]['rows'])} seeds identical"
                  + ("" if a[name]["tasks"] == b[name]["tasks"] else " (task lists differ)"))
        return
    out = {p.stem: digest(p, args.seeds, args.forced) for p in args.modules
           if p.name != "__init__.py"}
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}: {len(out)} env(s) x {args.seeds} seeds")


if __name__ == "__main__":
    main()
