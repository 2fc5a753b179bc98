"""Agents: anything that answers a batch of conversations with raw assistant text.

An agent's turn is the raw text a model would emit, tool calls in Hermes form
(``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``), so that the same envs serve API
models, local models and composed models. ``make_agent(spec)`` builds one from a string:

- ``openai:MODEL@http://host:port/v1`` — any OpenAI-compatible endpoint
- ``local:PATH_OR_ID`` or ``local:PATH_OR_ID+adapter:DIR`` — a transformers model (+ LoRA)
- ``composed:DIR`` — a composed model (router over adapters)
- ``oracle`` — replays the task's gold actions (needs ``info["task"]`` with gold actions)
- ``scripted`` or ``scripted:FILE.json`` — replays a fixed list of turns (for tests)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, runtime_checkable

from tracec import files
from tracec.core.messages import STOP, hermes_text, plain_messages
from tracec.llm.client import ChatClient
from tracec.llm.device import CPU, Placement
from tracec.llm.serving import request_seed

AgentInput = tuple[list[dict], list[dict]]  # (messages so far, OpenAI tool schemas)


class AgentSpecError(ValueError):
    """A malformed ``--agent`` string."""


@runtime_checkable
class Agent(Protocol):
    """``act(batch)`` returns one raw assistant turn per ``(messages, tools)`` pair.

    ``tasks`` (optional) carries each episode's ``info["task"]``; only test agents such as the
    oracle read it.
    """

    name: str

    def act(self, batch: Sequence[AgentInput], tasks: Sequence[Any] | None = None) -> list[str]:
        ...


class OpenAIAgent:
    """An agent behind an OpenAI-compatible endpoint (native tool calling, Hermes text out)."""

    def __init__(self, model: str, base_url: str, api_key: str | None = None,
                 temperature: float = 0.0, max_tokens: int = 1024, concurrency: int = 4,
                 client: Any = None) -> None:
        if client is None:
            client = ChatClient(base_url, model, api_key=api_key)
        self.client = client
        self.name = f"openai:{model}@{base_url}"
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.concurrency = max(1, concurrency)

    def _one(self, item: AgentInput) -> str:
        messages, tools = item
        res = self.client.chat(plain_messages(messages, args_as_dict=False), tools=tools or None,
                               temperature=self.temperature, max_tokens=self.max_tokens)
        return hermes_text(res.content, [(c["name"], c.get("arguments") or {}) for c in res.tool_calls])

    def act(self, batch: Sequence[AgentInput], tasks: Sequence[Any] | None = None) -> list[str]:
        if len(batch) <= 1 or self.concurrency == 1:
            return [self._one(item) for item in batch]
        with ThreadPoolExecutor(min(self.concurrency, len(batch))) as pool:
            return list(pool.map(self._one, batch))


class LocalAgent:
    """A local transformers model (optionally with a LoRA adapter), batched generation.

    Sampling: call ``c`` samples with the seed ``request_seed(seed, c, 0)`` and the engine gives
    conversation ``i`` of the call its own generator from it, so successive turns draw fresh
    streams and a rerun with the same ``seed`` repeats itself; no wrapper has to reseed it."""

    def __init__(self, model: str, adapter: str | None = None, max_new_tokens: int = 512,
                 temperature: float = 0.0, seed: int | None = 0, chat_model: Any = None,
                 place: Placement = CPU) -> None:
        if chat_model is None:
            # the local engine may load torch at its top: only a local agent pays for it
            from tracec.llm.local import LocalChatModel  # noqa: PLC0415

            chat_model = LocalChatModel(model, adapter=adapter, place=place)
        self.chat_model = chat_model
        self.name = f"local:{model}" + (f"+adapter:{adapter}" if adapter else "")
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.seed = seed
        self.calls = 0

    def act(self, batch: Sequence[AgentInput], tasks: Sequence[Any] | None = None) -> list[str]:
        # LocalChatModel.generate takes one tool list per call: group conversations by tools
        groups: dict[str, list[int]] = {}
        for i, (_, tools) in enumerate(batch):
            groups.setdefault(json.dumps(tools, sort_keys=True), []).append(i)
        out: list[str] = [""] * len(batch)
        for idx in groups.values():
            seed = None if self.seed is None else request_seed(self.seed, self.calls, 0)
            self.calls += 1
            texts = self.chat_model.generate(
                [plain_messages(batch[i][0], args_as_dict=True) for i in idx],
                tools=batch[idx[0]][1] or None, max_new_tokens=self.max_new_tokens,
                temperature=self.temperature, seed=seed,
            )
            for i, t in zip(idx, texts):
                out[i] = t
        return out


def gold_calls(task: Any) -> tuple[list[tuple[str, dict]], list[str]]:
    """``(gold calls, info to communicate)`` from a τ² task dict or a compiled env's task info."""
    if hasattr(task, "model_dump"):
        task = task.model_dump()
    if not isinstance(task, dict):
        raise AgentSpecError("the oracle agent needs info['task'] with gold actions")
    ec = task.get("evaluation_criteria") or {}
    if ec:
        calls = [(a["name"], a.get("arguments") or {}) for a in ec.get("actions") or []
                 if a.get("requestor", "assistant") == "assistant"]
        return calls, [str(x) for x in ec.get("communicate_info") or []]
    gold = task.get("gold") or []
    calls = [(g["name"], g.get("args") or g.get("arguments") or {}) if isinstance(g, dict)
             else (g[0], g[1]) for g in gold]
    comm = task.get("communicate") or {}
    values = comm.values() if isinstance(comm, dict) else comm
    return calls, [str(v) for v in values]


class OracleAgent:
    """Replays the gold actions one per turn, then states the info to communicate and stops.

    On compiled envs the runner gives it the probe oracle's turns (``task["oracle_turns"]``:
    gold calls, then every value to communicate rendered as the rules read it)."""

    name = "oracle"

    def act(self, batch: Sequence[AgentInput], tasks: Sequence[Any] | None = None) -> list[str]:
        if tasks is None or len(tasks) != len(batch):
            raise AgentSpecError("the oracle agent needs each episode's task")
        out = []
        for (messages, _), task in zip(batch, tasks):
            done = sum(1 for m in messages if m.get("role") == "assistant")
            if isinstance(task, dict) and "oracle_turns" in task:
                turns = task["oracle_turns"]
                out.append(turns[done] if done < len(turns) else f"Goodbye. {STOP}")
                continue
            calls, info = gold_calls(task)
            if done < len(calls):
                out.append(hermes_text(None, [calls[done]]))
            else:
                said = "; ".join(info)
                out.append(f"All done. {said} {STOP}".replace("  ", " ").strip())
        return out


class ScriptedAgent:
    """Plays a fixed list of turns (the same list for every conversation), then stops."""

    def __init__(self, turns: Sequence[str] | None = None) -> None:
        self.turns = list(turns) if turns else [f"Goodbye. {STOP}"]
        self.name = "scripted"

    def act(self, batch: Sequence[AgentInput], tasks: Sequence[Any] | None = None) -> list[str]:
        out = []
        for messages, _ in batch:
            done = sum(1 for m in messages if m.get("role") == "assistant")
            out.append(self.turns[done] if done < len(self.turns) else f"Goodbye. {STOP}")
        return out


class ComposedAgent(LocalAgent):
    """A composed model (``tracec compose`` output) used like a local model."""

    def __init__(self, directory: str, place: Placement = CPU, **kwargs: Any) -> None:
        from tracec.compose.api import load_composed  # lazy: needs torch
        from tracec.compose.errors import ComposeError

        try:
            model = load_composed(directory, place)
        except (ComposeError, OSError) as exc:
            raise AgentSpecError(f"cannot load composed model {directory}: {exc}") from None
        super().__init__(directory, chat_model=model, **kwargs)
        self.name = f"composed:{directory}"

    def episode_info(self, messages: list[dict]) -> dict:
        """What the routing chose for this episode (recorded in its trajectory): under
        classifier routing the adapters picked for its task and their merge weights."""
        cm = self.chat_model
        config = getattr(cm, "config", None)
        if getattr(config, "routing", None) != "classifier":
            return {"routing": getattr(config, "routing", None)} if config is not None else {}
        from tracec.compose.classify import cached_classification  # lazy: needs torch

        choice = cached_classification(cm, plain_messages(messages, args_as_dict=True),
                                       config.classifier)
        slots = list(getattr(cm, "slots", []))
        weights = {s: round(w, 6) for s, w in zip(slots, choice.weights) if w}
        return {"routing": "classifier", "adapters_chosen": list(choice.chosen),
                "merge_weights": weights}


def parse_agent_spec(spec: str) -> tuple[str, dict]:
    """Split an agent spec into ``(kind, parameters)`` without building anything."""
    spec = spec.strip()
    kind, _, rest = spec.partition(":")
    if kind == "openai":
        model, at, url = rest.rpartition("@")
        if not at or not model or not url.startswith(("http://", "https://")):
            raise AgentSpecError(f"bad agent {spec!r}: expected openai:MODEL@http://host:port/v1")
        return "openai", {"model": model, "base_url": url}
    if kind == "local":
        model, plus, adapter = rest.partition("+adapter:")
        if not model or (plus and not adapter):
            raise AgentSpecError(f"bad agent {spec!r}: expected local:PATH_OR_ID[+adapter:DIR]")
        return "local", {"model": model, "adapter": adapter or None}
    if kind == "composed":
        if not rest:
            raise AgentSpecError(f"bad agent {spec!r}: expected composed:DIR")
        return "composed", {"directory": rest}
    if kind == "oracle" and not rest:
        return "oracle", {}
    if kind == "scripted":
        return "scripted", {"file": rest or None}
    raise AgentSpecError(
        f"unknown agent {spec!r}: use openai:MODEL@URL, local:PATH_OR_ID[+adapter:DIR], "
        "composed:DIR, oracle or scripted[:FILE.json]"
    )


def make_agent(spec: str, **options: Any) -> Agent:
    """Build an agent from a spec string (see the module docstring)."""
    kind, params = parse_agent_spec(spec)
    if kind == "openai":
        return OpenAIAgent(params["model"], params["base_url"], **options)
    if kind == "local":
        return LocalAgent(params["model"], adapter=params["adapter"], **options)
    if kind == "composed":
        return ComposedAgent(params["directory"], **options)
    if kind == "oracle":
        return OracleAgent()
    turns = None
    if params["file"]:
        try:
            turns = files.read_json(params["file"], "scripted turns file")
        except files.InputError as exc:
            raise AgentSpecError(str(exc)) from None
        if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
            raise AgentSpecError(f"{params['file']}: expected a JSON list of strings")
    return ScriptedAgent(turns)
