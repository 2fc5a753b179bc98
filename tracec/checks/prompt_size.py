"""First-prompt size of an env: what a model prefills before its first token.

The first prompt is the system prompt (instructions + policy), the tool schemas and the user's
first message, rendered with the Hermes/ChatML tool template tracec installs on local models
(:data:`tracec.llm.chat.CHAT_TEMPLATE`, rendered by :func:`tracec.llm.chat.render_chatml`). With a tokenizer the size is exact; without one it is
:func:`estimate_tokens`: rendered characters / :data:`CHARS_PER_TOKEN`, calibrated against
SmolLM2-135M's tokenizer on the shipped envs (see docs/checks.md for the measured error).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tracec.checks.locate import SpecMap
from tracec.llm.chat import render_chatml, render_prompt

# Calibrated on the shipped envs (full and compact schemas) with SmolLM2-135M-Instruct's
# tokenizer (`python benchmarks/prompt_size.py`): 3.63-3.98 characters per token, mean 3.79, so
# the estimate errs by -4.5 % .. +4.9 % (docs/checks.md).
CHARS_PER_TOKEN = 3.8
DEFAULT_BUDGET = 4096
SIZE_SEEDS = 8  # seeds whose first prompts are measured (the largest is reported)

Counter = Callable[[list[dict], "list[dict] | None"], int]


def estimate_tokens(text: str) -> int:
    """Tokens of ``text`` estimated as characters / :data:`CHARS_PER_TOKEN`."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def estimate_counter(messages: list[dict], tools: list[dict] | None) -> int:
    return estimate_tokens(render_chatml(messages, tools))


def tokenizer_counter(tokenizer: Any) -> Counter:
    """Exact counts with a transformers tokenizer (its chat template, tools included)."""

    def count(messages: list[dict], tools: list[dict] | None) -> int:
        return len(render_prompt(tokenizer, messages, tools))

    return count


@dataclass(frozen=True)
class PromptSize:
    """The largest first prompt over the measured seeds, and how it splits."""

    tokens: int  # the whole first prompt
    tool_tokens: int  # of which the tool schemas
    tools: int  # number of tools shown
    method: str  # "estimate" or the tokenizer's name

    def to_dict(self) -> dict:
        return {"tokens": self.tokens, "tool_tokens": self.tool_tokens, "tools": self.tools,
                "method": self.method}


def first_prompt_size(env: Any, count: Counter | None = None, seeds: int = SIZE_SEEDS,
                      method: str = "estimate") -> PromptSize:
    """Reset ``env`` on seeds 0..seeds-1 (no hint) and size the largest first prompt."""
    return first_prompt_sizes(env, [None], count, seeds, method)[0]


def first_prompt_sizes(env: Any, schemas: list[list[dict] | None], count: Counter | None = None,
                       seeds: int = SIZE_SEEDS, method: str = "estimate") -> list[PromptSize]:
    """:func:`first_prompt_size` of ``env`` showing each of ``schemas`` (None: its own tools),
    each seed reset once for all of them (the first messages do not depend on the schemas)."""
    count = count or estimate_counter
    best = [(0, 0)] * len(schemas)
    shown: list[list[dict]] = [[] for _ in schemas]
    for seed in range(seeds):
        _, info = env.reset(seed=seed)
        messages = info["messages"]
        for i, tools in enumerate(schemas):
            tools = shown[i] = (info.get("tools") if tools is None else tools) or []
            total = count(messages, tools)
            if total > best[i][0]:
                best[i] = (total, total - count(messages, None))
    return [PromptSize(tokens=b[0], tool_tokens=b[1], tools=len(t), method=method)
            for b, t in zip(best, shown)]


def measure_report(report: Any, cls: Any, count: Counter | None, method: str, budget: int) -> None:
    """Fill ``report``'s prompt fields for env class ``cls``; warn when above ``budget``."""
    full = cls(compact_tools=False)
    sizes = dict(zip((False, True), first_prompt_sizes(
        full, [None, cls(compact_tools=True).tools], count, method=method)))
    shown = sizes[bool(cls.capability.compact_tools)]
    report.prompt_tokens = shown.tokens
    report.prompt_tool_tokens = shown.tool_tokens
    report.prompt_tools = shown.tools
    report.prompt_tokens_full = sizes[False].tokens
    report.prompt_tokens_compact = sizes[True].tokens
    report.prompt_method = method
    report.prompt_budget = budget
    if shown.tokens > budget:
        how = "show fewer tools (`tools [...]`), a policy excerpt (`policy sections [...]`)"
        if not cls.capability.compact_tools:
            how += f" or compact tool schemas (`compact_tools`: {sizes[True].tokens} tokens)"
        where = SpecMap(cls.capability)
        f = where.finding("warning", "C302",
                          f"first prompt is {shown.tokens} tokens ({method}), above the budget of "
                          f"{budget} (tool schemas: {shown.tool_tokens})", hint=how)
        report.warnings.append(f.rendered)
        report.findings.append(f.model_dump())
