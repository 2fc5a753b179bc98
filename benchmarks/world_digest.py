"""Digest of what env modules generate: per seed, a sha256 of the world (`env.db`), the task
instance (task, user text, gold calls, values) and the first observation and info.

Compare two compiles of the same specs (e.g. before and after a compiler change, or a spec and
its variant), seed for seed:

    git show REV:generated_envs/x.py > /tmp/old/x.py
    python benchmarks/world_digest.py /tmp/old.json /tmp/old/*.py
    python benchmarks/world_digest.py /tmp/new.json generated_envs/x.py
    python benchmarks/world_digest.py --compare /tmp/old.json /tmp/new.json
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
    spec = importlib.util.spec_from_file_location(f"digest_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def digest(path: Path, seeds: int) -> dict:
    env = env_class(_load(path))()
    rows = []
    for seed in range(seeds):
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
    out = {p.stem: digest(p, args.seeds) for p in args.modules if p.name != "__init__.py"}
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}: {len(out)} env(s) x {args.seeds} seeds")


if __name__ == "__main__":
    main()
