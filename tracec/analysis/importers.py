"""Read trajectories from τ²-bench Results JSON, τ-bench v1 historical trajectories,
OpenAI-format JSONL and tracec's own JSONL into :class:`Trajectory` records.

Every error names the file and the record (``file.jsonl:12`` / ``file.json: simulations[3]``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable

from pydantic import ValidationError

from tracec import files
from tracec.analysis.errors import AnalysisError, warn
from tracec.analysis.trajectory import Message, Trajectory, make_tool_call

FORMATS = ("auto", "tau2", "tau1", "jsonl")
SUCCESS_EPS = 1e-6


def _is_success(reward: float) -> bool:
    return reward >= 1.0 - SUCCESS_EPS


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "record"
    return f"{loc}: {err['msg']}"


def _openai_message(raw: Any, where: str) -> Message:
    """One message, normalising τ²'s ``{name, arguments: dict}`` tool calls to OpenAI form."""
    if not isinstance(raw, dict):
        raise AnalysisError(f"{where}: message is not an object")
    msg = {k: v for k, v in raw.items() if v is not None or k == "content"}
    calls = msg.get("tool_calls")
    if calls and not isinstance(calls, list):
        raise AnalysisError(f"{where}: 'tool_calls' must be a list, got {type(calls).__name__}")
    if calls:
        norm = []
        for c in calls:
            if not isinstance(c, dict):
                raise AnalysisError(f"{where}: tool call is not an object")
            fn = c.get("function") if isinstance(c.get("function"), dict) else c
            if not isinstance(fn.get("name"), str):
                raise AnalysisError(f"{where}: tool call without a name")
            norm.append(make_tool_call(fn["name"], fn.get("arguments"), str(c.get("id") or "")))
        msg["tool_calls"] = norm
    if msg.get("role") == "tool" and "tool_call_id" not in msg and "id" in msg:
        msg["tool_call_id"] = str(msg.pop("id"))
    try:
        return Message.model_validate(msg)
    except ValidationError as exc:
        raise AnalysisError(f"{where}: {_first_error(exc)}") from None


def _messages(raw: Any, where: str) -> list[Message]:
    if not isinstance(raw, list):
        raise AnalysisError(f"{where}: 'messages' must be a list")
    out: list[Message] = []
    for i, m in enumerate(raw):
        if isinstance(m, dict) and m.get("role") == "tool" and "tool_messages" in m:
            out += [_openai_message(t, f"{where} message {i}") for t in m["tool_messages"]]
        else:
            out.append(_openai_message(m, f"{where} message {i}"))
    return out


# -- τ²-bench Results JSON ---------------------------------------------------------------------


def _reward(value: Any, where: str) -> float:
    """A reward read from a file: a finite number (a string or NaN is an error)."""
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise AnalysisError(f"{where}: 'reward' must be a number, got {value!r:.60}")
    return float(value)


def _tau2_gold(task: dict, where: str = "task") -> tuple[list[dict], list[str]]:
    crit = task.get("evaluation_criteria") or {}
    if not isinstance(crit, dict):
        raise AnalysisError(f"{where}: 'evaluation_criteria' must be an object")
    actions = []
    for a in crit.get("actions") or []:
        if not isinstance(a, dict) or not isinstance(a.get("name"), str):
            raise AnalysisError(f"{where}: every gold action needs a 'name'")
        if a.get("requestor", "assistant") == "assistant":
            actions.append({"name": a["name"], "arguments": a.get("arguments") or {}})
    comm = crit.get("communicate_info") or []
    if not isinstance(comm, list):
        raise AnalysisError(f"{where}: 'communicate_info' must be a list")
    return actions, list(comm)


def from_tau2_results(data: dict, path: str, env: str | None = None) -> list[Trajectory]:
    """τ² ``Results``: ``{info, tasks, simulations[]}``."""
    sims = data.get("simulations")
    if not isinstance(sims, list):
        raise AnalysisError(f"{path}: τ² Results need a 'simulations' list")
    domain = env or (((data.get("info") or {}).get("environment_info") or {}).get("domain_name"))
    domain = domain or Path(path).stem
    tasks = {str(t.get("id")): t for t in data.get("tasks") or [] if isinstance(t, dict)}
    per_task: dict[str, int] = {}
    for s in sims:
        if isinstance(s, dict):
            per_task[str(s.get("task_id"))] = per_task.get(str(s.get("task_id")), 0) + 1
    out = []
    missing_reward = 0
    for i, sim in enumerate(sims):
        where = f"{path}: simulations[{i}]"
        if not isinstance(sim, dict) or "task_id" not in sim or "messages" not in sim:
            raise AnalysisError(f"{where}: needs 'task_id' and 'messages'")
        task_id = str(sim["task_id"])
        reward_info = sim.get("reward_info") or {}
        if not isinstance(reward_info, dict):
            raise AnalysisError(f"{where}: 'reward_info' must be an object")
        if "reward" not in reward_info:
            missing_reward += 1
        reward = _reward(reward_info.get("reward"), where)
        trial = sim.get("trial") or 0
        info: dict[str, Any] = {
            "source_format": "tau2",
            "simulation_id": sim.get("id"),
            "trial": trial,
            "termination_reason": sim.get("termination_reason"),
            "reward_breakdown": reward_info.get("reward_breakdown"),
        }
        if task_id in tasks:
            info["gold_actions"], info["communicate_info"] = _tau2_gold(tasks[task_id],
                                                                        f"{path}: task {task_id}")
        tid = f"{domain}:{task_id}" if per_task[task_id] == 1 else f"{domain}:{task_id}:{trial}"
        out.append(_build(tid, task_id, domain, _messages(sim["messages"], where), reward, info, where))
    if missing_reward:
        warn(f"{path}: {missing_reward} of {len(sims)} simulations have no reward_info.reward; "
             "they count as failures (grade them first: tracec grade)")
    return out


# -- τ-bench v1 historical trajectories --------------------------------------------------------


def from_tau1(data: list, path: str, env: str | None = None) -> list[Trajectory]:
    """τ-bench v1: a list of ``{task_id, trial, reward, info, traj}``."""
    domain = env or _guess_domain(path)
    out = []
    for i, rec in enumerate(data):
        where = f"{path}: record {i}"
        if not isinstance(rec, dict) or "traj" not in rec or "task_id" not in rec:
            raise AnalysisError(f"{where}: needs 'task_id' and 'traj'")
        task_id = str(rec["task_id"])
        trial = rec.get("trial") or 0
        task = (rec.get("info") or {}).get("task") or {}
        info: dict[str, Any] = {
            "source_format": "tau1",
            "trial": trial,
            "ended_by": (rec.get("info") or {}).get("source"),
            "gold_actions": [
                {"name": a["name"], "arguments": a.get("kwargs") or a.get("arguments") or {}}
                for a in task.get("actions") or []
            ],
            "communicate_info": list(task.get("outputs") or []),
            "instruction": task.get("instruction"),
        }
        # v1 task ids are not τ² task ids: keep them apart ("tau1-airline:12:3")
        tid = f"tau1-{domain}:{task_id}:{trial}"
        reward = _reward(rec.get("reward"), where)
        out.append(_build(tid, task_id, domain, _messages(rec["traj"], where), reward, info, where))
    return out


def _guess_domain(path: str) -> str:
    stem = Path(path).stem.lower()
    for d in ("airline", "retail", "telecom"):
        if d in stem:
            return d
    return stem


# -- JSONL (tracec's own records and plain OpenAI-format conversations) ------------------------


def from_jsonl_record(rec: Any, where: str, default_id: str, env: str | None) -> Trajectory:
    """One JSONL line: ``{messages, reward|success, [id, task_id, env, info]}``."""
    if not isinstance(rec, dict):
        raise AnalysisError(f"{where}: a record must be a JSON object")
    if "messages" not in rec:
        raise AnalysisError(f"{where}: missing 'messages'")
    info = rec.get("info") if isinstance(rec.get("info"), dict) else {}
    reward = rec.get("reward", info.get("reward"))
    success = rec.get("success", info.get("success"))
    if reward is None and success is None:
        raise AnalysisError(
            f"{where}: no 'reward' or 'success'; the outcome is needed to label a trajectory"
        )
    if reward is not None:
        reward = _reward(reward, where)
    if reward is None:
        reward = 1.0 if success else 0.0
    task_id = str(rec.get("task_id", default_id))
    return _build(
        str(rec.get("id", default_id)),
        task_id,
        str(rec.get("env") or env or "unknown"),
        _messages(rec["messages"], where),
        float(reward),
        dict(info),
        where,
        success=bool(success) if success is not None else None,
    )


def _build(
    tid: str, task_id: str, env: str, messages: list[Message], reward: float, info: dict,
    where: str, success: bool | None = None,
) -> Trajectory:
    try:
        return Trajectory(
            id=tid, task_id=task_id, env=env, messages=messages, reward=reward,
            success=_is_success(reward) if success is None else success, info=info,
        )
    except ValidationError as exc:
        raise AnalysisError(f"{where}: {_first_error(exc)}") from None


def _sibling_tau2_tasks(path: Path) -> dict[str, dict[str, Any]]:
    """``tau2:<domain>`` -> task id -> task, from the τ² results files ``tracec eval`` writes
    next to its ``trajectories.jsonl`` (they hold the tasks: no --tasks needed)."""
    out: dict[str, dict[str, Any]] = {}
    for f in sorted(Path(path).parent.glob("tau2_*_results.json")):
        if not f.is_file():
            continue
        data = files.read_json(f, "τ² results file", error=AnalysisError, limit=files.RESULTS_BYTES)
        domain = f.name.removeprefix("tau2_").removesuffix("_results.json")
        tasks = data.get("tasks") if isinstance(data, dict) else None
        if isinstance(tasks, list):
            out[f"tau2:{domain}"] = {str(t.get("id")): t for t in tasks if isinstance(t, dict)}
    return out


def read_jsonl(path: Path, env: str | None = None) -> list[Trajectory]:
    records = [(lineno, rec) for lineno, rec in files.read_jsonl(path, "trajectory file", AnalysisError)]
    siblings = _sibling_tau2_tasks(path) if any(
        isinstance(r, dict) and str(r.get("env", "")).startswith("tau2:") for _, r in records) else {}
    out = []
    for lineno, rec in records:
        where = f"{path}:{lineno}"
        t = from_jsonl_record(rec, where, f"{Path(path).stem}:{lineno}", env)
        task = siblings.get(t.env, {}).get(t.task_id)
        if task is not None and t.gold_actions() is None:
            t.info["gold_actions"], t.info["communicate_info"] = _tau2_gold(task, f"{where}: task {t.task_id}")
        out.append(t)
    return out


# -- entry points ------------------------------------------------------------------------------


def detect_format(path: Path, data: Any = None) -> str:
    if path.suffix == ".jsonl":
        return "jsonl"
    if isinstance(data, dict) and "simulations" in data:
        return "tau2"
    if isinstance(data, list) and data and isinstance(data[0], dict):
        if "traj" in data[0]:
            return "tau1"
        if "messages" in data[0]:
            return "jsonl"
    raise AnalysisError(
        f"{path}: unknown trajectory format (expected τ² Results JSON with 'simulations', "
        "a τ-bench v1 list of {task_id, traj, reward}, or JSONL with 'messages')"
    )


def load_trajectories(path: Path | str, fmt: str = "auto", env: str | None = None) -> list[Trajectory]:
    """Import one file; ``fmt`` is one of :data:`FORMATS`."""
    path = Path(path)
    if fmt not in FORMATS:
        raise AnalysisError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if path.is_dir() and (path / "trajectories.jsonl").is_file():  # a `tracec eval --out` folder
        path = path / "trajectories.jsonl"
    files.require_regular(path, "trajectory file", AnalysisError, files.RESULTS_BYTES)
    if fmt == "jsonl" or (fmt == "auto" and path.suffix == ".jsonl"):
        return read_jsonl(path, env)
    data = files.read_json(path, "trajectory file", error=AnalysisError, limit=files.RESULTS_BYTES)
    kind = detect_format(path, data) if fmt == "auto" else fmt
    if kind == "tau2":
        if not isinstance(data, dict):
            raise AnalysisError(f"{path}: τ² Results must be a JSON object")
        return from_tau2_results(data, str(path), env)
    if not isinstance(data, list):
        raise AnalysisError(f"{path}: expected a JSON list of records")
    if kind == "tau1":
        return from_tau1(data, str(path), env)
    return [
        from_jsonl_record(rec, f"{path}: record {i}", f"{path.stem}:{i}", env)
        for i, rec in enumerate(data)
    ]


def load_many(paths: Iterable[Path | str], fmt: str = "auto", env: str | None = None) -> list[Trajectory]:
    """Import several files; trajectory ids must be unique across them."""
    out: list[Trajectory] = []
    seen: dict[str, str] = {}
    for p in paths:
        for t in load_trajectories(p, fmt, env):
            if t.id in seen:
                raise AnalysisError(f"{p}: trajectory id {t.id!r} already read from {seen[t.id]}")
            seen[t.id] = str(p)
            out.append(t)
    return out


def write_jsonl(trajectories: Iterable[Trajectory], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for t in trajectories:
            fh.write(t.model_dump_json(exclude_none=True) + "\n")
