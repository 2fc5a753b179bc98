"""The result of checking one capability environment."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from tracec.checks.locate import Finding, SpecMap


class CheckReport(BaseModel):
    """What `tracec check` found for one env; ``passed`` when there are no problems."""

    env: str
    module: str = ""
    tasks: list[str] = Field(default_factory=list)
    seeds: int = 0
    check_env: bool | None = None  # None: skipped
    determinism: bool = False
    probes: bool = False  # every probe landed where the rules promise
    probe_runs: int = 0
    probe_means: dict[str, float] = Field(default_factory=dict)  # probe name -> mean reward
    # own-words probes (shotgun, echo, echo_bare) -> the rung each episode reached -> episodes
    probe_rungs: dict[str, dict[str, int]] = Field(default_factory=dict)
    # task -> its repeating instances (C340): distinct on the check's seeds, held-out repeats
    instance_repeats: dict[str, dict] = Field(default_factory=dict)
    variance_share: float = 0.0  # share of seeds whose probes give >= 2 distinct rewards
    reward_mean: float = 0.0
    reward_std: float = 0.0  # centred: sqrt(mean((r - mean)^2))
    levels_reached: int = 0
    levels_total: int = 0
    rule_hits: list[int] = Field(default_factory=list)  # per rule: probe episodes it decided
    distractors: dict[str, int] = Field(default_factory=dict)  # name -> episodes it was applied in
    seconds: float = 0.0
    # first-prompt size in tokens (largest over a few seeds; see tracec.checks.prompt_size)
    prompt_tokens: int | None = None  # as the env shows it (the spec's compact_tools setting)
    prompt_tool_tokens: int | None = None  # of which the tool schemas
    prompt_tokens_full: int | None = None  # with full tool schemas
    prompt_tokens_compact: int | None = None  # with compact tool schemas
    prompt_tools: int | None = None  # tools shown
    prompt_method: str = ""  # "estimate" or the tokenizer that counted
    prompt_budget: int | None = None
    problems: list[str] = Field(default_factory=list)  # located errors, rendered
    warnings: list[str] = Field(default_factory=list)  # located warnings, rendered (and notes)
    findings: list[dict] = Field(default_factory=list)  # every finding (tracec.checks.locate.Finding)
    # the env's tools against the domain's target tools (tracec.checks.fidelity.Fidelity)
    fidelity: dict | None = None
    # the tools the probes called (gold and forbidden calls): a variant that shows them alike
    # shares this check (tracec.checks.variants)
    probe_tools: list[str] = Field(default_factory=list)
    # a variant's: the env whose probes, determinism and meaning checks it shares
    shared_with: str | None = None

    @property
    def passed(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {**self.model_dump(), "passed": self.passed}


_HEAD = re.compile(r"^(.*?):(\d+):(\d+): (error|warning): (.*)$")


class FindingLog:
    """Located findings, a repeat of one key folded into a count on its first example."""

    def __init__(self, where: SpecMap) -> None:
        self.where = where
        self._items: dict[str, list[Any]] = {}  # key -> [Finding args, count] or [Finding, count]

    def add(self, key: str, severity: str, code: str, message: str, span: Any = None,
            **kw: Any) -> None:
        item = self._items.get(key)
        if item is None:
            self._items[key] = [(severity, code, message, span, kw), 1]
        else:
            item[1] += 1

    def amend(self, key: str, span: Any, more: str, hint: str) -> None:
        """Move a finding not yet rendered to ``span``, its message extended and a new hint."""
        item = self._items.get(key)
        if item is None or not isinstance(item[0], tuple):
            return
        severity, code, message, _, kw = item[0]
        item[0] = (severity, code, message + more, span, {**kw, "hint": hint})

    def add_rendered(self, key: str, text: str, **kw: Any) -> None:
        """A finding already rendered in the compiler's format (a located run-time error)."""
        item = self._items.get(key)
        if item is not None:
            item[1] += 1
            return
        m = _HEAD.match(text.split("\n", 1)[0])
        path, line, col, severity, message = m.groups() if m else ("", "1", "1", "error", text)
        f = Finding(severity="warning" if severity == "warning" else "error", code="R100",
                    path=path, line=int(line), column=int(col), message=message, rendered=text,
                    **kw)
        self._items[key] = [f, 1]

    def findings(self) -> list[Finding]:
        out = []
        for item, count in self._items.values():
            if isinstance(item, Finding):
                f = item
                if count > 1:
                    head, sep, tail = f.rendered.partition("\n")
                    f = f.model_copy(update={"rendered": f"{head} ({count} times){sep}{tail}"})
            else:
                severity, code, message, span, kw = item
                if count > 1:
                    message = f"{message} ({count} times)"
                f = self.where.finding(severity, code, message, span, **kw)
            out.append(f)
        return out
