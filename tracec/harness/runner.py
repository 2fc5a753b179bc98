"""Run an agent on envs for tasks × trials, batched in lockstep, resumable.

Every finished episode is appended (and fsynced) to the trajectory JSONL before the next is
counted; a rerun reads the file, skips the (env, task, trial) triples already there and runs the
rest, so a killed run continues where it stopped and nothing is counted twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracec.harness.agents import Agent
from tracec.harness.results import Episode, EpisodeWriter, now
from tracec.runtime.lib import fmt
from tracec.runtime.oracle import oracle_turns


@dataclass(frozen=True)
class Job:
    """One episode to run: ``env.reset(seed=seed, options=options)``."""

    env: str  # env name as recorded in trajectories (tau2:airline, tracec/foo-v0)
    task_id: str
    trial: int
    seed: int | None
    options: dict = field(default_factory=dict, hash=False, compare=False)

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.env, self.task_id, self.trial)


@dataclass
class _Slot:
    env: Any
    job: Job | None = None
    info: dict | None = None
    started: float = 0.0
    start_time: str = ""
    task: Any = None  # what agents get as the episode's task (the oracle reads it)


def task_of(env: Any, info: dict) -> Any:
    """The episode's task for agents: τ² targets give their task dict in ``info["task"]``; a
    compiled env gives only the task's name, so the oracle's turns (gold calls, then a report of
    every value to communicate) are added from the drawn instance."""
    task = info.get("task")
    inner = getattr(env, "unwrapped", env)
    if isinstance(task, dict) or getattr(inner, "instance", None) is None \
            or getattr(inner, "capability", None) is None:
        return task

    return {"name": task, "oracle_turns": list(oracle_turns(inner))}


def gold_info(env: Any) -> dict[str, Any]:
    """A compiled env's drawn gold calls and values to communicate, in the trajectory format
    ``tracec analyze`` reads (``gold_actions``, ``communicate_info``); ``{}`` for other envs."""
    inner = getattr(env, "unwrapped", env)
    inst = getattr(inner, "instance", None)
    if inst is None or getattr(inner, "capability", None) is None:
        return {}
    return {"gold_actions": [{"name": c.name, "arguments": dict(c.arguments)} for c in inst.gold],
            "communicate_info": [fmt(v) for v in inst.communicate.values()]}


def episode_id(job: Job) -> str:
    return f"{job.env}/{job.task_id}/{job.trial}"


def pending_jobs(jobs: Iterable[Job], done: Iterable[Episode]) -> list[Job]:
    """Jobs whose (env, task, trial) has no episode yet."""
    seen = {(e.env, e.task_id, e.trial) for e in done}
    return [j for j in jobs if j.key not in seen]


def dedupe(episodes: Iterable[Episode]) -> list[Episode]:
    """The first episode of each (env, task, trial)."""
    seen: set = set()
    out = []
    for e in episodes:
        key = (e.env, e.task_id, e.trial)
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out


def run_jobs(
    jobs: Sequence[Job],
    make_env: Callable[[str], Any],
    agent: Agent,
    writer: EpisodeWriter | None = None,
    batch_size: int = 1,
    on_episode: Callable[[Episode], None] | None = None,
    extra_info: Callable[[Any, dict], dict] | None = None,
    job_info: Callable[[Job], dict] | None = None,
) -> list[Episode]:
    """Run ``jobs`` with up to ``batch_size`` episodes in flight; returns the new episodes.

    ``make_env(env_name)`` builds an env; envs are reused across jobs of the same name.
    ``extra_info(env, final_info)`` and ``job_info(job)`` add fields to an episode's ``info``.
    """
    queue = list(jobs)
    free: dict[str, list[Any]] = {}
    slots: list[_Slot] = []
    finished: list[Episode] = []

    def start(job: Job) -> _Slot:
        pool = free.setdefault(job.env, [])
        env = pool.pop() if pool else make_env(job.env)
        _, info = env.reset(seed=job.seed, options=dict(job.options))
        return _Slot(env, job, info, time.perf_counter(), now(), task_of(env, info))

    while queue or slots:
        while queue and len(slots) < max(1, batch_size):
            slots.append(start(queue.pop(0)))
        batch = [(s.info["messages"], s.info["tools"]) for s in slots]
        actions = agent.act(batch, tasks=[s.task for s in slots])
        still: list[_Slot] = []
        for slot, action in zip(slots, actions):
            _, reward, terminated, truncated, info = slot.env.step(action)
            # the env contract puts the tools (and the task) in reset's info; step's info may
            # carry only the messages, so keep what reset gave
            slot.info = {**slot.info, **info}
            if not (terminated or truncated):
                still.append(slot)
                continue
            ep = _episode(slot, float(reward), info, agent, extra_info)
            if job_info is not None:
                ep.info.update(job_info(slot.job))
            if writer is not None:
                writer.write(ep)
            finished.append(ep)
            if on_episode is not None:
                on_episode(ep)
            free.setdefault(slot.job.env, []).append(slot.env)
        slots = still
    return finished


def _episode(slot: _Slot, reward: float, info: dict, agent: Agent,
             extra_info: Callable[[Any, dict], dict] | None) -> Episode:
    job = slot.job
    assert job is not None
    breakdown = info.get("reward_breakdown") or {}
    reason = info.get("termination_reason") or breakdown.get("ended_by") or ""
    meta: dict[str, Any] = {
        "trial": job.trial,
        "seed": job.seed,
        "agent": getattr(agent, "name", type(agent).__name__),
        "termination_reason": reason,
        "reward_breakdown": breakdown,
        "start_time": slot.start_time,
        "end_time": now(),
        "duration": round(time.perf_counter() - slot.started, 4),
        "turns": sum(1 for m in info["messages"] if m.get("role") == "assistant"),
    }
    meta.update(gold_info(slot.env))
    if extra_info is not None:
        meta.update(extra_info(slot.env, info))
    record = getattr(agent, "episode_info", None)  # e.g. the adapters a router chose
    if callable(record):
        meta.update(record(info["messages"]))
    return Episode(
        id=episode_id(job),
        task_id=job.task_id,
        env=job.env,
        messages=[dict(m) for m in info["messages"]],
        reward=reward,
        success=reward >= 1.0 - 1e-9,
        info=meta,
    )
