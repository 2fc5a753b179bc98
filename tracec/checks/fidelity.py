"""Target fidelity: the tools an env shows the agent, against the domain's target tools.

What is learned transfers when the env's tools are the target's: same names, same argument
names and types, same required arguments. The report lists tools the env adds (inline tools),
tools it hides (``tools [...]``) and tools whose shown schema differs from the target's
(``compact_tools``, or an inline tool that overrides a domain one).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ToolChange(BaseModel):
    name: str
    changes: list[str]


class Fidelity(BaseModel):
    """Tool names and schemas of an env against its domain's target schemas."""

    domain: str
    added: list[str] = Field(default_factory=list)  # in the env, not in the target
    removed: list[str] = Field(default_factory=list)  # in the target, not shown by the env
    changed: list[ToolChange] = Field(default_factory=list)

    @property
    def same(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def summary(self) -> str:
        if self.same:
            return f"identical to {self.domain}'s"
        parts = []
        if self.added:
            parts.append(f"+{len(self.added)} added ({', '.join(self.added)})")
        if self.removed:
            parts.append(f"-{len(self.removed)} hidden")
        if self.changed:
            parts.append(f"~{len(self.changed)} changed ({', '.join(c.name for c in self.changed)})")
        return f"vs {self.domain}: " + "; ".join(parts)


def _fn(schema: dict) -> dict:
    return schema.get("function", schema)


def _type(prop: Any) -> Any:
    if not isinstance(prop, dict):
        return None
    return prop.get("type", prop.get("anyOf", prop.get("$ref")))


def schema_changes(target: dict, shown: dict) -> list[str]:
    """How ``shown`` (an OpenAI function schema) differs from ``target``."""
    t, s = _fn(target), _fn(shown)
    out = []
    tp = t.get("parameters", {}) or {}
    sp = s.get("parameters", {}) or {}
    tprops, sprops = tp.get("properties", {}) or {}, sp.get("properties", {}) or {}
    for name in tprops:
        if name not in sprops:
            out.append(f"argument `{name}` removed")
        elif _type(tprops[name]) != _type(sprops[name]):
            out.append(f"argument `{name}` type {_type(tprops[name])} -> {_type(sprops[name])}")
        elif (tprops[name] or {}).get("enum") != (sprops[name] or {}).get("enum"):
            out.append(f"argument `{name}` enum changed")
        elif (tprops[name] or {}).get("description") != (sprops[name] or {}).get("description"):
            out.append(f"argument `{name}` description changed")
    out += [f"argument `{n}` added" for n in sprops if n not in tprops]
    if set(tp.get("required", []) or []) != set(sp.get("required", []) or []):
        out.append("required arguments changed")
    if (t.get("description") or "") != (s.get("description") or ""):
        out.append("description " + ("shortened" if (s.get("description") or "") in
                                     (t.get("description") or "") else "changed"))
    return out


def fidelity(env: Any) -> Fidelity:
    """The fidelity report of a capability env (instance or class)."""
    if isinstance(env, type):
        env = env()
    domain = env.capability.domain
    target = {_fn(s)["name"]: s for s in domain.tool_schemas()}
    shown = {_fn(s)["name"]: s for s in env.tools}
    report = Fidelity(domain=domain.name)
    report.added = [n for n in shown if n not in target]
    report.removed = [n for n in target if n not in shown]
    for name, schema in shown.items():
        if name in target:
            changes = schema_changes(target[name], schema)
            if changes:
                report.changed.append(ToolChange(name=name, changes=changes))
    return report
