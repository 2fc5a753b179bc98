"""Prompt completeness per variant (C153, C186, errors): a hint names a tool the env does not
show (C153), or a name in code style the agent sees nowhere (C186).

Each variant is its own env with its own tools (`tools [...]`); the task's hint and the
capability's hint are read against the tools that env shows: a hint that says "call
get_user_details" where the variant hides it sends the agent to a tool it cannot call.
(The gold's own tools are checked by playing it: a hidden one fails at reset, C102; what the
answer depends on, by provenance, C152.)

C186: a snake_case name in a hint (`days_between`, `get_booking`) that is no tool the env shows,
no argument of one, and no field of a record of the world the agent reads (`payment_history`,
`total_baggages`), nor a `let` of the spec: the hint points at something the agent cannot see
(a helper of the spec language, a tool of another domain). Judged on the first instance of each
task, against the world it was drawn on; at the hint.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from tracec.checks.check import Check, InstanceContext, RunContext

_SNAKE = re.compile(r"(?<![\w.])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w(])?")


def _keys(value: Any, depth: int) -> Iterator[str]:
    """The keys of a world table's records and of the mappings they hold (``depth`` levels)."""
    if depth <= 0:
        return
    items = value.values() if isinstance(value, Mapping) else value if isinstance(value, list) else ()
    if isinstance(value, Mapping):
        yield from (k for k in value if isinstance(k, str))
    for v in list(items)[:50]:
        if isinstance(v, (Mapping, list)):
            yield from _keys(v, depth - 1)


class PromptComplete(Check):
    """C153 over the drawn instances; findings go to ``log``."""

    name = "tools the hints name"
    codes = ("C153", "C186")

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        names = set(self.cap.domain.tools) | {t.name for t in self.cap.tools}
        self.pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names), key=len,
                                                           reverse=True)) + r")\b") if names else None
        ast = self.where.ast
        self.spec_names = {let.name for t in (ast.tasks if ast is not None else []) for let in t.lets} \
            | {st.name for st in (ast.seed if ast is not None else [])}

    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        inst = env.instance
        if self.pattern is None or inst.task in self.done:
            return
        self.done.add(inst.task)
        shown = env.toolbox.tools
        ts = self.where.tasks.get(inst.task)
        self._unseen(ctx, ts)
        for text, span, whose in ((inst.hint, ts.hint if ts else None, f"task `{inst.task}`'s hint"),
                                  (self.cap.hint, self.where.hint, "the capability's hint")):
            hidden = sorted({m for m in self.pattern.findall(text or "") if m not in shown})
            if not hidden:
                continue
            names = ", ".join(f"`{h}`" for h in hidden)
            self.log.add(f"C153:{whose}", "error", "C153",
                         f"{whose} names {names}, which env `{self.cap.name}` does not show the "
                         f"agent (seed {seed}): it is sent to a tool it cannot call",
                         span or self.where.task(inst.task), task=inst.task, seed=seed,
                         hint="add the tool to `tools [...]` of this variant, or say the step "
                              "without naming a hidden tool")

    def _unseen(self, ctx: InstanceContext, ts: Any) -> None:
        """C186: a code-style name in a hint the agent can see nowhere."""
        env, inst = ctx.env, ctx.inst
        seen = set(env.toolbox.tools) | {p for t in env.toolbox.tools.values()
                                         for p in (getattr(t, "parameters", None) or {})}
        seen |= {k for table in env.initial_db.values() for k in _keys(table, 5)}
        seen |= set(inst.values) | set(self.spec_names)
        for text, span, whose in ((inst.hint, ts.hint if ts else None, f"task `{inst.task}`'s hint"),
                                  (self.cap.hint, self.where.hint, "the capability's hint")):
            unseen = sorted({n for n in _SNAKE.findall(text or "") if n not in seen})
            if not unseen:
                continue
            self.log.add(f"C186:{whose}", "error", "C186",
                         f"{whose} names `{unseen[0]}`, which is no tool env `{self.cap.name}` "
                         "shows, no argument of one and no field of the records the agent reads "
                         f"(seed {ctx.seed}): the hint points at something the agent cannot see",
                         span or self.where.task(inst.task), task=inst.task, seed=ctx.seed,
                         hint="name the tool or the field the agent has, or say the step in words")

    def finish(self) -> None:
        """Nothing to fold: every finding is logged as it is found."""
