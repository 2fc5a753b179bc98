"""The instance-overlap figure of an eval: how many evaluated instances equal a training one.

Seeds are disjoint, but two seeds can draw the same instance (the same question with the same
answer; :func:`tracec.runtime.instances.instance_digest`). Each compiled env is drawn on the
evaluated seeds and on a sample of the training seeds: the first ``TRAIN_SAMPLE`` seeds of the
adapter's recorded training range (``seeds.train`` in its ``tracec.json``; the default
``[0, 10^9)`` without an adapter) and the GRPO seeds it recorded using (``seeds.grpo_used``,
at most ``MAX_USED``). A task with a repeat is named: its instance space is small enough to
repeat.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from tracec.core.seeds import TRAIN_SEEDS, SeedRange, adapter_training_range
from tracec.runtime.env import CapabilityEnv
from tracec.runtime.instances import (
    TRAIN_SAMPLE,
    Drawn,
    draw,
    estimated_instances,
    repeats,
    seen_share,
)

MAX_USED = 4096


def _used(adapter: str | Path) -> list[int]:
    try:
        meta = json.loads((Path(adapter) / "tracec.json").read_text(encoding="utf-8"))
        lo, hi = (meta.get("seeds") or {}).get("grpo_used") or (0, -1)
        return list(range(int(lo), min(int(hi), int(lo) + MAX_USED - 1) + 1))
    except (OSError, ValueError, TypeError, AttributeError):
        return []


def training_sample(adapters: Iterable[str | Path]) -> tuple[list[int], str, str, int]:
    """(training seeds to draw, the range as text, where it comes from, seeds in the range)."""
    ranges: list[SeedRange] = []
    used: set[int] = set()
    for a in adapters:
        r = adapter_training_range(a)
        if r is not None:
            ranges.append(r)
            used.update(_used(a))
    source = "the adapters' tracec.json" if ranges else "the default training range (no adapter)"
    ranges = ranges or [TRAIN_SEEDS]
    seeds = set(used)
    for r in ranges:
        seeds.update(range(r.start, min(r.stop, r.start + TRAIN_SAMPLE)))
    return sorted(seeds), ", ".join(str(r) for r in ranges), source, max(r.size for r in ranges)


def instance_overlap(makers: Mapping[str, Callable[[], Any]], eval_seeds: Iterable[int],
                     adapters: Iterable[str | Path]) -> dict[str, Any]:
    """The ``instance_overlap`` field of an eval summary, over the compiled envs ``makers``."""
    seeds, text, source, size = training_sample(adapters)
    evaluated = list(eval_seeds)
    out: dict[str, Any] = {"train_seeds": text, "source": source, "train_sample": len(seeds),
                           "evaluated": 0, "repeated": 0, "repeated_same_world": 0,
                           "estimated_in_range": 0.0, "envs": {}}
    for name, make in makers.items():
        if not isinstance(make(), CapabilityEnv):  # a hand-written env: no task instances
            out["envs"][name] = {"why": "not a compiled capability env"}
            continue
        ev, tr = draw(make, evaluated), draw(make, seeds)
        r = repeats(ev, tr)
        r["estimated_in_range_by_task"] = est = estimate_in_range(ev, tr, size)
        r["estimated_in_range"] = round(max(sum(est.values()), 0.0), 1)
        out["envs"][name] = r
        for k in ("evaluated", "repeated", "repeated_same_world", "estimated_in_range"):
            out[k] += r[k]
    out["estimated_in_range"] = round(out["estimated_in_range"], 1)
    return out


def overlap_lines(o: Mapping[str, Any] | None) -> list[str]:
    """The figure as printed under an eval's table (and a warning naming repeating tasks)."""
    if not o:
        return []
    if not o.get("envs"):
        return [f"instance overlap: {o.get('why', 'no compiled env evaluated')}"]
    lines = [(f"instance overlap: {o['repeated']} of {o['evaluated']} evaluated instances equal a "
             f"training instance ({o['repeated_same_world']} in the same world too) on "
             f"{o['train_sample']} seeds drawn from training range {o['train_seeds']} "
             f"({o['source']}); about {o.get('estimated_in_range', 0):g} over the whole range")]
    for env, r in o["envs"].items():
        if "why" in r:
            lines.append(f"instance overlap: {env}: {r['why']}")
            continue
        named = {**r.get("estimated_in_range_by_task", {}), **r["tasks"]}
        if named:
            tasks = ", ".join(f"`{t}`" for t in sorted(named))
            lines.append(f"warning: {env}: tasks whose instances repeat training ones: {tasks}; "
                         "their held-out score may be memorised (`tracec check` C340)")
    return lines


def estimate_in_range(evaluated: Drawn, trained: Drawn, range_size: int) -> dict[str, float]:
    """Per task with repeats in the training sample: the expected number of its evaluated
    instances that some seed of the whole training range draws (birthday estimate of the
    task's instances; the task's share of the sample scales the range)."""
    total = sum(len(v) for v in trained.by_task.values()) or 1
    out: dict[str, float] = {}
    for task, pairs in evaluated.by_task.items():
        sample = [i for i, _ in trained.by_task.get(task, ())]
        n = estimated_instances(sample)
        if n is None:
            continue
        share = seen_share(n, range_size * len(sample) / total)
        out[task] = round(len(pairs) * share, 1)
    return out
