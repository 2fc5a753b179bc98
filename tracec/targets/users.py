"""Simulated users for τ² tasks.

- ``scripted``: deterministic and offline. Opens with the task's reason for calling and what the
  user knows; answers questions about what it knows, says yes to confirmations, says it does not
  know anything else; stops when the agent has finished (a message that asks nothing) or
  transfers it to a human.
- ``llm``: any OpenAI-compatible endpoint plays the user from τ²'s scenario, under guidelines
  like τ²'s; it ends the conversation with ``###STOP###``, ``###TRANSFER###`` or
  ``###OUT-OF-SCOPE###``.

A user is made per episode by a factory: ``factory(task) -> User``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol

from tracec.core.messages import STOP, TRANSFER
from tracec.llm.client import ChatClient
from tracec.targets.data import Task

GREETING = "Hi! How can I help you today?"


class User(Protocol):
    def start(self) -> str:
        """The user's first message."""

    def reply(self, messages: list[dict]) -> str:
        """The user's answer to the agent's last text message (may contain a stop token)."""


UserFactory = Callable[[Task], User]


# --- scripted -----------------------------------------------------------------------------

_PRONOUNS = [
    (r"\byou are\b", "I am"), (r"\bYou are\b", "I am"), (r"\byou were\b", "I was"),
    (r"\bYou were\b", "I was"), (r"\byou have\b", "I have"), (r"\bYou have\b", "I have"),
    (r"\byourself\b", "myself"), (r"\byours\b", "mine"), (r"\bYour\b", "My"), (r"\byour\b", "my"),
    (r"\b(to|tell|told|ask|asks|asked|give|gives|for|with|help|let) you\b", r"\1 me"),
    (r"\bYou\b", "I"), (r"\byou\b", "I"),
]

_FIELDS = {  # what the agent may ask for -> words that mark it in the known info
    "user id": ("user id", "user_id", "userid"),
    "email": ("email", "e-mail"),
    "zip": ("zip", "postal"),
    "name": ("name", "you are", "i am"),
    "order": ("order",),
    "reservation": ("reservation", "booking", "confirmation"),
    "payment": ("payment", "card", "gift card", "paypal", "certificate"),
    "address": ("address", "street", "city"),
    "phone": ("phone",),
    "date of birth": ("birth", "dob"),
}

_CONFIRM = ("confirm", "proceed", "go ahead", "would you like", "do you want", "shall i",
            "should i", "is that correct", "is this correct", "is that right", "(yes", "yes/no",
            "okay to", "ok to", "agree")


def first_person(text: str) -> str:
    """Rewrite τ²'s second-person scenario text ("You are Emma") in the first person."""
    for pattern, repl in _PRONOUNS:
        text = re.sub(pattern, repl, text)
    return text


def _sentences(text: str | None) -> list[str]:
    if not text:
        return []
    parts = re.split(r"(?<=[.!?])\s+|\n+", text)
    return [p.strip() for p in parts if p.strip()]


class ScriptedUser:
    """A deterministic user that only says what the scenario tells it."""

    def __init__(self, task: Task, max_confirmations: int = 8, max_unknown: int = 2) -> None:
        self.ins = task.instructions()
        self.known = _sentences(self.ins.known_info)
        self.confirmations = 0
        self.unknown = 0
        self.max_confirmations = max_confirmations
        self.max_unknown = max_unknown

    def start(self) -> str:
        parts = ["Hi!", first_person(self.ins.reason_for_call.strip())]
        if self.ins.known_info:
            parts.append(first_person(self.ins.known_info.strip()))
        return " ".join(p for p in parts if p)

    def _known_answer(self, text: str) -> str | None:
        lower = text.lower()
        answers = []
        for field, marks in _FIELDS.items():
            if field not in lower and not any(m in lower for m in marks if m not in ("you are", "i am")):
                continue
            answers.extend(s for s in self.known if any(m in s.lower() for m in marks)
                           and s not in answers)
        return " ".join(first_person(s) for s in answers) or None

    def reply(self, messages: list[dict]) -> str:
        text = _last_assistant_text(messages)
        lower = text.lower()
        if "transfer" in lower and any(w in lower for w in ("human", "agent", "representative")):
            return TRANSFER
        if "?" not in text:
            return f"Thank you, that's all I needed. {STOP}"
        known = self._known_answer(text)
        if known:
            return known
        if any(w in lower for w in _CONFIRM) and self.confirmations < self.max_confirmations:
            self.confirmations += 1
            return "Yes, please go ahead."
        self.unknown += 1
        if self.unknown > self.max_unknown:
            return f"Sorry, I can't help with that. {STOP}"
        return "I'm sorry, I don't know that."


def _last_assistant_text(messages: list[dict]) -> str:
    for m in reversed(messages):
        if m.get("role") == "assistant" and (m.get("content") or "").strip():
            return m["content"]
    return ""


# --- LLM ----------------------------------------------------------------------------------

GUIDELINES = """You are role-playing a customer who contacts a customer-service agent.
Play the customer described in the scenario below, one message at a time, as a real person would.

Rules:
- Follow the scenario's instructions. Do not invent facts: anything the scenario does not give
  you is something you do not know; say so if asked.
- Do not recite the scenario; say things in your own words, and share details only when the
  agent needs them.
- Keep going until your goal is reached. Then write ###STOP### to end the conversation.
- If the agent transfers you to another (human) agent, write ###TRANSFER###.
- If the scenario does not tell you enough to continue, write ###OUT-OF-SCOPE###."""


def llm_user_system_prompt(task: Task) -> str:
    """Guidelines plus the task's scenario, for an LLM user."""
    scenario = task.instructions().render()
    persona = task.user_scenario.persona
    if persona:
        scenario = f"Persona:\n{persona}\n{scenario}"
    return f"{GUIDELINES}\n\n<scenario>\n{scenario}\n</scenario>"


class LLMUser:
    """A user played by an OpenAI-compatible model (``client.chat(messages) -> .content``)."""

    def __init__(self, task: Task, client: Any, temperature: float = 0.0,
                 max_tokens: int = 512) -> None:
        self.system = llm_user_system_prompt(task)
        self.client = client
        self.temperature = temperature
        self.max_tokens = max_tokens

    def _ask(self, convo: list[dict]) -> str:
        res = self.client.chat([{"role": "system", "content": self.system}, *convo],
                               temperature=self.temperature, max_tokens=self.max_tokens)
        return (getattr(res, "content", "") or "").strip() or STOP

    def start(self) -> str:
        return self._ask([{"role": "user", "content": GREETING}])

    def reply(self, messages: list[dict]) -> str:
        return self._ask(flip_roles(messages))


def flip_roles(messages: list[dict]) -> list[dict]:
    """The conversation as the user sees it: agent text → ``user``, own text → ``assistant``."""
    convo = [{"role": "user", "content": GREETING}]
    for m in messages:
        role, content = m.get("role"), (m.get("content") or "").strip()
        if not content or role not in ("user", "assistant"):
            continue  # system prompt, tool traffic
        convo.append({"role": "assistant" if role == "user" else "user", "content": content})
    return convo


def make_user_factory(spec: str, **options: Any) -> UserFactory:
    """``scripted`` or ``llm:MODEL@URL`` (OpenAI-compatible) → a per-task user factory."""
    if spec == "scripted":
        return lambda task: ScriptedUser(task)
    kind, _, rest = spec.partition(":")
    if kind == "llm":
        model, at, url = rest.rpartition("@")
        if not at or not model or not url.startswith(("http://", "https://")):
            raise ValueError(f"bad user {spec!r}: expected llm:MODEL@http://host:port/v1")

        client = ChatClient(url, model)
        return lambda task: LLMUser(task, client, **options)
    raise ValueError(f"unknown user {spec!r}: use scripted or llm:MODEL@URL")
