"""The τ²-bench target as a Gymnasium environment (airline, retail).

Same contract as compiled capability envs (docs/architecture.md, "Episode semantics"):
``reset`` → ``(first user message, info)`` with ``info = {messages, tools, hint, task}``;
``step(raw assistant text)`` runs ``<tool_call>`` blocks (or one bare JSON call) on the task's
database, or hands text to the simulated user. The episode ends when the agent says
``###STOP###`` or calls an ``ends_episode`` tool (``agent_stop``), when the user stops
(``user_stop``), at ``max_turns`` (``max_steps``) or after ``max_errors`` tool errors
(``too_many_errors``); the last two score 0, as in τ². The reward is τ²'s
(:mod:`tracec.targets.grading`); ``info["reward_breakdown"]`` explains it.
"""

from __future__ import annotations

import marshal
from typing import Any

import gymnasium as gym

from tracec.core.messages import STOP, has_user_stop, openai_tool_call
from tracec.runtime.spaces import UnicodeText
from tracec.targets.data import Task, load_split, resolve_data_dir
from tracec.targets.grading import Judge, grade
from tracec.targets.toolparse import parse_turn
from tracec.targets.users import UserFactory, make_user_factory
from tracec.targets.world import Tau2World, clone, load_world

AGENT_INSTRUCTION = (
    "You are a customer service agent. Help the user while following the <policy> below.\n"
    "Each turn, either write a message to the user or call tools. Call tools with valid JSON "
    "arguments. When the conversation is over, end your message with ###STOP###."
)


def system_prompt(policy: str) -> str:
    return f"<instructions>\n{AGENT_INSTRUCTION}\n</instructions>\n<policy>\n{policy}\n</policy>"


class Tau2Env(gym.Env):
    """One τ² domain; each ``reset`` starts a task (``options={"task_id": ...}`` picks it)."""

    metadata = {"render_modes": []}

    def __init__(
        self,
        domain: str = "airline",
        data_dir: str | None = None,
        split: str = "test",
        task_ids: list[str] | None = None,
        user: str | UserFactory = "scripted",
        max_turns: int = 30,
        max_errors: int = 10,
        judge: Judge | None = None,
        world: Tau2World | None = None,
    ) -> None:
        self.world = world or load_world(domain, data_dir)
        if task_ids is None:
            ids = None
            if world is None:
                ids = load_split(resolve_data_dir(data_dir), domain, split)
            task_ids = ids if ids is not None else list(self.world.tasks)
        self.task_ids = [t for t in task_ids if t in self.world.tasks]
        self.user_factory = make_user_factory(user) if isinstance(user, str) else user
        self.max_turns = max_turns
        self.max_errors = max_errors
        self.judge = judge
        self._tools = self.world.domain.tool_schemas()
        self._tools_copy = clone(self._tools)
        self._task_blob = b""  # marshal bytes of the task's JSON, loaded afresh for every info
        self._message_copies: list[dict] = []  # copies of self.messages made so far
        self.observation_space = UnicodeText()
        self.action_space = UnicodeText()
        self.db: dict = {}
        self.messages: list[dict] = []
        self.task: Task | None = None
        self._done = True

    # -- episode ---------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = options or {}
        if "task_id" in options:
            tid = str(options["task_id"])
            if tid not in self.world.tasks:
                raise KeyError(f"unknown {self.world.domain_name} task id {tid!r}")
        else:
            if not self.task_ids:
                raise ValueError("no tasks to draw from")
            tid = self.task_ids[int(self.np_random.integers(len(self.task_ids)))]
        self.task = self.world.tasks[tid]
        self._task_blob = marshal.dumps(self.task.model_dump(mode="json"))  # plain JSON values
        self._message_copies = []
        self.db = self.world.fresh_db()
        self.user = self.user_factory(self.task)
        first = self.user.start()
        self.messages = [
            {"role": "system", "content": system_prompt(self.world.policy)},
            {"role": "user", "content": first},
        ]
        self.turns = 0
        self.errors = 0
        self._calls = 0
        self._done = False
        self.termination_reason = ""
        return first, self._info()

    def step(self, action: str):
        if self._done:
            raise RuntimeError("step() after the episode ended; call reset()")
        self.turns += 1
        turn = parse_turn(action)
        content = turn.content.replace(STOP, "").strip() if turn.content else ""
        agent_stop = STOP in (action or "")
        msg: dict[str, Any] = {"role": "assistant", "content": content or None}
        observations: list[str] = []
        ended_by = ""
        if turn.calls or turn.errors:
            msg["tool_calls"] = []
            self.messages.append(msg)
            for name, args in turn.calls:
                self._calls += 1
                call_id = f"call_{self._calls}"
                msg["tool_calls"].append(openai_tool_call(call_id, name, args))
                text, error = self.world.call(self.db, name, args)
                self.errors += error
                self.messages.append({"role": "tool", "tool_call_id": call_id, "name": name,
                                      "content": text, "error": error})
                observations.append(text)
                if name in self.world.domain.ends_episode and not error:
                    ended_by = "agent_stop"
            for err in turn.errors:
                self._calls += 1
                call_id = f"call_{self._calls}"
                msg["tool_calls"].append(openai_tool_call(call_id, "invalid_tool_call", {}))
                text = f"Error: {err}"
                self.errors += 1
                self.messages.append({"role": "tool", "tool_call_id": call_id,
                                      "name": "invalid_tool_call", "content": text, "error": True})
                observations.append(text)
            if not msg["tool_calls"]:
                msg.pop("tool_calls")
            if agent_stop:
                ended_by = "agent_stop"
        else:
            self.messages.append(msg)
            if agent_stop:
                ended_by = "agent_stop"
            else:
                reply = self.user.reply(self.messages)
                self.messages.append({"role": "user", "content": reply})
                observations.append(reply)
                if has_user_stop(reply):
                    ended_by = "user_stop"
        obs = "\n".join(observations)
        terminated = bool(ended_by)
        truncated = False
        if not terminated and self.errors >= self.max_errors:
            truncated, ended_by = True, "too_many_errors"
        elif not terminated and self.turns >= self.max_turns:
            truncated, ended_by = True, "max_steps"
        reward = 0.0
        info = self._info()
        if terminated or truncated:
            self._done = True
            self.termination_reason = ended_by
            g = grade(self.world, self.task, self.messages, ended_by, judge=self.judge,
                      final_db=self.db)
            reward = g.reward
            info["reward_breakdown"] = {**g.model_dump(), "ended_by": ended_by}
            info["termination_reason"] = ended_by
        return obs, reward, terminated, truncated, info

    def _info(self) -> dict:
        """The step's info, holding no object of the env's own and no dict of an earlier info.

        A caller that changes an info changes neither the episode nor another info
        (gymnasium's ``check_env`` checks the second): ``messages`` and ``task`` are fresh
        copies each time; a message is copied whole once (a step's messages are final when it
        returns), and each info gets new dicts over its strings (:func:`_fresh_message`).
        ``tools`` is a new list over one copy of the schemas made when the env was built, shared
        by every info of the env (treat it as read-only): copying the schemas at each step cost
        more CPU than the tool call itself."""
        assert self.task is not None
        copies = self._message_copies
        for message in self.messages[len(copies):]:
            copies.append(clone(message))
        return {
            "messages": [_fresh_message(m) for m in copies],
            "tools": list(self._tools_copy),
            "hint": "",
            "task": marshal.loads(self._task_blob),
            "task_id": self.task.id,
            "domain": self.world.domain_name,
        }


def _fresh_message(message: dict) -> dict:
    """New dicts and lists over a message's immutable values (strings, numbers are shared)."""
    out = dict(message)
    for key, value in out.items():
        if isinstance(value, (dict, list)):
            out[key] = clone(value)
    return out


def make_tau2_env(target: str, **kwargs: Any) -> Tau2Env:
    """``tau2:airline`` / ``tau2:retail`` → an env."""
    kind, _, domain = target.partition(":")
    if kind != "tau2" or not domain:
        raise ValueError(f"bad target {target!r}: expected tau2:airline or tau2:retail")
    return Tau2Env(domain=domain, **kwargs)
