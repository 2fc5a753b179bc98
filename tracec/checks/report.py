"""The result of checking one capability environment."""

from __future__ import annotations

from pydantic import BaseModel, Field


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
    problems: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    # the env's tools against the domain's target tools (tracec.checks.fidelity.Fidelity)
    fidelity: dict | None = None

    @property
    def passed(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {**self.model_dump(), "passed": self.passed}


class ProblemLog:
    """Collects problems, folding repeats of one kind into a count with the first example."""

    def __init__(self) -> None:
        self._items: dict[str, list] = {}

    def add(self, key: str, message: str) -> None:
        item = self._items.get(key)
        if item is None:
            self._items[key] = [message, 1]
        else:
            item[1] += 1

    def messages(self, total: int | None = None) -> list[str]:
        out = []
        for message, count in self._items.values():
            if count > 1:
                of = f"/{total}" if total else ""
                message = f"{message} ({count}{of} times)"
            out.append(message)
        return out

    def __bool__(self) -> bool:
        return bool(self._items)
