"""A small env that follows the tracec env contract, for trainer tests and the smoke benchmark.

The user asks to look up an order. Reward: 1.0 when the agent calls ``lookup_order`` with the
right id, 0.3 when its last reply has an even number of characters (gives random models reward
variance), else 0.
A text-only turn gets a scripted user reply until ``max_turns``.
"""

from __future__ import annotations

import json
import re
from typing import ClassVar

import gymnasium as gym

TOOLS = [{"type": "function", "function": {
    "name": "lookup_order", "description": "Look up an order by its id.",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                   "required": ["order_id"]}}}]
CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)


class ToyToolEnv(gym.Env):
    """Text env: reset → (user text, info with messages/tools/hint/task)."""

    metadata: ClassVar[dict] = {"render_modes": []}
    capability_name = "toy_lookup"

    def __init__(self, max_turns: int = 2) -> None:
        self.observation_space = gym.spaces.Text(4096)
        self.action_space = gym.spaces.Text(4096)
        self.max_turns = max_turns
        self.messages: list[dict] = []
        self.order_id = ""
        self.turns = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        hint = bool((options or {}).get("hint"))
        self.order_id = f"W{int(self.np_random.integers(1000, 9999))}"
        self.turns = 0
        system = "You are a store agent. Use the tools."
        if hint:
            system += "\nHint: call lookup_order with the order id."
        user = f"Where is my order {self.order_id}?"
        self.messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        info = {"messages": list(self.messages), "tools": TOOLS,
                "hint": "call lookup_order with the order id.", "task": "lookup"}
        return user, info

    def step(self, action: str):
        self.turns += 1
        self.messages.append({"role": "assistant", "content": action})
        for block in CALL.findall(action):
            try:
                call = json.loads(block)
            except json.JSONDecodeError:
                continue
            if call.get("name") == "lookup_order" and \
                    (call.get("arguments") or {}).get("order_id") == self.order_id:
                self.messages.append({"role": "tool", "content": "shipped"})
                return "shipped", 1.0, True, False, self._info(1.0, "called")
        if self.turns >= self.max_turns:
            reward = 0.3 if len(action) % 2 == 0 else 0.0
            return "", reward, True, False, self._info(reward, "user_stop")
        reply = "Could you check it please?"
        self.messages.append({"role": "user", "content": reply})
        return reply, 0.0, False, False, self._info(0.0, "")

    def _info(self, reward: float, ended_by: str) -> dict:
        return {"messages": list(self.messages), "tools": TOOLS,
                "reward_breakdown": {"reward": reward, "ended_by": ended_by}}


class FlatSeedsToyEnv(ToyToolEnv):
    """:class:`ToyToolEnv` whose seeds in :attr:`FLAT` reward every episode 0: their groups keep
    no signal. Under 2 processes (seed 0) rank 1 plays seeds 1 and 3 at step 1, so it keeps no
    group while rank 0 does."""

    FLAT: ClassVar[frozenset[int]] = frozenset({1, 3})

    def reset(self, *, seed=None, options=None):
        self.flat = seed in self.FLAT
        return super().reset(seed=seed, options=options)

    def step(self, action: str):
        obs, reward, terminated, truncated, info = super().step(action)
        if self.flat:
            reward = 0.0
            info["reward_breakdown"] = {**info["reward_breakdown"], "reward": 0.0}
        return obs, reward, terminated, truncated, info


class HangingToyEnv(ToyToolEnv):
    """The toy env, except that on the process whose ``RANK`` is ``TRACEC_TEST_HANG_RANK`` every
    step hangs (a stuck tool call): for the bounded waits between processes."""

    def step(self, action: str):
        import os
        import time

        if os.environ.get("RANK") == os.environ.get("TRACEC_TEST_HANG_RANK", "-"):
            time.sleep(3600)
        return super().step(action)


class NoSignalToyEnv(FlatSeedsToyEnv):
    """:class:`ToyToolEnv` whose every seed rewards 0: no group ever has reward variance, whatever
    the policy samples (the no-signal warning's test)."""

    def reset(self, *, seed=None, options=None):
        out = super().reset(seed=seed, options=options)
        self.flat = True
        return out
