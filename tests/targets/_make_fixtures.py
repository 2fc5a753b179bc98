"""Regenerate tests/fixtures/tau2/targets/ from a τ²-bench data directory (run by hand).

    python tests/targets/_make_fixtures.py /path/to/tau2-bench/data/tau2/domains

Picks a few tasks per domain, keeps the records their gold actions touch (plus the users'
reservations/orders, their flights/products, and a few unrelated records as distractors), and
keeps only tasks whose gold replay gives the same tool outputs on the subset as on the full
database. The data is MIT-licensed (τ²-bench, Sierra Research); LICENSE is copied alongside.
"""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path

from tracec.targets.world import CowTable, load_world

OUT = Path(__file__).resolve().parents[1] / "fixtures" / "tau2" / "targets"
WANT = {
    "airline": ["1", "5", "7", "13", "14", "23", "27", "38"],
    "retail": ["0", "5", "13", "20", "33", "34", "47", "90"],
}
LINKS = {  # table -> [(field, table it points into)]
    "users": [("reservations", "reservations"), ("orders", "orders")],
    "reservations": [("flights", "flights")],
    "orders": [("items", "products")],
}


class Tracing(CowTable):
    """Records the keys a tool looks up one by one (full scans do not count)."""

    __slots__ = ("scanning", "seen")

    def __init__(self, base: dict) -> None:
        super().__init__(base)
        self.seen: set = set()
        self.scanning = False

    def _own(self, key):
        if dict.__contains__(self, key) and not self.scanning:
            self.seen.add(key)
        super()._own(key)

    def _own_all(self) -> None:
        self.scanning = True
        try:
            super()._own_all()
        finally:
            self.scanning = False


def closure(pristine: dict, keep: dict[str, set]) -> None:
    changed = True
    while changed:
        changed = False
        for table, links in LINKS.items():
            for key in list(keep.get(table, ())):
                rec = pristine[table][key]
                for field, target in links:
                    if target not in pristine or field not in rec:
                        continue
                    refs = rec[field]
                    ids = [r.get("flight_number") or r.get("product_id") if isinstance(r, dict) else r
                           for r in refs]
                    for rid in ids:
                        if rid in pristine[target] and rid not in keep.setdefault(target, set()):
                            keep[target].add(rid)
                            changed = True


def main(src: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    if (Path(src) / "LICENSE").exists():
        shutil.copy(Path(src) / "LICENSE", OUT / "LICENSE")
    rng = random.Random(0)
    for domain, ids in WANT.items():
        world = load_world(domain, src)
        keep: dict[str, set] = {t: set() for t in world.pristine}
        for tid in ids:
            db = {k: Tracing(v) for k, v in world.pristine.items()}
            for a in world.tasks[tid].gold_actions:
                world.call(db, a.name, a.arguments)
            for t, table in db.items():
                keep[t] |= table.seen
        # the users named in the scenarios (find_user_id_* scans)
        for t in keep:
            extra = sorted(world.pristine[t])
            keep[t] |= set(rng.sample(extra, min(3, len(extra))))
        closure(world.pristine, keep)
        sub = {t: {k: v for k, v in world.pristine[t].items() if k in keep[t]} for t in world.pristine}
        d = OUT / domain
        d.mkdir(exist_ok=True)
        (d / "db.json").write_text(json.dumps(sub, indent=1))
        shutil.copy(Path(src) / domain / "policy.md", d / "policy.md")
        dump = [world.tasks[t].model_dump(mode="json", exclude_none=True) for t in ids]
        (d / "tasks.json").write_text(json.dumps(dump, indent=1))
        # keep tasks whose gold replay reads the same on the subset
        from tracec.targets.world import _load_world

        _load_world.cache_clear()
        small = load_world(domain, OUT)
        good = []
        for tid in ids:
            full_db, small_db = world.fresh_db(), small.fresh_db()
            same = all(
                world.call(full_db, a.name, a.arguments) == small.call(small_db, a.name, a.arguments)
                for a in world.tasks[tid].gold_actions
            )
            if same:
                good.append(tid)
        tasks = [world.tasks[t].model_dump(mode="json", exclude_none=True) for t in good]
        (d / "tasks.json").write_text(json.dumps(tasks, indent=1))
        split = {"base": good, "train": good[: len(good) // 2], "test": good[len(good) // 2:]}
        (d / "split_tasks.json").write_text(json.dumps(split, indent=1))
        print(domain, {t: len(v) for t, v in sub.items()}, "tasks", good)


if __name__ == "__main__":
    main(sys.argv[1])
