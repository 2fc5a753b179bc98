"""τ²-compatible grading of one conversation.

Mirrors ``tau2.evaluator.evaluate_simulation`` for the airline and retail domains:

- an episode that did not end by the agent (``agent_stop``) or the user (``user_stop``) scores 0;
- **DB**: the conversation's write calls are replayed on a fresh database, the task's gold
  actions on another; 1 when the two databases are equal;
- **COMMUNICATE**: each ``communicate_info`` string must occur, case-insensitively, in some
  assistant text with commas removed;
- **NL_ASSERTION**: judged by an LLM when a judge is given; offline it counts as 1 and the
  breakdown says ``nl_judged: false``;
- **ACTION**: every gold action matched by some call (name + ``compare_args``);
- reward = product of the components named in the task's ``reward_basis``.
"""

from __future__ import annotations

import json
import re
from typing import Any, Protocol

from pydantic import BaseModel, Field

from tracec.core.messages import all_tool_calls, assistant_texts
from tracec.targets.data import Action, Task
from tracec.targets.world import Tau2World, db_delta, delta_hash

ENDED_OK = ("agent_stop", "user_stop")


class Judge(Protocol):
    """Anything with ``chat(messages, ...) -> obj with .content`` (``tracec.llm.client.ChatClient``)."""

    def chat(self, messages: list[dict], **kwargs: Any) -> Any: ...


class Check(BaseModel):
    what: str
    met: bool
    justification: str = ""


class Grade(BaseModel):
    """The verdict on one conversation, with the evidence."""

    reward: float
    reward_basis: list[str] = Field(default_factory=list)
    reward_breakdown: dict[str, float] = Field(default_factory=dict)
    termination_reason: str = ""
    db_match: bool | None = None
    db_hash: str = ""
    gold_db_hash: str = ""
    communicate_checks: list[Check] = Field(default_factory=list)
    nl_assertions: list[Check] = Field(default_factory=list)
    nl_judged: bool = False
    action_checks: list[Check] = Field(default_factory=list)
    note: str = ""

    def to_tau2_reward_info(self) -> dict:
        """τ²'s ``RewardInfo`` JSON for this grade."""
        info: dict[str, Any] = {
            "reward": self.reward,
            "reward_basis": self.reward_basis or None,
            "reward_breakdown": self.reward_breakdown or None,
            "info": {"note": self.note, "nl_judged": self.nl_judged, "grader": "tracec"},
        }
        if self.db_match is not None:
            info["db_check"] = {"db_match": self.db_match, "db_reward": float(self.db_match)}
        info["communicate_checks"] = [
            {"info": c.what, "met": c.met, "justification": c.justification}
            for c in self.communicate_checks
        ]
        info["nl_assertions"] = (
            [{"nl_assertion": c.what, "met": c.met, "justification": c.justification}
             for c in self.nl_assertions] if self.nl_judged else None
        )
        return info


def communicated(messages: list[dict], info: str) -> bool:
    """τ²'s check: ``info`` in some assistant text, case-insensitive, commas stripped."""
    needle = info.lower()
    return any(needle in t.lower().replace(",", "") for t in assistant_texts(messages))


def action_matches(action: Action, name: str, arguments: dict) -> bool:
    """τ²'s ``Action.compare_with_tool_call`` (``compare_args`` None: the call's own keys)."""
    if action.name != name:
        return False
    keys = list(arguments) if action.compare_args is None else action.compare_args
    if not keys:
        return True
    return {k: v for k, v in arguments.items() if k in keys} == {
        k: v for k, v in action.arguments.items() if k in keys
    }


def grade(
    world: Tau2World,
    task: Task,
    messages: list[dict],
    termination_reason: str,
    judge: Judge | None = None,
    final_db: dict | None = None,
) -> Grade:
    """Grade one conversation (OpenAI or τ² message format) against ``task``.

    ``final_db``: the database the conversation ran on, when at hand (the env's); it equals the
    replay of the conversation's write calls, so the replay is skipped.
    """
    ec = task.evaluation_criteria
    if termination_reason not in ENDED_OK:
        return Grade(
            reward=0.0,
            termination_reason=termination_reason,
            note=f"episode ended prematurely ({termination_reason}): reward 0, as in τ²",
        )
    if ec is None:
        return Grade(reward=1.0, termination_reason=termination_reason,
                     note="no evaluation criteria")
    basis = list(ec.reward_basis)
    calls = [(c.name, c.arguments) for c in all_tool_calls(messages)]

    pred = world.replay_delta(calls) if final_db is None else db_delta(world.pristine, final_db)
    gold = world.gold_delta(task)
    db_match = pred == gold
    comm = [
        Check(what=s, met=communicated(messages, s),
              justification="found in an assistant message" if communicated(messages, s)
              else "not communicated")
        for s in (ec.communicate_info or [])
    ]
    acts = [
        Check(what=f"{a.name}({json.dumps(a.arguments, sort_keys=True)})",
              met=any(action_matches(a, n, args) for n, args in calls))
        for a in task.gold_actions if a.requestor == "assistant"
    ]
    nl_checks: list[Check] = []
    nl_judged = False
    notes = []
    if ec.nl_assertions and judge is not None and "NL_ASSERTION" in basis:
        nl_checks = judge_nl_assertions(judge, messages, ec.nl_assertions)
        nl_judged = True
    elif ec.nl_assertions and "NL_ASSERTION" in basis:
        notes.append("NL_ASSERTION not judged offline (counted as 1); pass --judge to judge it")

    parts = {
        "DB": 1.0 if db_match else 0.0,
        "ENV_ASSERTION": 1.0,
        "COMMUNICATE": 1.0 if all(c.met for c in comm) else 0.0,
        "ACTION": 1.0 if all(c.met for c in acts) else 0.0,
        "NL_ASSERTION": 1.0 if all(c.met for c in nl_checks) else 0.0,
    }
    if ec.env_assertions and "ENV_ASSERTION" in basis:
        notes.append("ENV_ASSERTION is not supported for this domain (counted as 1)")
    breakdown = {k: parts[k] for k in basis if k in parts}
    reward = 1.0
    for value in breakdown.values():
        reward *= value
    return Grade(
        reward=reward,
        reward_basis=basis,
        reward_breakdown=breakdown,
        termination_reason=termination_reason,
        db_match=db_match,
        db_hash=delta_hash(pred),
        gold_db_hash=delta_hash(gold),
        communicate_checks=comm,
        nl_assertions=nl_checks,
        nl_judged=nl_judged,
        action_checks=acts,
        note="; ".join(notes),
    )


_JUDGE_SYSTEM = """You grade a customer-service conversation against a list of expected outcomes.
Judge every expected outcome on its own, from what the agent said and did in the conversation.
Answer with JSON only: {"results": [{"expectedOutcome": "<the outcome, verbatim>",
"reasoning": "<one or two sentences>", "metExpectation": true or false}, ...]}"""


def judge_nl_assertions(judge: Judge, messages: list[dict], assertions: list[str]) -> list[Check]:
    """Ask an LLM whether each natural-language assertion holds (unparseable → not met)."""
    convo = "\n".join(
        f"{m.get('role')}: {m.get('content') or ''}" for m in messages if m.get("role") != "system"
    )
    prompt = f"conversation:\n{convo}\n\nexpectedOutcomes:\n{json.dumps(assertions, indent=1)}"
    reply = judge.chat(
        [{"role": "system", "content": _JUDGE_SYSTEM}, {"role": "user", "content": prompt}],
        temperature=0.0,
    )
    results = _parse_judge(getattr(reply, "content", "") or "")
    checks = []
    for i, text in enumerate(assertions):
        r = results[i] if i < len(results) else {}
        checks.append(Check(what=text, met=bool(r.get("metExpectation") is True),
                            justification=str(r.get("reasoning", "no verdict from the judge"))))
    return checks


def _parse_judge(text: str) -> list[dict]:
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if not match:
        return []
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError:
        return []
    results = data.get("results") if isinstance(data, dict) else None
    return [r for r in results if isinstance(r, dict)] if isinstance(results, list) else []
