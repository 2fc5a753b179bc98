"""``tracec grade``: re-grade saved τ² Results JSON with tracec's grader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracec.harness.results import from_tau2_messages, load_tau2_results, write_json_atomic
from tracec.targets.data import DataError, Task
from tracec.targets.grading import grade
from tracec.targets.world import load_world

ROLES = ("system", "user", "assistant", "tool")


def check_messages(messages: list, where: str) -> None:
    """Every message is an object with a known role (else grading would be silently wrong)."""
    flat: list = []
    for m in messages:
        if isinstance(m, dict) and m.get("role") == "tool" and "tool_messages" in m:
            flat.extend(m["tool_messages"] if isinstance(m["tool_messages"], list) else [None])
        else:
            flat.append(m)
    for i, m in enumerate(flat):
        if not isinstance(m, dict):
            raise DataError(f"{where}: message {i} is not an object")
        role = m.get("role")
        if role is None:
            raise DataError(f"{where}: message {i} has no role")
        if role not in ROLES:
            raise DataError(f"{where}: message {i} has unknown role {role!r} "
                            f"(expected {', '.join(ROLES)})")
        if not isinstance(m.get("content"), (str, type(None))):
            raise DataError(f"{where}: message {i}: 'content' must be a string or null")
        calls = m.get("tool_calls")
        if calls is not None and not (isinstance(calls, list)
                                      and all(isinstance(c, dict) for c in calls)):
            raise DataError(f"{where}: message {i}: 'tool_calls' must be a list of objects")


def regrade(path: str, tau2_data: str | None, domain: str | None, judge: Any = None,
            out_path: str | None = None) -> dict:
    """Grade every simulation of a τ² results file; compare with the recorded rewards."""
    res = load_tau2_results(path)
    if domain and res.domain and domain != res.domain:
        raise DataError(f"{path}: the results are {res.domain} simulations, not {domain}; "
                        f"drop --domain or pass --domain {res.domain}")
    domain = domain or res.domain
    for sim in res.simulations:
        check_messages(sim.messages, f"{path}: simulation {sim.id}")
        recorded = (sim.reward_info or {}).get("reward")
        if recorded is not None and (isinstance(recorded, bool)
                                     or not isinstance(recorded, (int, float))):
            raise DataError(f"{path}: simulation {sim.id}: reward_info.reward must be a number, "
                            f"got {recorded!r:.40}")
    if not domain:
        raise DataError(f"{path}: no domain in info.environment_info; pass --domain")
    world = load_world(domain, tau2_data)
    tasks: dict[str, Task] = dict(world.tasks)
    for raw in res.tasks:  # the file's own task definitions win (same ids, maybe edited)
        try:
            t = Task.model_validate(raw)
        except Exception as exc:  # noqa: BLE001 - report which task is broken
            raise DataError(f"{path}: task {raw.get('id')!r} is malformed: {exc}") from None
        tasks[t.id] = t
    grades = []
    for sim in res.simulations:
        task = tasks.get(sim.task_id)
        if task is None:
            raise DataError(f"{path}: simulation {sim.id} refers to unknown task {sim.task_id!r}")
        g = grade(world, task, from_tau2_messages(sim.messages), sim.termination_reason, judge)
        recorded = (sim.reward_info or {}).get("reward")
        grades.append({
            "simulation_id": sim.id,
            "task_id": sim.task_id,
            "trial": sim.trial,
            "termination_reason": sim.termination_reason,
            "recorded_reward": recorded,
            **g.model_dump(include={"reward", "reward_breakdown", "db_match", "nl_judged", "note"}),
        })
        if out_path:
            sim.reward_info = g.to_tau2_reward_info()
    comparable = [g for g in grades if g["recorded_reward"] is not None]
    report = {
        "file": str(path),
        "domain": domain,
        "n": len(grades),
        "mean_reward": sum(g["reward"] for g in grades) / len(grades) if grades else 0.0,
        "comparable": len(comparable),
        "agree": sum(abs(g["reward"] - g["recorded_reward"]) < 1e-6 for g in comparable),
        "nl_unjudged": sum(1 for g in grades if "not judged" in g["note"]),
        "grades": grades,
    }
    if out_path:
        write_json_atomic(Path(out_path), res.model_dump(mode="json"))
    return report
