"""A variant that hides the only tool showing a record the gold's values read (C194, error).

A gold argument or answer computed in the spec (`let room = allow[owner.membership][...]`)
reads text fields of drawn records; the agent must see those values somewhere. A `variant` whose
`tools [...]` drops every read tool that takes the id of that record's kind (`get_user_details`
takes a `user_id`) where the capability shows one (its `tools [...]`, else every domain tool),
while no gold tool output and not the user's message shows the field or its value, leaves the agent to guess
it (C153 reads the hints, the compiler the gold's own tools, C152 only values read straight from
the world). Judged on the first ``MAX_SEEDS`` seeds; reported once per variant and field, at
the variant's `tools` line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracec.checks.blame import cone, task_ast
from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.lang import ast as A

MAX_SEEDS = 8


def _reads(expr: Any) -> set[tuple[str, str]]:
    """(variable, field) of every `x.field` an expression reads."""
    return {(n.obj.id, n.name) for n in A.walk(expr)
            if isinstance(n, A.Attr) and isinstance(n.obj, A.Name)}


class HiddenReads(Check):
    """C194 over the drawn instances of a variant's env; findings go to ``log``."""

    name = "fields a variant hides"
    codes = ("C194",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        ast = self.where.ast
        self.variant = next((v for v in (ast.variants if ast is not None else [])
                             if self.cap.name == f"{ast.name}_{v.name}"), None)
        base = ast.shown_tools if ast is not None else None
        # the capability's `tools [...]`, else every domain tool
        self.base = [r.name for r in base] if base else sorted(self.cap.domain.tools)

    def _takes(self, tools: list[str]) -> dict[str, list[str]]:
        """Kind name -> the read tools of ``tools`` that take its id."""
        dom = self.cap.domain
        out: dict[str, list[str]] = {}
        for k in dom.entities.values():
            for name in tools:
                tool = dom.tools.get(name)
                if k.id_field and tool is not None and not tool.writes \
                        and k.id_field in (tool.parameters.get("properties") or {}):
                    out.setdefault(k.name, []).append(name)
        return out

    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        inst = env.instance
        if self.variant is None or self.variant.shown_tools is None or seed >= MAX_SEEDS \
                or not self.base or inst.task in self.done:
            return
        shown = [t for t in self.base if t in env.toolbox.tools]
        takes = self._takes(self.base)
        hidden = set(takes) - set(self._takes(shown))
        t = task_ast(self.where, inst.task)
        if not hidden or t is None:
            return
        dom, db = self.cap.domain, env.initial_db
        kinds = [k for k in dom.entities.values() if k.name in hidden]
        seen = " ".join([inst.user or ""] + list(ctx.results))
        lets: set[str] = set()
        for c in A.gold_calls(t.gold):
            for kw in c.args:
                lets.update(cone(t, kw.value))
        for e in t.communicate:
            lets.update(cone(t, e))
        values = {let.name: let.value for let in t.lets}
        for name in sorted(lets):
            told = inst.values.get(name)
            if isinstance(told, str) and told in seen or isinstance(told, Mapping) and any(
                    isinstance(told.get(k.id_field), str) and told[k.id_field] in seen
                    for k in dom.entities.values() if k.id_field):
                continue  # the agent is told the value (a card id) or the record's id
            for var, fld in sorted(_reads(values[name])):
                rec = inst.values.get(var)
                if not isinstance(rec, Mapping):
                    continue
                for k in kinds:
                    table = db.get(k.collection)
                    got = rec.get(fld)
                    if fld == k.id_field or rec.get(k.id_field) not in (table or {}) \
                            or not isinstance(got, str) or got in seen or f'"{fld}"' in seen:
                        continue  # (a text field whose value the agent never sees)
                    self.done.add(inst.task)
                    self.log.add(f"C194:{fld}", "error", "C194",
                                 f"task `{inst.task}`: `let {name}` reads `{var}.{fld}` of a "
                                 f"{k.name} record, but variant `{self.variant.name}` shows no "
                                 f"tool that takes a `{k.id_field}` (the capability shows "
                                 f"{', '.join(takes[k.name])}) and no gold "
                                 f"tool output shows `{fld}` (seed {seed}): the agent cannot "
                                 "see what the gold computes from",
                                 self.variant.shown_tools_span or self.where.task(inst.task),
                                 task=inst.task, seed=seed,
                                 hint=f"keep a tool that shows the {k.name}'s `{fld}` in the "
                                      "variant's `tools` list")
                    return
