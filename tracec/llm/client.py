"""OpenAI-compatible chat client (any endpoint: OpenAI, vLLM, llama.cpp, Ollama, ...)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

DUMMY_KEY = "sk-no-key-needed"


class LLMError(RuntimeError):
    """A failed call to a chat endpoint, with a message meant for the user."""


@dataclass
class ChatResult:
    """One assistant turn: text, parsed tool calls (``{"name", "arguments": dict}``), raw body."""

    content: str
    tool_calls: list[dict] = field(default_factory=list)
    raw: dict = field(default_factory=dict)


def _parse_arguments(text: str | None) -> dict:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {"__raw__": text}
    return value if isinstance(value, dict) else {"__raw__": text}


class ChatClient:
    """Chat completions against ``base_url`` (e.g. ``http://localhost:8000/v1``)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60,
        max_retries: int = 3,
    ) -> None:
        import openai  # imported lazily: keeps `tracec --help` fast

        self.base_url = base_url
        self.model = model
        key = api_key or os.environ.get("OPENAI_API_KEY") or DUMMY_KEY
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=base_url, api_key=key, timeout=timeout, max_retries=max_retries
        )

    def chat(
        self,
        messages: list[dict],
        tools: list[dict] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        stop: list[str] | str | None = None,
        response_format: dict | None = None,
        seed: int | None = None,
    ) -> ChatResult:
        """One completion; raises :class:`LLMError` with a clear message on failure.

        ``seed`` asks the server for reproducible sampling (OpenAI, vLLM and llama.cpp honour it)."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": temperature,
            "max_tokens": max_tokens,
        }
        if tools:
            kwargs["tools"] = tools
        if stop:
            kwargs["stop"] = stop
        if response_format:
            kwargs["response_format"] = response_format
        if seed is not None:
            kwargs["seed"] = seed
        oa = self._openai
        try:
            resp = self._client.chat.completions.create(**kwargs)
        except oa.APIConnectionError as exc:
            raise LLMError(
                f"cannot reach the chat endpoint {self.base_url}: {exc.__cause__ or exc}"
            ) from None
        except oa.APIStatusError as exc:
            raise LLMError(
                f"chat endpoint {self.base_url} answered HTTP {exc.status_code}: {exc.message}"
            ) from None
        except oa.OpenAIError as exc:
            raise LLMError(f"chat call to {self.base_url} failed: {exc}") from None
        if not resp.choices:
            raise LLMError(f"chat endpoint {self.base_url} returned no choices")
        msg = resp.choices[0].message
        calls = [
            {"name": c.function.name, "arguments": _parse_arguments(c.function.arguments)}
            for c in (msg.tool_calls or [])
            if getattr(c, "function", None) is not None
        ]
        return ChatResult(content=msg.content or "", tool_calls=calls, raw=resp.model_dump())

    def models(self) -> list[str]:
        """Model ids the endpoint serves."""
        try:
            return [m.id for m in self._client.models.list()]
        except self._openai.OpenAIError as exc:
            raise LLMError(f"cannot list models at {self.base_url}: {exc}") from None
