"""Digests of drawn task instances, and how many of one seed range's repeat another's.

A held-out seed is only held out when the instance it draws is new: a task with a small
instance space (60 holidays x hours) draws on held-out seeds the very questions it trained on.
:func:`instance_digest` identifies what the agent is asked and what answers it (task, user
text, gold calls, forbids, scripted replies, values to communicate); :func:`world_digest` the
world it acts in. Both are sha256 of canonical JSON, the same on every machine.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

TRAIN_SAMPLE = 256  # training seeds drawn to compare with (from the start of the range)


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=repr).encode("utf-8", "surrogatepass")


def _calls(calls: Iterable[Any]) -> list:
    return [[c.name, c.args] for c in calls]


def instance_digest(inst: Any, capability: str = "") -> str:
    """sha256 of the task instance: what the agent is asked and what answers it."""
    return hashlib.sha256(_canonical({
        "capability": capability, "task": inst.task, "user": inst.user,
        "gold": _calls(inst.gold), "forbid": _calls(inst.forbid),
        "replies": [[list(r.keywords), r.text] for r in inst.replies],
        "communicate": dict(inst.communicate),
    })).hexdigest()


def world_digest(world: Any) -> str:
    """sha256 of a world (its records as canonical JSON)."""
    return hashlib.sha256(_canonical(world)).hexdigest()


@dataclass
class Drawn:
    """Digests of the instances a run of seeds drew: (instance, world) per seed, by task."""

    by_task: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def add(self, env: Any, world: bool = True) -> None:
        """Record the instance ``env`` just drew (after ``reset``; without ``world``, not its
        world: ``""``)."""
        inst = env.instance
        self.by_task.setdefault(inst.task, []).append(
            (instance_digest(inst, env.capability.name),
             world_digest(env.initial_db) if world else ""))

    def instances(self, task: str) -> set[str]:
        return {i for i, _ in self.by_task.get(task, ())}


def draw(make_env: Callable[[], Any], seeds: Iterable[int], task: str | None = None,
         world: bool = True) -> Drawn:
    """Reset an env on each seed (``task``: forced) and record what it drew."""
    env = make_env()
    out = Drawn()
    for seed in seeds:
        env.reset(seed=seed, options={"task": task} if task else None)
        out.add(env, world)
    return out


def estimated_instances(digests: Iterable[str]) -> float | None:
    """Birthday estimate of how many distinct instances a task has, from uniform draws: pairs
    drawn / equal pairs seen (None: no two equal, the space is too large to tell)."""
    counts = Counter(digests)
    n = sum(counts.values())
    equal = sum(c * (c - 1) // 2 for c in counts.values())
    if not equal:
        return None
    return n * (n - 1) / 2 / equal


def seen_share(instances: float, draws: float) -> float:
    """The chance that one given instance of ``instances`` equally likely ones is among
    ``draws`` draws."""
    if instances <= 1:
        return 1.0
    return -math.expm1(draws * math.log1p(-1 / instances))


def repeats(evaluated: Drawn, trained: Drawn) -> dict[str, Any]:
    """How many evaluated instances equal a trained one (and of those, in the same world too),
    and the tasks that repeat."""
    seen_inst = {i for v in trained.by_task.values() for i, _ in v}
    seen_both = {p for v in trained.by_task.values() for p in v}
    n = same = world = 0
    tasks: dict[str, int] = {}
    for task, pairs in evaluated.by_task.items():
        for pair in pairs:
            n += 1
            if pair[0] in seen_inst:
                same += 1
                tasks[task] = tasks.get(task, 0) + 1
                world += pair in seen_both
    return {"evaluated": n, "repeated": same, "repeated_same_world": world,
            "tasks": dict(sorted(tasks.items()))}
