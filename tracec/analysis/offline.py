"""Offline labeler: labels capabilities from evidence in the trajectory itself (no LLM).

Uses the task's gold actions (``info["gold_actions"]``, or a τ² ``tasks.json``) and the
trajectory's own tool calls and results. Each capability has a rule giving NA / PRESENT /
LACKING; gold-dependent rules give NA when no gold is known.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Callable

from pydantic import BaseModel, Field

from tracec import files
from tracec.analysis.candidates import Candidate
from tracec.analysis.errors import AnalysisError
from tracec.analysis.runs import LabelRun, build_run
from tracec.analysis.trajectory import GoldAction, Trajectory
from tracec.domains import get_domain

READ_PREFIXES = ("get_", "search_", "list_", "find_", "calculate", "think", "transfer_", "lookup")
ID_ARG = re.compile(r"(^|_)id$")
MONEY = re.compile(r"\$\s?(\d[\d,]*(?:\.\d+)?)")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")

Label = str  # "NA" | "PRESENT" | "LACKING"


@functools.lru_cache(maxsize=4096)
def is_write(name: str, env: str) -> bool:
    """Whether a tool mutates state: the domain's flag when the domain is known, else by name."""
    try:
        tool = get_domain(env).tools.get(name)
        if tool is not None:
            return bool(tool.writes)
    except Exception:  # unknown domain or domain package not available
        pass
    return not name.startswith(READ_PREFIXES)


def _same(a: object, b: object) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(float(a) - float(b)) < 1e-6
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _args_match(gold: dict, got: dict) -> bool:
    return all(k in got and _same(v, got[k]) for k, v in gold.items())


class TaskGold(BaseModel):
    """What a τ² task says the agent must do: gold actions and values to communicate."""

    actions: list[GoldAction] = Field(default_factory=list)
    communicate_info: list[str] = Field(default_factory=list)


def failed_calls(t: Trajectory) -> set[int]:
    """Positions (in ``t.tool_calls()`` order) of calls whose tool result is an error
    (``"error": true`` on the tool message, or content starting with ``Error``)."""
    failed: set[int] = set()
    pending: list[tuple[int, str]] = []  # (position, call id) awaiting a result
    k = 0
    for m in t.messages:
        if m.role == "assistant" and m.tool_calls:
            pending = []
            for c in m.tool_calls:
                pending.append((k, c.id or ""))
                k += 1
        elif m.role == "tool" and pending:
            match = next((p for p in pending if m.tool_call_id and p[1] == m.tool_call_id),
                         pending[0])
            pending.remove(match)
            flag = (m.model_extra or {}).get("error")
            if flag is True or (m.content or "").lstrip().lower().startswith("error"):
                failed.add(match[0])
    return failed


class Evidence:
    """What the rules look at, computed once per trajectory."""

    def __init__(self, t: Trajectory, gold: list[GoldAction] | None,
                 communicate: list[str] | None = None) -> None:
        self.t = t
        self.gold = gold
        self.communicate = [str(c) for c in (communicate if communicate is not None else
                                             t.info.get("communicate_info") or [])]
        self.calls = t.tool_calls()
        failed = failed_calls(t)
        # a write whose result is an error changed nothing: it is not a state change
        self.writes = [(i, n, a) for k, (i, n, a) in enumerate(self.calls)
                       if is_write(n, t.env) and k not in failed]
        self.gold_writes = [g for g in gold or [] if is_write(g.name, t.env)]
        self.tool_text = [(i, m.content or "") for i, m in enumerate(t.messages) if m.role == "tool"]
        self.assistant_text = [m.content for m in t.messages if m.role == "assistant" and m.content]


def executes_required_actions(e: Evidence) -> Label:
    """Missing write calls: the task needed state changes and the agent made none of them."""
    if not e.gold_writes:
        return "NA"
    names = {n for _, n, _ in e.writes}
    return "LACKING" if not any(g.name in names for g in e.gold_writes) else "PRESENT"


def completes_compound_requests(e: Evidence) -> Label:
    """Stopping after part of a compound request (≥2 gold writes, some but not all made)."""
    if len(e.gold_writes) < 2:
        return "NA"
    names = [n for _, n, _ in e.writes]
    done = 0
    for g in e.gold_writes:
        if g.name in names:
            names.remove(g.name)
            done += 1
    if done == 0:
        return "NA"  # nothing started: that is executes_required_actions' evidence
    return "PRESENT" if done == len(e.gold_writes) else "LACKING"


def precise_action_arguments(e: Evidence) -> Label:
    """Wrong arguments: a gold write was called by name, but that call had other arguments.

    Agent calls are matched to gold calls one to one (exact matches first); a gold call left
    without any call of its name is missing, which is not an argument error."""
    spare = list(e.writes)
    unmatched = []
    for g in e.gold_writes:
        hit = next((c for c in spare if c[1] == g.name and _args_match(g.arguments, c[2])), None)
        if hit is None:
            unmatched.append(g)
        else:
            spare.remove(hit)
    attempted = len(e.gold_writes) - len(unmatched)
    wrong = 0
    for g in unmatched:
        other = next((c for c in spare if c[1] == g.name), None)
        if other is not None:
            spare.remove(other)
            wrong += 1
    if attempted + wrong == 0:
        return "NA"
    return "LACKING" if wrong else "PRESENT"


def policy_constraint_enforcement(e: Evidence) -> Label:
    """State changes the task did not call for (e.g. cancelling when policy says refuse)."""
    if e.gold is None:
        return "NA"
    allowed = [g.name for g in e.gold_writes]
    extra = False
    for _, n, _ in e.writes:
        if n in allowed:
            allowed.remove(n)
        else:
            extra = True
    if extra:
        return "LACKING"
    return "PRESENT" if not e.gold_writes else "NA"


def verifies_before_acting(e: Evidence) -> Label:
    """A write whose record id was never read (looked up or seen in a tool result) before."""
    if not e.writes:
        return "NA"
    for i, _, args in e.writes:
        # the record being changed: the first id-like argument (reservation_id, order_id, …)
        ids = [str(v) for k, v in args.items() if ID_ARG.search(k) and isinstance(v, (str, int))][:1]
        earlier = " ".join(text for j, text in e.tool_text if j < i)
        for value in ids:
            read_before = any(j < i and not is_write(n, e.t.env) and value in json.dumps(a)
                              for j, n, a in e.calls)
            if not read_before and value not in earlier:
                return "LACKING"
    return "PRESENT"


def _numbers(text: str) -> list[float]:
    return [float(x) for x in NUMBER.findall(text.replace(",", ""))]


def grounded_numbers(e: Evidence) -> Label:
    """Numbers the agent must communicate or that disagree with the records."""
    required = e.communicate
    said = " ".join(e.assistant_text).replace(",", "").lower()
    if required:
        missing = [c for c in required if c.replace(",", "").lower() not in said]
        return "LACKING" if missing else "PRESENT"
    final = e.assistant_text[-1] if e.assistant_text else ""
    amounts = [float(a.replace(",", "")) for a in MONEY.findall(final)]
    if not amounts:
        return "NA"
    known = sorted({x for _, text in e.tool_text for x in _numbers(text)})[:300]
    known_set = {round(x, 2) for x in known}
    user_said = {round(x, 2) for m in e.t.messages if m.role == "user" for x in _numbers(m.content or "")}

    def supported(x: float) -> bool:
        x = round(x, 2)
        if x in known_set or x in user_said:
            return True
        return any(round(a + b, 2) == x or round(abs(a - b), 2) == x for a in known for b in known)

    return "PRESENT" if all(supported(a) for a in amounts) else "LACKING"


RULES: dict[str, tuple[str, Callable[[Evidence], Label]]] = {
    "executes_required_actions": (
        "The task needs state-changing tool calls (book, cancel, update, return). The agent must "
        "actually perform them instead of only talking about them or stopping early.",
        executes_required_actions,
    ),
    "completes_compound_requests": (
        "The request needs two or more dependent state changes. The agent must complete every "
        "step rather than stopping after the first one.",
        completes_compound_requests,
    ),
    "precise_action_arguments": (
        "State-changing calls must carry exactly the right arguments (ids, flights, items, "
        "payment methods, amounts). Calling the right tool with a wrong argument counts as lacking.",
        precise_action_arguments,
    ),
    "policy_constraint_enforcement": (
        "The agent must not make state changes the policy or the user's request does not allow, "
        "and must refuse when the request violates policy.",
        policy_constraint_enforcement,
    ),
    "verifies_before_acting": (
        "Before changing a record the agent must read it (look it up) and check it against the "
        "policy. A write on a record that was never read counts as lacking.",
        verifies_before_acting,
    ),
    "grounded_numbers": (
        "Numbers the agent reports (totals, refunds, fees, counts) must agree with the records "
        "and the information the task requires to be communicated.",
        grounded_numbers,
    ),
}


def offline_candidates() -> list[Candidate]:
    return [Candidate(name=n, description=d) for n, (d, _) in RULES.items()]


def load_task_gold(path: Path) -> dict[str, TaskGold]:
    """Gold actions (assistant's only) and communicate_info by task id from a τ² tasks.json."""
    tasks = files.read_json(path, "tasks file", error=AnalysisError)
    if not isinstance(tasks, list):
        raise AnalysisError(f"{path}: a τ² tasks.json holds a list of tasks")
    out: dict[str, list[GoldAction]] = {}
    for i, task in enumerate(tasks):
        if not isinstance(task, dict) or "id" not in task:
            raise AnalysisError(f"{path}: task {i} has no 'id'")
        crit = task.get("evaluation_criteria") or {}
        actions = crit.get("actions") or [] if isinstance(crit, dict) else None
        if not isinstance(actions, list) or not all(
                isinstance(a, dict) and isinstance(a.get("name"), str) for a in actions):
            raise AnalysisError(f"{path}: task {task['id']!r}: every gold action needs a 'name'")
        comm = crit.get("communicate_info") or []
        if not isinstance(comm, list):
            raise AnalysisError(f"{path}: task {task['id']!r}: 'communicate_info' must be a list")
        out[str(task["id"])] = TaskGold(
            actions=[GoldAction(name=a["name"], arguments=a.get("arguments") or {})
                     for a in actions if a.get("requestor", "assistant") == "assistant"],
            communicate_info=[str(c) for c in comm])
    return out


def label_trajectory(
    t: Trajectory, task_gold: dict[str, TaskGold] | None = None
) -> dict[str, Label]:
    gold = t.gold_actions()
    communicate = None
    entry = task_gold.get(t.task_id) if task_gold is not None else None
    if entry is not None:
        if gold is None:
            gold = entry.actions
        if not t.info.get("communicate_info"):
            communicate = entry.communicate_info
    ev = Evidence(t, gold, communicate)
    return {name: rule(ev) for name, (_, rule) in RULES.items()}


def offline_run(
    trajectories: list[Trajectory], task_gold: dict[str, TaskGold] | None = None
) -> LabelRun:
    """One labeling run (deterministic, so one run suffices)."""
    per_cap: dict[str, dict[str, str]] = {name: {} for name in RULES}
    for t in trajectories:
        for cap, label in label_trajectory(t, task_gold).items():
            per_cap[cap][t.id] = label
    return build_run(1, {t.id: t.success for t in trajectories}, per_cap)
