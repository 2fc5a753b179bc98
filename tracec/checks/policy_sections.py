"""Prompt completeness, policy half (C154, error): every policy section a task relies on is in
the prompt of each env (each `variant`) that draws it.

A task relies on the section of every policy rule (``Schema.rules``) and precondition section
(``Schema.sections``) of its gold calls' and forbids' tools: a gold `cancel_reservation` relies
on "Cancel flight", a `forbid exchange_delivered_order_items` on "Exchange delivered order".
A variant whose `policy sections [...]` drops one teaches the agent a rule it is never shown;
the finding is placed at that env's `policy sections` line (else at the capability).
"""

from __future__ import annotations

import re
from typing import Any

from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.checks.locate import SpecMap
from tracec.core.diagnostics import Span
from tracec.domains import policy as policy_md


def needed_sections(schema: Any, tools: list[str]) -> dict[str, str]:
    """Section heading -> the first tool (of ``tools``) whose rules rely on it."""
    out: dict[str, str] = {}
    for tool in tools:
        for rule in (getattr(schema, "rules", {}) or {}).get(tool, ()):
            out.setdefault(rule.section, tool)
        for heading in (getattr(schema, "sections", {}) or {}).get(tool, ()):
            out.setdefault(heading, tool)
    return out


def sections_line(where: SpecMap, cap: Any) -> Span | None:
    """The `policy sections` line of ``cap``'s variant block (or of the capability header)."""
    source = where.source or ""
    lines = source.splitlines()
    variant = None
    base = getattr(where.ast, "name", None) if where.ast is not None else None
    if base and cap.name != base and cap.name.startswith(base + "_"):
        variant = cap.name[len(base) + 1:]
    inside = variant is None
    for n, text in enumerate(lines, 1):
        stripped = text.strip()
        if variant is not None and re.match(rf"variant\s+{re.escape(variant)}\b", stripped):
            inside = True
            continue
        if variant is None and stripped.startswith(("variant ", "task ", "seed")):
            inside = False
        if inside and stripped.startswith("policy sections"):
            return Span.at(n, len(text) - len(text.lstrip()) + 1, len(stripped))
        if inside and variant is not None and stripped == "}":
            break
    return None


class PolicySections(Check):
    """C154 over the drawn instances; findings go to ``log``."""

    name = "policy sections shown"
    codes = ("C154",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        cap = self.cap
        self.schema = cap.domain.schema
        self.shown: dict[str, list] | None = None

    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        inst = env.instance
        if not self.first_of_task(inst.task):
            return
        if not self.cap.domain.policy or getattr(self.cap, "policy", None) is not None:
            return  # no domain policy, or the spec's own inline one replaces it
        tools = [c.name for c in inst.gold] + [f.name for f in inst.forbid]
        need = needed_sections(self.schema, tools)
        if not need:
            return
        if self.shown is None:
            self.shown = policy_md.index(env.toolbox.policy or "")
        missing = {h: t for h, t in need.items() if not policy_md.find("", h, self.shown)
                   and policy_md.find(self.cap.domain.policy, h)}
        if not missing:
            return
        names = ", ".join(f'"{h}" (for `{t}`)' for h, t in missing.items())
        self.log.add(f"C154:{inst.task}", "error", "C154",
                     f"task `{inst.task}` relies on the policy section{'s' if len(missing) > 1 else ''} "
                     f"{names}, which env `{self.cap.name}` does not show the agent: its gold or "
                     "forbids follow a rule the prompt never states",
                     sections_line(self.where, self.cap) or self.where.task(inst.task),
                     task=inst.task, seed=seed,
                     hint="add " + ", ".join(f'"{h}"' for h in missing) + " to `policy sections "
                          "[...]`")
