"""``tracec describe DOMAIN``: a domain's contract as data and as text for spec authors.

What a spec may use: the tools (argument types, required flags, enums, read/write), the
entity kinds (fields with types, references, enums, what the generator fixes and adds), the
named Python functions for inline tools, and the policy headings `policy sections [...]` names.
"""

from __future__ import annotations

from typing import Any

from tracec.core.types import ListT, MapT, ObjT, T
from tracec.domains.base import Domain
from tracec.domains.policy import headings as policy_headings
from tracec.domains.units import UNITS


def _json_type(prop: dict) -> str:
    if not isinstance(prop, dict):
        return "any"
    if "anyOf" in prop:
        return " | ".join(_json_type(p) for p in prop["anyOf"])
    t = prop.get("type", "any")
    if t == "array":
        return f"list[{_json_type(prop.get('items', {}))}]"
    if isinstance(t, list):
        return " | ".join(t)
    if "$ref" in prop:
        return prop["$ref"].rsplit("/", 1)[-1]
    return str(t)


def _nested(t: T, out: dict[str, ObjT]) -> None:
    if isinstance(t, ObjT):
        if t.name not in out:
            out[t.name] = t
            for _, sub in t.fields:
                _nested(sub, out)
    elif isinstance(t, ListT):
        _nested(t.elem, out)
    elif isinstance(t, MapT):
        _nested(t.value, out)


def _fields(domain: Domain, type_name: str, fields: dict[str, T]) -> list[dict[str, Any]]:
    schema = domain.schema
    rows = []
    for name, t in fields.items():
        row: dict[str, Any] = {"name": name, "type": str(t)}
        enum = schema.enum(type_name, name)
        if enum:
            row["enum"] = list(enum)
        keys = schema.key_enum(type_name, name)
        if keys:
            row["keys"] = list(keys)
        unit = schema.unit(type_name, name)
        if unit:
            row["unit"] = unit
        rows.append(row)
    return rows


def _refs(domain: Domain, type_name: str) -> list[dict[str, Any]]:
    return [
        {"name": r.name, "field": r.field, "target": r.target, "nullable": r.nullable}
        for r in domain.schema.refs.get(type_name, {}).values()
    ]


def describe(domain: Domain) -> dict[str, Any]:
    """The domain's contract as JSON-ready data (deterministic order)."""
    tools = []
    for tool in domain.tools.values():
        props = tool.parameters.get("properties", {}) or {}
        required = set(tool.parameters.get("required", []) or [])
        args = []
        for name, prop in props.items():
            arg: dict[str, Any] = {"name": name, "type": _json_type(prop),
                                   "required": name in required}
            if isinstance(prop, dict) and isinstance(prop.get("enum"), list):
                arg["enum"] = list(prop["enum"])
            if isinstance(prop, dict) and prop.get("description"):
                arg["description"] = prop["description"]
            unit = domain.schema.arg_units.get(tool.name, {}).get(name)
            if unit:
                arg["unit"] = unit
            args.append(arg)
        tools.append({
            "name": tool.name, "description": tool.description, "writes": tool.writes,
            "ends_conversation": tool.name in domain.ends_episode, "arguments": args,
            "preconditions": [
                {"argument": p.arg, "kind": p.kind, "field": p.field, "condition": p.condition(),
                 "text": p.text}
                for p in domain.schema.preconditions.get(tool.name, ())],
            "policy_rules": [
                {"name": r.name, "section": r.section, "text": r.text, "argument": r.arg}
                for r in domain.schema.rules.get(tool.name, ())],
        })
    entities = []
    nested: dict[str, ObjT] = {}
    for kind in domain.entities.values():
        for t in kind.fields.values():
            _nested(t, nested)
        entities.append({
            "name": kind.name,
            "collection": kind.collection,
            "id_field": kind.id_field or None,
            "singleton": kind.singleton,
            "description": kind.description,
            "fields": _fields(domain, kind.name, dict(kind.fields)),
            "references": _refs(domain, kind.name),
            "generator": domain.schema.generators.get(kind.name, ""),
        })
    records = [
        {"name": name, "fields": _fields(domain, name, t.field_map()),
         "references": _refs(domain, name)}
        for name, t in nested.items()
    ]
    return {
        "domain": domain.name,
        "description": domain.description,
        "tools": tools,
        "entities": entities,
        "records": records,
        "functions": sorted(domain.functions),
        "policy_sections": policy_headings(domain.policy),
    }


def _field_line(f: dict[str, Any]) -> str:
    line = f"{f['name']}: {f['type']}"
    if "enum" in f:
        line += " one of " + ", ".join(f'"{v}"' for v in f["enum"])
    if "keys" in f:
        line += " keyed by " + ", ".join(f'"{v}"' for v in f["keys"])
    if "unit" in f:
        line += f" [{UNITS[f['unit']].text}]"
    return line


def _ref_line(r: dict[str, Any], owner: str) -> str:
    null = " (None when the id is None)" if r["nullable"] else ""
    return f".{r['name']} -> {r['target']} (the {r['target']} whose id is {owner}.{r['field']}){null}"


def describe_text(domain: Domain) -> str:
    """The contract as compact text (for people and for an LLM writing a spec)."""
    d = describe(domain)
    out = [f"# domain {d['domain']}", "", d["description"], "", "## Tools", ""]
    for t in d["tools"]:
        args = ", ".join(
            f"{a['name']}: {a['type']}{'' if a['required'] else '?'}"
            + (f" [{a['unit']}]" if "unit" in a else "")
            + (" in (" + ", ".join(f'"{v}"' for v in a["enum"]) + ")" if "enum" in a else "")
            for a in t["arguments"])
        tags = ["writes" if t["writes"] else "reads"]
        if t["ends_conversation"]:
            tags.append("ends the conversation")
        text = " ".join(t["description"].split())
        out.append(f"- {t['name']}({args}) [{', '.join(tags)}]: {text}")
        for p in t["preconditions"]:
            out.append(f"  - requires {p['text']}: `{p['condition']}` for the `{p['argument']}`")
        for r in t["policy_rules"]:
            out.append(f"  - policy (\"{r['section']}\"): {r['text']} [{r['name']}]")
    out += ["", "(`?`: optional argument)", "", "## Entities (seed: NAME = kind[COUNT] { field = expr })", ""]
    for e in d["entities"]:
        ident = f"id `{e['id_field']}`" if e["id_field"] else "singleton"
        out.append(f"### {e['name']} ({ident}; collection `{e['collection']}`)")
        if e["description"]:
            out.append(e["description"])
        out += [f"- {_field_line(f)}" for f in e["fields"]]
        out += [f"- {_ref_line(r, e['name'])}" for r in e["references"]]
        if e["generator"]:
            out.append(f"Generator: {e['generator']}")
        out.append("")
    if d["records"]:
        out += ["## Nested records", ""]
        for r in d["records"]:
            fields = "; ".join(_field_line(f) for f in r["fields"])
            out.append(f"- {r['name']}: {fields}")
            out += [f"  - {_ref_line(x, r['name'])}" for x in r["references"]]
        out.append("")
    if d["policy_sections"]:
        out += ["## Policy sections (policy sections [\"Heading\", ...])", "",
                ", ".join(f'"{h}"' for h in d["policy_sections"]), ""]
    if d["functions"]:
        out += ["## Python functions (tool NAME(...) = python FUNCTION)", "",
                ", ".join(d["functions"]), ""]
    return "\n".join(out).rstrip() + "\n"
